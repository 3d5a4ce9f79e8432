//! Recovery (reference §7.1): the order of the steps, the slow ones as delays on the simulation clock, retries
//! with backoff, and, the crux of RisingWave #14910, **when the tables of dropped jobs are unregistered
//! relative to resetting the compute nodes** ([`DropMode`]). Meta supplies the steps through
//! [`RecoveryContext`]; this crate decides their order.

mod error;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::ops::Range;
use std::time::Duration;

use epochlab_barrier::{InflightActorInfo, RecoveredState};
use epochlab_common::toggles::DropMode;
use epochlab_common::trace::{self, Cause, Park};
use epochlab_common::{Epoch, EventLog, SimRng, TableId, event, vspan};
use tracing::Instrument;

pub use error::RecoveryError;

pub type RecoveryResult<T> = Result<T, RecoveryError>;

#[derive(Clone, Debug)]
pub struct RecoveryConfig {
    /// Recovering background jobs' progress (before the attempts).
    pub recover_progress: Range<Duration>,
    /// Migrating actors off dead workers (in each attempt, before the reset).
    pub migrate_actors: Range<Duration>,
    /// First and longest wait between attempts.
    pub backoff: (Duration, Duration),
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        Self {
            recover_progress: Duration::ZERO..Duration::ZERO,
            migrate_actors: Duration::ZERO..Duration::ZERO,
            backoff: (Duration::from_millis(20), Duration::from_secs(5)),
        }
    }
}

/// The steps meta carries out for recovery.
pub trait RecoveryContext: Send + Sync {
    fn log(&self) -> &EventLog;
    fn rng(&self) -> &SimRng;
    /// Block the scheduler and fail every queued command; returns how many were failed.
    fn abort_and_mark_blocked(&self) -> usize;
    /// Drop from the catalog the foreground jobs whose creation never finished and the background jobs whose
    /// Add barrier was never collected; returns their tables.
    fn clean_dirty_jobs(&self) -> Vec<TableId>;
    /// Rebuild the progress tracking of the creating jobs that survive recovery (background jobs): every
    /// backfill actor is pending again, since reports from epochs recovery discards do not count.
    fn recover_background_progress(&self);
    /// Report buffered drops as done to their callers; returns their tables.
    fn pre_apply_drops(&self) -> Vec<TableId>;
    fn unregister(&self, tables: &[TableId], reason: &str);
    /// Unregister every registered table that neither the catalog nor a queued drop or cancel accounts for;
    /// returns them.
    fn purge(&self, reason: &str) -> Vec<TableId>;
    /// Reset every live node to `generation` (abort its actors, drop its uncommitted data), all of them
    /// concurrently. Fails unless every live node acknowledged; the others are still reset.
    fn reset_nodes(&self, generation: u64) -> impl Future<Output = RecoveryResult<()>> + Send;
    fn next_generation(&self) -> u64;
    /// Rebuild every job's actors, moving them off dead workers.
    fn rebuild_actors(&self) -> impl Future<Output = RecoveryResult<InflightActorInfo>> + Send;
    /// Wait until every live node has pinned the max committed epoch; returns it.
    fn wait_epoch_commit(&self) -> impl Future<Output = RecoveryResult<Epoch>> + Send;
    /// Inject the Initial barrier (`prev` = `mce`, `curr` above `last_epoch`) and collect it; returns `curr`.
    fn inject_initial(
        &self,
        info: &InflightActorInfo,
        mce: Epoch,
        last_epoch: Epoch,
    ) -> impl Future<Output = RecoveryResult<Epoch>> + Send;
    fn mark_ready(&self);
}

async fn slow_step<C: RecoveryContext>(ctx: &C, name: &'static str, range: &Range<Duration>) {
    let d = ctx.rng().duration(range.clone());
    event!(
        ctx.log(),
        "recovery step",
        "{name} takes_ms={}",
        d.as_millis()
    );
    step(ctx, name, tokio::time::sleep(d)).await;
}

/// Run one step of recovery in its own span (a child of the `recovery` span).
async fn step<C: RecoveryContext, T>(
    ctx: &C,
    name: &'static str,
    fut: impl Future<Output = T>,
) -> T {
    let clock = ctx.log().clock().clone();
    let span = vspan!("recovery step", clock, otel.name = name);
    let out = fut.instrument(span.clone()).await;
    trace::end(&span, &clock);
    out
}

