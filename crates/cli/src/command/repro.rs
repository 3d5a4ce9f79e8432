//! `epochlab repro`: its flags (the one definition, with their help), and the run configuration
//! ([`ReproArgs`]) they become after the checks clap cannot declare (the catalogue's modes and settings).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{ArgGroup, Args};
use epochlab_sim::{BugId, BugMode, Mode, ReproParams, Setting, TracePer};

use super::CheckError;
use super::values::{self, BugSel, ModeSel, PaceFlag};

pub const DEFAULT_METRICS_INTERVAL: Duration = Duration::from_millis(1000);
pub const DEFAULT_JAEGER_ADDR: SocketAddr =
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 16686));

/// The settings of the directed #14910 scenario (`repro`, and `soak --scenario 14910`); each is left out
/// unless given, and another bug's scenario takes only those `epochlab bugs` lists as its settings.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct ScenarioFlags {
    /// 1..=10000000, default 10000: rows in the table
    #[arg(long, value_name = "N", value_parser = values::number::<usize>(values::ROWS))]
    pub rows: Option<usize>,
    /// 1..=32768, default 256: vnodes per table
    #[arg(long, value_name = "N", value_parser = values::number::<u32>(values::VNODES))]
    pub vnodes: Option<u32>,
    /// 1..=256, default 2: actors of the table and of the sink
    #[arg(long, value_name = "N", value_parser = values::number::<usize>(values::PARALLELISM))]
    pub parallelism: Option<usize>,
    /// 1..=64, default 3: compute nodes
    #[arg(long, value_name = "N", value_parser = values::number::<u32>(values::COMPUTE_NODES))]
    pub compute_nodes: Option<u32>,
    /// 1..=1000000, default 1: backfill snapshot rows per second per actor
    #[arg(long, value_name = "N", value_parser = values::number::<u32>(values::RATE_LIMIT))]
    pub rate_limit: Option<u32>,
    /// 0..=60000, default 100: simulated time the sink spends per chunk
    ///
    /// Its share of barrier latency (the rest is flow control: about 1000/rate-limit ms per
    /// barrier); above 1000/rate-limit ms the sink back-pressures the backfill.
    #[arg(long, value_name = "N", verbatim_doc_comment,
          value_parser = values::number::<u64>(values::BARRIER_LATENCY_MS))]
    pub barrier_latency_ms: Option<u64>,
    /// 1..=10000, default 1: every N-th barrier is a checkpoint
    #[arg(long, value_name = "N",
          value_parser = values::number::<u32>(values::CHECKPOINT_FREQUENCY))]
    pub checkpoint_frequency: Option<u32>,
    /// default on: RisingWave's debug-build checks; off behaves as a release build
    ///
    /// on: the backfill reads its progress row before each write; off: only the checkers see
    /// a missing row.
    #[arg(long, value_name = "on|off", verbatim_doc_comment, hide_possible_values = true,
          value_parser = values::on_off())]
    pub persist_check: Option<bool>,
    /// meta dies right after this commit of the first DDL to reach it
    ///
    /// It restarts from its store after U(0, 1 s); the scenario's CREATEs are retried (a job the
    /// new meta's recovery kept is taken as it is), its DROP is not. The scenario makes its jobs
    /// through meta's job API, which writes no catalog row, so the points are:
    ///   create-after-fragments          the job and its fragments (Initial) are committed
    ///   create-after-register           its state tables are registered in Hummock
    ///   create-after-first-commit       the first barrier's epoch is committed
    ///   create-after-fragments-created  the fragments are Created
    ///   drop-after-fragments            the job and its fragments are deleted
    ///   drop-after-stop                 the Stop barrier is collected; tables still registered
    ///                                   (only when the DROP returned before the fault)
    #[arg(long, value_name = "POINT", verbatim_doc_comment, value_parser = values::crash_point)]
    pub crash_meta_at: Option<epochlab_meta::CrashPoint>,
}

impl ScenarioFlags {
    /// Each given flag's name and the setting it sets.
    pub fn given(&self) -> Vec<(&'static str, Setting)> {
        let all = [
            (self.rows.is_some(), "--rows", Setting::Rows),
            (self.vnodes.is_some(), "--vnodes", Setting::Vnodes),
            (
                self.parallelism.is_some(),
                "--parallelism",
                Setting::Parallelism,
            ),
            (
                self.compute_nodes.is_some(),
                "--compute-nodes",
                Setting::ComputeNodes,
            ),
            (
                self.rate_limit.is_some(),
                "--rate-limit",
                Setting::RateLimit,
            ),
            (
                self.barrier_latency_ms.is_some(),
                "--barrier-latency-ms",
                Setting::BarrierLatency,
            ),
            (
                self.checkpoint_frequency.is_some(),
                "--checkpoint-frequency",
                Setting::CheckpointFrequency,
            ),
            (
                self.persist_check.is_some(),
                "--persist-check",
                Setting::PersistCheck,
            ),
            (
                self.crash_meta_at.is_some(),
                "--crash-meta-at",
                Setting::CrashMetaAt,
            ),
        ];
        all.into_iter()
            .filter(|(given, ..)| *given)
            .map(|(_, flag, setting)| (flag, setting))
            .collect()
    }

