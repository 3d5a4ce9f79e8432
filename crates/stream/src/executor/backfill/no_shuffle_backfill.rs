//! No-shuffle backfill (RisingWave's `BackfillExecutor`, `no_shuffle_backfill.rs`): the backfill of a job whose
//! upstream has the job's own distribution. Each backfill actor has exactly one upstream actor, with the same
//! vnodes, behind a `NoShuffle` dispatcher; it reads the snapshot of those vnodes in pk order (one merged scan,
//! not one per vnode) and keeps ONE position for all of them. Between two barriers it buffers the upstream's
//! chunks; at the barrier it forwards the part of them at or before the position, and persists the position.
//!
//! Its progress table has RisingWave's layout, `| vnode | pk ... | backfill_finished | row_count |`, with the
//! same row written for every vnode the actor owns. On startup the actor recovers its state from the row of
//! its first vnode and asserts that every other vnode's row says the same `backfill_finished` (RisingWave PR
//! #12767): the states can differ only if the vnodes of several actors were merged into one, a scale-in, which
//! RisingWave did not support for a backfilling no-shuffle job. RisingWave's `assert_eq!` panicked the actor
//! (`assertion `left == right` failed`, the comment above it reading `All vnode partitions should have same
//! state (no scale-in supported)`, RisingWave #19138); here the assertion is the typed
//! [`StreamExecutorError::BackfillStatesDiffer`], so the run fails with that symptom rather than the process.
//!
//! One difference from RisingWave: RisingWave's scheduler places the backfill beside its upstream actor and
//! reads the upstream's uncommitted data from the shared store; epochlab's local stores see only their own
//! uncommitted writes, so the snapshot is read, as arrangement backfill's is, through a replicated copy of the
//! upstream table over the same vnodes, into which the buffered upstream chunks are written at each barrier.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::atomic::Ordering;

use epochlab_barrier::{Barrier, CreateMviewProgress};
use epochlab_common::{
    Bitmap, EpochPair, Op, OrderType, OwnedRow, StreamChunk, VirtualNode, event, memcmp,
};
use epochlab_state_table::{StateTable, StateTableResult};
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::arrangement_backfill::{BackfillArgs, SnapshotBatch};
use super::snapshot::{Next, SnapshotSource, next_event};
use super::state::BackfillProgressPerVnode;
use crate::executor::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, StreamExecutorResult,
    expect_first_barrier,
};

type RowIter = std::iter::Peekable<Box<dyn Iterator<Item = StateTableResult<OwnedRow>> + Send>>;

/// The actor's backfill state (RisingWave's `BackfillState` of the no-shuffle backfill): one position for all
/// its vnodes, whether the snapshot is done, the snapshot rows read, and the row last written (per vnode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoShuffleBackfillState {
    pub current_pos: Option<OwnedRow>,
    pub is_finished: bool,
    pub row_count: u64,
    /// What the last persist wrote (`None`: no row yet), as the progress of every vnode.
    committed: BackfillProgressPerVnode,
}

impl NoShuffleBackfillState {
    /// RisingWave's `recover_backfill_state`: the state of the first vnode of `state_table`, after checking
    /// that every other vnode's row says the same `backfill_finished`. A vnode without a row is not finished.
    pub fn recover(state_table: &StateTable, pk_len: usize) -> StreamExecutorResult<Self> {
        let mut vnodes = state_table
            .vnodes()
            .iter_ones()
            .map(VirtualNode::from_index);
        let first = vnodes.next().ok_or_else(|| {
            StreamExecutorError::Internal("a backfill actor without vnodes".into())
        })?;
        let expected = Self::read(state_table, first, pk_len)?;
        for vnode in vnodes {
            let state = Self::read(state_table, vnode, pk_len)?;
            if state.is_finished != expected.is_finished {
                return Err(StreamExecutorError::BackfillStatesDiffer {
                    first_vnode: first.to_index() as u32,
                    vnode: vnode.to_index() as u32,
                    expected: expected.is_finished,
                    finished: state.is_finished,
                });
            }
        }
        Ok(expected)
    }

