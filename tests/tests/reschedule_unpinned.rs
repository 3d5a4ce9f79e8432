//! epochlab's reschedule-unpinned check (not a RisingWave bug; once filed under #19138): a job rescheduled
//! online while it backfills, directed: a rate-limited view over a table whose
//! rows lie in one actor's half of the vnodes; once the other actor has finished, the halves are swapped.
//! Also the reschedule itself (the catalog, the dispatchers, bad assignments) and a random plan that found it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use epochlab_common::{ActorId, Bitmap, DataType, Op, VnodeCount, row};
use epochlab_meta::reschedule::ConfigChangeWait;
use epochlab_meta::{BadAssignment, DdlError, JobOptions, JobState, MetaConfig};
use epochlab_sim::{BugId, Cluster, ClusterConfig, Mode, Outcome, ReproParams, run_repro};

fn run(mode: Mode, seed: u64) -> epochlab_sim::SimOutput<epochlab_sim::ReproReport> {
    let params = ReproParams {
        bug: BugId::RescheduleUnpinned,
        mode,
        seed,
        ..ReproParams::default()
    };
    run_repro(&params)
}

/// Buggy: the Update goes out before the nodes have pinned the Pause's commit; the new owner of the vnode the
/// old owner read last resumes from the row before, and its next persist of that vnode finds the newer row.
#[test]
fn buggy_fails_with_the_backfill_persist_check() {
    for seed in 1..4 {
        let r = run(Mode::Buggy, seed).value;
        assert_eq!(r.outcome, Outcome::Failed, "seed {seed}: {r:?}");
        let error = r.error.clone().unwrap_or_default();
        assert!(error.starts_with("backfill progress of vnode "), "{error}");
        assert!(
            error.ends_with("(by the backfill persist check)"),
            "{error}"
        );
        assert_eq!(
            r.caught_by.as_deref(),
            Some("actor failure (inconsistent_state)")
        );
        assert!(r.failing_vnode.is_some());
        // The story: the reschedule, the new owners' reads of their vnodes' progress, the failure.
        assert!(
            r.timeline[0].contains(" inject barrier: "),
            "{:?}",
            r.timeline
        );
        assert!(r.timeline.iter().any(|l| l.contains(" backfill vnodes: ")));
        assert!(
            !r.timeline
                .iter()
                .any(|l| l.contains(" wait epoch commit: "))
        );
        assert!(r.timeline.last().unwrap().contains(" actor failure: "));
    }
}

/// Fixed: the Pause's post-collect waits until both nodes have pinned its commit; each new owner resumes
/// where the old owner stopped, the updates after the reschedule reach the new owners, and the view equals
/// its query.
#[test]
fn fixed_resumes_where_the_old_owner_stopped() {
    for seed in 1..4 {
        let out = run(Mode::Fixed, seed);
        let r = out.value;
        assert_eq!(r.outcome, Outcome::Passed, "seed {seed}: {r:?}");
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(
            r.notes[0].contains("view m equals its query"),
            "{:?}",
            r.notes
        );
        let lines = out.log.lines();
        let at = |what: &str| lines.iter().position(|l| l.contains(what)).unwrap();
        assert!(at(" wait epoch commit: ") < at("command=reschedule fragment"));
    }
}

/// The same seed gives the same run, in each mode.
#[test]
fn the_scenario_is_deterministic() {
    for mode in [Mode::Buggy, Mode::Fixed] {
        assert_eq!(run(mode, 1).digest, run(mode, 1).digest);
    }
}

/// The toggle, not the script, makes the failure: the same seed and scenario with only
/// `Toggles::config_change_wait` flipped fails and passes; and a random plan that found the bug (saved in
/// `tests/regressions/`) fires the backfill persist check with the toggle at `buggy` and not at `fixed`.
#[test]
fn flipping_the_toggle_makes_the_failure_appear_and_disappear() {
    use epochlab_common::Toggles;
    use epochlab_sim::workload::{PlanFile, run_plan};
    use epochlab_sim::{BugMode, ReproHooks};
    let buggy = BugMode::new(BugId::RescheduleUnpinned, Mode::Buggy).unwrap();
    let fixed = BugMode::new(BugId::RescheduleUnpinned, Mode::Fixed).unwrap();
    assert_eq!(fixed.toggles(), Toggles::default());
    assert_eq!(
        buggy.toggles(),
        Toggles::default().with(ConfigChangeWait::None)
    );
    for seed in [7, 11] {
        assert_eq!(run(Mode::Buggy, seed).value.outcome, Outcome::Failed);
        assert_eq!(run(Mode::Fixed, seed).value.outcome, Outcome::Passed);
    }
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("regressions/reschedule-unpinned-while-backfilling.json");
    let file = PlanFile::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.run(None), Ok(buggy));
    let persist_check = |run: BugMode| {
        let report = run_plan(&file.plan, run, ReproHooks::default()).value;
        let fired = report
            .signature()
            .is_some_and(|s| s.ends_with("(by the backfill persist check)"));
        (fired, report.outcome)
    };
    assert_eq!(persist_check(buggy), (true, Outcome::Failed));
    assert_eq!(persist_check(fixed), (false, Outcome::Passed));
}

