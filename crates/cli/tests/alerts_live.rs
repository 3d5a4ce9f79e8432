//! The alert rules on live, paced runs: Debian's Prometheus, with `deploy/prometheus/alerts.yml` as it is,
//! scrapes every second three `epochlab repro --pace 4 --metrics-addr` processes running at the same time:
//! - `buggy` (seed 1), whose backfill finds its progress row missing: `BackfillStateMissing` must fire for it,
//!   and `InvariantViolated` (its zombie read an unregistered table);
//! - `fixed` (seed 1): no alert may fire, not even as pending;
//! - `purge-before-reset` (seed 1), where a zombie touches the tables that recovery purged before the reset
//!   (RisingWave #15852's window): `InvariantViolated` must fire for it.
//!
//! Prometheus' first scrape comes about 11 s after it starts, so the runs start only once it has scraped each
//! target once (the scrape failed: nothing listened yet). Each run keeps serving 4 s after it ends
//! (`--serve-for`), so that its final values are scraped. What fired is read from the `ALERTS` series.
//!
//! Without `prometheus` the test says it is skipped and why, except under CI (`CI=true`), where that is a
//! failure.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use epochlab_tests::prometheus::{
    Prometheus, free_port, get, prometheus_bin, scrape_job, start_prometheus_with,
};
use serde_json::Value;

/// The runs: (mode, seed).
const RUNS: [(&str, &str); 3] = [("buggy", "1"), ("fixed", "1"), ("purge-before-reset", "1")];

fn start_run(mode: &str, seed: &str, addr: SocketAddr) -> Child {
    Command::new(env!("CARGO_BIN_EXE_epochlab"))
        .args(["repro", "--mode", mode, "--seed", seed, "--json"])
        .args(["--pace", "4", "--serve-for", "4"])
        .args(["--metrics-addr", &addr.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("epochlab repro starts")
}

/// Wait until Prometheus has tried to scrape each of its `targets` once.
fn wait_for_first_scrapes(prom: &Prometheus, targets: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // Not up yet: no answer, or not JSON.
        let body = get(prom.addr, "/api/v1/targets").unwrap_or_default();
        let v: Value = serde_json::from_str(&body).unwrap_or_default();
        let active = v["data"]["activeTargets"].as_array().cloned();
        let active = active.unwrap_or_default();
        let scraped = active.iter().filter(|t| {
            let last = t["lastScrape"].as_str().unwrap_or("0001");
            !last.starts_with("0001")
        });
        if scraped.count() == targets {
            return;
        }
        assert!(Instant::now() < deadline, "no first scrape: {v}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Every alert that was pending or firing over the last `window`, as (alertname, alertstate, labels).
fn alerts_seen(prom: &Prometheus, window: Duration) -> Vec<(String, String, Value)> {
    let q = format!("max_over_time(ALERTS[{}s])", window.as_secs());
    let series = prom.query_at(&q, None);
    series
        .into_iter()
        .map(|s| {
            let m = &s["metric"];
            let name = m["alertname"].as_str().unwrap_or("").to_string();
            let state = m["alertstate"].as_str().unwrap_or("").to_string();
            (name, state, m.clone())
        })
        .collect()
}

#[test]
fn a_paced_buggy_run_fires_backfill_state_missing_and_a_fixed_run_fires_nothing() {
    let bin = prometheus_bin();
    let started = Instant::now();
    let addrs: Vec<SocketAddr> = RUNS
        .iter()
        .map(|_| format!("127.0.0.1:{}", free_port()).parse().unwrap())
        .collect();
    let jobs: String = RUNS
        .iter()
        .zip(&addrs)
        .map(|((mode, _), addr)| scrape_job(mode, *addr))
        .collect();
    let prom = start_prometheus_with(&bin, &jobs);
    wait_for_first_scrapes(&prom, RUNS.len());

    let runs: Vec<Child> = RUNS
        .iter()
        .zip(&addrs)
        .map(|(&(mode, seed), &addr)| start_run(mode, seed, addr))
        .collect();
    for (child, (mode, _)) in runs.into_iter().zip(RUNS) {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let code = out.status.code();
        let row: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{mode}: {e}: {code:?} {stderr}"));
        let want = if mode == "fixed" { "passed" } else { "failed" };
        assert_eq!(row["outcome"], want, "{mode}: {row}");
        let virtual_s = row["virtual_ms"].as_f64().unwrap() / 1000.0;
        let wall_s = row["wall_ms"].as_f64().unwrap() / 1000.0;
        // Paced at 4: the run took its simulated time / 4 of wall time (not a speed target: a lower bound).
        assert!(
            wall_s >= virtual_s / 4.0,
            "{mode}: {wall_s} s for {virtual_s} s"
        );
    }
    // The rules are evaluated every second: one more round after the last scrape of the final values.
    std::thread::sleep(Duration::from_secs(2));

    let seen = alerts_seen(&prom, started.elapsed() + Duration::from_secs(5));
    for (name, state, labels) in &seen {
        eprintln!("alert seen: {name} {state} {labels}");
    }
    let fired = |name: &str, mode: &str| {
        seen.iter()
            .any(|(n, state, m)| n == name && state == "firing" && m["mode"] == mode)
    };
    assert!(fired("BackfillStateMissing", "buggy"), "{seen:?}");
    let of_buggy = seen.iter().find(|(n, ..)| n == "BackfillStateMissing");
    assert_eq!(of_buggy.unwrap().2["table_id"], "3", "{seen:?}");
    assert!(fired("InvariantViolated", "purge-before-reset"), "{seen:?}");
    let fixed: Vec<_> = seen
        .iter()
        .filter(|(_, _, m)| m["mode"] == "fixed")
        .collect();
    assert!(fixed.is_empty(), "the fixed run alerted: {fixed:?}");
    // The zombie that reads its unregistered table is the bug, and an invariant broken in any mode alerts
    // (with `--persist-check off` it is the buggy run's only alert).
    assert!(fired("InvariantViolated", "buggy"), "{seen:?}");
}
