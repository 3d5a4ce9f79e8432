use std::future::Future;
use std::time::Duration;

use epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS;
use epochlab_common::{Clock, EventLog, SimRng};

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

impl<T> SimOutput<T> {
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> SimOutput<U> {
        SimOutput {
            value: f(self.value),
            seed: self.seed,
            digest: self.digest,
            events: self.events,
            virtual_elapsed: self.virtual_elapsed,
            log: self.log,
        }
    }
}

/// A program that did not finish within its virtual time limit.
#[derive(Clone, Debug)]
pub struct TimedOut {
    pub limit: Duration,
    /// The last lines of the event log.
    pub tail: Vec<String>,
}

/// How much virtual time a run may take by default before it is declared hung.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(3600);

/// Run `program` on a fresh deterministic runtime with `seed`, its clock starting at the default origin.
/// Panics if the program takes more than [`DEFAULT_TIME_LIMIT`] of virtual time (a hung simulation would
/// otherwise spin through virtual time forever).
pub fn run<F, Fut, T>(seed: u64, program: F) -> SimOutput<T>
where
    F: FnOnce(SimContext) -> Fut,
    Fut: Future<Output = T>,
{
    run_with_origin(seed, DEFAULT_ORIGIN_UNIX_MS, DEFAULT_TIME_LIMIT, program)
}

pub fn run_with_origin<F, Fut, T>(
    seed: u64,
    origin_unix_ms: u64,
    time_limit: Duration,
    program: F,
) -> SimOutput<T>
where
    F: FnOnce(SimContext) -> Fut,
    Fut: Future<Output = T>,
{
    try_run_with_origin(seed, origin_unix_ms, time_limit, program).map(|v| {
        v.unwrap_or_else(|t| {
            panic!(
                "simulation with seed {seed} exceeded its virtual time limit of {:?}; last events:\n{}",
                t.limit,
                t.tail.join("\n")
            )
        })
    })
}

/// Run `program` as [`run`] does, but a program that exceeds `time_limit` of virtual time yields
/// `Err(TimedOut)` instead of a panic.
pub fn try_run<F, Fut, T>(
    seed: u64,
    time_limit: Duration,
    program: F,
) -> SimOutput<Result<T, TimedOut>>
where
    F: FnOnce(SimContext) -> Fut,
    Fut: Future<Output = T>,
{
    try_run_with_origin(seed, DEFAULT_ORIGIN_UNIX_MS, time_limit, program)
}

pub fn try_run_with_origin<F, Fut, T>(
    seed: u64,
    origin_unix_ms: u64,
    time_limit: Duration,
    program: F,
) -> SimOutput<Result<T, TimedOut>>
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
        // Log lines of this run carry its virtual time (see `epochlab_common::clock::with_current_run`).
        let _run = epochlab_common::clock::enter_run(clock.clone(), format!("seed={seed}"));
        let log = EventLog::new(clock.clone());
        let ctx = SimContext {
            seed,
            rng: SimRng::new(seed),
            clock: clock.clone(),
            log: log.clone(),
        };
        let value = match tokio::time::timeout(time_limit, program(ctx)).await {
            Ok(v) => Ok(v),
            Err(_) => {
                let lines = log.lines();
                let tail = lines[lines.len().saturating_sub(20)..].to_vec();
                Err(TimedOut {
                    limit: time_limit,
                    tail,
                })
            }
        };
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
