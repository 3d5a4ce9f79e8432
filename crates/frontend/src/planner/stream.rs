//! The stream side of a logical plan (RisingWave's `to_stream`): stream operators with RisingWave's
//! exchanges (hash on the join or group key, a singleton for global aggregation and top-N), each node's
//! distribution and stream key, and `Materialize` at the root keyed by the stream key (hidden columns added
//! where a projection would drop a key column). [`fragment_graph`] cuts the plan at its exchanges into
//! RisingWave's fragment graph; [`check_executors`] is the one place that says which operators have a stream
//! executor here.

mod dynamic_filter;
mod fragmenter;
mod watermark;

pub use fragmenter::fragment_graph;
pub use watermark::{enforce_eowc, watermark_columns};

use std::sync::Arc;

use epochlab_common::catalog::{Distribution, TableDesc};
use epochlab_common::plan::{ConflictBehavior, StreamScanType};
use epochlab_common::types::Interval;
use epochlab_common::{DataType, OrderType, OwnedRow, TableId, VnodeCount};

use crate::error::SqlError;
use crate::planner::{JoinType, LogicalPlan, SetOp};
use crate::scalar::sig::build_func;
use crate::scalar::{AggCall, ExprNode, ExprType, eval};
use epochlab_common::expr_node::WindowFuncKind;

/// How a stream node's rows are spread over its fragment's actors (RisingWave's `Distribution`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dist {
    Single,
    HashShard(Vec<usize>),
    /// A table scan: the upstream table's distribution.
    UpstreamHashShard(Vec<usize>),
    SomeShard,
    /// Every row on every actor (a dynamic filter's right input).
    Broadcast,
}

impl Dist {
    /// Whether rows are already hashed by exactly `keys`.
    fn hashed_by(&self, keys: &[usize]) -> bool {
        matches!(self, Dist::HashShard(k) | Dist::UpstreamHashShard(k) if k.as_slice() == keys)
    }
}

/// A stream operator (RisingWave's `Stream*` plan nodes).
#[derive(Clone, Debug)]
pub enum StreamOp {
    /// A backfill of `table` (its stored rows), of the kind the session chose when it was planned.
    TableScan {
        table: String,
        table_id: TableId,
        scan_type: StreamScanType,
    },
    Values {
        rows: Vec<OwnedRow>,
    },
    RowIdGen {
        row_id_index: usize,
    },
    Project {
        exprs: Vec<ExprNode>,
    },
    Filter {
        predicate: ExprNode,
    },
    /// `eowc`: emit on window close, the position in `group_key` of the window column.
    HashAgg {
        group_key: Vec<usize>,
        calls: Vec<AggCall>,
        eowc: Option<usize>,
    },
    SimpleAgg {
        calls: Vec<AggCall>,
    },
    /// A temporal join (RisingWave's `StreamTemporalJoin`): the right input is its lookup table's
    /// upstream-only scan; `right_keys` are the table's pk prefix the lookups read (stored positions),
    /// `condition` and `output_indices` over the left input's columns then the table's.
    TemporalJoin {
        kind: JoinType,
        left_keys: Vec<usize>,
        right_keys: Vec<usize>,
        null_safe: Vec<bool>,
        condition: Option<ExprNode>,
        output_indices: Vec<usize>,
    },
    /// An equi-join: `condition` (the `ON`'s conjuncts other than the key pairs) and `output_indices` are
    /// over the left input's columns (visible and hidden) then the right input's.
    HashJoin {
        kind: JoinType,
        left_keys: Vec<usize>,
        right_keys: Vec<usize>,
        null_safe: Vec<bool>,
        condition: Option<ExprNode>,
        output_indices: Vec<usize>,
    },
    Union,
    HopWindow {
        time_col: usize,
        slide: Interval,
        size: Interval,
        output_indices: Vec<usize>,
    },
    /// A top-N over the whole input (a singleton); `limit: None` is no limit.
    TopN {
        order: Vec<(usize, OrderType)>,
        limit: Option<u64>,
        offset: u64,
        with_ties: bool,
    },
    /// A top-N within each group of `group_key` (hashed by it).
    GroupTopN {
        group_key: Vec<usize>,
        order: Vec<(usize, OrderType)>,
        limit: u64,
        offset: u64,
        with_ties: bool,
    },
    /// `left[key] comparator right` with a one-row right input (RisingWave's `StreamDynamicFilter`).
    DynamicFilter {
        key: usize,
        comparator: ExprType,
    },
    /// The streaming job's `now()` (RisingWave's `StreamNow`).
    Now,
    ProjectSet {
        select_list: Vec<crate::planner::ProjectSetSelectItem>,
    },
    Expand {
        column_subsets: Vec<Vec<usize>>,
    },
    Exchange {
        dist: Dist,
    },
    /// Emit-on-window-close for a plan without an executor that waits for its windows (RisingWave's
    /// `StreamEowcSort`): rows wait until a watermark on `sort_column` passes them.
    EowcSort {
        sort_column: usize,
    },
    /// Window functions over partitions of the input, hashed by the partition key (RisingWave's
    /// `StreamOverWindow`): every call shares `partition_by` and `order_by`; the output is the input's
    /// columns, then one per call.
    OverWindow {
        calls: Vec<epochlab_common::expr_node::WindowFuncCall>,
        partition_by: Vec<usize>,
        order_by: Vec<(usize, OrderType)>,
        /// RisingWave's `StreamEowcOverWindow` (set by [`over_window_on_window_close`]).
        eowc: bool,
    },
    Materialize {
        pk: Vec<usize>,
        conflict: ConflictBehavior,
    },
    /// A sink's root (RisingWave's `StreamSink`): an upsert sink keyed by `pk` (the input's stream key),
    /// or an append-only one.
    Sink {
        pk: Vec<usize>,
        append_only: bool,
    },
}

/// A stream plan node: the first `width` columns are the logical plan's, the rest hidden (stream key
/// columns a projection would have dropped).
#[derive(Clone, Debug)]
pub struct StreamPlan {
    pub op: StreamOp,
    pub inputs: Vec<StreamPlan>,
    pub types: Vec<DataType>,
    pub names: Vec<String>,
    pub width: usize,
    pub dist: Dist,
    pub stream_key: Vec<usize>,
}

impl StreamPlan {
    /// Whether every leaf is a table scan that backfills (RisingWave's `plan_has_backfill_leaf_nodes` in
    /// `create_mv.rs` at f21fb9b7915): only such a job may be created in the background, as no other leaf
    /// recovers its progress (a rebuilt `Values` emits nothing and reports nothing).
    pub fn has_backfill_leaf_nodes(&self) -> bool {
        if self.inputs.is_empty() {
            matches!(
                self.op,
                StreamOp::TableScan {
                    scan_type: StreamScanType::ArrangementBackfill | StreamScanType::Backfill,
                    ..
                }
            )
        } else {
            self.inputs.iter().all(Self::has_backfill_leaf_nodes)
        }
    }
}

