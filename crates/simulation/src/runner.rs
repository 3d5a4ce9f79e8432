//! sqllogictest files run in a simulated cluster, as RisingWave's simulation runs its `.slt` files
//! (`src/tests/simulation/src/slt.rs` and `cluster.rs` at f21fb9b7915), and judged by the run's checkers: one
//! file alone ([`run_file`]) or a step's files in one cluster ([`run_files`], `runner/step.rs`).
//!
//! Without `kill`, each record runs once through the `sqllogictest` runner and the first that fails ends the
//! file. With `kill`, the runner behaves as RisingWave's ([`RunnerEra::R2024`], the default; see
//! [`RunnerEra`] for what today's runner does differently):
//! - a file of `KILL_IGNORE_FILES` is not run at all;
//! - every record the parser returns (comments, blank lines, control records and includes too) gets the
//!   treatment below; each CREATE MATERIALIZED VIEW statement is preceded by `SET BACKGROUND_DDL=<draw>`,
//!   the draw `true` with probability `background_ddl_rate` (so `false` at 0), from an rng of its own seeded
//!   by the seed alone (RisingWave's `ChaChaRng::seed_from_u64(seed)`);
//! - DML, `FLUSH`, `ALTER` and `CREATE TABLE AS` are not killed, and are retried (1, 2, 4, ... s apart, 5
//!   times) only on `no reader for dml`;
//! - any other record draws, with probability `kill_rate`, a killer: it waits U(0, 1 s), then per role
//!   (frontend, compute, compactor: [`KillRoles`]; meta only with `--kill-meta`) kills none, every or each (p = 0.5)
//!   node of the role, each after U(0, 1 s), restarts each U(0, 1 s) later (20 s later one time in ten, past
//!   the heartbeat timeout), then waits 15 s; the next record starts after it;
//! - a failed record is retried up to 5 times, 2, 4, 8, 16, 32 s apart; a retried CREATE may meet `exists`
//!   and a retried DROP `not found` (both `Catalog error`) without failing; a retried CREATE MATERIALIZED VIEW
//!   created in the background that meets `table is in creating procedure` runs `WAIT` and checks the view;
//!   one created in the background is followed by `WAIT` too.
//!
//! An actor failure on its state (a missing row, a diverged progress row) fails the file after the record
//! during which it happened. When every record has passed, the run settles and the checkers judge it: I2 (the
//! zombie-access detector, and unregister-in-use in the modes that promise it), I3, I1 and I4.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use epochlab_common::{SimRng, TableId, event};
use epochlab_meta::{JobState, RelationKind};
use epochlab_sim::checkers::Checkers;
use epochlab_sim::config::{Topology, cluster_config_for};
use epochlab_sim::report::stuck_report;
use epochlab_sim::workload::FailureKind;
use epochlab_sim::{BugMode, Cluster, Outcome, TaskPanic, Violation};
use sqllogictest::{
    Control, DefaultColumnType, ExpectedError, ParseErrorKind, QueryExpect, Record,
    StatementExpect, TestError, TestErrorKind,
};

use crate::db::{SimDb, UnsupportedProbe};
use epochlab_frontend::catalog::CatalogError;
use epochlab_frontend::error::{CatalogProblem, SqlError};
use epochlab_frontend::frontend::Engine;

pub mod backfill;
mod kill;
mod step;

use kill::kill_and_restart;
pub use kill::{KillRoles, KillTarget, PlannedKill, plan_kills};
pub use step::{StepReport, run_file, run_files};

/// Retries of a failed record under kills (RisingWave's `max_retry`).
const MAX_RETRY: usize = 5;

/// Settling after the last record may take this long.
const SETTLE_BUDGET: Duration = Duration::from_secs(300);

/// How one file runs.
#[derive(Clone, Debug, PartialEq)]
pub struct SltParams {
    pub seed: u64,
    /// The bug whose toggle the mode sets (every other bug's toggle stays at its fix).
    pub run: BugMode,
    /// Kill nodes around records, as RisingWave's simulation runner does (the roles: `kill_roles`).
    pub kill: bool,
    /// With `kill`: the roles whose nodes a killer may kill.
    pub kill_roles: KillRoles,
    /// Which RisingWave runner the kill mode follows.
    pub runner: RunnerEra,
    /// With `kill`: the probability that a record gets a killer.
    pub kill_rate: f64,
    /// The share of CREATE MATERIALIZED VIEW statements run as background DDL.
    pub background_ddl_rate: f64,
    /// The cluster's nodes; a job's parallelism when the file sets none (`SET STREAMING_PARALLELISM`) is its
    /// compute nodes' cores.
    pub topology: Topology,
    pub vnodes: u32,
    pub barrier_interval_ms: u64,
    pub checkpoint_frequency: u32,
    /// RisingWave's debug-build checks (see `epochlab repro --persist-check`).
    pub persist_check: bool,
    /// Meta dies right after this commit of the first DDL to make it and restarts from its store after
    /// U(0, 1 s) (`Cluster::arm_meta_crash`); the records run through the kill runner, retried as under
    /// kills (killed nodes only with `kill`).
    pub crash_meta_at: Option<epochlab_meta::CrashPoint>,
}

impl SltParams {
    /// Whether records go through the kill runner, retried as RisingWave's runner retried them under
    /// kills: with kills, or with a crash point.
    pub fn retries_records(&self) -> bool {
        self.kill || self.crash_meta_at.is_some()
    }
}

impl Default for SltParams {
    fn default() -> Self {
        Self {
            seed: 0,
            run: BugMode::of_14910(epochlab_sim::Mode::Fixed),
            kill: false,
            kill_roles: KillRoles::ALL,
            runner: RunnerEra::R2024,
            kill_rate: 1.0,
            background_ddl_rate: 0.0,
            topology: Topology::SINGLE_CORE,
            vnodes: 256,
            barrier_interval_ms: 1000,
            checkpoint_frequency: 1,
            persist_check: true,
            crash_meta_at: None,
        }
    }
}

