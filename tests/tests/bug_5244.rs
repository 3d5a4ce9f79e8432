//! RisingWave #5244 (recovery stops the actors a live node still runs with a Stop barrier of the recovering
//! meta's epochs), directed: a table and a view on two compute nodes, the meta leader killed and started again
//! 1 s later while the compute nodes live on.

use epochlab_sim::{BugId, Mode, Outcome, ReproParams, ReproReport, run_repro};

fn run(mode: Mode, seed: u64, meta_nodes: u32) -> ReproReport {
    let params = ReproParams {
        bug: BugId::Rw5244,
        mode,
        seed,
        rows: 1000,
        meta_nodes,
        ..ReproParams::default()
    };
    run_repro(&params).value
}

/// Buggy: the new meta's Stop barrier reaches the table's actors, whose state refuses its `prev`: an epoch
/// order finding, after the recovery's Stop barrier in the timeline. With one meta and with three.
#[test]
fn buggy_fails_on_the_stop_barriers_epoch() {
    for (seed, metas) in [(1, 3), (2, 3), (3, 1)] {
        let r = run(Mode::Buggy, seed, metas);
        assert_eq!(r.outcome, Outcome::Failed, "seed {seed}: {r:?}");
        let error = r.error.clone().unwrap_or_default();
        assert!(
            error.starts_with("table ") && error.contains(", but the table is at epoch "),
            "seed {seed}: {error}"
        );
        assert_eq!(r.caught_by.as_deref(), Some("actor failure (epoch_order)"));
        let timeline = r.timeline.join("\n");
        assert!(
            timeline.contains("stop actors by barrier prev="),
            "{timeline}"
        );
        assert!(r.timeline.last().unwrap().contains(" actor failure: "));
    }
}

/// Fixed: the reset aborts the actors; after the recovery the view holds its query over every row.
#[test]
fn fixed_aborts_the_actors() {
    for (seed, metas) in [(1, 3), (2, 3), (3, 1)] {
        let r = run(Mode::Fixed, seed, metas);
        assert_eq!(r.outcome, Outcome::Passed, "seed {seed}: {r:?}");
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(r.recoveries >= 1, "{r:?}");
        assert!(
            r.notes[0].contains("the reset aborted every actor"),
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
            bug: BugId::Rw5244,
            mode,
            rows: 1000,
            ..ReproParams::default()
        };
        assert_eq!(run_repro(&params).digest, run_repro(&params).digest);
    }
}

/// The toggle, not the script, makes the failure: only `ForceStopActors` differs between the modes.
#[test]
fn the_toggle_alone_makes_the_failure() {
    use epochlab_common::Toggles;
    use epochlab_meta::recovery::ForceStopActors;
    use epochlab_sim::BugMode;
    let buggy = BugMode::new(BugId::Rw5244, Mode::Buggy).unwrap();
    let fixed = BugMode::new(BugId::Rw5244, Mode::Fixed).unwrap();
    assert_eq!(fixed.toggles(), Toggles::default());
    assert_eq!(
        Toggles::default().with(ForceStopActors::StopBarrier),
        buggy.toggles()
    );
}
