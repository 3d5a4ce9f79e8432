//! The simulation's seeded RNG.

use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
}