/// The upstream tables a stream plan reads, by id: their stored columns' names, types and pk; and how its
/// table scans backfill them (the session's choice, [`crate::session_config::SessionConfig::stream_scan_type`]).
pub trait UpstreamReader {
    fn upstream(&self, table_id: TableId) -> Result<Upstream, SqlError>;
    fn stream_scan_type(&self) -> StreamScanType;
    /// The indexes a scan of `table_id` may read instead (RisingWave's `LogicalScan::indexes`).
    fn indexes(&self, table_id: TableId) -> Vec<super::index::IndexScan>;
}

/// An upstream table as the stream planner needs it.
#[derive(Clone, Debug)]
pub struct Upstream {
    pub desc: Arc<TableDesc>,
    /// A name per stored column (`_row_id` for the hidden row id).
    pub names: Vec<String>,
    /// An `APPEND ONLY` table: its changes are inserts only.
    pub append_only: bool,
    /// The stored columns with a `WATERMARK FOR`.
    pub watermark_columns: Vec<usize>,
}

fn unsupported(what: &str) -> SqlError {
    SqlError::Unsupported(format!("streaming {what}"))
}

fn refs(types: &[DataType]) -> Vec<ExprNode> {
    types
        .iter()
        .enumerate()
        .map(|(index, ty)| ExprNode::InputRef {
            index,
            ty: ty.clone(),
        })
        .collect()
}

impl StreamPlan {
    fn unary(op: StreamOp, input: StreamPlan, dist: Dist, stream_key: Vec<usize>) -> StreamPlan {
        StreamPlan {
            types: input.types.clone(),
            names: input.names.clone(),
            width: input.width,
            op,
            inputs: vec![input],
            dist,
            stream_key,
        }
    }

    /// The plan with its rows hashed by `keys` (no exchange when they already are).
    fn exchange(self, dist: Dist) -> StreamPlan {
        let done = match &dist {
            Dist::HashShard(k) => self.dist.hashed_by(k),
            Dist::Single => self.dist == Dist::Single,
            _ => false,
        };
        if done {
            return self;
        }
        let key = self.stream_key.clone();
        StreamPlan::unary(StreamOp::Exchange { dist: dist.clone() }, self, dist, key)
    }

    /// A projection of `exprs` (the visible columns, `names`), keeping the stream key (hidden if need be).
    fn project(self, mut exprs: Vec<ExprNode>, mut names: Vec<String>) -> StreamPlan {
        let width = exprs.len();
        let mut key = Vec::new();
        for &k in &self.stream_key {
            let pos = exprs
                .iter()
                .position(|e| matches!(e, ExprNode::InputRef { index, .. } if *index == k));
            key.push(pos.unwrap_or_else(|| {
                exprs.push(ExprNode::InputRef {
                    index: k,
                    ty: self.types[k].clone(),
                });
                names.push(self.names[k].clone());
                exprs.len() - 1
            }));
        }
        let identity = exprs.len() == self.types.len()
            && exprs
                .iter()
                .enumerate()
                .all(|(i, e)| matches!(e, ExprNode::InputRef { index, .. } if *index == i));
        if identity {
            return StreamPlan {
                names,
                width,
                stream_key: key,
                ..self
            };
        }
        let dist = match &self.dist {
            Dist::HashShard(d) | Dist::UpstreamHashShard(d) => {
                let mapped: Option<Vec<usize>> = d
                    .iter()
                    .map(|c| {
                        exprs.iter().position(
                            |e| matches!(e, ExprNode::InputRef { index, .. } if index == c),
                        )
                    })
                    .collect();
                mapped.map_or(Dist::SomeShard, Dist::HashShard)
            }
            other => other.clone(),
        };
        StreamPlan {
            types: exprs.iter().map(ExprNode::return_type).collect(),
            names,
            width,
            op: StreamOp::Project { exprs },
            inputs: vec![self],
            dist,
            stream_key: key,
        }
    }
}

/// The stream plan of a materialized view's query, `Materialize` at the root.
pub fn plan_materialize(
    plan: &LogicalPlan,
    names: &[String],
    upstreams: &dyn UpstreamReader,
) -> Result<StreamPlan, SqlError> {
    plan_materialize_eowc(plan, names, upstreams, false)
}

/// A materialized view's stream plan, emitting on window close when `eowc` (`EMIT ON WINDOW CLOSE`).
pub fn plan_materialize_eowc(
    plan: &LogicalPlan,
    names: &[String],
    upstreams: &dyn UpstreamReader,
    eowc: bool,
) -> Result<StreamPlan, SqlError> {
    let mut body = plan_root_input(plan, names, upstreams)?;
    if eowc
        && !watermark::agg_on_window_close(&mut body, upstreams)?
        && !watermark::over_window_on_window_close(&mut body, upstreams)?
    {
        body = enforce_eowc(body, upstreams)?;
    }
    let (pk, dist) = (body.stream_key.clone(), body.dist.clone());
    Ok(StreamPlan::unary(
        StreamOp::Materialize {
            pk: pk.clone(),
            conflict: ConflictBehavior::NoCheck,
        },
        body,
        dist,
        pk,
    ))
}

/// A sink's stream plan (RisingWave's `gen_sink_plan`): the query's rows, hashed so that one stream key
/// always reaches one sink actor (an input hashed by some of its key columns already is), under a
/// `Sink` keyed by the stream key. `append_only` asks for an append-only sink (`type = 'append-only'`),
/// which an input with updates or deletes may have only when `forced` (`force_append_only`, whose sink
/// drops them); otherwise it is an upsert sink.
pub fn plan_sink(
    plan: &LogicalPlan,
    names: &[String],
    upstreams: &dyn UpstreamReader,
    append_only: bool,
    forced: bool,
) -> Result<StreamPlan, SqlError> {
    let body = plan_root_input(plan, names, upstreams)?;
    check_sink_type(append_only, forced, is_append_only(&body, upstreams)?)?;
    let (pk, dist) = (body.stream_key.clone(), body.dist.clone());
    Ok(StreamPlan::unary(
        StreamOp::Sink {
            pk: pk.clone(),
            append_only,
        },
        body,
        dist,
        pk,
    ))
}

