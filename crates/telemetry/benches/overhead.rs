//! The cost of tracing: the default repro (buggy mode) with OTLP export to the embedded collector, beside the
//! same run without an exporter, in the same process. Wall time per run, median of 7 each, flush included.
//!
//! `cargo xtask bench -p epochlab-telemetry`

use std::time::{Duration, Instant};

use epochlab_sim::{ReproHooks, ReproParams, run_repro_with};
use epochlab_telemetry::{EmbeddedJaeger, KeyValue, RunTracer, run_layer};

const RUNS: usize = 7;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let params = ReproParams::default();
    let jaeger =
        EmbeddedJaeger::start("127.0.0.1:0".parse().unwrap()).expect("start the collector");
    let mut off = Vec::new();
    let mut on = Vec::new();
    let mut spans_digest = None;
    for _ in 0..RUNS {
        // Without an exporter (and without RUST_LOG): no layer, spans disabled.
        let start = Instant::now();
        let out = run_repro_with(&params, ReproHooks::default());
        off.push(start.elapsed());
        let digest = out.digest;

        let start = Instant::now();
        let tracer = RunTracer::start(
            &jaeger.otlp_endpoint(),
            vec![KeyValue::new("epochlab.mode", "buggy")],
            jaeger.handle(),
        )
        .expect("tracer");
        let hooks = ReproHooks {
            on_cluster: None,
            tracing_layer: run_layer(Some(&tracer)),
            time_observers: Vec::new(),
        };
        let traced = run_repro_with(&params, hooks);
        tracer.finish().expect("flush");
        on.push(start.elapsed());
        assert_eq!(traced.digest, digest, "tracing must not change the run");
        spans_digest = Some(digest);
    }
    let (off, on) = (median(off), median(on));
    println!(
        "repro (buggy, defaults), median of {RUNS} runs, wall clock; digest {}",
        spans_digest.unwrap()
    );
    println!(
        "  without an exporter:      {:>8.1} ms",
        off.as_secs_f64() * 1e3
    );
    println!(
        "  OTLP export to Jaeger:    {:>8.1} ms",
        on.as_secs_f64() * 1e3
    );
    println!(
        "  ratio (on / off):         {:>8.2}x",
        on.as_secs_f64() / off.as_secs_f64()
    );
}
