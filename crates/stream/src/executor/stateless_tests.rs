//! Unit tests of the stateless executors (project, filter, union, values, row id) and of materialize's
//! conflict handling, over scripted inputs.

use epochlab_barrier::{AddMutation, Barrier, BarrierKind, Mutation};
use epochlab_common::expr_node::{ExprNode, ExprType};
use epochlab_common::{
    ActorId, Bitmap, Clock, DataType, Epoch, EpochPair, Op, OwnedRow, ScalarImpl, StreamChunk,
    WorkerId, row,
};
use epochlab_expr::sig;
use futures::StreamExt;

use super::non_strict::{ExprErrorCounts, ExprExecutor, NonStrict};
use super::row_id_gen::vnode_of_row_id;
use super::{
    BoxedExecutor, BoxedMessageStream, Execute, FilterExecutor, Message, ProjectExecutor,
    RowIdGenExecutor, UnionExecutor, ValuesExecutor,
};
use crate::task::barrier_worker::LocalBarrierManager;

fn barrier(curr: u64) -> Barrier {
    Barrier::new(
        EpochPair::new(Epoch::test(curr), Epoch::test(curr - 1)),
        BarrierKind::Checkpoint,
        None,
    )
}

fn add_barrier(curr: u64, added: &[ActorId]) -> Barrier {
    let add = AddMutation {
        added_actors: added.iter().copied().collect(),
        ..Default::default()
    };
    Barrier::new(
        EpochPair::new(Epoch::test(curr), Epoch::test(curr - 1)),
        BarrierKind::Checkpoint,
        Some(Mutation::Add(add)),
    )
}

fn chunk(pairs: Vec<(Op, OwnedRow)>) -> Message {
    Message::Chunk(StreamChunk::from_pairs(pairs))
}

/// An input that yields its messages, then ends.
struct Script(Vec<Message>);

impl Execute for Script {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        futures::stream::iter(self.0.into_iter().map(Ok)).boxed()
    }

    fn identity(&self) -> String {
        "Script".into()
    }
}

