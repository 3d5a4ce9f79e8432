//! Channels between actors, with RisingWave's permit-based back-pressure (`executor/exchange/permit.rs`).
//!
//! Each (upstream actor, downstream actor) edge of a given generation is one channel; whichever end is asked
//! for first creates it. A sender takes permits before it sends: a chunk takes one per row (at most
//! `initial_permits - batched_permits`, at least one), a barrier takes one of `concurrent_barriers`. The
//! receiver gives the permits back when it takes the message off the channel. So at most
//! `concurrent_barriers` barriers wait in a channel: an actor gets past a barrier only as fast as its
//! downstream takes the previous one, and barriers queue upstream, behind data.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use epochlab_common::ActorId;
use tokio::sync::Semaphore;

use crate::executor::Message;

/// RisingWave's `stream_exchange_*` settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExchangeConfig {
    /// Rows a channel may hold (`stream_exchange_initial_permits`, 2048).
    pub initial_permits: usize,
    /// Permits kept back from any one chunk (`stream_exchange_batched_permits`, 256).
    pub batched_permits: usize,
    /// Barriers a channel may hold (`stream_exchange_concurrent_barriers`, 1).
    pub concurrent_barriers: usize,
}

impl Default for ExchangeConfig {
    fn default() -> Self {
        Self {
            initial_permits: 2048,
            batched_permits: 256,
            concurrent_barriers: 1,
        }
    }
}

impl ExchangeConfig {
    fn max_chunk_permits(&self) -> usize {
        self.initial_permits - self.batched_permits
    }
}

enum Permit {
    Records(u32),
    Barrier,
    None,
}

struct Permits {
    records: Semaphore,
    barriers: Semaphore,
}

/// One channel's queue. A channel that was never used holds no buffer: a job of parallelism `p` behind a
/// hash exchange has `p * p` channels, so an empty one must cost a few words, not a pre-allocated block.
#[derive(Default)]
struct Queue {
    messages: VecDeque<(Message, Permit)>,
    rx_waker: Option<Waker>,
    sender_gone: bool,
    receiver_gone: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    permits: Permits,
}

