use std::pin::Pin;
use std::task::{Context, Poll};

use epochlab_barrier::Barrier;
use epochlab_common::ActorId;
use futures::{Stream, StreamExt};

use crate::task::exchange::PermitReceiver;

use super::{BoxedMessageStream, Execute, Message, StreamExecutorError, StreamExecutorResult};

/// N upstream actors into one stream with barrier alignment (RisingWave's `MergeExecutor` /
/// `SelectReceivers`): chunks pass as they come; an upstream that delivers a barrier is blocked until every
/// upstream has delivered the barrier of the same epoch (another epoch is an error); then the one barrier
/// goes out and all upstreams resume. After a barrier that stops this actor the stream ends.
pub struct MergeExecutor {
    actor_id: ActorId,
    upstreams: Vec<(ActorId, PermitReceiver)>,
}

impl MergeExecutor {
    pub fn new(actor_id: ActorId, upstreams: Vec<(ActorId, PermitReceiver)>) -> Self {
        assert!(!upstreams.is_empty(), "a merge needs an upstream");
        Self {
            actor_id,
            upstreams,
        }
    }
}

struct SelectReceivers {
    actor_id: ActorId,
    upstreams: Vec<(ActorId, PermitReceiver)>,
    /// Indices of upstreams that have not yet delivered the pending barrier.
    active: Vec<usize>,
    blocked: Vec<usize>,
    pending: Option<Barrier>,
    /// Round-robin start among `active`, so that no upstream starves (and the order is deterministic).
    next: usize,
    ended: bool,
}

impl Stream for SelectReceivers {
    type Item = StreamExecutorResult<Message>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        'outer: loop {
            if this.active.is_empty() {
                let barrier = this
                    .pending
                    .take()
                    .expect("all upstreams blocked on a barrier");
                if barrier.is_stop(this.actor_id) {
                    this.ended = true;
                } else {
                    this.active = std::mem::take(&mut this.blocked);
                    this.active.sort_unstable();
                }
                return Poll::Ready(Some(Ok(Message::Barrier(barrier))));
            }
            let n = this.active.len();
            for k in 0..n {
                let pos = (this.next + k) % n;
                let idx = this.active[pos];
                let (up_id, rx) = &mut this.upstreams[idx];
                match rx.poll_recv(cx) {
                    Poll::Ready(Some(Message::Chunk(c))) => {
                        this.next = (pos + 1) % n;
                        return Poll::Ready(Some(Ok(Message::Chunk(c))));
                    }
                    Poll::Ready(Some(Message::Barrier(b))) => {
                        if let Some(p) = &this.pending
                            && p.epoch != b.epoch
                        {
                            return Poll::Ready(Some(Err(
                                StreamExecutorError::BarrierMisaligned {
                                    executor: format!("Merge(actor {})", this.actor_id),
                                    expected: p.epoch.curr.0,
                                    got: b.epoch.curr.0,
                                },
                            )));
                        }
                        this.pending = Some(b);
                        this.active.remove(pos);
                        this.blocked.push(idx);
                        this.next = 0;
                        continue 'outer;
                    }
                    Poll::Ready(None) => {
                        return Poll::Ready(Some(Err(StreamExecutorError::ChannelClosed(
                            format!("from actor {up_id} to actor {}", this.actor_id),
                        ))));
                    }
                    Poll::Pending => {}
                }
            }
            return Poll::Pending;
        }
    }
}

impl Execute for MergeExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        let n = self.upstreams.len();
        SelectReceivers {
            actor_id: self.actor_id,
            upstreams: self.upstreams,
            active: (0..n).collect(),
            blocked: Vec::with_capacity(n),
            pending: None,
            next: 0,
            ended: false,
        }
        .boxed()
    }

    fn identity(&self) -> String {
        format!(
            "Merge(actor {}, {} upstreams)",
            self.actor_id,
            self.upstreams.len()
        )
    }
}
