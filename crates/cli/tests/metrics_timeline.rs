//! `epochlab repro --metrics-out` end to end: a buggy run's whole metrics timeline, written as OpenMetrics text,
//! loaded into Debian's Prometheus as the README says (`promtool tsdb create-blocks-from openmetrics`, then
//! `prometheus --storage.tsdb.path=...`), and read back with `/api/v1/query_range` against the run's own event
//! log: epoch lag rises and falls, `epochlab_recoveries_total` steps from 0 to 1 at the sample that follows the
//! event log's `recovery: start`, `epochlab_backfill_state_missing_total` is 0 before the failing read and 1
//! after it, and each vnode's persisted-epoch series is, at every sample, the epoch of the vnode's last
//! `persist backfill state` line up to that time.
//!
//! Without `prometheus` or `promtool` the test says it is skipped and why, except under CI (`CI=true`), where
//! that is a failure.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use epochlab_common::Epoch;
use epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS;
use epochlab_tests::prometheus::{Prometheus, needed, prometheus_bin, start_prometheus_on_blocks};

/// The sampling interval of the run, ms.
const INTERVAL_MS: u64 = 1000;

/// The event log's lines as (virtual seconds, text after the time).
fn events(path: &Path) -> Vec<(f64, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|l| {
            let (t, rest) = l.trim_start().split_once(' ')?;
            Some((t.parse().ok()?, rest.to_string()))
        })
        .collect()
}

/// The value of `key=` in an event line.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let rest = line.split(&format!(" {key}=")).nth(1).unwrap_or("");
    rest.split(' ').next().unwrap_or("")
}

/// Each (table, vnode)'s persists, in order: (virtual seconds, epoch).
fn persists(events: &[(f64, String)]) -> BTreeMap<(String, String), Vec<(f64, u64)>> {
    let mut out: BTreeMap<(String, String), Vec<(f64, u64)>> = BTreeMap::new();
    for (t, line) in events {
        if !line.starts_with("persist backfill state:") {
            continue;
        }
        let table = field(line, "table").to_string();
        let epoch: u64 = field(line, "epoch").parse().unwrap();
        let vnodes = line.split("vnodes=[").nth(1).unwrap().trim_end_matches(']');
        for v in vnodes.split(' ') {
            let vnode = v.split(':').next().unwrap().to_string();
            out.entry((table.clone(), vnode))
                .or_default()
                .push((*t, epoch));
        }
    }
    out
}

/// The only series of a range query, as (sample index, value); the index counts intervals from the run's
/// start.
fn series(prom: &Prometheus, q: &str, span: (f64, f64)) -> Vec<(u64, f64)> {
    let result = prom.query_range(q, span.0, span.1, INTERVAL_MS as f64 / 1000.0);
    assert_eq!(result.len(), 1, "`{q}`: {result:?}");
    index(&result[0].1, span.0)
}

fn index(points: &[(f64, f64)], start: f64) -> Vec<(u64, f64)> {
    let k = |t: f64| ((t - start) * 1000.0 / INTERVAL_MS as f64).round() as u64;
    points.iter().map(|&(t, v)| (k(t), v)).collect()
}

