//! Streaming jobs from a fragment graph: `Union(Project(Filter(scan t1)), Project(scan t2))` materialized,
//! with DML on both tables throughout and a node killed mid-stream, equals the same expressions evaluated
//! over the tables' final rows (the reference). The expressions can fail (a division by zero): non-strict
//! evaluation makes those columns NULL, in the view and in the reference alike.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use epochlab_common::catalog::TableDesc;
use epochlab_common::expr_node::{ExprNode, ExprType};
use epochlab_common::plan::{
    ConflictBehavior, DispatchStrategy, FragmentDistribution, StreamFragment, StreamFragmentEdge,
    StreamFragmentGraph, StreamNode,
};
use epochlab_common::{DataType, OwnedRow, ScalarImpl, TableId, VnodeCount, WorkerId};
use epochlab_meta::{
    BACKFILL_CHUNK_SIZE, JobOptions, JobState, MetaConfig, RelationKind, StreamScanType,
};
use epochlab_sim::{Cluster, ClusterConfig, SimContext};
use epochlab_tests::{Oracle, check_commits, schema};

const VNODES: u32 = 64;

fn config(nodes: u32) -> ClusterConfig {
    let mut meta = MetaConfig::default();
    meta.barrier.interval = Duration::from_millis(100);
    meta.barrier.checkpoint_frequency = 2;
    meta.vnode_count = VnodeCount::new(VNODES).unwrap();
    ClusterConfig {
        compute_nodes: nodes,
        meta,
        ..Default::default()
    }
}

fn col(i: usize) -> ExprNode {
    ExprNode::input_ref(i, DataType::Int64)
}

fn lit(v: i64) -> ExprNode {
    ExprNode::literal(Some(ScalarImpl::Int64(v)), DataType::Int64)
}

fn call(func: ExprType, args: Vec<ExprNode>) -> ExprNode {
    epochlab_expr::sig::build_func(func, args).unwrap()
}

fn int(d: &Option<ScalarImpl>) -> i64 {
    d.as_ref()
        .and_then(ScalarImpl::as_int64)
        .expect("an integer")
}

/// t1's filter: `v % 3 <> 0`.
fn keep_t1(v: i64) -> bool {
    v % 3 != 0
}

/// t1's second output column: `1000000 / (v % 7)`, NULL where `v % 7 = 0` (non-strict).
fn t1_x(v: i64) -> Option<i64> {
    (v % 7 != 0).then(|| 1_000_000 / (v % 7))
}

/// The view's rows from the tables' rows: `(k, x, tag)`.
fn reference(t1: &[OwnedRow], t2: &[OwnedRow]) -> Vec<(i64, Option<i64>, i64)> {
    let mut out: Vec<(i64, Option<i64>, i64)> = Vec::new();
    for r in t1 {
        let (k, v) = (int(r.datum_at(0)), int(r.datum_at(1)));
        if keep_t1(v) {
            out.push((k, t1_x(v), 1));
        }
    }
    for r in t2 {
        let (k, v) = (int(r.datum_at(0)), int(r.datum_at(1)));
        out.push((k, Some(v + 100), 2));
    }
    out.sort();
    out
}

fn view_rows(rows: &[OwnedRow]) -> Vec<(i64, Option<i64>, i64)> {
    let mut out: Vec<_> = rows
        .iter()
        .map(|r| {
            let x = r.datum_at(1).as_ref().and_then(ScalarImpl::as_int64);
            (int(r.datum_at(0)), x, int(r.datum_at(2)))
        })
        .collect();
    out.sort();
    out
}

