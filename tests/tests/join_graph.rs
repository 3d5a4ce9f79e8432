//! Hash joins from a fragment graph through recovery: two tables `a` and `b` (`id, v, s`) with DML
//! throughout, each scanned and projected to `[v % 50, id, v]`, hash-exchanged on the join key `v % 50` into
//! a `HashJoin` (every join type: inner, left/right/full outer, left/right semi, left/right anti; with and
//! without the non-equi condition `a.v < b.v`), the join materialized. A compute node is killed mid-stream
//! (after a checkpoint, or between checkpoints so that the uncommitted epochs are lost); the run must end with
//! no actor failed on its state, exactly the one recovery the kill caused, and the view equal to a
//! nested-loop join of the two tables' committed rows (the reference). A test-only mutation (a deleted row
//! left in the join's tables) must be caught.

use std::sync::Arc;
use std::time::Duration;

use epochlab_common::catalog::{Distribution, TableDesc};
use epochlab_common::expr_node::{ExprNode, ExprType};
use epochlab_common::plan::{
    ConflictBehavior, DispatchStrategy, FragmentDistribution, JoinType, StreamFragment,
    StreamFragmentEdge, StreamFragmentGraph, StreamNode, join_side_tables,
};
use epochlab_common::{
    DataType, OrderType, OwnedRow, ScalarImpl, TableId, Toggles, VnodeCount, WorkerId,
};
use epochlab_meta::{BACKFILL_CHUNK_SIZE, JobOptions, JobState, RelationKind, StreamScanType};
use epochlab_sim::workload::{ViewJoin, ViewQuery, ViewUpstream, view_graph};
use epochlab_sim::{Cluster, SimContext};
use epochlab_stream::executor::hash_join::join_hash_map::JoinRowDelete;
use epochlab_tests::recovery::{Finding, VNODES, config, dml_failed, judge};
use epochlab_tests::{Oracle, check_commits, schema};

/// The join key is `v % KEYS`: a few rows of each side per key.
const KEYS: i64 = 50;

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

/// What the view joins.
#[derive(Clone, Copy, Debug)]
struct Case {
    join_type: JoinType,
    /// `a.v < b.v` besides the key.
    condition: bool,
}

impl Case {
    /// Output columns: `a`'s `[key, id, v]`, then for a join that outputs both sides `b`'s.
    fn width(self) -> usize {
        match self.join_type {
            JoinType::LeftSemi | JoinType::LeftAnti | JoinType::RightSemi | JoinType::RightAnti => {
                3
            }
            _ => 6,
        }
    }
}

/// The join node over two exchanges of `[key, id, v]` (stream key `id`).
fn join_node(case: Case) -> StreamNode {
    let types = vec![DataType::Int64; 3];
    let t = case.join_type;
    let (left_table, left_degree_table) =
        join_side_tables(&types, &[0], &[1], t.left_needs_degree(), vnodes());
    let (right_table, right_degree_table) =
        join_side_tables(&types, &[0], &[1], t.right_needs_degree(), vnodes());
    StreamNode::HashJoin {
        join_type: t,
        left_key: vec![0],
        right_key: vec![0],
        null_safe: vec![false],
        condition: case
            .condition
            .then(|| call(ExprType::LessThan, vec![col(2), col(5)])),
        left_table,
        right_table,
        left_degree_table,
        right_degree_table,
        output_indices: (0..case.width()).collect(),
        left: Box::new(StreamNode::Exchange { upstream: 1 }),
        right: Box::new(StreamNode::Exchange { upstream: 2 }),
    }
}

