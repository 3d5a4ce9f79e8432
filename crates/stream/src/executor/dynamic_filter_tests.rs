//! Unit tests of the dynamic filter and `now` executors over scripted inputs: what each barrier emits, the
//! rows that enter or leave the range when the right value moves, and an executor rebuilt over the same
//! node's storage starting from the stored right row and left rows.

use std::sync::Arc;

use epochlab_barrier::{Barrier, BarrierKind, Mutation};
use epochlab_common::catalog::{Distribution, TableDesc};
use epochlab_common::{
    ActorId, Bitmap, DataType, Epoch, EpochPair, ExprType, Op, OrderType, OwnedRow, ScalarImpl,
    StreamChunk, TableId, VnodeCount, WorkerId,
};
use epochlab_state_table::StateTable;
use epochlab_storage::{CommittedStore, HummockManager, NodeStorage};
use futures::StreamExt;
use tokio::sync::mpsc;

use super::dynamic_filter::{Comparator, DynamicFilterArgs, DynamicFilterExecutor, changed_range};
use super::now::NowExecutor;
use super::{BoxedExecutor, BoxedMessageStream, Execute, Message};

const VNODES: usize = 8;

fn node() -> NodeStorage {
    NodeStorage::new(
        WorkerId(1),
        CommittedStore::default(),
        Default::default(),
        1,
    )
}

const W: WorkerId = WorkerId(1);

/// A node's storage with a hummock manager that commits its checkpoints: a "killed" node is replaced by
/// a new generation over the committed store, its uncommitted writes lost.
struct Cluster {
    mgr: Arc<HummockManager>,
    committed: CommittedStore,
}

impl Cluster {
    fn new() -> Self {
        let committed = CommittedStore::default();
        let mgr = Arc::new(HummockManager::new(committed.clone(), None));
        mgr.register_tables(&[TableId(101), TableId(102), TableId(103)]);
        mgr.set_context(W, 1);
        Self { mgr, committed }
    }

    /// A node of `generation`, caught up with every committed epoch.
    fn node(&self, generation: u64) -> NodeStorage {
        self.mgr.set_context(W, generation);
        let node = NodeStorage::new(W, self.committed.clone(), Default::default(), generation);
        let pinned = node.pinned_version().id;
        for d in self.mgr.deltas_after(pinned).expect("deltas available") {
            node.apply_version_delta(&d).unwrap();
        }
        node
    }

    /// Seal, sync and commit epoch `Epoch::test(n)` of `node`.
    fn checkpoint(&self, node: &NodeStorage, n: u64) {
        runtime().block_on(async {
            node.seal_epoch(Epoch::test(n)).unwrap();
            let sync = node.sync(Epoch::test(n)).await.unwrap();
            self.mgr.commit_epoch(Epoch::test(n), vec![sync]).unwrap();
        });
    }
}

fn barrier_msg(curr: u64) -> Message {
    Message::Barrier(barrier(curr, None))
}

fn barrier(curr: u64, mutation: Option<Mutation>) -> Barrier {
    Barrier::new(
        EpochPair::new(Epoch::test(curr), Epoch::test(curr - 1)),
        BarrierKind::Checkpoint,
        mutation,
    )
}

fn int(v: Option<i64>) -> Option<ScalarImpl> {
    v.map(ScalarImpl::Int64)
}

/// A left row `(k, id)`.
fn l(op: Op, k: Option<i64>, id: i64) -> (Op, OwnedRow) {
    (op, OwnedRow::new(vec![int(k), int(Some(id))]))
}

fn r(op: Op, v: Option<i64>) -> (Op, OwnedRow) {
    (op, OwnedRow::new(vec![int(v)]))
}