/// A mode the bug does not have is not run.
#[test]
fn purge_before_reset_is_not_a_mode_of_reschedule_unpinned() {
    let r = run(Mode::PurgeBeforeReset, 1).value;
    assert_eq!(r.outcome, Outcome::NotReproducible);
    assert!(r.error.unwrap().contains("has the modes buggy, fixed"));
}

/// The reschedule itself, on a view that has finished its backfill: the catalog and the upstream's hash
/// dispatchers take the new bitmaps (rows written after it reach their vnodes' new owners, and the view stays
/// equal to its table); an assignment that moves nothing runs no barrier; bad ones are refused.
#[test]
fn a_reschedule_moves_vnodes_and_routes_rows_to_their_new_owners() {
    let out = epochlab_sim::try_run(5, Duration::from_secs(600), |ctx| async move {
        let mut meta = MetaConfig {
            vnode_count: VnodeCount::new(16).unwrap(),
            ..MetaConfig::default()
        };
        meta.barrier.interval = Duration::from_millis(200);
        let config = ClusterConfig {
            compute_nodes: 2,
            meta,
            ..ClusterConfig::default()
        };
        let cluster = Arc::new(Cluster::start(&ctx, config).await);
        let meta = &cluster.meta();
        let types = vec![DataType::Int64, DataType::Int64];
        let t = meta.create_table("t", types, vec![0], 2).await.unwrap();
        let rows = (0..100)
            .map(|k| (Op::Insert, row![k as i64, 0i64]))
            .collect();
        cluster.dml(t, rows).await.unwrap();
        meta.flush().await.unwrap();
        let m = meta
            .create_materialized_view("m", t, JobOptions::parallelism(3))
            .await
            .unwrap();
        assert_eq!(meta.relation(m).unwrap().state, JobState::Created);
        let before = meta.relation(m).unwrap();
        let injected = || {
            cluster
                .barrier_stats()
                .injected
                .load(std::sync::atomic::Ordering::Relaxed)
        };

        // Nothing moves: no barrier.
        let n = injected();
        meta.reschedule(m, before.rotated_vnodes(0)).await.unwrap();
        assert_eq!(injected(), n);

        // Bad assignments and a table are refused, before any barrier.
        let mut twice = before.rotated_vnodes(0);
        let first = *twice.keys().next().unwrap();
        twice.insert(first, Arc::new(Bitmap::ones(16)));
        let err = meta.reschedule(m, twice).await.unwrap_err();
        assert!(
            matches!(
                &err,
                DdlError::BadAssignment(BadAssignment::NotAPartition { owners: 2, .. })
            ),
            "{err}"
        );
        let mut other: BTreeMap<ActorId, Arc<Bitmap>> = before.rotated_vnodes(0);
        other.insert(ActorId(999), Arc::new(Bitmap::zeros(16)));
        assert!(matches!(
            meta.reschedule(m, other).await,
            Err(DdlError::BadAssignment(BadAssignment::Actors { .. }))
        ));
        let table = meta.relation(t).unwrap();
        let err = meta
            .reschedule(t, table.rotated_vnodes(3))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("only views and sinks"), "{err}");
        assert_eq!(injected(), n);

        // A real move: a Pause, the Update, a Resume, on consecutive barriers; the catalog takes the bitmaps.
        let rotated = before.rotated_vnodes(5);
        meta.reschedule(m, rotated.clone()).await.unwrap();
        let lines = ctx.log.lines();
        let ddl = lines
            .iter()
            .position(|l| l.contains(" ddl: reschedule "))
            .unwrap();
        let commands: Vec<&str> = lines[ddl..]
            .iter()
            .filter(|l| l.contains(" inject barrier: "))
            .take(3)
            .map(|l| {
                l.split(" command=")
                    .nth(1)
                    .unwrap()
                    .split(" nodes=")
                    .next()
                    .unwrap()
            })
            .collect();
        assert_eq!(commands, ["pause", "reschedule fragment", "resume"]);
        let after = meta.relation(m).unwrap();
        for a in &after.actors {
            assert_eq!(a.vnodes, rotated[&a.actor_id]);
        }
        // Rows written now go to the vnodes' new owners: updates of every row, and new rows.
        let updates = (0..100)
            .flat_map(|k| {
                [
                    (Op::UpdateDelete, row![k as i64, 0i64]),
                    (Op::UpdateInsert, row![k as i64, 1i64]),
                ]
            })
            .chain((100..150).map(|k| (Op::Insert, row![k as i64, 1i64])))
            .collect();
        cluster.dml(t, updates).await.unwrap();
        meta.flush().await.unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(
            cluster.failures.failures().is_empty(),
            "{:?}",
            cluster.failures.failures()
        );
        let sorted = |mut rows: Vec<epochlab_common::OwnedRow>| {
            rows.sort_by_key(|r| format!("{r:?}"));
            rows
        };
        let view = sorted(cluster.committed_rows(m));
        assert_eq!(view.len(), 150);
        assert_eq!(view, sorted(cluster.committed_rows(t)));
        cluster.shutdown();
    });
    if let Err(t) = out.value {
        panic!("the run hung; last events:\n{}", t.tail.join("\n"));
    }
}
