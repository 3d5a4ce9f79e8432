//! The #14910 scenario (reference §0, §10.18): a rate-limited arrangement backfill into a slow sink, DROP
//! SINK while many barriers are in flight, a compute node fails, recovery starts while the dropped sink's
//! actors survive on another node. The workload and the ranges of the fault timings are fixed, relative to the
//! backfill's progress; the exact timings come from the seed, drawn before anything else so that every drop
//! mode sees the same schedule.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use epochlab_common::plan::SinkKind;
use epochlab_common::{DataType, Op, OwnedRow, VnodeCount, WorkerId, event, row};
use epochlab_meta::{DropMode, JobOptions, JobState, MetaConfig, SinkOptions};
use epochlab_rpc::RpcKind;
use epochlab_stream::task::build::StreamStats;
use tracing_subscriber::layer::SubscriberExt;

use crate::capture::{Capture, CapturedLine};
use crate::checkers::Checkers;
use crate::cluster::{Cluster, ClusterConfig};
use crate::runtime::{SimContext, SimOutput};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReproParams {
    pub seed: u64,
    pub mode: DropMode,
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
    /// before each write, and the progress table checks every write against storage. Off behaves as a
    /// release build: writes are blind, and only independent checkers can see a divergence.
    pub persist_check: bool,
}

impl Default for ReproParams {
    fn default() -> Self {
        Self {
            seed: 14910,
            mode: DropMode::Buggy,
            rows: 10_000,
            vnodes: 256,
            parallelism: 2,
            compute_nodes: 3,
            rate_limit: 1,
            barrier_latency_ms: 1500,
            barrier_interval_ms: 1000,
            checkpoint_frequency: 1,
            persist_check: true,
        }
    }
}

