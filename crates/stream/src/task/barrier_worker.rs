//! The local barrier manager of one compute node (RisingWave's `LocalBarrierWorker`, reference §2.5): one
//! event loop that owns the node's actors and the per-epoch collection state.
//!
//! Per `prev` epoch: `Stashed` (actors collected before meta's inject arrived, the race of RisingWave #806),
//! `Issued` (waiting for `remaining` actors), `AllCollected`, `Syncing`, `Completed`. Fully collected epochs
//! are sealed in epoch order, and checkpoints are synced; meta's `barrier_complete` waits for `Completed`.

use std::collections::{BTreeMap, BTreeSet};

use epochlab_barrier::{Barrier, BarrierCompleteResponse, BarrierKind, CreateMviewProgress};
use epochlab_common::plan::StreamActorDesc;
use epochlab_common::{ActorId, Clock, Epoch, EpochPair, WorkerId, event, trace, vspan};
use epochlab_storage::{StorageResult, SyncResult};
use futures::FutureExt;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesOrdered;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use super::build::{ActorFailure, BuildEnv, build_actor, executor_chain};
use super::error::{LocalBarrierError, LocalBarrierResult};
use crate::executor::StreamExecutorError;

/// Events the worker may have queued, at most.
pub const EVENT_QUEUE: usize = 4096;

/// How long a reset waits for its Stop barrier (RisingWave #5244's `stop_all_actors`) before it aborts the
/// actors anyway. RisingWave's waited without a bound; epochlab's bound (an assumption) keeps a stop that
/// cannot complete (an upstream on a dead node) from holding recovery up for good.
pub const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

type Reply<T> = oneshot::Sender<LocalBarrierResult<T>>;

pub(crate) enum LocalEvent {
    Inject {
        barrier: Barrier,
        to_send: BTreeSet<ActorId>,
        to_collect: BTreeSet<ActorId>,
        reply: Reply<()>,
    },
    Collect {
        actor: ActorId,
        epoch: EpochPair,
        generation: u64,
    },
    ActorFailure {
        actor: ActorId,
        error: StreamExecutorError,
        generation: u64,
    },
    AwaitEpochCompleted {
        prev: Epoch,
        reply: Reply<BarrierCompleteResponse>,
    },
    Build {
        actors: Vec<StreamActorDesc>,
        generation: u64,
        reply: Reply<()>,
    },
    Drop {
        actors: Vec<ActorId>,
        reply: Reply<()>,
    },
    Reset {
        generation: u64,
        prev_epoch: Epoch,
        reply: Reply<()>,
    },
    /// Send a Stop barrier to every actor that takes barriers from the worker and collect it from every
    /// actor; the reply says whether it went out (a node without actors has nothing to stop).
    StopAll {
        barrier: Barrier,
        reply: Reply<bool>,
    },
    ReportProgress {
        curr_epoch: Epoch,
        progress: CreateMviewProgress,
        generation: u64,
    },
    ListActors {
        reply: Reply<Vec<ActorId>>,
    },
    Describe {
        reply: Reply<String>,
    },
}

/// The handle actors and the node's service use to reach the worker.
///
/// An actor's handle carries the generation it was built in, and so does every event it sends (collect,
/// failure, progress): the worker drops the events of actors from before its last reset. An aborted actor
/// may have queued one behind the reset, and a stale collect would stash an epoch no inject ever completes,
/// blocking every later epoch of the node; a stale failure would fail the new actor of the same id. RisingWave
/// gets the same from a reset that waits for its actors to stop and then replaces the worker's state and
/// channels (`LocalBarrierWorker::reset`).
#[derive(Clone)]
pub struct LocalBarrierManager {
    worker: WorkerId,
    generation: u64,
    tx: mpsc::Sender<LocalEvent>,
    spans: ActorSpans,
}

