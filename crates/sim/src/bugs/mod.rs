//! The catalogue of RisingWave bugs epochlab reproduces on demand: each one's id (the RisingWave issue or PR
//! number users know), its mechanism in one line, the RisingWave fix, its modes and the command that shows it.
//! An entry that is epochlab's own check rather than a RisingWave bug has a name instead of a number
//! (`reschedule-unpinned`), and its `fix` says what epochlab checks.
//!
//! Each entry is a module here whose `INFO` ([`BugInfo`]) holds all the catalogue says of it: its texts, its
//! record, its toggle and its directed scenario; the entries are the files here with an `INFO` (`build.rs` finds them), and
//! every list of bugs elsewhere (the CLI's, `epochlab bugs`, the dispatcher of `repro`) derives from
//! [`BugId::ALL`] and [`BugId::info`]. A run names a bug and a mode; [`BugId::toggles`] turns them into the
//! engine's [`Toggles`], every one at its fixed value but the named bug's. The toggles travel whole into each
//! engine crate's config, and each is read there in exactly one place; nothing else in the engine knows which bug
//! is on. The recipe for a new bug is in ARCHITECTURE.md.

use std::fmt;
use std::str::FromStr;

use epochlab_common::Toggles;
use futures::future::LocalBoxFuture;

use crate::capture::Capture;
use crate::report::ReproReport;
use crate::repro::{ClusterHook, ReproParams};
use crate::runtime::SimContext;

pub mod record;

/// The catalogue's entries: each bug's `BugId` variant and its module, whose [`BugInfo`] (`INFO`) says everything
/// else (its texts, its record, its toggle, its scenario). Called by the file `build.rs` writes: every file of
/// this directory that declares `pub const INFO: BugInfo` is an entry, in file-name order, so a new bug's module
/// is all the catalogue needs; the recipe is in ARCHITECTURE.md.
macro_rules! catalogue {
    ($($id:ident => $module:ident,)*) => {
        /// A bug of the catalogue: the entry of the module of the same name (`Rw14910` is `b14910`'s).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum BugId {
            $($id,)*
        }

        impl BugId {
            /// Every implemented bug, in catalogue order: its module's file name (RisingWave's numbers as
            /// text, `b22384` before `b8440`, then epochlab's own).
            pub const ALL: [BugId; [$(stringify!($id)),*].len()] = [$(BugId::$id),*];

            /// What the catalogue says about it: its module's `INFO`.
            pub fn info(self) -> &'static BugInfo {
                match self {
                    $(BugId::$id => &$module::INFO,)*
                }
            }
        }
    };
}

include!(concat!(env!("OUT_DIR"), "/catalogue.rs"));

/// #14910, the bug epochlab was built to reproduce, is what `--bug` means when it is not given.
impl Default for BugId {
    fn default() -> BugId {
        BugId::Rw14910
    }
}

/// Whose bug an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A RisingWave issue or pull request, named by its number.
    RisingWave,
    /// epochlab's own check (no RisingWave bug is filed under it), named by a word.
    Epochlab,
}

/// What a directed scenario is handed: the run's context, parameters, log capture and cluster hook.
pub struct ScenarioRun {
    pub ctx: SimContext,
    pub params: ReproParams,
    /// The run's captured log lines (the #14910 scenario quotes the failing actor's).
    pub capture: Capture,
    pub hook: Option<ClusterHook>,
}

/// A bug's directed scenario: the run in, its report out.
pub type Scenario = fn(ScenarioRun) -> LocalBoxFuture<'static, ReproReport>;