/// Which RisingWave simulation runner `kill` follows. One place decides each difference.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RunnerEra {
    /// `src/tests/simulation/src/slt.rs` at f21fb9b7915 (2024), what the seed's CI ran, against the engine of
    /// that time: a backfill's rate limit is kept by a flow-control executor after it
    /// (`epochlab_sim::config::with_flow_control`).
    #[default]
    R2024,
    /// Today's runner, for the differences modelled here: `SET BACKGROUND_DDL` only at a rate above 0
    /// (RisingWave #20681) and never after the file set it to `true` itself (a `SET BACKGROUND_DDL` is then
    /// allowed at any rate), backoff capped at 10 s, and two more `KILL_IGNORE_FILES`.
    Latest,
}

impl RunnerEra {
    pub fn as_str(self) -> &'static str {
        match self {
            RunnerEra::R2024 => "2024",
            RunnerEra::Latest => "latest",
        }
    }

    /// Files not run at all under kills (RisingWave's `KILL_IGNORE_FILES`).
    pub fn kill_ignore_files(self) -> &'static [&'static str] {
        const R2024: &[&str] = &[
            "tpch_snapshot.slt",
            "tpch_upstream.slt",
            "search_path.slt",
            "transaction/now.slt",
            "transaction/read_only_multi_conn.slt",
            "transaction/read_only.slt",
            "transaction/tolerance.slt",
        ];
        const LATEST: &[&str] = &[
            "tpch_snapshot.slt",
            "tpch_upstream.slt",
            "search_path.slt",
            "transaction/now.slt",
            "transaction/read_only_multi_conn.slt",
            "transaction/read_only.slt",
            "transaction/tolerance.slt",
            "transaction/cursor.slt",
            "transaction/cursor_multi_conn.slt",
        ];
        match self {
            RunnerEra::R2024 => R2024,
            RunnerEra::Latest => LATEST,
        }
    }

    /// Whether a file is skipped under kills: RisingWave matched with `Path::ends_with`, whole components.
    pub fn kill_ignored(self, path: &Path) -> bool {
        self.kill_ignore_files().iter().any(|f| path.ends_with(f))
    }

    /// Whether a CREATE MATERIALIZED VIEW gets `SET BACKGROUND_DDL=<draw>` first.
    fn sets_background_ddl(self, rate: f64, file_set_it: bool) -> bool {
        match self {
            RunnerEra::R2024 => true,
            RunnerEra::Latest => rate > 0.0 && !file_set_it,
        }
    }

    /// Whether a file's own `SET BACKGROUND_DDL` is refused at a rate above 0 (2024: it would be overridden).
    fn refuses_file_background_ddl(self) -> bool {
        self == RunnerEra::R2024
    }

    /// The wait before the `i`-th retry (also after the `i`-th failure of a record that is not killed).
    fn backoff(self, i: usize) -> Duration {
        let secs = 1u64 << i.min(16);
        match self {
            RunnerEra::R2024 => Duration::from_secs(secs),
            RunnerEra::Latest => Duration::from_secs(secs.min(10)),
        }
    }
}

/// A `--runner` value that names no era.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` (expected 2024 or latest)")]
pub struct UnknownRunnerEra(pub String);

impl std::str::FromStr for RunnerEra {
    type Err = UnknownRunnerEra;
    fn from_str(s: &str) -> Result<Self, UnknownRunnerEra> {
        match s {
            "2024" => Ok(RunnerEra::R2024),
            "latest" => Ok(RunnerEra::Latest),
            other => Err(UnknownRunnerEra(other.to_string())),
        }
    }
}

/// A file that cannot run: bad input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SltError {
    #[error("{0}: no such file")]
    Missing(String),
    #[error("{path}: cannot read: {why}")]
    Unreadable { path: String, why: String },
    /// A malformed record: where and why.
    #[error("{at}: {why}")]
    Malformed { at: String, why: String },
    /// An `include` whose pattern (relative to the including file) matches no file.
    #[error("{at}: include {pattern}: no file matches")]
    Include { at: String, pattern: String },
    /// A record of a kind the runner does not run: a `system` command (nothing runs a process here), or
    /// `control substitution on` (it reads the environment and the wall clock).
    #[error("{at}: unsupported: {construct}")]
    Unsupported { at: String, construct: &'static str },
}

/// Why a record failed, read from the type of what came back (never from its text): what `epochlab corpus`
/// counts the files by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailureCause {
    /// The front end refused a construct outside its subset ([`SqlError::Unsupported`]): the construct. A
    /// record expecting any error (`statement error` without a message) that got this one fails with it too.
    Unsupported(String),
    /// The text is not SQL the parser reads ([`SqlError::Parse`]).
    Parse,
    /// A query's rows (or columns) differ from the expected ones.
    WrongResult,
    /// The statement failed with another error than the expected one.
    WrongError,
    /// The statement failed where it was expected to succeed: the kind of the engine's error
    /// ([`SqlError::kind`]), or `other`.
    UnexpectedError(&'static str),
    /// The statement succeeded where it was expected to fail.
    UnexpectedSuccess,
    /// `statement count N` affected another number of rows.
    WrongCount,
    /// An actor failed during the record.
    ActorFailure,
    /// A view created in the background had not finished after `WAIT` (the kill runner's check).
    Background,
    /// Anything else the `sqllogictest` runner reports.
    Other,
}

impl FailureCause {
    /// What blocks a file whose first failure this is, in a few words (`unsupported: JOIN`, `wrong result`).
    pub fn blocker(&self) -> String {
        let what = match self {
            FailureCause::Unsupported(construct) => return format!("unsupported: {construct}"),
            FailureCause::Parse => "sql parser error",
            FailureCause::WrongResult => "wrong result",
            FailureCause::WrongError => "wrong error",
            FailureCause::UnexpectedError(kind) => return format!("unexpected error: {kind}"),
            FailureCause::UnexpectedSuccess => "expected an error, got success",
            FailureCause::WrongCount => "wrong row count",
            FailureCause::ActorFailure => "actor failure",
            FailureCause::Background => "background DDL did not finish",
            FailureCause::Other => "other",
        };
        what.to_string()
    }

