//! RisingWave #5244 (and #5206): a recovery stopped the actors a live compute node still ran with a Stop
//! barrier (RisingWave's `force_stop_actors`, from #1702) whose epochs were the recovering meta's own, not
//! those the actors were at. After a meta restart the new meta's first epoch lies above every one stored, so
//! an actor with state met a barrier whose `prev` was not its epoch (RisingWave's hash agg asserted it:
//! `assertion failed: left == right`), and a merge whose upstreams had the last barrier in flight on one
//! node and not on another met two epochs (`Failed to align barrier: expected .. but got .. Stop(..)`); the
//! actor's error panicked its node (`actor failed`). #5444 aborts the actors instead. Its toggle is
//! [`ForceStopActors`] (declared in meta's recovery, read by its reset); its directed scenario is
//! [`scenario`].
//!
//! The scenario: two compute nodes, a table of `--rows` rows over both and a view of it; the meta leader is
//! killed and starts again 1 s later (#5206's steps), while the compute nodes and their actors live on. Its
//! bootstrap recovery resets the nodes. Buggy: the Stop barrier reaches the table's actors, whose state
//! tables refuse its `prev` (epochlab's state tables check every commit's `prev`, as RisingWave's do since,
//! and its hash agg did then). Fixed: the actors are aborted; after recovery, more rows reach the view,
//! which holds its query (the oracle).

use std::time::Duration;

use epochlab_common::{TableId, Toggles, event};
use epochlab_meta::JobOptions;
use epochlab_meta::recovery::ForceStopActors;
use futures::future::LocalBoxFuture;

use super::record::{Evidence, Record, Symptom, SymptomKind};
use super::{BugId, BugInfo, Mode, Origin, ScenarioError, ScenarioRun, Setting};
use crate::report::ReproReport;
use crate::repro::{ClusterHook, ReproParams};
use crate::runtime::SimContext;

pub const INFO: BugInfo = BugInfo {
    id: BugId::Rw5244,
    name: "5244",
    origin: Origin::RisingWave,
    mechanism: "recovery stops the actors a live node still runs with a Stop barrier whose epochs are the \
                recovering meta's, not theirs: after a meta restart an actor with state meets a `prev` that \
                is not its epoch, and a merge meets two epochs (`Failed to align barrier`)",
    fix: "abort every actor in the reset, with no barrier (#5444)",
    links: &[
        "https://github.com/risingwavelabs/risingwave/issues/5244",
        "https://github.com/risingwavelabs/risingwave/issues/5206",
        "https://github.com/risingwavelabs/risingwave/pull/5444",
    ],
    modes: &[Mode::Buggy, Mode::Fixed],
    command: "cargo xtask repro --bug 5244",
    settings: &[Setting::Parallelism, Setting::Rows],
    timeline: "the tables, the meta kill and restart, the Stop barrier, an actor's failure on its epoch",
    record: &RECORD,
    toggles,
    scenario: start,
};

const RECORD: Record = Record {
    refs: "issue #5244 (2022-09-09, the first `--kill-meta` runs of the simulation at 514609890: seeds 3, 7 and \
           10 `Failed to align barrier`, seeds 2 and 9 the hash agg's epoch assertion) and #5206 (2022-09-08, \
           a compute node panicked during meta recovery after a kill of meta restarted 1 s later); the Stop \
           barrier came with #1702 (2022-04, \"inject a stop barrier for all exist actors in living compute \
           nodes\"), fixed by #5444 (32cc640d693, 2022-09-22, \"make actor abortable and refine force stop all \
           actors when recovery\")",
    symptom: Symptom {
        kind: SymptomKind::Panic,
        text: "actor failed: Stream error: Failed to align barrier: expected Barrier { epoch: Epoch { curr: \
               2509046611443712, prev: 2509046595059712 }, mutation: None, checkpoint: true, passed_actors: [] } \
               but got Barrier { epoch: Epoch { curr: 2509046717677569, prev: 2509046717677568 }, mutation: \
               Some(Stop({12, 7, 8, 2, 11, 9, 10, 4, 3, 5, 6, 1})), checkpoint: true, passed_actors: [] }",
        pattern: "Failed to align barrier: expected Barrier { epoch: Epoch { curr: N, prev: N }",
        epochlab_pattern: "but the table is at epoch N",
        panic_file: "",
        evidence: Evidence::StopBarrierBefore,
    },
    site: "stream: executor/merge.rs (the merge's barrier alignment, `StreamExecutorError::align_barrier`, \
           error.rs:54 at 4a4e769995f), the error unwrapped by `actor failed` in task/stream_manager.rs; the \
           Stop barrier from meta's `reset_compute_nodes` (barrier/recovery.rs) through the compute node's \
           `force_stop_actors` and `stop_all_actors`",
    differs: "an actor error, not a panic; epochlab's state tables check each commit's `prev` (RisingWave's \
              do since; at the bug only its hash agg did), so a table's actor refuses the Stop barrier first \
              (`table N: commit of EpochPair { .. }, but the table is at epoch N`: the check of RisingWave's \
              second symptom, the hash agg's assertion; triage takes it for this entry only after a reset's \
              Stop barrier) \
              and a merge sees the two epochs only where its upstreams hold no state; the Stop's `prev` is the \
              next epoch of the recovering meta at every recovery (RisingWave's after a failure was the failed \
              barrier's `prev`); a reset waits 10 s at most for the Stop (RisingWave's waited for good)",
};

