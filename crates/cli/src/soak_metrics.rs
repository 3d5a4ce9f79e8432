//! `epochlab soak --metrics-addr`: live Prometheus metrics of a campaign.
//!
//! The soak's driver makes three calls per seed, on the worker thread that runs it:
//! [`SoakObserver::seed_started`] before the run (its [`ClusterHook`] goes into the run's hooks, so the metrics
//! read the run's cluster while it runs), then [`SoakObserver::seed_finished`] with the seed's row after the
//! run: the run's final values are folded into the sums and its cluster is released, and the seed is counted.
//! Without `--metrics-addr` every call does nothing (and no hook is made).

use std::sync::Arc;
use std::time::Duration;

use epochlab_sim::ClusterHook;
use epochlab_sim::Mode;
use epochlab_telemetry::{FinishedSeed, Metrics, MetricsServer, RunSource, SeedOutcome};

use crate::soak::{SeedRow, SoakArgs};

/// A `--metrics-addr` that cannot be served (bad input: exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("metrics: {0}")]
pub struct MetricsError(String);

/// The live metrics of one soak process, or nothing.
pub struct SoakObserver {
    metrics: Option<Arc<Metrics>>,
    /// Serves `/metrics` until dropped.
    server: Option<MetricsServer>,
    serve_for: Option<Duration>,
}

impl SoakObserver {
    /// No metrics.
    pub fn off() -> Self {
        Self {
            metrics: None,
            server: None,
            serve_for: None,
        }
    }

    /// Serve the metrics of the soak's seeds at `--metrics-addr` (none: [`SoakObserver::off`]): series for the
    /// campaign's mode (every mode for `--replay`) and workers `0..--jobs`.
    pub fn start(args: &SoakArgs) -> Result<Self, MetricsError> {
        let Some(addr) = args.metrics_addr else {
            return Ok(Self::off());
        };
        let modes: Vec<&str> = match &args.replay {
            Some(_) => Mode::ALL.iter().map(|m| m.as_str()).collect(),
            None => vec![args.params.mode.as_str()],
        };
        let metrics = Arc::new(Metrics::with_workers(&modes, args.jobs));
        let server = MetricsServer::start(addr, metrics.clone()).map_err(MetricsError)?;
        eprintln!("metrics: http://{}/metrics", server.local_addr());
        Ok(Self {
            metrics: Some(metrics),
            server: Some(server),
            serve_for: args.serve_for,
        })
    }

    /// `worker` starts a seed of `mode`: the hook to give its run (`ReproHooks::on_cluster`).
    pub fn seed_started(&self, worker: usize, mode: &str) -> Option<ClusterHook> {
        let metrics = self.metrics.clone()?;
        metrics.seed_started(mode);
        metrics.prepare_run(worker, mode);
        let mode = mode.to_string();
        Some(Box::new(move |cluster| {
            metrics.start_run(worker, RunSource::starting_now(&mode, cluster))
        }))
    }

    /// `worker`'s seed has finished with `row`: release its run and count it.
    pub fn seed_finished(&self, worker: usize, row: &SeedRow) {
        let Some(metrics) = &self.metrics else {
            return;
        };
        metrics.end_run(worker);
        let outcome: SeedOutcome = row.outcome.parse().expect("a row's outcome");
        metrics.seed_finished(FinishedSeed {
            mode: &row.mode,
            outcome,
            signature: row.signature.as_deref(),
            virtual_time: Duration::from_millis(row.virtual_ms),
            wall_time: Duration::from_millis(row.wall_ms),
        });
    }

    /// The campaign is over: keep serving for `--serve-for`, then stop.
    pub fn finish(self) {
        if let (Some(server), Some(d)) = (&self.server, self.serve_for) {
            let addr = server.local_addr();
            eprintln!(
                "serving metrics at http://{addr}/metrics for {} s",
                d.as_secs()
            );
            std::thread::sleep(d);
        }
    }
}
