//! The meta node: DDL, cluster membership, and the handles the barrier manager's context uses.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use epochlab_barrier::{
    AddMutation, BarrierConfig, BarrierError, BarrierScheduler, Command, GlobalBarrierManager,
    SchedulerStatus,
};
use epochlab_common::catalog::TableDesc;
use epochlab_common::plan::{
    ConflictBehavior, DispatchStrategy, FragmentDistribution, SinkDesc, SinkKind, StreamActorDesc,
    StreamFragment, StreamFragmentEdge, StreamFragmentGraph, StreamNode,
};
use epochlab_common::toggles::DropMode;
use epochlab_common::{
    ActorId, Bitmap, Clock, DataType, EventLog, ExprNode, FragmentId, SimRng, TableId, Toggles,
    VnodeCount, WorkerId, event,
};
use epochlab_common::{trace, vspan};
use epochlab_recovery::{RecoveryConfig, RecoveryError};
use epochlab_rpc::{Network, Request, Response, RpcError, RpcKind};
use epochlab_storage::HummockManager;
use thiserror::Error;
use tracing::Instrument;

use crate::cancel::{GroupPlacement, MATERIALIZED_VIEW_GROUP, STATE_DEFAULT_GROUP};
use crate::catalog::{
    ActorPlacement, BACKFILL_CHUNK_SIZE, Catalog, Fragment, GraphFragment, JobGraph, JobState,
    Relation, RelationKind, StreamScanType,
};
use crate::context::MetaContext;
use crate::crash::CrashPoint;
use crate::notification::{CatalogSnapshot, NotificationManager, NotificationVersion};
use crate::persist::{Committing, Persistence};
use crate::progress::{CreateAborted, Finished};
use crate::sql_catalog::Catalog as SqlCatalog;
use crate::sql_catalog::{JobLink, RelationId};
use crate::store::{MetaStore, Sequence, StoreOp};

#[derive(Clone, Debug)]
pub struct MetaConfig {
    pub barrier: BarrierConfig,
    pub vnode_count: VnodeCount,
    /// Recovery's slow steps and backoff (when it unregisters follows the toggles' `DropMode`).
    pub recovery: RecoveryConfig,
    /// A worker whose last heartbeat is older than this is removed from the cluster (RisingWave at f21fb9b7915:
    /// `max_heartbeat_interval_secs`, 300 s by default, which the simulation's `ci-sim.toml` does not set).
    pub heartbeat_timeout: Duration,
    /// The engine's bug toggles, whole: meta and recovery read `DropMode`, `ConfigChangeWait`,
    /// `RescheduleBackfilling` and `PreApplyCancel`, and hand them to the barrier manager (`OnWorkerErr`).
    pub toggles: Toggles,
    /// Which compaction group a job's state tables join.
    pub compaction_groups: GroupPlacement,
    /// A sink is created once its first barrier is collected, its backfill going on after (RisingWave's
    /// progress tracker at f21fb9b7915 returns a sink's tracking job at once, not waiting for its
    /// backfill); off, a foreground sink waits for its backfill as a view does. On for the SQL runner
    /// (`slt`, `corpus`, `ci`); off for the directed scenarios and random plans until their figures are
    /// measured again with it (then it flips and the old path goes).
    pub sink_decoupled_from_backfill: bool,
    /// Which store meta keeps its rows in.
    pub store: crate::store::MetaBackend,
    /// Jobs made through meta's job API by a harness with no SQL catalog (the random plans, directed
    /// scenarios): a restarted meta keeps a job without a catalog row. Off (RisingWave's rule, as DDL in
    /// meta writes a job's row before the job and deletes it before the job): such a job is a DROP a kill
    /// cut off, and goes.
    pub unlisted_jobs: bool,
}

impl Default for MetaConfig {
    fn default() -> Self {
        Self {
            barrier: BarrierConfig::default(),
            vnode_count: VnodeCount::DEFAULT,
            recovery: RecoveryConfig::default(),
            heartbeat_timeout: Duration::from_secs(300),
            toggles: Toggles::default(),
            compaction_groups: GroupPlacement::default(),
            sink_decoupled_from_backfill: false,
            store: crate::store::MetaBackend::Sqlite,
            unlisted_jobs: false,
        }
    }
}

/// What a table job's materializing fragment reads: its entry `dml` (the DML entry, or a source's
/// connector), the row id column its generator fills, and its `WATERMARK FOR` column and expression.
struct TableEntry {
    row_id_index: Option<usize>,
    watermark: Option<(usize, ExprNode)>,
    dml: StreamNode,
}