    /// What clap cannot check: a crash point the scenario's DDLs reach.
    pub fn check(&self) -> Result<(), CheckError> {
        match self.crash_meta_at {
            Some(point) if !point.reached_by_job_api() => {
                Err(CheckError::CrashPointNotReached(point))
            }
            _ => Ok(()),
        }
    }

    /// `base` with the given settings.
    pub fn apply(&self, base: ReproParams) -> ReproParams {
        let d = base;
        ReproParams {
            rows: self.rows.unwrap_or(d.rows),
            vnodes: self.vnodes.unwrap_or(d.vnodes),
            parallelism: self.parallelism.unwrap_or(d.parallelism),
            compute_nodes: self.compute_nodes.unwrap_or(d.compute_nodes),
            rate_limit: self.rate_limit.unwrap_or(d.rate_limit),
            barrier_latency_ms: self.barrier_latency_ms.unwrap_or(d.barrier_latency_ms),
            checkpoint_frequency: self.checkpoint_frequency.unwrap_or(d.checkpoint_frequency),
            persist_check: self.persist_check.unwrap_or(d.persist_check),
            crash_meta_at: self.crash_meta_at.or(d.crash_meta_at),
            ..d
        }
    }
}

/// The flag that sets `setting`.
pub fn flag_of(setting: Setting) -> &'static str {
    match setting {
        Setting::Rows => "--rows",
        Setting::Vnodes => "--vnodes",
        Setting::Parallelism => "--parallelism",
        Setting::ComputeNodes => "--compute-nodes",
        Setting::RateLimit => "--rate-limit",
        Setting::BarrierLatency => "--barrier-latency-ms",
        Setting::CheckpointFrequency => "--checkpoint-frequency",
        Setting::PersistCheck => "--persist-check",
        Setting::CrashMetaAt => "--crash-meta-at",
    }
}

/// The flags that set `bug`'s directed scenario, as `--parallelism, --persist-check`, or `no flag`.
pub fn settings_of(bug: BugId) -> String {
    let mut flags: Vec<&str> = Setting::ALL
        .into_iter()
        .filter(|s| bug.reads(*s))
        .map(flag_of)
        .collect();
    // Every bug's scenario runs on the metas `--meta-nodes` asks for.
    flags.push("--meta-nodes");
    flags.join(", ")
}