fn script(msgs: Vec<Message>) -> BoxedExecutor {
    Box::new(Script(msgs))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

/// Every message of an executor, as (op, row) lists per chunk and `B<epoch>` per barrier.
fn run(exec: BoxedExecutor) -> Vec<String> {
    rt().block_on(async {
        let mut out = Vec::new();
        let mut s = exec.execute();
        while let Some(m) = s.next().await {
            out.push(match m.unwrap() {
                Message::Barrier(b) => format!("B{}", b.epoch.curr.0 >> 16),
                Message::Watermark(w) => format!("W{}={:?}", w.col_idx, w.val),
                Message::Chunk(c) => c
                    .rows()
                    .map(|(op, r)| format!("{op:?}{:?}", r.datums()))
                    .collect::<Vec<_>>()
                    .join(" "),
            });
        }
        out
    })
}

fn col(i: usize) -> ExprNode {
    ExprNode::input_ref(i, DataType::Int64)
}

fn lit(v: i64) -> ExprNode {
    ExprNode::literal(Some(ScalarImpl::Int64(v)), DataType::Int64)
}

fn call(func: ExprType, args: Vec<ExprNode>) -> ExprNode {
    sig::build_func(func, args).unwrap()
}

fn non_strict(executor: ExprExecutor) -> (NonStrict, ExprErrorCounts) {
    let counts = ExprErrorCounts::default();
    let eval = NonStrict {
        actor_id: ActorId(1),
        executor,
        counts: counts.clone(),
    };
    (eval, counts)
}

/// `100 / v` over rows with v = 0 gives NULL (RisingWave's non-strict mode), counted once; the other rows
/// and the ops pass through.
#[test]
fn project_division_by_zero_is_null_and_counted() {
    let input = script(vec![
        Message::Barrier(barrier(1)),
        chunk(vec![
            (Op::Insert, row![1i64, 4i64]),
            (Op::Insert, row![2i64, 0i64]),
            (Op::Delete, row![3i64, 50i64]),
        ]),
        Message::Barrier(barrier(2)),
    ]);
    let (eval, counts) = non_strict(ExprExecutor::Project);
    let exprs = vec![col(0), call(ExprType::Divide, vec![lit(100), col(1)])];
    let out = run(Box::new(ProjectExecutor::new(input, exprs, eval)));
    assert_eq!(
        out,
        vec![
            "B1",
            "Insert[Some(Int64(1)), Some(Int64(25))] Insert[Some(Int64(2)), None] Delete[Some(Int64(3)), Some(Int64(2))]",
            "B2"
        ]
    );
    assert_eq!(counts.total(), 1);
    assert_eq!(
        counts.counts().into_iter().collect::<Vec<_>>(),
        vec![((ExprExecutor::Project, "division_by_zero"), 1)]
    );
}

/// `100 / v > 10`: rows where it is false or fails (NULL) are dropped; an update pair whose old row passes
/// and new row fails becomes a Delete, the reverse an Insert, both passing stays a pair.
#[test]
fn filter_drops_errors_and_splits_update_pairs() {
    let input = script(vec![
        Message::Barrier(barrier(1)),
        chunk(vec![
            (Op::Insert, row![1i64, 5i64]),  // 20 > 10
            (Op::Insert, row![2i64, 0i64]),  // error: dropped
            (Op::Insert, row![3i64, 50i64]), // 2: dropped
            (Op::UpdateDelete, row![4i64, 5i64]),
            (Op::UpdateInsert, row![4i64, 0i64]), // old passes, new fails: Delete
            (Op::UpdateDelete, row![5i64, 0i64]),
            (Op::UpdateInsert, row![5i64, 2i64]), // old fails, new passes: Insert
            (Op::UpdateDelete, row![6i64, 1i64]),
            (Op::UpdateInsert, row![6i64, 2i64]), // both pass: the pair
            (Op::UpdateDelete, row![7i64, 0i64]),
            (Op::UpdateInsert, row![7i64, 100i64]), // neither: nothing
        ]),
        Message::Barrier(barrier(2)),
    ]);
    let (eval, counts) = non_strict(ExprExecutor::Filter);
    let div = call(ExprType::Divide, vec![lit(100), col(1)]);
    let predicate = call(ExprType::GreaterThan, vec![div, lit(10)]);
    let out = run(Box::new(FilterExecutor::new(input, predicate, eval)));
    let expected = [
        "Insert[Some(Int64(1)), Some(Int64(5))]",
        "Delete[Some(Int64(4)), Some(Int64(5))]",
        "Insert[Some(Int64(5)), Some(Int64(2))]",
        "UpdateDelete[Some(Int64(6)), Some(Int64(1))]",
        "UpdateInsert[Some(Int64(6)), Some(Int64(2))]",
    ];
    assert_eq!(out, vec!["B1".to_string(), expected.join(" "), "B2".into()]);
    assert_eq!(
        counts.total(),
        4,
        "rows 2, 4 (new), 5 (old) and 7 (old) fail"
    );
}

/// A chunk whose rows all fail the filter yields nothing; barriers pass.
#[test]
fn filter_of_nothing_yields_only_barriers() {
    let input = script(vec![
        Message::Barrier(barrier(1)),
        chunk(vec![(Op::Insert, row![1i64, 0i64])]),
        Message::Barrier(barrier(2)),
    ]);
    let (eval, _) = non_strict(ExprExecutor::Filter);
    let predicate = call(ExprType::GreaterThan, vec![col(1), lit(0)]);
    let out = run(Box::new(FilterExecutor::new(input, predicate, eval)));
    assert_eq!(out, vec!["B1", "B2"]);
}

/// Each barrier goes out once, after every input delivered it; the chunks of an epoch come before its
/// barrier, whichever input they came from.
#[test]
fn union_aligns_barriers() {
    let a = script(vec![
        Message::Barrier(barrier(1)),
        chunk(vec![(Op::Insert, row![1i64])]),
        Message::Barrier(barrier(2)),
        chunk(vec![(Op::Insert, row![3i64])]),
        Message::Barrier(barrier(3)),
    ]);
    let b = script(vec![
        Message::Barrier(barrier(1)),
        Message::Barrier(barrier(2)),
        chunk(vec![(Op::Insert, row![2i64])]),
        chunk(vec![(Op::Insert, row![4i64])]),
        Message::Barrier(barrier(3)),
    ]);
    let out = run(Box::new(UnionExecutor::new(ActorId(1), vec![a, b])));
    assert_eq!(
        out,
        vec![
            "B1",
            "Insert[Some(Int64(1))]",
            "B2",
            "Insert[Some(Int64(3))]",
            "Insert[Some(Int64(2))]",
            "Insert[Some(Int64(4))]",
            "B3"
        ]
    );
}

/// Inputs at different epochs are an error, not a silent merge.
#[test]
fn union_rejects_misaligned_barriers() {
    let a = script(vec![
        Message::Barrier(barrier(1)),
        Message::Barrier(barrier(2)),
    ]);
    let b = script(vec![
        Message::Barrier(barrier(1)),
        Message::Barrier(barrier(3)),
    ]);
    rt().block_on(async {
        let mut s = Box::new(UnionExecutor::new(ActorId(1), vec![a, b])).execute();
        assert!(matches!(s.next().await, Some(Ok(Message::Barrier(_)))));
        let err = s.next().await.unwrap().unwrap_err();
        assert!(matches!(
            err,
            super::StreamExecutorError::BarrierMisaligned { .. }
        ));
    });
}

/// Drive a values executor with `barriers`; its messages and the progress reports it made.
fn run_values(barriers: Vec<Barrier>) -> (Vec<String>, usize) {
    rt().block_on(async {
        let (bm, mut events) = LocalBarrierManager::for_test(WorkerId(1));
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let rows = vec![row![1i64, 10i64], row![2i64, 20i64]];
        let exec = Box::new(ValuesExecutor::new(
            ActorId(7),
            rx,
            rows,
            bm,
            Clock::manual(0),
        ));
        for b in barriers {
            tx.send(b).await.unwrap();
        }
        drop(tx);
        let mut out = Vec::new();
        let mut s = exec.execute();
        while let Some(Ok(m)) = s.next().await {
            out.push(match m {
                Message::Barrier(b) => format!("B{}", b.epoch.curr.0 >> 16),
                Message::Watermark(w) => format!("W{}={:?}", w.col_idx, w.val),
                Message::Chunk(c) => format!("{} rows", c.cardinality()),
            });
        }
        drop(s);
        let mut reports = 0;
        while let Ok(ev) = events.try_recv() {
            reports += usize::from(ev.is_progress_report());
        }
        (out, reports)
    })
}

/// A newly added values actor emits its rows after its first barrier, then reports done on each barrier.
#[test]
fn values_emit_once_in_a_new_job() {
    let (out, reports) = run_values(vec![add_barrier(1, &[ActorId(7)]), barrier(2), barrier(3)]);
    assert_eq!(out, vec!["B1", "2 rows", "B2", "B3"]);
    assert_eq!(reports, 2);
}

/// After a recovery the first barrier adds no actor: the rebuilt actor emits nothing (its rows were
/// committed before its job was created).
#[test]
fn values_after_recovery_are_not_emitted_again() {
    let (out, reports) = run_values(vec![barrier(5), barrier(6)]);
    assert_eq!(out, vec!["B5", "B6"]);
    assert_eq!(reports, 0);
}

/// Another actor's Add does not make this one emit.
#[test]
fn values_of_another_job_add_are_not_emitted() {
    let (out, _) = run_values(vec![add_barrier(1, &[ActorId(8)]), barrier(2)]);
    assert_eq!(out, vec!["B1", "B2"]);
}

/// Inserted rows get distinct ids carrying one of the actor's vnodes; deletes keep theirs.
#[test]
fn row_ids_are_unique_and_carry_the_actors_vnodes() {
    let mut rows: Vec<(Op, OwnedRow)> = (0..5000i64)
        .map(|i| {
            (
                Op::Insert,
                OwnedRow::new(vec![None, Some(ScalarImpl::Int64(i))]),
            )
        })
        .collect();
    rows.push((Op::Delete, row![77i64, 1i64]));
    let input = script(vec![
        Message::Barrier(barrier(1)),
        chunk(rows),
        Message::Barrier(barrier(2)),
    ]);
    let vnodes = Bitmap::from_range(256, 64..128);
    let clock = Clock::manual(0);
    let exec = RowIdGenExecutor::new(ActorId(1), input, 0, clock, vnodes.into());
    let out = rt().block_on(async {
        let mut s = Box::new(exec).execute();
        let mut ids = Vec::new();
        while let Some(m) = s.next().await {
            if let Message::Chunk(c) = m.unwrap() {
                for (op, r) in c.rows() {
                    let id = match r.datum_at(0) {
                        Some(ScalarImpl::Serial(s)) => s.as_row_id(),
                        Some(ScalarImpl::Int64(k)) => *k,
                        d => panic!("a row id, got {d:?}"),
                    };
                    ids.push((op, id));
                }
            }
        }
        ids
    });
    assert_eq!(out.len(), 5001);
    let inserted: std::collections::BTreeSet<i64> = out
        .iter()
        .filter(|(op, _)| *op == Op::Insert)
        .map(|(_, id)| *id)
        .collect();
    assert_eq!(inserted.len(), 5000, "ids are distinct");
    assert!(
        inserted
            .iter()
            .all(|&id| (64..128).contains(&vnode_of_row_id(id)))
    );
    assert_eq!(out.last(), Some(&(Op::Delete, 77)));
}

mod materialize {
    use std::sync::Arc;

    use epochlab_common::catalog::TableDesc;
    use epochlab_common::plan::ConflictBehavior;
    use epochlab_common::{Bitmap, TableId, VnodeCount, WorkerId};
    use epochlab_state_table::StateTable;
    use epochlab_storage::{CommittedStore, NodeStorage};

    use super::*;
    use crate::executor::MaterializeExecutor;

    /// A materialize over `(k, v)` with pk `k` fed `stored` (inserts of new keys) in one epoch, then `input`;
    /// what it forwards of `input`.
    fn materialize(
        conflict: ConflictBehavior,
        stored: Vec<OwnedRow>,
        input: Vec<(Op, OwnedRow)>,
    ) -> Vec<String> {
        let count = VnodeCount::new(8).unwrap();
        let desc = Arc::new(TableDesc::hash(
            TableId(5),
            vec![DataType::Int64, DataType::Int64],
            vec![0],
            vec![0],
            count,
        ));
        let node = NodeStorage::new(
            WorkerId(1),
            CommittedStore::default(),
            Default::default(),
            1,
        );
        let table = StateTable::new(desc, &node, Arc::new(Bitmap::ones(8)));
        let msgs = vec![
            Message::Barrier(barrier(2)),
            chunk(stored.into_iter().map(|r| (Op::Insert, r)).collect()),
            Message::Barrier(barrier(3)),
            chunk(input),
            Message::Barrier(barrier(4)),
        ];
        let exec = MaterializeExecutor::new(ActorId(1), script(msgs), table, conflict);
        let out = run(Box::new(exec));
        let after = out
            .iter()
            .position(|m| m == "B3")
            .expect("the second barrier");
        out[after + 1..]
            .iter()
            .filter(|m| !m.starts_with('B'))
            .cloned()
            .collect()
    }

    fn r(k: i64, v: i64) -> OwnedRow {
        row![k, v]
    }

    /// A table with a pk overwrites: an insert of a stored pk is an update of the stored row, a delete of a
    /// missing pk is dropped, a delete forwards the stored row; several changes of one pk in a chunk fold.
    #[test]
    fn overwrite_turns_conflicts_into_updates() {
        let out = materialize(
            ConflictBehavior::Overwrite,
            vec![r(1, 10), r(2, 20), r(3, 30)],
            vec![
                (Op::Insert, r(1, 11)), // stored: an update
                (Op::Delete, r(9, 0)),  // missing: dropped
                (Op::Delete, r(2, 99)), // stored (with another value): the stored row goes
                (Op::Insert, r(4, 40)), // new
                (Op::Insert, r(3, 31)),
                (Op::Insert, r(3, 32)), // twice in the chunk: the last wins
                (Op::Insert, r(5, 50)),
                (Op::Delete, r(5, 50)), // inserted and deleted in the chunk: nothing
            ],
        );
        let expected = [
            "UpdateDelete[Some(Int64(1)), Some(Int64(10))]",
            "UpdateInsert[Some(Int64(1)), Some(Int64(11))]",
            "Delete[Some(Int64(2)), Some(Int64(20))]",
            "UpdateDelete[Some(Int64(3)), Some(Int64(30))]",
            "UpdateInsert[Some(Int64(3)), Some(Int64(32))]",
            "Insert[Some(Int64(4)), Some(Int64(40))]",
        ];
        assert_eq!(out, vec![expected.join(" ")]);
    }

    /// `IgnoreConflict`: the stored row wins; deletes still apply.
    #[test]
    fn ignore_conflict_keeps_the_stored_row() {
        let out = materialize(
            ConflictBehavior::IgnoreConflict,
            vec![r(1, 10), r(2, 20)],
            vec![
                (Op::Insert, r(1, 11)),
                (Op::Insert, r(3, 30)),
                (Op::Insert, r(3, 31)),
                (Op::Delete, r(2, 20)),
            ],
        );
        let expected = [
            "Delete[Some(Int64(2)), Some(Int64(20))]",
            "Insert[Some(Int64(3)), Some(Int64(30))]",
        ];
        assert_eq!(out, vec![expected.join(" ")]);
    }

    /// `NoCheck` forwards the chunk as it came.
    #[test]
    fn no_check_forwards_as_is() {
        let out = materialize(
            ConflictBehavior::NoCheck,
            vec![],
            vec![(Op::Insert, r(1, 10)), (Op::Insert, r(2, 20))],
        );
        assert_eq!(
            out,
            vec!["Insert[Some(Int64(1)), Some(Int64(10))] Insert[Some(Int64(2)), Some(Int64(20))]"]
        );
    }
}

mod hop_window {
    use epochlab_common::plan::Interval;
    use epochlab_common::types::Timestamp;

    use super::*;
    use crate::executor::{HopWindowError, HopWindowExecutor};

    const MIN: i64 = 60_000_000;

    fn ts(minute: i64) -> ScalarImpl {
        let t = chrono::DateTime::from_timestamp_micros(minute * MIN).unwrap();
        ScalarImpl::Timestamp(Timestamp(t.naive_utc()))
    }

    fn minutes(n: i64) -> Interval {
        Interval::from_month_day_usec(0, 0, n * MIN)
    }

    fn hop(slide: i64, size: i64, output: Vec<usize>, rows: Vec<(Op, OwnedRow)>) -> Vec<String> {
        let input = script(vec![
            Message::Barrier(barrier(1)),
            chunk(rows),
            Message::Barrier(barrier(2)),
        ]);
        let (eval, _) = non_strict(ExprExecutor::HopWindow);
        let exec =
            HopWindowExecutor::new(input, 1, minutes(slide), minutes(size), output, eval).unwrap();
        run(Box::new(exec))
    }

    /// The minute of a timestamp datum, for short expectations.
    fn m(d: &str) -> String {
        d.to_string()
    }

    /// A tumble (slide = size): each row in one window, `[start, end)` its time rounded down.
    #[test]
    fn tumble_puts_each_row_in_one_window() {
        let rows = vec![
            (
                Op::Insert,
                OwnedRow::new(vec![Some(1i64.into()), Some(ts(7))]),
            ),
            (
                Op::Delete,
                OwnedRow::new(vec![Some(2i64.into()), Some(ts(10))]),
            ),
            (Op::Insert, OwnedRow::new(vec![Some(3i64.into()), None])),
        ];
        let out = hop(5, 5, vec![0, 2, 3], rows);
        let expected = format!(
            "Insert[Some(Int64(1)), Some({:?}), Some({:?})] Delete[Some(Int64(2)), Some({:?}), Some({:?})]",
            ts(5),
            ts(10),
            ts(10),
            ts(15)
        );
        assert_eq!(out, vec![m("B1"), expected, m("B2")]);
    }

    /// A hop of size 3 × slide: each row in three windows, earliest first, a row's windows together.
    #[test]
    fn hop_puts_each_row_in_size_over_slide_windows() {
        let rows = vec![(
            Op::Insert,
            OwnedRow::new(vec![Some(1i64.into()), Some(ts(7))]),
        )];
        let out = hop(2, 6, vec![2, 3], rows);
        let window = |s, e| format!("Insert[Some({:?}), Some({:?})]", ts(s), ts(e));
        let all = [window(2, 8), window(4, 10), window(6, 12)].join(" ");
        assert_eq!(out, vec![m("B1"), all, m("B2")]);
    }

    /// An update whose old and new rows share windows (RisingWave's #10495): every window of the old row
    /// is deleted before any of the new row's is inserted, so a keyed downstream never sees an insert of
    /// a key that is still there.
    #[test]
    fn hop_update_deletes_old_windows_before_inserting_new() {
        let rows = vec![
            (
                Op::UpdateDelete,
                OwnedRow::new(vec![Some(1i64.into()), Some(ts(15))]),
            ),
            (
                Op::UpdateInsert,
                OwnedRow::new(vec![Some(1i64.into()), Some(ts(25))]),
            ),
        ];
        let out = hop(10, 30, vec![0, 2], rows);
        let w = |op: &str, s: i64| format!("{op}[Some(Int64(1)), Some({:?})]", ts(s));
        let all = [
            w("Delete", -10),
            w("Delete", 0),
            w("Delete", 10),
            w("Insert", 0),
            w("Insert", 10),
            w("Insert", 20),
        ]
        .join(" ");
        assert_eq!(out, vec![m("B1"), all, m("B2")]);
    }

    #[test]
    fn sizes_must_divide_and_be_fixed() {
        let (eval, _) = non_strict(ExprExecutor::HopWindow);
        let input = || script(vec![]);
        let e = HopWindowExecutor::new(input(), 1, minutes(4), minutes(6), vec![], eval.clone());
        assert!(matches!(e, Err(HopWindowError::NotDivisible { .. })));
        let month = Interval::from_month_day_usec(1, 0, 0);
        let e = HopWindowExecutor::new(input(), 1, month, month, vec![], eval);
        assert!(matches!(e, Err(HopWindowError::NotPositive { .. })));
    }
}

mod project_set {
    use epochlab_common::expr_node::TableFunctionType;
    use epochlab_common::plan::ProjectSetSelectItem;
    use epochlab_common::types::ListValue;

    use super::*;
    use crate::executor::ProjectSetExecutor;

    fn list(v: &[i32]) -> ScalarImpl {
        ScalarImpl::List(ListValue::new(
            v.iter().map(|x| Some(ScalarImpl::Int32(*x))).collect(),
        ))
    }

    fn project_set(rows: Vec<(Op, OwnedRow)>) -> Vec<String> {
        let input = script(vec![
            Message::Barrier(barrier(1)),
            chunk(rows),
            Message::Barrier(barrier(2)),
        ]);
        let list_ty = DataType::List(Box::new(DataType::Int32));
        let select_list = vec![
            ProjectSetSelectItem::Expr(ExprNode::input_ref(0, DataType::Int32)),
            ProjectSetSelectItem::TableFunction {
                func: TableFunctionType::Unnest,
                args: vec![ExprNode::input_ref(1, list_ty)],
                ret: DataType::Int32,
            },
            ProjectSetSelectItem::TableFunction {
                func: TableFunctionType::GenerateSeries,
                args: vec![
                    ExprNode::literal(Some(ScalarImpl::Int32(1)), DataType::Int32),
                    ExprNode::input_ref(2, DataType::Int32),
                ],
                ret: DataType::Int32,
            },
        ];
        let (eval, _) = non_strict(ExprExecutor::ProjectSet);
        run(Box::new(ProjectSetExecutor::new(input, select_list, eval)))
    }

    /// The longest table function sets the count, the shorter is NULL past its end, the scalar repeats;
    /// an input row whose functions give nothing gives no row; updates become deletes and inserts.
    #[test]
    fn rows_per_input_row_are_the_longest_function() {
        let rows = vec![
            (
                Op::Insert,
                OwnedRow::new(vec![
                    Some(ScalarImpl::Int32(1)),
                    Some(list(&[7, 8])),
                    Some(ScalarImpl::Int32(3)),
                ]),
            ),
            (
                Op::UpdateDelete,
                OwnedRow::new(vec![
                    Some(ScalarImpl::Int32(2)),
                    None,
                    Some(ScalarImpl::Int32(0)),
                ]),
            ),
            (
                Op::UpdateInsert,
                OwnedRow::new(vec![
                    Some(ScalarImpl::Int32(2)),
                    Some(list(&[9])),
                    Some(ScalarImpl::Int32(0)),
                ]),
            ),
        ];
        let out = project_set(rows);
        let r = |op: &str, k: i64, v: &str, s: &str, id: i32| {
            format!("{op}[Some(Int64({k})), Some(Int32({id})), {v}, {s}]")
        };
        let expected = [
            r("Insert", 0, "Some(Int32(7))", "Some(Int32(1))", 1),
            r("Insert", 1, "Some(Int32(8))", "Some(Int32(2))", 1),
            r("Insert", 2, "None", "Some(Int32(3))", 1),
            r("Insert", 0, "Some(Int32(9))", "None", 2),
        ]
        .join(" ");
        assert_eq!(out, vec!["B1".to_string(), expected, "B2".to_string()]);
    }
}

mod expand {
    use super::*;
    use crate::executor::ExpandExecutor;

    /// One chunk per grouping set: the columns outside the set NULL, then the columns, then the flag; the
    /// ops kept.
    #[test]
    fn each_row_once_per_grouping_set() {
        let input = script(vec![
            Message::Barrier(barrier(1)),
            chunk(vec![
                (Op::UpdateDelete, row![1i64, 2i64]),
                (Op::UpdateInsert, row![1i64, 3i64]),
            ]),
            Message::Barrier(barrier(2)),
        ]);
        let exec = ExpandExecutor::new(ActorId(1), input, vec![vec![0, 1], vec![1], vec![]]);
        let out = run(Box::new(exec));
        let i = |v: i64| format!("Some(Int64({v}))");
        let r = |op: &str, a: Option<i64>, b: Option<i64>, v: i64, flag: i64| {
            let n = |x: Option<i64>| x.map_or_else(|| "None".to_string(), i);
            format!("{op}[{}, {}, {}, {}, {}]", n(a), n(b), i(1), i(v), i(flag))
        };
        let set = |flag: i64, a: bool, b: bool| {
            [
                r("UpdateDelete", a.then_some(1), b.then_some(2), 2, flag),
                r("UpdateInsert", a.then_some(1), b.then_some(3), 3, flag),
            ]
            .join(" ")
        };
        assert_eq!(
            out,
            vec![
                "B1".to_string(),
                set(0, true, true),
                set(1, false, true),
                set(2, false, false),
                "B2".to_string()
            ]
        );
    }
}
