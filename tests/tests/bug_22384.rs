//! RisingWave #22384 (early commit when a worker crashes during collection), directed: two compute nodes with
//! disjoint actors, the view's node killed after the table's node collected an epoch and before it responds.

use epochlab_sim::{BugId, Mode, Outcome, ReproParams, ReproReport, run_repro};

fn run(mode: Mode, seed: u64) -> ReproReport {
    let params = ReproParams {
        bug: BugId::Rw22384,
        mode,
        seed,
        ..ReproParams::default()
    };
    run_repro(&params).value
}

/// Buggy: the epoch is committed without the killed worker; I4 full-collection names the epoch and the
/// worker, and the oracle finds the view's rows of that epoch missing.
#[test]
fn buggy_commits_an_epoch_without_the_crashed_worker() {
    for seed in 1..4 {
        let r = run(Mode::Buggy, seed);
        assert_eq!(r.outcome, Outcome::Failed, "seed {seed}: {r:?}");
        let error = r.error.clone().unwrap_or_default();
        assert!(error.starts_with("epoch "), "{error}");
        assert!(error.contains(" committed without worker "), "{error}");
        assert!(error.contains("view m differs from its query: "), "{error}");
        let invariants: Vec<&str> = r.violations.iter().map(|v| v.invariant).collect();
        assert_eq!(invariants, ["I4 full-collection", "oracle"], "seed {seed}");
        let at = |s: &str| r.timeline.iter().position(|l| l.contains(s));
        let worker_error = at(" worker error: ").expect("the worker's error");
        assert!(
            r.timeline[worker_error].contains("valid=false"),
            "{:#?}",
            r.timeline
        );
        // The epoch is committed by the global recovery path (`clear_on_err`), after the error, before the
        // in-flight barriers are abandoned.
        let clear = at(" clear on err: ").expect("the global recovery path completes first");
        let failed = at(" barrier failed: ").expect("then recovery");
        assert!(worker_error < clear && clear < failed, "{:#?}", r.timeline);
        let commit = r.timeline[clear..failed]
            .iter()
            .any(|l| l.contains(" commit epoch: "));
        assert!(commit, "{:#?}", r.timeline);
    }
}

/// Fixed: the epoch is never committed; recovery resumes from the one before, and the view equals its query.
#[test]
fn fixed_never_commits_the_epoch() {
    for seed in 1..4 {
        let r = run(Mode::Fixed, seed);
        assert_eq!(r.outcome, Outcome::Passed, "seed {seed}: {r:?}");
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(r.recoveries >= 1);
        assert!(r.notes[0].contains("was never committed"), "{:?}", r.notes);
        assert!(
            !r.timeline.iter().any(|l| l.contains(" clear on err: ")),
            "nothing was left collected: {:#?}",
            r.timeline
        );
    }
}

/// The same seed gives the same run; the two modes share the fault (drawn before anything else).
#[test]
fn the_scenario_is_deterministic() {
    let params = ReproParams {
        bug: BugId::Rw22384,
        mode: Mode::Buggy,
        ..ReproParams::default()
    };
    assert_eq!(run_repro(&params).digest, run_repro(&params).digest);
}

/// A mode the bug does not have is not run.
#[test]
fn purge_before_reset_is_not_a_mode_of_22384() {
    let r = run(Mode::PurgeBeforeReset, 1);
    assert_eq!(r.outcome, Outcome::NotReproducible);
    assert!(r.error.unwrap().contains("has the modes buggy, fixed"));
}

/// The checker detects the bug, not a script: a random plan that found #22384 (saved in
/// `tests/regressions/`) fires I4 full-collection with the barrier manager's toggle at `buggy` and stops firing
/// when only that toggle is flipped to `fixed`; the plan and the seed stay the same.
#[test]
fn flipping_the_toggle_on_a_random_plan_fires_and_silences_the_checker() {
    use epochlab_sim::workload::{PlanFile, run_plan};
    use epochlab_sim::{BugMode, ReproHooks};
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("regressions/22384-kill-while-collecting.json");
    let file = PlanFile::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let buggy = file
        .run(None)
        .expect("the file names bug 22384 in buggy mode");
    assert_eq!((buggy.bug(), buggy.mode()), (BugId::Rw22384, Mode::Buggy));
    let i4 = |run: BugMode| {
        let report = run_plan(&file.plan, run, ReproHooks::default()).value;
        let fired = report
            .violations
            .iter()
            .any(|v| v.invariant == "I4 full-collection");
        (fired, report.outcome)
    };
    assert_eq!(i4(buggy), (true, Outcome::Failed));
    let fixed = BugMode::new(BugId::Rw22384, Mode::Fixed).unwrap();
    assert_eq!(i4(fixed), (false, Outcome::Passed));
}
