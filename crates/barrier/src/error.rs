use epochlab_common::{ActorId, WorkerId};
use thiserror::Error;

pub type BarrierResult<T> = Result<T, BarrierError>;

/// Errors of the barrier protocol. Cloneable: one failure is reported to every waiting notifier.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum BarrierError {
    #[error("rpc {rpc} to worker {worker} failed: {message}")]
    Rpc {
        worker: WorkerId,
        rpc: &'static str,
        message: String,
    },
    #[error("actor {actor} on worker {worker} failed: {message}")]
    ActorFailed {
        worker: WorkerId,
        actor: ActorId,
        message: String,
    },
    #[error("worker {worker}: {message}")]
    Worker { worker: WorkerId, message: String },
    #[error("commit failed: {0}")]
    Commit(String),
    #[error("barrier collection failed: {0}")]
    CollectionFailed(String),
    #[error("the cluster is in recovery: {0}")]
    Blocked(String),
    #[error("the command queue is full ({0} commands)")]
    QueueFull(usize),
    #[error("the barrier manager stopped")]
    Shutdown,
    #[error("recovery requested: {0}")]
    RecoveryRequested(String),
}

impl BarrierError {
    /// The worker itself was lost (its connection failed: unreachable, dead, a failed call), as opposed to an
    /// error the worker answered with. RisingWave's control-stream error, which meta weighs per epoch.
    pub fn is_worker_lost(&self) -> bool {
        matches!(self, BarrierError::Rpc { .. })
    }
}
