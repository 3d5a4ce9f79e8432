//! The test runner above the cluster, as RisingWave's `risingwave_simulation` (`src/tests/simulation` at
//! f21fb9b7915) sits above its nodes.
//!
//! - [`runner`]: a sqllogictest file run in a fresh simulated cluster, with RisingWave's simulation runner's
//!   kill mode (`src/tests/simulation/src/slt.rs`), and judged by the run's checkers.
//! - [`ci`]: RisingWave's recovery CI script, its steps and the workflows' profiles, as data; one
//!   (step, seed) run as the script ran it.
//! - [`cluster`]: the simulated cluster behind the front end's `ClusterClient`.
//! - [`db`]: the client: the `sqllogictest` crate's `AsyncDB` over a front-end session.
//! - [`corpus`]: RisingWave's e2e corpus under `tests/slt/risingwave/`: its files, how each runs, a run's
//!   verdict, and the ratchet of the files that pass.

pub mod ci;
pub mod cluster;
pub mod corpus;
pub mod db;
pub mod runner;
pub mod scripts;

pub use cluster::{SimClusterClient, engine, engine_of};
pub use runner::{
    FailureCause, FileReport, KillRoles, RecordFailure, RunnerEra, SltError, SltParams, StepReport,
    run_file, run_files,
};
