use std::sync::Arc;

use epochlab_barrier::Barrier;
use epochlab_common::source::DatagenSpec;
use epochlab_common::{
    ActorId, Bitmap, Clock, DataType, ExprNode, Op, OwnedRow, ScalarImpl, StreamChunk, VirtualNode,
};
use epochlab_expr::EvalContext;
use epochlab_state_table::StateTable;
use futures::StreamExt;
use futures_async_stream::try_stream;
use tokio::sync::mpsc;

use super::non_strict::NonStrict;
use super::{BoxedMessageStream, Execute, Message, StreamExecutorError, StreamExecutorResult};

/// Rows per chunk a source emits at most (RisingWave's datagen `MAX_ROWS_PER_YIELD`).
pub const SOURCE_CHUNK_SIZE: usize = 1024;

/// A split the actor owns: where it is, and how many rows it made since the actor started.
#[derive(Debug)]
struct SplitState {
    split: u32,
    /// The offset of the next row, as committed with the rows before it (`stored`) or since moved on.
    next: u64,
    /// The next offset as the state table holds it in this epoch (`None`: no row yet).
    stored: Option<u64>,
    made_since_start: u64,
    done: bool,
}

/// What a [`SourceExecutor`] runs: its connector and the columns the job computes over its rows.
pub struct SourceArgs {
    pub actor_id: ActorId,
    pub barrier_rx: mpsc::Receiver<Barrier>,
    pub state_table: StateTable,
    pub datagen: DatagenSpec,
    pub generated: Vec<(usize, ExprNode)>,
    pub column_types: Vec<DataType>,
    pub clock: Clock,
    pub eval: NonStrict,
}

/// A datagen source (RisingWave's `SourceExecutor` with a datagen split reader): a barrier source that
/// owns the splits whose index hashes to one of its vnodes. After each barrier, unless paused, each owned
/// split makes the rows it is due by the actor's time (its share of the rows a second, the first second's
/// at once) until it ends; the rows have their generated columns computed (`proctime()` is the barrier's
/// time) and a NULL row id. Each split's next offset is written to the state table in the epoch of its rows,
/// so a rebuilt actor resumes after the rows that were committed and makes again the ones that were not.
pub struct SourceExecutor {
    args: SourceArgs,
    splits: Vec<SplitState>,
    started_us: u64,
}

impl SourceExecutor {
    pub fn new(args: SourceArgs) -> Self {
        let desc = args.state_table.desc();
        assert_eq!(
            desc.pk_indices,
            vec![0],
            "a source's state table is keyed by its split"
        );
        Self {
            started_us: args.clock.elapsed_us(),
            args,
            splits: Vec::new(),
        }
    }

    fn split_key(split: u32) -> OwnedRow {
        OwnedRow::new(vec![Some(ScalarImpl::Int32(split as i32))])
    }

    /// The splits `vnodes` own, each at its committed offset (0 for a split never read).
    fn load_splits(&self, vnodes: &Bitmap) -> StreamExecutorResult<Vec<SplitState>> {
        let desc = self.args.state_table.desc();
        let (dist, count) = (desc.dist_key_indices(), desc.vnode_count);
        let mut out = Vec::new();
        for split in 0..self.args.datagen.split_num {
            let key = Self::split_key(split);
            if !vnodes.is_set(VirtualNode::compute_row(&key, &dist, count).to_index()) {
                continue;
            }
            let stored = match self.args.state_table.get_row(&key)? {
                Some(row) => match row.datum_at(1) {
                    Some(ScalarImpl::Int64(n)) => Some(*n as u64),
                    other => panic!("split {split}'s offset is an int64, not {other:?}"),
                },
                None => None,
            };
            out.push(SplitState {
                split,
                next: stored.unwrap_or(0),
                stored,
                made_since_start: 0,
                done: false,
            });
        }
        Ok(out)
    }

