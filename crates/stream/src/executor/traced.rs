//! The `commit executor state` span of a stateful executor: one per barrier it passes, under its actor's
//! `actor barrier` span for that epoch, with what the executor did in the epoch (rows emitted, cache lookups
//! and misses, dirty groups, state-table writes) read from its [`ExecutorStatsHandle`]. An executor that
//! fails ends a failed span with its error, so the epoch's trace says which executor of the actor failed.

use epochlab_barrier::Barrier;
use epochlab_common::{ActorId, Clock, TableId, trace, vspan};
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::stats::{ExecutorCounters, ExecutorStatsHandle, StatefulExecutorKind};
use super::{BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError};
use crate::task::barrier_worker::LocalBarrierManager;

/// Wraps a stateful executor with its spans.
pub struct TracedExecutor {
    pub inner: BoxedExecutor,
    pub tracer: ExecutorTracer,
}

/// Who the wrapped executor is, and where its spans go.
pub struct ExecutorTracer {
    pub actor_id: ActorId,
    pub table_id: TableId,
    pub kind: StatefulExecutorKind,
    pub stats: ExecutorStatsHandle,
    pub barrier_manager: LocalBarrierManager,
    pub clock: Clock,
}

/// What the executor did since its last barrier.
#[derive(Default)]
struct EpochWork {
    rows_out: u64,
    since: ExecutorCounters,
}

impl ExecutorTracer {
    /// The span of the epoch after `prev`: `barrier` is the one that ends it, or on a failure the last
    /// barrier passed (the epoch in progress began with it).
    fn span(&self, barrier: Option<&Barrier>, failed: bool, work: &EpochWork) -> tracing::Span {
        let manager = &self.barrier_manager;
        let prev = barrier.map(|b| if failed { b.epoch.curr } else { b.epoch.prev });
        let parent = prev
            .and_then(|p| manager.actor_span(p, self.actor_id))
            .or_else(|| barrier.map(|b| b.tracing_context.span()))
            .unwrap_or_else(tracing::Span::none);
        let now = self.stats.counters();
        let d = |a: u64, b: u64| a.saturating_sub(b) as i64;
        let (curr, prev) = match (barrier, failed) {
            (None, _) => (0, 0),
            (Some(b), false) => (b.epoch.curr.0, b.epoch.prev.0),
            (Some(b), true) => (0, b.epoch.curr.0),
        };
        vspan!(
            parent: &parent,
            "commit executor state",
            self.clock,
            executor = self.kind.as_str(),
            actor_id = self.actor_id.0 as i64,
            worker_id = manager.worker().0 as i64,
            table_id = self.table_id.0 as i64,
            epoch.curr = curr as i64,
            epoch.prev = prev as i64,
            rows_out = work.rows_out as i64,
            cache_lookups = d(now.cache_lookups, work.since.cache_lookups),
            cache_misses = d(now.cache_misses, work.since.cache_misses),
            cache_entries = now.cache_entries as i64,
            dirty_groups = now.dirty_groups as i64,
            state_inserts = d(now.state_inserts, work.since.state_inserts),
            state_deletes = d(now.state_deletes, work.since.state_deletes)
        )
    }
}

impl TracedExecutor {
    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(self: Box<Self>) {
        let TracedExecutor {
            inner,
            tracer: this,
        } = *self;
        let mut work = EpochWork {
            rows_out: 0,
            since: this.stats.counters(),
        };
        let mut last: Option<Barrier> = None;
        let mut input = inner.execute();
        while let Some(msg) = input.next().await {
            match msg {
                Ok(Message::Chunk(c)) => {
                    work.rows_out += c.cardinality() as u64;
                    yield Message::Chunk(c);
                }
                Ok(Message::Barrier(b)) => {
                    let span = this.span(Some(&b), false, &work);
                    trace::end(&span, &this.clock);
                    work = EpochWork {
                        rows_out: 0,
                        since: this.stats.counters(),
                    };
                    last = Some(b.clone());
                    yield Message::Barrier(b);
                }
                Ok(Message::Watermark(w)) => yield Message::Watermark(w),
                Err(e) => {
                    let span = this.span(last.as_ref(), true, &work);
                    trace::fail(&span, &this.clock, &e.to_string());
                    Err(e)?;
                }
            }
        }
    }
}

impl Execute for TracedExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        self.inner.identity()
    }
}