/// What the catalogue says about one bug.
#[derive(Clone, Copy, Debug)]
pub struct BugInfo {
    pub id: BugId,
    /// How users name it (`--bug`): the RisingWave number, or a word for epochlab's own checks.
    pub name: &'static str,
    pub origin: Origin,
    /// The mechanism, in one line.
    pub mechanism: &'static str,
    /// The RisingWave fix, in one line.
    pub fix: &'static str,
    /// The issue and pull requests, as links.
    pub links: &'static [&'static str],
    /// The modes a run of the bug can take, `buggy` first.
    pub modes: &'static [Mode],
    /// The command that shows it.
    pub command: &'static str,
    /// The settings of [`crate::ReproParams`] its directed scenario reads; the others are fixed by it.
    pub settings: &'static [Setting],
    /// What the timeline of a failed run shows, after `timeline (virtual seconds): `.
    pub timeline: &'static str,
    /// What RisingWave's record says of it.
    pub record: &'static record::Record,
    /// The engine's toggles of a run in a mode (the bug's own set by it, every other at its default).
    pub toggles: fn(Mode) -> Toggles,
    /// Its directed scenario.
    pub scenario: Scenario,
}

/// A setting of [`crate::ReproParams`] that a directed scenario may read (`repro --rows` and so on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Setting {
    Rows,
    Vnodes,
    Parallelism,
    ComputeNodes,
    RateLimit,
    BarrierLatency,
    CheckpointFrequency,
    PersistCheck,
    /// Meta dies at a crash point of the scenario's first DDL to reach it, and restarts from its store.
    CrashMetaAt,
}

impl Setting {
    pub const ALL: [Setting; 9] = [
        Setting::Rows,
        Setting::Vnodes,
        Setting::Parallelism,
        Setting::ComputeNodes,
        Setting::RateLimit,
        Setting::BarrierLatency,
        Setting::CheckpointFrequency,
        Setting::PersistCheck,
        Setting::CrashMetaAt,
    ];
}

impl BugId {
    pub fn as_str(self) -> &'static str {
        self.info().name
    }

    pub fn modes(self) -> &'static [Mode] {
        self.info().modes
    }

    /// Whether its directed scenario reads `setting`.
    pub fn reads(self, setting: Setting) -> bool {
        self.info().settings.contains(&setting)
    }

    /// How a user names it: `RisingWave #14910`, or `epochlab's reschedule-unpinned` for an entry that is
    /// epochlab's own check.
    pub fn title(self) -> String {
        match self.info().origin {
            Origin::Epochlab => format!("epochlab's {self}"),
            Origin::RisingWave => format!("RisingWave #{self}"),
        }
    }

    /// The directed scenario's name in traces (`risingwave-14910`; `epochlab-...` for epochlab's own checks).
    pub fn scenario_name(self) -> String {
        match self.info().origin {
            Origin::Epochlab => format!("epochlab-{self}"),
            Origin::RisingWave => format!("risingwave-{self}"),
        }
    }

    /// The engine's toggles of a run of it in `mode`: its own toggle set by its module, the others fixed.
    pub fn toggles(self, mode: Mode) -> Result<Toggles, BugError> {
        let mode = self.check_mode(mode)?;
        Ok((self.info().toggles)(mode))
    }

    /// `mode` if the bug has it.
    pub fn check_mode(self, mode: Mode) -> Result<Mode, BugError> {
        if self.modes().contains(&mode) {
            Ok(mode)
        } else {
            Err(BugError::NoSuchMode { bug: self, mode })
        }
    }
}

impl fmt::Display for BugId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A bug id or mode that the catalogue does not have.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BugError {
    #[error("no bug `{0}` in the catalogue (one of {ids})", ids = ids())]
    Unknown(String),
    /// Where `all` is accepted too (`repro --bug`).
    #[error("no bug `{0}` in the catalogue (one of {ids}, or all)", ids = ids())]
    UnknownOrAll(String),
    #[error("bug {bug} has the modes {modes}, not `{mode}`", modes = mode_list(*bug))]
    NoSuchMode { bug: BugId, mode: Mode },
    #[error("no mode `{0}` (buggy, fixed or purge-before-reset)")]
    UnknownMode(String),
}

fn ids() -> String {
    BugId::ALL.map(BugId::as_str).join(", ")
}

/// A bug's modes, as `buggy, fixed`.
pub fn mode_list(bug: BugId) -> String {
    let modes: Vec<&str> = bug.modes().iter().map(|m| m.as_str()).collect();
    modes.join(", ")
}