    /// The cause of a `sqllogictest` runner's error: the engine's error by its type, else the runner's kind.
    fn of(kind: &TestErrorKind) -> Self {
        let engine_error = match kind {
            TestErrorKind::Fail { err, .. } | TestErrorKind::ErrorMismatch { err, .. } => {
                err.downcast_ref::<SqlError>()
            }
            _ => None,
        };
        match (kind, engine_error) {
            (_, Some(SqlError::Unsupported(construct))) => {
                FailureCause::Unsupported(construct.clone())
            }
            (_, Some(SqlError::Parse(_))) => FailureCause::Parse,
            (TestErrorKind::Fail { .. }, e) => {
                FailureCause::UnexpectedError(e.map_or("other", SqlError::kind))
            }
            (TestErrorKind::ErrorMismatch { .. }, _) => FailureCause::WrongError,
            (TestErrorKind::Ok { .. }, _) => FailureCause::UnexpectedSuccess,
            (TestErrorKind::StatementResultMismatch { .. }, _) => FailureCause::WrongCount,
            (
                TestErrorKind::QueryResultMismatch { .. }
                | TestErrorKind::QueryResultColumnsMismatch { .. },
                _,
            ) => FailureCause::WrongResult,
            _ => FailureCause::Other,
        }
    }
}

/// The record that failed: where, what, what was expected and what came.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordFailure {
    pub file: String,
    pub line: u32,
    pub sql: String,
    pub expected: String,
    pub actual: String,
    pub cause: FailureCause,
}

impl std::fmt::Display for RecordFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {}\n  expected: {}\n  actual:   {}",
            self.file,
            self.line,
            self.sql.trim(),
            self.expected.trim_end().replace('\n', "\n            "),
            self.actual.trim_end().replace('\n', "\n            ")
        )
    }
}

/// How a file's run ended.
#[derive(Clone, Debug)]
pub struct FileReport {
    pub file: String,
    pub outcome: Outcome,
    /// For a failure: `record` (a record's result), `actor_failure`, `invariant`, `panic` (a task panicked).
    pub kind: Option<&'static str>,
    /// What failed or is stuck, in one line.
    pub error: Option<String>,
    /// The record that failed, or during which an actor failed.
    pub failure: Option<RecordFailure>,
    pub violations: Vec<Violation>,
    /// Records run (statements and queries), kills (nodes killed), retries.
    pub records: u32,
    /// Killers drawn (under kills, each record but DML, FLUSH, ALTER and CREATE TABLE AS may draw one).
    pub killers: u32,
    pub kills: u32,
    pub retries: u32,
    pub recoveries: u64,
    /// Times another meta became leader (`--meta-nodes` above 1).
    pub meta_leader_changes: u64,
    pub epochs: u64,
    /// What the front end accepted without doing (ignored options and settings).
    pub notes: Vec<String>,
    /// `meta crashed at POINT: SQL`, for each crash point meta died at (`SltParams::crash_meta_at`).
    pub meta_crashes: Vec<String>,
    /// Not run: under kills, a file of RisingWave's `KILL_IGNORE_FILES` (it passes, as in RisingWave).
    pub skipped: bool,
    /// The panic that ended the run (kind `panic`).
    pub panic: Option<TaskPanic>,
}

impl FileReport {
    fn new(file: &str) -> Self {
        Self {
            file: file.to_string(),
            outcome: Outcome::Passed,
            kind: None,
            error: None,
            failure: None,
            violations: Vec::new(),
            records: 0,
            killers: 0,
            kills: 0,
            retries: 0,
            recoveries: 0,
            meta_leader_changes: 0,
            epochs: 0,
            notes: Vec::new(),
            meta_crashes: Vec::new(),
            skipped: false,
            panic: None,
        }
    }

    /// A run a task's panic ended: `failed`, kind `panic`, its error the message and the location.
    fn panicked(file: &str, p: TaskPanic) -> Self {
        let mut r = Self::new(file);
        r.outcome = Outcome::Failed;
        r.kind = Some(FailureKind::Panic.as_str());
        r.error = Some(p.to_string());
        r.panic = Some(p);
        r
    }

    /// Under kills, a file of `KILL_IGNORE_FILES`: not run, and it passes (as in RisingWave).
    fn skipped(file: &str) -> Self {
        let mut r = Self::new(file);
        r.skipped = true;
        r
    }

    /// A file that could not be read or parsed: `failed`, kind `file`.
    fn bad(file: &str, e: &SltError) -> Self {
        let mut r = Self::new(file);
        r.outcome = Outcome::Failed;
        r.kind = Some("file");
        r.error = Some(e.to_string());
        r
    }

    /// A run that ended before its verdict: stuck at its virtual time limit, or failed by a task's panic.
    pub(super) fn ended_early(file: &str, e: epochlab_sim::runtime::RunError) -> Self {
        use epochlab_sim::runtime::RunError;
        match e {
            RunError::TimedOut(t) => Self::stuck(
                file,
                format!(
                    "the run exceeded its virtual time limit of {} s; last events: {}",
                    t.limit.as_secs(),
                    t.tail.join(" | ")
                ),
            ),
            RunError::Panicked(p) => Self::panicked(file, p),
        }
    }

    fn stuck(file: &str, what: String) -> Self {
        let mut r = Self::new(file);
        r.outcome = Outcome::Stuck;
        r.error = Some(what);
        r
    }

    /// The signature of a failure or a stuck run: its kind and its error with numbers masked.
    pub fn signature(&self) -> Option<String> {
        let error = self.error.as_deref()?;
        match self.outcome {
            Outcome::Failed => Some(format!(
                "{}: {}",
                self.kind.unwrap_or("record"),
                epochlab_sim::workload::mask(error)
            )),
            Outcome::Stuck => Some(epochlab_sim::workload::stuck_signature(error)),
            _ => None,
        }
    }
}

