//! Telemetry: Prometheus metrics and OpenTelemetry traces of simulated runs, and an embedded Jaeger.
//!
//! Not engine code: it runs on its own real-time runtime thread and may read the wall clock. Values are
//! *pulled* at scrape time from the stats the engine keeps (atomics and small maps), so the simulation does
//! no extra work and stays deterministic whether metrics are served or not. Times are the simulation's,
//! shifted so that a run's start is the wall-clock time at which it started.

mod jaeger;
mod metrics;
mod pace;
mod progress;
mod server;
mod timeline;
mod tracer;

pub use jaeger::{
    DEFAULT_LIMIT, DurationError, EmbeddedJaeger, JaegerError, MAX_INDEX_BYTES, MAX_TRACES,
    QueryError, TraceQuery, parse_duration,
};
pub use metrics::{FinishedSeed, MAX_SIGNATURES, Metrics, OTHER_SIGNATURE, RunSource, SeedOutcome};
pub use opentelemetry::KeyValue;
pub use pace::{MAX_PACE, MIN_PACE, Pacer, WallStart};
pub use progress::Progress;
pub use server::MetricsServer;
pub use timeline::{RunSampler, RunSpan, Timeline};
pub use tokio::runtime::Handle as RuntimeHandle;
pub use tracer::{
    ExportRuntime, RunTracer, instance_id, run_layer, run_layer_scoped, run_layer_to,
    wait_for_ctrl_c,
};

/// Wall-clock time spent by a run, for reports (telemetry is where real time is read).
pub struct WallTimer(std::time::Instant);

impl WallTimer {
    pub fn start() -> Self {
        Self(std::time::Instant::now())
    }

    pub fn elapsed(&self) -> std::time::Duration {
        self.0.elapsed()
    }
}
