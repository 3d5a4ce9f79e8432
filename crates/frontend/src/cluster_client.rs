//! What the front end asks of the cluster below it, in one trait: meta (DDL, the catalog of jobs), DML to the
//! table actors, reads of committed storage, and the two things `RECOVER` needs. RisingWave's frontend reaches
//! the same things over RPC (meta's client, the compute nodes' DML and batch services); here the simulated
//! cluster implements the trait (`epochlab-simulation`), and the front end does not know the cluster's type.

use epochlab_common::{Epoch, Op, OwnedRow, TableId};
use epochlab_meta::MetaNode;
use epochlab_rpc::{DmlError, MetaClient};

/// The cluster as a frontend sees it.
#[async_trait::async_trait]
pub trait ClusterClient: Send + Sync {
    /// Meta's client: DDL, the jobs' catalog, flush, the scheduler's status (a handle to the meta serving
    /// the cluster now).
    fn meta(&self) -> MetaNode;

    /// A new client of meta for node `node` (`frontend-1`), pointed at the leader: it decides which meta a
    /// leader-only call reaches (see `epochlab_rpc::meta_client`).
    fn meta_client(&self, node: String) -> MetaClient;

    /// A table's (or view's) rows in committed storage, as of the max committed epoch, in key order.
    fn committed_rows(&self, table: TableId) -> Vec<OwnedRow>;

    /// Pin the max committed epoch for reads (RisingWave's frontend `pin_snapshot`): committed storage
    /// keeps what a read at it sees until [`ClusterClient::unpin_snapshot`].
    fn pin_snapshot(&self) -> Epoch;

    /// Drop a pin [`ClusterClient::pin_snapshot`] took.
    fn unpin_snapshot(&self, epoch: Epoch);

    /// A table's (or view's) rows in committed storage as of `epoch` (a pinned one), in key order.
    fn committed_rows_at(&self, table: TableId, epoch: Epoch) -> Vec<OwnedRow>;

    /// Send DML for `table` to the table actors that own the rows' vnodes.
    async fn dml(&self, table: TableId, rows: Vec<(Op, OwnedRow)>) -> Result<(), DmlError>;

    /// Recoveries meta has run so far.
    fn recoveries(&self) -> u64;

    /// Fail the next barrier injection, so that meta recovers (`RECOVER`).
    fn fail_next_injection(&self);
}
