use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use epochlab_barrier::{Barrier, CreateMviewProgress};
use epochlab_common::{
    ActorId, Bitmap, EpochPair, EventLog, Op, OrderType, OwnedRow, StreamChunk, StreamChunkBuilder,
    VirtualNode, event, memcmp,
};
use epochlab_common::{trace, vspan};
use epochlab_state_table::{Check, StateTable, StateTableError};
use epochlab_storage::NodeStorage;
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::snapshot::{Next, SnapshotReader, next_event};
use super::state::{BackfillProgressPerVnode, BackfillState};
use super::stats::BackfillActorStats;
use crate::executor::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, StreamExecutorResult,
    expect_first_barrier,
};
use crate::task::barrier_worker::LocalBarrierManager;
use epochlab_common::toggle;

toggle! {
    /// RisingWave #16815: how the arrangement backfill computes the vnode of an upstream row when it marks
    /// upstream chunks (`mark_chunk_ref_by_vnode`). Read only by the stream crate's `build.rs`, into
    /// [`BackfillArgs::backfill_vnode`].
    pub enum BackfillVnode {
        /// Before the fix: hash the row's whole pk, whatever the table is distributed by.
        Pk,
        /// The fix: the table's distribution key, as the table distributes its rows.
        #[default]
        DistKey,
    }
}

/// How a vnode's progress row was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Written {
    Insert,
    Update,
}

/// `0:update 1:insert`, for logs and spans.
fn describe(written: &[(VirtualNode, Written)]) -> String {
    let parts: Vec<String> = written
        .iter()
        .map(|(v, w)| match w {
            Written::Insert => format!("{v}:insert"),
            Written::Update => format!("{v}:update"),
        })
        .collect();
    parts.join(" ")
}

/// What an arrangement backfill executor is built from.
pub struct BackfillArgs {
    pub actor_id: ActorId,
    /// A replicated copy of the upstream table over this actor's vnodes.
    pub upstream_table: StateTable,
    /// The progress table: pk `[vnode]`.
    pub state_table: StateTable,
    pub vnodes: Arc<Bitmap>,
    pub rate_limit: Option<u32>,
    /// The backfill paces its snapshot reads to the rate limit itself (RisingWave PR #15948); otherwise a
    /// flow-control executor after it does, and the limit only sizes the reads.
    pub paced: bool,
    pub chunk_size: usize,
    /// RisingWave's debug-build check: read each progress row before updating it.
    pub persist_check: bool,
    /// RisingWave #16815: how upstream rows' vnodes are derived when chunks are marked.
    pub backfill_vnode: BackfillVnode,
    pub storage: NodeStorage,
    pub barrier_manager: LocalBarrierManager,
    pub stats: Arc<BackfillActorStats>,
    pub log: EventLog,
    pub clock: epochlab_common::Clock,
}

/// How many snapshot rows a read takes and, when the backfill paces itself, when it may read them: one decision
/// for both backfill executors. A read takes the chunk size, under the rate limit (rows per second per actor;
/// `None` and 0 are unlimited), at least one row. A throttle barrier changes the limit.
///
/// Unpaced (RisingWave at the time of #14910) the limit only sizes the reads; the pace is kept by the
/// flow-control executor that follows in the plan, so a barrier waits behind the rows that flow control holds.
/// Paced (RisingWave PR #15948, whose limiter waits before each snapshot row) a read waits until the rows of
/// the reads before it have had their time: `rows / limit` seconds each, on the simulation clock. The wait is
/// what an upstream barrier preempts, so no barrier waits behind rows already read. Pacing reads a whole chunk
/// per wait where RisingWave waits per row: the rows of one epoch, and when the barrier passes, are the same.
#[derive(Clone, Copy, Debug)]
pub(super) struct SnapshotBatch {
    chunk_size: usize,
    rate_limit: Option<u32>,
    paced: bool,
    /// When paced: the earliest time (µs of the clock) the next read may take place.
    next_read_us: u64,
}

