//! The barrier protocol end to end: DML through a table, hash dispatch, a view and a sink; commits in epoch
//! order; checkpoint frequency; alignment under skew; drops; recovery after a failed collection; determinism.

use std::sync::atomic::Ordering;
use std::time::Duration;

use epochlab_common::TableId;
use epochlab_common::plan::SinkKind;
use epochlab_meta::{JobOptions, MetaConfig, SinkOptions};
use epochlab_rpc::RpcKind;
use epochlab_sim::{Cluster, ClusterConfig, SimContext};
use epochlab_tests::{Oracle, check_commits, schema};
use proptest::prelude::*;

fn config(nodes: u32, checkpoint_frequency: u32) -> ClusterConfig {
    let mut meta = MetaConfig::default();
    meta.barrier.interval = Duration::from_millis(100);
    meta.barrier.checkpoint_frequency = checkpoint_frequency;
    ClusterConfig {
        compute_nodes: nodes,
        meta,
        ..Default::default()
    }
}

struct Pipeline {
    table: TableId,
    mv: TableId,
    sink: TableId,
}

async fn pipeline(cluster: &Cluster, p_table: usize, p_mv: usize, p_sink: usize) -> Pipeline {
    let (types, pk) = schema();
    let table = cluster
        .meta()
        .create_table("t", types, pk, p_table)
        .await
        .unwrap();
    let mv = cluster
        .meta()
        .create_materialized_view("mv", table, JobOptions::parallelism(p_mv))
        .await
        .unwrap();
    let options = SinkOptions {
        kind: SinkKind::Collecting,
        ..Default::default()
    };
    let sink = cluster
        .meta()
        .create_sink("s", table, JobOptions::parallelism(p_sink), options)
        .await
        .unwrap();
    Pipeline { table, mv, sink }
}

/// After a flush, the table, the view and the sink each equal the oracle.
fn assert_matches(cluster: &Cluster, p: &Pipeline, oracle: &Oracle) {
    let expect = oracle.rows();
    assert_eq!(
        Oracle::sorted(&cluster.committed_rows(p.table)),
        expect,
        "table"
    );
    assert_eq!(
        Oracle::sorted(&cluster.committed_rows(p.mv)),
        expect,
        "materialized view"
    );
    let (rows, anomalies) = cluster.sink_rows(p.sink).expect("sink exists");
    assert!(anomalies.is_empty(), "sink anomalies: {anomalies:?}");
    assert_eq!(Oracle::sorted(&rows), expect, "sink");
}

async fn run_dml(
    ctx: &SimContext,
    cluster: &Cluster,
    table: TableId,
    oracle: &mut Oracle,
    batches: usize,
) {
    for _ in 0..batches {
        let batch = oracle.gen_batch(&ctx.rng, 20, 60);
        cluster.dml(table, batch).await.unwrap();
        tokio::time::sleep(ctx.rng.duration(Duration::ZERO..Duration::from_millis(80))).await;
    }
}

#[test]
fn dml_reaches_view_and_sink_for_every_shape() {
    for nodes in 1..=3u32 {
        for parallelism in 1..=4usize {
            for freq in [1, 10] {
                let seed = (nodes as u64) << 16 | (parallelism as u64) << 8 | freq as u64;
                let out = epochlab_sim::run(seed, |ctx| async move {
                    let cluster = Cluster::start(&ctx, config(nodes, freq)).await;
                    // Different parallelism on each side, so hash dispatch really reshuffles.
                    let p = pipeline(
                        &cluster,
                        parallelism,
                        5 - parallelism,
                        parallelism.max(2) - 1,
                    )
                    .await;
                    let mut oracle = Oracle::default();
                    run_dml(&ctx, &cluster, p.table, &mut oracle, 15).await;
                    cluster.meta().flush().await.unwrap();
                    assert_matches(&cluster, &p, &oracle);
                    assert!(!oracle.is_empty());
                    assert_eq!(
                        cluster.barrier_stats().recoveries.load(Ordering::Relaxed),
                        0
                    );
                });
                let commits = check_commits(&out.log.lines()).unwrap();
                assert!(
                    commits >= 4,
                    "nodes={nodes} p={parallelism} freq={freq}: {commits} commits"
                );
            }
        }
    }
}

