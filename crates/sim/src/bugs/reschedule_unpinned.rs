//! epochlab's own check, not a RisingWave bug: an online reschedule of a backfilling job (its vnodes moved
//! among its actors) is safe only if the new owner of a vnode reads the progress row and snapshot its old
//! owner wrote. The reschedule is RisingWave's `RescheduleFragment` between a `Pause(ConfigChange)` and a
//! `Resume`; the old owner's last row is written in the epoch the Pause closes, so the new owner reads it right
//! only once its node has pinned the version that commits that epoch. With the check's toggle at `fixed`, the
//! Pause's post-collect waits until every node has (`wait_epoch_commit`) before the Update goes out; at `buggy`
//! it returns at once: the Update arrives within milliseconds, the version tens or hundreds of milliseconds
//! later, and the new owner resumes from an older position. Its toggle is [`ConfigChangeWait`]
//! (declared and read in meta's post-collect of the Pause).
//!
//! The history, so that nobody takes this for a RisingWave bug: the `wait_epoch_commit` in the post-collect of
//! `Pause(ConfigChange)` came with RisingWave PR #5517 (2022, long before arrangement backfill), and was later
//! removed (#20493). RisingWave #19138, under which this scenario was once filed, is something else: a
//! no-shuffle backfill scaled in while it backfilled (see [`super::b19138`]). No RisingWave issue records the
//! failure this scenario shows; it checks the ordering epochlab's reschedule of a backfilling job rests on.
//!
//! The scenario: two nodes; a table whose rows lie almost all in the first half of the vnodes; a rate-limited
//! view over it in the background on two actors, so that the second actor (the second half) finishes early
//! while the first still backfills. Right after a barrier the view is rescheduled by swapping the halves: the
//! idle actor takes over the busy one's vnodes. Buggy: it resumes the vnode read in the Pause's epoch from the
//! position before, and its next persist of that vnode finds the newer row (the backfill persist check,
//! `backfill progress of vnode V in storage ... differs from the committed copy ...`). Fixed: it resumes where
//! the old owner stopped, and the view equals its query.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use epochlab_common::Toggles;
use epochlab_common::{ActorId, DataType, Op, OwnedRow, TableId, row};
use epochlab_meta::reschedule::ConfigChangeWait;
use epochlab_meta::{JobOptions, JobState};
use epochlab_rpc::RpcKind;
use epochlab_stream::executor::backfill::BackfillActorStats;
use futures::future::LocalBoxFuture;

use super::record::{Evidence, Record, Symptom, SymptomKind};
use super::{BugId, BugInfo, Mode, Origin, ScenarioError, ScenarioRun};
use crate::report::{ReproReport, stuck_report};
use crate::repro::{ClusterHook, ReproParams};
use crate::runtime::SimContext;

pub const INFO: BugInfo = BugInfo {
    id: BugId::RescheduleUnpinned,
    name: "reschedule-unpinned",
    origin: Origin::Epochlab,
    mechanism: "epochlab's own check, not a RisingWave bug: a backfilling job is rescheduled online (Pause, \
                Update with new vnode bitmaps, Resume) and the Update goes out before every node has pinned the \
                Pause's commit: the new owner of a vnode resumes from an older progress row than the one its old \
                owner wrote",
    fix: "what epochlab checks: the Pause's post-collect waits until every node has the Pause's epoch committed \
          (`wait_epoch_commit`, from RisingWave PR #5517, removed by #20493) before the Update, so each new \
          owner resumes where the old one stopped (the backfill persist check and the view's oracle)",
    links: &[
        "https://github.com/risingwavelabs/risingwave/pull/5517",
        "https://github.com/risingwavelabs/risingwave/pull/20493",
    ],
    modes: &[Mode::Buggy, Mode::Fixed],
    command: "cargo xtask repro --bug reschedule-unpinned",
    settings: &[],
    timeline: "the pause, its commit, the update, the new owners' progress reads and persists, the failure",
    record: &RECORD,
    toggles,
    scenario: start,
};

