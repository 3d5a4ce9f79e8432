//! RisingWave #12990: a background job created just before a failure, whose first barrier was never
//! collected (its fragments not committed: RisingWave's words), outlived the recovery after a failed barrier:
//! `clean_dirty_tables` ran only in a meta's bootstrap recovery. The recovery's progress step then looked
//! the job's fragments up, and meta panicked: `recover mview progress should not fail: table_fragment not
//! exist: id=N`. The fix cleans dirty tables in every recovery. Its toggle is [`CleanDirtyTables`]
//! (declared in meta's recovery, read by its clean step); its directed scenario is [`scenario`].
//!
//! The scenario: two compute nodes, a table of `--rows` rows, a view of it created in the background; once
//! the view's Add barrier is in flight, a compute node is killed, so the barrier fails and a recovery starts
//! (not a bootstrap: meta lives on). Buggy: the recovery keeps the view's job and its progress step panics.
//! Fixed: the recovery cleans the job (the CREATE fails, cleaned by recovery); the node restarts, the view is
//! created again, and it holds its query over every row (the oracle).

use std::time::Duration;

use epochlab_common::{TableId, Toggles, WorkerId, event};
use epochlab_meta::JobOptions;
use epochlab_meta::recovery::CleanDirtyTables;
use futures::future::LocalBoxFuture;

use super::record::{Evidence, Record, Symptom, SymptomKind};
use super::{BugId, BugInfo, Mode, Origin, ScenarioError, ScenarioRun, Setting};
use crate::report::ReproReport;
use crate::repro::{ClusterHook, ReproParams};
use crate::runtime::SimContext;

pub const INFO: BugInfo = BugInfo {
    id: BugId::Rw12990,
    name: "12990",
    origin: Origin::RisingWave,
    mechanism: "a background job whose first barrier was never collected is cleaned only in a meta's \
                bootstrap recovery: the recovery after a failed barrier keeps it, looks its fragments up for \
                its progress, and meta panics (`recover mview progress should not fail: table_fragment not \
                exist`)",
    fix: "clean dirty tables in every recovery (#12990)",
    links: &["https://github.com/risingwavelabs/risingwave/pull/12990"],
    modes: &[Mode::Buggy, Mode::Fixed],
    command: "cargo xtask repro --bug 12990",
    settings: &[Setting::Parallelism, Setting::Rows],
    timeline: "the tables, the background view, its Add barrier, the kill, the recovery that keeps the job",
    record: &RECORD,
    toggles,
    scenario: start,
};

const RECORD: Record = Record {
    refs: "PR #12990 (2023-10-22, merged as fcad5e1f127 on 2023-10-24, \"clean dirty tables for barrier \
           recovery\": \"after background MV created but before it receives first barrier, the cluster could be \
           killed [..] its table is persisted, but not its fragments\"; it also added a 5 s sleep before the kill \
           of `test_background_mv_barrier_recovery`); before it `recovery` called `clean_dirty_tables` only \
           `if bootstrap_recovery`. The thread prints no log: the text is the source's at fcad5e1f127^",
    symptom: Symptom {
        kind: SymptomKind::Panic,
        text: "recover mview progress should not fail: table_fragment not exist: id=N",
        pattern: "recover mview progress should not fail: table_fragment not exist: id=N",
        epochlab_pattern: "",
        panic_file: "recovery.rs",
        evidence: Evidence::Text,
    },
    site: "meta: barrier/recovery.rs, `GlobalBarrierManager::recovery` (fcad5e1f127^:246, the `expect` on \
           `recover_background_mv_progress`), whose `select_table_fragments_by_table_id` \
           (manager/catalog/fragment.rs:367) found no fragments for a background job `clean_dirty_tables` had \
           left (it ran only in a bootstrap recovery)",
    differs: "epochlab commits a job's row and its fragments (`Initial`) together, in f21fb9b7915's order, so \
              the job the recovery keeps has `Initial` fragments, which the PR's words call not committed, rather \
              than none; foreground jobs are cleaned in every recovery in both modes (RisingWave's own DDL path \
              cancelled them), and a create whose actors failed to build takes its job back itself, so the window \
              is the Add barrier in flight",
};

/// The engine's toggles of a run in `mode`: [`clean_dirty`]'s, the others fixed.
fn toggles(mode: Mode) -> Toggles {
    Toggles::default().with(clean_dirty(mode))
}

/// Which recoveries clean a background job whose Add barrier was never collected, in `mode`.
pub(crate) fn clean_dirty(mode: Mode) -> CleanDirtyTables {
    match mode {
        Mode::Buggy => CleanDirtyTables::Bootstrap,
        _ => CleanDirtyTables::EveryRecovery,
    }
}

fn start(run: ScenarioRun) -> LocalBoxFuture<'static, ReproReport> {
    Box::pin(scenario(run.ctx, run.params, run.hook))
}

