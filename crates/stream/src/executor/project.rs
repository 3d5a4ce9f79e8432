use epochlab_common::{ExprNode, OwnedRow, StreamChunk};
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::non_strict::NonStrict;
use super::{BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, Watermark};

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

    /// The watermarks of the output columns whose expression derives one from `w`'s column (RisingWave's
    /// `watermark_derivations`): the expression over a row holding only the watermark's value.
    fn derive_watermarks(&self, w: &Watermark) -> Vec<Watermark> {
        let mut row = vec![None; w.col_idx + 1];
        row[w.col_idx] = Some(w.val.clone());
        let row = OwnedRow::new(row);
        let derived = self.exprs.iter().enumerate();
        derived
            .filter(|(_, e)| e.derives_watermark(w.col_idx))
            .filter_map(|(i, e)| {
                let val = self.eval.eval(e, &row)?;
                Some(Watermark::new(i, e.return_type(), val))
            })
            .collect()
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
                Message::Watermark(w) => {
                    for w in self.derive_watermarks(&w) {
                        yield Message::Watermark(w);
                    }
                }
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
