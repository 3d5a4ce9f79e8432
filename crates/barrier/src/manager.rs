//! Meta's global barrier manager (RisingWave's `GlobalBarrierManager`, reference §6.1).
//!
//! One task. It injects a barrier when a command is scheduled or the interval ticks, as long as fewer than
//! `in_flight_limit` barriers are in flight. It sends each barrier to every compute node that has actors and
//! collects each node's completion. It completes the **prefix** of fully collected barriers, in epoch
//! order: commit (checkpoints), then the command's `post_collect`, then the caller's notifiers. While a
//! configuration change's Pause is in flight nothing else is injected. A worker's connection error first asks
//! the in-flight epochs, in order and up to the first that is not, whether each is still valid without the
//! worker ([`OnWorkerErr`], RisingWave #22384). Then, as every other error, it goes to the global recovery
//! path: as RisingWave's `clear_on_err`, that first completes the barriers fully collected at the front
//! (unless completing one is what failed), fails every other in-flight barrier and hands over to the
//! context's recovery.

use std::collections::{BTreeSet, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use epochlab_common::samples::Samples;
use epochlab_common::trace::{self, Park};
use epochlab_common::vspan;
use epochlab_common::{ActorId, Clock, Epoch, EpochPair, EventLog, Toggles, WorkerId, event};
use epochlab_storage::SyncResult;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use tracing::Instrument;

use crate::barrier::{Barrier, BarrierKind, TracingContext};
use crate::collect::{NodeToCollect, OnWorkerErr, first_invalid_after_worker_err};
use crate::command::{
    BarrierCompleteResponse, Command, CommandContext, CreateMviewProgress, InflightActorInfo,
};
use crate::error::{BarrierError, BarrierResult};
use crate::schedule::{Notifier, ScheduledBarriers};

#[derive(Clone, Debug)]
pub struct BarrierConfig {
    /// `barrier_interval_ms`: how often a plain barrier is injected.
    pub interval: Duration,
    /// Every n-th barrier is a checkpoint (commands force one).
    pub checkpoint_frequency: u32,
    /// RisingWave's `in_flight_barrier_nums`.
    pub in_flight_limit: usize,
}

impl Default for BarrierConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_millis(1000),
            checkpoint_frequency: 1,
            in_flight_limit: 10_000,
        }
    }
}

/// What recovery hands back: the actors now running and the epoch of the Initial barrier it collected.
#[derive(Clone, Debug)]
pub struct RecoveredState {
    pub info: InflightActorInfo,
    /// The `curr` of the collected Initial barrier: the next barrier's `prev`.
    pub prev_epoch: Epoch,
}

/// Everything the barrier manager needs from the rest of meta.
pub trait GlobalBarrierManagerContext: Send + Sync + 'static {
    /// Inject `barrier` on `worker` (sending it into `to_send`, collecting it from `to_collect`) and wait for
    /// that node to complete the barrier's `prev` epoch.
    fn inject_and_collect(
        &self,
        worker: WorkerId,
        barrier: Barrier,
        to_send: BTreeSet<ActorId>,
        to_collect: BTreeSet<ActorId>,
    ) -> impl Future<Output = BarrierResult<BarrierCompleteResponse>> + Send + 'static;

    /// Commit a checkpoint epoch with the nodes' synced data.
    fn commit_epoch(&self, ctx: &CommandContext, syncs: Vec<SyncResult>) -> BarrierResult<()>;

    /// The command's work after its barrier is collected (and committed), with the backfill progress the
    /// nodes reported for it.
    fn post_collect(
        &self,
        ctx: &CommandContext,
        progress: Vec<CreateMviewProgress>,
    ) -> impl Future<Output = BarrierResult<()>> + Send;

    /// Recover the cluster (retrying until it succeeds). `last_epoch` is the highest epoch issued so far: the
    /// Initial barrier's `curr` must be above it.
    fn recovery(
        &self,
        reason: String,
        last_epoch: Epoch,
        scheduled: &ScheduledBarriers,
    ) -> impl Future<Output = RecoveredState> + Send;

    fn log(&self) -> &EventLog;
    fn clock(&self) -> &Clock;
}