/// Whether a sink of the type its options ask for may take its input (RisingWave's `derive_sink_type`):
/// an append-only sink over an input with updates or deletes only when forced.
pub fn check_sink_type(
    append_only: bool,
    forced: bool,
    input_append_only: bool,
) -> Result<(), SqlError> {
    if append_only && !forced && !input_append_only {
        return Err(SqlError::Invalid(
            "The sink cannot be append-only: its query has updates or deletes (force_append_only = 'true' \
             drops them)"
                .into(),
        ));
    }
    Ok(())
}

/// The input of a streaming job's root: the query's columns named `names` (hidden stream key columns
/// after them), hashed by a subset of the stream key or exchanged to be.
fn plan_root_input(
    plan: &LogicalPlan,
    names: &[String],
    upstreams: &dyn UpstreamReader,
) -> Result<StreamPlan, SqlError> {
    let body = to_stream(&super::optimize(plan), upstreams)?;
    let exprs = refs(&body.types[..body.width]);
    let body = body.project(exprs, names.to_vec());
    let pk = body.stream_key.clone();
    Ok(match &body.dist {
        Dist::Single => body,
        Dist::HashShard(d) | Dist::UpstreamHashShard(d) if d.iter().all(|c| pk.contains(c)) => body,
        _ => body.exchange(Dist::HashShard(pk)),
    })
}

fn to_stream(plan: &LogicalPlan, up: &dyn UpstreamReader) -> Result<StreamPlan, SqlError> {
    if let Some(p) = dynamic_filter::to_stream_dynamic(plan, up)? {
        return Ok(p);
    }
    match plan {
        // A table read as of proctime anywhere but on the right of a join (RisingWave's
        // `TemporalJoinValidator`).
        LogicalPlan::Scan {
            as_of_proctime: true,
            ..
        } => Err(SqlError::NotSupported(
            "exist dangling temporal scan".into(),
        )),
        LogicalPlan::Scan {
            table,
            table_id,
            exprs,
            filter,
            ..
        } => table_scan(table, *table_id, exprs, filter.as_ref(), up),
        LogicalPlan::Values { rows, types } => values(rows, types),
        LogicalPlan::Rows { .. } => Err(unsupported("system table")),
        LogicalPlan::TableFunction { .. } => Err(unsupported("table function")),
        LogicalPlan::ProjectSet { select_list, input } => {
            Ok(project_set(select_list, to_stream(input, up)?))
        }
        LogicalPlan::Expand {
            column_subsets,
            input,
        } => Ok(expand(column_subsets, to_stream(input, up)?)),
        LogicalPlan::HopWindow {
            time_col,
            slide,
            size,
            input,
        } => hop_window(*time_col, slide, size, to_stream(input, up)?),
        LogicalPlan::Project { exprs, input } => project_or_window_top_n(exprs, input, up),
        LogicalPlan::OverWindow { calls, input } => over_window(calls, to_stream(input, up)?),
        LogicalPlan::Filter { predicate, input } => Ok(filter(to_stream(input, up)?, predicate)),
        LogicalPlan::Agg {
            group_key,
            calls,
            input,
        } => agg(to_stream(input, up)?, group_key, calls),
        LogicalPlan::Join {
            kind,
            on,
            left,
            right,
        } => match lookup_table(right) {
            Some((scan, filters)) => {
                let left = to_stream(left, up)?;
                // The lookup table's filters join the condition (RisingWave's `predicate_pull_up` of the
                // scan).
                let lw = left.width;
                let pulled = filters
                    .into_iter()
                    .map(|f| super::pushdown::remap(&f, &|i| i + lw));
                let on = super::pushdown::and_all(on.iter().cloned().chain(pulled).collect());
                super::stream_join::temporal_join(*kind, on.as_ref(), left, scan, up)
            }
            None => super::stream_join::join(
                *kind,
                on.as_ref(),
                to_stream(left, up)?,
                to_stream(right, up)?,
            ),
        },
        LogicalPlan::Union { inputs } => union(to_stream_each(inputs, up)?),
        LogicalPlan::SetOp {
            op,
            all,
            left,
            right,
        } => set_op(op, *all, left, right, up),
        LogicalPlan::TopN {
            order,
            limit,
            offset,
            with_ties,
            input,
        } => Ok(order_by_limit(
            to_stream(input, up)?,
            order,
            (*limit, *offset),
            *with_ties,
        )),
        LogicalPlan::Dedup { keys, input } => dedup(keys, input, up),
    }
}

/// A join's right input read `FOR SYSTEM_TIME AS OF PROCTIME()` (RisingWave's `should_be_temporal_join`):
/// the scan, under the filters pushed down onto it (their conjuncts over its columns).
fn lookup_table(right: &LogicalPlan) -> Option<(&LogicalPlan, Vec<ExprNode>)> {
    match right {
        LogicalPlan::Scan {
            as_of_proctime: true,
            ..
        } => Some((right, Vec::new())),
        LogicalPlan::Filter { predicate, input } => {
            let (scan, mut filters) = lookup_table(input)?;
            filters.push(predicate.clone());
            Some((scan, filters))
        }
        _ => None,
    }
}

/// Each of `inputs` planned, in order.
fn to_stream_each(
    inputs: &[LogicalPlan],
    up: &dyn UpstreamReader,
) -> Result<Vec<StreamPlan>, SqlError> {
    inputs.iter().map(|i| to_stream(i, up)).collect()
}

/// A projection: an over window's top-N when it has that shape (`window_top_n`), else a `Project`.
fn project_or_window_top_n(
    exprs: &[ExprNode],
    input: &LogicalPlan,
    up: &dyn UpstreamReader,
) -> Result<StreamPlan, SqlError> {
    if let Some(top_n) = window_top_n(exprs, input, up)? {
        return Ok(top_n);
    }
    Ok(project_named(to_stream(input, up)?, exprs.to_vec()))
}

/// `UNION` (distinct) of two inputs; `UNION ALL` of two is planned as a `Union`, `EXCEPT` and
/// `INTERSECT` are unsupported.
fn set_op(
    op: &SetOp,
    all: bool,
    left: &LogicalPlan,
    right: &LogicalPlan,
    up: &dyn UpstreamReader,
) -> Result<StreamPlan, SqlError> {
    match (op, all) {
        (SetOp::Union, false) => distinct_union(to_stream(left, up)?, to_stream(right, up)?),
        (op, _) => Err(unsupported(match op {
            SetOp::Except => "except",
            SetOp::Intersect => "intersect",
            SetOp::Union => "union",
        })),
    }
}

