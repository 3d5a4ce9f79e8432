//! Unit tests of the aggregation executors over scripted inputs: what each barrier emits, and that a group
//! evicted from the cache (a cache of one group) comes back from its state tables with the same state.

use std::sync::Arc;

use epochlab_barrier::{Barrier, BarrierKind};
use epochlab_common::catalog::TableDesc;
use epochlab_common::expr_node::{ExprNode, ExprType};
use epochlab_common::plan::{
    AggCallState, agg_distinct_dedup_table, agg_materialized_input_table, agg_result_table,
};
use epochlab_common::{
    ActorId, AggCall, AggKind, Bitmap, DataType, Epoch, EpochPair, Op, OwnedRow, ScalarImpl,
    StreamChunk, TableId, VnodeCount, WorkerId, row,
};
use epochlab_state_table::StateTable;
use epochlab_storage::{CommittedStore, NodeStorage};
use futures::StreamExt;

use super::{AggArgs, DedupTable, HashAggExecutor, SimpleAggExecutor};
use crate::executor::non_strict::{ExprErrorCounts, ExprExecutor, NonStrict};
use crate::executor::{BoxedExecutor, BoxedMessageStream, Execute, Message};

const VNODES: u32 = 8;

/// The input: `(k, v, id)`, stream key `id`.
fn input_types() -> Vec<DataType> {
    vec![DataType::Int64, DataType::Int64, DataType::Int64]
}

fn agg(kind: AggKind, args: Vec<usize>) -> AggCall {
    let arg_types: Vec<DataType> = args.iter().map(|&i| input_types()[i].clone()).collect();
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

fn barrier(curr: u64) -> Message {
    Message::Barrier(Barrier::new(
        EpochPair::new(Epoch::test(curr), Epoch::test(curr - 1)),
        BarrierKind::Checkpoint,
        None,
    ))
}

fn chunk(pairs: Vec<(Op, OwnedRow)>) -> Message {
    Message::Chunk(StreamChunk::from_pairs(pairs))
}

fn ins(k: i64, v: Option<i64>, id: i64) -> (Op, OwnedRow) {
    (
        Op::Insert,
        OwnedRow::new(vec![
            Some(ScalarImpl::Int64(k)),
            v.map(ScalarImpl::Int64),
            Some(ScalarImpl::Int64(id)),
        ]),
    )
}

fn del(k: i64, v: Option<i64>, id: i64) -> (Op, OwnedRow) {
    (Op::Delete, ins(k, v, id).1)
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

/// An aggregation's plan for tests: calls with their states, the dedup tables, over one node's storage.
struct Plan {
    group_key: Vec<usize>,
    calls: Vec<AggCall>,
    states: Vec<AggCallState>,
    dedup_columns: Vec<usize>,
    cache_capacity: usize,
    /// Min/max keep value states (an append-only input).
    append_only: bool,
    /// A debug build's checks (RisingWave's ci-sim build); off is a release build.
    debug_checks: bool,
}

impl Plan {
    fn new(group_key: Vec<usize>, calls: Vec<AggCall>) -> Self {
        Self {
            group_key,
            calls,
            states: Vec::new(),
            dedup_columns: Vec::new(),
            cache_capacity: 64,
            append_only: false,
            debug_checks: true,
        }
    }

    fn build(mut self, node: &NodeStorage, msgs: Vec<Message>) -> BoxedExecutor {
        let count = VnodeCount::new(VNODES).unwrap();
        let types = input_types();
        let mut next_id = 100;
        let mut id = || {
            next_id += 1;
            TableId(next_id)
        };
        let g_types: Vec<DataType> = self.group_key.iter().map(|&i| types[i].clone()).collect();
        let result = Arc::new(agg_result_table(id(), &g_types, &self.calls, count));
        self.states = self
            .calls
            .iter()
            .map(|c| {
                let keeps = epochlab_common::plan::agg_keeps_input(c.kind);
                if keeps && !self.append_only {
                    agg_materialized_input_table(id(), &types, &self.group_key, c, &[2], count)
                } else {
                    AggCallState::Value
                }
            })
            .collect();
        for c in &self.calls {
            if c.distinct && !self.dedup_columns.contains(&c.args[0]) {
                self.dedup_columns.push(c.args[0]);
            }
        }
        let vnodes = Arc::new(Bitmap::ones(VNODES as usize));
        let open = |t: &Arc<TableDesc>| StateTable::new(t.clone(), node, vnodes.clone());
        let dedup_tables = self
            .dedup_columns
            .iter()
            .map(|&col| {
                let n = self
                    .calls
                    .iter()
                    .filter(|c| c.distinct && c.args[0] == col)
                    .count();
                let d = agg_distinct_dedup_table(id(), &types, &self.group_key, col, n, count);
                DedupTable {
                    column: col,
                    table: open(&d.table),
                }
            })
            .collect();
        let args = AggArgs {
            actor_id: ActorId(1),
            input: Box::new(Script(msgs)),
            group_key: self.group_key.clone(),
            row_count_index: 0,
            result_table: open(&result),
            call_states: AggArgs::open_states(&self.states, open),
            dedup_tables,
            agg_calls: self.calls,
            cache_capacity: self.cache_capacity,
            stats: crate::executor::ExecutorStatsHandle::detached(),
            dedup_write: Default::default(),
            eowc: None,
            debug_checks: self.debug_checks,
            eval: NonStrict {
                actor_id: ActorId(1),
                executor: ExprExecutor::Aggregate,
                counts: ExprErrorCounts::default(),
            },
        };
        if args.group_key.is_empty() {
            Box::new(SimpleAggExecutor::new(args).unwrap())
        } else {
            Box::new(HashAggExecutor::new(args).unwrap())
        }
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
    d.as_ref().map_or("NULL".to_string(), ToString::to_string)
}

/// Every message out: per chunk `op(a,b,..)` per row, `B` per barrier (the first left out).
fn run(exec: BoxedExecutor) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let mut out = Vec::new();
        let mut s = exec.execute();
        while let Some(m) = s.next().await {
            out.push(match m.unwrap() {
                Message::Barrier(_) => "B".to_string(),
                Message::Watermark(w) => format!("W{}={:?}", w.col_idx, w.val),
                Message::Chunk(c) => c
                    .rows()
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
                    .join(" "),
            });
        }
        out.remove(0);
        out
    })
}

