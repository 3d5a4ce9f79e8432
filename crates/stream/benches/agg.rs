//! Hash aggregation throughput: rows per second (wall clock) through `HashAggExecutor` (its result state
//! table, memcomparable and value encodings, the group cache and a checkpoint barrier every 10 chunks
//! included), beside the plain in-memory aggregation of the same rows: a `HashMap` from each row's group key
//! to the calls' states (`epochlab_expr`'s `AggState`, as the executor's), with no state table, encoding,
//! cache or checkpoint. That ratio is the target (≥ 0.3). A second figure compares with a hand-specialised
//! `HashMap<i64, (i64, i64)>` of `(count, sum)` over the raw integers: the ceiling of any row-generic engine.
//! Two shapes: inserts only, and a stream in which every fourth row retracts an earlier one (sum and count
//! go down; groups empty and come back).
//!
//! `cargo xtask bench -p epochlab-stream --bench agg`; `EPOCHLAB_BENCH_ROWS=N` sets the row count.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use epochlab_barrier::{Barrier, BarrierKind};
use epochlab_bench::{Figure, Report};
use epochlab_common::plan::agg_result_table;
use epochlab_common::{
    ActorId, AggCall, AggKind, Bitmap, DataType, Epoch, EpochPair, Op, OwnedRow, ScalarImpl,
    StreamChunk, TableId, VnodeCount, WorkerId, row,
};
use epochlab_expr::agg::AggState;
use epochlab_state_table::StateTable;
use epochlab_storage::{CommittedStore, NodeStorage};
use epochlab_stream::executor::{
    AggArgs, BoxedMessageStream, CallStateTable, Execute, ExecutorStatsHandle, ExprErrorCounts,
    ExprExecutor, HashAggExecutor, Message, NonStrict,
};
use futures::StreamExt;

const CHUNK: usize = 1000;
const GROUPS: i64 = 1000;
const CHUNKS_PER_BARRIER: usize = 10;
const REPEATS: usize = 3;

/// One measured run: its wall time and how many rows (or groups) it produced.
type Run<'a> = dyn Fn() -> (Duration, usize) + 'a;

/// The input: `(k, v, id)`, grouped by `k`.
fn types() -> Vec<DataType> {
    vec![DataType::Int64, DataType::Int64, DataType::Int64]
}

/// Row `i` of the stream: an insert of row `i`, or (every fourth row, when `retract`) a delete of row `i - 3`.
fn change(i: i64, retract: bool) -> (Op, i64) {
    if retract && i % 4 == 3 {
        (Op::Delete, i - 3)
    } else {
        (Op::Insert, i)
    }
}

