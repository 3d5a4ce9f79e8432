//! Aggregations from a fragment graph through recovery: a `HashAgg` (grouped by `k % 10`, behind a hash
//! exchange) and a `SimpleAgg` (behind a simple exchange into a singleton fragment) over a table with DML
//! throughout, a compute node killed mid-stream (after a checkpoint, or between checkpoints so that the
//! uncommitted epochs are lost), and the view compared with the same aggregates evaluated over the table's
//! committed rows (the reference).
//!
//! The calls: `count(*)`, `sum(v)`, `min(v)` and `max(v)` (retractable: materialized input),
//! `count(DISTINCT v % 100)` (a dedup table) and `count(*) FILTER (WHERE v > 500000)`.
//!
//! The run must end with no actor failed on its state and exactly the one recovery the kill caused, and a
//! test-only mutation (dedup counts written a barrier late) must be caught.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use epochlab_common::catalog::{Distribution, TableDesc};
use epochlab_common::expr_node::{ExprNode, ExprType};
use epochlab_common::plan::{
    AggCallState, ConflictBehavior, DispatchStrategy, FragmentDistribution, StreamFragment,
    StreamFragmentEdge, StreamFragmentGraph, StreamNode, agg_distinct_dedup_table, agg_keeps_input,
    agg_materialized_input_table, agg_result_table,
};
use epochlab_common::{
    AggCall, AggKind, DataType, OrderType, OwnedRow, ScalarImpl, TableId, Toggles, VnodeCount,
    WorkerId,
};
use epochlab_meta::{BACKFILL_CHUNK_SIZE, JobOptions, JobState, RelationKind, StreamScanType};
use epochlab_sim::{Cluster, SimContext};
use epochlab_stream::executor::StatefulExecutorKind;
use epochlab_stream::executor::aggregate::group::DedupWrite;
use epochlab_tests::recovery::{Finding, VNODES, config, dml_failed, judge};
use epochlab_tests::{Oracle, check_commits, schema};

const FILTER_ABOVE: i64 = 500_000;

fn vnodes() -> VnodeCount {
    VnodeCount::new(VNODES).unwrap()
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

fn agg(kind: AggKind, args: Vec<usize>) -> AggCall {
    let arg_types = vec![DataType::Int64; args.len()];
    let ret = epochlab_expr::agg::infer_return_type(kind, &arg_types).unwrap();
    AggCall {
        kind,
        args,
        arg_types,
        ret,
        distinct: false,
        order_by: Vec::new(),
        filter: None,
    }
}

/// The calls over the aggregation's input `[.., v at v_col, .., w at w_col]`; call 0 is the row count.
fn calls(v_col: usize, w_col: usize) -> Vec<AggCall> {
    let mut distinct = agg(AggKind::Count, vec![w_col]);
    distinct.distinct = true;
    let mut filtered = agg(AggKind::Count, vec![]);
    filtered.filter = Some(call(
        ExprType::GreaterThan,
        vec![col(v_col), lit(FILTER_ABOVE)],
    ));
    vec![
        agg(AggKind::Count, vec![]),
        agg(AggKind::Sum, vec![v_col]),
        agg(AggKind::Min, vec![v_col]),
        agg(AggKind::Max, vec![v_col]),
        distinct,
        filtered,
    ]
}

/// The aggregation node: `group_key` empty is a simple aggregation. Input: `[g?, v, k, w]` (stream key `k`).
fn agg_node(group: bool) -> StreamNode {
    let off = usize::from(group);
    let (v, k, w) = (off, off + 1, off + 2);
    let group_key: Vec<usize> = if group { vec![0] } else { vec![] };
    let input_types = vec![DataType::Int64; off + 3];
    let agg_calls = calls(v, w);
    let placeholder = |i: u32| TableId(u32::MAX - 1 - i);
    let g_types = vec![DataType::Int64; group_key.len()];
    let result_table = Arc::new(agg_result_table(
        placeholder(0),
        &g_types,
        &agg_calls,
        vnodes(),
    ));
    let agg_call_states = agg_calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if agg_keeps_input(c.kind) {
                let id = placeholder(1 + i as u32);
                agg_materialized_input_table(id, &input_types, &group_key, c, &[k], vnodes())
            } else {
                AggCallState::Value
            }
        })
        .collect();
    let dedup = agg_distinct_dedup_table(placeholder(20), &input_types, &group_key, w, 1, vnodes());
    let input = Box::new(StreamNode::Exchange { upstream: 1 });
    if group {
        StreamNode::HashAgg {
            group_key,
            agg_calls,
            result_table,
            agg_call_states,
            distinct_dedup_tables: vec![dedup],
            row_count_index: 0,
            emit_on_window_close: None,
            input,
        }
    } else {
        StreamNode::SimpleAgg {
            agg_calls,
            result_table,
            agg_call_states,
            distinct_dedup_tables: vec![dedup],
            row_count_index: 0,
            input,
        }
    }
}

