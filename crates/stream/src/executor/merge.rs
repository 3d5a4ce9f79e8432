use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use epochlab_barrier::Barrier;
use epochlab_common::ActorId;
use futures::{Stream, StreamExt};

use crate::task::exchange::PermitReceiver;

use super::{
    BoxedMessageStream, BufferedWatermarks, Execute, Message, StreamExecutorError,
    StreamExecutorResult,
};

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

/// Which upstreams woke the merge since it last polled them, and the merge's own waker. Each upstream's
/// channel is polled with a waker of its own ([`UpstreamWaker`]), so a poll of the merge skips the upstreams
/// that have nothing new: with `p` upstreams, a barrier costs `p` channel polls, not `p` per wake-up.
#[derive(Default)]
struct Wakeups {
    woken: Vec<bool>,
    task: Option<Waker>,
}

struct UpstreamWaker {
    index: usize,
    wakeups: Arc<Mutex<Wakeups>>,
}

impl Wake for UpstreamWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let task = {
            let mut w = self.wakeups.lock().unwrap_or_else(|e| e.into_inner());
            w.woken[self.index] = true;
            w.task.clone()
        };
        if let Some(task) = task {
            task.wake();
        }
    }
}

struct SelectReceivers {
    actor_id: ActorId,
    upstreams: Vec<(ActorId, PermitReceiver)>,
    wakeups: Arc<Mutex<Wakeups>>,
    /// One waker per upstream, made once.
    wakers: Vec<Waker>,
    /// Indices of upstreams that have not yet delivered the pending barrier.
    active: Vec<usize>,
    blocked: Vec<usize>,
    pending: Option<Barrier>,
    /// Round-robin start among `active`, so that no upstream starves (and the order is deterministic).
    next: usize,
    ended: bool,
    /// Each upstream's watermarks: the minimum goes out (RisingWave's `BufferedWatermarks`).
    watermarks: BufferedWatermarks,
}

impl SelectReceivers {
    fn new(actor_id: ActorId, upstreams: Vec<(ActorId, PermitReceiver)>) -> Self {
        let n = upstreams.len();
        let wakeups = Arc::new(Mutex::new(Wakeups {
            // Every upstream is polled once before its waker has been registered.
            woken: vec![true; n],
            task: None,
        }));
        let wakers = (0..n)
            .map(|index| {
                let wakeups = wakeups.clone();
                Waker::from(Arc::new(UpstreamWaker { index, wakeups }))
            })
            .collect();
        SelectReceivers {
            actor_id,
            upstreams,
            wakeups,
            wakers,
            active: (0..n).collect(),
            blocked: Vec::with_capacity(n),
            pending: None,
            next: 0,
            ended: false,
            watermarks: BufferedWatermarks::new(n),
        }
    }

    /// Register the task's waker; whether upstream `idx` must be polled, clearing its mark. An upstream not
    /// woken since its last poll would answer `Pending` without any effect, so skipping it changes nothing;
    /// but when the task's cooperative budget is spent a poll defers the task's wake-up, so then every
    /// upstream is polled as before and the schedule stays the same.
    fn take_woken(&self, idx: usize) -> bool {
        let mut w = self.wakeups.lock().unwrap_or_else(|e| e.into_inner());
        let woken = std::mem::replace(&mut w.woken[idx], false);
        woken || !tokio::task::coop::has_budget_remaining()
    }

    fn register(&self, cx: &Context<'_>) {
        let mut w = self.wakeups.lock().unwrap_or_else(|e| e.into_inner());
        match &w.task {
            Some(t) if t.will_wake(cx.waker()) => {}
            _ => w.task = Some(cx.waker().clone()),
        }
    }
}

fn mark_woken(wakeups: &Mutex<Wakeups>, idx: usize) {
    wakeups.lock().unwrap_or_else(|e| e.into_inner()).woken[idx] = true;
}

impl Stream for SelectReceivers {
    type Item = StreamExecutorResult<Message>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        this.register(cx);
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
                if !this.take_woken(idx) {
                    continue;
                }
                let (up_id, rx) = &mut this.upstreams[idx];
                let mut up_cx = Context::from_waker(&this.wakers[idx]);
                let polled = rx.poll_recv(&mut up_cx);
                if polled.is_ready() {
                    // More may wait behind this message, and no wake-up will say so.
                    mark_woken(&this.wakeups, idx);
                }
                match polled {
                    Poll::Ready(Some(Message::Chunk(c))) => {
                        this.next = (pos + 1) % n;
                        return Poll::Ready(Some(Ok(Message::Chunk(c))));
                    }
                    Poll::Ready(Some(Message::Watermark(w))) => {
                        this.next = (pos + 1) % n;
                        if let Some(w) = this.watermarks.handle(idx, w) {
                            return Poll::Ready(Some(Ok(Message::Watermark(w))));
                        }
                        continue 'outer;
                    }
                    Poll::Ready(Some(Message::Barrier(b))) => {
                        if let Some(p) = &this.pending
                            && p.epoch != b.epoch
                        {
                            let executor = format!("Merge(actor {})", this.actor_id);
                            return Poll::Ready(Some(Err(StreamExecutorError::misaligned(
                                executor, p, &b,
                            ))));
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
        SelectReceivers::new(self.actor_id, self.upstreams).boxed()
    }

    fn identity(&self) -> String {
        format!(
            "Merge(actor {}, {} upstreams)",
            self.actor_id,
            self.upstreams.len()
        )
    }
}
