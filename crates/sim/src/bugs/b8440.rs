//! RisingWave #8440: a watermark filter's first read after a restart took the stored watermark of every vnode and
//! bailed unless all were set or none (`Watermark for vnodes should be either all None or all Some()`); but an
//! actor that never saw a row stores none for its vnodes, so a restart after rows reached only some actors
//! failed, and recovery failed again each time. Its toggle is [`WatermarkRecovery`] (declared beside the
//! watermark filter, read by stream's `build.rs`); its directed scenario is [`scenario`], after the issue's
//! manual repro (an append-only table with a watermark, rows, a restart).
//!
//! The scenario: a table with `WATERMARK FOR v AS v - 5` on `--parallelism` actors (two by default); one row,
//! which reaches one actor; a checkpoint, which stores that actor's watermark for its vnodes only (the others
//! take it from storage a checkpoint later, and store it one after that); then a compute node killed and
//! restarted. Buggy: the rebuilt filters fail on their first read. Fixed: they start from the largest stored
//! watermark, so a late row written after the restart is dropped and an on-time one kept (the oracle).

use std::time::Duration;

use epochlab_common::expr_node::ExprNode;
use epochlab_common::plan::ConflictBehavior;
use epochlab_common::{DataType, Op, OwnedRow, TableId, Toggles, WorkerId, event, row};
use epochlab_stream::executor::watermark_filter::WatermarkRecovery;
use futures::future::LocalBoxFuture;

use super::record::{Evidence, Record, Symptom, SymptomKind};
use super::{BugId, BugInfo, Mode, Origin, ScenarioError, ScenarioRun, Setting};
use crate::config::cluster_config_for;
use crate::report::ReproReport;
use crate::repro::{ClusterHook, ReproParams};
use crate::runtime::SimContext;

pub const INFO: BugInfo = BugInfo {
    id: BugId::Rw8440,
    name: "8440",
    origin: Origin::RisingWave,
    mechanism: "a watermark filter's first read after a restart bails unless every vnode has a stored watermark \
                or none has, but vnodes whose actor never saw a row have none (`Watermark for vnodes should be \
                either all None or all Some()`), so recovery fails again and again",
    fix: "take the largest of the stored watermarks, ignoring vnodes without one (#8442)",
    links: &[
        "https://github.com/risingwavelabs/risingwave/issues/8440",
        "https://github.com/risingwavelabs/risingwave/pull/8442",
    ],
    modes: &[Mode::Buggy, Mode::Fixed],
    command: "cargo xtask repro --bug 8440",
    settings: &[Setting::Parallelism, Setting::PersistCheck],
    timeline: "the table, the kill, the recovery, the filters' first read",
    record: &RECORD,
    toggles,
    scenario: start,
};

const RECORD: Record = Record {
    refs: "issue #8440 (2023-03-09), fixed by #8442 \"WatermarkFilter shouldn't asumed all vnodes have records\" \
           (05898de1685), the same day; found by a manual repro: an append-only table with a watermark, a \
           tumble aggregation over it, a restart",
    symptom: Symptom {
        kind: SymptomKind::ActorError,
        text: "Watermark for vnodes should be either all None or all Some()",
        pattern: "Watermark for vnodes should be either all None or all Some()",
        epochlab_pattern: "",
        panic_file: "",
        evidence: Evidence::Text,
    },
    site: "stream: executor/watermark_filter.rs, `WatermarkFilterExecutor::get_global_max_watermark` (b0906cef394), \
           the executor's first read after its first barrier",
    differs: "the read covers the vnodes of every actor of the table (this actor's table and a read-only copy \
              over the others, as at f21fb9b7915) where b0906cef394 read all 256 vnodes of one table; an actor \
              that saw no row takes the stored watermark at its next idle checkpoint (f21fb9b7915's alignment, \
              absent in 2023), which narrows the window to two checkpoints",
};

/// The engine's toggles of a run in `mode`: [`watermark_recovery`]'s, the others fixed.
fn toggles(mode: Mode) -> Toggles {
    Toggles::default().with(watermark_recovery(mode))
}

/// What the watermark filter's first read makes of vnodes without a watermark in `mode`.
pub(crate) fn watermark_recovery(mode: Mode) -> WatermarkRecovery {
    match mode {
        Mode::Buggy => WatermarkRecovery::AllOrNone,
        _ => WatermarkRecovery::MaxOfPresent,
    }
}

fn start(run: ScenarioRun) -> LocalBoxFuture<'static, ReproReport> {
    Box::pin(scenario(run.ctx, run.params, run.hook))
}

/// The watermark's lag behind the largest `v` seen.
const LAG: i64 = 5;
/// Virtual time the scenario waits for the restarted cluster (or for the filters to fail).
const RECOVERY_BUDGET: Duration = Duration::from_secs(30);

struct Setup {
    scene: super::Scene,
    table: TableId,
}

impl AsRef<super::Scene> for Setup {
    fn as_ref(&self) -> &super::Scene {
        &self.scene
    }
}

/// The directed scenario of #8440.
pub(crate) async fn scenario(
    ctx: SimContext,
    p: ReproParams,
    hook: Option<ClusterHook>,
) -> ReproReport {
    let setup = async |t| setup(&ctx, t, &p, hook).await;
    super::directed(
        &ctx,
        &p,
        String::new(),
        setup,
        restart_then_write,
        |s, (), report| verdict(s, &p, report),
    )
    .await
}