impl SnapshotBatch {
    pub(super) fn of(args: &BackfillArgs) -> Self {
        let mut batch = Self {
            chunk_size: args.chunk_size,
            rate_limit: None,
            paced: args.paced,
            next_read_us: 0,
        };
        batch.throttle(args.rate_limit);
        batch
    }

    /// A throttle barrier's new limit.
    pub(super) fn throttle(&mut self, limit: Option<u32>) {
        self.rate_limit = limit.filter(|l| *l > 0);
    }

    /// Rows a snapshot read takes at most.
    pub(super) fn rows(&self) -> usize {
        let limit = self.rate_limit.map_or(usize::MAX, |l| l as usize);
        self.chunk_size.min(limit).max(1)
    }

    /// The limit this backfill keeps itself, if it paces its reads.
    fn pace(&self) -> Option<u32> {
        self.rate_limit.filter(|_| self.paced)
    }

    /// When the next read may take place (µs of the clock); 0 when it need not wait.
    pub(super) fn next_read_at(&self) -> u64 {
        self.pace().map_or(0, |_| self.next_read_us)
    }

    /// Whether a read may take place at `now_us` (the tombstone read of RisingWave #14842 is made only then,
    /// as RisingWave PR #16744 has it).
    pub(super) fn may_read(&self, now_us: u64) -> bool {
        self.next_read_at() <= now_us
    }

    /// `rows` rows were read at `now_us`: the next read waits for their time.
    pub(super) fn read(&mut self, rows: usize, now_us: u64) {
        if let Some(limit) = self.pace() {
            let start = self.next_read_us.max(now_us);
            self.next_read_us = start + rows as u64 * 1_000_000 / u64::from(limit);
        }
    }
}

/// Resolves at `at_us` of `clock` (at once if that has passed): the wait of a paced snapshot read.
pub(super) async fn until(clock: &epochlab_common::Clock, at_us: u64) {
    let now = clock.elapsed_us();
    if at_us > now {
        tokio::time::sleep(std::time::Duration::from_micros(at_us - now)).await;
    }
}

/// RisingWave's `ArrangementBackfillExecutor`: per epoch, read the snapshot of every unfinished vnode from its
/// position, preferring upstream messages; buffer upstream chunks; at the barrier, forward the part of them
/// the snapshot has already passed, replicate them into the replicated table (so later snapshot reads see
/// them), persist each vnode's progress, then yield the barrier.
pub struct ArrangementBackfillExecutor {
    /// The merged, hash-dispatched changes of the upstream table.
    upstream: BoxedExecutor,
    core: Core,
}

/// Everything but the upstream: the state and the helpers of the main loop.
struct Core {
    args: BackfillArgs,
    pk_indices: Vec<usize>,
    pk_orders: Vec<OrderType>,
    batch: SnapshotBatch,
}

