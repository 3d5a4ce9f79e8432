//! A simulated cluster: meta (one node, or several on a lease: `cluster/meta_nodes.rs`) with its barrier manager,
//! N compute nodes, the network between them, and the registries that stand for shared infrastructure (object
//! store, actor exchange, sink targets).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use epochlab_barrier::{BarrierManagerStats, SchedulerStatus};
use epochlab_common::event;
use epochlab_common::trace::{self, Cause};
use epochlab_common::{
    ActorId, Epoch, Op, OwnedRow, StreamChunk, TableId, VirtualNode, WorkerId, value_encoding,
    vspan,
};
use epochlab_meta::store::{MetaStore, MetaStoreError};
use epochlab_meta::{MetaConfig, MetaNode};
use epochlab_rpc::Network;
use epochlab_storage::{CommittedStore, CompactionConfig, HummockManager};
use epochlab_stream::executor::{BackfillRegistry, SinkRegistry};
use epochlab_stream::task::build::{ActorFailure, ActorFailureLog};
use epochlab_stream::task::exchange::{ExchangeConfig, ExchangeRegistry};
use epochlab_stream::{ComputeEnv, ComputeNode, DmlError, StreamConfig};
use tokio::task::JoinHandle;

use crate::checkers::{ViolationCounts, ZombieAccessDetector};
use crate::runtime::SimContext;

mod meta_nodes;

pub use meta_nodes::meta_name;

#[derive(Clone, Debug)]
pub struct ClusterConfig {
    pub compute_nodes: u32,
    /// Meta nodes: one runs alone; several run on a lease ([`Cluster::launch`], `cluster/meta_nodes.rs`).
    pub meta_nodes: u32,
    /// Compactor nodes: compaction goes on while one of them is up.
    pub compactor_nodes: u32,
    pub meta: MetaConfig,
    pub stream: StreamConfig,
    pub exchange: ExchangeConfig,
    /// When storage compacts a group's L0 and when the group's writes stop.
    pub compaction: CompactionConfig,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            compute_nodes: 3,
            meta_nodes: 1,
            compactor_nodes: 1,
            meta: MetaConfig::default(),
            stream: StreamConfig::default(),
            exchange: ExchangeConfig::default(),
            compaction: CompactionConfig::default(),
        }
    }
}

/// What [`Cluster::check_recoveries`] found wrong.
#[derive(Clone, Debug, thiserror::Error)]
pub enum RecoveryFinding {
    #[error("actor {} on worker {} failed on its state: {}", .0.actor, .0.worker, .0.error)]
    StateError(Box<ActorFailure>),
    #[error("{got} recoveries ran, the faults caused {expected}")]
    Recoveries { expected: u64, got: u64 },
}

