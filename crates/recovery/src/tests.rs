//! The order of recovery's steps in each drop mode, over a recording context.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use epochlab_barrier::InflightActorInfo;
use epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS;
use epochlab_common::{Clock, Epoch, EventLog, SimRng, TableId, WorkerId};
use epochlab_rpc::{RpcError, RpcKind};

use epochlab_common::toggles::DropMode;

use crate::{RecoveryConfig, RecoveryContext, RecoveryError, RecoveryResult, recover};

/// One call recovery made into its context.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Call {
    Abort,
    CleanDirtyJobs,
    PreApplyDrops,
    Unregister(Vec<u32>, String),
    Purge(String),
    Reset {
        worker: u32,
        generation: u64,
        ok: bool,
    },
    Rebuild,
    WaitEpochCommit,
    InjectInitial,
    MarkReady,
}

use Call::*;

fn unregister(tables: &[u32], reason: &str) -> Call {
    Unregister(tables.to_vec(), reason.to_string())
}

fn purge(reason: &str) -> Call {
    Purge(reason.to_string())
}

fn resets(generation: u64, failing: &[u32]) -> Vec<Call> {
    (1..=3)
        .map(|worker| Reset {
            worker,
            generation,
            ok: !failing.contains(&worker),
        })
        .collect()
}

/// A `RecoveryContext` that records each call, over three workers.
struct Recorder {
    log: EventLog,
    rng: SimRng,
    calls: Mutex<Vec<Call>>,
    /// The dirty creating jobs' tables the first clean finds.
    dirty: Mutex<Vec<TableId>>,
    /// What each call of `pre_apply_drops` finds buffered, in turn.
    buffered: Mutex<VecDeque<Vec<TableId>>>,
    /// How many resets of each worker still fail.
    failing_resets: Mutex<BTreeMap<WorkerId, u32>>,
    generation: AtomicU64,
}

impl Recorder {
    fn new() -> Self {
        Self {
            log: EventLog::new(Clock::virtual_from(DEFAULT_ORIGIN_UNIX_MS)),
            rng: SimRng::new(7),
            calls: Mutex::default(),
            dirty: Mutex::default(),
            buffered: Mutex::default(),
            failing_resets: Mutex::default(),
            generation: AtomicU64::new(1),
        }
    }

    fn with_dirty(self, tables: &[u32]) -> Self {
        *self.dirty.lock().unwrap() = tables.iter().copied().map(TableId).collect();
        self
    }

    /// The `n`-th call of `pre_apply_drops` (from 0) finds a drop of `tables`.
    fn with_drop(self, n: usize, tables: &[u32]) -> Self {
        {
            let mut b = self.buffered.lock().unwrap();
            let len = b.len().max(n + 1);
            b.resize(len, Vec::new());
            b[n] = tables.iter().copied().map(TableId).collect();
        }
        self
    }

    fn failing_reset(self, worker: u32, times: u32) -> Self {
        self.failing_resets
            .lock()
            .unwrap()
            .insert(WorkerId(worker), times);
        self
    }

    fn record(&self, call: Call) {
        self.calls.lock().unwrap().push(call);
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// One node's reset: it takes a while, then acknowledges unless it is set to fail.
    async fn reset_node(&self, worker: WorkerId, generation: u64) -> Result<(), RpcError> {
        tokio::time::sleep(Duration::from_millis(u64::from(worker.0))).await;
        let fails = {
            let mut failing = self.failing_resets.lock().unwrap();
            match failing.get_mut(&worker) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    true
                }
                _ => false,
            }
        };
        self.record(Reset {
            worker: worker.0,
            generation,
            ok: !fails,
        });
        if fails {
            Err(RpcError::Unreachable(worker))
        } else {
            Ok(())
        }
    }
}

fn ids(tables: &[TableId]) -> Vec<u32> {
    tables.iter().map(|t| t.0).collect()
}

impl RecoveryContext for Recorder {
    fn log(&self) -> &EventLog {
        &self.log
    }

    fn rng(&self) -> &SimRng {
        &self.rng
    }

    fn abort_and_mark_blocked(&self) -> usize {
        self.record(Abort);
        0
    }

    fn clean_dirty_jobs(&self) -> Vec<TableId> {
        self.record(CleanDirtyJobs);
        std::mem::take(&mut *self.dirty.lock().unwrap())
    }

    fn recover_background_progress(&self) {}

    fn pre_apply_drops(&self) -> Vec<TableId> {
        self.record(PreApplyDrops);
        self.buffered
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_default()
    }

    fn unregister(&self, tables: &[TableId], reason: &str) {
        self.record(Unregister(ids(tables), reason.to_string()));
    }

    fn purge(&self, reason: &str) -> Vec<TableId> {
        self.record(Purge(reason.to_string()));
        Vec::new()
    }

