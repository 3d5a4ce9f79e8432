//! RisingWave #19138 as recorded, directed: a sink over a table backfilling through no-shuffle backfill, one of
//! whose actors has finished while the other has not; one compute node is removed for good, and recovery
//! scales the table and the sink in. Buggy (v2.0.2): the sink's remaining actor recovers vnodes in two states
//! and fails with RisingWave's assertion. Fixed (PR #23998): the scale-in skips the sink's no-shuffle group.

use std::time::Duration;

use epochlab_common::Toggles;
use epochlab_meta::scale::RescheduleBackfilling;
use epochlab_sim::{BugId, BugMode, Mode, Outcome, ReproParams, run_repro};

fn run(mode: Mode, seed: u64) -> epochlab_sim::SimOutput<epochlab_sim::ReproReport> {
    let params = ReproParams {
        bug: BugId::Rw19138,
        mode,
        seed,
        ..ReproParams::default()
    };
    run_repro(&params)
}

const RECORDED: &str = "All vnode partitions should have same state (no scale-in supported)";

/// Buggy: the run fails with the recorded assertion (the later vnode finished, the first not: `left: true,
/// right: false`, as in the issue), within a bounded virtual time, with the scale-in in its story.
#[test]
fn buggy_fails_with_the_recorded_assertion() {
    for seed in 1..4 {
        let out = run(Mode::Buggy, seed);
        let r = out.value;
        assert_eq!(r.outcome, Outcome::Failed, "seed {seed}: {r:?}");
        let error = r.error.clone().unwrap_or_default();
        assert!(error.starts_with(RECORDED), "{error}");
        assert!(error.ends_with("left: true, right: false)"), "{error}");
        assert_eq!(
            r.caught_by.as_deref(),
            Some("actor failure (inconsistent_state)")
        );
        assert!(r.failing_vnode.is_some());
        assert!(
            out.virtual_elapsed < Duration::from_secs(60),
            "{:?}",
            out.virtual_elapsed
        );
        assert!(r.timeline.iter().any(|l| l.contains(" worker removed: ")));
        assert!(
            r.timeline
                .iter()
                .any(|l| l.contains("recovery step: scale in sink s")),
            "{:?}",
            r.timeline
        );
        assert!(r.timeline.last().unwrap().contains(" actor failure: "));
    }
}

/// Fixed: the scale-in skips the group of the sink still backfilling; its actors move whole, the backfill
/// ends, and the sink equals its query (the rows loaded and those inserted after the recovery).
#[test]
fn fixed_skips_the_unreschedulable_group_and_the_sink_equals_its_query() {
    for seed in 1..4 {
        let out = run(Mode::Fixed, seed);
        let r = out.value;
        assert_eq!(r.outcome, Outcome::Passed, "seed {seed}: {r:?}");
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(
            r.notes[0].contains("sink s equals its query"),
            "{:?}",
            r.notes
        );
        let lines = out.log.lines();
        assert!(lines.iter().any(|l| {
            l.contains("scale in skipped group=1: a backfill that cannot be rescheduled")
        }));
        assert!(
            !lines
                .iter()
                .any(|l| l.contains("recovery step: scale in sink"))
        );
    }
}

/// The toggle, not the script, makes the failure: only `reschedule_backfilling` differs between the modes,
/// and the same seed fails and passes.
#[test]
fn flipping_the_toggle_makes_the_failure_appear_and_disappear() {
    let buggy = BugMode::new(BugId::Rw19138, Mode::Buggy).unwrap();
    let fixed = BugMode::new(BugId::Rw19138, Mode::Fixed).unwrap();
    assert_eq!(fixed.toggles(), Toggles::default());
    assert_eq!(
        buggy.toggles(),
        Toggles::default().with(RescheduleBackfilling::MviewsListed)
    );
    for seed in [7, 11] {
        assert_eq!(run(Mode::Buggy, seed).value.outcome, Outcome::Failed);
        assert_eq!(run(Mode::Fixed, seed).value.outcome, Outcome::Passed);
    }
}

/// The same seed gives the same run, in each mode.
#[test]
fn the_scenario_is_deterministic() {
    for mode in [Mode::Buggy, Mode::Fixed] {
        assert_eq!(run(mode, 1).digest, run(mode, 1).digest);
    }
}