/// Barriers reach nodes at different times (random inject latency up to twice the interval) while a slow sink
/// holds barriers behind data: merges must align them, and commits stay in epoch order.
#[test]
fn alignment_under_skewed_delays() {
    let out = epochlab_sim::run(42, |ctx| async move {
        let cluster = Cluster::start(&ctx, config(3, 1)).await;
        cluster.network.set_latency(
            RpcKind::InjectBarrier,
            Duration::ZERO..Duration::from_millis(200),
        );
        cluster.network.set_latency(
            RpcKind::BarrierComplete,
            Duration::ZERO..Duration::from_millis(50),
        );
        let (types, pk) = schema();
        let table = cluster
            .meta()
            .create_table("t", types, pk, 4)
            .await
            .unwrap();
        let mv = cluster
            .meta()
            .create_materialized_view("mv", table, JobOptions::parallelism(1))
            .await
            .unwrap();
        let options = SinkOptions {
            kind: SinkKind::Collecting,
            chunk_delay: Duration::from_millis(15),
            ..Default::default()
        };
        let sink = cluster
            .meta()
            .create_sink("s", table, JobOptions::parallelism(2), options)
            .await
            .unwrap();
        let p = Pipeline { table, mv, sink };
        let mut oracle = Oracle::default();
        run_dml(&ctx, &cluster, table, &mut oracle, 40).await;
        cluster.meta().flush().await.unwrap();
        assert_matches(&cluster, &p, &oracle);
        let stats = cluster.barrier_stats();
        assert_eq!(stats.recoveries.load(Ordering::Relaxed), 0);
        assert!(
            stats.max_in_flight.load(Ordering::Relaxed) >= 3,
            "barriers overlapped"
        );
    });
    check_commits(&out.log.lines()).unwrap();
}

/// With checkpoint_frequency 10, data reaches committed storage only at a checkpoint.
#[test]
fn data_is_committed_only_at_checkpoints() {
    epochlab_sim::run(3, |ctx| async move {
        let cluster = Cluster::start(&ctx, config(2, 10)).await;
        let (types, pk) = schema();
        let table = cluster
            .meta()
            .create_table("t", types, pk, 2)
            .await
            .unwrap();
        // The create forced a checkpoint; the next comes after ten barriers (a second of 100 ms barriers).
        let mut oracle = Oracle::default();
        cluster.dml(table, oracle.gen_inserts(0, 50)).await.unwrap();
        let mce_before = cluster.hummock.max_committed_epoch();
        tokio::time::sleep(Duration::from_millis(550)).await;
        assert!(cluster.barrier_stats().injected.load(Ordering::Relaxed) >= 4);
        assert_eq!(
            cluster.hummock.max_committed_epoch(),
            mce_before,
            "no checkpoint yet"
        );
        assert!(
            cluster.committed_rows(table).is_empty(),
            "nothing committed between checkpoints"
        );
        cluster.meta().flush().await.unwrap();
        assert_eq!(
            Oracle::sorted(&cluster.committed_rows(table)),
            oracle.rows()
        );
    });
}

/// Dropping stops every actor of the job and unregisters its tables; the others keep running.
#[test]
fn drop_removes_actors_and_unregisters_tables() {
    epochlab_sim::run(4, |ctx| async move {
        let cluster = Cluster::start(&ctx, config(3, 1)).await;
        let p = pipeline(&cluster, 3, 2, 2).await;
        let mut oracle = Oracle::default();
        run_dml(&ctx, &cluster, p.table, &mut oracle, 5).await;
        let mut table_actors: Vec<_> = cluster
            .meta()
            .relation(p.table)
            .unwrap()
            .all_actors()
            .map(|a| a.actor_id)
            .collect();
        table_actors.sort();
        let progress = |id| {
            cluster
                .meta()
                .relation(id)
                .unwrap()
                .progress_table
                .unwrap()
                .table_id
        };
        assert_eq!(
            cluster
                .hummock
                .registered_tables()
                .into_iter()
                .collect::<Vec<_>>(),
            vec![p.table, p.mv, progress(p.mv), progress(p.sink)]
        );
        assert!(
            cluster.meta().drop_job(p.table).await.is_err(),
            "a table with dependents cannot be dropped"
        );
        cluster.meta().drop_job(p.mv).await.unwrap();
        cluster.meta().drop_job(p.sink).await.unwrap();
        assert!(cluster.meta().relation(p.mv).is_none());
        assert_eq!(
            cluster
                .hummock
                .registered_tables()
                .into_iter()
                .collect::<Vec<_>>(),
            vec![p.table]
        );
        let mut running: Vec<_> = cluster
            .running_actors()
            .await
            .into_values()
            .flatten()
            .collect();
        running.sort();
        assert_eq!(running, table_actors, "only the table's actors remain");
        // The table keeps working.
        run_dml(&ctx, &cluster, p.table, &mut oracle, 3).await;
        cluster.meta().flush().await.unwrap();
        assert_eq!(
            Oracle::sorted(&cluster.committed_rows(p.table)),
            oracle.rows()
        );
        cluster.meta().drop_job(p.table).await.unwrap();
        assert!(cluster.hummock.registered_tables().is_empty());
        assert!(cluster.running_actors().await.values().all(Vec::is_empty));
        assert_eq!(cluster.exchange.pending(), 0, "no channel end left behind");
    });
}

