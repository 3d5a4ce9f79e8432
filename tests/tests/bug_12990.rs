//! RisingWave #12990 (a background job whose first barrier was never collected outlives the recovery after a
//! failed barrier, and its progress step panics meta), directed: a view created in the background over a
//! table on two compute nodes, a compute node killed while the view's Add barrier is in flight.

use epochlab_sim::{BugId, Mode, Outcome, ReproParams, ReproReport, run_repro};

fn run(mode: Mode, seed: u64, meta_nodes: u32) -> ReproReport {
    let params = ReproParams {
        bug: BugId::Rw12990,
        mode,
        seed,
        rows: 1000,
        meta_nodes,
        ..ReproParams::default()
    };
    run_repro(&params).value
}

/// Buggy: the recovery keeps the job and its progress step panics meta with RisingWave's message, at
/// meta's recovery; with three metas and with one.
#[test]
fn buggy_panics_meta_with_rising_waves_message() {
    for (seed, metas) in [(1, 3), (2, 3), (3, 1)] {
        let r = run(Mode::Buggy, seed, metas);
        assert_eq!(r.outcome, Outcome::Failed, "seed {seed}: {r:?}");
        let panic = r.panic.clone().expect("a task panic");
        assert!(
            panic.message.starts_with(
                "recover mview progress should not fail: table_fragment not exist: id="
            ),
            "{panic:?}"
        );
        assert!(
            panic.location.starts_with("crates/meta/src/recovery.rs:"),
            "{panic:?}"
        );
        assert!(BugId::Rw12990.is_own_panic(&panic));
    }
}

/// Fixed: the recovery cleans the job; created again, the view holds its query over every row.
#[test]
fn fixed_cleans_the_job_in_the_recovery() {
    for (seed, metas) in [(1, 3), (2, 3), (3, 1)] {
        let r = run(Mode::Fixed, seed, metas);
        assert_eq!(r.outcome, Outcome::Passed, "seed {seed}: {r:?}");
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(r.recoveries >= 1, "{r:?}");
        assert!(
            r.notes[0].contains("the recovery cleaned m"),
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
            bug: BugId::Rw12990,
            mode,
            rows: 1000,
            ..ReproParams::default()
        };
        assert_eq!(run_repro(&params).digest, run_repro(&params).digest);
    }
}

/// The toggle, not the script, makes the failure: only `CleanDirtyTables` differs between the modes.
#[test]
fn the_toggle_alone_makes_the_failure() {
    use epochlab_common::Toggles;
    use epochlab_meta::recovery::CleanDirtyTables;
    use epochlab_sim::BugMode;
    let buggy = BugMode::new(BugId::Rw12990, Mode::Buggy).unwrap();
    let fixed = BugMode::new(BugId::Rw12990, Mode::Fixed).unwrap();
    assert_eq!(fixed.toggles(), Toggles::default());
    assert_eq!(
        Toggles::default().with(CleanDirtyTables::Bootstrap),
        buggy.toggles()
    );
}