/// `epochlab repro --mode buggy` with `--metrics-out` and `--event-log` into `dir`; the run's wall-clock start
/// and its last sample (Unix seconds), from the line that says what the timeline holds.
fn buggy_run(dir: &Path) -> (f64, f64) {
    let out = Command::new(env!("CARGO_BIN_EXE_epochlab"))
        .args(["repro", "--mode", "buggy", "--json", "--metrics-out"])
        .arg(dir.join("run.om"))
        .arg("--event-log")
        .arg(dir.join("run.log"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["outcome"], "failed", "{row}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("metrics timeline: "))
        .unwrap_or_else(|| panic!("no line about the timeline: {stderr}"));
    let span = line.split(" samples at ").nth(1).unwrap();
    let span = span.split(' ').next().unwrap();
    let (first, last) = span.split_once("..").unwrap();
    let (first, last): (f64, f64) = (first.parse().unwrap(), last.parse().unwrap());
    let samples = line
        .split("buggy ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let want = row["virtual_ms"].as_u64().unwrap().div_ceil(INTERVAL_MS) + 1;
    assert_eq!(
        samples,
        want.to_string(),
        "a sample a second, from 0: {line}"
    );
    (first, last)
}

#[test]
fn a_buggy_runs_timeline_loads_into_prometheus_and_follows_its_event_log() {
    let bin = prometheus_bin();
    let promtool = needed("promtool");
    let dir = std::env::temp_dir().join(format!("epochlab-timeline-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let span = buggy_run(&dir);
    let text = std::fs::read_to_string(dir.join("run.om")).unwrap();
    assert!(text.ends_with("# EOF\n"));
    let blocks = Command::new(promtool)
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(dir.join("run.om"))
        .arg(dir.join("data"))
        .output()
        .unwrap();
    assert!(blocks.status.success(), "{blocks:?}");
    let prom = start_prometheus_on_blocks(&bin, &dir.join("data"));
    let events = events(&dir.join("run.log"));

    // Epoch lag rises (barriers wait behind the backfill's held rows) and falls (after recovery).
    let lag = series(&prom, "epochlab_epoch_lag_seconds{mode=\"buggy\"}", span);
    let values: Vec<f64> = lag.iter().map(|&(_, v)| v).collect();
    let peak = (0..values.len())
        .max_by(|&a, &b| values[a].total_cmp(&values[b]))
        .unwrap();
    assert!(values[peak] > values[0], "lag never rose: {values:?}");
    assert!(
        values[peak + 1..].iter().any(|&v| v < values[peak]),
        "lag never fell: {values:?}"
    );

    // The recovery counter steps from 0 to 1 at the first sample at or after `recovery: start`.
    let recovery = events
        .iter()
        .find(|(_, l)| l.starts_with("recovery: start") && !l.ends_with("reason=bootstrap"))
        .expect("the run recovered")
        .0;
    let step = (recovery * 1000.0 / INTERVAL_MS as f64).ceil() as u64;
    let recoveries = series(&prom, "epochlab_recoveries_total{mode=\"buggy\"}", span);
    assert_steps_at(&recoveries, step, "recoveries");

    // The missing progress row: 0 (from the start of the table's series) until the failing read, then 1.
    let failure = events
        .iter()
        .find(|(_, l)| l.starts_with("actor failure:") && l.contains("reason=state_missing"))
        .expect("the run failed by the missing row")
        .0;
    let step = (failure * 1000.0 / INTERVAL_MS as f64).ceil() as u64;
    let missing = "epochlab_backfill_state_missing_total{mode=\"buggy\"}";
    assert_steps_at(&series(&prom, missing, span), step, "state missing");

    vnodes_follow_the_event_log(&prom, &events, span);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `points` are 0 before sample `step` and 1 from it on, with samples on both sides.
fn assert_steps_at(points: &[(u64, f64)], step: u64, what: &str) {
    assert!(points.iter().any(|&(k, _)| k < step), "{what}: {points:?}");
    assert!(points.iter().any(|&(k, _)| k >= step), "{what}: {points:?}");
    for &(k, v) in points {
        let want = if k < step { 0.0 } else { 1.0 };
        assert_eq!(
            v, want,
            "{what} at sample {k} (steps at {step}): {points:?}"
        );
    }
}

/// At every sample, each vnode's persisted-epoch series is the epoch of its last persist up to that time (the
/// epoch's physical time, shifted onto the run's wall-clock start); it has no value before the first.
fn vnodes_follow_the_event_log(prom: &Prometheus, events: &[(f64, String)], span: (f64, f64)) {
    let persists = persists(events);
    assert!(persists.len() >= 2, "{persists:?}");
    let q = "epochlab_backfill_vnode_persisted_epoch_timestamp_seconds{mode=\"buggy\"}";
    let step = INTERVAL_MS as f64 / 1000.0;
    let result = prom.query_range(q, span.0, span.1, step);
    assert_eq!(
        result.len(),
        persists.len(),
        "a series per vnode: {result:?}"
    );
    let wall = |epoch: u64| {
        let ms = Epoch(epoch).as_unix_millis() - DEFAULT_ORIGIN_UNIX_MS;
        span.0 + ms as f64 / 1000.0
    };
    for (labels, points) in result {
        let key = (
            labels["table_id"].as_str().unwrap().to_string(),
            labels["vnode"].as_str().unwrap().to_string(),
        );
        let writes = &persists[&key];
        let points: BTreeMap<u64, f64> = index(&points, span.0).into_iter().collect();
        let samples = ((span.1 - span.0) / step).round() as u64;
        for k in 0..=samples {
            let at = k as f64 * step;
            let last = writes.iter().rev().find(|(t, _)| *t <= at);
            match (last, points.get(&k)) {
                (None, None) => {}
                (Some((_, epoch)), Some(&got)) => {
                    let want = wall(*epoch);
                    assert!(
                        (got - want).abs() < 0.002,
                        "{key:?} at {at} s: {got} vs {want}"
                    );
                }
                (want, got) => panic!("{key:?} at {at} s: {got:?}, its persists say {want:?}"),
            }
        }
    }
}
