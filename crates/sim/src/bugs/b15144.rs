//! RisingWave #15144: meta drops a job from the catalog at once and unregisters its state tables from storage
//! later: after the Stop barrier, or in recovery. Recovery pre-applies the drops and cancels buffered while it
//! runs (`pre_apply_drop_cancel`); before PR #15355 a pre-applied cancel of a creating job dropped its fragments
//! but never unregistered its tables, and that PR says this "might cause" #15144. Storage then keeps the tables
//! in their compaction group while the catalog no longer knows them. A compaction task narrows its table ids to
//! those whose data its input holds; when that input holds the orphan's data, the compactor cannot fetch the
//! table's filter key extractor and fails the task, logging `Failed to fetch filter key extractor tables
//! [{..}. [[..]] may be removed by meta-service. ` (RisingWave's `compactor_runner.rs`; #15144's title speaks
//! of "inconsistency table info between catalog and hummock"). The failing sub-levels stay, the group's L0
//! grows with every commit until its writes stop, and then no barrier completes until meta restarts and
//! purges: that stall is the story of #16511 and #20010 (the same orphan left by a drop). The mirror image of
//! #14910, where the unregister came too early. Its toggle is [`PreApplyCancel`]
//! (declared and read in meta's `Recovery::pre_apply_drops`); its directed scenario is
//! [`scenario`].
//!
//! The scenario: two nodes, RisingWave's static compaction groups (a table and a view share group 3); a
//! table loaded, a view over it created in the background with a slow backfill. Once group 3's L0 holds the
//! view's data, a node is killed; while recovery retries its attempts, the node comes back and the user
//! cancels the view, so the cancel is buffered and recovery pre-applies it after the reset. Then rows keep
//! arriving in the table. Buggy: the view's tables stay registered (I3 table-set after recovery), the next
//! compaction task of group 3 reads the view's data and fails, its writes stop at the limit and the barriers
//! stall. Fixed: the tables are unregistered, group 3 compacts, every row commits.

use std::time::Duration;

use epochlab_common::Toggles;
use epochlab_common::{DataType, Op, OwnedRow, TableId, WorkerId, event, row};
use epochlab_meta::recovery::PreApplyCancel;
use epochlab_meta::{GroupPlacement, JobOptions, MATERIALIZED_VIEW_GROUP};
use epochlab_storage::{CompactionConfig, GroupCompaction, GroupId};
use futures::future::LocalBoxFuture;

use super::record::{Evidence, Record, Symptom, SymptomKind};
use super::{BugId, BugInfo, Mode, Origin, ScenarioError, ScenarioRun};
use crate::cluster::Cluster;
use crate::config::cluster_config_for;
use crate::report::{Outcome, ReproReport, barrier_report, stuck_report, write_stop_report};
use crate::repro::{ClusterHook, ReproParams};
use crate::runtime::SimContext;

pub const INFO: BugInfo = BugInfo {
    id: BugId::Rw15144,
    name: "15144",
    origin: Origin::RisingWave,
    mechanism: "recovery pre-applies a buffered CANCEL of a creating job and never unregisters its tables \
                (PR #15355: this \"might cause\" #15144): storage keeps them while the catalog forgets them; a \
                compaction task whose input holds their data fails (`Failed to fetch filter key extractor \
                tables [..]. [..] may be removed by meta-service.`), and its group's L0 grows to the write \
                stop, where barriers stall (the stall of #16511 and #20010)",
    fix: "PR #15355: recovery's pre-apply of a cancel unregisters the job's tables as it does a drop's \
          (`pre_apply_drop_cancel`)",
    links: &[
        "https://github.com/risingwavelabs/risingwave/issues/15144",
        "https://github.com/risingwavelabs/risingwave/pull/15355",
        "https://github.com/risingwavelabs/risingwave/issues/16511",
        "https://github.com/risingwavelabs/risingwave/pull/20010",
    ],
    modes: &[Mode::Buggy, Mode::Fixed],
    command: "cargo xtask repro --bug 15144",
    settings: &[],
    timeline: "the kill, recovery's pre-apply of the cancel, unregisters, compaction, the write stop",
    record: &RECORD,
    toggles,
    scenario: start,
};