/// [`step`] for a step that can fail: a failure marks its span.
async fn try_step<C: RecoveryContext, T>(
    ctx: &C,
    name: &'static str,
    fut: impl Future<Output = RecoveryResult<T>>,
) -> RecoveryResult<T> {
    let clock = ctx.log().clock().clone();
    let span = vspan!("recovery step", clock, otel.name = name);
    let out = fut.instrument(span.clone()).await;
    match &out {
        Ok(_) => trace::end(&span, &clock),
        Err(e) => trace::fail(&span, &clock, &e.to_string()),
    }
    out
}

/// Run one step that takes no time (it only changes meta's state) in its own span.
fn instant_step<C: RecoveryContext, T>(ctx: &C, name: &'static str, f: impl FnOnce() -> T) -> T {
    let clock = ctx.log().clock();
    let span = vspan!("recovery step", clock, otel.name = name);
    let out = span.in_scope(f);
    trace::end(&span, clock);
    out
}

/// Recover: retried until an attempt succeeds. `mode` decides when the tables of dropped and dirty jobs
/// are unregistered. The whole recovery is one trace, a span per step.
///
/// The steps, in order:
/// 1. abort and mark the scheduler blocked;
/// 2. clean dirty creating jobs;
/// 3. recover background progress: meta rebuilds its create tracker for the background jobs that survive,
///    every backfill actor pending again (progress reported in epochs recovery discards does not count);
///    then a slow step, a virtual delay;
/// 4. attempts, retried with backoff ([`RecoveryConfig::backoff`]); each attempt:
///    1. pre-applies the buffered drops and cancels;
///    2. migrates actors off dead workers (a slow step);
///    3. resets every live node to a fresh generation, all concurrently; the attempt fails unless every one
///       acknowledged;
///    4. pre-applies again the drops and cancels buffered meanwhile (RisingWave's second
///       `pre_apply_drop_cancel`, after its reset and purge: their jobs' actors must not be rebuilt);
///    5. rebuilds the actors;
///    6. waits until every node has pinned the committed epoch;
///    7. injects and collects the Initial barrier (its `prev` is the max committed epoch);
/// 5. marks the scheduler ready.
///
/// Where [`DropMode`] unregisters tables among these steps is in its module's docs. Any [`RecoveryError`]
/// fails the attempt; the event log's `recovery failed` line names it.
pub async fn recover<C: RecoveryContext>(
    ctx: &C,
    config: &RecoveryConfig,
    mode: DropMode,
    reason: &str,
    last_epoch: Epoch,
) -> RecoveredState {
    let clock = ctx.log().clock().clone();
    let span = vspan!(parent: trace::root(), "recovery", clock, reason = reason, drop_mode = mode.as_str());
    // Caused by the collection that failed (it links, in turn, to the kill of its node, if any).
    trace::link(&span, Cause::CollectFailed);
    trace::forget(Cause::CollectFailed);
    let state = recover_inner(ctx, config, mode, reason, last_epoch)
        .instrument(span.clone())
        .await;
    trace::end(&span, &clock);
    state
}

