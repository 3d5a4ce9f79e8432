//! Channels between actors. Each (upstream actor, downstream actor) edge of a given generation is one bounded
//! channel; whichever end is asked for first creates it. Bounded channels are the back-pressure: a slow
//! downstream blocks its upstream's dispatcher, and barriers queue behind data.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use epochlab_common::ActorId;
use tokio::sync::mpsc;

use crate::executor::Message;

/// Messages an exchange channel holds before its sender waits.
pub const DEFAULT_EXCHANGE_CAPACITY: usize = 16;

type Key = (u64, ActorId, ActorId);

#[derive(Default)]
struct Slot {
    tx: Option<mpsc::Sender<Message>>,
    rx: Option<mpsc::Receiver<Message>>,
}

/// The cluster-wide registry of exchange channels (it stands for the network between actors).
#[derive(Clone)]
pub struct ExchangeRegistry {
    inner: Arc<Mutex<BTreeMap<Key, Slot>>>,
    capacity: usize,
}

impl Default for ExchangeRegistry {
    fn default() -> Self {
        Self::new(DEFAULT_EXCHANGE_CAPACITY)
    }
}

impl ExchangeRegistry {
    pub fn new(capacity: usize) -> Self {
        assert!(capacity > 0);
        Self {
            inner: Arc::default(),
            capacity,
        }
    }

    fn with_slot<T>(&self, key: Key, f: impl FnOnce(&mut Slot) -> T) -> T {
        let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let slot = map.entry(key).or_insert_with(|| {
            let (tx, rx) = mpsc::channel(self.capacity);
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

    pub fn take_sender(
        &self,
        generation: u64,
        up: ActorId,
        down: ActorId,
    ) -> mpsc::Sender<Message> {
        self.with_slot((generation, up, down), |s| s.tx.take())
            .unwrap_or_else(|| panic!("sender {up}->{down} (generation {generation}) taken twice"))
    }

    pub fn take_receiver(
        &self,
        generation: u64,
        up: ActorId,
        down: ActorId,
    ) -> mpsc::Receiver<Message> {
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
