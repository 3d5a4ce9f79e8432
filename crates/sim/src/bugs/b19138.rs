//! RisingWave #19138 (2024-10-26, v2.0.2), as recorded: the compute nodes were scaled down (6 to 2 cores) while
//! a `SINK INTO TABLE` still backfilled; at recovery meta scaled the sink's fragments in, and its actors
//! panicked in no-shuffle backfill's `recover_backfill_state` on the assertion that all their vnodes' progress
//! rows agree (`All vnode partitions should have same state (no scale-in supported)`, PR #12767): an actor had
//! taken vnodes of an actor that had finished and of one that had not. The maintainers closed it as not a bug
//! (rescaling a backfilling job was not supported); #19142 tracked the support, which PR #23998 added.
//!
//! Why the sink was scaled at all: v2.0.2's recovery scaled actors only when no background job was being
//! created, but its list of such jobs held materialized views only, so a creating sink did not stop it. Since
//! PR #23998 meta's scale skips the jobs whose backfill cannot be rescheduled (`is_reschedulable`: no-shuffle
//! backfill is not) and refreshes the progress tracker of the ones it scales. The toggle is
//! [`RescheduleBackfilling`] (declared and read only by meta's recovery scale-in).
//!
//! The scenario: two nodes; a table whose rows lie almost all in its first actor's vnodes; a rate-limited sink
//! over it, created in the background with no-shuffle backfill (one backfill actor beside each table actor,
//! with its vnodes), so that the second backfill actor finishes early while the first still backfills. Then
//! the second actor's node is removed for good; recovery scales the table and the sink in to one actor each.
//! Buggy: the sink's remaining actor gets the finished vnodes beside its unfinished ones and fails with the
//! recorded assertion. Fixed: the scale-in skips the table's no-shuffle group (the sink cannot be
//! rescheduled), the removed node's actors move whole, and the sink ends equal to its query.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use epochlab_barrier::SchedulerStatus;
use epochlab_common::Toggles;
use epochlab_common::plan::SinkKind;
use epochlab_common::{ActorId, DataType, Op, OwnedRow, TableId, WorkerId, event, row};
use epochlab_meta::scale::RescheduleBackfilling;
use epochlab_meta::{JobOptions, JobState, SinkOptions, StreamScanType};
use epochlab_stream::executor::backfill::BackfillActorStats;
use futures::future::LocalBoxFuture;

use super::record::{Evidence, Record, Symptom, SymptomKind};
use super::{BugId, BugInfo, Mode, Origin, ScenarioError, ScenarioRun};
use crate::report::{ReproReport, Violation};
use crate::repro::{ClusterHook, ReproParams};
use crate::runtime::SimContext;

pub const INFO: BugInfo = BugInfo {
    id: BugId::Rw19138,
    name: "19138",
    origin: Origin::RisingWave,
    mechanism: "a compute node is removed while a sink still backfills through no-shuffle backfill; \
                recovery scales the sink in, so one actor gets the vnodes of an actor that had finished and \
                of one that had not, and recovering its state it finds their progress rows disagree: `All \
                vnode partitions should have same state (no scale-in supported)`",
    fix: "not a bug at the time (a backfilling job could not be rescaled; #19142 tracked support); PR #23998: \
          meta's scale skips background jobs whose backfill cannot be rescheduled (no-shuffle backfill), \
          and refreshes the progress tracker of the creating jobs it scales",
    links: &[
        "https://github.com/risingwavelabs/risingwave/issues/19138",
        "https://github.com/risingwavelabs/risingwave/issues/19142",
        "https://github.com/risingwavelabs/risingwave/pull/23998",
        "https://github.com/risingwavelabs/risingwave/pull/12767",
    ],
    modes: &[Mode::Buggy, Mode::Fixed],
    command: "cargo xtask repro --bug 19138",
    settings: &[],
    timeline: "the sink's backfill, the node removed, recovery's scale-in, the recovered states, the failure",
    record: &RECORD,
    toggles,
    scenario: start,
};

