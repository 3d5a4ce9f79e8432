//! Spans on the simulation's clock.
//!
//! Engine spans carry their virtual start and end as fields (`vt.start_us`, `vt.end_us`, µs since the clock's
//! origin); the telemetry crate's exporter rewrites the exported span times from them, so that a trace shows
//! simulated latencies. A failed span records `error = true`, `otel.status_code = "ERROR"` and the message.
//! Without a subscriber interested in spans these are disabled and cost next to nothing.

use tracing::Span;

use crate::clock::Clock;

#[doc(hidden)]
pub use tracing as __tracing;

/// `vspan!(parent: p, "verb object", clock, field = value, ...)`: an info span that starts now on `clock`.
/// Without `parent:` its parent is the span in scope, or else the run's root ([`current_or_root`]).
#[macro_export]
macro_rules! vspan {
    (parent: $parent:expr, $name:expr, $clock:expr $(, $($fields:tt)*)?) => {
        $crate::trace::__tracing::info_span!(
            parent: $parent,
            $name,
            vt.start_us = ($clock).elapsed_us() as i64,
            vt.end_us = $crate::trace::__tracing::field::Empty,
            error = $crate::trace::__tracing::field::Empty,
            otel.status_code = $crate::trace::__tracing::field::Empty,
            error.message = $crate::trace::__tracing::field::Empty
            $(, $($fields)*)?
        )
    };
    ($name:expr, $clock:expr $(, $($fields:tt)*)?) => {
        $crate::vspan!(parent: $crate::trace::current_or_root(), $name, $clock $(, $($fields)*)?)
    };
}

/// Record the span's virtual end; call it before the span is dropped.
pub fn end(span: &Span, clock: &Clock) {
    span.record("vt.end_us", clock.elapsed_us() as i64);
}

/// Mark the span failed with `message`, and end it.
pub fn fail(span: &Span, clock: &Clock, message: &str) {
    span.record("error", true);
    span.record("otel.status_code", "ERROR");
    span.record("error.message", message);
    end(span, clock);
}

/// How a run's spans are grouped into traces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TracePer {
    /// One trace per run: a root span `run` holds every epoch, drop, kill and recovery of the run.
    #[default]
    Run,
    /// One trace per epoch (and per drop, kill and recovery), for long runs.
    Epoch,
}

impl TracePer {
    pub const ALL: [TracePer; 2] = [TracePer::Run, TracePer::Epoch];

    pub fn as_str(self) -> &'static str {
        match self {
            TracePer::Run => "run",
            TracePer::Epoch => "epoch",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// A span that caused later spans in other branches of the trace; those get an OpenTelemetry link to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// The latest `unregister tables` that removed this table (the failing persist of a zombie links to it).
    TableUnregistered(crate::TableId),
    /// The latest `kill node` of this worker (a collection that fails on it links to it).
    NodeKilled(crate::WorkerId),
    /// The latest failed `collect barrier` (the recovery it starts links to it).
    CollectFailed,
}

/// What a parked span waits for before it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Park {
    /// The node's reset: until then its actors may still work on the abandoned barrier.
    Worker(crate::WorkerId),
    /// The end of the recovery's `reset nodes` step.
    Recovery,
}

/// Spans parked at most; beyond it a span ends at once (a bound, not an expected size).
pub const MAX_PARKED: usize = 4096;

struct RunTrace {
    root: Option<Span>,
    per: TracePer,
    clock: Clock,
    causes: std::collections::BTreeMap<Cause, Span>,
    parked: Vec<(Park, Span)>,
}

thread_local! {
    static RUN_TRACE: std::cell::RefCell<Option<RunTrace>> = const { std::cell::RefCell::new(None) };
}

/// The run's trace on this thread; ends the `run` span and every parked span when dropped.
pub struct RunTraceGuard(());