/// The plan a planner makes of
/// `SELECT k, 1000000 / (v % 7), 1 FROM t1 WHERE v % 3 <> 0 UNION ALL SELECT k, v + 100, 2 FROM t2`:
/// one fragment per scan, hash exchanges on `k` into the union, materialized with pk `(k, tag)` (see
/// [`Root`] for the other shapes).
fn union_graph(
    t1: Arc<TableDesc>,
    t2: Arc<TableDesc>,
    scan_type: StreamScanType,
    shape: Root,
) -> (StreamFragmentGraph, Arc<TableDesc>) {
    let view = Arc::new(TableDesc::hash(
        TableId(u32::MAX),
        vec![DataType::Int64; 3],
        vec![0, 2],
        vec![0],
        VnodeCount::new(VNODES).unwrap(),
    ));
    let modulus = |m| call(ExprType::Modulus, vec![col(1), lit(m)]);
    let predicate = call(ExprType::NotEqual, vec![modulus(3), lit(0)]);
    let x = call(ExprType::Divide, vec![lit(1_000_000), modulus(7)]);
    let scan = |t| StreamNode::stream_scan(scan_type, t, BACKFILL_CHUNK_SIZE);
    let left = StreamNode::Project {
        exprs: vec![col(0), x, lit(1)],
        input: Box::new(StreamNode::Filter {
            predicate,
            input: Box::new(scan(t1)),
        }),
    };
    let right = StreamNode::Project {
        exprs: vec![col(0), call(ExprType::Add, vec![col(1), lit(100)]), lit(2)],
        input: Box::new(scan(t2)),
    };
    let union = StreamNode::Union {
        inputs: vec![
            StreamNode::Exchange { upstream: 1 },
            StreamNode::Exchange { upstream: 2 },
        ],
    };
    let materialize = |input| StreamNode::Materialize {
        table: view.clone(),
        conflict: ConflictBehavior::NoCheck,
        input: Box::new(input),
    };
    let by_k = || FragmentDistribution::Hash { dist_key: vec![0] };
    let fragment = |fragment_id, node, distribution| StreamFragment {
        fragment_id,
        node,
        distribution,
        parallelism: None,
    };
    let edge = |upstream, downstream, dispatch| StreamFragmentEdge {
        upstream,
        downstream,
        dispatch,
    };
    let mut fragments = vec![fragment(1, left, by_k()), fragment(2, right, by_k())];
    let mut edges = Vec::new();
    match shape {
        Root::Hash | Root::Single => {
            let (distribution, dispatch) = match shape {
                Root::Single => (FragmentDistribution::Single, DispatchStrategy::Simple),
                _ => (by_k(), DispatchStrategy::Hash(vec![0])),
            };
            fragments.push(fragment(3, materialize(union), distribution));
            edges.push(edge(1, 3, dispatch.clone()));
            edges.push(edge(2, 3, dispatch));
        }
        Root::NoShuffleAfterUnion => {
            fragments.push(fragment(4, union, by_k()));
            let exchange = StreamNode::Exchange { upstream: 4 };
            fragments.push(fragment(3, materialize(exchange), by_k()));
            edges.push(edge(1, 4, DispatchStrategy::Hash(vec![0])));
            edges.push(edge(2, 4, DispatchStrategy::Hash(vec![0])));
            edges.push(edge(4, 3, DispatchStrategy::NoShuffle));
        }
    }
    let graph = StreamFragmentGraph { fragments, edges };
    (graph, view)
}

/// Where the union is and how its rows reach the materialize.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Root {
    /// `Materialize(Union)` hashed by `k`, hash exchanges into it.
    Hash,
    /// `Materialize(Union)` in a singleton fragment behind simple exchanges.
    Single,
    /// The union in a fragment of its own, a no-shuffle exchange into `Materialize` (placed like it).
    NoShuffleAfterUnion,
}

#[derive(Clone, Copy, Debug)]
enum Kill {
    /// While the view backfills (it is created in the background and survives recovery).
    DuringBackfill,
    /// After the view is created, with DML flowing.
    AfterCreate,
}

async fn dml_for(ctx: &SimContext, cluster: &Cluster, tables: [(TableId, &mut Oracle); 2]) {
    for (t, o) in tables {
        let batch = o.gen_batch(&ctx.rng, 10, 400);
        cluster.dml(t, batch).await.unwrap();
    }
}