fn chunk(pairs: Vec<(Op, OwnedRow)>) -> Message {
    Message::Chunk(StreamChunk::from_pairs(pairs))
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

fn count() -> VnodeCount {
    VnodeCount::new(VNODES as u32).unwrap()
}

/// The left table: `(k, id)`, pk `(k, id)`, hashed by `id`.
fn left_desc() -> Arc<TableDesc> {
    Arc::new(TableDesc {
        table_id: TableId(101),
        column_types: vec![DataType::Int64, DataType::Int64],
        pk_indices: vec![0, 1],
        pk_orders: vec![OrderType::ascending(); 2],
        value_indices: vec![0, 1],
        distribution: Distribution::HashDistKey {
            dist_key_in_pk: vec![1],
        },
        vnode_count: count(),
    })
}

fn singleton_desc(id: u32, ty: DataType) -> Arc<TableDesc> {
    Arc::new(TableDesc {
        table_id: TableId(id),
        column_types: vec![ty],
        pk_indices: vec![],
        pk_orders: vec![],
        value_indices: vec![0],
        distribution: Distribution::Singleton,
        vnode_count: count(),
    })
}

fn filter(
    node: &NodeStorage,
    cmp: Comparator,
    left: Vec<Message>,
    right: Vec<Message>,
) -> BoxedExecutor {
    let vnodes = Arc::new(Bitmap::ones(VNODES));
    let args = DynamicFilterArgs {
        actor_id: ActorId(1),
        left: Box::new(Script(left)),
        right: Box::new(Script(right)),
        key: 0,
        comparator: cmp,
        left_table: StateTable::new(left_desc(), node, vnodes),
        right_table: StateTable::new(
            singleton_desc(102, DataType::Int64),
            node,
            DynamicFilterExecutor::right_vnodes(VNODES),
        ),
        chunk_size: 2,
        stats: super::stats::ExecutorStatsHandle::detached(),
    };
    Box::new(DynamicFilterExecutor::new(args))
}

fn text(d: &Option<ScalarImpl>) -> String {
    d.as_ref().map_or("NULL".to_string(), ToString::to_string)
}

fn show(c: &StreamChunk) -> String {
    c.rows()
        .map(|(op, r)| {
            let op = match op {
                Op::Insert => "+",
                Op::Delete => "-",
                Op::UpdateDelete => "U-",
                Op::UpdateInsert => "U+",
            };
            let cols: Vec<String> = r.datums().iter().map(text).collect();
            format!("{op}({})", cols.join(","))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

/// Every message out: a chunk as `op(a,b)` per row, a barrier as `B` (the first left out).
fn run(exec: BoxedExecutor) -> Vec<String> {
    runtime().block_on(async {
        let mut out = Vec::new();
        let mut s = exec.execute();
        while let Some(m) = s.next().await {
            out.push(match m.unwrap() {
                Message::Barrier(_) => "B".to_string(),
                Message::Watermark(w) => format!("W{}={:?}", w.col_idx, w.val),
                Message::Chunk(c) => show(&c),
            });
        }
        out.remove(0);
        out
    })
}

#[test]
fn greater_than_follows_the_right_value() {
    let node = node();
    let left = vec![
        barrier_msg(1),
        chunk(vec![
            l(Op::Insert, Some(1), 1),
            l(Op::Insert, Some(2), 2),
            l(Op::Insert, Some(3), 3),
            l(Op::Insert, None, 4),
        ]),
        barrier_msg(2),
        chunk(vec![l(Op::Insert, Some(5), 5), l(Op::Delete, Some(1), 1)]),
        barrier_msg(3),
        barrier_msg(4),
        barrier_msg(5),
    ];
    let right = vec![
        barrier_msg(1),
        barrier_msg(2),
        chunk(vec![r(Op::Insert, Some(0))]),
        barrier_msg(3),
        chunk(vec![
            r(Op::UpdateDelete, Some(0)),
            r(Op::UpdateInsert, Some(2)),
        ]),
        barrier_msg(4),
        chunk(vec![r(Op::Delete, Some(2))]),
        barrier_msg(5),
    ];
    assert_eq!(
        run(filter(&node, Comparator::GreaterThan, left, right)),
        vec![
            // No right value yet: nothing passes.
            "B",
            // The left rows of epoch 2 passed against no value; 0 arrives: keys > 0 enter (two rows a
            // chunk, in vnode order).
            "+(3,3) +(2,2)",
            "+(5,5)",
            "B",
            // 0 → 2: keys in (0, 2] leave.
            "-(2,2)",
            "B",
            // 2 → NULL: every key > 2 leaves.
            "-(3,3) -(5,5)",
            "B",
        ]
    );
}

#[test]
fn an_update_across_the_bound_is_a_delete_or_an_insert() {
    let node = node();
    let left = vec![
        barrier_msg(1),
        chunk(vec![l(Op::Insert, Some(1), 1), l(Op::Insert, Some(9), 2)]),
        barrier_msg(2),
        chunk(vec![
            l(Op::UpdateDelete, Some(1), 1),
            l(Op::UpdateInsert, Some(8), 1),
            l(Op::UpdateDelete, Some(9), 2),
            l(Op::UpdateInsert, Some(2), 2),
        ]),
        chunk(vec![
            l(Op::UpdateDelete, Some(8), 1),
            l(Op::UpdateInsert, Some(7), 1),
        ]),
        barrier_msg(3),
    ];
    let right = vec![
        barrier_msg(1),
        chunk(vec![r(Op::Insert, Some(5))]),
        barrier_msg(2),
        barrier_msg(3),
    ];
    assert_eq!(
        run(filter(&node, Comparator::LessThanOrEqual, left, right)),
        vec!["+(1,1)", "B", "-(1,1) +(2,2)", "B",]
    );
}

/// The range of keys whose verdict changes, for every comparator and every pair of right values (NULL
/// among them), is exactly the keys whose verdict differs under the two values.
#[test]
fn changed_range_is_the_keys_whose_verdict_changes() {
    use std::ops::RangeBounds;
    let cmps = [
        Comparator::GreaterThan,
        Comparator::GreaterThanOrEqual,
        Comparator::LessThan,
        Comparator::LessThanOrEqual,
    ];
    let values: Vec<Option<i64>> = vec![None, Some(2), Some(4), Some(7)];
    for cmp in cmps {
        for &p in &values {
            for &c in &values {
                if p == c {
                    continue;
                }
                let (range, insert) = changed_range(cmp, &int(p), &int(c));
                for k in 0..10i64 {
                    let key = int(Some(k));
                    let before = super::dynamic_filter::passes(cmp, &key, &int(p));
                    let after = super::dynamic_filter::passes(cmp, &key, &int(c));
                    let as_int = |b: &std::ops::Bound<ScalarImpl>| {
                        b.as_ref().map(|s| match s {
                            ScalarImpl::Int64(v) => *v,
                            other => panic!("{other:?}"),
                        })
                    };
                    let in_range = (as_int(&range.0), as_int(&range.1)).contains(&k);
                    assert_eq!(in_range, before != after, "{cmp:?} {p:?}->{c:?} key {k}");
                    if in_range {
                        assert_eq!(after, insert, "{cmp:?} {p:?}->{c:?} key {k}");
                    }
                }
            }
        }
    }
}

/// A filter rebuilt on a new node after epoch 2 was committed starts from the committed right value and
/// finds the committed left rows when the value moves; what epoch 3 wrote is lost with the old node.
#[test]
fn a_rebuilt_filter_starts_from_its_committed_tables() {
    let cluster = Cluster::new();
    let node = cluster.node(1);
    let left = vec![
        barrier_msg(1),
        chunk(vec![
            l(Op::Insert, Some(1), 1),
            l(Op::Insert, Some(4), 2),
            l(Op::Insert, Some(6), 3),
        ]),
        barrier_msg(2),
        chunk(vec![l(Op::Insert, Some(9), 9)]),
        barrier_msg(3),
    ];
    let right = vec![
        barrier_msg(1),
        chunk(vec![r(Op::Insert, Some(3))]),
        barrier_msg(2),
        chunk(vec![r(Op::Delete, Some(3)), r(Op::Insert, Some(8))]),
        barrier_msg(3),
    ];
    assert_eq!(
        run(filter(&node, Comparator::GreaterThanOrEqual, left, right)),
        vec!["+(6,3) +(4,2)", "B", "+(9,9)", "-(6,3) -(4,2)", "B"]
    );
    // Epoch 2 (barrier 3's writes) is not committed: the right value 8 and the row 9 are lost.
    cluster.checkpoint(&node, 1);
    let node = cluster.node(2);
    let left = vec![
        barrier_msg(4),
        chunk(vec![l(Op::Insert, Some(2), 4), l(Op::Insert, Some(3), 5)]),
        barrier_msg(5),
        barrier_msg(6),
    ];
    let right = vec![
        barrier_msg(4),
        barrier_msg(5),
        chunk(vec![r(Op::Delete, Some(3)), r(Op::Insert, Some(1))]),
        barrier_msg(6),
    ];
    assert_eq!(
        run(filter(&node, Comparator::GreaterThanOrEqual, left, right)),
        vec![
            // 3 is committed: the new row 3 passes, 2 does not.
            "+(3,5)",
            "B",
            // 3 → 1: keys in [1, 3) enter.
            "+(2,4) +(1,1)",
            "B",
        ]
    );
}

#[test]
fn deleting_a_right_value_that_is_not_current_fails() {
    let node = node();
    let left = vec![barrier_msg(1), barrier_msg(2)];
    let right = vec![
        barrier_msg(1),
        chunk(vec![r(Op::Insert, Some(3)), r(Op::Delete, Some(4))]),
        barrier_msg(2),
    ];
    let exec = filter(&node, Comparator::GreaterThan, left, right);
    let err = runtime().block_on(async {
        let mut s = exec.execute();
        loop {
            match s.next().await {
                Some(Err(e)) => break e,
                Some(Ok(_)) => {}
                None => panic!("the stream ended without an error"),
            }
        }
    });
    assert!(
        matches!(err, super::StreamExecutorError::RightValueMismatch { .. }),
        "{err}"
    );
    assert!(err.reason().is_state_error());
}

fn now_table() -> Arc<TableDesc> {
    singleton_desc(103, DataType::Timestamptz)
}

/// `now` emits each barrier's epoch time after it, retracting the last; a paused job emits nothing; an
/// actor rebuilt on a new node retracts the committed value.
#[test]
fn now_emits_the_epoch_time_and_its_watermark_per_barrier() {
    let cluster = Cluster::new();
    let runtime = runtime();
    let vnodes = Arc::new(Bitmap::ones(VNODES));
    let run_now = |node: &NodeStorage, barriers: Vec<Barrier>| {
        let (tx, rx) = mpsc::channel(16);
        for b in barriers {
            tx.try_send(b).unwrap();
        }
        drop(tx);
        let table = StateTable::new(now_table(), node, vnodes.clone());
        let exec = Box::new(NowExecutor::new(ActorId(7), rx, table));
        runtime.block_on(async {
            let mut out = Vec::new();
            let mut s = exec.execute();
            while let Some(m) = s.next().await {
                match m {
                    Ok(Message::Barrier(_)) => out.push("B".to_string()),
                    Ok(Message::Chunk(c)) => out.push(show(&c)),
                    Ok(Message::Watermark(w)) => out.push(format!("W{}={:?}", w.col_idx, w.val)),
                    // The script's channel ran out.
                    Err(super::StreamExecutorError::ChannelClosed(_)) => break,
                    Err(e) => panic!("{e}"),
                }
            }
            out
        })
    };
    let node = cluster.node(1);
    let out = run_now(
        &node,
        vec![
            barrier(1, None),
            barrier(2, Some(Mutation::Pause)),
            barrier(3, Some(Mutation::Resume)),
        ],
    );
    assert_eq!(
        out,
        vec![
            "B",
            "+(2021-04-01 00:00:00.001+00:00)",
            "W0=Timestamptz(Timestamptz(1617235200001000))",
            "B",
            "B",
            "-(2021-04-01 00:00:00.001+00:00) +(2021-04-01 00:00:00.003+00:00)",
            "W0=Timestamptz(Timestamptz(1617235200003000))",
        ]
    );
    // Epoch 1 (the first value) committed, epoch 3 (the third) lost.
    cluster.checkpoint(&node, 2);
    let out = run_now(&cluster.node(2), vec![barrier(4, None)]);
    assert_eq!(
        out,
        vec![
            "B",
            "-(2021-04-01 00:00:00.001+00:00) +(2021-04-01 00:00:00.004+00:00)",
            "W0=Timestamptz(Timestamptz(1617235200004000))",
        ]
    );
}

#[test]
fn comparators_of_expr_types() {
    assert_eq!(
        Comparator::from_expr_type(ExprType::GreaterThanOrEqual),
        Some(Comparator::GreaterThanOrEqual)
    );
    assert_eq!(Comparator::from_expr_type(ExprType::Equal), None);
}