/// The engine's toggles of a run in `mode`: [`force_stop`]'s, the others fixed.
fn toggles(mode: Mode) -> Toggles {
    Toggles::default().with(force_stop(mode))
}

/// How a reset stops the actors in `mode`.
pub(crate) fn force_stop(mode: Mode) -> ForceStopActors {
    match mode {
        Mode::Buggy => ForceStopActors::StopBarrier,
        _ => ForceStopActors::Abort,
    }
}

fn start(run: ScenarioRun) -> LocalBoxFuture<'static, ReproReport> {
    Box::pin(scenario(run.ctx, run.params, run.hook))
}

/// The killed meta starts again after this (#5206's steps).
const RESTART_AFTER: Duration = Duration::from_secs(1);
/// Virtual time the cluster may take to recover.
const RECOVERY_BUDGET: Duration = Duration::from_secs(120);

struct Setup {
    scene: super::Scene,
    table: TableId,
    view: TableId,
    rows: usize,
}

impl AsRef<super::Scene> for Setup {
    fn as_ref(&self) -> &super::Scene {
        &self.scene
    }
}

/// The directed scenario of #5244.
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
        kill_and_restart_meta,
        |s, (), report| verdict(s, &p, report),
    )
    .await
}

/// Two compute nodes, `t` with `rows` rows ([`super::two_nodes_and_t`]), and the view `m` of it.
async fn setup(
    ctx: &SimContext,
    t: Toggles,
    p: &ReproParams,
    hook: Option<ClusterHook>,
    rows: usize,
) -> Result<Setup, ScenarioError> {
    let (scene, table) = super::two_nodes_and_t(ctx, t, p, hook, rows).await?;
    let options = JobOptions::parallelism(p.parallelism);
    let created = scene
        .cluster
        .meta()
        .create_materialized_view("m", table, options)
        .await;
    let view = created.map_err(ScenarioError::ddl("create view"))?;
    super::await_created(&scene.cluster, view, RECOVERY_BUDGET).await?;
    Ok(Setup {
        scene,
        table,
        view,
        rows,
    })
}

/// Kill the meta leader (the compute nodes live on) and start it again after [`RESTART_AFTER`]; wait for the
/// recovery (or an actor's failure), then insert as many rows again and checkpoint.
async fn kill_and_restart_meta(s: &Setup) -> Result<(), ScenarioError> {
    let (ctx, cluster) = (&s.scene.ctx, &s.scene.cluster);
    let leader = cluster.meta_leader().unwrap_or(1);
    event!(
        ctx.log,
        "scenario",
        "kill meta-{leader}, the compute nodes live on; restart it after {} ms",
        RESTART_AFTER.as_millis()
    );
    cluster.kill_meta_node(leader);
    tokio::time::sleep(RESTART_AFTER).await;
    cluster.restart_meta_node(leader);
    let failed = || cluster.failures.first_state_error().is_some();
    let recovered = tokio::time::timeout(RECOVERY_BUDGET, async {
        loop {
            let meta = cluster.meta();
            let ready = !meta.is_killed()
                && meta.scheduler().status() == epochlab_barrier::SchedulerStatus::Ready;
            drop(meta);
            if ready || failed() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    if recovered.await.is_err() {
        let report = crate::report::stuck_report(cluster, "the cluster did not recover");
        return Err(ScenarioError::Stuck(report));
    }
    if failed() {
        return Ok(());
    }
    event!(ctx.log, "scenario", "insert {} rows more", s.rows);
    let more = super::kv_rows(s.rows as i64..2 * s.rows as i64);
    cluster.dml(s.table, more).await?;
    let flushed = cluster.meta().flush().await;
    flushed.map_err(ScenarioError::ddl("flush after the recovery"))
}

fn verdict(s: &Setup, p: &ReproParams, report: ReproReport) -> ReproReport {
    let scene = &s.scene;
    let mut report = super::counted(report, &scene.cluster);
    let failure = scene.cluster.failures.first_state_error();
    if failure.is_none() {
        super::check_view(&scene.cluster, &scene.checkers, s.table, s.view);
        scene.checkers.check_end(&scene.cluster);
    }
    report.violations = scene.checkers.violations();
    report.timeline = timeline(&scene.ctx.log.lines());
    if super::failed(&mut report, failure) {
        return report;
    }
    if p.mode == Mode::Buggy {
        return report.not_reproducible(
            "no actor survived the meta restart to meet the Stop barrier".to_string(),
        );
    }
    report.notes.push(format!(
        "the reset aborted every actor; after the recovery the view holds all {} rows of t ({} before the \
         kill, {} after)",
        2 * s.rows,
        s.rows,
        s.rows
    ));
    report
}

/// The story: the tables, the kill and restart, the recovery's reset (its Stop barrier, each node's), the
/// first actor failure on its epoch.
fn timeline(lines: &[String]) -> Vec<String> {
    let start = lines.iter().position(|l| l.contains(" ddl: ")).unwrap_or(0);
    let failure = |l: &String| l.contains(" actor failure: ") && l.contains("reason=epoch_order");
    let keep = |l: &String| {
        [
            " scenario: ",
            " ddl: create",
            " kill meta: ",
            " lead meta: ",
            " recovery: start ",
            "stop actors",
            " reset node: ",
        ]
        .iter()
        .any(|k| l.contains(k))
            || failure(l)
    };
    let mut out: Vec<String> = lines[start..].iter().filter(|l| keep(l)).cloned().collect();
    if let Some(i) = out.iter().position(failure) {
        out.truncate(i + 1);
    }
    let from = out.len().saturating_sub(40);
    out.split_off(from)
}