impl Shared {
    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The sending end of an exchange channel.
pub struct PermitSender {
    shared: Arc<Shared>,
    max_chunk_permits: usize,
}

/// The channel's receiver is gone (its actor ended or was aborted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiverGone;

impl PermitSender {
    /// Wait for the message's permits, then send it.
    pub async fn send(&self, msg: Message) -> Result<(), ReceiverGone> {
        let permits = &self.shared.permits;
        let permit = match &msg {
            Message::Chunk(c) => {
                let n = c.cardinality().clamp(1, self.max_chunk_permits) as u32;
                let p = permits.records.acquire_many(n).await;
                p.map_err(|_| ReceiverGone)?.forget();
                Permit::Records(n)
            }
            Message::Barrier(_) => {
                let p = permits.barriers.acquire().await;
                p.map_err(|_| ReceiverGone)?.forget();
                Permit::Barrier
            }
            // A watermark takes no permit (RisingWave's counts records and barriers only).
            Message::Watermark(_) => Permit::None,
        };
        let waker = {
            let mut q = self.shared.queue();
            if q.receiver_gone {
                return Err(ReceiverGone);
            }
            if q.messages.capacity() == 0 {
                // Most channels of a wide exchange only ever hold a barrier at a time: room for one
                // message, not the four a first push would reserve (p² channels of them).
                q.messages.reserve_exact(1);
            }
            q.messages.push_back((msg, permit));
            q.rx_waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
        Ok(())
    }
}

impl Drop for PermitSender {
    fn drop(&mut self) {
        let waker = {
            let mut q = self.shared.queue();
            q.sender_gone = true;
            q.rx_waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The receiving end of an exchange channel: taking a message gives its permits back.
pub struct PermitReceiver {
    shared: Arc<Shared>,
}

impl PermitReceiver {
    /// Like tokio's channels, a receive spends the task's cooperative budget, so a busy actor yields to the
    /// others as it did when the exchange was a tokio channel (the simulation's schedule is unchanged).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Message>> {
        let coop = std::task::ready!(tokio::task::coop::poll_proceed(cx));
        let mut q = self.shared.queue();
        if let Some((msg, permit)) = q.messages.pop_front() {
            drop(q);
            let permits = &self.shared.permits;
            match permit {
                Permit::Records(n) => permits.records.add_permits(n as usize),
                Permit::Barrier => permits.barriers.add_permits(1),
                Permit::None => {}
            }
            coop.made_progress();
            return Poll::Ready(Some(msg));
        }
        if q.sender_gone {
            coop.made_progress();
            return Poll::Ready(None);
        }
        match &mut q.rx_waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            slot => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    pub async fn recv(&mut self) -> Option<Message> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }
}

impl Drop for PermitReceiver {
    fn drop(&mut self) {
        // A sender waiting for permits must learn that nobody will give them back; queued messages go now.
        let messages = {
            let mut q = self.shared.queue();
            q.receiver_gone = true;
            std::mem::take(&mut q.messages)
        };
        drop(messages);
        self.shared.permits.records.close();
        self.shared.permits.barriers.close();
    }
}

/// A channel with `config`'s permits.
pub fn permit_channel(config: ExchangeConfig) -> (PermitSender, PermitReceiver) {
    assert!(config.initial_permits > config.batched_permits && config.concurrent_barriers > 0);
    let shared = Arc::new(Shared {
        queue: Mutex::default(),
        permits: Permits {
            records: Semaphore::new(config.initial_permits),
            barriers: Semaphore::new(config.concurrent_barriers),
        },
    });
    let sender = PermitSender {
        shared: shared.clone(),
        max_chunk_permits: config.max_chunk_permits(),
    };
    (sender, PermitReceiver { shared })
}

type Key = (u64, ActorId, ActorId);

#[derive(Default)]
struct Slot {
    tx: Option<PermitSender>,
    rx: Option<PermitReceiver>,
}

/// The cluster-wide registry of exchange channels (it stands for the network between actors).
#[derive(Clone)]
pub struct ExchangeRegistry {
    inner: Arc<Mutex<BTreeMap<Key, Slot>>>,
    config: ExchangeConfig,
}

impl Default for ExchangeRegistry {
    fn default() -> Self {
        Self::new(ExchangeConfig::default())
    }
}

impl ExchangeRegistry {
    pub fn new(config: ExchangeConfig) -> Self {
        Self {
            inner: Arc::default(),
            config,
        }
    }

    pub fn config(&self) -> ExchangeConfig {
        self.config
    }

    fn with_slot<T>(&self, key: Key, f: impl FnOnce(&mut Slot) -> T) -> T {
        let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let slot = map.entry(key).or_insert_with(|| {
            let (tx, rx) = permit_channel(self.config);
            Slot {
                tx: Some(tx),
                rx: Some(rx),
            }
        });
        let out = f(slot);
        if slot.tx.is_none() && slot.rx.is_none() {
            map.remove(&key);
        }
        out
    }

    pub fn take_sender(&self, generation: u64, up: ActorId, down: ActorId) -> PermitSender {
        self.with_slot((generation, up, down), |s| s.tx.take())
            .unwrap_or_else(|| panic!("sender {up}->{down} (generation {generation}) taken twice"))
    }

    pub fn take_receiver(&self, generation: u64, up: ActorId, down: ActorId) -> PermitReceiver {
        self.with_slot((generation, up, down), |s| s.rx.take())
            .unwrap_or_else(|| {
                panic!("receiver {up}->{down} (generation {generation}) taken twice")
            })
    }

    /// Forget channels of older generations whose other end was never taken.
    pub fn purge_before(&self, generation: u64) {
        let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|(g, _, _), _| *g >= generation);
    }

    /// Channels with one end still waiting to be taken.
    pub fn pending(&self) -> usize {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use epochlab_barrier::{Barrier, BarrierKind};
    use epochlab_common::{Epoch, EpochPair, Op, StreamChunk, row};

    use super::*;

    fn barrier(n: u64) -> Message {
        let pair = EpochPair::new(Epoch((n + 1) << 16), Epoch(n << 16));
        Message::Barrier(Barrier::new(pair, BarrierKind::Checkpoint, None))
    }

    #[tokio::test(start_paused = true)]
    async fn one_barrier_at_a_time_and_rows_up_to_the_permits() {
        let config = ExchangeConfig {
            initial_permits: 4,
            batched_permits: 1,
            concurrent_barriers: 1,
        };
        let (tx, mut rx) = permit_channel(config);
        tx.send(barrier(1)).await.unwrap();
        let second = tokio::time::timeout(std::time::Duration::from_secs(1), tx.send(barrier(2)));
        assert!(
            second.await.is_err(),
            "a second barrier waits for the first to be taken"
        );
        assert!(matches!(rx.recv().await, Some(Message::Barrier(_))));
        tx.send(barrier(2)).await.unwrap();
        // A chunk of 10 rows takes at most initial - batched = 3 permits; then 1 is left.
        let rows = (0..10i64).map(|k| (Op::Insert, row![k]));
        tx.send(Message::Chunk(StreamChunk::from_pairs(rows)))
            .await
            .unwrap();
        let one = StreamChunk::from_pairs([(Op::Insert, row![1i64])]);
        tx.send(Message::Chunk(one.clone())).await.unwrap();
        let blocked = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            tx.send(Message::Chunk(one.clone())),
        );
        assert!(blocked.await.is_err(), "no record permit is left");
        drop(rx);
        assert_eq!(tx.send(Message::Chunk(one)).await, Err(ReceiverGone));
    }
}
