//! The catalogue of RisingWave bugs epochlab reproduces on demand: each one's id (the RisingWave issue or PR
//! number users know), its mechanism in one line, the RisingWave fix, its modes and the command that shows it.
//! An entry that is epochlab's own check rather than a RisingWave bug has a name instead of a number
//! (`reschedule-unpinned`), and its `fix` says what epochlab checks.
//!
//! A run names a bug and a mode; [`Toggles::of`] turns them into the engine's toggles, every one at its fixed
//! value but the named bug's. Each toggle is a config field of the crate where RisingWave had the bug, read
//! there in exactly one place; nothing else in the engine knows which bug is on. Adding a bug is a module
//! here (its toggle in [`Toggles`], its directed scenario) and a row in [`BugId`].

use std::fmt;
use std::str::FromStr;

use epochlab_barrier::OnWorkerErr;
use epochlab_meta::{ConfigChangeWait, DropMode, PreApplyCancel, RescheduleBackfilling};
use epochlab_stream::BackfillVnode;

pub mod b14910;
pub mod b15144;
pub mod b16815;
pub mod b19138;
pub mod b22384;
pub mod record;
pub mod reschedule_unpinned;

/// A bug of the catalogue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BugId {
    /// RisingWave #14910: a dropped job's state tables unregistered while its actors still ran.
    #[default]
    Rw14910,
    /// RisingWave #22384: an epoch committed without a crashed worker's data.
    Rw22384,
    /// RisingWave #16815: arrangement backfill derives an upstream row's vnode from its pk.
    Rw16815,
    /// RisingWave #19138: a no-shuffle backfill scaled in while it backfills; its vnodes' states differ.
    Rw19138,
    /// RisingWave #15144: a cancel pre-applied by recovery leaves the job's tables registered in storage.
    Rw15144,
    /// epochlab's own: an online reschedule's Update sent before the nodes pinned its Pause's commit.
    RescheduleUnpinned,
}

/// What the catalogue says about one bug.
#[derive(Clone, Copy, Debug)]
pub struct BugInfo {
    pub id: BugId,
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
}

impl Setting {
    pub const ALL: [Setting; 8] = [
        Setting::Rows,
        Setting::Vnodes,
        Setting::Parallelism,
        Setting::ComputeNodes,
        Setting::RateLimit,
        Setting::BarrierLatency,
        Setting::CheckpointFrequency,
        Setting::PersistCheck,
    ];
}

impl BugId {
    /// Every implemented bug, in catalogue order.
    pub const ALL: [BugId; 6] = [
        BugId::Rw14910,
        BugId::Rw22384,
        BugId::Rw16815,
        BugId::Rw19138,
        BugId::Rw15144,
        BugId::RescheduleUnpinned,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BugId::Rw14910 => "14910",
            BugId::Rw22384 => "22384",
            BugId::Rw16815 => "16815",
            BugId::Rw19138 => "19138",
            BugId::Rw15144 => "15144",
            BugId::RescheduleUnpinned => "reschedule-unpinned",
        }
    }

    pub fn info(self) -> &'static BugInfo {
        match self {
            BugId::Rw14910 => &b14910::INFO,
            BugId::Rw22384 => &b22384::INFO,
            BugId::Rw16815 => &b16815::INFO,
            BugId::Rw19138 => &b19138::INFO,
            BugId::Rw15144 => &b15144::INFO,
            BugId::RescheduleUnpinned => &reschedule_unpinned::INFO,
        }
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
        match self {
            BugId::RescheduleUnpinned => format!("epochlab's {self}"),
            _ => format!("RisingWave #{self}"),
        }
    }

    /// The directed scenario's name in traces (`risingwave-14910`; `epochlab-...` for epochlab's own checks).
    pub fn scenario_name(self) -> &'static str {
        match self {
            BugId::Rw14910 => "risingwave-14910",
            BugId::Rw22384 => "risingwave-22384",
            BugId::Rw16815 => "risingwave-16815",
            BugId::Rw19138 => "risingwave-19138",
            BugId::Rw15144 => "risingwave-15144",
            BugId::RescheduleUnpinned => "epochlab-reschedule-unpinned",
        }
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
        Toggles::of(self.bug, self.mode).expect("a BugMode's mode is one of its bug's")
    }

    /// The run's label in logs: `buggy` for #14910, `22384 buggy` for the others.
    pub fn label(self) -> String {
        match self.bug {
            BugId::Rw14910 => self.mode.as_str().to_string(),
            bug => format!("{bug} {}", self.mode),
        }
    }
}