impl ArrangementBackfillExecutor {
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
    /// A full (or drained) snapshot chunk of `vnode`: move its position to the last row and count the rows.
    fn handle_snapshot_chunk(
        &self,
        state: &mut BackfillState,
        vnode: VirtualNode,
        chunk: &StreamChunk,
    ) -> StreamExecutorResult<()> {
        let last = chunk
            .rows()
            .last()
            .map(|(_, r)| r.project(&self.pk_indices));
        if let Some(pos) = last {
            state.update_pos(vnode, pos, chunk.cardinality() as u64, &self.pk_orders)?;
            self.args.stats.snapshot_rows.fetch_add(
                chunk.cardinality() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        Ok(())
    }

    /// Hide the upstream rows the snapshot has not reached yet (it will read them, with these changes, later):
    /// visible iff the row's vnode is completed, or in progress with pk <= its position.
    fn mark_chunk_ref_by_vnode(
        &self,
        chunk: &StreamChunk,
        state: &BackfillState,
    ) -> StreamExecutorResult<StreamChunk> {
        let mut vis = Vec::with_capacity(chunk.capacity());
        for (i, _, row) in chunk.rows_with_holes() {
            if !chunk.visibility().is_set(i) {
                vis.push(false);
                continue;
            }
            let pk = row.project(&self.pk_indices);
            let vnode = match self.args.backfill_vnode {
                // RisingWave before #16815: `VirtualNode::compute_row(row, pk_indices)`.
                BackfillVnode::Pk => {
                    let whole_pk: Vec<usize> = (0..pk.len()).collect();
                    let count = self.args.upstream_table.desc().vnode_count;
                    VirtualNode::compute_row(&pk, &whole_pk, count)
                }
                BackfillVnode::DistKey => self.args.upstream_table.compute_vnode_by_pk(&pk)?,
            };
            let visible = match state.get_progress(vnode)? {
                BackfillProgressPerVnode::NotStarted => false,
                BackfillProgressPerVnode::Completed { .. } => true,
                BackfillProgressPerVnode::InProgress { current_pos, .. } => {
                    memcmp::cmp_rows(&pk, current_pos, &self.pk_orders)
                        != std::cmp::Ordering::Greater
                }
            };
            vis.push(visible);
        }
        let marked = chunk.clone().with_visibility(Bitmap::from_bools(&vis));
        let shown = marked.cardinality() as u64;
        let stats = &self.args.stats;
        stats
            .upstream_rows_forwarded
            .fetch_add(shown, std::sync::atomic::Ordering::Relaxed);
        stats.upstream_rows_hidden.fetch_add(
            chunk.cardinality() as u64 - shown,
            std::sync::atomic::Ordering::Relaxed,
        );
        Ok(marked)
    }

    /// RisingWave's `persist_state_per_vnode`: for each vnode whose progress moved, check that the stored row
    /// equals the in-memory committed copy (a missing one is `row [Some(Int16(v))] not found`), write Insert or
    /// Update, mark committed, then commit the table.
    fn persist_state_per_vnode(
        &mut self,
        barrier: &Barrier,
        state: &mut BackfillState,
    ) -> StreamExecutorResult<()> {
        let clock = self.args.clock.clone();
        let actor = self.args.actor_id;
        let manager = &self.args.barrier_manager;
        // Under the actor's span for this barrier (on this node), else under the barrier's own context.
        let parent = manager
            .actor_span(barrier.epoch.prev, actor)
            .unwrap_or_else(|| barrier.tracing_context.span());
        let table_id = self.args.state_table.table_id();
        let span = vspan!(
            parent: &parent,
            "persist backfill state",
            clock,
            actor_id = actor.0 as i64,
            worker_id = manager.worker().0 as i64,
            table_id = table_id.0 as i64,
            epoch.curr = barrier.epoch.curr.0 as i64,
            epoch.prev = barrier.epoch.prev.0 as i64,
            vnodes = tracing::field::Empty,
            vnode = tracing::field::Empty
        );
        let result =
            span.in_scope(|| self.persist_state_per_vnode_inner(barrier.epoch, state, &span));
        match &result {
            Ok(()) => trace::end(&span, &clock),
            Err(e) => {
                // A progress row that is gone: the unregister that removed the table explains why.
                trace::link(&span, trace::Cause::TableUnregistered(table_id));
                trace::fail(&span, &clock, &e.to_string());
            }
        }
        result
    }

    fn persist_state_per_vnode_inner(
        &mut self,
        epoch: EpochPair,
        state: &mut BackfillState,
        span: &tracing::Span,
    ) -> StreamExecutorResult<()> {
        let actor_id = self.args.actor_id.0;
        let table_id = self.args.state_table.table_id().0;
        let pk_len = self.pk_indices.len();
        tracing::trace!(
            actor_id,
            table_id,
            "Persisting state on barrier at epoch {epoch:?}"
        );
        let vnodes: Vec<VirtualNode> = state.vnodes().map(|(v, _)| v).collect();
        let mut written: Vec<(VirtualNode, Written)> = Vec::new();
        for vnode in vnodes {
            if !state.need_commit(vnode) {
                continue;
            }
            let (old, new) = state.get_commit_state(vnode, pk_len);
            span.record("vnode", vnode.to_index() as i64);
            let how = self.write_progress_row(vnode, old, &new)?;
            written.push((vnode, how));
            span.record("vnodes", describe(&written).as_str());
            tracing::trace!(actor_id, table_id, "update vnode: vnode={vnode}");
            state.mark_committed(vnode);
            tracing::info!(actor_id, table_id, "mark_committed: vnode={vnode}");
            let finished = state.get_progress(vnode)?.is_completed();
            self.args
                .stats
                .record_persisted(vnode, epoch.prev, finished);
        }
        tracing::trace!(actor_id, table_id, "committing on epoch, {epoch:?}");
        self.args.state_table.commit(epoch)?;
        let updated = written.iter().any(|(_, w)| *w == Written::Update);
        self.args
            .stats
            .last_persist_updated
            .store(updated, std::sync::atomic::Ordering::Relaxed);
        if !written.is_empty() {
            event!(
                self.args.log,
                "persist backfill state",
                "actor={actor_id} table={table_id} epoch={} vnodes=[{}]",
                epoch.prev,
                describe(&written)
            );
        }
        Ok(())
    }

    /// Write `vnode`'s progress row: an update of the committed copy `old`, or an insert. With the persist
    /// check on (RisingWave's debug build), first read the stored row and require it to equal `old`.
    fn write_progress_row(
        &mut self,
        vnode: VirtualNode,
        old: Option<OwnedRow>,
        new: &OwnedRow,
    ) -> StreamExecutorResult<Written> {
        if self.args.persist_check {
            self.check_stored_row(vnode, old.as_ref())?;
        }
        match old {
            Some(old) => {
                self.args.state_table.update(&old, new)?;
                Ok(Written::Update)
            }
            None => {
                self.args.state_table.insert(new)?;
                Ok(Written::Insert)
            }
        }
    }

    /// RisingWave's debug assertion in `persist_state_per_vnode`: the stored progress row is the committed
    /// copy. A missing row is `row [Some(Int16(v))] not found`, the message of #14910.
    fn check_stored_row(
        &self,
        vnode: VirtualNode,
        old: Option<&OwnedRow>,
    ) -> StreamExecutorResult<()> {
        let key = OwnedRow::new(vec![Some(vnode.to_scalar())]);
        let stored = self.args.state_table.get_row(&key)?;
        match (old, stored) {
            (Some(old), Some(stored)) if &stored == old => Ok(()),
            (None, None) => Ok(()),
            (Some(_), None) => {
                self.args
                    .stats
                    .state_missing
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Err(StateTableError::RowNotFound {
                    table_id: self.args.state_table.table_id(),
                    pk: key,
                    check: Check::BackfillPersist,
                }
                .into())
            }
            (old, stored) => Err(StreamExecutorError::ProgressDiverged {
                vnode: vnode.to_index() as u32,
                stored: format!("{stored:?}"),
                committed: format!("{old:?}"),
            }),
        }
    }

    /// Take a new vnode bitmap after a barrier (a reschedule): both tables own the new vnodes, the lost ones
    /// leave the state, and the gained ones take the progress their old owner persisted, read from the
    /// progress table now. That row is right only once the epoch that wrote it is committed and pinned on this
    /// node: what the reschedule's Pause waits for (epochlab's reschedule-unpinned check).
    fn update_vnodes(
        &mut self,
        state: &mut BackfillState,
        vnodes: Arc<Bitmap>,
        epoch: EpochPair,
    ) -> StreamExecutorResult<()> {
        self.args.state_table.update_vnode_bitmap(vnodes.clone())?;
        self.args
            .upstream_table
            .update_vnode_bitmap(vnodes.clone())?;
        let pk_len = self.pk_indices.len();
        let gained = state.update_vnodes(&self.args.state_table, &vnodes, pk_len)?;
        let lost = self.args.vnodes.iter_ones().filter(|v| !vnodes.is_set(*v));
        let lost: Vec<String> = lost.map(|v| v.to_string()).collect();
        let gained: Vec<String> = gained.iter().map(|(v, p)| format!("{v}:{p}")).collect();
        event!(
            self.args.log,
            "backfill vnodes",
            "actor={} epoch={} pinned={} gained=[{}] lost=[{}]",
            self.args.actor_id,
            epoch.curr,
            self.args.storage.max_committed_epoch(),
            gained.join(" "),
            lost.join(" ")
        );
        self.args.stats.retain_vnodes(&vnodes);
        self.args.vnodes = vnodes;
        Ok(())
    }

    async fn report_progress(&self, barrier: &Barrier, state: &BackfillState, done: bool) {
        self.args
            .barrier_manager
            .report_progress(
                barrier.epoch.curr,
                CreateMviewProgress {
                    backfill_actor_id: self.args.actor_id,
                    done,
                    consumed_epoch: barrier.epoch.prev,
                    consumed_rows: state.total_rows(),
                },
            )
            .await;
    }
}

/// Where the executor is between two barriers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Reading the snapshot of its unfinished vnodes, marking and buffering upstream chunks.
    Backfilling,
    /// The snapshot is read: forward the upstream; at the barrier every vnode completes and is reported done.
    Finishing,
    /// Every vnode completed: pass everything through. `report_done` reports done at the next barrier (an
    /// actor rebuilt with its progress completed, or one whose new vnodes are all completed after a
    /// reschedule: meta's tracker waits for it again).
    Done { report_done: bool },
}

/// What one backfilling epoch collects: the snapshot rows per vnode not yet in a full chunk, the upstream
/// chunks buffered until the barrier, and how many snapshot rows it read.
struct EpochBuffers {
    capacity: usize,
    builders: BTreeMap<VirtualNode, StreamChunkBuilder>,
    buffered: Vec<StreamChunk>,
    read: u64,
}

impl EpochBuffers {
    fn new(capacity: usize) -> Self {
        Self {
            capacity,
            builders: BTreeMap::new(),
            buffered: Vec::new(),
            read: 0,
        }
    }