const RECORD: Record = Record {
    refs: "issue #19138 (2024-10-26, v2.0.2; closed as not a bug: rescaling a backfilling job was not supported); \
           the assertion came with PR #12767 (2023); issue #19142 tracked support, PR #23998 (2026-01-12) added it",
    symptom: Symptom {
        kind: SymptomKind::Panic,
        text: "panicked at src/stream/src/executor/backfill/no_shuffle_backfill.rs:607:13: assertion `left == right` \
               failed (left: true, right: false; the comment above it: All vnode partitions should have same \
               state (no scale-in supported))",
        pattern: "no_shuffle_backfill.rs:N:N: assertion `left == right` failed",
        epochlab_pattern: "All vnode partitions should have same state (no scale-in supported)",
        panic_file: "executor/backfill/no_shuffle_backfill.rs",
        evidence: Evidence::Text,
    },
    site: "stream: executor/backfill/no_shuffle_backfill.rs, `BackfillExecutor::recover_backfill_state` \
           (`assert_eq!` of each vnode's is_finished against the first's), after the compute nodes were scaled \
           in (6 to 2 cores) under a backfilling SINK INTO TABLE; v2.0.2's recovery skipped scaling only \
           background materialized views still creating, not sinks",
    differs: "a typed actor error carrying the comment and both sides, not a panic; the scale-in is a node \
              removed for good at recovery, not fewer cores; the job is a sink over a table, not a SINK \
              INTO TABLE with NOW(); the snapshot is read from a replicated copy of the upstream",
};

/// The engine's toggles of a run in `mode`: [`reschedule_backfilling`]'s, the others fixed.
fn toggles(mode: Mode) -> Toggles {
    Toggles::default().with(reschedule_backfilling(mode))
}

fn start(run: ScenarioRun) -> LocalBoxFuture<'static, ReproReport> {
    Box::pin(scenario(run.ctx, run.params, run.hook))
}

/// Which backfilling jobs recovery's scale-in reschedules in `mode`.
pub(crate) fn reschedule_backfilling(mode: Mode) -> RescheduleBackfilling {
    match mode {
        Mode::Buggy => RescheduleBackfilling::MviewsListed,
        _ => RescheduleBackfilling::ReschedulableOnly,
    }
}

const VNODES: u32 = 16;
/// Rows in each vnode of the first half; the second half holds [`FEW_ROWS`] in all.
const ROWS_PER_BUSY_VNODE: usize = 16;
const FEW_ROWS: usize = 2;
/// Snapshot rows per second per backfill actor.
const RATE_LIMIT: u32 = 8;
const BARRIER_INTERVAL_MS: u64 = 500;
/// Rows inserted after the recovery (they reach the sink through its upstream).
const LATE_ROWS: i64 = 6;
const SETTLE_BUDGET: Duration = Duration::from_secs(60);
const CREATE_BUDGET: Duration = Duration::from_secs(180);

struct Setup {
    scene: super::Scene,
    table: TableId,
    sink: TableId,
    progress_table: TableId,
}

impl AsRef<super::Scene> for Setup {
    fn as_ref(&self) -> &super::Scene {
        &self.scene
    }
}

/// The directed scenario of #19138.
pub(crate) async fn scenario(
    ctx: SimContext,
    p: ReproParams,
    hook: Option<ClusterHook>,
) -> ReproReport {
    let metas = p.meta_nodes;
    let setup = async |t| setup(&ctx, t, hook, metas).await;
    super::directed(
        &ctx,
        &p,
        String::new(),
        setup,
        scale_in_while_backfilling,
        |s, (), report| verdict(s, &p, report),
    )
    .await
}

/// Keys with `ROWS_PER_BUSY_VNODE` in each vnode of the first half, and `FEW_ROWS` in the second.
fn keys() -> Vec<i64> {
    super::skewed_keys(VNODES, ROWS_PER_BUSY_VNODE, FEW_ROWS)
}