/// Each actor's `actor barrier` span per epoch on this node: from meta's inject reaching the node until the
/// actor collects the barrier (or fails, or the node is reset). A child of the node's `collect barrier`
/// span; the actor's own work on the barrier (e.g. `persist backfill state`) goes under it. Empty when no
/// one records spans. At most one entry per (injected epoch, actor to collect), so bounded by meta's
/// in-flight limit.
#[derive(Clone, Default)]
struct ActorSpans(std::sync::Arc<std::sync::Mutex<BTreeMap<(Epoch, ActorId), tracing::Span>>>);

impl ActorSpans {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(Epoch, ActorId), tracing::Span>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Open the spans of `actors` for the barrier after `prev` (under `parent`).
    fn open(
        &self,
        clock: &Clock,
        parent: &tracing::Span,
        worker: WorkerId,
        barrier: &Barrier,
        actors: &BTreeSet<ActorId>,
    ) {
        if parent.is_disabled() {
            return;
        }
        let mut spans = self.lock();
        for &actor in actors {
            let span = vspan!(parent: parent, "actor barrier", clock, actor_id = actor.0 as i64,
                worker_id = worker.0 as i64, epoch.curr = barrier.epoch.curr.0 as i64,
                epoch.prev = barrier.epoch.prev.0 as i64);
            spans.insert((barrier.epoch.prev, actor), span);
        }
    }

    fn get(&self, prev: Epoch, actor: ActorId) -> Option<tracing::Span> {
        self.lock().get(&(prev, actor)).cloned()
    }

    /// The oldest open span of `actor`, if any.
    fn oldest_of(&self, actor: ActorId) -> Option<tracing::Span> {
        let spans = self.lock();
        spans
            .iter()
            .find(|((_, a), _)| *a == actor)
            .map(|(_, s)| s.clone())
    }

    /// End the span of `actor` at the barrier after `prev` (collected).
    fn close(&self, clock: &Clock, prev: Epoch, actor: ActorId) {
        let span = self.lock().remove(&(prev, actor));
        if let Some(span) = span {
            trace::end(&span, clock);
        }
    }

    /// Fail the spans of the actors `which` selects with `message`.
    fn fail(&self, clock: &Clock, which: impl Fn(ActorId) -> bool, message: &str) {
        let failed: Vec<tracing::Span> = {
            let mut spans = self.lock();
            let keys: Vec<(Epoch, ActorId)> =
                spans.keys().filter(|(_, a)| which(*a)).copied().collect();
            keys.into_iter().filter_map(|k| spans.remove(&k)).collect()
        };
        for span in failed {
            trace::fail(&span, clock, message);
        }
    }
}

#[cfg(test)]
impl LocalEvent {
    pub(crate) fn is_progress_report(&self) -> bool {
        matches!(self, LocalEvent::ReportProgress { .. })
    }
}

impl LocalBarrierManager {
    /// A handle whose events go to the returned receiver, for executor tests without a node.
    #[cfg(test)]
    pub(crate) fn for_test(worker: WorkerId) -> (Self, mpsc::Receiver<LocalEvent>) {
        let (tx, rx) = mpsc::channel(64);
        let spans = ActorSpans::default();
        let generation = 0;
        (
            Self {
                worker,
                generation,
                tx,
                spans,
            },
            rx,
        )
    }

    /// The handle of the actors built in `generation`.
    pub(crate) fn for_generation(&self, generation: u64) -> Self {
        Self {
            generation,
            ..self.clone()
        }
    }

    pub fn worker(&self) -> WorkerId {
        self.worker
    }

    /// The `actor barrier` span of `actor` at the barrier after `prev`, if spans are recorded and it is open:
    /// the parent of the actor's own work on that barrier.
    pub fn actor_span(&self, prev: Epoch, actor: ActorId) -> Option<tracing::Span> {
        self.spans.get(prev, actor)
    }

    async fn send(&self, ev: LocalEvent) {
        // The worker outlives every actor of its node; a failed send means the node is being torn down.
        let _ = self.tx.send(ev).await;
    }

