//! The simulated cluster as a frontend sees it: [`SimClusterClient`] implements the front end's
//! [`ClusterClient`] over a [`Cluster`], so the front end needs nothing of `epochlab-sim`, as RisingWave's
//! frontend reaches meta and the compute nodes through clients and never links them.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use epochlab_common::{Epoch, Op, OwnedRow, TableId};
use epochlab_frontend::{ClusterClient, Engine};
use epochlab_meta::MetaNode;
use epochlab_rpc::{DmlError, MetaClient, RpcKind};
use epochlab_sim::Cluster;
use epochlab_sim::config::Topology;

/// A frontend's client of one simulated cluster.
pub struct SimClusterClient(pub Arc<Cluster>);

/// The engine (what a frontend's sessions share) over `cluster`, new jobs at `parallelism` unless a session
/// sets its own.
pub fn engine(cluster: &Arc<Cluster>, parallelism: usize) -> Arc<Engine> {
    Engine::new(Arc::new(SimClusterClient(cluster.clone())), parallelism)
}

/// The engine over `cluster` with the frontends and the default parallelism of `topology`.
pub fn engine_of(cluster: &Arc<Cluster>, topology: Topology) -> Arc<Engine> {
    Engine::with_frontends(
        Arc::new(SimClusterClient(cluster.clone())),
        topology.parallelism(),
        topology.frontend_nodes as usize,
    )
}

#[async_trait::async_trait]
impl ClusterClient for SimClusterClient {
    fn meta(&self) -> MetaNode {
        self.0.meta()
    }

    fn meta_client(&self, node: String) -> MetaClient {
        self.0.meta_client(node)
    }

    fn committed_rows(&self, table: TableId) -> Vec<OwnedRow> {
        self.0.committed_rows(table)
    }

    fn pin_snapshot(&self) -> Epoch {
        let hummock = &self.0.hummock;
        let epoch = hummock.max_committed_epoch();
        hummock.committed_store().pin(epoch);
        epoch
    }

    fn unpin_snapshot(&self, epoch: Epoch) {
        self.0.hummock.committed_store().unpin(epoch);
    }

    fn committed_rows_at(&self, table: TableId, epoch: Epoch) -> Vec<OwnedRow> {
        self.0.committed_rows_at(table, epoch)
    }

    async fn dml(&self, table: TableId, rows: Vec<(Op, OwnedRow)>) -> Result<(), DmlError> {
        self.0.dml(table, rows).await
    }

    fn recoveries(&self) -> u64 {
        self.0.barrier_stats().recoveries.load(Ordering::Relaxed)
    }

    fn fail_next_injection(&self) {
        self.0.network.fail_next(RpcKind::InjectBarrier, None, 1);
    }
}
