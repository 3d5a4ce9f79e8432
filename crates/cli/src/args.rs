//! The command line of `epochlab`, checked into a one-line error each (exit status 2).
//!
//! Each flag may be given at most once (`--flag VALUE` or `--flag=VALUE`); a repeated flag is rejected, as is a
//! flag that would do nothing in the combination given.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::time::Duration;

use epochlab_sim::workload::GenParams;
use epochlab_sim::{BugError, BugId, BugMode, Mode, Setting};
use epochlab_sim::{ReproParams, TracePer};

pub const REPRO_HELP: &str = "\
epochlab repro: make `row [Some(Int16(0))] not found` (RisingWave #14910) happen, and show the fix hold.

Runs the scenario: a sink over a table, fed by a rate-limited arrangement backfill (a flow-control executor after
it, as in RisingWave, so each barrier waits behind a held row); DROP SINK; one of the sink's compute nodes fails
while the Stop barrier is in flight; recovery starts while the sink's actors on another node still run.

FLAGS (each at most once; `--flag VALUE` or `--flag=VALUE`)
  --bug ID                  14910 (default) | 22384 | 16815 | 19138 | 15144 | reschedule-unpinned (epochlab's
                            own check, not a RisingWave bug) | all: the bug of the catalogue
                            (`epochlab bugs`) whose directed scenario runs; the scenario flags below (--rows
                            to --persist-check) are #14910's, and another bug's scenario takes only those
                            `epochlab bugs` lists as its settings (#16815: --parallelism, --persist-check)
  --mode M                  buggy | fixed | purge-before-reset (14910 only) | all, default all: the bug's modes
  --seed N                  0..=18446744073709551615, default 1: the seed of every timing
  --rows N                  1..=10000000, default 10000: rows in the table
  --vnodes N                1..=32768, default 256: vnodes per table
  --parallelism N           1..=256, default 2: actors of the table and of the sink
  --compute-nodes N         1..=64, default 3: compute nodes
  --rate-limit N            1..=1000000, default 1: backfill snapshot rows per second per actor
  --barrier-latency-ms N    0..=60000, default 100: simulated time the sink spends per chunk, its share of
                            barrier latency (the rest is flow control: about 1000/rate-limit ms per barrier);
                            above 1000/rate-limit ms the sink back-pressures the backfill
  --checkpoint-frequency N  1..=10000, default 1: every N-th barrier is a checkpoint
  --persist-check on|off    default on: RisingWave's debug-build checks (the backfill reads its progress row
                            before each write); off behaves as a release build, where only the checkers see it
  --json                    one JSON object per run, one per line (with --check-determinism: one per mode)
  --check-determinism       run each mode twice in two child processes and compare their event logs
  --event-log PATH          write each run's event log to PATH (with more than one mode, the mode goes
                            before PATH's extension: run.log becomes run.buggy.log, ...); off by default
  --log-file PATH           write the runs' log lines to PATH (the levels of RUST_LOG if set, else info), each
                            stamped with its run's virtual time, mode and seed; off by default
  --metrics-addr HOST:PORT  serve Prometheus metrics at http://HOST:PORT/metrics while the runs go; off by default
  --pace X                  0.01..=100000 or off: run simulated time at X times the wall clock (1: real time);
                            default 1 with --metrics-addr, so that a scrape every second sees the run unfold,
                            else off (as fast as it goes). Pacing changes no run: same events, same digest
  --metrics-out PATH        sample every metric of each run every --metrics-interval-ms of simulated time and
                            write them to PATH as OpenMetrics text with timestamps (the run's simulated time
                            shifted onto its wall-clock start), for `promtool tsdb create-blocks-from
                            openmetrics PATH DIR`; off by default
  --metrics-interval-ms N   10..=3600000, default 1000; needs --metrics-out: the sampling interval
  --jaeger                  collect the runs' traces in an embedded Jaeger (UI on --jaeger-addr)
  --jaeger-addr HOST:PORT   needs --jaeger; the Jaeger UI's address, default 127.0.0.1:16686 (OTLP on a free
                            loopback port)
  --otlp-endpoint URL       send traces to an external collector instead (OTLP/gRPC, e.g. http://127.0.0.1:4317)
  --trace-per run|epoch     default run: each run is one trace (root span `run`: epochs, drop, kill, recovery);
                            epoch: a trace per epoch (and per drop, kill and recovery), for long runs
  --serve-for SECS          0..=86400; needs --metrics-addr or --jaeger: keep serving this long after the runs end
                            (default: with --jaeger until Ctrl-C, otherwise not at all)
  -h, --help                this text

--check-determinism excludes --event-log, --metrics-addr, --metrics-out, --pace, --jaeger and --otlp-endpoint: its children run
without telemetry and it compares their event logs itself. It checks determinism only: it exits 0 when
every mode's two runs are identical, whatever their outcomes (shown per mode).

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

/// An inclusive range of a numeric flag; `--help` states each one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub lo: u64,
    pub hi: u64,
}

pub const SEED: Range = Range {
    lo: 0,
    hi: u64::MAX,
};
pub const ROWS: Range = Range {
    lo: 1,
    hi: 10_000_000,
};
pub const VNODES: Range = Range { lo: 1, hi: 32_768 };
pub const PARALLELISM: Range = Range { lo: 1, hi: 256 };
pub const COMPUTE_NODES: Range = Range { lo: 1, hi: 64 };
pub const RATE_LIMIT: Range = Range {
    lo: 1,
    hi: 1_000_000,
};
pub const BARRIER_LATENCY_MS: Range = Range { lo: 0, hi: 60_000 };
pub const CHECKPOINT_FREQUENCY: Range = Range { lo: 1, hi: 10_000 };
pub const SERVE_FOR: Range = Range { lo: 0, hi: 86_400 };
pub const METRICS_INTERVAL_MS: Range = Range {
    lo: 10,
    hi: 3_600_000,
};
pub const DEFAULT_METRICS_INTERVAL: Duration = Duration::from_millis(1000);
pub const JOBS: Range = Range { lo: 1, hi: 256 };
pub const DURATION: Range = Range {
    lo: 1,
    hi: 30 * 86_400,
};

pub const DEFAULT_JAEGER_ADDR: SocketAddr =
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 16686));

