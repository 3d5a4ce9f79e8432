use std::pin::Pin;
use std::task::{Context, Poll};

use epochlab_barrier::Barrier;
use epochlab_common::ActorId;
use futures::{Stream, StreamExt};
use futures_async_stream::try_stream;

use super::{
    BoxedExecutor, BoxedMessageStream, BufferedWatermarks, Execute, Message, StreamExecutorError,
    StreamExecutorResult,
};

/// Every input's chunks, with barriers aligned over the inputs (RisingWave's `UnionExecutor`, UNION ALL):
/// an input that delivers a barrier is not polled again until every input has delivered the barrier of the
/// same epoch; then the one barrier goes out. A column's watermark goes out as the minimum over the inputs.
pub struct UnionExecutor {
    actor_id: ActorId,
    inputs: Vec<BoxedExecutor>,
}

impl UnionExecutor {
    pub fn new(actor_id: ActorId, inputs: Vec<BoxedExecutor>) -> Self {
        assert!(!inputs.is_empty(), "a union needs an input");
        Self { actor_id, inputs }
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(self) {
        let inputs = self.inputs.into_iter().map(|i| i.execute()).collect();
        let aligned = AlignedInputs::new(self.actor_id, inputs);
        #[for_await]
        for msg in aligned {
            yield msg?;
        }
    }
}

/// The inputs polled round-robin from a moving start (deterministic, and no input starves), each blocked
/// from its barrier until the others deliver theirs.
struct AlignedInputs {
    actor_id: ActorId,
    inputs: Vec<BoxedMessageStream>,
    /// Inputs that have not delivered the pending barrier (nor ended).
    active: Vec<usize>,
    blocked: Vec<usize>,
    pending: Option<Barrier>,
    next: usize,
    /// Each input's watermarks: the minimum goes out.
    watermarks: BufferedWatermarks,
}

impl AlignedInputs {
    fn new(actor_id: ActorId, inputs: Vec<BoxedMessageStream>) -> Self {
        let n = inputs.len();
        Self {
            actor_id,
            inputs,
            active: (0..n).collect(),
            blocked: Vec::with_capacity(n),
            pending: None,
            next: 0,
            watermarks: BufferedWatermarks::new(n),
        }
    }

    /// Input `idx` delivered barrier `b`: block it; an epoch other than the pending one is an error.
    fn on_barrier(&mut self, pos: usize, b: Barrier) -> StreamExecutorResult<()> {
        if let Some(p) = &self.pending
            && p.epoch != b.epoch
        {
            let executor = format!("Union(actor {})", self.actor_id);
            return Err(StreamExecutorError::misaligned(executor, p, &b));
        }
        let idx = self.active.remove(pos);
        self.blocked.push(idx);
        self.pending.get_or_insert(b);
        Ok(())
    }
}

impl Stream for AlignedInputs {
    type Item = StreamExecutorResult<Message>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let mut tried = 0;
        while tried < this.active.len() {
            let pos = this.next % this.active.len();
            let idx = this.active[pos];
            match this.inputs[idx].poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(Message::Chunk(c)))) => {
                    this.next = pos + 1;
                    return Poll::Ready(Some(Ok(Message::Chunk(c))));
                }
                Poll::Ready(Some(Ok(Message::Watermark(w)))) => {
                    this.next = pos + 1;
                    if let Some(w) = this.watermarks.handle(idx, w) {
                        return Poll::Ready(Some(Ok(Message::Watermark(w))));
                    }
                    tried = 0;
                }
                Poll::Ready(Some(Ok(Message::Barrier(b)))) => {
                    if let Err(e) = this.on_barrier(pos, b) {
                        return Poll::Ready(Some(Err(e)));
                    }
                    tried = 0;
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => {
                    this.active.remove(pos);
                    tried = 0;
                }
                Poll::Pending => {
                    this.next = pos + 1;
                    tried += 1;
                }
            }
        }
        if this.active.is_empty() {
            return match this.pending.take() {
                Some(b) => {
                    this.active = std::mem::take(&mut this.blocked);
                    this.active.sort_unstable();
                    this.next = 0;
                    Poll::Ready(Some(Ok(Message::Barrier(b))))
                }
                None => Poll::Ready(None),
            };
        }
        Poll::Pending
    }
}

impl Execute for UnionExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!(
            "Union(actor {}, {} inputs)",
            self.actor_id,
            self.inputs.len()
        )
    }
}
