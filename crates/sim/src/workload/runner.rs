//! Playing a plan: start the cluster the plan describes, run each step at its time (DDL and DML in tasks of
//! their own), then settle (faults lifted, killed nodes back, rate limits lifted, every job created, a
//! checkpoint) and judge: actor state errors, the checkers' invariants, the zombie-access detector, and the
//! oracle (each view and sink equals its upstream table; each table holds what the model knows it holds).
//! A watchdog ends the run as `stuck` when no epoch commits for [`STALL_LIMIT`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use epochlab_common::plan::SinkKind;
use epochlab_common::trace;
use epochlab_common::{Op, OwnedRow, ScalarImpl, TableId, WorkerId, event, row, vspan};
use epochlab_meta::{JobOptions, JobState, RelationKind, SinkOptions};
use tokio::task::JoinHandle;

use super::model::TableModel;
use super::plan::{Action, JobSpec, Plan, PlanCluster, ViewQuery};
use super::reference::{Input, closed_windows, compare, evaluate, sum_columns};
use super::verdict::{FailureKind, PlanReport};
use super::views::{Upstream, view_graph};
use crate::bugs::BugMode;
use crate::checkers::Checkers;
use crate::cluster::{Cluster, ClusterConfig};
use crate::config::{base_network, cluster_config_for};
use crate::report::Violation;
use crate::repro::ReproHooks;
use crate::runtime::{RunError, SimContext, SimOutput, try_run_observed};

/// A run with no epoch committed for this long is stuck.
pub const STALL_LIMIT: Duration = Duration::from_secs(180);

/// Each phase of settling may take this long.
const SETTLE_BUDGET: Duration = Duration::from_secs(300);

/// A DML statement batch that has not returned after this long is abandoned (its writes become unknown).
const DML_TIMEOUT: Duration = Duration::from_secs(30);

/// DML streams send a batch this often.
const DML_TICK: Duration = Duration::from_millis(100);

/// Run `plan` with `run`'s bug in its mode on the deterministic runtime.
pub fn run_plan(plan: &Plan, run: BugMode, hooks: ReproHooks) -> SimOutput<PlanReport> {
    let p = plan.clone();
    let limit = Duration::from_millis(plan.end_ms()) + 4 * SETTLE_BUDGET + STALL_LIMIT;
    let origin = epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS;
    let observers = hooks.time_observers;
    let out = try_run_observed(plan.seed, origin, limit, observers, move |ctx| async move {
        let label = format!("{} seed={}", run.label(), ctx.seed);
        epochlab_common::clock::label_current_run(label);
        let _guard = crate::repro::install(
            hooks.tracing_layer,
            None::<tracing_subscriber::layer::Identity>,
        );
        let _trace = trace::enter_run(hooks.trace_per, ctx.clock.clone(), || {
            vspan!(
                parent: None,
                "run",
                ctx.clock,
                mode = run.mode().as_str(),
                bug = run.bug().as_str(),
                seed = ctx.seed as i64,
                scenario = "random",
                steps = p.steps.len() as i64,
                compute_nodes = p.cluster.compute_nodes as i64,
                vnodes = p.cluster.vnodes as i64
            )
        });
        let config = cluster_config(&p.cluster, run, hooks.mutation);
        play(ctx, p, run, config, hooks.on_cluster, hooks.meta_store).await
    });
    out.map(|value| match value {
        Ok(report) => report,
        Err(RunError::TimedOut(timed_out)) => PlanReport::stuck(format!(
            "the run exceeded its virtual time limit of {} s; last events: {}",
            timed_out.limit.as_secs(),
            timed_out.tail.join(" | ")
        )),
        Err(RunError::Panicked(p)) => PlanReport::panicked(p),
    })
}

fn cluster_config(
    c: &PlanCluster,
    run: BugMode,
    mutation: Option<fn(epochlab_common::Toggles) -> epochlab_common::Toggles>,
) -> ClusterConfig {
    let toggles = run.toggles();
    let mut config = cluster_config_for(
        mutation.map_or(toggles, |m| m(toggles)),
        c.vnodes,
        c.barrier_interval_ms,
        c.checkpoint_frequency,
        c.persist_check,
    );
    config.compute_nodes = c.compute_nodes;
    if c.static_groups {
        config.meta.compaction_groups = epochlab_meta::GroupPlacement::Static;
    }
    if c.flow_control {
        config = crate::config::with_flow_control(config);
    }
    config
}

/// The state of a run that steps share.
struct Run {
    cluster: Arc<Cluster>,
    checkers: Checkers,
    names: Mutex<BTreeMap<String, TableId>>,
    models: Mutex<BTreeMap<TableId, TableModel>>,
    /// How each table's model keys become rows.
    layouts: Mutex<BTreeMap<TableId, RowLayout>>,
    stop_dml: AtomicBool,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    restarts: Mutex<Vec<JoinHandle<()>>>,
    dead: Mutex<BTreeSet<WorkerId>>,
    /// Nodes removed for good, of the plan's `compute_nodes`.
    removed: Mutex<BTreeSet<WorkerId>>,
    compute_nodes: u32,
    skipped: AtomicU32,
    /// The query of each stateful view the plan creates, by name (the oracle evaluates it).
    views: Mutex<BTreeMap<String, ViewQuery>>,
    /// When the cluster started: a watermark table's rows carry the virtual milliseconds since.
    started: tokio::time::Instant,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

async fn play(
    ctx: SimContext,
    plan: Plan,
    mode: BugMode,
    mut config: ClusterConfig,
    hook: Option<crate::repro::ClusterHook>,
    meta_store: Option<epochlab_meta::store::MetaBackend>,
) -> PlanReport {
    if let Some(store) = meta_store {
        config.meta.store = store;
    }
    config.meta_nodes = plan.cluster.meta_nodes;
    let cluster = match Cluster::launch(&ctx, config).await {
        Ok(cluster) => cluster,
        Err(e) => return PlanReport::failed(FailureKind::MetaStore, e.to_string(), Vec::new()),
    };
    if let Some(hook) = hook {
        hook(cluster.clone());
    }
    let checkers = Checkers::install(
        &cluster,
        mode.toggles().get::<epochlab_common::toggles::DropMode>(),
    );
    base_network(&cluster);
    let run = Arc::new(Run {
        cluster,
        checkers,
        names: Mutex::default(),
        models: Mutex::default(),
        layouts: Mutex::default(),
        stop_dml: AtomicBool::new(false),
        tasks: Mutex::default(),
        restarts: Mutex::default(),
        dead: Mutex::default(),
        removed: Mutex::default(),
        compute_nodes: plan.cluster.compute_nodes,
        skipped: AtomicU32::new(0),
        views: Mutex::default(),
        started: tokio::time::Instant::now(),
    });
    event!(
        ctx.log,
        "workload",
        "mode={} steps={}",
        mode.label(),
        plan.steps.len()
    );
    let work = async {
        play_steps(&run, &plan).await;
        settle(&run).await
    };
    let stalled = tokio::select! {
        biased;
        stuck = watchdog(&run.cluster) => Some(stuck),
        settled = work => settled.err().map(|stuck| stuck.to_string()),
    };
    let store_error = run.cluster.meta_store_error();
    let report = match (stalled, store_error) {
        (_, Some(e)) => PlanReport::failed(FailureKind::MetaStore, e.to_string(), Vec::new()),
        (Some(what), None) => stalled_verdict(&run.cluster, what),
        (None, None) => judge(&run),
    };
    let skipped = run.skipped.load(Ordering::Relaxed);
    let report = report.with_counts(&run.cluster, plan.steps.len(), skipped);
    // Inside the simulation, so that a hook that keeps the cluster (metrics) cannot change the event log.
    run.cluster.shutdown();
    report
}

/// Resolves (with what the barrier manager waits for, and every node's barrier state) once no epoch has
/// committed for [`STALL_LIMIT`]. Shared by every runner of workloads (random plans, sqllogictest files).
pub async fn watchdog(cluster: &Cluster) -> String {
    let mut last = (
        cluster.hummock.max_committed_epoch(),
        tokio::time::Instant::now(),
    );
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = cluster.hummock.max_committed_epoch();
        if now != last.0 {
            last = (now, tokio::time::Instant::now());
        } else if last.1.elapsed() >= STALL_LIMIT {
            let mut report = crate::report::stuck_report(cluster, "no epoch committed for 180 s");
            for node in cluster.nodes() {
                let state = node.barrier_manager().describe().await;
                let state = state.unwrap_or_else(|e| e.to_string());
                report.push_str(&format!("; worker {}: {state}", node.worker()));
            }
            return report;
        }
    }
}