    /// The state one vnode's progress row holds.
    fn read(
        state_table: &StateTable,
        vnode: VirtualNode,
        pk_len: usize,
    ) -> StreamExecutorResult<Self> {
        let key = OwnedRow::new(vec![Some(vnode.to_scalar())]);
        let progress = match state_table.get_row(&key)? {
            Some(row) => BackfillProgressPerVnode::decode(&row, pk_len)?,
            None => BackfillProgressPerVnode::NotStarted,
        };
        Ok(Self {
            current_pos: progress.position().cloned(),
            is_finished: progress.is_completed(),
            row_count: progress.row_count(),
            committed: progress,
        })
    }

    /// The progress to persist now: in progress at the position, or completed.
    fn progress(&self) -> Option<BackfillProgressPerVnode> {
        match (&self.current_pos, self.is_finished) {
            (_, true) => Some(BackfillProgressPerVnode::Completed {
                current_pos: self.current_pos.clone(),
                snapshot_row_count: self.row_count,
            }),
            (Some(pos), false) => Some(BackfillProgressPerVnode::InProgress {
                current_pos: pos.clone(),
                snapshot_row_count: self.row_count,
            }),
            (None, false) => None,
        }
    }
}

/// The snapshot of the owned vnodes after a position, merged in pk order (RisingWave reads the storage table's
/// vnodes as one ordered scan).
struct MergedSnapshot {
    iters: Vec<RowIter>,
    pk_indices: Vec<usize>,
    pk_orders: Vec<OrderType>,
}

impl MergedSnapshot {
    fn new(
        table: &StateTable,
        after: Option<&OwnedRow>,
        vnodes: &Bitmap,
    ) -> StreamExecutorResult<Self> {
        let desc = table.desc();
        let start = after.map_or(Bound::Unbounded, |p| Bound::Excluded(p.clone()));
        let mut iters = Vec::new();
        for v in vnodes.iter_ones() {
            let it = table.iter_with_vnode(
                VirtualNode::from_index(v),
                (start.clone(), Bound::Unbounded),
            )?;
            let it: Box<dyn Iterator<Item = StateTableResult<OwnedRow>> + Send> = Box::new(it);
            iters.push(it.peekable());
        }
        Ok(Self {
            iters,
            pk_indices: desc.pk_indices.clone(),
            pk_orders: desc.pk_orders.clone(),
        })
    }

    /// The next row in pk order, or `None` at the end.
    fn next_row(&mut self) -> StreamExecutorResult<Option<OwnedRow>> {
        let mut best: Option<(usize, OwnedRow)> = None;
        for (i, it) in self.iters.iter_mut().enumerate() {
            let pk = match it.peek() {
                None => continue,
                Some(Err(_)) => return Err(it.next().expect("peeked").expect_err("peeked").into()),
                Some(Ok(row)) => row.project(&self.pk_indices),
            };
            let better = best.as_ref().is_none_or(|(_, b)| {
                memcmp::cmp_rows(&pk, b, &self.pk_orders) == std::cmp::Ordering::Less
            });
            if better {
                best = Some((i, pk));
            }
        }
        match best {
            None => Ok(None),
            Some((i, _)) => Ok(Some(self.iters[i].next().expect("peeked")?)),
        }
    }

    /// Up to `max` rows, or `None` at the end.
    fn next_batch(&mut self, max: usize) -> StreamExecutorResult<Option<Vec<OwnedRow>>> {
        let mut rows = Vec::new();
        while rows.len() < max {
            match self.next_row()? {
                Some(r) => rows.push(r),
                None => break,
            }
        }
        Ok((!rows.is_empty()).then_some(rows))
    }
}

impl SnapshotSource for MergedSnapshot {
    type Rows = Vec<OwnedRow>;

    fn next_rows(&mut self, max: usize) -> StreamExecutorResult<Option<Self::Rows>> {
        self.next_batch(max)
    }

    fn count(rows: &Self::Rows) -> usize {
        rows.len()
    }
}

/// RisingWave's `BackfillExecutor` (see the module doc).
pub struct NoShuffleBackfillExecutor {
    /// The one upstream actor's changes, through a `NoShuffle` dispatcher.
    upstream: BoxedExecutor,
    core: Core,
}

