//! Unit tests of the hash join over scripted inputs: what each step emits per join type (retractions,
//! updates, NULL keys, the non-equi condition), a cache of one key that reloads from the state tables, and
//! an executor rebuilt from the committed state after a simulated restart.

use std::sync::Arc;

use epochlab_barrier::{Barrier, BarrierKind};
use epochlab_common::catalog::TableDesc;
use epochlab_common::expr_node::{ExprNode, ExprType};
use epochlab_common::plan::{JoinType, join_side_tables};
use epochlab_common::{
    ActorId, Bitmap, DataType, Epoch, EpochPair, Op, OwnedRow, ScalarImpl, StreamChunk, TableId,
    VnodeCount, WorkerId,
};
use epochlab_expr::sig;
use epochlab_state_table::StateTable;
use epochlab_storage::{CommittedStore, HummockManager, NodeStorage};
use futures::StreamExt;

use super::{HashJoinArgs, HashJoinExecutor, SideType};
use crate::executor::non_strict::{ExprErrorCounts, ExprExecutor, NonStrict};
use crate::executor::{BoxedMessageStream, Execute, ExecutorStatsHandle, Message};

const VNODES: u32 = 8;
const L: SideType = SideType::Left;
const R: SideType = SideType::Right;

/// Each side: `(k, v, id)`, stream key `id`, joined on `k`.
fn types() -> Vec<DataType> {
    vec![DataType::Int64, DataType::Int64, DataType::Int64]
}

fn r(k: Option<i64>, v: i64, id: i64) -> OwnedRow {
    OwnedRow::new(vec![
        k.map(ScalarImpl::Int64),
        Some(ScalarImpl::Int64(v)),
        Some(ScalarImpl::Int64(id)),
    ])
}

fn ins(k: i64, v: i64, id: i64) -> (Op, OwnedRow) {
    (Op::Insert, r(Some(k), v, id))
}

fn del(k: i64, v: i64, id: i64) -> (Op, OwnedRow) {
    (Op::Delete, r(Some(k), v, id))
}

fn barrier(curr: u64, prev: u64) -> Message {
    Message::Barrier(Barrier::new(
        EpochPair::new(Epoch::test(curr), Epoch::test(prev)),
        BarrierKind::Checkpoint,
        None,
    ))
}

struct Script(Vec<Message>);

impl Execute for Script {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        futures::stream::iter(self.0.into_iter().map(Ok)).boxed()
    }

    fn identity(&self) -> String {
        "Script".into()
    }
}

/// Steps of one chunk each on one side, each followed by a barrier on both sides, so that their order is
/// fixed. The first barrier is `(first, before)`.
fn scripts(
    steps: &[(SideType, Vec<(Op, OwnedRow)>)],
    before: u64,
    first: u64,
) -> (Vec<Message>, Vec<Message>) {
    let mut left = vec![barrier(first, before)];
    let mut right = left.clone();
    for (i, (side, rows)) in steps.iter().enumerate() {
        let c = Message::Chunk(StreamChunk::from_pairs(rows.clone()));
        match side {
            SideType::Left => left.push(c),
            SideType::Right => right.push(c),
        }
        let e = first + i as u64 + 1;
        left.push(barrier(e, e - 1));
        right.push(barrier(e, e - 1));
    }
    (left, right)
}

/// A join's plan for tests, over one node's storage.
struct Plan {
    join_type: JoinType,
    null_safe: bool,
    condition: Option<ExprNode>,
    cache_capacity: usize,
    counts: ExprErrorCounts,
    stats: ExecutorStatsHandle,
}

impl Plan {
    fn new(join_type: JoinType) -> Self {
        Self {
            join_type,
            null_safe: false,
            condition: None,
            cache_capacity: 64,
            counts: ExprErrorCounts::default(),
            stats: ExecutorStatsHandle::detached(),
        }
    }

    /// The tables: left rows, right rows, left degrees, right degrees (ids 101..=104).
    fn tables(&self) -> [Arc<TableDesc>; 4] {
        let count = VnodeCount::new(VNODES).unwrap();
        let (l, ld) = join_side_tables(&types(), &[0], &[2], true, count);
        let (rt, rd) = join_side_tables(&types(), &[0], &[2], true, count);
        let with_id = |t: &Arc<TableDesc>, id: u32| {
            let mut t = (**t).clone();
            t.table_id = TableId(id);
            Arc::new(t)
        };
        [
            with_id(&l, 101),
            with_id(&rt, 102),
            with_id(&ld.unwrap(), 103),
            with_id(&rd.unwrap(), 104),
        ]
    }