/// The view's table: the group key (if any), then the six calls' outputs; pk the group key.
fn view_table(group: bool) -> TableDesc {
    let mut types = vec![DataType::Int64; usize::from(group)];
    types.extend([
        DataType::Int64,
        DataType::Decimal,
        DataType::Int64,
        DataType::Int64,
        DataType::Int64,
        DataType::Int64,
    ]);
    let n = types.len();
    let pk: Vec<usize> = if group { vec![0] } else { vec![] };
    TableDesc {
        table_id: TableId(u32::MAX),
        column_types: types,
        pk_orders: vec![OrderType::ascending(); pk.len()],
        pk_indices: pk,
        value_indices: (0..n).collect(),
        distribution: if group {
            Distribution::HashDistKey {
                dist_key_in_pk: vec![0],
            }
        } else {
            Distribution::Singleton
        },
        vnode_count: vnodes(),
    }
}

/// `SELECT [k % 10,] count(*), sum(v), min(v), max(v), count(DISTINCT v % 100), count(*) FILTER (WHERE v >
/// 500000) FROM t [GROUP BY k % 10]`: a scan fragment projecting `[g?, v, k, v % 100]`, an exchange (hash on
/// `g`, or simple into a singleton), the aggregation materialized.
fn agg_graph(t: Arc<TableDesc>, group: bool) -> (StreamFragmentGraph, Arc<TableDesc>) {
    let view = Arc::new(view_table(group));
    let mut exprs = Vec::new();
    if group {
        exprs.push(call(ExprType::Modulus, vec![col(0), lit(10)]));
    }
    exprs.extend([
        col(1),
        col(0),
        call(ExprType::Modulus, vec![col(1), lit(100)]),
    ]);
    let scan = StreamNode::stream_scan(StreamScanType::ArrangementBackfill, t, BACKFILL_CHUNK_SIZE);
    let project = StreamNode::Project {
        exprs,
        input: Box::new(scan),
    };
    let root = StreamNode::Materialize {
        table: view.clone(),
        conflict: ConflictBehavior::NoCheck,
        input: Box::new(agg_node(group)),
    };
    let (distribution, dispatch) = if group {
        (
            FragmentDistribution::Hash { dist_key: vec![0] },
            DispatchStrategy::Hash(vec![0]),
        )
    } else {
        (FragmentDistribution::Single, DispatchStrategy::Simple)
    };
    let graph = StreamFragmentGraph {
        fragments: vec![
            StreamFragment {
                fragment_id: 1,
                node: project,
                distribution: FragmentDistribution::Hash { dist_key: vec![0] },
                parallelism: None,
            },
            StreamFragment {
                fragment_id: 2,
                node: root,
                distribution,
                parallelism: None,
            },
        ],
        edges: vec![StreamFragmentEdge {
            upstream: 1,
            downstream: 2,
            dispatch,
        }],
    };
    (graph, view)
}

fn int(d: &Option<ScalarImpl>) -> i64 {
    d.as_ref()
        .and_then(ScalarImpl::as_int64)
        .expect("an integer")
}

/// One output row as text, NULL as "NULL".
fn text(r: &OwnedRow) -> String {
    let cols: Vec<String> = r
        .datums()
        .iter()
        .map(|d| d.as_ref().map_or("NULL".to_string(), ToString::to_string))
        .collect();
    cols.join(",")
}

/// The view's rows computed from the table's rows, as text, sorted.
fn reference(rows: &[OwnedRow], group: bool) -> Vec<String> {
    let mut groups: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for r in rows {
        let (k, v) = (int(r.datum_at(0)), int(r.datum_at(1)));
        groups
            .entry(if group { k % 10 } else { 0 })
            .or_default()
            .push(v);
    }
    if !group && groups.is_empty() {
        return vec!["0,NULL,NULL,NULL,0,0".to_string()];
    }
    let mut out: Vec<String> = groups
        .iter()
        .map(|(g, vs)| {
            let distinct: std::collections::BTreeSet<i64> = vs.iter().map(|v| v % 100).collect();
            let above = vs.iter().filter(|v| **v > FILTER_ABOVE).count();
            let body = format!(
                "{},{},{},{},{},{}",
                vs.len(),
                vs.iter().sum::<i64>(),
                vs.iter().min().unwrap(),
                vs.iter().max().unwrap(),
                distinct.len(),
                above
            );
            if group { format!("{g},{body}") } else { body }
        })
        .collect();
    out.sort();
    out
}

fn view_rows(rows: &[OwnedRow]) -> Vec<String> {
    let mut out: Vec<String> = rows.iter().map(text).collect();
    out.sort();
    out
}

#[derive(Clone, Copy, Debug)]
enum Kill {
    /// Right after a flush: every epoch so far is committed.
    AfterCheckpoint,
    /// Mid-epoch with DML in flight: the epochs since the last checkpoint are lost (table and view alike).
    BetweenCheckpoints,
}