async fn scenario(ctx: SimContext, kill: Kill, scan_type: StreamScanType, shape: Root) {
    let cluster = Cluster::start(&ctx, config(3)).await;
    let (types, pk) = schema();
    let t1 = cluster
        .meta()
        .create_table("t1", types.clone(), pk.clone(), 3)
        .await
        .unwrap();
    let t2 = cluster
        .meta()
        .create_table("t2", types, pk, 2)
        .await
        .unwrap();
    let (mut o1, mut o2) = (Oracle::default(), Oracle::default());
    cluster.dml(t1, o1.gen_inserts(0, 300)).await.unwrap();
    cluster.dml(t2, o2.gen_inserts(100, 200)).await.unwrap();
    cluster.meta().flush().await.unwrap();
    let desc = |t| cluster.meta().relation(t).unwrap().desc;
    let (graph, view) = union_graph(desc(t1), desc(t2), scan_type, shape);
    let options = JobOptions {
        parallelism: 3,
        rate_limit: Some(50),
        background: true,
        scan_type,
    };
    let kind = RelationKind::MaterializedView;
    let mv = cluster
        .meta()
        .create_streaming_job("mv", kind, graph, vec![view], options)
        .await
        .unwrap();
    let root_actors = cluster.meta().relation(mv).unwrap().actors.len();
    assert_eq!(
        root_actors,
        if shape == Root::Single { 1 } else { 3 },
        "the union's actors"
    );
    let created = || {
        cluster
            .meta()
            .relation(mv)
            .is_some_and(|r| r.state == JobState::Created)
    };
    let mut batches = 0;
    let mut killed = false;
    while !created() || batches < 40 {
        dml_for(&ctx, &cluster, [(t1, &mut o1), (t2, &mut o2)]).await;
        batches += 1;
        let due = match kill {
            Kill::DuringBackfill => batches == 3,
            Kill::AfterCreate => created() && batches >= 10,
        };
        if due && !killed {
            killed = true;
            if matches!(kill, Kill::DuringBackfill) {
                assert!(!created(), "the view is still backfilling at the kill");
            }
            // The tables' rows are committed first (a kill loses uncommitted DML, as in RisingWave): the
            // view's epochs after the flush are what the kill interrupts.
            cluster.meta().flush().await.unwrap();
            dml_for(&ctx, &cluster, [(t1, &mut o1), (t2, &mut o2)]).await;
            cluster.meta().flush().await.unwrap();
            assert!(cluster.kill(WorkerId(2)));
            tokio::time::sleep(Duration::from_secs(1)).await;
            cluster.restart(WorkerId(2));
            cluster.wait_ready().await;
        }
        tokio::time::sleep(Duration::from_millis(ctx.rng.range_u64(20..150))).await;
        assert!(batches < 2000, "the view was never created");
    }
    assert!(killed, "{kill:?}: the kill happened");
    cluster.meta().flush().await.unwrap();
    assert!(cluster.barrier_stats().recoveries.load(Ordering::Relaxed) >= 1);
    let (r1, r2) = (cluster.committed_rows(t1), cluster.committed_rows(t2));
    assert_eq!(Oracle::sorted(&r1), o1.rows(), "t1");
    assert_eq!(Oracle::sorted(&r2), o2.rows(), "t2");
    let expected = reference(&o1.rows(), &o2.rows());
    assert!(
        expected.iter().any(|(_, x, _)| x.is_none()),
        "the reference has rows whose expression failed"
    );
    let errors: u64 = cluster
        .nodes()
        .iter()
        .map(|n| n.stats().expr_errors.total())
        .sum();
    assert!(errors > 0, "the division's errors are counted");
    let got = view_rows(&cluster.committed_rows(mv));
    assert_eq!(got.len(), expected.len(), "{kill:?}: row count");
    assert_eq!(got, expected, "{kill:?}");
}

fn run(seed: u64, kill: Kill, scan_type: StreamScanType) {
    run_with_root(seed, kill, scan_type, Root::Hash);
}

fn run_with_root(seed: u64, kill: Kill, scan_type: StreamScanType, shape: Root) {
    let out = epochlab_sim::run(seed, move |ctx| scenario(ctx, kill, scan_type, shape));
    check_commits(&out.log.lines()).unwrap();
}

/// A singleton union behind simple exchanges (one root actor with every vnode).
#[test]
fn union_into_a_singleton_survives_a_kill() {
    let arrangement = StreamScanType::ArrangementBackfill;
    run_with_root(7, Kill::DuringBackfill, arrangement, Root::Single);
    run_with_root(8, Kill::AfterCreate, arrangement, Root::Single);
}

/// The union in its own fragment, a no-shuffle edge into the materialize (actor i to actor i).
#[test]
fn union_then_no_shuffle_into_materialize_survives_a_kill() {
    let arrangement = StreamScanType::ArrangementBackfill;
    run_with_root(
        9,
        Kill::DuringBackfill,
        arrangement,
        Root::NoShuffleAfterUnion,
    );
    run_with_root(
        10,
        Kill::AfterCreate,
        arrangement,
        Root::NoShuffleAfterUnion,
    );
}

#[test]
fn union_of_two_scans_survives_a_kill_during_backfill() {
    for seed in [1, 2] {
        run(
            seed,
            Kill::DuringBackfill,
            StreamScanType::ArrangementBackfill,
        );
    }
}

#[test]
fn union_of_two_scans_survives_a_kill_after_create() {
    for seed in [3, 4] {
        run(seed, Kill::AfterCreate, StreamScanType::ArrangementBackfill);
    }
}

