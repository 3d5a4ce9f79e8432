//! Recovery (reference §7.1): the order of the steps, the slow ones as delays on the simulation clock, retries
//! with backoff, and, the crux of RisingWave #14910, **when the tables of dropped jobs are unregistered
//! relative to resetting the compute nodes**. Meta supplies the steps through [`RecoveryContext`]; this crate
//! decides their order.

use std::future::Future;
use std::ops::Range;
use std::time::Duration;

use epochlab_barrier::{InflightActorInfo, RecoveredState};
use epochlab_common::{Epoch, EventLog, SimRng, TableId, event, trace, vspan};
use tracing::Instrument;

/// When recovery unregisters the state tables of dropped (or dirty creating) jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnregisterOrder {
    /// Recovery leaves it to the drop's caller, which unregisters as soon as its command returns, errors
    /// included (RisingWave before the fix). Dirty creating jobs are unregistered when they are cleaned.
    ByCaller,
    /// After every live node has acknowledged its reset: no actor that may use the tables still runs.
    AfterReset,
    /// At the top of each attempt, before the reset (the order of RisingWave #15852): a window remains.
    BeforeReset,
}

#[derive(Clone, Debug)]
pub struct RecoveryConfig {
    pub unregister: UnregisterOrder,
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
            unregister: UnregisterOrder::AfterReset,
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
    /// Drop foreground jobs whose creation never finished from the catalog; returns their tables.
    fn clean_dirty_jobs(&self) -> Vec<TableId>;
    /// Report buffered drops as done to their callers; returns their tables.
    fn pre_apply_drops(&self) -> Vec<TableId>;
    fn unregister(&self, tables: &[TableId], reason: &str);
    /// Unregister every registered table the catalog does not know; returns them.
    fn purge(&self, reason: &str) -> Vec<TableId>;
    /// Reset every live node to `generation` (abort its actors, drop its uncommitted data).
    fn reset_nodes(&self, generation: u64) -> impl Future<Output = Result<(), String>> + Send;
    fn next_generation(&self) -> u64;
    /// Rebuild every job's actors, moving them off dead workers.
    fn rebuild_actors(&self) -> impl Future<Output = Result<InflightActorInfo, String>> + Send;
    /// Wait until every live node has pinned the max committed epoch; returns it.
    fn wait_epoch_commit(&self) -> impl Future<Output = Result<Epoch, String>> + Send;
    /// Inject the Initial barrier (`prev` = `mce`, `curr` above `last_epoch`) and collect it; returns `curr`.
    fn inject_initial(
        &self,
        info: &InflightActorInfo,
        mce: Epoch,
        last_epoch: Epoch,
    ) -> impl Future<Output = Result<Epoch, String>> + Send;
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

/// Recover: retried until an attempt succeeds. The whole recovery is one trace, a span per step.
pub async fn recover<C: RecoveryContext>(
    ctx: &C,
    config: &RecoveryConfig,
    reason: &str,
    last_epoch: Epoch,
) -> RecoveredState {
    let clock = ctx.log().clock().clone();
    let span = vspan!(parent: None, "recovery", clock, reason = reason);
    let state = recover_inner(ctx, config, reason, last_epoch)
        .instrument(span.clone())
        .await;
    trace::end(&span, &clock);
    state
}

async fn recover_inner<C: RecoveryContext>(
    ctx: &C,
    config: &RecoveryConfig,
    reason: &str,
    last_epoch: Epoch,
) -> RecoveredState {
    event!(ctx.log(), "recovery", "start reason={reason}");
    let aborted = ctx.abort_and_mark_blocked();
    event!(
        ctx.log(),
        "recovery step",
        "abort and mark blocked aborted={aborted}"
    );
    let mut to_unregister = ctx.clean_dirty_jobs();
    if !to_unregister.is_empty() {
        event!(
            ctx.log(),
            "recovery step",
            "clean dirty jobs tables={to_unregister:?}"
        );
        if config.unregister == UnregisterOrder::ByCaller {
            ctx.unregister(&to_unregister, "dirty job cleaned");
            to_unregister.clear();
        }
    }
    slow_step(ctx, "recover background progress", &config.recover_progress).await;
    let (first, max) = config.backoff;
    let mut backoff = first;
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        event!(ctx.log(), "recovery", "attempt={attempt}");
        match attempt_once(ctx, config, &mut to_unregister, last_epoch).await {
            Ok(state) => {
                ctx.mark_ready();
                event!(
                    ctx.log(),
                    "recovery",
                    "done attempt={attempt} prev_epoch={}",
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

async fn attempt_once<C: RecoveryContext>(
    ctx: &C,
    config: &RecoveryConfig,
    to_unregister: &mut Vec<TableId>,
    last_epoch: Epoch,
) -> Result<RecoveredState, String> {
    let dropped = ctx.pre_apply_drops();
    if !dropped.is_empty() {
        event!(
            ctx.log(),
            "recovery step",
            "pre-apply drops tables={dropped:?}"
        );
        // Buggy order: the callers of these drops unregister the moment they hear "done".
        if config.unregister != UnregisterOrder::ByCaller {
            to_unregister.extend(dropped);
        }
    }
    let unregister_now = |ctx: &C, to_unregister: &mut Vec<TableId>, reason: &str| {
        if !to_unregister.is_empty() {
            ctx.unregister(to_unregister, reason);
            to_unregister.clear();
        }
        let purged = ctx.purge(reason);
        if !purged.is_empty() {
            event!(ctx.log(), "recovery step", "purge tables={purged:?}");
        }
    };
    if config.unregister == UnregisterOrder::BeforeReset {
        unregister_now(ctx, to_unregister, "recovery, before reset");
    }
    slow_step(ctx, "migrate actors", &config.migrate_actors).await;
    let generation = ctx.next_generation();
    step(ctx, "reset nodes", ctx.reset_nodes(generation)).await?;
    event!(
        ctx.log(),
        "recovery step",
        "reset nodes generation={generation}"
    );
    if config.unregister == UnregisterOrder::AfterReset {
        unregister_now(ctx, to_unregister, "recovery, after reset");
    }
    let info = step(ctx, "rebuild actors", ctx.rebuild_actors()).await?;
    event!(
        ctx.log(),
        "recovery step",
        "rebuild actors actors={}",
        info.actor_count()
    );
    let mce = step(ctx, "wait epoch commit", ctx.wait_epoch_commit()).await?;
    let curr = step(
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
