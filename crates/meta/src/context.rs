//! The barrier manager's context: RPCs to compute nodes, commits into storage, post-collect work, and
//! recovery (reference §7.1).

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;

use epochlab_barrier::{
    AddMutation, Barrier, BarrierCompleteResponse, BarrierError, BarrierKind, BarrierResult,
    Command, CommandContext, CreateMviewProgress, GlobalBarrierManagerContext, InflightActorInfo,
    Mutation, RecoveredState, ScheduledBarriers,
};
use epochlab_common::{
    ActorId, Clock, Epoch, EpochPair, EventLog, SimRng, TableId, WorkerId, event,
};
use epochlab_common::{trace, vspan};
use epochlab_rpc::{Network, Request, Response};
use epochlab_storage::SyncResult;
use tracing::Instrument;

use crate::catalog::{JobState, RelationKind};
use epochlab_recovery::RecoveryContext;

use crate::meta::{DropMode, MetaInner};

pub struct MetaContext {
    inner: Arc<MetaInner>,
}

impl MetaContext {
    pub(crate) fn new(inner: Arc<MetaInner>) -> Self {
        Self { inner }
    }
}

fn rpc_error(worker: WorkerId, rpc: &'static str, e: epochlab_rpc::RpcError) -> BarrierError {
    match e {
        epochlab_rpc::RpcError::Remote(message) => BarrierError::Worker { worker, message },
        e => BarrierError::Rpc {
            worker,
            rpc,
            message: e.to_string(),
        },
    }
}

async fn inject_and_collect(
    network: Network,
    clock: Clock,
    worker: WorkerId,
    barrier: Barrier,
    to_send: BTreeSet<ActorId>,
    to_collect: BTreeSet<ActorId>,
) -> BarrierResult<BarrierCompleteResponse> {
    let span = vspan!(
        parent: &barrier.tracing_context.span(),
        "collect barrier",
        clock,
        worker_id = worker.0 as i64,
        epoch.prev = barrier.epoch.prev.0 as i64,
        actors = to_collect.len() as i64
    );
    // Recovery may drop this future before it finishes: the guard then ends the span as abandoned.
    let mut guard = SpanGuard {
        span,
        clock,
        done: false,
    };
    let result = inject_and_collect_inner(network, worker, barrier, to_send, to_collect).await;
    match &result {
        Ok(_) => trace::end(&guard.span, &guard.clock),
        Err(e) => trace::fail(&guard.span, &guard.clock, &e.to_string()),
    }
    guard.done = true;
    result
}

/// Ends a span as failed if it is dropped before it was ended.
struct SpanGuard {
    span: tracing::Span,
    clock: Clock,
    done: bool,
}

impl Drop for SpanGuard {
    fn drop(&mut self) {
        if !self.done {
            trace::fail(
                &self.span,
                &self.clock,
                "abandoned: recovery dropped the collection",
            );
        }
    }
}

async fn inject_and_collect_inner(
    network: Network,
    worker: WorkerId,
    barrier: Barrier,
    to_send: BTreeSet<ActorId>,
    to_collect: BTreeSet<ActorId>,
) -> BarrierResult<BarrierCompleteResponse> {
    let prev_epoch = barrier.epoch.prev;
    network
        .call(
            worker,
            Request::InjectBarrier {
                barrier,
                to_send,
                to_collect,
            },
        )
        .await
        .map_err(|e| rpc_error(worker, "inject_barrier", e))?;
    match network
        .call(worker, Request::BarrierComplete { prev_epoch })
        .await
    {
        Ok(Response::BarrierComplete(r)) => Ok(r),
        Ok(other) => Err(BarrierError::Worker {
            worker,
            message: format!("unexpected answer {other:?}"),
        }),
        Err(e) => Err(rpc_error(worker, "barrier_complete", e)),
    }
}