/// Two nodes; table t (k, v) on two actors, loaded; sink s over it created in the background with no-shuffle
/// backfill, rate-limited.
async fn setup(
    ctx: &SimContext,
    t: Toggles,
    hook: Option<ClusterHook>,
    meta_nodes: u32,
) -> Result<Setup, ScenarioError> {
    let (cluster, checkers) =
        super::start_two_nodes(ctx, t, hook, VNODES, BARRIER_INTERVAL_MS, meta_nodes).await;
    let meta = &cluster.meta();
    let types = vec![DataType::Int64, DataType::Int64];
    let table = meta.create_table("t", types, vec![0], 2).await;
    let table = table.map_err(ScenarioError::ddl("create table"))?;
    let rows = keys()
        .into_iter()
        .map(|k| (Op::Insert, row![k, 0i64]))
        .collect();
    cluster.dml(table, rows).await?;
    meta.flush().await.map_err(ScenarioError::ddl("flush"))?;
    let job = JobOptions {
        parallelism: 2,
        rate_limit: Some(RATE_LIMIT),
        background: true,
        scan_type: StreamScanType::Backfill,
    };
    let sink = SinkOptions {
        kind: SinkKind::Collecting,
        ..SinkOptions::default()
    };
    let sink = meta.create_sink("s", table, job, sink).await;
    let sink = sink.map_err(ScenarioError::ddl("create sink"))?;
    let progress_table = meta
        .relation(sink)
        .and_then(|r| r.progress_table.map(|d| d.table_id))
        .ok_or_else(|| ScenarioError::Placement("sink s has no progress table".into()))?;
    Ok(Setup {
        scene: super::Scene {
            ctx: ctx.clone(),
            cluster,
            checkers,
        },
        table,
        sink,
        progress_table,
    })
}

fn creating(s: &Setup) -> bool {
    let rel = s.scene.cluster.meta().relation(s.sink);
    rel.is_some_and(|r| r.state == JobState::Creating)
}

/// The sink's backfill actors (catalog order) with their workers and stats.
fn backfill_actors(
    s: &Setup,
) -> Result<Vec<(ActorId, WorkerId, Arc<BackfillActorStats>)>, ScenarioError> {
    let rel = s.scene.cluster.meta().relation(s.sink);
    let rel = rel.ok_or_else(|| ScenarioError::Placement("sink s is gone".into()))?;
    let all = s.scene.cluster.backfill.of_table(s.progress_table);
    let stats = |a: ActorId| all.iter().find(|(b, _)| *b == a).map(|(_, st)| st.clone());
    Ok(rel
        .actors
        .iter()
        .filter_map(|a| stats(a.actor_id).map(|st| (a.actor_id, a.worker, st)))
        .collect())
}

