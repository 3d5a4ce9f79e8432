//! The hash join's throughput: rows per second (wall clock) through `HashJoinExecutor` (inner join; both
//! sides' rows tables written through `StateTable` with their key and value encodings, the join-key cache,
//! a checkpoint barrier every 10 chunks committing both tables, synced and committed to the node's storage), beside a plain `HashMap` join of the same
//! rows in the same run (each side a `HashMap` from key to rows; each row matched against the other side,
//! the joined rows built, then stored or removed). A tenth of the rows are deleted again. Both keep their
//! output chunks; after the timing, every run's output is checked to be the plain join's, row for row (as
//! multisets: the two emit a key's matches in different orders).
//!
//! `cargo bench -p epochlab-stream --bench join`; `EPOCHLAB_BENCH_ROWS=N` sets the rows per side (default
//! 100000).

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use epochlab_barrier::{Barrier, BarrierKind};
use epochlab_bench::{Figure, Report};
use epochlab_common::plan::{JoinType, join_side_tables};
use epochlab_common::{
    ActorId, Bitmap, DataType, Epoch, EpochPair, Op, OwnedRow, StreamChunk, TableId, VnodeCount,
    WorkerId, row,
};
use epochlab_state_table::{StateTable, StateTableOptions};
use epochlab_storage::{CommittedStore, HummockManager, NodeStorage, OpConsistencyLevel};
use epochlab_stream::executor::{
    BoxedMessageStream, Execute, ExecutorStatsHandle, ExprErrorCounts, ExprExecutor, HashJoinArgs,
    HashJoinExecutor, Message, NonStrict,
};
use futures::StreamExt;

const CHUNK: usize = 1000;
const CHUNKS_PER_BARRIER: usize = 10;
const VNODES: u32 = 256;

/// Side `side`'s row `i`: `(k, id, payload)`, joined on `k`; two rows of each side per key.
fn make_row(side: i64, i: i64) -> OwnedRow {
    row![i / 2, side * 10_000_000 + i, "some payload text"]
}

fn types() -> Vec<DataType> {
    vec![DataType::Int64, DataType::Int64, DataType::Varchar]
}

/// The changes of one side, in chunks: inserts of rows `0..n`, then deletes of every tenth row.
fn side_chunks(side: i64, n: usize) -> Vec<Vec<(Op, OwnedRow)>> {
    let inserts = (0..n as i64).map(|i| (Op::Insert, make_row(side, i)));
    let deletes = (0..n as i64)
        .step_by(10)
        .map(|i| (Op::Delete, make_row(side, i)));
    let all: Vec<_> = inserts.chain(deletes).collect();
    all.chunks(CHUNK).map(<[_]>::to_vec).collect()
}

