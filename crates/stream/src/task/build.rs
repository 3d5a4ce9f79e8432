//! Building actors from their plans (RisingWave's `from_proto` builders).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use epochlab_barrier::Barrier;
use epochlab_common::plan::{StreamActorDesc, StreamNode, StreamScanType};
use epochlab_common::{ActorId, Clock, EventLog, WorkerId};
use epochlab_state_table::{StateTable, StateTableOptions, StorageTable};
use epochlab_storage::{Accessor, NodeStorage, OpConsistencyLevel};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

use super::actor::Actor;
use super::barrier_worker::LocalBarrierManager;
use super::error::BuildError;
use super::exchange::ExchangeRegistry;
use crate::executor::aggregate::group::DedupWrite;
use crate::executor::backfill::arrangement_backfill::BackfillVnode;
use crate::executor::backfill::output::ScanOutputExecutor;
use crate::executor::hash_join::join_hash_map::JoinRowDelete;
use crate::executor::over_window::{EowcOverWindowExecutor, OverWindowArgs, OverWindowExecutor};
use crate::executor::temporal_join::{TEMPORAL_JOIN_CACHE_CAPACITY, TemporalJoinReadEpoch};
use crate::executor::top_n::state::TopNRowDelete;
use crate::executor::watermark_filter::{WatermarkPersist, WatermarkRecovery};
use crate::executor::{AggArgs, DedupTable, HashAggExecutor, SimpleAggExecutor};
use crate::executor::{
    AppendOnlyGroupTopNExecutor, AppendOnlyTopNExecutor, GroupTopNExecutor, TopNArgs, TopNExecutor,
};
use crate::executor::{
    ArrangementBackfillExecutor, BackfillArgs, BackfillRegistry, BoxedExecutor, DispatchExecutor,
    DmlExecutor, ExecutorTracer, ExprErrorCounts, ExprExecutor, FailureReason, FilterExecutor,
    FlowControlExecutor, HopWindowExecutor, MaterializeExecutor, MergeExecutor,
    NoShuffleBackfillExecutor, NonStrict, ProjectExecutor, RowIdGenExecutor, SinkExecutor,
    SinkRegistry, StatefulExecutorKind, StreamExecutorError, TracedExecutor, UnionExecutor,
    ValuesExecutor,
};
use crate::executor::{
    ChainExecutor, HashJoinArgs, HashJoinExecutor, TemporalJoinArgs, TemporalJoinExecutor,
};
use crate::executor::{Comparator, DynamicFilterArgs, DynamicFilterExecutor, NowExecutor};
use crate::executor::{ExpandExecutor, ProjectSetExecutor, SourceArgs, SourceExecutor};
use crate::executor::{SortExecutor, WatermarkFilterExecutor};

/// Every task of one node: killing the node aborts them all at once.
#[derive(Default)]
pub struct NodeTasks {
    set: Mutex<JoinSet<()>>,
}

impl NodeTasks {
    pub fn spawn<F>(&self, f: F) -> AbortHandle
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let mut set = self.set.lock().unwrap_or_else(|e| e.into_inner());
        while set.try_join_next().is_some() {}
        set.spawn(f)
    }

    pub fn abort_all(&self) {
        self.set
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .abort_all();
    }
}

/// A DML chunk on its way to a table actor, with the notice the actor sends when it takes it (RisingWave's
/// DML transaction end waits for the `DmlExecutor` the same way), so that a barrier injected after the
/// write returned comes after the chunk.
pub struct DmlWrite {
    pub chunk: epochlab_common::StreamChunk,
    pub taken: tokio::sync::oneshot::Sender<()>,
}

type DmlSenders = BTreeMap<ActorId, mpsc::Sender<DmlWrite>>;

/// DML channels of a node's table actors (RisingWave's `DmlManager`).
#[derive(Clone, Default)]
pub struct DmlManager {
    inner: Arc<Mutex<DmlSenders>>,
}

impl DmlManager {
    fn lock(&self) -> std::sync::MutexGuard<'_, DmlSenders> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn register(&self, actor: ActorId, tx: mpsc::Sender<DmlWrite>) {
        self.lock().insert(actor, tx);
    }

    pub fn get(&self, actor: ActorId) -> Option<mpsc::Sender<DmlWrite>> {
        self.lock().get(&actor).cloned()
    }

    pub fn remove(&self, actor: ActorId) {
        self.lock().remove(&actor);
    }

    pub fn clear(&self) {
        self.lock().clear();
    }
}

/// The tables each running actor of a node reads or writes (checkers): an actor is listed from its build
/// until its task ends, it is dropped, or the node is reset or killed.
#[derive(Clone, Default)]
pub struct ActiveTables {
    inner: Arc<Mutex<BTreeMap<ActorId, Vec<epochlab_common::TableId>>>>,
}

impl ActiveTables {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<ActorId, Vec<epochlab_common::TableId>>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn insert(&self, actor: ActorId, tables: Vec<epochlab_common::TableId>) {
        self.lock().insert(actor, tables);
    }

    pub(crate) fn remove(&self, actor: ActorId) {
        self.lock().remove(&actor);
    }

    pub(crate) fn clear(&self) {
        self.lock().clear();
    }

    /// Running actors that use `table`.
    pub fn users_of(&self, table: epochlab_common::TableId) -> Vec<ActorId> {
        self.lock()
            .iter()
            .filter(|(_, ts)| ts.contains(&table))
            .map(|(a, _)| *a)
            .collect()
    }
}

/// The state tables an actor's plan reads or writes.
pub fn tables_of(node: &StreamNode) -> Vec<epochlab_common::TableId> {
    let mut t: Vec<epochlab_common::TableId> =
        node.inputs().into_iter().flat_map(tables_of).collect();
    match node {
        StreamNode::Materialize { table, .. } => t.push(table.table_id),
        StreamNode::StreamScan {
            upstream_table,
            state_table,
            ..
        } => {
            t.push(upstream_table.table_id);
            t.push(state_table.table_id);
        }
        _ => t.extend(node.internal_tables().iter().map(|d| d.table_id)),
    }
    t
}