const RECORD: Record = Record {
    refs: "none: epochlab's own check of an online reschedule; the wait it needs is RisingWave's \
           `wait_epoch_commit` after a Pause(ConfigChange) (PR #5517, 2022; removed by #20493, 2025)",
    symptom: Symptom {
        kind: SymptomKind::OwnCheck,
        text: "epochlab's backfill persist check: backfill progress of vnode V in storage .. differs from the \
               committed copy ..",
        pattern: "",
        epochlab_pattern: "",
        panic_file: "",
        evidence: Evidence::Text,
    },
    site: "epochlab meta: the post-collect of a Pause(ConfigChange) (`MetaInner::wait_for_config_change`)",
    differs: "RisingWave has no such bug on record: it did not support rescheduling a backfilling job until PR \
              #23998, and its online reschedule is not modelled beyond this ordering",
};

/// The engine's toggles of a run in `mode`: [`config_change_wait`]'s, the others fixed.
fn toggles(mode: Mode) -> Toggles {
    Toggles::default().with(config_change_wait(mode))
}

fn start(run: ScenarioRun) -> LocalBoxFuture<'static, ReproReport> {
    Box::pin(scenario(run.ctx, run.params, run.hook))
}

/// What a reschedule's Pause waits for in `mode`.
pub(crate) fn config_change_wait(mode: Mode) -> ConfigChangeWait {
    match mode {
        Mode::Buggy => ConfigChangeWait::None,
        _ => ConfigChangeWait::EpochCommit,
    }
}

const VNODES: u32 = 16;
/// Rows in each vnode of the first actor's half; the second half holds [`FEW_ROWS`] in all.
const ROWS_PER_BUSY_VNODE: usize = 24;
const FEW_ROWS: usize = 2;
/// Snapshot rows per second per backfill actor: a chunk of this many rows a second.
const RATE_LIMIT: u32 = 8;
/// Long enough that the Pause (which waits behind the chunk flow control holds, up to a second after the
/// barrier before it) and the version that commits it both come before the next barrier.
const BARRIER_INTERVAL_MS: u64 = 3000;
/// Version deltas reach a node this long after the commit; barriers take 1 to 5 ms.
const VERSION_DELAY: std::ops::Range<Duration> =
    Duration::from_millis(200)..Duration::from_millis(400);
/// The reschedule goes this long after a barrier's injection.
const AFTER_BARRIER: Duration = Duration::from_millis(100);
/// DML rounds after the reschedule (the new owners run).
const UPDATE_ROUNDS: u32 = 10;
const UPDATE_EVERY: Duration = Duration::from_millis(200);
/// Budgets of the phases (virtual time).
const SETTLE_BUDGET: Duration = Duration::from_secs(60);
const CREATE_BUDGET: Duration = Duration::from_secs(120);

struct Setup {
    scene: super::Scene,
    table: TableId,
    view: TableId,
    progress_table: TableId,
    keys: Vec<i64>,
}

impl AsRef<super::Scene> for Setup {
    fn as_ref(&self) -> &super::Scene {
        &self.scene
    }
}

/// The directed scenario of the reschedule-unpinned check.
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
        reschedule_while_backfilling,
        |s, (), report| verdict(s, &p, report),
    )
    .await
}

fn table_row(k: i64, v: i64) -> OwnedRow {
    row![k, v]
}

/// Keys whose vnodes are `ROWS_PER_BUSY_VNODE` to each vnode of the first half, and `FEW_ROWS` in the second.
fn keys() -> Vec<i64> {
    super::skewed_keys(VNODES, ROWS_PER_BUSY_VNODE, FEW_ROWS)
}

/// Two nodes; table t (k, v) loaded; view m over it created in the background, rate-limited, on two actors
/// (one per node).
async fn setup(
    ctx: &SimContext,
    t: Toggles,
    hook: Option<ClusterHook>,
    meta_nodes: u32,
) -> Result<Setup, ScenarioError> {
    let (cluster, checkers) =
        super::start_two_nodes(ctx, t, hook, VNODES, BARRIER_INTERVAL_MS, meta_nodes).await;
    cluster
        .network
        .set_latency(RpcKind::VersionDelta, VERSION_DELAY);
    let meta = &cluster.meta();
    let types = vec![DataType::Int64, DataType::Int64];
    let table = meta.create_table("t", types, vec![0], 2).await;
    let table = table.map_err(ScenarioError::ddl("create table"))?;
    let keys = keys();
    let rows = keys
        .iter()
        .map(|k| (Op::Insert, table_row(*k, 0)))
        .collect();
    cluster.dml(table, rows).await?;
    meta.flush().await.map_err(ScenarioError::ddl("flush"))?;
    let job = JobOptions {
        parallelism: 2,
        rate_limit: Some(RATE_LIMIT),
        background: true,
        scan_type: epochlab_meta::StreamScanType::ArrangementBackfill,
    };
    let view = meta.create_materialized_view("m", table, job).await;
    let view = view.map_err(ScenarioError::ddl("create view"))?;
    let progress_table = meta
        .relation(view)
        .and_then(|r| r.progress_table.map(|d| d.table_id))
        .ok_or_else(|| ScenarioError::Placement("view m has no progress table".into()))?;
    Ok(Setup {
        scene: super::Scene {
            ctx: ctx.clone(),
            cluster,
            checkers,
        },
        table,
        view,
        progress_table,
        keys,
    })
}

