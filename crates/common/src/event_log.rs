//! The event log: one line per event (inject, collect, commit, register, unregister, reset, kill, failure,
//! DDL, ...) stamped with the simulation's virtual time. Its digest covers every line and nothing else, so two
//! runs with the same seed must produce the same digest, byte for byte.
//!
//! The log keeps the most recent `capacity` lines in memory (the digest still covers all of them); a run that
//! must compare whole logs across processes writes them out with [`EventLog::lines`] as it goes.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex};

use crate::clock::Clock;
use crate::hash::Fnv64;

pub const DEFAULT_CAPACITY: usize = 200_000;

#[derive(Clone)]
pub struct EventLog {
    clock: Clock,
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    digest: Fnv64,
    total: u64,
    capacity: usize,
    lines: VecDeque<String>,
}

impl EventLog {
    pub fn new(clock: Clock) -> Self {
        Self::with_capacity(clock, DEFAULT_CAPACITY)
    }

    pub fn with_capacity(clock: Clock, capacity: usize) -> Self {
        assert!(capacity > 0);
        Self {
            clock,
            inner: Arc::new(Mutex::new(Inner {
                digest: Fnv64::default(),
                total: 0,
                capacity,
                lines: VecDeque::new(),
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Record one event: `kind` is a short fixed name ("inject barrier"), `detail` its ids and values. It is
    /// also an INFO line of target `epochlab::event` (`RUST_LOG=epochlab::event=info`).
    pub fn record(&self, kind: &str, detail: fmt::Arguments<'_>) {
        let us = self.clock.elapsed_us();
        let line = format!(
            "{:>6}.{:06} {kind}: {detail}",
            us / 1_000_000,
            us % 1_000_000
        );
        // The same event for `RUST_LOG` (target `epochlab::event`); the log format stamps it with virtual time.
        // `vt_us` places the event at its virtual time in the exported span (the log format does not print it).
        tracing::info!(target: "epochlab::event", vt_us = us as i64, "{kind}: {detail}");
        let mut inner = self.lock();
        inner.digest.update(line.as_bytes());
        inner.digest.update(b"\n");
        inner.total += 1;
        if inner.lines.len() == inner.capacity {
            inner.lines.pop_front();
        }
        inner.lines.push_back(line);
    }

    /// The digest of every line recorded so far, as 16 hex digits.
    pub fn digest(&self) -> String {
        format!("{:016x}", self.lock().digest.finish())
    }

    pub fn total(&self) -> u64 {
        self.lock().total
    }

    /// The lines still held (the most recent `capacity`).
    pub fn lines(&self) -> Vec<String> {
        self.lock().lines.iter().cloned().collect()
    }
}

/// `event!(log, "inject barrier", "epoch={} kind={:?}", e, k)`
#[macro_export]
macro_rules! event {
    ($log:expr, $kind:expr, $($arg:tt)*) => {
        $log.record($kind, format_args!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_covers_lines_not_capacity() {
        let clock = Clock::manual(0);
        let a = EventLog::with_capacity(clock.clone(), 2);
        let b = EventLog::with_capacity(clock.clone(), 100);
        for i in 0..5 {
            event!(a, "tick", "i={i}");
            event!(b, "tick", "i={i}");
            clock.advance_ms(1);
        }
        assert_eq!(a.digest(), b.digest());
        assert_eq!(a.lines().len(), 2);
        assert_eq!(b.lines()[1], "     0.001000 tick: i=1");
        event!(b, "tick", "extra");
        assert_ne!(a.digest(), b.digest());
    }
}