/// The records of `path`, or why they cannot run.
pub fn parse_file(path: &Path, p: &SltParams) -> Result<Vec<Record<DefaultColumnType>>, SltError> {
    let shown = path.display().to_string();
    if !path.exists() {
        return Err(SltError::Missing(shown));
    }
    if path.to_str().is_none() {
        return Err(SltError::Unreadable {
            path: shown,
            why: "the path is not UTF-8".into(),
        });
    }
    check_includes(path, 0)?;
    let records = sqllogictest::parse_file::<DefaultColumnType>(path).map_err(|e| {
        let at = e.location().to_string().replace('\n', " ");
        match e.kind() {
            ParseErrorKind::EmptyIncludeFile(pattern) => SltError::Include { at, pattern },
            kind => SltError::Malformed {
                at,
                why: format!("parse error: {kind}"),
            },
        }
    })?;
    for r in &records {
        match r {
            Record::System { loc, .. } => {
                return Err(SltError::Unsupported {
                    at: loc.to_string(),
                    construct: "system command",
                });
            }
            Record::Control(Control::Substitution(true)) => {
                return Err(SltError::Unsupported {
                    at: path.display().to_string(),
                    construct: "control substitution",
                });
            }
            Record::Statement { loc, sql, .. } | Record::Query { loc, sql, .. }
                if p.kill
                    && p.runner.refuses_file_background_ddl()
                    && p.background_ddl_rate > 0.0
                    && matches!(SqlCmd::of(sql), SqlCmd::SetBackgroundDdl { .. }) =>
            {
                return Err(SltError::Malformed {
                    at: loc.to_string(),
                    why: "SET BACKGROUND_DDL cannot run with --background-ddl-rate > 0 (the runner sets it)"
                        .into(),
                });
            }
            _ => {}
        }
    }
    Ok(records)
}

/// Includes nested deeper than this are refused (a file that includes itself would never end).
const MAX_INCLUDE_DEPTH: usize = 16;

/// `path` and the files its `include` lines reach, followed as the `sqllogictest` parser follows them (the
/// pattern joined to the including file's folder, globbed), checked before it runs: a file that is not text
/// (the parser would panic on it) or an include chain deeper than [`MAX_INCLUDE_DEPTH`] (it would recurse
/// without end) is bad input with its file and line. A pattern that matches nothing is left to the parser.
fn check_includes(path: &Path, depth: usize) -> Result<(), SltError> {
    let text = std::fs::read_to_string(path).map_err(|e| SltError::Unreadable {
        path: path.display().to_string(),
        why: e.to_string(),
    })?;
    for (i, line) in text.lines().enumerate() {
        let ["include", pattern] = line.split_whitespace().collect::<Vec<_>>()[..] else {
            continue;
        };
        let at = || format!("{}:{}", path.display(), i + 1);
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(SltError::Malformed {
                at: at(),
                why: format!(
                    "include {pattern}: includes nested deeper than {MAX_INCLUDE_DEPTH} (a file that includes itself?)"
                ),
            });
        }
        for included in include_matches(path, pattern) {
            check_includes(&included, depth + 1)?;
        }
    }
    Ok(())
}

/// The files an `include {pattern}` line of `path` reaches: the pattern joined to `path`'s folder, globbed.
fn include_matches(path: &Path, pattern: &str) -> Vec<PathBuf> {
    let mut full = path.to_path_buf();
    full.pop();
    full.push(pattern);
    glob::glob(&full.to_string_lossy())
        .map(|m| m.flatten().collect())
        .unwrap_or_default()
}

/// The files `path`'s own `include` lines reach (one level; none when it cannot be read).
pub fn included_files(path: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(
            |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["include", pattern] => Some(include_matches(path, pattern)),
                _ => None,
            },
        )
        .flatten()
        .collect()
}

/// Why a record failed: the `sqllogictest` runner's verdict, or the kill runner's own.
enum RecordError {
    Test(TestError),
    /// A background CREATE whose view did not finish (RisingWave's `wait_background_mv_finished`).
    Background(BackgroundError),
    /// A record expecting any error met an `unsupported` one: the construct.
    Unsupported(String),
}

/// Why a view created in the background was not there after `WAIT`.
#[derive(Debug, thiserror::Error)]
enum BackgroundError {
    #[error("WAIT failed: {0}")]
    Wait(SqlError),
    #[error("materialized view {0} is still being created after WAIT")]
    StillCreating(String),
    #[error("materialized view {0} does not exist after WAIT")]
    Gone(String),
}

impl From<TestError> for RecordError {
    fn from(e: TestError) -> Self {
        RecordError::Test(e)
    }
}

type Runner = sqllogictest::Runner<
    SimDb,
    Box<dyn FnMut() -> futures::future::Ready<Result<SimDb, SqlError>> + Send>,
>;

/// The state of one file's run.
struct Play {
    /// The cluster the file runs in (the engine reaches it as a `ClusterClient`; the runner needs all of it).
    cluster: Arc<Cluster>,
    engine: Arc<Engine>,
    runner: Runner,
    params: SltParams,
    /// The kill draws (RisingWave's `thread_rng`).
    rng: SimRng,
    /// The `SET BACKGROUND_DDL` draws: a stream of their own, seeded by the seed alone (RisingWave's
    /// `ChaChaRng::seed_from_u64(seed)`), so that kill draws never shift them.
    ddl_rng: SimRng,
    report: FileReport,
    /// The last statement's `unsupported` construct, from every connection of the run.
    probe: UnsupportedProbe,
    /// The session's `BACKGROUND_DDL` as the runner knows it.
    background_ddl: bool,
    /// The file set `BACKGROUND_DDL` to `true` itself (today's runner then draws no more).
    file_background_ddl: bool,
}

/// What a failed record expected and what it got, as the report shows them.
fn expected_and_actual(kind: TestErrorKind) -> (String, String) {
    match kind {
        TestErrorKind::QueryResultMismatch {
            expected, actual, ..
        }
        | TestErrorKind::QueryResultColumnsMismatch {
            expected, actual, ..
        } => (expected, actual),
        TestErrorKind::Fail { err, .. } => ("success".into(), format!("error: {err}")),
        TestErrorKind::Ok { .. } => ("an error".into(), "success".into()),
        TestErrorKind::ErrorMismatch {
            err, expected_err, ..
        } => (format!("error: {expected_err}"), format!("error: {err}")),
        TestErrorKind::StatementResultMismatch {
            expected, actual, ..
        } => (
            format!("{expected} rows affected"),
            format!("{actual} rows affected"),
        ),
        other => ("success".into(), other.to_string()),
    }
}