/// No-shuffle backfill: each scan fragment takes its table's actors (3 and 2), the union's fragment the
/// job's parallelism behind hash exchanges.
#[test]
fn union_of_two_no_shuffle_scans_survives_a_kill() {
    run(5, Kill::DuringBackfill, StreamScanType::Backfill);
    run(6, Kill::AfterCreate, StreamScanType::Backfill);
}

/// `CREATE MATERIALIZED VIEW AS VALUES ...`: one singleton fragment, a values source and a row id generator
/// (the view's pk is its hidden row id, as RisingWave plans it). Its rows are in the view once it is
/// created, and a kill and recovery afterwards do not emit them again (they would come back with new row
/// ids: twice the rows).
#[test]
fn values_job_emits_once_across_recovery() {
    let out = epochlab_sim::run(9, |ctx| async move {
        let cluster = Cluster::start(&ctx, config(2)).await;
        let rows: Vec<OwnedRow> = (0..300i64)
            .map(|k| {
                OwnedRow::new(vec![
                    Some(ScalarImpl::Int64(k)),
                    None,
                    Some(ScalarImpl::Int64(3)),
                ])
            })
            .collect();
        let view = Arc::new(TableDesc::hash(
            TableId(u32::MAX),
            vec![DataType::Int64, DataType::Serial, DataType::Int64],
            vec![1],
            vec![0],
            VnodeCount::new(VNODES).unwrap(),
        ));
        let root = StreamNode::Materialize {
            table: view.clone(),
            conflict: ConflictBehavior::NoCheck,
            input: Box::new(StreamNode::RowIdGen {
                row_id_index: 1,
                input: Box::new(StreamNode::Values {
                    rows: rows.clone(),
                    types: vec![DataType::Int64, DataType::Serial, DataType::Int64],
                }),
            }),
        };
        let graph = StreamFragmentGraph {
            fragments: vec![StreamFragment {
                fragment_id: 0,
                node: root,
                distribution: FragmentDistribution::Single,
                parallelism: None,
            }],
            edges: Vec::new(),
        };
        let kind = RelationKind::MaterializedView;
        let options = JobOptions::parallelism(2);
        let mv = cluster
            .meta()
            .create_streaming_job("v", kind, graph, vec![view], options)
            .await
            .unwrap();
        assert_eq!(
            cluster.meta().relation(mv).unwrap().state,
            JobState::Created
        );
        assert_eq!(
            cluster.meta().relation(mv).unwrap().actors.len(),
            1,
            "a singleton"
        );
        let keys = |rows: &[OwnedRow]| {
            let mut k: Vec<(i64, i64)> = rows
                .iter()
                .map(|r| (int(r.datum_at(0)), int(r.datum_at(2))))
                .collect();
            k.sort();
            k
        };
        let expected = keys(&rows);
        let got = cluster.committed_rows(mv);
        assert!(
            got.iter().all(|r| r.datum_at(1).is_some()),
            "row ids filled"
        );
        assert_eq!(keys(&got), expected);
        let worker = cluster.meta().relation(mv).unwrap().actors[0].worker;
        assert!(cluster.kill(worker));
        tokio::time::sleep(Duration::from_secs(1)).await;
        cluster.restart(worker);
        cluster.wait_ready().await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        cluster.meta().flush().await.unwrap();
        assert!(cluster.barrier_stats().recoveries.load(Ordering::Relaxed) >= 1);
        let got = cluster.committed_rows(mv);
        assert_eq!(keys(&got), expected, "not emitted again");
    });
    check_commits(&out.log.lines()).unwrap();
}

