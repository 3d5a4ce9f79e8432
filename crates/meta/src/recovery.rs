//! Recovery's steps over meta's state (reference §7.1). The `recovery` crate decides their order and, with
//! the drop mode, when dropped jobs' tables are unregistered. Requests that go to every live node (reset,
//! wait epoch commit, the Initial barrier's inject and collect) go to all of them concurrently.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use epochlab_barrier::{
    AddMutation, Barrier, BarrierKind, Command, InflightActorInfo, Mutation, ScheduledBarriers,
    TracingContext,
};
use epochlab_common::plan::StreamActorDesc;
use epochlab_common::trace::{self, Park};
use epochlab_common::{ActorId, Epoch, EpochPair, EventLog, SimRng, TableId, WorkerId, event};
use epochlab_common::{Clock, toggle, vspan};
use epochlab_recovery::{RecoveryContext, RecoveryError, RecoveryResult};
use epochlab_rpc::{Request, Response, RpcError, RpcKind};
use futures::future::{join_all, try_join_all};
use tracing::Instrument;

use crate::catalog::{ActorPlacement, JobState};
use crate::meta::MetaInner;

toggle! {
    /// RisingWave #15144: what recovery's pre-apply of a buffered `CANCEL JOB` does with the cancelled job's
    /// state tables (RisingWave's `pre_apply_drop_cancel`). Read only by `Recovery::pre_apply_drops`. The job is
    /// out of the catalog either way.
    pub enum PreApplyCancel {
        /// Before RisingWave PR #15355 (which says this path "might cause" #15144): the job's fragments are
        /// dropped and its tables handed to nobody, so storage keeps them registered while the catalog no
        /// longer knows them. A compaction task whose input holds their data then fails (the compactor's
        /// `Failed to fetch filter key extractor tables [..]. [..] may be removed by meta-service.`) until meta
        /// restarts and purges.
        KeepRegistered,
        /// The fix: the tables go to recovery with the dropped jobs', which unregisters them.
        #[default]
        Unregister,
    }
}

toggle! {
    /// RisingWave #5244: how a reset stops the actors a node still runs (RisingWave's `force_stop_actors`).
    /// Read only by `Recovery::stop_barrier`.
    pub enum ForceStopActors {
        /// From RisingWave #1702 until #5444: a Stop barrier of every actor, its epochs the recovering meta's
        /// own (a new leader's: above the last one stored), not those its actors are at. An actor with state
        /// meets a barrier whose `prev` is not its epoch; a merge whose upstreams got the last barrier in
        /// flight on one node and not on another meets two epochs (`Failed to align barrier`).
        StopBarrier,
        /// The fix (#5444): every actor is aborted, no barrier.
        #[default]
        Abort,
    }
}

toggle! {
    /// RisingWave #12990: which recoveries clean a background job whose Add barrier was never collected (its
    /// fragments still `Initial`). Read only by `Recovery::clean_dirty_jobs`.
    pub enum CleanDirtyTables {
        /// Before #12990 (fcad5e1f127^): a meta's bootstrap recovery only (`if bootstrap_recovery`). The
        /// recovery after a failed barrier keeps the job, and its progress step looks the job's fragments up:
        /// meta panics, `recover mview progress should not fail: table_fragment not exist: id=N`.
        Bootstrap,
        /// The fix: every recovery.
        #[default]
        EveryRecovery,
    }
}

/// End `span` as `result` says.
fn end_as<T>(span: &tracing::Span, clock: &Clock, result: &RecoveryResult<T>) {
    match result {
        Ok(_) => trace::end(span, clock),
        Err(e) => trace::fail(span, clock, &e.to_string()),
    }
}

/// One job's actor descriptions and their placement.
type JobActors = (Vec<StreamActorDesc>, Vec<ActorPlacement>);

/// The steps of recovery, over meta's state.
pub(crate) struct Recovery {
    pub(crate) inner: Arc<MetaInner>,
    scheduled: ScheduledBarriers,
}

impl Recovery {
    pub(crate) fn new(inner: Arc<MetaInner>, scheduled: ScheduledBarriers) -> Self {
        Self { inner, scheduled }
    }