/// Counters of one node's streaming side.
#[derive(Default, Debug)]
pub struct StreamStats {
    pub actor_failures: AtomicU64,
    failures_by_reason: Mutex<BTreeMap<FailureReason, u64>>,
    /// Expression errors of non-strict evaluation (`epochlab_expr_errors_total`).
    pub expr_errors: ExprErrorCounts,
    /// Counters of the stateful executors (`epochlab_executor_*`).
    pub executors: crate::executor::ExecutorStats,
}

impl StreamStats {
    pub(crate) fn record_actor_failure(&self, reason: FailureReason) {
        self.actor_failures.fetch_add(1, Ordering::Relaxed);
        *self
            .failures_by_reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(reason)
            .or_default() += 1;
    }

    pub fn failures_by_reason(&self) -> BTreeMap<FailureReason, u64> {
        self.failures_by_reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// One actor failure, as its typed error.
#[derive(Clone, Debug)]
pub struct ActorFailure {
    pub worker: WorkerId,
    pub actor: ActorId,
    pub error: StreamExecutorError,
    /// Virtual time, µs since the clock's origin.
    pub at_us: u64,
}

/// Every actor failure of a cluster, in the order they happened (the first [`ActorFailureLog::CAPACITY`];
/// later ones are only counted).
#[derive(Clone, Default)]
pub struct ActorFailureLog {
    inner: Arc<Mutex<(Vec<ActorFailure>, u64)>>,
}

impl ActorFailureLog {
    pub const CAPACITY: usize = 1024;

    pub(crate) fn record(&self, failure: ActorFailure) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.1 += 1;
        if g.0.len() < Self::CAPACITY {
            g.0.push(failure);
        }
    }

    pub fn failures(&self) -> Vec<ActorFailure> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone()
    }

    /// The first failure that is a finding about state (not the fallout of a fault).
    pub fn first_state_error(&self) -> Option<ActorFailure> {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.0.iter()
            .find(|f| f.error.reason().is_state_error())
            .cloned()
    }
}

/// What building an actor needs from its node.
pub(crate) struct BuildEnv {
    pub worker: WorkerId,
    pub storage: NodeStorage,
    pub exchange: ExchangeRegistry,
    pub sinks: SinkRegistry,
    pub backfill: BackfillRegistry,
    pub active: ActiveTables,
    pub dml: DmlManager,
    pub tasks: Arc<NodeTasks>,
    pub clock: Clock,
    pub log: EventLog,
    pub stats: Arc<StreamStats>,
    pub failures: ActorFailureLog,
    pub dml_channel_capacity: usize,
    /// RisingWave's debug-build checks on backfill progress and views (see `StreamConfig::persist_check`).
    pub persist_check: bool,
    /// The engine's bug toggles (see `StreamConfig::toggles`).
    pub toggles: epochlab_common::Toggles,
    /// Barriers a source actor may have queued (meta never has more in flight).
    pub barrier_channel_capacity: usize,
}

/// An actor's executor chain as built, from its output down: `Sink <- FlowControl(5 rows/s) <-
/// StreamScan(arrangement backfill of table 1) <- Merge(fragment 1: actors [1, 2])`; a node of several inputs
/// lists each input's chain in brackets. What a stall report shows of an actor that holds a barrier.
pub(crate) fn executor_chain(env: &BuildEnv, node: &StreamNode) -> String {
    let label = match node {
        StreamNode::Merge {
            upstream_fragment,
            upstream_actors,
        } => format!(
            "Merge(fragment {upstream_fragment}: actors {:?})",
            upstream_actors.iter().map(|a| a.0).collect::<Vec<_>>()
        ),
        StreamNode::StreamScan {
            scan_type,
            upstream_table,
            rate_limit,
            ..
        } => {
            let scan = format!(
                "StreamScan({scan_type:?} of table {}{})",
                upstream_table.table_id,
                rate_limit.map_or(String::new(), |r| format!(", {r} rows/s"))
            );
            match backfill_pacing(env, *rate_limit).1 {
                Some(r) => format!("FlowControl({r} rows/s) <- {scan}"),
                None => scan,
            }
        }
        StreamNode::FlowControl { rate_limit, .. } => match rate_limit {
            Some(r) => format!("FlowControl({r} rows/s)"),
            None => "FlowControl(unlimited)".to_string(),
        },
        StreamNode::Materialize { table, .. } => format!("Materialize(table {})", table.table_id),
        StreamNode::Dml { table_id, .. } => format!("Dml(table {table_id})"),
        other => other.kind().to_string(),
    };
    match node.inputs().as_slice() {
        [] => label,
        [one] => format!("{label} <- {}", executor_chain(env, one)),
        many => {
            let inputs: Vec<String> = many.iter().map(|n| executor_chain(env, n)).collect();
            format!("{label} <- [{}]", inputs.join("; "))
        }
    }
}

/// Build one actor; a source actor also returns the sender its barriers are injected into.
pub(crate) fn build_actor(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    generation: u64,
    barrier_manager: LocalBarrierManager,
) -> Result<(Actor, Option<mpsc::Sender<Barrier>>), BuildError> {
    let (barrier_tx, mut barrier_rx) = if desc.is_source() {
        let (tx, rx) = mpsc::channel(env.barrier_channel_capacity);
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let executor = build_node(
        env,
        desc,
        &desc.node,
        generation,
        &mut barrier_rx,
        &barrier_manager,
    )?;
    let consumer = DispatchExecutor::new(
        desc.actor_id,
        executor,
        &desc.dispatchers,
        env.exchange.clone(),
        generation,
    )
    .execute();
    let actor = Actor {
        id: desc.actor_id,
        clock: env.clock.clone(),
        consumer,
        barrier_manager,
    };
    Ok((actor, barrier_tx))
}

/// The tables and limits of a backfill node.
struct BackfillTables<'a> {
    upstream_table: &'a Arc<epochlab_common::catalog::TableDesc>,
    state_table: &'a Arc<epochlab_common::catalog::TableDesc>,
    rate_limit: Option<u32>,
    chunk_size: usize,
}

