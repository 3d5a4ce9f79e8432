//! The embedded Jaeger's search, as the UI uses it: `epochlab repro --mode all --jaeger` serves the collected
//! traces, and each search parameter of `/api/traces` must return exactly the traces that this test finds by
//! filtering the unfiltered list itself (Jaeger's semantics: a trace matches when one of its spans satisfies
//! every condition at once). Nothing here depends on how spans are grouped into traces.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// `epochlab repro --mode all --jaeger --trace-per <per>` serving on a free port; killed when dropped.
struct Served {
    child: Child,
    addr: SocketAddr,
}

impl Served {
    fn start(per: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_epochlab"))
            .args([
                "repro",
                "--mode",
                "all",
                "--jaeger",
                "--jaeger-addr",
                "127.0.0.1:0",
            ])
            .args(["--trace-per", per, "--serve-for", "300"])
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("epochlab runs");
        // Stderr is read to its end on a thread of its own: a closed pipe would kill the child.
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        // The UI's address is printed once every run's spans have been delivered.
        let mut seen = Vec::new();
        while let Ok(line) = rx.recv_timeout(Duration::from_secs(120)) {
            if let Some(rest) = line.strip_prefix("Jaeger UI: http://") {
                let addr = rest.split('/').next().expect("an address");
                let addr = addr.parse().expect("a socket address");
                return Self { child, addr };
            }
            seen.push(line);
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("no Jaeger UI line on stderr: {seen:#?}");
    }

    /// The status and the JSON body of a GET.
    fn get(&self, path: &str) -> (u16, Value) {
        let mut s =
            TcpStream::connect_timeout(&self.addr, Duration::from_secs(2)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        write!(s, "GET {path} HTTP/1.0\r\nHost: {}\r\n\r\n", self.addr).expect("request");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("response");
        let (head, body) = out.split_once("\r\n\r\n").expect("a response");
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .expect("a status");
        let json = serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
        (status, json)
    }

    /// The ids, in order, of `/api/traces?service=epochlab&<query>`.
    fn search(&self, query: &str) -> Vec<String> {
        let (status, json) = self.get(&format!("/api/traces?service=epochlab&{query}"));
        assert_eq!(status, 200, "{query}: {json}");
        let data = json["data"].as_array().expect("data");
        assert_eq!(json["total"].as_u64(), Some(data.len() as u64), "{query}");
        data.iter()
            .map(|t| t["traceID"].as_str().expect("traceID").to_string())
            .collect()
    }

    fn search_set(&self, query: &str) -> BTreeSet<String> {
        self.search(query).into_iter().collect()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A span as the test sees it in the unfiltered answer.
#[derive(Debug)]
struct SpanModel {
    op: String,
    start: u64,
    duration: u64,
    /// Its tags, its process's tags and its logs' fields, every value as a string.
    tags: Vec<(String, String)>,
}

#[derive(Debug)]
struct TraceModel {
    id: String,
    spans: Vec<SpanModel>,
}

impl TraceModel {
    fn start(&self) -> u64 {
        self.spans.iter().map(|s| s.start).min().expect("a span")
    }
}

fn as_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn tags_of(list: &Value) -> impl Iterator<Item = (String, String)> + '_ {
    let list = list.as_array().map(Vec::as_slice).unwrap_or_default();
    list.iter().map(|kv| {
        (
            kv["key"].as_str().expect("key").to_string(),
            as_string(&kv["value"]),
        )
    })
}

fn model(json: &Value) -> Vec<TraceModel> {
    let traces = json["data"].as_array().expect("data");
    let trace = |t: &Value| {
        let spans = t["spans"].as_array().expect("spans").iter().map(|s| {
            let process = &t["processes"][s["processID"].as_str().expect("processID")];
            let logs = s["logs"].as_array().map(Vec::as_slice).unwrap_or_default();
            let tags = tags_of(&s["tags"])
                .chain(tags_of(&process["tags"]))
                .chain(logs.iter().flat_map(|l| tags_of(&l["fields"])))
                .collect();
            SpanModel {
                op: s["operationName"]
                    .as_str()
                    .expect("operationName")
                    .to_string(),
                start: s["startTime"].as_u64().expect("startTime"),
                duration: s["duration"].as_u64().expect("duration"),
                tags,
            }
        });
        TraceModel {
            id: t["traceID"].as_str().expect("traceID").to_string(),
            spans: spans.collect(),
        }
    };
    traces.iter().map(trace).collect()
}

/// The ids of the traces with a span for which `pred` holds.
fn expect(all: &[TraceModel], pred: impl Fn(&SpanModel) -> bool) -> BTreeSet<String> {
    all.iter()
        .filter(|t| t.spans.iter().any(&pred))
        .map(|t| t.id.clone())
        .collect()
}

fn has(s: &SpanModel, key: &str, value: &str) -> bool {
    s.tags.iter().any(|(k, v)| k == key && v == value)
}

fn ids(all: &[TraceModel]) -> BTreeSet<String> {
    all.iter().map(|t| t.id.clone()).collect()
}

/// `set` is what the search returned, `expected` what the test computed; non-empty, and a strict subset.
fn assert_splits(
    what: &str,
    set: &BTreeSet<String>,
    expected: &BTreeSet<String>,
    all: &[TraceModel],
) {
    assert_eq!(set, expected, "{what}");
    assert!(!set.is_empty(), "{what}: nothing matched");
    assert!(set.len() < all.len(), "{what}: every trace matched");
}

fn url(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// With a trace per run, the failing persist finds exactly the traces of the runs whose zombie read its
/// progress row after the unregister (at seed 1, buggy and purge-before-reset), not fixed's, whose only errors
/// are epochs that recovery abandoned.
#[test]
fn a_failing_persist_finds_the_buggy_runs_trace() {
    let served = Served::start("run");
    let (status, everything) = served.get("/api/traces?service=epochlab&limit=100000");
    assert_eq!(status, 200);
    let all = model(&everything);
    assert_eq!(all.len(), 3, "a trace per mode");
    let buggy = expect(&all, |s| {
        s.op == "run" && (has(s, "mode", "buggy") || has(s, "mode", "purge-before-reset"))
    });
    assert_eq!(buggy.len(), 2);
    let query = format!(
        "operation={}&tags={}",
        url("persist backfill state"),
        url(r#"{"error":"true"}"#)
    );
    assert_eq!(served.search_set(&query), buggy);
    let errors = served.search_set(&format!("tags={}", url(r#"{"error":"true"}"#)));
    assert!(errors.len() > 1, "fixed's abandoned epochs are errors too");
}

/// With a trace per epoch there are many traces, so each parameter can be shown to split them.
#[test]
fn every_search_parameter_returns_exactly_the_matching_traces() {
    let served = Served::start("epoch");
    let (status, everything) = served.get("/api/traces?service=epochlab&limit=100000");
    assert_eq!(status, 200);
    let all = model(&everything);
    assert!(all.len() > 1, "the runs left traces: {}", all.len());
    operation_and_tags(&served, &all);
    durations(&served, &all);
    time_window(&served, &all);
    limit_and_order(&served, &all);
    lookups(&served, &all);
}

fn operation_and_tags(served: &Served, all: &[TraceModel]) {
    const PERSIST: &str = "persist backfill state";
    let failed_persist = expect(all, |s| s.op == PERSIST && has(s, "error", "true"));
    let query = format!(
        "operation={}&tags={}&limit=100000",
        url(PERSIST),
        url(r#"{"error":"true"}"#)
    );
    assert_splits(
        "failed persist",
        &served.search_set(&query),
        &failed_persist,
        all,
    );
    let repeated = format!("operation={}&tag=error:true&limit=100000", url(PERSIST));
    assert_eq!(
        served.search_set(&repeated),
        failed_persist,
        "tag=key:value"
    );
    // Only the runs with the early unregister fail their persist check, never fixed.
    for trace in all.iter().filter(|t| failed_persist.contains(&t.id)) {
        let modes: BTreeSet<&str> = trace
            .spans
            .iter()
            .flat_map(|s| {
                s.tags
                    .iter()
                    .filter(|(k, _)| k == "epochlab.mode")
                    .map(|(_, v)| v.as_str())
            })
            .collect();
        assert!(
            (modes.contains("buggy") || modes.contains("purge-before-reset"))
                && !modes.contains("fixed"),
            "{}: {modes:?}",
            trace.id
        );
    }
    let epochs = expect(all, |s| s.op == "epoch");
    assert!(!epochs.is_empty(), "epoch spans");
    assert_eq!(
        served.search_set("operation=epoch&limit=100000"),
        epochs,
        "operation=epoch"
    );
    let actor = expect(all, |s| has(s, "actor_id", "3"));
    let query = format!("tags={}&limit=100000", url(r#"{"actor_id":"3"}"#));
    assert_splits("actor_id=3", &served.search_set(&query), &actor, all);
    // Both on one span: the failing actor's own failed span.
    let both = expect(all, |s| has(s, "actor_id", "3") && has(s, "error", "true"));
    let query = format!(
        "tags={}&limit=100000",
        url(r#"{"error":"true","actor_id":"3"}"#)
    );
    assert_eq!(
        served.search_set(&query),
        both,
        "error and actor_id on one span"
    );
    assert!(both.is_subset(&actor));
    // A process (resource) tag: the run's mode.
    let fixed = expect(all, |s| has(s, "epochlab.mode", "fixed"));
    assert_splits(
        "epochlab.mode=fixed",
        &served.search_set("tag=epochlab.mode:fixed&limit=100000"),
        &fixed,
        all,
    );
    assert!(fixed.is_disjoint(&failed_persist));
    let none = format!(
        "operation=epoch&tags={}&limit=100000",
        url(r#"{"actor_id":"no such actor"}"#)
    );
    assert!(served.search_set(&none).is_empty());
}

/// A window `[lo, hi]` of the sorted, distinct `values` (of a span's `field`) that some traces match and
/// others do not: the test of a range is only meaningful with one.
fn splitting_window(
    values: &[u64],
    all: &[TraceModel],
    field: impl Fn(&SpanModel) -> u64,
) -> (u64, u64) {
    let n = values.len();
    let candidates = (1..8)
        .flat_map(|i| (i..8).map(move |j| (values[i * (n - 1) / 8], values[j * (n - 1) / 8])));
    for (lo, hi) in candidates {
        let matched = expect(all, |s| (lo..=hi).contains(&field(s))).len();
        if matched > 0 && matched < all.len() {
            return (lo, hi);
        }
    }
    panic!("no window of {n} distinct values splits the traces");
}

/// Durations in µs, as `1.234ms` (the parser's fractions) or `1234us`.
fn duration_param(us: u64, as_ms: bool) -> String {
    if as_ms {
        format!("{}.{:03}ms", us / 1000, us % 1000)
    } else {
        format!("{us}us")
    }
}

fn durations(served: &Served, all: &[TraceModel]) {
    let distinct: BTreeSet<u64> = all
        .iter()
        .flat_map(|t| &t.spans)
        .map(|s| s.duration)
        .collect();
    let (min, max) = splitting_window(&distinct.into_iter().collect::<Vec<_>>(), all, |s| {
        s.duration
    });
    let window = expect(all, |s| (min..=max).contains(&s.duration));
    let query = format!(
        "minDuration={}&maxDuration={}&limit=100000",
        duration_param(min, true),
        duration_param(max, false)
    );
    assert_splits("duration window", &served.search_set(&query), &window, all);
    // The range applies to the span that has the operation: the epoch spans' own durations decide.
    let epoch_durations: BTreeSet<u64> = all
        .iter()
        .flat_map(|t| &t.spans)
        .filter(|s| s.op == "epoch")
        .map(|s| s.duration)
        .collect();
    let median = *epoch_durations
        .iter()
        .nth(epoch_durations.len() / 2)
        .expect("epoch spans");
    let long_epochs = expect(all, |s| s.op == "epoch" && s.duration >= median);
    let query = format!(
        "operation=epoch&minDuration={}&limit=100000",
        duration_param(median, true)
    );
    assert_eq!(
        served.search_set(&query),
        long_epochs,
        "operation=epoch&minDuration"
    );
    assert!(!long_epochs.is_empty());
    let short = expect(all, |s| s.op == "epoch" && s.duration <= median);
    let query = format!(
        "operation=epoch&maxDuration={}&limit=100000",
        duration_param(median, false)
    );
    assert_eq!(
        served.search_set(&query),
        short,
        "operation=epoch&maxDuration"
    );
    let (status, json) = served.get("/api/traces?service=epochlab&minDuration=1.2x");
    assert_eq!(status, 400, "{json}");
    assert!(
        json["errors"][0]["msg"]
            .as_str()
            .expect("msg")
            .contains("unknown unit `x`")
    );
}

fn time_window(served: &Served, all: &[TraceModel]) {
    let mut starts: Vec<u64> = all.iter().flat_map(|t| &t.spans).map(|s| s.start).collect();
    starts.sort_unstable();
    starts.dedup();
    let (start, end) = splitting_window(&starts, all, |s| s.start);
    let window = expect(all, |s| (start..=end).contains(&s.start));
    let query = format!("start={start}&end={end}&limit=100000");
    assert_splits("time window", &served.search_set(&query), &window, all);
    let after = expect(all, |s| s.start >= end);
    assert_eq!(
        served.search_set(&format!("start={end}&limit=100000")),
        after,
        "start only"
    );
    // The UI's relative lookback ("last hour") leaves the end open: a run's spans may start after the UI's now.
    let before_all = starts[0] - 1;
    let custom = format!("start=0&end={before_all}&lookback=custom&limit=100000");
    assert!(served.search_set(&custom).is_empty());
    let relative = format!("start=0&end={before_all}&lookback=1h&limit=100000");
    assert_eq!(served.search_set(&relative), ids(all));
}

fn limit_and_order(served: &Served, all: &[TraceModel]) {
    let mut latest: Vec<(u64, &str)> = all.iter().map(|t| (t.start(), t.id.as_str())).collect();
    latest.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    let three: Vec<String> = latest
        .iter()
        .take(3)
        .map(|(_, id)| id.to_string())
        .collect();
    assert_eq!(
        served.search("limit=3"),
        three,
        "limit keeps the latest-starting traces"
    );
    let default = served.search("").len();
    assert_eq!(default, all.len().min(100), "Jaeger's default limit is 100");
}

fn lookups(served: &Served, all: &[TraceModel]) {
    let operations: BTreeSet<String> = all
        .iter()
        .flat_map(|t| &t.spans)
        .map(|s| s.op.clone())
        .collect();
    let (status, json) = served.get("/api/services/epochlab/operations");
    assert_eq!(status, 200);
    let listed: BTreeSet<String> = json["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|o| o.as_str().expect("name").to_string())
        .collect();
    assert_eq!(listed, operations, "every operation, not only roots");
    let (_, services) = served.get("/api/services");
    assert_eq!(services["data"], serde_json::json!(["epochlab"]));
    let first = &all[0];
    let (status, json) = served.get(&format!("/api/traces/{}", first.id));
    assert_eq!(status, 200);
    assert_eq!(
        json["data"][0]["spans"].as_array().map(Vec::len),
        Some(first.spans.len())
    );
    let (status, _) = served.get(&format!("/api/traces/{}", "0".repeat(32)));
    assert_eq!(status, 404);
    let by_id: BTreeMap<String, usize> =
        all.iter().map(|t| (t.id.clone(), t.spans.len())).collect();
    assert_eq!(by_id.len(), all.len(), "trace ids are unique");
}