    /// Reset one node, in its own `reset node` span.
    async fn reset_node(
        &self,
        worker: WorkerId,
        generation: u64,
        prev_epoch: Epoch,
        stop: Option<Barrier>,
    ) -> Result<(), RpcError> {
        let clock = &self.inner.clock;
        let span = vspan!(
            "reset node",
            clock,
            worker_id = worker.0 as i64,
            generation = generation as i64
        );
        let request = Request::Reset {
            generation,
            prev_epoch,
            stop,
        };
        let result = self
            .inner
            .network
            .call(worker, request)
            .instrument(span.clone())
            .await;
        match &result {
            Ok(_) => {
                trace::end(&span, clock);
                // The node's actors are gone: collections abandoned on it end now.
                trace::release(Park::Worker(worker), clock);
            }
            Err(e) => trace::fail(&span, clock, &e.to_string()),
        }
        result.map(|_| ())
    }

    /// The Stop barrier a reset sends first, as [`ForceStopActors`] says: none, or a Stop of every actor of
    /// the catalog whose `prev` is the next epoch this meta would issue (above every one issued and `mce`),
    /// as RisingWave's `reset_compute_nodes` sent before #5444.
    fn stop_barrier(&self, mce: Epoch) -> Option<Barrier> {
        let inner = &self.inner;
        if inner.config.toggles.get::<ForceStopActors>() == ForceStopActors::Abort {
            return None;
        }
        let prev = inner.epoch_high_water().max(mce).next(&inner.clock);
        let curr = prev.next(&inner.clock);
        inner.issued_epoch(curr);
        let actors: BTreeSet<ActorId> = inner
            .catalog()
            .relations
            .values()
            .flat_map(|r| r.all_actors().map(|a| a.actor_id))
            .collect();
        event!(
            inner.log,
            "recovery step",
            "stop actors by barrier prev={prev} curr={curr} actors={}",
            actors.len()
        );
        let epoch = EpochPair::new(curr, prev);
        let stop = Mutation::Stop(actors);
        Some(Barrier::new(epoch, BarrierKind::Checkpoint, Some(stop)))
    }

    /// Scale in off removed workers, then move the actors of dead workers onto live ones, round-robin by
    /// (worker, vnodes); returns every job's actor descriptions
    /// and placement, and the actors to inject into and collect from.
    fn migrate_actors(&self) -> RecoveryResult<(Vec<JobActors>, InflightActorInfo)> {
        let inner = &self.inner;
        let workers = inner.live_workers();
        if workers.is_empty() {
            return Err(RecoveryError::NoWorkers);
        }
        // Workers removed for good: their actors are scaled in first (RisingWave's `scale_actors`).
        inner.scale_in();
        let live: BTreeSet<WorkerId> = workers.iter().copied().collect();
        let mut catalog = inner.catalog();
        // Actors of one dead worker with the same vnodes move together (RisingWave moves a parallel unit's
        // actors as one): no-shuffle partners, placed together, stay together, so a temporal join still
        // reads its lookup table's writes from its own node.
        let mut moved: BTreeMap<(WorkerId, Vec<usize>), WorkerId> = BTreeMap::new();
        for rel in catalog.relations.values_mut() {
            for a in rel.all_actors_mut().filter(|a| !live.contains(&a.worker)) {
                let next = workers[moved.len() % workers.len()];
                let slot = (a.worker, a.vnodes.iter_ones().collect());
                let to = *moved.entry(slot).or_insert(next);
                event!(
                    inner.log,
                    "recovery step",
                    "migrate actor={} from={} to={to}",
                    a.actor_id,
                    a.worker
                );
                a.worker = to;
            }
        }
        let mut descs = Vec::new();
        let mut info = InflightActorInfo::default();
        for rel in catalog.relations.values() {
            for a in rel.all_actors() {
                info.actors.entry(a.worker).or_default().insert(a.actor_id);
            }
            let rel_descs = catalog.actor_descs(rel);
            for (worker, actors) in crate::meta::source_actors(&rel_descs, rel) {
                info.sources.entry(worker).or_default().extend(actors);
            }
            descs.push((rel_descs, rel.all_actors().cloned().collect()));
        }
        Ok((descs, info))
    }

    /// Inject `barrier` on one node.
    async fn inject(
        &self,
        worker: WorkerId,
        barrier: Barrier,
        info: &InflightActorInfo,
    ) -> RecoveryResult<()> {
        let request = Request::InjectBarrier {
            barrier,
            to_send: info.sources.get(&worker).cloned().unwrap_or_default(),
            to_collect: info.actors.get(&worker).cloned().unwrap_or_default(),
        };
        self.inner.call(worker, request).await?;
        Ok(())
    }