impl ReproParams {
    /// Why these parameters cannot produce the interleaving, if they cannot.
    pub fn impossible(&self) -> Option<String> {
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

/// The fault schedule, drawn from the seed before anything else.
#[derive(Clone, Debug)]
pub struct FaultPlan {
    /// DROP once the backfill has consumed this share of its target rows.
    pub drop_at_rows: u64,
    pub kill_delay: Duration,
    /// Index into the nodes that host none of the sink's actors.
    pub kill_choice: u64,
    pub restart_delay: Duration,
}

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
        let kill_delay = rng.duration(Duration::ZERO..Duration::from_secs(1));
        let kill_choice = rng.range_u64(0..1 << 16);
        // As RisingWave's killer: restart after U(0, 1 s), and with probability 0.1 after 20 s more.
        let mut restart_delay = rng.duration(Duration::ZERO..Duration::from_secs(1));
        if rng.bool(0.1) {
            restart_delay += Duration::from_secs(20);
        }
        Self {
            drop_at_rows,
            kill_delay,
            kill_choice,
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
}

const SINK_NAME: &str = "sink_14910";

fn cluster_config(p: &ReproParams) -> ClusterConfig {
    let mut meta = MetaConfig::default();
    meta.barrier.interval = Duration::from_millis(p.barrier_interval_ms);
    meta.barrier.checkpoint_frequency = p.checkpoint_frequency;
    meta.drop_mode = p.mode;
    meta.vnode_count = VnodeCount::new(p.vnodes).expect("vnodes checked by the caller");
    // RisingWave's recovery spends a few hundred milliseconds to seconds before it resets compute nodes.
    meta.recovery.recover_progress = Duration::from_millis(800)..Duration::from_millis(1500);
    meta.recovery.migrate_actors = Duration::from_millis(800)..Duration::from_millis(1500);
    ClusterConfig {
        compute_nodes: p.compute_nodes,
        meta,
        ..Default::default()
    }
}

fn table_row(k: i64) -> OwnedRow {
    row![k, 1i64, "payload"]
}

/// Called with the scenario's cluster once it has started (to observe it from outside, e.g. metrics).
pub type ClusterHook = Box<dyn FnOnce(Arc<Cluster>) + Send>;

/// A tracing layer for the run's subscriber (e.g. OpenTelemetry export).
pub type TracingLayer =
    Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

/// Ways to observe a run from outside.
#[derive(Default)]
pub struct ReproHooks {
    pub on_cluster: Option<ClusterHook>,
    pub tracing_layer: Option<TracingLayer>,
}

/// Run the scenario on the deterministic runtime.
pub fn run_repro(params: &ReproParams) -> SimOutput<ReproReport> {
    run_repro_with(params, ReproHooks::default())
}

/// Run the scenario with `hooks`.
pub fn run_repro_with(params: &ReproParams, hooks: ReproHooks) -> SimOutput<ReproReport> {
    let params = params.clone();
    // The capture must see the clock, which exists only inside the run: install it there, per thread,
    // with the caller's layer in the same subscriber.
    crate::runtime::run(params.seed, move |ctx| async move {
        let capture = Capture::new(ctx.clock.clone());
        let subscriber = tracing_subscriber::registry()
            .with(hooks.tracing_layer)
            .with(capture.clone());
        let _guard = tracing::subscriber::set_default(subscriber);
        scenario(ctx, params, capture, hooks.on_cluster).await
    })
}

async fn scenario(
    ctx: SimContext,
    p: ReproParams,
    capture: Capture,
    hook: Option<ClusterHook>,
) -> ReproReport {
    let mut report = ReproReport {
        params: p.clone(),
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
    };
    if let Some(why) = p.impossible() {
        report.outcome = Outcome::NotReproducible;
        report.error = Some(why);
        return report;
    }
    let plan = FaultPlan::draw(&ctx, &p);
    report.plan = Some(plan.clone());
    event!(
        ctx.log,
        "scenario",
        "mode={} plan={plan:?}",
        p.mode.as_str()
    );

    let cluster = Arc::new(Cluster::start(&ctx, cluster_config(&p)).await);
    if let Some(hook) = hook {
        hook(cluster.clone());
    }
    let checkers = Checkers::install(&cluster, p.mode);
    for kind in [RpcKind::InjectBarrier, RpcKind::BarrierComplete] {
        cluster
            .network
            .set_latency(kind, Duration::from_millis(1)..Duration::from_millis(5));
    }
    cluster.network.set_latency(
        RpcKind::VersionDelta,
        Duration::from_millis(5)..Duration::from_millis(30),
    );

    // 1. A table of `rows` identical rows (but for the key), committed.
    let types = vec![DataType::Int64, DataType::Int64, DataType::Varchar];
    let table = cluster
        .meta
        .create_table("t", types, vec![0], p.parallelism)
        .await
        .expect("create table");
    for start in (0..p.rows).step_by(1000) {
        let rows = (start..(start + 1000).min(p.rows))
            .map(|k| (Op::Insert, table_row(k as i64)))
            .collect();
        cluster.dml(table, rows).await.expect("load the table");
    }
    cluster.meta.flush().await.expect("flush");

    // 2. A sink over it with arrangement backfill, rate-limited, slow, created in the background.
    let options = JobOptions {
        parallelism: p.parallelism,
        rate_limit: Some(p.rate_limit),
        background: true,
    };
    let sink_options = SinkOptions {
        kind: SinkKind::Blackhole,
        chunk_delay: Duration::from_millis(p.barrier_latency_ms),
        sink_rate_limit: None,
    };
    let sink = cluster
        .meta
        .create_sink(SINK_NAME, table, options, sink_options)
        .await
        .expect("create sink");
    let sink_rel = cluster.meta.relation(sink).expect("sink in catalog");
    let progress_table = sink_rel.progress_table.as_ref().map(|d| d.table_id);

    // 3. Let the backfill persist progress, and barriers pile up behind the slow sink.
    let stats = cluster.barrier_stats().clone();
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let consumed = cluster.meta.backfill_progress(sink);
        let created = cluster
            .meta
            .relation(sink)
            .is_some_and(|r| r.state == JobState::Created);
        if created || consumed.is_none() {
            report.outcome = Outcome::NotReproducible;
            report.error = Some(
                "the backfill finished before the drop point (no actor was in the middle of a vnode with \
                 barriers queued): nothing of it runs any more"
                    .into(),
            );
            break;
        }
        // A barrier queued behind the one the slow sink is on (the zombie will have barriers to drain), and an
        // actor in the middle of a vnode (its progress row is stored and will be updated again).
        let mid_vnode = progress_table.is_some_and(|t| {
            cluster
                .backfill
                .of_table(t)
                .iter()
                .any(|(_, s)| s.last_persist_updated.load(Ordering::Relaxed))
        });
        if consumed.unwrap_or(0) >= plan.drop_at_rows
            && stats.in_flight.load(Ordering::Relaxed) >= 2
            && mid_vnode
        {
            break;
        }
    }

    // 4. DROP SINK while barriers are in flight, and 5. kill a node that hosts some actor but none of the
    // sink's (a node without actors takes part in no barrier: killing it changes nothing); if there is none,
    // fail the collection of the Stop barrier on one of the sink's nodes instead.
    event!(
        ctx.log,
        "scenario",
        "drop sink in_flight={}",
        stats.in_flight.load(Ordering::Relaxed)
    );
    let dropper = {
        let cluster = cluster.clone();
        tokio::spawn(async move { cluster.meta.drop_job(sink).await })
    };
    let sink_nodes: BTreeSet<WorkerId> = sink_rel.actors.iter().map(|a| a.worker).collect();
    let busy: BTreeSet<WorkerId> = cluster
        .meta
        .catalog()
        .relations
        .values()
        .flat_map(|r| r.actors.iter().map(|a| a.worker))
        .collect();
    let others: Vec<WorkerId> = busy
        .into_iter()
        .filter(|w| !sink_nodes.contains(w))
        .collect();
    tokio::time::sleep(plan.kill_delay).await;
    if others.is_empty() {
        let w = *sink_nodes
            .iter()
            .nth(plan.kill_choice as usize % sink_nodes.len())
            .expect("a sink node");
        event!(
            ctx.log,
            "scenario",
            "fail collection on worker={w} (every node hosts the sink)"
        );
        cluster
            .network
            .fail_next(RpcKind::BarrierComplete, Some(w), 1);
    } else {
        let victim = others[plan.kill_choice as usize % others.len()];
        cluster.kill(victim);
        let restarter = cluster.clone();
        let delay = plan.restart_delay;
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            restarter.restart(victim);
        });
    }
    let drop_result = dropper.await.expect("drop task");
    event!(
        ctx.log,
        "scenario",
        "drop returned ok={}",
        drop_result.is_ok()
    );

    // 6. Let recovery run and the cluster settle.
    tokio::time::sleep(Duration::from_secs(3)).await;
    cluster.wait_ready().await;
    tokio::time::sleep(Duration::from_secs(25)).await;
    cluster.wait_ready().await;
    cluster.meta.flush().await.ok();

    // 7. Verdicts.
    report.epochs = stats.injected.load(Ordering::Relaxed);
    report.recoveries = stats.recoveries.load(Ordering::Relaxed);
    report.max_committed_epoch = cluster.hummock.max_committed_epoch().0;
    let expect: Vec<OwnedRow> = (0..p.rows as i64).map(table_row).collect();
    let mut got = cluster.committed_rows(table);
    got.sort_by_key(|r| format!("{:?}", r.datum_at(0)));
    let mut want = expect;
    want.sort_by_key(|r| format!("{:?}", r.datum_at(0)));
    if got != want {
        checkers.violation(Violation::new(
            "oracle",
            format!("table t has {} rows, the oracle {}", got.len(), want.len()),
        ));
    }
    checkers.check_end(&cluster);
    report.violations = checkers.violations();

    let lines = ctx.log.lines();
    let failure = lines.iter().position(|l| {
        l.contains(" actor failure: ") && {
            let err = l.split("error=").nth(1).unwrap_or("");
            !matches!(
                StreamStats::reason_of(err),
                "channel_closed" | "stale_generation"
            )
        }
    });
    if let Some(i) = failure {
        let line = &lines[i];
        let error = line.split("error=").nth(1).unwrap_or(line).to_string();
        report.outcome = Outcome::Failed;
        report.failing_vnode = parse_vnode(&error);
        report.failing_actor = line
            .split("actor=")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|s| s.parse().ok());
        report.error = Some(error);
        report.timeline = timeline(&lines, i, report.failing_actor);
        if let Some(a) = report.failing_actor {
            let mine = capture.lines_of_actor(a as u64);
            report.original_lines = mine[mine.len().saturating_sub(12)..].to_vec();
        }
    } else if !report.violations.is_empty() {
        report.outcome = Outcome::Failed;
        report.error = Some(format!("invariant violation: {}", report.violations[0]));
    } else if report.outcome == Outcome::Passed && report.recoveries == 0 {
        report.outcome = Outcome::NotReproducible;
        report.error = Some("no recovery happened".into());
    }
    report
}