/// Everything but the upstream.
struct Core {
    args: BackfillArgs,
    pk_indices: Vec<usize>,
    pk_orders: Vec<OrderType>,
    batch: SnapshotBatch,
}

/// What the epoch loop ended with.
enum EpochEnd {
    /// A barrier.
    Barrier(Barrier),
    /// The snapshot ended before the barrier.
    SnapshotDone,
}

impl NoShuffleBackfillExecutor {
    pub fn new(upstream: BoxedExecutor, args: BackfillArgs) -> Self {
        let desc = args.upstream_table.desc().clone();
        Self {
            upstream,
            core: Core {
                pk_indices: desc.pk_indices.clone(),
                pk_orders: desc.pk_orders.clone(),
                batch: SnapshotBatch::of(&args),
                args,
            },
        }
    }
}

impl Core {
    /// A snapshot chunk: the position moves to its last row.
    fn snapshot_chunk(
        &self,
        state: &mut NoShuffleBackfillState,
        rows: Vec<OwnedRow>,
    ) -> StreamChunk {
        let chunk = StreamChunk::from_pairs(rows.into_iter().map(|r| (Op::Insert, r)));
        if let Some((_, last)) = chunk.rows().last() {
            state.current_pos = Some(last.project(&self.pk_indices));
        }
        let n = chunk.cardinality() as u64;
        state.row_count += n;
        self.args
            .stats
            .snapshot_rows
            .fetch_add(n, Ordering::Relaxed);
        chunk
    }

    /// RisingWave's `mark_chunk`: an upstream row is visible iff its pk is at or before the position.
    fn mark_chunk(&self, chunk: &StreamChunk, pos: &OwnedRow) -> StreamChunk {
        let vis: Vec<bool> = chunk
            .rows_with_holes()
            .map(|(i, _, row)| {
                chunk.visibility().is_set(i)
                    && memcmp::cmp_rows(&row.project(&self.pk_indices), pos, &self.pk_orders)
                        != std::cmp::Ordering::Greater
            })
            .collect();
        let marked = chunk.clone().with_visibility(Bitmap::from_bools(&vis));
        let shown = marked.cardinality() as u64;
        let stats = &self.args.stats;
        stats
            .upstream_rows_forwarded
            .fetch_add(shown, Ordering::Relaxed);
        stats
            .upstream_rows_hidden
            .fetch_add(chunk.cardinality() as u64 - shown, Ordering::Relaxed);
        marked
    }

    /// RisingWave's `persist_state`: the same progress row for every owned vnode (an update of the one written
    /// last, or an insert), then the commit. Nothing is written before the first position.
    fn persist_state(
        &mut self,
        epoch: EpochPair,
        state: &mut NoShuffleBackfillState,
    ) -> StreamExecutorResult<()> {
        let pk_len = self.pk_indices.len();
        if let Some(progress) = state.progress()
            && progress != state.committed
        {
            for v in self.args.vnodes.iter_ones() {
                let vnode = VirtualNode::from_index(v);
                let new = progress.encode(vnode, pk_len).expect("a position");
                match state.committed.encode(vnode, pk_len) {
                    Some(old) => self.args.state_table.update(&old, &new)?,
                    None => self.args.state_table.insert(&new)?,
                }
                self.args
                    .stats
                    .record_persisted(vnode, epoch.prev, state.is_finished);
            }
            event!(
                self.args.log,
                "persist backfill state",
                "actor={} table={} epoch={} no_shuffle vnodes={} state={progress}",
                self.args.actor_id,
                self.args.state_table.table_id(),
                epoch.prev,
                self.args.vnodes.count_ones()
            );
            state.committed = progress;
        }
        self.args.state_table.commit(epoch)?;
        Ok(())
    }

    async fn report_progress(&self, barrier: &Barrier, state: &NoShuffleBackfillState, done: bool) {
        self.args
            .barrier_manager
            .report_progress(
                barrier.epoch.curr,
                CreateMviewProgress {
                    backfill_actor_id: self.args.actor_id,
                    done,
                    consumed_epoch: barrier.epoch.prev,
                    consumed_rows: state.row_count,
                },
            )
            .await;
    }