/// A table with `ConflictBehavior::Overwrite` (RisingWave's table with a primary key): an insert of a stored
/// key replaces the row, a delete of a missing key is nothing; a view over it sees the resolved changes.
/// Checked against a last-write-wins map, across a kill.
#[test]
fn overwrite_table_and_a_view_over_it() {
    use std::collections::BTreeMap;

    use epochlab_common::{Op, row};

    let out = epochlab_sim::run(11, |ctx| async move {
        let cluster = Cluster::start(&ctx, config(2)).await;
        let (types, pk) = schema();
        let t = cluster
            .meta()
            .create_table_with_conflict(
                "t",
                types,
                pk,
                vec![0],
                2,
                ConflictBehavior::Overwrite,
                None,
            )
            .await
            .unwrap();
        let mv = cluster
            .meta()
            .create_materialized_view("mv", t, JobOptions::parallelism(2))
            .await
            .unwrap();
        let mut expected: BTreeMap<i64, i64> = BTreeMap::new();
        for round in 0..30 {
            let mut batch = Vec::new();
            for _ in 0..10 {
                let k = ctx.rng.range_u64(0..40) as i64;
                let v = ctx.rng.range_u64(0..1000) as i64;
                if ctx.rng.bool(0.8) {
                    // Blind inserts: a stored key is overwritten.
                    batch.push((Op::Insert, row![k, v, "x"]));
                    expected.insert(k, v);
                } else {
                    // A blind delete (the row's values need not match): gone if stored.
                    batch.push((Op::Delete, row![k, 0i64, "x"]));
                    expected.remove(&k);
                }
            }
            cluster.dml(t, batch).await.unwrap();
            if round == 15 {
                cluster.meta().flush().await.unwrap();
                assert!(cluster.kill(WorkerId(1)));
                tokio::time::sleep(Duration::from_secs(1)).await;
                cluster.restart(WorkerId(1));
                cluster.wait_ready().await;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        cluster.meta().flush().await.unwrap();
        let pairs = |rows: Vec<OwnedRow>| {
            let mut p: Vec<(i64, i64)> = rows
                .iter()
                .map(|r| (int(r.datum_at(0)), int(r.datum_at(1))))
                .collect();
            p.sort();
            p
        };
        let expected: Vec<(i64, i64)> = expected.into_iter().collect();
        assert_eq!(pairs(cluster.committed_rows(t)), expected, "table");
        assert_eq!(pairs(cluster.committed_rows(mv)), expected, "view");
        // The kill fails the survivors' actors (closed channels); none fails on its state.
        for node in cluster.nodes() {
            let reasons = node.stats().failures_by_reason();
            assert!(
                reasons.keys().all(|r| !r.is_state_error()),
                "state errors: {reasons:?}"
            );
        }
    });
    check_commits(&out.log.lines()).unwrap();
}

/// `SELECT k, window_start, window_end FROM hop(t, ts, '2 minutes', '6 minutes')` materialized with pk
/// `(k, window_start)`: each row in three windows; deletes take their windows away.
#[test]
fn hop_window_view_equals_its_reference() {
    use epochlab_common::Op;
    use epochlab_common::plan::Interval;
    use epochlab_common::types::Timestamp;

    const MIN: i64 = 60_000_000;
    let ts = |minute: i64| {
        let t = chrono::DateTime::from_timestamp_micros(minute * MIN).unwrap();
        ScalarImpl::Timestamp(Timestamp(t.naive_utc()))
    };
    let out = epochlab_sim::run(12, move |ctx| async move {
        let cluster = Cluster::start(&ctx, config(2)).await;
        let types = vec![DataType::Int64, DataType::Timestamp];
        let t = cluster
            .meta()
            .create_table("t", types, vec![0], 2)
            .await
            .unwrap();
        let mut rows = std::collections::BTreeMap::new();
        let mut batch = Vec::new();
        for k in 0..50i64 {
            let minute = ctx.rng.range_u64(0..100) as i64;
            let r = OwnedRow::new(vec![Some(ScalarImpl::Int64(k)), Some(ts(minute))]);
            rows.insert(k, minute);
            batch.push((Op::Insert, r));
        }
        cluster.dml(t, batch).await.unwrap();
        let view = Arc::new(TableDesc::hash(
            TableId(u32::MAX),
            vec![DataType::Int64, DataType::Timestamp, DataType::Timestamp],
            vec![0, 1],
            vec![0],
            VnodeCount::new(VNODES).unwrap(),
        ));
        let up = cluster.meta().relation(t).unwrap().desc;
        let scan = StreamNode::stream_scan(StreamScanType::ArrangementBackfill, up, 64);
        let hop = StreamNode::HopWindow {
            time_col: 1,
            window_slide: Interval::from_month_day_usec(0, 0, 2 * MIN),
            window_size: Interval::from_month_day_usec(0, 0, 6 * MIN),
            output_indices: vec![0, 2, 3],
            input: Box::new(scan),
        };
        let root = StreamNode::Materialize {
            table: view.clone(),
            conflict: ConflictBehavior::NoCheck,
            input: Box::new(hop),
        };
        let graph = StreamFragmentGraph {
            fragments: vec![StreamFragment {
                fragment_id: 0,
                node: root,
                distribution: FragmentDistribution::Hash { dist_key: vec![0] },
                parallelism: None,
            }],
            edges: Vec::new(),
        };
        let kind = RelationKind::MaterializedView;
        let mv = cluster
            .meta()
            .create_streaming_job("h", kind, graph, vec![view], JobOptions::parallelism(2))
            .await
            .unwrap();
        // Delete a few rows after creation: their windows go.
        let gone: Vec<i64> = (0..50).filter(|k| k % 5 == 0).collect();
        let deletes = gone
            .iter()
            .map(|k| {
                (
                    Op::Delete,
                    OwnedRow::new(vec![Some(ScalarImpl::Int64(*k)), Some(ts(rows[k]))]),
                )
            })
            .collect();
        cluster.dml(t, deletes).await.unwrap();
        for k in &gone {
            rows.remove(k);
        }
        cluster.meta().flush().await.unwrap();
        let mut expected: Vec<String> = Vec::new();
        for (k, minute) in &rows {
            let hop_start = minute - minute.rem_euclid(2);
            for back in [4, 2, 0] {
                let start = hop_start - back;
                expected.push(format!("{k} {:?} {:?}", ts(start), ts(start + 6)));
            }
        }
        expected.sort();
        let mut got: Vec<String> = cluster
            .committed_rows(mv)
            .iter()
            .map(|r| {
                let d = r.datums();
                format!(
                    "{} {:?} {:?}",
                    int(&d[0]),
                    d[1].clone().unwrap(),
                    d[2].clone().unwrap()
                )
            })
            .collect();
        got.sort();
        assert_eq!(got.len(), rows.len() * 3);
        assert_eq!(got, expected);
    });
    check_commits(&out.log.lines()).unwrap();
}

/// A table without a primary key: its row id is filled by the table actor's row id generator with one of
/// the actor's vnodes, which is then the row's vnode (the view's exchange and the state tables read it
/// from the id). Rows inserted with a NULL id, some deleted by their id, a kill between: the table holds
/// distinct ids, and a view over it equals it.
#[test]
fn row_id_table_and_a_view_over_it() {
    use epochlab_common::Op;

    let out = epochlab_sim::run(13, |ctx| async move {
        let cluster = Cluster::start(&ctx, config(3)).await;
        let types = vec![DataType::Int64, DataType::Serial];
        let t = cluster
            .meta()
            .create_table_with_row_id("t", types, 1, 3)
            .await
            .unwrap();
        let mv = cluster
            .meta()
            .create_materialized_view("mv", t, JobOptions::parallelism(2))
            .await
            .unwrap();
        let mut live = 0usize;
        for round in 0..20i64 {
            let batch = (0..20i64)
                .map(|i| {
                    (
                        Op::Insert,
                        OwnedRow::new(vec![Some(ScalarImpl::Int64(round * 100 + i)), None]),
                    )
                })
                .collect();
            cluster.dml(t, batch).await.unwrap();
            live += 20;
            cluster.meta().flush().await.unwrap();
            if round % 4 == 3 {
                // Delete a few committed rows, by their ids.
                let stored = cluster.committed_rows(t);
                let deletes: Vec<_> = stored
                    .into_iter()
                    .take(7)
                    .map(|r| (Op::Delete, r))
                    .collect();
                live -= deletes.len();
                cluster.dml(t, deletes).await.unwrap();
            }
            if round == 10 {
                cluster.meta().flush().await.unwrap();
                assert!(cluster.kill(WorkerId(3)));
                tokio::time::sleep(Duration::from_secs(1)).await;
                cluster.restart(WorkerId(3));
                cluster.wait_ready().await;
            }
        }
        cluster.meta().flush().await.unwrap();
        let rows = cluster.committed_rows(t);
        assert_eq!(rows.len(), live);
        let ids: std::collections::BTreeSet<i64> = rows
            .iter()
            .map(|r| match r.datum_at(1) {
                Some(ScalarImpl::Serial(s)) => s.as_row_id(),
                d => panic!("a row id, got {d:?}"),
            })
            .collect();
        assert_eq!(ids.len(), live, "distinct row ids");
        let sorted = |mut v: Vec<OwnedRow>| {
            v.sort_by_key(|r| format!("{:?}", r.datums()));
            v
        };
        assert_eq!(sorted(cluster.committed_rows(mv)), sorted(rows), "view");
        for node in cluster.nodes() {
            let reasons = node.stats().failures_by_reason();
            assert!(reasons.keys().all(|r| !r.is_state_error()), "{reasons:?}");
        }
    });
    check_commits(&out.log.lines()).unwrap();
}
