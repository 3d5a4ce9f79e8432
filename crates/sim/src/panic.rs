//! A panic in any task of a simulated run ends the run, as madsim aborts a simulation on a task panic.
//!
//! tokio catches a spawned task's panic and keeps it in the task's `JoinHandle`, which nobody may ever look
//! at: the task is silently lost and the run goes on without it (its job never finishes, its barrier never
//! collects), until a watchdog calls it `stuck`. So the run installs a process-wide panic hook (once) that,
//! on a thread running a simulation, records the first panic's message and location with the run's virtual
//! time and wakes the run's main task, which stops the program at once (the same virtual instant: a woken
//! task runs before paused time moves on). Outside a run the hook is the previous one. Inside a run it
//! prints nothing: the run's report carries the message and the location.

use std::any::Any;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use epochlab_common::Clock;

/// A panic in a task of a simulated run: what it said, where, and when.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("task panicked at {location}: {message}")]
pub struct TaskPanic {
    /// The panic's message (`<non-string payload>` when it was not a string).
    pub message: String,
    /// `file:line:column` of the panic.
    pub location: String,
    /// The run's virtual time at the panic.
    pub at: Duration,
}

/// The run on this thread: its clock, the first panic, and the main task to wake.
struct Slot {
    clock: Clock,
    first: Option<TaskPanic>,
    waker: Option<Waker>,
}

thread_local! {
    static SLOT: RefCell<Option<Slot>> = const { RefCell::new(None) };
}

static INSTALL: Once = Once::new();

/// Watch for panics on this thread until the guard is dropped (one run per thread at a time).
pub(crate) fn watch(clock: Clock) -> WatchGuard {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let location = info
                .location()
                .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
                .unwrap_or_else(|| "<unknown>".to_string());
            if !record(message_of(info.payload()), location) {
                previous(info);
            }
        }));
    });
    SLOT.with(|s| {
        let mut s = s.borrow_mut();
        assert!(
            s.is_none(),
            "a simulation is already running on this thread"
        );
        *s = Some(Slot {
            clock,
            first: None,
            waker: None,
        });
    });
    WatchGuard(())
}

/// Ends [`watch`].
pub(crate) struct WatchGuard(());

impl Drop for WatchGuard {
    fn drop(&mut self) {
        // `try_with`: the thread may be tearing its locals down.
        let slot = SLOT.try_with(|s| s.borrow_mut().take()).ok().flatten();
        // A panic the run could not report (one in a time observer, say, which unwinds through the runtime
        // itself) leaves the run unwinding: say what the quiet hook kept, or nobody would see it.
        if std::thread::panicking()
            && let Some(p) = slot.and_then(|s| s.first)
        {
            eprintln!("a simulated run ended by a panic it could not report: {p}");
        }
    }
}

/// Record a panic on this thread if a run is watched here: true when it was (the hook then stays quiet). The
/// run's first panic goes to its log too, as Rust prints one (`thread '..' panicked at FILE:LINE:COL:` and
/// the message), so that a log file shows it to `epochlab triage` as RisingWave's did.
fn record(message: String, location: String) -> bool {
    let (watched, first) = record_first(message, location);
    if let Some(p) = &first {
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("<unnamed>");
        tracing::error!("thread '{name}' panicked at {}:\n{}", p.location, p.message);
    }
    watched
}

/// Keep the panic if a run is watched here and it is the run's first: whether a run is watched, and the
/// panic when it was the first.
fn record_first(message: String, location: String) -> (bool, Option<TaskPanic>) {
    SLOT.try_with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return (false, None);
        };
        let Some(slot) = s.as_mut() else {
            return (false, None);
        };
        if slot.first.is_some() {
            return (true, None);
        }
        let panic = TaskPanic {
            message,
            location,
            at: Duration::from_micros(slot.clock.elapsed_us()),
        };
        slot.first = Some(panic.clone());
        if let Some(w) = slot.waker.take() {
            w.wake();
        }
        (true, Some(panic))
    })
    .unwrap_or((false, None))
}

/// The first panic of the run on this thread, if any.
pub(crate) fn first() -> Option<TaskPanic> {
    SLOT.with(|s| s.borrow().as_ref().and_then(|s| s.first.clone()))
}

/// A panic payload's text.
pub(crate) fn message_of(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string payload>".to_string()
    }
}

/// Ready with the first panic of the run on this thread.
pub(crate) struct Panicked;

impl Future for Panicked {
    type Output = TaskPanic;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<TaskPanic> {
        SLOT.with(|s| {
            let mut s = s.borrow_mut();
            let slot = s.as_mut().expect("polled inside a watched run");
            match &slot.first {
                Some(p) => Poll::Ready(p.clone()),
                None => {
                    slot.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
    }
}