const RECORD: Record = Record {
    refs: "issue #15144 (2024-02-20, titled \"inconsistency table info between catalog and hummock\"); PR #15355 \
           (recovery's `pre_apply_drop_cancel` never unregistered a cancelled job's tables; it \"might cause\" \
           #15144); the write-stop deadlock is #16511 and #20010 (a dropped-tables cache in the catalog)",
    symptom: Symptom {
        kind: SymptomKind::LoggedLine,
        text: "Failed to fetch filter key extractor tables [{1, 2}. [[2]] may be removed by meta-service. ",
        pattern: "Failed to fetch filter key extractor tables [{N}. [[N]] may be removed by meta-service.",
        epochlab_pattern: "",
        panic_file: "",
        evidence: Evidence::RemovedTablesOutliveRecovery,
    },
    site: "storage: hummock/compactor/compactor_runner.rs, `compact` (an error log, then the task ends \
           `ExecuteFailed`): the task's table ids are those its input SSTs hold, filtered by the group's \
           `existing_table_ids`, then fetched from the filter key extractor manager; the cause in meta: \
           recovery's `pre_apply_drop_cancel`",
    differs: "a task reads the whole L0 but not the base level's overlapping files; the ids print sorted (a \
              HashSet in RisingWave); the catalog lookup is a call, not an RPC; the stall is #16511's write \
              stop, which the record ties to #16511 and #20010, not to #15144 itself",
};

/// The engine's toggles of a run in `mode`: [`pre_apply_cancel`]'s, the others fixed.
fn toggles(mode: Mode) -> Toggles {
    Toggles::default().with(pre_apply_cancel(mode))
}

fn start(run: ScenarioRun) -> LocalBoxFuture<'static, ReproReport> {
    Box::pin(scenario(run.ctx, run.params, run.hook))
}

/// What recovery's pre-apply of a cancel does with the job's tables in `mode`.
pub(crate) fn pre_apply_cancel(mode: Mode) -> PreApplyCancel {
    match mode {
        Mode::Buggy => PreApplyCancel::KeepRegistered,
        _ => PreApplyCancel::Unregister,
    }
}

/// The cluster's pace: a checkpoint every barrier.
const INTERVAL: Duration = Duration::from_millis(100);
/// Rows loaded, and the view's backfill rate per actor: it backfills for far longer than the scenario runs.
const ROWS: i64 = 400;
const RATE_LIMIT: u32 = 4;
/// Writes go on for this many rounds past the write-stop limit, one round per barrier interval.
const ROUNDS_PAST_LIMIT: u32 = 40;
/// Barrier intervals without a commit while rows keep arriving: a stall.
const STALL_INTERVALS: u32 = 20;
/// Budgets of the phases (virtual time).
const RECOVERY_BUDGET: Duration = Duration::from_secs(60);
const L0_BUDGET: Duration = Duration::from_secs(5);
/// The static group of the table's and the view's own state (RisingWave's `MaterializedView` group, 3): the
/// table's rows keep coming to it after the cancel.
const VIEW_GROUP: GroupId = MATERIALIZED_VIEW_GROUP;

/// The run's numbers, drawn from the seed before anything else (the same in both modes).
#[derive(Clone, Debug)]
struct Draw {
    /// Which node is killed (both host actors of the table and of the view).
    victim: WorkerId,
    /// How long the view backfills before the kill.
    kill_after: Duration,
    /// Rows inserted per round.
    rows_per_round: i64,
}

impl Draw {
    fn from_seed(ctx: &SimContext) -> Self {
        let rng = &ctx.rng;
        Self {
            victim: WorkerId(1 + rng.range_u64(0..2) as u32),
            kill_after: rng.duration(Duration::from_millis(500)..Duration::from_millis(1500)),
            rows_per_round: rng.range_u64(2..8) as i64,
        }
    }
}

struct Setup {
    scene: super::Scene,
    table: TableId,
    view: TableId,
    /// The view's state tables: its own and its backfill's progress table.
    view_tables: Vec<TableId>,
    limit: CompactionConfig,
}

impl AsRef<super::Scene> for Setup {
    fn as_ref(&self) -> &super::Scene {
        &self.scene
    }
}

/// How the writes after recovery ended.
enum Writes {
    /// Every round went through and a flush committed them: the rows the table must hold.
    Committed { rows: i64 },
    /// No epoch committed for [`STALL_INTERVALS`]: what the barrier manager waits for.
    Stalled { since_us: u64, waiting: String },
}

/// The directed scenario of #15144.
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
        format!(" draw={draw:?}"),
        setup,
        async |s| {
            kill_and_cancel(s, &draw).await?;
            write_rows(s, &draw).await
        },
        |s, writes, report| verdict(s, &p, writes, report),
    )
    .await
}