    async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> LocalEvent) -> LocalBarrierResult<T> {
        let (reply, rx) = oneshot::channel();
        self.send(make(reply)).await;
        rx.await.map_err(|_| LocalBarrierError::WorkerGone)?
    }

    /// An actor has processed `barrier`.
    pub async fn collect(&self, actor: ActorId, barrier: &Barrier) {
        self.send(LocalEvent::Collect {
            actor,
            epoch: barrier.epoch,
            generation: self.generation,
        })
        .await;
    }

    pub async fn notify_failure(&self, actor: ActorId, error: StreamExecutorError) {
        self.send(LocalEvent::ActorFailure {
            actor,
            error,
            generation: self.generation,
        })
        .await;
    }

    /// A backfill actor's progress for the barrier of `curr_epoch`.
    pub async fn report_progress(&self, curr_epoch: Epoch, progress: CreateMviewProgress) {
        self.send(LocalEvent::ReportProgress {
            curr_epoch,
            progress,
            generation: self.generation,
        })
        .await;
    }

    pub async fn inject(
        &self,
        barrier: Barrier,
        to_send: BTreeSet<ActorId>,
        to_collect: BTreeSet<ActorId>,
    ) -> LocalBarrierResult<()> {
        self.ask(|reply| LocalEvent::Inject {
            barrier,
            to_send,
            to_collect,
            reply,
        })
        .await
    }

    pub async fn await_epoch_completed(
        &self,
        prev: Epoch,
    ) -> LocalBarrierResult<BarrierCompleteResponse> {
        self.ask(|reply| LocalEvent::AwaitEpochCompleted { prev, reply })
            .await
    }

    pub async fn build(
        &self,
        actors: Vec<StreamActorDesc>,
        generation: u64,
    ) -> LocalBarrierResult<()> {
        self.ask(|reply| LocalEvent::Build {
            actors,
            generation,
            reply,
        })
        .await
    }

    pub async fn drop_actors(&self, actors: Vec<ActorId>) -> LocalBarrierResult<()> {
        self.ask(|reply| LocalEvent::Drop { actors, reply }).await
    }

    /// The actors running on this node.
    pub async fn actor_ids(&self) -> LocalBarrierResult<Vec<ActorId>> {
        self.ask(|reply| LocalEvent::ListActors { reply }).await
    }

    /// The oldest epochs not yet completed on this node and what each waits for, in one line (for stuck
    /// reports).
    pub async fn describe(&self) -> LocalBarrierResult<String> {
        self.ask(|reply| LocalEvent::Describe { reply }).await
    }

    /// RisingWave's `stop_all_actors` before #5444 (RisingWave #5244): send `stop` (a Stop barrier of every
    /// actor, with the epochs meta gave it) to this node's actors, and wait until they collected it, one
    /// failed, or [`STOP_WAIT`] passed (an actor whose upstream is on a dead node never gets it). The reset
    /// that follows aborts what is left. Whatever goes wrong is the reset's to clean up: nothing is returned.
    pub async fn stop_all_actors(&self, stop: Barrier) {
        let prev = stop.epoch.prev;
        let sent = self
            .ask(|reply| LocalEvent::StopAll {
                barrier: stop,
                reply,
            })
            .await;
        if let Ok(true) = sent {
            let _ = tokio::time::timeout(STOP_WAIT, self.await_epoch_completed(prev)).await;
        }
    }

    pub async fn reset(&self, generation: u64, prev_epoch: Epoch) -> LocalBarrierResult<()> {
        self.ask(|reply| LocalEvent::Reset {
            generation,
            prev_epoch,
            reply,
        })
        .await
    }
}

enum EpochState {
    Stashed(BTreeSet<ActorId>),
    Issued {
        barrier: Barrier,
        remaining: BTreeSet<ActorId>,
    },
    AllCollected(Barrier),
    Syncing,
    Completed(LocalBarrierResult<BarrierCompleteResponse>),
}

