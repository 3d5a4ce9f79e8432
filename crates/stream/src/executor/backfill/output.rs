//! A backfill's output columns (RisingWave's `output_indices` of its `StreamScan`): the upstream table's
//! columns its job was planned over. A table's columns only grow (`ALTER TABLE .. ADD COLUMN` appends one
//! on a barrier, which the backfill's replicated table takes), so after such a barrier the backfill reads
//! and forwards wider rows than its job knows: they are cut back here. A chunk of the planned width passes
//! as it is.

use epochlab_common::{OwnedRow, StreamChunk};
use futures::StreamExt;
use futures_async_stream::try_stream;

use crate::executor::{BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError};

pub struct ScanOutputExecutor {
    input: BoxedExecutor,
    /// The upstream positions each output column takes, in order.
    output_indices: Vec<usize>,
}

impl ScanOutputExecutor {
    pub fn new(input: BoxedExecutor, output_indices: Vec<usize>) -> Self {
        Self {
            input,
            output_indices,
        }
    }

    /// Whether a row of `width` columns is already the output (the table had the planned columns).
    fn passes(&self, width: usize) -> bool {
        width == self.output_indices.len() && self.output_indices.iter().copied().eq(0..width)
    }

    fn project(&self, chunk: StreamChunk) -> StreamChunk {
        let width = chunk.rows().next().map(|(_, row)| row.len());
        if width.is_none_or(|w| self.passes(w)) {
            return chunk;
        }
        StreamChunk::from_pairs(chunk.rows().map(|(op, row)| {
            let datums = self.output_indices.iter().map(|&i| row[i].clone());
            (op, OwnedRow::new(datums.collect()))
        }))
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let input = std::mem::replace(&mut self.input, Box::new(crate::executor::Taken)).execute();
        #[for_await]
        for msg in input {
            match msg? {
                Message::Chunk(chunk) => yield Message::Chunk(self.project(chunk)),
                Message::Barrier(b) => yield Message::Barrier(b),
                // A watermark on an output column goes on at its output position.
                Message::Watermark(w) => {
                    let col = w.col_idx;
                    if let Some(i) = self.output_indices.iter().position(|&c| c == col) {
                        yield Message::Watermark(w.with_idx(i));
                    }
                }
            }
        }
    }
}

impl Execute for ScanOutputExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!("ScanOutput({} columns)", self.output_indices.len())
    }
}
