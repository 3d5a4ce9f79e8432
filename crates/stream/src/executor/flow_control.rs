use std::time::Duration;

use epochlab_common::{ActorId, Clock, StreamChunk, StreamChunkBuilder};
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::{BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError};

/// Limits the rows per second passing through, on the simulation clock (RisingWave's
/// `FlowControlExecutor`). A chunk larger than one second's worth is split. `Throttle` changes the limit.
pub struct FlowControlExecutor {
    actor_id: ActorId,
    input: BoxedExecutor,
    rate_limit: Option<u32>,
    clock: Clock,
}

impl FlowControlExecutor {
    pub fn new(
        actor_id: ActorId,
        input: BoxedExecutor,
        rate_limit: Option<u32>,
        clock: Clock,
    ) -> Self {
        Self {
            actor_id,
            input,
            rate_limit,
            clock,
        }
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        // The earliest time (µs since the clock's origin) the next row may pass.
        let mut allowed_at_us = 0u64;
        #[for_await]
        for msg in self.input.execute() {
            match msg? {
                Message::Chunk(chunk) => {
                    let Some(limit) = self.rate_limit else {
                        yield Message::Chunk(chunk);
                        continue;
                    };
                    for piece in split(chunk, limit as usize) {
                        let now = self.clock.elapsed_us();
                        let start = allowed_at_us.max(now);
                        if start > now {
                            tokio::time::sleep(Duration::from_micros(start - now)).await;
                        }
                        allowed_at_us =
                            start + piece.cardinality() as u64 * 1_000_000 / limit as u64;
                        yield Message::Chunk(piece);
                    }
                }
                Message::Barrier(b) => {
                    if let Some(limit) = b.as_throttle(self.actor_id) {
                        self.rate_limit = limit.filter(|l| *l > 0);
                    }
                    yield Message::Barrier(b);
                }
                Message::Watermark(w) => yield Message::Watermark(w),
            }
        }
    }
}

/// Split a chunk into pieces of at most `max` visible rows.
fn split(chunk: StreamChunk, max: usize) -> Vec<StreamChunk> {
    if chunk.cardinality() <= max {
        return vec![chunk];
    }
    let mut builder = StreamChunkBuilder::new(max);
    let mut out = Vec::new();
    for (op, row) in chunk.rows() {
        if let Some(c) = builder.append(op, row.clone()) {
            out.push(c);
        }
    }
    out.extend(builder.take());
    out
}

impl Execute for FlowControlExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!(
            "FlowControl(actor {}, {:?} rows/s)",
            self.actor_id, self.rate_limit
        )
    }
}