    fn build(
        &self,
        node: &NodeStorage,
        left: Vec<Message>,
        right: Vec<Message>,
    ) -> HashJoinExecutor {
        let vnodes = Arc::new(Bitmap::ones(VNODES as usize));
        let open = |t: &Arc<TableDesc>| StateTable::new(t.clone(), node, vnodes.clone());
        let [lt, rt, ld, rd] = self.tables();
        let t = self.join_type;
        let width = match t {
            JoinType::LeftSemi | JoinType::LeftAnti | JoinType::RightSemi | JoinType::RightAnti => {
                3
            }
            _ => 6,
        };
        let args = HashJoinArgs {
            actor_id: ActorId(1),
            join_type: t,
            left: Box::new(Script(left)),
            right: Box::new(Script(right)),
            left_key: vec![0],
            right_key: vec![0],
            null_safe: vec![self.null_safe],
            condition: self.condition.clone(),
            left_table: open(&lt),
            right_table: open(&rt),
            left_degree_table: t.left_needs_degree().then(|| open(&ld)),
            right_degree_table: t.right_needs_degree().then(|| open(&rd)),
            output_indices: (0..width).collect(),
            cache_capacity: self.cache_capacity,
            eval: NonStrict {
                actor_id: ActorId(1),
                executor: ExprExecutor::HashJoin,
                counts: self.counts.clone(),
            },
            stats: self.stats.clone(),
            row_delete: Default::default(),
        };
        HashJoinExecutor::new(args).unwrap()
    }

    fn run_steps(&self, steps: &[(SideType, Vec<(Op, OwnedRow)>)]) -> Vec<String> {
        let (left, right) = scripts(steps, 0, 1);
        run(Box::new(self.build(&node(), left, right))).0
    }
}

fn node() -> NodeStorage {
    NodeStorage::new(
        WorkerId(1),
        CommittedStore::default(),
        Default::default(),
        1,
    )
}

fn text(d: &Option<ScalarImpl>) -> String {
    d.as_ref().map_or("N".to_string(), ToString::to_string)
}

fn show(op: Op, row: &OwnedRow) -> String {
    let op = match op {
        Op::Insert => "+",
        Op::Delete => "-",
        Op::UpdateDelete => "U-",
        Op::UpdateInsert => "U+",
    };
    let cols: Vec<String> = row.datums().iter().map(text).collect();
    format!("{op}({})", cols.join(","))
}

/// Per epoch after the first barrier, the rows emitted (`""`: none), and every output row in order.
fn run(exec: Box<HashJoinExecutor>) -> (Vec<String>, Vec<(Op, OwnedRow)>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let mut epochs = Vec::new();
        let mut all = Vec::new();
        let mut current: Vec<String> = Vec::new();
        let mut s = exec.execute();
        while let Some(m) = s.next().await {
            match m.unwrap() {
                Message::Barrier(_) => epochs.push(std::mem::take(&mut current).join(" ")),
                Message::Watermark(w) => panic!("a join passes no watermark: {w:?}"),
                Message::Chunk(c) => {
                    for (op, row) in c.rows() {
                        current.push(show(op, row));
                        all.push((op, row.clone()));
                    }
                }
            }
        }
        epochs.remove(0);
        (epochs, all)
    })
}

fn col(i: usize) -> ExprNode {
    ExprNode::input_ref(i, DataType::Int64)
}

fn call(func: ExprType, args: Vec<ExprNode>) -> ExprNode {
    sig::build_func(func, args).unwrap()
}

#[test]
fn inner_join_inserts_deletes_and_updates() {
    let out = Plan::new(JoinType::Inner).run_steps(&[
        (L, vec![ins(1, 10, 1)]),
        (R, vec![ins(1, 20, 100), ins(1, 21, 101), ins(2, 22, 102)]),
        (L, vec![ins(2, 11, 2)]),
        // An update of a right row that moves it to key 2: its old joins go, its new joins come.
        (
            R,
            vec![
                (Op::UpdateDelete, r(Some(1), 21, 101)),
                (Op::UpdateInsert, r(Some(2), 21, 101)),
            ],
        ),
        (L, vec![del(1, 10, 1)]),
    ]);
    assert_eq!(
        out,
        vec![
            "",
            "+(1,10,1,1,20,100) +(1,10,1,1,21,101)",
            "+(2,11,2,2,22,102)",
            "-(1,10,1,1,21,101) +(2,11,2,2,21,101)",
            "-(1,10,1,1,20,100)",
        ]
    );
}

