//! A watched value whose waiters wake in a deterministic order.
//!
//! `tokio::sync::watch` spreads its waiters over several `Notify`s chosen by tokio's thread-local RNG, which
//! no seed controls, so the order in which waiting tasks wake differs from run to run. This one keeps a single
//! `Notify`, whose waiters wake in the order they started waiting.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

#[derive(Clone)]
pub struct Watch<T> {
    inner: Arc<(Mutex<T>, Notify)>,
}

impl<T: Clone> Watch<T> {
    pub fn new(value: T) -> Self {
        Self {
            inner: Arc::new((Mutex::new(value), Notify::new())),
        }
    }

    pub fn get(&self) -> T {
        self.inner
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Set the value and wake every waiter.
    pub fn set(&self, value: T) {
        *self.inner.0.lock().unwrap_or_else(|e| e.into_inner()) = value;
        self.inner.1.notify_waiters();
    }

    /// Change the value in place; waiters wake only when `f` returns true.
    pub fn update(&self, f: impl FnOnce(&mut T) -> bool) {
        let changed = f(&mut self.inner.0.lock().unwrap_or_else(|e| e.into_inner()));
        if changed {
            self.inner.1.notify_waiters();
        }
    }

    /// Wait until `pred` holds for the value; returns that value.
    pub async fn wait_for(&self, mut pred: impl FnMut(&T) -> bool) -> T {
        loop {
            let notified = self.inner.1.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let v = self.get();
            if pred(&v) {
                return v;
            }
            notified.await;
        }
    }

    /// Wait for the next `set` (or changing `update`) after this call.
    pub async fn changed(&self) {
        self.inner.1.notified().await;
    }
}