/// What a backfill executor (arrangement or no-shuffle) is built from: a replicated copy of the upstream table
/// over the actor's vnodes, and its progress table.
fn backfill_args(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    t: BackfillTables<'_>,
    barrier_manager: &LocalBarrierManager,
) -> Result<BackfillArgs, BuildError> {
    let actor_id = desc.actor_id;
    let (upstream_table, state_table) = (t.upstream_table, t.state_table);
    for table in [upstream_table, state_table] {
        check_vnode_count(desc, table)?;
    }
    let accessor = Some(Accessor {
        actor: actor_id,
        job: desc.job_id,
    });
    let replicated = StateTable::with_options(
        upstream_table.clone(),
        &env.storage,
        desc.vnodes.clone(),
        StateTableOptions {
            op_consistency_level: OpConsistencyLevel::Inconsistent,
            is_replicated: true,
            accessor,
        },
    );
    // A release build (persist check off) writes progress rows blindly.
    let progress_level = consistency_level(env.persist_check);
    let progress = StateTable::with_options(
        state_table.clone(),
        &env.storage,
        desc.vnodes.clone(),
        StateTableOptions {
            op_consistency_level: progress_level,
            is_replicated: false,
            accessor,
        },
    );
    let args = BackfillArgs {
        actor_id,
        upstream_table: replicated,
        state_table: progress,
        vnodes: desc.vnodes.clone(),
        rate_limit: t.rate_limit,
        paced: false,
        chunk_size: t.chunk_size,
        persist_check: env.persist_check,
        backfill_vnode: env.toggles.get::<BackfillVnode>(),
        storage: env.storage.clone(),
        barrier_manager: barrier_manager.clone(),
        stats: env.backfill.actor(state_table.table_id, actor_id),
        log: env.log.clone(),
        clock: env.clock.clone(),
    };
    Ok(args)
}

fn build_node(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    node: &StreamNode,
    generation: u64,
    barrier_rx: &mut Option<mpsc::Receiver<Barrier>>,
    barrier_manager: &LocalBarrierManager,
) -> Result<BoxedExecutor, BuildError> {
    let exec = build_executor(env, desc, node, generation, barrier_rx, barrier_manager)?;
    let tables = node.internal_tables();
    let (Some(kind), Some(table)) = (stateful_kind(node), tables.first()) else {
        return Ok(exec);
    };
    let actor_id = desc.actor_id;
    let tracer = ExecutorTracer {
        actor_id,
        table_id: table.table_id,
        kind,
        stats: env.stats.executors.handle(actor_id, table.table_id, kind),
        barrier_manager: barrier_manager.clone(),
        clock: env.clock.clone(),
    };
    Ok(Box::new(TracedExecutor {
        inner: exec,
        tracer,
    }))
}

/// The kind of a stateful executor's node (its metrics' and spans' `executor`), `None` for the others.
fn stateful_kind(node: &StreamNode) -> Option<StatefulExecutorKind> {
    Some(match node {
        StreamNode::HashAgg { .. } => StatefulExecutorKind::HashAgg,
        StreamNode::SimpleAgg { .. } => StatefulExecutorKind::SimpleAgg,
        StreamNode::HashJoin { .. } => StatefulExecutorKind::HashJoin,
        StreamNode::TopN { .. } => StatefulExecutorKind::TopN,
        StreamNode::GroupTopN { .. } => StatefulExecutorKind::GroupTopN,
        StreamNode::DynamicFilter { .. } => StatefulExecutorKind::DynamicFilter,
        _ => return None,
    })
}

fn build_executor(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    node: &StreamNode,
    generation: u64,
    barrier_rx: &mut Option<mpsc::Receiver<Barrier>>,
    barrier_manager: &LocalBarrierManager,
) -> Result<BoxedExecutor, BuildError> {
    let actor_id = desc.actor_id;
    macro_rules! build {
        ($input:expr) => {
            build_node(env, desc, $input, generation, barrier_rx, barrier_manager)?
        };
    }
    Ok(match node {
        StreamNode::Dml { table_id, .. } => build_dml(env, actor_id, *table_id, barrier_rx)?,
        StreamNode::Values { rows, .. } => {
            build_values(env, actor_id, rows, barrier_rx, barrier_manager)?
        }
        StreamNode::Merge {
            upstream_actors, ..
        } => build_merge(env, actor_id, generation, upstream_actors),
        StreamNode::StreamScan { input, .. } => {
            build_stream_scan(env, desc, node, build!(input), barrier_manager)?
        }
        StreamNode::Materialize {
            table,
            conflict,
            input,
        } => build_materialize(env, desc, table, *conflict, build!(input))?,
        StreamNode::FlowControl { rate_limit, input } => {
            let (input, clock) = (build!(input), env.clock.clone());
            Box::new(FlowControlExecutor::new(
                actor_id,
                input,
                *rate_limit,
                clock,
            ))
        }
        StreamNode::Sink { sink, input } => build_sink(env, desc, sink, build!(input)),
        StreamNode::HashAgg { input, .. } | StreamNode::SimpleAgg { input, .. } => {
            build_agg(env, desc, node, build!(input))?
        }
        StreamNode::HashJoin { left, right, .. } => {
            let (left, right) = (build!(left), build!(right));
            build_hash_join(env, desc, node, left, right)?
        }
        StreamNode::TopN { input, .. } | StreamNode::GroupTopN { input, .. } => {
            build_top_n(env, desc, node, build!(input))?
        }
        StreamNode::DynamicFilter { left, right, .. } => {
            let (left, right) = (build!(left), build!(right));
            build_dynamic_filter(env, desc, node, left, right)?
        }
        StreamNode::TemporalJoin { left, right, .. } => {
            let (left, right) = (build!(left), build!(right));
            build_temporal_join(env, desc, node, left, right)?
        }
        StreamNode::Now { state_table } => build_now(env, desc, state_table, barrier_rx)?,
        StreamNode::Source { .. } => build_source(env, desc, node, barrier_rx)?,
        StreamNode::WatermarkFilter { input, .. } => {
            build_watermark_filter(env, desc, node, build!(input))?
        }
        StreamNode::EowcSort {
            sort_column_index,
            buffer_table,
            input,
        } => {
            check_vnode_count(desc, buffer_table)?;
            let table = open_checked(env, desc, buffer_table);
            let input = build!(input);
            Box::new(
                SortExecutor::new(actor_id, input, table, *sort_column_index)
                    .with_writes(env.toggles.get()),
            )
        }
        StreamNode::OverWindow {
            calls,
            partition_by,
            order_by,
            stream_key,
            state_table,
            emit_on_window_close,
            input,
        } => {
            check_vnode_count(desc, state_table)?;
            let state_table = open_checked(env, desc, state_table);
            let input = build!(input);
            let bad = |source| BuildError::BadPlan {
                actor: actor_id,
                source,
            };
            let args = OverWindowArgs {
                actor_id,
                input,
                calls: calls.clone(),
                partition_by: partition_by.clone(),
                order_by: order_by.clone(),
                stream_key: stream_key.clone(),
                state_table,
                state_writes: env.toggles.get(),
            };
            if *emit_on_window_close {
                Box::new(EowcOverWindowExecutor::new(args).map_err(bad)?)
            } else {
                Box::new(OverWindowExecutor::new(args).map_err(bad)?)
            }
        }
        _ => build_stateless(env, desc, node, generation, barrier_rx, barrier_manager)?,
    })
}

