use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS;
use epochlab_common::{Clock, EventLog, SimRng};
use futures::FutureExt;

pub use crate::panic::TaskPanic;

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

/// Told of a run's virtual time as it moves on, on the simulation's thread: how telemetry paces a run against
/// the wall clock and samples its metrics, without a task or a timer of its own in the run.
///
/// The runtime's time only moves when every task waits: it then jumps to the next timer. An observer is
/// called right after each jump, before anything runs at the new time, so what the run shows then is what it
/// showed at every instant since the previous jump. It may block the thread (that is how pacing works) but
/// must not touch the run: the run's tasks, timers and event log are the same with or without observers.
pub trait TimeObserver: Send + Sync {
    /// Virtual time has moved on to `now` (since the run started).
    fn advanced(&self, now: Duration);
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

/// Why a run did not finish.
#[derive(Clone, Debug, thiserror::Error)]
pub enum RunError {
    #[error("the run exceeded its virtual time limit of {} s", .0.limit.as_secs())]
    TimedOut(TimedOut),
    /// A task of the run (the program itself or one it spawned) panicked: the run ended there.
    #[error(transparent)]
    Panicked(TaskPanic),
}

/// Run `program` as [`run`] does, but a program that exceeds `time_limit` of virtual time yields
/// `Err(TimedOut)` instead of a panic. A task that panics still makes this panic (with its message and
/// location), as it would a test: see [`try_run_observed`] for a run that reports it.
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
    try_run_observed(seed, origin_unix_ms, time_limit, Vec::new(), program).map(|v| match v {
        Ok(v) => Ok(v),
        Err(RunError::TimedOut(t)) => Err(t),
        // Raised again outside the run, so that the default hook prints it.
        Err(RunError::Panicked(p)) => panic!("simulation with seed {seed}: {p}"),
    })
}

/// Run `program` on a fresh deterministic runtime, telling each of `observers` whenever virtual time moves on.
/// It ends with `Err(RunError::TimedOut)` after `time_limit` of virtual time, and with
/// `Err(RunError::Panicked)` at the first panic of any of its tasks, at the virtual instant of the panic (see
/// [`crate::panic`]); a run without a panic is the same, event for event, as it would be without the watch.
pub fn try_run_observed<F, Fut, T>(
    seed: u64,
    origin_unix_ms: u64,
    time_limit: Duration,
    observers: Vec<Arc<dyn TimeObserver>>,
    program: F,
) -> SimOutput<Result<T, RunError>>
where
    F: FnOnce(SimContext) -> Fut,
    Fut: Future<Output = T>,
{
    // The run's clock while the program runs (observers are told nothing before or after).
    let run_clock: Arc<Mutex<Option<Clock>>> = Arc::default();
    let rt = observed_runtime(observers, run_clock.clone());
    rt.block_on(async move {
        let clock = Clock::virtual_from(origin_unix_ms);
        *run_clock.lock().unwrap_or_else(|e| e.into_inner()) = Some(clock.clone());
        // Log lines of this run carry its virtual time (see `epochlab_common::clock::with_current_run`).
        let _run = epochlab_common::clock::enter_run(clock.clone(), format!("seed={seed}"));
        let log = EventLog::new(clock.clone());
        let ctx = SimContext {
            seed,
            rng: SimRng::new(seed),
            clock: clock.clone(),
            log: log.clone(),
        };
        let _watch = crate::panic::watch(clock.clone());
        let program =
            AssertUnwindSafe(tokio::time::timeout(time_limit, program(ctx))).catch_unwind();
        let value = tokio::select! {
            biased;
            p = crate::panic::Panicked => Err(RunError::Panicked(p)),
            done = program => match done {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(_)) => Err(timed_out(&log, time_limit)),
                // The program itself panicked: the hook recorded where.
                Err(payload) => Err(program_panicked(payload.as_ref(), &clock)),
            },
        };
        run_clock.lock().unwrap_or_else(|e| e.into_inner()).take();
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

/// A fresh current-thread runtime with paused time that tells `observers` of the time in `run_clock` (while it
/// holds one) whenever that time jumps.
fn observed_runtime(
    observers: Vec<Arc<dyn TimeObserver>>,
    run_clock: Arc<Mutex<Option<Clock>>>,
) -> tokio::runtime::Runtime {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_time().start_paused(true);
    if !observers.is_empty() {
        // The scheduler calls this after each park of its thread, which is where paused time jumps; it
        // schedules nothing, so the run's order of tasks is the same with it or without it.
        builder.on_thread_unpark(move || {
            let now = run_clock
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .map(|c| Duration::from_micros(c.elapsed_us()));
            if let Some(now) = now {
                for o in &observers {
                    o.advanced(now);
                }
            }
        });
    }
    builder
        .build()
        .expect("building a current-thread runtime cannot fail")
}

/// The run's end after `limit` of virtual time, with the last lines of its event log.
fn timed_out(log: &EventLog, limit: Duration) -> RunError {
    let lines = log.lines();
    let tail = lines[lines.len().saturating_sub(20)..].to_vec();
    RunError::TimedOut(TimedOut { limit, tail })
}

/// The panic of the program itself, as the panic hook recorded it (or, if it recorded none, from `payload` at
/// the clock's time).
fn program_panicked(payload: &(dyn std::any::Any + Send), clock: &Clock) -> RunError {
    RunError::Panicked(crate::panic::first().unwrap_or_else(|| TaskPanic {
        message: crate::panic::message_of(payload),
        location: "<unknown>".to_string(),
        at: Duration::from_micros(clock.elapsed_us()),
    }))
}