async fn play_steps(run: &Arc<Run>, plan: &Plan) {
    let start = tokio::time::Instant::now();
    for (i, step) in plan.steps.iter().enumerate() {
        tokio::time::sleep_until(start + Duration::from_millis(step.at_ms)).await;
        event!(
            run.cluster.ctx.log,
            "workload",
            "step {}: {}",
            i + 1,
            step.action
        );
        if let Err(why) = start_step(run, &step.action) {
            run.skipped.fetch_add(1, Ordering::Relaxed);
            event!(
                run.cluster.ctx.log,
                "workload",
                "step {} skipped: {why}",
                i + 1
            );
        }
    }
}

/// Why a step was skipped.
#[derive(Debug, thiserror::Error)]
enum Skipped {
    #[error("{0} does not exist")]
    NoSuchJob(String),
    #[error("every named node is down already")]
    NodesDown,
    #[error("no node would be left, or it is removed already")]
    LastNode,
    #[error("meta is down already")]
    MetaDown,
    #[error("meta is down: no meta to tell")]
    NoMeta,
}

/// What settling waited for in vain.
#[derive(Debug, thiserror::Error)]
enum Stuck {
    /// A phase outlived its budget: what the barrier manager waits for.
    #[error("{0}")]
    Budget(String),
    #[error("flush after settling failed twice: {0}")]
    Flush(epochlab_meta::DdlError),
}

/// The id of a job the plan named, if it exists now.
fn id_of(run: &Run, name: &str) -> Result<TableId, Skipped> {
    lock(&run.names)
        .get(name)
        .copied()
        .ok_or_else(|| Skipped::NoSuchJob(name.to_string()))
}

fn spawn(run: &Arc<Run>, task: impl std::future::Future<Output = ()> + Send + 'static) {
    lock(&run.tasks).push(tokio::spawn(task));
}

/// Start one step; `Err` says why it was skipped.
fn start_step(run: &Arc<Run>, action: &Action) -> Result<(), Skipped> {
    let cluster = &run.cluster;
    match action.clone() {
        Action::CreateTable {
            name,
            parallelism,
            rows,
            pk_ks,
            rows_per_k,
            watermark_lag,
        } => {
            let shape = TableShape {
                pk_ks,
                layout: RowLayout::new(rows_per_k),
                watermark_lag,
            };
            spawn(
                run,
                create_table(run.clone(), name, parallelism, rows, shape),
            )
        }
        Action::CreateMv { name, job } => start_job(run, name, job, None)?,
        Action::CreateView {
            name,
            parallelism,
            background,
            query,
        } => start_view(run, name, parallelism, background, query)?,
        Action::CreateSink {
            name,
            job,
            sink_ms_per_chunk,
        } => {
            let delay = Duration::from_millis(sink_ms_per_chunk);
            start_job(run, name, job, Some(delay))?;
        }
        Action::Drop { name } => start_drop_or_cancel(run, name, false)?,
        Action::Cancel { name } => start_drop_or_cancel(run, name, true)?,
        Action::Throttle { name, rate_limit } => {
            let id = id_of(run, &name)?;
            spawn(run, throttle(run.clone(), id, name, rate_limit));
        }
        Action::Reschedule { name, rotate } => {
            let id = id_of(run, &name)?;
            spawn(run, reschedule(run.clone(), id, name, rotate));
        }
        Action::Dml {
            table,
            rows_per_s,
            duration_ms,
            update_pct,
            delete_pct,
        } => {
            let mix = (rows_per_s, update_pct, delete_pct);
            start_dml(run, &table, mix, duration_ms)?;
        }
        Action::Flush => spawn(run, flush(run.clone())),
        Action::Kill {
            nodes,
            restart_after_ms,
        } => kill(run, &nodes, Duration::from_millis(restart_after_ms))?,
        Action::RemoveNode { node } => remove_node(run, WorkerId(node))?,
        Action::KillMeta {
            restart_after_ms,
            node,
        } => kill_meta(run, Duration::from_millis(restart_after_ms), node)?,
        Action::CrashMeta { point } => run.cluster.arm_meta_crash(point),
        Action::KillComputeNodesAndMeta { restart_after_ms } => {
            kill_compute_nodes_and_meta(run, Duration::from_millis(restart_after_ms))?;
        }
        Action::FailMetaKeepAlives { duration_ms } => {
            fail_meta_keep_alives(run, Duration::from_millis(duration_ms))?;
        }
        Action::RpcDelay {
            rpc,
            min_ms,
            max_ms,
            duration_ms,
        } => delay_rpc(run, rpc.kind(), min_ms..max_ms, duration_ms),
        Action::RpcFail { rpc, node, count } => {
            cluster
                .network
                .fail_next(rpc.kind(), node.map(WorkerId), count);
        }
    }
    Ok(())
}

/// `CREATE MATERIALIZED VIEW` (or, with a delay per chunk, `CREATE SINK`) over the job's upstream table.
fn start_job(
    run: &Arc<Run>,
    name: String,
    job: JobSpec,
    sink_delay: Option<Duration>,
) -> Result<(), Skipped> {
    let upstream = id_of(run, &job.upstream)?;
    spawn(
        run,
        create_job(run.clone(), name, upstream, job, sink_delay),
    );
    Ok(())
}

/// `CREATE MATERIALIZED VIEW` of a stateful query over its upstreams, recorded for the oracle first.
fn start_view(
    run: &Arc<Run>,
    name: String,
    parallelism: u32,
    background: bool,
    query: ViewQuery,
) -> Result<(), Skipped> {
    let upstreams = query
        .upstreams()
        .into_iter()
        .map(|up| id_of(run, up))
        .collect::<Result<Vec<_>, _>>()?;
    let options = JobOptions {
        parallelism: parallelism as usize,
        rate_limit: None,
        background,
        scan_type: epochlab_meta::StreamScanType::ArrangementBackfill,
    };
    lock(&run.views).insert(name.clone(), query.clone());
    spawn(
        run,
        create_view(run.clone(), name, query, upstreams, options),
    );
    Ok(())
}

/// `DROP` (or `CANCEL JOB` when `cancel`) of the job named `name`.
fn start_drop_or_cancel(run: &Arc<Run>, name: String, cancel: bool) -> Result<(), Skipped> {
    let id = id_of(run, &name)?;
    spawn(run, drop_or_cancel(run.clone(), id, name, cancel));
    Ok(())
}

/// `DROP` (or `CANCEL JOB` when `cancel`) of the job `id`; its name is free again once it is gone.
async fn drop_or_cancel(run: Arc<Run>, id: TableId, name: String, cancel: bool) {
    let meta = &run.cluster.meta();
    let (result, what) = if cancel {
        (meta.cancel_job(id).await, "cancel")
    } else {
        (meta.drop_job(id).await, "drop")
    };
    ddl_result(&run, &format!("{what} {name}"), result);
    if meta.relation(id).is_none() {
        lock(&run.names).remove(&name);
    }
}

/// `ALTER ... SET STREAMING_RATE_LIMIT` of the job `id`.
async fn throttle(run: Arc<Run>, id: TableId, name: String, rate_limit: Option<u32>) {
    let result = run.cluster.meta().set_rate_limit(id, rate_limit).await;
    ddl_result(&run, &format!("throttle {name}"), result);
}

/// `FLUSH`.
async fn flush(run: Arc<Run>) {
    let result = run.cluster.meta().flush().await;
    ddl_result(&run, "flush", result);
}

/// Moves `rotate` vnodes of the job `id` to the next actor.
async fn reschedule(run: Arc<Run>, id: TableId, name: String, rotate: u32) {
    let meta = &run.cluster.meta();
    let result = match meta.relation(id) {
        Some(rel) => {
            meta.reschedule(id, rel.rotated_vnodes(rotate as usize))
                .await
        }
        None => Err(epochlab_meta::DdlError::NotFound(name.clone())),
    };
    ddl_result(&run, &format!("reschedule {name}"), result);
}