/// Make a catalogue bug happen from a seed (by default #14910's `row [Some(Int16(0))] not found`), and show
/// the fix hold.
///
/// By default runs #14910's scenario: a sink over a table, fed by a rate-limited arrangement backfill (a flow-control
/// executor after it, as in RisingWave, so each barrier waits behind a held row); DROP SINK; one of the
/// sink's compute nodes fails while the Stop barrier is in flight; recovery starts while the sink's actors
/// on another node still run. `--bug` runs another bug of the catalogue (`epochlab bugs`) instead.
///
/// Each flag may be given at most once (`--flag VALUE` or `--flag=VALUE`); a flag that would do nothing in
/// the combination given is refused.
#[derive(Args, Clone, Debug)]
#[command(verbatim_doc_comment, allow_negative_numbers = true, after_long_help = REPRO_AFTER_HELP)]
#[command(group(ArgGroup::new("served").multiple(true).args(["metrics_addr", "jaeger"])))]
pub struct ReproCmd {
    /// The bug of the catalogue (`epochlab bugs`) whose directed scenario runs, or all
    ///
    /// The scenario flags (--rows to --persist-check) are #14910's; another bug's scenario takes
    /// only those `epochlab bugs` lists as its settings.
    #[arg(long, value_name = "ID", default_value = "14910", verbatim_doc_comment,
          value_parser = values::bug_or_all())]
    pub bug: BugSel,
    /// The bug's modes to run: one, or all of them
    #[arg(long, value_name = "M", default_value = "all", value_parser = values::mode_or_all())]
    pub mode: ModeSel,
    /// 0..=18446744073709551615: the seed of every timing
    #[arg(long, value_name = "N", default_value_t = ReproParams::default().seed,
          value_parser = values::number::<u64>(values::SEED))]
    pub seed: u64,
    #[command(flatten)]
    pub scenario: ScenarioFlags,
    /// 1..=16, default 3: metas, on a lease when more than one (every bug's scenario)
    ///
    /// Several metas run as RisingWave's recovery CI ran three: madsim's etcd, a 10 s lease, the
    /// leader the oldest key; --crash-meta-at kills the leader's process, which restores its
    /// leadership when it restarts within the lease.
    #[arg(long, value_name = "N", verbatim_doc_comment,
          default_value_t = ReproParams::default().meta_nodes,
          value_parser = values::number::<u32>(values::META_NODES))]
    pub meta_nodes: u32,
    /// One JSON object per run, one per line (with --check-determinism: one per mode)
    #[arg(long)]
    pub json: bool,
    /// Run each mode twice in two child processes and compare their event logs
    ///
    /// Its children run without telemetry and it compares their event logs itself, so it excludes
    /// --log-file, --event-log, --metrics-addr, --metrics-out, --pace, --jaeger and --otlp-endpoint.
    /// It checks determinism only: it exits 0 when every mode's two runs are identical, whatever their
    /// outcomes (shown per mode).
    #[arg(long, verbatim_doc_comment, conflicts_with_all = [
        "log_file", "event_log", "metrics_addr", "metrics_out", "pace", "jaeger", "otlp_endpoint",
    ])]
    pub check_determinism: bool,
    /// Write each run's event log to PATH; off by default
    ///
    /// With more than one run, the run goes before PATH's extension: run.log becomes
    /// run.buggy.log, ... (run.22384-buggy.log for a bug other than 14910).
    #[arg(long, value_name = "PATH", verbatim_doc_comment, value_parser = values::path)]
    pub event_log: Option<PathBuf>,
    /// Write each run's meta store, as it was when the run ended, to PATH as an SQLite file
    ///
    /// Open it with sqlite3: tables streaming_job, fragment, actor, worker, object, sequence,
    /// hummock_version_delta, ... (see the README). With more than one run, named as --event-log
    /// names its files.
    #[arg(long, value_name = "PATH", verbatim_doc_comment, value_parser = values::path,
          conflicts_with = "check_determinism")]
    pub meta_store_out: Option<PathBuf>,
    /// Write the runs' log lines to PATH; off by default
    ///
    /// At the levels of RUST_LOG if set, else info; each line stamped with its run's virtual
    /// time, mode and seed.
    #[arg(long, value_name = "PATH", verbatim_doc_comment, value_parser = values::path)]
    pub log_file: Option<PathBuf>,
    /// Serve Prometheus metrics at http://HOST:PORT/metrics while the runs go; off by default
    #[arg(long, value_name = "HOST:PORT", value_parser = values::metrics_addr)]
    pub metrics_addr: Option<SocketAddr>,
    /// 0.01..=100000 or off: run simulated time at X times the wall clock (1: real time)
    ///
    /// Default 1 with --metrics-addr, so that a scrape every second sees the run unfold, else
    /// off (as fast as it goes); `off` needs --metrics-addr. Pacing changes no run: same events,
    /// same digest.
    #[arg(long, value_name = "X", verbatim_doc_comment, value_parser = values::pace,
          requires_if("off", "metrics_addr"))]
    pub pace: Option<PaceFlag>,
    /// Sample every metric of each run and write them to PATH as OpenMetrics text; off by default
    ///
    /// Sampled every --metrics-interval-ms of simulated time, with timestamps (the run's simulated
    /// time shifted onto its wall-clock start), for `promtool tsdb create-blocks-from openmetrics
    /// PATH DIR`.
    #[arg(long, value_name = "PATH", verbatim_doc_comment, value_parser = values::path)]
    pub metrics_out: Option<PathBuf>,
    /// 10..=3600000, default 1000; needs --metrics-out: the sampling interval
    #[arg(long, value_name = "N", requires = "metrics_out",
          value_parser = values::number::<u64>(values::METRICS_INTERVAL_MS))]
    pub metrics_interval_ms: Option<u64>,
    /// Collect the runs' traces in an embedded Jaeger (UI on --jaeger-addr)
    #[arg(long, conflicts_with = "otlp_endpoint")]
    pub jaeger: bool,
    /// Needs --jaeger: the Jaeger UI's address, default 127.0.0.1:16686
    ///
    /// OTLP goes to a free loopback port.
    #[arg(long, value_name = "HOST:PORT", requires = "jaeger", value_parser = values::jaeger_addr)]
    pub jaeger_addr: Option<SocketAddr>,
    /// Send traces to an external collector instead (OTLP/gRPC, e.g. http://127.0.0.1:4317)
    #[arg(long, value_name = "URL", value_parser = values::url)]
    pub otlp_endpoint: Option<String>,
    /// run (default): each run is one trace; epoch: a trace per epoch
    ///
    /// run: root span `run` (epochs, drop, kill, recovery); epoch: a trace per epoch (and per
    /// drop, kill and recovery), for long runs. Needs --jaeger or --otlp-endpoint (or
    /// OTEL_EXPORTER_OTLP_ENDPOINT): it shapes the traces they receive.
    #[arg(long, value_name = "run|epoch", verbatim_doc_comment, hide_possible_values = true,
          value_parser = values::trace_per())]
    pub trace_per: Option<TracePer>,
    /// 0..=86400; needs --metrics-addr or --jaeger: keep serving this long after the runs end
    ///
    /// Default: with --jaeger until Ctrl-C, otherwise not at all (with --otlp-endpoint the traces
    /// go elsewhere and nothing is served).
    #[arg(long, value_name = "SECS", verbatim_doc_comment, requires = "served",
          value_parser = values::number::<u64>(values::SERVE_FOR))]
    pub serve_for: Option<u64>,
}