/// The barrier receiver of the actor's one barrier source (DML, values, now).
fn take_barrier_rx(
    barrier_rx: &mut Option<mpsc::Receiver<Barrier>>,
    actor_id: epochlab_common::ActorId,
) -> Result<mpsc::Receiver<Barrier>, BuildError> {
    barrier_rx
        .take()
        .ok_or(BuildError::TwoBarrierSources { actor: actor_id })
}

/// The DML source of `table_id`: its barriers, and the statements sent to the actor's registered channel.
fn build_dml(
    env: &BuildEnv,
    actor_id: epochlab_common::ActorId,
    table_id: epochlab_common::TableId,
    barrier_rx: &mut Option<mpsc::Receiver<Barrier>>,
) -> Result<BoxedExecutor, BuildError> {
    let rx = take_barrier_rx(barrier_rx, actor_id)?;
    let (dml_tx, dml_rx) = mpsc::channel(env.dml_channel_capacity);
    env.dml.register(actor_id, dml_tx);
    Ok(Box::new(DmlExecutor::new(actor_id, table_id, rx, dml_rx)))
}

/// The values source: its rows once, at its first barrier.
fn build_values(
    env: &BuildEnv,
    actor_id: epochlab_common::ActorId,
    rows: &[epochlab_common::OwnedRow],
    barrier_rx: &mut Option<mpsc::Receiver<Barrier>>,
    barrier_manager: &LocalBarrierManager,
) -> Result<BoxedExecutor, BuildError> {
    let rx = take_barrier_rx(barrier_rx, actor_id)?;
    let bm = barrier_manager.clone();
    let clock = env.clock.clone();
    let values = ValuesExecutor::new(actor_id, rx, rows.to_vec(), bm, clock);
    Ok(Box::new(values))
}

/// A merge of the upstream actors' exchange channels of this generation.
fn build_merge(
    env: &BuildEnv,
    actor_id: epochlab_common::ActorId,
    generation: u64,
    upstream_actors: &[epochlab_common::ActorId],
) -> BoxedExecutor {
    let upstreams = upstream_actors
        .iter()
        .map(|&up| (up, env.exchange.take_receiver(generation, up, actor_id)))
        .collect();
    Box::new(MergeExecutor::new(actor_id, upstreams))
}

epochlab_common::toggle! {
    /// Where a backfill's rate limit holds the snapshot rows it has read (RisingWave #15790, fixed by PR
    /// #15948). Read only by [`build_stream_scan`] (and [`executor_chain`], which shows what it builds).
    pub enum BackfillRateLimit {
        /// RisingWave before PR #15948 (f21fb9b7915, the tree of #14910): a `FlowControlExecutor` after the
        /// backfill paces the chunks it yields. A barrier waits behind every row the backfill read before it:
        /// at the end of a snapshot, the partly filled chunk of every vnode goes out at once, and a barrier
        /// then waits rows / limit seconds (#15790: "barrier latency spikes").
        FlowControl,
        /// PR #15948: the backfill waits for the limiter before each snapshot read, a wait that an upstream
        /// barrier preempts; rows already read never hold a barrier.
        #[default]
        InExecutor,
    }
}

/// How a backfill of `rate_limit` is paced under `env`'s [`BackfillRateLimit`] (the toggle's one read): whether
/// the backfill paces its own snapshot reads, and the limit a flow-control executor after it keeps, if any.
fn backfill_pacing(env: &BuildEnv, rate_limit: Option<u32>) -> (bool, Option<u32>) {
    match env.toggles.get::<BackfillRateLimit>() {
        BackfillRateLimit::FlowControl => (false, rate_limit),
        BackfillRateLimit::InExecutor => (true, None),
    }
}