/// The left rows NULL-padded while they match nothing: the first match turns the padded row into the
/// joined one (an update pair), the last unmatch turns it back.
#[test]
fn left_outer_join_pads_by_degree() {
    let out = Plan::new(JoinType::LeftOuter).run_steps(&left_outer_steps());
    assert_eq!(out, left_outer_expected());
}

fn left_outer_steps() -> Vec<(SideType, Vec<(Op, OwnedRow)>)> {
    vec![
        (L, vec![ins(1, 10, 1), ins(2, 11, 2)]),
        (R, vec![ins(1, 20, 100)]),
        (R, vec![ins(1, 21, 101), ins(3, 23, 103)]),
        (R, vec![del(1, 20, 100)]),
        (R, vec![del(1, 21, 101)]),
        (L, vec![del(1, 10, 1), ins(3, 12, 3)]),
        (
            L,
            vec![
                (Op::UpdateDelete, r(Some(3), 12, 3)),
                (Op::UpdateInsert, r(Some(2), 12, 3)),
            ],
        ),
    ]
}

fn left_outer_expected() -> Vec<&'static str> {
    vec![
        "+(1,10,1,N,N,N) +(2,11,2,N,N,N)",
        "U-(1,10,1,N,N,N) U+(1,10,1,1,20,100)",
        "+(1,10,1,1,21,101)",
        "-(1,10,1,1,20,100)",
        "U-(1,10,1,1,21,101) U+(1,10,1,N,N,N)",
        "-(1,10,1,N,N,N) +(3,12,3,3,23,103)",
        "-(3,12,3,3,23,103) +(2,12,3,N,N,N)",
    ]
}

#[test]
fn right_outer_join_pads_the_right_side() {
    let out = Plan::new(JoinType::RightOuter).run_steps(&[
        (L, vec![ins(1, 10, 1)]),
        (R, vec![ins(1, 20, 100), ins(2, 22, 102)]),
        (L, vec![del(1, 10, 1)]),
        (R, vec![del(2, 22, 102)]),
    ]);
    assert_eq!(
        out,
        vec![
            "",
            "+(1,10,1,1,20,100) +(N,N,N,2,22,102)",
            "U-(1,10,1,1,20,100) U+(N,N,N,1,20,100)",
            "-(N,N,N,2,22,102)",
        ]
    );
}

#[test]
fn full_outer_join_pads_both_sides() {
    let out = Plan::new(JoinType::FullOuter).run_steps(&[
        (L, vec![ins(1, 10, 1)]),
        (R, vec![ins(1, 20, 100), ins(2, 22, 102)]),
        (L, vec![ins(2, 11, 2)]),
        (R, vec![del(1, 20, 100)]),
        (L, vec![del(2, 11, 2)]),
    ]);
    assert_eq!(
        out,
        vec![
            "+(1,10,1,N,N,N)",
            "U-(1,10,1,N,N,N) U+(1,10,1,1,20,100) +(N,N,N,2,22,102)",
            "U-(N,N,N,2,22,102) U+(2,11,2,2,22,102)",
            "U-(1,10,1,1,20,100) U+(1,10,1,N,N,N)",
            "U-(2,11,2,2,22,102) U+(N,N,N,2,22,102)",
        ]
    );
}

#[test]
fn left_semi_and_anti_joins_follow_the_degree() {
    let steps = vec![
        (L, vec![ins(1, 10, 1)]),
        (R, vec![ins(1, 20, 100)]),
        (R, vec![ins(1, 21, 101)]),
        (R, vec![del(1, 20, 100)]),
        (R, vec![del(1, 21, 101)]),
        (R, vec![ins(2, 22, 102)]),
        (L, vec![ins(2, 11, 2), del(1, 10, 1)]),
    ];
    let semi = Plan::new(JoinType::LeftSemi).run_steps(&steps);
    assert_eq!(
        semi,
        vec!["", "+(1,10,1)", "", "", "-(1,10,1)", "", "+(2,11,2)"]
    );
    let anti = Plan::new(JoinType::LeftAnti).run_steps(&steps);
    assert_eq!(
        anti,
        vec![
            "+(1,10,1)",
            "-(1,10,1)",
            "",
            "",
            "+(1,10,1)",
            "",
            "-(1,10,1)"
        ]
    );
}

#[test]
fn right_semi_and_anti_joins_output_the_right_side() {
    let steps = vec![
        (R, vec![ins(1, 20, 100), ins(2, 22, 102)]),
        (L, vec![ins(1, 10, 1), ins(1, 11, 2)]),
        (L, vec![del(1, 10, 1)]),
        (L, vec![del(1, 11, 2)]),
    ];
    let semi = Plan::new(JoinType::RightSemi).run_steps(&steps);
    assert_eq!(semi, vec!["", "+(1,20,100)", "", "-(1,20,100)"]);
    let anti = Plan::new(JoinType::RightAnti).run_steps(&steps);
    assert_eq!(
        anti,
        vec!["+(1,20,100) +(2,22,102)", "-(1,20,100)", "", "+(1,20,100)"]
    );
}

