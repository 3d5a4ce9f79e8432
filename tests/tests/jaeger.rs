//! Traces in Jaeger: run the repro with the embedded collector and check, through its HTTP API, that the
//! failing `persist backfill state` span is marked as an error with the missing-row message and that
//! `unregister tables` started before it (buggy); and that with the fix `unregister tables` starts only after
//! the Stop barrier's `collect barrier` or, when that barrier failed, after every `reset node` (fixed).

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use epochlab_sim::Mode;
use epochlab_sim::{ReproHooks, ReproParams, TracePer, run_repro_with};
use epochlab_telemetry::{EmbeddedJaeger, ExportRuntime, KeyValue, RunTracer};
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
    trace: String,
    id: String,
    /// The parent's id (`CHILD_OF`).
    parent: Option<String>,
    /// Spans this one links to (`FOLLOWS_FROM`).
    links: Vec<String>,
    start: u64,
    end: u64,
    tags: serde_json::Map<String, Value>,
}

impl Span {
    fn failed(&self) -> bool {
        self.tags.get("error") == Some(&Value::Bool(true))
    }
}

fn parse_span(s: &Value) -> Span {
    let tags = s["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|kv| (kv["key"].as_str().unwrap().to_string(), kv["value"].clone()))
        .collect();
    let refs: Vec<(String, String)> = s["references"]
        .as_array()
        .map(|r| {
            r.iter()
                .map(|r| {
                    let kind = r["refType"].as_str().unwrap().to_string();
                    (kind, r["spanID"].as_str().unwrap().to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let start = s["startTime"].as_u64().unwrap();
    Span {
        op: s["operationName"].as_str().unwrap().to_string(),
        trace: s["traceID"].as_str().unwrap().to_string(),
        id: s["spanID"].as_str().unwrap().to_string(),
        parent: refs
            .iter()
            .find(|(k, _)| k == "CHILD_OF")
            .map(|(_, id)| id.clone()),
        links: refs
            .iter()
            .filter(|(k, _)| k == "FOLLOWS_FROM")
            .map(|(_, id)| id.clone())
            .collect(),
        start,
        end: start + s["duration"].as_u64().unwrap(),
        tags,
    }
}

/// Run `mode` with traces going to an embedded collector; return every span it lists.
fn spans_of(mode: Mode) -> Vec<Span> {
    spans_per(mode, TracePer::Run)
}

fn spans_per(mode: Mode, trace_per: TracePer) -> Vec<Span> {
    let jaeger = EmbeddedJaeger::start("127.0.0.1:0".parse().unwrap()).unwrap();
    // Over OTLP/gRPC, as `--otlp-endpoint` sends (`--jaeger` puts spans into the index directly).
    let rt = ExportRuntime::start().unwrap();
    let tracer = RunTracer::start(
        &jaeger.otlp_endpoint(),
        vec![KeyValue::new("epochlab.mode", mode.as_str())],
        &rt,
    )
    .unwrap();
    let hooks = ReproHooks {
        on_cluster: None,
        tracing_layer: Some(tracer.layer()),
        trace_per,
        ..Default::default()
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
    let out: Vec<Span> = json["data"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["spans"].as_array().unwrap().iter().map(parse_span))
        .collect();
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
    let spans = spans_of(Mode::Buggy);
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
    let spans = spans_of(Mode::Fixed);
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

/// The chain of operations from `span` up to its trace's root.
fn ancestry<'a>(spans: &'a [Span], span: &'a Span) -> Vec<&'a Span> {
    let mut out = vec![span];
    let mut at = span;
    while let Some(p) = at.parent.as_ref() {
        at = spans
            .iter()
            .find(|s| &s.id == p)
            .expect("the parent is in the trace");
        out.push(at);
    }
    out
}

fn by_id<'a>(spans: &'a [Span], id: &str) -> &'a Span {
    spans
        .iter()
        .find(|s| s.id == id)
        .expect("a linked span is in the trace")
}

#[test]
fn a_buggy_run_is_one_trace_that_shows_why() {
    let spans = spans_of(Mode::Buggy);
    let traces: BTreeSet<&str> = spans.iter().map(|s| s.trace.as_str()).collect();
    assert_eq!(traces.len(), 1, "one trace for the run, no stray ones");
    let roots: Vec<&Span> = spans.iter().filter(|s| s.parent.is_none()).collect();
    assert_eq!(
        roots.len(),
        1,
        "one root: {:?}",
        roots.iter().map(|r| &r.op).collect::<Vec<_>>()
    );
    assert_eq!(roots[0].op, "run");
    assert_eq!(roots[0].tags["mode"], "buggy");
    for s in &spans {
        if let Some(p) = s.parent.as_ref().map(|p| by_id(&spans, p)) {
            assert!(
                s.start <= p.end,
                "{} starts after its parent {} ended",
                s.op,
                p.op
            );
            assert!(
                s.start >= p.start,
                "{} starts before its parent {}",
                s.op,
                p.op
            );
        }
    }
    let failing = ops(&spans, "persist backfill state")
        .into_iter()
        .find(|s| s.failed())
        .expect("a failed persist");
    let chain: Vec<&str> = ancestry(&spans, failing)
        .iter()
        .map(|s| s.op.as_str())
        .collect();
    assert_eq!(
        chain,
        [
            "persist backfill state",
            "actor barrier",
            "collect barrier",
            "epoch",
            "run"
        ]
    );
    let actor = ancestry(&spans, failing)[1];
    assert_eq!(actor.tags["actor_id"], failing.tags["actor_id"]);
    assert_eq!(actor.tags["worker_id"], failing.tags["worker_id"]);
    assert!(actor.failed(), "the actor's span carries its failure");
    // The failing persist links to the unregister that removed its table, which ran before it.
    let cause = failing
        .links
        .iter()
        .map(|id| by_id(&spans, id))
        .find(|s| s.op == "unregister tables")
        .expect("a link to the unregister");
    assert!(cause.start < failing.start);
    assert_eq!(ancestry(&spans, cause)[1].op, "drop streaming job");
    // The recovery links to the failed collection, and that to the kill of its node.
    let recovery = ops(&spans, "recovery")
        .into_iter()
        .find(|r| !r.links.is_empty())
        .expect("a recovery caused by a failure");
    let collect = by_id(&spans, &recovery.links[0]);
    assert_eq!(collect.op, "collect barrier");
    assert!(collect.failed());
    let kill = by_id(&spans, collect.links.first().expect("a link to the kill"));
    assert_eq!(kill.op, "kill node");
    assert_eq!(kill.tags["worker_id"], collect.tags["worker_id"]);
    let steps: BTreeSet<&str> = spans
        .iter()
        .filter(|s| s.parent.as_deref() == Some(recovery.id.as_str()))
        .map(|s| s.op.as_str())
        .collect();
    for step in [
        "abort and mark blocked",
        "reset nodes",
        "rebuild actors",
        "inject initial barrier",
    ] {
        assert!(steps.contains(step), "recovery step {step} in {steps:?}");
    }
    assert!(!ops(&spans, "restart node").is_empty());
}

#[test]
fn per_epoch_traces_hold_the_failing_persists_in_their_epochs() {
    let spans = spans_per(Mode::Buggy, TracePer::Epoch);
    assert!(ops(&spans, "run").is_empty(), "no run span");
    let failing: BTreeSet<&str> = ops(&spans, "persist backfill state")
        .into_iter()
        .filter(|s| s.failed())
        .map(|s| s.trace.as_str())
        .collect();
    assert!(!failing.is_empty());
    for trace in failing {
        let root = spans
            .iter()
            .find(|s| s.trace == trace && s.parent.is_none())
            .expect("a root");
        assert_eq!(root.op, "epoch", "a failing persist's trace is its epoch's");
    }
    let roots: BTreeSet<&str> = spans
        .iter()
        .filter(|s| s.parent.is_none())
        .map(|s| s.op.as_str())
        .collect();
    assert_eq!(
        roots,
        BTreeSet::from([
            "drop streaming job",
            "epoch",
            "kill node",
            "recovery",
            "restart node"
        ]),
        "only stories of their own start traces"
    );
}
