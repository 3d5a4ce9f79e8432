//! Prometheus end to end for a soak: Debian's `prometheus` scrapes, every second, a real `epochlab soak
//! --metrics-addr` of a buggy campaign (every seed fails) that runs for a minute, and the test checks through
//! Prometheus' HTTP API that the soak's series grow scrape after scrape and agree with the campaign's results
//! file, that the engine's counters are summed over the seeds and its gauges are per worker, that every
//! dashboard expression returns series, and that the fixed-mode alert fires on the failing campaign's series.
//!
//! The alert is for `mode="fixed"` campaigns, and a fixed campaign does not fail. So Prometheus scrapes the
//! soak twice: as it is (job `soak`), and with `mode="buggy"` relabelled to `mode="fixed"` at ingestion (job
//! `soak-as-fixed`, a `metric_relabel_configs` rule): the second is a failing campaign's real series, labelled
//! as a fixed campaign's. The alert rules are `deploy/prometheus/alerts.yml` as they are. The alert must fire
//! for `soak-as-fixed` and not for `soak`, whose series differ only in the mode.
//!
//! Lives in the CLI's crate (it runs the `epochlab` binary, `CARGO_BIN_EXE_epochlab`); the Prometheus harness
//! is `epochlab_tests::prometheus`, shared with `tests/tests/prometheus.rs`. Without `prometheus` the test says
//! it is skipped and why, except under CI (`CI=true`), where that is a failure.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use epochlab_tests::prometheus::{
    Prometheus, alert_exprs, dashboard_exprs, prometheus_bin, scrape_job, start_prometheus_with,
};
use serde_json::Value;

/// How long the campaign starts seeds (`--duration`).
const CAMPAIGN_SECS: u64 = 60;

fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The one sample of each series of an instant query, by the value of `label`.
fn by_label(result: &[Value], label: &str) -> BTreeMap<String, f64> {
    result
        .iter()
        .map(|s| {
            let key = s["metric"][label].as_str().unwrap_or("").to_string();
            let v: f64 = s["value"][1].as_str().unwrap().parse().unwrap();
            (key, v)
        })
        .collect()
}

/// The value of a query that returns one series.
fn one(prom: &Prometheus, q: &str, at: f64) -> f64 {
    let r = prom.query_at(q, Some(at));
    assert_eq!(r.len(), 1, "`{q}`: {r:?}");
    r[0]["value"][1].as_str().unwrap().parse().unwrap()
}

/// Firing alerts named `name`, each as its labels.
fn firing(prom: &Prometheus, name: &str) -> Vec<Value> {
    let v = prom.api("/api/v1/alerts");
    let alerts = v["data"]["alerts"].as_array().cloned().unwrap_or_default();
    alerts
        .into_iter()
        .filter(|a| a["labels"]["alertname"] == name && a["state"] == "firing")
        .map(|a| a["labels"].clone())
        .collect()
}

