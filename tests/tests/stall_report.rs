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

/// Seed 7360 of the fixed soak, on the engine of 2024 (a flow-control executor after the backfill: RisingWave
/// #15790): a background sink over `t1` backfills at 5 rows/s when node 1 leaves for good, and recovery's
/// scale-in gives one backfill actor 192 of the 256 vnodes. At the end of its snapshot its ~750 rows go to
/// flow control at once, and the barrier behind them waits 150 s. The report names that actor on worker 3,
/// its chain with the flow control, and the last barrier it passed: the recovery's Initial barrier, at 67.3 s.
#[test]
fn a_stuck_report_names_the_actors_that_hold_the_barrier() {
    let mut file = plan("rate-limited-backfill-scaled-in-holds-barriers.json");
    file.plan.cluster.flow_control = true;
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
            "actor 11 (job 3, fragment 5, 192 vnodes: FlowControl(5 rows/s) <- StreamScan(ArrangementBackfill of table 1, \
             5 rows/s) <- Merge(fragment 1: actors [1, 2])) last collected prev="
        ),
        "{worker3}"
    );
    assert!(
        worker3.contains(
            "actor 15 (job 3, fragment 6, 192 vnodes: Sink <- Merge(fragment 5: actors [11])) last collected prev="
        ),
        "{worker3}"
    );
    assert!(worker3.contains(" at 67.3"), "{worker3}");
}

/// The same plan on today's engine (RisingWave PR #15948: the backfill paces its own snapshot reads, a wait a
/// barrier preempts) passes: barriers flow while the scaled-in actor backfills, as the regression plan says.
#[test]
fn the_same_plan_passes_when_the_backfill_paces_itself() {
    let file = plan("rate-limited-backfill-scaled-in-holds-barriers.json");
    assert!(!file.plan.cluster.flow_control);
    let run = file.run(None).expect("a valid bug and mode");
    let report = run_plan(&file.plan, run, ReproHooks::default()).value;
    assert_eq!(report.outcome, Outcome::Passed, "{report:?}");
    assert_eq!(report.recoveries, 1, "{report:?}");
}
