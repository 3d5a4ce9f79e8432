use epochlab_common::StreamChunk;
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::{AggArgs, AggCore};
use crate::executor::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, StreamExecutorResult,
    expect_first_barrier,
};

/// Grouped aggregation (RisingWave's `HashAggExecutor`): on each barrier, the groups that changed are
/// written and emitted (an insert for a new group, an update pair for a changed one, a delete for a group
/// whose row count dropped to 0), then the state tables are committed with the barrier's epoch.
pub struct HashAggExecutor {
    core: AggCore,
    input: BoxedExecutor,
}

impl HashAggExecutor {
    pub fn new(args: AggArgs) -> StreamExecutorResult<Self> {
        let (core, input) = AggCore::new(args, false)?;
        Ok(Self { core, input })
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(self) {
        let Self { mut core, input } = self;
        let mut input = input.execute();
        let first = expect_first_barrier(&mut input, "HashAgg").await?;
        core.init_epoch(first.epoch);
        yield Message::Barrier(first);
        #[for_await]
        for msg in input {
            match msg? {
                Message::Chunk(chunk) => core.apply_chunk(&chunk)?,
                Message::Barrier(barrier) => {
                    let out = core.flush()?;
                    if !out.is_empty() {
                        yield Message::Chunk(StreamChunk::from_pairs(out));
                    }
                    core.commit(barrier.epoch)?;
                    let update = barrier.as_update_vnode_bitmap(core.actor_id);
                    yield Message::Barrier(barrier);
                    if let Some(vnodes) = update {
                        core.update_vnodes(vnodes)?;
                    }
                }
            }
        }
    }
}

impl Execute for HashAggExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        self.core.identity("HashAgg")
    }
}