/// A scan of the upstream table's columns (named `table.column`), its pushed-down filter, then `exprs`.
fn table_scan(
    table: &str,
    table_id: TableId,
    exprs: &[ExprNode],
    filter: Option<&ExprNode>,
    up: &dyn UpstreamReader,
) -> Result<StreamPlan, SqlError> {
    let mut scan = stored_scan(table, table_id, up.stream_scan_type(), up)?;
    if let Some(f) = filter {
        scan = self::filter(scan, f);
    }
    let names = exprs
        .iter()
        .map(|e| match e {
            ExprNode::InputRef { index, .. } => scan.names[*index].clone(),
            _ => format!("{table}.expr"),
        })
        .collect();
    Ok(scan.project(exprs.to_vec(), names))
}

/// A temporal join's lookup table as its right input (RisingWave's `StreamTableScan` with
/// `StreamScanType::UpstreamOnly`): every stored column, the table's changes only, in its distribution.
pub(super) fn lookup_table_scan(
    table: &str,
    table_id: TableId,
    up: &dyn UpstreamReader,
) -> Result<StreamPlan, SqlError> {
    stored_scan(table, table_id, StreamScanType::UpstreamOnly, up)
}

/// A scan of every stored column of `table`, read as `scan_type` says, in the table's distribution.
fn stored_scan(
    table: &str,
    table_id: TableId,
    scan_type: StreamScanType,
    up: &dyn UpstreamReader,
) -> Result<StreamPlan, SqlError> {
    let upstream = up.upstream(table_id)?;
    let desc = &upstream.desc;
    Ok(StreamPlan {
        op: StreamOp::TableScan {
            table: table.to_owned(),
            table_id,
            scan_type,
        },
        inputs: Vec::new(),
        types: desc.column_types.clone(),
        names: upstream
            .names
            .iter()
            .map(|n| format!("{table}.{n}"))
            .collect(),
        width: desc.column_types.len(),
        dist: Dist::UpstreamHashShard(desc.dist_key_indices()),
        stream_key: desc.pk_indices.clone(),
    })
}

/// A filter keeps its input's distribution and stream key.
fn filter(input: StreamPlan, predicate: &ExprNode) -> StreamPlan {
    let (dist, key) = (input.dist.clone(), input.stream_key.clone());
    let op = StreamOp::Filter {
        predicate: predicate.clone(),
    };
    StreamPlan::unary(op, input, dist, key)
}

/// `UNION` (distinct): the union all, grouped by every column.
fn distinct_union(left: StreamPlan, right: StreamPlan) -> Result<StreamPlan, SqlError> {
    let u = union(vec![left, right])?;
    let width = u.width;
    agg(u, &(0..width).collect::<Vec<_>>(), &[])
}

/// `ORDER BY .. LIMIT .. OFFSET ..`: a top-N; without a limit or offset the input as it is.
fn order_by_limit(
    input: StreamPlan,
    order: &[(usize, OrderType)],
    (limit, offset): (Option<u64>, u64),
    with_ties: bool,
) -> StreamPlan {
    if limit.is_none() && offset == 0 {
        // ORDER BY without LIMIT orders nothing in a materialized view.
        return input;
    }
    let spec = TopNSpec {
        group_key: Vec::new(),
        order: order.to_vec(),
        limit,
        offset,
        with_ties,
    };
    top_n(input, spec)
}

/// `DISTINCT ON (keys)` (over an `ORDER BY` without limit, which orders it): a group top-1 per key.
fn dedup(
    keys: &[usize],
    input: &LogicalPlan,
    up: &dyn UpstreamReader,
) -> Result<StreamPlan, SqlError> {
    let (order, input) = match input {
        LogicalPlan::TopN {
            order,
            limit: None,
            offset: 0,
            with_ties: false,
            input,
        } => (order.clone(), input.as_ref()),
        other => (Vec::new(), other),
    };
    let spec = TopNSpec {
        group_key: keys.to_vec(),
        order,
        limit: Some(1),
        offset: 0,
        with_ties: false,
    };
    Ok(top_n(to_stream(input, up)?, spec))
}

/// A projection of `exprs`, each named after the column it takes (`$expr` for the others).
fn project_named(input: StreamPlan, exprs: Vec<ExprNode>) -> StreamPlan {
    let names = exprs
        .iter()
        .map(|e| match e {
            ExprNode::InputRef { index, .. } => input.names[*index].clone(),
            _ => "$expr".into(),
        })
        .collect();
    input.project(exprs, names)
}

/// Whether `e` reads column `col`.
fn refers_to(e: &ExprNode, col: usize) -> bool {
    match e {
        ExprNode::InputRef { index, .. } => *index == col,
        ExprNode::Literal { .. } => false,
        ExprNode::Call { args, .. } => args.iter().any(|a| refers_to(a, col)),
    }
}

/// The conjunctions of a predicate.
fn conjunctions(e: &ExprNode, out: &mut Vec<ExprNode>) {
    match e {
        ExprNode::Call {
            func: ExprType::And,
            args,
            ..
        } => args.iter().for_each(|a| conjunctions(a, out)),
        other => out.push(other.clone()),
    }
}

/// RisingWave's `OverWindowToTopNRule`: `Project(Filter(OverWindow))` (the over window perhaps under a
/// projection) with one `row_number()` or `rank()` call, whose rank the outer projection does not output
/// and the filter bounds (`<=`, `<`, `>`, `>=`, `=` a constant), is a (group) top-N over the over
/// window's input: partitioned by the call's partition, in its order, WITH TIES for `rank()`; the
/// filter's other conjunctions stay above it. `None`: not this shape (the over window stays).
fn window_top_n(
    outer: &[ExprNode],
    input: &LogicalPlan,
    up: &dyn UpstreamReader,
) -> Result<Option<StreamPlan>, SqlError> {
    let LogicalPlan::Filter { predicate, input } = input else {
        return Ok(None);
    };
    let (inner, window) = match input.as_ref() {
        LogicalPlan::Project { exprs, input } => (Some(exprs.clone()), input.as_ref()),
        other => (None, other),
    };
    let LogicalPlan::OverWindow { calls, input } = window else {
        return Ok(None);
    };
    let [call] = calls.as_slice() else {
        return Ok(None);
    };
    let with_ties = match call.func.kind {
        WindowFuncKind::RowNumber => false,
        WindowFuncKind::Rank => true,
        _ => return Ok(None),
    };
    let rank = input.schema().len();
    let inner = inner.unwrap_or_else(|| window.input_refs());
    let rank_cols: Vec<usize> = (0..inner.len())
        .filter(|&p| matches!(inner[p], ExprNode::InputRef { index, .. } if index == rank))
        .collect();
    let other_use = (0..inner.len()).any(|p| !rank_cols.contains(&p) && refers_to(&inner[p], rank));
    let outputs_rank = outer
        .iter()
        .any(|e| rank_cols.iter().any(|&c| refers_to(e, c)));
    if rank_cols.is_empty() || other_use || outputs_rank {
        return Ok(None);
    }
    let mut conjs = Vec::new();
    conjunctions(predicate, &mut conjs);
    let (rank_preds, others): (Vec<ExprNode>, Vec<ExprNode>) = conjs
        .into_iter()
        .partition(|c| rank_cols.iter().any(|&r| refers_to(c, r)));
    let Some((limit, offset)) = rank_bounds(&rank_preds, &rank_cols) else {
        return Ok(None);
    };
    if (with_ties && offset > 0) || limit == Some(0) {
        return Ok(None);
    }
    let spec = TopNSpec {
        group_key: call.partition_by.clone(),
        order: call.order_by.clone(),
        limit,
        offset,
        with_ties,
    };
    let top = top_n(to_stream(input, up)?, spec);
    above_window_top_n(top, inner, rank, &others, outer).map(Some)
}