/// Bad input: one line on stderr and exit status 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgError {
    #[error("argument {0} is not valid UTF-8")]
    NotUtf8(usize),
    #[error("unknown flag `{0}` (see --help)")]
    UnknownFlag(String),
    #[error("unexpected argument `{0}`: repro takes only flags (see --help)")]
    UnexpectedArgument(String),
    #[error("unexpected argument `{0}`: corpus takes only flags (see --help)")]
    CorpusArgument(String),
    #[error("{0} is given twice: give each flag at most once")]
    Repeated(&'static str),
    #[error("{0} needs a value")]
    MissingValue(&'static str),
    #[error("{0} takes no value")]
    TakesNoValue(&'static str),
    #[error("{flag} takes a whole number in {}..={}, not `{value}`", range.lo, range.hi)]
    NotANumber {
        flag: &'static str,
        range: Range,
        value: String,
    },
    #[error("{flag} must be in {}..={}, not {value}", range.lo, range.hi)]
    OutOfRange {
        flag: &'static str,
        range: Range,
        value: u64,
    },
    #[error("--mode must be buggy, fixed, purge-before-reset or all, not `{0}`")]
    NotAMode(String),
    #[error("--bug: {0}")]
    NotABug(BugError),
    /// A mode that a selected bug does not have.
    #[error("--mode: {0}")]
    NotAModeOfTheBug(BugError),
    #[error("{flag} takes on or off, not `{value}`")]
    NotOnOff { flag: &'static str, value: String },
    #[error("--trace-per takes run or epoch, not `{0}`")]
    NotATracePer(String),
    #[error("{flag} takes HOST:PORT, such as {example}, not `{value}`")]
    NotAnAddress {
        flag: &'static str,
        example: &'static str,
        value: String,
    },
    #[error("--otlp-endpoint takes a URL such as http://127.0.0.1:4317, not `{0}`")]
    NotAUrl(String),
    #[error(
        "--pace takes a number from 0.01 to 100000 (simulated seconds per wall-clock second; 1 is real time) \
         or off, not `{0}`"
    )]
    NotAPace(String),
    /// A scenario setting that a selected bug's directed scenario does not read.
    #[error(
        "{flag} is not a setting of bug {bug}'s scenario (it reads {reads})",
        reads = settings_of(*bug)
    )]
    NotASettingOf { flag: &'static str, bug: BugId },
    /// A flag that would do nothing without another.
    #[error("{flag} {reason}")]
    Pointless {
        flag: &'static str,
        reason: &'static str,
    },
    #[error("--seeds takes A..B with A < B (seeds A, A+1, ..., B-1), not `{0}`")]
    NotASeedRange(String),
    #[error("--shard takes K/N with K < N, not `{0}`")]
    NotAShard(String),
    /// `--mode` of a command that runs one mode (`soak`, `slt`).
    #[error("--mode of {command} is one of buggy, fixed or purge-before-reset, not `{value}`")]
    NotASingleMode {
        command: &'static str,
        value: String,
    },
    /// `--runner` of `slt` (and `soak --slt`).
    #[error("--runner takes 2024 or latest, not `{0}`")]
    NotARunner(String),
    /// `epochlab slt`'s `--seed`.
    #[error("--seed takes a whole number in 0..=18446744073709551615, not `{0}`")]
    NotASeed(String),
    /// `epochlab slt FILES...` or `soak --slt GLOB` named no file (or a bad pattern).
    #[error("{}{why}", if pattern.is_empty() { String::new() } else { format!("`{pattern}`: ") })]
    SltFiles { pattern: String, why: String },
    #[error("--bug of a soak is one bug of the catalogue, not all: run one campaign per bug")]
    SoakBugAll,
    #[error("--scenario takes random or 14910, not `{0}`")]
    NotAScenario(String),
    #[error("{flag} takes a probability from 0 to 1, such as 0.5, not `{value}`")]
    NotAProbability { flag: &'static str, value: String },
    #[error("{a} and {b} exclude each other: {reason}")]
    Exclusive {
        a: &'static str,
        b: &'static str,
        reason: &'static str,
    },
}

/// The top-level command line's errors; each displays as the one line to print.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CliError {
    #[error("epochlab: {0}")]
    Encoding(ArgError),
    #[error(
        "epochlab: no command given; usage: epochlab repro|soak|soak-report|slt|corpus|bugs|triage [FLAGS] (epochlab repro --help)"
    )]
    NoCommand,
    #[error(
        "epochlab: unknown command `{0}`; usage: epochlab repro|soak|soak-report|slt|corpus|bugs|triage [FLAGS]"
    )]
    UnknownCommand(String),
    #[error("epochlab repro: {0}")]
    Repro(#[from] ArgError),
    #[error("epochlab soak: {0}")]
    Soak(ArgError),
    #[error("epochlab soak-report: name the results files to merge: epochlab soak-report FILES...")]
    SoakReportNoFiles,
    #[error("epochlab bugs: takes no argument, not `{0}`")]
    BugsTakesNothing(String),
    #[error("epochlab slt: {0}")]
    Slt(ArgError),
    #[error("epochlab corpus: {0}")]
    Corpus(ArgError),
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Invocation {
    /// `epochlab help`, `epochlab repro --help`.
    Help,
    Repro(Box<ReproArgs>),
    SoakHelp,
    Soak(Box<crate::soak::SoakArgs>),
    /// `epochlab soak-report FILES...`.
    SoakReport(Vec<PathBuf>),
    /// `epochlab bugs`: the catalogue.
    Bugs,
    /// `epochlab slt --help`.
    SltHelp,
    /// `epochlab slt FILES...`: sqllogictest files against the simulated cluster.
    Slt(Box<crate::slt::SltArgs>),
    /// `epochlab corpus --help`.
    CorpusHelp,
    /// `epochlab corpus`: RisingWave's e2e corpus, with the ratchet.
    Corpus(Box<crate::corpus::CorpusArgs>),
    /// `epochlab triage --help`.
    TriageHelp,
    /// `epochlab triage FILE...`: which known bug a log shows.
    Triage(Vec<PathBuf>),
}

/// The arguments after the program's name, as text; `argument N` counts from 1 after the program's name.
pub fn utf8(argv: impl IntoIterator<Item = OsString>) -> Result<Vec<String>, ArgError> {
    argv.into_iter()
        .enumerate()
        .map(|(i, a)| a.into_string().map_err(|_| ArgError::NotUtf8(i + 1)))
        .collect()
}

/// Parse the arguments after the program's name.
pub fn parse_command(argv: impl IntoIterator<Item = OsString>) -> Result<Invocation, CliError> {
    let argv = utf8(argv).map_err(CliError::Encoding)?;
    let Some((cmd, rest)) = argv.split_first() else {
        return Err(CliError::NoCommand);
    };
    match cmd.as_str() {
        "repro" => Ok(ReproArgs::parse(rest)?),
        "soak" => parse_soak(rest).map_err(CliError::Soak),
        "soak-report" if rest.iter().any(|a| a == "-h" || a == "--help") => {
            Ok(Invocation::SoakHelp)
        }
        "soak-report" if rest.is_empty() => Err(CliError::SoakReportNoFiles),
        "soak-report" => Ok(Invocation::SoakReport(
            rest.iter().map(PathBuf::from).collect(),
        )),
        "slt" => crate::slt::parse(rest).map_err(CliError::Slt),
        "corpus" => crate::corpus::parse(rest).map_err(CliError::Corpus),
        "triage" if rest.iter().any(|a| a == "-h" || a == "--help") => Ok(Invocation::TriageHelp),
        "triage" => Ok(Invocation::Triage(rest.iter().map(PathBuf::from).collect())),
        // The catalogue is all `bugs` says; its help is the catalogue.
        "bugs" if rest.is_empty() || matches!(rest, [h] if h == "-h" || h == "--help") => {
            Ok(Invocation::Bugs)
        }
        "bugs" => Err(CliError::BugsTakesNothing(rest[0].clone())),
        "-h" | "--help" | "help" => Ok(Invocation::Help),
        other => Err(CliError::UnknownCommand(other.to_string())),
    }
}

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

/// What `--pace` says.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum PaceFlag {
    /// Not given: paced at 1 with `--metrics-addr`, else not at all.
    #[default]
    Default,
    Off,
    /// Simulated seconds per wall-clock second.
    Times(f64),
}

impl Default for ReproArgs {
    fn default() -> Self {
        Self {
            bugs: vec![BugId::Rw14910],
            modes: Mode::ALL.to_vec(),
            params: ReproParams::default(),
            json: false,
            check_determinism: false,
            event_log: None,
            log_file: None,
            metrics_addr: None,
            serve_for: None,
            jaeger: false,
            jaeger_addr: None,
            otlp_endpoint: None,
            trace_per: TracePer::Run,
            pace: PaceFlag::Default,
            metrics_out: None,
            metrics_interval: None,
        }
    }
}

/// The bugs `--bug` selects: one, or `all` (every implemented bug).
pub fn parse_bugs(s: &str) -> Result<Vec<BugId>, BugError> {
    match s {
        "all" => Ok(BugId::ALL.to_vec()),
        one => one.parse::<BugId>().map(|b| vec![b]).map_err(|e| match e {
            BugError::Unknown(s) => BugError::UnknownOrAll(s),
            e => e,
        }),
    }
}

/// The modes `--mode` selects: one mode, or `all`.
pub fn parse_modes(s: &str) -> Option<Vec<Mode>> {
    match s {
        "all" => Some(Mode::ALL.to_vec()),
        one => one.parse::<Mode>().ok().map(|m| vec![m]),
    }
}

/// The flags that set `bug`'s directed scenario, as `--parallelism`, or `no flag`.
pub fn settings_of(bug: BugId) -> String {
    let flags: Vec<&str> = Flag::ALL
        .into_iter()
        .filter(|f| f.setting().is_some_and(|s| bug.reads(s)))
        .map(Flag::name)
        .collect();
    match flags.is_empty() {
        true => "no flag".into(),
        false => flags.join(", "),
    }
}

/// The flags of `epochlab repro`, but `-h`/`--help`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Flag {
    Bug,
    Mode,
    Seed,
    Rows,
    Vnodes,
    Parallelism,
    ComputeNodes,
    RateLimit,
    BarrierLatencyMs,
    CheckpointFrequency,
    PersistCheck,
    Json,
    CheckDeterminism,
    EventLog,
    LogFile,
    MetricsAddr,
    Jaeger,
    JaegerAddr,
    OtlpEndpoint,
    TracePer,
    ServeFor,
    Pace,
    MetricsOut,
    MetricsIntervalMs,
}