/// Virtual time a step may take.
const BUDGET: Duration = Duration::from_secs(120);
/// The killed compute node starts again after this.
const RESTART_AFTER: Duration = Duration::from_millis(500);

struct Setup {
    scene: super::Scene,
    table: TableId,
    rows: usize,
    parallelism: usize,
}

impl AsRef<super::Scene> for Setup {
    fn as_ref(&self) -> &super::Scene {
        &self.scene
    }
}

/// The directed scenario of #12990.
pub(crate) async fn scenario(
    ctx: SimContext,
    p: ReproParams,
    hook: Option<ClusterHook>,
) -> ReproReport {
    let rows = p.rows.max(1);
    let setup = async |t| setup(&ctx, t, &p, hook, rows).await;
    super::directed(
        &ctx,
        &p,
        format!(" rows={rows}"),
        setup,
        kill_while_adding,
        |s, view, report| verdict(s, &p, view, report),
    )
    .await
}

/// Two compute nodes and `t` with `rows` rows ([`super::two_nodes_and_t`]).
async fn setup(
    ctx: &SimContext,
    t: Toggles,
    p: &ReproParams,
    hook: Option<ClusterHook>,
    rows: usize,
) -> Result<Setup, ScenarioError> {
    let (scene, table) = super::two_nodes_and_t(ctx, t, p, hook, rows).await?;
    Ok(Setup {
        scene,
        table,
        rows,
        parallelism: p.parallelism,
    })
}

/// CREATE the view `m` in the background and, once its Add barrier is injected, kill compute node 2 (the
/// barrier fails, and a recovery starts). Fixed (the run goes on): the node restarts, `m` is created again
/// (in the foreground), more rows come and a checkpoint. Returns the view.
async fn kill_while_adding(s: &Setup) -> Result<TableId, ScenarioError> {
    let (ctx, cluster) = (&s.scene.ctx, &s.scene.cluster);
    event!(
        ctx.log,
        "scenario",
        "create view m in the background; kill compute node 2 once its Add barrier is injected"
    );
    let meta = cluster.meta();
    let background = JobOptions {
        background: true,
        ..JobOptions::parallelism(s.parallelism)
    };
    let victim = WorkerId(2);
    let create = meta.create_materialized_view("m", s.table, background);
    let kill = async {
        let seen = ctx.log.lines().len();
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
            let adding = ctx.log.lines()[seen..]
                .iter()
                .any(|l| l.contains(" inject barrier: ") && l.contains(" mutation=add "));
            if adding {
                event!(
                    ctx.log,
                    "scenario",
                    "kill worker {victim}: m's Add barrier is in flight"
                );
                cluster.kill(victim);
                return;
            }
        }
    };
    let (created, ()) = tokio::join!(create, kill);
    drop(meta);
    if let Ok(view) = created {
        return Err(ScenarioError::NotShown(format!(
            "view m ({view}) was created before the recovery"
        )));
    }
    tokio::time::sleep(RESTART_AFTER).await;
    cluster.restart(victim);
    let ready = tokio::time::timeout(BUDGET, cluster.wait_meta_ready());
    if ready.await.is_err() {
        let report = crate::report::stuck_report(cluster, "the cluster did not recover");
        return Err(ScenarioError::Stuck(report));
    }
    event!(
        ctx.log,
        "scenario",
        "create view m again; insert {} rows more",
        s.rows
    );
    let options = JobOptions::parallelism(s.parallelism);
    let created = cluster
        .meta()
        .create_materialized_view("m", s.table, options)
        .await;
    let view = created.map_err(ScenarioError::ddl("create view m again"))?;
    cluster
        .dml(s.table, super::kv_rows(s.rows as i64..2 * s.rows as i64))
        .await?;
    let flushed = cluster.meta().flush().await;
    flushed.map_err(ScenarioError::ddl("flush after the recovery"))?;
    Ok(view)
}

fn verdict(s: &Setup, p: &ReproParams, view: TableId, report: ReproReport) -> ReproReport {
    let scene = &s.scene;
    let mut report = super::counted(report, &scene.cluster);
    super::check_view(&scene.cluster, &scene.checkers, s.table, view);
    scene.checkers.check_end(&scene.cluster);
    report.violations = scene.checkers.violations();
    report.timeline = super::state_failure_timeline(&scene.ctx.log.lines(), " ddl: create table t");
    if super::failed(&mut report, None) {
        return report;
    }
    if p.mode == Mode::Buggy {
        return report.not_reproducible(
            "the recovery met no background job whose Add barrier was never collected".to_string(),
        );
    }
    report.notes.push(format!(
        "the recovery cleaned m (its Add barrier never collected); created again, it holds all {} rows of t \
         ({} before the kill, {} after)",
        2 * s.rows,
        s.rows,
        s.rows
    ));
    report
}
