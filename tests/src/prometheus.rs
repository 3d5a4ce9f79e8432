//! A real Prometheus (Debian's `prometheus` 2.42) for the end-to-end metrics tests: started on a free port
//! with the project's alert rules, queried through its HTTP API. Shared by `tests/tests/prometheus.rs` (a repro
//! run in-process) and `crates/cli/tests/soak_prometheus.rs` (the `epochlab soak` binary).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The workspace's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

pub fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
}

/// The `prometheus` binary. A test that needs it fails when it is not installed: a missing tool is a set-up
/// failure, which `cargo xtask setup` (run by `cargo xtask test`) mends.
pub fn prometheus_bin() -> PathBuf {
    needed("prometheus")
}

/// `tool` on PATH, from Debian's `prometheus` package; a failure naming the set-up step when it is not there.
pub fn needed(tool: &str) -> PathBuf {
    which(tool).unwrap_or_else(|| {
        panic!(
            "`{tool}` is not on PATH: `cargo xtask setup` installs it (Debian's prometheus); \
             `cargo xtask test` runs that step first"
        )
    })
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Percent-encoding of a query parameter.
pub fn encode(q: &str) -> String {
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
pub fn get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

pub struct Prometheus {
    child: Child,
    pub addr: SocketAddr,
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

/// One scrape job of `target` every second.
pub fn scrape_job(name: &str, target: SocketAddr) -> String {
    format!(
        "  - job_name: {name}\n    scrape_interval: 1s\n    static_configs: [ {{ targets: ['{target}'] }} ]\n"
    )
}

/// Prometheus scraping `target` every second, evaluating `deploy/prometheus/alerts.yml` every second.
pub fn start_prometheus(bin: &Path, target: SocketAddr) -> Prometheus {
    start_prometheus_with(bin, &scrape_job("epochlab", target))
}

/// Prometheus with these `scrape_configs` entries, evaluating `deploy/prometheus/alerts.yml` (as it is) every
/// second.
pub fn start_prometheus_with(bin: &Path, scrape_configs: &str) -> Prometheus {
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
         scrape_configs:\n{scrape_configs}"
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

/// Prometheus serving the TSDB blocks in `data` (made by `promtool tsdb create-blocks-from`), scraping nothing
/// and evaluating no rules (`deploy/prometheus/timeline.yml`), as the README starts it for a `--metrics-out`
/// timeline; ready when this returns.
pub fn start_prometheus_on_blocks(bin: &Path, data: &Path) -> Prometheus {
    let dir = std::env::temp_dir().join(format!(
        "epochlab-prom-blocks-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    // The repository's own config for a timeline, as the README starts it.
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/prometheus/timeline.yml");
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let child = Command::new(bin)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", data.display()))
        .arg("--storage.tsdb.retention.time=10y")
        .arg(format!("--web.listen-address={addr}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start prometheus");
    let prom = Prometheus {
        child,
        addr,
        _dir: TempDir(dir),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !get(addr, "/-/ready").is_some_and(|b| b.contains("Ready")) {
        assert!(Instant::now() < deadline, "prometheus did not get ready");
        std::thread::sleep(Duration::from_millis(100));
    }
    prom
}

impl Prometheus {
    /// The series of a range query from `start` to `end` (Unix seconds) every `step` seconds: each series'
    /// labels and its (time, value) points.
    pub fn query_range(
        &self,
        q: &str,
        start: f64,
        end: f64,
        step: f64,
    ) -> Vec<(serde_json::Value, Vec<(f64, f64)>)> {
        let path = format!(
            "/api/v1/query_range?query={}&start={start:.3}&end={end:.3}&step={step}",
            encode(q)
        );
        let v = self.api(&path);
        let result = v["data"]["result"].as_array().cloned().unwrap_or_default();
        result
            .into_iter()
            .map(|s| {
                let points = s["values"].as_array().cloned().unwrap_or_default();
                let points = points
                    .iter()
                    .map(|p| {
                        let t = p[0].as_f64().unwrap();
                        (t, p[1].as_str().unwrap().parse::<f64>().unwrap())
                    })
                    .collect();
                (s["metric"].clone(), points)
            })
            .collect()
    }

    /// The body of an API call; panics unless it succeeded.
    pub fn api(&self, path_and_query: &str) -> serde_json::Value {
        let body = get(self.addr, path_and_query).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("`{path_and_query}`: {e}: {body}"));
        assert_eq!(v["status"], "success", "`{path_and_query}` failed: {body}");
        v
    }

    /// The result of an instant query (now, or at `time`, Unix seconds).
    pub fn query_at(&self, q: &str, time: Option<f64>) -> Vec<serde_json::Value> {
        let at = time.map(|t| format!("&time={t:.3}")).unwrap_or_default();
        let v = self.api(&format!("/api/v1/query?query={}{at}", encode(q)));
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// Wait (up to `timeout`) until `q` returns a series.
    pub fn wait_for(&self, q: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let up =
                get(self.addr, "/api/v1/targets").is_some_and(|b| b.contains("\"health\":\"up\""));
            if up && !self.query_at(q, None).is_empty() {
                return;
            }
            assert!(Instant::now() < deadline, "no series for `{q}` in time");
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

/// The result vector of an instant query, as text; panics unless the query succeeded.
pub fn query(p: &Prometheus, q: &str) -> String {
    let body = get(p.addr, &format!("/api/v1/query?query={}", encode(q))).unwrap_or_default();
    assert!(
        body.contains("\"status\":\"success\""),
        "query `{q}` failed: {body}"
    );
    body
}

/// The value of the first sample of `q`.
pub fn value(p: &Prometheus, q: &str) -> f64 {
    let body = query(p, q);
    let v = body
        .split("\"value\":[")
        .nth(1)
        .and_then(|s| s.split(",\"").nth(1))
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("`{q}` returned no sample: {body}"));
    v.parse().unwrap()
}

pub fn promtool(args: &[&str]) {
    let tool = needed("promtool");
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

/// The PromQL expressions of the dashboard (its targets' `expr`), with the `$mode` and `$worker` variables
/// set to All (their `allValue`, `.*`), as Grafana sends them.
pub fn dashboard_exprs() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("deploy/grafana/epochlab.json")).unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&text).unwrap();
    let vars = dashboard["templating"]["list"].as_array().unwrap();
    let all_value = |name: &str| {
        let v = vars.iter().find(|v| v["name"] == name).unwrap();
        v["allValue"].as_str().unwrap().to_string()
    };
    let (mode, worker) = (all_value("mode"), all_value("worker"));
    dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .map(|t| {
            let e = t["expr"].as_str().unwrap();
            e.replace("$mode", &mode).replace("$worker", &worker)
        })
        .collect()
}

/// The `expr` of every rule in `deploy/prometheus/alerts.yml`.
pub fn alert_exprs() -> Vec<String> {
    let yml = std::fs::read_to_string(repo().join("deploy/prometheus/alerts.yml")).unwrap();
    yml.lines()
        .filter_map(|l| l.trim().strip_prefix("expr:").map(|e| e.trim().to_string()))
        .collect()
}
