//! RisingWave #14910: arrangement backfill fails recovery with `row [Some(Int16(0))] not found`, because meta
//! unregistered a dropped job's state tables before the job's actors had stopped. Its toggle is
//! [`DropMode`] (decided in meta and recovery); its directed scenario
//! is this module's [`scenario`].
//!
//! The scenario (reference §0, §10.18): a rate-limited arrangement backfill into a slow sink, DROP
//! SINK while many barriers are in flight, a compute node fails, recovery starts while the dropped sink's
//! actors survive on another node. The workload and the ranges of the fault timings are fixed, relative to the
//! backfill's progress; the exact timings come from the seed, drawn before anything else so that every drop
//! mode sees the same schedule.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use epochlab_common::Toggles;
use epochlab_common::plan::SinkKind;
use epochlab_common::toggles::DropMode;
use epochlab_common::{DataType, Op, OwnedRow, TableId, WorkerId, event, row};
use epochlab_meta::{CrashPoint, JobOptions, JobState, MetaNode, Relation, SinkOptions};
use epochlab_rpc::RpcKind;
use epochlab_state_table::{Check, StateTableError};
use epochlab_stream::executor::StreamExecutorError;
use epochlab_stream::task::build::ActorFailure;
use futures::future::LocalBoxFuture;

use super::record::{Evidence, Record, Symptom, SymptomKind};
use super::{BugId, BugInfo, Mode, Origin, ScenarioRun, Setting};
use crate::capture::Capture;
use crate::checkers::Checkers;
use crate::cluster::Cluster;
use crate::config::{base_network, cluster_config};
use crate::report::{MetaCrash, Outcome, ReproReport, Violation, stuck_report};
use crate::repro::{ClusterHook, ReproParams};
use crate::runtime::SimContext;

pub const INFO: BugInfo = BugInfo {
    id: BugId::Rw14910,
    name: "14910",
    origin: Origin::RisingWave,
    mechanism: "DROP ignores its failed Stop barrier and unregisters the job's tables at once; a zombie actor \
                of the dropped job then reads its committed progress row as missing",
    fix: "unregister after the Stop barrier is collected, or in recovery after every node is reset",
    links: &[
        "https://github.com/risingwavelabs/risingwave/issues/14910",
        "https://github.com/risingwavelabs/risingwave/pull/15852",
    ],
    modes: &[Mode::Buggy, Mode::Fixed, Mode::PurgeBeforeReset],
    command: "cargo xtask repro --bug 14910",
    settings: &Setting::ALL,
    timeline: "the drop, the fault, the unregister, the actor's persists, recovery",
    record: &RECORD,
    toggles,
    scenario: start,
};

const RECORD: Record = Record {
    refs: "issue #14910 (2024-02-01; the recovery test's failure, reproduced in PR #14888); PR #15355 \
           (2024-03-07, recovery's pre-applied drops and cancels unregister) and PR #15852 (2024-03-26, \
           unregister after the Stop barrier is collected, purge in recovery); PR #15787 turned the panic into \
           an actor error",
    symptom: Symptom {
        kind: SymptomKind::Panic,
        text: "row [Some(Int16(0))] not found",
        pattern: "row [Some(Int16(N))] not found",
        epochlab_pattern: "",
        panic_file: "executor/backfill/utils.rs",
        evidence: Evidence::Text,
    },
    site: "stream: executor/backfill/utils.rs, `persist_state_per_vnode` (its debug-build read of the old progress \
           row), under the arrangement backfill's barrier; the cause in meta: `drop_streaming_jobs_impl` \
           unregistered the job's state tables from Hummock once the failed Stop returned, before recovery reset \
           the compute nodes",
    differs: "the old-row check runs in every build and fails the actor with a typed error (RisingWave's was \
              debug-only and panicked); three metas on a simulated etcd lease (as the CI run's) with an SQLite \
              store, and the CI run's kill timing is drawn, not recorded",
};

/// The engine's toggles of a run in `mode`: [`drop_mode`]'s, the others fixed.
fn toggles(mode: Mode) -> Toggles {
    Toggles::default().with(drop_mode(mode))
}

fn start(run: ScenarioRun) -> LocalBoxFuture<'static, ReproReport> {
    Box::pin(scenario(run.ctx, run.params, run.capture, run.hook))
}

/// The drop mode of a run in `mode`.
pub(crate) fn drop_mode(mode: Mode) -> DropMode {
    match mode {
        Mode::Buggy => DropMode::Buggy,
        Mode::Fixed => DropMode::Fixed,
        Mode::PurgeBeforeReset => DropMode::PurgeBeforeReset,
    }
}