struct ActorEntry {
    abort: AbortHandle,
    barrier_tx: Option<mpsc::Sender<Barrier>>,
    /// Where the actor sits and what it runs, for a stall report.
    job: epochlab_common::TableId,
    fragment: epochlab_common::FragmentId,
    vnodes: usize,
    chain: String,
    /// The `prev` epoch of the last barrier it collected, and when (µs of virtual time); `None` before its
    /// first.
    last_collected: Option<(Epoch, u64)>,
}

impl ActorEntry {
    /// One line of a stall report: where the actor is, what it runs, the last barrier it passed.
    fn describe(&self, id: ActorId) -> String {
        let last = self.last_collected.map_or_else(
            || "none since it was built".to_string(),
            |(e, at_us)| format!("prev={e} at {:.3} s", at_us as f64 / 1e6),
        );
        format!(
            "actor {id} (job {}, fragment {}, {} vnodes: {}) last collected {last}",
            self.job, self.fragment, self.vnodes, self.chain
        )
    }
}

pub(crate) struct LocalBarrierWorker {
    env: BuildEnv,
    handle: LocalBarrierManager,
    /// The generation of the node's last reset (or start): events of actors built before it are stale.
    generation: u64,
    actors: BTreeMap<ActorId, ActorEntry>,
    /// Actors that failed since the last reset, with their errors (an inject that must collect from one
    /// fails).
    failed: BTreeMap<ActorId, StreamExecutorError>,
    epochs: BTreeMap<Epoch, EpochState>,
    waiters: BTreeMap<Epoch, Vec<Reply<BarrierCompleteResponse>>>,
    progress: BTreeMap<Epoch, Vec<CreateMviewProgress>>,
    syncing: FuturesOrdered<BoxFuture<'static, (Epoch, Epoch, StorageResult<SyncResult>)>>,
}

/// A node that stops (killed, or the run ends) ends its actors' open spans: handles to it may outlive it.
impl Drop for LocalBarrierWorker {
    fn drop(&mut self) {
        self.handle
            .spans
            .fail(&self.env.clock, |_| true, "the node stopped");
    }
}

impl LocalBarrierWorker {
    pub(crate) fn new(env: BuildEnv, generation: u64) -> (Self, mpsc::Receiver<LocalEvent>) {
        let (tx, rx) = mpsc::channel(EVENT_QUEUE);
        let handle = LocalBarrierManager {
            worker: env.worker,
            generation,
            tx,
            spans: ActorSpans::default(),
        };
        let this = Self {
            env,
            handle,
            generation,
            actors: BTreeMap::new(),
            failed: BTreeMap::new(),
            epochs: BTreeMap::new(),
            waiters: BTreeMap::new(),
            progress: BTreeMap::new(),
            syncing: FuturesOrdered::new(),
        };
        (this, rx)
    }

    pub(crate) fn handle(&self) -> LocalBarrierManager {
        self.handle.clone()
    }

    pub(crate) async fn run(mut self, mut rx: mpsc::Receiver<LocalEvent>) {
        loop {
            tokio::select! {
                biased;
                Some((prev, curr, result)) = self.syncing.next() => self.on_synced(prev, curr, result),
                ev = rx.recv() => match ev {
                    Some(ev) => self.handle_event(ev).await,
                    None => return,
                },
            }
        }
    }

    /// Whether an event an actor of `generation` sent predates the last reset (and is dropped).
    fn is_stale(&self, generation: u64) -> bool {
        let stale = generation < self.generation;
        if stale {
            let (worker, current) = (self.env.worker.0, self.generation);
            tracing::debug!(
                worker,
                generation,
                current,
                "dropped an event of an actor from before the reset"
            );
        }
        stale
    }