impl GlobalBarrierManagerContext for MetaContext {
    fn inject_and_collect(
        &self,
        worker: WorkerId,
        barrier: Barrier,
        to_send: BTreeSet<ActorId>,
        to_collect: BTreeSet<ActorId>,
    ) -> impl Future<Output = BarrierResult<BarrierCompleteResponse>> + Send + 'static {
        inject_and_collect(
            self.inner.network.clone(),
            self.inner.clock.clone(),
            worker,
            barrier,
            to_send,
            to_collect,
        )
    }

    fn commit_epoch(&self, ctx: &CommandContext, syncs: Vec<SyncResult>) -> BarrierResult<()> {
        self.inner
            .hummock
            .commit_epoch(ctx.prev_epoch, syncs)
            .map(|_| ())
            .map_err(|e| BarrierError::Commit(e.to_string()))
    }

    fn post_collect(
        &self,
        ctx: &CommandContext,
        progress: Vec<CreateMviewProgress>,
    ) -> impl Future<Output = BarrierResult<()>> + Send {
        let inner = self.inner.clone();
        let command = ctx.command.clone();
        let checkpoint = ctx.kind.is_checkpoint();
        async move {
            // Creating jobs whose backfill is done become created on a checkpoint.
            let done = inner.tracker().update(&progress);
            if !done.is_empty() {
                if checkpoint {
                    for job in done {
                        if let Some(r) = inner.catalog().relations.get_mut(&job) {
                            r.state = JobState::Created;
                        }
                        inner.tracker().finish(job);
                        event!(inner.log, "ddl", "finished creating id={job}");
                    }
                } else {
                    inner.scheduler.force_checkpoint_in_next_barrier();
                }
            }
            if let Command::DropStreamingJobs {
                actors,
                unregistered_table_ids,
                ..
            } = command
            {
                inner.drop_actors(&actors).await;
                if inner.config.drop_mode != DropMode::Buggy {
                    inner
                        .hummock
                        .unregister_tables(&unregistered_table_ids, "drop collected");
                }
            }
            Ok(())
        }
    }

    fn recovery(
        &self,
        reason: String,
        last_epoch: Epoch,
        scheduled: &ScheduledBarriers,
    ) -> impl Future<Output = RecoveredState> + Send {
        let ctx = Recovery {
            inner: self.inner.clone(),
            scheduled: scheduled.clone(),
        };
        async move {
            epochlab_recovery::recover(&ctx, &ctx.inner.config.recovery(), &reason, last_epoch)
                .await
        }
    }

    fn log(&self) -> &EventLog {
        &self.inner.log
    }

    fn clock(&self) -> &Clock {
        &self.inner.clock
    }
}

/// The steps of recovery, over meta's state.
struct Recovery {
    inner: Arc<MetaInner>,
    scheduled: ScheduledBarriers,
}

impl RecoveryContext for Recovery {
    fn log(&self) -> &EventLog {
        &self.inner.log
    }

    fn rng(&self) -> &SimRng {
        &self.inner.rng
    }

    fn abort_and_mark_blocked(&self) -> usize {
        self.scheduled
            .abort_and_mark_blocked("cluster is under recovery")
    }

    fn clean_dirty_jobs(&self) -> Vec<TableId> {
        let mut catalog = self.inner.catalog();
        let dirty: Vec<TableId> = catalog
            .relations
            .values()
            .filter(|r| r.state == JobState::Creating && !r.background)
            .map(|r| r.id)
            .collect();
        let mut tables = Vec::new();
        for id in dirty {
            let rel = catalog.relations.remove(&id).expect("listed above");
            event!(
                self.inner.log,
                "recovery step",
                "clean dirty job {} id={id}",
                rel.name
            );
            self.inner.tracker().remove(id, "recovery cleaned it up");
            tables.extend(rel.state_tables());
        }
        tables
    }

    fn pre_apply_drops(&self) -> Vec<TableId> {
        self.scheduled
            .pre_apply_drop_scheduled()
            .into_iter()
            .flat_map(|c| match c {
                Command::DropStreamingJobs {
                    unregistered_table_ids,
                    ..
                } => unregistered_table_ids,
                _ => Vec::new(),
            })
            .collect()
    }

    fn unregister(&self, tables: &[TableId], reason: &str) {
        self.inner.hummock.unregister_tables(tables, reason);
    }

    fn purge(&self, reason: &str) -> Vec<TableId> {
        let keep: BTreeSet<TableId> = self.inner.catalog().state_tables().into_iter().collect();
        self.inner.hummock.purge(&keep, reason)
    }