/// The fault schedule, drawn from the seed before anything else. Its timings are relative to the run's own
/// pace (the barrier interval and the barrier latency observed at the drop), not fixed seconds.
#[derive(Clone, Debug)]
pub struct FaultPlan {
    /// DROP once the backfill has consumed this many snapshot rows (and a progress row it will update again
    /// lives only in committed storage, or `patience` barrier intervals have passed).
    pub drop_at_rows: u64,
    /// The fault comes this fraction of the observed barrier latency after the DROP (the Stop barrier is then
    /// still in flight, unless it went faster than the barriers before it).
    pub fault_at_latency_frac: f64,
    /// Picks the victim among the candidates.
    pub victim_choice: u64,
    /// As RisingWave's killer: restart after U(0, 1 s), and with probability 0.1 after 20 s more (recovery
    /// retries until the node is back: its heartbeat does not expire within the 300 s TTL).
    pub restart_delay: Duration,
}

/// Virtual time the backfill has to reach the drop point.
const DROP_POINT_BUDGET: Duration = Duration::from_secs(900);

/// Barrier intervals the drop waits past `drop_at_rows` for the ideal moment before it goes anyway.
const DROP_PATIENCE_INTERVALS: u32 = 3;

impl FaultPlan {
    fn draw(ctx: &SimContext, p: &ReproParams) -> Self {
        let rng = &ctx.rng;
        // At least three rows per actor (several checkpoints past vnode 0's first write), at most half the table
        // or 40 rows per actor, whichever is less: the shape is the same at any table size.
        let lo = (3 * p.parallelism as u64).min(p.rows as u64 / 2).max(1);
        let hi = (40 * p.parallelism as u64)
            .min(p.rows as u64 / 2)
            .max(lo + 1);
        let drop_at_rows = rng.range_u64(lo..hi);
        let fault_at_latency_frac = rng.range_u64(0..1_000_000) as f64 / 1e6;
        let victim_choice = rng.range_u64(0..1 << 16);
        let mut restart_delay = rng.duration(Duration::ZERO..Duration::from_secs(1));
        if rng.bool(0.1) {
            restart_delay += Duration::from_secs(20);
        }
        Self {
            drop_at_rows,
            fault_at_latency_frac,
            victim_choice,
            restart_delay,
        }
    }
}

const SINK_NAME: &str = "sink_14910";

fn table_row(k: i64) -> OwnedRow {
    row![k, 1i64, "payload"]
}

/// The cluster and the jobs of the scenario.
struct Setup {
    ctx: SimContext,
    cluster: Arc<Cluster>,
    checkers: Checkers,
    table: TableId,
    sink: Relation,
    progress_table: TableId,
    /// The crashes of meta `--crash-meta-at` caused, each with the DDL it cut off.
    crashes: std::sync::Mutex<Vec<MetaCrash>>,
}

/// The run is over (or cancelled by its time limit): the cluster stops here, inside the simulation, even when
/// a `ClusterHook` keeps it for longer (see [`Cluster::shutdown`]).
impl Drop for Setup {
    fn drop(&mut self) {
        self.cluster.shutdown();
    }
}

/// What happened around the DROP and the fault.
#[derive(Default)]
struct DropRecord {
    /// The drop returned before the fault: the Stop barrier was collected, the success path.
    returned_before_fault: bool,
    /// Recoveries when the drop started and when it returned (equal: the drop took its success path).
    recoveries_at_drop: u64,
    recoveries_at_return: u64,
    /// Max committed epoch when the drop returned, and the zombie's last persisted epoch then.
    mce_at_return: u64,
    last_persist_at_return: u64,
    /// Every fault the run injected, in order.
    fault: String,
    /// The fault drawn from the seed (before any forced recovery).
    first_fault: String,
    /// The drop never returned: what the barrier manager waits for.
    stuck: Option<String>,
    /// Meta died at this crash point of the DROP (`--crash-meta-at`).
    meta_crash: Option<epochlab_meta::CrashPoint>,
}

pub(crate) async fn scenario(
    ctx: SimContext,
    p: ReproParams,
    capture: Capture,
    hook: Option<ClusterHook>,
) -> ReproReport {
    let mut report = ReproReport::new(p.clone());
    if let Some(why) = p.impossible() {
        return report.not_reproducible(why);
    }
    let plan = FaultPlan::draw(&ctx, &p);
    report.plan = Some(plan.clone());
    event!(
        ctx.log,
        "scenario",
        "mode={} plan={plan:?}",
        p.mode.as_str()
    );
    let setup = setup(&ctx, &p, hook).await;
    let steps = run_steps(&setup, &plan, &p).await;
    report.meta_crashes = crashes_of(&setup);
    match steps {
        Ok(record) => verdict(&setup, &p, &record, &capture, report),
        Err(end) => {
            fill_counts(&mut report, &setup);
            match end {
                EarlyEnd::NotReproducible(why) => report.not_reproducible(why),
                EarlyEnd::Stuck(what) => {
                    report.outcome = Outcome::Stuck;
                    report.error = Some(what);
                    report
                }
            }
        }
    }
}