/// Counters for metrics and benchmarks.
#[derive(Default, Debug)]
pub struct BarrierManagerStats {
    pub injected: AtomicU64,
    pub completed: AtomicU64,
    pub checkpoints: AtomicU64,
    pub recoveries: AtomicU64,
    pub in_flight: AtomicU64,
    /// The most barriers ever in flight at once.
    pub max_in_flight: AtomicU64,
    /// The last epoch whose barrier completed (its `prev`), raw.
    pub last_completed_prev_epoch: AtomicU64,
    /// The `curr` of the last barrier injected, raw.
    pub last_injected_epoch: AtomicU64,
    /// Inject-to-fully-collected latency of each barrier, µs of (virtual) time.
    pub latencies: Samples,
    /// Duration of each recovery, µs of (virtual) time.
    pub recovery_durations: Samples,
    /// The oldest in-flight barriers: (prev epoch, workers still to collect from, injected at µs).
    waiting: std::sync::Mutex<Vec<(u64, Vec<u32>, u64)>>,
}

impl BarrierManagerStats {
    /// Inject-to-collected latencies of recent barriers, in microseconds of (virtual) time.
    pub fn latencies_us(&self) -> Vec<u64> {
        self.latencies.recent()
    }

    pub fn clear_latencies(&self) {
        self.latencies.clear();
    }

    /// The oldest in-flight barriers and the workers each still waits for, in one line.
    pub fn waiting_description(&self) -> String {
        let waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if waiting.is_empty() {
            return "no barrier in flight".into();
        }
        let parts: Vec<String> = waiting
            .iter()
            .map(|(prev, workers, at)| {
                format!(
                    "prev={prev} (injected at {:.3} s) waits for workers {workers:?}",
                    *at as f64 / 1e6
                )
            })
            .collect();
        parts.join("; ")
    }
}

struct EpochNode {
    /// The epoch's root span: from inject until the epoch completes or recovery abandons it.
    span: tracing::Span,
    ctx: Arc<CommandContext>,
    /// The nodes not collected from yet (RisingWave's `node_to_collect`).
    node_to_collect: NodeToCollect,
    responses: Vec<BarrierCompleteResponse>,
    notifiers: Vec<Notifier>,
    injected_at_us: u64,
}

type Collecting =
    FuturesUnordered<BoxFuture<'static, (Epoch, WorkerId, BarrierResult<BarrierCompleteResponse>)>>;

pub struct GlobalBarrierManager<C> {
    context: Arc<C>,
    scheduled: ScheduledBarriers,
    config: BarrierConfig,
    /// The engine's bug toggles; the barrier manager reads `on_worker_err`.
    toggles: Toggles,
    stats: Arc<BarrierManagerStats>,
    info: InflightActorInfo,
    prev_epoch: Epoch,
    num_uncheckpointed: u32,
    /// In-flight barriers in epoch order (RisingWave's `CheckpointControl`).
    in_flight: VecDeque<EpochNode>,
    collecting: Collecting,
    /// Completing a barrier failed: recovery completes nothing more (RisingWave's `CompletingTask::Err`).
    completing_failed: bool,
}

enum Event {
    Collected(Epoch, WorkerId, BarrierResult<BarrierCompleteResponse>),
    Scheduled(crate::schedule::Scheduled),
    Tick,
}

impl<C: GlobalBarrierManagerContext> GlobalBarrierManager<C> {
    pub fn new(
        context: Arc<C>,
        scheduled: ScheduledBarriers,
        config: BarrierConfig,
        toggles: Toggles,
    ) -> Self {
        assert!(config.checkpoint_frequency >= 1 && config.in_flight_limit >= 1);
        Self {
            context,
            scheduled,
            config,
            toggles,
            stats: Arc::default(),
            info: InflightActorInfo::default(),
            prev_epoch: Epoch::INVALID,
            num_uncheckpointed: 0,
            in_flight: VecDeque::new(),
            collecting: FuturesUnordered::new(),
            completing_failed: false,
        }
    }

    pub fn stats(&self) -> Arc<BarrierManagerStats> {
        self.stats.clone()
    }

    /// Count into `stats`, which its owner keeps across managers (a restarted meta's manager goes on
    /// counting where the first one stopped).
    pub fn with_stats(mut self, stats: Arc<BarrierManagerStats>) -> Self {
        self.stats = stats;
        self
    }

