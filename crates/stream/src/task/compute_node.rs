//! A compute node: its storage, its local barrier worker and actors, the service that answers meta's RPCs,
//! and the observer that applies version deltas from meta in order.

use std::sync::Arc;

use epochlab_common::{ActorId, Clock, EventLog, StreamChunk, Toggles, WorkerId, event};
pub use epochlab_rpc::DmlError;
use epochlab_rpc::{Network, RemoteError, Request, Response, RpcKind, ServiceRequest};
use epochlab_storage::{AccessObserver, HummockManager, NodeStorage};
use tokio::sync::mpsc;

use super::barrier_worker::{LocalBarrierManager, LocalBarrierWorker};
use super::build::{
    ActiveTables, ActorFailureLog, BuildEnv, DmlManager, DmlWrite, NodeTasks, StreamStats,
};
use super::exchange::ExchangeRegistry;
use crate::executor::{BackfillRegistry, SinkRegistry};

#[derive(Clone, Debug)]
pub struct StreamConfig {
    /// DML chunks a table actor may have queued.
    pub dml_channel_capacity: usize,
    /// Barriers a source actor may have queued: meta's in-flight limit (plus recovery's Initial barrier).
    pub barrier_channel_capacity: usize,
    /// RisingWave's debug-build checks: the backfill reads each progress row before it updates it, and the
    /// progress and materialized tables check every write against their contents. Off is a release build.
    pub persist_check: bool,
    /// The engine's bug toggles, whole; the streaming side reads `backfill_vnode` (RisingWave #16815).
    pub toggles: Toggles,
}

impl Default for StreamConfig {
    fn default() -> Self {
        Self {
            dml_channel_capacity: 64,
            barrier_channel_capacity: 10_001,
            persist_check: true,
            toggles: Toggles::default(),
        }
    }
}

/// What every compute node of a cluster shares: the network, meta's storage manager (for version deltas and
/// the committed data), the exchange and sink registries, the clock and the event log.
/// How a node tells meta it is alive (called every second).
pub type Heartbeat = Arc<dyn Fn(WorkerId) + Send + Sync>;

#[derive(Clone)]
pub struct ComputeEnv {
    pub network: Network,
    pub hummock: Arc<HummockManager>,
    pub exchange: ExchangeRegistry,
    pub sinks: SinkRegistry,
    pub backfill: BackfillRegistry,
    pub clock: Clock,
    pub log: EventLog,
    pub config: StreamConfig,
    pub heartbeat: Option<Heartbeat>,
    /// Every actor failure of the cluster, typed.
    pub failures: ActorFailureLog,
    /// Told of every state-store access by an actor (checkers).
    pub access_observer: Option<AccessObserver>,
}

pub struct ComputeNode {
    worker: WorkerId,
    active: ActiveTables,
    storage: NodeStorage,
    barrier_manager: LocalBarrierManager,
    tasks: Arc<NodeTasks>,
    dml: DmlManager,
    stats: Arc<StreamStats>,
    env: ComputeEnv,
}

