//! RisingWave #8440 (a watermark filter's first read after a restart bails when only some vnodes have a stored
//! watermark), directed: a table with a watermark on two actors, one row that reaches one of them, a
//! checkpoint, a compute node killed and restarted.

use epochlab_sim::{BugId, Mode, Outcome, ReproParams, ReproReport, run_repro};

fn run(mode: Mode, seed: u64, parallelism: usize) -> ReproReport {
    let params = ReproParams {
        bug: BugId::Rw8440,
        mode,
        seed,
        parallelism,
        ..ReproParams::default()
    };
    run_repro(&params).value
}

/// Buggy: the rebuilt filters fail on their first read, with RisingWave's message, as a state error.
#[test]
fn buggy_fails_with_rising_waves_message() {
    for seed in 1..4 {
        let r = run(Mode::Buggy, seed, 2);
        assert_eq!(r.outcome, Outcome::Failed, "seed {seed}: {r:?}");
        assert_eq!(
            r.error.as_deref(),
            Some("Watermark for vnodes should be either all None or all Some()")
        );
        assert_eq!(
            r.caught_by.as_deref(),
            Some("actor failure (inconsistent_state)")
        );
        assert!(r.timeline.last().unwrap().contains(" actor failure: "));
    }
}

/// Fixed: the rebuilt filters start from the largest stored watermark: the late row is dropped, the oracle
/// holds.
#[test]
fn fixed_starts_from_the_largest_stored_watermark() {
    for seed in 1..4 {
        let r = run(Mode::Fixed, seed, 2);
        assert_eq!(r.outcome, Outcome::Passed, "seed {seed}: {r:?}");
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(
            r.notes[0].contains("the late row was dropped"),
            "{:?}",
            r.notes
        );
    }
}

/// With one actor every vnode has the watermark or none has: the bug cannot show.
#[test]
fn one_actor_cannot_show_it() {
    let r = run(Mode::Buggy, 1, 1);
    assert_eq!(r.outcome, Outcome::NotReproducible, "{r:?}");
}

/// The same seed gives the same run, in each mode.
#[test]
fn the_scenario_is_deterministic() {
    for mode in [Mode::Buggy, Mode::Fixed] {
        let params = ReproParams {
            bug: BugId::Rw8440,
            mode,
            ..ReproParams::default()
        };
        assert_eq!(run_repro(&params).digest, run_repro(&params).digest);
    }
}

/// The toggle, not the script, makes the failure: only `WatermarkRecovery` differs between the modes.
#[test]
fn the_toggle_alone_makes_the_failure() {
    use epochlab_common::Toggles;
    use epochlab_sim::BugMode;
    use epochlab_stream::executor::watermark_filter::WatermarkRecovery;
    let buggy = BugMode::new(BugId::Rw8440, Mode::Buggy).unwrap();
    let fixed = BugMode::new(BugId::Rw8440, Mode::Fixed).unwrap();
    assert_eq!(fixed.toggles(), Toggles::default());
    assert_eq!(
        Toggles::default().with(WatermarkRecovery::AllOrNone),
        buggy.toggles()
    );
}