const REPRO_AFTER_HELP: &str = "\
OUTCOMES
  failed            a check fired (the run says which: caught by ...)
  passed            the scenario ran (drop, fault, recovery) and nothing failed
  not_reproducible  the scenario could not show what it is for (the reason is printed)
  stuck             epochs stopped committing (the in-flight barriers are printed)

EXIT STATUS
  0 every mode met its expectation: buggy failed, fixed passed, purge-before-reset did not get stuck
  1 a mode that must pass failed or got stuck (or buggy got stuck), or the two --check-determinism runs of a
    mode differed, or one of them crashed, or --otlp-endpoint could not deliver the traces (one line says why)
  2 bad input
  3 nothing that must pass failed, but some mode could not show what it is for: buggy was not_reproducible
    (or passed), or fixed was not_reproducible";

/// What `epochlab repro` runs.
#[derive(Clone, Debug)]
pub struct ReproArgs {
    /// `--bug`: the bugs whose scenarios run.
    pub bugs: Vec<BugId>,
    /// `--mode`: one mode, or every one (each bug runs those of its modes that are in here).
    pub modes: Vec<Mode>,
    pub params: ReproParams,
    pub json: bool,
    pub check_determinism: bool,
    /// Write every event-log line here (used by --check-determinism's children); see [`Self::event_log_of`].
    pub event_log: Option<PathBuf>,
    /// Write each run's meta store here as an SQLite file; see [`Self::meta_store_out_of`].
    pub meta_store_out: Option<PathBuf>,
    /// Write the runs' log lines here (at `RUST_LOG`'s levels, else INFO), stamped with virtual time.
    pub log_file: Option<PathBuf>,
    pub metrics_addr: Option<SocketAddr>,
    pub serve_for: Option<Duration>,
    pub jaeger: bool,
    /// `None`: [`DEFAULT_JAEGER_ADDR`].
    pub jaeger_addr: Option<SocketAddr>,
    pub otlp_endpoint: Option<String>,
    /// One trace per run (the default) or per epoch.
    pub trace_per: TracePer,
    /// `--pace`; see [`Self::pace`].
    pub pace: PaceFlag,
    /// Write every run's metrics timeline here (OpenMetrics text).
    pub metrics_out: Option<PathBuf>,
    /// `None`: [`DEFAULT_METRICS_INTERVAL`].
    pub metrics_interval: Option<Duration>,
}

impl ReproCmd {
    /// The run configuration, after the checks that depend on values: `--bug all` with metrics, the
    /// catalogue's modes and settings, and `--trace-per` without a collector.
    pub fn into_args(self) -> Result<ReproArgs, CheckError> {
        let bugs = match self.bug {
            BugSel::All => BugId::ALL.to_vec(),
            BugSel::One(b) => vec![b],
        };
        let modes = match self.mode {
            ModeSel::All => Mode::ALL.to_vec(),
            ModeSel::One(m) => vec![m],
        };
        self.check_values(&bugs, &modes)?;
        let params = self.scenario.apply(ReproParams {
            seed: self.seed,
            meta_nodes: self.meta_nodes,
            ..ReproParams::default()
        });
        Ok(ReproArgs {
            bugs,
            modes,
            params,
            json: self.json,
            check_determinism: self.check_determinism,
            event_log: self.event_log,
            meta_store_out: self.meta_store_out,
            log_file: self.log_file,
            metrics_addr: self.metrics_addr,
            serve_for: self.serve_for.map(Duration::from_secs),
            jaeger: self.jaeger,
            jaeger_addr: self.jaeger_addr,
            otlp_endpoint: self.otlp_endpoint,
            trace_per: self.trace_per.unwrap_or(TracePer::Run),
            pace: self.pace.unwrap_or_default(),
            metrics_out: self.metrics_out,
            metrics_interval: self.metrics_interval_ms.map(Duration::from_millis),
        })
    }

