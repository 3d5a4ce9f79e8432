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

/// The cluster of a directed run: `p`'s toggles, pace and compute nodes.
pub(crate) fn cluster_config(p: &ReproParams) -> ClusterConfig {
    let mut config = cluster_config_for(
        p.toggles().unwrap_or_default(),
        p.vnodes,
        p.barrier_interval_ms,
        p.checkpoint_frequency,
        p.persist_check,
    );
    config.compute_nodes = p.compute_nodes;
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
        meta: _,
        stream: _,
        exchange,
        compaction,
    } = ClusterConfig::default();
    ClusterConfig {
        compute_nodes,
        meta,
        stream,
        exchange,
        compaction,
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