/// Why a run ended before its verdict, with the explanation for the user.
enum EarlyEnd {
    /// The scenario never set up (e.g. the backfill finished before the drop point).
    NotReproducible(String),
    /// Epochs stopped committing: what the barrier manager waits for.
    Stuck(String),
}

/// Steps 3 to 6, each within its budget.
async fn run_steps(
    setup: &Setup,
    plan: &FaultPlan,
    p: &ReproParams,
) -> Result<DropRecord, EarlyEnd> {
    await_drop_point(setup, plan, p).await?;
    let record = drop_and_fault(setup, plan, p).await;
    if let Some(stuck) = record.stuck.clone() {
        return Err(EarlyEnd::Stuck(stuck));
    }
    settle(setup, plan).await?;
    Ok(record)
}

/// Steps 1 and 2: a table of `rows` identical rows (but for the key), committed; a sink over it with
/// arrangement backfill, rate-limited, in the background, its slow sink in a fragment of its own.
async fn setup(ctx: &SimContext, p: &ReproParams, hook: Option<ClusterHook>) -> Setup {
    let cluster = Cluster::launch(ctx, cluster_config(p)).await;
    let cluster = cluster.expect("a new cluster's in-memory store opens");
    if let Some(hook) = hook {
        hook(cluster.clone());
    }
    let checkers = Checkers::install(&cluster, p.toggles().unwrap_or_default().get::<DropMode>());
    base_network(&cluster);
    if let Some(point) = p.crash_meta_at {
        cluster.arm_meta_crash(point);
    }
    let mut crashes = Vec::new();
    let types = vec![DataType::Int64, DataType::Int64, DataType::Varchar];
    let create = |meta: MetaNode| {
        let types = types.clone();
        async move { meta.create_table("t", types, vec![0], p.parallelism).await }
    };
    let table = create_retrying(&cluster, "CREATE TABLE t", create, &mut crashes).await;
    for start in (0..p.rows).step_by(1000) {
        let rows = (start..(start + 1000).min(p.rows))
            .map(|k| (Op::Insert, table_row(k as i64)))
            .collect();
        cluster.dml(table, rows).await.expect("load the table");
    }
    cluster
        .meta()
        .flush()
        .await
        .expect("flush on a healthy cluster");
    let options = JobOptions {
        parallelism: p.parallelism,
        rate_limit: Some(p.rate_limit),
        background: true,
        scan_type: epochlab_meta::StreamScanType::ArrangementBackfill,
    };
    let sink_options = SinkOptions {
        kind: SinkKind::Blackhole,
        chunk_delay: Duration::from_millis(p.barrier_latency_ms),
        sink_rate_limit: None,
    };
    let create = |meta: MetaNode| {
        let (options, sink_options) = (options.clone(), sink_options.clone());
        async move {
            meta.create_sink(SINK_NAME, table, options, sink_options)
                .await
        }
    };
    let sink = create_retrying(&cluster, "CREATE SINK sink_14910", create, &mut crashes).await;
    let sink = cluster.meta().relation(sink);
    let sink = sink.expect("a created sink is in the catalog");
    let progress_table = sink.progress_table.as_ref().expect("a sink backfills");
    Setup {
        ctx: ctx.clone(),
        progress_table: progress_table.table_id,
        cluster,
        checkers,
        table,
        sink,
        crashes: std::sync::Mutex::new(crashes),
    }
}

fn crashes_of(setup: &Setup) -> Vec<MetaCrash> {
    let crashes = setup.crashes.lock().unwrap_or_else(|e| e.into_inner());
    crashes.clone()
}

