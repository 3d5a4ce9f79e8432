//! What each mode's run must show, and the exit status that follows: the one place that decides both the
//! table's `(unexpected)` / `(not shown)` marks and `epochlab repro`'s exit status.

use epochlab_sim::Mode;
use epochlab_sim::{Outcome, ReproReport};

/// What a mode's run is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expectation {
    /// `buggy`: a check must catch the bug (any check; `caught_by` says which).
    Fails,
    /// `fixed`: the scenario must run through and nothing may fail.
    Passes,
    /// `purge-before-reset`: its window may be caught or not, but epochs must keep committing.
    Finishes,
}

/// How a run's outcome stands against its mode's expectation. Ordered by how much it weighs in the exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Exit 0.
    Met,
    /// The run could not show what it is for (exit 3).
    NotShown,
    /// Something that must pass failed, or a run got stuck (exit 1).
    Unexpected,
}

impl Expectation {
    pub fn of(mode: Mode) -> Self {
        match mode {
            Mode::Buggy => Expectation::Fails,
            Mode::Fixed => Expectation::Passes,
            Mode::PurgeBeforeReset => Expectation::Finishes,
        }
    }

    /// The decision, for the table and the exit status alike.
    pub fn judge(self, outcome: Outcome) -> Verdict {
        use Expectation::{Fails, Finishes, Passes};
        use Outcome::{Failed, NotReproducible, Passed, Stuck};
        match (self, outcome) {
            (_, Stuck) => Verdict::Unexpected,
            (Fails, Failed) | (Passes, Passed) => Verdict::Met,
            (Finishes, Failed | Passed | NotReproducible) => Verdict::Met,
            (Passes, Failed) => Verdict::Unexpected,
            // A buggy run that passed means no check fired: the scenario did not show the bug.
            (Fails, Passed | NotReproducible) | (Passes, NotReproducible) => Verdict::NotShown,
        }
    }
}

impl Verdict {
    pub fn of(report: &ReproReport) -> Self {
        // A task panic is an engine defect, unless it is a buggy run's own recorded panic (#12990's meta
        // panic): a buggy run that panicked otherwise did not fail the way it is for, and a fixed or
        // purge-before-reset run must not panic at all.
        if let Some(panic) = &report.panic {
            let params = &report.params;
            let own = params.mode == Mode::Buggy && params.bug.is_own_panic(panic);
            if !own {
                return Verdict::Unexpected;
            }
        }
        Expectation::of(report.params.mode).judge(report.outcome)
    }

    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Met => 0,
            Verdict::Unexpected => 1,
            Verdict::NotShown => 3,
        }
    }

    /// The verdict's name in JSON rows.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::Unexpected => "unexpected",
            Verdict::NotShown => "not_shown",
        }
    }

    /// What the table prints after the outcome.
    pub fn mark(self) -> &'static str {
        match self {
            Verdict::Met => "",
            Verdict::Unexpected => " (unexpected)",
            Verdict::NotShown => " (not shown)",
        }
    }
}

/// The exit status of a set of runs: the weightiest verdict's.
pub fn exit_code(verdicts: impl IntoIterator<Item = Verdict>) -> u8 {
    verdicts
        .into_iter()
        .max()
        .unwrap_or(Verdict::Met)
        .exit_code()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTCOMES: [Outcome; 4] = [
        Outcome::Failed,
        Outcome::Passed,
        Outcome::NotReproducible,
        Outcome::Stuck,
    ];

    fn code(mode: Mode, outcome: Outcome) -> u8 {
        Expectation::of(mode).judge(outcome).exit_code()
    }

    #[test]
    fn every_mode_and_outcome_has_its_exit_code() {
        let table = [
            (Mode::Buggy, [0, 3, 3, 1]),
            (Mode::Fixed, [1, 0, 3, 1]),
            (Mode::PurgeBeforeReset, [0, 0, 0, 1]),
        ];
        for (mode, codes) in table {
            for (outcome, want) in OUTCOMES.into_iter().zip(codes) {
                assert_eq!(code(mode, outcome), want, "{mode:?} {outcome:?}");
            }
        }
    }

    #[test]
    fn marks_follow_the_exit_code() {
        for mode in [Mode::Buggy, Mode::Fixed, Mode::PurgeBeforeReset] {
            for outcome in OUTCOMES {
                let v = Expectation::of(mode).judge(outcome);
                let want = match v.exit_code() {
                    0 => "",
                    1 => " (unexpected)",
                    _ => " (not shown)",
                };
                assert_eq!(v.mark(), want);
            }
        }
    }

    #[test]
    fn an_unexpected_run_outweighs_one_that_shows_nothing() {
        use Verdict::{Met, NotShown, Unexpected};
        assert_eq!(exit_code([]), 0);
        assert_eq!(exit_code([Met, Met, Met]), 0);
        assert_eq!(exit_code([NotShown, Met, Met]), 3);
        assert_eq!(exit_code([NotShown, Unexpected, Met]), 1);
        assert_eq!(exit_code([Met, Met, Unexpected]), 1);
    }

    /// A panic is never what a mode's run is for: unexpected in every mode, though its outcome is `failed`.
    #[test]
    fn a_panic_is_unexpected_in_every_mode() {
        for mode in [Mode::Buggy, Mode::Fixed, Mode::PurgeBeforeReset] {
            let params = epochlab_sim::ReproParams {
                mode,
                ..Default::default()
            };
            let report = ReproReport::new(params).panicked(epochlab_sim::TaskPanic {
                message: "boom".to_string(),
                location: "x.rs:1:1".to_string(),
                at: std::time::Duration::ZERO,
            });
            assert_eq!(report.outcome, Outcome::Failed);
            assert_eq!(Verdict::of(&report), Verdict::Unexpected, "{mode:?}");
        }
    }

    /// #12990's meta panic is its buggy run's symptom (met), in its file only; in fixed mode, or another bug's
    /// run, the same panic is a defect.
    #[test]
    fn a_bugs_own_recorded_panic_is_its_buggy_runs_symptom() {
        use epochlab_sim::BugId;
        let panic = |location: &str| epochlab_sim::TaskPanic {
            message: "recover mview progress should not fail: table_fragment not exist: id=2"
                .into(),
            location: location.to_string(),
            at: std::time::Duration::ZERO,
        };
        let run = |bug, mode, location: &str| {
            let params = epochlab_sim::ReproParams {
                bug,
                mode,
                ..Default::default()
            };
            Verdict::of(&ReproReport::new(params).panicked(panic(location)))
        };
        let site = "crates/meta/src/recovery.rs:281:13";
        assert_eq!(run(BugId::Rw12990, Mode::Buggy, site), Verdict::Met);
        assert_eq!(run(BugId::Rw12990, Mode::Fixed, site), Verdict::Unexpected);
        assert_eq!(run(BugId::Rw5244, Mode::Buggy, site), Verdict::Unexpected);
        let elsewhere = "crates/meta/src/ddl_controller.rs:1:1";
        assert_eq!(
            run(BugId::Rw12990, Mode::Buggy, elsewhere),
            Verdict::Unexpected
        );
    }
}
