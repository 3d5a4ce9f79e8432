use futures::StreamExt;
use futures_async_stream::try_stream;

use super::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, expect_first_barrier,
};

/// A scan of the upstream without backfill: the job sees only changes made after it was created (its
/// upstream's dispatchers start sending at the job's Add barrier). Arrangement backfill replaces it.
pub struct ChainExecutor {
    input: BoxedExecutor,
}

impl ChainExecutor {
    pub fn new(input: BoxedExecutor) -> Self {
        Self { input }
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(self) {
        let mut input = self.input.execute();
        let first = expect_first_barrier(&mut input, "Chain").await?;
        yield Message::Barrier(first);
        #[for_await]
        for msg in input {
            yield msg?;
        }
    }
}

impl Execute for ChainExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        "Chain".into()
    }
}