    async fn handle_event(&mut self, ev: LocalEvent) {
        match ev {
            LocalEvent::Inject {
                barrier,
                to_send,
                to_collect,
                reply,
            } => {
                let r = self.inject(barrier, to_send, to_collect);
                let _ = reply.send(r);
            }
            LocalEvent::Collect {
                actor,
                epoch,
                generation,
            } => {
                if !self.is_stale(generation) {
                    self.collect(actor, epoch)
                }
            }
            LocalEvent::ActorFailure {
                actor,
                error,
                generation,
            } => {
                if !self.is_stale(generation) {
                    self.on_actor_failure(actor, error)
                }
            }
            LocalEvent::AwaitEpochCompleted { prev, reply } => {
                self.await_epoch_completed(prev, reply)
            }
            LocalEvent::Build {
                actors,
                generation,
                reply,
            } => {
                let r = self.build(actors, generation);
                let _ = reply.send(r);
            }
            LocalEvent::Drop { actors, reply } => {
                let dropped: BTreeSet<ActorId> = actors.iter().copied().collect();
                let clock = &self.env.clock;
                self.handle
                    .spans
                    .fail(clock, |a| dropped.contains(&a), "actor dropped");
                for a in actors {
                    if let Some(e) = self.actors.remove(&a) {
                        e.abort.abort();
                    }
                    self.env.active.remove(a);
                    self.failed.remove(&a);
                    self.env.dml.remove(a);
                }
                let _ = reply.send(Ok(()));
            }
            LocalEvent::Reset {
                generation,
                prev_epoch,
                reply,
            } => {
                self.reset(generation, prev_epoch);
                let _ = reply.send(Ok(()));
            }
            LocalEvent::StopAll { barrier, reply } => {
                let _ = reply.send(self.stop_all(barrier));
            }
            LocalEvent::ReportProgress {
                curr_epoch,
                progress,
                generation,
            } => {
                if !self.is_stale(generation) {
                    self.progress.entry(curr_epoch).or_default().push(progress);
                }
            }
            LocalEvent::ListActors { reply } => {
                let _ = reply.send(Ok(self.actors.keys().copied().collect()));
            }
            LocalEvent::Describe { reply } => {
                let _ = reply.send(Ok(self.describe()));
            }
        }
    }

    /// Meta's `barrier_complete(prev)` (RisingWave's `pop_completed_epoch`): the epoch's result if it is
    /// completed, else wait for it; an error at once if this node has no such epoch. Meta asks only after the
    /// node acknowledged the inject, and requests to a node arrive in order, so an unknown epoch was cleared by
    /// a reset, or the request was meant for an earlier run of this node (killed and restarted while the
    /// request was on its way). Waiting for it would wait forever: the barrier manager would never collect
    /// the epoch, nor recover.
    fn await_epoch_completed(&mut self, prev: Epoch, reply: Reply<BarrierCompleteResponse>) {
        match self.epochs.get(&prev) {
            None => {
                let worker = self.env.worker;
                event!(
                    self.env.log,
                    "await unknown epoch",
                    "worker={worker} prev={prev}"
                );
                let _ = reply.send(Err(LocalBarrierError::EpochNotFound { prev, worker }));
            }
            Some(EpochState::Completed(_)) => {
                let Some(EpochState::Completed(r)) = self.epochs.remove(&prev) else {
                    unreachable!()
                };
                let _ = reply.send(r);
            }
            Some(_) => self.waiters.entry(prev).or_default().push(reply),
        }
    }

    fn describe(&self) -> String {
        let parts: Vec<String> = self
            .epochs
            .iter()
            .take(2)
            .map(|(prev, state)| match state {
                EpochState::Stashed(a) => format!("prev={prev} stashed, collected {a:?}"),
                EpochState::Issued { remaining, .. } => {
                    format!("prev={prev} waits for actors {remaining:?}")
                }
                EpochState::AllCollected(_) => format!("prev={prev} collected, not yet synced"),
                EpochState::Syncing => format!("prev={prev} syncing"),
                EpochState::Completed(_) => format!("prev={prev} completed"),
            })
            .collect();
        // Each actor the shown epochs wait for, once: where it is, its executors, the last barrier it passed.
        let waiting: BTreeSet<ActorId> = self
            .epochs
            .values()
            .take(2)
            .filter_map(|state| match state {
                EpochState::Issued { remaining, .. } => Some(remaining.iter().copied()),
                _ => None,
            })
            .flatten()
            .collect();
        let holders: Vec<String> = waiting
            .iter()
            .map(|a| match self.actors.get(a) {
                Some(entry) => entry.describe(*a),
                None => format!("actor {a} (not on this node)"),
            })
            .collect();
        let mut out = format!(
            "{} actors, {} failed; {}",
            self.actors.len(),
            self.failed.len(),
            if parts.is_empty() {
                "no epoch pending".to_string()
            } else {
                parts.join("; ")
            }
        );
        if !holders.is_empty() {
            out.push_str("; waiting actors: ");
            out.push_str(&holders.join("; "));
        }
        out
    }