/// A backfill of `tables` over `input` (the upstream's changes), arrangement or no-shuffle, paced as
/// [`BackfillRateLimit`] says.
fn build_stream_scan(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    node: &StreamNode,
    input: BoxedExecutor,
    barrier_manager: &LocalBarrierManager,
) -> Result<BoxedExecutor, BuildError> {
    let StreamNode::StreamScan {
        scan_type,
        upstream_table,
        output_indices,
        state_table,
        rate_limit,
        chunk_size,
        ..
    } = node
    else {
        unreachable!("a stream scan node")
    };
    if *scan_type == StreamScanType::UpstreamOnly {
        check_vnode_count(desc, upstream_table)?;
        let chain = ChainExecutor::new(desc.actor_id, input, barrier_manager.clone());
        return Ok(project_scan_output(output_indices, Box::new(chain)));
    }
    let tables = BackfillTables {
        upstream_table,
        state_table,
        rate_limit: *rate_limit,
        chunk_size: *chunk_size,
    };
    let mut args = backfill_args(env, desc, tables, barrier_manager)?;
    let (paced, flow_control) = backfill_pacing(env, *rate_limit);
    args.paced = paced;
    let backfill: BoxedExecutor = match scan_type {
        StreamScanType::ArrangementBackfill => {
            Box::new(ArrangementBackfillExecutor::new(input, args))
        }
        StreamScanType::Backfill => Box::new(NoShuffleBackfillExecutor::new(input, args)),
        StreamScanType::UpstreamOnly => unreachable!("an upstream-only scan has no backfill"),
    };
    let paced: BoxedExecutor = match flow_control {
        Some(limit) => Box::new(FlowControlExecutor::new(
            desc.actor_id,
            backfill,
            Some(limit),
            env.clock.clone(),
        )),
        None => backfill,
    };
    Ok(project_scan_output(output_indices, paced))
}

/// A backfill's rows cut to the upstream columns its job was planned over (`output_indices`; every column
/// when empty): its table may gain columns while it runs (`ALTER TABLE .. ADD COLUMN`).
fn project_scan_output(output_indices: &[usize], scan: BoxedExecutor) -> BoxedExecutor {
    if output_indices.is_empty() {
        return scan;
    }
    Box::new(ScanOutputExecutor::new(scan, output_indices.to_vec()))
}

/// The materialize of `table`. A release build (persist check off) skips the sanity check of each write
/// against storage.
fn build_materialize(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    table: &Arc<epochlab_common::catalog::TableDesc>,
    conflict: epochlab_common::plan::ConflictBehavior,
    input: BoxedExecutor,
) -> Result<BoxedExecutor, BuildError> {
    check_vnode_count(desc, table)?;
    let state = open_checked(env, desc, table);
    Ok(Box::new(MaterializeExecutor::new(
        desc.actor_id,
        input,
        state,
        conflict,
    )))
}

/// A sink; a collecting sink's rows are kept in the environment's sinks.
fn build_sink(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    sink: &epochlab_common::plan::SinkDesc,
    input: BoxedExecutor,
) -> BoxedExecutor {
    if sink.kind == epochlab_common::plan::SinkKind::Collecting {
        env.sinks.ensure(sink.sink_id, &sink.pk_indices);
    }
    Box::new(SinkExecutor::new(
        desc.actor_id,
        input,
        sink.clone(),
        env.sinks.clone(),
    ))
}

/// A watermark filter: its table over the actor's vnodes, inconsistent-op as RisingWave opens it (each
/// checkpoint upserts the vnodes' rows), and a read-only copy over the other vnodes for the largest
/// watermark any actor stored.
fn build_watermark_filter(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    node: &StreamNode,
    input: BoxedExecutor,
) -> Result<BoxedExecutor, BuildError> {
    let StreamNode::WatermarkFilter {
        event_time_col,
        watermark_expr,
        table,
        ..
    } = node
    else {
        unreachable!("a watermark filter node")
    };
    check_vnode_count(desc, table)?;
    let accessor = Some(Accessor {
        actor: desc.actor_id,
        job: desc.job_id,
    });
    let own = StateTable::with_options(
        table.clone(),
        &env.storage,
        desc.vnodes.clone(),
        StateTableOptions {
            op_consistency_level: OpConsistencyLevel::Inconsistent,
            is_replicated: false,
            accessor,
        },
    );
    let other_vnodes: Vec<bool> = (0..desc.vnodes.len())
        .map(|v| !desc.vnodes.is_set(v))
        .collect();
    let others = StateTable::with_options(
        table.clone(),
        &env.storage,
        Arc::new(epochlab_common::Bitmap::from_bools(&other_vnodes)),
        StateTableOptions {
            op_consistency_level: OpConsistencyLevel::Inconsistent,
            is_replicated: true,
            accessor,
        },
    );
    let eval = non_strict(env, desc.actor_id, ExprExecutor::WatermarkFilter);
    Ok(Box::new(WatermarkFilterExecutor::new(
        desc.actor_id,
        input,
        *event_time_col,
        watermark_expr.clone(),
        watermark_expr.return_type(),
        eval,
        own,
        others,
        (
            env.toggles.get::<WatermarkPersist>(),
            env.toggles.get::<WatermarkRecovery>(),
        ),
    )))
}

/// The `Now` source of a temporal filter: its barriers' epochs, its state table the last value.
fn build_now(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    state_table: &Arc<epochlab_common::catalog::TableDesc>,
    barrier_rx: &mut Option<mpsc::Receiver<Barrier>>,
) -> Result<BoxedExecutor, BuildError> {
    let rx = take_barrier_rx(barrier_rx, desc.actor_id)?;
    check_vnode_count(desc, state_table)?;
    let state = open_checked(env, desc, state_table);
    Ok(Box::new(NowExecutor::new(desc.actor_id, rx, state)))
}

/// A source's connector: its barriers, its splits' offsets in its state table.
fn build_source(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    node: &StreamNode,
    barrier_rx: &mut Option<mpsc::Receiver<Barrier>>,
) -> Result<BoxedExecutor, BuildError> {
    let StreamNode::Source {
        datagen,
        generated,
        column_types,
        state_table,
    } = node
    else {
        unreachable!("build_source builds a source")
    };
    let rx = take_barrier_rx(barrier_rx, desc.actor_id)?;
    check_vnode_count(desc, state_table)?;
    let args = SourceArgs {
        actor_id: desc.actor_id,
        barrier_rx: rx,
        state_table: open_checked(env, desc, state_table),
        datagen: datagen.clone(),
        generated: generated.clone(),
        column_types: column_types.clone(),
        clock: env.clock.clone(),
        eval: non_strict(env, desc.actor_id, ExprExecutor::Source),
    };
    Ok(Box::new(SourceExecutor::new(args)))
}