    /// Wait until one node has collected the barrier after `prev_epoch`.
    async fn collect(&self, worker: WorkerId, prev_epoch: Epoch) -> RecoveryResult<()> {
        match self
            .inner
            .call(worker, Request::BarrierComplete { prev_epoch })
            .await?
        {
            Response::BarrierComplete(_) => Ok(()),
            Response::Ack => Err(RecoveryError::UnexpectedResponse {
                worker,
                rpc: RpcKind::BarrierComplete,
            }),
        }
    }
}

impl RecoveryContext for Recovery {
    fn log(&self) -> &EventLog {
        &self.inner.log
    }

    fn rng(&self) -> &SimRng {
        &self.inner.rng
    }

    /// Until its first recovery is done a meta is bootstrapping, and says so to a DDL as RisingWave's
    /// `check_status_running` does ("The cluster is bootstrapping"); after, it is recovering.
    fn abort_and_mark_blocked(&self) -> usize {
        let bootstrapped = self
            .inner
            .bootstrapped
            .load(std::sync::atomic::Ordering::Relaxed);
        self.scheduled.abort_and_mark_blocked(match bootstrapped {
            true => "cluster is under recovery",
            false => "The cluster is bootstrapping",
        })
    }

    fn clean_dirty_jobs(&self) -> Vec<TableId> {
        // RisingWave's `clean_dirty_tables`: incomplete foreground jobs, and background jobs whose fragments
        // are still `Initial` (their Add barrier was never collected: nothing to resume), in the recoveries
        // `CleanDirtyTables` says (RisingWave #12990).
        let bootstrap = !self
            .inner
            .bootstrapped
            .load(std::sync::atomic::Ordering::Relaxed);
        let initial = bootstrap
            || self.inner.config.toggles.get::<CleanDirtyTables>()
                == CleanDirtyTables::EveryRecovery;
        let mut tables = self.inner.clean_jobs("dirty job", |r| {
            r.state == JobState::Creating && (!r.background || r.fragments_initial && initial)
        });
        tables.extend(self.inner.clean_orphan_relations());
        tables
    }

    fn recover_background_progress(&self) {
        // RisingWave's `recover_background_mv_progress` looks each background job's fragments up and expects
        // them committed; a job whose Add barrier was never collected has none to resume (RisingWave #12990).
        // The clean before this step leaves none, unless `CleanDirtyTables` keeps them.
        let uncommitted = self.inner.catalog().relations.values().find_map(|r| {
            let creating = r.state == JobState::Creating && r.background;
            (creating && r.fragments_initial).then_some(r.id)
        });
        if let Some(id) = uncommitted {
            panic!("recover mview progress should not fail: table_fragment not exist: id={id}");
        }
        let jobs: Vec<(TableId, BTreeSet<ActorId>)> = self
            .inner
            .catalog()
            .relations
            .values()
            .filter(|r| r.state == JobState::Creating && !r.progress_actors().is_empty())
            .map(|r| (r.id, r.progress_actors()))
            .collect();
        self.inner.tracker().recover(jobs);
    }

    /// RisingWave's `pre_apply_drop_cancel`: the buffered drops and cancels are done, without a barrier (their
    /// jobs are out of the catalog already, so recovery does not rebuild their actors). A drop's tables go to
    /// recovery to unregister; a cancel's as [`PreApplyCancel`] says (RisingWave #15144).
    fn pre_apply_drops(&self) -> Vec<TableId> {
        let hand_over =
            self.inner.config.toggles.get::<PreApplyCancel>() == PreApplyCancel::Unregister;
        let mut tables = Vec::new();
        for command in self.scheduled.pre_apply_drop_scheduled() {
            match command {
                Command::DropStreamingJobs {
                    unregistered_table_ids,
                    ..
                } => tables.extend(unregistered_table_ids),
                Command::CancelStreamingJob {
                    job_id,
                    unregistered_table_ids,
                    ..
                } => {
                    event!(
                        self.inner.log,
                        "recovery step",
                        "pre-apply cancel job={job_id} tables={unregistered_table_ids:?} unregister={hand_over}"
                    );
                    if hand_over {
                        tables.extend(unregistered_table_ids);
                    }
                }
                _ => {}
            }
        }
        tables
    }

    fn unregister(&self, tables: &[TableId], reason: &str) {
        self.inner.hummock.unregister_tables(tables, reason);
    }

    /// Unregister every table that neither the catalog nor a drop or cancel still queued accounts for (the
    /// queued one's unregister is still to come: recovery pre-applies it again after the reset, or its
    /// barrier runs after recovery).
    fn purge(&self, reason: &str) -> Vec<TableId> {
        let mut keep: BTreeSet<TableId> = self.inner.catalog().state_tables().into_iter().collect();
        keep.extend(self.inner.scheduler.queued_drop_tables());
        self.inner.hummock.purge(&keep, reason)
    }

