use epochlab_state_table::StateTable;
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, expect_first_barrier,
};

/// Writes every change into the table's state table and forwards it; commits on each barrier before
/// yielding it.
pub struct MaterializeExecutor {
    input: BoxedExecutor,
    table: StateTable,
}

impl MaterializeExecutor {
    pub fn new(input: BoxedExecutor, table: StateTable) -> Self {
        Self { input, table }
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
                    yield Message::Barrier(barrier);
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
