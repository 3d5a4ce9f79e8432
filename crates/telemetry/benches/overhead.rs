//! The cost of tracing: the default repro (buggy mode) with its spans exported, beside the same run without an
//! exporter, in the same process. Wall time per run, flush included; the three kinds of run alternate, and
//! each figure is the median of 31.
//! - into the embedded Jaeger (what `--jaeger` does: the spans go into its index on the processor's thread);
//! - over OTLP/gRPC to a collector on loopback (what `--otlp-endpoint` does; the collector is the embedded
//!   one, in this process, so its decoding is counted too).
//!
//! Fails (exit 1) when either costs more than 1.15 times the run without an exporter.
//!
//! `cargo xtask bench -p epochlab-telemetry`

use epochlab_bench::{Figure, Report};
use std::time::{Duration, Instant};

use epochlab_sim::{ReproHooks, ReproParams, run_repro_with};
use epochlab_telemetry::{EmbeddedJaeger, ExportRuntime, KeyValue, RunTracer, run_layer};

const RUNS: usize = 31;

/// The most that exporting every span may cost, as a multiple of the run without an exporter.
const RATIO_MAX: f64 = 1.15;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// One traced run with `tracer`, flushed; its wall time. The run must be the untraced one, event for event.
fn traced(params: &ReproParams, tracer: RunTracer, start: Instant, digest: &str) -> Duration {
    let hooks = ReproHooks {
        tracing_layer: run_layer(Some(&tracer)),
        ..Default::default()
    };
    let out = run_repro_with(params, hooks);
    tracer.finish().expect("flush");
    let took = start.elapsed();
    assert_eq!(out.digest, digest, "tracing must not change the run");
    took
}

fn main() {
    let params = ReproParams::default();
    let jaeger =
        EmbeddedJaeger::start("127.0.0.1:0".parse().unwrap()).expect("start the collector");
    // As `--otlp-endpoint` does: the exporter's connection on a runtime of its own.
    let export_rt = ExportRuntime::start().expect("the export runtime");
    let attributes = || vec![KeyValue::new("epochlab.mode", "buggy")];
    let (mut off, mut embedded, mut otlp) = (Vec::new(), Vec::new(), Vec::new());
    let mut digest = String::new();
    for _ in 0..RUNS {
        // Without an exporter (and without RUST_LOG): no layer, spans disabled.
        let start = Instant::now();
        let out = run_repro_with(&params, ReproHooks::default());
        off.push(start.elapsed());
        digest = out.digest;

        let start = Instant::now();
        let tracer = RunTracer::start_embedded(&jaeger, attributes());
        embedded.push(traced(&params, tracer, start, &digest));

        let start = Instant::now();
        let tracer =
            RunTracer::start(&jaeger.otlp_endpoint(), attributes(), &export_rt).expect("tracer");
        otlp.push(traced(&params, tracer, start, &digest));
    }
    let off = median(off);
    println!("repro (buggy, defaults), median of {RUNS} runs, wall clock; digest {digest}");
    println!("  without an exporter:          {:>8.1} ms", ms(off));
    let mut report = Report::new("overhead");
    let mut over = Vec::new();
    for (what, runs) in [
        ("into the embedded Jaeger", embedded),
        ("OTLP/gRPC to a collector", otlp),
    ] {
        let on = median(runs);
        let ratio = report.add(Figure {
            name: format!("repro traced {what}"),
            unit: "ms".into(),
            value: ms(on),
            baseline: "repro without an exporter".into(),
            baseline_value: ms(off),
        });
        println!(
            "  {what}: {:>8.1} ms, {ratio:.2}x (budget {RATIO_MAX}x)",
            ms(on)
        );
        if ratio > RATIO_MAX {
            over.push(format!("{what} costs {ratio:.2}x"));
        }
    }
    report.finish();
    if !over.is_empty() {
        eprintln!(
            "overhead: above the budget of {RATIO_MAX}x: {}",
            over.join(", ")
        );
        std::process::exit(1);
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
