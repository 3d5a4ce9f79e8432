//! The compute node's runtime: exchange channels, actors, the local barrier worker, the node itself.

pub mod actor;
pub mod barrier_worker;
pub mod build;
pub mod compute_node;
pub mod error;
pub mod exchange;

#[cfg(test)]
mod tests;