/// Latency of `kind` RPCs in `range_ms` for `duration_ms`, then as it was.
fn delay_rpc(
    run: &Arc<Run>,
    kind: epochlab_rpc::RpcKind,
    range_ms: std::ops::Range<u64>,
    duration_ms: u64,
) {
    let network = &run.cluster.network;
    let before = network.latency_range(kind);
    let range = Duration::from_millis(range_ms.start)..Duration::from_millis(range_ms.end);
    network.set_latency(kind, range);
    let run2 = run.clone();
    spawn(run, async move {
        tokio::time::sleep(Duration::from_millis(duration_ms)).await;
        run2.cluster.network.set_latency(kind, before);
    });
}

fn ddl_result<T, E: std::fmt::Display>(run: &Run, what: &str, result: Result<T, E>) {
    let log = &run.cluster.ctx.log;
    match result {
        Ok(_) => event!(log, "workload", "{what}: ok"),
        Err(e) => event!(log, "workload", "{what}: failed: {e}"),
    }
}

/// How a table's model key `m` becomes its row `(k, v, s)`: `(m, v, 'payload')`, or with `rows_per_k` n,
/// `(m / n, v, 'payload_{m % n}')` (n rows per `k`; the table's pk is then (k, s)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RowLayout {
    rows_per_k: Option<i64>,
}

impl RowLayout {
    fn new(rows_per_k: Option<u32>) -> Self {
        Self {
            rows_per_k: rows_per_k.map(i64::from),
        }
    }

    fn row(self, m: i64, v: i64) -> OwnedRow {
        match self.rows_per_k {
            None => row![m, v, "payload"],
            Some(n) => row![m / n, v, format!("payload_{}", m % n).as_str()],
        }
    }

    /// The model key of a row this layout made (`i64::MIN` for a row it could not have made).
    fn model_key(self, r: &OwnedRow) -> i64 {
        let Some(n) = self.rows_per_k else {
            return key_of(r);
        };
        let nth = match r.datum_at(2) {
            Some(ScalarImpl::Utf8(s)) => s
                .strip_prefix("payload_")
                .and_then(|i| i.parse::<i64>().ok()),
            _ => None,
        };
        match (key_of(r), nth) {
            (k, Some(i)) if k != i64::MIN && (0..n).contains(&i) => k
                .checked_mul(n)
                .and_then(|m| m.checked_add(i))
                .unwrap_or(i64::MIN),
            _ => i64::MIN,
        }
    }
}

/// A table's key, row layout and watermark, as its step says.
struct TableShape {
    pk_ks: bool,
    layout: RowLayout,
    watermark_lag: Option<i64>,
}

async fn create_table(run: Arc<Run>, name: String, parallelism: u32, rows: u32, shape: TableShape) {
    use epochlab_common::DataType;
    use epochlab_common::expr_node::ExprNode;
    let types = vec![DataType::Int64, DataType::Int64, DataType::Varchar];
    let meta = &run.cluster.meta();
    // pk (k, s) distributed by k, or pk (k).
    let (pk, dist_key_in_pk) = if shape.pk_ks {
        (vec![0, 2], vec![0])
    } else {
        (vec![0], vec![0])
    };
    let watermark = shape
        .watermark_lag
        .map(|lag| (1, ExprNode::bigint_minus(1, lag)));
    let conflict = epochlab_common::plan::ConflictBehavior::NoCheck;
    let result = meta
        .create_table_with_conflict(
            &name,
            types,
            pk,
            dist_key_in_pk,
            parallelism as usize,
            conflict,
            watermark,
        )
        .await;
    let id = match result {
        Ok(id) => id,
        Err(e) => return ddl_result(&run, &format!("create table {name}"), Err::<(), _>(e)),
    };
    let model = match shape.watermark_lag {
        Some(lag) => TableModel::with_watermark(lag),
        None => TableModel::default(),
    };
    lock(&run.models).insert(id, model);
    lock(&run.layouts).insert(id, shape.layout);
    lock(&run.names).insert(name.clone(), id);
    let mut left = rows;
    while left > 0 {
        let n = left.min(1000);
        let stmts: Vec<Stmt> = {
            let mut models = lock(&run.models);
            let model = models.get_mut(&id).expect("inserted above");
            (0..n).map(|_| insert(&run, model)).collect()
        };
        send(&run, id, stmts).await;
        left -= n;
    }
    let flushed = meta.flush().await;
    ddl_result(
        &run,
        &format!("create table {name} with {rows} rows"),
        flushed,
    );
}

async fn create_job(
    run: Arc<Run>,
    name: String,
    upstream: TableId,
    job: JobSpec,
    sink_delay: Option<Duration>,
) {
    let meta = &run.cluster.meta();
    let options = JobOptions {
        parallelism: job.parallelism as usize,
        rate_limit: job.rate_limit,
        background: job.background,
        scan_type: if job.no_shuffle {
            epochlab_meta::StreamScanType::Backfill
        } else {
            epochlab_meta::StreamScanType::ArrangementBackfill
        },
    };
    let watch = watch_name(&run, &name);
    let result = match sink_delay {
        None => {
            meta.create_materialized_view(&name, upstream, options)
                .await
        }
        Some(chunk_delay) => {
            let sink = SinkOptions {
                kind: SinkKind::Collecting,
                chunk_delay,
                sink_rate_limit: None,
            };
            meta.create_sink(&name, upstream, options, sink).await
        }
    };
    watch.abort();
    if let Ok(id) = &result {
        lock(&run.names).insert(name.clone(), *id);
    }
    ddl_result(&run, &format!("create {name}"), result);
}