    fn check_values(&self, bugs: &[BugId], modes: &[Mode]) -> Result<(), CheckError> {
        if bugs.len() > 1 {
            let metrics = [
                (self.metrics_addr.is_some(), "--metrics-addr"),
                (self.metrics_out.is_some(), "--metrics-out"),
            ];
            if let Some((_, flag)) = metrics.into_iter().find(|(given, _)| *given) {
                return Err(CheckError::Exclusive {
                    a: flag,
                    b: "--bug all",
                    reason: "series are labelled by mode, and several bugs share the mode names: pick one bug",
                });
            }
        }
        let otlp_env =
            std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some_and(|v| !v.is_empty());
        let collector = self.jaeger || self.otlp_endpoint.is_some() || otlp_env;
        if self.trace_per.is_some_and(|t| t != TracePer::Run) && !collector {
            return Err(CheckError::Pointless {
                flag: "--trace-per",
                reason: "needs --jaeger or --otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT): it shapes the \
                         traces they receive",
            });
        }
        if let [mode] = modes {
            for &bug in bugs {
                bug.check_mode(*mode)
                    .map_err(CheckError::NotAModeOfTheBug)?;
            }
        }
        self.scenario.check()?;
        for (flag, setting) in self.scenario.given() {
            if let Some(&bug) = bugs.iter().find(|b| !b.reads(setting)) {
                return Err(CheckError::NotASettingOf { flag, bug });
            }
        }
        Ok(())
    }
}

impl ReproArgs {
    /// The runs, in order: each selected bug in each of its modes that `--mode` selects.
    pub fn runs(&self) -> Vec<BugMode> {
        let mut runs = Vec::new();
        for &bug in &self.bugs {
            for &mode in &self.modes {
                runs.extend(BugMode::new(bug, mode).ok());
            }
        }
        runs
    }

    /// The parameters of one run.
    pub fn params_of(&self, run: BugMode) -> ReproParams {
        ReproParams {
            bug: run.bug(),
            mode: run.mode(),
            ..self.params.clone()
        }
    }

    pub fn jaeger_addr(&self) -> SocketAddr {
        self.jaeger_addr.unwrap_or(DEFAULT_JAEGER_ADDR)
    }

    /// Simulated seconds per wall-clock second, or `None`: as fast as it goes. A run that serves metrics is
    /// paced at 1 unless `--pace` says otherwise.
    pub fn pace(&self) -> Option<f64> {
        match self.pace {
            PaceFlag::Times(x) => Some(x),
            PaceFlag::Off => None,
            PaceFlag::Default => self.metrics_addr.map(|_| 1.0),
        }
    }

    pub fn metrics_interval(&self) -> Duration {
        self.metrics_interval.unwrap_or(DEFAULT_METRICS_INTERVAL)
    }

    /// Where the event log of `run` goes: `--event-log` itself when one run goes, else with the mode (and a
    /// bug other than 14910) before the extension (`run.log` → `run.buggy.log`, `run.22384-buggy.log`).
    pub fn event_log_of(&self, run: BugMode) -> Option<PathBuf> {
        self.file_of(self.event_log.as_deref()?, run)
    }

    /// Where the meta store of `run` goes, named as [`Self::event_log_of`] names the event log.
    pub fn meta_store_out_of(&self, run: BugMode) -> Option<PathBuf> {
        self.file_of(self.meta_store_out.as_deref()?, run)
    }

    fn file_of(&self, path: &Path, run: BugMode) -> Option<PathBuf> {
        if self.runs().len() <= 1 {
            return Some(path.to_path_buf());
        }
        Some(with_mode(path, &run.label().replace(' ', "-")))
    }
}

fn with_mode(path: &Path, label: &str) -> PathBuf {
    let mut name = path.file_stem().unwrap_or_default().to_os_string();
    name.push(".");
    name.push(label);
    if let Some(ext) = path.extension() {
        name.push(".");
        name.push(ext);
    }
    path.with_file_name(name)
}
