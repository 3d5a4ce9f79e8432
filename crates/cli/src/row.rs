//! The JSON that `--json` writes: one object per line, through serde.

use epochlab_sim::Violation;
use serde::{Deserialize, Serialize};

use crate::repro::{Run, replay};

/// One run (`epochlab repro --json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRow {
    /// The bug of the catalogue (`14910`, `22384`).
    pub bug: String,
    pub mode: String,
    pub seed: u64,
    /// `failed`, `passed`, `not_reproducible` or `stuck`.
    pub outcome: String,
    /// Whether the outcome met the mode's expectation: `met`, `unexpected` (exit 1) or `not_shown` (exit 3).
    pub verdict: String,
    /// What failed; for `not_reproducible` and `stuck`, why.
    pub error: Option<String>,
    /// Which check made the run fail.
    pub caught_by: Option<String>,
    /// A failure's kind: `actor_failure`, `invariant`, `oracle` or `panic` (a task panicked).
    pub kind: Option<String>,
    pub failing_vnode: Option<u32>,
    pub failing_actor: Option<u32>,
    pub epochs: u64,
    pub max_committed_epoch: u64,
    pub recoveries: u64,
    pub violations: Vec<ViolationRow>,
    pub notes: Vec<String>,
    pub persist_check: bool,
    /// `--crash-meta-at`: the point armed, and where meta died (`drop-after-fragments: DROP SINK ...`).
    #[serde(default)]
    pub crash_meta_at: Option<String>,
    #[serde(default)]
    pub meta_crashes: Vec<String>,
    /// `--meta-nodes`, and how many times another meta became leader.
    #[serde(default = "one_meta")]
    pub meta_nodes: u32,
    #[serde(default)]
    pub meta_leader_changes: u64,
    pub virtual_ms: u64,
    pub wall_ms: u64,
    /// The event log's digest: the same flags give the same digest.
    pub digest: String,
    /// The command that replays this run.
    pub replay: String,
}

fn one_meta() -> u32 {
    1
}

/// One invariant violation a checker observed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViolationRow {
    pub invariant: String,
    pub detail: String,
    pub actor: Option<u32>,
    pub table: Option<u32>,
    pub epoch: Option<u64>,
    /// Virtual time, microseconds since the simulation's origin.
    pub at_us: Option<u64>,
}

impl From<&Violation> for ViolationRow {
    fn from(v: &Violation) -> Self {
        Self {
            invariant: v.invariant.to_string(),
            detail: v.detail.clone(),
            actor: v.actor,
            table: v.table,
            epoch: v.epoch,
            at_us: v.at_us,
        }
    }
}

impl RunRow {
    pub fn of(run: &Run) -> Self {
        let r = &run.report;
        Self {
            bug: r.params.bug.as_str().to_string(),
            mode: r.params.mode.as_str().to_string(),
            seed: r.params.seed,
            outcome: r.outcome.as_str().to_string(),
            verdict: crate::expect::Verdict::of(r).as_str().to_string(),
            error: r.error.clone(),
            caught_by: r.caught_by.clone(),
            kind: (r.outcome == epochlab_sim::Outcome::Failed).then(|| {
                epochlab_sim::workload::FailureKind::of_repro(r)
                    .as_str()
                    .to_string()
            }),
            failing_vnode: r.failing_vnode,
            failing_actor: r.failing_actor,
            epochs: r.epochs,
            max_committed_epoch: r.max_committed_epoch,
            recoveries: r.recoveries,
            violations: r.violations.iter().map(ViolationRow::from).collect(),
            notes: r.notes.clone(),
            persist_check: r.params.persist_check,
            crash_meta_at: r.params.crash_meta_at.map(|p| p.to_string()),
            meta_crashes: r
                .meta_crashes
                .iter()
                .map(|c| format!("{}: {}", c.point, c.ddl))
                .collect(),
            meta_nodes: r.params.meta_nodes,
            meta_leader_changes: r.meta_leader_changes,
            virtual_ms: run.virtual_ms,
            wall_ms: run.wall_ms,
            digest: run.digest.clone(),
            replay: replay(&r.params),
        }
    }
}

/// One mode of `--check-determinism --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeterminismRow {
    pub mode: String,
    pub verdict: Determinism,
    /// Each child's digest, in the order they ran (fewer when a child crashed).
    pub digests: Vec<String>,
    /// Each child's outcome, in the same order.
    pub outcomes: Vec<String>,
    /// Where the two event logs first differ, when they do.
    pub first_difference: Option<Difference>,
    /// How the crashed child ended, e.g. `status 101` or `signal 9`.
    pub crash: Option<String>,
    /// The last lines of the crashed child's stderr.
    pub stderr_tail: Vec<String>,
    /// The command that runs this mode's check again.
    pub replay: String,
}

/// What `--check-determinism` found for one mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Determinism {
    /// Both children wrote the same digest.
    Deterministic,
    /// The digests differ.
    NotDeterministic,
    /// A child crashed (see `crash`).
    Crashed,
}

/// The first event at which two event logs differ (1-based), or where the shorter one ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    pub event: usize,
    pub first: Option<String>,
    pub second: Option<String>,
}

/// Where two event logs first differ, if they do.
pub fn first_difference(a: &str, b: &str) -> Option<Difference> {
    let (mut a, mut b) = (a.lines(), b.lines());
    let mut event = 0;
    loop {
        event += 1;
        match (a.next(), b.next()) {
            (None, None) => return None,
            (x, y) if x == y => {}
            (x, y) => {
                return Some(Difference {
                    event,
                    first: x.map(str::to_string),
                    second: y.map(str::to_string),
                });
            }
        }
    }
}