async fn scenario(
    ctx: SimContext,
    group: bool,
    kill: Kill,
    toggles: Toggles,
) -> Result<(), Finding> {
    let cluster = Cluster::start(&ctx, config(toggles)).await;
    let (types, pk) = schema();
    let t = cluster
        .meta()
        .create_table("t", types, pk, 3)
        .await
        .unwrap();
    let mut o = Oracle::default();
    cluster.dml(t, o.gen_inserts(0, 200)).await.unwrap();
    cluster.meta().flush().await.unwrap();
    let desc = cluster.meta().relation(t).unwrap().desc;
    let (graph, view) = agg_graph(desc, group);
    let options = JobOptions {
        parallelism: 3,
        rate_limit: None,
        background: false,
        scan_type: StreamScanType::ArrangementBackfill,
    };
    let kind = RelationKind::MaterializedView;
    let mv = cluster
        .meta()
        .create_streaming_job("mv", kind, graph, vec![view], options)
        .await
        .unwrap();
    assert_eq!(
        cluster.meta().relation(mv).unwrap().state,
        JobState::Created
    );
    let mut killed = false;
    for batch in 0..40 {
        let changes = o.gen_batch(&ctx.rng, 10, 400);
        if let Err(e) = cluster.dml(t, changes).await {
            return Err(dml_failed(&cluster, u64::from(killed), e));
        }
        if batch == 20 && !killed {
            killed = true;
            match kill {
                Kill::AfterCheckpoint => {
                    // A mutation an executor's own check catches fails the flush.
                    if let Err(e) = cluster.meta().flush().await {
                        return Err(dml_failed(&cluster, 0, e));
                    }
                }
                Kill::BetweenCheckpoints => {
                    tokio::time::sleep(Duration::from_millis(ctx.rng.range_u64(30..170))).await
                }
            }
            assert!(cluster.kill(WorkerId(2)));
            tokio::time::sleep(Duration::from_secs(1)).await;
            cluster.restart(WorkerId(2));
            cluster.wait_ready().await;
            // What the kill lost is lost from the table too: go on from what it holds.
            o.resync(&Oracle::sorted(&cluster.committed_rows(t)));
        }
        tokio::time::sleep(Duration::from_millis(ctx.rng.range_u64(20..150))).await;
    }
    assert!(killed);
    if let Err(e) = cluster.meta().flush().await {
        return Err(dml_failed(&cluster, 1, e));
    }
    let rows = cluster.committed_rows(t);
    assert_eq!(Oracle::sorted(&rows), o.rows(), "the table");
    let expected = reference(&rows, group);
    let got = view_rows(&cluster.committed_rows(mv));
    judge(&cluster, got, expected)?;
    check_executor_stats(&cluster, group);
    Ok(())
}

/// The aggregations' counters: every node's actors looked groups up and wrote the result table; the
/// restarted node's caches started empty, so its lookups (if it runs any of them) began with misses.
fn check_executor_stats(cluster: &Cluster, group: bool) {
    let kind = if group {
        StatefulExecutorKind::HashAgg
    } else {
        StatefulExecutorKind::SimpleAgg
    };
    let mut all = Vec::new();
    for node in cluster.nodes() {
        let snap = node.stats().executors.snapshot();
        assert!(snap.iter().all(|(_, k, _)| *k == kind), "{snap:?}");
        if node.worker() == WorkerId(2) && !snap.is_empty() {
            assert!(snap.iter().any(|(_, _, c)| c.cache_misses > 0), "{snap:?}");
        }
        all.extend(snap);
    }
    assert!(!all.is_empty());
    assert!(
        all.iter().any(|(_, _, c)| c.cache_lookups > c.cache_misses),
        "{all:?}"
    );
    assert!(all.iter().any(|(_, _, c)| c.state_inserts > 0), "{all:?}");
}

fn run_with(seed: u64, group: bool, kill: Kill, toggles: Toggles) -> Result<(), Finding> {
    let out = epochlab_sim::run(seed, move |ctx| scenario(ctx, group, kill, toggles));
    check_commits(&out.log.lines()).unwrap();
    out.value
}

fn run(seed: u64, group: bool, kill: Kill) {
    if let Err(found) = run_with(seed, group, kill, Toggles::default()) {
        panic!("seed {seed}, group {group}, {kill:?}: {found:?}");
    }
}

#[test]
fn hash_agg_survives_a_kill_after_a_checkpoint() {
    for seed in [1, 2] {
        run(seed, true, Kill::AfterCheckpoint);
    }
}

#[test]
fn hash_agg_survives_a_kill_between_checkpoints() {
    for seed in [3, 4] {
        run(seed, true, Kill::BetweenCheckpoints);
    }
}

#[test]
fn simple_agg_survives_a_kill_after_a_checkpoint() {
    for seed in [5, 6] {
        run(seed, false, Kill::AfterCheckpoint);
    }
}

#[test]
fn simple_agg_survives_a_kill_between_checkpoints() {
    for seed in [7, 8] {
        run(seed, false, Kill::BetweenCheckpoints);
    }
}

/// The test can fail: dedup counts written a barrier late (a test-only mutation) are caught, in both
/// executors.
#[test]
fn dedup_counts_written_late_are_caught() {
    let toggles = Toggles::default().with(DedupWrite::OneBarrierLate);
    for (seed, group) in [(1, true), (5, false)] {
        let found = run_with(seed, group, Kill::AfterCheckpoint, toggles);
        assert!(found.is_err(), "group {group}: the mutation went unnoticed");
    }
}