/// Every toggle of the engine, each where RisingWave had its bug. The default is every bug fixed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Toggles {
    /// #14910: when meta unregisters a dropped job's tables (`MetaConfig::drop_mode`).
    pub drop_mode: DropMode,
    /// #22384: what a worker's error does to the nodes an epoch still waits for
    /// (`BarrierConfig::on_worker_err`).
    pub on_worker_err: OnWorkerErr,
    /// #16815: how the arrangement backfill derives an upstream row's vnode when it marks upstream chunks
    /// (`StreamConfig::backfill_vnode`).
    pub backfill_vnode: BackfillVnode,
    /// #19138: which backfilling jobs recovery's scale-in reschedules (`MetaConfig::reschedule_backfilling`).
    pub reschedule_backfilling: RescheduleBackfilling,
    /// epochlab's reschedule-unpinned check: what an online reschedule's Pause waits for before its Update goes
    /// out (`MetaConfig::config_change_wait`).
    pub config_change_wait: ConfigChangeWait,
    /// #15144: what recovery's pre-apply of a buffered cancel does with the job's state tables
    /// (`MetaConfig::pre_apply_cancel`).
    pub pre_apply_cancel: PreApplyCancel,
}

impl Default for Toggles {
    fn default() -> Self {
        Self {
            drop_mode: DropMode::Fixed,
            on_worker_err: OnWorkerErr::RemoveIfNothingToCollect,
            backfill_vnode: BackfillVnode::DistKey,
            reschedule_backfilling: RescheduleBackfilling::ReschedulableOnly,
            config_change_wait: ConfigChangeWait::EpochCommit,
            pre_apply_cancel: PreApplyCancel::Unregister,
        }
    }
}