fn creating(s: &Setup) -> bool {
    s.scene
        .cluster
        .meta()
        .relation(s.view)
        .is_some_and(|r| r.state == JobState::Creating)
}

fn failed(s: &Setup) -> bool {
    s.scene.cluster.failures.first_state_error().is_some()
}

/// The backfill stats of the view's actors, in the catalog's order (the first owns the busy half).
fn backfill_stats(s: &Setup) -> Result<Vec<Arc<BackfillActorStats>>, ScenarioError> {
    let rel = s
        .scene
        .cluster
        .meta()
        .relation(s.view)
        .ok_or_else(|| ScenarioError::Placement("view m is gone".into()))?;
    let actors: Vec<ActorId> = rel.actors.iter().map(|a| a.actor_id).collect();
    let all = s.scene.cluster.backfill.of_table(s.progress_table);
    Ok(actors
        .iter()
        .filter_map(|a| all.iter().find(|(b, _)| b == a).map(|(_, st)| st.clone()))
        .collect())
}

/// Whether the reschedule may come: the second actor has finished its backfill and the first has not; at most
/// one barrier is in flight (the first actor keeps up: the barrier it has not passed yet waits behind one
/// held chunk at most); every node has pinned meta's last commit (the first actor's progress before the
/// Pause's epoch is visible everywhere).
fn steady(s: &Setup) -> Result<bool, ScenarioError> {
    let stats = backfill_stats(s)?;
    let done = |i: usize| {
        stats
            .get(i)
            .is_some_and(|st| st.finished.load(Ordering::Relaxed))
    };
    let mce = s.scene.cluster.hummock.max_committed_epoch();
    let caught_up = s
        .scene
        .cluster
        .nodes()
        .iter()
        .all(|n| n.storage().max_committed_epoch() == mce);
    let in_flight = s
        .scene
        .cluster
        .barrier_stats()
        .in_flight
        .load(Ordering::Relaxed);
    Ok(done(1) && !done(0) && in_flight <= 1 && caught_up)
}

/// Update `rounds` random rows, one round every [`UPDATE_EVERY`], while the view is being created.
async fn update_rows(s: &Setup, rounds: u32) -> Result<(), ScenarioError> {
    let rng = &s.scene.ctx.rng;
    // The value each key holds: an update deletes that version and inserts the next.
    let mut values: BTreeMap<i64, i64> = BTreeMap::new();
    for _ in 0..rounds {
        if !creating(s) || failed(s) {
            break;
        }
        let mut picked = BTreeSet::new();
        for _ in 0..3 {
            picked.insert(s.keys[rng.range_u64(0..s.keys.len() as u64) as usize]);
        }
        let mut rows = Vec::new();
        for k in picked {
            let v = values.entry(k).or_insert(0);
            rows.push((Op::UpdateDelete, table_row(k, *v)));
            *v += 1;
            rows.push((Op::UpdateInsert, table_row(k, *v)));
        }
        s.scene.cluster.dml(s.table, rows).await?;
        tokio::time::sleep(UPDATE_EVERY).await;
    }
    Ok(())
}

