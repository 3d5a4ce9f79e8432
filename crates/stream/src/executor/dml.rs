use epochlab_barrier::Barrier;
use epochlab_common::{ActorId, TableId};
use futures::StreamExt;
use futures_async_stream::try_stream;
use tokio::sync::mpsc;

use crate::task::build::DmlWrite;

use super::{BoxedMessageStream, Execute, Message, StreamExecutorError};

/// A table's DML entry (RisingWave's `DmlExecutor` over a barrier-only source): barriers come from the local
/// barrier manager, DML chunks from the node's DML manager. Barriers are preferred, and no DML passes before
/// the first barrier or while paused.
pub struct DmlExecutor {
    actor_id: ActorId,
    table_id: TableId,
    barrier_rx: mpsc::Receiver<Barrier>,
    dml_rx: mpsc::Receiver<DmlWrite>,
}

impl DmlExecutor {
    pub fn new(
        actor_id: ActorId,
        table_id: TableId,
        barrier_rx: mpsc::Receiver<Barrier>,
        dml_rx: mpsc::Receiver<DmlWrite>,
    ) -> Self {
        Self {
            actor_id,
            table_id,
            barrier_rx,
            dml_rx,
        }
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let closed =
            || StreamExecutorError::ChannelClosed(format!("barriers of actor {}", self.actor_id));
        let first = self.barrier_rx.recv().await.ok_or_else(closed)?;
        let mut paused = first.is_pause_on_startup();
        let stop = first.is_stop(self.actor_id);
        yield Message::Barrier(first);
        if stop {
            return Ok(());
        }
        loop {
            let msg = next_message(&mut self.barrier_rx, &mut self.dml_rx, paused)
                .await
                .ok_or_else(closed)?;
            match msg {
                Message::Barrier(b) => {
                    if b.is_pause() {
                        paused = true;
                    } else if b.is_resume() {
                        paused = false;
                    }
                    let stop = b.is_stop(self.actor_id);
                    yield Message::Barrier(b);
                    if stop {
                        break;
                    }
                }
                chunk => yield chunk,
            }
        }
    }
}

/// The next barrier or (unless paused) DML chunk, barriers first; `None` when the barrier channel closed.
async fn next_message(
    barrier_rx: &mut mpsc::Receiver<Barrier>,
    dml_rx: &mut mpsc::Receiver<DmlWrite>,
    paused: bool,
) -> Option<Message> {
    tokio::select! {
        biased;
        b = barrier_rx.recv() => b.map(Message::Barrier),
        Some(write) = dml_rx.recv(), if !paused => {
            // The writer may have given up waiting; the chunk is taken all the same.
            let _ = write.taken.send(());
            Some(Message::Chunk(write.chunk))
        }
    }
}

impl Execute for DmlExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!("Dml(table {}, actor {})", self.table_id, self.actor_id)
    }
}
