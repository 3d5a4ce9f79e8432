//! Prometheus end to end: scrape a buggy repro run with Debian's `prometheus`, and check through its HTTP API
//! that the metrics exist and agree with the run's report and event log; that every PromQL expression of the
//! Grafana dashboard returns series and every alert expression evaluates; and that `promtool check rules`
//! and `promtool test rules` pass. Without `prometheus` the test says it is skipped and why, except under
//! CI (`CI=true`), where that is a failure.

use std::sync::Arc;
use std::time::Duration;

use epochlab_common::Epoch;
use epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS;
use epochlab_sim::Mode;
use epochlab_sim::{ClusterHook, Outcome, ReproHooks, ReproParams, run_repro_with};
use epochlab_telemetry::{Metrics, MetricsServer, RunSource};
use epochlab_tests::prometheus::{
    alert_exprs, dashboard_exprs, prometheus_bin, promtool, query, start_prometheus, value,
};

#[test]
fn prometheus_scrapes_a_repro_run() {
    let bin = prometheus_bin();
    promtool(&["check", "rules", "deploy/prometheus/alerts.yml"]);
    promtool(&["test", "rules", "deploy/prometheus/alerts_test.yml"]);
    promtool(&["check", "config", "deploy/prometheus/prometheus.yml"]);
    assert_eq!(
        dashboard_exprs().len(),
        25,
        "the dashboard's expressions were all found"
    );
    assert_eq!(alert_exprs().len(), 5);

    // The run, observed by an in-process metrics server on a free port.
    let metrics = Arc::new(Metrics::new());
    let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), metrics.clone()).unwrap();
    let m = metrics.clone();
    let (origin_tx, origin_rx) = std::sync::mpsc::channel();
    let hook: ClusterHook = Box::new(move |cluster| {
        let source = RunSource::starting_now("buggy", cluster);
        origin_tx.send(source.wall_origin_ms).unwrap();
        m.add_run(source)
    });
    let params = ReproParams {
        mode: Mode::Buggy,
        ..Default::default()
    };
    let hooks = ReproHooks {
        on_cluster: Some(hook),
        tracing_layer: None,
        ..Default::default()
    };
    let out = run_repro_with(&params, hooks);
    let wall_origin_ms: u64 = origin_rx.recv().unwrap();
    let report = out.value;
    assert_eq!(report.outcome, Outcome::Failed);

    let prom = start_prometheus(&bin, server.local_addr());
    // Two scrapes at least: the dashboard's rates need two samples.
    let two_scrapes = "count_over_time(epochlab_recoveries_total[1m]) >= 2";
    prom.wait_for(two_scrapes, Duration::from_secs(90));

    // Agreement with the report.
    assert_eq!(
        value(&prom, "epochlab_recoveries_total{mode=\"buggy\"}") as u64,
        report.recoveries
    );
    let committed = Epoch(report.max_committed_epoch);
    let want =
        (wall_origin_ms + committed.as_unix_millis() - DEFAULT_ORIGIN_UNIX_MS) as f64 / 1000.0;
    let got = value(
        &prom,
        "epochlab_epoch_committed_timestamp_seconds{mode=\"buggy\"}",
    );
    assert!(
        (got - want).abs() < 0.002,
        "committed epoch timestamp {got} vs {want}"
    );
    assert!(value(&prom, "epochlab_backfill_state_missing_total") >= 1.0);
    assert!(value(&prom, "epochlab_epoch_lag_seconds") >= 0.0);
    assert!(value(&prom, "epochlab_barrier_latency_seconds_count") >= report.epochs as f64 / 2.0);

    // Agreement with the event log: each vnode's last persisted epoch.
    let mut last: std::collections::BTreeMap<(String, String), u64> =
        std::collections::BTreeMap::new();
    for l in out.log.lines() {
        let Some(rest) = l.split(" persist backfill state: ").nth(1) else {
            continue;
        };
        let table = rest
            .split("table=")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .to_string();
        let epoch: u64 = rest
            .split("epoch=")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let vnodes = rest.split("vnodes=[").nth(1).unwrap().trim_end_matches(']');
        for v in vnodes.split(' ') {
            let vnode = v.split(':').next().unwrap().to_string();
            last.insert((table.clone(), vnode), epoch);
        }
    }
    assert!(!last.is_empty());
    for ((table, vnode), epoch) in &last {
        let q = format!(
            "epochlab_backfill_vnode_persisted_epoch_timestamp_seconds{{table_id=\"{table}\",vnode=\"{vnode}\"}}"
        );
        let want = (wall_origin_ms + Epoch(*epoch).as_unix_millis() - DEFAULT_ORIGIN_UNIX_MS)
            as f64
            / 1000.0;
        let got = value(&prom, &q);
        assert!(
            (got - want).abs() < 0.002,
            "vnode {vnode} of table {table}: {got} vs {want}"
        );
    }

    // The soak's series are there, at 0: every dashboard panel has a series in repro too.
    let seeds = prom.query_at("epochlab_soak_seeds_total{mode=\"buggy\"}", None);
    assert_eq!(seeds.len(), 3, "one series per outcome: {seeds:?}");
    assert!(seeds.iter().all(|s| s["value"][1] == "0"), "{seeds:?}");
    for series in [
        "epochlab_soak_failures_total{signature=\"other\"}",
        "epochlab_soak_seeds_in_progress",
        "epochlab_soak_virtual_seconds_total",
        "epochlab_soak_wall_seconds_total",
    ] {
        assert_eq!(value(&prom, series), 0.0, "{series}");
    }

    // Every dashboard expression returns series; every alert expression evaluates.
    for e in dashboard_exprs() {
        let body = query(&prom, &e);
        assert!(
            !body.contains("\"result\":[]"),
            "dashboard expression `{e}` returned no series"
        );
    }
    for e in alert_exprs() {
        query(&prom, &e);
    }
}

/// The dashboard selects runs by mode: a `mode` template variable that every query uses, and a legend that
/// names the mode on every series (with `--mode all`, or a soak beside a repro, the modes' series share panels).
#[test]
fn every_dashboard_query_and_legend_has_the_mode() {
    let path = epochlab_tests::prometheus::repo().join("deploy/grafana/epochlab.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let vars = dashboard["templating"]["list"].as_array().unwrap();
    let mode = vars
        .iter()
        .find(|v| v["name"] == "mode")
        .expect("a mode variable");
    assert_eq!(mode["includeAll"], true, "{mode}");
    let panels = dashboard["panels"].as_array().unwrap();
    let targets: Vec<&serde_json::Value> = panels
        .iter()
        .flat_map(|p| p["targets"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(targets.len(), dashboard_exprs().len());
    for t in targets {
        let legend = t["legendFormat"].as_str().unwrap_or("");
        assert!(legend.contains("{{mode}}"), "legend `{legend}` of {t}");
        let expr = t["expr"].as_str().unwrap();
        assert!(expr.contains("mode=~\"$mode\""), "query `{expr}`");
    }
}
