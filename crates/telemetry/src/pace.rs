//! Live runs: a run's virtual time paced against the wall clock, and the wall-clock start its simulated times
//! are shifted onto.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use epochlab_sim::TimeObserver;

/// The wall-clock instant at which a run started: simulated times are shifted onto it (metrics, the metrics
/// timeline), and pacing measures from it.
#[derive(Clone, Copy, Debug)]
pub struct WallStart {
    instant: Instant,
    unix_ms: u64,
}

impl WallStart {
    pub fn now() -> Self {
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Self {
            instant: Instant::now(),
            unix_ms,
        }
    }

    /// Milliseconds since the Unix epoch.
    pub fn unix_ms(&self) -> u64 {
        self.unix_ms
    }
}

/// The fastest and slowest pace a run can be given (`--pace`).
pub const MIN_PACE: f64 = 0.01;
pub const MAX_PACE: f64 = 100_000.0;

/// Runs a simulation at `pace` times the wall clock: each time its virtual time moves on, the simulation's
/// thread sleeps until the wall clock has caught up (virtual time since the start, divided by the pace). The
/// simulation itself is unchanged: the same tasks run in the same order at the same virtual times.
#[derive(Debug)]
pub struct Pacer {
    start: WallStart,
    pace: f64,
}

impl Pacer {
    /// A pacer for a run that starts at `start`. `pace` is clamped to [`MIN_PACE`]..=[`MAX_PACE`].
    pub fn new(pace: f64, start: WallStart) -> Self {
        let pace = if pace.is_finite() { pace } else { MAX_PACE };
        Self {
            start,
            pace: pace.clamp(MIN_PACE, MAX_PACE),
        }
    }

    pub fn pace(&self) -> f64 {
        self.pace
    }
}

impl TimeObserver for Pacer {
    fn advanced(&self, now: Duration) {
        let due = self.start.instant + now.div_f64(self.pace);
        let wait = due.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
}