/// Above a window top-N `top`: the over window's projection `inner` (its `rank` column, read by nothing
/// above, a NULL), the filter's `others` conjunctions, and the `outer` projection.
fn above_window_top_n(
    top: StreamPlan,
    inner: Vec<ExprNode>,
    rank: usize,
    others: &[ExprNode],
    outer: &[ExprNode],
) -> Result<StreamPlan, SqlError> {
    // The rank column is read by nothing above: NULL in its place keeps the positions.
    let inner = inner
        .into_iter()
        .map(|e| match e {
            ExprNode::InputRef { index, ty } if index == rank => {
                ExprNode::Literal { value: None, ty }
            }
            e => e,
        })
        .collect();
    let mut plan = project_named(top, inner);
    if let Some(first) = others.first() {
        let mut predicate = first.clone();
        for c in &others[1..] {
            predicate = build_func(ExprType::And, vec![predicate, c.clone()])?;
        }
        let (dist, key) = (plan.dist.clone(), plan.stream_key.clone());
        plan = StreamPlan::unary(StreamOp::Filter { predicate }, plan, dist, key);
    }
    Ok(project_named(plan, outer.to_vec()))
}

/// RisingWave's `handle_rank_preds`: the `(limit, offset)` that comparisons of the rank with constants
/// keep (`limit: None` is no limit), or `None` when one is of another shape or they conflict.
fn rank_bounds(preds: &[ExprNode], rank_cols: &[usize]) -> Option<(Option<u64>, u64)> {
    let (mut lb, mut ub, mut eq): (Option<i64>, Option<i64>, Option<i64>) = (None, None, None);
    if preds.is_empty() {
        return None;
    }
    for p in preds {
        let ExprNode::Call { func, args, .. } = p else {
            return None;
        };
        let [a, b] = args.as_slice() else { return None };
        let is_rank = |e: &ExprNode| matches!(e, ExprNode::InputRef { index, .. } if rank_cols.contains(index));
        let constant = |e: &ExprNode| {
            eval(e, &OwnedRow::empty())
                .ok()
                .flatten()
                .and_then(|v| crate::scalar::int_value(&v))
        };
        let (func, v) = match (is_rank(a), is_rank(b)) {
            (true, false) => (*func, constant(b)?),
            (false, true) => (flip(*func)?, constant(a)?),
            _ => return None,
        };
        match func {
            ExprType::LessThanOrEqual => ub = Some(ub.map_or(v, |u| u.min(v))),
            ExprType::LessThan => ub = Some(ub.map_or(v - 1, |u| u.min(v - 1))),
            ExprType::GreaterThan => lb = Some(lb.map_or(v + 1, |l| l.max(v + 1))),
            ExprType::GreaterThanOrEqual => lb = Some(lb.map_or(v, |l| l.max(v))),
            ExprType::Equal if eq.is_none_or(|e| e == v) => eq = Some(v),
            _ => return None,
        }
    }
    let count = |n: i64| u64::try_from(n.max(0)).unwrap_or(0);
    if let Some(eq) = eq {
        let within = lb.is_none_or(|l| l <= eq) && ub.is_none_or(|u| eq <= u);
        return (eq >= 1 && within).then(|| (Some(1), count(eq - 1)));
    }
    Some(match (lb, ub) {
        (Some(l), Some(u)) => (Some(count(u - l + 1)), count(l - 1)),
        (Some(l), None) => (None, count(l - 1)),
        (None, Some(u)) => (Some(count(u)), 0),
        (None, None) => return None,
    })
}

/// The comparison with its operands swapped.
fn flip(func: ExprType) -> Option<ExprType> {
    Some(match func {
        ExprType::LessThan => ExprType::GreaterThan,
        ExprType::LessThanOrEqual => ExprType::GreaterThanOrEqual,
        ExprType::GreaterThan => ExprType::LessThan,
        ExprType::GreaterThanOrEqual => ExprType::LessThanOrEqual,
        ExprType::Equal => ExprType::Equal,
        _ => return None,
    })
}

/// What a top-N keeps (RisingWave's `generic::TopN`): per group of `group_key` (none: the whole input),
/// the rows ranked `[offset, offset + limit)` by `order`, with the ties of the last one when `with_ties`.
#[derive(Clone, Debug)]
pub struct TopNSpec {
    pub group_key: Vec<usize>,
    pub order: Vec<(usize, OrderType)>,
    pub limit: Option<u64>,
    pub offset: u64,
    pub with_ties: bool,
}

/// A top-N over `input` (RisingWave's `LogicalTopN::to_stream`, in one phase): without a group key a
/// singleton `StreamTopN`, else a `StreamGroupTopN` hashed by the group key. The stream key is the group
/// key, then the input's stream key unless a group keeps at most one row.
fn top_n(input: StreamPlan, spec: TopNSpec) -> StreamPlan {
    let max_one_row = spec.limit == Some(1) && !spec.with_ties;
    let mut key = spec.group_key.clone();
    if !max_one_row {
        key.extend(
            input
                .stream_key
                .iter()
                .filter(|k| !spec.group_key.contains(k)),
        );
    }
    if spec.group_key.is_empty() {
        let input = input.exchange(Dist::Single);
        let op = StreamOp::TopN {
            order: spec.order,
            limit: spec.limit,
            offset: spec.offset,
            with_ties: spec.with_ties,
        };
        return StreamPlan::unary(op, input, Dist::Single, key);
    }
    let dist = Dist::HashShard(spec.group_key.clone());
    let input = input.exchange(dist.clone());
    let op = StreamOp::GroupTopN {
        group_key: spec.group_key,
        order: spec.order,
        limit: spec.limit.unwrap_or(u64::MAX),
        offset: spec.offset,
        with_ties: spec.with_ties,
    };
    StreamPlan::unary(op, input, dist, key)
}

