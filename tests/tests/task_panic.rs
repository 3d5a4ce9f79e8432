//! A panic in any task of a simulated run ends the run at once, as `failed` with kind `panic`, its message and
//! its location: never `stuck`, a hang or a task silently lost (madsim aborts a simulation on a task panic).

use std::sync::Arc;
use std::time::Duration;

use epochlab_sim::workload::{FailureKind, GenParams, generate};
use epochlab_sim::{
    BugId, BugMode, Cluster, ClusterHook, Mode, Outcome, ReproHooks, ReproParams, RunError,
    run_repro_with, try_run_observed,
};

/// When the injected task panics, in virtual time since the run started.
const PANIC_AFTER: Duration = Duration::from_secs(7);

/// A hook that spawns, inside the run, a task that panics after [`PANIC_AFTER`]; it returns the panic's line.
fn panicking_hook() -> (ReproHooks, u32) {
    let line = line!() + 5;
    let hook: ClusterHook = Box::new(|cluster: Arc<Cluster>| {
        let clock = cluster.ctx.clock.clone();
        tokio::spawn(async move {
            tokio::time::sleep(PANIC_AFTER).await;
            panic!("injected panic at {} us", clock.elapsed_us());
        });
    });
    let hooks = ReproHooks {
        on_cluster: Some(hook),
        ..ReproHooks::default()
    };
    (hooks, line)
}

fn assert_location(location: &str, line: u32) {
    assert!(
        location.ends_with(&format!("task_panic.rs:{line}:13")),
        "the panic's location is the panic! line: {location}"
    );
}

/// A random plan in fixed mode with a task that panics 7 s in: `failed`, kind `panic`, and the run ends within
/// the same virtual second (the plan runs 60 s and settles after that).
#[test]
fn a_task_panic_fails_a_plan_run_at_once() {
    let plan = generate(1, &GenParams::default());
    let (hooks, line) = panicking_hook();
    let out = epochlab_sim::workload::run_plan(
        &plan,
        BugMode::new(BugId::Rw14910, Mode::Fixed).expect("a catalogue bug"),
        hooks,
    );
    let report = out.value;
    assert_eq!(report.outcome, Outcome::Failed, "{report:?}");
    assert_eq!(report.kind, Some(FailureKind::Panic));
    let panic = report.panic.clone().expect("the report carries the panic");
    assert!(panic.message.starts_with("injected panic at "), "{panic:?}");
    assert_location(&panic.location, line);
    let error = report.error.clone().unwrap_or_default();
    assert!(
        error.contains(&panic.message) && error.contains(&panic.location),
        "the error names the message and the location: {error}"
    );
    assert!(
        report
            .signature()
            .is_some_and(|s| s.starts_with("panic: task panicked at ")),
        "{:?}",
        report.signature()
    );
    // The panic's virtual time: the run started at 0 and the task slept from the cluster's start.
    assert!(panic.at >= PANIC_AFTER, "{panic:?}");
    assert!(
        out.virtual_elapsed < panic.at + Duration::from_secs(1),
        "the run ended at {:?}, the panic was at {:?}",
        out.virtual_elapsed,
        panic.at
    );
    assert_eq!(
        out.virtual_elapsed, panic.at,
        "it ends at the panic's instant"
    );
}

/// The directed scenario is `failed` (kind `panic`) the same way.
#[test]
fn a_task_panic_fails_a_directed_run_at_once() {
    let (hooks, line) = panicking_hook();
    let params = ReproParams {
        mode: Mode::Fixed,
        seed: 3,
        ..ReproParams::default()
    };
    let out = run_repro_with(&params, hooks);
    let report = out.value;
    assert_eq!(report.outcome, Outcome::Failed, "{:?}", report.error);
    assert_eq!(FailureKind::of_repro(&report), FailureKind::Panic);
    let panic = report.panic.clone().expect("the report carries the panic");
    assert_location(&panic.location, line);
    assert!(out.virtual_elapsed < panic.at + Duration::from_secs(1));
}

/// Without the panic the same plan passes: the injected task is what failed it.
#[test]
fn the_same_plan_without_the_panic_passes() {
    let plan = generate(1, &GenParams::default());
    let run = BugMode::new(BugId::Rw14910, Mode::Fixed).expect("a catalogue bug");
    let report = epochlab_sim::workload::run_plan(&plan, run, ReproHooks::default()).value;
    assert_eq!(report.outcome, Outcome::Passed, "{report:?}");
}

/// The program's own panic (not a spawned task's) is reported alike, with its location; a panic outside any
/// run still reaches the previous hook (the test harness sees it).
#[test]
fn the_programs_own_panic_is_a_task_panic_too() {
    let out = try_run_observed(9, 0, Duration::from_secs(60), Vec::new(), |_ctx| async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let v: Vec<u32> = Vec::new();
        v[3]
    });
    match out.value {
        Err(RunError::Panicked(p)) => {
            assert!(p.message.contains("index out of bounds"), "{p:?}");
            assert!(p.location.contains("task_panic.rs:"), "{p:?}");
            assert_eq!(p.at, Duration::from_millis(1500));
        }
        other => panic!("expected a panic, got {other:?}"),
    }
    let caught = std::panic::catch_unwind(|| panic!("outside a run"));
    assert!(caught.is_err());
}