impl FromStr for BugId {
    type Err = BugError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BugId::ALL
            .into_iter()
            .find(|b| b.as_str() == s)
            .ok_or_else(|| BugError::Unknown(s.to_string()))
    }
}

/// The mode of a run: the bug's code before the fix, after it, or (#14910 only) RisingWave #15852's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    Buggy,
    Fixed,
    PurgeBeforeReset,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Buggy, Mode::Fixed, Mode::PurgeBeforeReset];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Buggy => "buggy",
            Mode::Fixed => "fixed",
            Mode::PurgeBeforeReset => "purge-before-reset",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = BugError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| BugError::UnknownMode(s.to_string()))
    }
}

/// A bug and one of its modes: what a run is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BugMode {
    bug: BugId,
    mode: Mode,
}

impl BugMode {
    /// `mode` of `bug`, if the bug has that mode.
    pub fn new(bug: BugId, mode: Mode) -> Result<Self, BugError> {
        let mode = bug.check_mode(mode)?;
        Ok(Self { bug, mode })
    }

    /// The run of #14910 in `mode` (it has every mode).
    pub fn of_14910(mode: Mode) -> Self {
        Self {
            bug: BugId::Rw14910,
            mode,
        }
    }

    pub fn bug(self) -> BugId {
        self.bug
    }

    pub fn mode(self) -> Mode {
        self.mode
    }

    pub fn toggles(self) -> Toggles {
        (self.bug.info().toggles)(self.mode)
    }

    /// The run's label in logs: `buggy` for #14910, `22384 buggy` for the others.
    pub fn label(self) -> String {
        match self.bug {
            BugId::Rw14910 => self.mode.as_str().to_string(),
            bug => format!("{bug} {}", self.mode),
        }
    }
}

/// Why a directed bug scenario did not reach its verdict: in its setup (the run is `not_reproducible`) or
/// while it ran (`stuck`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ScenarioError {
    #[error("{what}: {source}")]
    Ddl {
        what: &'static str,
        #[source]
        source: epochlab_meta::DdlError,
    },
    #[error("DML: {0}")]
    Dml(#[from] epochlab_stream::DmlError),
    #[error("{0}")]
    Placement(String),
    /// The run got where its bug could not show (it is `not_reproducible`, with this reason).
    #[error("{0}")]
    NotShown(String),
    /// The cluster's state when a step ran out of its budget ([`crate::report::stuck_report`]).
    #[error("{0}")]
    Stuck(String),
}

impl ScenarioError {
    /// A DDL step's error, named.
    pub(crate) fn ddl(what: &'static str) -> impl FnOnce(epochlab_meta::DdlError) -> Self {
        move |source| ScenarioError::Ddl { what, source }
    }
}

/// What every directed scenario's `Setup` holds: its context, its cluster (shut down, inside the simulation, when
/// the scene is dropped, even when a `ClusterHook` keeps the cluster longer) and its checkers.
pub(crate) struct Scene {
    pub ctx: SimContext,
    pub cluster: std::sync::Arc<crate::cluster::Cluster>,
    pub checkers: crate::checkers::Checkers,
}

impl Drop for Scene {
    fn drop(&mut self) {
        self.cluster.shutdown();
    }
}

/// A directed scenario from its three parts. The run's toggles (a mode the bug lacks is not reproducible), the
/// `scenario` event (`bug=ID mode=M`, then `detail`), `setup` (an error there: not reproducible), `body`, then
/// `verdict` over what the body returned. A body that ran out of a step's budget is `stuck`; one that stopped
/// short for another reason is not reproducible, with that reason and the run's counts.
pub(crate) async fn directed<S: AsRef<Scene>, T>(
    ctx: &SimContext,
    p: &ReproParams,
    detail: String,
    setup: impl AsyncFnOnce(Toggles) -> Result<S, ScenarioError>,
    body: impl AsyncFnOnce(&S) -> Result<T, ScenarioError>,
    verdict: impl FnOnce(&S, T, ReproReport) -> ReproReport,
) -> ReproReport {
    let report = ReproReport::new(p.clone());
    let toggles = match p.toggles() {
        Ok(t) => t,
        Err(e) => return report.not_reproducible(e.to_string()),
    };
    epochlab_common::event!(ctx.log, "scenario", "bug={} mode={}{detail}", p.bug, p.mode);
    let setup = match setup(toggles).await {
        Ok(s) => s,
        Err(why) => return report.not_reproducible(why.to_string()),
    };
    let cluster = &setup.as_ref().cluster;
    match body(&setup).await {
        Ok(t) => verdict(&setup, t, report),
        Err(why @ ScenarioError::Stuck(_)) => stuck(report, cluster, why),
        Err(why) => counted(report, cluster).not_reproducible(why.to_string()),
    }
}