#[test]
fn prometheus_scrapes_a_soak_and_the_fixed_mode_alert_fires_on_its_failures() {
    let bin = prometheus_bin();
    let dir = std::env::temp_dir().join(format!("epochlab-soak-prom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let results = dir.join("results.jsonl");
    let started = Instant::now();

    // The campaign: the directed scenario, buggy at the defaults (most seeds fail), two workers, a minute, metrics on a free port;
    // it keeps serving 3 s after its last seed so that Prometheus scrapes the final values.
    let duration = CAMPAIGN_SECS.to_string();
    let mut soak = Command::new(env!("CARGO_BIN_EXE_epochlab"))
        .args([
            "soak",
            "--scenario",
            "14910",
            "--mode",
            "buggy",
            "--seeds",
            "0..1000000",
            "--jobs",
            "2",
        ])
        .args(["--duration", duration.as_str(), "--serve-for", "3"])
        .args(["--metrics-addr", "127.0.0.1:0", "--results"])
        .arg(&results)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("epochlab soak starts");
    let stderr = soak.stderr.take().unwrap();
    let (lines_tx, lines) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if lines_tx.send(line).is_err() {
                return;
            }
        }
    });
    let next_line = |timeout: Duration| lines.recv_timeout(timeout);
    let first = next_line(Duration::from_secs(30)).expect("the soak says where its metrics are");
    let target: SocketAddr = first
        .strip_prefix("metrics: http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("not the metrics line: {first}"))
        .parse()
        .unwrap();

    // Prometheus: the soak as it is, and the same series labelled as a fixed campaign's.
    let as_fixed = format!(
        "{}    metric_relabel_configs:\n      - {{ source_labels: [mode], regex: buggy, target_label: mode, replacement: fixed }}\n",
        scrape_job("soak-as-fixed", target)
    );
    let prom = start_prometheus_with(&bin, &format!("{}{as_fixed}", scrape_job("soak", target)));
    prom.wait_for("epochlab_soak_seeds_total", Duration::from_secs(60));

    // While the campaign runs: the fixed-mode alert fires on the relabelled series.
    let mut alert_at = None;
    let mut stderr_tail = vec![first];
    let campaign_over = loop {
        match next_line(Duration::from_millis(500)) {
            Ok(line) if line.starts_with("serving metrics at ") => break Instant::now(),
            Ok(line) => stderr_tail.push(line),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("the soak ended before serving: {stderr_tail:?}")
            }
        }
        if alert_at.is_none() && !firing(&prom, "SoakFixedSeedFailed").is_empty() {
            alert_at = Some(started.elapsed());
        }
        assert!(
            started.elapsed() < Duration::from_secs(CAMPAIGN_SECS + 60),
            "the campaign does not end: {stderr_tail:?}"
        );
    };
    let alert_at = alert_at.expect("SoakFixedSeedFailed fired while the campaign ran");
    assert!(
        alert_at < Duration::from_secs(CAMPAIGN_SECS / 2),
        "the alert fired only after {alert_at:?}"
    );
    assert!(
        campaign_over.duration_since(started) >= Duration::from_secs(CAMPAIGN_SECS),
        "a campaign of at least {CAMPAIGN_SECS} s"
    );
    // Two more scrapes of the final values, then every query is pinned to this moment (the soak still serves).
    std::thread::sleep(Duration::from_secs(2));
    let at = now_s();
    let alerts_now = (
        firing(&prom, "SoakFixedSeedFailed"),
        firing(&prom, "RecoveryLoop"),
        firing(&prom, "BackfillStateMissing"),
    );
    let status = soak.wait().unwrap();
    assert_eq!(status.code(), Some(1), "seeds failed: {stderr_tail:?}");

    // The campaign's own account of itself.
    let rows: Vec<Value> = std::fs::read_to_string(&results)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let n = rows.len() as f64;
    assert!(
        rows.len() >= 100,
        "{} seeds in {CAMPAIGN_SECS} s",
        rows.len()
    );
    let mut outcomes: BTreeMap<String, f64> = ["failed", "passed", "stuck"]
        .map(|o| (o.to_string(), 0.0))
        .into();
    let mut signatures: BTreeMap<String, f64> = BTreeMap::new();
    for r in &rows {
        *outcomes.get_mut(r["outcome"].as_str().unwrap()).unwrap() += 1.0;
        if let Some(sig) = r["signature"].as_str() {
            *signatures.entry(sig.to_string()).or_default() += 1.0;
        }
    }
    let failed = outcomes["failed"];
    assert!(failed >= n / 2.0, "buggy fails (most seeds): {outcomes:?}");
    let virtual_s: f64 = rows
        .iter()
        .map(|r| r["virtual_ms"].as_f64().unwrap())
        .sum::<f64>()
        / 1e3;
    let wall_s: f64 = rows
        .iter()
        .map(|r| r["wall_ms"].as_f64().unwrap())
        .sum::<f64>()
        / 1e3;

    // Seeds by outcome: every series from the start, the failed one grows scrape after scrape.
    let seeds = by_label(
        &prom.query_at("epochlab_soak_seeds_total{job=\"soak\"}", Some(at)),
        "outcome",
    );
    assert_eq!(seeds, outcomes);
    let window = format!("{}s", CAMPAIGN_SECS + 10);
    let raw = prom.query_at(
        &format!("epochlab_soak_seeds_total{{job=\"soak\",outcome=\"failed\"}}[{window}]"),
        Some(at),
    );
    assert_eq!(raw.len(), 1, "{raw:?}");
    let samples: Vec<(f64, f64)> = raw[0]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s[0].as_f64().unwrap(),
                s[1].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect();
    assert!(samples.len() >= 30, "{} scrapes", samples.len());
    assert!(
        samples.windows(2).all(|w| w[0].1 <= w[1].1),
        "a counter: {samples:?}"
    );
    let distinct: BTreeSet<u64> = samples.iter().map(|s| s.1 as u64).collect();
    assert!(distinct.len() >= 5, "{distinct:?}");
    let grew = samples.windows(2).filter(|w| w[0].1 < w[1].1).count();
    assert!(
        grew * 3 >= samples.len(),
        "grew in {grew} of {} scrapes",
        samples.len()
    );
    assert_eq!(samples.last().unwrap().1, failed);

    // Failures by signature, seeds in progress, virtual and wall time.
    let failures = by_label(
        &prom.query_at("epochlab_soak_failures_total{job=\"soak\"}", Some(at)),
        "signature",
    );
    let mut want = signatures.clone();
    want.insert("other".into(), 0.0);
    assert_eq!(failures, want);
    let in_progress = "epochlab_soak_seeds_in_progress{job=\"soak\"}";
    assert_eq!(one(&prom, in_progress, at), 0.0);
    let busiest = one(
        &prom,
        &format!("max_over_time({in_progress}[{window}])"),
        at,
    );
    assert!((1.0..=2.0).contains(&busiest), "{busiest}");
    let got = one(
        &prom,
        "epochlab_soak_virtual_seconds_total{job=\"soak\"}",
        at,
    );
    assert!((got - virtual_s).abs() < 1e-3, "{got} vs {virtual_s}");
    let got = one(&prom, "epochlab_soak_wall_seconds_total{job=\"soak\"}", at);
    assert!((got - wall_s).abs() < 1e-3, "{got} vs {wall_s}");
    let rate = "rate(epochlab_soak_virtual_seconds_total{job=\"soak\"}[30s])";
    assert!(
        one(&prom, rate, at - 5.0) > 1.0,
        "simulated faster than real time"
    );

    // The engine's metrics: counters summed over every seed, gauges per worker (0 and 1 of --jobs 2).
    let recoveries = one(&prom, "epochlab_recoveries_total{job=\"soak\"}", at);
    assert!(
        recoveries >= n,
        "every seed recovers: {recoveries} for {n} seeds"
    );
    let not_found: f64 = signatures
        .iter()
        .filter(|(s, _)| s.contains("not found"))
        .map(|(_, c)| c)
        .sum();
    let missing = one(
        &prom,
        "sum(epochlab_backfill_state_missing_total{job=\"soak\"})",
        at,
    );
    assert!(
        missing >= not_found,
        "{missing} missing rows for {not_found} seeds"
    );
    for gauge in [
        "epochlab_barrier_inflight",
        "epochlab_epoch_committed_timestamp_seconds",
    ] {
        let workers = by_label(
            &prom.query_at(&format!("{gauge}{{job=\"soak\"}}"), Some(at)),
            "worker",
        );
        let workers: Vec<&str> = workers.keys().map(String::as_str).collect();
        assert_eq!(workers, ["0", "1"], "{gauge}");
    }

    // The dashboard has a series for every expression; every alert expression evaluates.
    for e in dashboard_exprs() {
        let r = prom.query_at(&e, Some(at));
        assert!(
            !r.is_empty(),
            "dashboard expression `{e}` returned no series"
        );
    }
    for e in alert_exprs() {
        prom.query_at(&e, Some(at));
    }

    // The fixed-mode alert: firing for the failing campaign labelled fixed, never for it labelled buggy.
    let (fixed_alerts, recovery_loops, missing_alerts) = alerts_now;
    assert_eq!(fixed_alerts.len(), 1, "{fixed_alerts:?}");
    let a = &fixed_alerts[0];
    assert_eq!(
        (&a["job"], &a["mode"], &a["outcome"], &a["severity"]),
        (
            &"soak-as-fixed".into(),
            &"fixed".into(),
            &"failed".into(),
            &"critical".into()
        ),
        "{a}"
    );
    let ever = prom.query_at(
        &format!("ALERTS{{alertname=\"SoakFixedSeedFailed\",job=\"soak\"}}[{window}]"),
        Some(at),
    );
    assert!(ever.is_empty(), "never for the buggy campaign: {ever:?}");
    // The other alerts on a soak: the recoveries are the seeds' (no RecoveryLoop); the missing rows are real.
    assert!(recovery_loops.is_empty(), "{recovery_loops:?}");
    assert!(
        missing_alerts.iter().any(|a| a["job"] == "soak"),
        "BackfillStateMissing: {missing_alerts:?}"
    );
    drop(prom);
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "soak of {} seeds scraped in {:?}",
        rows.len(),
        started.elapsed()
    );
}
