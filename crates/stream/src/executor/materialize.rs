use epochlab_common::ActorId;
use epochlab_state_table::StateTable;
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, expect_first_barrier,
};

/// Writes every change into the table's state table and forwards it; commits on each barrier before
/// yielding it, and takes the actor's new vnode bitmap (a reschedule) after.
pub struct MaterializeExecutor {
    actor_id: ActorId,
    input: BoxedExecutor,
    table: StateTable,
}

impl MaterializeExecutor {
    pub fn new(actor_id: ActorId, input: BoxedExecutor, table: StateTable) -> Self {
        Self {
            actor_id,
            input,
            table,
        }
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let mut input = self.input.execute();
        let first = expect_first_barrier(&mut input, "Materialize").await?;
        self.table.init_epoch(first.epoch);
        yield Message::Barrier(first);
        #[for_await]
        for msg in input {
            match msg? {
                Message::Chunk(chunk) => {
                    self.table.write_chunk(&chunk)?;
                    yield Message::Chunk(chunk);
                }
                Message::Barrier(barrier) => {
                    self.table.commit(barrier.epoch)?;
                    assert_eq!(
                        self.table.epoch()?,
                        barrier.epoch,
                        "state committed before the barrier is yielded"
                    );
                    let update = barrier.as_update_vnode_bitmap(self.actor_id);
                    yield Message::Barrier(barrier);
                    if let Some(vnodes) = update {
                        self.table.update_vnode_bitmap(vnodes)?;
                    }
                }
            }
        }
    }
}

impl Execute for MaterializeExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!("Materialize(table {})", self.table.table_id())
    }
}