/// Keys of a one-column table over `vnodes` vnodes (distributed by the key) whose rows are skewed: `busy` in
/// each vnode of the first half, `few` in all of the second half. The reschedule and scale-in scenarios use it
/// so that one backfill actor finishes while the other still reads.
pub(crate) fn skewed_keys(vnodes: u32, busy: usize, few: usize) -> Vec<i64> {
    use epochlab_common::{VirtualNode, VnodeCount, row};
    let count = VnodeCount::new(vnodes).expect("a valid vnode count");
    let half = vnodes as usize / 2;
    let mut per_vnode = vec![0usize; vnodes as usize];
    let (mut in_second_half, mut keys) = (0, Vec::new());
    for k in 0.. {
        let v = VirtualNode::compute_row(&row![k], &[0], count).to_index();
        if v < half && per_vnode[v] < busy {
            per_vnode[v] += 1;
            keys.push(k);
        } else if v >= half && in_second_half < few {
            in_second_half += 1;
            keys.push(k);
        }
        if keys.len() == half * busy + few {
            break;
        }
    }
    keys
}

/// A directed scenario's cluster of two compute nodes: started with `t`'s toggles (see [`start_cluster`]).
pub(crate) async fn start_two_nodes(
    ctx: &crate::runtime::SimContext,
    t: Toggles,
    hook: Option<crate::repro::ClusterHook>,
    vnodes: u32,
    barrier_interval_ms: u64,
    meta_nodes: u32,
) -> (
    std::sync::Arc<crate::cluster::Cluster>,
    crate::checkers::Checkers,
) {
    let mut config = crate::config::cluster_config_for(t, vnodes, barrier_interval_ms, 1, true);
    config.compute_nodes = 2;
    config.meta_nodes = meta_nodes;
    start_cluster(ctx, config, t, hook).await
}

/// A directed scenario's cluster of `config`: started, `hook` given the cluster, the checkers installed (with
/// `t`'s drop mode) and the base network laid.
pub(crate) async fn start_cluster(
    ctx: &crate::runtime::SimContext,
    config: crate::cluster::ClusterConfig,
    t: Toggles,
    hook: Option<crate::repro::ClusterHook>,
) -> (
    std::sync::Arc<crate::cluster::Cluster>,
    crate::checkers::Checkers,
) {
    let cluster = crate::cluster::Cluster::launch(ctx, config).await;
    let cluster = cluster.expect("a new cluster's in-memory store opens");
    if let Some(hook) = hook {
        hook(cluster.clone());
    }
    let checkers =
        crate::checkers::Checkers::install(&cluster, t.get::<epochlab_common::toggles::DropMode>());
    crate::config::base_network(&cluster);
    (cluster, checkers)
}

/// Rows `(k, k * 10)` of the keys `keys`, to insert into a two-column table.
pub(crate) fn kv_rows(
    keys: std::ops::Range<i64>,
) -> Vec<(epochlab_common::Op, epochlab_common::OwnedRow)> {
    keys.map(|k| {
        (
            epochlab_common::Op::Insert,
            epochlab_common::row![k, k * 10],
        )
    })
    .collect()
}