/// A table job's fragments other than its root, and its edges.
#[derive(Default)]
struct TableGraph {
    fragments: Vec<GraphFragment>,
    edges: Vec<StreamFragmentEdge>,
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DdlError {
    /// A request to a killed meta: RisingWave's meta client fails at once (no meta answers its RPC).
    #[error("gRPC request to meta service failed: The service is currently unavailable")]
    MetaUnavailable,
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    #[error("cannot drop {0}: other jobs depend on it")]
    HasDependents(String),
    #[error("no compute node is alive")]
    NoWorkers,
    #[error("{0}")]
    Barrier(#[from] epochlab_barrier::BarrierError),
    #[error("rpc {} to worker {worker} failed: {source}", rpc.as_str())]
    Rpc {
        worker: WorkerId,
        rpc: RpcKind,
        #[source]
        source: RpcError,
    },
    /// The DDL's catalog change was refused (a name taken, say), in the catalog's words.
    #[error(transparent)]
    Catalog(#[from] crate::sql_catalog::CatalogError),
    /// A reschedule's bitmaps do not partition the job's vnodes among its actors.
    #[error("{0}")]
    BadAssignment(#[from] crate::reschedule::BadAssignment),
    /// A foreground job's creation ended before its backfill finished.
    #[error("{} {name} was not created: {reason}", kind.as_str())]
    NotCreated {
        kind: RelationKind,
        name: String,
        reason: CreateAborted,
    },
}

/// A request to one node that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallError {
    pub worker: WorkerId,
    pub rpc: RpcKind,
    pub source: RpcError,
}

impl From<CallError> for DdlError {
    fn from(e: CallError) -> Self {
        DdlError::Rpc {
            worker: e.worker,
            rpc: e.rpc,
            source: e.source,
        }
    }
}

impl From<CallError> for RecoveryError {
    fn from(e: CallError) -> Self {
        RecoveryError::Rpc {
            worker: e.worker,
            rpc: e.rpc,
            source: e.source,
        }
    }
}

/// How a view or sink over a table is created.
#[derive(Clone, Debug)]
pub struct JobOptions {
    pub parallelism: usize,
    /// Backfill snapshot rows per second per actor (`SET STREAMING_RATE_LIMIT`); `None` is unlimited.
    pub rate_limit: Option<u32>,
    /// Return once the job's Add barrier is collected instead of when its backfill finishes; the job then
    /// survives recovery and resumes its backfill (`SET BACKGROUND_DDL = true`).
    pub background: bool,
    /// How the job reads its upstream. A no-shuffle job (`StreamScanType::Backfill`) takes its upstream's
    /// distribution: `parallelism` is ignored, its actors are its upstream's, one to one.
    pub scan_type: StreamScanType,
}

impl JobOptions {
    pub fn parallelism(parallelism: usize) -> Self {
        Self {
            parallelism,
            rate_limit: None,
            background: false,
            scan_type: StreamScanType::ArrangementBackfill,
        }
    }
}

/// What a sink writes to, and how fast.
#[derive(Clone, Debug)]
pub struct SinkOptions {
    pub kind: SinkKind,
    /// Simulated time the sink spends per chunk.
    pub chunk_delay: Duration,
    /// Rows per second per actor the sink writes at most (a flow-control executor before it).
    pub sink_rate_limit: Option<u32>,
}

impl Default for SinkOptions {
    fn default() -> Self {
        Self {
            kind: SinkKind::Collecting,
            chunk_delay: Duration::ZERO,
            sink_rate_limit: None,
        }
    }
}

pub(crate) struct Ids {
    next_table: u32,
    next_fragment: u32,
    next_actor: u32,
    /// The next hidden `_row_id` of each table without a primary key: meta hands them out, so that no two
    /// frontends, and no restarted one, give two rows one id. (RisingWave's row ids come from the table's
    /// actors, `RowIdGenExecutor`, from their vnode and time.)
    next_row_id: BTreeMap<TableId, i64>,
}

impl Ids {
    /// The sequences as `rows` hold them (a new cluster's first values where they hold none).
    fn loaded(rows: &crate::store::MetaRows) -> Result<Self, crate::store::MetaStoreError> {
        let id = |s: Sequence| match rows.sequences.get(&s) {
            None => Ok(1),
            Some(&v) => u32::try_from(v).map_err(|_| crate::store::MetaStoreError::Corrupt {
                table: "sequence",
                reason: format!("{s:?} is {v}, not an id"),
            }),
        };
        Ok(Self {
            next_table: id(Sequence::Table)?,
            next_fragment: id(Sequence::Fragment)?,
            next_actor: id(Sequence::Actor)?,
            next_row_id: rows
                .sequences
                .iter()
                .filter_map(|(s, v)| match s {
                    Sequence::RowId(t) => Some((*t, *v as i64)),
                    _ => None,
                })
                .collect(),
        })
    }

    /// The sequences' next values, as the store keeps them.
    pub(crate) fn sequences(&self) -> Vec<(Sequence, u64)> {
        let mut out = vec![
            (Sequence::Table, u64::from(self.next_table)),
            (Sequence::Fragment, u64::from(self.next_fragment)),
            (Sequence::Actor, u64::from(self.next_actor)),
        ];
        out.extend(
            self.next_row_id
                .iter()
                .map(|(t, next)| (Sequence::RowId(*t), *next as u64)),
        );
        out
    }
}

pub(crate) struct WorkerInfo {
    pub generation: u64,
    /// Simulated time (µs since the origin) of the last heartbeat.
    pub last_heartbeat_us: u64,
}

pub(crate) struct ClusterState {
    /// Live workers (not expired): the generation each runs at and its last heartbeat.
    pub workers: BTreeMap<WorkerId, WorkerInfo>,
    /// Workers removed from the cluster for good (a scale-in): the next recovery scales their actors in
    /// rather than moving them.
    pub removed: BTreeSet<WorkerId>,
    /// The current recovery generation (actors and exchange channels belong to one).
    pub generation: u64,
    /// The last generation handed out: each recovery attempt takes a new one, even if an earlier attempt
    /// failed after resetting some nodes.
    pub last_allocated_generation: u64,
}

impl ClusterState {
    /// The workers as the store keeps them: each live one at its generation, each removed one.
    pub(crate) fn worker_rows(&self) -> BTreeMap<WorkerId, crate::store::WorkerRow> {
        let running = self.workers.iter().map(|(id, w)| {
            let row = crate::store::WorkerRow::Running {
                generation: w.generation,
            };
            (*id, row)
        });
        let removed = self
            .removed
            .iter()
            .map(|id| (*id, crate::store::WorkerRow::Removed));
        running.chain(removed).collect()
    }

    /// The generations as the store keeps them.
    pub(crate) fn sequences(&self) -> [(Sequence, u64); 2] {
        [
            (Sequence::Generation, self.generation),
            (
                Sequence::LastAllocatedGeneration,
                self.last_allocated_generation,
            ),
        ]
    }

    /// The workers and generations as `rows` hold them; each live worker's heartbeat counts from `now_us`.
    fn loaded(rows: &crate::store::MetaRows, now_us: u64) -> Self {
        let seq = |s: Sequence| rows.sequences.get(&s).copied().unwrap_or(1);
        let mut state = Self {
            workers: BTreeMap::new(),
            removed: BTreeSet::new(),
            generation: seq(Sequence::Generation),
            last_allocated_generation: seq(Sequence::LastAllocatedGeneration),
        };
        for (id, row) in &rows.workers {
            match row {
                crate::store::WorkerRow::Running { generation } => {
                    let info = WorkerInfo {
                        generation: *generation,
                        last_heartbeat_us: now_us,
                    };
                    state.workers.insert(*id, info);
                }
                crate::store::WorkerRow::Removed => {
                    state.removed.insert(*id);
                }
            }
        }
        state
    }
}

pub(crate) struct MetaInner {
    pub catalog: Mutex<Catalog>,
    /// The SQL catalog, which meta alone writes, and its subscribers (the frontends).
    pub notification: NotificationManager,
    /// The meta store, and what each manager last committed to it.
    pub persistence: Arc<Persistence>,
    pub tracker: Mutex<crate::progress::CreateTracker>,
    pub cluster: Mutex<ClusterState>,
    pub ids: Mutex<Ids>,
    pub hummock: Arc<HummockManager>,
    pub network: Network,
    pub scheduler: BarrierScheduler,
    pub config: MetaConfig,
    pub log: EventLog,
    pub clock: Clock,
    pub rng: SimRng,
    /// Called when recovery has marked the cluster ready (checkers).
    pub on_recovered: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
    /// RisingWave's reschedule lock: a reschedule holds it exclusively; a create holds it shared from its
    /// actors' build until its Add barrier is collected, so that no Update reaches actors their upstream does
    /// not dispatch to yet.
    pub reschedule_lock: tokio::sync::RwLock<()>,
    /// Killed (`MetaNode::kill`): fenced, its scheduler blocked.
    pub killed: std::sync::atomic::AtomicBool,
    /// Its first recovery (the bootstrap) has marked the cluster ready.
    pub bootstrapped: std::sync::atomic::AtomicBool,
    /// The tasks meta runs its DDL in (`MetaNode::run_command`), which its kill ends.
    pub ddl_tasks: Mutex<Vec<tokio::task::AbortHandle>>,
    /// A harness's hook at each crash point (`crate::crash`).
    pub crash_hook: Mutex<Option<crate::crash::CrashHook>>,
    /// The catalog rows this meta's DROPs deleted (a DROP runs while meta bootstraps: what a client was told
    /// before a restart may go by a client's request after it).
    pub dropped_by_ddl: Mutex<BTreeSet<crate::sql_catalog::RelationId>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl MetaInner {
    /// What a new meta's managers start with, committed: the first SQL catalog, the sequences and the
    /// generation.
    fn commit_initial_rows(&self) {
        let snapshot = self.notification.current();
        self.persistence.commit(vec![StoreOp::PutCatalog(
            snapshot.version,
            snapshot.catalog,
        )]);
        self.persistence.commit_ids(&lock(&self.ids));
        self.persistence.commit_cluster(&lock(&self.cluster));
    }

    /// Keep `task` among meta's DDL tasks (those finished are let go), so that a kill ends it.
    pub(crate) fn own_task(&self, task: tokio::task::AbortHandle) {
        let mut tasks = lock(&self.ddl_tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
    }

    fn is_killed(&self) -> bool {
        self.killed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A restarted meta's Hummock (RisingWave's leader start, §3.1 steps 5 and 7): `version`, the one its
    /// store's checkpoint and `deltas` stored deltas lead to, becomes the latest, then, where the drop mode puts
    /// the purge at leader start, every registered table the loaded catalog does not know is unregistered,
    /// before the bootstrap recovery resets a node. (RisingWave's load skips a stored delta that does not
    /// follow the one before; here such a store is `Corrupt` and meta does not start from it.)
    fn load_hummock(&self, version: epochlab_storage::HummockVersion, deltas: usize) {
        let (id, mce) = (version.id, version.max_committed_epoch);
        let changed = self.hummock.load_version(version);
        event!(
            self.log,
            "load hummock version",
            "version={id} max_committed_epoch={mce} deltas={deltas} changed={changed}"
        );
        if self
            .config
            .toggles
            .get::<DropMode>()
            .purges_at_leader_start()
        {
            let keep: BTreeSet<TableId> = self.catalog().state_tables().into_iter().collect();
            let purged = self.hummock.purge(&keep, "leader start");
            if !purged.is_empty() {
                event!(self.log, "leader start", "purge tables={purged:?}");
            }
        }
    }

    /// Change the SQL catalog and commit it: the next notification version, then the store.
    pub fn catalog_write<T, E>(
        &self,
        change: impl FnOnce(&mut SqlCatalog) -> Result<T, E>,
    ) -> Result<(T, NotificationVersion), E> {
        let (out, version) = self.notification.commit(change)?;
        let committed = self.notification.current();
        debug_assert_eq!(committed.version, version);
        self.persistence
            .commit(vec![StoreOp::PutCatalog(version, committed.catalog)]);
        Ok((out, version))
    }

    /// A restarted meta's bootstrap (RisingWave's leader cleans dirty jobs with their catalog entries, which
    /// it writes in one place): SQL relations of a streaming job whose job is gone are dropped (a create the
    /// kill cut off, whose front end could not take its entry back, or a drop it cut off half-way), and one
    /// whose job survived but was never told its id learns it. Only at a restarted meta's bootstrap: no DDL
    /// of a live front end is then between its catalog entry and its job.
    pub fn clean_orphan_relations(&self) -> Vec<TableId> {
        use std::sync::atomic::Ordering;
        if self.persistence.term() <= 1 || self.bootstrapped.load(Ordering::Relaxed) {
            return Vec::new();
        }
        let tables = match self.config.unlisted_jobs {
            false => self.clean_jobs_without_rows(),
            true => Vec::new(),
        };
        let jobs: BTreeMap<TableId, String> = lock(&self.catalog)
            .relations
            .values()
            .map(|r| (r.id, r.name.clone()))
            .collect();
        let by_name: BTreeMap<&str, TableId> =
            jobs.iter().map(|(id, name)| (name.as_str(), *id)).collect();
        // Each relation to repair: its job's table to link, or `None` to drop it. Nothing to repair: no
        // write (a new version would tell every frontend of a change). No DDL runs meanwhile: the plan holds
        // for the copy the write changes.
        let current = self.notification.current();
        let repairs: Vec<(RelationId, String, Option<TableId>)> = current
            .catalog
            .relations()
            .filter_map(|r| {
                let job = r.job_name();
                let link = match r.job_link() {
                    JobLink::NoJob => return None,
                    JobLink::Linked(t) if jobs.contains_key(&t) => return None,
                    JobLink::Linked(_) => None,
                    JobLink::Pending => by_name.get(job.as_str()).copied(),
                };
                Some((r.id, job, link))
            })
            .collect();
        if repairs.is_empty() {
            return tables;
        }
        let log = &self.log;
        let Ok(((), _)) = self.catalog_write(|c| {
            for (id, job, link) in repairs {
                match link {
                    Some(t) => c.relation_mut(id).expect("listed above").table_id = Some(t),
                    None => {
                        event!(log, "recovery step", "clean orphan relation {job} id={id}");
                        let _ = c.drop_relation(id, true);
                    }
                }
            }
            Ok::<_, std::convert::Infallible>(())
        });
        tables
    }

    /// Unless jobs go unlisted ([`MetaConfig::unlisted_jobs`]) every job has its catalog row, written before
    /// the job and deleted before it: a job whose row is gone is a DROP a kill cut off between the two
    /// (RisingWave's dirty table fragments, which its recovery drops). It goes; its state tables, returned, are recovery's
    /// to unregister.
    fn clean_jobs_without_rows(&self) -> Vec<TableId> {
        let sql = self.notification.current().catalog;
        let mut linked = BTreeSet::new();
        let mut pending = BTreeSet::new();
        for r in sql.relations() {
            match r.job_link() {
                JobLink::Linked(t) => drop(linked.insert(t)),
                JobLink::Pending => drop(pending.insert(r.job_name())),
                JobLink::NoJob => {}
            }
        }
        self.clean_jobs("job without catalog row", |r| {
            !linked.contains(&r.id) && !pending.contains(&r.name)
        })
    }

    /// Recovery's clean-up of the jobs `dirty` picks, named `what` in the event log: out of the catalog and
    /// no longer tracked; their state tables, returned, are recovery's to unregister.
    pub(crate) fn clean_jobs(&self, what: &str, dirty: impl Fn(&Relation) -> bool) -> Vec<TableId> {
        let mut catalog = self.catalog();
        let ids: Vec<TableId> = catalog
            .relations
            .values()
            .filter(|r| dirty(r))
            .map(|r| r.id)
            .collect();
        let mut tables = Vec::new();
        for id in ids {
            let rel = catalog.relations.remove(&id).expect("listed above");
            event!(
                self.log,
                "recovery step",
                "clean {what} {} id={id}",
                rel.name
            );
            self.tracker().remove(id, CreateAborted::CleanedByRecovery);
            tables.extend(rel.state_tables());
        }
        tables
    }

    /// A barrier carries `epoch`: the store's high-water mark of issued epochs follows it (written before
    /// the barrier is sent).
    pub fn issued_epoch(&self, epoch: epochlab_common::Epoch) {
        self.persistence
            .commit_sequence(Sequence::EpochHighWater, epoch.0);
    }

    /// The highest epoch a barrier of this meta or an earlier one carried.
    pub fn epoch_high_water(&self) -> epochlab_common::Epoch {
        epochlab_common::Epoch(
            self.persistence
                .sequence(Sequence::EpochHighWater)
                .unwrap_or(0),
        )
    }

    /// Put a creating job in the catalog: its actors' descriptors, and the dispatchers each upstream actor
    /// adds. The upstream was there when the job was planned, but this create may have waited (for the lock,
    /// behind a reschedule) while a drop took it away: as RisingWave's `start_create_table_procedure` does
    /// (`ensure_table_or_source_id` of each dependency under the catalog lock), check it again in the same
    /// critical section that puts the job in the catalog, where a drop then sees a dependent.
    #[allow(clippy::type_complexity)]
    fn insert_job(
        &self,
        rel: &Relation,
    ) -> Result<
        (
            Vec<StreamActorDesc>,
            BTreeMap<ActorId, Vec<epochlab_common::plan::DispatcherDesc>>,
        ),
        DdlError,
    > {
        let mut catalog = self.catalog();
        for up in rel.upstream_tables() {
            scannable(&catalog, up)?;
        }
        catalog.relations.insert(rel.id, rel.clone());
        let descs = catalog.actor_descs(rel);
        let mut adds: BTreeMap<ActorId, Vec<_>> = BTreeMap::new();
        for up in rel
            .upstream_tables()
            .into_iter()
            .filter_map(|u| catalog.get(u))
        {
            for (i, a) in up.actors.iter().enumerate() {
                adds.entry(a.actor_id)
                    .or_default()
                    .extend(rel.dispatchers_from(up, i));
            }
        }
        Ok((descs, adds))
    }

    /// A create that failed: no longer tracked; unless a drop took it already, out of the catalog, its actors
    /// stopped and its state tables unregistered.
    async fn abort_create(
        &self,
        rel: &Relation,
        actors: &BTreeMap<WorkerId, BTreeSet<ActorId>>,
        tables: &[TableId],
        e: &DdlError,
    ) {
        let id = rel.id;
        event!(
            self.log,
            "ddl",
            "create {} {} id={id} failed: {e}",
            rel.kind.as_str(),
            rel.name
        );
        // A killed meta cleans nothing up: its DDL dies with it (RisingWave's DDL controller runs in meta's
        // process), and the restarted meta's bootstrap cleans the dirty job from the store.
        if self.is_killed() {
            return;
        }
        self.tracker().remove(id, CreateAborted::CreationFailed);
        if self.catalog().relations.remove(&id).is_some() {
            self.drop_actors(actors).await;
            self.hummock.unregister_tables(tables, "create failed");
        }
    }

    pub fn catalog(&self) -> Committing<'_, Catalog> {
        Committing::new(
            &self.catalog,
            &self.persistence,
            Persistence::commit_catalog,
        )
    }

    pub fn ids(&self) -> Committing<'_, Ids> {
        Committing::new(&self.ids, &self.persistence, Persistence::commit_ids)
    }

    pub fn tracker(&self) -> std::sync::MutexGuard<'_, crate::progress::CreateTracker> {
        lock(&self.tracker)
    }

    pub fn cluster(&self) -> Committing<'_, ClusterState> {
        Committing::new(
            &self.cluster,
            &self.persistence,
            Persistence::commit_cluster,
        )
    }

    /// The workers meta believes alive, in id order.
    pub fn live_workers(&self) -> Vec<WorkerId> {
        self.cluster().workers.keys().copied().collect()
    }

    pub async fn call(&self, worker: WorkerId, request: Request) -> Result<Response, CallError> {
        let rpc = request.kind();
        self.network
            .call(worker, request)
            .await
            .map_err(|source| CallError {
                worker,
                rpc,
                source,
            })
    }

    /// Build actors on their workers.
    pub async fn build_actors(
        &self,
        descs: Vec<StreamActorDesc>,
        placement: &[ActorPlacement],
    ) -> Result<(), CallError> {
        let generation = self.cluster().generation;
        let worker_of: BTreeMap<ActorId, WorkerId> =
            placement.iter().map(|a| (a.actor_id, a.worker)).collect();
        let mut by_worker: BTreeMap<WorkerId, Vec<StreamActorDesc>> = BTreeMap::new();
        for d in descs {
            by_worker.entry(worker_of[&d.actor_id]).or_default().push(d);
        }
        for (worker, actors) in by_worker {
            self.call(worker, Request::BuildActors { actors, generation })
                .await?;
        }
        Ok(())
    }

    /// Drop actors on their workers; unreachable workers are skipped (their actors died with them).
    pub async fn drop_actors(&self, actors: &BTreeMap<WorkerId, BTreeSet<ActorId>>) {
        for (worker, ids) in actors {
            let request = Request::DropActors {
                actors: ids.iter().copied().collect(),
            };
            if let Err(e) = self.call(*worker, request).await {
                tracing::warn!(worker = worker.0, error = %e.source, "drop actors failed");
            }
        }
    }

    /// Place `parallelism` actors over the live workers, round-robin from an offset, each with a contiguous
    /// share of the vnodes, in a new fragment.
    pub fn place(
        &self,
        parallelism: usize,
        offset: usize,
    ) -> Result<(FragmentId, Vec<ActorPlacement>), DdlError> {
        let placement = self.place_actors(parallelism, offset)?;
        Ok((self.next_fragment_id(), placement))
    }

    /// `parallelism` new actors as [`MetaInner::place`] places them, for a fragment that exists.
    pub fn place_actors(
        &self,
        parallelism: usize,
        offset: usize,
    ) -> Result<Vec<ActorPlacement>, DdlError> {
        let workers = self.live_workers();
        if workers.is_empty() {
            return Err(DdlError::NoWorkers);
        }
        let vnodes = Bitmap::partition(self.config.vnode_count.get(), parallelism);
        let mut ids = self.ids();
        let placement = vnodes
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                let actor_id = ActorId(ids.next_actor);
                ids.next_actor += 1;
                ActorPlacement {
                    actor_id,
                    worker: workers[(i + offset) % workers.len()],
                    vnodes: Arc::new(v),
                }
            })
            .collect();
        Ok(placement)
    }

    /// A new fragment whose actor `i` has the worker and the vnodes of `like[i]` (a no-shuffle job beside its
    /// upstream's actors, as RisingWave schedules it).
    pub fn place_like(
        &self,
        like: &[ActorPlacement],
    ) -> Result<(FragmentId, Vec<ActorPlacement>), DdlError> {
        let placement = self.actors_like(like);
        Ok((self.next_fragment_id(), placement))
    }

    /// New actors, actor `i` with the worker and the vnodes of `like[i]`.
    pub fn actors_like(&self, like: &[ActorPlacement]) -> Vec<ActorPlacement> {
        let mut ids = self.ids();
        like.iter()
            .map(|a| {
                let actor_id = ActorId(ids.next_actor);
                ids.next_actor += 1;
                ActorPlacement {
                    actor_id,
                    worker: a.worker,
                    vnodes: a.vnodes.clone(),
                }
            })
            .collect()
    }

    fn next_fragment_id(&self) -> FragmentId {
        let mut ids = self.ids();
        let fragment = FragmentId(ids.next_fragment);
        ids.next_fragment += 1;
        fragment
    }

    pub fn next_table_id(&self) -> TableId {
        let mut ids = self.ids();
        let id = TableId(ids.next_table);
        ids.next_table += 1;
        id
    }

    /// Register a job's state tables in storage, in the groups the placement gives them.
    fn register(&self, rel: &Relation) {
        let tables = rel.state_tables();
        match self.config.compaction_groups {
            GroupPlacement::PerJob if !tables.is_empty() => {
                self.hummock.register_tables(&tables);
            }
            GroupPlacement::PerJob => {}
            GroupPlacement::Static => {
                let (own, internal): (Vec<TableId>, Vec<TableId>) =
                    tables.into_iter().partition(|t| *t == rel.id);
                for (group, tables) in [
                    (MATERIALIZED_VIEW_GROUP, own),
                    (STATE_DEFAULT_GROUP, internal),
                ] {
                    if !tables.is_empty() {
                        self.hummock.register_tables_in(group, &tables);
                    }
                }
            }
        }
    }
}