    fn next_generation(&self) -> u64 {
        let mut cluster = self.inner.cluster();
        cluster.last_allocated_generation += 1;
        cluster.last_allocated_generation
    }

    async fn reset_nodes(&self, generation: u64) -> Result<(), String> {
        let inner = &self.inner;
        let mce = inner.hummock.max_committed_epoch();
        let workers: Vec<WorkerId> = inner.cluster().workers.keys().copied().collect();
        for &w in &workers {
            let span = vspan!(
                "reset node",
                inner.clock,
                worker_id = w.0 as i64,
                generation = generation as i64
            );
            let request = Request::Reset {
                generation,
                prev_epoch: mce,
            };
            match inner.call(w, request).instrument(span.clone()).await {
                Ok(_) => trace::end(&span, &inner.clock),
                Err(e) => {
                    trace::fail(&span, &inner.clock, &e.to_string());
                    return Err(e.to_string());
                }
            }
        }
        let mut cluster = inner.cluster();
        cluster.generation = generation;
        for w in workers {
            if let Some(g) = cluster.workers.get_mut(&w) {
                g.generation = generation;
                inner.hummock.set_context(w, generation);
            }
        }
        Ok(())
    }

    async fn rebuild_actors(&self) -> Result<InflightActorInfo, String> {
        let inner = &self.inner;
        let (descs, info) = {
            let workers: Vec<WorkerId> = inner.cluster().workers.keys().copied().collect();
            if workers.is_empty() {
                return Err("no compute node is alive".into());
            }
            let live: BTreeSet<WorkerId> = workers.iter().copied().collect();
            let mut catalog = inner.catalog();
            let mut i = 0usize;
            for rel in catalog.relations.values_mut() {
                for a in rel.all_actors_mut() {
                    if !live.contains(&a.worker) {
                        let to = workers[i % workers.len()];
                        event!(
                            inner.log,
                            "recovery step",
                            "migrate actor={} from={} to={to}",
                            a.actor_id,
                            a.worker
                        );
                        a.worker = to;
                        i += 1;
                    }
                }
            }
            let mut descs = Vec::new();
            let mut info = InflightActorInfo::default();
            for rel in catalog.relations.values() {
                for a in rel.all_actors() {
                    info.actors.entry(a.worker).or_default().insert(a.actor_id);
                    if rel.kind == RelationKind::Table {
                        info.sources.entry(a.worker).or_default().insert(a.actor_id);
                    }
                }
                descs.push((catalog.actor_descs(rel), rel.all_actors().cloned().collect::<Vec<_>>()));
            }
            (descs, info)
        };
        for (d, placement) in descs {
            inner
                .build_actors(d, &placement)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(info)
    }

    async fn wait_epoch_commit(&self) -> Result<Epoch, String> {
        let inner = &self.inner;
        let mce = inner.hummock.max_committed_epoch();
        let workers: Vec<WorkerId> = inner.cluster().workers.keys().copied().collect();
        for w in workers {
            inner
                .call(w, Request::WaitEpochCommit { epoch: mce })
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(mce)
    }

    async fn inject_initial(
        &self,
        info: &InflightActorInfo,
        mce: Epoch,
        last_epoch: Epoch,
    ) -> Result<Epoch, String> {
        let inner = &self.inner;
        let curr = last_epoch.max(mce).next(&inner.clock);
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
        // Inject on every node first (an actor's upstreams may be elsewhere), then collect from each.
        for &w in &nodes {
            let request = Request::InjectBarrier {
                barrier: barrier.clone(),
                to_send: info.sources.get(&w).cloned().unwrap_or_default(),
                to_collect: info.actors.get(&w).cloned().unwrap_or_default(),
            };
            inner.call(w, request).await.map_err(|e| e.to_string())?;
        }
        for &w in &nodes {
            match inner
                .call(w, Request::BarrierComplete { prev_epoch: mce })
                .await
            {
                Ok(Response::BarrierComplete(_)) => {}
                Ok(other) => return Err(format!("worker {w}: unexpected answer {other:?}")),
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(curr)
    }

    fn mark_ready(&self) {
        self.scheduled.mark_ready();
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
