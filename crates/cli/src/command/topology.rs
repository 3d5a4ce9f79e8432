//! The cluster's nodes as `slt` and `ci` take them, with the names and defaults of RisingWave's simulation
//! (`src/tests/simulation/src/main.rs` at f21fb9b7915: the cluster of its recovery CI).

use clap::Args;
use epochlab_sim::config::{Topology, TopologyError};

/// `--meta-nodes`, `--frontend-nodes`, `--compute-nodes`, `--compute-node-cores`, `--compactor-nodes`.
#[derive(Args, Clone, Copy, Debug)]
pub struct TopologyArgs {
    /// 1..=16 meta nodes: one runs alone; several run on a 10 s lease as RisingWave's on etcd, the
    /// leader serving, a leader killed for 20 s replaced by a follower (RisingWave's CI: 3)
    #[arg(long, value_name = "N", default_value_t = Topology::RISINGWAVE_CI.meta_nodes,
          value_parser = crate::command::values::number::<u32>(crate::command::values::META_NODES))]
    pub meta_nodes: u32,
    /// Frontend nodes behind one round-robin address: each new connection goes to the next, and
    /// one that is down refuses it (RisingWave's CI: 2)
    #[arg(long, value_name = "N", default_value_t = Topology::RISINGWAVE_CI.frontend_nodes)]
    pub frontend_nodes: u32,
    /// Compute nodes (RisingWave's CI: 3)
    #[arg(long, value_name = "N", default_value_t = Topology::RISINGWAVE_CI.compute_nodes)]
    pub compute_nodes: u32,
    /// Cores of each compute node: a job that sets no parallelism gets one actor per core of every
    /// node (RisingWave's CI: 2, so parallelism 6)
    #[arg(long, value_name = "N", default_value_t = Topology::RISINGWAVE_CI.compute_node_cores)]
    pub compute_node_cores: u32,
    /// Compactor nodes; compaction goes on while one is up (RisingWave's CI: 2)
    #[arg(long, value_name = "N", default_value_t = Topology::RISINGWAVE_CI.compactor_nodes)]
    pub compactor_nodes: u32,
}

impl TopologyArgs {
    /// The topology, checked: bad input when it cannot run.
    pub fn topology(self) -> Result<Topology, TopologyError> {
        Topology {
            meta_nodes: self.meta_nodes,
            frontend_nodes: self.frontend_nodes,
            compute_nodes: self.compute_nodes,
            compute_node_cores: self.compute_node_cores,
            compactor_nodes: self.compactor_nodes,
        }
        .check()
    }
}

/// The flags that give `t` where it differs from the default, each with a leading space (for a replay command).
pub fn flags(t: Topology) -> String {
    let d = Topology::RISINGWAVE_CI;
    [
        ("--meta-nodes", t.meta_nodes, d.meta_nodes),
        ("--frontend-nodes", t.frontend_nodes, d.frontend_nodes),
        ("--compute-nodes", t.compute_nodes, d.compute_nodes),
        (
            "--compute-node-cores",
            t.compute_node_cores,
            d.compute_node_cores,
        ),
        ("--compactor-nodes", t.compactor_nodes, d.compactor_nodes),
    ]
    .into_iter()
    .filter(|(_, got, default)| got != default)
    .map(|(flag, got, _)| format!(" {flag} {got}"))
    .collect()
}