/// The stateless nodes of fragment graphs.
fn build_stateless(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    node: &StreamNode,
    generation: u64,
    barrier_rx: &mut Option<mpsc::Receiver<Barrier>>,
    barrier_manager: &LocalBarrierManager,
) -> Result<BoxedExecutor, BuildError> {
    let actor_id = desc.actor_id;
    let mut build =
        |n: &StreamNode| build_node(env, desc, n, generation, barrier_rx, barrier_manager);
    Ok(match node {
        StreamNode::Project { exprs, input } => {
            let eval = non_strict(env, actor_id, ExprExecutor::Project);
            Box::new(ProjectExecutor::new(build(input)?, exprs.clone(), eval))
        }
        StreamNode::Filter { predicate, input } => {
            let eval = non_strict(env, actor_id, ExprExecutor::Filter);
            Box::new(FilterExecutor::new(build(input)?, predicate.clone(), eval))
        }
        StreamNode::Union { inputs } => {
            let inputs = inputs.iter().map(build).collect::<Result<Vec<_>, _>>()?;
            Box::new(UnionExecutor::new(actor_id, inputs))
        }
        StreamNode::RowIdGen {
            row_id_index,
            input,
        } => {
            check_row_id_vnodes(desc)?;
            let (clock, vnodes) = (env.clock.clone(), desc.vnodes.clone());
            let (input, index) = (build(input)?, *row_id_index);
            Box::new(RowIdGenExecutor::new(actor_id, input, index, clock, vnodes))
        }
        StreamNode::HopWindow { input, .. } => {
            build_hop_window(env, actor_id, node, build(input)?)?
        }
        StreamNode::ProjectSet { select_list, input } => {
            let eval = non_strict(env, actor_id, ExprExecutor::ProjectSet);
            let (input, items) = (build(input)?, select_list.clone());
            Box::new(ProjectSetExecutor::new(input, items, eval))
        }
        StreamNode::Expand {
            column_subsets,
            input,
        } => {
            let input = build(input)?;
            Box::new(ExpandExecutor::new(actor_id, input, column_subsets.clone()))
        }
        StreamNode::Exchange { .. } => return Err(unsupported(actor_id, "Exchange")),
        StreamNode::Values { .. }
        | StreamNode::Dml { .. }
        | StreamNode::Merge { .. }
        | StreamNode::StreamScan { .. }
        | StreamNode::Materialize { .. }
        | StreamNode::FlowControl { .. }
        | StreamNode::HashAgg { .. }
        | StreamNode::SimpleAgg { .. }
        | StreamNode::HashJoin { .. }
        | StreamNode::TopN { .. }
        | StreamNode::GroupTopN { .. }
        | StreamNode::DynamicFilter { .. }
        | StreamNode::TemporalJoin { .. }
        | StreamNode::Now { .. }
        | StreamNode::Source { .. }
        | StreamNode::WatermarkFilter { .. }
        | StreamNode::EowcSort { .. }
        | StreamNode::OverWindow { .. }
        | StreamNode::Sink { .. } => unreachable!("built by build_node"),
    })
}

/// A row id generator's actor has at most the vnodes a row id can hold.
fn check_row_id_vnodes(desc: &StreamActorDesc) -> Result<(), BuildError> {
    if desc.vnodes.len() > epochlab_common::vnode::ROW_ID_VNODE_UPPER_BOUND {
        let node = "RowIdGen over more than 1024 vnodes";
        return Err(unsupported(desc.actor_id, node));
    }
    Ok(())
}

/// A node (or a setting of it) the engine does not build.
fn unsupported(actor: epochlab_common::ActorId, node: &'static str) -> BuildError {
    BuildError::Unsupported { actor, node }
}

/// A hop window over `input`; its expressions evaluated non-strictly.
fn build_hop_window(
    env: &BuildEnv,
    actor_id: epochlab_common::ActorId,
    node: &StreamNode,
    input: BoxedExecutor,
) -> Result<BoxedExecutor, BuildError> {
    let StreamNode::HopWindow {
        time_col,
        window_slide,
        window_size,
        output_indices,
        ..
    } = node
    else {
        unreachable!("a hop window node")
    };
    let eval = non_strict(env, actor_id, ExprExecutor::HopWindow);
    let (slide, size, out) = (*window_slide, *window_size, output_indices.clone());
    let exec =
        HopWindowExecutor::new(input, *time_col, slide, size, out, eval).map_err(|source| {
            BuildError::HopWindow {
                actor: actor_id,
                source,
            }
        })?;
    Ok(Box::new(exec))
}

/// Non-strict evaluation for one executor of an actor, its errors counted in the node's stats.
fn non_strict(
    env: &BuildEnv,
    actor_id: epochlab_common::ActorId,
    executor: ExprExecutor,
) -> NonStrict {
    NonStrict {
        actor_id,
        executor,
        counts: env.stats.expr_errors.clone(),
    }
}

/// The consistency level of a checked state table: RisingWave's debug builds check every write against
/// the table's contents (`--persist-check on`); release builds write blindly.
fn consistency_level(persist_check: bool) -> OpConsistencyLevel {
    if persist_check {
        OpConsistencyLevel::ConsistentOldValue
    } else {
        OpConsistencyLevel::Inconsistent
    }
}

/// A state table of the actor has as many vnodes as the actor's bitmap.
fn check_vnode_count(
    desc: &StreamActorDesc,
    table: &epochlab_common::catalog::TableDesc,
) -> Result<(), BuildError> {
    if table.vnode_count.get() != desc.vnodes.len() {
        return Err(BuildError::VnodeCountMismatch {
            actor: desc.actor_id,
            table: table.table_id,
            table_vnodes: table.vnode_count.get(),
            actor_vnodes: desc.vnodes.len(),
        });
    }
    Ok(())
}

