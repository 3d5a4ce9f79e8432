//! The RPCs between meta and compute nodes (RisingWave's stream service), as in-process channels behind one
//! interface. Every call takes a latency drawn from its kind's range (half on the way there, half back) and
//! may be made to fail by a test or scenario. A call to a dead node fails; a node that dies while serving a
//! call fails it too. [`meta_client`] is a node's client of meta: which meta it calls, and how it finds the
//! leader among several.

pub mod meta_client;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use epochlab_barrier::{Barrier, BarrierCompleteResponse};
use epochlab_common::plan::StreamActorDesc;
use epochlab_common::{ActorId, Epoch, SimRng, WorkerId};
use thiserror::Error;
use tokio::sync::{mpsc, oneshot};

pub use meta_client::{MetaClient, MetaMembers, MetaRpcError, MetaServing};

/// Requests a node's service may have queued, at most.
pub const SERVICE_QUEUE: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RpcKind {
    InjectBarrier,
    BarrierComplete,
    BuildActors,
    DropActors,
    Reset,
    WaitEpochCommit,
    /// Not a request: the delivery of version deltas from meta to a node (its latency only).
    VersionDelta,
}

impl RpcKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RpcKind::InjectBarrier => "inject_barrier",
            RpcKind::BarrierComplete => "barrier_complete",
            RpcKind::BuildActors => "build_actors",
            RpcKind::DropActors => "drop_actors",
            RpcKind::Reset => "reset",
            RpcKind::WaitEpochCommit => "wait_epoch_commit",
            RpcKind::VersionDelta => "version_delta",
        }
    }
}

#[derive(Clone, Debug)]
pub enum Request {
    InjectBarrier {
        barrier: Barrier,
        to_send: BTreeSet<ActorId>,
        to_collect: BTreeSet<ActorId>,
    },
    /// Wait until the node has completed `prev_epoch` and return what it synced.
    BarrierComplete {
        prev_epoch: Epoch,
    },
    BuildActors {
        actors: Vec<StreamActorDesc>,
        /// The recovery generation the actors belong to (their exchange channels are of that generation).
        generation: u64,
    },
    DropActors {
        actors: Vec<ActorId>,
    },
    /// Abort every actor, drop all uncommitted data, move to `generation`. With `stop`, first send that
    /// Stop barrier to the node's actors and wait for it (RisingWave's `force_stop_actors` before #5444:
    /// RisingWave #5244, where meta sets it).
    Reset {
        generation: u64,
        prev_epoch: Epoch,
        stop: Option<Barrier>,
    },
    /// Wait until the node has pinned a version whose max committed epoch is at least `epoch`.
    WaitEpochCommit {
        epoch: Epoch,
    },
}

impl Request {
    pub fn kind(&self) -> RpcKind {
        match self {
            Request::InjectBarrier { .. } => RpcKind::InjectBarrier,
            Request::BarrierComplete { .. } => RpcKind::BarrierComplete,
            Request::BuildActors { .. } => RpcKind::BuildActors,
            Request::DropActors { .. } => RpcKind::DropActors,
            Request::Reset { .. } => RpcKind::Reset,
            Request::WaitEpochCommit { .. } => RpcKind::WaitEpochCommit,
        }
    }
}

#[derive(Clone, Debug)]
pub enum Response {
    Ack,
    BarrierComplete(BarrierCompleteResponse),
}

#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum RpcError {
    #[error("worker {0} is unreachable")]
    Unreachable(WorkerId),
    #[error("injected failure")]
    Injected,
    /// The node answered with an error.
    #[error(transparent)]
    Remote(#[from] RemoteError),
}

/// Why a DML chunk could not be handed to its table actor (what a frontend hears from the compute node that
/// owns the rows, or from its own routing).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum DmlError {
    #[error("no DML channel for actor {actor} on worker {worker}")]
    NoChannel { actor: ActorId, worker: WorkerId },
    #[error("actor {actor} on worker {worker} is gone")]
    ActorGone { actor: ActorId, worker: WorkerId },
    #[error("table {0} not found")]
    NoTable(epochlab_common::TableId),
    #[error("worker {0} is not running")]
    WorkerDown(WorkerId),
}

/// What kind of error a node answered with. The node's own typed error does not cross the network (this
/// crate cannot know it): the node maps it to one of these and its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RemoteErrorKind {
    /// An actor the request needs has failed, or failed while the request waited.
    ActorFailed,
    /// An actor the request names is not on the node.
    NotFound,
    /// The request conflicts with the node's state: an actor that already exists, an epoch injected twice.
    Conflict,
    /// A source actor's barrier queue is full (more barriers in flight than meta allows).
    QueueFull,
    /// An actor's plan could not be built.
    Build,
    /// Sealing or syncing an epoch failed.
    Storage,
    /// The node was reset while the request waited.
    Reset,
    /// The node is shutting down.
    Shutdown,
}