fn table_row(k: i64) -> OwnedRow {
    row![k, 0i64, "payload"]
}

/// Two nodes with RisingWave's static compaction groups; table t loaded and flushed; view m over it created
/// in the background, its backfill rate-limited on two actors.
async fn setup(
    ctx: &SimContext,
    t: Toggles,
    hook: Option<ClusterHook>,
    meta_nodes: u32,
) -> Result<Setup, ScenarioError> {
    let mut config = cluster_config_for(t, 16, INTERVAL.as_millis() as u64, 1, true);
    config.compute_nodes = 2;
    config.meta.compaction_groups = GroupPlacement::Static;
    config.meta_nodes = meta_nodes;
    let limit = config.compaction;
    let (cluster, checkers) = super::start_cluster(ctx, config, t, hook).await;
    let meta = &cluster.meta();
    let types = vec![DataType::Int64, DataType::Int64, DataType::Varchar];
    let table = meta.create_table("t", types, vec![0], 2).await;
    let table = table.map_err(ScenarioError::ddl("create table"))?;
    let rows = (0..ROWS).map(|k| (Op::Insert, table_row(k))).collect();
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
    let view_tables = meta
        .relation(view)
        .map(|r| r.state_tables())
        .unwrap_or_default();
    Ok(Setup {
        scene: super::Scene {
            ctx: ctx.clone(),
            cluster,
            checkers,
        },
        table,
        view,
        view_tables,
        limit,
    })
}

/// Whether recovery's second attempt (the first failed: the victim was dead) is migrating actors: it has
/// pre-applied what was buffered and will reset the nodes next.
fn second_attempt_migrating(lines: &[String]) -> bool {
    let Some(attempt) = lines
        .iter()
        .rposition(|l| l.contains(" recovery: attempt=2"))
    else {
        return false;
    };
    lines[attempt..]
        .iter()
        .any(|l| l.contains(" recovery step: migrate actors "))
}

/// Whether group 3's L0 holds data of the view's tables: what a compaction task of the group then reads.
fn view_data_in_l0(s: &Setup) -> bool {
    s.scene
        .cluster
        .hummock
        .group_compaction()
        .get(&VIEW_GROUP)
        .is_some_and(|g| s.view_tables.iter().any(|t| g.l0_tables.contains(t)))
}