impl Toggles {
    /// The toggles of a run of `bug` in `mode`: that bug's toggle set by its module, the others fixed.
    pub fn of(bug: BugId, mode: Mode) -> Result<Self, BugError> {
        let mode = bug.check_mode(mode)?;
        let mut t = Toggles::default();
        match bug {
            BugId::Rw14910 => t.drop_mode = b14910::drop_mode(mode),
            BugId::Rw22384 => t.on_worker_err = b22384::on_worker_err(mode),
            BugId::Rw16815 => t.backfill_vnode = b16815::backfill_vnode(mode),
            BugId::Rw19138 => t.reschedule_backfilling = b19138::reschedule_backfilling(mode),
            BugId::Rw15144 => t.pre_apply_cancel = b15144::pre_apply_cancel(mode),
            BugId::RescheduleUnpinned => {
                t.config_change_wait = reschedule_unpinned::config_change_wait(mode)
            }
        }
        Ok(t)
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
    /// The cluster's state when a step ran out of its budget ([`crate::scenario::stuck_report`]).
    #[error("{0}")]
    Stuck(String),
}

impl ScenarioError {
    /// A DDL step's error, named.
    pub(crate) fn ddl(what: &'static str) -> impl FnOnce(epochlab_meta::DdlError) -> Self {
        move |source| ScenarioError::Ddl { what, source }
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

/// A directed scenario's cluster of two compute nodes: started with `t`'s toggles, `hook` given the cluster,
/// the checkers installed and the base network laid.
pub(crate) async fn start_two_nodes(
    ctx: &crate::runtime::SimContext,
    t: Toggles,
    hook: Option<crate::scenario::ClusterHook>,
    vnodes: u32,
    barrier_interval_ms: u64,
) -> (
    std::sync::Arc<crate::cluster::Cluster>,
    crate::checkers::Checkers,
) {
    let mut config = crate::scenario::cluster_config_for(t, vnodes, barrier_interval_ms, 1, true);
    config.compute_nodes = 2;
    let cluster = std::sync::Arc::new(crate::cluster::Cluster::start(ctx, config).await);
    if let Some(hook) = hook {
        hook(cluster.clone());
    }
    let checkers = crate::checkers::Checkers::install(&cluster, t.drop_mode);
    crate::scenario::base_network(&cluster);
    (cluster, checkers)
}

/// A directed scenario's report with the run's counts: epochs injected, recoveries, max committed epoch.
pub(crate) fn counted(
    mut report: crate::scenario::ReproReport,
    cluster: &crate::cluster::Cluster,
) -> crate::scenario::ReproReport {
    use std::sync::atomic::Ordering;
    let stats = cluster.barrier_stats();
    report.epochs = stats.injected.load(Ordering::Relaxed);
    report.recoveries = stats.recoveries.load(Ordering::Relaxed);
    report.max_committed_epoch = cluster.hummock.max_committed_epoch().0;
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
        let rel = cluster.meta.relation(view);
        rel.is_some_and(|r| r.state == epochlab_meta::JobState::Creating)
    };
    let failed = || cluster.failures.first_state_error().is_some();
    let done = tokio::time::timeout(budget, async {
        while creating() && !failed() {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    });
    if done.await.is_err() {
        let report = crate::scenario::stuck_report(cluster, "the view's backfill did not finish");
        return Err(ScenarioError::Stuck(report));
    }
    if failed() {
        return Ok(());
    }
    cluster.wait_ready().await;
    cluster
        .meta
        .flush()
        .await
        .map_err(ScenarioError::ddl("the flush failed"))
}

/// A directed scenario's failure, if the run has one: the first state error of an actor (the error, the
/// actor, the vnode when the error names one), else the violations (the symptoms first, each beside the
/// check that saw it). `false` when the run neither failed an actor nor broke a check.
pub(crate) fn failed(
    report: &mut crate::scenario::ReproReport,
    failure: Option<epochlab_stream::task::build::ActorFailure>,
) -> bool {
    use epochlab_stream::executor::StreamExecutorError;
    if let Some(failure) = failure {
        report.outcome = crate::scenario::Outcome::Failed;
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
    report.outcome = crate::scenario::Outcome::Failed;
    report.error = Some(details.join("; "));
    report.caught_by = Some(checks.join(", "));
    true
}

/// A directed scenario that ran out of a step's budget: `stuck`, with the run's counts and the cluster's
/// state when it gave up.
pub(crate) fn stuck(
    report: crate::scenario::ReproReport,
    cluster: &crate::cluster::Cluster,
    why: ScenarioError,
) -> crate::scenario::ReproReport {
    let mut report = counted(report, cluster);
    report.outcome = crate::scenario::Outcome::Stuck;
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
        let mut v = crate::scenario::Violation::new(
            "oracle",
            format!("view m differs from its query: {missing} rows missing, {extra} extra"),
        );
        v.table = Some(view.0);
        checkers.violation(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bug_has_buggy_and_fixed_and_only_its_own_toggle() {
        for bug in BugId::ALL {
            assert_eq!(bug.as_str().parse::<BugId>(), Ok(bug));
            assert_eq!(bug.info().id, bug);
            assert_eq!(&bug.modes()[..2], &[Mode::Buggy, Mode::Fixed]);
            assert_eq!(Toggles::of(bug, Mode::Fixed), Ok(Toggles::default()));
            assert_ne!(Toggles::of(bug, Mode::Buggy), Ok(Toggles::default()));
        }
        assert_eq!(
            Toggles::of(BugId::Rw22384, Mode::PurgeBeforeReset)
                .unwrap_err()
                .to_string(),
            "bug 22384 has the modes buggy, fixed, not `purge-before-reset`"
        );
        assert!("16816".parse::<BugId>().is_err());
    }
}
