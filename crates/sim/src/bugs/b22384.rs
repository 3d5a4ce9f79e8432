//! RisingWave #22384 (a PR, 2025-06): meta tracks, per in-flight epoch, the nodes it still has to collect from
//! (`node_to_collect`, each with whether the node had nothing to collect). On a worker's error,
//! `DatabaseCheckpointControl::is_valid_after_worker_err` walks the in-flight epochs in order and stops at the
//! first the worker's loss makes invalid; before the fix, `utils::is_valid_after_worker_err` removed the
//! worker's entry whatever it had to collect, so that first epoch, when the crashed worker was the only node
//! it still waited for, was left with nothing to collect. The database is reported failed; with per-database
//! isolation off (as in the PR's test, #22393) the error takes the global recovery path, whose `clear_on_err`
//! first completes the barriers already collected: that epoch is committed without the worker's data, and
//! recovery resumes from the new max committed epoch (silent data loss). Its toggle is [`OnWorkerErr`]
//! (declared in the barrier crate's `collect` module); its directed scenario is
//! [`scenario`], after RisingWave's `worker_crash_no_early_commit` test (PR #22393).
//!
//! The scenario: two compute nodes with disjoint actors. The table's actor runs on one (the survivor); a view
//! over it and a slow sink over it run on the other (the victim), so the victim collects each epoch with
//! data a sink delay after the survivor. Rows are inserted; once the survivor has collected their epoch E,
//! the victim is killed before it responds. Buggy: the first in-flight epoch the victim had not collected (E,
//! or one before it still held up by the slow sink) is committed without the victim by the global recovery
//! path, and the victim's view rows of it are lost; the checker I4 full-collection and the oracle (the view
//! against its query over the committed table) catch it. Fixed: no epoch the victim had not collected is
//! committed, and recovery resumes from the epoch before.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use epochlab_barrier::collect::OnWorkerErr;
use epochlab_common::Toggles;
use epochlab_common::plan::SinkKind;
use epochlab_common::{DataType, Epoch, Op, OwnedRow, TableId, WorkerId, event, row};
use epochlab_meta::{JobOptions, SinkOptions};
use futures::future::LocalBoxFuture;

use super::record::{Evidence, Record, Symptom, SymptomKind};
use super::{BugId, BugInfo, Mode, Origin, ScenarioError, ScenarioRun};
use crate::config::cluster_config_for;
use crate::report::{ReproReport, stuck_report};
use crate::repro::{ClusterHook, ReproParams};
use crate::runtime::SimContext;

pub const INFO: BugInfo = BugInfo {
    id: BugId::Rw22384,
    name: "22384",
    origin: Origin::RisingWave,
    mechanism: "a worker crashes while an epoch waits for it; meta's is_valid_after_worker_err, walking the \
                in-flight epochs in order, removes the worker from the first epoch that waits for its actors \
                and reports the database failed; the global recovery path (isolation off, as in the test PR \
                #22393) first completes the collected barriers (clear_on_err), so that epoch, left waiting for \
                nobody, is committed without the worker's data",
    fix: "PR #22384: on a worker's error, remove only a worker that had nothing to collect; the epoch that \
          waited for the worker's actors stays uncollected and recovery abandons it",
    links: &[
        "https://github.com/risingwavelabs/risingwave/pull/22384",
        "https://github.com/risingwavelabs/risingwave/pull/22393",
    ],
    modes: &[Mode::Buggy, Mode::Fixed],
    command: "cargo xtask repro --bug 22384",
    settings: &[],
    timeline: "the epoch, its collections, the kill, the commit, recovery",
    record: &RECORD,
    toggles,
    scenario: start,
};

const RECORD: Record = Record {
    refs: "PR #22384 (2025-06-27, \"fix incorrectly marking worker node as barrier collected\"), with its test in \
           PR #22393 (2025-07-02, worker_crash_no_early_commit.rs); no issue",
    symptom: Symptom {
        kind: SymptomKind::Silent,
        text: "no log line: the epoch is committed without the crashed worker's data, and recovery resumes from \
               that epoch",
        pattern: "",
        epochlab_pattern: "",
        panic_file: "",
        evidence: Evidence::Text,
    },
    site: "meta: barrier/utils.rs, `is_valid_after_worker_err` (removed a failed worker from an epoch's nodes to \
           collect whatever it had to collect), walked in order over the in-flight epochs by \
           `DatabaseCheckpointControl::is_valid_after_worker_err`; the commit is `clear_on_err` finishing the \
           collected front barriers (barrier/worker.rs)",
    differs: "one database, no creating-job barrier control, and a synchronous commit; the lost data shows as an \
              I4 full-collection and oracle violation after recovery, where RisingWave's test only checks that \
              `commit_epoch` is never called",
};

/// The engine's toggles of a run in `mode`: [`on_worker_err`]'s, the others fixed.
fn toggles(mode: Mode) -> Toggles {
    Toggles::default().with(on_worker_err(mode))
}

fn start(run: ScenarioRun) -> LocalBoxFuture<'static, ReproReport> {
    Box::pin(scenario(run.ctx, run.params, run.hook))
}

