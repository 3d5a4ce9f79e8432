//! Window functions over partitions of the input, as RisingWave's two over window executors: the general
//! one, which emits each change as it comes ([`general`]), and the one that emits each row once its window
//! closes ([`eowc`]).

pub mod eowc;
pub mod general;

pub use eowc::{EowcOverWindowArgs, EowcOverWindowExecutor};
pub use general::{OverWindowArgs, OverWindowExecutor, OverWindowStateWrites};