    /// Startup at the first barrier: the progress, read at its epoch.
    fn recover_state(&mut self, first: &Barrier) -> StreamExecutorResult<NoShuffleBackfillState> {
        self.args.state_table.init_epoch(first.epoch);
        let state = NoShuffleBackfillState::recover(&self.args.state_table, self.pk_indices.len())?;
        event!(
            self.args.log,
            "backfill state recovered",
            "actor={} no_shuffle finished={} rows={} vnodes={}",
            self.args.actor_id,
            state.is_finished,
            state.row_count,
            self.args.vnodes.count_ones()
        );
        Ok(state)
    }

    /// The snapshot of the actor's vnodes, merged in pk order, after the persisted position.
    fn snapshot_from(
        &self,
        state: &NoShuffleBackfillState,
    ) -> StreamExecutorResult<MergedSnapshot> {
        MergedSnapshot::new(
            &self.args.upstream_table,
            state.current_pos.as_ref(),
            &self.args.vnodes,
        )
    }

    /// The snapshot to read in this epoch: none while paused.
    fn epoch_snapshot(
        &self,
        state: &NoShuffleBackfillState,
        paused: bool,
    ) -> StreamExecutorResult<Option<MergedSnapshot>> {
        match paused {
            true => Ok(None),
            false => Ok(Some(self.snapshot_from(state)?)),
        }
    }

    /// The upstream ended before the backfill did.
    fn upstream_closed(&self) -> StreamExecutorError {
        StreamExecutorError::ChannelClosed(format!(
            "upstream of backfill actor {}",
            self.args.actor_id
        ))
    }

    /// A barrier's mutations for this actor: pause, resume, a new rate limit. An online reschedule cannot reach
    /// a no-shuffle job (meta refuses it).
    fn apply_mutation(&mut self, barrier: &Barrier, paused: &mut bool) -> StreamExecutorResult<()> {
        let actor = self.args.actor_id;
        if barrier.is_pause() {
            *paused = true;
        } else if barrier.is_resume() {
            *paused = false;
        }
        if let Some(limit) = barrier.as_throttle(actor) {
            self.batch.throttle(limit);
        }
        if barrier.as_update_vnode_bitmap(actor).is_some() {
            return Err(StreamExecutorError::Internal(format!(
                "no-shuffle backfill actor {actor} got new vnodes online"
            )));
        }
        Ok(())
    }
}

impl NoShuffleBackfillExecutor {
    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(self) {
        let Self {
            upstream,
            core: mut this,
        } = self;
        let mut upstream = upstream.execute();
        let first = expect_first_barrier(&mut upstream, "Backfill").await?;
        let mut paused = first.is_pause_on_startup();
        let mut state = this.recover_state(&first)?;
        let first_epoch = first.epoch;
        yield Message::Barrier(first);
        this.args.storage.wait_for_epoch(first_epoch.prev).await;
        this.args.upstream_table.init_epoch(first_epoch);

        let mut buffered: VecDeque<StreamChunk> = VecDeque::new();
        while !state.is_finished {
            let mut snapshot = this.epoch_snapshot(&state, paused)?;
            let mut read = 0u64;
            let end = loop {
                let clock = &this.args.clock;
                match next_event(&mut upstream, snapshot.as_mut(), &mut this.batch, clock).await {
                    Next::Upstream(None) => return Err(this.upstream_closed())?,
                    Next::Upstream(Some(msg)) => match msg? {
                        Message::Chunk(c) => buffered.push_back(c.compact()),
                        // RisingWave's backfill ignores the upstream's watermarks until it is done.
                        Message::Watermark(_) => {}
                        Message::Barrier(b) => break EpochEnd::Barrier(b),
                    },
                    Next::Snapshot(rows) => match rows? {
                        Some(rows) => {
                            read += rows.len() as u64;
                            yield Message::Chunk(this.snapshot_chunk(&mut state, rows));
                        }
                        None => break EpochEnd::SnapshotDone,
                    },
                }
            };
            let barrier = match end {
                EpochEnd::SnapshotDone => {
                    // Everything the upstream sent this epoch goes out as it is; the barrier finishes.
                    for chunk in buffered.drain(..) {
                        this.args.upstream_table.write_chunk(&chunk)?;
                        yield Message::Chunk(chunk);
                    }
                    this.args.stats.record_epoch(read);
                    break;
                }
                EpochEnd::Barrier(b) => b,
            };
            let (chunks, complete) =
                this.end_epoch(&mut state, &mut buffered, &mut read, paused)?;
            for chunk in chunks {
                yield Message::Chunk(chunk);
            }
            this.finish_epoch(&barrier, &mut state, read, &mut paused)
                .await?;
            yield Message::Barrier(barrier);
            if complete {
                break;
            }
        }
        #[for_await]
        for msg in forward_after_backfill(this, upstream, state, paused) {
            yield msg?;
        }
    }
}