/// A CREATE of the setup, retried as the SQL runner retries under kills: when meta died at the armed crash
/// point, wait for the restarted meta to be ready; the job is the one its recovery kept (a CREATE cut off
/// after its fragments were created, or a background one it resumes), or else asked for again.
async fn create_retrying<F, Fut>(
    cluster: &Arc<Cluster>,
    ddl: &'static str,
    create: F,
    crashes: &mut Vec<MetaCrash>,
) -> TableId
where
    F: Fn(MetaNode) -> Fut,
    Fut: std::future::Future<Output = Result<TableId, epochlab_meta::DdlError>>,
{
    let name = ddl.rsplit(' ').next().unwrap_or(ddl);
    loop {
        let before = cluster.meta_crashes().len();
        let result = create(cluster.meta()).await;
        let crashed = cluster.meta_crashes().get(before).copied();
        match (result, crashed) {
            (Ok(id), _) => return id,
            (Err(_), Some(point)) => {
                crashes.push(MetaCrash { point, ddl });
                cluster.wait_meta_ready().await;
                if let Some(kept) = cluster.meta().relation_by_name(name) {
                    return kept.id;
                }
            }
            (Err(e), None) => panic!("{ddl} on a healthy cluster: {e}"),
        }
    }
}

/// The backfill's stats: rows consumed, whether an actor's last persist updated a stored row, and the
/// highest epoch any progress row was last written at.
fn backfill_view(setup: &Setup) -> (u64, bool, u64) {
    let actors = setup.cluster.backfill.of_table(setup.progress_table);
    let rows = actors
        .iter()
        .map(|(_, s)| s.snapshot_rows.load(Ordering::Relaxed))
        .sum();
    let updated = actors
        .iter()
        .any(|(_, s)| s.last_persist_updated.load(Ordering::Relaxed));
    let last_epoch = actors
        .iter()
        .map(|(_, s)| s.last_persisted_epoch.load(Ordering::Relaxed))
        .max()
        .unwrap_or(0);
    (rows, updated, last_epoch)
}

/// Step 3: wait until the backfill has consumed `drop_at_rows` and a progress row it will update again
/// lives only in committed storage (its last write is committed), the moment #14910 needs; after a few
/// barrier intervals past the row count, drop anyway. `Err` when the backfill finishes first.
async fn await_drop_point(
    setup: &Setup,
    plan: &FaultPlan,
    p: &ReproParams,
) -> Result<(), EarlyEnd> {
    let cluster = &setup.cluster;
    let interval = Duration::from_millis(p.barrier_interval_ms);
    let poll = (interval / 10).max(Duration::from_millis(10));
    let patience = interval * DROP_PATIENCE_INTERVALS;
    let mut waited_since_rows = Duration::ZERO;
    let deadline = setup.ctx.clock.elapsed_us() + DROP_POINT_BUDGET.as_micros() as u64;
    loop {
        tokio::time::sleep(poll).await;
        if setup.ctx.clock.elapsed_us() > deadline {
            return Err(EarlyEnd::NotReproducible(format!(
                "the drop point was not reached within {} s of virtual time: the backfill consumed {} of \
                 {} rows (the sink is too slow for it to move)",
                DROP_POINT_BUDGET.as_secs(),
                backfill_view(setup).0,
                plan.drop_at_rows
            )));
        }
        let sink = cluster.meta().relation(setup.sink.id);
        if sink.is_none_or(|r| r.state == JobState::Created) {
            return Err(EarlyEnd::NotReproducible(format!(
                "the backfill finished before the drop point ({} rows consumed of {} wanted): nothing of it \
                 runs any more",
                backfill_view(setup).0,
                plan.drop_at_rows
            )));
        }
        let (rows, updated, last_epoch) = backfill_view(setup);
        if rows < plan.drop_at_rows {
            continue;
        }
        let committed = last_epoch <= cluster.hummock.max_committed_epoch().0;
        if (updated && committed) || waited_since_rows >= patience {
            return Ok(());
        }
        waited_since_rows += poll;
    }
}

/// The nodes the fault may hit: a node hosting some of the sink's actors but not all of the nodes that do
/// (its actors die, the Stop barrier cannot be collected there, and the sink's actors elsewhere live on as
/// zombies), first among them those that host none of the upstream table's actors (the zombies then keep
/// all their inputs). Empty when the sink runs on one node: a failed injection there is the fault instead.
fn fault_candidates(setup: &Setup) -> Vec<WorkerId> {
    let job: BTreeSet<WorkerId> = setup.sink.all_actors().map(|a| a.worker).collect();
    if job.len() < 2 {
        return Vec::new();
    }
    let upstream: BTreeSet<WorkerId> = setup
        .cluster
        .meta()
        .relation(setup.table)
        .map(|t| t.all_actors().map(|a| a.worker).collect())
        .unwrap_or_default();
    let clean: Vec<WorkerId> = job.difference(&upstream).copied().collect();
    if clean.is_empty() {
        job.into_iter().collect()
    } else {
        clean
    }
}