/// The simulated cluster a file runs in, from its parameters; `hook` sees it first.
async fn start_cluster(
    ctx: &epochlab_sim::SimContext,
    p: &SltParams,
    hook: Option<epochlab_sim::ClusterHook>,
) -> Arc<Cluster> {
    let mut config = cluster_config_for(
        p.run.toggles(),
        p.vnodes,
        p.barrier_interval_ms,
        p.checkpoint_frequency,
        p.persist_check,
    );
    config.compute_nodes = p.topology.compute_nodes;
    config.meta_nodes = p.topology.meta_nodes;
    config.compactor_nodes = p.topology.compactor_nodes;
    // RisingWave's sinks at f21fb9b7915: created at their first barrier, backfilling after.
    config.meta.sink_decoupled_from_backfill = true;
    // Every job of a file is made by its SQL, with its catalog row: one without is a DROP a kill cut off.
    config.meta.unlisted_jobs = false;
    let config = match p.runner {
        // The engine of the 2024 runner's CI: backfill rate limits in a flow-control executor.
        RunnerEra::R2024 => epochlab_sim::config::with_flow_control(config),
        RunnerEra::Latest => config,
    };
    let cluster = Cluster::launch(ctx, config).await;
    let cluster = cluster.unwrap_or_else(|e| panic!("a new cluster's meta store: {e}"));
    if let Some(point) = p.crash_meta_at {
        cluster.arm_meta_crash(point);
    }
    if let Some(hook) = hook {
        hook(cluster.clone());
    }
    cluster
}

/// The sqllogictest runner over `engine`: each connection a [`SimDb`] probed by `probe`, labelled
/// `kill` under kills.
fn new_runner(engine: &Arc<Engine>, probe: &UnsupportedProbe, kill: bool) -> Runner {
    let make = {
        let (engine, probe) = (engine.clone(), probe.clone());
        Box::new(move || {
            futures::future::ready(Ok(SimDb::new(engine.clone()).probed_by(probe.clone())))
        }) as Box<dyn FnMut() -> futures::future::Ready<Result<SimDb, SqlError>> + Send>
    };
    let mut runner = sqllogictest::Runner::new(make);
    // `skipif kill` / `onlyif kill`: records that assert a timing which kills (and the WAIT after a background
    // CREATE MATERIALIZED VIEW under kills) would change.
    if kill {
        runner.add_label("kill");
    }
    runner
}

/// A step's last played file's report completed: stuck (`stalled`), else the checkers' verdict (their end
/// check only on a `settled` run).
fn conclude(
    report: &mut FileReport,
    stalled: Option<String>,
    settled: bool,
    cluster: &Cluster,
    checkers: &Checkers,
) {
    match stalled {
        Some(what) => {
            report.outcome = Outcome::Stuck;
            report.kind = None;
            report.error = Some(what);
        }
        None => judge(cluster, checkers, report, settled),
    }
}

/// The checkers' verdict on a run whose records all passed (or the actor failure that failed one).
fn judge(cluster: &Cluster, checkers: &Checkers, report: &mut FileReport, settled: bool) {
    if report.outcome == Outcome::Passed && settled {
        checkers.check_end(cluster);
    }
    let catalog: BTreeSet<TableId> = cluster.meta().catalog().relations.keys().copied().collect();
    let mut violations = cluster.zombie.violations(|job| !catalog.contains(&job));
    violations.extend(checkers.violations());
    report.violations = violations.clone();
    if report.outcome != Outcome::Passed {
        return;
    }
    if let Some(f) = cluster.failures.first_state_error() {
        report.outcome = Outcome::Failed;
        report.kind = Some("actor_failure");
        report.error = Some(format!("actor {}: {}", f.actor, f.error));
    } else if let Some(v) = violations.first() {
        report.outcome = Outcome::Failed;
        report.kind = Some("invariant");
        report.error = Some(v.to_string());
    }
}

/// What a record's SQL is, as RisingWave's runner tells (by its first words).
#[derive(Clone, Debug, PartialEq, Eq)]
enum SqlCmd {
    Create { is_create_table_as: bool },
    CreateMaterializedView { name: String },
    SetBackgroundDdl { enable: bool },
    Drop,
    Dml,
    Flush,
    Alter,
    Others,
}

impl SqlCmd {
    fn of(sql: &str) -> Self {
        let lower = sql.to_lowercase();
        let words: Vec<&str> = lower.split_whitespace().collect();
        match words.first().copied().unwrap_or("") {
            "create" => match words.get(1).copied() {
                Some("materialized") => {
                    let rest: Vec<&str> = words.iter().skip(3).copied().collect();
                    let name = match rest.as_slice() {
                        ["if", "not", "exists", name, ..] | [name, ..] => *name,
                        [] => return SqlCmd::Others,
                    };
                    let name = name.split(['(', ';']).next().unwrap_or(name);
                    SqlCmd::CreateMaterializedView {
                        name: name.trim_matches('"').to_string(),
                    }
                }
                Some(_) => SqlCmd::Create {
                    is_create_table_as: words.len() >= 4 && words[1] == "table" && words[3] == "as",
                },
                None => SqlCmd::Others,
            },
            "set" if lower.contains("background_ddl") => SqlCmd::SetBackgroundDdl {
                enable: lower.contains("true"),
            },
            "drop" => SqlCmd::Drop,
            "insert" | "update" | "delete" => SqlCmd::Dml,
            "flush" => SqlCmd::Flush,
            "alter" => SqlCmd::Alter,
            _ => SqlCmd::Others,
        }
    }

    /// Not killed: not atomic under a kill (RisingWave's `ignore_kill`).
    fn ignore_kill(&self) -> bool {
        matches!(
            self,
            SqlCmd::Dml
                | SqlCmd::Flush
                | SqlCmd::Alter
                | SqlCmd::Create {
                    is_create_table_as: true
                }
        )
    }
}

/// Where a record is and its SQL.
fn located(record: &Record<DefaultColumnType>) -> Option<(String, u32, String)> {
    match record {
        Record::Statement { loc, sql, .. } | Record::Query { loc, sql, .. } => {
            Some((loc.file().to_string(), loc.line(), sql.clone()))
        }
        _ => None,
    }
}

/// A result or an error in one line: its first line, its columns apart by a space as a `.slt` file writes
/// them (the runner joins them with tabs), how many lines follow, and `no rows` for an empty result.
fn one_line(text: &str) -> String {
    if text.is_empty() {
        return "no rows".to_string();
    }
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("").replace('\t', " ");
    match lines.count() {
        0 => first,
        more => format!("{first} and {more} more line(s)"),
    }
}