impl Flag {
    pub const ALL: [Flag; 24] = [
        Flag::Bug,
        Flag::Mode,
        Flag::Seed,
        Flag::Rows,
        Flag::Vnodes,
        Flag::Parallelism,
        Flag::ComputeNodes,
        Flag::RateLimit,
        Flag::BarrierLatencyMs,
        Flag::CheckpointFrequency,
        Flag::PersistCheck,
        Flag::Json,
        Flag::CheckDeterminism,
        Flag::EventLog,
        Flag::LogFile,
        Flag::MetricsAddr,
        Flag::Jaeger,
        Flag::JaegerAddr,
        Flag::OtlpEndpoint,
        Flag::TracePer,
        Flag::ServeFor,
        Flag::Pace,
        Flag::MetricsOut,
        Flag::MetricsIntervalMs,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Flag::Bug => "--bug",
            Flag::Mode => "--mode",
            Flag::Seed => "--seed",
            Flag::Rows => "--rows",
            Flag::Vnodes => "--vnodes",
            Flag::Parallelism => "--parallelism",
            Flag::ComputeNodes => "--compute-nodes",
            Flag::RateLimit => "--rate-limit",
            Flag::BarrierLatencyMs => "--barrier-latency-ms",
            Flag::CheckpointFrequency => "--checkpoint-frequency",
            Flag::PersistCheck => "--persist-check",
            Flag::Json => "--json",
            Flag::CheckDeterminism => "--check-determinism",
            Flag::EventLog => "--event-log",
            Flag::LogFile => "--log-file",
            Flag::MetricsAddr => "--metrics-addr",
            Flag::Jaeger => "--jaeger",
            Flag::JaegerAddr => "--jaeger-addr",
            Flag::OtlpEndpoint => "--otlp-endpoint",
            Flag::TracePer => "--trace-per",
            Flag::ServeFor => "--serve-for",
            Flag::Pace => "--pace",
            Flag::MetricsOut => "--metrics-out",
            Flag::MetricsIntervalMs => "--metrics-interval-ms",
        }
    }

    /// The scenario setting the flag sets, if it sets one.
    pub fn setting(self) -> Option<Setting> {
        Some(match self {
            Flag::Rows => Setting::Rows,
            Flag::Vnodes => Setting::Vnodes,
            Flag::Parallelism => Setting::Parallelism,
            Flag::ComputeNodes => Setting::ComputeNodes,
            Flag::RateLimit => Setting::RateLimit,
            Flag::BarrierLatencyMs => Setting::BarrierLatency,
            Flag::CheckpointFrequency => Setting::CheckpointFrequency,
            Flag::PersistCheck => Setting::PersistCheck,
            _ => return None,
        })
    }

    fn from_name(name: &str) -> Option<Flag> {
        Flag::ALL.into_iter().find(|f| f.name() == name)
    }

    fn takes_value(self) -> bool {
        !matches!(self, Flag::Json | Flag::CheckDeterminism | Flag::Jaeger)
    }
}

fn number<T: TryFrom<u64>>(flag: Flag, value: &str, range: Range) -> Result<T, ArgError> {
    let n: u64 = value.parse().map_err(|_| ArgError::NotANumber {
        flag: flag.name(),
        range,
        value: value.to_string(),
    })?;
    let out_of_range = ArgError::OutOfRange {
        flag: flag.name(),
        range,
        value: n,
    };
    if n < range.lo || n > range.hi {
        return Err(out_of_range);
    }
    T::try_from(n).map_err(|_| out_of_range)
}

fn on_off(flag: Flag, value: &str) -> Result<bool, ArgError> {
    match value {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(ArgError::NotOnOff {
            flag: flag.name(),
            value: value.to_string(),
        }),
    }
}

fn address(flag: Flag, value: &str, example: &'static str) -> Result<SocketAddr, ArgError> {
    value.parse().map_err(|_| ArgError::NotAnAddress {
        flag: flag.name(),
        example,
        value: value.to_string(),
    })
}

fn pace(value: &str) -> Result<PaceFlag, ArgError> {
    use epochlab_telemetry::{MAX_PACE, MIN_PACE};
    if value == "off" {
        return Ok(PaceFlag::Off);
    }
    match value.parse::<f64>() {
        Ok(x) if (MIN_PACE..=MAX_PACE).contains(&x) => Ok(PaceFlag::Times(x)),
        _ => Err(ArgError::NotAPace(value.to_string())),
    }
}

fn url(value: &str) -> Result<String, ArgError> {
    let rest = value
        .strip_prefix("http://")
        .or_else(|| value.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() => Ok(value.to_string()),
        _ => Err(ArgError::NotAUrl(value.to_string())),
    }
}

/// `--name=value` splits into the name and the value.
fn split_inline(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once('=') {
        Some((name, value)) if name.starts_with("--") => (name, Some(value)),
        _ => (arg, None),
    }
}

fn unknown(arg: &str) -> ArgError {
    if arg.starts_with('-') {
        ArgError::UnknownFlag(arg.to_string())
    } else {
        ArgError::UnexpectedArgument(arg.to_string())
    }
}

impl ReproArgs {
    /// Parse `epochlab repro`'s arguments; `-h`/`--help` anywhere asks for the help (unless an error came first).
    pub fn parse(argv: &[String]) -> Result<Invocation, ArgError> {
        let mut a = ReproArgs::default();
        let mut seen = BTreeSet::new();
        let mut it = argv.iter();
        while let Some(arg) = it.next() {
            if arg == "-h" || arg == "--help" {
                return Ok(Invocation::Help);
            }
            let (name, inline) = split_inline(arg);
            let flag = Flag::from_name(name).ok_or_else(|| unknown(arg))?;
            if !seen.insert(flag) {
                return Err(ArgError::Repeated(flag.name()));
            }
            let value = match (flag.takes_value(), inline) {
                (true, Some(v)) => v,
                (true, None) => it
                    .next()
                    .ok_or(ArgError::MissingValue(flag.name()))?
                    .as_str(),
                (false, None) => "",
                (false, Some(_)) => return Err(ArgError::TakesNoValue(flag.name())),
            };
            a.set(flag, value)?;
        }
        a.check_combinations()?;
        a.check_bugs(&seen)?;
        Ok(Invocation::Repro(Box::new(a)))
    }

    fn set(&mut self, flag: Flag, v: &str) -> Result<(), ArgError> {
        let p = &mut self.params;
        match flag {
            Flag::Bug => self.bugs = parse_bugs(v).map_err(ArgError::NotABug)?,
            Flag::Mode => self.modes = parse_modes(v).ok_or(ArgError::NotAMode(v.to_string()))?,
            Flag::Seed => p.seed = number(flag, v, SEED)?,
            Flag::Rows => p.rows = number(flag, v, ROWS)?,
            Flag::Vnodes => p.vnodes = number(flag, v, VNODES)?,
            Flag::Parallelism => p.parallelism = number(flag, v, PARALLELISM)?,
            Flag::ComputeNodes => p.compute_nodes = number(flag, v, COMPUTE_NODES)?,
            Flag::RateLimit => p.rate_limit = number(flag, v, RATE_LIMIT)?,
            Flag::BarrierLatencyMs => p.barrier_latency_ms = number(flag, v, BARRIER_LATENCY_MS)?,
            Flag::CheckpointFrequency => {
                p.checkpoint_frequency = number(flag, v, CHECKPOINT_FREQUENCY)?
            }
            Flag::PersistCheck => p.persist_check = on_off(flag, v)?,
            Flag::Json => self.json = true,
            Flag::CheckDeterminism => self.check_determinism = true,
            Flag::EventLog if v.is_empty() => return Err(ArgError::MissingValue(flag.name())),
            Flag::EventLog => self.event_log = Some(PathBuf::from(v)),
            Flag::LogFile if v.is_empty() => return Err(ArgError::MissingValue(flag.name())),
            Flag::LogFile => self.log_file = Some(PathBuf::from(v)),
            Flag::MetricsAddr => self.metrics_addr = Some(address(flag, v, "127.0.0.1:9464")?),
            Flag::Jaeger => self.jaeger = true,
            Flag::JaegerAddr => self.jaeger_addr = Some(address(flag, v, "127.0.0.1:16686")?),
            Flag::OtlpEndpoint => self.otlp_endpoint = Some(url(v)?),
            Flag::TracePer => {
                self.trace_per = TracePer::parse(v).ok_or(ArgError::NotATracePer(v.to_string()))?
            }
            Flag::ServeFor => {
                self.serve_for = Some(Duration::from_secs(number(flag, v, SERVE_FOR)?))
            }
            Flag::Pace => self.pace = pace(v)?,
            Flag::MetricsOut if v.is_empty() => return Err(ArgError::MissingValue(flag.name())),
            Flag::MetricsOut => self.metrics_out = Some(PathBuf::from(v)),
            Flag::MetricsIntervalMs => {
                let ms = number(flag, v, METRICS_INTERVAL_MS)?;
                self.metrics_interval = Some(Duration::from_millis(ms))
            }
        }
        Ok(())
    }

