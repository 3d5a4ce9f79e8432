//! What a run answers: its [`Outcome`], the [`Violation`]s the checkers saw, and the [`ReproReport`] every
//! directed scenario returns (and a random plan's run builds on); [`stuck_report`] says what a stuck cluster
//! waits for.

use std::sync::atomic::Ordering;

use crate::bugs::b14910::FaultPlan;
use crate::capture::CapturedLine;
use crate::cluster::Cluster;
use crate::repro::ReproParams;
use crate::runtime::TaskPanic;

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A check fired: the error names it (`caught_by`).
    Failed,
    /// The scenario ran (drop, fault, recovery) and nothing failed.
    Passed,
    /// The scenario could not show what it is for: it never set up (the reason is in `error`), or `buggy`
    /// ran its recovery without any check firing (the reason says why, from the event log).
    NotReproducible,
    /// Epochs stopped committing: `error` lists the in-flight barriers and what each waits for.
    Stuck,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Failed => "failed",
            Outcome::Passed => "passed",
            Outcome::NotReproducible => "not_reproducible",
            Outcome::Stuck => "stuck",
        }
    }
}

/// One invariant violation a checker observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The invariant, e.g. `I2 zombie-access`, `I3 table-set`, `I1 commit-order`.
    pub invariant: &'static str,
    /// What was seen, in one line.
    pub detail: String,
    pub actor: Option<u32>,
    pub table: Option<u32>,
    pub epoch: Option<u64>,
    /// Virtual time of the observation, microseconds since the simulation's origin.
    pub at_us: Option<u64>,
}

impl Violation {
    pub fn new(invariant: &'static str, detail: impl Into<String>) -> Self {
        Self {
            invariant,
            detail: detail.into(),
            actor: None,
            table: None,
            epoch: None,
            at_us: None,
        }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.invariant, self.detail)
    }
}

#[derive(Clone, Debug)]
pub struct ReproReport {
    pub params: ReproParams,
    pub outcome: Outcome,
    pub error: Option<String>,
    pub failing_vnode: Option<u32>,
    pub failing_actor: Option<u32>,
    pub epochs: u64,
    pub max_committed_epoch: u64,
    pub recoveries: u64,
    pub plan: Option<FaultPlan>,
    /// Event-log lines around the failure: the unregister, the actor's last persist, the failing read.
    pub timeline: Vec<String>,
    /// The failing actor's backfill log lines, as in the original failure log.
    pub original_lines: Vec<CapturedLine>,
    pub violations: Vec<Violation>,
    /// Which check made the run fail (e.g. `backfill persist check`, `I2 zombie-access detector`).
    pub caught_by: Option<String>,
    /// Explanations beside the outcome (e.g. why a check that was on did not fire).
    pub notes: Vec<String>,
    /// The panic that ended the run (outcome `failed`, kind `panic`).
    pub panic: Option<TaskPanic>,
    /// Where meta died (`--crash-meta-at`), in order, each with the DDL it cut off.
    pub meta_crashes: Vec<MetaCrash>,
    /// How many times another meta became leader (`--meta-nodes` above 1).
    pub meta_leader_changes: u64,
}

/// Meta died at a crash point of one of a scenario's DDLs (and restarted from its store).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaCrash {
    pub point: epochlab_meta::CrashPoint,
    /// The DDL, as SQL would say it (`DROP SINK sink_14910`).
    pub ddl: &'static str,
}

impl ReproReport {
    pub fn new(params: ReproParams) -> Self {
        Self {
            params,
            outcome: Outcome::Passed,
            error: None,
            failing_vnode: None,
            failing_actor: None,
            epochs: 0,
            max_committed_epoch: 0,
            recoveries: 0,
            plan: None,
            timeline: Vec::new(),
            original_lines: Vec::new(),
            violations: Vec::new(),
            caught_by: None,
            notes: Vec::new(),
            panic: None,
            meta_crashes: Vec::new(),
            meta_leader_changes: 0,
        }
    }

    /// A run a task's panic ended: `failed`, kind `panic`, with its message and location.
    pub fn panicked(mut self, p: TaskPanic) -> Self {
        self.outcome = Outcome::Failed;
        self.error = Some(p.to_string());
        self.caught_by = Some("task panic".to_string());
        self.panic = Some(p);
        self
    }

    pub(crate) fn not_reproducible(mut self, why: String) -> Self {
        self.outcome = Outcome::NotReproducible;
        self.error = Some(why);
        self
    }
}

/// What the barrier manager is waiting for (and, if a compaction group's writes are stopped, why: the
/// nodes hold back that group's data, so no barrier can complete).
pub fn stuck_report(cluster: &Cluster, what: &str) -> String {
    let mut report = barrier_report(cluster, what);
    if let Some(stop) = write_stop_report(cluster) {
        report.push_str("; ");
        report.push_str(&stop);
    }
    report
}

/// What the barrier manager is waiting for, alone.
pub(crate) fn barrier_report(cluster: &Cluster, what: &str) -> String {
    let stats = cluster.barrier_stats();
    format!(
        "{what}: {} barrier(s) in flight, {} injected, {} completed, last completed prev epoch {}, last \
         injected epoch {}, {} recoveries, scheduler {:?}; waiting: {}",
        stats.in_flight.load(Ordering::Relaxed),
        stats.injected.load(Ordering::Relaxed),
        stats.completed.load(Ordering::Relaxed),
        stats.last_completed_prev_epoch.load(Ordering::Relaxed),
        stats.last_injected_epoch.load(Ordering::Relaxed),
        stats.recoveries.load(Ordering::Relaxed),
        cluster.meta().scheduler().status(),
        stats.waiting_description()
    )
}

/// The compaction groups whose writes are stopped, and why, in one line; `None` when none is.
pub(crate) fn write_stop_report(cluster: &Cluster) -> Option<String> {
    let stopped = cluster.hummock.write_stopped_groups();
    if stopped.is_empty() {
        return None;
    }
    let parts: Vec<String> = stopped
        .iter()
        .map(|(group, g)| {
            let cause = g
                .last_error
                .as_ref()
                .map_or_else(|| "no compaction ran".to_string(), |e| e.to_string());
            format!(
                "writes to group {group} stopped at {} L0 sub-levels at {:.3} s, after {} failed compaction \
                 tasks: {cause}",
                g.sub_levels,
                g.write_stopped_since_us.unwrap_or(0) as f64 / 1e6,
                g.failures
            )
        })
        .collect();
    Some(parts.join("; "))
}