/// Finished, or finishing: forward the upstream; at the next barrier persist the finished state (if it was
/// not already) and report done, then pass everything through.
#[try_stream(ok = Message, error = StreamExecutorError)]
async fn forward_after_backfill(
    mut this: Core,
    mut upstream: BoxedMessageStream,
    mut state: NoShuffleBackfillState,
    mut paused: bool,
) {
    let mut reported = false;
    while let Some(msg) = upstream.next().await {
        match msg? {
            Message::Chunk(c) => {
                if !reported {
                    this.args.upstream_table.write_chunk(&c)?;
                }
                yield Message::Chunk(c);
            }
            Message::Watermark(w) => yield Message::Watermark(w),
            Message::Barrier(b) => {
                super::commit_upstream(&mut this.args.upstream_table, &b)?;
                if reported {
                    this.args.state_table.commit(b.epoch)?;
                } else {
                    state.is_finished = true;
                    this.persist_state(b.epoch, &mut state)?;
                    this.report_progress(&b, &state, true).await;
                    this.args.stats.finished.store(true, Ordering::Relaxed);
                    reported = true;
                }
                this.apply_mutation(&b, &mut paused)?;
                yield Message::Barrier(b);
            }
        }
    }
}

impl Core {
    /// At an epoch's barrier: RisingWave's rule that an epoch without a snapshot row reads one (so progress
    /// through tombstones is not lost; an empty rest of the snapshot ends the backfill after this barrier),
    /// then the buffered upstream chunks written into the replicated copy and marked by the position. Returns
    /// the chunks to emit and whether the snapshot is done.
    ///
    /// The snapshot read here is of the copy as of the previous barrier: this epoch's upstream chunks are not
    /// in it. So when that read finds the rest of the snapshot empty, the chunks go out unmarked, as when the
    /// snapshot ends within the epoch (RisingWave: at the end of the snapshot a chunk is never marked, or the
    /// buffer's rows past the position are lost): marked, a row inserted this epoch past the position would be
    /// hidden, and no later snapshot read, the backfill being done, would ever emit it.
    fn end_epoch(
        &mut self,
        state: &mut NoShuffleBackfillState,
        buffered: &mut VecDeque<StreamChunk>,
        read: &mut u64,
        paused: bool,
    ) -> StreamExecutorResult<(Vec<StreamChunk>, bool)> {
        let mut out = Vec::new();
        let mut complete = false;
        let now = self.args.clock.elapsed_us();
        // A paced backfill reads it only if its limiter lets it read now (RisingWave PR #16744).
        if *read == 0 && !paused && self.batch.may_read(now) {
            let table = &self.args.upstream_table;
            let mut one =
                MergedSnapshot::new(table, state.current_pos.as_ref(), &self.args.vnodes)?;
            match one.next_row()? {
                Some(row) => {
                    *read = 1;
                    self.batch.read(1, now);
                    out.push(self.snapshot_chunk(state, vec![row]));
                }
                None => complete = true,
            }
        }
        for chunk in buffered.drain(..) {
            self.args.upstream_table.write_chunk(&chunk)?;
            let marked = match (&state.current_pos, complete) {
                (_, true) => chunk,
                (Some(pos), false) => self.mark_chunk(&chunk, pos),
                (None, false) => continue,
            };
            if marked.cardinality() > 0 {
                out.push(marked.compact());
            }
        }
        Ok((out, complete))
    }