/// The name is known once the job is in the catalog, so that a drop can find a job still creating.
fn watch_name(run: &Arc<Run>, name: &str) -> JoinHandle<()> {
    let run = run.clone();
    let name = name.to_string();
    tokio::spawn(async move {
        loop {
            if let Some(rel) = run.cluster.meta().relation_by_name(&name) {
                lock(&run.names).insert(name, rel.id);
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
}

/// Why a stateful view was not created before meta saw it.
#[derive(Debug, thiserror::Error)]
enum ViewCreateError {
    #[error("{0} does not exist")]
    NoUpstream(String),
    #[error(transparent)]
    Shape(#[from] super::views::ViewShapeError),
    #[error(transparent)]
    Ddl(#[from] epochlab_meta::DdlError),
}

/// `CREATE MATERIALIZED VIEW name AS query` from the graph [`view_graph`] builds over the upstreams' tables.
async fn create_view(
    run: Arc<Run>,
    name: String,
    query: ViewQuery,
    upstreams: Vec<TableId>,
    options: JobOptions,
) {
    let meta = &run.cluster.meta();
    let watch = watch_name(&run, &name);
    let result = async {
        let mut descs = Vec::new();
        for (id, up) in upstreams.iter().zip(query.upstreams()) {
            let rel = meta
                .relation(*id)
                .ok_or_else(|| ViewCreateError::NoUpstream(up.to_string()))?;
            descs.push((up, rel.desc));
        }
        let ups: Vec<Upstream<'_>> = descs
            .iter()
            .map(|(name, desc)| Upstream { name, desc })
            .collect();
        let (graph, view) = view_graph(&query, &ups)?;
        let kind = RelationKind::MaterializedView;
        let id = meta
            .create_streaming_job(&name, kind, graph, vec![view], options)
            .await?;
        Ok::<_, ViewCreateError>(id)
    }
    .await;
    watch.abort();
    if let Ok(id) = &result {
        lock(&run.names).insert(name.clone(), *id);
    }
    ddl_result(&run, &format!("create {name}"), result);
}

/// Kill the named nodes that are up; start each again after `restart_after`.
fn kill(run: &Arc<Run>, nodes: &[u32], restart_after: Duration) -> Result<(), Skipped> {
    let mut killed = Vec::new();
    for &n in nodes {
        let w = WorkerId(n);
        if run.cluster.kill(w) {
            lock(&run.dead).insert(w);
            killed.push(w);
        }
    }
    if killed.is_empty() {
        return Err(Skipped::NodesDown);
    }
    event!(
        run.cluster.ctx.log,
        "kill node",
        "workers={killed:?} restart_after={restart_after:?}"
    );
    after(run, restart_after, move |run| {
        for w in killed {
            if lock(&run.dead).remove(&w) {
                run.cluster.restart(w);
                event!(run.cluster.ctx.log, "restart node", "worker={w}");
            }
        }
    });
    Ok(())
}

/// Run `restart` `delay` from now, as one of the run's restarts (settling waits for them).
fn after(run: &Arc<Run>, delay: Duration, restart: impl FnOnce(&Run) + Send + 'static) {
    let run2 = run.clone();
    let task = tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        restart(&run2);
    });
    lock(&run.restarts).push(task);
}

/// Kill meta and start it again from its store `restart_after` later; skipped while it is down. Of several
/// metas, `node`'s process: its restart campaigns, and the lease decides who leads.
fn kill_meta(run: &Arc<Run>, restart_after: Duration, node: Option<u32>) -> Result<(), Skipped> {
    if let Some(i) = node {
        if !run.cluster.kill_meta_node(i) {
            return Err(Skipped::MetaDown);
        }
        let name = crate::cluster::meta_name(i);
        event!(
            run.cluster.ctx.log,
            "kill node",
            "node={name} restart_after={restart_after:?}"
        );
        after(run, restart_after, move |run| {
            run.cluster.restart_meta_node(i);
            event!(run.cluster.ctx.log, "restart node", "node={name}");
        });
        return Ok(());
    }
    if !run.cluster.kill_meta() {
        return Err(Skipped::MetaDown);
    }
    event!(
        run.cluster.ctx.log,
        "kill node",
        "node=meta-1 restart_after={restart_after:?}"
    );
    after(run, restart_after, |run| match run.cluster.restart_meta() {
        Ok(()) => event!(run.cluster.ctx.log, "restart node", "node=meta-1"),
        Err(e) => event!(
            run.cluster.ctx.log,
            "restart node",
            "node=meta-1 failed: {e}"
        ),
    });
    Ok(())
}

/// Kill every meta, then every compute node, and start them again `restart_after` later; skipped when all
/// were down already.
fn kill_compute_nodes_and_meta(run: &Arc<Run>, restart_after: Duration) -> Result<(), Skipped> {
    let metas: Vec<u32> = (1..=run.cluster.meta_node_count())
        .filter(|&i| run.cluster.kill_meta_node(i))
        .collect();
    let nodes: Vec<u32> = (1..=run.compute_nodes).collect();
    let killed_nodes = kill(run, &nodes, restart_after);
    if metas.is_empty() {
        return killed_nodes;
    }
    let names: Vec<String> = metas
        .iter()
        .map(|&i| crate::cluster::meta_name(i))
        .collect();
    event!(
        run.cluster.ctx.log,
        "kill node",
        "nodes={names:?} restart_after={restart_after:?}"
    );
    after(run, restart_after, move |run| {
        for i in metas {
            run.cluster.restart_meta_node(i);
        }
        event!(run.cluster.ctx.log, "restart node", "nodes={names:?}");
    });
    Ok(())
}

/// The leader's keep-alives go unanswered for `d`; its meta is started again at the end (if it exited).
/// Skipped while no meta leads.
fn fail_meta_keep_alives(run: &Arc<Run>, d: Duration) -> Result<(), Skipped> {
    let cluster = &run.cluster;
    let (Some(leader), Some(etcd)) = (cluster.meta_leader(), cluster.etcd()) else {
        return Err(Skipped::MetaDown);
    };
    let name = crate::cluster::meta_name(leader);
    let key = etcd.leader(epochlab_meta::META_ELECTION_KEY);
    let Some(key) = key.filter(|k| k.value == name) else {
        return Err(Skipped::MetaDown);
    };
    etcd.fail_keep_alives(key.lease, d);
    event!(cluster.ctx.log, "fail keep-alives", "node={name} for={d:?}");
    after(run, d, move |run| run.cluster.restart_meta_node(leader));
    Ok(())
}

/// Remove `w` for good (a dead node is not restarted); skipped if no other node would be left.
fn remove_node(run: &Arc<Run>, w: WorkerId) -> Result<(), Skipped> {
    // Telling meta is a call to it (RisingWave's unregister of a worker): none answers while meta is down,
    // and a node merely killed would keep recovery waiting for it until its heartbeat expires (300 s).
    if run.cluster.meta().is_killed() {
        return Err(Skipped::NoMeta);
    }
    let nodes = run.compute_nodes as usize;
    let mut removed = lock(&run.removed);
    if removed.contains(&w) || removed.len() + 1 >= nodes {
        return Err(Skipped::LastNode);
    }
    removed.insert(w);
    if lock(&run.dead).remove(&w) {
        run.cluster.meta().remove_worker(w);
    } else {
        run.cluster.remove_node(w);
    }
    event!(run.cluster.ctx.log, "remove node", "worker={w}");
    Ok(())
}

/// How `table`'s model keys become rows (a table the runner did not create: one row per key).
fn layout_of(run: &Run, table: TableId) -> RowLayout {
    lock(&run.layouts).get(&table).copied().unwrap_or_default()
}

/// One DML statement of a batch.
#[derive(Clone, Copy)]
enum Stmt {
    Insert { key: i64, v: i64 },
    Update { key: i64, old: i64, new: i64 },
    Delete { key: i64, old: i64 },
}

impl Stmt {
    /// The key and the value it leaves (`None`: deleted).
    fn write(self) -> (i64, Option<i64>) {
        match self {
            Stmt::Insert { key, v } => (key, Some(v)),
            Stmt::Update { key, new, .. } => (key, Some(new)),
            Stmt::Delete { key, .. } => (key, None),
        }
    }
}

/// Send one batch; the model learns what returned and what is unknown.
async fn send(run: &Run, table: TableId, stmts: Vec<Stmt>) {
    let layout = layout_of(run, table);
    let mut rows = Vec::with_capacity(stmts.len());
    for s in &stmts {
        match *s {
            Stmt::Insert { key, v } => rows.push((Op::Insert, layout.row(key, v))),
            Stmt::Update { key, old, new } => {
                rows.push((Op::UpdateDelete, layout.row(key, old)));
                rows.push((Op::UpdateInsert, layout.row(key, new)));
            }
            Stmt::Delete { key, old } => rows.push((Op::Delete, layout.row(key, old))),
        }
    }
    let writes: Vec<(i64, Option<i64>)> = stmts.iter().map(|s| s.write()).collect();
    if let Some(model) = lock(&run.models).get_mut(&table) {
        model.sending(writes.iter().filter_map(|(_, v)| *v));
    }
    let before = recovery_state(&run.cluster);
    let result = tokio::time::timeout(DML_TIMEOUT, run.cluster.dml(table, rows)).await;
    let after = recovery_state(&run.cluster);
    let epoch = run
        .cluster
        .barrier_stats()
        .last_injected_epoch
        .load(Ordering::Relaxed);
    let mut models = lock(&run.models);
    let Some(model) = models.get_mut(&table) else {
        return;
    };
    // A write taken while recovery runs goes to an actor that the reset will drop.
    match (result, before, after) {
        (Ok(Ok(())), (true, r0), (true, r1)) if r0 == r1 => model.returned(writes, epoch, r1),
        _ => model.unknown(&writes),
    }
}

/// An insert of a fresh key. Its `v` is 0, but on a table with a watermark the virtual milliseconds since the
/// cluster started, and for one row in ten up to three lags earlier (late, for the filter to judge), for one
/// in ten up to [`VERY_LATE_MS`] earlier (below what a recovery restores).
fn insert(run: &Run, model: &mut TableModel) -> Stmt {
    let key = model.new_key();
    let Some(lag) = model.watermark_lag() else {
        return Stmt::Insert { key, v: 0 };
    };
    let now = run.started.elapsed().as_millis() as i64;
    let rng = &run.cluster.ctx.rng;
    let late = match rng.range_u64(0..10) {
        0 => rng.range_u64(0..3 * lag as u64 + 2),
        1 => rng.range_u64(0..VERY_LATE_MS),
        _ => 0,
    };
    Stmt::Insert {
        key,
        v: now - late as i64,
    }
}

/// How late a very late row of a table with a watermark may be.
const VERY_LATE_MS: u64 = 20_000;

/// Whether the scheduler is ready (no recovery running), and how many recoveries have started.
fn recovery_state(cluster: &Cluster) -> (bool, u64) {
    let ready = cluster.meta().scheduler().status() == epochlab_barrier::SchedulerStatus::Ready;
    let recoveries = cluster.barrier_stats().recoveries.load(Ordering::Relaxed);
    (ready, recoveries)
}

/// A DML stream on `table` of `mix` (rows per second, update and delete percentages) for `duration_ms`.
fn start_dml(
    run: &Arc<Run>,
    table: &str,
    mix: (u32, u8, u8),
    duration_ms: u64,
) -> Result<(), Skipped> {
    let id = id_of(run, table)?;
    let until = tokio::time::Instant::now() + Duration::from_millis(duration_ms);
    spawn(run, dml_stream(run.clone(), id, mix, until));
    Ok(())
}

/// A DML stream: every tick, its share of `rows_per_s` statements, until `until` or settling.
async fn dml_stream(
    run: Arc<Run>,
    table: TableId,
    (rows_per_s, update_pct, delete_pct): (u32, u8, u8),
    until: tokio::time::Instant,
) {
    let rng = run.cluster.ctx.rng.clone();
    let mut owed = 0.0f64;
    while tokio::time::Instant::now() < until && !run.stop_dml.load(Ordering::Relaxed) {
        tokio::time::sleep(DML_TICK).await;
        owed += f64::from(rows_per_s) * DML_TICK.as_secs_f64();
        let n = owed.floor() as u32;
        owed -= f64::from(n);
        let stmts = {
            let mut models = lock(&run.models);
            let Some(model) = models.get_mut(&table) else {
                return;
            };
            promote(&run.cluster, model);
            (0..n)
                .map(|_| {
                    let dice = rng.range_u64(0..100) as u8;
                    let from = rng.range_u64(0..model.key_space() as u64) as i64;
                    let target = (dice < update_pct + delete_pct && !model.append_only())
                        .then(|| model.take_durable(from))
                        .flatten();
                    match target {
                        Some((key, old)) if dice < update_pct => Stmt::Update {
                            key,
                            old,
                            new: old + 1,
                        },
                        Some((key, old)) => Stmt::Delete { key, old },
                        None => insert(&run, model),
                    }
                })
                .collect::<Vec<_>>()
        };
        if !stmts.is_empty() {
            send(&run, table, stmts).await;
        }
    }
}

fn promote(cluster: &Cluster, model: &mut TableModel) {
    let stats = cluster.barrier_stats();
    let recoveries = stats.recoveries.load(Ordering::Relaxed);
    model.promote(cluster.hummock.max_committed_epoch().0, recoveries);
}

/// End the plan: stop DML, lift network faults, bring every node back, lift rate limits, wait for every
/// job to be created, and commit a checkpoint. `Err` says what is stuck.
async fn settle(run: &Arc<Run>) -> Result<(), Stuck> {
    let cluster = &run.cluster;
    event!(cluster.ctx.log, "workload", "settle");
    run.stop_dml.store(true, Ordering::Relaxed);
    cluster.network.clear_failures();
    base_network(cluster);
    let restarts: Vec<_> = lock(&run.restarts).drain(..).collect();
    for r in restarts {
        let _ = r.await;
    }
    within(run, "recovery did not finish", cluster.wait_ready()).await?;
    lift_rate_limits(run).await?;
    loop {
        let tasks: Vec<_> = lock(&run.tasks).drain(..).collect();
        if tasks.is_empty() {
            break;
        }
        let all = futures::future::join_all(tasks);
        within(run, "DDL or DML did not finish", all).await?;
    }
    within(run, "background jobs did not finish", all_created(cluster)).await?;
    within(run, "recovery did not finish", cluster.wait_ready()).await?;
    let flushed = within(run, "no checkpoint committed", cluster.meta().flush()).await?;
    if let Err(e) = flushed {
        // A recovery between the flush's injection and its commit: once more.
        event!(cluster.ctx.log, "workload", "settle flush failed: {e}");
        within(run, "recovery did not finish", cluster.wait_ready()).await?;
        let again = within(run, "no checkpoint committed", cluster.meta().flush()).await?;
        again.map_err(Stuck::Flush)?;
    }
    let mut models = lock(&run.models);
    for model in models.values_mut() {
        promote(cluster, model);
    }
    Ok(())
}

async fn within<T>(
    run: &Run,
    what: &str,
    f: impl std::future::Future<Output = T>,
) -> Result<T, Stuck> {
    tokio::time::timeout(SETTLE_BUDGET, f)
        .await
        .map_err(|_| Stuck::Budget(crate::report::stuck_report(&run.cluster, what)))
}

/// Jobs still backfilling get their rate limit lifted, so that settling does not wait on a throttle.
async fn lift_rate_limits(run: &Run) -> Result<(), Stuck> {
    let creating: Vec<TableId> = run
        .cluster
        .meta()
        .catalog()
        .relations
        .values()
        .filter(|r| r.state == JobState::Creating && r.rate_limit.is_some())
        .map(|r| r.id)
        .collect();
    for id in creating {
        let meta = run.cluster.meta();
        let lifted = within(
            run,
            "a throttle did not finish",
            meta.set_rate_limit(id, None),
        );
        if let Err(e) = lifted.await? {
            event!(
                run.cluster.ctx.log,
                "workload",
                "lift rate limit of {id}: {e}"
            );
        }
    }
    Ok(())
}

async fn all_created(cluster: &Cluster) {
    loop {
        let creating = cluster
            .meta()
            .catalog()
            .relations
            .values()
            .any(|r| r.state == JobState::Creating);
        if !creating {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The verdict of a run that never settled: `stuck`, unless an actor failed on its state (a recovery that
/// fails again each time, as RisingWave #8440's did): that error is the cause, and the run failed with it
/// (what it was stuck on goes to the event log).
fn stalled_verdict(cluster: &Cluster, what: String) -> PlanReport {
    let Some(failure) = cluster.failures.first_state_error() else {
        return PlanReport::stuck(what);
    };
    event!(
        cluster.ctx.log,
        "workload",
        "stuck after an actor failed: {what}"
    );
    let error = format!("actor {}: {}", failure.actor, failure.error);
    PlanReport::failed(FailureKind::ActorFailure, error, Vec::new())
}

/// The verdict of a settled run.
fn judge(run: &Run) -> PlanReport {
    let cluster = &run.cluster;
    // The commit checks first: an early commit (I4) explains the oracle's difference that follows from it.
    run.checkers.check_end(cluster);
    check_oracle(run);
    let catalog: BTreeSet<TableId> = cluster.meta().catalog().relations.keys().copied().collect();
    let mut violations = cluster.zombie.violations(|job| !catalog.contains(&job));
    violations.extend(run.checkers.violations());
    if let Some(failure) = cluster.failures.first_state_error() {
        let error = format!("actor {}: {}", failure.actor, failure.error);
        return PlanReport::failed(FailureKind::ActorFailure, error, violations);
    }
    match violations.first().cloned() {
        Some(v) if v.invariant == "oracle" => {
            PlanReport::failed(FailureKind::Oracle, v.detail.clone(), violations)
        }
        Some(v) => PlanReport::failed(FailureKind::Invariant, v.to_string(), violations),
        None => PlanReport::passed(),
    }
}

/// Each created view and sink against its upstream table at the max committed epoch; each table against the
/// keys the model knows.
fn check_oracle(run: &Run) {
    let cluster = &run.cluster;
    let relations: Vec<_> = cluster
        .meta()
        .catalog()
        .relations
        .values()
        .cloned()
        .collect();
    let views = lock(&run.views).clone();
    for rel in relations.iter().filter(|r| r.state == JobState::Created) {
        if let Some(query) = views.get(&rel.name) {
            check_view(run, rel, query);
            continue;
        }
        let Some(up) = rel.upstream else {
            check_table(run, rel.id, &rel.name);
            continue;
        };
        let want = sorted(cluster.committed_rows(up));
        let (got, anomalies) = match rel.kind {
            RelationKind::Sink => match cluster.sink_rows(rel.id) {
                Some((rows, anomalies)) => (sorted(rows), anomalies),
                None => (Vec::new(), vec!["no sink target".into()]),
            },
            _ => (sorted(cluster.committed_rows(rel.id)), Vec::new()),
        };
        if got != want || !anomalies.is_empty() {
            let detail = format!(
                "{} {} has {} rows, its upstream {}; {}",
                rel.kind.as_str(),
                rel.name,
                got.len(),
                want.len(),
                first_difference(&got, &want, &anomalies)
            );
            let mut v = Violation::new("oracle", detail);
            v.table = Some(rel.id.0);
            run.checkers.violation(v);
        }
    }
}

fn sorted(mut rows: Vec<OwnedRow>) -> Vec<OwnedRow> {
    rows.sort_by_key(key_of);
    rows
}

fn key_of(r: &OwnedRow) -> i64 {
    match r.datum_at(0) {
        Some(ScalarImpl::Int64(k)) => *k,
        _ => i64::MIN,
    }
}

/// The first difference of two row lists sorted by key, in one pass.
fn first_difference(got: &[OwnedRow], want: &[OwnedRow], anomalies: &[String]) -> String {
    if let Some(a) = anomalies.first() {
        return format!("sink anomaly: {a}");
    }
    let (mut i, mut j) = (0, 0);
    while let (Some(g), Some(w)) = (got.get(i), want.get(j)) {
        match key_of(g).cmp(&key_of(w)) {
            std::cmp::Ordering::Less => return format!("row {g:?} extra"),
            std::cmp::Ordering::Greater => return format!("row {w:?} missing"),
            std::cmp::Ordering::Equal if g != w => {
                return format!("row {g:?} where its upstream has {w:?}");
            }
            std::cmp::Ordering::Equal => (i, j) = (i + 1, j + 1),
        }
    }
    match (got.get(i), want.get(j)) {
        (_, Some(w)) => format!("row {w:?} missing"),
        (Some(g), None) => format!("row {g:?} extra"),
        (None, None) => "the rows are equal".into(),
    }
}

/// A stateful view's committed rows against its query evaluated over its upstreams' committed rows (the
/// same max committed epoch).
fn check_view(run: &Run, rel: &epochlab_meta::Relation, query: &ViewQuery) {
    let cluster = &run.cluster;
    let mut upstreams = Vec::new();
    for name in query.upstreams() {
        let Some(up) = cluster.meta().relation_by_name(name) else {
            let detail = format!("view {}: its upstream {name} is gone", rel.name);
            run.checkers.violation(Violation::new("oracle", detail));
            return;
        };
        let rows = cluster.committed_rows(up.id);
        upstreams.push((up.desc, rows));
    }
    let inputs: Vec<Input<'_>> = upstreams
        .iter()
        .map(|(desc, rows)| Input { desc, rows })
        .collect();
    let committed = cluster.committed_rows(rel.id);
    let expected = closed_windows(query, &committed, evaluate(query, &inputs, &committed));
    let sum_cols = sum_columns(query);
    if let Some(diff) = compare(&rel.name, &rel.desc, committed, expected, &sum_cols) {
        let mut v = Violation::new("oracle", diff.to_string());
        v.table = Some(rel.id.0);
        run.checkers.violation(v);
    }
}

/// A table's committed rows against the model: every durable key holds its value, and no row has a key the
/// runner never wrote.
fn check_table(run: &Run, id: TableId, name: &str) {
    let layout = layout_of(run, id);
    let rows: BTreeMap<i64, OwnedRow> = run
        .cluster
        .committed_rows(id)
        .into_iter()
        .map(|r| (layout.model_key(&r), r))
        .collect();
    let models = lock(&run.models);
    let Some(model) = models.get(&id) else { return };
    let mut problem = rows
        .keys()
        .find(|k| !model.knows(**k))
        .map(|k| format!("row with key {k} was never written"));
    for (k, v) in model.durable() {
        if problem.is_some() {
            break;
        }
        let got = rows.get(&k);
        let want = v.map(|v| layout.row(k, v));
        if got != want.as_ref() {
            problem = Some(format!(
                "key {k}: committed {got:?}, but the model knows {want:?}"
            ));
        }
    }
    if problem.is_none() {
        problem = late_row_kept(model, &rows);
    }
    if let Some(p) = problem {
        let mut v = Violation::new("oracle", format!("table {name}: {p}"));
        v.table = Some(id.0);
        run.checkers.violation(v);
    }
}

/// A committed row of a table with a watermark that the watermark restored by a recovery should have dropped.
fn late_row_kept(model: &TableModel, rows: &BTreeMap<i64, OwnedRow>) -> Option<String> {
    let v_of = |r: &OwnedRow| match r.datum_at(1) {
        Some(ScalarImpl::Int64(v)) => Some(*v),
        _ => None,
    };
    let committed: BTreeMap<i64, i64> = rows
        .iter()
        .filter_map(|(k, r)| Some((*k, v_of(r)?)))
        .collect();
    let late = model.late_rows_kept(&committed).into_iter().next()?;
    Some(format!(
        "key {} (v {}) was written after a recovery that restored watermark {}, but was kept",
        late.key, late.v, late.watermark
    ))
}

impl PlanReport {
    fn with_counts(mut self, cluster: &Cluster, steps: usize, skipped: u32) -> Self {
        let stats = cluster.barrier_stats();
        self.epochs = stats.injected.load(Ordering::Relaxed);
        self.recoveries = stats.recoveries.load(Ordering::Relaxed);
        // Each start of meta leads the store with the next term: the first is 1.
        self.meta_restarts = cluster.meta().term().saturating_sub(1);
        self.meta_leader_changes = cluster.meta_leader_changes();
        self.meta_crashes = cluster.meta_crashes();
        self.steps = steps as u32;
        self.steps_skipped = skipped;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table_row(k: i64, v: i64) -> OwnedRow {
        RowLayout::default().row(k, v)
    }

    #[test]
    fn a_layout_with_rows_per_k_maps_model_keys_to_rows_and_back() {
        let layout = RowLayout::new(Some(4));
        let r = layout.row(9, 3);
        assert_eq!(r, row![2i64, 3i64, "payload_1"]);
        assert_eq!(layout.model_key(&r), 9);
        assert_eq!(layout.model_key(&row![2i64, 3i64, "payload_7"]), i64::MIN);
        assert_eq!(RowLayout::default().model_key(&table_row(9, 3)), 9);
    }
    use crate::bugs::Mode;
    use crate::report::Outcome;
    use crate::workload::plan::{GroupKey, JobSpec, PLAN_VERSION, Step};

    fn view(at_ms: u64, name: &str, query: ViewQuery) -> Step {
        let action = Action::CreateView {
            name: name.into(),
            parallelism: 2,
            background: false,
            query,
        };
        Step { at_ms, action }
    }

    /// A left join of two tables, an inner join of a table with an aggregation, a top-N over the join, DML
    /// on both tables and a kill between checkpoints: every view is created and equals its query.
    #[test]
    fn join_and_top_n_views_pass_under_a_kill() {
        use crate::workload::plan::ViewJoin;
        let table = |at_ms: u64, name: &str| Step {
            at_ms,
            action: Action::CreateTable {
                name: name.into(),
                parallelism: 2,
                rows: 200,
                pk_ks: false,
                rows_per_k: None,
                watermark_lag: None,
            },
        };
        let dml = |at_ms: u64, table: &str| Step {
            at_ms,
            action: Action::Dml {
                table: table.into(),
                rows_per_s: 40,
                duration_ms: 6000,
                update_pct: 30,
                delete_pct: 20,
            },
        };
        let join = |left: &str, right: &str, join, left_col| ViewQuery::Join {
            left: left.into(),
            right: right.into(),
            join,
            left_col,
            right_col: 0,
        };
        let steps = vec![
            table(0, "t1"),
            table(100, "t2"),
            view(500, "v1", join("t1", "t2", ViewJoin::LeftOuter, 1)),
            view(
                600,
                "v2",
                ViewQuery::Agg {
                    upstream: "t2".into(),
                    group: Some(GroupKey {
                        col: 0,
                        modulus: Some(5),
                    }),
                    eowc: false,
                    arg: 1,
                },
            ),
            dml(1000, "t1"),
            dml(1000, "t2"),
            view(2000, "v3", join("t1", "v2", ViewJoin::Inner, 0)),
            view(
                2500,
                "v4",
                ViewQuery::TopN {
                    upstream: "v1".into(),
                    col: 1,
                    desc: true,
                    limit: 10,
                    offset: 5,
                },
            ),
            Step {
                at_ms: 4100,
                action: Action::Kill {
                    nodes: vec![1],
                    restart_after_ms: 800,
                },
            },
        ];
        let out = run_views_plan(steps);
        let lines = out.log.lines();
        for name in ["v1", "v2", "v3", "v4"] {
            let ok = format!("create {name}: ok");
            assert!(lines.iter().any(|l| l.ends_with(&ok)), "{name} not created");
        }
    }

    /// A plan's `kill meta` step kills meta and restarts it from its store: the table's rows survive, the
    /// restarted meta's bootstrap is a recovery, and a second kill while it is down is skipped.
    #[test]
    fn a_kill_meta_step_restarts_meta_from_its_store() {
        let step = |at_ms, action| Step { at_ms, action };
        let steps = vec![
            step(0, table_t1()),
            step(
                3000,
                Action::KillMeta {
                    restart_after_ms: 700,
                    node: None,
                },
            ),
            step(
                3200,
                Action::KillMeta {
                    restart_after_ms: 100,
                    node: None,
                },
            ),
            step(5000, Action::Flush),
        ];
        let out = run_views_plan(steps);
        let lines = out.log.lines();
        let has = |s: &str| lines.iter().filter(|l| l.contains(s)).count();
        assert_eq!(
            has("kill node: node=meta-1"),
            1,
            "the second kill is skipped"
        );
        assert_eq!(has("restart node: node=meta-1"), 1);
        assert_eq!(has("step 3 skipped: meta is down already"), 1);
        assert_eq!(out.value.meta_restarts, 1);
    }

    /// A plan of three metas: a table, a view over it, then the whole cluster but the frontends down for
    /// 1.5 s, and later the leader's keep-alives unanswered for 8 s (it exits, a follower leads, and it is
    /// started again at the step's end). The view keeps following its table.
    #[test]
    fn a_meta_outage_and_a_keep_alive_timeout_end_with_the_views_intact() {
        let step = |at_ms, action| Step { at_ms, action };
        let steps = vec![
            step(0, table_t1()),
            view(
                500,
                "v1",
                ViewQuery::Agg {
                    upstream: "t1".into(),
                    group: None,
                    arg: 1,
                    eowc: false,
                },
            ),
            step(
                1000,
                Action::Dml {
                    table: "t1".into(),
                    rows_per_s: 40,
                    duration_ms: 20_000,
                    update_pct: 30,
                    delete_pct: 20,
                },
            ),
            step(
                3000,
                Action::KillComputeNodesAndMeta {
                    restart_after_ms: 1500,
                },
            ),
            step(9000, Action::FailMetaKeepAlives { duration_ms: 8000 }),
            step(30_000, Action::Flush),
        ];
        let mut plan = views_plan(Vec::new());
        plan.cluster.meta_nodes = 3;
        plan.steps = steps;
        plan.validate().unwrap();
        let out = run_plan(&plan, BugMode::of_14910(Mode::Fixed), ReproHooks::default());
        assert_eq!(out.value.outcome, Outcome::Passed, "{:?}", out.value.error);
        let lines = out.log.lines();
        let has = |s: &str| lines.iter().filter(|l| l.contains(s)).count();
        let all = r#"kill node: nodes=["meta-1", "meta-2", "meta-3"]"#;
        assert_eq!(has(all), 1, "{lines:#?}");
        assert_eq!(has("kill node: workers=[WorkerId(1), WorkerId(2)]"), 1);
        assert_eq!(has("fail keep-alives: node=meta-"), 1);
        assert_eq!(has("reason=keep-alive timed out"), 1);
        assert_eq!(
            has("lead meta: node=meta-"),
            2,
            "after the outage, after the exit"
        );
        let mut one = views_plan(Vec::new());
        one.steps = plan.steps.clone();
        one.steps
            .retain(|s| !matches!(s.action, Action::FailMetaKeepAlives { .. }));
        let out = run_plan(&one, BugMode::of_14910(Mode::Fixed), ReproHooks::default());
        assert_eq!(
            out.value.outcome,
            Outcome::Passed,
            "one meta: {:?}",
            out.value.error
        );
        let mut bad = plan.clone();
        bad.cluster.meta_nodes = 1;
        assert!(bad.validate().is_err(), "keep-alives need several metas");
    }

    #[test]
    fn a_crash_meta_step_kills_meta_at_its_point_in_the_next_ddl() {
        let step = |at_ms, action| Step { at_ms, action };
        let mv = |name: &str| Action::CreateMv {
            name: name.into(),
            job: JobSpec {
                upstream: "t1".into(),
                parallelism: 2,
                rate_limit: None,
                background: false,
                no_shuffle: false,
            },
        };
        let steps = vec![
            step(0, table_t1()),
            step(
                1000,
                Action::CrashMeta {
                    point: epochlab_meta::CrashPoint::CreateAfterRegister,
                },
            ),
            step(3000, mv("mv1")),
            step(8000, mv("mv2")),
            step(12_000, Action::Flush),
        ];
        let out = run_views_plan(steps);
        let lines = out.log.lines();
        let has = |s: &str| lines.iter().filter(|l| l.contains(s)).count();
        assert_eq!(has("crash meta: at=create-after-register"), 1, "once");
        assert_eq!(has("restart node: node=meta-1"), 1);
        assert_eq!(has("create mv1: failed"), 1, "the DDL meta died in");
        assert_eq!(has("create mv2: ok"), 1, "the next one, after the restart");
    }

    /// `t1`: 100 rows over 2 actors.
    fn table_t1() -> Action {
        Action::CreateTable {
            name: "t1".into(),
            parallelism: 2,
            rows: 100,
            pk_ks: false,
            rows_per_k: None,
            watermark_lag: None,
        }
    }

    fn run_views_plan(steps: Vec<Step>) -> crate::runtime::SimOutput<PlanReport> {
        let plan = views_plan(steps);
        let out = run_plan(&plan, BugMode::of_14910(Mode::Fixed), ReproHooks::default());
        let report = &out.value;
        assert_eq!(report.outcome, Outcome::Passed, "{:?}", report.error);
        assert!(report.recoveries >= 1);
        out
    }

    /// Two nodes, 16 vnodes, a barrier every 250 ms and a checkpoint every third: the views' plans.
    fn views_plan(steps: Vec<Step>) -> Plan {
        let cluster = PlanCluster {
            compute_nodes: 2,
            meta_nodes: 1,
            vnodes: 16,
            barrier_interval_ms: 250,
            checkpoint_frequency: 3,
            persist_check: true,
            static_groups: false,
            flow_control: false,
        };
        let plan = Plan {
            version: PLAN_VERSION,
            seed: 4,
            cluster,
            steps,
        };
        plan.validate().unwrap();
        plan
    }

    /// Two over window views (partitions by a remainder of `v`, which updates move rows between, and of the
    /// pk), DML with updates and deletes, and a kill of a node: both pass. With the over window's state
    /// writes skipped (a test-only mutation), the rebuilt actors load empty partitions: the run fails.
    #[test]
    fn over_window_views_pass_under_a_kill_and_unwritten_partitions_are_caught() {
        let window = |col: usize, modulus: i64, order: usize| ViewQuery::OverWindow {
            upstream: "t1".into(),
            partition: GroupKey {
                col,
                modulus: Some(modulus),
            },
            order,
            arg: 1,
        };
        let steps = vec![
            Step {
                at_ms: 0,
                action: Action::CreateTable {
                    name: "t1".into(),
                    parallelism: 2,
                    rows: 300,
                    pk_ks: true,
                    rows_per_k: None,
                    watermark_lag: None,
                },
            },
            view(500, "ow1", window(1, 10, 0)),
            view(700, "ow2", window(0, 7, 1)),
            Step {
                at_ms: 1000,
                action: Action::Dml {
                    table: "t1".into(),
                    rows_per_s: 50,
                    duration_ms: 6000,
                    update_pct: 30,
                    delete_pct: 20,
                },
            },
            Step {
                at_ms: 2500,
                action: Action::Kill {
                    nodes: vec![1],
                    restart_after_ms: 800,
                },
            },
            // The run settles after its last step: the DML goes on after the kill until then.
            Step {
                at_ms: 6500,
                action: Action::Flush,
            },
        ];
        let out = run_views_plan(steps.clone());
        let lines = out.log.lines();
        for name in ["ow1", "ow2"] {
            let ok = format!("create {name}: ok");
            assert!(lines.iter().any(|l| l.ends_with(&ok)), "{name} not created");
        }
        use epochlab_stream::executor::over_window::OverWindowStateWrites;
        let hooks = ReproHooks {
            mutation: Some(|t| t.with(OverWindowStateWrites::Skipped)),
            ..ReproHooks::default()
        };
        let report = run_plan(&views_plan(steps), BugMode::of_14910(Mode::Fixed), hooks).value;
        // Caught by the oracle, or first by the view's own table: a reloaded empty partition emits its
        // rows as inserts of rows the view holds.
        let caught = [FailureKind::Oracle, FailureKind::ActorFailure];
        assert!(
            report.kind.is_some_and(|k| caught.contains(&k)),
            "{:?}",
            report.error
        );
    }

    /// An aggregation over a table and one over it, DML throughout and a kill: both views are created,
    /// checked against their queries, and pass; a view over a column that is not `BIGINT` is refused.
    #[test]
    fn stateful_views_over_a_table_and_a_view_pass_under_a_kill() {
        let agg = |upstream: &str, col: usize, modulus: Option<i64>, arg: usize| ViewQuery::Agg {
            upstream: upstream.into(),
            group: Some(GroupKey { col, modulus }),
            arg,
            eowc: false,
        };
        let steps = vec![
            Step {
                at_ms: 0,
                action: Action::CreateTable {
                    name: "t1".into(),
                    parallelism: 2,
                    rows: 300,
                    pk_ks: false,
                    rows_per_k: None,
                    watermark_lag: None,
                },
            },
            view(500, "v1", agg("t1", 0, Some(7), 0)),
            view(600, "v2", agg("t1", 2, None, 0)),
            Step {
                at_ms: 1000,
                action: Action::Dml {
                    table: "t1".into(),
                    rows_per_s: 50,
                    duration_ms: 6000,
                    update_pct: 30,
                    delete_pct: 20,
                },
            },
            view(2000, "v3", agg("v1", 4, Some(2), 1)),
            Step {
                at_ms: 4000,
                action: Action::Kill {
                    nodes: vec![2],
                    restart_after_ms: 1000,
                },
            },
        ];
        let cluster = two_nodes();
        let plan = Plan {
            version: PLAN_VERSION,
            seed: 3,
            cluster,
            steps,
        };
        plan.validate().unwrap();
        let out = run_plan(&plan, BugMode::of_14910(Mode::Fixed), ReproHooks::default());
        let report = out.value;
        assert_eq!(report.outcome, Outcome::Passed, "{:?}", report.error);
        assert!(report.recoveries >= 1);
        let lines = out.log.lines();
        for name in ["v1", "v3"] {
            let ok = format!("create {name}: ok");
            assert!(lines.iter().any(|l| l.ends_with(&ok)), "{name} not created");
        }
        let refused = "create v2: failed: column 2 of t1 is not a BIGINT column";
        assert!(lines.iter().any(|l| l.ends_with(refused)));
    }

    /// A table with a watermark on two actors, an emit-on-window-close view and a plain view over it, inserts
    /// (some late) before and after a kill of every node: everything passes, and the view holds closed
    /// windows. With the watermark never stored (a test-only mutation), the rebuilt filters start from
    /// nothing and keep very late rows: the oracle's lower bound names one.
    #[test]
    fn a_table_with_a_watermark_passes_under_kills_and_a_lost_watermark_is_caught() {
        let plan = watermark_plan();
        plan.validate().unwrap();
        let fixed = BugMode::of_14910(Mode::Fixed);
        let kept: Arc<Mutex<Option<Arc<Cluster>>>> = Arc::default();
        let keep = kept.clone();
        let hooks = ReproHooks {
            on_cluster: Some(Box::new(move |c| *lock(&keep) = Some(c))),
            ..ReproHooks::default()
        };
        let out = run_plan(&plan, fixed, hooks);
        let report = out.value;
        assert_eq!(report.outcome, Outcome::Passed, "{:?}", report.error);
        assert!(report.recoveries >= 2);
        let cluster = lock(&kept).take().expect("the hook ran");
        let count = |name: &str| {
            let rel = cluster.meta().relation_by_name(name).expect("created");
            cluster.committed_rows(rel.id).len()
        };
        let (windows, rows) = (count("eowc_w1"), count("w1"));
        assert!(
            windows > 100 && windows < rows,
            "{windows} windows of {rows} rows"
        );
        let lines = out.log.lines();
        for name in ["eowc_w1", "mv_w1"] {
            let ok = format!("create {name}: ok");
            assert!(lines.iter().any(|l| l.ends_with(&ok)), "{name} not created");
        }
        use epochlab_stream::executor::watermark_filter::WatermarkPersist;
        let hooks = ReproHooks {
            mutation: Some(|t| t.with(WatermarkPersist::Never)),
            ..ReproHooks::default()
        };
        let report = run_plan(&plan, fixed, hooks).value;
        assert_eq!(report.kind, Some(FailureKind::Oracle), "{:?}", report.error);
        let error = report.error.unwrap_or_default();
        assert!(
            error.contains("table w1") && error.contains("was kept"),
            "{error}"
        );
    }

    /// Two nodes, 16 vnodes, a barrier every 250 ms and a checkpoint every other one.
    fn two_nodes() -> PlanCluster {
        PlanCluster {
            compute_nodes: 2,
            meta_nodes: 1,
            vnodes: 16,
            barrier_interval_ms: 250,
            checkpoint_frequency: 2,
            persist_check: true,
            static_groups: false,
            flow_control: false,
        }
    }

    fn watermark_plan() -> Plan {
        let inserts = |at_ms: u64| Step {
            at_ms,
            action: Action::Dml {
                table: "w1".into(),
                rows_per_s: 100,
                duration_ms: 3000,
                update_pct: 0,
                delete_pct: 0,
            },
        };
        let kill = |at_ms: u64| Step {
            at_ms,
            action: Action::Kill {
                nodes: vec![1, 2],
                restart_after_ms: 500,
            },
        };
        let eowc = ViewQuery::Agg {
            upstream: "w1".into(),
            group: Some(GroupKey {
                col: 1,
                modulus: None,
            }),
            arg: 0,
            eowc: true,
        };
        let job = JobSpec {
            upstream: "w1".into(),
            parallelism: 2,
            rate_limit: None,
            background: false,
            no_shuffle: false,
        };
        let steps = vec![
            Step {
                at_ms: 0,
                action: Action::CreateTable {
                    name: "w1".into(),
                    parallelism: 2,
                    rows: 10,
                    pk_ks: false,
                    rows_per_k: None,
                    watermark_lag: Some(100),
                },
            },
            view(500, "eowc_w1", eowc),
            Step {
                at_ms: 600,
                action: Action::CreateMv {
                    name: "mv_w1".into(),
                    job,
                },
            },
            inserts(1000),
            kill(5000),
            inserts(8000),
            kill(12_000),
            inserts(15_000),
        ];
        let cluster = two_nodes();
        Plan {
            version: PLAN_VERSION,
            seed: 5,
            cluster,
            steps,
        }
    }

    #[test]
    fn the_first_difference_is_named() {
        let rows = |kv: &[(i64, i64)]| -> Vec<OwnedRow> {
            kv.iter().map(|(k, v)| table_row(*k, *v)).collect()
        };
        let want = rows(&[(1, 0), (2, 0), (3, 0)]);
        let diff = |got: &[(i64, i64)]| first_difference(&rows(got), &want, &[]);
        assert!(
            diff(&[(1, 0), (3, 0)])
                .ends_with("Int64(2)), Some(Int64(0)), Some(Utf8(\"payload\"))] missing")
        );
        assert!(diff(&[(1, 0), (2, 0), (3, 0), (4, 0)]).ends_with("extra"));
        assert!(diff(&[(1, 0), (2, 1), (3, 0)]).contains("where its upstream has"));
        assert!(diff(&[(0, 0), (1, 0), (2, 0), (3, 0)]).ends_with("extra"));
        let anomaly = first_difference(&want, &want, &["epoch 5: duplicate".into()]);
        assert_eq!(anomaly, "sink anomaly: epoch 5: duplicate");
    }
}