/// Window function calls over `input`: one over window per partition and order, chained, in the order of
/// their first calls, then the calls put back in their order (RisingWave's `OverWindowSplitRule`).
fn over_window(
    calls: &[crate::planner::WindowCall],
    input: StreamPlan,
) -> Result<StreamPlan, SqlError> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let same = |g: &&mut Vec<usize>| {
            let f = &calls[g[0]];
            f.partition_by == c.partition_by && f.order_by == c.order_by
        };
        match groups.iter_mut().find(same) {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    let w = input.width;
    let mut plan = input;
    for g in &groups {
        let group: Vec<crate::planner::WindowCall> = g.iter().map(|&i| calls[i].clone()).collect();
        plan = over_window_one(&group, plan)?;
    }
    if groups.len() == 1 {
        return Ok(plan);
    }
    let placed: Vec<usize> = groups.concat();
    let exprs: Vec<ExprNode> = (0..w)
        .chain((0..calls.len()).map(|i| w + placed.iter().position(|&p| p == i).expect("placed")))
        .map(|i| ExprNode::input_ref(i, plan.types[i].clone()))
        .collect();
    Ok(project_named(plan, exprs))
}

/// Window function calls over `input` (RisingWave's `LogicalOverWindow::to_stream`): hashed by their
/// partition key, which every call shares with its order; the input's visible columns, then the calls',
/// then the hidden ones; keyed by the input's stream key and the partition key. RisingWave's errors where it
/// refuses one.
fn over_window_one(
    calls: &[crate::planner::WindowCall],
    input: StreamPlan,
) -> Result<StreamPlan, SqlError> {
    let first = calls.first().expect("an over window has a call");
    if calls
        .iter()
        .any(|c| c.partition_by != first.partition_by || c.order_by != first.order_by)
    {
        return Err(SqlError::InvalidInputSyntax(
            "All window functions must have the same PARTITION BY and ORDER BY".into(),
        ));
    }
    if first.partition_by.is_empty() {
        return Err(SqlError::NotImplemented(
            "Window function with empty PARTITION BY is not supported yet".into(),
        ));
    }
    let partition_by = first.partition_by.clone();
    let dist = Dist::HashShard(partition_by.clone());
    let input = input.exchange(dist.clone());
    let (w, n) = (input.width, input.types.len());
    let mut key = input.stream_key.clone();
    key.extend(
        partition_by
            .iter()
            .filter(|p| !input.stream_key.contains(p)),
    );
    let mut types = input.types.clone();
    let mut names = input.names.clone();
    for c in calls {
        types.push(c.func.ret.clone());
        names.push(format!("{:?}", c.func.kind).to_lowercase());
    }
    let op = StreamOp::OverWindow {
        calls: calls.iter().map(|c| c.func.clone()).collect(),
        partition_by,
        order_by: first.order_by.clone(),
        eowc: false,
    };
    let window = StreamPlan {
        op,
        width: types.len(),
        types,
        names,
        dist,
        stream_key: key,
        inputs: vec![input],
    };
    let visible: Vec<ExprNode> = (0..w)
        .chain(n..n + calls.len())
        .map(|i| ExprNode::input_ref(i, window.types[i].clone()))
        .collect();
    Ok(project_named(window, visible))
}

/// `hop(...)`: the input's visible columns, `window_start`, `window_end`, then its hidden columns; keyed by
/// the input's key and the window.
fn hop_window(
    time_col: usize,
    slide: &ExprNode,
    size: &ExprNode,
    input: StreamPlan,
) -> Result<StreamPlan, SqlError> {
    let interval = |e: &ExprNode| match eval(e, &OwnedRow::empty()) {
        Ok(Some(epochlab_common::ScalarImpl::Interval(i))) => Ok(i),
        _ => Err(SqlError::Invalid("hop takes interval literals".into())),
    };
    let (slide, size) = (interval(slide)?, interval(size)?);
    let (w, n) = (input.width, input.types.len());
    let output_indices: Vec<usize> = (0..w).chain([n, n + 1]).chain(w..n).collect();
    let map = |k: usize| if k < w { k } else { k + 2 };
    let t = input.types[time_col].clone();
    let mut types = input.types[..w].to_vec();
    types.extend([t.clone(), t]);
    types.extend_from_slice(&input.types[w..]);
    let mut names = input.names[..w].to_vec();
    names.extend(["window_start".to_string(), "window_end".to_string()]);
    names.extend_from_slice(&input.names[w..]);
    let mut key: Vec<usize> = input.stream_key.iter().map(|&k| map(k)).collect();
    key.push(w);
    let dist = match &input.dist {
        Dist::HashShard(d) => Dist::HashShard(d.iter().map(|&k| map(k)).collect()),
        Dist::UpstreamHashShard(d) => Dist::UpstreamHashShard(d.iter().map(|&k| map(k)).collect()),
        other => other.clone(),
    };
    Ok(StreamPlan {
        op: StreamOp::HopWindow {
            time_col,
            slide,
            size,
            output_indices,
        },
        inputs: vec![input],
        types,
        names,
        width: w + 2,
        dist,
        stream_key: key,
    })
}

/// RisingWave's `StreamProjectSet`: the logical items, then the input's stream key columns the items do
/// not already give (hidden); keyed by those and the `projected_row_id` (column 0).
fn project_set(
    select_list: &[crate::planner::ProjectSetSelectItem],
    input: StreamPlan,
) -> StreamPlan {
    use crate::planner::ProjectSetSelectItem as Item;
    let mut items = select_list.to_vec();
    let mut names: Vec<String> = std::iter::once("projected_row_id".to_string())
        .chain(items.iter().map(|i| match i {
            Item::Expr(ExprNode::InputRef { index, .. }) => input.names[*index].clone(),
            Item::Expr(_) => "$expr".into(),
            Item::TableFunction { func, .. } => format!("{func:?}").to_lowercase(),
        }))
        .collect();
    let width = items.len() + 1;
    // The output position of input column `k` when an item is that column as it is.
    let position = |items: &[Item], k: usize| {
        items
            .iter()
            .position(|i| matches!(i, Item::Expr(ExprNode::InputRef { index, .. }) if *index == k))
            .map(|p| p + 1)
    };
    let mut key = vec![0];
    for &k in &input.stream_key {
        let p = position(&items, k).unwrap_or_else(|| {
            items.push(Item::Expr(ExprNode::InputRef {
                index: k,
                ty: input.types[k].clone(),
            }));
            names.push(input.names[k].clone());
            items.len()
        });
        key.push(p);
    }
    let dist = match &input.dist {
        Dist::HashShard(d) | Dist::UpstreamHashShard(d) => d
            .iter()
            .map(|&c| position(&items, c))
            .collect::<Option<Vec<_>>>()
            .map_or(Dist::SomeShard, Dist::HashShard),
        other => other.clone(),
    };
    let types = std::iter::once(DataType::Int64)
        .chain(items.iter().map(|i| i.return_type()))
        .collect();
    StreamPlan {
        op: StreamOp::ProjectSet { select_list: items },
        inputs: vec![input],
        types,
        names,
        width,
        dist,
        stream_key: key,
    }
}