    /// Append snapshot rows of `vnode` to its builder; the chunks that filled up, in order.
    fn append_snapshot_rows(
        &mut self,
        vnode: VirtualNode,
        rows: Vec<OwnedRow>,
    ) -> Vec<StreamChunk> {
        self.read += rows.len() as u64;
        let capacity = self.capacity;
        let b = self
            .builders
            .entry(vnode)
            .or_insert_with(|| StreamChunkBuilder::new(capacity));
        rows.into_iter()
            .filter_map(|row| b.append(Op::Insert, row))
            .collect()
    }

    /// The partly filled chunk of every vnode, in vnode order; the builders are emptied.
    fn take_partial_chunks(&mut self) -> Vec<(VirtualNode, StreamChunk)> {
        std::mem::take(&mut self.builders)
            .into_iter()
            .filter_map(|(vnode, mut b)| b.take().map(|chunk| (vnode, chunk)))
            .collect()
    }
}

impl Core {
    /// Startup at the first barrier: the progress of every owned vnode, read at its epoch, and the phase to
    /// start in.
    fn load_state(&mut self, first: &Barrier) -> StreamExecutorResult<(BackfillState, Phase)> {
        let actor_id = self.args.actor_id;
        self.args.state_table.init_epoch(first.epoch);
        let pk_len = self.pk_indices.len();
        let state = BackfillState::load(&self.args.state_table, &self.args.vnodes, pk_len)?;
        if first.is_newly_added(actor_id) && state.has_progress() {
            return Err(StreamExecutorError::Internal(format!(
                "actor {actor_id} is new but its progress table has rows"
            )));
        }
        // Already finished (a rebuilt actor whose progress is committed as completed): as in RisingWave,
        // report done on the barrier after the first. The first barrier after a recovery is its Initial
        // barrier, whose collection carries no progress to meta's tracker, which recovery has rebuilt with
        // every backfill actor pending: a report there would be lost and the job never finish.
        let phase = if state.is_completely_finished() {
            Phase::Done { report_done: true }
        } else {
            Phase::Backfilling
        };
        Ok((state, phase))
    }

