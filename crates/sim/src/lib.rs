//! The deterministic simulation.
//!
//! [`run`] builds a current-thread tokio runtime whose time is paused (it jumps to the next timer whenever
//! every task waits), creates the simulation's [`Clock`](epochlab_common::Clock) at a fixed origin, one seeded
//! RNG and the [`EventLog`](epochlab_common::EventLog), and drives the given future to completion. With the
//! rules engine code keeps (`select!` always `biased;`, no iteration over hash maps that orders events, no
//! wall clock, no threads), the same seed gives the same event log, byte for byte.
//!
//! [`Cluster`] assembles meta, compute nodes, the network and the shared registries inside such a run.

pub mod bugs;
pub mod capture;
pub mod checkers;
pub mod cluster;
pub mod config;
pub mod meta_witness;
pub mod one_writer;
pub mod panic;
pub mod report;
pub mod repro;
pub mod runtime;
pub mod workload;

pub use bugs::{BugError, BugId, BugInfo, BugMode, Mode, Setting};
pub use checkers::{CommitCheckError, check_commits};
pub use cluster::{Cluster, ClusterConfig, RecoveryFinding};
pub use epochlab_common::SimRng;
pub use epochlab_common::trace::TracePer;
pub use report::{MetaCrash, Outcome, ReproReport, Violation};
pub use repro::{ClusterHook, ReproHooks, ReproParams, TracingLayer, run_repro, run_repro_with};
pub use runtime::{
    RunError, SimContext, SimOutput, TaskPanic, TimeObserver, TimedOut, run, run_with_origin,
    try_run, try_run_observed,
};