/// Steps 4 and 5: DROP SINK, and a fault while its Stop barrier is in flight: kill one of the sink's
/// nodes (see [`fault_candidates`]), or fail the next barrier injection on the sink's only node (which
/// fails every barrier in flight, the Stop barrier among them).
async fn drop_and_fault(setup: &Setup, plan: &FaultPlan, p: &ReproParams) -> DropRecord {
    let (cluster, log) = (&setup.cluster, &setup.ctx.log);
    let stats = cluster.barrier_stats().clone();
    let latency_us = stats.latencies_us().last().copied().unwrap_or(0);
    let pace = Duration::from_micros(latency_us).max(Duration::from_millis(p.barrier_interval_ms));
    let fault_delay = pace.mul_f64(plan.fault_at_latency_frac);
    event!(
        log,
        "scenario",
        "drop sink in_flight={} fault_in_ms={}",
        stats.in_flight.load(Ordering::Relaxed),
        fault_delay.as_millis()
    );
    let crashes_before = cluster.meta_crashes().len();
    let mut dropper = {
        let cluster = cluster.clone();
        let id = setup.sink.id;
        tokio::spawn(async move { cluster.meta().drop_job(id).await })
    };
    let mut record = DropRecord {
        recoveries_at_drop: stats.recoveries.load(Ordering::Relaxed),
        ..DropRecord::default()
    };
    let early = tokio::time::timeout(fault_delay, &mut dropper).await;
    let result = match early {
        Ok(r) => {
            record.returned_before_fault = true;
            note_return(setup, &mut record);
            record.fault = inject_fault(setup, plan);
            record.first_fault = record.fault.clone();
            r
        }
        Err(_) => {
            record.fault = inject_fault(setup, plan);
            record.first_fault = record.fault.clone();
            match await_drop(setup, &mut record, &mut dropper, pace).await {
                Some(r) => r,
                None => return record,
            }
        }
    };
    let ok = matches!(result, Ok(Ok(())));
    event!(log, "scenario", "drop returned ok={ok}");
    if let Some(&point) = cluster.meta_crashes().get(crashes_before) {
        record.meta_crash = Some(point);
        let ddl = "DROP SINK sink_14910";
        let mut crashes = setup.crashes.lock().unwrap_or_else(|e| e.into_inner());
        crashes.push(MetaCrash { point, ddl });
    }
    ensure_recovery(setup, &mut record, p).await;
    record
}

type DropTask = tokio::task::JoinHandle<Result<(), epochlab_meta::DdlError>>;

/// Wait for the drop to return after the fault. When the fault did not reach the Stop barrier (it was not
/// collected within a budget of the run's pace), fail an injection to force recovery; `None` (and
/// `record.stuck`) when even that does not make it return.
async fn await_drop(
    setup: &Setup,
    record: &mut DropRecord,
    dropper: &mut DropTask,
    pace: Duration,
) -> Option<Result<Result<(), epochlab_meta::DdlError>, tokio::task::JoinError>> {
    let budget = (pace * 20).max(Duration::from_secs(60));
    let mut returned = tokio::time::timeout(budget, &mut *dropper).await;
    if returned.is_err() {
        force_recovery(setup, record, "the Stop barrier was still not collected");
        returned = tokio::time::timeout(budget, &mut *dropper).await;
    }
    match returned {
        Ok(r) => {
            note_return(setup, record);
            Some(r)
        }
        Err(_) => {
            record.stuck = Some(stuck_report(&setup.cluster, "the DROP did not return"));
            None
        }
    }
}

/// The scenario is about recovery: when the fault hit no barrier (the victim had collected everything and
/// hosts no actor any more), force one.
async fn ensure_recovery(setup: &Setup, record: &mut DropRecord, p: &ReproParams) {
    let stats = setup.cluster.barrier_stats();
    tokio::time::sleep(Duration::from_millis(p.barrier_interval_ms) * 3).await;
    if stats.recoveries.load(Ordering::Relaxed) == record.recoveries_at_drop {
        force_recovery(setup, record, "the fault hit no barrier");
    }
}

/// Fail the next barrier injection to a live node that hosts actors of the catalog's jobs.
fn force_recovery(setup: &Setup, record: &mut DropRecord, why: &str) {
    if let Some(w) = fail_next_injection(setup, why) {
        record.fault = format!(
            "{}, then a failed barrier injection on worker {w}",
            record.fault
        );
    }
}