/// Wait until the cluster is [`steady`] right after a barrier's injection.
async fn await_reschedule_point(s: &Setup) -> Result<(), ScenarioError> {
    let ready = tokio::time::timeout(SETTLE_BUDGET, async {
        loop {
            if !creating(s) || failed(s) {
                return Err(ScenarioError::Placement(
                    "the view was created (or failed) before the reschedule".into(),
                ));
            }
            if steady(s)? {
                // Right after a barrier's injection, and still steady: go.
                let injected = || {
                    s.scene
                        .cluster
                        .barrier_stats()
                        .injected
                        .load(Ordering::Relaxed)
                };
                let before = injected();
                while injected() == before {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                if steady(s)? {
                    return Ok(());
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    match ready.await {
        Ok(r) => r,
        Err(_) => Err(ScenarioError::Stuck(stuck_report(
            &s.scene.cluster,
            "the view's backfill did not reach the reschedule point",
        ))),
    }
}

/// Once the second actor has finished and the first has not, right after a barrier, swap the actors' vnodes;
/// then updates, which the new mapping routes to the new owners; then wait for the view (or a failure). No DML
/// before the reschedule: the first actor then reads whole chunks only, one a second, and the one it reads in
/// the Pause's epoch is the only one its new owner reads again (all at once, before that epoch's commit reaches
/// it: re-inserted rows the view's table cannot see yet).
async fn reschedule_while_backfilling(s: &Setup) -> Result<(), ScenarioError> {
    await_reschedule_point(s).await?;
    tokio::time::sleep(AFTER_BARRIER).await;
    let rel = s
        .scene
        .cluster
        .meta()
        .relation(s.view)
        .ok_or_else(|| ScenarioError::Placement("view m is gone".into()))?;
    let swapped = rel.rotated_vnodes(VNODES as usize / 2);
    s.scene
        .cluster
        .meta()
        .reschedule(s.view, swapped)
        .await
        .map_err(ScenarioError::ddl("reschedule"))?;
    // Past the new owners' first persist, then updates that the new mapping routes to them.
    tokio::time::sleep(Duration::from_millis(2 * BARRIER_INTERVAL_MS)).await;
    update_rows(s, UPDATE_ROUNDS).await?;
    super::await_created(&s.scene.cluster, s.view, CREATE_BUDGET).await
}

fn verdict(s: &Setup, p: &ReproParams, report: ReproReport) -> ReproReport {
    let mut report = super::counted(report, &s.scene.cluster);
    let failure = s.scene.cluster.failures.first_state_error();
    if failure.is_none() {
        // A failed backfill leaves the view unfinished: the oracle judges only a created view.
        s.scene.checkers.check_end(&s.scene.cluster);
        super::check_view(&s.scene.cluster, &s.scene.checkers, s.table, s.view);
    }
    report.violations = s.scene.checkers.violations();
    report.timeline = timeline(&s.scene.ctx.log.lines());
    if super::failed(&mut report, failure) {
        return report;
    }
    if p.mode == Mode::Buggy {
        return report.not_reproducible(
            "every new owner read the progress its vnodes' old owner had last written: the Pause's commit \
             reached the nodes before the Update did"
                .into(),
        );
    } else {
        report.notes.push(
            "the Update went out once every node had the Pause's epoch committed; each new owner resumed where \
             the old owner stopped; view m equals its query"
                .into(),
        );
    }
    report
}

/// The story of the reschedule: from the barrier before it, the Pause, its commit and versions, the Update, the
/// new owners' reads of their vnodes' progress, their persists, and the failure.
fn timeline(lines: &[String]) -> Vec<String> {
    let Some(ddl) = lines.iter().position(|l| l.contains(" ddl: reschedule ")) else {
        return Vec::new();
    };
    let from = lines[..ddl]
        .iter()
        .rposition(|l| l.contains(" inject barrier: "))
        .unwrap_or(ddl);
    let keep = [
        " ddl: ",
        " inject barrier: ",
        " commit epoch: ",
        " apply version: ",
        " wait epoch commit: ",
        " backfill vnodes: ",
        " persist backfill state: ",
        " actor failure: ",
    ];
    let mut out: Vec<String> = lines[from..]
        .iter()
        .filter(|l| keep.iter().any(|k| l.contains(k)))
        .cloned()
        .collect();
    if let Some(i) = out.iter().position(|l| l.contains(" actor failure: ")) {
        out.truncate(i + 1);
    } else {
        out.truncate(40);
    }
    let from = out.len().saturating_sub(40);
    out.split_off(from)
}