fn count_star() -> AggCall {
    agg(AggKind::Count, vec![])
}

/// count(*), sum(v), min(v), max(v) group by k.
fn basic_calls() -> Vec<AggCall> {
    vec![
        count_star(),
        agg(AggKind::Sum, vec![1]),
        agg(AggKind::Min, vec![1]),
        agg(AggKind::Max, vec![1]),
    ]
}

fn basic_script() -> Vec<Message> {
    vec![
        barrier(1),
        chunk(vec![
            ins(1, Some(5), 1),
            ins(1, Some(7), 2),
            ins(2, Some(3), 3),
        ]),
        barrier(2),
        // Group 1's max retracted (7 → 5); group 2 unchanged; group 3 appears and goes in one epoch.
        chunk(vec![
            del(1, Some(7), 2),
            ins(3, Some(1), 4),
            del(3, Some(1), 4),
        ]),
        barrier(3),
        // An update of group 2's row, then nothing for a barrier, then group 2 disappears.
        chunk(vec![
            (Op::UpdateDelete, ins(2, Some(3), 3).1),
            (Op::UpdateInsert, ins(2, Some(9), 3).1),
        ]),
        barrier(4),
        barrier(5),
        chunk(vec![del(2, Some(9), 3), ins(1, Some(2), 5)]),
        barrier(6),
    ]
}

fn basic_expected() -> Vec<&'static str> {
    vec![
        "+(1,2,12,5,7) +(2,1,3,3,3)",
        "B",
        "U-(1,2,12,5,7) U+(1,1,5,5,5)",
        "B",
        "U-(2,1,3,3,3) U+(2,1,9,9,9)",
        "B",
        "B",
        "U-(1,1,5,5,5) U+(1,2,7,2,5) -(2,1,9,9,9)",
        "B",
    ]
}

#[test]
fn hash_agg_emits_changed_groups_only() {
    let node = node();
    let plan = Plan::new(vec![0], basic_calls());
    assert_eq!(run(plan.build(&node, basic_script())), basic_expected());
}

/// A cache of one group: every other group is loaded back from the state tables (min/max from their
/// materialized input, in order), and emits the same.
#[test]
fn hash_agg_reloads_evicted_groups_from_state() {
    let node = node();
    let mut plan = Plan::new(vec![0], basic_calls());
    plan.cache_capacity = 1;
    assert_eq!(run(plan.build(&node, basic_script())), basic_expected());
}

#[test]
fn simple_agg_keeps_its_row_with_count_zero() {
    let node = node();
    let plan = Plan::new(vec![], basic_calls());
    let script = vec![
        barrier(1),
        barrier(2),
        chunk(vec![ins(1, Some(5), 1), ins(2, Some(7), 2)]),
        barrier(3),
        chunk(vec![del(1, Some(5), 1), del(2, Some(7), 2)]),
        barrier(4),
        barrier(5),
    ];
    assert_eq!(
        run(plan.build(&node, script)),
        vec![
            "+(0,NULL,NULL,NULL)",
            "B",
            "U-(0,NULL,NULL,NULL) U+(2,12,5,7)",
            "B",
            "U-(2,12,5,7) U+(0,NULL,NULL,NULL)",
            "B",
            "B",
        ]
    );
}

