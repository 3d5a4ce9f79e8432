//! Prometheus end to end: scrape a buggy repro run with Debian's `prometheus`, and check through its HTTP API
//! that the metrics exist and agree with the run's report and event log; that every PromQL expression of the
//! Grafana dashboard returns series and every alert expression evaluates; and that `promtool check rules`
//! and `promtool test rules` pass. Without `prometheus` the test says it is skipped and why, except under
//! CI (`CI=true`), where that is a failure.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use epochlab_common::Epoch;
use epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS;
use epochlab_meta::DropMode;
use epochlab_sim::{ClusterHook, Outcome, ReproHooks, ReproParams, run_repro_with};
use epochlab_telemetry::{Metrics, MetricsServer, RunSource};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A plain HTTP/1.0 GET; returns the body.
fn get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

struct Prometheus {
    child: Child,
    addr: SocketAddr,
    _dir: TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn start_prometheus(bin: &Path, target: SocketAddr) -> Prometheus {
    let dir = std::env::temp_dir().join(format!(
        "epochlab-prom-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        repo().join("deploy/prometheus/alerts.yml"),
        dir.join("alerts.yml"),
    )
    .unwrap();
    let config = format!(
        "global: {{ scrape_interval: 1s, evaluation_interval: 1s }}\nrule_files: [alerts.yml]\n\
         scrape_configs:\n  - job_name: epochlab\n    scrape_interval: 1s\n    static_configs: [ {{ targets: ['{target}'] }} ]\n"
    );
    std::fs::write(dir.join("prometheus.yml"), config).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let child = Command::new(bin)
        .arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start prometheus");
    Prometheus {
        child,
        addr,
        _dir: TempDir(dir),
    }
}

/// The result vector of an instant query; panics unless the query succeeded.
fn query(p: &Prometheus, q: &str) -> String {
    let body = get(p.addr, &format!("/api/v1/query?query={}", encode(q))).unwrap_or_default();
    assert!(
        body.contains("\"status\":\"success\""),
        "query `{q}` failed: {body}"
    );
    body
}

/// The value of the first sample of `q`.
fn value(p: &Prometheus, q: &str) -> f64 {
    let body = query(p, q);
    let v = body
        .split("\"value\":[")
        .nth(1)
        .and_then(|s| s.split(",\"").nth(1))
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("`{q}` returned no sample: {body}"));
    v.parse().unwrap()
}

fn promtool(args: &[&str]) {
    let tool = which("promtool").expect("promtool comes with Debian's prometheus");
    let out = Command::new(tool)
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The PromQL expressions of the dashboard (its `"expr"` fields).
fn dashboard_exprs() -> Vec<String> {
    let json = std::fs::read_to_string(repo().join("deploy/grafana/epochlab.json")).unwrap();
    json.split("\"expr\": \"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap().replace("\\\"", "\""))
        .collect()
}

fn alert_exprs() -> Vec<String> {
    let yml = std::fs::read_to_string(repo().join("deploy/prometheus/alerts.yml")).unwrap();
    yml.lines()
        .filter_map(|l| l.trim().strip_prefix("expr:").map(|e| e.trim().to_string()))
        .collect()
}

#[test]
fn prometheus_scrapes_a_repro_run() {
    let Some(bin) = which("prometheus") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "prometheus is not installed; .ci/run installs it (apt-get install prometheus)"
        );
        eprintln!(
            "skipped: `prometheus` is not on PATH (apt-get install prometheus); CI runs this test"
        );
        return;
    };
    promtool(&["check", "rules", "deploy/prometheus/alerts.yml"]);
    promtool(&["test", "rules", "deploy/prometheus/alerts_test.yml"]);
    promtool(&["check", "config", "deploy/prometheus/prometheus.yml"]);
    assert_eq!(
        dashboard_exprs().len(),
        13,
        "the dashboard's expressions were all found"
    );
    assert_eq!(alert_exprs().len(), 3);

    // The run, observed by an in-process metrics server on a free port.
    let metrics = Arc::new(Metrics::new(&["buggy"]));
    let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), metrics.clone()).unwrap();
    let m = metrics.clone();
    let (origin_tx, origin_rx) = std::sync::mpsc::channel();
    let hook: ClusterHook = Box::new(move |cluster| {
        let source = RunSource::starting_now("buggy", cluster);
        origin_tx.send(source.wall_origin_ms).unwrap();
        m.add_run(source)
    });
    let params = ReproParams {
        mode: DropMode::Buggy,
        ..Default::default()
    };
    let hooks = ReproHooks {
        on_cluster: Some(hook),
        tracing_layer: None,
    };
    let out = run_repro_with(&params, hooks);
    let wall_origin_ms: u64 = origin_rx.recv().unwrap();
    let report = out.value;
    assert_eq!(report.outcome, Outcome::Failed);

    let prom = start_prometheus(&bin, server.local_addr());
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let up = get(prom.addr, "/api/v1/targets").is_some_and(|b| b.contains("\"health\":\"up\""));
        let scraped = up && !query(&prom, "epochlab_recoveries_total").contains("\"result\":[]");
        if scraped {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "prometheus never scraped the target"
        );
        std::thread::sleep(Duration::from_millis(500));
    }

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
