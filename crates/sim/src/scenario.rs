//! The #14910 scenario (reference §0, §10.18): a rate-limited arrangement backfill into a slow sink, DROP
//! SINK while many barriers are in flight, a compute node fails, recovery starts while the dropped sink's
//! actors survive on another node. The workload and the ranges of the fault timings are fixed, relative to the
//! backfill's progress; the exact timings come from the seed, drawn before anything else so that every drop
//! mode sees the same schedule.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS;
use epochlab_common::plan::SinkKind;
use epochlab_common::trace::{self, TracePer};
use epochlab_common::{DataType, Op, OwnedRow, TableId, VnodeCount, WorkerId, event, row, vspan};
use epochlab_meta::{JobOptions, JobState, MetaConfig, Relation, SinkOptions};
use epochlab_rpc::RpcKind;
use epochlab_state_table::{Check, StateTableError};
use epochlab_stream::StreamConfig;
use epochlab_stream::executor::StreamExecutorError;
use epochlab_stream::task::build::ActorFailure;
use tracing_subscriber::layer::SubscriberExt;

use crate::bugs::{BugError, BugId, Mode, Toggles};
use crate::capture::{Capture, CapturedLine};
use crate::checkers::Checkers;
use crate::cluster::{Cluster, ClusterConfig};
use crate::runtime::{RunError, SimContext, SimOutput, TaskPanic, TimeObserver, try_run_observed};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReproParams {
    /// The bug of the catalogue whose directed scenario runs. The settings below are #14910's; another bug's
    /// scenario reads those its catalogue row lists ([`crate::BugInfo::settings`]).
    pub bug: BugId,
    pub seed: u64,
    pub mode: Mode,
    pub rows: usize,
    pub vnodes: u32,
    pub parallelism: usize,
    pub compute_nodes: u32,
    /// Backfill snapshot rows per second per actor.
    pub rate_limit: u32,
    /// Simulated time the slow sink spends per chunk; above the barrier interval, barriers pile up.
    pub barrier_latency_ms: u64,
    pub barrier_interval_ms: u64,
    pub checkpoint_frequency: u32,
    /// The debug-build checks of RisingWave (`--persist-check on`): the backfill reads its progress row
    /// before each write, and the progress and view tables check every write against their contents. Off
    /// behaves as a release build: writes are blind, and only independent checkers can see a divergence.
    pub persist_check: bool,
}

impl Default for ReproParams {
    fn default() -> Self {
        Self {
            bug: BugId::Rw14910,
            seed: 1,
            mode: Mode::Buggy,
            rows: 10_000,
            vnodes: 256,
            parallelism: 2,
            compute_nodes: 3,
            rate_limit: 1,
            barrier_latency_ms: 100,
            barrier_interval_ms: 1000,
            checkpoint_frequency: 1,
            persist_check: true,
        }
    }
}

impl ReproParams {
    /// The engine's toggles for this run's bug and mode.
    pub fn toggles(&self) -> Result<Toggles, BugError> {
        Toggles::of(self.bug, self.mode)
    }

    /// Why these parameters cannot produce the interleaving, if they cannot.
    pub fn impossible(&self) -> Option<String> {
        if let Err(e) = self.toggles() {
            return Some(e.to_string());
        }
        if self.rows == 0 {
            return Some("the table is empty: there is no backfill to persist".into());
        }
        None
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A check fired: the error names it (`caught_by`).
    Failed,
    /// The scenario ran (drop, fault, recovery) and nothing failed.
    Passed,
    /// The scenario could not show what it is for: it never set up (the reason is in `error`), or `buggy`
    /// ran its recovery without any check firing (the reason says why, from the event log).
    NotReproducible,
    /// Epochs stopped committing: `error` lists the in-flight barriers and what each waits for.
    Stuck,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Failed => "failed",
            Outcome::Passed => "passed",
            Outcome::NotReproducible => "not_reproducible",
            Outcome::Stuck => "stuck",
        }
    }
}

