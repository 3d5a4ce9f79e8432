//! The barrier manager's context: RPCs to compute nodes, commits into storage, post-collect work, and
//! recovery (reference §7.1).

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;

use epochlab_barrier::{
    Barrier, BarrierCompleteResponse, BarrierError, BarrierResult, Command, CommandContext,
    CreateMviewProgress, GlobalBarrierManagerContext, PausedReason, RecoveredState,
    ScheduledBarriers, TracingContext,
};
use epochlab_common::toggles::DropMode;
use epochlab_common::trace::{self, Cause, Park};
use epochlab_common::vspan;
use epochlab_common::{ActorId, Clock, Epoch, EventLog, WorkerId, event};
use epochlab_rpc::{Network, Request, Response};
use epochlab_storage::SyncResult;

use crate::catalog::JobState;
use crate::crash::CrashPoint;
use crate::meta::MetaInner;
use crate::recovery::Recovery;

pub struct MetaContext {
    inner: Arc<MetaInner>,
}

impl MetaContext {
    pub(crate) fn new(inner: Arc<MetaInner>) -> Self {
        Self { inner }
    }
}

/// An RPC's failure as the barrier protocol's error: the node's own answer (a [`epochlab_rpc::RemoteError`])
/// is the worker's error, anything else a failed call.
fn rpc_error(worker: WorkerId, rpc: &'static str, e: epochlab_rpc::RpcError) -> BarrierError {
    match e {
        epochlab_rpc::RpcError::Remote(remote) => BarrierError::Worker {
            worker,
            message: remote.message,
        },
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
    mut barrier: Barrier,
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
    // The node's work on this barrier (its actors, its sync) goes under this node's collection.
    barrier.tracing_context = TracingContext(Some(span.clone()));
    // Recovery may drop this future before it finishes: the guard then parks the span until the node is reset.
    let mut guard = SpanGuard {
        span,
        clock,
        worker,
        done: false,
    };
    let result = inject_and_collect_inner(network, worker, barrier, to_send, to_collect).await;
    match &result {
        Ok(_) => trace::end(&guard.span, &guard.clock),
        Err(e) => {
            trace::link(&guard.span, Cause::NodeKilled(worker));
            trace::fail(&guard.span, &guard.clock, &e.to_string());
            trace::mark(Cause::CollectFailed, &guard.span);
        }
    }
    guard.done = true;
    result
}

/// Parks a collection's span if it is dropped before it was ended: until its node is reset, the node's actors
/// may still work on the barrier.
struct SpanGuard {
    span: tracing::Span,
    clock: Clock,
    worker: WorkerId,
    done: bool,
}

impl Drop for SpanGuard {
    fn drop(&mut self) {
        if !self.done {
            trace::park_failed(
                self.span.clone(),
                &self.clock,
                "abandoned: recovery dropped the collection",
                Park::Worker(self.worker),
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
        self.inner.issued_epoch(barrier.epoch.curr);
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
        let (prev, nodes) = (ctx.prev_epoch, ctx.info.nodes().collect::<Vec<_>>());
        async move {
            // A crash point here dies in the barrier manager's task, which the kill aborts: it waits for that.
            let crash = match command {
                Command::CreateStreamingJob { .. } => Some(CrashPoint::CreateAfterFirstCommit),
                Command::DropStreamingJobs { .. } => Some(CrashPoint::DropAfterStop),
                _ => None,
            };
            if crash.is_some_and(|p| inner.crash_point(p)) {
                std::future::pending::<()>().await;
            }
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
                        if inner.crash_point(CrashPoint::CreateAfterFragmentsCreated) {
                            std::future::pending::<()>().await;
                        }
                    }
                } else {
                    inner.scheduler.force_checkpoint_in_next_barrier();
                }
            }
            if let Some(actors) = command.stopped_actors() {
                inner.drop_actors(actors).await;
                if inner
                    .config
                    .toggles
                    .get::<DropMode>()
                    .unregisters_in_post_collect()
                {
                    inner
                        .hummock
                        .unregister_tables(command.unregistered_table_ids(), "drop collected");
                }
            }
            match command {
                Command::Pause(PausedReason::ConfigChange) => {
                    inner.wait_for_config_change(prev, nodes).await?;
                }
                Command::RescheduleFragment {
                    job_id,
                    vnode_bitmaps,
                    ..
                } => inner.apply_reschedule(job_id, &vnode_bitmaps),
                Command::ReplaceTable { table_id, desc } => {
                    inner.apply_replace_table(table_id, &desc)
                }
                // RisingWave's `post_create_table_fragments`: the job's fragments leave `Initial`.
                Command::CreateStreamingJob { job_id, .. } => {
                    if let Some(r) = inner.catalog().relations.get_mut(&job_id) {
                        r.fragments_initial = false;
                    }
                }
                _ => {}
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
        let ctx = Recovery::new(self.inner.clone(), scheduled.clone());
        // A restarted meta's first barrier goes above every epoch an earlier meta issued.
        let last_epoch = last_epoch.max(self.inner.epoch_high_water());
        async move {
            let config = &ctx.inner.config;
            epochlab_recovery::recover(
                &ctx,
                &config.recovery,
                config.toggles.get::<DropMode>(),
                &reason,
                last_epoch,
            )
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
