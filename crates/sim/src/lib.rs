//! The deterministic runtime every simulation runs on.
//!
//! [`run`] builds a current-thread tokio runtime whose time is paused (it jumps to the next timer whenever
//! every task waits), creates the simulation's [`Clock`] at a fixed origin, one seeded RNG and the
//! [`EventLog`], and drives the given future to completion. With the rules engine code keeps (`select!` always
//! `biased;`, no iteration over hash maps that orders events, no wall clock, no threads), the same seed gives
//! the same event log, byte for byte.

pub mod runtime;

pub use runtime::{SimContext, SimOutput, SimRng, run, run_with_origin};
