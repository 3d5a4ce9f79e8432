//! A stuck run's report points to where the barrier is held: for each actor the waiting epochs wait for, its
//! job and fragment, its executor chain and the last barrier it collected, so that the next stall is
//! diagnosed from the report alone.

use std::path::PathBuf;

use epochlab_sim::workload::{PlanFile, run_plan};
use epochlab_sim::{Outcome, ReproHooks};

fn plan(name: &str) -> PlanFile {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("regressions")
        .join(name);
    PlanFile::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Seed 7360 of the fixed soak: a background sink over `t1` backfills at 5 rows/s when node 1 leaves for
/// good. The report names the sink's backfill actor on worker 3, its chain with the rate limit, and the last
/// barrier it passed: the recovery's Initial barrier, at 67.3 s.
#[test]
fn a_stuck_report_names_the_actors_that_hold_the_barrier() {
    let file = plan("rate-limited-backfill-scaled-in-holds-barriers.json");
    let run = file.run(None).expect("a valid bug and mode");
    let report = run_plan(&file.plan, run, ReproHooks::default()).value;
    assert_eq!(report.outcome, Outcome::Stuck, "{report:?}");
    let detail = report.error.expect("a stuck run says what is stuck");
    let worker3 = detail
        .split("; worker 3: ")
        .nth(1)
        .expect("worker 3's state");
    assert!(
        worker3.contains(
            "actor 7 (job 3, fragment 3: FlowControl(5 rows/s) <- StreamScan(ArrangementBackfill of table 1, \
             5 rows/s) <- Merge(fragment 1: actors [1, 2])) last collected prev="
        ),
        "{worker3}"
    );
    assert!(
        worker3.contains(
            "actor 11 (job 3, fragment 4: Sink <- Merge(fragment 3: actors [7])) last collected prev="
        ),
        "{worker3}"
    );
    assert!(worker3.contains(" at 67.3"), "{worker3}");
}
