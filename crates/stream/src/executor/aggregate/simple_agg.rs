use epochlab_common::{OwnedRow, StreamChunk};
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::{AggArgs, AggCore};
use crate::executor::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, StreamExecutorResult,
    expect_first_barrier,
};

/// Global aggregation (RisingWave's `SimpleAggExecutor`): one group with the empty key, always in the
/// output. A new job emits its row (count 0, NULL sums) at its first barrier after the initial one;
/// after a recovery the row is loaded from the result table and emitted again only when it changes.
pub struct SimpleAggExecutor {
    core: AggCore,
    input: BoxedExecutor,
}

impl SimpleAggExecutor {
    pub fn new(args: AggArgs) -> StreamExecutorResult<Self> {
        assert!(
            args.group_key.is_empty(),
            "a simple aggregation has no group key"
        );
        let (core, input) = AggCore::new(args, true)?;
        Ok(Self { core, input })
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(self) {
        let Self { mut core, input } = self;
        let mut input = input.execute();
        let first = expect_first_barrier(&mut input, "SimpleAgg").await?;
        core.init_epoch(first.epoch);
        core.touch(&OwnedRow::empty())?;
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
                        core.touch(&OwnedRow::empty())?;
                    }
                }
            }
        }
    }
}

impl Execute for SimpleAggExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        self.core.identity("SimpleAgg")
    }
}