/// A no-shuffle sink that has finished its backfill scales in with its table even with the buggy toggle: the
/// merged actor's vnodes are all finished, its state recovers, and the sink keeps equal to the table (rows
/// inserted after the scale-in included). Its upstream's online reschedule is refused.
#[test]
fn a_finished_no_shuffle_sink_scales_in_with_uniform_states() {
    use epochlab_common::plan::SinkKind;
    use epochlab_common::{DataType, Op, WorkerId, row};
    use epochlab_meta::{DdlError, JobOptions, JobState, MetaConfig, SinkOptions, StreamScanType};
    use epochlab_sim::{Cluster, ClusterConfig};
    let out = epochlab_sim::run(5, |_ctx| async move {
        let mut meta = MetaConfig::default();
        meta.barrier.interval = Duration::from_millis(200);
        meta.toggles = meta.toggles.with(RescheduleBackfilling::MviewsListed);
        let config = ClusterConfig {
            compute_nodes: 3,
            meta,
            ..Default::default()
        };
        let cluster = Cluster::start(&_ctx, config).await;
        let types = vec![DataType::Int64, DataType::Int64];
        let t = cluster
            .meta()
            .create_table("t", types, vec![0], 3)
            .await
            .unwrap();
        let rows = (0..300i64).map(|k| (Op::Insert, row![k, k])).collect();
        cluster.dml(t, rows).await.unwrap();
        cluster.meta().flush().await.unwrap();
        let job = JobOptions {
            parallelism: 1,
            rate_limit: None,
            background: false,
            scan_type: StreamScanType::Backfill,
        };
        let sink = SinkOptions {
            kind: SinkKind::Collecting,
            ..Default::default()
        };
        let s = cluster.meta().create_sink("s", t, job, sink).await.unwrap();
        let rel = cluster.meta().relation(s).unwrap();
        let table = cluster.meta().relation(t).unwrap();
        assert_eq!(
            rel.actors.len(),
            3,
            "the table's parallelism, not the one asked"
        );
        for (a, b) in rel.actors.iter().zip(&table.actors) {
            assert_eq!((a.worker, &a.vnodes), (b.worker, &b.vnodes));
        }
        let refused = cluster.meta().reschedule(s, rel.rotated_vnodes(1)).await;
        assert!(matches!(refused, Err(DdlError::Invalid(_))), "{refused:?}");
        cluster.meta().flush().await.unwrap();
        assert!(cluster.remove_node(WorkerId(2)));
        tokio::time::sleep(Duration::from_secs(1)).await;
        cluster.wait_ready().await;
        let late = (300..310i64).map(|k| (Op::Insert, row![k, k])).collect();
        cluster.dml(t, late).await.unwrap();
        cluster.meta().flush().await.unwrap();
        let rel = cluster.meta().relation(s).unwrap();
        assert_eq!(rel.state, JobState::Created);
        assert_eq!(rel.actors.len(), 2, "scaled in");
        assert!(cluster.failures.first_state_error().is_none());
        let (got, anomalies) = cluster.sink_rows(s).unwrap();
        assert!(anomalies.is_empty(), "{anomalies:?}");
        let key = |r: &epochlab_common::OwnedRow| format!("{r:?}");
        let got: std::collections::BTreeSet<String> = got.iter().map(key).collect();
        let want = cluster.committed_rows(t);
        assert_eq!(got, want.iter().map(key).collect());
        assert_eq!(got.len(), 310);
        cluster.shutdown();
    });
    let lines = out.log.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("recovery step: scale in sink s"))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("backfill state recovered: ") && l.contains("finished=true"))
    );
}

/// The random plan that found it (saved in `tests/regressions/`) fails with the recorded assertion with the
/// toggle at `buggy`, and passes at `fixed`.
#[test]
fn the_regression_plan_fails_buggy_and_passes_fixed() {
    use epochlab_sim::ReproHooks;
    use epochlab_sim::workload::{PlanFile, run_plan};
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("regressions/19138-no-shuffle-scaled-in-while-backfilling.json");
    let file = PlanFile::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let buggy = BugMode::new(BugId::Rw19138, Mode::Buggy).unwrap();
    let fixed = BugMode::new(BugId::Rw19138, Mode::Fixed).unwrap();
    assert_eq!(file.run(None), Ok(buggy));
    assert!(
        file.plan
            .steps
            .iter()
            .any(|s| matches!(s.action, epochlab_sim::workload::Action::RemoveNode { .. }))
    );
    let recorded = |run: BugMode| {
        let report = run_plan(&file.plan, run, ReproHooks::default()).value;
        let fired = report.signature().is_some_and(|s| s.contains(RECORDED));
        (fired, report.outcome)
    };
    assert_eq!(recorded(buggy), (true, Outcome::Failed));
    assert_eq!(recorded(fixed), (false, Outcome::Passed));
}
