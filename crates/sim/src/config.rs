//! The cluster a run starts: its configuration from the bug's toggles and the run's pace, and the network's
//! latencies outside faults.

use std::time::Duration;

use epochlab_common::{Toggles, VnodeCount};
use epochlab_meta::MetaConfig;
use epochlab_rpc::RpcKind;
use epochlab_stream::StreamConfig;
use epochlab_stream::task::build::BackfillRateLimit;

use crate::cluster::{Cluster, ClusterConfig};
use crate::repro::ReproParams;

/// The cluster of a directed run: `p`'s toggles, pace, compute nodes and metas.
pub(crate) fn cluster_config(p: &ReproParams) -> ClusterConfig {
    let mut config = cluster_config_for(
        p.toggles().unwrap_or_default(),
        p.vnodes,
        p.barrier_interval_ms,
        p.checkpoint_frequency,
        p.persist_check,
    );
    config.compute_nodes = p.compute_nodes;
    config.meta_nodes = p.meta_nodes;
    config
}

/// The cluster of the SQL-level tests: three compute nodes, 64 vnodes, a barrier every 100 ms and a checkpoint
/// every `checkpoint_frequency` of them; `toggles` (a test-only mutation, or none) in the compute nodes.
pub fn three_nodes(checkpoint_frequency: u32, toggles: Toggles) -> ClusterConfig {
    let mut meta = MetaConfig::default();
    meta.barrier.interval = Duration::from_millis(100);
    meta.barrier.checkpoint_frequency = checkpoint_frequency;
    meta.vnode_count = VnodeCount::new(64).expect("a valid vnode count");
    let mut config = ClusterConfig {
        compute_nodes: 3,
        meta,
        ..Default::default()
    };
    config.stream.toggles = toggles;
    config
}

/// `config` with backfill rate limits kept by a flow-control executor after the backfill, as RisingWave had
/// them before PR #15948 ([`BackfillRateLimit::FlowControl`]). For the runs on the engine of 2024: the
/// sqllogictest runner of 2024 and a plan file that says `flow_control` (the directed scenarios have it in
/// `ReproParams::toggles`); random plans run on today's engine.
pub fn with_flow_control(mut config: ClusterConfig) -> ClusterConfig {
    config.meta.toggles = config.meta.toggles.with(BackfillRateLimit::FlowControl);
    config.stream.toggles = config.stream.toggles.with(BackfillRateLimit::FlowControl);
    config
}

/// A cluster with these toggles at this pace; shared by the directed scenarios and random plans. The toggles
/// go whole into every engine config that reads one (meta's, which hands them to the barrier manager, and the
/// compute nodes'): no toggle is copied field by field.
pub fn cluster_config_for(
    toggles: Toggles,
    vnodes: u32,
    barrier_interval_ms: u64,
    checkpoint_frequency: u32,
    persist_check: bool,
) -> ClusterConfig {
    let mut meta = MetaConfig::default();
    let interval = Duration::from_millis(barrier_interval_ms);
    meta.barrier.interval = interval;
    meta.barrier.checkpoint_frequency = checkpoint_frequency;
    meta.toggles = toggles;
    // The random plans and directed scenarios make their jobs through meta's job API, without catalog rows.
    meta.unlisted_jobs = true;
    meta.vnode_count = VnodeCount::new(vnodes).expect("vnodes checked by the caller");
    // Recovery's slow steps before the reset (progress recovery, actor migration) take a share of a barrier
    // interval to one and a half: the zombie window scales with the cluster's pace, not with a constant.
    meta.recovery.recover_progress = interval / 4..interval * 3 / 2;
    meta.recovery.migrate_actors = interval / 4..interval * 3 / 2;
    let stream = StreamConfig {
        persist_check,
        toggles,
        barrier_channel_capacity: meta.barrier.in_flight_limit + 1,
        ..StreamConfig::default()
    };
    // Every part named (no `..Default::default()`): a part that gains a `toggles` field is seen here.
    let ClusterConfig {
        compute_nodes,
        meta_nodes,
        compactor_nodes,
        meta: _,
        stream: _,
        exchange,
        compaction,
    } = ClusterConfig::default();
    ClusterConfig {
        compute_nodes,
        meta_nodes,
        compactor_nodes,
        meta,
        stream,
        exchange,
        compaction,
    }
}

/// Metas of a run when none is named (`--meta-nodes`: repro, slt, ci, corpus, soak's random plans), as
/// RisingWave's recovery CI ran them at f21fb9b7915: three on a lease. The library's own clusters
/// (`ClusterConfig::default`, [`Topology::SINGLE_CORE`]) keep one.
pub const DEFAULT_META_NODES: u32 = 3;