/// `row [Some(Int16(7))] not found` -> 7.
fn parse_vnode(error: &str) -> Option<u32> {
    let rest = error.split("Int16(").nth(1)?;
    rest.split(')').next()?.parse().ok()
}

/// The lines that tell the story: the scenario's steps, unregisters, resets, the failing actor's persists,
/// and the failure itself.
fn timeline(lines: &[String], failure: usize, actor: Option<u32>) -> Vec<String> {
    let actor_tag = actor.map(|a| format!("actor={a} "));
    let from = lines[..failure]
        .iter()
        .rposition(|l| l.contains(" scenario: drop sink"))
        .unwrap_or(failure.saturating_sub(30));
    let mut out: Vec<String> = Vec::new();
    // The failing actor's last persist before the drop, for context.
    if let Some(tag) = &actor_tag
        && let Some(last) = lines[..from]
            .iter()
            .rposition(|l| l.contains(" persist backfill state: ") && l.contains(tag.as_str()))
    {
        out.push(lines[last].clone());
    }
    for l in &lines[from..=failure] {
        let keep = l.contains(" scenario: ")
            || l.contains(" unregister tables: ")
            || l.contains(" barrier failed: ")
            || l.contains(" kill node: ")
            || l.contains(" recovery")
            || l.contains(" reset node: ")
            || l.contains(" actor failure: ")
            || (l.contains(" apply version: ") && l.contains("remove"))
            || actor_tag
                .as_ref()
                .is_some_and(|t| l.contains(" persist backfill state: ") && l.contains(t.as_str()));
        if keep {
            out.push(l.clone());
        }
    }
    out
}
