//! The errors of a node's local barrier manager and of building actors, and how they cross the network to
//! meta (as an [`epochlab_rpc::RemoteError`]).

use epochlab_common::{ActorId, Epoch, TableId, WorkerId};
use epochlab_rpc::{RemoteError, RemoteErrorKind};
use epochlab_storage::StorageError;
use thiserror::Error;

use crate::executor::StreamExecutorError;

/// Why an actor's plan could not be built.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum BuildError {
    /// The plan has more than one node that takes barriers from the local barrier manager.
    #[error("actor {actor} has two barrier sources")]
    TwoBarrierSources { actor: ActorId },
    /// A state table's vnode count differs from the length of the actor's vnode bitmap.
    #[error(
        "actor {actor}: table {table} has {table_vnodes} vnodes, the actor's bitmap {actor_vnodes}"
    )]
    VnodeCountMismatch {
        actor: ActorId,
        table: TableId,
        table_vnodes: usize,
        actor_vnodes: usize,
    },
    /// A hop window whose sizes cannot be used.
    #[error("actor {actor}: {source}")]
    HopWindow {
        actor: ActorId,
        #[source]
        source: crate::executor::HopWindowError,
    },
    /// A plan node that meta must have replaced (an `Exchange`) or that this node cannot run yet.
    #[error("actor {actor}: cannot build a {node} node")]
    Unsupported { actor: ActorId, node: &'static str },
    /// An executor refused its plan (an aggregation whose call states do not fit its calls).
    #[error("actor {actor}: {source}")]
    BadPlan {
        actor: ActorId,
        source: crate::executor::StreamExecutorError,
    },
}

/// Errors of a node's local barrier manager (`LocalBarrierManager`'s requests and the epochs it completes).
/// Cloneable: one failure completes every waiter of an epoch.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum LocalBarrierError {
    /// The node's barrier worker has stopped (the node is being torn down).
    #[error("the node's barrier worker is gone")]
    WorkerGone,
    #[error("actor {actor} already exists on worker {worker}")]
    ActorExists { actor: ActorId, worker: WorkerId },
    #[error(transparent)]
    Build(#[from] BuildError),
    /// An actor to collect from had failed before the barrier was injected.
    #[error("actor {actor} on worker {worker} has failed: {error}")]
    ToCollectFailed {
        actor: ActorId,
        worker: WorkerId,
        error: StreamExecutorError,
    },
    /// A build whose generation a reset of the node has since ended (meta read it before the reset).
    #[error(
        "worker {worker} was reset to generation {current}; actors of generation {generation} are stale"
    )]
    StaleGeneration {
        worker: WorkerId,
        generation: u64,
        current: u64,
    },
    #[error("actor {actor} not found on worker {worker}")]
    ActorNotFound { actor: ActorId, worker: WorkerId },
    #[error("source actor {actor} not found on worker {worker}")]
    SourceNotFound { actor: ActorId, worker: WorkerId },
    #[error("epoch {prev} injected twice on worker {worker}")]
    InjectedTwice { prev: Epoch, worker: WorkerId },
    /// Meta awaits an epoch this node is not collecting: never injected here, or cleared since by a reset or
    /// a restart of the node (RisingWave's "barrier collect complete receiver for prev epoch .. not exists").
    #[error("epoch {prev} is not being collected on worker {worker}")]
    EpochNotFound { prev: Epoch, worker: WorkerId },
    /// A source actor has more barriers queued than meta's in-flight limit allows.
    #[error(
        "the barrier queue of source actor {actor} on worker {worker} is full ({capacity} barriers)"
    )]
    BarrierQueueFull {
        actor: ActorId,
        worker: WorkerId,
        capacity: usize,
    },
    /// An actor failed while epochs were being collected: every pending epoch and waiter fails with it.
    #[error("actor {actor} on worker {worker} failed: {error}")]
    ActorFailed {
        actor: ActorId,
        worker: WorkerId,
        error: StreamExecutorError,
    },
    /// Sealing or syncing the epoch failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The node was reset while the request waited for its epoch.
    #[error("the node was reset")]
    Reset,
}

impl LocalBarrierError {
    /// The kind meta sees when this error answers one of its requests.
    pub fn remote_kind(&self) -> RemoteErrorKind {
        match self {
            Self::WorkerGone => RemoteErrorKind::Shutdown,
            Self::ActorExists { .. } | Self::InjectedTwice { .. } => RemoteErrorKind::Conflict,
            Self::Build(_) => RemoteErrorKind::Build,
            Self::ToCollectFailed { .. } | Self::ActorFailed { .. } => RemoteErrorKind::ActorFailed,
            Self::ActorNotFound { .. }
            | Self::SourceNotFound { .. }
            | Self::EpochNotFound { .. } => RemoteErrorKind::NotFound,
            Self::BarrierQueueFull { .. } => RemoteErrorKind::QueueFull,
            Self::Storage(_) => RemoteErrorKind::Storage,
            Self::Reset | Self::StaleGeneration { .. } => RemoteErrorKind::Reset,
        }
    }
}

impl From<LocalBarrierError> for RemoteError {
    fn from(e: LocalBarrierError) -> Self {
        RemoteError::new(e.remote_kind(), e.to_string())
    }
}

pub type LocalBarrierResult<T> = Result<T, LocalBarrierError>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The messages meta logs (`barrier failed: error=worker N: ...`) are the ones the strings had.
    #[test]
    fn messages_and_kinds() {
        let (actor, worker) = (ActorId(3), WorkerId(2));
        let failed = LocalBarrierError::ActorFailed {
            actor,
            worker,
            error: StreamExecutorError::ChannelClosed("from actor 2 to actor 3".into()),
        };
        let remote = RemoteError::from(failed.clone());
        assert_eq!(remote.kind, RemoteErrorKind::ActorFailed);
        assert_eq!(
            remote.message,
            "actor 3 on worker 2 failed: channel from actor 2 to actor 3 closed"
        );
        assert_eq!(
            epochlab_rpc::RpcError::Remote(remote).to_string(),
            failed.to_string()
        );
        let e = LocalBarrierError::ActorNotFound { actor, worker };
        assert_eq!(e.to_string(), "actor 3 not found on worker 2");
        assert_eq!(e.remote_kind(), RemoteErrorKind::NotFound);
        assert_eq!(
            LocalBarrierError::from(BuildError::TwoBarrierSources { actor }).to_string(),
            "actor 3 has two barrier sources"
        );
        assert_eq!(LocalBarrierError::Reset.to_string(), "the node was reset");
    }
}