impl RemoteErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RemoteErrorKind::ActorFailed => "actor_failed",
            RemoteErrorKind::NotFound => "not_found",
            RemoteErrorKind::Conflict => "conflict",
            RemoteErrorKind::QueueFull => "queue_full",
            RemoteErrorKind::Build => "build",
            RemoteErrorKind::Storage => "storage",
            RemoteErrorKind::Reset => "reset",
            RemoteErrorKind::Shutdown => "shutdown",
        }
    }
}

/// An error a node answered a request with: its kind, and the message of the node's typed error. Displays as
/// the message alone.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{message}")]
pub struct RemoteError {
    pub kind: RemoteErrorKind,
    pub message: String,
}

impl RemoteError {
    pub fn new(kind: RemoteErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// A request as a node's service receives it, with the channel for its answer.
pub type ServiceRequest = (Request, oneshot::Sender<Result<Response, RemoteError>>);

#[derive(Clone)]
pub struct Network {
    inner: Arc<Mutex<Inner>>,
    rng: SimRng,
}

#[derive(Default)]
struct Inner {
    endpoints: BTreeMap<WorkerId, mpsc::Sender<ServiceRequest>>,
    /// When the last request to each node is delivered: requests to one node arrive in the order they were
    /// sent, as over one connection.
    last_delivery: BTreeMap<WorkerId, tokio::time::Instant>,
    latency: BTreeMap<RpcKind, (Duration, Duration)>,
    failures: Vec<FailRule>,
}

struct FailRule {
    kind: RpcKind,
    worker: Option<WorkerId>,
    remaining: u32,
}

impl Network {
    pub fn new(rng: SimRng) -> Self {
        Self {
            inner: Arc::default(),
            rng,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A node comes up: calls to it arrive on the returned receiver.
    pub fn register(&self, worker: WorkerId) -> mpsc::Receiver<ServiceRequest> {
        let (tx, rx) = mpsc::channel(SERVICE_QUEUE);
        self.lock().endpoints.insert(worker, tx);
        rx
    }

    /// A node goes down: calls to it fail.
    pub fn unregister(&self, worker: WorkerId) {
        self.lock().endpoints.remove(&worker);
    }

    /// Calls of `kind` take a latency drawn uniformly from `range` (whole microseconds).
    pub fn set_latency(&self, kind: RpcKind, range: std::ops::Range<Duration>) {
        self.lock().latency.insert(kind, (range.start, range.end));
    }

    /// The range calls of `kind` take now (zero unless configured).
    pub fn latency_range(&self, kind: RpcKind) -> std::ops::Range<Duration> {
        match self.lock().latency.get(&kind) {
            Some((lo, hi)) => *lo..*hi,
            None => Duration::ZERO..Duration::ZERO,
        }
    }

    /// Forget every pending failure rule.
    pub fn clear_failures(&self) {
        self.lock().failures.clear();
    }

    /// Draw one latency of `kind` (zero unless configured).
    pub fn latency(&self, kind: RpcKind) -> Duration {
        let range = self.lock().latency.get(&kind).copied();
        match range {
            Some((lo, hi)) if hi > lo => self.rng.duration(lo..hi),
            Some((lo, _)) => lo,
            None => Duration::ZERO,
        }
    }

    /// Make the next `count` calls of `kind` (to `worker`, or to any node) fail.
    pub fn fail_next(&self, kind: RpcKind, worker: Option<WorkerId>, count: u32) {
        self.lock().failures.push(FailRule {
            kind,
            worker,
            remaining: count,
        });
    }

    fn take_failure(&self, kind: RpcKind, worker: WorkerId) -> bool {
        let mut inner = self.lock();
        let hit = inner
            .failures
            .iter_mut()
            .find(|r| r.kind == kind && r.worker.is_none_or(|w| w == worker) && r.remaining > 0);
        let Some(rule) = hit else { return false };
        rule.remaining -= 1;
        inner.failures.retain(|r| r.remaining > 0);
        true
    }

    /// Call `worker`'s service.
    pub async fn call(&self, worker: WorkerId, request: Request) -> Result<Response, RpcError> {
        let kind = request.kind();
        let latency = self.latency(kind);
        let deliver_at = {
            let mut inner = self.lock();
            let mut at = tokio::time::Instant::now() + latency / 2;
            if let Some(last) = inner.last_delivery.get(&worker) {
                at = at.max(*last + Duration::from_micros(1));
            }
            inner.last_delivery.insert(worker, at);
            at
        };
        tokio::time::sleep_until(deliver_at).await;
        if self.take_failure(kind, worker) {
            return Err(RpcError::Injected);
        }
        let tx = self
            .lock()
            .endpoints
            .get(&worker)
            .cloned()
            .ok_or(RpcError::Unreachable(worker))?;
        let (resp_tx, resp_rx) = oneshot::channel();
        tx.send((request, resp_tx))
            .await
            .map_err(|_| RpcError::Unreachable(worker))?;
        let resp = resp_rx.await.map_err(|_| RpcError::Unreachable(worker))?;
        tokio::time::sleep(latency - latency / 2).await;
        resp.map_err(RpcError::Remote)
    }
}