/// A failed collection fails the epoch and triggers recovery; the data committed before stays, and the
/// pipeline carries on exactly-once.
#[test]
fn failed_collection_recovers() {
    let out = epochlab_sim::run(5, |ctx| async move {
        let cluster = Cluster::start(&ctx, config(2, 1)).await;
        let p = pipeline(&cluster, 2, 2, 2).await;
        let mut oracle = Oracle::default();
        run_dml(&ctx, &cluster, p.table, &mut oracle, 5).await;
        cluster.meta().flush().await.unwrap();
        cluster.network.fail_next(RpcKind::BarrierComplete, None, 1);
        tokio::time::sleep(Duration::from_millis(500)).await;
        cluster.wait_ready().await;
        assert_eq!(
            cluster.barrier_stats().recoveries.load(Ordering::Relaxed),
            1
        );
        assert_matches(&cluster, &p, &oracle);
        run_dml(&ctx, &cluster, p.table, &mut oracle, 5).await;
        cluster.meta().flush().await.unwrap();
        assert_matches(&cluster, &p, &oracle);
    });
    check_commits(&out.log.lines()).unwrap();
    let lines = out.log.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("barrier failed: error=rpc barrier_complete"))
    );
    assert_eq!(
        lines.iter().filter(|l| l.contains(" reset node: ")).count(),
        4,
        "bootstrap and recovery reset both nodes"
    );
}

fn digest_of(seed: u64) -> String {
    epochlab_sim::run(seed, |ctx| async move {
        let cluster = Cluster::start(&ctx, config(3, 2)).await;
        cluster.network.set_latency(
            RpcKind::InjectBarrier,
            Duration::ZERO..Duration::from_millis(120),
        );
        let p = pipeline(&cluster, 3, 2, 2).await;
        let mut oracle = Oracle::default();
        run_dml(&ctx, &cluster, p.table, &mut oracle, 10).await;
        cluster.meta().flush().await.unwrap();
    })
    .digest
}

#[test]
fn same_seed_same_digest() {
    assert_eq!(digest_of(11), digest_of(11));
    assert_ne!(digest_of(11), digest_of(12));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    /// Random DML with views and sinks created and dropped at random points: whatever is alive at the end
    /// equals the oracle, and commits stay in order.
    #[test]
    fn random_dml_and_ddl_timing(
        seed in any::<u64>(),
        nodes in 1u32..4,
        p_table in 1usize..5,
        steps in proptest::collection::vec(0u8..6, 4..16),
    ) {
        let out = epochlab_sim::run(seed, |ctx| async move {
            let cluster = Cluster::start(&ctx, config(nodes, 1 + (seed % 3) as u32)).await;
            let (types, pk) = schema();
            let table = cluster.meta().create_table("t", types, pk, p_table).await.unwrap();
            let mut oracle = Oracle::default();
            // Jobs backfill what the table had when they were created: each must end equal to the table.
            let mut views: Vec<TableId> = Vec::new();
            let mut sinks: Vec<TableId> = Vec::new();
            for step in steps {
                match step {
                    0 if views.len() < 3 => {
                        let id = cluster.meta().create_materialized_view("mv", table, JobOptions::parallelism(1 + (seed as usize % 3))).await.unwrap();
                        views.push(id);
                    }
                    1 if sinks.len() < 3 => {
                        let options = SinkOptions { kind: SinkKind::Collecting, ..Default::default() };
                        let id = cluster.meta().create_sink("s", table, JobOptions::parallelism(2), options).await.unwrap();
                        sinks.push(id);
                    }
                    2 if !views.is_empty() => {
                        let id = views.remove(0);
                        cluster.meta().drop_job(id).await.unwrap();
                    }
                    3 if !sinks.is_empty() => {
                        let id = sinks.remove(0);
                        cluster.meta().drop_job(id).await.unwrap();
                    }
                    _ => {
                        let batch = oracle.gen_batch(&ctx.rng, 10, 40);
                        cluster.dml(table, batch).await.unwrap();
                    }
                }
                tokio::time::sleep(ctx.rng.duration(Duration::ZERO..Duration::from_millis(150))).await;
            }
            cluster.meta().flush().await.unwrap();
            assert_eq!(Oracle::sorted(&cluster.committed_rows(table)), oracle.rows());
            for id in &views {
                assert_eq!(Oracle::sorted(&cluster.committed_rows(*id)), oracle.rows());
            }
            for id in &sinks {
                let (rows, anomalies) = cluster.sink_rows(*id).unwrap();
                assert!(anomalies.is_empty());
                assert_eq!(Oracle::sorted(&rows), oracle.rows());
            }
            let mut expected_tables = vec![table];
            for id in views.iter().chain(&sinks) {
                let rel = cluster.meta().relation(*id).unwrap();
                expected_tables.extend(rel.state_tables());
            }
            expected_tables.sort();
            assert_eq!(cluster.hummock.registered_tables().into_iter().collect::<Vec<_>>(), expected_tables);
        });
        prop_assert!(check_commits(&out.log.lines()).is_ok());
    }
}
