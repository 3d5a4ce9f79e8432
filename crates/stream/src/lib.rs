//! The streaming side of a compute node (reference §2): executors written as async generators in
//! RisingWave's style, actors that drive them, the exchange channels between actors, and the node's local
//! barrier manager, which injects barriers into source actors, collects them from every actor, seals and
//! syncs epochs in order, and answers meta's completion requests.
#![feature(coroutines, proc_macro_hygiene, stmt_expr_attributes)]

pub mod executor;
pub mod task;

pub use task::compute_node::{ComputeEnv, ComputeNode, DmlError, Heartbeat, StreamConfig};
pub use task::error::{BuildError, LocalBarrierError, LocalBarrierResult};
