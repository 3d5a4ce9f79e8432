use std::ops::Bound;

use epochlab_barrier::Barrier;
use epochlab_common::types::Timestamptz;
use epochlab_common::{ActorId, Datum, Op, OwnedRow, ScalarImpl, StreamChunk, VirtualNode};
use epochlab_state_table::StateTable;
use futures::StreamExt;
use futures_async_stream::try_stream;
use tokio::sync::mpsc;

use super::{BoxedMessageStream, Execute, Message, StreamExecutorError, StreamExecutorResult};

/// `now()` of a streaming job (RisingWave's `NowExecutor`): a source whose barriers come from the local
/// barrier manager. After each barrier it emits the barrier's `curr` epoch as a `Timestamptz` (the epoch's
/// physical time is the simulation's clock when meta made the epoch: never a wall clock), retracting the
/// value it emitted before, then a watermark of that value on its column (time only moves on). The last
/// value emitted is kept in `state_table` (one row, empty pk), so a rebuilt actor retracts the committed
/// value first. Nothing is emitted while the job is paused.
pub struct NowExecutor {
    actor_id: ActorId,
    barrier_rx: mpsc::Receiver<Barrier>,
    state_table: StateTable,
}

/// The timestamp of a barrier: its `curr` epoch's physical time, in microseconds since the Unix epoch.
pub fn epoch_timestamp(barrier: &Barrier) -> ScalarImpl {
    let ms = barrier.epoch.curr.as_unix_millis();
    let us = i64::try_from(ms).unwrap_or(i64::MAX / 1000) * 1000;
    ScalarImpl::Timestamptz(Timestamptz::from_micros(us))
}

impl NowExecutor {
    pub fn new(
        actor_id: ActorId,
        barrier_rx: mpsc::Receiver<Barrier>,
        state_table: StateTable,
    ) -> Self {
        assert!(
            state_table.desc().pk_indices.is_empty(),
            "now's state table is one row with an empty pk"
        );
        Self {
            actor_id,
            barrier_rx,
            state_table,
        }
    }

    /// The value the actor emitted last and committed (none for a new job).
    fn recover_last(&self) -> StreamExecutorResult<Datum> {
        let vnode = VirtualNode::from_index(0);
        let range = (Bound::Unbounded, Bound::Unbounded);
        let mut rows = self.state_table.iter_with_vnode(vnode, range)?;
        let last = match rows.next() {
            Some(row) => row?.datum_at(0).clone(),
            None => None,
        };
        assert!(rows.next().is_none(), "now's state table holds one row");
        Ok(last)
    }

    /// The chunk that moves the output from `last` to `now`, written to the state table as well.
    fn advance(&mut self, last: &Datum, now: ScalarImpl) -> StreamExecutorResult<StreamChunk> {
        let new_row = OwnedRow::new(vec![Some(now)]);
        Ok(match last {
            Some(v) => {
                let old_row = OwnedRow::new(vec![Some(v.clone())]);
                self.state_table.update(&old_row, &new_row)?;
                StreamChunk::from_pairs([(Op::Delete, old_row), (Op::Insert, new_row)])
            }
            None => {
                self.state_table.insert(&new_row)?;
                StreamChunk::from_pairs([(Op::Insert, new_row)])
            }
        })
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let actor = self.actor_id;
        let closed = || StreamExecutorError::ChannelClosed(format!("barriers of actor {actor}"));
        let mut last: Datum = None;
        let mut paused = false;
        let mut first = true;
        loop {
            let barrier = self.barrier_rx.recv().await.ok_or_else(closed)?;
            if first {
                self.state_table.init_epoch(barrier.epoch);
                last = self.recover_last()?;
                paused = barrier.is_pause_on_startup();
                first = false;
            } else {
                self.state_table.commit(barrier.epoch)?;
            }
            if barrier.is_pause() {
                paused = true;
            } else if barrier.is_resume() {
                paused = false;
            }
            let now = epoch_timestamp(&barrier);
            let stop = barrier.is_stop(actor);
            yield Message::Barrier(barrier);
            if stop {
                break;
            }
            if paused {
                continue;
            }
            let chunk = self.advance(&last, now.clone())?;
            yield Message::Chunk(chunk);
            let ty = epochlab_common::DataType::Timestamptz;
            yield Message::Watermark(super::Watermark::new(0, ty, now.clone()));
            last = Some(now);
        }
    }
}

impl Execute for NowExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!("Now(actor {})", self.actor_id)
    }
}