impl ComputeNode {
    /// Start a node at `generation`: it registers on the network and starts serving.
    pub fn start(worker: WorkerId, env: ComputeEnv, generation: u64) -> Self {
        let storage = NodeStorage::new(
            worker,
            env.hummock.committed_store().clone(),
            env.hummock.current_version(),
            generation,
        );
        if let Some(observer) = &env.access_observer {
            storage.set_access_observer(observer.clone());
        }
        let tasks = Arc::new(NodeTasks::default());
        let dml = DmlManager::default();
        let stats = Arc::new(StreamStats::default());
        let active = ActiveTables::default();
        let (barrier_worker, events) = LocalBarrierWorker::new(
            BuildEnv {
                worker,
                storage: storage.clone(),
                exchange: env.exchange.clone(),
                sinks: env.sinks.clone(),
                backfill: env.backfill.clone(),
                active: active.clone(),
                dml: dml.clone(),
                tasks: tasks.clone(),
                clock: env.clock.clone(),
                log: env.log.clone(),
                stats: stats.clone(),
                failures: env.failures.clone(),
                dml_channel_capacity: env.config.dml_channel_capacity,
                persist_check: env.config.persist_check,
                toggles: env.config.toggles,
                barrier_channel_capacity: env.config.barrier_channel_capacity,
            },
            generation,
        );
        let barrier_manager = barrier_worker.handle();
        tasks.spawn(barrier_worker.run(events));
        let requests = env.network.register(worker);
        tasks.spawn(serve(
            requests,
            barrier_manager.clone(),
            storage.clone(),
            tasks.clone(),
        ));
        tasks.spawn(observe_versions(storage.clone(), env.clone(), worker));
        if let Some(heartbeat) = env.heartbeat.clone() {
            tasks.spawn(async move {
                loop {
                    heartbeat(worker);
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            });
        }
        event!(
            env.log,
            "start node",
            "worker={worker} generation={generation}"
        );
        Self {
            worker,
            active,
            storage,
            barrier_manager,
            tasks,
            dml,
            stats,
            env,
        }
    }

    pub fn worker(&self) -> WorkerId {
        self.worker
    }

    pub fn storage(&self) -> &NodeStorage {
        &self.storage
    }

    pub fn barrier_manager(&self) -> &LocalBarrierManager {
        &self.barrier_manager
    }

    pub fn stats(&self) -> &Arc<StreamStats> {
        &self.stats
    }

    /// The tables each running actor uses.
    pub fn active_tables(&self) -> &ActiveTables {
        &self.active
    }

    /// Kill the node: every task of it stops at once, its uncommitted data is gone, calls to it fail.
    pub fn kill(&self) {
        self.env.network.unregister(self.worker);
        self.tasks.abort_all();
        self.dml.clear();
        self.active.clear();
        event!(self.env.log, "kill node", "worker={}", self.worker);
    }

    /// Hand a DML chunk to the table actor `actor` of this node; returns once the actor has taken it (waits
    /// while its queue is full).
    pub async fn dml(&self, actor: ActorId, chunk: StreamChunk) -> Result<(), DmlError> {
        let worker = self.worker;
        let tx = self
            .dml
            .get(actor)
            .ok_or(DmlError::NoChannel { actor, worker })?;
        let (taken, notice) = tokio::sync::oneshot::channel();
        let gone = DmlError::ActorGone { actor, worker };
        tx.send(DmlWrite { chunk, taken })
            .await
            .map_err(|_| gone.clone())?;
        notice.await.map_err(|_| gone)
    }
}

/// Answer meta's requests; each in its own task, since `barrier_complete` waits for its epoch.
async fn serve(
    mut requests: mpsc::Receiver<ServiceRequest>,
    manager: LocalBarrierManager,
    storage: NodeStorage,
    tasks: Arc<NodeTasks>,
) {
    while let Some((request, reply)) = requests.recv().await {
        let manager = manager.clone();
        let storage = storage.clone();
        tasks.spawn(async move {
            let result = match request {
                Request::InjectBarrier {
                    barrier,
                    to_send,
                    to_collect,
                } => manager
                    .inject(barrier, to_send, to_collect)
                    .await
                    .map(|()| Response::Ack),
                Request::BarrierComplete { prev_epoch } => manager
                    .await_epoch_completed(prev_epoch)
                    .await
                    .map(Response::BarrierComplete),
                Request::BuildActors { actors, generation } => manager
                    .build(actors, generation)
                    .await
                    .map(|()| Response::Ack),
                Request::DropActors { actors } => {
                    manager.drop_actors(actors).await.map(|()| Response::Ack)
                }
                Request::Reset {
                    generation,
                    prev_epoch,
                    stop,
                } => {
                    if let Some(stop) = stop {
                        manager.stop_all_actors(stop).await;
                    }
                    manager
                        .reset(generation, prev_epoch)
                        .await
                        .map(|()| Response::Ack)
                }
                Request::WaitEpochCommit { epoch } => {
                    storage.wait_for_epoch(epoch).await;
                    Ok(Response::Ack)
                }
            };
            let _ = reply.send(result.map_err(RemoteError::from));
        });
    }
}

/// Apply meta's version deltas in order, each after the notification latency.
async fn observe_versions(storage: NodeStorage, env: ComputeEnv, worker: WorkerId) {
    let latest = env.hummock.latest_version_id();
    loop {
        let pinned = storage.pinned_version().id;
        match env.hummock.deltas_after(pinned) {
            Ok(deltas) if deltas.is_empty() => {
                // Any change: a restarted meta's load can take the latest id back (see `deltas_after`).
                latest.wait_for(|id| *id != pinned).await;
            }
            Ok(deltas) => {
                for delta in deltas {
                    tokio::time::sleep(env.network.latency(RpcKind::VersionDelta)).await;
                    if let Err(e) = storage.apply_version_delta(&delta) {
                        tracing::warn!(worker = worker.0, error = %e, "version delta rejected; resynchronising");
                        break;
                    }
                    event!(env.log, "apply version", "worker={worker} {delta}");
                }
            }
            Err(full) => {
                tokio::time::sleep(env.network.latency(RpcKind::VersionDelta)).await;
                event!(
                    env.log,
                    "apply version",
                    "worker={worker} full version {} mce={}",
                    full.id,
                    full.max_committed_epoch
                );
                storage.reset_version(full);
            }
        }
    }
}