impl Drop for RunTraceGuard {
    fn drop(&mut self) {
        // Take it out first: ending spans may log, and the log must not find the run half torn down.
        let Some(run) = RUN_TRACE.with(|r| r.borrow_mut().take()) else {
            return;
        };
        for (_, span) in run.parked {
            end(&span, &run.clock);
        }
        drop(run.causes);
        if let Some(root) = &run.root {
            end(root, &run.clock);
        }
    }
}

/// A run starts on this thread: with [`TracePer::Run`] its spans go under a root span `run`, made by `root`
/// (`vspan!(parent: None, "run", ...)` with the run's parameters as attributes); with [`TracePer::Epoch`] there
/// is no such span.
pub fn enter_run(per: TracePer, clock: Clock, root: impl FnOnce() -> Span) -> RunTraceGuard {
    let root = (per == TracePer::Run).then(root);
    let run = RunTrace {
        root,
        per,
        clock,
        causes: Default::default(),
        parked: Vec::new(),
    };
    RUN_TRACE.with(|r| *r.borrow_mut() = Some(run));
    RunTraceGuard(())
}

/// The parent of a span that starts a story of its own (an epoch, a drop, a kill, a recovery): the run's root
/// span, or none (a trace of its own) with [`TracePer::Epoch`] or outside a run.
pub fn root() -> Option<tracing::Id> {
    RUN_TRACE.with(|r| {
        r.borrow()
            .as_ref()
            .and_then(|run| run.root.as_ref().and_then(Span::id))
    })
}

/// The span in scope, or else the run's root (so that no span of a run starts a stray trace of its own).
pub fn current_or_root() -> Option<tracing::Id> {
    Span::current().id().or_else(root)
}

/// How the run on this thread groups its spans.
pub fn per() -> TracePer {
    RUN_TRACE.with(|r| r.borrow().as_ref().map_or(TracePer::Run, |run| run.per))
}

/// Remember `span` as the latest span of `cause`.
pub fn mark(cause: Cause, span: &Span) {
    if span.is_disabled() {
        return;
    }
    RUN_TRACE.with(|r| {
        if let Some(run) = r.borrow_mut().as_mut() {
            run.causes.insert(cause, span.clone());
        }
    });
}

/// Forget the span of `cause` (it no longer explains what comes next).
pub fn forget(cause: Cause) {
    RUN_TRACE.with(|r| {
        if let Some(run) = r.borrow_mut().as_mut() {
            run.causes.remove(&cause);
        }
    });
}

/// Link `span` to the latest span of `cause`, if there is one.
pub fn link(span: &Span, cause: Cause) {
    let cause_span = RUN_TRACE.with(|r| {
        r.borrow()
            .as_ref()
            .and_then(|run| run.causes.get(&cause).cloned())
    });
    if let Some(c) = cause_span {
        span.follows_from(&c);
    }
}

/// Mark `span` failed with `message` now, but end it only when `until` is released: an abandoned epoch or
/// collection stays open while zombie actors still work on it, so that their spans start inside it.
pub fn park_failed(span: Span, clock: &Clock, message: &str, until: Park) {
    span.record("error", true);
    span.record("otel.status_code", "ERROR");
    span.record("error.message", message);
    if span.is_disabled() {
        return;
    }
    let rest = RUN_TRACE.with(|r| match r.borrow_mut().as_mut() {
        Some(run) if run.parked.len() < MAX_PARKED => {
            run.parked.push((until, span));
            None
        }
        _ => Some(span),
    });
    if let Some(span) = rest {
        end(&span, clock);
    }
}

/// End every span parked until `what`.
pub fn release(what: Park, clock: &Clock) {
    let released: Vec<Span> = RUN_TRACE.with(|r| {
        let mut r = r.borrow_mut();
        let Some(run) = r.as_mut() else {
            return Vec::new();
        };
        let (out, keep) = std::mem::take(&mut run.parked)
            .into_iter()
            .partition(|(p, _)| *p == what);
        run.parked = keep;
        out.into_iter().map(|(_, s)| s).collect()
    });
    for span in released {
        end(&span, clock);
    }
}
