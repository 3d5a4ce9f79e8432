//! Top-N from a fragment graph through recovery: a `TopN` (`ORDER BY v DESC, k LIMIT 7 OFFSET 3`, behind
//! a simple exchange into a singleton fragment) and a `GroupTopN` (`rank() OVER (PARTITION BY k % 10 ORDER
//! BY v % 7) <= 2`, WITH TIES, behind a hash exchange) over a table with DML throughout (inserts, updates
//! and deletes, so rows leave the top and rows from below move up), a compute node killed mid-stream
//! (after a checkpoint, or between checkpoints so that the uncommitted epochs are lost), and the view
//! compared with a sort + limit of the table's committed rows (the reference, ordered by value). The run must
//! end with no actor failed on its state and exactly the one recovery the kill caused, and a test-only
//! mutation (a deleted row left in the top-N's table) must be caught.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use epochlab_common::catalog::{Distribution, TableDesc};
use epochlab_common::expr_node::{ExprNode, ExprType};
use epochlab_common::plan::{
    ConflictBehavior, DispatchStrategy, FragmentDistribution, StreamFragment, StreamFragmentEdge,
    StreamFragmentGraph, StreamNode, top_n_table,
};
use epochlab_common::{
    DataType, OrderType, OwnedRow, ScalarImpl, TableId, Toggles, VnodeCount, WorkerId,
};
use epochlab_meta::{BACKFILL_CHUNK_SIZE, JobOptions, JobState, RelationKind, StreamScanType};
use epochlab_sim::{Cluster, SimContext};
use epochlab_stream::executor::top_n::state::TopNRowDelete;
use epochlab_tests::recovery::{Finding, VNODES, config, dml_failed, judge};
use epochlab_tests::{Oracle, check_commits, schema};

const OFFSET: u64 = 3;
const LIMIT: u64 = 7;
const GROUP_LIMIT: u64 = 2;

fn vnodes() -> VnodeCount {
    VnodeCount::new(VNODES).unwrap()
}

fn col(i: usize) -> ExprNode {
    ExprNode::input_ref(i, DataType::Int64)
}

fn modulo(i: usize, m: i64) -> ExprNode {
    let m = ExprNode::literal(Some(ScalarImpl::Int64(m)), DataType::Int64);
    epochlab_expr::sig::build_func(ExprType::Modulus, vec![col(i), m]).unwrap()
}

/// The view's table over `[.., k at key]`: pk `pk`, hashed by `dist` (singleton without).
fn view_table(width: usize, pk: Vec<usize>, dist: Option<Vec<usize>>) -> Arc<TableDesc> {
    Arc::new(TableDesc {
        table_id: TableId(u32::MAX),
        column_types: vec![DataType::Int64; width],
        pk_orders: vec![OrderType::ascending(); pk.len()],
        pk_indices: pk,
        value_indices: (0..width).collect(),
        distribution: match dist {
            Some(d) => Distribution::HashDistKey { dist_key_in_pk: d },
            None => Distribution::Singleton,
        },
        vnode_count: vnodes(),
    })
}

/// The scan fragment projecting `exprs` over `t`, then the top-N fragment fed by `dispatch`.
fn graph(
    t: Arc<TableDesc>,
    exprs: Vec<ExprNode>,
    top: StreamNode,
    view: Arc<TableDesc>,
    group: bool,
) -> StreamFragmentGraph {
    let scan = StreamNode::stream_scan(StreamScanType::ArrangementBackfill, t, BACKFILL_CHUNK_SIZE);
    let project = StreamNode::Project {
        exprs,
        input: Box::new(scan),
    };
    let root = StreamNode::Materialize {
        table: view,
        conflict: ConflictBehavior::NoCheck,
        input: Box::new(top),
    };
    let (distribution, dispatch) = if group {
        (
            FragmentDistribution::Hash { dist_key: vec![0] },
            DispatchStrategy::Hash(vec![0]),
        )
    } else {
        (FragmentDistribution::Single, DispatchStrategy::Simple)
    };
    StreamFragmentGraph {
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
    }
}

/// `SELECT k, v FROM t ORDER BY v DESC, k LIMIT 7 OFFSET 3` (input `[k, v]`, stream key `k`).
fn top_n_graph(t: Arc<TableDesc>) -> (StreamFragmentGraph, Arc<TableDesc>) {
    let types = vec![DataType::Int64; 2];
    let order_by = vec![(1, OrderType::descending()), (0, OrderType::ascending())];
    let top = StreamNode::TopN {
        table: top_n_table(&types, &[], &order_by, &[0], vnodes()),
        order_by,
        offset: OFFSET,
        limit: Some(LIMIT),
        with_ties: false,
        append_only: false,
        input: Box::new(StreamNode::Exchange { upstream: 1 }),
    };
    let view = view_table(2, vec![0], None);
    (
        graph(t, vec![col(0), col(1)], top, view.clone(), false),
        view,
    )
}

