//! (I6 one-writer) No write reaches the meta store from a meta once a later one has claimed it (issue 56,
//! stage 5; `meta-failover.md` §6): a meta killed, or whose lease ran out, writes nothing more. Its barriers
//! are covered too: each commits the epoch high-water mark before it is sent, so a deposed meta's barrier is a
//! write of its term.
//!
//! Checked outside meta, on the cluster's side of the store: [`WatchedStore`] wraps the store every meta of
//! the cluster opens and sees every commit asked of it, refused or not. The store's own term fence refuses a
//! stale write; this check holds meta to never sending one (RisingWave's etcd store had no fence: a deposed
//! leader's write would have landed).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use epochlab_common::Clock;
use epochlab_meta::store::{MetaRows, MetaStore, MetaStoreError, StoreOp};

use crate::report::Violation;

pub const INVARIANT: &str = "I6 one-writer";

/// Where the check reports (the checkers' list).
pub type ViolationSink = Arc<dyn Fn(Violation) + Send + Sync>;

/// A meta store, watched: the latest term claimed, and every commit of an older one.
pub struct WatchedStore {
    inner: Arc<dyn MetaStore>,
    latest: AtomicU64,
    clock: Clock,
    sink: Mutex<Option<ViolationSink>>,
    stale: AtomicU64,
}

impl WatchedStore {
    pub fn new(inner: Arc<dyn MetaStore>, clock: Clock) -> Self {
        Self {
            inner,
            latest: AtomicU64::new(0),
            clock,
            sink: Mutex::new(None),
            stale: AtomicU64::new(0),
        }
    }

    /// Report each stale write to `sink` from now on.
    pub fn report_to(&self, sink: ViolationSink) {
        *self.sink.lock().unwrap_or_else(|e| e.into_inner()) = Some(sink);
    }

    /// How many commits came from a meta of an older term.
    pub fn stale_writes(&self) -> u64 {
        self.stale.load(Ordering::Relaxed)
    }
}

impl MetaStore for WatchedStore {
    fn claim(&self) -> Result<u64, MetaStoreError> {
        let term = self.inner.claim()?;
        self.latest.fetch_max(term, Ordering::Relaxed);
        Ok(term)
    }

    fn commit(&self, term: u64, ops: Vec<StoreOp>) -> Result<(), MetaStoreError> {
        let latest = self.latest.load(Ordering::Relaxed);
        if term < latest {
            self.stale.fetch_add(1, Ordering::Relaxed);
            let sink = self.sink.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if let Some(sink) = sink {
                let mut v = Violation::new(
                    INVARIANT,
                    format!(
                        "a meta of term {term} wrote {} op(s) after term {latest} claimed the store",
                        ops.len()
                    ),
                );
                v.at_us = Some(self.clock.elapsed_us());
                sink(v);
            }
        }
        self.inner.commit(term, ops)
    }

    fn load(&self) -> Result<MetaRows, MetaStoreError> {
        self.inner.load()
    }

    fn write_sqlite(&self, path: &std::path::Path) -> Result<(), MetaStoreError> {
        self.inner.write_sqlite(path)
    }
}
