//! Flags of `epochlab repro`, checked into a one-line error each.

use std::path::PathBuf;

use epochlab_meta::DropMode;
use epochlab_sim::ReproParams;

pub const REPRO_HELP: &str = "\
epochlab repro: make `row [Some(Int16(0))] not found` (RisingWave #14910) happen, and show the fix hold.

Runs the scenario: a rate-limited arrangement backfill into a slow sink, DROP SINK while barriers are in flight,
a compute node fails, recovery starts while the dropped sink's actors survive on another node.

FLAGS
  --mode M                  buggy | fixed | purge-before-reset | all (default all)
  --seed N                  the seed of every timing (default 14910)
  --rows N                  rows in the table (default 10000)
  --vnodes N                vnodes per table, 1..=32768 (default 256)
  --parallelism N           actors of the table and of the sink (default 2)
  --compute-nodes N         compute nodes (default 3)
  --rate-limit N            backfill snapshot rows per second per actor (default 1)
  --barrier-latency-ms N    simulated time the slow sink spends per chunk (default 1500)
  --checkpoint-frequency N  every n-th barrier is a checkpoint (default 1)
  --json                    one JSON object per run, one per line
  --check-determinism       run each mode twice in two child processes and compare their event logs
  --metrics-addr ADDR       serve Prometheus metrics at http://ADDR/metrics while the runs go (off by default)
  --jaeger                  collect every epoch's trace in an embedded Jaeger (UI on --jaeger-addr)
  --jaeger-addr ADDR        the Jaeger UI's address (default 127.0.0.1:16686; OTLP on a free loopback port)
  --otlp-endpoint URL       send traces to an external collector instead (OTLP/gRPC, e.g. http://127.0.0.1:4317)
  --serve-for SECS          keep serving metrics and traces this long after the runs end (with --jaeger and
                            no --serve-for: until Ctrl-C)
  -h, --help                this text

EXIT STATUS
  0 every mode met its expectation (buggy fails with the missing row, fixed passes, purge-before-reset either)
  1 an expectation was not met, or --check-determinism found a difference
  2 bad input
  3 the only unmet expectation is buggy being not_reproducible";

#[derive(Clone, Debug)]
pub struct ReproArgs {
    pub modes: Vec<DropMode>,
    pub mode_flag: Option<String>,
    pub params: ReproParams,
    pub json: bool,
    pub check_determinism: bool,
    /// Write every event-log line here (used by --check-determinism's children).
    pub event_log: Option<PathBuf>,
    pub metrics_addr: Option<std::net::SocketAddr>,
    pub serve_for: Option<std::time::Duration>,
    pub jaeger: bool,
    pub jaeger_addr: std::net::SocketAddr,
    pub otlp_endpoint: Option<String>,
}

pub enum Parsed {
    Run(Box<ReproArgs>),
    Help,
}

pub fn parse_mode(s: &str) -> Option<Vec<DropMode>> {
    Some(match s {
        "buggy" => vec![DropMode::Buggy],
        "fixed" => vec![DropMode::Fixed],
        "purge-before-reset" => vec![DropMode::PurgeBeforeReset],
        "all" => vec![DropMode::Buggy, DropMode::Fixed, DropMode::PurgeBeforeReset],
        _ => return None,
    })
}

fn number<T: std::str::FromStr>(flag: &str, value: &str, lo: u64, hi: u64) -> Result<T, String> {
    let n: u64 = value
        .parse()
        .map_err(|_| format!("{flag} takes a whole number, not `{value}`"))?;
    if n < lo || n > hi {
        return Err(format!("{flag} must be between {lo} and {hi}, not {n}"));
    }
    value
        .parse()
        .map_err(|_| format!("{flag}: `{value}` is out of range"))
}

impl ReproArgs {
    pub fn parse(argv: &[String]) -> Result<Parsed, String> {
        let mut a = ReproArgs {
            modes: parse_mode("all").unwrap(),
            mode_flag: None,
            params: ReproParams::default(),
            json: false,
            check_determinism: false,
            event_log: None,
            metrics_addr: None,
            serve_for: None,
            jaeger: false,
            jaeger_addr: "127.0.0.1:16686".parse().expect("valid default"),
            otlp_endpoint: None,
        };
        let mut it = argv.iter();
        while let Some(flag) = it.next() {
            let (name, inline) = match flag.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
                _ => (flag.as_str(), None),
            };
            let mut value = |name: &str| -> Result<String, String> {
                match &inline {
                    Some(v) => Ok(v.clone()),
                    None => it
                        .next()
                        .cloned()
                        .ok_or_else(|| format!("{name} needs a value")),
                }
            };
            let p = &mut a.params;
            match name {
                "-h" | "--help" => return Ok(Parsed::Help),
                "--json" => a.json = true,
                "--check-determinism" => a.check_determinism = true,
                "--mode" => {
                    let v = value(name)?;
                    a.modes = parse_mode(&v).ok_or_else(|| {
                        format!("--mode must be buggy, fixed, purge-before-reset or all, not `{v}`")
                    })?;
                    a.mode_flag = Some(v);
                }
                "--seed" => p.seed = number(name, &value(name)?, 0, u64::MAX)?,
                "--rows" => p.rows = number(name, &value(name)?, 1, 10_000_000)?,
                "--vnodes" => p.vnodes = number(name, &value(name)?, 1, 32_768)?,
                "--parallelism" => p.parallelism = number(name, &value(name)?, 1, 256)?,
                "--compute-nodes" => p.compute_nodes = number(name, &value(name)?, 1, 64)?,
                "--rate-limit" => p.rate_limit = number(name, &value(name)?, 1, 1_000_000)?,
                "--barrier-latency-ms" => {
                    p.barrier_latency_ms = number(name, &value(name)?, 0, 600_000)?
                }
                "--checkpoint-frequency" => {
                    p.checkpoint_frequency = number(name, &value(name)?, 1, 10_000)?
                }
                "--event-log" => a.event_log = Some(PathBuf::from(value(name)?)),
                "--metrics-addr" => {
                    let v = value(name)?;
                    let addr = v.parse().map_err(|_| {
                        format!("--metrics-addr takes HOST:PORT, such as 127.0.0.1:9464, not `{v}`")
                    })?;
                    a.metrics_addr = Some(addr);
                }
                "--jaeger" => a.jaeger = true,
                "--jaeger-addr" => {
                    let v = value(name)?;
                    a.jaeger_addr = v.parse().map_err(|_| {
                        format!("--jaeger-addr takes HOST:PORT, such as 127.0.0.1:16686, not `{v}`")
                    })?;
                }
                "--otlp-endpoint" => {
                    let v = value(name)?;
                    if !(v.starts_with("http://") || v.starts_with("https://")) {
                        return Err(format!(
                            "--otlp-endpoint takes a URL such as http://127.0.0.1:4317, not `{v}`"
                        ));
                    }
                    a.otlp_endpoint = Some(v);
                }
                "--serve-for" => {
                    let secs: u64 = number(name, &value(name)?, 0, 86_400)?;
                    a.serve_for = Some(std::time::Duration::from_secs(secs));
                }
                other => return Err(format!("unknown flag `{other}` (see --help)")),
            }
        }
        if a.jaeger && a.otlp_endpoint.is_some() {
            return Err(
                "--jaeger and --otlp-endpoint exclude each other: traces go to one collector"
                    .into(),
            );
        }
        Ok(Parsed::Run(Box::new(a)))
    }
}