/// The barrier manager's rule on a worker's error in `mode`.
pub(crate) fn on_worker_err(mode: Mode) -> OnWorkerErr {
    match mode {
        Mode::Buggy => OnWorkerErr::RemoveAlways,
        _ => OnWorkerErr::RemoveIfNothingToCollect,
    }
}

/// Rows in the table before the fault.
const ROWS: i64 = 100;
/// The slow sink's time per chunk, above the barrier interval (1 s): the barrier after a chunk waits on the
/// victim's node for at least half a second after the survivor collected it.
const SINK_DELAY: Duration = Duration::from_millis(1500);
/// Budgets of the phases (virtual time).
const COLLECT_BUDGET: Duration = Duration::from_secs(10);
const RECOVERY_BUDGET: Duration = Duration::from_secs(120);

/// The fault's numbers, drawn from the seed before anything else (the same in both modes).
#[derive(Clone, Debug)]
struct Draw {
    /// Rows inserted in the epoch the victim will not collect.
    inserts: i64,
    /// The kill comes this long after the survivor collected (within the victim's sink delay).
    kill_after: Duration,
    restart_after: Duration,
}

impl Draw {
    fn from_seed(ctx: &SimContext) -> Self {
        let rng = &ctx.rng;
        Self {
            inserts: rng.range_u64(3..10) as i64,
            kill_after: rng.duration(Duration::ZERO..SINK_DELAY / 4),
            restart_after: rng.duration(Duration::from_millis(300)..Duration::from_secs(1)),
        }
    }
}

struct Setup {
    scene: super::Scene,
    table: TableId,
    view: TableId,
    survivor: WorkerId,
    victim: WorkerId,
}

impl AsRef<super::Scene> for Setup {
    fn as_ref(&self) -> &super::Scene {
        &self.scene
    }
}

/// What the fault did: the epoch the victim did not collect, and whether it had before the kill.
struct Fault {
    epoch: Epoch,
    victim_had_collected: bool,
}

/// The directed scenario of #22384.
pub(crate) async fn scenario(
    ctx: SimContext,
    p: ReproParams,
    hook: Option<ClusterHook>,
) -> ReproReport {
    let draw = Draw::from_seed(&ctx);
    let metas = p.meta_nodes;
    let setup = async |t| setup(&ctx, t, hook, metas).await;
    super::directed(
        &ctx,
        &p,
        format!(" plan={draw:?}"),
        setup,
        async |s| fault_and_recover(s, &draw).await,
        |s, fault, report| verdict(s, &p, &fault, report),
    )
    .await
}

fn table_row(k: i64) -> OwnedRow {
    row![k, 1i64, "payload"]
}

/// Two nodes; the table on one, a view and a slow sink over it on the other, all created.
async fn setup(
    ctx: &SimContext,
    t: Toggles,
    hook: Option<ClusterHook>,
    meta_nodes: u32,
) -> Result<Setup, ScenarioError> {
    let mut config = cluster_config_for(t, 16, 1000, 1, true);
    config.compute_nodes = 2;
    config.meta_nodes = meta_nodes;
    let (cluster, checkers) = super::start_cluster(ctx, config, t, hook).await;
    let meta = &cluster.meta();
    let types = vec![DataType::Int64, DataType::Int64, DataType::Varchar];
    let table = meta.create_table("t", types, vec![0], 1).await;
    let table = table.map_err(ScenarioError::ddl("create table"))?;
    let rows = (0..ROWS).map(|k| (Op::Insert, table_row(k))).collect();
    cluster.dml(table, rows).await?;
    meta.flush().await.map_err(ScenarioError::ddl("flush"))?;
    let job = JobOptions {
        parallelism: 1,
        rate_limit: None,
        background: false,
        scan_type: epochlab_meta::StreamScanType::ArrangementBackfill,
    };
    let view = meta.create_materialized_view("m", table, job.clone()).await;
    let view = view.map_err(ScenarioError::ddl("create view"))?;
    let sink = SinkOptions {
        kind: SinkKind::Blackhole,
        chunk_delay: SINK_DELAY,
        sink_rate_limit: None,
    };
    let sink = meta.create_sink("s", table, job, sink).await;
    let sink = sink.map_err(ScenarioError::ddl("create sink"))?;
    let workers = |id: TableId| -> BTreeSet<WorkerId> {
        let rel = meta
            .relation(id)
            .expect("created relations are in the catalog");
        let more = rel.sink_fragment.iter().flat_map(|f| f.actors.iter());
        rel.actors.iter().chain(more).map(|a| a.worker).collect()
    };
    let (on_table, on_view, on_sink) = (workers(table), workers(view), workers(sink));
    let (Some(&survivor), Some(&victim)) = (on_table.first(), on_view.first()) else {
        return Err(ScenarioError::Placement("the jobs have no actors".into()));
    };
    if on_table.len() != 1 || on_view != on_sink || on_view.contains(&survivor) {
        return Err(ScenarioError::Placement(format!(
            "the placement is not disjoint: table on {on_table:?}, view on {on_view:?}, sink on {on_sink:?}"
        )));
    }
    Ok(Setup {
        scene: super::Scene {
            ctx: ctx.clone(),
            cluster,
            checkers,
        },
        table,
        view,
        survivor,
        victim,
    })
}