fn source_row(id: i64) -> OwnedRow {
    row![id % GROUPS, id * 7 % 1000, id]
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

fn barrier(n: u64) -> Message {
    let epoch = EpochPair::new(Epoch::test(n + 1), Epoch::test(n));
    Message::Barrier(Barrier::new(epoch, BarrierKind::Checkpoint, None))
}

fn messages(n: usize, retract: bool) -> Vec<Message> {
    let mut out = vec![barrier(1)];
    let mut epoch = 1;
    for (c, start) in (0..n).step_by(CHUNK).enumerate() {
        let pairs: Vec<(Op, OwnedRow)> = (start..(start + CHUNK).min(n))
            .map(|i| {
                let (op, id) = change(i as i64, retract);
                (op, source_row(id))
            })
            .collect();
        out.push(Message::Chunk(StreamChunk::from_pairs(pairs)));
        if (c + 1) % CHUNKS_PER_BARRIER == 0 {
            epoch += 1;
            out.push(barrier(epoch));
        }
    }
    out.push(barrier(epoch + 1));
    out
}

fn call(kind: AggKind, args: Vec<usize>) -> AggCall {
    let arg_types: Vec<DataType> = args.iter().map(|&i| types()[i].clone()).collect();
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

fn calls() -> Vec<AggCall> {
    vec![call(AggKind::Count, vec![]), call(AggKind::Sum, vec![1])]
}

fn executor(input: Vec<Message>) -> HashAggExecutor {
    let calls = calls();
    let vnodes = VnodeCount::new(256).unwrap();
    let result = agg_result_table(TableId(1), &[DataType::Int64], &calls, vnodes);
    let storage = NodeStorage::new(
        WorkerId(1),
        CommittedStore::default(),
        Default::default(),
        1,
    );
    let bitmap = Arc::new(Bitmap::ones(256));
    let args = AggArgs {
        actor_id: ActorId(1),
        input: Box::new(Script(input)),
        group_key: vec![0],
        row_count_index: 0,
        result_table: StateTable::new(Arc::new(result), &storage, bitmap),
        call_states: vec![CallStateTable::Value, CallStateTable::Value],
        dedup_tables: Vec::new(),
        agg_calls: calls,
        cache_capacity: 4096,
        stats: ExecutorStatsHandle::detached(),
        dedup_write: Default::default(),
        eowc: None,
        debug_checks: true,
        eval: NonStrict {
            actor_id: ActorId(1),
            executor: ExprExecutor::Aggregate,
            counts: ExprErrorCounts::default(),
        },
    };
    HashAggExecutor::new(args).unwrap()
}

/// Wall time to drive the executor over the stream; the rows it emitted.
fn run_executor(rt: &tokio::runtime::Runtime, n: usize, retract: bool) -> (Duration, usize) {
    let exec = Box::new(executor(messages(n, retract)));
    rt.block_on(async move {
        let start = Instant::now();
        let mut out = 0;
        let mut s = exec.execute();
        while let Some(m) = s.next().await {
            if let Message::Chunk(c) = m.unwrap() {
                out += c.cardinality();
            }
        }
        (start.elapsed(), out)
    })
}

fn rows(n: usize, retract: bool) -> Vec<(Op, OwnedRow)> {
    (0..n as i64)
        .map(|i| {
            let (op, id) = change(i, retract);
            (op, source_row(id))
        })
        .collect()
}

/// The same rows into a `HashMap` from the group key to the calls' states.
fn run_generic(n: usize, retract: bool) -> (Duration, usize) {
    let calls = calls();
    let rows = rows(n, retract);
    let start = Instant::now();
    let mut groups: HashMap<OwnedRow, Vec<AggState>> = HashMap::new();
    for (op, r) in &rows {
        let states = groups
            .entry(r.project(&[0]))
            .or_insert_with(|| calls.iter().map(AggState::new).collect());
        for s in states.iter_mut() {
            s.apply(*op, r).unwrap();
        }
    }
    let out: Vec<OwnedRow> = groups
        .iter()
        .map(|(k, s)| {
            let mut d = k.datums().to_vec();
            d.extend(s.iter().map(AggState::output));
            OwnedRow::new(d)
        })
        .collect();
    black_box(&out);
    (start.elapsed(), groups.len())
}

/// The same rows folded into a `HashMap` of (count, sum) per raw integer key.
fn run_specialised(n: usize, retract: bool) -> (Duration, usize) {
    let rows = rows(n, retract);
    let start = Instant::now();
    let mut groups: HashMap<i64, (i64, i64)> = HashMap::new();
    for (op, r) in &rows {
        let int = |i: usize| match r.datum_at(i) {
            Some(ScalarImpl::Int64(v)) => *v,
            _ => 0,
        };
        let sign = if matches!(op, Op::Delete) { -1 } else { 1 };
        let g = groups.entry(int(0)).or_default();
        g.0 += sign;
        g.1 += sign * int(1);
    }
    black_box(&groups);
    (start.elapsed(), groups.len())
}

fn main() {
    let n: usize = std::env::var("EPOCHLAB_BENCH_ROWS")
        .map(|v| v.parse().expect("EPOCHLAB_BENCH_ROWS must be a number"))
        .unwrap_or(200_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut report = Report::new("agg");
    println!(
        "hash aggregation vs HashMap<i64, (count, sum)> ({n} rows, {GROUPS} groups, best of {REPEATS})"
    );
    for (shape, retract) in [("inserts", false), ("with retractions", true)] {
        let best = |f: &Run<'_>| (0..REPEATS).map(|_| f()).min_by_key(|(d, _)| *d).unwrap();
        let ours = best(&|| run_executor(&rt, n, retract));
        let rate = |d: Duration| n as f64 / d.as_secs_f64();
        let baselines: [(&str, &Run<'_>); 2] = [
            ("HashMap<group key, AggState per call>", &|| {
                run_generic(n, retract)
            }),
            ("HashMap<i64, (count, sum)> (specialised)", &|| {
                run_specialised(n, retract)
            }),
        ];
        for (name, f) in baselines {
            let base = best(f);
            assert!(ours.1 > 0 && base.1 > 0);
            let (a, b) = (rate(ours.0), rate(base.0));
            let ratio = report.add(Figure {
                name: format!("hash agg, {shape}, vs {name}"),
                unit: "rows/s".into(),
                value: a,
                baseline: name.into(),
                baseline_value: b,
            });
            println!("{shape:>18}: {a:>10.0} rows/s vs {b:>11.0} rows/s of {name}: {ratio:.3}x");
        }
    }
    report.finish();
}