    /// The rows each owned split is due after `barrier`, its new offset written to the state table.
    fn make_rows(&mut self, barrier: &Barrier) -> StreamExecutorResult<Vec<OwnedRow>> {
        let seconds = self.args.clock.elapsed_us().saturating_sub(self.started_us) / 1_000_000;
        let now_us = barrier.epoch.curr.as_unix_millis() as i64 * 1000;
        let ctx = EvalContext {
            now_usecs: Some(now_us),
        };
        let mut rows = Vec::new();
        for s in self.splits.iter_mut().filter(|s| !s.done) {
            let allowed = self.args.datagen.split_rows_per_second(s.split) * (seconds + 1);
            while s.made_since_start < allowed {
                let Some(datums) = self.args.datagen.row(s.split, s.next) else {
                    s.done = true;
                    break;
                };
                rows.push(compute_generated(&self.args, datums, &ctx));
                s.next += 1;
                s.made_since_start += 1;
            }
            let new = OwnedRow::new(vec![
                Some(ScalarImpl::Int32(s.split as i32)),
                Some(ScalarImpl::Int64(s.next as i64)),
            ]);
            match s.stored {
                Some(old) if old == s.next => {}
                Some(old) => {
                    let old = Some(ScalarImpl::Int64(old as i64));
                    let old = OwnedRow::new(vec![new.datum_at(0).clone(), old]);
                    self.args.state_table.update(&old, &new)?;
                }
                None => self.args.state_table.insert(&new)?,
            }
            s.stored = Some(s.next);
        }
        Ok(rows)
    }

    fn chunks(&self, rows: Vec<OwnedRow>) -> Vec<StreamChunk> {
        debug_assert!(rows.iter().all(|r| r.len() == self.args.column_types.len()));
        rows.chunks(SOURCE_CHUNK_SIZE)
            .map(|c| StreamChunk::from_pairs(c.iter().map(|r| (Op::Insert, r.clone()))))
            .collect()
    }

    /// Take a new vnode bitmap (scaling): the splits it owns, those the actor kept as they were.
    fn update_vnodes(&mut self, vnodes: Arc<Bitmap>) -> StreamExecutorResult<()> {
        self.args.state_table.update_vnode_bitmap(vnodes.clone())?;
        let mut kept = std::mem::take(&mut self.splits);
        let mut splits = self.load_splits(&vnodes)?;
        for s in splits.iter_mut() {
            if let Some(i) = kept.iter().position(|k| k.split == s.split) {
                *s = kept.swap_remove(i);
            }
        }
        self.splits = splits;
        Ok(())
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let actor = self.args.actor_id;
        let closed = || StreamExecutorError::ChannelClosed(format!("barriers of actor {actor}"));
        let mut barrier = self.args.barrier_rx.recv().await.ok_or_else(closed)?;
        self.args.state_table.init_epoch(barrier.epoch);
        let vnodes: Arc<Bitmap> = self.args.state_table.vnodes().clone();
        self.splits = self.load_splits(&vnodes)?;
        let mut paused = barrier.is_pause_on_startup();
        loop {
            // The barrier's epoch is the state table's: what follows the barrier is written in it.
            if let Some(vnodes) = barrier.as_update_vnode_bitmap(actor) {
                self.update_vnodes(vnodes)?;
            }
            let stop = barrier.is_stop(actor);
            let rows = match paused || stop {
                true => Vec::new(),
                false => self.make_rows(&barrier)?,
            };
            yield Message::Barrier(barrier);
            if stop {
                break;
            }
            for chunk in self.chunks(rows) {
                yield Message::Chunk(chunk);
            }
            barrier = self.args.barrier_rx.recv().await.ok_or_else(closed)?;
            self.args.state_table.commit(barrier.epoch)?;
            if barrier.is_pause() {
                paused = true;
            } else if barrier.is_resume() {
                paused = false;
            }
        }
    }
}

/// A made row with its generated columns computed over the connector's columns.
fn compute_generated(
    args: &SourceArgs,
    datums: Vec<epochlab_common::Datum>,
    ctx: &EvalContext,
) -> OwnedRow {
    let made = OwnedRow::new(datums);
    if args.generated.is_empty() {
        return made;
    }
    let mut datums = made.datums().to_vec();
    for (at, e) in &args.generated {
        datums[*at] = args.eval.eval_with(e, &made, ctx);
    }
    OwnedRow::new(datums)
}

impl Execute for SourceExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!("Source(actor {}, datagen)", self.args.actor_id)
    }
}
