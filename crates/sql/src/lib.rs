//! SQL workloads for the simulated cluster.
//!
//! - [`frontend`]: the subset of RisingWave's SQL the engine implements, read with `sqlparser` (PostgreSQL
//!   dialect) and mapped onto meta's DDL, the DML path and reads at the max committed epoch. Anything else is
//!   an error that names the construct (`unsupported: JOIN`), never a panic.
//! - [`corpus`]: RisingWave's e2e corpus under `tests/slt/risingwave/`: its files, how each runs, a run's
//!   verdict, and the ratchet of the files that pass.
//! - [`db`]: the `sqllogictest` crate's `AsyncDB` over a session.
//! - [`runner`]: a sqllogictest file run in a fresh simulated cluster, with RisingWave's simulation runner's
//!   kill mode (`src/tests/simulation/src/slt.rs` at f21fb9b7915), and judged by the run's checkers.

pub mod batch;
pub mod binder;
pub mod catalog;
pub mod cluster_client;
pub mod corpus;
pub mod db;
pub mod error;
pub mod expr;
pub mod frontend;
pub mod handler;
pub mod planner;
pub mod runner;
pub mod scalar;
pub mod session_config;

pub use cluster_client::ClusterClient;
pub use error::{ConnectionError, SqlError};
pub use frontend::{Engine, Output, Session};
pub use runner::{
    FailureCause, FileReport, KillRoles, RecordFailure, RunnerEra, SltError, SltParams, run_file,
};