async fn recover_inner<C: RecoveryContext>(
    ctx: &C,
    config: &RecoveryConfig,
    mode: DropMode,
    reason: &str,
    last_epoch: Epoch,
) -> RecoveredState {
    event!(ctx.log(), "recovery", "start reason={reason}");
    instant_step(ctx, "abort and mark blocked", || {
        let aborted = ctx.abort_and_mark_blocked();
        event!(
            ctx.log(),
            "recovery step",
            "abort and mark blocked aborted={aborted}"
        );
    });
    let mut pending = instant_step(ctx, "clean dirty jobs", || clean_dirty_jobs(ctx, mode));
    ctx.recover_background_progress();
    slow_step(ctx, "recover background progress", &config.recover_progress).await;
    let (first, max) = config.backoff;
    let mut backoff = first;
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        event!(ctx.log(), "recovery", "attempt={attempt}");
        match attempt_once(ctx, config, mode, &mut pending, last_epoch).await {
            Ok(state) => {
                ctx.mark_ready();
                event!(
                    ctx.log(),
                    "recovery",
                    "done attempt={attempt} initial_barrier_curr={}",
                    state.prev_epoch
                );
                return state;
            }
            Err(e) => {
                event!(
                    ctx.log(),
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

/// Clean dirty creating jobs; returns their tables if recovery unregisters them later.
fn clean_dirty_jobs<C: RecoveryContext>(ctx: &C, mode: DropMode) -> Vec<TableId> {
    let tables = ctx.clean_dirty_jobs();
    if tables.is_empty() {
        return tables;
    }
    event!(
        ctx.log(),
        "recovery step",
        "clean dirty jobs tables={tables:?}"
    );
    if mode.unregisters_dirty_jobs_when_cleaned() {
        ctx.unregister(&tables, "dirty job cleaned");
        return Vec::new();
    }
    tables
}

/// Unregister the pending tables, then purge every registered table the catalog does not know.
fn unregister_pending<C: RecoveryContext>(ctx: &C, pending: &mut Vec<TableId>, reason: &str) {
    if !pending.is_empty() {
        ctx.unregister(pending, reason);
        pending.clear();
    }
    let purged = ctx.purge(reason);
    if !purged.is_empty() {
        event!(ctx.log(), "recovery step", "purge tables={purged:?}");
    }
}

/// RisingWave pre-applies drops and cancels once more after the reset (they came while the nodes were being
/// reset; their actors must not be rebuilt), after its purge. Their tables are unregistered at once where
/// recovery unregisters: the nodes are reset.
fn pre_apply_again<C: RecoveryContext>(ctx: &C, mode: DropMode) {
    let dropped = ctx.pre_apply_drops();
    if dropped.is_empty() {
        return;
    }
    event!(
        ctx.log(),
        "recovery step",
        "pre-apply drops again tables={dropped:?}"
    );
    if mode.unregisters_pre_applied_after_reset() {
        ctx.unregister(&dropped, "recovery, pre-applied after reset");
    }
}

async fn attempt_once<C: RecoveryContext>(
    ctx: &C,
    config: &RecoveryConfig,
    mode: DropMode,
    pending: &mut Vec<TableId>,
    last_epoch: Epoch,
) -> RecoveryResult<RecoveredState> {
    let dropped = instant_step(ctx, "pre-apply drops", || ctx.pre_apply_drops());
    if !dropped.is_empty() {
        event!(
            ctx.log(),
            "recovery step",
            "pre-apply drops tables={dropped:?}"
        );
        // In a mode where recovery never unregisters, the callers of these drops do, the moment they hear
        // "done", and `pending` is never used.
        pending.extend(dropped);
    }
    if mode.unregisters_in_recovery_before_reset() {
        instant_step(ctx, "unregister dropped tables", || {
            unregister_pending(ctx, pending, "recovery, before reset")
        });
    }
    slow_step(ctx, "migrate actors", &config.migrate_actors).await;
    let generation = ctx.next_generation();
    let reset = try_step(ctx, "reset nodes", ctx.reset_nodes(generation)).await;
    // Epochs abandoned by this recovery end here: no actor of theirs runs any more (on a node that could not
    // be reset, they end with the run).
    trace::release(Park::Recovery, ctx.log().clock());
    reset?;
    event!(
        ctx.log(),
        "recovery step",
        "reset nodes generation={generation}"
    );
    if mode.unregisters_in_recovery_after_reset() {
        instant_step(ctx, "unregister dropped tables", || {
            unregister_pending(ctx, pending, "recovery, after reset")
        });
    }
    instant_step(ctx, "pre-apply drops again", || pre_apply_again(ctx, mode));
    let info = try_step(ctx, "rebuild actors", ctx.rebuild_actors()).await?;
    event!(
        ctx.log(),
        "recovery step",
        "rebuild actors actors={}",
        info.actor_count()
    );
    let mce = try_step(ctx, "wait epoch commit", ctx.wait_epoch_commit()).await?;
    let curr = try_step(
        ctx,
        "inject initial barrier",
        ctx.inject_initial(&info, mce, last_epoch),
    )
    .await?;
    Ok(RecoveredState {
        info,
        prev_epoch: curr,
    })
}