/// RisingWave's `StreamExpand` over every input column (hidden ones too), then a projection to the
/// logical layout (the visible columns nulled per set, as they are, the flag), the input's stream key
/// and the flag kept as the key.
fn expand(column_subsets: &[Vec<usize>], input: StreamPlan) -> StreamPlan {
    let (w, n) = (input.width, input.types.len());
    let mut types = input.types.clone();
    types.extend(input.types.iter().cloned());
    types.push(DataType::Int64);
    let mut names: Vec<String> = input.names.clone();
    names.extend(input.names.iter().map(|n| format!("{n}_expanded")));
    names.push("flag".into());
    let mut key: Vec<usize> = input.stream_key.iter().map(|&k| n + k).collect();
    key.push(2 * n);
    let dist = match &input.dist {
        Dist::HashShard(d) | Dist::UpstreamHashShard(d) => {
            Dist::HashShard(d.iter().map(|&k| n + k).collect())
        }
        other => other.clone(),
    };
    let expanded = StreamPlan {
        op: StreamOp::Expand {
            column_subsets: column_subsets.to_vec(),
        },
        inputs: vec![input],
        width: types.len(),
        types,
        names,
        dist,
        stream_key: key,
    };
    if w == n {
        return expanded;
    }
    let visible: Vec<usize> = (0..w).chain(n..n + w).chain([2 * n]).collect();
    let exprs = visible
        .iter()
        .map(|&i| ExprNode::InputRef {
            index: i,
            ty: expanded.types[i].clone(),
        })
        .collect();
    let names = visible.iter().map(|&i| expanded.names[i].clone()).collect();
    expanded.project(exprs, names)
}

/// Constant rows with a hidden row id (RisingWave's `StreamValues` under a `StreamRowIdGen`).
fn values(rows: &[Vec<ExprNode>], types: &[DataType]) -> Result<StreamPlan, SqlError> {
    let empty = OwnedRow::empty();
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let mut row = r
            .iter()
            .map(|e| eval(e, &empty))
            .collect::<Result<Vec<_>, _>>()?;
        row.push(None);
        out.push(OwnedRow::new(row));
    }
    let mut all = types.to_vec();
    all.push(DataType::Int64);
    let row_id = types.len();
    let mut names: Vec<String> = (1..=types.len())
        .map(|i| format!("*VALUES*.column_{i}"))
        .collect();
    names.push("_row_id".into());
    let v = StreamPlan {
        op: StreamOp::Values { rows: out },
        inputs: Vec::new(),
        types: all,
        names,
        width: types.len(),
        dist: Dist::Single,
        stream_key: vec![row_id],
    };
    Ok(StreamPlan::unary(
        StreamOp::RowIdGen {
            row_id_index: row_id,
        },
        v,
        Dist::Single,
        vec![row_id],
    ))
}

fn agg(input: StreamPlan, group_key: &[usize], calls: &[AggCall]) -> Result<StreamPlan, SqlError> {
    let mut types: Vec<DataType> = group_key.iter().map(|&k| input.types[k].clone()).collect();
    let mut names: Vec<String> = group_key.iter().map(|&k| input.names[k].clone()).collect();
    for c in calls {
        types.push(c.ret.clone());
        names.push(format!("{:?}", c.kind).to_lowercase());
    }
    let width = types.len();
    let (op, input, dist, key) = if group_key.is_empty() {
        let op = StreamOp::SimpleAgg {
            calls: calls.to_vec(),
        };
        (op, input.exchange(Dist::Single), Dist::Single, Vec::new())
    } else {
        let input = input.exchange(Dist::HashShard(group_key.to_vec()));
        let op = StreamOp::HashAgg {
            group_key: group_key.to_vec(),
            calls: calls.to_vec(),
            eowc: None,
        };
        let key: Vec<usize> = (0..group_key.len()).collect();
        (op, input, Dist::HashShard(key.clone()), key)
    };
    Ok(StreamPlan {
        op,
        inputs: vec![input],
        types,
        names,
        width,
        dist,
        stream_key: key,
    })
}

/// `UNION ALL`: each input projected to the visible columns, every input's key columns (NULL where not
/// its own) and its position, all hashed by those columns alike.
fn union(inputs: Vec<StreamPlan>) -> Result<StreamPlan, SqlError> {
    let width = inputs.first().map_or(0, |i| i.width);
    let key_types: Vec<Vec<DataType>> = inputs
        .iter()
        .map(|i| i.stream_key.iter().map(|&k| i.types[k].clone()).collect())
        .collect();
    let n_keys: usize = key_types.iter().map(Vec::len).sum();
    let key: Vec<usize> = (width..width + n_keys + 1).collect();
    let mut projected = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.into_iter().enumerate() {
        let mut exprs = refs(&input.types[..width]);
        let mut names = input.names[..width].to_vec();
        for (j, tys) in key_types.iter().enumerate() {
            for (n, ty) in tys.iter().enumerate() {
                exprs.push(if i == j {
                    ExprNode::InputRef {
                        index: input.stream_key[n],
                        ty: ty.clone(),
                    }
                } else {
                    ExprNode::Literal {
                        value: None,
                        ty: ty.clone(),
                    }
                });
                names.push(format!("$key{j}_{n}"));
            }
        }
        exprs.push(ExprNode::Literal {
            value: Some(epochlab_common::ScalarImpl::Int32(i as i32)),
            ty: DataType::Int32,
        });
        names.push("$src".into());
        let mut p = input.project(exprs, names);
        // The projection's own key bookkeeping is replaced by the union's key layout.
        p.types.truncate(width + n_keys + 1);
        p.names.truncate(width + n_keys + 1);
        if let StreamOp::Project { exprs } = &mut p.op {
            exprs.truncate(width + n_keys + 1);
        }
        p.width = width;
        p.stream_key = key.clone();
        projected.push(p.exchange(Dist::HashShard(key.clone())));
    }
    let first = projected
        .first()
        .ok_or_else(|| unsupported("empty union"))?;
    Ok(StreamPlan {
        op: StreamOp::Union,
        types: first.types.clone(),
        names: first.names.clone(),
        width,
        dist: Dist::HashShard(key.clone()),
        stream_key: key,
        inputs: projected,
    })
}