pub struct Cluster {
    pub ctx: SimContext,
    /// Meta, reached through one slot (see [`Cluster::meta`]) so that a meta can be replaced.
    meta_slot: Arc<Mutex<MetaNode>>,
    /// The store every meta of the cluster opens, watched for writes of a deposed meta (I6). (A meta restored
    /// into another store, [`Cluster::restart_meta_from`], writes that one, unwatched.)
    store: Arc<crate::one_writer::WatchedStore>,
    pub hummock: Arc<HummockManager>,
    pub network: Network,
    pub sinks: SinkRegistry,
    pub backfill: BackfillRegistry,
    pub exchange: ExchangeRegistry,
    /// (I2 zombie-access) every access by an actor to a table meta has unregistered.
    pub zombie: ZombieAccessDetector,
    /// The checkers' violations so far, by invariant (for metrics).
    pub violations: ViolationCounts,
    /// Every actor failure, typed.
    pub failures: ActorFailureLog,
    env: ComputeEnv,
    nodes: Mutex<BTreeMap<WorkerId, Arc<ComputeNode>>>,
    /// Each compactor node (1-based, as `compactor-{i}`), up or not.
    compactors: Mutex<Vec<bool>>,
    barrier_stats: Arc<BarrierManagerStats>,
    /// The serving meta's tasks: its barrier manager and its heartbeat checker.
    manager: Mutex<JoinHandle<()>>,
    heartbeat_checker: Mutex<JoinHandle<()>>,
    /// Meta's configuration, for a meta that restarts.
    meta_config: epochlab_meta::MetaConfig,
    /// Set by the first [`Cluster::shutdown`]; later ones do nothing.
    shut_down: AtomicBool,
    /// What clients were told before meta's last kill, until the checkers hold the restarted meta to it.
    meta_witness: Mutex<Option<crate::meta_witness::MetaWitness>>,
    /// Compute nodes started while meta was down: each registers with the next meta (a RisingWave compute
    /// node retries its registration until a meta answers).
    awaiting_meta: Mutex<Vec<WorkerId>>,
    /// The crash points meta died at ([`Cluster::arm_meta_crash`]), in order.
    meta_crashes: Mutex<Vec<epochlab_meta::CrashPoint>>,
    /// Why the last restart of meta failed (its store could not be loaded), if one did.
    meta_restart_error: Mutex<Option<MetaStoreError>>,
    /// A cluster of several metas: their lease service, processes and leader.
    meta_nodes: Option<meta_nodes::LeasedMetas>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Cluster {
    /// Start a cluster and wait until the barrier manager's bootstrap recovery is done. Its meta store is a
    /// new, empty one in memory, whose opening fails only if SQLite cannot allocate: no input reaches the
    /// panic. A run that reports a store's error as its outcome uses [`Cluster::try_start`].
    /// A cluster of one meta ([`Cluster::launch`] starts one of several).
    pub async fn start(ctx: &SimContext, config: ClusterConfig) -> Self {
        Self::try_start(ctx, config)
            .await
            .unwrap_or_else(|e| panic!("a new cluster's meta store: {e}"))
    }

    /// A new cluster of one meta, or the error of its meta store (which a run reports as its failure).
    pub async fn try_start(
        ctx: &SimContext,
        config: ClusterConfig,
    ) -> Result<Self, MetaStoreError> {
        assert!(
            config.meta_nodes <= 1,
            "a cluster of several metas starts with Cluster::launch, which runs their processes"
        );
        Self::build(ctx, config).await
    }

    /// A new cluster of any number of metas, shared: several run their processes on a lease from now on.
    pub async fn launch(
        ctx: &SimContext,
        config: ClusterConfig,
    ) -> Result<Arc<Self>, MetaStoreError> {
        let cluster = Arc::new(Self::build(ctx, config).await?);
        cluster.start_meta_nodes();
        Ok(cluster)
    }

    async fn build(ctx: &SimContext, config: ClusterConfig) -> Result<Self, MetaStoreError> {
        // Several metas: the first of a seeded order leads (a draw only then: one meta draws nothing).
        let meta_nodes = (config.meta_nodes > 1)
            .then(|| meta_nodes::LeasedMetas::elect_first(config.meta_nodes, &ctx.rng));
        let hummock = Arc::new(HummockManager::new(
            CommittedStore::default(),
            Some(ctx.log.clone()),
        ));
        hummock.set_compaction_config(config.compaction);
        let network = Network::new(ctx.rng.clone());
        let exchange = ExchangeRegistry::new(config.exchange);
        let zombie = ZombieAccessDetector::default();
        let sinks = SinkRegistry::default();
        let backfill = BackfillRegistry::default();
        let env = ComputeEnv {
            network: network.clone(),
            hummock: hummock.clone(),
            exchange: exchange.clone(),
            sinks: sinks.clone(),
            backfill: backfill.clone(),
            clock: ctx.clock.clone(),
            log: ctx.log.clone(),
            config: config.stream.clone(),
            heartbeat: None,
            failures: ActorFailureLog::default(),
            access_observer: Some(zombie.observer(Arc::downgrade(&hummock), ctx.clock.clone())),
        };
        let inner_store = config.meta.store.open()?;
        let store = Arc::new(crate::one_writer::WatchedStore::new(
            inner_store,
            ctx.clock.clone(),
        ));
        let (meta, manager) = MetaNode::open(epochlab_meta::MetaEnv {
            config: config.meta.clone(),
            hummock: hummock.clone(),
            network: network.clone(),
            log: ctx.log.clone(),
            clock: ctx.clock.clone(),
            rng: ctx.rng.clone(),
            store: store.clone(),
        })?;
        let mut env = env;
        let meta_slot = Arc::new(Mutex::new(meta.clone()));
        let heartbeat_slot = meta_slot.clone();
        env.heartbeat = Some(Arc::new(move |w| {
            let meta = heartbeat_slot
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            meta.heartbeat(w)
        }));
        let mut nodes = BTreeMap::new();
        for i in 1..=config.compute_nodes {
            let w = WorkerId(i);
            let generation = meta.add_worker(w);
            nodes.insert(w, Arc::new(ComputeNode::start(w, env.clone(), generation)));
        }
        if config.compactor_nodes == 0 {
            // No compactor: L0 only grows.
            hummock.set_compactor_up(false);
        }
        // The cluster owns the barrier stats: they outlive one meta's barrier manager.
        let barrier_stats = Arc::new(BarrierManagerStats::default());
        let manager = manager.with_stats(barrier_stats.clone());
        let manager = tokio::spawn(manager.run());
        let heartbeat_checker = tokio::spawn(meta.clone().run_heartbeat_checker());
        let cluster = Self {
            ctx: ctx.clone(),
            meta_slot,
            store,
            hummock,
            network,
            sinks,
            backfill,
            exchange,
            zombie,
            violations: ViolationCounts::default(),
            failures: env.failures.clone(),
            env,
            nodes: Mutex::new(nodes),
            compactors: Mutex::new(vec![true; config.compactor_nodes as usize]),
            barrier_stats,
            manager: Mutex::new(manager),
            heartbeat_checker: Mutex::new(heartbeat_checker),
            meta_config: config.meta.clone(),
            shut_down: AtomicBool::new(false),
            meta_witness: Mutex::new(None),
            awaiting_meta: Mutex::new(Vec::new()),
            meta_crashes: Mutex::new(Vec::new()),
            meta_restart_error: Mutex::new(None),
            meta_nodes,
        };
        cluster.wait_ready().await;
        Ok(cluster)
    }

    /// Stop the cluster: abort meta's tasks and kill every node (each logs `kill node`). Only the first call
    /// does anything; dropping the last reference calls it too. A run that hands its cluster to an observer
    /// (a `ClusterHook`, which may keep it after the run) calls this itself at the end of the run, inside the
    /// simulation, so that its event log and digest are the same whoever still holds the cluster. The nodes'
    /// and meta's stats stay readable.
    pub fn shutdown(&self) {
        if self.shut_down.swap(true, Ordering::Relaxed) {
            return;
        }
        lock(&self.manager).abort();
        lock(&self.heartbeat_checker).abort();
        if let Some(m) = &self.meta_nodes {
            m.shutdown();
        }
        for node in self
            .nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            node.kill();
        }
    }

