//! Every plan in `tests/regressions/` replays to its expected outcome and signature (digests change whenever
//! the engine does; signatures do not). A plan that caught a bug of the catalogue in `buggy` mode must also
//! pass with that bug's toggle flipped to `fixed`: the fix holds on every plan that found the bug. A plan
//! caught on the engine of 2024 says `flow_control` (a backfill's rate limit kept by a flow-control executor,
//! as before RisingWave PR #15948) and replays on it; every plan also passes in fixed mode on today's engine.

use std::path::PathBuf;

use epochlab_sim::workload::{PlanFile, run_plan};
use epochlab_sim::{BugMode, Mode, ReproHooks};

fn regression_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// (outcome, signature) of the plan in `run`'s bug and mode.
fn verdict(file: &PlanFile, run: BugMode) -> (String, Option<String>) {
    let report = run_plan(&file.plan, run, ReproHooks::default()).value;
    (report.outcome.as_str().to_string(), report.signature())
}

#[test]
fn every_regression_plan_replays_to_its_signature() {
    let files = regression_files();
    assert!(
        files.len() >= 3,
        "expected the saved regressions, found {files:?}"
    );
    let mut failures = Vec::new();
    for path in &files {
        let file = PlanFile::load(path).unwrap_or_else(|e| panic!("{e}"));
        let caught = file.caught.as_deref().unwrap_or("");
        assert!(
            !caught.is_empty(),
            "{}: says what it caught",
            path.display()
        );
        let expect = file
            .expect
            .clone()
            .expect("a regression names its expected outcome");
        assert!(file.mode.is_some(), "{}: names its mode", path.display());
        let run = file.run(None).expect("a valid bug and mode");
        let got = verdict(&file, run);
        if got != (expect.outcome.clone(), expect.signature.clone()) {
            failures.push(format!(
                "{} ({}): expected {} {:?}, got {} {:?}",
                path.display(),
                run.label(),
                expect.outcome,
                expect.signature,
                got.0,
                got.1
            ));
        }
        if run.mode() == Mode::Buggy && expect.outcome == "failed" {
            let fixed = BugMode::new(run.bug(), Mode::Fixed).expect("every bug has fixed");
            let fixed = verdict(&file, fixed);
            if fixed != ("passed".to_string(), None) {
                failures.push(format!("{} (fixed): {fixed:?}", path.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every plan, in its bug's fixed mode on today's engine (the backfill paces its own reads), passes: the
/// fixes hold there too, whatever engine the plan was caught on.
#[test]
fn every_regression_plan_passes_fixed_on_todays_engine() {
    let mut failures = Vec::new();
    for path in &regression_files() {
        let mut file = PlanFile::load(path).unwrap_or_else(|e| panic!("{e}"));
        file.plan.cluster.flow_control = false;
        let run = file.run(None).expect("a valid bug and mode");
        let fixed = BugMode::new(run.bug(), Mode::Fixed).expect("every bug has fixed");
        let got = verdict(&file, fixed);
        if got != ("passed".to_string(), None) {
            failures.push(format!(
                "{} (fixed, today's engine): {got:?}",
                path.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