/// The name of the first operator in `plan` without a stream executor here (one place decides): every
/// operator the stream planner makes has one now.
pub fn check_executors(plan: &StreamPlan) -> Result<(), SqlError> {
    plan.inputs.iter().try_for_each(check_executors)
}

/// The materialized view's table (or a sink's columns): its columns, its pk, hashed as its root
/// fragment is.
pub fn materialize_table(plan: &StreamPlan, vnode_count: VnodeCount) -> Arc<TableDesc> {
    let (StreamOp::Materialize { pk, .. } | StreamOp::Sink { pk, .. }) = &plan.op else {
        unreachable!("the root of a streaming job's plan is its Materialize or Sink")
    };
    let n = plan.types.len();
    let distribution = match &plan.dist {
        Dist::HashShard(d) | Dist::UpstreamHashShard(d) => Distribution::HashDistKey {
            dist_key_in_pk: d
                .iter()
                .filter_map(|c| pk.iter().position(|p| p == c))
                .collect(),
        },
        _ => Distribution::Singleton,
    };
    Arc::new(TableDesc {
        table_id: TableId(u32::MAX),
        column_types: plan.types.clone(),
        pk_indices: pk.clone(),
        pk_orders: vec![OrderType::ascending(); pk.len()],
        value_indices: (0..n).collect(),
        distribution,
        vnode_count,
    })
}

/// Whether a stream plan's changes are inserts only (RisingWave's `append_only` property): an append-only
/// table's scan, values, and what passes their rows through row by row.
pub fn is_append_only(plan: &StreamPlan, up: &dyn UpstreamReader) -> Result<bool, SqlError> {
    Ok(match &plan.op {
        StreamOp::TableScan { table_id, .. } => up.upstream(*table_id)?.append_only,
        // The table's changes only update lookups: the output changes as the left input does.
        StreamOp::TemporalJoin { .. } => is_append_only(&plan.inputs[0], up)?,
        StreamOp::Values { .. }
        | StreamOp::EowcSort { .. }
        | StreamOp::OverWindow { eowc: true, .. }
        | StreamOp::HashAgg { eowc: Some(_), .. } => true,
        StreamOp::RowIdGen { .. }
        | StreamOp::Project { .. }
        | StreamOp::Filter { .. }
        | StreamOp::HopWindow { .. }
        | StreamOp::Union
        | StreamOp::Exchange { .. }
        | StreamOp::Materialize { .. }
        | StreamOp::HashJoin {
            kind: JoinType::Inner,
            ..
        } => {
            for i in &plan.inputs {
                if !is_append_only(i, up)? {
                    return Ok(false);
                }
            }
            true
        }
        _ => false,
    })
}

/// A plan that is a scan of one table under projections and filters, as expressions over the table's
/// stored rows (the engine's original materialized views: the upstream's rows, read through these).
#[derive(Clone, Debug)]
pub struct SingleTable {
    pub table_id: TableId,
    pub exprs: Vec<ExprNode>,
    pub filter: Option<ExprNode>,
}

/// The operator a streaming job would need for `plan`'s root.
pub fn operator_name(plan: &LogicalPlan) -> &'static str {
    match plan {
        LogicalPlan::Scan { .. } => "table scan",
        LogicalPlan::Values { .. } | LogicalPlan::Rows { .. } => "values",
        LogicalPlan::Project { .. } => "project",
        LogicalPlan::Filter { .. } => "filter",
        LogicalPlan::Agg { .. } => "agg",
        LogicalPlan::Join { .. } => "join",
        LogicalPlan::Union { .. } => "union",
        LogicalPlan::SetOp { .. } => "set operation",
        LogicalPlan::TopN { .. } => "top-N",
        LogicalPlan::Dedup { .. } => "dedup",
        LogicalPlan::OverWindow { .. } => "over window",
        LogicalPlan::TableFunction { .. } => "table function",
        LogicalPlan::HopWindow { .. } => "hop window",
        LogicalPlan::ProjectSet { .. } => "project set",
        LogicalPlan::Expand { .. } => "expand",
    }
}

/// `plan` as one table's rows under projections and filters; any other operator is unsupported, and so is a
/// filter that reads `now()`: a temporal filter is RisingWave's dynamic filter over `Now`, with its state.
pub fn single_table(plan: &LogicalPlan) -> Result<SingleTable, SqlError> {
    match plan {
        LogicalPlan::Scan {
            filter: Some(f), ..
        }
        | LogicalPlan::Filter { predicate: f, .. }
            if reads_now(f) =>
        {
            Err(unsupported("temporal filter"))
        }
        LogicalPlan::Scan {
            as_of_proctime: true,
            ..
        } => Err(unsupported("table read as of proctime")),
        LogicalPlan::Scan {
            table_id,
            exprs,
            filter,
            ..
        } => Ok(SingleTable {
            table_id: *table_id,
            exprs: exprs.clone(),
            filter: filter.clone(),
        }),
        LogicalPlan::Project { exprs, input } => {
            let inner = single_table(input)?;
            let exprs = exprs.iter().map(|e| substitute(e, &inner.exprs)).collect();
            Ok(SingleTable { exprs, ..inner })
        }
        LogicalPlan::Filter { predicate, input } => {
            let inner = single_table(input)?;
            let p = substitute(predicate, &inner.exprs);
            let filter = match inner.filter {
                None => p,
                Some(f) => build_func(ExprType::And, vec![f, p])?,
            };
            Ok(SingleTable {
                filter: Some(filter),
                ..inner
            })
        }
        other => Err(unsupported(operator_name(other))),
    }
}

/// Whether `e` calls `now()`.
fn reads_now(e: &ExprNode) -> bool {
    match e {
        ExprNode::Call { func, args, .. } => *func == ExprType::Now || args.iter().any(reads_now),
        _ => false,
    }
}

/// `e` with each input reference replaced by the expression it refers to.
fn substitute(e: &ExprNode, inputs: &[ExprNode]) -> ExprNode {
    match e {
        ExprNode::InputRef { index, .. } => inputs[*index].clone(),
        ExprNode::Literal { .. } => e.clone(),
        ExprNode::Call { func, args, ret } => ExprNode::Call {
            func: *func,
            args: args.iter().map(|a| substitute(a, inputs)).collect(),
            ret: ret.clone(),
        },
    }
}