    /// Kill the serving meta (RisingWave's meta node killed): it is fenced and its tasks end; compute nodes
    /// go on running their actors with no barrier reaching them, and their heartbeats reach no meta that
    /// counts them. `false` when it was dead already.
    pub fn kill_meta(&self) -> bool {
        let meta = self.meta();
        if meta.is_killed() {
            return false;
        }
        *lock(&self.meta_witness) = Some(crate::meta_witness::MetaWitness::take(self, &meta));
        meta.kill();
        lock(&self.manager).abort();
        lock(&self.heartbeat_checker).abort();
        true
    }

    /// Start meta again from its store, killing the serving one first if it is alive: the new meta takes
    /// the slot (every caller reaches it from now on) and its barrier manager runs the bootstrap recovery.
    /// Returns once the new meta is serving, not once it is ready ([`Cluster::wait_ready`]).
    /// A store whose rows cannot be loaded leaves meta down, and its error is the run's
    /// ([`Cluster::meta_store_error`]).
    pub fn restart_meta(&self) -> Result<(), MetaStoreError> {
        let store = self.meta().store().clone();
        self.restart_meta_from(store)
    }

    /// [`Cluster::restart_meta`] from another store (RisingWave's meta restored from a backup into a new
    /// store): the new meta leads `store` from now on.
    pub fn restart_meta_from(&self, store: Arc<dyn MetaStore>) -> Result<(), MetaStoreError> {
        let result = self.open_meta(store);
        if let Err(e) = &result {
            *lock(&self.meta_restart_error) = Some(e.clone());
        }
        result
    }

    /// The first error of the serving meta's store, or of a store a restarted meta could not start from.
    pub fn meta_store_error(&self) -> Option<MetaStoreError> {
        let failed_restart = lock(&self.meta_restart_error).clone();
        failed_restart.or_else(|| self.meta().store_error())
    }