    /// Run forever: bootstrap recovery, then the injection and collection loop.
    pub async fn run(mut self) {
        self.recover("bootstrap".to_string()).await;
        let mut interval = tokio::time::interval(self.config.interval);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval.tick().await;
        loop {
            if let Some(why) = self.scheduled.take_recovery_request() {
                self.failure_recovery(BarrierError::RecoveryRequested(why))
                    .await;
                continue;
            }
            let can_inject = self.can_inject();
            let event = tokio::select! {
                biased;
                Some((prev, worker, result)) = self.collecting.next() => Event::Collected(prev, worker, result),
                s = self.scheduled.wait_one(), if can_inject => Event::Scheduled(s),
                _ = interval.tick(), if can_inject => Event::Tick,
            };
            let result = match event {
                Event::Collected(prev, worker, Ok(resp)) => {
                    self.handle_collected(prev, worker, resp).await
                }
                Event::Collected(_, worker, Err(err)) if err.is_worker_lost() => {
                    self.on_worker_err(worker, err).await
                }
                Event::Collected(_, _, Err(err)) => Err(err),
                Event::Scheduled(s) => self.inject(Some(s)).await,
                Event::Tick => self.inject(None).await,
            };
            if let Err(err) = result {
                self.failure_recovery(err).await;
            }
        }
    }

    /// RisingWave's `CheckpointControl::can_inject_barrier`: fewer barriers in flight than the limit, and no
    /// configuration change's Pause among them (it must complete, its post-collect included, first).
    fn can_inject(&self) -> bool {
        self.in_flight.len() < self.config.in_flight_limit
            && !self
                .in_flight
                .iter()
                .any(|n| n.ctx.command.should_pause_inject_barrier())
    }

    async fn inject(&mut self, scheduled: Option<crate::schedule::Scheduled>) -> BarrierResult<()> {
        let (command, notifier, wants_checkpoint, caller) = match scheduled {
            Some(s) => (s.command, Some(s.notifier), s.checkpoint, Some(s.caller)),
            None => (Command::Plain(None), None, false, None),
        };
        let checkpoint = wants_checkpoint
            || command.need_checkpoint()
            || self.num_uncheckpointed + 1 >= self.config.checkpoint_frequency
            || self.scheduled.take_force_checkpoint();
        let kind = if checkpoint {
            BarrierKind::Checkpoint
        } else {
            BarrierKind::Barrier
        };
        let info = command.pre_apply(&self.info);
        let prev = self.prev_epoch;
        let curr = prev.next(self.context.clock());
        let mut barrier = Barrier::new(EpochPair::new(curr, prev), kind, command.to_mutation());
        let nodes: BTreeSet<WorkerId> = info.nodes().collect();
        let span = self.epoch_span(&barrier, &command, &nodes, caller);
        barrier.tracing_context = TracingContext(Some(span.clone()));
        for &worker in &nodes {
            let to_collect = info.actors.get(&worker).cloned().unwrap_or_default();
            let to_send = info.sources.get(&worker).cloned().unwrap_or_default();
            let fut = self
                .context
                .inject_and_collect(worker, barrier.clone(), to_send, to_collect);
            self.collecting
                .push(async move { (prev, worker, fut.await) }.boxed());
        }
        let node_to_collect = nodes
            .iter()
            .map(|w| (*w, info.actors.get(w).is_none_or(BTreeSet::is_empty)))
            .collect();
        let mut notifiers = Vec::new();
        if let Some(mut n) = notifier {
            n.notify_injected();
            notifiers.push(n);
        }
        self.info = command.post_apply(&info);
        self.in_flight.push_back(EpochNode {
            span,
            ctx: Arc::new(CommandContext {
                prev_epoch: prev,
                curr_epoch: curr,
                kind,
                command,
                info,
            }),
            node_to_collect,
            responses: Vec::new(),
            notifiers,
            injected_at_us: self.context.clock().elapsed_us(),
        });
        self.prev_epoch = curr;
        self.count_injected(curr, checkpoint);
        let result = self.complete_prefix().await;
        self.publish_waiting();
        result
    }

    /// The epoch's root span (with its `inject barrier` child, following the caller's span), and the
    /// `inject barrier` event.
    fn epoch_span(
        &self,
        barrier: &Barrier,
        command: &Command,
        nodes: &BTreeSet<WorkerId>,
        caller: Option<tracing::Span>,
    ) -> tracing::Span {
        let (curr, prev, kind) = (barrier.epoch.curr, barrier.epoch.prev, barrier.kind);
        let clock = self.context.clock().clone();
        let span = vspan!(
            parent: trace::root(),
            "epoch",
            clock,
            epoch.curr = curr.0 as i64,
            epoch.prev = prev.0 as i64,
            barrier.kind = kind.as_str(),
            mutation = barrier.mutation_name(),
            command = command.name()
        );
        {
            let inject = vspan!(
                parent: &span,
                "inject barrier",
                clock,
                epoch.curr = curr.0 as i64,
                epoch.prev = prev.0 as i64,
                barrier.kind = kind.as_str(),
                mutation = barrier.mutation_name(),
                nodes = nodes.len() as i64
            );
            trace::end(&inject, &clock);
        }
        if let Some(caller) = caller.filter(|c| !c.is_disabled()) {
            span.follows_from(&caller);
        }
        let entered = span.enter();
        event!(
            self.context.log(),
            "inject barrier",
            "prev={prev} curr={curr} kind={} mutation={} command={} nodes={:?}",
            kind.as_str(),
            barrier.mutation_name(),
            command.name(),
            nodes.iter().map(|w| w.0).collect::<Vec<_>>()
        );
        drop(entered);
        span
    }