    /// The rest of an epoch's barrier: commit the replicated copy, report progress, persist the state, apply
    /// the barrier's mutations.
    async fn finish_epoch(
        &mut self,
        barrier: &Barrier,
        state: &mut NoShuffleBackfillState,
        read: u64,
        paused: &mut bool,
    ) -> StreamExecutorResult<()> {
        super::commit_upstream(&mut self.args.upstream_table, barrier)?;
        self.args.stats.record_epoch(read);
        self.report_progress(barrier, state, false).await;
        self.persist_state(barrier.epoch, state)?;
        self.apply_mutation(barrier, paused)
    }
}

impl Execute for NoShuffleBackfillExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!("Backfill(actor {})", self.core.args.actor_id)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use epochlab_common::catalog::TableDesc;
    use epochlab_common::{DataType, Epoch, TableId, VnodeCount, WorkerId, row};
    use epochlab_storage::{CommittedStore, NodeStorage};

    use super::*;

    const VNODES: u32 = 8;

    /// A progress table over every vnode, with `progress(v)` written for each vnode `v` (in its first epoch,
    /// read back from its own writes).
    fn table_with(progress: impl Fn(usize) -> BackfillProgressPerVnode) -> StateTable {
        let count = VnodeCount::new(VNODES).unwrap();
        let desc = Arc::new(TableDesc::backfill_state(
            TableId(7),
            &[DataType::Int64],
            count,
        ));
        let node = NodeStorage::new(
            WorkerId(1),
            CommittedStore::default(),
            Default::default(),
            1,
        );
        let mut t = StateTable::new(desc, &node, Arc::new(Bitmap::ones(VNODES as usize)));
        t.init_epoch(EpochPair::new(Epoch::test(2), Epoch::test(1)));
        for v in 0..VNODES as usize {
            if let Some(r) = progress(v).encode(VirtualNode::from_index(v), 1) {
                t.insert(&r).unwrap();
            }
        }
        t
    }

    fn at(pos: i64, rows: u64) -> BackfillProgressPerVnode {
        BackfillProgressPerVnode::InProgress {
            current_pos: row![pos],
            snapshot_row_count: rows,
        }
    }

    fn done(rows: u64) -> BackfillProgressPerVnode {
        BackfillProgressPerVnode::Completed {
            current_pos: Some(row![99i64]),
            snapshot_row_count: rows,
        }
    }

    /// The same row in every vnode (what one actor writes): its state is recovered.
    #[test]
    fn uniform_states_recover() {
        let s = NoShuffleBackfillState::recover(&table_with(|_| at(5, 3)), 1).unwrap();
        assert_eq!(s.current_pos, Some(row![5i64]));
        assert!(!s.is_finished);
        assert_eq!(s.row_count, 3);
        let s = NoShuffleBackfillState::recover(&table_with(|_| done(4)), 1).unwrap();
        assert!(s.is_finished);
        let s = NoShuffleBackfillState::recover(
            &table_with(|_| BackfillProgressPerVnode::NotStarted),
            1,
        )
        .unwrap();
        assert_eq!(
            (s.current_pos, s.is_finished, s.row_count),
            (None, false, 0)
        );
        // Unfinished at different positions (two unfinished actors merged) passes the check, as in RisingWave:
        // the first vnode's state wins.
        let s = NoShuffleBackfillState::recover(&table_with(|v| at(v as i64, 1)), 1).unwrap();
        assert_eq!(s.current_pos, Some(row![0i64]));
    }

    /// Vnodes of a finished and an unfinished actor merged into one (a scale-in): RisingWave's assertion, with
    /// its operands (`left` the later vnode's `backfill_finished`, `right` the first vnode's).
    #[test]
    fn mixed_states_trip_the_assertion() {
        let err = NoShuffleBackfillState::recover(
            &table_with(|v| if v < 4 { at(5, 3) } else { done(2) }),
            1,
        )
        .unwrap_err();
        assert_eq!(
            err,
            StreamExecutorError::BackfillStatesDiffer {
                first_vnode: 0,
                vnode: 4,
                expected: false,
                finished: true,
            }
        );
        let text = err.to_string();
        assert!(
            text.starts_with("All vnode partitions should have same state (no scale-in supported)")
        );
        assert!(text.ends_with("(assertion `left == right` failed, left: true, right: false)"));
        assert_eq!(
            err.reason(),
            crate::executor::FailureReason::InconsistentState
        );
    }
}