/// The catalog as compaction tasks see it (RisingWave's compactors subscribe to the table catalog): the
/// state tables of every relation in it, creating ones included.
struct CatalogView(std::sync::Weak<MetaInner>);

impl epochlab_storage::CompactionCatalog for CatalogView {
    fn table(&self, table: TableId) -> Option<Arc<TableDesc>> {
        let inner = self.0.upgrade()?;
        let catalog = inner.catalog();
        catalog.relations.values().find_map(|r| {
            if r.kind != RelationKind::Sink && r.id == table {
                Some(r.desc.clone())
            } else {
                r.progress_tables()
                    .into_iter()
                    .chain(r.internal_tables())
                    .find(|d| d.table_id == table)
            }
        })
    }
}

/// The meta node. Cheap to clone.
#[derive(Clone)]
pub struct MetaNode {
    pub(crate) inner: Arc<MetaInner>,
}

fn by_worker<'a>(
    placement: impl IntoIterator<Item = &'a ActorPlacement>,
) -> BTreeMap<WorkerId, BTreeSet<ActorId>> {
    let mut m: BTreeMap<WorkerId, BTreeSet<ActorId>> = BTreeMap::new();
    for a in placement {
        m.entry(a.worker).or_default().insert(a.actor_id);
    }
    m
}