    /// The stats after an injection of `curr`.
    fn count_injected(&mut self, curr: Epoch, checkpoint: bool) {
        self.stats
            .last_injected_epoch
            .store(curr.0, Ordering::Relaxed);
        self.num_uncheckpointed = if checkpoint {
            0
        } else {
            self.num_uncheckpointed + 1
        };
        self.stats.injected.fetch_add(1, Ordering::Relaxed);
        self.stats
            .in_flight
            .store(self.in_flight.len() as u64, Ordering::Relaxed);
        self.stats
            .max_in_flight
            .fetch_max(self.in_flight.len() as u64, Ordering::Relaxed);
    }

    /// Publish the oldest in-flight barriers to the stats (for a stuck run's report).
    fn publish_waiting(&self) {
        let oldest = self
            .in_flight
            .iter()
            .take(3)
            .map(|n| {
                let workers = n.node_to_collect.keys().map(|w| w.0).collect();
                (n.ctx.prev_epoch.0, workers, n.injected_at_us)
            })
            .collect();
        *self.stats.waiting.lock().unwrap_or_else(|e| e.into_inner()) = oldest;
    }

    async fn handle_collected(
        &mut self,
        prev: Epoch,
        worker: WorkerId,
        resp: BarrierCompleteResponse,
    ) -> BarrierResult<()> {
        let node = self
            .in_flight
            .iter_mut()
            .find(|n| n.ctx.prev_epoch == prev)
            .expect("collected a barrier that is not in flight");
        assert!(
            node.node_to_collect.remove(&worker).is_some(),
            "worker {worker} collected epoch {prev} twice"
        );
        node.span.in_scope(|| {
            event!(
                self.context.log(),
                "collect barrier",
                "prev={prev} worker={worker}"
            )
        });
        node.responses.push(resp);
        if node.node_to_collect.is_empty() {
            let now = self.context.clock().elapsed_us();
            self.stats.latencies.record(now - node.injected_at_us);
        }
        let result = self.complete_prefix().await;
        self.publish_waiting();
        result
    }

    /// A worker's connection failed (RisingWave's control-stream error). The in-flight epochs are asked in
    /// epoch order whether each is still valid without the worker, which may update what it waits for
    /// ([`OnWorkerErr`], its toggle); the walk stops at the first that is not (RisingWave's
    /// `DatabaseCheckpointControl::is_valid_after_worker_err`), so the epochs after it are not asked. If every
    /// epoch is still valid, what is fully collected now completes as after any collection; if one is not, the
    /// error goes to [`Self::failure_recovery`], which first completes the collected prefix (RisingWave's
    /// `clear_on_err`) and then recovers.
    async fn on_worker_err(&mut self, worker: WorkerId, err: BarrierError) -> BarrierResult<()> {
        let rule = self.toggles.get::<OnWorkerErr>();
        let epochs = self.in_flight.iter_mut().map(|n| &mut n.node_to_collect);
        let invalid_at = first_invalid_after_worker_err(epochs, worker, rule);
        event!(
            self.context.log(),
            "worker error",
            "worker={worker} valid={} invalid_at={:?} waiting={:?}",
            invalid_at.is_none(),
            invalid_at.map(|i| self.in_flight[i].ctx.prev_epoch.0),
            self.in_flight
                .iter()
                .map(|n| (n.ctx.prev_epoch.0, n.node_to_collect.len()))
                .collect::<Vec<_>>()
        );
        if invalid_at.is_some() {
            return Err(err);
        }
        self.complete_prefix().await?;
        self.publish_waiting();
        Ok(())
    }