/// The view's table: pk `key, id` of the one side a semi or anti join outputs; else the ids (NULL on the padded
/// side of an outer join's row) with the keys of the sides that can be padded, hashed by a key that cannot.
fn view_table(case: Case) -> TableDesc {
    let n = case.width();
    let pk = match (n, case.join_type) {
        (3, _) => vec![0, 1],
        (_, JoinType::RightOuter) => vec![3, 4, 1],
        // Both keys too, as RisingWave's stream key of a full join: a row whose key moves leaves one join
        // actor padded and enters another, and the two changes reach the view in either order.
        (_, JoinType::FullOuter) => vec![0, 1, 3, 4],
        _ => vec![0, 1, 4],
    };
    TableDesc {
        table_id: TableId(u32::MAX),
        column_types: vec![DataType::Int64; n],
        pk_orders: vec![OrderType::ascending(); pk.len()],
        pk_indices: pk,
        value_indices: (0..n).collect(),
        distribution: match case.join_type {
            // Padded on either side: no column is always there; the view is one singleton actor's.
            JoinType::FullOuter => Distribution::Singleton,
            // `b`'s key, never padded: the fourth column (the first of a semi or anti join's).
            JoinType::RightOuter => Distribution::HashDistKey {
                dist_key_in_pk: vec![0],
            },
            _ => Distribution::HashDistKey {
                dist_key_in_pk: vec![0],
            },
        },
        vnode_count: vnodes(),
    }
}

/// A scan fragment of `t` projected to `[v % KEYS, id, v]`.
fn scan_fragment(id: u32, t: Arc<TableDesc>) -> StreamFragment {
    let scan = StreamNode::stream_scan(StreamScanType::ArrangementBackfill, t, BACKFILL_CHUNK_SIZE);
    let exprs = vec![
        call(ExprType::Modulus, vec![col(1), lit(KEYS)]),
        col(0),
        col(1),
    ];
    StreamFragment {
        fragment_id: id,
        node: StreamNode::Project {
            exprs,
            input: Box::new(scan),
        },
        distribution: FragmentDistribution::Hash { dist_key: vec![0] },
        parallelism: None,
    }
}

fn join_graph(
    a: Arc<TableDesc>,
    b: Arc<TableDesc>,
    case: Case,
) -> (StreamFragmentGraph, Arc<TableDesc>) {
    let view = Arc::new(view_table(case));
    let materialize = |input| StreamNode::Materialize {
        table: view.clone(),
        conflict: ConflictBehavior::NoCheck,
        input: Box::new(input),
    };
    let edge = |upstream, downstream, dispatch| StreamFragmentEdge {
        upstream,
        downstream,
        dispatch,
    };
    let hash = || DispatchStrategy::Hash(vec![0]);
    let fragment = |fragment_id, node, distribution| StreamFragment {
        fragment_id,
        node,
        distribution,
        parallelism: None,
    };
    let by_key = || FragmentDistribution::Hash { dist_key: vec![0] };
    let mut fragments = vec![scan_fragment(1, a), scan_fragment(2, b)];
    let mut edges = vec![edge(1, 3, hash()), edge(2, 3, hash())];
    if case.join_type == JoinType::FullOuter {
        // The view in a singleton fragment of its own, behind a simple exchange.
        fragments.push(fragment(3, join_node(case), by_key()));
        let view_node = materialize(StreamNode::Exchange { upstream: 3 });
        fragments.push(fragment(4, view_node, FragmentDistribution::Single));
        edges.push(edge(3, 4, DispatchStrategy::Simple));
    } else {
        // A right outer join's rows are placed by `b`'s key (never padded; equal to the join key).
        let dist_key = if case.join_type == JoinType::RightOuter {
            vec![3]
        } else {
            vec![0]
        };
        let distribution = FragmentDistribution::Hash { dist_key };
        fragments.push(fragment(3, materialize(join_node(case)), distribution));
    }
    (StreamFragmentGraph { fragments, edges }, view)
}

fn int(d: &Option<ScalarImpl>) -> i64 {
    d.as_ref()
        .and_then(ScalarImpl::as_int64)
        .expect("an integer")
}

fn text(datums: &[Option<ScalarImpl>]) -> String {
    let cols: Vec<String> = datums
        .iter()
        .map(|d| d.as_ref().map_or("NULL".to_string(), ToString::to_string))
        .collect();
    cols.join(",")
}

/// `[key, id, v]` of a table row `(id, v, s)`.
fn projected(r: &OwnedRow) -> [i64; 3] {
    let (id, v) = (int(r.datum_at(0)), int(r.datum_at(1)));
    [v % KEYS, id, v]
}

