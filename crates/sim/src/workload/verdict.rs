//! A plan run's verdict, and failure signatures: one decision for both the random plans and the directed
//! scenario, so a soak groups them alike.

use crate::report::{Outcome, ReproReport, Violation};
use crate::runtime::TaskPanic;

/// What caught a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FailureKind {
    /// An actor failed on its state (a missing row, a diverged progress row, an inconsistent write).
    ActorFailure,
    /// A checker's invariant (I1 commit order, I2 unregister-in-use or zombie access, I3 table set).
    Invariant,
    /// A view or sink differs from the model of its query, or a table from what the model knows it holds.
    Oracle,
    /// A task of the run panicked (the run ended there, as madsim ends a simulation).
    Panic,
    /// Meta's store refused a commit or could not be opened: what it holds is not what meta had.
    MetaStore,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::ActorFailure => "actor_failure",
            FailureKind::Invariant => "invariant",
            FailureKind::Oracle => "oracle",
            FailureKind::Panic => "panic",
            FailureKind::MetaStore => "meta_store",
        }
    }

    /// The kind of a directed scenario's failure: a panic, or the kind of the checker named `caught_by`.
    pub fn of_repro(report: &ReproReport) -> Self {
        if report.panic.is_some() {
            return FailureKind::Panic;
        }
        match report.caught_by.as_deref() {
            Some("oracle checker") => FailureKind::Oracle,
            Some(c) if c.starts_with('I') => FailureKind::Invariant,
            _ => FailureKind::ActorFailure,
        }
    }
}

/// Numbers (ids, epochs, vnodes, times) masked, so one bug hit at different places has one signature.
/// Digits that continue a word (`Int16`, `I2`) are part of the name and stay.
pub fn mask(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_number = false;
    let mut in_word = false;
    for c in text.chars() {
        if c.is_ascii_digit() && !in_word {
            if !in_number {
                out.push('N');
            }
            in_number = true;
            continue;
        }
        in_word = c.is_ascii_alphanumeric() && !in_number || (in_word && c.is_ascii_digit());
        in_number = false;
        out.push(c);
    }
    out
}

/// The signature of a failure: its kind and its error, masked.
pub fn failure_signature(kind: FailureKind, error: &str) -> String {
    format!("{}: {}", kind.as_str(), mask(error))
}

/// The signature of a stuck run: what it waits for, up to the first colon (the rest names epochs and
/// workers).
pub fn stuck_signature(what: &str) -> String {
    format!("stuck: {}", mask(what.split(':').next().unwrap_or(what)))
}

/// The verdict of one plan run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanReport {
    /// `Passed`, `Failed` or `Stuck` (never `NotReproducible`: that belongs to the directed scenario).
    pub outcome: Outcome,
    pub kind: Option<FailureKind>,
    /// What failed, or what is stuck.
    pub error: Option<String>,
    pub violations: Vec<Violation>,
    pub steps: u32,
    pub steps_skipped: u32,
    pub epochs: u64,
    pub recoveries: u64,
    /// How many times meta was started again from its store during the run (`kill meta` steps).
    pub meta_restarts: u64,
    /// Times another meta became leader (several metas on a lease).
    pub meta_leader_changes: u64,
    /// The crash points meta died at (`crash meta at` steps), in order.
    pub meta_crashes: Vec<epochlab_meta::CrashPoint>,
    /// The panic that ended the run (kind `panic`).
    pub panic: Option<TaskPanic>,
}

impl PlanReport {
    fn new(outcome: Outcome) -> Self {
        Self {
            outcome,
            kind: None,
            error: None,
            violations: Vec::new(),
            steps: 0,
            steps_skipped: 0,
            epochs: 0,
            recoveries: 0,
            meta_restarts: 0,
            meta_leader_changes: 0,
            meta_crashes: Vec::new(),
            panic: None,
        }
    }

    pub fn passed() -> Self {
        Self::new(Outcome::Passed)
    }

    pub fn failed(kind: FailureKind, error: String, violations: Vec<Violation>) -> Self {
        Self {
            kind: Some(kind),
            error: Some(error),
            violations,
            ..Self::new(Outcome::Failed)
        }
    }

    /// A run a task's panic ended: `failed`, kind `panic`, its error the message and the location.
    pub fn panicked(p: TaskPanic) -> Self {
        Self {
            panic: Some(p.clone()),
            ..Self::failed(FailureKind::Panic, p.to_string(), Vec::new())
        }
    }

    pub fn stuck(what: String) -> Self {
        Self {
            error: Some(what),
            ..Self::new(Outcome::Stuck)
        }
    }

    /// Equal signatures are the same failure; `None` for a pass.
    pub fn signature(&self) -> Option<String> {
        let error = self.error.as_deref().unwrap_or("");
        match (self.outcome, self.kind) {
            (Outcome::Failed, Some(kind)) => Some(failure_signature(kind, error)),
            (Outcome::Stuck, _) => Some(stuck_signature(error)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_masked_in_signatures() {
        assert_eq!(
            mask("row [Some(Int16(196))] not found (by the backfill persist check)"),
            "row [Some(Int16(N))] not found (by the backfill persist check)"
        );
        assert_eq!(mask("actor 12 at epoch 5866155"), "actor N at epoch N");
        assert_eq!(
            mask("I2 zombie-access: actor 3 read table 3 at 1.25 s"),
            "I2 zombie-access: actor N read table N at N.N s"
        );
        assert_eq!(
            stuck_signature("no epoch committed for 180 s: 2 barrier(s) in flight"),
            "stuck: no epoch committed for N s"
        );
    }
}