/// A directed scenario's cluster of two compute nodes ([`start_two_nodes`]: 16 vnodes, a barrier every second),
/// the run's metas, and a table `t` (k, v) with pk k over `--parallelism` actors holding [`kv_rows`] of `0..rows`, flushed.
pub(crate) async fn two_nodes_and_t(
    ctx: &crate::runtime::SimContext,
    t: Toggles,
    p: &ReproParams,
    hook: Option<ClusterHook>,
    rows: usize,
) -> Result<(Scene, epochlab_common::TableId), ScenarioError> {
    let (cluster, checkers) = start_two_nodes(ctx, t, hook, 16, 1000, p.meta_nodes).await;
    let scene = Scene {
        ctx: ctx.clone(),
        cluster,
        checkers,
    };
    let meta = scene.cluster.meta();
    let types = vec![epochlab_common::DataType::Int64; 2];
    let created = meta.create_table("t", types, vec![0], p.parallelism).await;
    let table = created.map_err(ScenarioError::ddl("create table"))?;
    scene.cluster.dml(table, kv_rows(0..rows as i64)).await?;
    meta.flush().await.map_err(ScenarioError::ddl("flush"))?;
    Ok((scene, table))
}

/// A directed scenario's report with the run's counts: epochs injected, recoveries, max committed epoch,
/// leader changes.
pub(crate) fn counted(
    mut report: crate::report::ReproReport,
    cluster: &crate::cluster::Cluster,
) -> crate::report::ReproReport {
    use std::sync::atomic::Ordering;
    let stats = cluster.barrier_stats();
    report.epochs = stats.injected.load(Ordering::Relaxed);
    report.recoveries = stats.recoveries.load(Ordering::Relaxed);
    report.max_committed_epoch = cluster.hummock.max_committed_epoch().0;
    report.meta_leader_changes = cluster.meta_leader_changes();
    report
}

