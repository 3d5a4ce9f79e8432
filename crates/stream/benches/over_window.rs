//! Over window throughput: rows per second (wall clock) through `OverWindowExecutor` (its state table, the
//! memcomparable keys, the partition cache, the diff against each row's earlier values and a checkpoint
//! barrier every 10 chunks included) computing `row_number()`, a running `sum(v)` and `lag(v)` per
//! partition, beside a sorted `Vec` per partition doing the same work with none of that: each chunk's rows
//! placed by binary search, each touched partition's three frames recomputed over the whole partition and
//! compared with the values before the chunk. That ratio is the target (≥ 0.2). Both count the records they
//! would emit (an update as two), and must count the same. Two shapes: inserts only, and a stream in which
//! every fourth row deletes an earlier one. The order key is scattered, so a row lands inside its
//! partition and the rows after it change.
//!
//! `cargo xtask bench -p epochlab-stream --bench over_window`; `EPOCHLAB_BENCH_ROWS=N` sets the row count.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use epochlab_barrier::{Barrier, BarrierKind};
use epochlab_bench::{Figure, Report};
use epochlab_common::expr_node::{Frame, FrameBound, WindowFuncCall, WindowFuncKind};
use epochlab_common::plan::top_n_table;
use epochlab_common::{
    ActorId, AggKind, Bitmap, DataType, Datum, Epoch, EpochPair, Op, OrderType, OwnedRow,
    ScalarImpl, StreamChunk, VnodeCount, WorkerId, row,
};
use epochlab_expr::window::eval_partition;
use epochlab_state_table::StateTable;
use epochlab_storage::{CommittedStore, NodeStorage};
use epochlab_stream::executor::over_window::{OverWindowArgs, OverWindowExecutor};
use epochlab_stream::executor::{BoxedMessageStream, Execute, Message};
use futures::StreamExt;

const CHUNK: usize = 1000;
const PARTITIONS: i64 = 100;
const CHUNKS_PER_BARRIER: usize = 10;
const REPEATS: usize = 3;

/// One measured run: its wall time and how many records it emitted.
type Run<'a> = dyn Fn() -> (Duration, usize) + 'a;

/// Row `i` of the stream: an insert of row `i`, or (every fourth row, when `retract`) a delete of row `i - 3`.
fn change(i: i64, retract: bool) -> (Op, i64) {
    if retract && i % 4 == 3 {
        (Op::Delete, i - 3)
    } else {
        (Op::Insert, i)
    }
}

