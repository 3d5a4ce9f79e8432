//! RisingWave #22476 (a temporal join looks its right table up at the barrier's current epoch), directed: a left
//! outer temporal join whose left lags; key by key, one of the lookup table's two rows of the key deleted, then
//! a left row with the key.

use epochlab_sim::{BugId, Mode, Outcome, ReproParams, ReproReport, run_repro};

fn run(mode: Mode, seed: u64) -> ReproReport {
    let params = ReproParams {
        bug: BugId::Rw22476,
        mode,
        seed,
        rows: 1000,
        ..ReproParams::default()
    };
    run_repro(&params).value
}

/// Buggy: a lookup after the table sealed the epoch of a delete sees it; the delete then reaches the cache
/// and finds no row: RisingWave's message, a state error.
#[test]
fn buggy_fails_with_rising_waves_message() {
    for seed in 1..4 {
        let r = run(Mode::Buggy, seed);
        assert_eq!(r.outcome, Outcome::Failed, "seed {seed}: {r:?}");
        let error = r.error.clone().unwrap_or_default();
        assert!(
            error.starts_with("key OwnedRow([Some(Int64(")
                && error.ends_with("should be in the cache"),
            "seed {seed}: {error}"
        );
        assert_eq!(
            r.caught_by.as_deref(),
            Some("actor failure (inconsistent_state)")
        );
        assert!(r.timeline.last().unwrap().contains(" actor failure: "));
    }
}

/// Fixed: every left row joins its key's rows as of the previous epoch (the oracle).
#[test]
fn fixed_reads_the_previous_epoch() {
    for seed in 1..4 {
        let r = run(Mode::Fixed, seed);
        assert_eq!(r.outcome, Outcome::Passed, "seed {seed}: {r:?}");
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(
            r.notes[0].contains("as of the previous epoch"),
            "{:?}",
            r.notes
        );
    }
}

/// The same seed gives the same run, in each mode.
#[test]
fn the_scenario_is_deterministic() {
    for mode in [Mode::Buggy, Mode::Fixed] {
        let params = ReproParams {
            bug: BugId::Rw22476,
            mode,
            rows: 1000,
            ..ReproParams::default()
        };
        assert_eq!(run_repro(&params).digest, run_repro(&params).digest);
    }
}

/// The toggle, not the script, makes the failure: only `TemporalJoinReadEpoch` differs between the modes.
#[test]
fn the_toggle_alone_makes_the_failure() {
    use epochlab_common::Toggles;
    use epochlab_sim::BugMode;
    use epochlab_stream::executor::temporal_join::TemporalJoinReadEpoch;
    let buggy = BugMode::new(BugId::Rw22476, Mode::Buggy).unwrap();
    let fixed = BugMode::new(BugId::Rw22476, Mode::Fixed).unwrap();
    assert_eq!(fixed.toggles(), Toggles::default());
    assert_eq!(
        Toggles::default().with(TemporalJoinReadEpoch::Curr),
        buggy.toggles()
    );
}