    /// RisingWave #14842: an epoch without any snapshot row still reads one, so that progress through
    /// tombstones is never lost; a paced backfill only if its limiter lets it read now (RisingWave PR #16744).
    /// The row's chunk, its position already moved.
    fn read_one_snapshot_row(
        &mut self,
        state: &mut BackfillState,
    ) -> StreamExecutorResult<Option<StreamChunk>> {
        let now = self.args.clock.elapsed_us();
        if !self.batch.may_read(now) {
            return Ok(None);
        }
        let mut one = SnapshotReader::new(&self.args.upstream_table, state)?;
        let Some((vnode, row)) = one.next_row()? else {
            return Ok(None);
        };
        self.batch.read(1, now);
        let chunk = StreamChunk::from_pairs([(Op::Insert, row)]);
        self.handle_snapshot_chunk(state, vnode, &chunk)?;
        Ok(Some(chunk))
    }

    /// The barrier of a backfilling epoch, after its chunks went out: replicate the buffered upstream chunks,
    /// commit, report progress and persist each vnode's.
    async fn persist_backfilling_epoch(
        &mut self,
        barrier: &Barrier,
        state: &mut BackfillState,
        epoch: &EpochBuffers,
    ) -> StreamExecutorResult<()> {
        for chunk in &epoch.buffered {
            self.args.upstream_table.write_chunk(chunk)?;
        }
        super::commit_upstream(&mut self.args.upstream_table, barrier)?;
        self.args.stats.record_epoch(epoch.read);
        self.report_progress(barrier, state, false).await;
        self.persist_state_per_vnode(barrier, state)?;
        tracing::trace!(
            actor = self.args.actor_id.0,
            "barrier persisted actor={} barrier={barrier:?}",
            self.args.actor_id
        );
        Ok(())
    }