    async fn reset_nodes(&self, generation: u64) -> RecoveryResult<()> {
        let workers = [WorkerId(1), WorkerId(2), WorkerId(3)];
        let results =
            futures::future::join_all(workers.iter().map(|&w| self.reset_node(w, generation)))
                .await;
        let failures: BTreeMap<WorkerId, RpcError> = workers
            .into_iter()
            .zip(results)
            .filter_map(|(w, r)| r.err().map(|e| (w, e)))
            .collect();
        if failures.is_empty() {
            Ok(())
        } else {
            Err(RecoveryError::Unreachable {
                rpc: RpcKind::Reset,
                failures,
            })
        }
    }

    fn next_generation(&self) -> u64 {
        self.generation.fetch_add(1, Ordering::SeqCst) + 1
    }

    async fn rebuild_actors(&self) -> RecoveryResult<InflightActorInfo> {
        self.record(Rebuild);
        Ok(InflightActorInfo::default())
    }

    async fn wait_epoch_commit(&self) -> RecoveryResult<Epoch> {
        self.record(WaitEpochCommit);
        Ok(Epoch(100 << 16))
    }

    async fn inject_initial(
        &self,
        _info: &InflightActorInfo,
        mce: Epoch,
        last_epoch: Epoch,
    ) -> RecoveryResult<Epoch> {
        self.record(InjectInitial);
        Ok(Epoch(mce.0.max(last_epoch.0) + (1 << 16)))
    }

    fn mark_ready(&self) {
        self.record(MarkReady);
    }
}

/// Slow steps that take a while, so that a wrong order could not hide behind zero delays.
fn config() -> RecoveryConfig {
    RecoveryConfig {
        recover_progress: Duration::from_secs(1)..Duration::from_secs(2),
        migrate_actors: Duration::from_secs(1)..Duration::from_secs(2),
        ..Default::default()
    }
}

async fn run(ctx: &Recorder, mode: DropMode) -> Vec<Call> {
    let state = recover(ctx, &config(), mode, "test", Epoch(50 << 16)).await;
    assert_eq!(state.prev_epoch, Epoch(101 << 16));
    ctx.calls()
}

/// The steps after a successful reset (and, in `fixed`, its unregister and purge): drops buffered during
/// the attempt are pre-applied again, then the actors are rebuilt.
fn tail() -> Vec<Call> {
    vec![
        PreApplyDrops,
        Rebuild,
        WaitEpochCommit,
        InjectInitial,
        MarkReady,
    ]
}

fn concat(parts: Vec<Vec<Call>>) -> Vec<Call> {
    parts.into_iter().flatten().collect()
}

#[tokio::test(start_paused = true)]
async fn buggy_recovery_only_unregisters_dirty_jobs_when_it_cleans_them() {
    let ctx = Recorder::new()
        .with_dirty(&[20, 21])
        .with_drop(0, &[10, 11]);
    let calls = run(&ctx, DropMode::Buggy).await;
    let expected = concat(vec![
        vec![
            Abort,
            CleanDirtyJobs,
            unregister(&[20, 21], "dirty job cleaned"),
            PreApplyDrops,
        ],
        resets(2, &[]),
        tail(),
    ]);
    assert_eq!(calls, expected);
}

#[tokio::test(start_paused = true)]
async fn fixed_unregisters_dirty_and_dropped_jobs_after_every_node_was_reset() {
    let ctx = Recorder::new()
        .with_dirty(&[20, 21])
        .with_drop(0, &[10, 11]);
    let calls = run(&ctx, DropMode::Fixed).await;
    let after = "recovery, after reset";
    let expected = concat(vec![
        vec![Abort, CleanDirtyJobs, PreApplyDrops],
        resets(2, &[]),
        vec![unregister(&[20, 21, 10, 11], after), purge(after)],
        tail(),
    ]);
    assert_eq!(calls, expected);
}

#[tokio::test(start_paused = true)]
async fn purge_before_reset_unregisters_before_the_reset() {
    let ctx = Recorder::new()
        .with_dirty(&[20, 21])
        .with_drop(0, &[10, 11]);
    let calls = run(&ctx, DropMode::PurgeBeforeReset).await;
    let before = "recovery, before reset";
    let expected = concat(vec![
        vec![
            Abort,
            CleanDirtyJobs,
            PreApplyDrops,
            unregister(&[20, 21, 10, 11], before),
            purge(before),
        ],
        resets(2, &[]),
        tail(),
    ]);
    assert_eq!(calls, expected);
}

#[tokio::test(start_paused = true)]
async fn without_drops_fixed_only_purges_after_the_reset() {
    let ctx = Recorder::new();
    let calls = run(&ctx, DropMode::Fixed).await;
    let after = "recovery, after reset";
    let expected = concat(vec![
        vec![Abort, CleanDirtyJobs, PreApplyDrops],
        resets(2, &[]),
        vec![purge(after)],
        tail(),
    ]);
    assert_eq!(calls, expected);
}

