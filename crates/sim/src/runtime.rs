use std::future::Future;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS;
use epochlab_common::{Clock, EventLog};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The simulation's one source of randomness. Cloning shares the stream: every draw, from any task, takes the
/// next value, so the order of draws (fixed by the deterministic scheduler) fixes their values.
#[derive(Clone)]
pub struct SimRng {
    inner: Arc<Mutex<ChaCha8Rng>>,
}

impl SimRng {
    pub fn new(seed: u64) -> Self {
        Self {
            inner: Arc::new(Mutex::new(ChaCha8Rng::seed_from_u64(seed))),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut ChaCha8Rng) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A value in `range` (half-open).
    pub fn range_u64(&self, range: Range<u64>) -> u64 {
        self.with(|r| r.random_range(range))
    }

    /// A float in `[lo, hi)`.
    pub fn range_f64(&self, lo: f64, hi: f64) -> f64 {
        self.with(|r| r.random_range(lo..hi))
    }

    /// `true` with probability `p`.
    pub fn bool(&self, p: f64) -> bool {
        self.with(|r| r.random_bool(p))
    }

    /// A duration drawn uniformly from `range`, in whole microseconds.
    pub fn duration(&self, range: Range<Duration>) -> Duration {
        let lo = range.start.as_micros() as u64;
        let hi = range.end.as_micros() as u64;
        if hi <= lo {
            return range.start;
        }
        Duration::from_micros(self.range_u64(lo..hi))
    }

    /// A new independent RNG seeded from this one (for a sub-system that must not shift others' draws).
    pub fn fork(&self) -> SimRng {
        SimRng::new(self.with(|r| r.random()))
    }
}

/// What a simulated program gets: its seed, the RNG, the clock and the event log.
#[derive(Clone)]
pub struct SimContext {
    pub seed: u64,
    pub rng: SimRng,
    pub clock: Clock,
    pub log: EventLog,
}

/// A finished simulation.
pub struct SimOutput<T> {
    pub value: T,
    pub seed: u64,
    pub digest: String,
    pub events: u64,
    /// Virtual time the run took.
    pub virtual_elapsed: Duration,
    pub log: EventLog,
}

/// Run `program` on a fresh deterministic runtime with `seed`, its clock starting at the default origin.
pub fn run<F, Fut, T>(seed: u64, program: F) -> SimOutput<T>
where
    F: FnOnce(SimContext) -> Fut,
    Fut: Future<Output = T>,
{
    run_with_origin(seed, DEFAULT_ORIGIN_UNIX_MS, program)
}

pub fn run_with_origin<F, Fut, T>(seed: u64, origin_unix_ms: u64, program: F) -> SimOutput<T>
where
    F: FnOnce(SimContext) -> Fut,
    Fut: Future<Output = T>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("building a current-thread runtime cannot fail");
    rt.block_on(async move {
        let clock = Clock::virtual_from(origin_unix_ms);
        let log = EventLog::new(clock.clone());
        let ctx = SimContext {
            seed,
            rng: SimRng::new(seed),
            clock: clock.clone(),
            log: log.clone(),
        };
        let value = program(ctx).await;
        SimOutput {
            value,
            seed,
            digest: log.digest(),
            events: log.total(),
            virtual_elapsed: Duration::from_micros(clock.elapsed_us()),
            log,
        }
    })
}