    /// The barrier of a finishing or done epoch: when finishing, every vnode completes, is persisted and
    /// reported done; when done, the progress table is committed as it is (and done reported if pending).
    async fn commit_forwarding_epoch(
        &mut self,
        phase: Phase,
        barrier: &Barrier,
        state: &mut BackfillState,
    ) -> StreamExecutorResult<()> {
        super::commit_upstream(&mut self.args.upstream_table, barrier)?;
        match phase {
            Phase::Finishing => {
                state.finish_all();
                self.args.stats.record_epoch(0);
                self.report_progress(barrier, state, true).await;
                self.persist_state_per_vnode(barrier, state)?;
                self.args.stats.finished.store(true, Ordering::Relaxed);
            }
            _ => {
                self.args.state_table.commit(barrier.epoch)?;
                if phase == (Phase::Done { report_done: true }) {
                    self.report_progress(barrier, state, true).await;
                    self.args.stats.finished.store(true, Ordering::Relaxed);
                }
            }
        }
        Ok(())
    }

    /// A barrier's mutations for this actor before it is yielded: pause, resume, a new rate limit; the new
    /// vnodes of a reschedule, applied after it (`post_yield_barrier`).
    fn apply_mutation(&mut self, barrier: &Barrier, paused: &mut bool) -> Option<Arc<Bitmap>> {
        let actor_id = self.args.actor_id;
        if barrier.is_pause() {
            *paused = true;
        } else if barrier.is_resume() {
            *paused = false;
        }
        if let Some(limit) = barrier.as_throttle(actor_id) {
            self.batch.throttle(limit);
        }
        barrier.as_update_vnode_bitmap(actor_id)
    }

