//! `--otlp-endpoint` for a soak: the trace of every seed that fails or gets stuck. A seed replays exactly, so
//! the worker reruns a failing seed with the exporter's layer and its trace is the failing run's, without
//! the cost of tracing every passing seed.

use epochlab_sim::ReproHooks;
use epochlab_telemetry::{ExportRuntime, KeyValue, RunTracer, instance_id};

use super::{RunSpec, SeedRow};

/// Where the traces of failing seeds go.
pub struct SoakTraces {
    endpoint: String,
    rt: ExportRuntime,
}

impl SoakTraces {
    /// `None` without an endpoint; `Err` when the export runtime cannot start.
    pub fn start(endpoint: Option<&str>) -> Result<Option<Self>, String> {
        let Some(endpoint) = endpoint else {
            return Ok(None);
        };
        let rt = ExportRuntime::start()?;
        eprintln!("soak: traces of failing seeds go to {endpoint}");
        Ok(Some(Self {
            endpoint: endpoint.to_string(),
            rt,
        }))
    }

    /// If `row` failed or got stuck, run `spec` again with the exporter (same seed, same run) and export it.
    pub fn trace_failure(&self, spec: &RunSpec, campaign: &str, row: &SeedRow) {
        if row.outcome == "passed" {
            return;
        }
        let mode = spec.mode().as_str();
        let attributes = vec![
            KeyValue::new("service.instance.id", instance_id(mode, row.seed)),
            KeyValue::new("epochlab.seed", row.seed as i64),
            KeyValue::new("epochlab.mode", mode),
            KeyValue::new("epochlab.scenario", spec.scenario()),
            KeyValue::new(
                "epochlab.signature",
                row.signature.clone().unwrap_or_default(),
            ),
        ];
        let tracer = match RunTracer::start(&self.endpoint, attributes, &self.rt) {
            Ok(t) => t,
            Err(e) => return eprintln!("soak: seed {}: no trace: {e}", row.seed),
        };
        let hooks = ReproHooks {
            on_cluster: None,
            tracing_layer: Some(tracer.layer()),
            ..Default::default()
        };
        let again = spec.run(campaign, hooks, None);
        if again.digest != row.digest {
            eprintln!(
                "soak: seed {}: the traced rerun differs (digest {})",
                row.seed, again.digest
            );
        }
        if let Err(e) = tracer.finish() {
            eprintln!("soak: seed {}: traces: {e}", row.seed);
        }
    }
}
