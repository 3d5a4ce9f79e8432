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
use epochlab_common::{ActorId, Clock, Epoch, EpochPair, EventLog, WorkerId, event};
use epochlab_rpc::{Network, Request, Response};
use epochlab_storage::SyncResult;

use crate::catalog::{JobState, RelationKind};
use crate::meta::{DdlError, DropMode, MetaInner};

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
        let inner = self.inner.clone();
        let scheduled = scheduled.clone();
        async move {
            let (first, max) = inner.config.recovery_backoff;
            let mut backoff = first;
            let mut attempt = 0u32;
            loop {
                attempt += 1;
                match recovery_attempt(&inner, &reason, attempt, last_epoch, &scheduled).await {
                    Ok(state) => return state,
                    Err(e) => {
                        event!(
                            inner.log,
                            "recovery failed",
                            "attempt={attempt} error={e} retry_in_ms={}",
                            backoff.as_millis()
                        );
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(max);
                    }
                }
            }
        }
    }

    fn log(&self) -> &EventLog {
        &self.inner.log
    }

    fn clock(&self) -> &Clock {
        &self.inner.clock
    }
}

/// One attempt at recovery: block the scheduler, pre-apply buffered drops, reset every live node, rebuild
/// every created job's actors, wait for every node to pin the committed epoch, and collect an Initial
/// barrier whose `prev` is the max committed epoch.
async fn recovery_attempt(
    inner: &Arc<MetaInner>,
    reason: &str,
    attempt: u32,
    last_epoch: Epoch,
    scheduled: &ScheduledBarriers,
) -> Result<RecoveredState, DdlError> {
    event!(inner.log, "recovery", "attempt={attempt} reason={reason}");
    let aborted = scheduled.abort_and_mark_blocked("cluster is under recovery");
    if aborted > 0 {
        event!(inner.log, "recovery", "aborted {aborted} queued commands");
    }
    // Creating jobs whose barrier never completed are dropped (RisingWave's dirty streaming jobs).
    let dirty: Vec<(crate::catalog::Relation, Vec<epochlab_common::TableId>)> = {
        let mut catalog = inner.catalog();
        let ids: Vec<_> = catalog
            .relations
            .values()
            .filter(|r| r.state == JobState::Creating && !r.background)
            .map(|r| r.id)
            .collect();
        ids.into_iter()
            .map(|id| {
                let r = catalog.relations.remove(&id).unwrap();
                let t = r.state_tables();
                (r, t)
            })
            .collect()
    };
    for (rel, _) in &dirty {
        event!(
            inner.log,
            "recovery",
            "clean dirty job {} id={}",
            rel.name,
            rel.id
        );
    }
    let dirty_tables: Vec<_> = dirty.into_iter().flat_map(|(_, t)| t).collect();
    let drops = scheduled.pre_apply_drop_scheduled();
    let mut dropped_tables = dirty_tables;
    for d in &drops {
        if let Command::DropStreamingJobs {
            unregistered_table_ids,
            ..
        } = d
        {
            dropped_tables.extend(unregistered_table_ids.iter().copied());
        }
    }
    if !drops.is_empty() {
        event!(inner.log, "recovery", "pre-applied {} drops", drops.len());
    }

    let mce = inner.hummock.max_committed_epoch();
    let workers: Vec<WorkerId> = inner.cluster().workers.keys().copied().collect();
    let generation = inner.cluster().generation + 1;
    for &w in &workers {
        inner
            .call(
                w,
                Request::Reset {
                    generation,
                    prev_epoch: mce,
                },
            )
            .await?;
    }
    {
        let mut cluster = inner.cluster();
        cluster.generation = generation;
        for &w in &workers {
            cluster.workers.insert(w, generation);
            inner.hummock.set_context(w, generation);
        }
    }
    // Every live node has dropped its actors: tables of dropped jobs can go now.
    if !dropped_tables.is_empty() && inner.config.drop_mode != DropMode::Buggy {
        inner.hummock.unregister_tables(&dropped_tables, "recovery");
    }

    // Rebuild every created job, moving actors off dead workers.
    let (descs, info) = {
        let mut catalog = inner.catalog();
        let live: BTreeSet<WorkerId> = workers.iter().copied().collect();
        let mut i = 0usize;
        for rel in catalog.relations.values_mut() {
            for a in &mut rel.actors {
                if !live.contains(&a.worker) {
                    a.worker = workers[i % workers.len()];
                    i += 1;
                }
            }
        }
        let mut descs = Vec::new();
        let mut info = InflightActorInfo::default();
        for rel in catalog.relations.values() {
            for a in &rel.actors {
                info.actors.entry(a.worker).or_default().insert(a.actor_id);
                if rel.kind == RelationKind::Table {
                    info.sources.entry(a.worker).or_default().insert(a.actor_id);
                }
            }
            descs.push((catalog.actor_descs(rel), rel.actors.clone()));
        }
        (descs, info)
    };
    for (d, placement) in descs {
        inner.build_actors(d, &placement).await?;
    }
    for &w in &workers {
        inner
            .call(w, Request::WaitEpochCommit { epoch: mce })
            .await?;
    }

    let curr = last_epoch.max(mce).next(&inner.clock);
    let barrier = Barrier::new(
        EpochPair::new(curr, mce),
        BarrierKind::Initial,
        Some(Mutation::Add(AddMutation::default())),
    );
    event!(
        inner.log,
        "inject barrier",
        "prev={mce} curr={curr} kind=initial mutation=add command=recovery nodes={:?}",
        info.nodes().map(|w| w.0).collect::<Vec<_>>()
    );
    // Inject on every node first (an actor's upstreams may be elsewhere), then collect from each.
    let nodes: Vec<WorkerId> = info.nodes().collect();
    for &w in &nodes {
        let request = Request::InjectBarrier {
            barrier: barrier.clone(),
            to_send: info.sources.get(&w).cloned().unwrap_or_default(),
            to_collect: info.actors.get(&w).cloned().unwrap_or_default(),
        };
        inner.call(w, request).await?;
    }
    for &w in &nodes {
        match inner
            .call(w, Request::BarrierComplete { prev_epoch: mce })
            .await?
        {
            Response::BarrierComplete(_) => {}
            other => {
                return Err(DdlError::Rpc {
                    worker: w,
                    message: format!("unexpected answer {other:?}"),
                });
            }
        }
    }
    scheduled.mark_ready();
    event!(
        inner.log,
        "recovery",
        "done generation={generation} prev_epoch={mce} curr={curr} actors={}",
        info.actor_count()
    );
    Ok(RecoveredState {
        info,
        prev_epoch: curr,
    })
}