/// `k = k` never matches NULL keys (the rows are not even stored: a left outer row stays padded);
/// `k IS NOT DISTINCT FROM k` does.
#[test]
fn null_keys_match_only_when_null_safe() {
    let steps = vec![
        (L, vec![(Op::Insert, r(None, 10, 1))]),
        (R, vec![(Op::Insert, r(None, 20, 100))]),
        (L, vec![(Op::Delete, r(None, 10, 1))]),
    ];
    let plain = Plan::new(JoinType::LeftOuter).run_steps(&steps);
    assert_eq!(plain, vec!["+(N,10,1,N,N,N)", "", "-(N,10,1,N,N,N)"]);
    let mut plan = Plan::new(JoinType::LeftOuter);
    plan.null_safe = true;
    assert_eq!(
        plan.run_steps(&steps),
        vec![
            "+(N,10,1,N,N,N)",
            "U-(N,10,1,N,N,N) U+(N,10,1,N,20,100)",
            "-(N,10,1,N,20,100)",
        ]
    );
}

/// `l.v < r.v` as the condition: only rows that pass it match (and count in the degree); an error in the
/// condition (a division by zero) is NULL, no match, and counted.
#[test]
fn non_equi_condition_decides_matches_and_degrees() {
    let mut plan = Plan::new(JoinType::LeftOuter);
    plan.condition = Some(call(ExprType::LessThan, vec![col(1), col(4)]));
    let out = plan.run_steps(&[
        (L, vec![ins(1, 15, 1)]),
        (R, vec![ins(1, 10, 100)]),
        (R, vec![ins(1, 20, 101)]),
        (R, vec![del(1, 10, 100)]),
        (R, vec![del(1, 20, 101)]),
    ]);
    assert_eq!(
        out,
        vec![
            "+(1,15,1,N,N,N)",
            "",
            "U-(1,15,1,N,N,N) U+(1,15,1,1,20,101)",
            "",
            "U-(1,15,1,1,20,101) U+(1,15,1,N,N,N)",
        ]
    );
    let mut plan = Plan::new(JoinType::Inner);
    // 100 / (r.v - 10) > 0: r.v = 10 divides by zero.
    let ten = ExprNode::literal(Some(ScalarImpl::Int64(10)), DataType::Int64);
    let hundred = ExprNode::literal(Some(ScalarImpl::Int64(100)), DataType::Int64);
    let zero = ExprNode::literal(Some(ScalarImpl::Int64(0)), DataType::Int64);
    let div = call(
        ExprType::Divide,
        vec![hundred, call(ExprType::Subtract, vec![col(4), ten])],
    );
    plan.condition = Some(call(ExprType::GreaterThan, vec![div, zero]));
    let out = plan.run_steps(&[
        (L, vec![ins(1, 15, 1)]),
        (R, vec![ins(1, 10, 100), ins(1, 20, 101)]),
    ]);
    assert_eq!(out, vec!["", "+(1,15,1,1,20,101)"]);
    assert_eq!(plan.counts.total(), 1, "the division by zero is counted");
}

/// A cache of one join key: entries are evicted and loaded back from the rows and degree tables, and the
/// output is the same as with a large cache.
#[test]
fn cache_of_one_key_evicts_and_reloads() {
    let mut steps = left_outer_steps();
    // Alternate keys so that every step misses.
    steps.insert(2, (L, vec![ins(5, 15, 5)]));
    steps.insert(4, (R, vec![ins(5, 25, 105)]));
    let big = Plan::new(JoinType::FullOuter);
    let mut small = Plan::new(JoinType::FullOuter);
    small.cache_capacity = 1;
    let (l, r) = scripts(&steps, 0, 1);
    let expected = run(Box::new(big.build(&node(), l.clone(), r.clone()))).0;
    let got = run(Box::new(small.build(&node(), l, r))).0;
    assert_eq!(got, expected);
    let (b, s) = (big.stats.counters(), small.stats.counters());
    assert_eq!(b.cache_lookups, s.cache_lookups, "{b:?} {s:?}");
    assert!(s.cache_misses > b.cache_misses, "{b:?} {s:?}");
    assert!(
        b.cache_lookups > b.cache_misses,
        "the large cache hits: {b:?}"
    );
    let writes = (b.state_inserts, b.state_deletes);
    assert_eq!(writes, (s.state_inserts, s.state_deletes), "{b:?} {s:?}");
}