fn table_row(k: i64, v: i64) -> OwnedRow {
    row![k, v]
}

/// `v - LAG`, the watermark expression over the table's column `v` (position 1).
fn watermark_expr() -> ExprNode {
    ExprNode::bigint_minus(1, LAG)
}

/// Three nodes; table t (k, v) with pk k and `WATERMARK FOR v AS v - 5` on `--parallelism` actors; one row
/// (k 1, v 100), then a checkpoint: the actor it reached stores watermark 95 for its vnodes.
async fn setup(
    ctx: &SimContext,
    t: Toggles,
    p: &ReproParams,
    hook: Option<ClusterHook>,
) -> Result<Setup, ScenarioError> {
    let mut config = cluster_config_for(t, 16, 1000, 1, p.persist_check);
    config.meta_nodes = p.meta_nodes;
    let (cluster, checkers) = super::start_cluster(ctx, config, t, hook).await;
    let meta = &cluster.meta();
    let types = vec![DataType::Int64, DataType::Int64];
    let watermark = Some((1, watermark_expr()));
    let conflict = ConflictBehavior::NoCheck;
    let table = meta
        .create_table_with_conflict(
            "t",
            types,
            vec![0],
            vec![0],
            p.parallelism,
            conflict,
            watermark,
        )
        .await;
    let table = table.map_err(ScenarioError::ddl("create table"))?;
    cluster
        .dml(table, vec![(Op::Insert, table_row(1, 100))])
        .await?;
    meta.flush().await.map_err(ScenarioError::ddl("flush"))?;
    Ok(Setup {
        scene: super::Scene {
            ctx: ctx.clone(),
            cluster,
            checkers,
        },
        table,
    })
}

fn failed(s: &Setup) -> bool {
    s.scene.cluster.failures.first_state_error().is_some()
}

/// Kill a compute node and restart it; wait for the recovery (or for a filter to fail); then, recovered, a
/// late row (v 50, below 95) and an on-time one (v 97), and a checkpoint.
async fn restart_then_write(s: &Setup) -> Result<(), ScenarioError> {
    // A node of the table's materializing actors: its kill fails a barrier, which starts a recovery.
    let rel = s.scene.cluster.meta().relation(s.table);
    let victim = rel.map_or(WorkerId(1), |r| r.actors[0].worker);
    event!(
        s.scene.ctx.log,
        "scenario",
        "kill worker {victim} after the checkpoint"
    );
    s.scene.cluster.kill(victim);
    tokio::time::sleep(Duration::from_millis(500)).await;
    s.scene.cluster.restart(victim);
    let recovered = tokio::time::timeout(RECOVERY_BUDGET, async {
        while !failed(s) {
            if s.scene
                .cluster
                .barrier_stats()
                .recoveries
                .load(std::sync::atomic::Ordering::Relaxed)
                > 0
                && s.scene.cluster.meta().flush().await.is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    if recovered.await.is_err() {
        let report = crate::report::stuck_report(&s.scene.cluster, "the cluster did not recover");
        return Err(ScenarioError::Stuck(report));
    }
    if failed(s) {
        return Ok(());
    }
    let rows = vec![
        (Op::Insert, table_row(2, 50)),
        (Op::Insert, table_row(3, 97)),
    ];
    s.scene.cluster.dml(s.table, rows).await?;
    let flushed = s.scene.cluster.meta().flush().await;
    flushed.map_err(ScenarioError::ddl("flush after the restart"))
}

fn verdict(s: &Setup, p: &ReproParams, report: ReproReport) -> ReproReport {
    let mut report = super::counted(report, &s.scene.cluster);
    let failure = s.scene.cluster.failures.first_state_error();
    if failure.is_none() {
        s.scene.checkers.check_end(&s.scene.cluster);
    }
    report.violations = s.scene.checkers.violations();
    report.timeline = timeline(&s.scene.ctx.log.lines());
    if super::failed(&mut report, failure) {
        return report;
    }
    // The oracle: the rows written, less the one below the watermark 95 the restarted filters started from.
    let mut rows = s.scene.cluster.committed_rows(s.table);
    rows.sort_by_key(|r| format!("{r:?}"));
    let want = vec![table_row(1, 100), table_row(3, 97)];
    if rows != want {
        report.outcome = crate::report::Outcome::Failed;
        report.error = Some(format!(
            "table t holds {rows:?} after the restart, where the filters' watermark 95 keeps {want:?}"
        ));
        report.caught_by = Some("the oracle".into());
        return report;
    }
    if p.mode == Mode::Buggy {
        return report.not_reproducible(
            "every vnode had a stored watermark, or none had, when the filters were rebuilt".into(),
        );
    }
    report.notes.push(
        "the rebuilt filters started from the largest stored watermark (95): the late row was dropped".into(),
    );
    report
}

/// The story: the DDL, the scenario's steps, the recoveries' starts and the filters' failure (a channel
/// closed by the kill is its fallout, left out).
fn timeline(lines: &[String]) -> Vec<String> {
    super::state_failure_timeline(lines, " ddl: create table t ")
}