/// Whether the event log shows `worker` collected the barrier whose prev is `epoch`.
fn collected(s: &Setup, epoch: Epoch, worker: WorkerId) -> bool {
    let needle = format!(" collect barrier: prev={epoch} worker={worker}");
    s.scene.ctx.log.lines().iter().any(|l| l.contains(&needle))
}

/// Insert rows, wait until the survivor collected their epoch, kill the victim before it responds, restart
/// it, and wait for recovery and a checkpoint after it.
async fn fault_and_recover(s: &Setup, draw: &Draw) -> Result<Fault, ScenarioError> {
    let rows = (ROWS..ROWS + draw.inserts)
        .map(|k| (Op::Insert, table_row(k)))
        .collect();
    s.scene.cluster.dml(s.table, rows).await?;
    // The rows are in the epoch after the last barrier injected: the next barrier's prev.
    let stats = s.scene.cluster.barrier_stats().clone();
    let epoch = Epoch(stats.last_injected_epoch.load(Ordering::Relaxed));
    let waited = tokio::time::timeout(COLLECT_BUDGET, async {
        while !collected(s, epoch, s.survivor) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    if waited.await.is_err() {
        return Err(ScenarioError::Stuck(stuck_report(
            &s.scene.cluster,
            "the survivor never collected",
        )));
    }
    tokio::time::sleep(draw.kill_after).await;
    let victim_had_collected = collected(s, epoch, s.victim);
    event!(
        s.scene.ctx.log,
        "scenario",
        "kill worker {} while epoch {epoch} waits for it (worker {} collected it)",
        s.victim,
        s.survivor
    );
    s.scene.cluster.kill(s.victim);
    tokio::time::sleep(draw.restart_after).await;
    s.scene.cluster.restart(s.victim);
    let recovered = tokio::time::timeout(RECOVERY_BUDGET, async {
        while stats.recoveries.load(Ordering::Relaxed) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        s.scene.cluster.wait_ready().await;
        s.scene.cluster.meta().flush().await
    });
    match recovered.await {
        Ok(Ok(())) => Ok(Fault {
            epoch,
            victim_had_collected,
        }),
        Ok(Err(e)) => Err(ScenarioError::Stuck(stuck_report(
            &s.scene.cluster,
            &format!("the flush failed: {e}"),
        ))),
        Err(_) => Err(ScenarioError::Stuck(stuck_report(
            &s.scene.cluster,
            "recovery did not finish",
        ))),
    }
}

fn verdict(s: &Setup, p: &ReproParams, fault: &Fault, report: ReproReport) -> ReproReport {
    let mut report = super::counted(report, &s.scene.cluster);
    s.scene.checkers.check_end(&s.scene.cluster);
    super::check_view(&s.scene.cluster, &s.scene.checkers, s.table, s.view);
    report.violations = s.scene.checkers.violations();
    report.timeline = timeline(&s.scene.ctx.log.lines());
    if super::failed(&mut report, s.scene.cluster.failures.first_state_error()) {
        return report;
    }
    if report.recoveries == 0 {
        return report.not_reproducible("no recovery happened".into());
    } else if p.mode == Mode::Buggy {
        let why = if fault.victim_had_collected {
            format!(
                "worker {} had collected epoch {} before it was killed",
                s.victim, fault.epoch
            )
        } else {
            format!("epoch {} was not committed before recovery", fault.epoch)
        };
        return report.not_reproducible(why);
    } else {
        let commit = format!(" commit epoch: epoch={} ", fault.epoch);
        let committed = s.scene.ctx.log.lines().iter().any(|l| l.contains(&commit));
        report.notes.push(if committed {
            format!("epoch {} was committed after every node collected it", fault.epoch)
        } else {
            format!(
                "epoch {} was never committed: recovery resumed from the epoch before it, and view m equals \
                 its query",
                fault.epoch
            )
        });
    }
    report
}

/// The story from the inserts to the end of the recovery.
fn timeline(lines: &[String]) -> Vec<String> {
    let from = lines
        .iter()
        .rposition(|l| l.contains(" scenario: kill worker"))
        .and_then(|i| {
            lines[..i]
                .iter()
                .rposition(|l| l.contains(" inject barrier: "))
        })
        .unwrap_or(0);
    let mut out = Vec::new();
    for l in &lines[from..] {
        let keep = [
            " scenario: ",
            " inject barrier: ",
            " collect barrier: ",
            " commit epoch: ",
            " kill node: ",
            " worker error: ",
            " clear on err: ",
            " barrier failed: ",
            " recovery",
        ]
        .iter()
        .any(|k| l.contains(k));
        if keep {
            out.push(l.clone());
        }
        if out.len() >= 40 || l.contains(" recovery: done") {
            break;
        }
    }
    out
}