/// count(DISTINCT v), sum(DISTINCT v), count(*) FILTER (WHERE v > 4), count(v): duplicates count once,
/// a value leaves when its last row goes, the filter's rows only.
#[test]
fn distinct_and_filter() {
    let node = node();
    let mut cd = agg(AggKind::Count, vec![1]);
    cd.distinct = true;
    let mut sd = agg(AggKind::Sum, vec![1]);
    sd.distinct = true;
    let mut filtered = count_star();
    let gt = epochlab_expr::sig::build_func(
        ExprType::GreaterThan,
        vec![
            ExprNode::input_ref(1, DataType::Int64),
            ExprNode::literal(Some(ScalarImpl::Int64(4)), DataType::Int64),
        ],
    )
    .unwrap();
    filtered.filter = Some(gt);
    let calls = vec![count_star(), cd, sd, filtered, agg(AggKind::Count, vec![1])];
    for capacity in [64, 1] {
        let mut plan = Plan::new(vec![0], calls.clone());
        plan.cache_capacity = capacity;
        let script = vec![
            barrier(1),
            chunk(vec![
                ins(1, Some(5), 1),
                ins(1, Some(5), 2),
                ins(1, Some(3), 3),
                ins(1, None, 4),
                ins(2, Some(1), 5),
            ]),
            barrier(2),
            chunk(vec![del(1, Some(5), 1)]),
            barrier(3),
            chunk(vec![del(1, Some(5), 2)]),
            barrier(4),
        ];
        assert_eq!(
            run(plan.build(&node, script)),
            vec![
                "+(1,4,2,8,2,3) +(2,1,1,1,0,1)",
                "B",
                "U-(1,4,2,8,2,3) U+(1,3,2,8,1,2)",
                "B",
                "U-(1,3,2,8,1,2) U+(1,2,1,3,0,1)",
                "B",
            ],
            "cache capacity {capacity}"
        );
    }
}

/// Over an append-only input min/max keep only their value (no materialized input), and survive eviction.
#[test]
fn append_only_min_max_are_value_states() {
    let node = node();
    let mut plan = Plan::new(vec![0], basic_calls());
    plan.append_only = true;
    plan.cache_capacity = 1;
    let script = vec![
        barrier(1),
        chunk(vec![ins(1, Some(5), 1), ins(2, Some(3), 2)]),
        barrier(2),
        chunk(vec![
            ins(1, Some(9), 3),
            ins(2, Some(1), 4),
            ins(1, Some(4), 5),
        ]),
        barrier(3),
    ];
    assert_eq!(
        run(plan.build(&node, script)),
        vec![
            "+(1,1,5,5,5) +(2,1,3,3,3)",
            "B",
            "U-(1,1,5,5,5) U+(1,3,18,4,9) U-(2,1,3,3,3) U+(2,2,4,1,3)",
            "B",
        ]
    );
}

/// A plan whose call state does not fit its call is refused when built.
#[test]
fn a_value_state_for_string_agg_is_refused() {
    let node = node();
    let result = Arc::new(agg_result_table(
        TableId(1),
        &[DataType::Int64],
        &[count_star(), agg(AggKind::ArrayAgg, vec![1])],
        VnodeCount::new(VNODES).unwrap(),
    ));
    let vnodes = Arc::new(Bitmap::ones(VNODES as usize));
    let args = AggArgs {
        actor_id: ActorId(1),
        input: Box::new(Script(vec![])),
        group_key: vec![0],
        agg_calls: vec![count_star(), agg(AggKind::ArrayAgg, vec![1])],
        row_count_index: 0,
        result_table: StateTable::new(result, &node, vnodes),
        call_states: vec![super::CallStateTable::Value, super::CallStateTable::Value],
        dedup_tables: vec![],
        cache_capacity: 1,
        stats: crate::executor::ExecutorStatsHandle::detached(),
        dedup_write: Default::default(),
        eowc: None,
        debug_checks: true,
        eval: NonStrict {
            actor_id: ActorId(1),
            executor: ExprExecutor::Aggregate,
            counts: ExprErrorCounts::default(),
        },
    };
    assert!(HashAggExecutor::new(args).is_err());
    let _ = row![1i64];
}

/// A delete of a row its group never had takes the row count below zero: RisingWave's debug build (its
/// ci-sim runs) panics, here the actor fails; a release build shows the group as empty, keeps its states,
/// and shows it once the count is above zero again.
#[test]
fn a_negative_row_count_fails_a_debug_build_and_hides_the_group_in_release() {
    let script = || {
        vec![
            barrier(1),
            chunk(vec![del(4, Some(1), 9)]),
            barrier(2),
            chunk(vec![ins(4, Some(1), 10)]),
            barrier(3),
            chunk(vec![ins(4, Some(2), 11)]),
            barrier(4),
        ]
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let error = rt.block_on(async {
        let node = node();
        let mut s = Plan::new(vec![0], vec![count_star()])
            .build(&node, script())
            .execute();
        while let Some(m) = s.next().await {
            if let Err(e) = m {
                return e.to_string();
            }
        }
        panic!("the aggregation ran to its end")
    });
    assert!(
        error.starts_with("row count should be non-negative"),
        "{error}"
    );
    let mut release = Plan::new(vec![0], vec![count_star()]);
    release.debug_checks = false;
    let out = run(release.build(&node(), script()));
    assert_eq!(out, ["B", "B", "+(4,1)", "B"]);
}