    fn build(&mut self, descs: Vec<StreamActorDesc>, generation: u64) -> LocalBarrierResult<()> {
        // Meta read the generation before a reset of this node overtook the request: these actors would
        // belong to the run the reset ended.
        if self.is_stale(generation) {
            return Err(LocalBarrierError::StaleGeneration {
                worker: self.env.worker,
                generation,
                current: self.generation,
            });
        }
        let handle = self.handle.for_generation(generation);
        for desc in descs {
            let id = desc.actor_id;
            if self.actors.contains_key(&id) {
                return Err(LocalBarrierError::ActorExists {
                    actor: id,
                    worker: self.env.worker,
                });
            }
            let (actor, barrier_tx) = build_actor(&self.env, &desc, generation, handle.clone())?;
            let active = self.env.active.clone();
            active.insert(id, super::build::tables_of(&desc.node));
            let abort = self.env.tasks.spawn(async move {
                actor.run().await;
                active.remove(id);
            });
            let entry = ActorEntry {
                abort,
                barrier_tx,
                job: desc.job_id,
                fragment: desc.fragment_id,
                vnodes: desc.vnodes.count_ones(),
                chain: executor_chain(&self.env, &desc.node),
                last_collected: None,
            };
            self.actors.insert(id, entry);
        }
        Ok(())
    }

    fn inject(
        &mut self,
        barrier: Barrier,
        to_send: BTreeSet<ActorId>,
        to_collect: BTreeSet<ActorId>,
    ) -> LocalBarrierResult<()> {
        let worker = self.env.worker;
        for &actor in &to_collect {
            if let Some(error) = self.failed.get(&actor) {
                return Err(LocalBarrierError::ToCollectFailed {
                    actor,
                    worker,
                    error: error.clone(),
                });
            }
            if !self.actors.contains_key(&actor) {
                return Err(LocalBarrierError::ActorNotFound { actor, worker });
            }
        }
        let prev = barrier.epoch.prev;
        let parent = barrier.tracing_context.span();
        let spans = &self.handle.spans;
        spans.open(&self.env.clock, &parent, worker, &barrier, &to_collect);
        let remaining = match self.epochs.remove(&prev) {
            None => to_collect.clone(),
            Some(EpochState::Stashed(collected)) => {
                assert!(
                    collected.is_subset(&to_collect),
                    "actors collected a barrier they were not sent"
                );
                // Collected before meta's inject arrived: their spans end at once.
                for &a in &collected {
                    spans.close(&self.env.clock, prev, a);
                }
                to_collect.difference(&collected).copied().collect()
            }
            Some(_) => return Err(LocalBarrierError::InjectedTwice { prev, worker }),
        };
        for &actor in &to_send {
            let tx = self
                .actors
                .get(&actor)
                .and_then(|e| e.barrier_tx.as_ref())
                .ok_or(LocalBarrierError::SourceNotFound { actor, worker })?;
            // Bounded by meta's in-flight limit: a full queue means more barriers in flight than meta allows.
            if let Err(mpsc::error::TrySendError::Full(_)) = tx.try_send(barrier.clone()) {
                return Err(LocalBarrierError::BarrierQueueFull {
                    actor,
                    worker,
                    capacity: self.env.barrier_channel_capacity,
                });
            }
        }
        if let Some(stopped) = barrier.all_stop_actors() {
            for a in stopped {
                if let Some(e) = self.actors.get_mut(a) {
                    e.barrier_tx = None;
                }
            }
        }
        let state = if remaining.is_empty() {
            EpochState::AllCollected(barrier)
        } else {
            EpochState::Issued { barrier, remaining }
        };
        self.epochs.insert(prev, state);
        self.try_complete();
        Ok(())
    }