/// A result and its expectation in one line each. Where they share their first lines, each is shown from
/// the first line they differ at (`line N: ...`), so that the line shows the difference.
fn one_line_pair(actual: &str, expected: &str) -> (String, String) {
    let (a, e): (Vec<&str>, Vec<&str>) = (actual.lines().collect(), expected.lines().collect());
    let differ = a
        .iter()
        .zip(&e)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(e.len()));
    if differ == 0 || (a.len() <= 1 && e.len() <= 1) {
        return (one_line(actual), one_line(expected));
    }
    let from = |lines: &[&str]| match lines.get(differ) {
        None => format!("{} line(s), no line {}", lines.len(), differ + 1),
        Some(l) => {
            let l = l.replace('\t', " ");
            match lines.len() - differ - 1 {
                0 => format!("line {}: {l}", differ + 1),
                more => format!("line {}: {l} and {more} more line(s)", differ + 1),
            }
        }
    };
    (from(&a), from(&e))
}

/// Whether the record expects success.
fn expects_success(record: &Record<DefaultColumnType>) -> bool {
    matches!(
        record,
        Record::Statement {
            expected: StatementExpect::Ok | StatementExpect::Count(_),
            ..
        } | Record::Query {
            expected: QueryExpect::Results { .. },
            ..
        }
    )
}

impl Play {
    fn cluster(&self) -> &Arc<Cluster> {
        &self.cluster
    }

    async fn records(&mut self, records: Vec<Record<DefaultColumnType>>) {
        for record in records {
            if let Record::Halt { .. } = record {
                break;
            }
            let at = located(&record);
            if at.is_some() {
                self.report.records += 1;
            }
            self.probe.take();
            // Under kills every record goes through the kill runner, as RisingWave's loop did.
            let result = match &at {
                _ if self.params.retries_records() => {
                    let cmd = at
                        .as_ref()
                        .map_or(SqlCmd::Others, |(_, _, sql)| SqlCmd::of(sql));
                    self.run_killed(record.clone(), cmd).await
                }
                _ => self
                    .runner
                    .run_async(record.clone())
                    .await
                    .map(|_| ())
                    .map_err(RecordError::from),
            };
            self.note_meta_crashes(&at);
            if let Err(e) = result.and_then(|()| self.any_error_met(&record)) {
                self.fail_record(&record, &e);
                return;
            }
            if let Some(f) = self.cluster().failures.first_state_error() {
                self.report.outcome = Outcome::Failed;
                self.report.kind = Some("actor_failure");
                self.report.error = Some(format!("actor {}: {}", f.actor, f.error));
                if let Some((file, line, sql)) = at {
                    self.report.failure = Some(RecordFailure {
                        file,
                        line,
                        sql,
                        expected: "no actor failure".into(),
                        actual: format!("actor {} failed during this record: {}", f.actor, f.error),
                        cause: FailureCause::ActorFailure,
                    });
                }
                return;
            }
        }
    }

    /// A record that expects any error and passed on an `unsupported` one fails with it (see
    /// [`UnsupportedProbe`]).
    fn any_error_met(&self, record: &Record<DefaultColumnType>) -> Result<(), RecordError> {
        let any_error = matches!(
            record,
            Record::Statement {
                expected: StatementExpect::Error(ExpectedError::Empty),
                ..
            } | Record::Query {
                expected: QueryExpect::Error(ExpectedError::Empty),
                ..
            }
        );
        match self.probe.take() {
            Some(construct) if any_error => Err(RecordError::Unsupported(construct)),
            _ => Ok(()),
        }
    }

    fn fail_record(&mut self, record: &Record<DefaultColumnType>, e: &RecordError) {
        let e = match e {
            RecordError::Test(e) => e,
            RecordError::Unsupported(construct) => {
                let (file, line, sql) = located(record).unwrap_or_default();
                let actual = format!("error: unsupported: {construct}");
                let error = format!("{file}:{line}: {actual} (expected an error)");
                return self.fail(
                    error,
                    RecordFailure {
                        file,
                        line,
                        sql,
                        expected: "an error RisingWave gives (any)".into(),
                        actual,
                        cause: FailureCause::Unsupported(construct.clone()),
                    },
                );
            }
            RecordError::Background(why) => {
                let (file, line, sql) = located(record).unwrap_or_default();
                let error = format!("{file}:{line}: {why}");
                return self.fail(
                    error,
                    RecordFailure {
                        file,
                        line,
                        sql,
                        expected: "the view created in the background".into(),
                        actual: why.to_string(),
                        cause: FailureCause::Background,
                    },
                );
            }
        };
        let (file, line, sql) = located(record).unwrap_or_else(|| {
            let loc = e.location();
            (loc.file().to_string(), loc.line(), String::new())
        });
        let (expected, actual) = expected_and_actual(e.kind());
        let (actual_line, expected_line) = one_line_pair(&actual, &expected);
        let error = format!("{file}:{line}: {actual_line} (expected {expected_line})");
        self.fail(
            error,
            RecordFailure {
                file,
                line,
                sql,
                expected,
                actual,
                cause: FailureCause::of(&e.kind()),
            },
        );
    }

    /// The file failed at a record: `error`, its one line, and the `failure` in full.
    fn fail(&mut self, error: String, failure: RecordFailure) {
        self.report.outcome = Outcome::Failed;
        self.report.kind = Some("record");
        self.report.error = Some(error);
        self.report.failure = Some(failure);
    }

    /// The crashes of meta since the last record's, each with the record it came during.
    fn note_meta_crashes(&mut self, at: &Option<(String, u32, String)>) {
        let crashes = self.cluster().meta_crashes();
        let sql = at.as_ref().map_or(String::new(), |(file, line, sql)| {
            let words: Vec<&str> = sql.split_whitespace().collect();
            format!("{file}:{line}: {}", words.join(" "))
        });
        for point in crashes.iter().skip(self.report.meta_crashes.len()) {
            let line = format!("meta crashed at {point}: {sql}");
            self.report.meta_crashes.push(line);
        }
    }