/// Make the next barrier injection to a live node hosting actors of the catalog fail (every barrier then in
/// flight fails with it); the node, if there is one.
fn fail_next_injection(setup: &Setup, why: &str) -> Option<WorkerId> {
    let busy: BTreeSet<WorkerId> = setup
        .cluster
        .meta()
        .catalog()
        .relations
        .values()
        .filter(|r| r.id != setup.sink.id)
        .flat_map(|r| r.all_actors().map(|a| a.worker))
        .collect();
    let live: BTreeSet<WorkerId> = setup.cluster.nodes().iter().map(|n| n.worker()).collect();
    let w = *busy.intersection(&live).next()?;
    event!(
        setup.ctx.log,
        "scenario",
        "fail the next barrier injection on worker={w} ({why})"
    );
    setup
        .cluster
        .network
        .fail_next(RpcKind::InjectBarrier, Some(w), 1);
    Some(w)
}

fn note_return(setup: &Setup, record: &mut DropRecord) {
    record.mce_at_return = setup.cluster.hummock.max_committed_epoch().0;
    record.last_persist_at_return = backfill_view(setup).2;
    let stats = setup.cluster.barrier_stats();
    record.recoveries_at_return = stats.recoveries.load(Ordering::Relaxed);
}

/// Inject the fault; returns what it was.
fn inject_fault(setup: &Setup, plan: &FaultPlan) -> String {
    let cluster = &setup.cluster;
    let candidates = fault_candidates(setup);
    if candidates.is_empty() {
        return match fail_next_injection(setup, "the sink runs on one node") {
            Some(w) => format!("a failed barrier injection on worker {w}"),
            None => "no fault (no node left to fail)".into(),
        };
    }
    let victim = candidates[plan.victim_choice as usize % candidates.len()];
    cluster.kill(victim);
    let restarter = cluster.clone();
    let delay = plan.restart_delay;
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        restarter.restart(victim);
    });
    format!("kill of worker {victim}")
}

/// Step 6: let recovery run and the cluster settle: ready again, and a checkpoint committed after it.
/// `Err` says what is stuck.
async fn settle(setup: &Setup, plan: &FaultPlan) -> Result<(), EarlyEnd> {
    let cluster = &setup.cluster;
    // Long enough for a late restart, heartbeat expiry and migration.
    let budget = plan.restart_delay + Duration::from_secs(120);
    tokio::time::sleep(Duration::from_secs(3)).await;
    if tokio::time::timeout(budget, cluster.wait_ready())
        .await
        .is_err()
    {
        return Err(EarlyEnd::Stuck(stuck_report(
            cluster,
            "recovery did not finish",
        )));
    }
    tokio::time::sleep(plan.restart_delay + Duration::from_secs(5)).await;
    if tokio::time::timeout(budget, cluster.wait_ready())
        .await
        .is_err()
    {
        return Err(EarlyEnd::Stuck(stuck_report(
            cluster,
            "a second recovery did not finish",
        )));
    }
    match tokio::time::timeout(budget, cluster.meta().flush()).await {
        Ok(_) => Ok(()),
        Err(_) => Err(EarlyEnd::Stuck(stuck_report(
            cluster,
            "no checkpoint committed after recovery",
        ))),
    }
}

fn fill_counts(report: &mut ReproReport, setup: &Setup) {
    let stats = setup.cluster.barrier_stats();
    report.epochs = stats.injected.load(Ordering::Relaxed);
    report.recoveries = stats.recoveries.load(Ordering::Relaxed);
    report.max_committed_epoch = setup.cluster.hummock.max_committed_epoch().0;
    report.meta_leader_changes = setup.cluster.meta_leader_changes();
}

/// Step 7, verdicts: the checkers, the oracle, the zombie-access detector, and the first state error of any actor.
fn verdict(
    setup: &Setup,
    p: &ReproParams,
    record: &DropRecord,
    capture: &Capture,
    mut report: ReproReport,
) -> ReproReport {
    let cluster = &setup.cluster;
    fill_counts(&mut report, setup);
    check_oracle(setup, p);
    setup.checkers.check_end(cluster);
    let catalog: BTreeSet<TableId> = cluster.meta().catalog().relations.keys().copied().collect();
    let zombie = cluster.zombie.violations(|job| !catalog.contains(&job));
    report.violations = zombie;
    report.violations.extend(setup.checkers.violations());
    if let Some(failure) = cluster.failures.first_state_error() {
        failed_by_actor(setup, &failure, capture, &mut report);
    } else if let Some(v) = report.violations.first().cloned() {
        report.outcome = Outcome::Failed;
        report.caught_by = Some(checker_name(v.invariant));
        report.error = Some(v.to_string());
        report.failing_actor = v.actor;
        report.timeline = timeline(&setup.ctx.log.lines(), v.actor, v.at_us);
        if let Some(a) = v.actor {
            let mine = capture.lines_of_actor(u64::from(a));
            report.original_lines = mine[mine.len().saturating_sub(12)..].to_vec();
        }
    } else if report.recoveries == 0 {
        return report.not_reproducible("no recovery happened".into());
    } else if p
        .toggles()
        .unwrap_or_default()
        .get::<DropMode>()
        .is_before_the_fix()
    {
        let why = why_buggy_passed(setup, record);
        return report.not_reproducible(why);
    }
    let detector = report.caught_by.as_deref() == Some(checker_name("I2 zombie-access").as_str());
    if detector && p.persist_check {
        report.notes.push(why_check_silent(record));
    }
    if report.outcome == Outcome::Passed {
        report.notes.extend(how_it_passed(setup));
    }
    report
}