fn barrier(curr: u64) -> Message {
    Message::Barrier(Barrier::new(
        EpochPair::new(Epoch::test(curr), Epoch::test(curr - 1)),
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

/// Each side's messages: its chunks, a barrier on both sides every `CHUNKS_PER_BARRIER` chunks.
fn scripts(left: &[Vec<(Op, OwnedRow)>], right: &[Vec<(Op, OwnedRow)>]) -> [Vec<Message>; 2] {
    let mut out = [vec![barrier(1)], vec![barrier(1)]];
    let mut epoch = 1;
    for (i, (l, r)) in left.iter().zip(right).enumerate() {
        out[0].push(Message::Chunk(StreamChunk::from_pairs(l.clone())));
        out[1].push(Message::Chunk(StreamChunk::from_pairs(r.clone())));
        if (i + 1) % CHUNKS_PER_BARRIER == 0 || i + 1 == left.len() {
            epoch += 1;
            out[0].push(barrier(epoch));
            out[1].push(barrier(epoch));
        }
    }
    out
}

/// A node whose barriers are checkpoints: what each commits is synced and committed, as meta would.
struct Checkpoints {
    mgr: HummockManager,
    node: NodeStorage,
}

impl Checkpoints {
    fn new() -> Self {
        let committed = CommittedStore::default();
        let mgr = HummockManager::new(committed.clone(), None);
        mgr.register_tables(&[TableId(1), TableId(2)]);
        mgr.set_context(WorkerId(1), 1);
        let node = NodeStorage::new(WorkerId(1), committed, mgr.current_version(), 1);
        Self { mgr, node }
    }

    /// Seal, sync and commit `epoch`, and deliver the new version to the node.
    async fn checkpoint(&self, epoch: Epoch) {
        self.node.seal_epoch(epoch).unwrap();
        let sync = self.node.sync(epoch).await.unwrap();
        let outcome = self.mgr.commit_epoch(epoch, vec![sync]).unwrap();
        self.node.apply_version_delta(&outcome.delta).unwrap();
    }
}

fn executor(
    node: &NodeStorage,
    scripts: [Vec<Message>; 2],
    level: OpConsistencyLevel,
) -> HashJoinExecutor {
    let count = VnodeCount::new(VNODES).unwrap();
    let vnodes = Arc::new(Bitmap::ones(VNODES as usize));
    let options = StateTableOptions {
        op_consistency_level: level,
        ..Default::default()
    };
    let open = |id: u32| {
        let (t, _) = join_side_tables(&types(), &[0], &[1], false, count);
        let mut t = (*t).clone();
        t.table_id = TableId(id);
        StateTable::with_options(Arc::new(t), node, vnodes.clone(), options)
    };
    let [left, right] = scripts;
    let args = HashJoinArgs {
        actor_id: ActorId(1),
        join_type: JoinType::Inner,
        left: Box::new(Script(left)),
        right: Box::new(Script(right)),
        left_key: vec![0],
        right_key: vec![0],
        null_safe: vec![false],
        condition: None,
        left_table: open(1),
        right_table: open(2),
        left_degree_table: None,
        right_degree_table: None,
        output_indices: (0..6).collect(),
        cache_capacity: 1 << 20,
        eval: NonStrict {
            actor_id: ActorId(1),
            executor: ExprExecutor::HashJoin,
            counts: ExprErrorCounts::default(),
        },
        stats: ExecutorStatsHandle::detached(),
        row_delete: Default::default(),
    };
    HashJoinExecutor::new(args).unwrap()
}

/// Wall time of the executor over the scripts, each barrier checkpointed, and the chunks it emitted.
fn through_executor(
    scripts: [Vec<Message>; 2],
    level: OpConsistencyLevel,
) -> (Duration, Vec<StreamChunk>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let cp = Checkpoints::new();
    let exec = Box::new(executor(&cp.node, scripts, level));
    rt.block_on(async move {
        let start = Instant::now();
        let mut out = Vec::new();
        let mut s = exec.execute();
        let mut first = true;
        while let Some(m) = s.next().await {
            match m.unwrap() {
                Message::Chunk(c) => out.push(c),
                Message::Barrier(b) if !first => cp.checkpoint(b.epoch.prev).await,
                Message::Barrier(_) => first = false,
                Message::Watermark(_) => {}
            }
        }
        (start.elapsed(), out)
    })
}

/// One side of the plain join: key → rows.
type Side = HashMap<OwnedRow, Vec<OwnedRow>>;

/// One row into the plain join: match against `other`, emit joined rows, store in (or remove from) `own`.
fn plain_row(
    op: Op,
    r: &OwnedRow,
    own: &mut Side,
    other: &Side,
    left: bool,
    out: &mut Vec<(Op, OwnedRow)>,
) {
    let key = r.project(&[0]);
    if let Some(matches) = other.get(&key) {
        for m in matches {
            let joined = if left { r.chain(m) } else { m.chain(r) };
            out.push((op, joined));
        }
    }
    let rows = own.entry(key).or_default();
    if op.is_insert() {
        rows.push(r.clone());
    } else if let Some(p) = rows.iter().position(|x| x == r) {
        rows.swap_remove(p);
    }
}

/// The same chunks through a plain `HashMap` join, in the same order as the executor takes them.
fn plain_join(
    left: &[Vec<(Op, OwnedRow)>],
    right: &[Vec<(Op, OwnedRow)>],
) -> (Duration, Vec<StreamChunk>) {
    let start = Instant::now();
    let (mut l, mut r): (Side, Side) = (HashMap::new(), HashMap::new());
    let mut chunks = Vec::new();
    for (lc, rc) in left.iter().zip(right) {
        for (chunk, is_left) in [(lc, true), (rc, false)] {
            let chunk = StreamChunk::from_pairs(chunk.clone());
            let mut out = Vec::new();
            for (op, row) in chunk.rows() {
                if is_left {
                    plain_row(op, row, &mut l, &r, true, &mut out);
                } else {
                    plain_row(op, row, &mut r, &l, false, &mut out);
                }
            }
            if !out.is_empty() {
                chunks.push(black_box(StreamChunk::from_pairs(out)));
            }
        }
    }
    // The executor frees its cache when its input ends, inside its last poll; the plain join frees its maps
    // inside its clock too, so both sides are timed over the same work, teardown included.
    drop(black_box((l, r)));
    (start.elapsed(), chunks)
}

/// Each output row (with its op) and how many times it was emitted.
fn multiset(chunks: &[StreamChunk]) -> HashMap<(Op, &OwnedRow), usize> {
    let mut m = HashMap::new();
    for (op, row) in chunks.iter().flat_map(StreamChunk::rows) {
        *m.entry((op, row)).or_insert(0) += 1;
    }
    m
}

/// The fastest of `runs` runs of `f`, after checking that each emitted exactly `expected`'s rows.
fn best_of(
    runs: usize,
    expected: &HashMap<(Op, &OwnedRow), usize>,
    what: &str,
    mut f: impl FnMut() -> (Duration, Vec<StreamChunk>),
) -> Duration {
    (0..runs)
        .map(|_| {
            let (d, out) = f();
            assert!(
                multiset(&out) == *expected,
                "{what} emits the plain join's rows"
            );
            d
        })
        .min()
        .expect("at least one run")
}

fn main() {
    let n: usize = std::env::var("EPOCHLAB_BENCH_ROWS")
        .ok()
        .map(|v| v.parse().expect("EPOCHLAB_BENCH_ROWS must be a number"))
        .unwrap_or(100_000);
    let (left, right) = (side_chunks(0, n), side_chunks(1, n));
    let input_rows: usize = left.iter().chain(&right).map(Vec::len).sum();
    let (first_plain, reference) = plain_join(&left, &right);
    let expected = multiset(&reference);
    let out_plain: usize = reference.iter().map(StreamChunk::cardinality).sum();
    let executor = |level| {
        best_of(3, &expected, "the executor", || {
            through_executor(scripts(&left, &right), level)
        })
    };
    let blind = executor(OpConsistencyLevel::Inconsistent);
    let checked = executor(OpConsistencyLevel::ConsistentOldValue);
    let plain = best_of(2, &expected, "the plain join", || plain_join(&left, &right));
    let plain = plain.min(first_plain);
    let rate = |d: Duration| input_rows as f64 / d.as_secs_f64();
    println!(
        "hash join throughput, {input_rows} input rows, {out_plain} output rows (best of 3, wall clock)"
    );
    println!(
        "  HashJoinExecutor (blind writes):        {:>12.0} rows/s",
        rate(blind)
    );
    println!(
        "  HashJoinExecutor (checked writes):      {:>12.0} rows/s",
        rate(checked)
    );
    println!(
        "  plain HashMap join:                     {:>12.0} rows/s",
        rate(plain)
    );
    let mut report = Report::new("join");
    for (name, d) in [
        ("hash join, blind writes", blind),
        ("hash join, checked writes", checked),
    ] {
        let ratio = report.add(Figure {
            name: name.into(),
            unit: "rows/s".into(),
            value: rate(d),
            baseline: "plain HashMap join of the same rows".into(),
            baseline_value: rate(plain),
        });
        println!("  ratio ({name} / plain): {ratio:>12.3}");
    }
    report.finish();
}