/// Let the view backfill, kill a node as soon as group 3's L0 holds the view's data, and once recovery's
/// second attempt is migrating actors, start the node again and cancel the view: the cancel is buffered and
/// recovery pre-applies it after the reset.
async fn kill_and_cancel(s: &Setup, draw: &Draw) -> Result<(), ScenarioError> {
    let cluster = &s.scene.cluster;
    tokio::time::sleep(draw.kill_after).await;
    let in_l0 = tokio::time::timeout(L0_BUDGET, async {
        while !view_data_in_l0(s) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    if in_l0.await.is_err() {
        return Err(ScenarioError::NotShown(format!(
            "group {VIEW_GROUP}'s L0 never held the view's data for {} ms: no compaction task would read it",
            L0_BUDGET.as_millis()
        )));
    }
    if cluster.meta().backfill_progress(s.view).is_none() {
        return Err(ScenarioError::NotShown(
            "the view finished its backfill before the kill: there is nothing to cancel".into(),
        ));
    }
    event!(s.scene.ctx.log, "scenario", "kill worker {}", draw.victim);
    cluster.kill(draw.victim);
    let waited = tokio::time::timeout(RECOVERY_BUDGET, async {
        while !second_attempt_migrating(&s.scene.ctx.log.lines()) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    if waited.await.is_err() {
        return Err(ScenarioError::Stuck(stuck_report(
            cluster,
            "recovery never retried after the kill",
        )));
    }
    cluster.restart(draw.victim);
    event!(
        s.scene.ctx.log,
        "scenario",
        "worker {} is back; cancel view m while recovery runs",
        draw.victim
    );
    let canceller = {
        let cluster = cluster.clone();
        let view = s.view;
        tokio::spawn(async move { cluster.meta().cancel_job(view).await })
    };
    let done = tokio::time::timeout(RECOVERY_BUDGET, async {
        let result = canceller.await;
        cluster.wait_ready().await;
        result
    });
    match done.await {
        Ok(Ok(result)) => {
            let ok = result.is_ok();
            event!(s.scene.ctx.log, "scenario", "cancel returned ok={ok}");
            Ok(())
        }
        Ok(Err(e)) => Err(ScenarioError::Stuck(format!(
            "the cancel's task failed: {e}"
        ))),
        Err(_) => Err(ScenarioError::Stuck(stuck_report(
            cluster,
            "the cancel or the recovery did not finish",
        ))),
    }
}

/// Insert rows every barrier interval for the write-stop limit and [`ROUNDS_PAST_LIMIT`] more rounds, then
/// flush; stop early at a stall.
async fn write_rows(s: &Setup, draw: &Draw) -> Result<Writes, ScenarioError> {
    let cluster = &s.scene.cluster;
    let rounds = s.limit.write_stop_sub_levels + ROUNDS_PAST_LIMIT;
    let stall = INTERVAL * STALL_INTERVALS;
    event!(
        s.scene.ctx.log,
        "scenario",
        "insert rows for {rounds} rounds"
    );
    let mut next = ROWS;
    let mut last = (
        cluster.hummock.max_committed_epoch(),
        s.scene.ctx.clock.elapsed_us(),
    );
    for _ in 0..rounds {
        let rows = (next..next + draw.rows_per_round)
            .map(|k| (Op::Insert, table_row(k)))
            .collect();
        cluster.dml(s.table, rows).await?;
        next += draw.rows_per_round;
        tokio::time::sleep(INTERVAL).await;
        let (mce, now) = (
            cluster.hummock.max_committed_epoch(),
            s.scene.ctx.clock.elapsed_us(),
        );
        if mce != last.0 {
            last = (mce, now);
        } else if now - last.1 >= stall.as_micros() as u64 {
            let waiting = barrier_report(cluster, "barriers");
            event!(
                s.scene.ctx.log,
                "scenario",
                "stalled: no commit for {} ms",
                stall.as_millis()
            );
            return Ok(Writes::Stalled {
                since_us: last.1,
                waiting,
            });
        }
    }
    let flushed = tokio::time::timeout(stall, cluster.meta().flush()).await;
    match flushed {
        Ok(Ok(())) => Ok(Writes::Committed { rows: next }),
        Ok(Err(e)) => Err(ScenarioError::ddl("the flush failed")(e)),
        Err(_) => Ok(Writes::Stalled {
            since_us: last.1,
            waiting: barrier_report(cluster, "the flush did not commit"),
        }),
    }
}

/// The group whose writes are stopped, if any, with its state.
fn stopped_group(cluster: &Cluster) -> Option<(GroupId, GroupCompaction)> {
    cluster.hummock.write_stopped_groups().into_iter().next()
}

fn secs(us: u64) -> String {
    format!("{:.3} s", us as f64 / 1e6)
}

/// The stall in one line: since when no barrier completed, the group whose writes stopped, why compaction
/// failed, and what the barrier manager waits for.
fn stall_error(s: &Setup, since_us: u64, waiting: &str) -> String {
    let blocked = write_stop_report(&s.scene.cluster)
        .unwrap_or_else(|| "no compaction group's writes are stopped".into());
    let limit = s.limit.write_stop_sub_levels;
    format!(
        "stalled: no barrier completed since {} (write-stop limit {limit}): {blocked}; {waiting}",
        secs(since_us)
    )
}

fn verdict(s: &Setup, p: &ReproParams, writes: Writes, report: ReproReport) -> ReproReport {
    let mut report = super::counted(report, &s.scene.cluster);
    let stalled = match &writes {
        Writes::Stalled { since_us, waiting } => Some(stall_error(s, *since_us, waiting)),
        Writes::Committed { rows } => {
            s.scene.checkers.check_end(&s.scene.cluster);
            check_table(s, *rows);
            None
        }
    };
    report.violations = s.scene.checkers.violations();
    report.timeline = timeline(s);
    let i3 = report
        .violations
        .iter()
        .any(|v| v.invariant == "I3 table-set");
    if let Some(error) = stalled {
        report.outcome = Outcome::Failed;
        report.error = Some(error);
        report.caught_by = Some(if i3 {
            "I3 table-set checker (after recovery), then the stall of the write stop".into()
        } else {
            "the stall of the write stop".into()
        });
        report.notes.push(
            "RisingWave stays stalled until meta restarts: its rectification purges the tables the catalog \
             does not know"
                .into(),
        );
    } else if let Some(v) = report.violations.first() {
        report.outcome = Outcome::Failed;
        report.error = Some(v.to_string());
        report.caught_by = Some(format!("{} checker", v.invariant));
    } else if p.mode == Mode::Buggy {
        return report.not_reproducible(why_buggy_passed(s));
    } else {
        report.notes.push(how_it_passed(s));
    }
    report
}

/// (oracle) Table t holds every row loaded and inserted.
fn check_table(s: &Setup, rows: i64) {
    let got = s.scene.cluster.committed_rows(s.table).len() as i64;
    if got != rows {
        let mut v = crate::report::Violation::new(
            "oracle",
            format!("table t has {got} rows committed, {rows} were written"),
        );
        v.table = Some(s.table.0);
        s.scene.checkers.violation(v);
    }
}

/// Where the cancelled view's tables went, from the event log.
fn cancel_story(s: &Setup) -> String {
    let tables = format!("{:?}", s.view_tables);
    let lines = s.scene.ctx.log.lines();
    let names: Vec<String> = s.view_tables.iter().map(|t| format!("{t:?}")).collect();
    let unregistered = lines.iter().find(|l| {
        l.contains(" unregister tables: ") && names.iter().all(|n| l.contains(n.as_str()))
    });
    match unregistered {
        Some(l) => format!(
            "the cancelled view's tables {tables} were unregistered: {}",
            l.trim()
        ),
        None => format!("the cancelled view's tables {tables} were never unregistered"),
    }
}

fn how_it_passed(s: &Setup) -> String {
    let max = s
        .scene
        .cluster
        .hummock
        .compaction_stats()
        .max_sub_levels
        .load(std::sync::atomic::Ordering::Relaxed);
    format!(
        "{}; every compaction of group 3 then succeeded (at most {max} L0 sub-levels, the write stop is at {}) \
         and every row committed",
        cancel_story(s),
        s.limit.write_stop_sub_levels
    )
}

fn why_buggy_passed(s: &Setup) -> String {
    let lines = s.scene.ctx.log.lines();
    let again = lines
        .iter()
        .any(|l| l.contains(" pre-apply cancel ") && l.contains(&format!("job={}", s.view)));
    if !again {
        return format!(
            "recovery never pre-applied the cancel (its barrier ran after recovery); {}",
            cancel_story(s)
        );
    }
    format!(
        "the cancel was pre-applied, but its tables did not stay registered: {}",
        cancel_story(s)
    )
}

/// The story: the DDL, the kill, recovery's attempts and pre-applies, unregisters, the write stop and the
/// stall; the first compaction failure of the stopped group, from storage, in its place.
fn timeline(s: &Setup) -> Vec<String> {
    let lines = s.scene.ctx.log.lines();
    let from = lines
        .iter()
        .position(|l| l.contains(" ddl: create table t "))
        .unwrap_or(0);
    let keep = [
        " scenario: ",
        " ddl: ",
        " kill node: ",
        " add worker: ",
        " recovery: ",
        " recovery failed: ",
        " recovery step: pre-apply",
        " recovery step: reset nodes",
        " recovery step: purge",
        " unregister tables: ",
        " register tables: ",
        " write stop: ",
        " write resume: ",
    ];
    let mut out: Vec<(u64, String)> = lines[from..]
        .iter()
        .filter(|l| keep.iter().any(|k| l.contains(k)))
        .map(|l| (line_us(l), l.clone()))
        .collect();
    if let Some((group, g)) = stopped_group(&s.scene.cluster)
        && let (Some(at), Some(e)) = (g.failing_since_us, &g.last_error)
    {
        let line = format!(
            "{:>6}.{:06} compaction failed: {e} (group {group}: {} tasks in a row since)",
            at / 1_000_000,
            at % 1_000_000,
            g.failures
        );
        out.push((at, line));
        out.sort_by_key(|(at, _)| *at);
    }
    let lines: Vec<String> = out.into_iter().map(|(_, l)| l).collect();
    let from = lines.len().saturating_sub(40);
    lines[from..].to_vec()
}

/// The virtual time of an event-log line, µs.
fn line_us(line: &str) -> u64 {
    let t = line.split_whitespace().next().unwrap_or("0");
    let (s, us) = t.split_once('.').unwrap_or((t, "0"));
    s.parse::<u64>().unwrap_or(0) * 1_000_000 + us.parse::<u64>().unwrap_or(0)
}