    fn open_meta(&self, store: Arc<dyn MetaStore>) -> Result<(), MetaStoreError> {
        self.kill_meta();
        let old = self.meta();
        let (meta, manager) = MetaNode::open(epochlab_meta::MetaEnv {
            config: self.meta_config.clone(),
            hummock: self.hummock.clone(),
            network: self.network.clone(),
            log: self.ctx.log.clone(),
            clock: self.ctx.clock.clone(),
            rng: self.ctx.rng.clone(),
            store,
        })?;
        if let Some(hook) = old.recovery_hook() {
            meta.set_recovery_hook(hook);
        }
        if let Some(hook) = old.crash_hook() {
            meta.set_crash_hook(hook);
        }
        *lock(&self.meta_slot) = meta.clone();
        // Nodes that came up while meta was down register now, before the bootstrap resets every node.
        let awaiting = std::mem::take(&mut *lock(&self.awaiting_meta));
        for w in awaiting {
            self.restart(w);
        }
        // The restarted meta's bootstrap is a recovery (it resets every node, dropping what no checkpoint
        // committed): counted as one, so that whoever watches the count (the workload's table models) knows
        // uncommitted writes are gone. A new cluster's first bootstrap is not.
        self.barrier_stats
            .recoveries
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let manager = manager.with_stats(self.barrier_stats.clone());
        *lock(&self.manager) = tokio::spawn(manager.run());
        *lock(&self.heartbeat_checker) = tokio::spawn(meta.run_heartbeat_checker());
        Ok(())
    }

    /// Meta dies at `point` (issue 56, stage 2; `epochlab_meta::crash`): the first DDL to reach it kills
    /// meta right after that commit, and meta restarts from its store after U(0, 1 s), drawn then. Once: a
    /// restarted meta keeps the hook, disarmed.
    pub fn arm_meta_crash(self: &Arc<Self>, point: epochlab_meta::CrashPoint) {
        let armed = Arc::new(Mutex::new(Some(point)));
        let cluster = Arc::downgrade(self);
        let hook: epochlab_meta::CrashHook = Arc::new(move |at| {
            let mut armed = lock(&armed);
            let Some(cluster) = cluster.upgrade().filter(|_| *armed == Some(at)) else {
                return false;
            };
            *armed = None;
            drop(armed);
            cluster.crash_meta(at);
            true
        });
        self.meta().set_crash_hook(hook);
    }