/// What a meta node starts with (RisingWave's `MetaSrvEnv`): its configuration, the cluster's Hummock, network,
/// event log, clock and RNG, and the store it commits to.
pub struct MetaEnv {
    pub config: MetaConfig,
    pub hummock: Arc<HummockManager>,
    pub network: Network,
    pub log: EventLog,
    pub clock: Clock,
    pub rng: SimRng,
    pub store: Arc<dyn MetaStore>,
}

impl MetaNode {
    /// A meta node started from what its store holds (RisingWave's leader start at f21fb9b7915): it claims
    /// the store (every earlier meta is fenced), loads the ids, the workers (their heartbeats re-armed now),
    /// the generation, the SQL catalog at its version and the jobs with their fragments; its barrier manager
    /// (to be spawned) runs the bootstrap recovery. An empty store starts a new cluster.
    pub fn open(
        env: MetaEnv,
    ) -> Result<(Self, GlobalBarrierManager<MetaContext>), crate::store::MetaStoreError> {
        let MetaEnv {
            config,
            hummock,
            network,
            log,
            clock,
            rng,
            store,
        } = env;
        let rows = store.load()?;
        // Every row is read before the store is claimed: a store meta cannot start from stays as it was.
        let ids = Ids::loaded(&rows)?;
        let stored_hummock = match &rows.catalog {
            None => None,
            Some(_) => Some(rows.hummock_version()?),
        };
        let persistence = Arc::new(Persistence::claim(store, &rows)?);
        let (scheduler, scheduled) = BarrierScheduler::new();
        let (version, sql_catalog) = rows
            .catalog
            .clone()
            .unwrap_or_else(|| (0, Arc::new(SqlCatalog::new())));
        let now = clock.elapsed_us();
        let inner = Arc::new(MetaInner {
            catalog: Mutex::new(Catalog {
                relations: rows.relations(),
            }),
            notification: NotificationManager::at(version, sql_catalog),
            persistence: persistence.clone(),
            tracker: Mutex::default(),
            cluster: Mutex::new(ClusterState::loaded(&rows, now)),
            ids: Mutex::new(ids),
            hummock,
            network,
            scheduler,
            config: config.clone(),
            log,
            clock,
            rng,
            on_recovered: Mutex::new(None),
            reschedule_lock: tokio::sync::RwLock::new(()),
            killed: std::sync::atomic::AtomicBool::new(false),
            bootstrapped: std::sync::atomic::AtomicBool::new(false),
            ddl_tasks: Mutex::default(),
            crash_hook: Mutex::new(None),
            dropped_by_ddl: Mutex::default(),
        });
        let catalog = CatalogView(Arc::downgrade(&inner));
        inner.hummock.set_compaction_catalog(Arc::new(catalog));
        inner.hummock.set_delta_hook(Arc::new(move |delta| {
            persistence.commit(vec![StoreOp::PushHummockDelta(delta.clone())]);
        }));
        match stored_hummock {
            None => inner.commit_initial_rows(),
            Some(version) => inner.load_hummock(version, rows.hummock_deltas.len()),
        }
        // RisingWave's compaction event loop starts with the leader's other tasks.
        inner.hummock.set_compaction_paused(false);
        let manager = GlobalBarrierManager::new(
            Arc::new(MetaContext::new(inner.clone())),
            scheduled,
            config.barrier,
            config.toggles,
        );
        Ok((Self { inner }, manager))
    }

    /// Kill this meta: it is fenced (no write of it reaches the store from now on), its scheduler refuses
    /// and blocks, DDL waiting on a job's creation learns meta stopped, and its catalog notifications end. The
    /// caller aborts its tasks (the barrier manager, the heartbeat checker). Reads still answer, from the
    /// state it had.
    pub fn kill(&self) {
        self.kill_fenced(true);
    }