    /// Reject flags that would do nothing in the combination given.
    fn check_combinations(&self) -> Result<(), ArgError> {
        if self.bugs.len() > 1 {
            let metrics = [
                (self.metrics_addr.is_some(), "--metrics-addr"),
                (self.metrics_out.is_some(), "--metrics-out"),
            ];
            if let Some((_, flag)) = metrics.into_iter().find(|(given, _)| *given) {
                return Err(ArgError::Exclusive {
                    a: flag,
                    b: "--bug all",
                    reason: "series are labelled by mode, and several bugs share the mode names: pick one bug",
                });
            }
        }
        if self.jaeger && self.otlp_endpoint.is_some() {
            return Err(ArgError::Exclusive {
                a: "--jaeger",
                b: "--otlp-endpoint",
                reason: "traces go to one collector",
            });
        }
        if self.jaeger_addr.is_some() && !self.jaeger {
            return Err(ArgError::Pointless {
                flag: "--jaeger-addr",
                reason: "needs --jaeger: it is the embedded Jaeger UI's address",
            });
        }
        let otlp_env =
            std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some_and(|v| !v.is_empty());
        if self.trace_per != TracePer::Run
            && !self.jaeger
            && self.otlp_endpoint.is_none()
            && !otlp_env
        {
            return Err(ArgError::Pointless {
                flag: "--trace-per",
                reason: "needs --jaeger or --otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT): it shapes the \
                         traces they receive",
            });
        }
        if self.serve_for.is_some() && self.metrics_addr.is_none() && !self.jaeger {
            return Err(ArgError::Pointless {
                flag: "--serve-for",
                reason: "needs --metrics-addr or --jaeger: it keeps serving metrics and the embedded \
                         Jaeger (with --otlp-endpoint the traces go elsewhere and nothing is served)",
            });
        }
        if self.pace == PaceFlag::Off && self.metrics_addr.is_none() {
            return Err(ArgError::Pointless {
                flag: "--pace off",
                reason: "needs --metrics-addr: only a run that serves metrics is paced by default",
            });
        }
        if self.metrics_interval.is_some() && self.metrics_out.is_none() {
            return Err(ArgError::Pointless {
                flag: "--metrics-interval-ms",
                reason: "needs --metrics-out: it is how often the timeline written there is sampled",
            });
        }
        if self.check_determinism && self.log_file.is_some() {
            return Err(ArgError::Exclusive {
                a: "--log-file",
                b: "--check-determinism",
                reason: "the check runs its children without logs",
            });
        }
        if self.check_determinism && self.event_log.is_some() {
            return Err(ArgError::Exclusive {
                a: "--event-log",
                b: "--check-determinism",
                reason: "the check writes and compares its children's event logs itself",
            });
        }
        if self.check_determinism {
            let given = [
                (self.metrics_addr.is_some(), "--metrics-addr"),
                (self.metrics_out.is_some(), "--metrics-out"),
                (self.pace != PaceFlag::Default, "--pace"),
                (self.jaeger, "--jaeger"),
                (self.otlp_endpoint.is_some(), "--otlp-endpoint"),
            ];
            if let Some((_, flag)) = given.into_iter().find(|(g, _)| *g) {
                return Err(ArgError::Exclusive {
                    a: flag,
                    b: "--check-determinism",
                    reason: "the check's children run without telemetry",
                });
            }
        }
        Ok(())
    }

    /// A mode given alone must be one of every selected bug's; a scenario setting must be read by every
    /// selected bug's scenario (the catalogue's [`epochlab_sim::BugInfo::settings`]).
    fn check_bugs(&self, seen: &BTreeSet<Flag>) -> Result<(), ArgError> {
        if let [mode] = self.modes[..] {
            for &bug in &self.bugs {
                bug.check_mode(mode).map_err(ArgError::NotAModeOfTheBug)?;
            }
        }
        for flag in seen {
            let Some(setting) = flag.setting() else {
                continue;
            };
            if let Some(&bug) = self.bugs.iter().find(|b| !b.reads(setting)) {
                return Err(ArgError::NotASettingOf {
                    flag: flag.name(),
                    bug,
                });
            }
        }
        Ok(())
    }

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
        let path = self.event_log.as_deref()?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<ReproArgs, ArgError> {
        let argv: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match ReproArgs::parse(&argv)? {
            Invocation::Repro(a) => Ok(*a),
            other => panic!("{other:?} for {args:?}"),
        }
    }

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn defaults_run_every_mode_with_the_scenario_defaults() {
        let a = parse(&[]).expect("no flags");
        assert_eq!(a.modes, Mode::ALL.to_vec());
        assert_eq!(a.params, ReproParams::default());
        assert!(a.params.persist_check);
        assert_eq!(a.jaeger_addr(), "127.0.0.1:16686".parse().expect("address"));
    }

    #[test]
    fn every_flag_is_read_in_both_spellings() {
        let a = parse(&[
            "--mode",
            "fixed",
            "--seed=7",
            "--rows",
            "12",
            "--vnodes=1",
            "--parallelism",
            "3",
            "--compute-nodes",
            "4",
            "--rate-limit",
            "5",
            "--barrier-latency-ms=0",
            "--checkpoint-frequency",
            "6",
            "--persist-check=off",
            "--json",
        ])
        .expect("valid flags");
        assert_eq!(a.modes, vec![Mode::Fixed]);
        let p = &a.params;
        assert_eq!(
            (p.seed, p.rows, p.vnodes, p.parallelism, p.compute_nodes),
            (7, 12, 1, 3, 4)
        );
        assert_eq!(
            (p.rate_limit, p.barrier_latency_ms, p.checkpoint_frequency),
            (5, 0, 6)
        );
        assert!(!p.persist_check);
        assert!(a.json);
    }

    #[test]
    fn persist_check_takes_on_or_off() {
        assert!(
            parse(&["--persist-check", "on"])
                .expect("on")
                .params
                .persist_check
        );
        assert!(
            !parse(&["--persist-check", "off"])
                .expect("off")
                .params
                .persist_check
        );
        for bad in ["yes", "true", "ON", ""] {
            assert_eq!(
                parse(&["--persist-check", bad]).unwrap_err(),
                ArgError::NotOnOff {
                    flag: "--persist-check",
                    value: bad.into()
                }
            );
        }
    }

    #[test]
    fn numbers_outside_their_range_are_rejected() {
        let cases = [
            (Flag::Rows, ROWS),
            (Flag::Vnodes, VNODES),
            (Flag::Parallelism, PARALLELISM),
            (Flag::ComputeNodes, COMPUTE_NODES),
            (Flag::RateLimit, RATE_LIMIT),
            (Flag::BarrierLatencyMs, BARRIER_LATENCY_MS),
            (Flag::CheckpointFrequency, CHECKPOINT_FREQUENCY),
        ];
        for (flag, range) in cases {
            let (lo, hi) = (range.lo.to_string(), range.hi.to_string());
            parse(&[flag.name(), &lo]).expect("the lowest value");
            parse(&[flag.name(), &hi]).expect("the highest value");
            let above = (range.hi + 1).to_string();
            let err = parse(&[flag.name(), &above]).unwrap_err();
            assert_eq!(
                err,
                ArgError::OutOfRange {
                    flag: flag.name(),
                    range,
                    value: range.hi + 1
                }
            );
            if range.lo > 0 {
                let below = (range.lo - 1).to_string();
                assert!(matches!(
                    parse(&[flag.name(), &below]),
                    Err(ArgError::OutOfRange { .. })
                ));
            }
            for junk in ["-1", "x", "1.5", "99999999999999999999999"] {
                let err = parse(&[flag.name(), junk]).unwrap_err();
                assert!(
                    matches!(err, ArgError::NotANumber { .. }),
                    "{flag:?} {junk}: {err:?}"
                );
            }
        }
        parse(&["--seed", &u64::MAX.to_string()]).expect("any u64 seed");
        let err = parse(&["--jaeger", "--serve-for", "86401"]).unwrap_err();
        assert!(matches!(
            err,
            ArgError::OutOfRange {
                flag: "--serve-for",
                ..
            }
        ));
    }

