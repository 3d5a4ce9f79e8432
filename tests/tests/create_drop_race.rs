//! A CREATE over a table that a DROP takes away while the create waits (behind a reschedule, for the lock) is
//! refused with `table N not found` where it enters the catalog, as RisingWave's catalog refuses a job whose
//! dependency is gone; before, the job entered the catalog over a missing table and a task panicked building
//! its actors (`tests/regressions/create-over-dropped-upstream.json`, found by a fixed soak).

use std::path::PathBuf;

use epochlab_sim::workload::{PlanFile, run_plan};
use epochlab_sim::{Outcome, ReproHooks};

#[test]
fn a_create_whose_upstream_was_dropped_while_it_waited_is_refused() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("regressions")
        .join("create-over-dropped-upstream.json");
    let file = PlanFile::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let run = file.run(None).expect("a valid bug and mode");
    let out = run_plan(&file.plan, run, ReproHooks::default());
    assert_eq!(out.value.outcome, Outcome::Passed, "{:?}", out.value);
    let lines = out.log.lines();
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no `{needle}` in the event log"))
    };
    // The race the plan is for: the table is dropped after mv6 was issued and before mv6 gets its turn.
    let issued = at("create mv mv6 over t2");
    let dropped = at("ddl: drop table t2");
    let refused = at("workload: create mv6: failed: table 2 not found");
    assert!(
        issued < dropped && dropped < refused,
        "{issued} {dropped} {refused}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("ddl: create materialized view mv6")),
        "mv6 never enters the catalog"
    );
}