/// The view computed by nested loops over both tables' rows, as sorted text (a multiset).
fn reference(a: &[OwnedRow], b: &[OwnedRow], case: Case) -> Vec<String> {
    let some = |x: &[i64]| {
        x.iter()
            .map(|v| Some(ScalarImpl::Int64(*v)))
            .collect::<Vec<_>>()
    };
    let (pa, pb): (Vec<[i64; 3]>, Vec<[i64; 3]>) = (
        a.iter().map(projected).collect(),
        b.iter().map(projected).collect(),
    );
    let on = |ar: &[i64; 3], br: &[i64; 3]| br[0] == ar[0] && (!case.condition || ar[2] < br[2]);
    let t = case.join_type;
    let mut out = Vec::new();
    for ar in &pa {
        let matched = pb.iter().filter(|br| on(ar, br)).count();
        match t {
            JoinType::LeftSemi if matched > 0 => out.push(text(&some(ar))),
            JoinType::LeftAnti if matched == 0 => out.push(text(&some(ar))),
            JoinType::LeftOuter | JoinType::FullOuter if matched == 0 => {
                let mut d = some(ar);
                d.extend([None, None, None]);
                out.push(text(&d));
            }
            _ => {}
        }
        if matches!(
            t,
            JoinType::Inner | JoinType::LeftOuter | JoinType::RightOuter | JoinType::FullOuter
        ) {
            for br in pb.iter().filter(|br| on(ar, br)) {
                let mut d = some(ar);
                d.extend(some(br));
                out.push(text(&d));
            }
        }
    }
    for br in &pb {
        let matched = pa.iter().filter(|ar| on(ar, br)).count();
        match t {
            JoinType::RightSemi if matched > 0 => out.push(text(&some(br))),
            JoinType::RightAnti if matched == 0 => out.push(text(&some(br))),
            JoinType::RightOuter | JoinType::FullOuter if matched == 0 => {
                let mut d = vec![None, None, None];
                d.extend(some(br));
                out.push(text(&d));
            }
            _ => {}
        }
    }
    out.sort();
    out
}

fn view_rows(rows: &[OwnedRow]) -> Vec<String> {
    let mut out: Vec<String> = rows.iter().map(|r| text(r.datums())).collect();
    out.sort();
    out
}

#[derive(Clone, Copy, Debug)]
enum Kill {
    /// Right after a flush: every epoch so far is committed.
    AfterCheckpoint,
    /// Mid-epoch with DML in flight: the epochs since the last checkpoint are lost (tables and view alike).
    BetweenCheckpoints,
}

async fn scenario(
    ctx: SimContext,
    case: Case,
    kill: Kill,
    toggles: Toggles,
) -> Result<(), Finding> {
    let cluster = Cluster::start(&ctx, config(toggles)).await;
    let (types, pk) = schema();
    let a = cluster
        .meta()
        .create_table("a", types.clone(), pk.clone(), 3)
        .await
        .unwrap();
    let b = cluster
        .meta()
        .create_table("b", types, pk, 3)
        .await
        .unwrap();
    let (mut oa, mut ob) = (Oracle::default(), Oracle::default());
    cluster.dml(a, oa.gen_inserts(0, 100)).await.unwrap();
    cluster.dml(b, ob.gen_inserts(50, 100)).await.unwrap();
    cluster.meta().flush().await.unwrap();
    let da = cluster.meta().relation(a).unwrap().desc;
    let db = cluster.meta().relation(b).unwrap().desc;
    let (graph, view) = join_graph(da, db, case);
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
        .unwrap_or_else(|e| panic!("{e}: {:?}", cluster.failures.failures()));
    assert_eq!(
        cluster.meta().relation(mv).unwrap().state,
        JobState::Created
    );
    drive(&ctx, &cluster, (a, b), (&mut oa, &mut ob), kill).await?;
    cluster.meta().flush().await.unwrap();
    let (ra, rb) = (cluster.committed_rows(a), cluster.committed_rows(b));
    assert_eq!(Oracle::sorted(&ra), oa.rows(), "table a");
    assert_eq!(Oracle::sorted(&rb), ob.rows(), "table b");
    let expected = reference(&ra, &rb, case);
    let got = view_rows(&cluster.committed_rows(mv));
    assert!(!expected.is_empty(), "the workload leaves rows in the view");
    judge(&cluster, got, expected)
}

