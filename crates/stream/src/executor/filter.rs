use epochlab_common::{ExprNode, Op, OwnedRow, ScalarImpl, StreamChunk};
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::non_strict::NonStrict;
use super::{BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError};

/// The visible rows for which the predicate is true (RisingWave's `FilterExecutor`). Evaluation is
/// non-strict: a predicate that fails is NULL, and the row is dropped. An update pair whose two sides
/// disagree becomes the side that passes: a `Delete` of the old row or an `Insert` of the new one.
pub struct FilterExecutor {
    input: BoxedExecutor,
    predicate: ExprNode,
    eval: NonStrict,
}

impl FilterExecutor {
    pub fn new(input: BoxedExecutor, predicate: ExprNode, eval: NonStrict) -> Self {
        Self {
            input,
            predicate,
            eval,
        }
    }

    fn passes(&self, row: &OwnedRow) -> bool {
        matches!(
            self.eval.eval(&self.predicate, row),
            Some(ScalarImpl::Bool(true))
        )
    }

    fn filter(&self, chunk: &StreamChunk) -> StreamChunk {
        filter_chunk(chunk, |row| self.passes(row))
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let input = std::mem::replace(&mut self.input, Box::new(super::Taken)).execute();
        #[for_await]
        for msg in input {
            match msg? {
                Message::Chunk(chunk) => {
                    let out = self.filter(&chunk);
                    if !out.is_empty() {
                        yield Message::Chunk(out);
                    }
                }
                Message::Barrier(b) => yield Message::Barrier(b),
                Message::Watermark(w) => yield Message::Watermark(w),
            }
        }
    }
}

impl Execute for FilterExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!("Filter(actor {})", self.eval.actor_id)
    }
}

/// The rows of `chunk` that `passes`; an update pair whose two sides disagree becomes the side that passes
/// (RisingWave's `FilterExecutor::filter`, which the watermark filter shares).
pub(crate) fn filter_chunk(chunk: &StreamChunk, passes: impl Fn(&OwnedRow) -> bool) -> StreamChunk {
    let rows: Vec<(Op, &OwnedRow)> = chunk.rows().collect();
    let mut out = Vec::with_capacity(rows.len());
    let mut i = 0;
    while i < rows.len() {
        let (op, row) = rows[i];
        let pair =
            op == Op::UpdateDelete && rows.get(i + 1).is_some_and(|(o, _)| *o == Op::UpdateInsert);
        if !pair {
            if passes(row) {
                out.push((op, row.clone()));
            }
            i += 1;
            continue;
        }
        let new = rows[i + 1].1;
        match (passes(row), passes(new)) {
            (true, true) => {
                out.push((Op::UpdateDelete, row.clone()));
                out.push((Op::UpdateInsert, new.clone()));
            }
            (true, false) => out.push((Op::Delete, row.clone())),
            (false, true) => out.push((Op::Insert, new.clone())),
            (false, false) => {}
        }
        i += 2;
    }
    StreamChunk::from_pairs(out)
}