    /// A test-only mutation (issue 56, stage 5): [`MetaNode::kill`] without the fence, so that its writes and
    /// the epoch marks of its barriers still reach the store, as a meta of RisingWave's etcd days that lost its
    /// lease but not its process could. The one-writer check outside meta must catch them.
    #[doc(hidden)]
    pub fn kill_without_fence(&self) {
        self.kill_fenced(false);
    }

    fn kill_fenced(&self, fence: bool) {
        let inner = &self.inner;
        if inner
            .killed
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        if fence {
            inner.persistence.fence();
        }
        inner.hummock.set_compaction_paused(true);
        inner.scheduler.abort_and_mark_blocked("meta is stopped");
        inner.tracker().drain(CreateAborted::MetaStopped);
        for task in lock(&inner.ddl_tasks).drain(..) {
            task.abort();
        }
        event!(inner.log, "kill meta", "term={}", inner.persistence.term());
    }

    /// The highest epoch a barrier of this meta or an earlier one carried, as the store has it.
    pub fn epoch_high_water(&self) -> epochlab_common::Epoch {
        self.inner.epoch_high_water()
    }

    /// Whether this meta has been killed.
    pub fn is_killed(&self) -> bool {
        self.inner.is_killed()
    }

    /// The term this meta leads the store with (one more at each restart).
    pub fn term(&self) -> u64 {
        self.inner.persistence.term()
    }

    pub fn config(&self) -> &MetaConfig {
        &self.inner.config
    }

    /// Change the SQL catalog (meta's one writer of it): `change` runs on a copy, and when it succeeds the
    /// copy is committed as the next notification version, which every frontend's subscription sees before
    /// this returns. A failed change commits nothing; a killed meta refuses every change.
    pub fn catalog_write<T, E: From<crate::sql_catalog::CatalogError>>(
        &self,
        change: impl FnOnce(&mut SqlCatalog) -> Result<T, E>,
    ) -> Result<(T, NotificationVersion), E> {
        if self.is_killed() {
            return Err(crate::sql_catalog::CatalogError::MetaUnavailable.into());
        }
        self.inner.catalog_write(change)
    }

    /// The store meta commits to.
    pub fn store(&self) -> &Arc<dyn MetaStore> {
        self.inner.persistence.store()
    }

    /// The first commit to the store that failed, if one did.
    pub fn store_error(&self) -> Option<crate::store::MetaStoreError> {
        self.inner.persistence.error()
    }

    /// Whether the store holds what live meta has: every manager's rows, the jobs as assembled from their
    /// rows, and the Hummock version its deltas lead to. Every difference found.
    pub fn check_store(&self) -> Result<(), Vec<crate::store::StoreMismatch>> {
        let stored = self.store().load().map_err(|e| vec![e.into()])?;
        let relations = lock(&self.inner.catalog).relations.clone();
        let found = stored.mismatches(&self.live_rows(), &relations);
        if found.is_empty() { Ok(()) } else { Err(found) }
    }

    /// What the store should hold now, from meta's live state: each manager's rows as it would commit them,
    /// and Hummock's current version as the one checkpoint.
    pub fn live_rows(&self) -> crate::store::MetaRows {
        let inner = &self.inner;
        let snapshot = inner.notification.current();
        let mut rows = crate::store::MetaRows {
            catalog: Some((snapshot.version, snapshot.catalog)),
            hummock_checkpoint: inner.hummock.current_version(),
            ..Default::default()
        };
        (rows.jobs, rows.fragments) =
            crate::store::catalog_rows(lock(&inner.catalog).relations.values());
        let cluster = lock(&inner.cluster);
        rows.workers = cluster.worker_rows();
        rows.sequences.extend(lock(&inner.ids).sequences());
        rows.sequences.extend(cluster.sequences());
        // The barrier manager's epochs are not meta's state: the mark is what was committed.
        if let Some(e) = inner.persistence.sequence(Sequence::EpochHighWater) {
            rows.sequences.insert(Sequence::EpochHighWater, e);
        }
        rows.term = inner.persistence.term();
        rows
    }

    /// A frontend's subscription to the SQL catalog: meta's snapshot first, then each committed version.
    pub fn subscribe_catalog(&self) -> tokio::sync::watch::Receiver<CatalogSnapshot> {
        self.inner.notification.subscribe()
    }

    /// The SQL catalog as meta has committed it.
    pub fn sql_catalog(&self) -> CatalogSnapshot {
        self.inner.notification.current()
    }

    /// Every job's fragments, by job id (RisingWave's `list_fragment_distribution`, read by
    /// `rw_fragments`).
    pub fn list_fragment_distribution(&self) -> Vec<(TableId, crate::FragmentInfo)> {
        let catalog = self.catalog();
        catalog
            .relations
            .values()
            .flat_map(|r| catalog.fragment_infos(r).into_iter().map(|f| (r.id, f)))
            .collect()
    }

    /// `n` hidden row ids for new rows of `table`: the first of `n` consecutive ones no row of it has had.
    pub fn next_row_ids(&self, table: TableId, n: usize) -> i64 {
        let mut ids = self.inner.ids();
        let next = ids.next_row_id.entry(table).or_insert(0);
        let first = *next;
        *next += n as i64;
        first
    }

    pub fn hummock(&self) -> &Arc<HummockManager> {
        &self.inner.hummock
    }

    pub fn scheduler(&self) -> &BarrierScheduler {
        &self.inner.scheduler
    }

    /// The current recovery generation: a node (re)joining starts at it.
    pub fn generation(&self) -> u64 {
        self.inner.cluster().generation
    }

    /// A compute node joins (or rejoins after a restart) at the cluster's current generation.
    pub fn add_worker(&self, worker: WorkerId) -> u64 {
        let mut cluster = self.inner.cluster();
        cluster.removed.remove(&worker);
        let generation = cluster.generation;
        let now = self.inner.clock.elapsed_us();
        cluster.workers.insert(
            worker,
            WorkerInfo {
                generation,
                last_heartbeat_us: now,
            },
        );
        self.inner.hummock.set_context(worker, generation);
        event!(
            self.inner.log,
            "add worker",
            "worker={worker} generation={generation}"
        );
        generation
    }

    /// Call `hook` each time recovery has marked the cluster ready.
    pub fn set_recovery_hook(&self, hook: Arc<dyn Fn() + Send + Sync>) {
        *lock(&self.inner.on_recovered) = Some(hook);
    }

    /// The hook recovery calls when it has marked the cluster ready (a restarted meta keeps the checkers').
    pub fn recovery_hook(&self) -> Option<Arc<dyn Fn() + Send + Sync>> {
        lock(&self.inner.on_recovered).clone()
    }

    /// A compute node says it is alive.
    pub fn heartbeat(&self, worker: WorkerId) {
        let now = self.inner.clock.elapsed_us();
        // A heartbeat's time is not stored (a restarted meta re-arms every worker), so it commits nothing.
        if let Some(w) = lock(&self.inner.cluster).workers.get_mut(&worker) {
            w.last_heartbeat_us = now;
        }
    }

    /// Remove a compute node from the cluster for good (RisingWave: a compute node scaled away, as in #19138's
    /// 6 to 2 cores). Its data is no longer accepted; the next recovery scales its actors in onto the other
    /// workers' actors (see `scale.rs`) rather than moving them whole. The caller stops the node.
    pub fn remove_worker(&self, worker: WorkerId) {
        {
            let mut cluster = self.inner.cluster();
            cluster.workers.remove(&worker);
            cluster.removed.insert(worker);
        }
        self.inner.hummock.remove_context(worker);
        event!(self.inner.log, "worker removed", "worker={worker}");
    }

    /// Remove workers whose last heartbeat is older than the timeout; returns them. Their data is no longer
    /// accepted, and recovery moves their actors elsewhere.
    pub fn expire_workers(&self) -> Vec<WorkerId> {
        let now = self.inner.clock.elapsed_us();
        let timeout = self.inner.config.heartbeat_timeout.as_micros() as u64;
        let expired: Vec<WorkerId> = {
            let mut cluster = self.inner.cluster();
            let expired: Vec<WorkerId> = cluster
                .workers
                .iter()
                .filter(|(_, w)| now.saturating_sub(w.last_heartbeat_us) > timeout)
                .map(|(id, _)| *id)
                .collect();
            for w in &expired {
                cluster.workers.remove(w);
            }
            expired
        };
        for w in &expired {
            self.inner.hummock.remove_context(*w);
            event!(self.inner.log, "worker expired", "worker={w}");
        }
        expired
    }