/// A node whose committed data survives a restart: a hummock manager, tables registered.
struct Env {
    mgr: HummockManager,
    node: NodeStorage,
}

impl Env {
    fn new() -> Self {
        let committed = CommittedStore::default();
        let mgr = HummockManager::new(committed.clone(), None);
        mgr.register_tables(&[TableId(101), TableId(102), TableId(103), TableId(104)]);
        mgr.set_context(WorkerId(1), 1);
        let node = NodeStorage::new(WorkerId(1), committed, mgr.current_version(), 1);
        Self { mgr, node }
    }

    /// Seal, sync and commit `epoch` (everything written at or below it).
    fn checkpoint(&self, epoch: u64) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        self.node.seal_epoch(Epoch::test(epoch)).unwrap();
        let sync = rt.block_on(self.node.sync(Epoch::test(epoch))).unwrap();
        let outcome = self
            .mgr
            .commit_epoch(Epoch::test(epoch), vec![sync])
            .unwrap();
        self.node.apply_version_delta(&outcome.delta).unwrap();
    }

    /// A node restarted from the committed version: staging gone.
    fn restart(&self) -> NodeStorage {
        NodeStorage::new(
            WorkerId(1),
            self.mgr.committed_store().clone(),
            self.mgr.current_version(),
            2,
        )
    }
}

/// A join killed after a checkpoint (`lost` = 0) or between checkpoints (it has processed `lost` steps
/// after the checkpoint, which are lost with it and come again after recovery) rebuilds its state from the
/// committed tables with an empty cache, and then emits what a join that never stopped emits.
fn restart_case(join_type: JoinType, lost: usize) {
    let all = left_outer_steps();
    let (before, after) = all.split_at(4);
    let plan = Plan::new(join_type);
    let env = Env::new();
    let mut first: Vec<_> = before.to_vec();
    first.extend(after.iter().take(lost).cloned());
    let (l, r) = scripts(&first, 0, 1);
    let _ = run(Box::new(plan.build(&env.node, l, r)));
    // Step i is written in epoch i + 1 (its barrier i + 2 seals it): the steps before the split are committed.
    env.checkpoint(before.len() as u64);
    let node = env.restart();
    let resume = before.len() as u64;
    let (l, r) = scripts(after, resume, resume + 1);
    let got = run(Box::new(plan.build(&node, l, r))).0;
    let (l, r) = scripts(&all, 0, 1);
    let whole = run(Box::new(plan.build(&self::node(), l, r))).0;
    assert_eq!(
        got,
        whole[before.len()..],
        "{join_type:?}, {lost} lost steps"
    );
}

#[test]
fn rebuilds_from_committed_state_after_a_restart() {
    for t in [
        JoinType::Inner,
        JoinType::LeftOuter,
        JoinType::RightOuter,
        JoinType::FullOuter,
        JoinType::LeftSemi,
        JoinType::LeftAnti,
        JoinType::RightSemi,
        JoinType::RightAnti,
    ] {
        restart_case(t, 0);
        restart_case(t, 2);
    }
}

/// The first error of a join over `steps` (each step its own epoch).
fn first_error(steps: &[(SideType, Vec<(Op, OwnedRow)>)]) -> String {
    let (left, right) = scripts(steps, 0, 1);
    let exec = Box::new(Plan::new(JoinType::Inner).build(&node(), left, right));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let mut s = exec.execute();
        while let Some(m) = s.next().await {
            if let Err(e) = m {
                return e.to_string();
            }
        }
        panic!("the join ran to its end")
    })
}

/// RisingWave's cache checks, in every consistency mode: a cached entry refuses an insert of a pk it holds
/// and a delete of one it does not, naming the key, the pk, the row and the table.
#[test]
fn a_cached_entry_refuses_a_double_insert_and_a_missing_delete() {
    use SideType::{Left, Right};
    // The right row looks the left key up: its entry is cached (empty), then takes the left rows.
    let cached = || vec![(Right, vec![ins(1, 10, 1)]), (Left, vec![ins(1, 20, 2)])];
    let mut twice = cached();
    twice.push((Left, vec![ins(1, 20, 2)]));
    let e = first_error(&twice);
    assert!(
        e.starts_with("double inserting a join state entry: join key: "),
        "{e}"
    );
    assert!(e.contains("state_table_id: 101"), "{e}");
    let mut missing = cached();
    missing.push((Left, vec![del(1, 30, 3)]));
    let e = first_error(&missing);
    assert!(
        e.starts_with("removing a join state entry but it is not in the cache"),
        "{e}"
    );
}