/// Evidence that a passing run exercised the drop: when the sink's tables were unregistered, and that no
/// actor used them then.
fn how_it_passed(setup: &Setup) -> Option<String> {
    let progress = setup.progress_table;
    let u = setup
        .checkers
        .unregisters()
        .into_iter()
        .find(|u| u.tables.contains(&progress))?;
    Some(format!(
        "the sink's tables were unregistered at {:.3} s, when no running actor used them ({})",
        u.at_us as f64 / 1e6,
        u.reason
    ))
}

fn checker_name(invariant: &str) -> String {
    match invariant {
        "I2 zombie-access" => "I2 zombie-access detector".into(),
        other => format!("{other} checker"),
    }
}

fn failed_by_actor(
    setup: &Setup,
    failure: &ActorFailure,
    capture: &Capture,
    report: &mut ReproReport,
) {
    report.outcome = Outcome::Failed;
    report.error = Some(failure.error.to_string());
    report.failing_actor = Some(failure.actor.0);
    let (check, vnode) = match &failure.error {
        StreamExecutorError::StateTable(StateTableError::RowNotFound { check, pk, .. }) => {
            let vnode = match pk.datums().first() {
                Some(Some(epochlab_common::ScalarImpl::Int16(v))) => Some(*v as u32),
                _ => None,
            };
            (check.as_str().to_string(), vnode)
        }
        StreamExecutorError::ProgressDiverged { vnode, .. } => {
            (Check::BackfillPersist.as_str().to_string(), Some(*vnode))
        }
        e => (format!("actor failure ({})", e.reason().as_str()), None),
    };
    report.caught_by = Some(check);
    report.failing_vnode = vnode;
    report.timeline = timeline(&setup.ctx.log.lines(), Some(failure.actor.0), None);
    let mine = capture.lines_of_actor(failure.actor.0 as u64);
    report.original_lines = mine[mine.len().saturating_sub(12)..].to_vec();
}

/// The table's committed rows against the oracle (every row loaded, unchanged), one row at a time: a
/// bitmap of the keys seen is all it keeps, so checking a table of 10^7 rows costs no copy of it.
fn check_oracle(setup: &Setup, p: &ReproParams) {
    let mut seen = vec![0u64; p.rows.div_ceil(64)];
    let (mut found, mut wrong) = (0usize, 0usize);
    setup.cluster.for_each_committed_row(setup.table, |row| {
        let k = match row.datum_at(0) {
            Some(epochlab_common::ScalarImpl::Int64(k)) => *k,
            _ => -1,
        };
        let fresh = usize::try_from(k)
            .ok()
            .filter(|&k| k < p.rows && seen[k / 64] & (1 << (k % 64)) == 0);
        match fresh {
            Some(i) if row == table_row(k) => {
                seen[i / 64] |= 1 << (i % 64);
                found += 1;
            }
            _ => wrong += 1,
        }
    });
    if found != p.rows || wrong != 0 {
        setup.checkers.violation(Violation::new(
            "oracle",
            format!(
                "table t has {} rows, the oracle {} ({} of them missing, {wrong} rows not the oracle's)",
                found + wrong,
                p.rows,
                p.rows - found
            ),
        ));
    }
}