    fn collect(&mut self, actor: ActorId, epoch: EpochPair) {
        if let Some(entry) = self.actors.get_mut(&actor) {
            entry.last_collected = Some((epoch.prev, self.env.clock.elapsed_us()));
        }
        self.handle.spans.close(&self.env.clock, epoch.prev, actor);
        let state = self
            .epochs
            .entry(epoch.prev)
            .or_insert_with(|| EpochState::Stashed(BTreeSet::new()));
        match state {
            EpochState::Stashed(s) => {
                s.insert(actor);
            }
            EpochState::Issued { barrier, remaining } => {
                remaining.remove(&actor);
                if remaining.is_empty() {
                    *state = EpochState::AllCollected(barrier.clone());
                    self.try_complete();
                }
            }
            _ => tracing::warn!(
                actor_id = actor.0,
                prev = epoch.prev.0,
                "collect of a completed epoch"
            ),
        }
    }

    /// Seal (and for checkpoints, sync) every fully collected epoch that has no incomplete epoch before it.
    fn try_complete(&mut self) {
        let ready: Vec<Epoch> = self
            .epochs
            .iter()
            .take_while(|(_, s)| !matches!(s, EpochState::Stashed(_) | EpochState::Issued { .. }))
            .filter(|(_, s)| matches!(s, EpochState::AllCollected(_)))
            .map(|(e, _)| *e)
            .collect();
        for prev in ready {
            let Some(EpochState::AllCollected(barrier)) = self.epochs.remove(&prev) else {
                unreachable!()
            };
            let curr = barrier.epoch.curr;
            let storage = self.env.storage.clone();
            if barrier.kind == BarrierKind::Initial {
                self.complete(prev, curr, Ok(None));
                continue;
            }
            if let Err(e) = storage.seal_epoch(prev) {
                self.complete(prev, curr, Err(e.into()));
                continue;
            }
            if barrier.kind == BarrierKind::Checkpoint {
                self.epochs.insert(prev, EpochState::Syncing);
                let clock = self.env.clock.clone();
                let span = vspan!(
                    parent: &barrier.tracing_context.span(),
                    "sync epoch",
                    clock,
                    worker_id = self.env.worker.0 as i64,
                    epoch = prev.0 as i64
                );
                self.syncing.push_back(
                    async move {
                        let result = storage.sync(prev).await;
                        match &result {
                            Ok(_) => trace::end(&span, &clock),
                            Err(e) => trace::fail(&span, &clock, &e.to_string()),
                        }
                        (prev, curr, result)
                    }
                    .boxed(),
                );
            } else {
                self.complete(prev, curr, Ok(None));
            }
        }
    }

    fn on_synced(&mut self, prev: Epoch, curr: Epoch, result: StorageResult<SyncResult>) {
        if !matches!(self.epochs.get(&prev), Some(EpochState::Syncing)) {
            return; // reset meanwhile
        }
        self.complete(
            prev,
            curr,
            result.map(Some).map_err(LocalBarrierError::from),
        );
    }

    fn complete(
        &mut self,
        prev: Epoch,
        curr: Epoch,
        result: LocalBarrierResult<Option<SyncResult>>,
    ) {
        let create_progress = self.progress.remove(&curr).unwrap_or_default();
        let result = result.map(|synced| BarrierCompleteResponse {
            worker: self.env.worker,
            prev_epoch: prev,
            synced,
            create_progress,
        });
        match self.waiters.remove(&prev) {
            Some(waiters) => {
                for w in waiters {
                    let _ = w.send(result.clone());
                }
                self.epochs.remove(&prev);
            }
            None => {
                self.epochs.insert(prev, EpochState::Completed(result));
            }
        }
    }