/// The options of a state table the actor checks (read-before-write) as the materialize's.
/// `table` over the actor's vnodes, checked (read-before-write) as every stateful executor's tables are.
fn open_checked(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    table: &Arc<epochlab_common::catalog::TableDesc>,
) -> StateTable {
    let options = checked_options(env, desc);
    StateTable::with_options(table.clone(), &env.storage, desc.vnodes.clone(), options)
}

fn checked_options(env: &BuildEnv, desc: &StreamActorDesc) -> StateTableOptions {
    StateTableOptions {
        accessor: Some(Accessor {
            actor: desc.actor_id,
            job: desc.job_id,
        }),
        op_consistency_level: consistency_level(env.persist_check),
        ..Default::default()
    }
}

/// A dynamic filter over `left` and `right`: the left table over the actor's vnodes, the right table (one
/// row) over vnode 0, both checked.
fn build_dynamic_filter(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    node: &StreamNode,
    left: BoxedExecutor,
    right: BoxedExecutor,
) -> Result<BoxedExecutor, BuildError> {
    let StreamNode::DynamicFilter {
        key,
        comparator,
        left_table,
        right_table,
        ..
    } = node
    else {
        unreachable!("a dynamic filter node")
    };
    let actor_id = desc.actor_id;
    check_vnode_count(desc, left_table)?;
    check_vnode_count(desc, right_table)?;
    let comparator = Comparator::from_expr_type(*comparator).ok_or(BuildError::Unsupported {
        actor: actor_id,
        node: "DynamicFilter with a comparator other than <, <=, >, >=",
    })?;
    let options = checked_options(env, desc);
    let right_vnodes = DynamicFilterExecutor::right_vnodes(right_table.vnode_count.get());
    let args = DynamicFilterArgs {
        actor_id,
        left,
        right,
        key: *key,
        comparator,
        left_table: open_checked(env, desc, left_table),
        right_table: StateTable::with_options(
            right_table.clone(),
            &env.storage,
            right_vnodes,
            options,
        ),
        chunk_size: DYNAMIC_FILTER_CHUNK_SIZE,
        stats: env.stats.executors.handle(
            actor_id,
            left_table.table_id,
            crate::executor::stats::StatefulExecutorKind::DynamicFilter,
        ),
    };
    Ok(Box::new(DynamicFilterExecutor::new(args)))
}

/// Rows per chunk a dynamic filter emits at most when its right value moves (RisingWave's chunk size).
const DYNAMIC_FILTER_CHUNK_SIZE: usize = 256;

/// What an aggregation node (hash or simple: no group key) plans.
struct AggPlan<'a> {
    group_key: Vec<usize>,
    agg_calls: &'a [epochlab_common::expr_node::AggCall],
    result_table: &'a Arc<epochlab_common::catalog::TableDesc>,
    states: &'a [epochlab_common::plan::AggCallState],
    dedups: &'a [epochlab_common::plan::DistinctDedupTable],
    row_count_index: usize,
}

impl<'a> AggPlan<'a> {
    fn of(node: &'a StreamNode) -> Self {
        let (StreamNode::HashAgg {
            agg_calls,
            result_table,
            agg_call_states,
            distinct_dedup_tables,
            row_count_index,
            ..
        }
        | StreamNode::SimpleAgg {
            agg_calls,
            result_table,
            agg_call_states,
            distinct_dedup_tables,
            row_count_index,
            ..
        }) = node
        else {
            unreachable!("an aggregation node")
        };
        let group_key = match node {
            StreamNode::HashAgg { group_key, .. } => group_key.clone(),
            _ => Vec::new(),
        };
        AggPlan {
            group_key,
            agg_calls,
            result_table,
            states: agg_call_states,
            dedups: distinct_dedup_tables,
            row_count_index: *row_count_index,
        }
    }
}

/// A hash or simple aggregation over `input`, its state tables checked (read-before-write) as the
/// materialize's are.
fn build_agg(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    node: &StreamNode,
    input: BoxedExecutor,
) -> Result<BoxedExecutor, BuildError> {
    let actor_id = desc.actor_id;
    let AggPlan {
        group_key,
        agg_calls,
        result_table,
        states,
        dedups,
        row_count_index,
    } = AggPlan::of(node);
    for t in node.agg_tables() {
        check_vnode_count(desc, t)?;
    }
    let kind = stateful_kind(node).expect("an aggregation node");
    let open = |t: &Arc<epochlab_common::catalog::TableDesc>| open_checked(env, desc, t);
    let args = AggArgs {
        actor_id,
        input,
        group_key,
        agg_calls: agg_calls.to_vec(),
        row_count_index,
        result_table: open(result_table),
        call_states: AggArgs::open_states(states, open),
        dedup_tables: dedups
            .iter()
            .map(|d| DedupTable {
                column: d.column,
                table: open(&d.table),
            })
            .collect(),
        cache_capacity: crate::executor::aggregate::DEFAULT_GROUP_CACHE_CAPACITY,
        eval: non_strict(env, actor_id, ExprExecutor::Aggregate),
        stats: env
            .stats
            .executors
            .handle(actor_id, result_table.table_id, kind),
        dedup_write: env.toggles.get::<DedupWrite>(),
        debug_checks: env.persist_check,
        eowc: match node {
            StreamNode::HashAgg {
                emit_on_window_close,
                ..
            } => *emit_on_window_close,
            _ => None,
        },
    };
    let bad = |source| BuildError::BadPlan {
        actor: actor_id,
        source,
    };
    Ok(if matches!(node, StreamNode::HashAgg { .. }) {
        Box::new(HashAggExecutor::new(args).map_err(bad)?)
    } else {
        Box::new(SimpleAggExecutor::new(args).map_err(bad)?)
    })
}