    /// A record under kills, as RisingWave's simulation runner runs it (every record, whatever it is).
    async fn run_killed(
        &mut self,
        record: Record<DefaultColumnType>,
        cmd: SqlCmd,
    ) -> Result<(), RecordError> {
        let era = self.params.runner;
        if let SqlCmd::SetBackgroundDdl { enable } = cmd
            && era == RunnerEra::Latest
        {
            self.file_background_ddl = enable;
            self.background_ddl = enable;
        }
        self.set_background_ddl(&record, &cmd).await?;
        if cmd.ignore_kill() {
            return self.run_not_killed(record).await;
        }
        // Without kills (a crash point alone) no killer is drawn.
        let killer = (self.params.kill && self.rng.bool(self.params.kill_rate.clamp(0.0, 1.0)))
            .then(|| self.spawn_killer());
        let result = self.run_retried(&record, &cmd).await;
        if let SqlCmd::SetBackgroundDdl { enable } = cmd {
            self.background_ddl = enable;
        }
        if let Some(k) = killer {
            self.report.killers += 1;
            self.report.kills += k.await.unwrap_or(0);
        }
        result
    }

    /// Before a CREATE MATERIALIZED VIEW statement: `SET BACKGROUND_DDL=<draw>`, the draw `true` with
    /// probability `background_ddl_rate` (2024: at every rate, so `false` at 0; today: only above 0).
    async fn set_background_ddl(
        &mut self,
        record: &Record<DefaultColumnType>,
        cmd: &SqlCmd,
    ) -> Result<(), RecordError> {
        let rate = self.params.background_ddl_rate.clamp(0.0, 1.0);
        if !matches!(
            (record, cmd),
            (
                Record::Statement { .. },
                SqlCmd::CreateMaterializedView { .. }
            )
        ) || !self
            .params
            .runner
            .sets_background_ddl(rate, self.file_background_ddl)
        {
            return Ok(());
        }
        let background = self.ddl_rng.bool(rate);
        let sql = format!("SET BACKGROUND_DDL={background};");
        event!(self.cluster().ctx.log, "slt", "runner: {sql}");
        self.runner.run_async(statement_like(record, sql)).await?;
        self.background_ddl = background;
        Ok(())
    }