    /// Check heartbeats every second, forever.
    pub async fn run_heartbeat_checker(self) {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            self.expire_workers();
        }
    }

    pub fn workers(&self) -> Vec<WorkerId> {
        self.inner.live_workers()
    }

    /// The jobs' catalog, locked (a mutable borrow commits the jobs and their fragments to the store when
    /// the guard drops).
    pub fn catalog(&self) -> Committing<'_, Catalog> {
        self.inner.catalog()
    }

    pub fn relation(&self, id: TableId) -> Option<Relation> {
        self.inner.catalog().get(id).cloned()
    }

    /// Snapshot rows a creating job's backfill has consumed so far (`None` once it is created).
    pub fn backfill_progress(&self, id: TableId) -> Option<u64> {
        self.inner.tracker().consumed_rows(id)
    }

    pub fn relation_by_name(&self, name: &str) -> Option<Relation> {
        self.inner
            .catalog()
            .relations
            .values()
            .find(|r| r.name == name)
            .cloned()
    }

    /// SQL `FLUSH`: wait until a checkpoint barrier injected after this call is collected and committed.
    pub async fn flush(&self) -> Result<(), DdlError> {
        self.alive()?;
        Ok(self.inner.scheduler.flush(true).await?)
    }

    /// A request reaches a live meta only (a killed meta's scheduler holds drops, say, for ever).
    pub(crate) fn alive(&self) -> Result<(), DdlError> {
        match self.is_killed() {
            true => Err(DdlError::MetaUnavailable),
            false => Ok(()),
        }
    }

    /// `CREATE TABLE name (columns) PRIMARY KEY (pk)`, distributed by its pk over `parallelism` actors.
    pub async fn create_table(
        &self,
        name: &str,
        column_types: Vec<DataType>,
        pk_indices: Vec<usize>,
        parallelism: usize,
    ) -> Result<TableId, DdlError> {
        let dist_key_in_pk = (0..pk_indices.len()).collect();
        self.create_table_distributed(name, column_types, pk_indices, dist_key_in_pk, parallelism)
            .await
    }

    /// `CREATE TABLE name (columns) PRIMARY KEY (pk) DISTRIBUTED BY (dist key)`: hash-distributed by the pk
    /// columns at `dist_key_in_pk` (positions within the pk; a strict subset, say `(a)` of pk `(a, b)`).
    pub async fn create_table_distributed(
        &self,
        name: &str,
        column_types: Vec<DataType>,
        pk_indices: Vec<usize>,
        dist_key_in_pk: Vec<usize>,
        parallelism: usize,
    ) -> Result<TableId, DdlError> {
        let conflict = ConflictBehavior::NoCheck;
        self.create_table_with_conflict(
            name,
            column_types,
            pk_indices,
            dist_key_in_pk,
            parallelism,
            conflict,
            None,
        )
        .await
    }

    /// A table as [`MetaNode::create_table_distributed`] makes it, whose materialize handles a change that
    /// disagrees with the stored row of its pk by `conflict` (RisingWave: a table with a primary key
    /// overwrites, `ConflictBehavior::Overwrite`; its DML path sends inserts of existing keys).
    /// `watermark`: its `WATERMARK FOR` column and expression, if it has one.
    #[allow(clippy::too_many_arguments)]
    pub async fn create_table_with_conflict(
        &self,
        name: &str,
        column_types: Vec<DataType>,
        pk_indices: Vec<usize>,
        dist_key_in_pk: Vec<usize>,
        parallelism: usize,
        conflict: ConflictBehavior,
        watermark: Option<(usize, ExprNode)>,
    ) -> Result<TableId, DdlError> {
        if parallelism == 0
            || pk_indices.is_empty()
            || pk_indices.iter().any(|&i| i >= column_types.len())
            || dist_key_in_pk.is_empty()
            || dist_key_in_pk.iter().any(|&i| i >= pk_indices.len())
        {
            return Err(DdlError::Invalid(format!(
                "bad table definition for {name}"
            )));
        }
        let id = self.inner.next_table_id();
        let desc = Arc::new(TableDesc::hash(
            id,
            column_types,
            pk_indices,
            dist_key_in_pk,
            self.inner.config.vnode_count,
        ));
        let dml = Self::dml_node(&desc);
        let entry = TableEntry {
            row_id_index: None,
            watermark,
            dml,
        };
        self.create_table_job(name, desc, parallelism, conflict, entry)
            .await
    }

    /// `CREATE TABLE name (columns)` without a primary key: a hidden row id at `row_id_index` (a `serial`)
    /// is its pk and distribution key, filled by the table actor's row id generator (RisingWave's
    /// `RowIdGenExecutor` after the DML entry) with one of the actor's vnodes, which is the row's vnode.
    /// DML sends rows whose row id is NULL.
    pub async fn create_table_with_row_id(
        &self,
        name: &str,
        column_types: Vec<DataType>,
        row_id_index: usize,
        parallelism: usize,
    ) -> Result<TableId, DdlError> {
        if parallelism == 0 || column_types.get(row_id_index) != Some(&DataType::Serial) {
            return Err(DdlError::Invalid(format!(
                "bad table definition for {name}: the row id is a serial column"
            )));
        }
        let id = self.inner.next_table_id();
        let count = self.inner.config.vnode_count;
        let desc = Arc::new(TableDesc::hash(
            id,
            column_types,
            vec![row_id_index],
            vec![0],
            count,
        ));
        let conflict = ConflictBehavior::NoCheck;
        let dml = Self::dml_node(&desc);
        let entry = TableEntry {
            row_id_index: Some(row_id_index),
            watermark: None,
            dml,
        };
        self.create_table_job(name, desc, parallelism, conflict, entry)
            .await
    }

    /// `CREATE SOURCE name (columns) WITH (connector = 'datagen', ..)`: a table job, as
    /// [`MetaNode::create_table_with_row_id`] makes it, whose rows come from the connector (a
    /// `StreamNode::Source` in place of the DML entry, its splits' offsets in a state table of its own).
    pub async fn create_source(
        &self,
        name: &str,
        column_types: Vec<DataType>,
        row_id_index: usize,
        parallelism: usize,
        datagen: epochlab_common::source::DatagenSpec,
        generated: Vec<(usize, epochlab_common::ExprNode)>,
    ) -> Result<TableId, DdlError> {
        let width = column_types.len();
        if parallelism == 0
            || column_types.get(row_id_index) != Some(&DataType::Serial)
            || datagen.fields.len() != width
            || generated.iter().any(|(at, _)| *at >= width)
        {
            return Err(DdlError::Invalid(format!(
                "bad source definition for {name}"
            )));
        }
        let count = self.inner.config.vnode_count;
        let id = self.inner.next_table_id();
        let desc = Arc::new(TableDesc::hash(
            id,
            column_types.clone(),
            vec![row_id_index],
            vec![0],
            count,
        ));
        let offsets = vec![DataType::Int32, DataType::Int64];
        let state_id = self.inner.next_table_id();
        let state_table = Arc::new(TableDesc::hash(state_id, offsets, vec![0], vec![0], count));
        let source = StreamNode::Source {
            datagen,
            generated,
            column_types,
            state_table,
        };
        let conflict = ConflictBehavior::NoCheck;
        let entry = TableEntry {
            row_id_index: Some(row_id_index),
            watermark: None,
            dml: source,
        };
        self.create_table_job(name, desc, parallelism, conflict, entry)
            .await
    }

    /// A table's DML entry.
    fn dml_node(desc: &TableDesc) -> StreamNode {
        StreamNode::Dml {
            table_id: desc.table_id,
            column_types: desc.column_types.clone(),
        }
    }

    /// A table's job as RisingWave's two fragments: its entry `dml` (the DML entry, or a source's connector)
    /// in a fragment of its own, hash-exchanged on the table's distribution key to the fragment that
    /// generates row ids and materializes.
    async fn create_table_job(
        &self,
        name: &str,
        desc: Arc<TableDesc>,
        parallelism: usize,
        conflict: ConflictBehavior,
        entry: TableEntry,
    ) -> Result<TableId, DdlError> {
        let id = desc.table_id;
        let (fragment_id, actors) = self.inner.place(parallelism, id.0 as usize)?;
        let TableEntry {
            row_id_index,
            watermark,
            dml,
        } = entry;
        let (entry, graph) = self.dml_fragment(&desc, &actors, dml)?;
        // RisingWave's `gen_table_plan`: the watermark filter above the DML's exchange, below the row id
        // generator.
        let entry = match watermark {
            Some((event_time_col, watermark_expr)) => StreamNode::WatermarkFilter {
                event_time_col,
                table: Arc::new(TableDesc::watermark_filter_state(
                    self.inner.next_table_id(),
                    watermark_expr.return_type(),
                    desc.vnode_count,
                )),
                watermark_expr,
                input: Box::new(entry),
            },
            None => entry,
        };
        let input = match row_id_index {
            Some(row_id_index) => StreamNode::RowIdGen {
                row_id_index,
                input: Box::new(entry),
            },
            None => entry,
        };
        let root_node = StreamNode::Materialize {
            table: desc.clone(),
            conflict,
            input: Box::new(input),
        };
        let rel = Relation {
            id,
            name: name.to_string(),
            kind: RelationKind::Table,
            desc,
            upstream: None,
            state: JobState::Creating,
            fragments_initial: true,
            fragment_id,
            actors,
            sink: None,
            rate_limit: None,
            sink_rate_limit: None,
            progress_table: None,
            scan_type: StreamScanType::default(),
            background: false,
            sink_fragment: None,
            graph: Some(JobGraph {
                root: 0,
                root_node,
                fragments: graph.fragments,
                edges: graph.edges,
                root_single: false,
            }),
        };
        self.create_job(rel).await
    }

    /// A table's DML fragment (RisingWave's `StreamDml` below a `StreamExchange { dist: HashShard(..) }`):
    /// `dml` in a fragment placed as the table's own actors `like`, whose rows go to the materializing
    /// fragment by the table's distribution key. Returns the exchange the root reads and the fragment.
    fn dml_fragment(
        &self,
        desc: &TableDesc,
        like: &[ActorPlacement],
        dml: StreamNode,
    ) -> Result<(StreamNode, TableGraph), DdlError> {
        const DML_LOCAL_ID: u32 = 1;
        let (fragment_id, actors) = self.inner.place_like(like)?;
        let fragment = GraphFragment {
            local_id: DML_LOCAL_ID,
            fragment_id,
            actors,
            node: dml,
            single: false,
        };
        let edge = StreamFragmentEdge {
            upstream: DML_LOCAL_ID,
            downstream: 0,
            dispatch: DispatchStrategy::Hash(desc.dist_key_indices()),
        };
        let exchange = StreamNode::Exchange {
            upstream: DML_LOCAL_ID,
        };
        let graph = TableGraph {
            fragments: vec![fragment],
            edges: vec![edge],
        };
        Ok((exchange, graph))
    }

    /// `CREATE MATERIALIZED VIEW name AS SELECT * FROM upstream`.
    pub async fn create_materialized_view(
        &self,
        name: &str,
        upstream: TableId,
        options: JobOptions,
    ) -> Result<TableId, DdlError> {
        let up = self.upstream_table(upstream)?;
        let scan = StreamNode::stream_scan(options.scan_type, up.desc.clone(), BACKFILL_CHUNK_SIZE);
        let dist_key = up.desc.dist_key_indices();
        let graph = StreamFragmentGraph {
            fragments: vec![StreamFragment {
                fragment_id: 0,
                node: StreamNode::Materialize {
                    table: up.desc.clone(),
                    conflict: ConflictBehavior::NoCheck,
                    input: Box::new(scan),
                },
                distribution: FragmentDistribution::Hash { dist_key },
                parallelism: None,
            }],
            edges: Vec::new(),
        };
        let kind = RelationKind::MaterializedView;
        self.create_streaming_job(name, kind, graph, vec![up.desc.clone()], options)
            .await
    }

    /// `CREATE SINK name AS SELECT * FROM upstream WITH (connector = blackhole | collecting)`.
    pub async fn create_sink(
        &self,
        name: &str,
        upstream: TableId,
        options: JobOptions,
        sink: SinkOptions,
    ) -> Result<TableId, DdlError> {
        let rel = self.job_over(name, upstream, RelationKind::Sink, &options, Some(sink))?;
        self.create_job(rel).await
    }

    /// A view or sink over `upstream`, with arrangement backfill and its progress table.
    fn job_over(
        &self,
        name: &str,
        upstream: TableId,
        kind: RelationKind,
        options: &JobOptions,
        sink: Option<SinkOptions>,
    ) -> Result<Relation, DdlError> {
        let up = self.upstream_table(upstream)?;
        if options.parallelism == 0 {
            return Err(DdlError::Invalid("parallelism must be at least 1".into()));
        }
        let id = self.inner.next_table_id();
        let mut desc = (*up.desc).clone();
        desc.table_id = id;
        let progress_id = self.inner.next_table_id();
        let progress =
            TableDesc::backfill_state(progress_id, &up.desc.pk_types(), up.desc.vnode_count);
        let place = |inner: &MetaInner| match options.scan_type {
            StreamScanType::ArrangementBackfill => inner.place(options.parallelism, id.0 as usize),
            StreamScanType::Backfill | StreamScanType::UpstreamOnly => inner.place_like(&up.actors),
        };
        let (fragment_id, actors) = place(&self.inner)?;
        // A sink runs in its own fragment, its actors beside the backfill's, behind a hash exchange.
        let sink_fragment = match kind {
            RelationKind::Sink => {
                let (fragment_id, actors) = place(&self.inner)?;
                Some(Fragment {
                    fragment_id,
                    actors,
                })
            }
            _ => None,
        };
        Ok(Relation {
            id,
            name: name.to_string(),
            kind,
            desc: Arc::new(desc),
            upstream: Some(upstream),
            state: JobState::Creating,
            fragments_initial: true,
            fragment_id,
            actors,
            sink: sink.as_ref().map(|s| SinkDesc {
                sink_id: id,
                kind: s.kind,
                pk_indices: up.desc.pk_indices.clone(),
                chunk_delay: s.chunk_delay,
            }),
            rate_limit: options.rate_limit.filter(|l| *l > 0),
            sink_rate_limit: sink.and_then(|s| s.sink_rate_limit),
            progress_table: Some(Arc::new(progress)),
            scan_type: options.scan_type,
            background: options.background,
            sink_fragment,
            graph: None,
        })
    }

    /// `ALTER ... SET STREAMING_RATE_LIMIT`: a new backfill rate limit for a job's actors, by a Throttle barrier.
    /// As RisingWave's `apply_throttle`, the catalog is updated first and stays updated if the barrier fails
    /// (during recovery, say): the error reaches the caller, and the next recovery builds the actors with the
    /// new limit.
    pub async fn set_rate_limit(&self, id: TableId, limit: Option<u32>) -> Result<(), DdlError> {
        self.alive()?;
        let actors = {
            let mut catalog = self.inner.catalog();
            let rel = catalog
                .relations
                .get_mut(&id)
                .ok_or_else(|| DdlError::NotFound(format!("relation {id}")))?;
            rel.rate_limit = limit.filter(|l| *l > 0);
            let actors: Vec<ActorId> = match rel.graph {
                None => rel.actors.iter().map(|a| a.actor_id).collect(),
                Some(_) => rel.progress_actors().into_iter().collect(),
            };
            actors.into_iter().map(|a| (a, rel.rate_limit)).collect()
        };
        event!(self.inner.log, "ddl", "throttle id={id} limit={limit:?}");
        Ok(self
            .inner
            .scheduler
            .run_command(Command::Throttle(actors))
            .await?)
    }

    pub(crate) fn upstream_table(&self, id: TableId) -> Result<Relation, DdlError> {
        scannable(&self.inner.catalog(), id).cloned()
    }

    /// Register the job's tables, build its actors, and run its Add barrier. On failure, clean up.
    pub(crate) async fn create_job(&self, rel: Relation) -> Result<TableId, DdlError> {
        let inner = &self.inner;
        // Until the Add barrier is collected no reschedule runs (see `MetaInner::reschedule_lock`).
        let shared = inner.reschedule_lock.read().await;
        // RisingWave's DDL and recovery exclude each other (its reschedule lock): a create that comes while
        // recovery runs is refused before it touches the catalog, or recovery would rebuild the actors of a
        // job whose creation then fails and unregisters its tables (zombies of a job never created).
        if let SchedulerStatus::Blocked(why) = inner.scheduler.status() {
            return Err(DdlError::Barrier(BarrierError::Blocked(why)));
        }
        let id = rel.id;
        let tables = rel.state_tables();
        let (descs, adds) = inner.insert_job(&rel)?;
        if inner.crash_point(CrashPoint::CreateAfterFragments) {
            return Err(DdlError::MetaUnavailable);
        }
        event!(
            inner.log,
            "ddl",
            "create {} {} id={id} actors={}",
            rel.kind.as_str(),
            rel.name,
            rel.all_actors().count()
        );
        inner.register(&rel);
        if inner.crash_point(CrashPoint::CreateAfterRegister) {
            return Err(DdlError::MetaUnavailable);
        }
        let actors = by_worker(rel.all_actors());
        let sources = source_actors(&descs, &rel);
        let command = Command::CreateStreamingJob {
            job_id: id,
            actors: actors.clone(),
            sources,
            mutation: AddMutation {
                adds,
                added_actors: rel.all_actors().map(|a| a.actor_id).collect(),
                pause: false,
            },
        };
        let progress_actors = rel.progress_actors();
        let decoupled = rel.kind == RelationKind::Sink && inner.config.sink_decoupled_from_backfill;
        let backfills = !progress_actors.is_empty() && !decoupled;
        let finished = if backfills {
            inner.tracker().add(id, progress_actors, !rel.background)
        } else {
            None
        };
        let placement: Vec<ActorPlacement> = rel.all_actors().cloned().collect();
        let result = match inner.build_actors(descs, &placement).await {
            // A recovery meanwhile cleaned the job (its fragments were `Initial`), or a drop took it: no Add
            // barrier for it, and the actors just built go too.
            Ok(()) if !inner.catalog().relations.contains_key(&id) => {
                inner.drop_actors(&actors).await;
                Err(DdlError::NotCreated {
                    kind: rel.kind,
                    name: rel.name.clone(),
                    reason: CreateAborted::RemovedWhileBuilding,
                })
            }
            Ok(()) => inner
                .scheduler
                .run_command(command)
                .await
                .map_err(DdlError::from),
            Err(e) => Err(DdlError::from(e)),
        };
        drop(shared);
        if let Err(e) = result {
            // RisingWave's `create_streaming_job_inner`: a background job whose fragments left `Initial` is
            // recovery's to resume (it rebuilt or will rebuild its actors); any other create cleans up.
            let resumed = rel.background
                && inner
                    .catalog()
                    .relations
                    .get(&id)
                    .is_some_and(|r| !r.fragments_initial);
            if resumed {
                event!(
                    inner.log,
                    "ddl",
                    "create {} {} id={id} left to recovery: {e}",
                    rel.kind.as_str(),
                    rel.name
                );
            } else {
                inner.abort_create(&rel, &actors, &tables, &e).await;
            }
            return Err(e);
        }
        self.await_created(rel, backfills, finished).await
    }

    /// After the job's Add barrier: a job without backfill is created now; a foreground one once every
    /// backfill actor is done (post-collect marks it created); a background one goes on creating.
    async fn await_created(
        &self,
        rel: Relation,
        backfills: bool,
        finished: Option<Finished>,
    ) -> Result<TableId, DdlError> {
        let inner = &self.inner;
        let (id, kind) = (rel.id, rel.kind.as_str());
        if !backfills {
            if let Some(r) = inner.catalog().relations.get_mut(&id) {
                r.state = JobState::Created;
            }
            if inner.crash_point(CrashPoint::CreateAfterFragmentsCreated) {
                return Err(DdlError::MetaUnavailable);
            }
        } else if let Some(finished) = finished {
            let outcome = finished.await.unwrap_or(Err(CreateAborted::MetaStopped));
            if let Err(reason) = outcome {
                event!(
                    inner.log,
                    "ddl",
                    "create {kind} {} id={id} failed: {reason}",
                    rel.name
                );
                return Err(DdlError::NotCreated {
                    kind: rel.kind,
                    name: rel.name,
                    reason,
                });
            }
        }
        let verb = if rel.background && backfills {
            "started creating"
        } else {
            "created"
        };
        event!(inner.log, "ddl", "{verb} {kind} {} id={id}", rel.name);
        Ok(id)
    }

    /// `DROP` a table, view or sink: remove it from the catalog, stop its actors with a Stop barrier, and
    /// unregister its state tables when the drop mode says so.
    pub async fn drop_job(&self, id: TableId) -> Result<(), DdlError> {
        self.drop_or_cancel(id, Removal::Drop).await
    }

    /// `CANCEL JOB`: a job still being created (a background one, say) is removed from the catalog and its
    /// actors are stopped as a drop's (RisingWave's `CancelStreamingJob`, accepted while recovery runs,
    /// which pre-applies it). Its tables go where the drop mode sends a drop's, unless recovery pre-applies
    /// the cancel: then [`crate::recovery::PreApplyCancel`] decides.
    pub async fn cancel_job(&self, id: TableId) -> Result<(), DdlError> {
        self.drop_or_cancel(id, Removal::Cancel).await
    }

    async fn drop_or_cancel(&self, id: TableId, removal: Removal) -> Result<(), DdlError> {
        self.alive()?;
        let clock = self.inner.clock.clone();
        let span = match removal {
            Removal::Drop => {
                vspan!(parent: trace::root(), "drop streaming job", clock, table_id = id.0 as i64)
            }
            Removal::Cancel => {
                vspan!(parent: trace::root(), "cancel streaming job", clock, table_id = id.0 as i64)
            }
        };
        let result = self
            .drop_job_inner(id, removal)
            .instrument(span.clone())
            .await;
        match &result {
            Ok(()) => trace::end(&span, &clock),
            Err(e) => trace::fail(&span, &clock, &e.to_string()),
        }
        result
    }

    /// Take the job out of the catalog (a cancel only while it is being created).
    fn remove_from_catalog(&self, id: TableId, removal: Removal) -> Result<Relation, DdlError> {
        let mut catalog = self.inner.catalog();
        let rel = catalog
            .get(id)
            .cloned()
            .ok_or_else(|| DdlError::NotFound(format!("relation {id}")))?;
        if catalog.downstreams(id).next().is_some() {
            return Err(DdlError::HasDependents(rel.name));
        }
        if removal == Removal::Cancel && rel.state != JobState::Creating {
            return Err(DdlError::Invalid(format!(
                "{} {} is not being created: nothing to cancel",
                rel.kind.as_str(),
                rel.name
            )));
        }
        catalog.relations.remove(&id);
        Ok(rel)
    }

    async fn drop_job_inner(&self, id: TableId, removal: Removal) -> Result<(), DdlError> {
        let inner = &self.inner;
        let rel = self.remove_from_catalog(id, removal)?;
        if removal == Removal::Drop && inner.crash_point(CrashPoint::DropAfterFragments) {
            return Err(DdlError::MetaUnavailable);
        }
        let tables = rel.state_tables();
        let actors = by_worker(rel.all_actors());
        let command = match removal {
            Removal::Drop => {
                inner.tracker().remove(id, CreateAborted::Dropped);
                Command::DropStreamingJobs {
                    job_ids: vec![id],
                    actors,
                    unregistered_table_ids: tables.clone(),
                }
            }
            Removal::Cancel => {
                inner.tracker().remove(id, CreateAborted::Cancelled);
                Command::CancelStreamingJob {
                    job_id: id,
                    actors,
                    unregistered_table_ids: tables.clone(),
                }
            }
        };
        event!(
            inner.log,
            "ddl",
            "{} {} {} id={id} tables={tables:?}",
            removal.as_str(),
            rel.kind.as_str(),
            rel.name
        );
        let result = inner.scheduler.run_command(command).await;
        if inner
            .config
            .toggles
            .get::<DropMode>()
            .caller_unregisters_on_return()
        {
            // RisingWave before the fix: the result is ignored and the tables go at once.
            if let Err(e) = &result {
                tracing::warn!(error = %e, "drop command failed; unregistering anyway");
            }
            if inner.is_killed() {
                // The caller died with meta.
                return Ok(());
            }
            inner
                .hummock
                .unregister_tables(&tables, "drop (buggy order)");
            return Ok(());
        }
        // Post-collect unregistered them, or recovery will.
        Ok(result?)
    }
}