/// Once the second backfill actor has finished (its row committed) and the first has not: the second's node.
async fn await_mixed_states(s: &Setup) -> Result<WorkerId, ScenarioError> {
    let ready = tokio::time::timeout(SETTLE_BUDGET, async {
        loop {
            if !creating(s) {
                return Err(ScenarioError::NotShown(
                    "the sink finished its backfill before a node was removed".into(),
                ));
            }
            let actors = backfill_actors(s)?;
            let done = |i: usize| {
                actors
                    .get(i)
                    .is_some_and(|(_, _, st)| st.finished.load(Ordering::Relaxed))
            };
            if actors.len() == 2 && done(1) && !done(0) {
                // The finished row is in storage once a checkpoint after it has committed.
                let persisted = actors[1].2.last_persisted_epoch.load(Ordering::Relaxed);
                let mce = s.scene.cluster.hummock.max_committed_epoch();
                if persisted > 0 && mce.0 >= persisted {
                    return Ok(actors[1].1);
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    match ready.await {
        Ok(r) => r,
        Err(_) => Err(ScenarioError::Stuck(crate::report::stuck_report(
            &s.scene.cluster,
            "the sink's backfill did not reach mixed states",
        ))),
    }
}

/// Remove the finished actor's node, then insert rows once recovery is done, and wait for the sink (or a
/// failure).
async fn scale_in_while_backfilling(s: &Setup) -> Result<(), ScenarioError> {
    let worker = await_mixed_states(s).await?;
    event!(
        s.scene.ctx.log,
        "scenario",
        "remove worker={worker} while the sink backfills"
    );
    if !s.scene.cluster.remove_node(worker) {
        return Err(ScenarioError::Placement(format!(
            "worker {worker} is not running"
        )));
    }
    // Recovery is done, or its rebuilt actor failed (as in RisingWave, every later attempt fails the same way:
    // the cluster stays in recovery until the sink is dropped).
    let failed = || s.scene.cluster.failures.first_state_error().is_some();
    let recovered = tokio::time::timeout(SETTLE_BUDGET, async {
        tokio::time::sleep(Duration::from_millis(BARRIER_INTERVAL_MS)).await;
        while !failed() && s.scene.cluster.meta().scheduler().status() != SchedulerStatus::Ready {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    if recovered.await.is_err() {
        let report = crate::report::stuck_report(
            &s.scene.cluster,
            "recovery after the scale-in did not end",
        );
        return Err(ScenarioError::Stuck(report));
    }
    if failed() {
        return Ok(());
    }
    let late = (0..LATE_ROWS)
        .map(|i| (Op::Insert, row![1_000_000 + i, 1i64]))
        .collect();
    s.scene.cluster.dml(s.table, late).await?;
    super::await_created(&s.scene.cluster, s.sink, CREATE_BUDGET).await
}

/// (oracle) The sink holds its query over the committed table, without duplicates or lost rows.
fn check_sink(s: &Setup) {
    let key = |r: &OwnedRow| format!("{r:?}");
    let want: std::collections::BTreeSet<String> = s
        .scene
        .cluster
        .committed_rows(s.table)
        .iter()
        .map(key)
        .collect();
    let Some((rows, anomalies)) = s.scene.cluster.sink_rows(s.sink) else {
        return;
    };
    let got: std::collections::BTreeSet<String> = rows.iter().map(key).collect();
    let missing = want.difference(&got).count();
    let extra = got.difference(&want).count();
    if missing + extra + anomalies.len() > 0 {
        let mut v = Violation::new(
            "oracle",
            format!(
                "sink s differs from its query: {missing} rows missing, {extra} extra, {} anomalies",
                anomalies.len()
            ),
        );
        v.table = Some(s.sink.0);
        s.scene.checkers.violation(v);
    }
}

fn verdict(s: &Setup, p: &ReproParams, report: ReproReport) -> ReproReport {
    let mut report = super::counted(report, &s.scene.cluster);
    let failure = s.scene.cluster.failures.first_state_error();
    if failure.is_none() {
        s.scene.checkers.check_end(&s.scene.cluster);
        check_sink(s);
    }
    report.violations = s.scene.checkers.violations();
    report.timeline = timeline(&s.scene.ctx.log.lines());
    if super::failed(&mut report, failure) {
        return report;
    }
    if p.mode == Mode::Buggy {
        return report.not_reproducible(
            "the scale-in left every actor of the sink with vnodes in one state".into(),
        );
    }
    report.notes.push(
        "recovery's scale-in skipped the sink's no-shuffle group (its backfill cannot be rescheduled); the \
         removed node's actors moved whole, and sink s equals its query"
            .into(),
    );
    report
}

/// The story: the node removed, recovery's scale-in, the backfill actors' recovered states, the failure.
fn timeline(lines: &[String]) -> Vec<String> {
    let Some(from) = lines.iter().position(|l| l.contains(" worker removed: ")) else {
        return Vec::new();
    };
    let keep = [
        " scenario: ",
        " worker removed: ",
        " recovery step: ",
        " backfill state recovered: ",
        " persist backfill state: ",
        " actor failure: ",
    ];
    let mut out: Vec<String> = lines[from.saturating_sub(1)..]
        .iter()
        .filter(|l| keep.iter().any(|k| l.contains(k)))
        .cloned()
        .collect();
    // An actor whose channel from the removed node closed is the removal's echo (a table's DML fragment
    // sends to every node); the story ends at the first other failure.
    let ends = |l: &String| l.contains(" actor failure: ") && !l.contains("reason=channel_closed");
    if let Some(i) = out.iter().position(ends) {
        out.truncate(i + 1);
    }
    let from = out.len().saturating_sub(40);
    out.split_off(from)
}