    fn on_actor_failure(&mut self, actor: ActorId, error: StreamExecutorError) {
        // The ERROR line, in the span of the barrier the actor was working on (so that it names its trace).
        let span = self
            .handle
            .spans
            .oldest_of(actor)
            .unwrap_or_else(tracing::Span::none);
        span.in_scope(|| tracing::error!(actor_id = actor.0, error = %error, "actor failed"));
        let reason = error.reason();
        event!(
            self.env.log,
            "actor failure",
            "worker={} actor={actor} reason={} error={error}",
            self.env.worker,
            reason.as_str()
        );
        self.env.stats.record_actor_failure(reason);
        self.env.failures.record(ActorFailure {
            worker: self.env.worker,
            actor,
            error: error.clone(),
            at_us: self.env.clock.elapsed_us(),
        });
        self.actors.remove(&actor);
        self.env.dml.remove(actor);
        let failure = LocalBarrierError::ActorFailed {
            actor,
            worker: self.env.worker,
            error: error.clone(),
        };
        let message = error.to_string();
        self.handle
            .spans
            .fail(&self.env.clock, |a| a == actor, &message);
        self.failed.insert(actor, error);
        // Every epoch still being collected fails; meta will recover.
        let pending: Vec<Epoch> = self
            .epochs
            .iter()
            .filter(|(_, s)| {
                matches!(
                    s,
                    EpochState::Stashed(_)
                        | EpochState::Issued { .. }
                        | EpochState::AllCollected(_)
                )
            })
            .map(|(e, _)| *e)
            .collect();
        for prev in pending {
            self.epochs.remove(&prev);
            self.complete(prev, Epoch::INVALID, Err(failure.clone()));
        }
        // Waiters of epochs still syncing fail too.
        for (_, waiters) in std::mem::take(&mut self.waiters) {
            for w in waiters {
                let _ = w.send(Err(failure.clone()));
            }
        }
    }

    /// Inject `barrier` (a Stop of every actor) into every actor that takes barriers from this worker, to be
    /// collected from every actor; false when there is nothing to stop.
    fn stop_all(&mut self, barrier: Barrier) -> LocalBarrierResult<bool> {
        let to_send: BTreeSet<ActorId> = self
            .actors
            .iter()
            .filter(|(_, e)| e.barrier_tx.is_some())
            .map(|(a, _)| *a)
            .collect();
        let to_collect: BTreeSet<ActorId> = self.actors.keys().copied().collect();
        event!(
            self.env.log,
            "stop actors",
            "worker={} prev={} curr={} to_send={} to_collect={}",
            self.env.worker,
            barrier.epoch.prev,
            barrier.epoch.curr,
            to_send.len(),
            to_collect.len()
        );
        if to_send.is_empty() || to_collect.is_empty() {
            return Ok(false);
        }
        self.inject(barrier, to_send, to_collect)?;
        Ok(true)
    }

    fn reset(&mut self, generation: u64, prev_epoch: Epoch) {
        self.generation = self.generation.max(generation);
        let actors: BTreeSet<ActorId> = self.actors.keys().copied().collect();
        for (_, e) in std::mem::take(&mut self.actors) {
            e.abort.abort();
        }
        self.handle
            .spans
            .fail(&self.env.clock, |_| true, "aborted by the node's reset");
        self.env.active.clear();
        self.failed.clear();
        self.epochs.clear();
        self.progress.clear();
        self.syncing = FuturesOrdered::new();
        for (_, waiters) in std::mem::take(&mut self.waiters) {
            for w in waiters {
                let _ = w.send(Err(LocalBarrierError::Reset));
            }
        }
        self.env.dml.clear();
        self.env.storage.clear(generation);
        self.env.exchange.purge_before(generation);
        self.env.sinks.discard_above(prev_epoch, &actors);
        event!(
            self.env.log,
            "reset node",
            "worker={} generation={generation} prev_epoch={prev_epoch} aborted_actors={}",
            self.env.worker,
            actors.len()
        );
    }
}