/// The actors of a job that take their barriers from their node's local barrier manager (a table's DML, a
/// values source), by worker.
pub(crate) fn source_actors(
    descs: &[StreamActorDesc],
    rel: &Relation,
) -> BTreeMap<WorkerId, BTreeSet<ActorId>> {
    let sources: BTreeSet<ActorId> = descs
        .iter()
        .filter(|d| d.is_source())
        .map(|d| d.actor_id)
        .collect();
    by_worker(rel.all_actors().filter(|a| sources.contains(&a.actor_id)))
}

/// The table `id`, if a job may scan it: it exists, it is not a sink, and its creation has finished.
fn scannable(catalog: &Catalog, id: TableId) -> Result<&Relation, DdlError> {
    let rel = catalog
        .get(id)
        .ok_or_else(|| DdlError::NotFound(format!("table {id}")))?;
    if rel.kind == RelationKind::Sink || rel.state != JobState::Created {
        return Err(DdlError::Invalid(format!(
            "{} {} cannot be scanned",
            rel.kind.as_str(),
            rel.name
        )));
    }
    Ok(rel)
}

/// How a job leaves the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Removal {
    Drop,
    Cancel,
}

impl Removal {
    fn as_str(self) -> &'static str {
        match self {
            Removal::Drop => "drop",
            Removal::Cancel => "cancel",
        }
    }
}
