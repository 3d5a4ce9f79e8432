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
        $crate::vspan!(parent: $crate::trace::__tracing::Span::current(), $name, $clock $(, $($fields)*)?)
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