    /// RisingWave's `post_yield_barrier`: a reschedule's new bitmap applies from the next epoch. The phase
    /// the new vnodes start in.
    fn post_yield_barrier(
        &mut self,
        state: &mut BackfillState,
        vnodes: Arc<Bitmap>,
        epoch: EpochPair,
    ) -> StreamExecutorResult<Phase> {
        self.update_vnodes(state, vnodes, epoch)?;
        Ok(if state.is_completely_finished() {
            Phase::Done { report_done: true }
        } else {
            self.args.stats.finished.store(false, Ordering::Relaxed);
            Phase::Backfilling
        })
    }
}

fn upstream_closed(actor_id: ActorId) -> StreamExecutorError {
    StreamExecutorError::ChannelClosed(format!("upstream of backfill actor {actor_id}"))
}

impl ArrangementBackfillExecutor {
    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(self) {
        let Self { upstream, mut core } = self;
        let actor_id = core.args.actor_id;
        let mut upstream = upstream.execute();
        let first = expect_first_barrier(&mut upstream, "ArrangementBackfill").await?;
        let mut paused = first.is_pause_on_startup();
        let (mut state, mut phase) = core.load_state(&first)?;
        let first_epoch = first.epoch;
        yield Message::Barrier(first);
        // The replicated table reads a fully committed snapshot: wait for the first barrier's `prev`.
        core.args.storage.wait_for_epoch(first_epoch.prev).await;
        core.args.upstream_table.init_epoch(first_epoch);

        loop {
            let barrier = if phase == Phase::Backfilling {
                let mut snapshot = match paused {
                    true => None,
                    false => Some(SnapshotReader::new(&core.args.upstream_table, &state)?),
                };
                let mut epoch = EpochBuffers::new(core.batch.rows());
                let barrier = loop {
                    let clock = &core.args.clock;
                    match next_event(&mut upstream, snapshot.as_mut(), &mut core.batch, clock).await
                    {
                        Next::Upstream(None) => return Err(upstream_closed(actor_id))?,
                        Next::Upstream(Some(msg)) => match msg? {
                            Message::Chunk(c) => epoch.buffered.push(c.compact()),
                            // RisingWave's backfill ignores the upstream's watermarks until it is done.
                            Message::Watermark(_) => {}
                            Message::Barrier(b) => break Some(b),
                        },
                        Next::Snapshot(rows) => match rows? {
                            Some((vnode, rows)) => {
                                for chunk in epoch.append_snapshot_rows(vnode, rows) {
                                    core.handle_snapshot_chunk(&mut state, vnode, &chunk)?;
                                    yield Message::Chunk(chunk);
                                }
                            }
                            None => break None,
                        },
                    }
                };
                let Some(barrier) = barrier else {
                    // The snapshot is fully read. Everything the upstream sent this epoch goes out as it is.
                    for (vnode, chunk) in epoch.take_partial_chunks() {
                        core.handle_snapshot_chunk(&mut state, vnode, &chunk)?;
                        yield Message::Chunk(chunk);
                    }
                    for chunk in std::mem::take(&mut epoch.buffered) {
                        yield Message::Chunk(chunk);
                    }
                    core.args.stats.record_epoch(epoch.read);
                    phase = Phase::Finishing;
                    continue;
                };
                if epoch.read == 0
                    && !paused
                    && let Some(chunk) = core.read_one_snapshot_row(&mut state)?
                {
                    epoch.read = 1;
                    yield Message::Chunk(chunk);
                }
                for (vnode, chunk) in epoch.take_partial_chunks() {
                    core.handle_snapshot_chunk(&mut state, vnode, &chunk)?;
                    yield Message::Chunk(chunk);
                }
                for chunk in &epoch.buffered {
                    let marked = core.mark_chunk_ref_by_vnode(chunk, &state)?;
                    if marked.cardinality() > 0 {
                        yield Message::Chunk(marked.compact());
                    }
                }
                core.persist_backfilling_epoch(&barrier, &mut state, &epoch)
                    .await?;
                barrier
            } else {
                // Finishing or done: forward the upstream until the barrier.
                let barrier = loop {
                    match upstream.next().await {
                        // The upstream ends after a barrier that stops this actor.
                        None if matches!(phase, Phase::Done { .. }) => return Ok(()),
                        None => return Err(upstream_closed(actor_id))?,
                        Some(msg) => match msg? {
                            Message::Chunk(c) => yield Message::Chunk(c),
                            Message::Watermark(w) => yield Message::Watermark(w),
                            Message::Barrier(b) => break b,
                        },
                    }
                };
                core.commit_forwarding_epoch(phase, &barrier, &mut state)
                    .await?;
                phase = Phase::Done { report_done: false };
                barrier
            };
            let new_vnodes = core.apply_mutation(&barrier, &mut paused);
            let epoch = barrier.epoch;
            yield Message::Barrier(barrier);
            if let Some(vnodes) = new_vnodes {
                phase = core.post_yield_barrier(&mut state, vnodes, epoch)?;
            }
        }
    }
}

impl Execute for ArrangementBackfillExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!("ArrangementBackfill(actor {})", self.core.args.actor_id)
    }
}
