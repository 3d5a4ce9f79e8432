//! RisingWave #16815 (wrong vnode derivation in arrangement backfill), directed: a table with pk (a, b)
//! distributed by a, a view over it backfilled by two actors while DML keeps updating the table.

use epochlab_sim::{BugId, Mode, Outcome, ReproParams, ReproReport, run_repro};

fn run(mode: Mode, seed: u64) -> ReproReport {
    let params = ReproParams {
        bug: BugId::Rw16815,
        mode,
        seed,
        ..ReproParams::default()
    };
    run_repro(&params).value
}

/// Buggy: an upstream row's vnode, hashed from its whole pk, is not one of the actor's: the backfill fails
/// with RisingWave's message, as a state error of the backfill actor.
#[test]
fn buggy_fails_with_backfill_progress_not_found() {
    for seed in 1..4 {
        let r = run(Mode::Buggy, seed);
        assert_eq!(r.outcome, Outcome::Failed, "seed {seed}: {r:?}");
        let error = r.error.clone().unwrap_or_default();
        assert!(
            error.starts_with("Backfill progress for vnode VirtualNode("),
            "{error}"
        );
        assert!(error.contains(" not found"), "{error}");
        assert_eq!(
            r.caught_by.as_deref(),
            Some("actor failure (inconsistent_state)")
        );
        assert!(r.timeline.last().unwrap().contains(" actor failure: "));
    }
}

/// Fixed: every upstream row is judged by its distribution-key vnode; the view is created and equals its query.
#[test]
fn fixed_backfills_the_view_equal_to_its_query() {
    for seed in 1..4 {
        let r = run(Mode::Fixed, seed);
        assert_eq!(r.outcome, Outcome::Passed, "seed {seed}: {r:?}");
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(
            r.notes[0].contains("view m equals its query"),
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
            bug: BugId::Rw16815,
            mode,
            ..ReproParams::default()
        };
        assert_eq!(run_repro(&params).digest, run_repro(&params).digest);
    }
}

/// The toggle, not the script, makes the failure: the same seed and scenario, only
/// `Toggles::backfill_vnode` flipped between pk and distribution key, fails and passes.
#[test]
fn flipping_the_toggle_on_the_same_run_makes_the_failure_appear_and_disappear() {
    use epochlab_common::Toggles;
    use epochlab_sim::BugMode;
    use epochlab_stream::executor::backfill::arrangement_backfill::BackfillVnode;
    let buggy = BugMode::new(BugId::Rw16815, Mode::Buggy).unwrap();
    let fixed = BugMode::new(BugId::Rw16815, Mode::Fixed).unwrap();
    assert_eq!(buggy.toggles().get::<BackfillVnode>(), BackfillVnode::Pk);
    assert_eq!(fixed.toggles(), Toggles::default());
    assert_eq!(Toggles::default().with(BackfillVnode::Pk), buggy.toggles());
    for seed in [7, 11] {
        let failed = run(Mode::Buggy, seed);
        let passed = run(Mode::Fixed, seed);
        assert_eq!(failed.outcome, Outcome::Failed, "seed {seed}");
        assert_eq!(passed.outcome, Outcome::Passed, "seed {seed}");
        assert!(passed.failing_actor.is_none());
    }
}

/// A mode the bug does not have is not run.
#[test]
fn purge_before_reset_is_not_a_mode_of_16815() {
    let r = run(Mode::PurgeBeforeReset, 1);
    assert_eq!(r.outcome, Outcome::NotReproducible);
    assert!(r.error.unwrap().contains("has the modes buggy, fixed"));
}

/// With one backfill actor every vnode is the actor's, so the buggy pk vnode is never missing: a row is
/// judged by the wrong vnode's position instead, and an update is dropped or applied twice. A debug build
/// (`--persist-check on`) sees it in the view's state-table write check; a release build (`off`) writes
/// blindly and only the oracle sees the view differ from its query. The fix holds in both.
#[test]
fn with_one_actor_the_wrong_vnode_gives_wrong_results() {
    let run = |mode, persist_check, seed| {
        let params = ReproParams {
            bug: BugId::Rw16815,
            mode,
            seed,
            parallelism: 1,
            persist_check,
            ..ReproParams::default()
        };
        run_repro(&params).value
    };
    for seed in 1..4 {
        let debug = run(Mode::Buggy, true, seed);
        assert_eq!(debug.outcome, Outcome::Failed, "seed {seed}: {debug:?}");
        let error = debug.error.unwrap_or_default();
        assert!(error.starts_with("row ["), "{error}");
        assert!(
            error.ends_with(" not found (by the state-table write check)"),
            "{error}"
        );
        let release = run(Mode::Buggy, false, seed);
        assert_eq!(release.outcome, Outcome::Failed, "seed {seed}: {release:?}");
        let error = release.error.unwrap_or_default();
        assert!(
            error.starts_with("view m differs from its query: "),
            "{error}"
        );
        assert_eq!(release.caught_by.as_deref(), Some("oracle checker"));
        assert!(release.failing_actor.is_none());
        for persist_check in [true, false] {
            let fixed = run(Mode::Fixed, persist_check, seed);
            assert_eq!(fixed.outcome, Outcome::Passed, "seed {seed}: {fixed:?}");
        }
    }
}

/// The checker detects the bug, not a script: a random plan that found #16815's wrong results (saved in
/// `tests/regressions/`) fails the oracle with the backfill's toggle at `buggy`, and passes when only that
/// toggle is flipped to `fixed`; the plan and the seed stay the same.
#[test]
fn flipping_the_toggle_on_a_random_plan_fires_and_silences_the_oracle() {
    use epochlab_sim::workload::{PlanFile, run_plan};
    use epochlab_sim::{BugMode, ReproHooks};
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("regressions/16815-wrong-vnode-one-actor.json");
    let file = PlanFile::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let buggy = file
        .run(None)
        .expect("the file names bug 16815 in buggy mode");
    assert_eq!((buggy.bug(), buggy.mode()), (BugId::Rw16815, Mode::Buggy));
    let oracle = |run: BugMode| {
        let report = run_plan(&file.plan, run, ReproHooks::default()).value;
        let fired = report.violations.iter().any(|v| v.invariant == "oracle");
        (fired, report.outcome)
    };
    assert_eq!(oracle(buggy), (true, Outcome::Failed));
    let fixed = BugMode::new(BugId::Rw16815, Mode::Fixed).unwrap();
    assert_eq!(oracle(fixed), (false, Outcome::Passed));
}
