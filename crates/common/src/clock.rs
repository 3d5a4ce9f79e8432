//! The clock that physical time is read from.
//!
//! Engine code never reads the OS clock. A simulation runs on a tokio runtime whose time is paused and
//! auto-advanced; [`Clock::virtual_from`] maps tokio's (virtual) instants onto a fixed origin, so that the
//! same seed produces the same epochs on every run and machine. Telemetry shifts these times onto the wall
//! clock only when it exports them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// 2024-02-01T00:00:00Z, the day RisingWave issue #14910 was filed: the default origin of simulated time.
pub const DEFAULT_ORIGIN_UNIX_MS: u64 = 1_706_745_600_000;

#[derive(Clone, Debug)]
pub struct Clock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
enum Inner {
    /// `origin + (tokio::time::Instant::now() - start)`; virtual when the runtime's time is paused.
    Tokio {
        origin_unix_ms: u64,
        start: tokio::time::Instant,
    },
    /// Set by hand; for unit tests that run without a runtime.
    Manual { now_unix_us: AtomicU64 },
}

impl Clock {
    /// A clock that reads tokio's time, starting at `origin_unix_ms`. Must be created inside the runtime
    /// whose time it reads (outside a runtime tokio falls back to the OS clock).
    pub fn virtual_from(origin_unix_ms: u64) -> Self {
        Self {
            inner: Arc::new(Inner::Tokio {
                origin_unix_ms,
                start: tokio::time::Instant::now(),
            }),
        }
    }

    /// A clock that only moves when [`Clock::advance_ms`] is called.
    pub fn manual(origin_unix_ms: u64) -> Self {
        Self {
            inner: Arc::new(Inner::Manual {
                now_unix_us: AtomicU64::new(origin_unix_ms * 1000),
            }),
        }
    }

    /// Advance a manual clock. Panics on a tokio clock: its time moves with the runtime.
    pub fn advance_ms(&self, ms: u64) {
        match &*self.inner {
            Inner::Manual { now_unix_us } => {
                now_unix_us.fetch_add(ms * 1000, Ordering::SeqCst);
            }
            Inner::Tokio { .. } => panic!("a tokio clock advances with the runtime's time"),
        }
    }

    /// Microseconds since the Unix epoch, in the clock's (possibly virtual) time.
    pub fn now_unix_us(&self) -> u64 {
        match &*self.inner {
            Inner::Tokio {
                origin_unix_ms,
                start,
            } => origin_unix_ms * 1000 + start.elapsed().as_micros() as u64,
            Inner::Manual { now_unix_us } => now_unix_us.load(Ordering::SeqCst),
        }
    }

    pub fn now_unix_ms(&self) -> u64 {
        self.now_unix_us() / 1000
    }

    /// Microseconds since the clock's origin: the "virtual time" printed in event logs.
    pub fn elapsed_us(&self) -> u64 {
        self.now_unix_us() - self.origin_unix_ms() * 1000
    }

    pub fn origin_unix_ms(&self) -> u64 {
        match &*self.inner {
            Inner::Tokio { origin_unix_ms, .. } => *origin_unix_ms,
            // A manual clock's origin is where it started; it is not tracked separately.
            Inner::Manual { .. } => 0,
        }
    }
}

thread_local! {
    /// The simulation running on this thread, if any: its clock and a label (`buggy seed=1`).
    static CURRENT_RUN: std::cell::RefCell<Option<(Clock, String)>> = const { std::cell::RefCell::new(None) };
}

/// Marks the simulation running on this thread until dropped, so that log lines can be stamped with its
/// virtual time and label ([`with_current_run`]).
pub struct CurrentRunGuard(());

impl Drop for CurrentRunGuard {
    fn drop(&mut self) {
        CURRENT_RUN.with(|c| c.borrow_mut().take());
    }
}

/// A simulation with `clock` starts on this thread.
pub fn enter_run(clock: Clock, label: String) -> CurrentRunGuard {
    CURRENT_RUN.with(|c| *c.borrow_mut() = Some((clock, label)));
    CurrentRunGuard(())
}

/// Name the run on this thread (e.g. its mode and seed), once the caller knows it.
pub fn label_current_run(label: String) {
    CURRENT_RUN.with(|c| {
        if let Some((_, l)) = c.borrow_mut().as_mut() {
            *l = label;
        }
    });
}

/// The run on this thread, if any: its clock and label.
pub fn with_current_run<R>(f: impl FnOnce(Option<(&Clock, &str)>) -> R) -> R {
    CURRENT_RUN.with(|c| f(c.borrow().as_ref().map(|(clock, l)| (clock, l.as_str()))))
}
