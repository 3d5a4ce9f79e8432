//! Traces in Jaeger: run the repro with the embedded collector and check, through its HTTP API, that the
//! failing `persist backfill state` span is marked as an error with the missing-row message and that
//! `unregister tables` started before it (buggy); and that with the fix `unregister tables` starts only after
//! the Stop barrier's `collect barrier` or, when that barrier failed, after every `reset node` (fixed).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use epochlab_meta::DropMode;
use epochlab_sim::{ReproHooks, ReproParams, run_repro_with};
use epochlab_telemetry::{EmbeddedJaeger, KeyValue, RunTracer};
use serde_json::Value;

fn get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

#[derive(Debug)]
struct Span {
    op: String,
    start: u64,
    end: u64,
    tags: serde_json::Map<String, Value>,
}

/// Run `mode` with traces going to an embedded collector; return every span it lists.
fn spans_of(mode: DropMode) -> Vec<Span> {
    let jaeger = EmbeddedJaeger::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let tracer = RunTracer::start(
        &jaeger.otlp_endpoint(),
        vec![KeyValue::new("epochlab.mode", mode.as_str())],
        jaeger.handle(),
    )
    .unwrap();
    let hooks = ReproHooks {
        on_cluster: None,
        tracing_layer: Some(tracer.layer()),
        time_observers: Vec::new(),
    };
    run_repro_with(
        &ReproParams {
            mode,
            ..Default::default()
        },
        hooks,
    );
    tracer.finish().unwrap();
    let body = get(jaeger.ui_addr(), "/api/traces?service=epochlab&limit=5000");
    let json: Value = serde_json::from_str(&body).unwrap();
    let mut out = Vec::new();
    for t in json["data"].as_array().unwrap() {
        for s in t["spans"].as_array().unwrap() {
            let tags = s["tags"]
                .as_array()
                .unwrap()
                .iter()
                .map(|kv| (kv["key"].as_str().unwrap().to_string(), kv["value"].clone()))
                .collect();
            let start = s["startTime"].as_u64().unwrap();
            out.push(Span {
                op: s["operationName"].as_str().unwrap().to_string(),
                start,
                end: start + s["duration"].as_u64().unwrap(),
                tags,
            });
        }
    }
    assert!(
        out.iter().any(|s| s.op == "epoch"),
        "epoch traces were collected"
    );
    out
}

fn ops<'a>(spans: &'a [Span], op: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.op == op).collect()
}

#[test]
fn buggy_trace_shows_the_unregister_before_the_failing_persist() {
    let spans = spans_of(DropMode::Buggy);
    let failing: Vec<&Span> = ops(&spans, "persist backfill state")
        .into_iter()
        .filter(|s| s.tags.get("error") == Some(&Value::Bool(true)))
        .collect();
    assert!(!failing.is_empty(), "a failed persist backfill state span");
    let message = failing[0].tags["error.message"].as_str().unwrap();
    assert!(
        message.starts_with("row [Some(Int16(")
            && message.ends_with(")] not found (by the backfill persist check)"),
        "{message}"
    );
    let first_failure = failing.iter().map(|s| s.start).min().unwrap();
    let unregister = ops(&spans, "unregister tables");
    assert!(!unregister.is_empty());
    assert!(
        unregister.iter().any(|u| u.start < first_failure),
        "unregister tables started before the failing persist"
    );
    // Span times are simulated: epochs are a barrier interval apart, not microseconds.
    let mut epochs: Vec<u64> = ops(&spans, "epoch").iter().map(|s| s.start).collect();
    epochs.sort_unstable();
    assert!(
        epochs.windows(2).any(|w| w[1] - w[0] >= 900_000),
        "epoch roots are ~1 s apart in span time"
    );
}

#[test]
fn fixed_trace_unregisters_after_collection_or_reset() {
    let spans = spans_of(DropMode::Fixed);
    assert!(
        ops(&spans, "persist backfill state")
            .iter()
            .all(|s| s.tags.get("error").is_none()),
        "no persist failed"
    );
    let unregister = ops(&spans, "unregister tables");
    assert!(
        !unregister.is_empty(),
        "the sink's tables were unregistered"
    );
    let resets = ops(&spans, "reset node");
    for u in unregister {
        let reason = u.tags["reason"].as_str().unwrap_or("");
        if reason.contains("after reset") {
            let before: Vec<&&Span> = resets.iter().filter(|r| r.start <= u.start).collect();
            assert!(!before.is_empty(), "a reset preceded the unregister");
            // Every reset of that recovery (the ones right before it) ended before the unregister started.
            let recovery_start = before
                .iter()
                .map(|r| r.start)
                .max()
                .unwrap()
                .saturating_sub(10_000_000);
            for r in resets
                .iter()
                .filter(|r| r.start >= recovery_start && r.start <= u.start)
            {
                assert!(
                    r.end <= u.start,
                    "reset node ended at {} after unregister started at {}",
                    r.end,
                    u.start
                );
            }
        } else {
            assert_eq!(
                reason, "drop collected",
                "unexpected unregister: {:?}",
                u.tags
            );
            let collected_before = ops(&spans, "collect barrier")
                .into_iter()
                .filter(|c| c.end <= u.start)
                .count();
            assert!(
                collected_before > 0,
                "the Stop barrier was collected before"
            );
        }
    }
}