/// `SELECT g, o, k FROM (SELECT k % 10 AS g, v % 7 AS o, k, rank() OVER (PARTITION BY k % 10 ORDER BY
/// v % 7) AS r FROM t) WHERE r <= 2` (input `[g, o, k]`, stream key `k`).
fn group_top_n_graph(t: Arc<TableDesc>) -> (StreamFragmentGraph, Arc<TableDesc>) {
    let types = vec![DataType::Int64; 3];
    let order_by = vec![(1, OrderType::ascending())];
    let top = StreamNode::GroupTopN {
        group_key: vec![0],
        table: top_n_table(&types, &[0], &order_by, &[2], vnodes()),
        order_by,
        offset: 0,
        limit: GROUP_LIMIT,
        with_ties: true,
        append_only: false,
        input: Box::new(StreamNode::Exchange { upstream: 1 }),
    };
    let view = view_table(3, vec![0, 2], Some(vec![0]));
    let exprs = vec![modulo(0, 10), modulo(1, 7), col(0)];
    (graph(t, exprs, top, view.clone(), true), view)
}

fn int(d: &Option<ScalarImpl>) -> i64 {
    d.as_ref()
        .and_then(ScalarImpl::as_int64)
        .expect("an integer")
}

fn ints(r: &OwnedRow) -> Vec<i64> {
    r.datums().iter().map(int).collect()
}

/// The view's rows computed from the table's `(k, v, s)` rows, sorted.
fn reference(rows: &[OwnedRow], group: bool) -> Vec<Vec<i64>> {
    let kv: Vec<(i64, i64)> = rows
        .iter()
        .map(|r| (int(r.datum_at(0)), int(r.datum_at(1))))
        .collect();
    let mut out = Vec::new();
    if group {
        let mut groups: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
        for (k, v) in kv {
            groups.entry(k % 10).or_default().push((v % 7, k));
        }
        for (g, mut rs) in groups {
            rs.sort();
            let n = (GROUP_LIMIT as usize).min(rs.len());
            let last = rs[n - 1].0;
            for (o, k) in rs
                .into_iter()
                .enumerate()
                .filter(|(i, r)| *i < n || r.0 == last)
                .map(|(_, r)| r)
            {
                out.push(vec![g, o, k]);
            }
        }
    } else {
        let mut rs = kv;
        rs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let top = rs.into_iter().skip(OFFSET as usize).take(LIMIT as usize);
        out.extend(top.map(|(k, v)| vec![k, v]));
    }
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
    let (graph, view) = if group {
        group_top_n_graph(desc)
    } else {
        top_n_graph(desc)
    };
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
    let mut got: Vec<Vec<i64>> = cluster.committed_rows(mv).iter().map(ints).collect();
    got.sort();
    assert!(!expected.is_empty(), "the workload leaves rows in the view");
    judge(&cluster, got, expected)
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
fn top_n_survives_a_kill_after_a_checkpoint() {
    for seed in [1, 2] {
        run(seed, false, Kill::AfterCheckpoint);
    }
}

#[test]
fn top_n_survives_a_kill_between_checkpoints() {
    for seed in [3, 4] {
        run(seed, false, Kill::BetweenCheckpoints);
    }
}

#[test]
fn group_top_n_survives_a_kill_after_a_checkpoint() {
    for seed in [5, 6] {
        run(seed, true, Kill::AfterCheckpoint);
    }
}

#[test]
fn group_top_n_survives_a_kill_between_checkpoints() {
    for seed in [7, 8] {
        run(seed, true, Kill::BetweenCheckpoints);
    }
}

/// The test can fail: a deleted row left in the top-N's table (a test-only mutation) is caught, in both
/// executors.
#[test]
fn a_deleted_row_left_in_the_top_n_table_is_caught() {
    let toggles = Toggles::default().with(TopNRowDelete::CacheOnly);
    for (seed, group) in [(1, false), (5, true)] {
        let found = run_with(seed, group, Kill::AfterCheckpoint, toggles);
        assert!(found.is_err(), "group {group}: the mutation went unnoticed");
    }
}