    fn next_generation(&self) -> u64 {
        let mut cluster = self.inner.cluster();
        cluster.last_allocated_generation += 1;
        cluster.last_allocated_generation
    }

    /// Reset every worker meta believes alive, concurrently. A worker that acknowledged moves to
    /// `generation` (in meta and in storage's accepted contexts) even if another failed; the cluster's
    /// generation moves only once every worker acknowledged, so the next attempt starts consistent.
    async fn reset_nodes(&self, generation: u64) -> RecoveryResult<()> {
        let inner = &self.inner;
        let prev_epoch = inner.hummock.max_committed_epoch();
        let stop = self.stop_barrier(prev_epoch);
        let workers = inner.live_workers();
        let resets = workers
            .iter()
            .map(|&w| self.reset_node(w, generation, prev_epoch, stop.clone()));
        let results = join_all(resets).await;
        let mut failures = BTreeMap::new();
        let mut cluster = inner.cluster();
        for (w, result) in workers.into_iter().zip(results) {
            match result {
                Ok(()) => {
                    // A worker that expired meanwhile stays out.
                    if let Some(info) = cluster.workers.get_mut(&w) {
                        info.generation = generation;
                        inner.hummock.set_context(w, generation);
                    }
                }
                Err(e) => {
                    failures.insert(w, e);
                }
            }
        }
        if !failures.is_empty() {
            return Err(RecoveryError::Unreachable {
                rpc: RpcKind::Reset,
                failures,
            });
        }
        cluster.generation = generation;
        Ok(())
    }

    async fn rebuild_actors(&self) -> RecoveryResult<InflightActorInfo> {
        let (descs, info) = self.migrate_actors()?;
        for (d, placement) in descs {
            self.inner.build_actors(d, &placement).await?;
        }
        Ok(info)
    }

    async fn wait_epoch_commit(&self) -> RecoveryResult<Epoch> {
        let inner = &self.inner;
        let mce = inner.hummock.max_committed_epoch();
        let waits = inner
            .live_workers()
            .into_iter()
            .map(|w| inner.call(w, Request::WaitEpochCommit { epoch: mce }));
        try_join_all(waits).await?;
        Ok(mce)
    }

    async fn inject_initial(
        &self,
        info: &InflightActorInfo,
        mce: Epoch,
        last_epoch: Epoch,
    ) -> RecoveryResult<Epoch> {
        let inner = &self.inner;
        // Above a Stop barrier's too (RisingWave #5244's reset issues one).
        let curr = last_epoch
            .max(mce)
            .max(inner.epoch_high_water())
            .next(&inner.clock);
        inner.issued_epoch(curr);
        let barrier = Barrier::new(
            EpochPair::new(curr, mce),
            BarrierKind::Initial,
            Some(Mutation::Add(AddMutation::default())),
        );
        let nodes: Vec<WorkerId> = info.nodes().collect();
        event!(
            inner.log,
            "inject barrier",
            "prev={mce} curr={curr} kind=initial mutation=add command=recovery nodes={:?}",
            nodes.iter().map(|w| w.0).collect::<Vec<_>>()
        );
        let clock = &inner.clock;
        let epoch = vspan!(
            "epoch",
            clock,
            epoch.curr = curr.0 as i64,
            epoch.prev = mce.0 as i64,
            barrier.kind = "initial",
            mutation = "add",
            command = "recovery"
        );
        // A `collect barrier` span per node, as for any barrier; each node's copy carries its own.
        let per_node: Vec<(WorkerId, tracing::Span, Barrier)> = nodes
            .iter()
            .map(|&w| {
                let span = vspan!(parent: &epoch, "collect barrier", clock, worker_id = w.0 as i64,
                    epoch.prev = mce.0 as i64);
                let mut b = barrier.clone();
                b.tracing_context = TracingContext(Some(span.clone()));
                (w, span, b)
            })
            .collect();
        // Inject on every node first (an actor's upstreams may be elsewhere), then collect from each.
        let injected = try_join_all(
            per_node
                .iter()
                .map(|(w, _, b)| self.inject(*w, b.clone(), info)),
        )
        .await;
        let result = match injected {
            Ok(_) => try_join_all(per_node.iter().map(|(w, _, _)| self.collect(*w, mce)))
                .await
                .map(|_| curr),
            Err(e) => Err(e),
        };
        for (_, span, _) in &per_node {
            end_as(span, clock, &result);
        }
        end_as(&epoch, clock, &result);
        result
    }