/// A hash join over `left` and `right`, its rows and degree tables checked (read-before-write) as the
/// materialize's are.
fn build_hash_join(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    node: &StreamNode,
    left: BoxedExecutor,
    right: BoxedExecutor,
) -> Result<BoxedExecutor, BuildError> {
    let StreamNode::HashJoin {
        join_type,
        left_key,
        right_key,
        null_safe,
        condition,
        left_table,
        right_table,
        left_degree_table,
        right_degree_table,
        output_indices,
        ..
    } = node
    else {
        unreachable!("a hash join node")
    };
    let actor_id = desc.actor_id;
    for t in node.internal_tables() {
        check_vnode_count(desc, t)?;
    }
    let open = |t: &Arc<epochlab_common::catalog::TableDesc>| open_checked(env, desc, t);
    let args = HashJoinArgs {
        actor_id,
        join_type: *join_type,
        left,
        right,
        left_key: left_key.clone(),
        right_key: right_key.clone(),
        null_safe: null_safe.clone(),
        condition: condition.clone(),
        left_table: open(left_table),
        right_table: open(right_table),
        left_degree_table: left_degree_table.as_ref().map(&open),
        right_degree_table: right_degree_table.as_ref().map(&open),
        output_indices: output_indices.clone(),
        cache_capacity: crate::executor::hash_join::DEFAULT_JOIN_CACHE_CAPACITY,
        eval: non_strict(env, actor_id, ExprExecutor::HashJoin),
        stats: env.stats.executors.handle(
            actor_id,
            left_table.table_id,
            StatefulExecutorKind::HashJoin,
        ),
        row_delete: env.toggles.get::<JoinRowDelete>(),
    };
    let exec = HashJoinExecutor::new(args).map_err(|source| BuildError::BadPlan {
        actor: actor_id,
        source,
    })?;
    Ok(Box::new(exec))
}

/// A temporal join: its right table read through the node's storage over the actor's vnodes (the table's,
/// the fragment being placed like it), the read epoch as [`TemporalJoinReadEpoch`] says.
fn build_temporal_join(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    node: &StreamNode,
    left: BoxedExecutor,
    right: BoxedExecutor,
) -> Result<BoxedExecutor, BuildError> {
    let StreamNode::TemporalJoin {
        join_type,
        left_key,
        right_key,
        null_safe,
        condition,
        table,
        output_indices,
        ..
    } = node
    else {
        unreachable!("a temporal join node")
    };
    check_vnode_count(desc, table)?;
    let actor_id = desc.actor_id;
    let args = TemporalJoinArgs {
        actor_id,
        join_type: *join_type,
        left,
        right,
        table: StorageTable::new(table.clone(), &env.storage, desc.vnodes.clone()),
        left_key: left_key.clone(),
        right_key: right_key.clone(),
        null_safe: null_safe.clone(),
        condition: condition.clone(),
        output_indices: output_indices.clone(),
        eval: non_strict(env, actor_id, ExprExecutor::TemporalJoin),
        read_epoch: env.toggles.get::<TemporalJoinReadEpoch>(),
        chunk_size: crate::executor::values::VALUES_CHUNK_SIZE,
        cache_capacity: TEMPORAL_JOIN_CACHE_CAPACITY,
    };
    let exec = TemporalJoinExecutor::new(args).map_err(|source| BuildError::BadPlan {
        actor: actor_id,
        source,
    })?;
    Ok(Box::new(exec))
}

/// What a top-N node (plain, or grouped: a group key, always a limit) plans.
struct TopNPlan<'a> {
    group_key: Vec<usize>,
    order_by: &'a [(usize, epochlab_common::OrderType)],
    offset: u64,
    limit: Option<u64>,
    with_ties: bool,
    append_only: bool,
    table: &'a Arc<epochlab_common::catalog::TableDesc>,
}

impl<'a> TopNPlan<'a> {
    fn of(node: &'a StreamNode) -> Self {
        let (StreamNode::TopN {
            order_by,
            offset,
            with_ties,
            append_only,
            table,
            ..
        }
        | StreamNode::GroupTopN {
            order_by,
            offset,
            with_ties,
            append_only,
            table,
            ..
        }) = node
        else {
            unreachable!("a top-N node")
        };
        let (group_key, limit) = match node {
            StreamNode::GroupTopN {
                group_key, limit, ..
            } => (group_key.clone(), Some(*limit)),
            StreamNode::TopN { limit, .. } => (Vec::new(), *limit),
            _ => unreachable!("a top-N node"),
        };
        TopNPlan {
            group_key,
            order_by,
            offset: *offset,
            limit,
            with_ties: *with_ties,
            append_only: *append_only,
            table,
        }
    }
}

/// A top-N or group top-N over `input` (append-only when the plan says so), its state table checked
/// (read-before-write) as the materialize's is.
fn build_top_n(
    env: &BuildEnv,
    desc: &StreamActorDesc,
    node: &StreamNode,
    input: BoxedExecutor,
) -> Result<BoxedExecutor, BuildError> {
    let actor_id = desc.actor_id;
    let TopNPlan {
        group_key,
        order_by,
        offset,
        limit,
        with_ties,
        append_only,
        table,
    } = TopNPlan::of(node);
    check_vnode_count(desc, table)?;
    let kind = stateful_kind(node).expect("a top-N is stateful");
    let clamp = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let args = TopNArgs {
        actor_id,
        input,
        group_key,
        order_by: order_by.to_vec(),
        offset: clamp(offset),
        limit: limit.map_or(usize::MAX, clamp),
        with_ties,
        table: open_checked(env, desc, table),
        group_cache_capacity: crate::executor::top_n::DEFAULT_GROUP_CACHE_CAPACITY,
        stats: env.stats.executors.handle(actor_id, table.table_id, kind),
        row_delete: env.toggles.get::<TopNRowDelete>(),
    };
    let bad = |source| BuildError::BadPlan {
        actor: actor_id,
        source,
    };
    let grouped = matches!(node, StreamNode::GroupTopN { .. });
    Ok(match (grouped, append_only) {
        (false, false) => Box::new(TopNExecutor::new(args).map_err(bad)?),
        (false, true) => Box::new(AppendOnlyTopNExecutor::new(args).map_err(bad)?),
        (true, false) => Box::new(GroupTopNExecutor::new(args).map_err(bad)?),
        (true, true) => Box::new(AppendOnlyGroupTopNExecutor::new(args).map_err(bad)?),
    })
}
