//! RisingWave #14910's toggle: when the state tables of a dropped (or dirty creating) job are unregistered from
//! storage (reference §6.3, §6.4), decided by meta and recovery. One enum, and one method per decision; each
//! decision is read in exactly one place:
//!
//! | decision | read in | buggy | fixed | purge-before-reset |
//! |---|---|---|---|---|
//! | [`DropMode::caller_unregisters_on_return`] | meta's `drop_job`, as soon as `run_command` returns, errors included | yes | | |
//! | [`DropMode::unregisters_in_post_collect`] | meta's post-collect, after `DropActors` | | yes | yes |
//! | [`DropMode::purges_at_leader_start`] | a restarted meta's start (`MetaNode::open`), before its bootstrap recovery: a purge of tables not in the catalog | yes | | |
//! | [`DropMode::unregisters_dirty_jobs_when_cleaned`] | recovery step 2, before the reset | yes | | |
//! | [`DropMode::unregisters_in_recovery_before_reset`] | top of each attempt: pending tables, then a purge of tables not in the catalog | | | yes |
//! | [`DropMode::unregisters_in_recovery_after_reset`] | after every live node acknowledged its reset: the same | | yes | |
//! | [`DropMode::unregisters_pre_applied_after_reset`] | the second pre-apply (after the reset, and after `fixed`'s purge) | | yes | yes |
//! | [`DropMode::settles_the_table_set`] | sim's checkers: I3 after recovery is exact (but for drops still queued) | | yes | yes |
//! | [`DropMode::claims_no_unregister_in_use`] | sim's checkers: I2 unregister-in-use is a violation | | yes | yes |
//! | [`DropMode::is_before_the_fix`] | sim's scenario: a run that does not fail is `not_reproducible` | yes | | |
//!
//! Tables of pre-applied drops and cleaned dirty jobs wait in a pending list until recovery unregisters them;
//! in `buggy` recovery never does (the drops' callers do). The purge keeps the tables of drops and cancels
//! still queued (their unregister is still to come). What the pre-apply does with a *cancel's* tables is
//! #15144's toggle (`PreApplyCancel`), not this enum's.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// When a dropped job's state tables are unregistered, relative to stopping the actors that use them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropMode {
    /// RisingWave before the fix: the drop's caller ignores the Stop command's result and unregisters at
    /// once, even when the command returned early because of a failure or recovery; recovery unregisters
    /// dirty creating jobs as it cleans them, before the reset.
    Buggy,
    /// Unregister in post-collect, after the Stop barrier is collected and the actors are dropped; on
    /// failure, recovery unregisters (and purges tables the catalog does not know) after every live node has
    /// acknowledged its reset.
    #[default]
    Fixed,
    /// As `Fixed`, but recovery unregisters and purges at the top of each attempt, before it resets the
    /// nodes (the order of RisingWave #15852): a window remains.
    PurgeBeforeReset,
}

impl DropMode {
    pub const ALL: [DropMode; 3] = [DropMode::Buggy, DropMode::Fixed, DropMode::PurgeBeforeReset];

    pub fn as_str(self) -> &'static str {
        match self {
            DropMode::Buggy => "buggy",
            DropMode::Fixed => "fixed",
            DropMode::PurgeBeforeReset => "purge-before-reset",
        }
    }

    /// The drop's caller unregisters as soon as `run_command` returns, errors included (meta's `drop_job`).
    pub fn caller_unregisters_on_return(self) -> bool {
        self == DropMode::Buggy
    }

    /// Post-collect of the Stop barrier unregisters, after it dropped the job's actors.
    pub fn unregisters_in_post_collect(self) -> bool {
        matches!(self, DropMode::Fixed | DropMode::PurgeBeforeReset)
    }

    /// Recovery unregisters pending drops and purges tables the catalog does not know at the top of each
    /// attempt, before the reset.
    pub fn unregisters_in_recovery_before_reset(self) -> bool {
        self == DropMode::PurgeBeforeReset
    }

    /// Recovery unregisters pending drops and purges tables the catalog does not know once every live node
    /// has acknowledged its reset.
    pub fn unregisters_in_recovery_after_reset(self) -> bool {
        self == DropMode::Fixed
    }

    /// Recovery unregisters the tables of the drops and cancels it pre-applies once the nodes are reset (its
    /// second pre-apply, as RisingWave's) at once: no actor of theirs runs any more.
    pub fn unregisters_pre_applied_after_reset(self) -> bool {
        self != DropMode::Buggy
    }

    /// Once recovery is done, every registered table the catalog does not know belongs to a drop still
    /// queued for its barrier: recovery unregistered the rest (the checkers' I3 after recovery is exact). Not
    /// so in `Buggy`, where the callers of pre-applied drops unregister when they hear "done".
    pub fn settles_the_table_set(self) -> bool {
        self != DropMode::Buggy
    }

    /// A meta starting from a store that holds a cluster (a restarted one) purges every registered table its
    /// catalog does not know before its bootstrap recovery resets the nodes (RisingWave's leader start at
    /// f21fb9b7915; #15852 moved the purge into recovery, where the other two modes have it).
    pub fn purges_at_leader_start(self) -> bool {
        self == DropMode::Buggy
    }

    /// Recovery unregisters dirty creating jobs' tables as it cleans them, before the reset.
    pub fn unregisters_dirty_jobs_when_cleaned(self) -> bool {
        self == DropMode::Buggy
    }

    /// The mode claims never to unregister a table a running actor uses (checkers hold it to that; the
    /// purge-before-reset order claims it too, and its window breaks the claim).
    pub fn claims_no_unregister_in_use(self) -> bool {
        self != DropMode::Buggy
    }

    /// The mode is RisingWave's before the fix: a run of it that does not fail owes an explanation.
    pub fn is_before_the_fix(self) -> bool {
        self == DropMode::Buggy
    }
}

impl super::Toggle for DropMode {
    const NAME: &'static str = "DropMode";
    const VALUES: &'static [Self] = &DropMode::ALL;
}

impl fmt::Display for DropMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no drop mode.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("unknown drop mode `{given}`: expected one of {}", valid_modes())]
pub struct ParseDropModeError {
    pub given: String,
}

fn valid_modes() -> String {
    DropMode::ALL
        .iter()
        .map(|m| m.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for DropMode {
    type Err = ParseDropModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DropMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| ParseDropModeError {
                given: s.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_its_name() {
        for m in DropMode::ALL {
            assert_eq!(m.as_str().parse::<DropMode>(), Ok(m));
            assert_eq!(m.to_string(), m.as_str());
        }
        let e = "fast".parse::<DropMode>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown drop mode `fast`: expected one of buggy, fixed, purge-before-reset"
        );
    }

    #[test]
    fn exactly_one_place_unregisters_a_drop_that_failed() {
        for m in DropMode::ALL {
            let by_recovery = m.unregisters_in_recovery_before_reset() as u8
                + m.unregisters_in_recovery_after_reset() as u8;
            let by_caller = m.caller_unregisters_on_return() as u8;
            assert_eq!(by_recovery + by_caller, 1, "{m}");
            assert_eq!(m.unregisters_in_post_collect(), by_caller == 0, "{m}");
            assert_eq!(
                m.unregisters_dirty_jobs_when_cleaned(),
                by_caller == 1,
                "{m}"
            );
            assert_eq!(
                m.unregisters_pre_applied_after_reset(),
                by_caller == 0,
                "{m}"
            );
            assert_eq!(m.settles_the_table_set(), by_caller == 0, "{m}");
        }
    }
}