    /// Kill meta at crash point `at` and restart it after U(0, 1 s).
    fn crash_meta(self: &Arc<Self>, at: epochlab_meta::CrashPoint) {
        let restart_after = self
            .ctx
            .rng
            .duration(Duration::ZERO..Duration::from_secs(1));
        event!(
            self.ctx.log,
            "crash meta",
            "at={at} restart_after={restart_after:?}"
        );
        lock(&self.meta_crashes).push(at);
        // Several metas: the leader's process dies, and its restart within the lease restores it.
        let leader = self.meta_nodes.as_ref().and(self.meta_leader());
        match leader {
            Some(i) => self.kill_meta_node(i),
            None => self.kill_meta(),
        };
        let cluster = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(restart_after).await;
            if let Some(i) = leader {
                cluster.restart_meta_node(i);
                return event!(cluster.ctx.log, "restart node", "node={}", meta_name(i));
            }
            match cluster.restart_meta() {
                Ok(()) => event!(cluster.ctx.log, "restart node", "node=meta-1"),
                Err(e) => event!(cluster.ctx.log, "restart node", "node=meta-1 failed: {e}"),
            }
        });
    }

    /// The crash points meta died at, in order.
    pub fn meta_crashes(&self) -> Vec<epochlab_meta::CrashPoint> {
        lock(&self.meta_crashes).clone()
    }

    /// The witness of meta's last kill, once (see [`crate::meta_witness`]).
    pub fn take_meta_witness(&self) -> Option<crate::meta_witness::MetaWitness> {
        lock(&self.meta_witness).take()
    }

    /// The cluster's meta store, as the one-writer check watches it (I6).
    pub fn watched_store(&self) -> &Arc<crate::one_writer::WatchedStore> {
        &self.store
    }

    /// The meta node now serving the cluster (a handle: cheap to clone, and the one place meta is reached,
    /// so a restarted meta takes the slot's place for every caller).
    pub fn meta(&self) -> MetaNode {
        self.meta_slot
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Wait until a living meta's scheduler accepts commands: after a kill, its restart and bootstrap.
    pub async fn wait_meta_ready(&self) {
        loop {
            let meta = self.meta();
            if !meta.is_killed() && meta.scheduler().status() == SchedulerStatus::Ready {
                return;
            }
            drop(meta);
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Wait until the scheduler accepts commands (bootstrap or recovery done).
    pub async fn wait_ready(&self) {
        while self.meta().scheduler().status() != SchedulerStatus::Ready {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    pub fn barrier_stats(&self) -> &Arc<BarrierManagerStats> {
        &self.barrier_stats
    }

    /// What a recovery test checks after its faults, beside its own oracle: no actor failed on its state (such
    /// a failure only starts another recovery, so a test that waits for its view to converge never sees it)
    /// and exactly `expected` recoveries ran (the ones its faults caused).
    pub fn check_recoveries(&self, expected: u64) -> Result<(), RecoveryFinding> {
        if let Some(failure) = self.failures.first_state_error() {
            return Err(RecoveryFinding::StateError(Box::new(failure)));
        }
        let got = self.barrier_stats.recoveries.load(Ordering::Relaxed);
        if got != expected {
            return Err(RecoveryFinding::Recoveries { expected, got });
        }
        Ok(())
    }

    pub fn node(&self, worker: WorkerId) -> Option<Arc<ComputeNode>> {
        self.nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&worker)
            .cloned()
    }

    pub fn nodes(&self) -> Vec<Arc<ComputeNode>> {
        self.nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    pub fn env(&self) -> &ComputeEnv {
        &self.env
    }

    /// Kill a compute node: all its tasks stop at once and its uncommitted data is lost. Meta notices through
    /// failed RPCs and, after the heartbeat timeout, removes it.
    pub fn kill(&self, worker: WorkerId) -> bool {
        let node = self
            .nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&worker);
        let Some(n) = node else {
            return false;
        };
        let span =
            vspan!(parent: trace::root(), "kill node", self.env.clock, worker_id = worker.0 as i64);
        span.in_scope(|| n.kill());
        trace::end(&span, &self.env.clock);
        trace::mark(Cause::NodeKilled(worker), &span);
        true
    }

    /// Remove a compute node for good (a scale-in, as RisingWave #19138's 6 to 2 cores): kill it and tell meta,
    /// whose next recovery (the kill starts one) scales the node's actors in onto the others.
    pub fn remove_node(&self, worker: WorkerId) -> bool {
        let killed = self.kill(worker);
        if killed {
            self.meta().remove_worker(worker);
        }
        killed
    }

    /// Start a killed node again, empty, at the cluster's current generation.
    pub fn restart(&self, worker: WorkerId) {
        if self.meta().is_killed() {
            epochlab_common::event!(
                self.ctx.log,
                "register worker",
                "worker={worker} waits for meta"
            );
            lock(&self.awaiting_meta).push(worker);
            return;
        }
        let clock = &self.env.clock;
        let span = vspan!(parent: trace::root(), "restart node", clock, worker_id = worker.0 as i64, generation = tracing::field::Empty);
        let _entered = span.enter();
        let generation = self.meta().add_worker(worker);
        span.record("generation", generation as i64);
        trace::forget(Cause::NodeKilled(worker));
        let node = Arc::new(ComputeNode::start(worker, self.env.clone(), generation));
        trace::end(&span, clock);
        let old = self
            .nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(worker, node);
        assert!(old.is_none(), "restarted worker {worker} was running");
    }

    /// Kill compactor node `i` (1-based): once every compactor is down, compaction stops until one restarts
    /// ([`Cluster::restart_compactor`]). `false` when it was down already or there is no such node.
    pub fn kill_compactor(&self, i: u32) -> bool {
        let mut up = self.compactors.lock().unwrap_or_else(|e| e.into_inner());
        let Some(slot) = (i as usize).checked_sub(1).and_then(|k| up.get_mut(k)) else {
            return false;
        };
        if !std::mem::replace(slot, false) {
            return false;
        }
        if !up.contains(&true) {
            self.hummock.set_compactor_up(false);
        }
        true
    }

    /// Start killed compactor `i` again: with the first compactor back, the tasks that fell due meanwhile run.
    pub fn restart_compactor(&self, i: u32) {
        let mut up = self.compactors.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = (i as usize).checked_sub(1).and_then(|k| up.get_mut(k)) {
            *slot = true;
            drop(up);
            self.hummock.set_compactor_up(true);
        }
    }

    /// How many compactor nodes are up.
    pub fn compactors_up(&self) -> usize {
        let up = self.compactors.lock().unwrap_or_else(|e| e.into_inner());
        up.iter().filter(|u| **u).count()
    }

    /// Send DML for `table`: each row goes to the actor of its DML fragment that owns the row's vnode (so the
    /// changes of one key keep their order, as RisingWave keeps a session's on one channel). Update pairs stay
    /// together.
    pub async fn dml(&self, table: TableId, rows: Vec<(Op, OwnedRow)>) -> Result<(), DmlError> {
        let rel = self
            .meta()
            .relation(table)
            .ok_or(DmlError::NoTable(table))?;
        let (actors, mapping) = rel.dml_actors().ok_or(DmlError::NoTable(table))?;
        let worker_of: BTreeMap<ActorId, WorkerId> =
            actors.iter().map(|a| (a.actor_id, a.worker)).collect();
        let mut per_actor: BTreeMap<ActorId, Vec<(Op, OwnedRow)>> = BTreeMap::new();
        let dist_key = rel.desc.dist_key_indices();
        for (op, row) in rows {
            let vnode = VirtualNode::compute_row(&row, &dist_key, rel.desc.vnode_count);
            per_actor
                .entry(mapping.owner(vnode))
                .or_default()
                .push((op, row));
        }
        for (actor, rows) in per_actor {
            let worker = worker_of[&actor];
            let node = self.node(worker).ok_or(DmlError::WorkerDown(worker))?;
            node.dml(actor, StreamChunk::from_pairs(rows)).await?;
        }
        Ok(())
    }

    /// The jobs still creating and the snapshot rows their backfill has consumed, in all.
    pub fn backfill_progress(&self) -> (usize, u64) {
        let meta = self.meta();
        let creating: Vec<TableId> = {
            let catalog = meta.catalog();
            let jobs = catalog.relations.values();
            jobs.filter(|r| r.state == epochlab_meta::JobState::Creating)
                .map(|r| r.id)
                .collect()
        };
        let rows = creating
            .iter()
            .filter_map(|&id| meta.backfill_progress(id))
            .sum();
        (creating.len(), rows)
    }

    /// A table's (or view's) rows in committed storage, as of the max committed epoch, in key order.
    pub fn committed_rows(&self, table: TableId) -> Vec<OwnedRow> {
        let mce = self.hummock.max_committed_epoch();
        self.committed_rows_at(table, mce)
    }

    pub fn committed_rows_at(&self, table: TableId, epoch: Epoch) -> Vec<OwnedRow> {
        use std::ops::Bound::Unbounded;
        let width = self.table_width(table);
        self.hummock
            .committed_store()
            .scan(table, (Unbounded, Unbounded), epoch, usize::MAX)
            .into_iter()
            .map(|(_, v)| decode_stored_row(&v, width))
            .collect()
    }

    /// Visit every committed row of `table` as of the max committed epoch, in key order, without collecting
    /// them (a checker of a large table must not hold a second copy of it).
    pub fn for_each_committed_row(&self, table: TableId, mut f: impl FnMut(OwnedRow)) {
        let mce = self.hummock.max_committed_epoch();
        let width = self.table_width(table);
        self.hummock
            .committed_store()
            .for_each(table, mce, |_, v| f(decode_stored_row(v, width)));
    }

    /// How many columns `table` has now in meta's catalog (`None`: not a job's table).
    fn table_width(&self, table: TableId) -> Option<usize> {
        let meta = self.meta();
        let catalog = meta.catalog();
        catalog.get(table).map(|r| r.desc.column_types.len())
    }

    /// A collecting sink's rows as of the max committed epoch, and any anomalies (duplicates, lost rows).
    pub fn sink_rows(&self, sink: TableId) -> Option<(Vec<OwnedRow>, Vec<String>)> {
        self.sinks
            .committed_rows(sink, self.hummock.max_committed_epoch(), |e| {
                self.hummock.is_committed(e)
            })
    }

    /// Actors running on each node.
    pub async fn running_actors(&self) -> BTreeMap<WorkerId, Vec<ActorId>> {
        let mut out = BTreeMap::new();
        for node in self.nodes() {
            if let Ok(ids) = node.barrier_manager().actor_ids().await {
                out.insert(node.worker(), ids);
            }
        }
        out
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A stored row, with NULL in the columns its table has gained since it was written (`ALTER TABLE .. ADD
/// COLUMN` appends them): `width` is the table's column count now.
fn decode_stored_row(value: &[u8], width: Option<usize>) -> OwnedRow {
    let row = value_encoding::decode_row(value).expect("committed rows decode");
    match width {
        Some(w) if row.len() < w => {
            let mut datums = row.into_inner();
            datums.resize(w, None);
            OwnedRow::new(datums)
        }
        _ => row,
    }
}