/// Waits (at most `budget` of virtual time) until `view` is created or an actor has failed; once created,
/// until the cluster is ready and a checkpoint after it has committed. Out of budget is `Stuck`.
pub(crate) async fn await_created(
    cluster: &crate::cluster::Cluster,
    view: epochlab_common::TableId,
    budget: std::time::Duration,
) -> Result<(), ScenarioError> {
    let creating = || {
        let rel = cluster.meta().relation(view);
        rel.is_some_and(|r| r.state == epochlab_meta::JobState::Creating)
    };
    let failed = || cluster.failures.first_state_error().is_some();
    let done = tokio::time::timeout(budget, async {
        while creating() && !failed() {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    });
    if done.await.is_err() {
        let report = crate::report::stuck_report(cluster, "the view's backfill did not finish");
        return Err(ScenarioError::Stuck(report));
    }
    if failed() {
        return Ok(());
    }
    cluster.wait_ready().await;
    cluster
        .meta()
        .flush()
        .await
        .map_err(ScenarioError::ddl("the flush failed"))
}

/// A directed scenario's failure, if the run has one: the first state error of an actor (the error, the
/// actor, the vnode when the error names one), else the violations (the symptoms first, each beside the
/// check that saw it). `false` when the run neither failed an actor nor broke a check.
pub(crate) fn failed(
    report: &mut crate::report::ReproReport,
    failure: Option<epochlab_stream::task::build::ActorFailure>,
) -> bool {
    use epochlab_stream::executor::StreamExecutorError;
    if let Some(failure) = failure {
        report.outcome = crate::report::Outcome::Failed;
        report.error = Some(failure.error.to_string());
        report.caught_by = Some(format!(
            "actor failure ({})",
            failure.error.reason().as_str()
        ));
        report.failing_actor = Some(failure.actor.0);
        let vnode = match &failure.error {
            StreamExecutorError::ProgressDiverged { vnode, .. }
            | StreamExecutorError::BackfillStatesDiffer { vnode, .. } => Some(*vnode),
            StreamExecutorError::ProgressNotFound { vnode } => Some(vnode.to_index() as u32),
            _ => None,
        };
        if vnode.is_some() {
            report.failing_vnode = vnode;
        }
        return true;
    }
    if report.violations.is_empty() {
        return false;
    }
    let details: Vec<&str> = report
        .violations
        .iter()
        .map(|v| v.detail.as_str())
        .collect();
    let checks: Vec<String> = report
        .violations
        .iter()
        .map(|v| format!("{} checker", v.invariant))
        .collect();
    report.outcome = crate::report::Outcome::Failed;
    report.error = Some(details.join("; "));
    report.caught_by = Some(checks.join(", "));
    true
}

/// A directed scenario that ran out of a step's budget: `stuck`, with the run's counts and the cluster's
/// state when it gave up.
pub(crate) fn stuck(
    report: crate::report::ReproReport,
    cluster: &crate::cluster::Cluster,
    why: ScenarioError,
) -> crate::report::ReproReport {
    let mut report = counted(report, cluster);
    report.outcome = crate::report::Outcome::Stuck;
    report.error = Some(why.to_string());
    report
}

/// (oracle) The view `view` holds its query over the committed `table`: every row of it, nothing else.
pub(crate) fn check_view(
    cluster: &crate::cluster::Cluster,
    checkers: &crate::checkers::Checkers,
    table: epochlab_common::TableId,
    view: epochlab_common::TableId,
) {
    use std::collections::BTreeSet;
    let key = |r: &epochlab_common::OwnedRow| format!("{r:?}");
    let want: BTreeSet<String> = cluster.committed_rows(table).iter().map(key).collect();
    let got: BTreeSet<String> = cluster.committed_rows(view).iter().map(key).collect();
    let missing = want.difference(&got).count();
    let extra = got.difference(&want).count();
    if missing + extra > 0 {
        let mut v = crate::report::Violation::new(
            "oracle",
            format!("view m differs from its query: {missing} rows missing, {extra} extra"),
        );
        v.table = Some(view.0);
        checkers.violation(v);
    }
}

/// The story of a scenario whose finding is an actor's failure on its state: from the first log line that
/// contains `from`, the scenario's steps, the DDL and the recoveries' starts, up to that failure (its
/// fallout left out); the last 40 such lines.
pub(crate) fn state_failure_timeline(lines: &[String], from: &str) -> Vec<String> {
    let start = lines.iter().position(|l| l.contains(from)).unwrap_or(0);
    let state_failure =
        |l: &String| l.contains(" actor failure: ") && l.contains("reason=inconsistent_state");
    let keep = |l: &String| {
        [" scenario: ", " ddl: ", " recovery: start "]
            .iter()
            .any(|k| l.contains(k))
            || state_failure(l)
    };
    let mut out: Vec<String> = lines[start..].iter().filter(|l| keep(l)).cloned().collect();
    if let Some(i) = out.iter().position(state_failure) {
        out.truncate(i + 1);
    }
    let from = out.len().saturating_sub(40);
    out.split_off(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bug_has_buggy_and_fixed_and_only_its_own_toggle() {
        let mut owners = std::collections::BTreeMap::new();
        for bug in BugId::ALL {
            assert_eq!(bug.as_str().parse::<BugId>(), Ok(bug));
            assert_eq!(bug.info().id, bug);
            assert_eq!(&bug.modes()[..2], &[Mode::Buggy, Mode::Fixed]);
            assert_eq!(bug.toggles(Mode::Fixed), Ok(Toggles::default()));
            let buggy = bug.toggles(Mode::Buggy).unwrap();
            let own: Vec<&str> = buggy.names().collect();
            assert_eq!(
                own.len(),
                1,
                "{bug}'s buggy mode sets one toggle: {buggy:?}"
            );
            for &mode in bug.modes() {
                let set: Vec<&str> = bug.toggles(mode).unwrap().names().collect();
                assert!(
                    set.iter().all(|name| *name == own[0]),
                    "{bug} {mode}: {set:?}"
                );
            }
            if let Some(other) = owners.insert(own[0], bug) {
                panic!("{bug} and {other} share the toggle {}", own[0]);
            }
        }
        assert_eq!(
            BugId::Rw22384
                .toggles(Mode::PurgeBeforeReset)
                .unwrap_err()
                .to_string(),
            "bug 22384 has the modes buggy, fixed, not `purge-before-reset`"
        );
        assert!("16816".parse::<BugId>().is_err());
    }
}