/// Worker 2 fails its first reset: the attempt fails though workers 1 and 3 were reset, and the retry
/// resets all three to a fresh generation. Nothing is unregistered until every node acknowledged; a drop
/// buffered during the failed attempt is unregistered with the rest.
#[tokio::test(start_paused = true)]
async fn fixed_unregisters_nothing_until_a_reset_of_every_node_succeeds() {
    let ctx = Recorder::new()
        .with_dirty(&[20])
        .with_drop(0, &[10])
        .with_drop(1, &[30])
        .failing_reset(2, 1);
    let calls = run(&ctx, DropMode::Fixed).await;
    let after = "recovery, after reset";
    let expected = concat(vec![
        vec![Abort, CleanDirtyJobs, PreApplyDrops],
        resets(2, &[2]),
        vec![PreApplyDrops],
        resets(3, &[]),
        vec![unregister(&[20, 10, 30], after), purge(after)],
        tail(),
    ]);
    assert_eq!(calls, expected);
    let lines = ctx.log.lines();
    let failed: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains(" recovery failed: "))
        .collect();
    assert_eq!(failed.len(), 1, "{lines:#?}");
    assert!(
        failed[0].contains(
            "attempt=1 error=reset not acknowledged by worker 2 (worker 2 is unreachable) retry_in_ms=20"
        ),
        "{}",
        failed[0]
    );
}

#[tokio::test(start_paused = true)]
async fn purge_before_reset_unregisters_at_the_top_of_each_attempt() {
    let ctx = Recorder::new()
        .with_drop(0, &[10])
        .with_drop(1, &[30])
        .failing_reset(3, 2);
    let calls = run(&ctx, DropMode::PurgeBeforeReset).await;
    let before = "recovery, before reset";
    let expected = concat(vec![
        vec![
            Abort,
            CleanDirtyJobs,
            PreApplyDrops,
            unregister(&[10], before),
            purge(before),
        ],
        resets(2, &[3]),
        vec![PreApplyDrops, unregister(&[30], before), purge(before)],
        resets(3, &[3]),
        vec![PreApplyDrops, purge(before)],
        resets(4, &[]),
        tail(),
    ]);
    assert_eq!(calls, expected);
}

#[tokio::test(start_paused = true)]
async fn buggy_never_unregisters_in_an_attempt() {
    let ctx = Recorder::new()
        .with_drop(0, &[10])
        .with_drop(1, &[30])
        .failing_reset(1, 1);
    let calls = run(&ctx, DropMode::Buggy).await;
    let expected = concat(vec![
        vec![Abort, CleanDirtyJobs, PreApplyDrops],
        resets(2, &[1]),
        vec![PreApplyDrops],
        resets(3, &[]),
        tail(),
    ]);
    assert_eq!(calls, expected);
}

/// A drop (or cancel) buffered while the nodes were being reset is pre-applied once more after the reset
/// (after `fixed`'s purge, as RisingWave's second pre-apply comes after its purge), and its tables are
/// unregistered at once, since no actor of its runs any more; in `buggy` its caller unregisters.
#[tokio::test(start_paused = true)]
async fn a_drop_buffered_during_the_reset_is_pre_applied_after_it() {
    for mode in DropMode::ALL {
        let ctx = Recorder::new().with_drop(0, &[10]).with_drop(1, &[40]);
        let calls = run(&ctx, mode).await;
        let again = "recovery, pre-applied after reset";
        let expected = match mode {
            DropMode::Buggy => concat(vec![
                vec![Abort, CleanDirtyJobs, PreApplyDrops],
                resets(2, &[]),
                vec![PreApplyDrops],
            ]),
            DropMode::Fixed => {
                let after = "recovery, after reset";
                concat(vec![
                    vec![Abort, CleanDirtyJobs, PreApplyDrops],
                    resets(2, &[]),
                    vec![unregister(&[10], after), purge(after), PreApplyDrops],
                    vec![unregister(&[40], again)],
                ])
            }
            DropMode::PurgeBeforeReset => {
                let before = "recovery, before reset";
                concat(vec![
                    vec![Abort, CleanDirtyJobs, PreApplyDrops],
                    vec![unregister(&[10], before), purge(before)],
                    resets(2, &[]),
                    vec![PreApplyDrops, unregister(&[40], again)],
                ])
            }
        };
        let rest = vec![Rebuild, WaitEpochCommit, InjectInitial, MarkReady];
        assert_eq!(calls, concat(vec![expected, rest]), "{mode}");
    }
}

/// Backoff doubles between failed attempts, from 20 ms.
#[tokio::test(start_paused = true)]
async fn failed_attempts_back_off() {
    let ctx = Recorder::new().failing_reset(2, 3);
    run(&ctx, DropMode::Fixed).await;
    let retries: Vec<String> = ctx
        .log
        .lines()
        .iter()
        .filter(|l| l.contains(" recovery failed: "))
        .map(|l| l.rsplit(' ').next().unwrap().to_string())
        .collect();
    assert_eq!(
        retries,
        ["retry_in_ms=20", "retry_in_ms=40", "retry_in_ms=80"]
    );
}
