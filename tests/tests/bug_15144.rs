//! RisingWave #15144 (a cancel pre-applied by recovery leaves the job's tables registered; a compaction task
//! that reads their data fails, and its group's writes stop), directed: a background view over a table in
//! RisingWave's static compaction groups, its node killed once group 3's L0 holds the view's data, the view
//! cancelled while recovery retries, rows written after.

use epochlab_sim::workload::{PlanFile, PlanReport, run_plan};
use epochlab_sim::{
    BugId, BugMode, Mode, Outcome, ReproHooks, ReproParams, ReproReport, run_repro,
};

fn run(mode: Mode, seed: u64) -> ReproReport {
    let params = ReproParams {
        bug: BugId::Rw15144,
        mode,
        seed,
        ..ReproParams::default()
    };
    run_repro(&params).value
}

/// Buggy: the cancelled view's tables stay registered after recovery (I3 table-set), the next compaction task
/// of group 3 reads the view's data in L0 and fails with the compactor's line, its writes stop and the
/// barriers stall; the error is the stall, with its cause.
#[test]
fn buggy_stalls_on_the_write_stop_of_a_group_compaction_cannot_clean() {
    for seed in 1..4 {
        let r = run(Mode::Buggy, seed);
        assert_eq!(r.outcome, Outcome::Failed, "seed {seed}: {r:?}");
        let error = r.error.clone().unwrap_or_default();
        assert!(
            error.starts_with("stalled: no barrier completed since "),
            "{error}"
        );
        assert!(
            error.contains("writes to group 3 stopped at 64 L0 sub-levels"),
            "{error}"
        );
        assert!(
            error.contains("tasks: Failed to fetch filter key extractor tables [{"),
            "{error}"
        );
        assert!(
            error.contains("]] may be removed by meta-service. ;"),
            "{error}"
        );
        let invariants: Vec<&str> = r.violations.iter().map(|v| v.invariant).collect();
        assert_eq!(invariants, ["I3 table-set"], "seed {seed}");
        assert!(r.violations[0].detail.starts_with("after recovery: table "));
        assert!(r.caught_by.unwrap().starts_with("I3 table-set checker"));
        let has = |s: &str| r.timeline.iter().any(|l| l.contains(s));
        assert!(has(" recovery step: pre-apply cancel ") && has("unregister=false"));
        assert!(has(" compaction failed: ") && has(" write stop: group=3 "));
        assert!(!has(" unregister tables: "), "{:#?}", r.timeline);
    }
}

/// Fixed: recovery unregisters the cancelled view's tables once it has pre-applied the cancel (after the
/// reset), group 3 compacts, and every row written after recovery commits.
#[test]
fn fixed_unregisters_the_cancelled_tables_and_every_row_commits() {
    for seed in 1..4 {
        let r = run(Mode::Fixed, seed);
        assert_eq!(r.outcome, Outcome::Passed, "seed {seed}: {r:?}");
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert_eq!(r.recoveries, 1);
        let note = &r.notes[0];
        assert!(
            note.contains("reason=recovery, pre-applied after reset"),
            "{note}"
        );
        assert!(note.contains("every row committed"), "{note}");
    }
}

/// The same seed gives the same run, in each mode.
#[test]
fn the_scenario_is_deterministic() {
    for mode in [Mode::Buggy, Mode::Fixed] {
        let params = ReproParams {
            bug: BugId::Rw15144,
            mode,
            ..ReproParams::default()
        };
        assert_eq!(run_repro(&params).digest, run_repro(&params).digest);
    }
}

/// A mode the bug does not have is not run.
#[test]
fn purge_before_reset_is_not_a_mode_of_15144() {
    let r = run(Mode::PurgeBeforeReset, 1);
    assert_eq!(r.outcome, Outcome::NotReproducible);
    assert!(r.error.unwrap().contains("has the modes buggy, fixed"));
}

fn regression(name: &str) -> PlanFile {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("regressions")
        .join(name);
    PlanFile::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn play(file: &PlanFile, run: BugMode) -> PlanReport {
    run_plan(&file.plan, run, ReproHooks::default()).value
}

/// The checker detects the bug, not a script: a random plan that found #15144 (saved in
/// `tests/regressions/`) fires I3 table-set with meta's `pre_apply_cancel` toggle at `buggy` and stops firing
/// when only that toggle is flipped to `fixed`; the plan and the seed stay the same.
#[test]
fn flipping_the_toggle_on_a_random_plan_fires_and_silences_the_checker() {
    use epochlab_common::Toggles;
    use epochlab_meta::recovery::PreApplyCancel;
    let file = regression("15144-cancel-pre-applied-after-reset.json");
    let buggy = file
        .run(None)
        .expect("the file names bug 15144 in buggy mode");
    assert_eq!((buggy.bug(), buggy.mode()), (BugId::Rw15144, Mode::Buggy));
    let fixed = BugMode::new(BugId::Rw15144, Mode::Fixed).unwrap();
    assert_eq!(
        buggy.toggles(),
        Toggles::default().with(PreApplyCancel::KeepRegistered)
    );
    assert_eq!(fixed.toggles(), Toggles::default());
    let i3 = |run: BugMode| {
        let report = play(&file, run);
        let fired = report
            .violations
            .iter()
            .any(|v| v.invariant == "I3 table-set");
        (fired, report.outcome)
    };
    assert_eq!(i3(buggy), (true, Outcome::Failed));
    assert_eq!(i3(fixed), (false, Outcome::Passed));
}

/// The soak's `stuck` catches the stall too: the same plan with rows written into the stale table's group
/// after the cancel gets stuck with the toggle at `buggy` (a write stop, for the reason the directed scenario
/// shows) and passes at `fixed`.
#[test]
fn the_stall_is_the_soaks_stuck_and_the_fix_commits_every_row() {
    let file = regression("15144-cancel-then-writes-stall.json");
    let buggy = file
        .run(None)
        .expect("the file names bug 15144 in buggy mode");
    let stuck = play(&file, buggy);
    assert_eq!(stuck.outcome, Outcome::Stuck, "{stuck:?}");
    let error = stuck.error.clone().unwrap_or_default();
    assert!(
        error.starts_with("no epoch committed for 180 s: "),
        "{error}"
    );
    assert!(
        error.contains("writes to group 3 stopped at 64 L0 sub-levels"),
        "{error}"
    );
    assert!(error.contains("may be removed by meta-service."), "{error}");
    let fixed = BugMode::new(BugId::Rw15144, Mode::Fixed).unwrap();
    let passed = play(&file, fixed);
    assert_eq!(passed.outcome, Outcome::Passed, "{passed:?}");
}

/// A task fails only when its input holds the orphan's data: the same plan with the kill and everything after
/// it 2 s earlier (the view has committed no rows yet, so group 3's L0 holds none of them when the cancel is
/// pre-applied) leaves the tables registered all the same (I3), but every compaction task succeeds and every
/// row commits: no stall.
#[test]
fn without_the_orphans_data_in_l0_no_task_fails_and_nothing_stalls() {
    let mut file = regression("15144-cancel-then-writes-stall.json");
    for step in &mut file.plan.steps[2..] {
        step.at_ms -= 2000;
    }
    let buggy = file
        .run(None)
        .expect("the file names bug 15144 in buggy mode");
    let report = play(&file, buggy);
    assert_eq!(report.outcome, Outcome::Failed, "{report:?}");
    let invariants: Vec<&str> = report.violations.iter().map(|v| v.invariant).collect();
    assert_eq!(invariants, ["I3 table-set", "I3 table-set"], "{report:?}");
}