/// One invariant violation a checker observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The invariant, e.g. `I2 zombie-access`, `I3 table-set`, `I1 commit-order`.
    pub invariant: &'static str,
    /// What was seen, in one line.
    pub detail: String,
    pub actor: Option<u32>,
    pub table: Option<u32>,
    pub epoch: Option<u64>,
    /// Virtual time of the observation, microseconds since the simulation's origin.
    pub at_us: Option<u64>,
}

impl Violation {
    pub fn new(invariant: &'static str, detail: impl Into<String>) -> Self {
        Self {
            invariant,
            detail: detail.into(),
            actor: None,
            table: None,
            epoch: None,
            at_us: None,
        }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.invariant, self.detail)
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
    /// As RisingWave's killer: restart after U(0, 1 s), and with probability 0.1 after 20 s more (heartbeats
    /// then expire and recovery migrates the actors).
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

#[derive(Clone, Debug)]
pub struct ReproReport {
    pub params: ReproParams,
    pub outcome: Outcome,
    pub error: Option<String>,
    pub failing_vnode: Option<u32>,
    pub failing_actor: Option<u32>,
    pub epochs: u64,
    pub max_committed_epoch: u64,
    pub recoveries: u64,
    pub plan: Option<FaultPlan>,
    /// Event-log lines around the failure: the unregister, the actor's last persist, the failing read.
    pub timeline: Vec<String>,
    /// The failing actor's backfill log lines, as in the original failure log.
    pub original_lines: Vec<CapturedLine>,
    pub violations: Vec<Violation>,
    /// Which check made the run fail (e.g. `backfill persist check`, `I2 zombie-access detector`).
    pub caught_by: Option<String>,
    /// Explanations beside the outcome (e.g. why a check that was on did not fire).
    pub notes: Vec<String>,
    /// The panic that ended the run (outcome `failed`, kind `panic`).
    pub panic: Option<TaskPanic>,
}

const SINK_NAME: &str = "sink_14910";

fn cluster_config(p: &ReproParams) -> ClusterConfig {
    let mut config = cluster_config_for(
        p.toggles().unwrap_or_default(),
        p.vnodes,
        p.barrier_interval_ms,
        p.checkpoint_frequency,
        p.persist_check,
    );
    config.compute_nodes = p.compute_nodes;
    config
}

/// A cluster with these toggles at this pace; shared by the directed scenarios and random plans.
pub fn cluster_config_for(
    toggles: Toggles,
    vnodes: u32,
    barrier_interval_ms: u64,
    checkpoint_frequency: u32,
    persist_check: bool,
) -> ClusterConfig {
    let mut meta = MetaConfig::default();
    let interval = Duration::from_millis(barrier_interval_ms);
    meta.barrier.interval = interval;
    meta.barrier.checkpoint_frequency = checkpoint_frequency;
    meta.drop_mode = toggles.drop_mode;
    meta.barrier.on_worker_err = toggles.on_worker_err;
    meta.config_change_wait = toggles.config_change_wait;
    meta.reschedule_backfilling = toggles.reschedule_backfilling;
    meta.pre_apply_cancel = toggles.pre_apply_cancel;
    meta.vnode_count = VnodeCount::new(vnodes).expect("vnodes checked by the caller");
    // Recovery's slow steps before the reset (progress recovery, actor migration) take a share of a barrier
    // interval to one and a half: the zombie window scales with the cluster's pace, not with a constant.
    meta.recovery.recover_progress = interval / 4..interval * 3 / 2;
    meta.recovery.migrate_actors = interval / 4..interval * 3 / 2;
    let stream = StreamConfig {
        persist_check,
        backfill_vnode: toggles.backfill_vnode,
        barrier_channel_capacity: meta.barrier.in_flight_limit + 1,
        ..StreamConfig::default()
    };
    ClusterConfig {
        meta,
        stream,
        ..Default::default()
    }
}

/// The network's latencies outside faults: barriers 1 to 5 ms, version deltas 5 to 30 ms.
pub fn base_network(cluster: &Cluster) {
    for kind in [RpcKind::InjectBarrier, RpcKind::BarrierComplete] {
        let range = Duration::from_millis(1)..Duration::from_millis(5);
        cluster.network.set_latency(kind, range);
    }
    let delta_latency = Duration::from_millis(5)..Duration::from_millis(30);
    cluster
        .network
        .set_latency(RpcKind::VersionDelta, delta_latency);
}

fn table_row(k: i64) -> OwnedRow {
    row![k, 1i64, "payload"]
}

/// Called with the scenario's cluster once it has started (to observe it from outside, e.g. metrics).
pub type ClusterHook = Box<dyn FnOnce(Arc<Cluster>) + Send>;

/// A tracing layer for the run's subscriber (e.g. OpenTelemetry export).
pub type TracingLayer =
    Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

/// Make `layer` (if any) and `extra` the thread's subscriber for the run. Not `.with(Option<layer>)`: an
/// optional layer does not pass the subscriber on to the layers inside it (`on_register_dispatch`), which the
/// telemetry's log format needs to find trace ids.
pub fn install<L>(layer: Option<TracingLayer>, extra: L) -> tracing::subscriber::DefaultGuard
where
    L: tracing_subscriber::Layer<
            tracing_subscriber::layer::Layered<TracingLayer, tracing_subscriber::Registry>,
        > + tracing_subscriber::Layer<tracing_subscriber::Registry>
        + Send
        + Sync
        + 'static,
{
    match layer {
        Some(layer) => {
            tracing::subscriber::set_default(tracing_subscriber::registry().with(layer).with(extra))
        }
        None => tracing::subscriber::set_default(tracing_subscriber::registry().with(extra)),
    }
}

/// Ways to observe a run from outside.
#[derive(Default)]
pub struct ReproHooks {
    pub on_cluster: Option<ClusterHook>,
    pub tracing_layer: Option<TracingLayer>,
    /// One trace for the run (a root span `run`), or one per epoch.
    pub trace_per: TracePer,
    /// Told whenever the run's virtual time moves on (pacing, metrics sampling); see [`TimeObserver`].
    pub time_observers: Vec<Arc<dyn TimeObserver>>,
}

/// Run the scenario on the deterministic runtime.
pub fn run_repro(params: &ReproParams) -> SimOutput<ReproReport> {
    run_repro_with(params, ReproHooks::default())
}

/// How much virtual time a repro run may take before it is reported `stuck` (a backstop: every phase of the
/// scenario has its own, tighter budget).
pub const REPRO_TIME_LIMIT: Duration = Duration::from_secs(3600);

/// Run the scenario with `hooks`.
pub fn run_repro_with(params: &ReproParams, hooks: ReproHooks) -> SimOutput<ReproReport> {
    let p = params.clone();
    // The capture must see the clock, which exists only inside the run: install it there, per thread,
    // with the caller's layer in the same subscriber.
    let observers = hooks.time_observers;
    let (origin, limit) = (DEFAULT_ORIGIN_UNIX_MS, REPRO_TIME_LIMIT);
    let out = try_run_observed(p.seed, origin, limit, observers, move |ctx| async move {
        let label = match p.bug {
            BugId::Rw14910 => format!("{} seed={}", p.mode.as_str(), p.seed),
            bug => format!("{bug} {} seed={}", p.mode.as_str(), p.seed),
        };
        epochlab_common::clock::label_current_run(label);
        let capture = Capture::new(ctx.clock.clone());
        let _guard = install(hooks.tracing_layer, capture.clone());
        let _trace = trace::enter_run(hooks.trace_per, ctx.clock.clone(), || {
            vspan!(
                parent: None,
                "run",
                ctx.clock,
                mode = p.mode.as_str(),
                bug = p.bug.as_str(),
                seed = p.seed as i64,
                scenario = p.bug.scenario_name(),
                rows = p.rows as i64,
                vnodes = p.vnodes as i64,
                parallelism = p.parallelism as i64,
                compute_nodes = p.compute_nodes as i64,
                rate_limit = p.rate_limit as i64,
                barrier_latency_ms = p.barrier_latency_ms as i64,
                checkpoint_frequency = p.checkpoint_frequency as i64,
                persist_check = p.persist_check
            )
        });
        match p.bug {
            BugId::Rw14910 => scenario(ctx, p, capture, hooks.on_cluster).await,
            BugId::Rw22384 => crate::bugs::b22384::scenario(ctx, p, hooks.on_cluster).await,
            BugId::Rw16815 => crate::bugs::b16815::scenario(ctx, p, hooks.on_cluster).await,
            BugId::Rw19138 => crate::bugs::b19138::scenario(ctx, p, hooks.on_cluster).await,
            BugId::Rw15144 => crate::bugs::b15144::scenario(ctx, p, hooks.on_cluster).await,
            BugId::RescheduleUnpinned => {
                crate::bugs::reschedule_unpinned::scenario(ctx, p, hooks.on_cluster).await
            }
        }
    });
    out.map(|value| match value {
        Ok(report) => report,
        Err(RunError::TimedOut(timed_out)) => {
            let mut report = ReproReport::new(params.clone());
            report.outcome = Outcome::Stuck;
            report.error = Some(format!(
                "the run exceeded its virtual time limit of {} s (a step without its own budget: please report \
                 it); last events: {}",
                timed_out.limit.as_secs(),
                timed_out.tail.join(" | ")
            ));
            report
        }
        Err(RunError::Panicked(p)) => ReproReport::new(params.clone()).panicked(p),
    })
}

impl ReproReport {
    pub fn new(params: ReproParams) -> Self {
        Self {
            params,
            outcome: Outcome::Passed,
            error: None,
            failing_vnode: None,
            failing_actor: None,
            epochs: 0,
            max_committed_epoch: 0,
            recoveries: 0,
            plan: None,
            timeline: Vec::new(),
            original_lines: Vec::new(),
            violations: Vec::new(),
            caught_by: None,
            notes: Vec::new(),
            panic: None,
        }
    }

