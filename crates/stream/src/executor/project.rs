use epochlab_common::{ExprNode, OwnedRow, StreamChunk};
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::non_strict::NonStrict;
use super::{BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError};

/// One output column per expression over each visible input row, the op kept (RisingWave's
/// `ProjectExecutor`). Evaluation is non-strict: a failing expression gives NULL.
pub struct ProjectExecutor {
    input: BoxedExecutor,
    exprs: Vec<ExprNode>,
    eval: NonStrict,
}

impl ProjectExecutor {
    pub fn new(input: BoxedExecutor, exprs: Vec<ExprNode>, eval: NonStrict) -> Self {
        Self { input, exprs, eval }
    }

    fn project(&self, chunk: &StreamChunk) -> StreamChunk {
        StreamChunk::from_pairs(chunk.rows().map(|(op, row)| {
            let datums = self.exprs.iter().map(|e| self.eval.eval(e, row)).collect();
            (op, OwnedRow::new(datums))
        }))
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let input = std::mem::replace(&mut self.input, Box::new(super::Taken)).execute();
        #[for_await]
        for msg in input {
            match msg? {
                Message::Chunk(chunk) => {
                    let out = self.project(&chunk);
                    if !out.is_empty() {
                        yield Message::Chunk(out);
                    }
                }
                Message::Barrier(b) => yield Message::Barrier(b),
            }
        }
    }
}

impl Execute for ProjectExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!(
            "Project(actor {}, {} exprs)",
            self.eval.actor_id,
            self.exprs.len()
        )
    }
}