    /// DML, FLUSH, ALTER, CREATE TABLE AS: no killer; retried only on `no reader for dml`.
    async fn run_not_killed(
        &mut self,
        record: Record<DefaultColumnType>,
    ) -> Result<(), RecordError> {
        for i in 0usize.. {
            match self.runner.run_async(record.clone()).await {
                Ok(_) => break,
                Err(e) if i < MAX_RETRY && Failure::of(&e) == Failure::NoReader => {
                    self.report.retries += 1;
                    tokio::time::sleep(self.params.runner.backoff(i)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Run a record, retrying (up to 5 times) what a kill may have failed.
    async fn run_retried(
        &mut self,
        record: &Record<DefaultColumnType>,
        cmd: &SqlCmd,
    ) -> Result<(), RecordError> {
        for i in 0usize.. {
            if i > 0 {
                self.report.retries += 1;
                tokio::time::sleep(self.params.runner.backoff(i)).await;
            }
            let e = match self.runner.run_async(record.clone()).await {
                Ok(_) => match self.after_background_create(record, cmd).await {
                    Err(why) if i >= MAX_RETRY => return Err(RecordError::Background(why)),
                    Err(_) => continue,
                    Ok(()) => return Ok(()),
                },
                Err(e) => e,
            };
            let failure = Failure::of(&e);
            match cmd {
                SqlCmd::Create {
                    is_create_table_as: false,
                }
                | SqlCmd::CreateMaterializedView { .. }
                    if i != 0 && failure == Failure::Exists =>
                {
                    return Ok(());
                }
                SqlCmd::Drop if i != 0 && failure == Failure::NotFound => return Ok(()),
                _ if i >= MAX_RETRY => return Err(e.into()),
                SqlCmd::CreateMaterializedView { name }
                    if i != 0 && failure == Failure::InCreatingProcedure && self.background_ddl =>
                {
                    event!(
                        self.cluster().ctx.log,
                        "slt",
                        "retry {}: {name} is in creating procedure: WAIT and check it",
                        i
                    );
                    if self.wait_background(name).await.is_ok() {
                        return Ok(());
                    }
                }
                _ => {}
            }
            event!(
                self.cluster().ctx.log,
                "slt",
                "record failed, retry {}: {}",
                i + 1,
                e.to_string().lines().next().unwrap_or("")
            );
        }
        unreachable!("the retry loop returns")
    }

    /// After a CREATE MATERIALIZED VIEW that passed with background DDL on (and expects success): `WAIT`
    /// and the view.
    async fn after_background_create(
        &self,
        record: &Record<DefaultColumnType>,
        cmd: &SqlCmd,
    ) -> Result<(), BackgroundError> {
        match cmd {
            SqlCmd::CreateMaterializedView { name }
                if self.background_ddl && expects_success(record) =>
            {
                self.wait_background(name).await
            }
            _ => Ok(()),
        }
    }

    /// `WAIT` on a new connection, then the view must exist and be created (RisingWave's
    /// `wait_background_mv_finished`).
    async fn wait_background(&self, name: &str) -> Result<(), BackgroundError> {
        let mut db = SimDb::new(self.engine.clone());
        db.execute("WAIT").await.map_err(BackgroundError::Wait)?;
        // `pg_matviews` lists materialized views only.
        let name = name.to_lowercase();
        match self.cluster().meta().relation_by_name(&name) {
            Some(r) if r.kind != RelationKind::MaterializedView => {
                Err(BackgroundError::Gone(name.to_string()))
            }
            Some(r) if r.state == JobState::Created => Ok(()),
            Some(_) => Err(BackgroundError::StillCreating(name.to_string())),
            None => Err(BackgroundError::Gone(name.to_string())),
        }
    }

    /// A killer: U(0, 1 s), then the nodes of [`plan_kills`], then 15 s. Every draw is made here, in order.
    fn spawn_killer(&self) -> tokio::task::JoinHandle<u32> {
        let start = self.rng.duration(Duration::ZERO..Duration::from_secs(1));
        let plan = plan_kills(&self.rng, self.params.kill_roles, self.params.topology);
        let (cluster, engine) = (self.cluster.clone(), self.engine.clone());
        tokio::spawn(async move {
            tokio::time::sleep(start).await;
            let kills = plan
                .into_iter()
                .map(|k| kill_and_restart(cluster.clone(), engine.clone(), k));
            let killed: u32 = futures::future::join_all(kills).await.into_iter().sum();
            tokio::time::sleep(Duration::from_secs(15)).await;
            killed
        })
    }
}

/// After the last record: every node up and recovery done, then a checkpoint.
async fn settle(cluster: &Arc<Cluster>) -> Result<(), Stuck> {
    let budget = |what: &str| Stuck(stuck_report(cluster, what));
    tokio::time::timeout(SETTLE_BUDGET, cluster.wait_ready())
        .await
        .map_err(|_| budget("recovery did not finish"))?;
    for _ in 0..3 {
        match tokio::time::timeout(SETTLE_BUDGET, cluster.meta().flush()).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => {
                event!(cluster.ctx.log, "slt", "settle flush failed: {e}");
                tokio::time::timeout(SETTLE_BUDGET, cluster.wait_ready())
                    .await
                    .map_err(|_| budget("recovery did not finish"))?;
            }
            Err(_) => return Err(budget("no checkpoint committed")),
        }
    }
    Err(budget("settle: three flushes failed"))
}

/// The run could not settle: the stuck report (what it waited for, and what the barrier manager waits for).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Stuck(String);

/// A statement record with another SQL, at the same place.
fn statement_like(record: &Record<DefaultColumnType>, sql: String) -> Record<DefaultColumnType> {
    match record {
        Record::Statement {
            loc,
            conditions,
            connection,
            ..
        } => Record::Statement {
            loc: loc.clone(),
            conditions: conditions.clone(),
            connection: connection.clone(),
            sql,
            expected: StatementExpect::Ok,
            retry: None,
        },
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_line_shows_where_result_and_expectation_differ() {
        assert_eq!(
            one_line_pair("a\tb", "a\tc"),
            ("a b".to_string(), "a c".to_string())
        );
        assert_eq!(
            one_line_pair("x\ny\nz", "w\ny"),
            (
                "x and 2 more line(s)".to_string(),
                "w and 1 more line(s)".to_string()
            )
        );
        assert_eq!(
            one_line_pair("same\nmine\nmore", "same\ntheirs"),
            (
                "line 2: mine and 1 more line(s)".to_string(),
                "line 2: theirs".to_string()
            )
        );
        assert_eq!(
            one_line_pair("same", "same\nextra"),
            (
                "1 line(s), no line 2".to_string(),
                "line 2: extra".to_string()
            )
        );
        assert_eq!(
            one_line_pair("", "1"),
            ("no rows".to_string(), "1".to_string())
        );
    }

    #[test]
    fn commands_are_classified_as_risingwave_does() {
        assert_eq!(
            SqlCmd::of("create  table  t as select 1;"),
            SqlCmd::Create {
                is_create_table_as: true
            }
        );
        assert_eq!(
            SqlCmd::of("  create table  t (a int);"),
            SqlCmd::Create {
                is_create_table_as: false
            }
        );
        assert_eq!(
            SqlCmd::of(" create materialized   view  m_1 as select 1;"),
            SqlCmd::CreateMaterializedView { name: "m_1".into() }
        );
        assert_eq!(
            SqlCmd::of("CREATE MATERIALIZED VIEW if not exists m_1 as select 1;"),
            SqlCmd::CreateMaterializedView { name: "m_1".into() }
        );
        assert_eq!(
            SqlCmd::of("SET BACKGROUND_DDL=true;"),
            SqlCmd::SetBackgroundDdl { enable: true }
        );
        assert!(SqlCmd::of("insert into t values (1)").ignore_kill());
        assert!(!SqlCmd::of("drop sink s").ignore_kill());
        // RisingWave's first-word match keeps the semicolon: `flush;` is not `flush`.
        assert!(SqlCmd::of("FLUSH").ignore_kill());
        assert!(!SqlCmd::of("FLUSH;").ignore_kill());
    }

    #[test]
    fn the_runner_era_decides_each_difference() {
        let (old, new) = (RunnerEra::R2024, RunnerEra::Latest);
        assert!(old.sets_background_ddl(0.0, false));
        assert!(old.sets_background_ddl(0.0, true));
        assert!(!new.sets_background_ddl(0.0, false));
        assert!(new.sets_background_ddl(0.5, false));
        assert!(!new.sets_background_ddl(0.5, true));
        assert!(old.refuses_file_background_ddl() && !new.refuses_file_background_ddl());
        let waits = |era: RunnerEra| (0..6).map(|i| era.backoff(i).as_secs()).collect::<Vec<_>>();
        assert_eq!(waits(old), vec![1, 2, 4, 8, 16, 32]);
        assert_eq!(waits(new), vec![1, 2, 4, 8, 10, 10]);
        assert_eq!(old.kill_ignore_files().len(), 7);
        assert!(new.kill_ignored(Path::new("e2e_test/transaction/cursor.slt")));
        assert!(!old.kill_ignored(Path::new("e2e_test/transaction/cursor.slt")));
        assert_eq!("2024".parse(), Ok(old));
        assert_eq!("latest".parse(), Ok(new));
        assert!("2025".parse::<RunnerEra>().is_err());
    }
}

/// What a failed record's error means to the kill runner's retries: the engine's own error, read by its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failure {
    /// DML that reached no reader (RisingWave's `no reader for dml in table`): retried.
    NoReader,
    /// A CREATE's name is taken: a retried CREATE had succeeded before the kill.
    Exists,
    /// A DROP's name is gone: a retried DROP had succeeded before the kill.
    NotFound,
    /// A CREATE's name is a job still being created (`table is in creating procedure`): not `exists`.
    InCreatingProcedure,
    Other,
}

impl Failure {
    fn of(e: &TestError) -> Self {
        let err = match e.kind() {
            TestErrorKind::Fail { err, .. } | TestErrorKind::ErrorMismatch { err, .. } => err,
            _ => return Failure::Other,
        };
        match err.downcast_ref::<SqlError>() {
            Some(SqlError::NoReader { .. }) => Failure::NoReader,
            Some(SqlError::InCreatingProcedure { .. }) => Failure::InCreatingProcedure,
            Some(SqlError::Catalog { problem, .. }) => match problem {
                CatalogProblem::Exists => Failure::Exists,
                CatalogProblem::NotFound => Failure::NotFound,
                CatalogProblem::StillCreating => Failure::Other,
            },
            Some(SqlError::CatalogError(CatalogError::Duplicated(..))) => Failure::Exists,
            Some(SqlError::CatalogError(CatalogError::NotFound(..))) => Failure::NotFound,
            _ => Failure::Other,
        }
    }
}
