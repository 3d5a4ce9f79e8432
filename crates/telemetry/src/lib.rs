//! Telemetry: Prometheus metrics of simulated runs.
//!
//! Not engine code: it runs on its own real-time runtime thread and may read the wall clock. Values are
//! *pulled* at scrape time from the stats the engine keeps (atomics and small maps), so the simulation does
//! no extra work and stays deterministic whether metrics are served or not. Times are the simulation's,
//! shifted so that a run's start is the wall-clock time at which it started.

mod metrics;
mod server;

pub use metrics::{Metrics, RunSource};
pub use server::MetricsServer;