/// Why a buggy run did not fail: from the drop record, the unregisters the checkers saw, and the event log.
fn why_buggy_passed(setup: &Setup, record: &DropRecord) -> String {
    if let Some(point) = record.meta_crash.filter(|p| *p < CrashPoint::DropAfterStop) {
        return format!(
            "meta crashed at {point}, before the DROP's Stop barrier: the DROP's own unregister, where the \
             bug lives, never ran; the restarted meta's recovery unregistered the sink's tables"
        );
    }
    if record.returned_before_fault {
        return "the drop returned before the fault: its Stop barrier was collected from every node, the \
                drop took its success path, and the tables were unregistered after the sink's actors had stopped"
            .into();
    }
    if record.recoveries_at_return == record.recoveries_at_drop {
        return format!(
            "the {} did not fail the Stop barrier (the node had already collected it): the drop took its \
             success path, and the tables were unregistered after the sink's actors had stopped",
            record.first_fault
        );
    }
    let secs = |us: u64| format!("{:.3} s", us as f64 / 1e6);
    let progress = setup.progress_table;
    let unregister = setup
        .checkers
        .unregisters()
        .into_iter()
        .find(|u| u.tables.contains(&progress));
    let Some(u) = unregister else {
        return "the drop never unregistered the sink's tables early".into();
    };
    if u.running_users == 0 {
        return format!(
            "no actor of the sink was running when its tables were unregistered at {} (after {}): the \
             survivors had already processed the Stop barrier or failed",
            secs(u.at_us),
            record.fault
        );
    }
    let reset = setup
        .ctx
        .log
        .lines()
        .iter()
        .rev()
        .find(|l| l.contains("reset nodes generation="))
        .and_then(|l| l.split_whitespace().next()?.parse::<f64>().ok())
        .map(|t| format!("{t:.3} s"))
        .unwrap_or_else(|| "the end".into());
    format!(
        "no zombie read or write of the sink's tables between the unregister at {} and the reset at {reset} \
         (after {}): the {} running zombie(s) got no barrier to persist on in that window",
        secs(u.at_us),
        record.fault,
        u.running_users
    )
}

/// Why the backfill's own check did not fire although the detector saw zombies touch unregistered tables.
fn why_check_silent(record: &DropRecord) -> String {
    let (last, mce) = (record.last_persist_at_return, record.mce_at_return);
    if last > mce {
        format!(
            "the backfill persist check did not fire: the zombie's reads were served from uncommitted data \
             (its last progress write, at epoch {last}, was above the max committed epoch {mce} when the \
             tables were unregistered)"
        )
    } else {
        format!(
            "the backfill persist check did not fire although the zombie's last progress write (epoch \
             {last}) was committed: its reads came before the unregister reached its node, or it only \
             inserted rows of vnodes it had not written before (an insert reads nothing back)"
        )
    }
}

/// The lines that tell the story: the scenario's steps, unregisters, resets, the actor's persists, and
/// its failure; from the drop, or from the recovery in which a violation found before the drop (at `at_us`)
/// happened (a crash point's recovery, say).
fn timeline(lines: &[String], actor: Option<u32>, at_us: Option<u64>) -> Vec<String> {
    let actor_tag = actor.map(|a| format!("actor={a} "));
    let drop = lines
        .iter()
        .rposition(|l| l.contains(" scenario: drop sink"))
        .unwrap_or(0);
    let stamp_us = |l: &str| {
        let s = l.split_whitespace().next()?.parse::<f64>().ok()?;
        Some((s * 1e6).round() as u64)
    };
    let earlier = at_us.filter(|&at| {
        lines
            .get(drop)
            .and_then(|l| stamp_us(l))
            .is_some_and(|d| at < d)
    });
    let from = earlier
        .and_then(|at| {
            lines.iter().rposition(|l| {
                l.contains(" recovery: start") && stamp_us(l).is_some_and(|t| t <= at)
            })
        })
        .map_or(drop, |start| start.min(drop));
    let mine = |l: &str| actor_tag.as_ref().is_some_and(|t| l.contains(t.as_str()));
    let mut out: Vec<String> = Vec::new();
    // The actor's last persist before the drop, for context.
    if let Some(last) = lines[..from]
        .iter()
        .rposition(|l| l.contains(" persist backfill state: ") && mine(l))
    {
        out.push(lines[last].clone());
    }
    for l in &lines[from..] {
        let keep = l.contains(" scenario: ")
            || (l.contains(" inject barrier: ") && l.contains("command=drop"))
            || l.contains(" unregister tables: ")
            || l.contains(" barrier failed: ")
            || l.contains(" kill node: ")
            || l.contains(" crash meta: ")
            || l.contains(" restart node: node=meta")
            || l.contains(" recovery")
            || l.contains(" reset node: ")
            || (l.contains(" actor failure: ") && mine(l))
            || (l.contains(" apply version: ") && l.contains("remove"))
            || (l.contains(" persist backfill state: ") && mine(l));
        if keep {
            out.push(l.clone());
        }
        if out.len() >= 60 || l.contains(" recovery: done") {
            break;
        }
    }
    out
}