/// 30 batches of DML into both tables, a node killed and restarted after the 16th (the oracles resynced
/// to what the kill left committed).
async fn drive(
    ctx: &SimContext,
    cluster: &Cluster,
    (a, b): (TableId, TableId),
    (oa, ob): (&mut Oracle, &mut Oracle),
    kill: Kill,
) -> Result<(), Finding> {
    for batch in 0..30 {
        for (t, o) in [(a, &mut *oa), (b, &mut *ob)] {
            if let Err(e) = cluster.dml(t, o.gen_batch(&ctx.rng, 8, 300)).await {
                return Err(dml_failed(cluster, u64::from(batch > 15), e));
            }
        }
        if batch == 15 {
            match kill {
                Kill::AfterCheckpoint => {
                    // A mutation an executor's own check catches fails the flush.
                    if let Err(e) = cluster.meta().flush().await {
                        return Err(dml_failed(cluster, 0, e));
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
            // What the kill lost is lost from the tables too: go on from what they hold.
            oa.resync(&Oracle::sorted(&cluster.committed_rows(a)));
            ob.resync(&Oracle::sorted(&cluster.committed_rows(b)));
        }
        tokio::time::sleep(Duration::from_millis(ctx.rng.range_u64(20..150))).await;
    }
    Ok(())
}

/// The soak's left join view (`workload::view_graph`: `a LEFT JOIN b ON a.v = b.id`, every column of
/// both, the view in its own fragment behind a hash exchange on `a.id`): updates move `a` rows between
/// join keys while they match nothing, so an update's delete and insert of the NULL-padded row leave
/// different join actors. The view against a nested-loop join of the committed rows, as text.
async fn soak_view_scenario(ctx: SimContext, kill: Kill) -> Result<(), Finding> {
    let cluster = Cluster::start(&ctx, config(Toggles::default())).await;
    let (types, pk) = schema();
    let meta = &cluster.meta();
    let a = meta
        .create_table("a", types.clone(), pk.clone(), 3)
        .await
        .unwrap();
    let b = meta.create_table("b", types, pk, 3).await.unwrap();
    let (mut oa, mut ob) = (Oracle::default(), Oracle::default());
    cluster.dml(a, oa.gen_inserts(0, 100)).await.unwrap();
    cluster.dml(b, ob.gen_inserts(50, 100)).await.unwrap();
    meta.flush().await.unwrap();
    let (da, db) = (
        meta.relation(a).unwrap().desc,
        meta.relation(b).unwrap().desc,
    );
    let query = ViewQuery::Join {
        left: "a".into(),
        right: "b".into(),
        join: ViewJoin::LeftOuter,
        left_col: 1,
        right_col: 0,
    };
    let ups = [
        ViewUpstream {
            name: "a",
            desc: &da,
        },
        ViewUpstream {
            name: "b",
            desc: &db,
        },
    ];
    let (graph, view) = view_graph(&query, &ups).unwrap();
    let options = JobOptions {
        parallelism: 3,
        rate_limit: None,
        background: false,
        scan_type: StreamScanType::ArrangementBackfill,
    };
    let kind = RelationKind::MaterializedView;
    let mv = meta
        .create_streaming_job("mv", kind, graph, vec![view], options)
        .await
        .unwrap();
    drive(&ctx, &cluster, (a, b), (&mut oa, &mut ob), kill).await?;
    meta.flush().await.unwrap();
    let (ra, rb) = (cluster.committed_rows(a), cluster.committed_rows(b));
    let mut expected = Vec::new();
    for ar in &ra {
        let matches: Vec<&OwnedRow> = rb.iter().filter(|br| br[0] == ar[1]).collect();
        for br in &matches {
            expected.push(text(ar.chain(br).datums()));
        }
        if matches.is_empty() {
            expected.push(text(ar.chain(&OwnedRow::new(vec![None; 3])).datums()));
        }
    }
    expected.sort();
    let got = view_rows(&cluster.committed_rows(mv));
    assert!(expected.iter().any(|r| r.ends_with(",NULL,NULL,NULL")));
    judge(&cluster, got, expected)
}

#[test]
fn soak_left_join_view_survives_kills() {
    for (seed, kill) in [(11, Kill::AfterCheckpoint), (12, Kill::BetweenCheckpoints)] {
        let out = epochlab_sim::run(seed, move |ctx| soak_view_scenario(ctx, kill));
        check_commits(&out.log.lines()).unwrap();
        if let Err(found) = out.value {
            panic!("seed {seed}, {kill:?}: {found:?}");
        }
    }
}

fn run_with(seed: u64, case: Case, kill: Kill, toggles: Toggles) -> Result<(), Finding> {
    let out = epochlab_sim::run(seed, move |ctx| scenario(ctx, case, kill, toggles));
    check_commits(&out.log.lines()).unwrap();
    out.value
}

fn run(seed: u64, case: Case, kill: Kill) {
    if let Err(found) = run_with(seed, case, kill, Toggles::default()) {
        panic!("seed {seed}, {case:?}, {kill:?}: {found:?}");
    }
}

fn case(join_type: JoinType, condition: bool) -> Case {
    Case {
        join_type,
        condition,
    }
}

#[test]
fn inner_join_survives_kills() {
    run(1, case(JoinType::Inner, false), Kill::AfterCheckpoint);
    run(2, case(JoinType::Inner, true), Kill::BetweenCheckpoints);
}

#[test]
fn left_outer_join_survives_kills() {
    run(3, case(JoinType::LeftOuter, true), Kill::AfterCheckpoint);
    run(
        4,
        case(JoinType::LeftOuter, false),
        Kill::BetweenCheckpoints,
    );
}

#[test]
fn right_and_full_outer_joins_survive_kills() {
    run(13, case(JoinType::RightOuter, true), Kill::AfterCheckpoint);
    run(
        14,
        case(JoinType::RightOuter, false),
        Kill::BetweenCheckpoints,
    );
    run(15, case(JoinType::FullOuter, false), Kill::AfterCheckpoint);
    run(
        16,
        case(JoinType::FullOuter, true),
        Kill::BetweenCheckpoints,
    );
}

#[test]
fn left_semi_join_survives_kills() {
    run(5, case(JoinType::LeftSemi, true), Kill::AfterCheckpoint);
    run(6, case(JoinType::LeftSemi, false), Kill::BetweenCheckpoints);
}

#[test]
fn left_anti_join_survives_kills() {
    run(7, case(JoinType::LeftAnti, false), Kill::AfterCheckpoint);
    run(8, case(JoinType::LeftAnti, true), Kill::BetweenCheckpoints);
}

#[test]
fn right_semi_and_anti_joins_survive_kills() {
    run(17, case(JoinType::RightSemi, true), Kill::AfterCheckpoint);
    run(
        18,
        case(JoinType::RightSemi, false),
        Kill::BetweenCheckpoints,
    );
    run(19, case(JoinType::RightAnti, false), Kill::AfterCheckpoint);
    run(
        20,
        case(JoinType::RightAnti, true),
        Kill::BetweenCheckpoints,
    );
}

/// The test can fail: a deleted row left in the join's tables (a test-only mutation) is caught, by a state
/// error or by the view, in every join type that keeps rows of both sides.
#[test]
fn a_deleted_row_left_in_the_join_tables_is_caught() {
    let toggles = Toggles::default().with(JoinRowDelete::CacheOnly);
    for (seed, t) in [(3, JoinType::LeftOuter), (1, JoinType::Inner)] {
        let found = run_with(seed, case(t, false), Kill::AfterCheckpoint, toggles);
        assert!(found.is_err(), "{t:?}: the mutation went unnoticed");
    }
}
