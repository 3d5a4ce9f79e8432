use epochlab_common::plan::expand_row;
use epochlab_common::{ActorId, StreamChunk};
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::{BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError};

/// Each input row once per grouping set (RisingWave's `ExpandExecutor`): for subset `i`, the input's
/// columns with those not in `column_subsets[i]` NULL, then the input's columns as they are, then the
/// `Int64` flag `i`. One output chunk per subset, each with the input chunk's ops (update pairs stay
/// adjacent: the flag is part of the downstream aggregation's group key).
pub struct ExpandExecutor {
    actor_id: ActorId,
    input: BoxedExecutor,
    column_subsets: Vec<Vec<usize>>,
}

impl ExpandExecutor {
    pub fn new(actor_id: ActorId, input: BoxedExecutor, column_subsets: Vec<Vec<usize>>) -> Self {
        Self {
            actor_id,
            input,
            column_subsets,
        }
    }

    fn expand(&self, chunk: &StreamChunk) -> Vec<StreamChunk> {
        self.column_subsets
            .iter()
            .enumerate()
            .map(|(flag, subset)| {
                StreamChunk::from_pairs(
                    chunk
                        .rows()
                        .map(|(op, row)| (op, expand_row(row, subset, flag))),
                )
            })
            .filter(|c| !c.is_empty())
            .collect()
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let input = std::mem::replace(&mut self.input, Box::new(super::Taken)).execute();
        #[for_await]
        for msg in input {
            match msg? {
                Message::Chunk(chunk) => {
                    for out in self.expand(&chunk) {
                        yield Message::Chunk(out);
                    }
                }
                Message::Barrier(b) => yield Message::Barrier(b),
                // A grouping set NULLs columns: no watermark holds for the output.
                Message::Watermark(_) => {}
            }
        }
    }
}

impl Execute for ExpandExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!(
            "Expand(actor {}, {} grouping sets)",
            self.actor_id.0,
            self.column_subsets.len()
        )
    }
}