    /// A run a task's panic ended: `failed`, kind `panic`, with its message and location.
    pub fn panicked(mut self, p: TaskPanic) -> Self {
        self.outcome = Outcome::Failed;
        self.error = Some(p.to_string());
        self.caught_by = Some("task panic".to_string());
        self.panic = Some(p);
        self
    }

    pub(crate) fn not_reproducible(mut self, why: String) -> Self {
        self.outcome = Outcome::NotReproducible;
        self.error = Some(why);
        self
    }
}

/// The cluster and the jobs of the scenario.
struct Setup {
    ctx: SimContext,
    cluster: Arc<Cluster>,
    checkers: Checkers,
    table: TableId,
    sink: Relation,
    progress_table: TableId,
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
}

async fn scenario(
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
    match run_steps(&setup, &plan, &p).await {
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
    let cluster = Arc::new(Cluster::start(ctx, cluster_config(p)).await);
    if let Some(hook) = hook {
        hook(cluster.clone());
    }
    let checkers = Checkers::install(&cluster, p.toggles().unwrap_or_default().drop_mode);
    base_network(&cluster);
    let types = vec![DataType::Int64, DataType::Int64, DataType::Varchar];
    let meta = &cluster.meta;
    let table = meta.create_table("t", types, vec![0], p.parallelism).await;
    let table = table.expect("create table on a fresh cluster");
    for start in (0..p.rows).step_by(1000) {
        let rows = (start..(start + 1000).min(p.rows))
            .map(|k| (Op::Insert, table_row(k as i64)))
            .collect();
        cluster.dml(table, rows).await.expect("load the table");
    }
    meta.flush().await.expect("flush on a healthy cluster");
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
    let sink = meta
        .create_sink(SINK_NAME, table, options, sink_options)
        .await;
    let sink = meta.relation(sink.expect("create sink on a healthy cluster"));
    let sink = sink.expect("a created sink is in the catalog");
    let progress_table = sink.progress_table.as_ref().expect("a sink backfills");
    Setup {
        ctx: ctx.clone(),
        progress_table: progress_table.table_id,
        cluster,
        checkers,
        table,
        sink,
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
        let sink = cluster.meta.relation(setup.sink.id);
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
        .meta
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
    let mut dropper = {
        let cluster = cluster.clone();
        let id = setup.sink.id;
        tokio::spawn(async move { cluster.meta.drop_job(id).await })
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
        .meta
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
    match tokio::time::timeout(budget, cluster.meta.flush()).await {
        Ok(_) => Ok(()),
        Err(_) => Err(EarlyEnd::Stuck(stuck_report(
            cluster,
            "no checkpoint committed after recovery",
        ))),
    }
}

/// What the barrier manager is waiting for (and, if a compaction group's writes are stopped, why: the
/// nodes hold back that group's data, so no barrier can complete).
pub fn stuck_report(cluster: &Cluster, what: &str) -> String {
    let mut report = barrier_report(cluster, what);
    if let Some(stop) = write_stop_report(cluster) {
        report.push_str("; ");
        report.push_str(&stop);
    }
    report
}

/// What the barrier manager is waiting for, alone.
pub(crate) fn barrier_report(cluster: &Cluster, what: &str) -> String {
    let stats = cluster.barrier_stats();
    format!(
        "{what}: {} barrier(s) in flight, {} injected, {} completed, last completed prev epoch {}, last \
         injected epoch {}, {} recoveries, scheduler {:?}; waiting: {}",
        stats.in_flight.load(Ordering::Relaxed),
        stats.injected.load(Ordering::Relaxed),
        stats.completed.load(Ordering::Relaxed),
        stats.last_completed_prev_epoch.load(Ordering::Relaxed),
        stats.last_injected_epoch.load(Ordering::Relaxed),
        stats.recoveries.load(Ordering::Relaxed),
        cluster.meta.scheduler().status(),
        stats.waiting_description()
    )
}

/// The compaction groups whose writes are stopped, and why, in one line; `None` when none is.
pub(crate) fn write_stop_report(cluster: &Cluster) -> Option<String> {
    let stopped = cluster.hummock.write_stopped_groups();
    if stopped.is_empty() {
        return None;
    }
    let parts: Vec<String> = stopped
        .iter()
        .map(|(group, g)| {
            let cause = g
                .last_error
                .as_ref()
                .map_or_else(|| "no compaction ran".to_string(), |e| e.to_string());
            format!(
                "writes to group {group} stopped at {} L0 sub-levels at {:.3} s, after {} failed compaction \
                 tasks: {cause}",
                g.sub_levels,
                g.write_stopped_since_us.unwrap_or(0) as f64 / 1e6,
                g.failures
            )
        })
        .collect();
    Some(parts.join("; "))
}

fn fill_counts(report: &mut ReproReport, setup: &Setup) {
    let stats = setup.cluster.barrier_stats();
    report.epochs = stats.injected.load(Ordering::Relaxed);
    report.recoveries = stats.recoveries.load(Ordering::Relaxed);
    report.max_committed_epoch = setup.cluster.hummock.max_committed_epoch().0;
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
    let catalog: BTreeSet<TableId> = cluster.meta.catalog().relations.keys().copied().collect();
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
        report.timeline = timeline(&setup.ctx.log.lines(), v.actor);
        if let Some(a) = v.actor {
            let mine = capture.lines_of_actor(u64::from(a));
            report.original_lines = mine[mine.len().saturating_sub(12)..].to_vec();
        }
    } else if report.recoveries == 0 {
        return report.not_reproducible("no recovery happened".into());
    } else if p
        .toggles()
        .unwrap_or_default()
        .drop_mode
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
    report.timeline = timeline(&setup.ctx.log.lines(), Some(failure.actor.0));
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
/// its failure.
fn timeline(lines: &[String], actor: Option<u32>) -> Vec<String> {
    let actor_tag = actor.map(|a| format!("actor={a} "));
    let from = lines
        .iter()
        .rposition(|l| l.contains(" scenario: drop sink"))
        .unwrap_or(0);
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