    /// Complete every fully collected barrier at the front, in epoch order.
    async fn complete_prefix(&mut self) -> BarrierResult<()> {
        while self
            .in_flight
            .front()
            .is_some_and(|n| n.node_to_collect.is_empty())
        {
            let mut node = self.in_flight.pop_front().unwrap();
            self.stats
                .in_flight
                .store(self.in_flight.len() as u64, Ordering::Relaxed);
            if let Err(e) = self.complete_barrier(&mut node).await {
                // Recovery must not complete more (RisingWave's `CompletingTask::Err`).
                self.completing_failed = true;
                // This barrier failed, too: its caller hears of it with the others.
                trace::fail(&node.span, self.context.clock(), &e.to_string());
                for n in &mut node.notifiers {
                    n.notify_collection_failed(e.clone());
                }
                return Err(e);
            }
            trace::end(&node.span, self.context.clock());
        }
        Ok(())
    }

    async fn complete_barrier(&mut self, node: &mut EpochNode) -> BarrierResult<()> {
        let ctx = node.ctx.clone();
        let syncs: Vec<SyncResult> = node
            .responses
            .iter_mut()
            .filter_map(|r| r.synced.take())
            .collect();
        match ctx.kind {
            BarrierKind::Initial => assert!(syncs.is_empty(), "an Initial barrier syncs nothing"),
            BarrierKind::Barrier => {
                assert!(syncs.is_empty(), "a non-checkpoint barrier syncs nothing")
            }
            BarrierKind::Checkpoint => {
                let clock = self.context.clock();
                let span = vspan!(parent: &node.span, "commit epoch", clock, epoch = ctx.prev_epoch.0 as i64);
                if let Err(e) = span.in_scope(|| self.context.commit_epoch(&ctx, syncs)) {
                    trace::fail(&span, clock, &e.to_string());
                    return Err(e);
                }
                trace::end(&span, clock);
                self.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
            }
        }
        let progress = node
            .responses
            .iter_mut()
            .flat_map(|r| std::mem::take(&mut r.create_progress))
            .collect();
        self.context
            .post_collect(&ctx, progress)
            .instrument(node.span.clone())
            .await?;
        for n in &mut node.notifiers {
            n.notify_collected();
            n.notify_finished();
        }
        self.stats.completed.fetch_add(1, Ordering::Relaxed);
        self.stats
            .last_completed_prev_epoch
            .store(ctx.prev_epoch.0, Ordering::Relaxed);
        Ok(())
    }

    /// RisingWave's `clear_on_err`, then recovery: unless completing a barrier is what failed, the barriers
    /// already fully collected at the front complete first (committed, in epoch order); every other in-flight
    /// barrier is abandoned.
    async fn failure_recovery(&mut self, err: BarrierError) {
        if !std::mem::take(&mut self.completing_failed)
            && self
                .in_flight
                .front()
                .is_some_and(|n| n.node_to_collect.is_empty())
        {
            event!(
                self.context.log(),
                "clear on err",
                "complete the collected barriers before recovery: error={err}"
            );
            if let Err(e) = self.complete_prefix().await {
                tracing::error!(%e, "failed to complete barrier during recovery");
                self.completing_failed = false;
            }
        }
        event!(
            self.context.log(),
            "barrier failed",
            "error={err} in_flight={}",
            self.in_flight.len()
        );
        tracing::warn!(%err, "barrier failed; starting recovery");
        self.collecting = FuturesUnordered::new();
        for mut node in self.in_flight.drain(..) {
            // Zombie actors may still work on the epoch until recovery resets their nodes: it ends then.
            let why = format!("abandoned by recovery: {err}");
            trace::park_failed(
                node.span.clone(),
                self.context.clock(),
                &why,
                Park::Recovery,
            );
            for n in &mut node.notifiers {
                n.notify_collection_failed(BarrierError::CollectionFailed(err.to_string()));
            }
        }
        self.stats.in_flight.store(0, Ordering::Relaxed);
        self.publish_waiting();
        self.stats.recoveries.fetch_add(1, Ordering::Relaxed);
        let started = self.context.clock().elapsed_us();
        self.recover(err.to_string()).await;
        let took = self.context.clock().elapsed_us() - started;
        self.stats.recovery_durations.record(took);
    }

    async fn recover(&mut self, reason: String) {
        let state = self
            .context
            .recovery(reason, self.prev_epoch, &self.scheduled)
            .await;
        assert!(
            state.prev_epoch > self.prev_epoch,
            "recovery must move the epoch forward"
        );
        self.info = state.info;
        self.prev_epoch = state.prev_epoch;
        self.num_uncheckpointed = 0;
    }
}
