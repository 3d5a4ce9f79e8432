use epochlab_barrier::{Barrier, CreateMviewProgress};
use epochlab_common::{ActorId, Clock, Op, OwnedRow, StreamChunk, trace, vspan};
use futures::StreamExt;
use futures_async_stream::try_stream;
use tokio::sync::mpsc;

use super::{BoxedMessageStream, Execute, Message, StreamExecutorError};
use crate::task::barrier_worker::LocalBarrierManager;

/// Rows per chunk the values executor emits at most (RisingWave's `DEFAULT_CHUNK_SIZE`).
pub const VALUES_CHUNK_SIZE: usize = 256;

/// Constant rows, emitted once (RisingWave's `ValuesExecutor`). A source: its barriers come from the local
/// barrier manager. It emits only when its first barrier is the `Add` of its newly created job, after that
/// barrier (after the `Resume` when the job starts paused); the first barrier after a recovery adds no
/// actor, so a rebuilt actor emits nothing (its rows were emitted and committed before its job was
/// created). The job is created once the rows' epoch is committed: from the barrier after the rows, each
/// barrier reports the actor done.
pub struct ValuesExecutor {
    actor_id: ActorId,
    barrier_rx: mpsc::Receiver<Barrier>,
    rows: Vec<OwnedRow>,
    barrier_manager: LocalBarrierManager,
    clock: Clock,
}

impl ValuesExecutor {
    pub fn new(
        actor_id: ActorId,
        barrier_rx: mpsc::Receiver<Barrier>,
        rows: Vec<OwnedRow>,
        barrier_manager: LocalBarrierManager,
        clock: Clock,
    ) -> Self {
        Self {
            actor_id,
            barrier_rx,
            rows,
            barrier_manager,
            clock,
        }
    }

    /// The `emit values` span, under the actor's span for the barrier the rows follow.
    fn emit_span(&self, after: &Barrier, rows: usize) -> tracing::Span {
        let manager = &self.barrier_manager;
        let parent = manager
            .actor_span(after.epoch.prev, self.actor_id)
            .unwrap_or_else(|| after.tracing_context.span());
        vspan!(
            parent: &parent,
            "emit values",
            self.clock,
            actor_id = self.actor_id.0 as i64,
            worker_id = manager.worker().0 as i64,
            epoch.curr = after.epoch.curr.0 as i64,
            rows = rows as i64
        )
    }

    fn chunks(rows: Vec<OwnedRow>) -> Vec<StreamChunk> {
        rows.chunks(VALUES_CHUNK_SIZE)
            .map(|c| StreamChunk::from_pairs(c.iter().map(|r| (Op::Insert, r.clone()))))
            .collect()
    }

    async fn report_done(&self, barrier: &Barrier) {
        let progress = CreateMviewProgress {
            backfill_actor_id: self.actor_id,
            done: true,
            consumed_epoch: barrier.epoch.prev,
            consumed_rows: 0,
        };
        self.barrier_manager
            .report_progress(barrier.epoch.curr, progress)
            .await;
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let actor = self.actor_id;
        let closed = || StreamExecutorError::ChannelClosed(format!("barriers of actor {actor}"));
        let first = self.barrier_rx.recv().await.ok_or_else(closed)?;
        let emit = first.is_newly_added(actor);
        let mut paused = first.is_pause_on_startup();
        let mut stop = first.is_stop(actor);
        let mut last = first.clone();
        yield Message::Barrier(first);
        let mut rows = if emit {
            std::mem::take(&mut self.rows)
        } else {
            Vec::new()
        };
        while !stop {
            if !paused && !rows.is_empty() {
                let span = self.emit_span(&last, rows.len());
                for chunk in Self::chunks(std::mem::take(&mut rows)) {
                    yield Message::Chunk(chunk);
                }
                trace::end(&span, &self.clock);
            }
            let b = self.barrier_rx.recv().await.ok_or_else(closed)?;
            last = b.clone();
            if b.is_pause() {
                paused = true;
            } else if b.is_resume() {
                paused = false;
            }
            if emit && rows.is_empty() {
                self.report_done(&b).await;
            }
            stop = b.is_stop(actor);
            yield Message::Barrier(b);
        }
    }
}

impl Execute for ValuesExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!("Values(actor {}, {} rows)", self.actor_id, self.rows.len())
    }
}