    fn mark_ready(&self) {
        self.scheduled.mark_ready();
        self.inner
            .bootstrapped
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let hook = self
            .inner
            .on_recovered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(hook) = hook {
            hook();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use epochlab_barrier::BarrierScheduler;
    use epochlab_common::Clock;
    use epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS;
    use epochlab_rpc::Network;
    use epochlab_storage::{CommittedStore, HummockManager};

    use super::*;
    use crate::{MetaConfig, MetaNode};

    /// The resets each fake node received: (worker, generation).
    type Received = Arc<Mutex<Vec<(WorkerId, u64)>>>;

    /// A node that acknowledges every request after `delay`, recording resets.
    fn serve(network: &Network, worker: WorkerId, delay: Duration, received: Received) {
        let mut rx = network.register(worker);
        tokio::spawn(async move {
            while let Some((request, reply)) = rx.recv().await {
                tokio::time::sleep(delay).await;
                if let Request::Reset { generation, .. } = request {
                    received.lock().unwrap().push((worker, generation));
                }
                let _ = reply.send(Ok(Response::Ack));
            }
        });
    }

    fn meta(network: &Network, workers: u32) -> MetaNode {
        let clock = Clock::virtual_from(DEFAULT_ORIGIN_UNIX_MS);
        let log = EventLog::new(clock.clone());
        let hummock = Arc::new(HummockManager::new(CommittedStore::default(), None));
        let (meta, _manager) = MetaNode::open(crate::MetaEnv {
            config: MetaConfig::default(),
            hummock,
            network: network.clone(),
            log,
            clock,
            rng: SimRng::new(1),
            store: Arc::new(crate::store::MemStore::default()),
        })
        .expect("an empty memory store opens");
        for w in 1..=workers {
            meta.add_worker(WorkerId(w));
        }
        meta
    }

    fn generations(meta: &MetaNode) -> Vec<u64> {
        let cluster = meta.inner.cluster();
        cluster.workers.values().map(|w| w.generation).collect()
    }

    /// Worker 1 is unreachable: workers 2 and 3 are still reset (concurrently, so in the time of the slowest
    /// one), the attempt fails naming worker 1, and only 2 and 3 move to the new generation. Once worker 1
    /// is back, the next reset moves the whole cluster.
    #[tokio::test(start_paused = true)]
    async fn one_unreachable_node_fails_the_reset_but_not_the_others() {
        let network = Network::new(SimRng::new(2));
        let meta = meta(&network, 3);
        let received = Received::default();
        for w in [2, 3] {
            serve(
                &network,
                WorkerId(w),
                Duration::from_secs(1),
                received.clone(),
            );
        }
        let (_scheduler, scheduled) = BarrierScheduler::new();
        let recovery = Recovery::new(meta.inner.clone(), scheduled);
        let start = tokio::time::Instant::now();
        let err = recovery.reset_nodes(5).await.unwrap_err();
        assert_eq!(
            err,
            RecoveryError::Unreachable {
                rpc: RpcKind::Reset,
                failures: BTreeMap::from([(WorkerId(1), RpcError::Unreachable(WorkerId(1)))]),
            }
        );
        assert_eq!(
            start.elapsed(),
            Duration::from_secs(1),
            "the resets ran concurrently"
        );
        assert_eq!(
            *received.lock().unwrap(),
            [(WorkerId(2), 5), (WorkerId(3), 5)]
        );
        assert_eq!(generations(&meta), [1, 5, 5]);
        assert_eq!(meta.generation(), 1, "the cluster's generation stays");

        serve(
            &network,
            WorkerId(1),
            Duration::from_secs(1),
            received.clone(),
        );
        recovery.reset_nodes(6).await.unwrap();
        assert_eq!(generations(&meta), [6, 6, 6]);
        assert_eq!(meta.generation(), 6);
    }

    #[tokio::test(start_paused = true)]
    async fn rebuild_without_workers_fails_typed() {
        let network = Network::new(SimRng::new(2));
        let meta = meta(&network, 0);
        let (_scheduler, scheduled) = BarrierScheduler::new();
        let recovery = Recovery::new(meta.inner.clone(), scheduled);
        assert_eq!(
            recovery.rebuild_actors().await.unwrap_err(),
            RecoveryError::NoWorkers
        );
    }
}