/// The input `(p, o, v, id)`: partition `p`, a scattered order key `o`, the value `v`, stream key `id`.
fn source_row(id: i64) -> OwnedRow {
    row![id % PARTITIONS, id * 7919 % 100_000, id % 1000, id]
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

/// The stream's chunks of changes.
fn chunks(n: usize, retract: bool) -> Vec<Vec<(Op, OwnedRow)>> {
    (0..n)
        .step_by(CHUNK)
        .map(|start| {
            (start..(start + CHUNK).min(n))
                .map(|i| {
                    let (op, id) = change(i as i64, retract);
                    (op, source_row(id))
                })
                .collect()
        })
        .collect()
}

fn messages(chunks: Vec<Vec<(Op, OwnedRow)>>) -> Vec<Message> {
    let mut out = vec![barrier(1)];
    let mut epoch = 1;
    for (c, pairs) in chunks.into_iter().enumerate() {
        out.push(Message::Chunk(StreamChunk::from_pairs(pairs)));
        if (c + 1) % CHUNKS_PER_BARRIER == 0 {
            epoch += 1;
            out.push(barrier(epoch));
        }
    }
    out.push(barrier(epoch + 1));
    out
}

/// `row_number()`, `sum(v)` from the partition's first row to the current one, `lag(v)`.
fn calls() -> Vec<WindowFuncCall> {
    let running = Frame::rows(FrameBound::UnboundedPreceding, FrameBound::CurrentRow);
    let call = |kind, args: Vec<usize>, ret, frame| WindowFuncCall {
        kind,
        arg_types: args.iter().map(|_| DataType::Int64).collect(),
        args,
        ret,
        frame,
        offset: 1,
    };
    vec![
        call(WindowFuncKind::RowNumber, vec![], DataType::Int64, None),
        call(
            WindowFuncKind::Aggregate(AggKind::Sum),
            vec![2],
            DataType::Decimal,
            Some(running),
        ),
        call(WindowFuncKind::Lag, vec![2], DataType::Int64, None),
    ]
}

fn executor(input: Vec<Message>) -> OverWindowExecutor {
    let calls = calls();
    let mut types = vec![DataType::Int64; 4];
    types.extend(calls.iter().map(|c| c.ret.clone()));
    let order_by = vec![(1, OrderType::ascending())];
    let vnodes = VnodeCount::new(256).unwrap();
    let desc = top_n_table(&types, &[0], &order_by, &[3], vnodes);
    let storage = NodeStorage::new(
        WorkerId(1),
        CommittedStore::default(),
        Default::default(),
        1,
    );
    let args = OverWindowArgs {
        actor_id: ActorId(1),
        input: Box::new(Script(input)),
        calls,
        partition_by: vec![0],
        order_by,
        stream_key: vec![3],
        state_table: StateTable::new(desc, &storage, Arc::new(Bitmap::ones(256))),
        state_writes: Default::default(),
    };
    OverWindowExecutor::new(args).unwrap()
}

/// Wall time to drive the executor over the stream; the records it emitted.
fn run_executor(rt: &tokio::runtime::Runtime, n: usize, retract: bool) -> (Duration, usize) {
    let exec = Box::new(executor(messages(chunks(n, retract))));
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

/// A partition of the generic baseline: its rows sorted by `(o, id)`, and each row's window values by `id`.
#[derive(Default)]
struct SortedPartition {
    rows: Vec<OwnedRow>,
    values: HashMap<i64, Vec<Datum>>,
}

fn int(r: &OwnedRow, i: usize) -> i64 {
    match r.datum_at(i) {
        Some(ScalarImpl::Int64(v)) => *v,
        _ => 0,
    }
}

/// The same chunks into a sorted `Vec<OwnedRow>` per partition (placed by binary search), each touched
/// partition's frames recomputed whole by the executor's own functions (`window::eval_partition`) and
/// compared with its values before the chunk: everything the executor does but its state table, its
/// memcomparable keys and its cache.
fn run_sorted_rows(n: usize, retract: bool) -> (Duration, usize) {
    let chunks = chunks(n, retract);
    let calls = calls();
    let order_by = [(1, OrderType::ascending())];
    let start = Instant::now();
    let mut parts: HashMap<i64, SortedPartition> = HashMap::new();
    let mut out = 0;
    for chunk in &chunks {
        let mut touched: Vec<i64> = Vec::new();
        for (op, r) in chunk {
            let p = int(r, 0);
            if !touched.contains(&p) {
                touched.push(p);
            }
            let part = parts.entry(p).or_default();
            let place = (int(r, 1), int(r, 3));
            match (
                op,
                part.rows
                    .binary_search_by_key(&place, |s| (int(s, 1), int(s, 3))),
            ) {
                (Op::Insert, Err(i)) => part.rows.insert(i, r.clone()),
                (Op::Delete, Ok(i)) => {
                    part.rows.remove(i);
                }
                _ => unreachable!("the stream inserts new rows and deletes present ones"),
            }
        }
        for p in touched {
            let part = parts.get_mut(&p).expect("touched");
            let mut columns = Vec::with_capacity(calls.len());
            for call in &calls {
                columns.push(eval_partition(call, &order_by, &part.rows).unwrap());
            }
            let mut old = std::mem::take(&mut part.values);
            for (i, r) in part.rows.iter().enumerate() {
                let values: Vec<Datum> = columns.iter().map(|c| c[i].clone()).collect();
                match old.remove(&int(r, 3)) {
                    Some(before) if before == values => {}
                    Some(_) => out += 2,
                    None => out += 1,
                }
                part.values.insert(int(r, 3), values);
            }
            out += old.len();
        }
    }
    black_box(&parts);
    (start.elapsed(), out)
}

/// A row's window values in the specialised baseline: row number, running sum, lag.
type Values = (i64, i64, Option<i64>);

/// A partition row of the specialised baseline: its place `(o, id)`, `v`, and its window values.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Slot {
    place: (i64, i64),
    v: i64,
    values: Values,
}

/// The three frames over a sorted partition.
fn recompute(part: &mut [Slot]) {
    let (mut sum, mut prev) = (0, None);
    for (i, s) in part.iter_mut().enumerate() {
        sum += s.v;
        s.values = (i as i64 + 1, sum, prev);
        prev = Some(s.v);
    }
}

/// The same chunks into a sorted `Vec` of raw integers per partition, each touched partition's three
/// frames recomputed by hand and compared with its values before the chunk: the ceiling of any
/// row-generic engine.
fn run_specialised(n: usize, retract: bool) -> (Duration, usize) {
    let chunks = chunks(n, retract);
    let start = Instant::now();
    let mut parts: HashMap<i64, Vec<Slot>> = HashMap::new();
    let mut out = 0;
    for chunk in &chunks {
        let mut before: HashMap<i64, HashMap<i64, Values>> = HashMap::new();
        for (op, r) in chunk {
            let part = parts.entry(int(r, 0)).or_default();
            before.entry(int(r, 0)).or_insert_with(|| {
                part.iter()
                    .map(|s| (s.place.1, s.values))
                    .collect::<HashMap<_, _>>()
            });
            let place = (int(r, 1), int(r, 3));
            let at = part.binary_search_by_key(&place, |s| s.place);
            match (op, at) {
                (Op::Insert, Err(i)) => part.insert(
                    i,
                    Slot {
                        place,
                        v: int(r, 2),
                        values: (0, 0, None),
                    },
                ),
                (Op::Delete, Ok(i)) => {
                    part.remove(i);
                }
                _ => unreachable!("the stream inserts new rows and deletes present ones"),
            }
        }
        for (p, mut old) in before {
            let part = parts.get_mut(&p).expect("touched");
            recompute(part);
            for s in part.iter() {
                match old.remove(&s.place.1) {
                    Some(values) if values == s.values => {}
                    Some(_) => out += 2,
                    None => out += 1,
                }
            }
            out += old.len();
        }
    }
    black_box(&parts);
    (start.elapsed(), out)
}

fn main() {
    let n: usize = std::env::var("EPOCHLAB_BENCH_ROWS")
        .map(|v| v.parse().expect("EPOCHLAB_BENCH_ROWS must be a number"))
        .unwrap_or(50_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut report = Report::new("over-window");
    println!(
        "over window vs a sorted Vec per partition ({n} rows, {PARTITIONS} partitions, best of {REPEATS})"
    );
    for (shape, retract) in [("inserts", false), ("with deletes", true)] {
        let best = |f: &Run<'_>| (0..REPEATS).map(|_| f()).min_by_key(|(d, _)| *d).unwrap();
        let ours = best(&|| run_executor(&rt, n, retract));
        let rate = |d: Duration| n as f64 / d.as_secs_f64();
        let baselines: [(&str, &Run<'_>); 2] = [
            (
                "a sorted Vec<OwnedRow> per partition, frames by eval_partition",
                &|| run_sorted_rows(n, retract),
            ),
            (
                "a sorted Vec of integers per partition (specialised)",
                &|| run_specialised(n, retract),
            ),
        ];
        for (name, f) in baselines {
            let base = best(f);
            assert_eq!(ours.1, base.1, "{name}: both emit the same records");
            let (a, b) = (rate(ours.0), rate(base.0));
            let ratio = report.add(Figure {
                name: format!("over window, {shape}, vs {name}"),
                unit: "rows/s".into(),
                value: a,
                baseline: name.into(),
                baseline_value: b,
            });
            println!("{shape:>14}: {a:>9.0} rows/s vs {b:>10.0} rows/s of {name}: {ratio:.3}x");
        }
    }
    report.finish();
}