    #[test]
    fn help_states_every_range_and_default() {
        let d = ReproParams::default();
        let cases = [
            ("--seed", SEED, d.seed),
            ("--rows", ROWS, d.rows as u64),
            ("--vnodes", VNODES, d.vnodes.into()),
            ("--parallelism", PARALLELISM, d.parallelism as u64),
            ("--compute-nodes", COMPUTE_NODES, d.compute_nodes.into()),
            ("--rate-limit", RATE_LIMIT, d.rate_limit.into()),
            (
                "--barrier-latency-ms",
                BARRIER_LATENCY_MS,
                d.barrier_latency_ms,
            ),
            (
                "--checkpoint-frequency",
                CHECKPOINT_FREQUENCY,
                d.checkpoint_frequency.into(),
            ),
        ];
        for (flag, range, default) in cases {
            let line = REPRO_HELP
                .lines()
                .find(|l| l.trim_start().starts_with(flag))
                .unwrap_or_else(|| panic!("{flag} is in --help"));
            let want = format!("{}..={}, default {default}", range.lo, range.hi);
            assert!(line.contains(&want), "{flag}: `{line}` lacks `{want}`");
        }
        assert!(REPRO_HELP.contains(&format!("{}..={}", SERVE_FOR.lo, SERVE_FOR.hi)));
        let interval = DEFAULT_METRICS_INTERVAL.as_millis();
        let (lo, hi) = (METRICS_INTERVAL_MS.lo, METRICS_INTERVAL_MS.hi);
        assert!(REPRO_HELP.contains(&format!("{lo}..={hi}, default {interval}")));
        let (lo, hi) = (epochlab_telemetry::MIN_PACE, epochlab_telemetry::MAX_PACE);
        assert!(REPRO_HELP.contains(&format!("--pace X                  {lo}..={hi} or off")));
        for flag in Flag::ALL {
            assert!(
                REPRO_HELP.contains(&format!("  {} ", flag.name())),
                "{flag:?}"
            );
        }
        for word in [
            "stuck",
            "not_reproducible",
            "0 every",
            "1 a mode",
            "2 bad",
            "3 nothing",
        ] {
            assert!(REPRO_HELP.contains(word), "{word}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_non_utf8_argument_is_named_by_its_position() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![b'-', b'-', 0xff]);
        let argv = vec![OsString::from("repro"), OsString::from("--seed"), bad];
        let err = parse_command(argv).unwrap_err();
        assert_eq!(err, CliError::Encoding(ArgError::NotUtf8(3)));
        assert_eq!(err.to_string(), "epochlab: argument 3 is not valid UTF-8");
    }

    #[test]
    fn commands() {
        assert_eq!(parse_command(os(&[])).unwrap_err(), CliError::NoCommand);
        assert_eq!(
            parse_command(os(&["sok"])).unwrap_err(),
            CliError::UnknownCommand("sok".into())
        );
        assert!(matches!(
            parse_command(os(&["soak"])),
            Ok(Invocation::Soak(_))
        ));
        assert!(matches!(
            parse_command(os(&["soak", "--help"])),
            Ok(Invocation::SoakHelp)
        ));
        assert!(matches!(parse_command(os(&["help"])), Ok(Invocation::Help)));
        assert!(matches!(
            parse_command(os(&["repro", "--json", "-h"])),
            Ok(Invocation::Help)
        ));
        let err = parse_command(os(&["repro", "--bogus"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "epochlab repro: unknown flag `--bogus` (see --help)"
        );
    }

    #[test]
    fn malformed_flags_are_rejected() {
        let cases: [(&[&str], ArgError); 9] = [
            (&["--bogus"], ArgError::UnknownFlag("--bogus".into())),
            (&["buggy"], ArgError::UnexpectedArgument("buggy".into())),
            (&["--seed"], ArgError::MissingValue("--seed")),
            (&["--event-log="], ArgError::MissingValue("--event-log")),
            (&["--json=yes"], ArgError::TakesNoValue("--json")),
            (&["--mode", "slow"], ArgError::NotAMode("slow".into())),
            (
                &["--otlp-endpoint", "127.0.0.1:4317"],
                ArgError::NotAUrl("127.0.0.1:4317".into()),
            ),
            (
                &["--otlp-endpoint", "http://"],
                ArgError::NotAUrl("http://".into()),
            ),
            (
                &["--metrics-addr", "localhost"],
                ArgError::NotAnAddress {
                    flag: "--metrics-addr",
                    example: "127.0.0.1:9464",
                    value: "localhost".into(),
                },
            ),
        ];
        for (args, want) in cases {
            assert_eq!(parse(args).unwrap_err(), want, "{args:?}");
        }
    }

    #[test]
    fn a_repeated_flag_is_rejected() {
        for args in [
            &["--seed", "1", "--seed", "2"][..],
            &["--seed=1", "--seed", "1"],
            &["--json", "--json"],
            &["--mode", "all", "--mode", "fixed"],
            &["--persist-check", "on", "--persist-check=off"],
        ] {
            assert!(
                matches!(parse(args), Err(ArgError::Repeated(_))),
                "{args:?}"
            );
        }
    }

    #[test]
    fn flags_that_would_do_nothing_are_rejected() {
        let pointless = |args: &[&str], flag: &str| match parse(args) {
            Err(ArgError::Pointless { flag: f, .. }) => assert_eq!(f, flag, "{args:?}"),
            other => panic!("{args:?}: {other:?}"),
        };
        pointless(&["--jaeger-addr", "127.0.0.1:1"], "--jaeger-addr");
        pointless(&["--serve-for", "5"], "--serve-for");
        pointless(&["--trace-per", "epoch"], "--trace-per");
        pointless(
            &["--serve-for", "5", "--otlp-endpoint", "http://x:4317"],
            "--serve-for",
        );
        parse(&["--serve-for", "5", "--metrics-addr", "127.0.0.1:0"]).expect("serves metrics");
        parse(&["--serve-for", "5", "--jaeger", "--jaeger-addr=127.0.0.1:0"])
            .expect("serves Jaeger");
    }

    #[test]
    fn a_run_that_serves_metrics_is_paced_at_1_unless_told_otherwise() {
        let pace = |args: &[&str]| parse(args).expect("valid").pace();
        let addr = ["--metrics-addr", "127.0.0.1:0"];
        assert_eq!(pace(&[]), None);
        assert_eq!(pace(&addr), Some(1.0));
        assert_eq!(pace(&[&addr[..], &["--pace", "off"]].concat()), None);
        assert_eq!(pace(&[&addr[..], &["--pace=2.5"]].concat()), Some(2.5));
        assert_eq!(pace(&["--pace", "4"]), Some(4.0));
        assert_eq!(pace(&["--pace", "0.01"]), Some(0.01));
        assert_eq!(pace(&["--pace", "100000"]), Some(100_000.0));
        for bad in ["0", "-1", "0.001", "100001", "x", "inf", "NaN", "", "1x"] {
            assert_eq!(
                parse(&["--pace", bad]).unwrap_err(),
                ArgError::NotAPace(bad.into()),
                "{bad}"
            );
        }
        let err = parse(&["--pace", "off"]).unwrap_err();
        assert!(
            matches!(
                err,
                ArgError::Pointless {
                    flag: "--pace off",
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn metrics_out_samples_every_second_unless_told_otherwise() {
        let a = parse(&["--metrics-out", "run.om"]).expect("valid");
        assert_eq!(a.metrics_out, Some(PathBuf::from("run.om")));
        assert_eq!(a.metrics_interval(), Duration::from_secs(1));
        assert_eq!(a.pace(), None, "a timeline alone is not paced");
        let a = parse(&["--metrics-out=run.om", "--metrics-interval-ms", "250"]).expect("valid");
        assert_eq!(a.metrics_interval(), Duration::from_millis(250));
        for out_of_range in ["9", "3600001"] {
            let args = [
                "--metrics-out",
                "r.om",
                "--metrics-interval-ms",
                out_of_range,
            ];
            let err = parse(&args).unwrap_err();
            assert!(matches!(err, ArgError::OutOfRange { .. }), "{err:?}");
        }
        let err = parse(&["--metrics-interval-ms", "250"]).unwrap_err();
        let want = "--metrics-interval-ms";
        assert!(
            matches!(err, ArgError::Pointless { flag, .. } if flag == want),
            "{err:?}"
        );
        assert_eq!(
            parse(&["--metrics-out="]).unwrap_err(),
            ArgError::MissingValue("--metrics-out")
        );
    }

    #[test]
    fn flags_that_exclude_each_other_are_rejected() {
        let exclusive = |args: &[&str], flag: &str| match parse(args) {
            Err(ArgError::Exclusive { a, .. }) => assert_eq!(a, flag, "{args:?}"),
            other => panic!("{args:?}: {other:?}"),
        };
        exclusive(
            &["--jaeger", "--otlp-endpoint", "http://x:4317"],
            "--jaeger",
        );
        for (flag, value) in [
            ("--event-log", Some("x.log")),
            ("--metrics-addr", Some("127.0.0.1:0")),
            ("--metrics-out", Some("run.om")),
            ("--pace", Some("2")),
            ("--jaeger", None),
            ("--otlp-endpoint", Some("http://x:4317")),
        ] {
            let mut args = vec!["--check-determinism", flag];
            args.extend(value);
            exclusive(&args, flag);
        }
        let a = parse(&["--check-determinism", "--json"]).expect("JSON per mode");
        assert!(a.check_determinism && a.json);
    }

    #[test]
    fn the_event_log_of_several_modes_goes_to_one_file_each() {
        let a = parse(&["--event-log", "/tmp/run.log"]).expect("valid");
        let paths: Vec<PathBuf> = a.runs().iter().filter_map(|&r| a.event_log_of(r)).collect();
        let want = [
            "/tmp/run.buggy.log",
            "/tmp/run.fixed.log",
            "/tmp/run.purge-before-reset.log",
        ];
        assert_eq!(paths, want.map(PathBuf::from).to_vec());
        let fixed = BugMode::of_14910(Mode::Fixed);
        let a = parse(&["--event-log", "events", "--mode", "all"]).expect("valid");
        assert_eq!(a.event_log_of(fixed), Some(PathBuf::from("events.fixed")));
        let a = parse(&["--event-log", "/tmp/run.log", "--mode", "fixed"]).expect("valid");
        assert_eq!(a.event_log_of(fixed), Some(PathBuf::from("/tmp/run.log")));
        assert_eq!(parse(&[]).expect("valid").event_log_of(fixed), None);
        let a = parse(&["--event-log", "r.log", "--bug", "all"]).expect("valid");
        let runs = a.runs();
        assert_eq!(runs.len(), 13);
        assert_eq!(
            a.event_log_of(runs[4]),
            Some(PathBuf::from("r.22384-fixed.log"))
        );
        assert_eq!(
            a.event_log_of(runs[5]),
            Some(PathBuf::from("r.16815-buggy.log"))
        );
        assert_eq!(
            a.event_log_of(runs[8]),
            Some(PathBuf::from("r.19138-fixed.log"))
        );
        assert_eq!(
            a.event_log_of(runs[10]),
            Some(PathBuf::from("r.15144-fixed.log"))
        );
        assert_eq!(
            a.event_log_of(runs[11]),
            Some(PathBuf::from("r.reschedule-unpinned-buggy.log"))
        );
    }

    #[test]
    fn a_bug_takes_its_own_modes_and_only_its_scenario_settings() {
        let a = parse(&["--bug", "22384"]).expect("valid");
        let modes: Vec<Mode> = a.runs().iter().map(|r| r.mode()).collect();
        assert_eq!(modes, [Mode::Buggy, Mode::Fixed]);
        let err = parse(&["--bug", "22384", "--mode", "purge-before-reset"]);
        assert_eq!(
            err.unwrap_err().to_string(),
            "--mode: bug 22384 has the modes buggy, fixed, not `purge-before-reset`"
        );
        let err = parse(&["--bug", "all", "--rows", "5"]).unwrap_err();
        assert_eq!(
            err,
            ArgError::NotASettingOf {
                flag: "--rows",
                bug: BugId::Rw22384
            }
        );
        assert_eq!(
            err.to_string(),
            "--rows is not a setting of bug 22384's scenario (it reads no flag)"
        );
        let one_actor = [
            "--bug",
            "16815",
            "--parallelism",
            "1",
            "--persist-check",
            "off",
        ];
        let a = parse(&one_actor).expect("#16815 reads these two");
        assert_eq!(a.params_of(a.runs()[0]).parallelism, 1);
        let err = parse(&["--bug", "16815", "--vnodes", "8"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--vnodes is not a setting of bug 16815's scenario (it reads --parallelism, --persist-check)"
        );
        let err = parse(&["--bug", "all", "--metrics-out", "run.om"]).unwrap_err();
        assert!(
            matches!(
                err,
                ArgError::Exclusive {
                    a: "--metrics-out",
                    b: "--bug all",
                    ..
                }
            ),
            "{err}"
        );
        let err = parse(&["--bug", "99999"]).unwrap_err();
        assert!(
            err.to_string().starts_with("--bug: no bug `99999`"),
            "{err}"
        );
        let a = parse(&["--bug", "19138"]).expect("valid");
        let modes: Vec<Mode> = a.runs().iter().map(|r| r.mode()).collect();
        assert_eq!(modes, [Mode::Buggy, Mode::Fixed]);
    }
}

pub const SOAK_HELP: &str = "\
epochlab soak: run many seeds, each its own deterministic simulation, on worker threads; keep one result per
seed and group the failures by signature (the error with ids, epochs and values masked).

Each seed draws a random workload plan (tables, DML streams of inserts, updates and deletes, views and sinks
with arrangement backfill, foreground and background, drops and cancels while they backfill, throttles,
reschedules; a compaction group per job or RisingWave's static groups) with faults (node kills and restarts,
failed and delayed RPCs), runs it, lets the cluster settle and checks: actor state errors, the invariants
(commit order, tables unregistered while in use or touched after, registered tables), an oracle (every view
and sink equals its table; every table holds what its DML left), and stalls (no epoch committed for 180 s, as
when a compaction group's writes stop). `--scenario 14910` runs the directed scenario of `epochlab repro`
instead.

FLAGS (each at most once; `--flag VALUE` or `--flag=VALUE`)
  --seeds A..B              half-open range of seeds, default 0..100
  --jobs N                  1..=256 worker threads, default the number of cores
  --bug ID                  14910 (default) | 22384 | 16815 | 19138 | 15144 | reschedule-unpinned: the bug of
                            the catalogue (`epochlab bugs`) whose toggle --mode sets (every other bug's toggle
                            stays fixed); not with --plan (a plan file names its bug) or --replay
  --mode M                  buggy | fixed | purge-before-reset (14910 only), default fixed
  --scenario S              random (default): a random plan per seed; 14910: the directed scenario
  --kill-rate F             0..=1, random plans: the chance that a kill opportunity (every 5 to 15 s, and
                            after some drops) kills every node or each node with probability 0.5; default 0.5
  --background-ddl-rate F   0..=1, random plans: the chance that a view or sink is created in the background;
                            default 0.5
  --slt GLOB                run sqllogictest files (`epochlab slt --help`) instead of random plans: every file
                            matching GLOB (quote it: 'tests/slt/recovery/*.slt'), each in a fresh cluster, under each
                            seed; a seed fails when a file does, its detail naming the file, the record and the
                            `cargo xtask slt` command that replays that file alone
  --kill                    with --slt: kill nodes of every role the engine has (frontend, compute nodes,
                            compactor; never meta) as RisingWave's simulation runner does (then --kill-rate
                            defaults to 1.0 and --background-ddl-rate to 0.0); --kill-frontend, --kill-compute,
                            --kill-compactor: those roles only; --runner 2024|latest: see `epochlab slt --help`
  --plan FILE               run one plan file (as written by --shrink, or from tests/regressions/) in its own
                            mode unless --mode is given; compares with the file's expected outcome if it has one
  --shrink                  shrink the plan of --plan FILE, or of the lowest failing seed of the campaign:
                            remove and shorten steps while a run fails with the same signature; print the
                            smallest plan, write it to a plan file (shrunk-seed<N>-<mode>.json here, or
                            <name>.shrunk.json beside --plan's file) and print that path on the last line
  --shard K/N               run only the seeds with seed % N == K (several processes split one campaign)
  --results FILE            append one JSON line per seed; seeds of the same campaign already in FILE are
                            skipped, so an interrupted campaign resumes
  --duration SECS           1..=2592000: start no seed after this much wall time
  --json                    print each seed's JSON line on stdout (the triage goes to stderr)
  --replay FILE             rerun every seed of a results file (with its own settings, in --jobs threads) and
                            print `seed N: same` or `seed N: DIFFERS (outcome ..., digest ...)`, then
                            `replayed N: S same, D differ`; exit 0 when D is 0, else 1
  --metrics-addr HOST:PORT  serve Prometheus metrics at http://HOST:PORT/metrics while the seeds run (port 0
                            takes a free port; the address is printed on stderr); off by default:
                              epochlab_soak_seeds_total{mode,outcome}
                              epochlab_soak_failures_total{mode,signature} (64 signatures, then `other`)
                              epochlab_soak_seeds_in_progress{mode}
                              epochlab_soak_virtual_seconds_total{mode} (its rate: simulated s per wall s)
                              epochlab_soak_wall_seconds_total{mode} (wall time of the seeds, all workers)
                            and repro's engine metrics: counters and histograms summed over the seeds, gauges
                            per worker (label `worker`, 0..jobs-1) showing the worker's current seed
  --serve-for SECS          0..=86400; needs --metrics-addr: keep serving this long after the campaign ends
                            (default: not at all)
  --event-log FILE          write the event log of the one run (--plan FILE, or --seeds N..N+1): every
                            step, barrier, commit, unregister, recovery step and persist, with virtual time
  --otlp-endpoint URL       send the trace of every seed that fails or gets stuck to this OTLP/gRPC collector
                            (e.g. http://127.0.0.1:4317, Jaeger's): the worker reruns the seed (it replays
                            exactly) with the exporter, so passing seeds cost nothing; each trace's resource
                            names the seed, mode, scenario and signature
  --rows, --vnodes, --parallelism, --compute-nodes, --rate-limit, --barrier-latency-ms,
  --checkpoint-frequency, --persist-check
                            with --scenario 14910: its settings, as for `epochlab repro` (see its --help)
  -h, --help                this text

OUTCOMES per seed: passed (a directed run that could not set up the bug counts as passed, with its reason as
the detail), failed (kind actor_failure, invariant or oracle), stuck (no epoch committed for 180 virtual
seconds, or settling did not finish: the detail names the barriers in flight and the actors each node waits
for). Each line of --results and --json: seed, mode, scenario, outcome, kind, detail, signature, digest,
virtual_ms, wall_ms and replay (the command that reruns that seed alone).

EXIT STATUS
  0 every seed passed (--replay: every seed the same)
  1 a seed failed or got stuck (--replay: a seed differs; --shrink: the shrunk plan fails)
  2 bad input (a flag, a results or plan file that cannot be read or written, or a --metrics-addr that cannot
    be listened on, such as a port in use)

epochlab soak-report FILES...
  merges results files (e.g. the shards of a campaign): one row per campaign and seed, and each campaign's
  counts and failure signatures; exit 0 when every seed passed, 1 otherwise, 2 when a file cannot be read or
  holds a line that is not a results row";

/// Parse `epochlab soak`'s arguments.
pub fn parse_soak(argv: &[String]) -> Result<Invocation, ArgError> {
    let mut repro = ReproArgs::default();
    let mut soak = crate::soak::SoakArgs::default();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    // The values of `--slt` and its rates, read once every flag is known (their defaults differ).
    let mut slt_values: BTreeMap<&'static str, String> = BTreeMap::new();
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(Invocation::SoakHelp);
        }
        let (name, inline) = split_inline(arg);
        let known = SOAK_FLAGS.iter().find(|f| **f == name).copied();
        let flag = known.ok_or_else(|| unknown(arg))?;
        if !seen.insert(flag.to_string()) {
            return Err(ArgError::Repeated(flag));
        }
        let switch = flag == "--json"
            || flag == "--shrink"
            || flag.starts_with("--kill") && flag != "--kill-rate";
        let value = match (switch, inline) {
            (true, None) => "",
            (true, Some(_)) => return Err(ArgError::TakesNoValue(flag)),
            (false, Some(v)) => v,
            (false, None) => it.next().ok_or(ArgError::MissingValue(flag))?.as_str(),
        };
        if matches!(
            flag,
            "--slt"
                | "--kill"
                | "--kill-frontend"
                | "--kill-compute"
                | "--kill-compactor"
                | "--runner"
                | "--kill-rate"
                | "--background-ddl-rate"
        ) {
            slt_values.insert(flag, value.to_string());
        }
        set_soak(&mut soak, &mut repro, flag, value)?;
    }
    if seen.contains("--slt") {
        soak.scenario = crate::slt::soak_scenario(&slt_values, soak.params.bug, soak.params.mode)?;
    } else if let Some(flag) = [
        "--kill",
        "--kill-frontend",
        "--kill-compute",
        "--kill-compactor",
        "--runner",
    ]
    .into_iter()
    .find(|f| seen.contains(*f))
    {
        return Err(ArgError::Pointless {
            flag,
            reason: "needs --slt (random plans draw their kills with --kill-rate)",
        });
    }
    soak.params = ReproParams {
        bug: soak.params.bug,
        mode: soak.params.mode,
        ..repro.params
    };
    // --metrics-addr and --serve-for are read as repro reads them (`ReproArgs::set`).
    soak.metrics_addr = repro.metrics_addr;
    soak.serve_for = repro.serve_for;
    soak.otlp_endpoint = repro.otlp_endpoint.clone();
    if soak.serve_for.is_some() && soak.metrics_addr.is_none() {
        return Err(ArgError::Pointless {
            flag: "--serve-for",
            reason: "needs --metrics-addr: it keeps serving the metrics after the campaign ends",
        });
    }
    check_soak(&soak, &seen)?;
    Ok(Invocation::Soak(Box::new(soak)))
}

/// The flags that configure the directed scenario only.
const DIRECTED_FLAGS: [&str; 8] = [
    "--rows",
    "--vnodes",
    "--parallelism",
    "--compute-nodes",
    "--rate-limit",
    "--barrier-latency-ms",
    "--checkpoint-frequency",
    "--persist-check",
];

/// Flags that exclude each other or do nothing together.
fn check_soak(soak: &crate::soak::SoakArgs, seen: &BTreeSet<String>) -> Result<(), ArgError> {
    use crate::soak::Scenario;
    let given = |f: &str| seen.contains(f);
    for other in ["--seeds", "--shard", "--scenario", "--replay", "--results"] {
        if given("--plan") && given(other) {
            let reason = "--plan runs one plan file, not a campaign";
            return Err(exclusive("--plan", other, reason));
        }
    }
    let one_run = given("--plan") || soak.seeds.end - soak.seeds.start == 1;
    if given("--event-log") && (!one_run || given("--replay") || given("--shrink")) {
        return Err(ArgError::Pointless {
            flag: "--event-log",
            reason: "writes the event log of one run: give --plan FILE or --seeds N..N+1",
        });
    }
    for other in ["--kill-rate", "--background-ddl-rate"] {
        if given("--plan") && given(other) {
            return Err(exclusive("--plan", other, "a plan file is drawn already"));
        }
    }
    if given("--plan") && given("--bug") {
        return Err(exclusive("--plan", "--bug", "a plan file names its bug"));
    }
    if !given("--plan") {
        BugMode::new(soak.params.bug, soak.params.mode).map_err(ArgError::NotAModeOfTheBug)?;
    }
    let replay_excludes = [
        "--bug",
        "--shrink",
        "--seeds",
        "--shard",
        "--results",
        "--mode",
        "--scenario",
        "--kill-rate",
        "--background-ddl-rate",
    ];
    for other in replay_excludes {
        if given("--replay") && given(other) {
            let reason = "--replay reruns each row of a results file with that row's own settings";
            return Err(exclusive("--replay", other, reason));
        }
    }
    match &soak.scenario {
        Scenario::Directed => {
            if soak.params.bug != BugId::Rw14910 {
                let reason =
                    "the directed scenario of a soak is #14910's; other bugs soak random plans";
                return Err(exclusive("--bug", "--scenario 14910", reason));
            }
            for flag in ["--kill-rate", "--background-ddl-rate", "--shrink"] {
                if given(flag) {
                    let reason = "applies to random plans (--scenario random or --plan)";
                    return Err(exclusive(flag, "--scenario 14910", reason));
                }
            }
        }
        Scenario::Random(_) => {
            if let Some(flag) = DIRECTED_FLAGS.iter().find(|f| given(f)) {
                return Err(ArgError::Pointless {
                    flag,
                    reason: "sets the directed scenario: it needs --scenario 14910",
                });
            }
        }
        Scenario::Slt(_) => {
            for other in ["--scenario", "--plan", "--shrink", "--replay"] {
                if given(other) {
                    let reason = "--slt runs sqllogictest files, not plans";
                    return Err(exclusive("--slt", other, reason));
                }
            }
            if let Some(flag) = DIRECTED_FLAGS.iter().find(|f| given(f)) {
                return Err(ArgError::Pointless {
                    flag,
                    reason: "sets the directed scenario: it needs --scenario 14910",
                });
            }
        }
    }
    Ok(())
}

fn exclusive(a: &'static str, b: &str, reason: &'static str) -> ArgError {
    let b = SOAK_FLAGS
        .iter()
        .chain(["--scenario 14910"].iter())
        .find(|f| **f == b)
        .copied()
        .unwrap_or("another flag");
    ArgError::Exclusive { a, b, reason }
}

const SOAK_FLAGS: [&str; 32] = [
    "--bug",
    "--slt",
    "--kill",
    "--kill-frontend",
    "--kill-compute",
    "--kill-compactor",
    "--runner",
    "--replay",
    "--plan",
    "--shrink",
    "--kill-rate",
    "--background-ddl-rate",
    "--seeds",
    "--jobs",
    "--mode",
    "--scenario",
    "--shard",
    "--results",
    "--duration",
    "--json",
    "--rows",
    "--vnodes",
    "--parallelism",
    "--compute-nodes",
    "--rate-limit",
    "--barrier-latency-ms",
    "--checkpoint-frequency",
    "--persist-check",
    "--metrics-addr",
    "--serve-for",
    "--otlp-endpoint",
    "--event-log",
];

fn set_soak(
    soak: &mut crate::soak::SoakArgs,
    repro: &mut ReproArgs,
    flag: &'static str,
    v: &str,
) -> Result<(), ArgError> {
    match flag {
        "--seeds" => soak.seeds = seed_range(v)?,
        "--jobs" => soak.jobs = number(Flag::Seed, v, JOBS).map_err(|e| rename(e, flag))?,
        "--bug" if v == "all" => return Err(ArgError::SoakBugAll),
        "--bug" => soak.params.bug = v.parse().map_err(ArgError::NotABug)?,
        "--mode" => {
            soak.params.mode = v.parse().map_err(|_| ArgError::NotASingleMode {
                command: "a soak",
                value: v.to_string(),
            })?;
            soak.mode_given = true;
        }
        "--scenario" => {
            match v {
                "14910" => soak.scenario = crate::soak::Scenario::Directed,
                // The default: rates given before it stay.
                "random" => {}
                _ => return Err(ArgError::NotAScenario(v.to_string())),
            }
        }
        "--kill-rate" => set_rate(soak, flag, v, |g, r| g.kill_rate = r)?,
        "--background-ddl-rate" => set_rate(soak, flag, v, |g, r| g.background_ddl_rate = r)?,
        "--plan" if v.is_empty() => return Err(ArgError::MissingValue(flag)),
        "--plan" => soak.plan = Some(PathBuf::from(v)),
        "--event-log" if v.is_empty() => return Err(ArgError::MissingValue(flag)),
        "--event-log" => soak.event_log = Some(PathBuf::from(v)),
        "--shrink" => soak.shrink = true,
        "--shard" => soak.shard = Some(shard(v)?),
        "--results" if v.is_empty() => return Err(ArgError::MissingValue(flag)),
        "--results" => soak.results = Some(PathBuf::from(v)),
        "--duration" => {
            let secs: u64 = number(Flag::Seed, v, DURATION).map_err(|e| rename(e, flag))?;
            soak.duration = Some(Duration::from_secs(secs));
        }
        "--json" => soak.json = true,
        "--replay" if v.is_empty() => return Err(ArgError::MissingValue(flag)),
        "--replay" => soak.replay = Some(PathBuf::from(v)),
        // Read after every flag (`crate::slt::soak_scenario`).
        "--slt" if v.is_empty() => return Err(ArgError::MissingValue(flag)),
        "--slt" | "--kill" | "--kill-frontend" | "--kill-compute" | "--kill-compactor"
        | "--runner" => {}
        repro_flag => {
            let f = Flag::from_name(repro_flag).expect("a repro flag");
            repro.set(f, v)?;
        }
    }
    Ok(())
}

/// A probability flag of random plans (with `--scenario 14910`, `check_soak` refuses it).
fn set_rate(
    soak: &mut crate::soak::SoakArgs,
    flag: &'static str,
    v: &str,
    set: impl Fn(&mut GenParams, f64),
) -> Result<(), ArgError> {
    let bad = || ArgError::NotAProbability {
        flag,
        value: v.to_string(),
    };
    let rate: f64 = v.parse().map_err(|_| bad())?;
    if !(0.0..=1.0).contains(&rate) {
        return Err(bad());
    }
    if let crate::soak::Scenario::Random(g) = &mut soak.scenario {
        set(g, rate);
    }
    Ok(())
}

/// An error about another flag's value, renamed to `flag`.
/// A whole number in `range` for `flag`.
pub(crate) fn number_flag<T: TryFrom<u64>>(
    flag: &'static str,
    value: &str,
    range: Range,
) -> Result<T, ArgError> {
    number(Flag::Seed, value, range).map_err(|e| rename(e, flag))
}

fn rename(e: ArgError, flag: &'static str) -> ArgError {
    match e {
        ArgError::NotANumber { range, value, .. } => ArgError::NotANumber { flag, range, value },
        ArgError::OutOfRange { range, value, .. } => ArgError::OutOfRange { flag, range, value },
        other => other,
    }
}

pub(crate) fn seed_range(v: &str) -> Result<std::ops::Range<u64>, ArgError> {
    let bad = || ArgError::NotASeedRange(v.to_string());
    let (a, b) = v.split_once("..").ok_or_else(bad)?;
    let (a, b): (u64, u64) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    if a >= b {
        return Err(bad());
    }
    Ok(a..b)
}

fn shard(v: &str) -> Result<(u64, u64), ArgError> {
    let bad = || ArgError::NotAShard(v.to_string());
    let (k, n) = v.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) = (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if n == 0 || k >= n {
        return Err(bad());
    }
    Ok((k, n))
}

#[cfg(test)]
mod soak_tests {
    use super::*;

    fn soak(args: &[&str]) -> Result<crate::soak::SoakArgs, ArgError> {
        let argv: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse_soak(&argv)? {
            Invocation::Soak(a) => Ok(*a),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn soak_flags_parse_and_bad_ones_are_one_line_errors() {
        let a = soak(&[
            "--seeds",
            "5..9",
            "--jobs=2",
            "--mode",
            "buggy",
            "--scenario",
            "14910",
            "--rows",
            "50",
        ])
        .unwrap();
        assert_eq!(
            (a.seeds, a.jobs, a.params.mode, a.params.rows),
            (5..9, 2, Mode::Buggy, 50)
        );
        assert_eq!(soak(&[]).unwrap().params.mode, Mode::Fixed);
        assert_eq!(soak(&["--shard", "1/4"]).unwrap().shard, Some((1, 4)));
        for bad in [
            &["--seeds", "9..5"][..],
            &["--seeds", "x"],
            &["--shard", "4/4"],
            &["--mode", "all"],
            &["--scenario", "14911"],
            &["--rows", "50"],
            &["--kill-rate", "2"],
            &["--kill-rate", "0.5", "--scenario", "14910"],
            &["--shrink", "--scenario", "14910"],
            &["--plan", "p.json", "--seeds", "1..2"],
            &["--replay", "r.jsonl", "--shrink"],
            &["--shrink=yes"],
            &["--jobs", "0"],
            &["--json=yes"],
            &["--seed", "1"],
            &["--rows", "0"],
            &["--jobs", "2", "--jobs", "3"],
        ] {
            let e = soak(bad).unwrap_err().to_string();
            assert!(!e.contains('\n'), "{bad:?}: {e}");
        }
        assert_eq!(
            soak(&["--jobs", "0"]).unwrap_err().to_string(),
            "--jobs must be in 1..=256, not 0"
        );
    }

    #[test]
    fn metrics_flags_are_read_as_repro_reads_them() {
        let a = soak(&["--metrics-addr", "127.0.0.1:9464", "--serve-for=30"]).unwrap();
        assert_eq!(a.metrics_addr, Some("127.0.0.1:9464".parse().unwrap()));
        assert_eq!(a.serve_for, Some(Duration::from_secs(30)));
        let a = soak(&["--metrics-addr=127.0.0.1:0"]).unwrap();
        assert_eq!(
            (a.metrics_addr.map(|a| a.port()), a.serve_for),
            (Some(0), None)
        );
        assert_eq!(soak(&[]).unwrap().metrics_addr, None);
        let cases: [(&[&str], &str); 4] = [
            (
                &["--serve-for", "5"],
                "--serve-for needs --metrics-addr: it keeps serving the metrics after the campaign ends",
            ),
            (
                &["--metrics-addr", "localhost"],
                "--metrics-addr takes HOST:PORT, such as 127.0.0.1:9464, not `localhost`",
            ),
            (
                &["--metrics-addr", "127.0.0.1:0", "--serve-for", "86401"],
                "--serve-for must be in 0..=86400, not 86401",
            ),
            (
                &[
                    "--metrics-addr",
                    "127.0.0.1:1",
                    "--metrics-addr=127.0.0.1:2",
                ],
                "--metrics-addr is given twice: give each flag at most once",
            ),
        ];
        for (args, want) in cases {
            assert_eq!(soak(args).unwrap_err().to_string(), want, "{args:?}");
        }
    }

    #[test]
    fn random_plan_flags_parse() {
        let a = soak(&["--kill-rate", "0.25", "--background-ddl-rate=1", "--shrink"]).unwrap();
        let crate::soak::Scenario::Random(g) = &a.scenario else {
            panic!("random is the default")
        };
        assert_eq!(
            (g.kill_rate, g.background_ddl_rate, a.shrink),
            (0.25, 1.0, true)
        );
        let a = soak(&["--plan", "p.json", "--mode", "buggy"]).unwrap();
        assert_eq!(
            (a.plan, a.mode_given),
            (Some(PathBuf::from("p.json")), true)
        );
        assert_eq!(
            soak(&["--scenario", "x"]).unwrap_err().to_string(),
            "--scenario takes random or 14910, not `x`"
        );
    }

    #[test]
    fn soak_help_names_every_flag() {
        for flag in SOAK_FLAGS {
            assert!(SOAK_HELP.contains(flag), "{flag}");
        }
        assert!(SOAK_HELP.contains(&format!("{}..={}", SERVE_FOR.lo, SERVE_FOR.hi)));
    }
}