/// The nodes of a cluster, as RisingWave's simulation takes them (`--meta-nodes`, `--frontend-nodes`,
/// `--compute-nodes`, `--compute-node-cores`, `--compactor-nodes` in `src/tests/simulation/src/main.rs` at
/// f21fb9b7915).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Topology {
    /// Metas: one runs alone; several run on a lease, one leading (RisingWave's CI: 3).
    pub meta_nodes: u32,
    pub frontend_nodes: u32,
    pub compute_nodes: u32,
    /// Each compute node's cores: its parallel units, so a job's default parallelism is every node's.
    pub compute_node_cores: u32,
    pub compactor_nodes: u32,
}

/// A topology that cannot run: bad input.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error("--compute-nodes must be at least 1")]
    NoComputeNode,
    #[error("--frontend-nodes must be at least 1")]
    NoFrontend,
    #[error("--meta-nodes must be at least 1")]
    NoMeta,
    #[error("--compute-node-cores must be 1 to {max}, not {got}")]
    Cores { got: u32, max: u32 },
    #[error("--{what} must be at most {max}, not {got}")]
    TooMany {
        what: &'static str,
        got: u32,
        max: u32,
    },
}

impl Topology {
    /// RisingWave's recovery CI at f21fb9b7915 (`ci-3cn-2fe-3meta`, the simulation's defaults): 3 metas on a
    /// lease, 2 frontends, 3 compute nodes of 2 cores and 2 compactors.
    pub const RISINGWAVE_CI: Topology = Topology {
        meta_nodes: DEFAULT_META_NODES,
        frontend_nodes: 2,
        compute_nodes: 3,
        compute_node_cores: 2,
        compactor_nodes: 2,
    };

    /// epochlab's cluster before issue 43: 3 compute nodes of one core, one compactor. `corpus` keeps it, so
    /// its ratchet stays comparable.
    pub const SINGLE_CORE: Topology = Topology {
        meta_nodes: 1,
        frontend_nodes: 1,
        compute_nodes: 3,
        compute_node_cores: 1,
        compactor_nodes: 1,
    };

    /// Cores per compute node at most (a parallel unit per core; RisingWave's vnode count is 256).
    pub const MAX_CORES: u32 = 64;

    /// Nodes of a role at most: a run is one process, and each node is tasks in it.
    pub const MAX_NODES: u32 = 64;

    /// Metas at most (as a random plan's).
    pub const MAX_META_NODES: u32 = 16;

    /// The parallelism of a job that sets none: every compute node's cores.
    pub fn parallelism(self) -> usize {
        (self.compute_nodes * self.compute_node_cores) as usize
    }

    /// Whether the cluster can run.
    pub fn check(self) -> Result<Self, TopologyError> {
        if self.compute_nodes == 0 {
            return Err(TopologyError::NoComputeNode);
        }
        if self.frontend_nodes == 0 {
            return Err(TopologyError::NoFrontend);
        }
        if self.meta_nodes == 0 {
            return Err(TopologyError::NoMeta);
        }
        if self.meta_nodes > Self::MAX_META_NODES {
            return Err(TopologyError::TooMany {
                what: "meta-nodes",
                got: self.meta_nodes,
                max: Self::MAX_META_NODES,
            });
        }
        if !(1..=Self::MAX_CORES).contains(&self.compute_node_cores) {
            return Err(TopologyError::Cores {
                got: self.compute_node_cores,
                max: Self::MAX_CORES,
            });
        }
        for (what, got) in [
            ("compute-nodes", self.compute_nodes),
            ("frontend-nodes", self.frontend_nodes),
            ("compactor-nodes", self.compactor_nodes),
        ] {
            if got > Self::MAX_NODES {
                return Err(TopologyError::TooMany {
                    what,
                    got,
                    max: Self::MAX_NODES,
                });
            }
        }
        Ok(self)
    }
}

/// The network's latencies outside faults: barriers 1 to 5 ms, version deltas 5 to 30 ms.
pub fn base_network(cluster: &Cluster) {
    for kind in [RpcKind::InjectBarrier, RpcKind::BarrierComplete] {
        let range = Duration::from_millis(1)..Duration::from_millis(5);
        cluster.network.set_latency(kind, range);
    }
    let delta_latency = Duration::from_millis(5)..Duration::from_millis(30);
    cluster
        .network
        .set_latency(RpcKind::VersionDelta, delta_latency);
}
