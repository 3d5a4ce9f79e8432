//! A stateful view's streaming job, built as a fragment graph the way a planner would (the simulation does not
//! depend on the SQL front end): an aggregation (`plan::agg_node` behind a hash or simple exchange), a hash
//! join (`StreamNode::HashJoin` with `plan::join_side_tables`), a top-N (`StreamNode::TopN` with
//! `plan::top_n_table`) or an over window (`StreamNode::OverWindow`, its state table a `top_n_table`),
//! each over arrangement backfills of its upstream tables or views, and the view's own table. Column positions come from the plan; a query whose columns do not fit its upstreams is refused
//! here ([`ViewShapeError`]), so a hand-edited plan cannot panic a run.

use std::sync::Arc;

use epochlab_common::catalog::{Distribution, TableDesc};
use epochlab_common::expr_node::{
    ExprNode, ExprType, Frame, FrameBound, WindowFuncCall, WindowFuncKind,
};
use epochlab_common::plan::{
    ConflictBehavior, DispatchStrategy, FragmentDistribution, JoinType, StreamFragment,
    StreamFragmentEdge, StreamFragmentGraph, StreamNode, agg_node, join_side_tables,
    set_emit_on_window_close, top_n_table,
};
use epochlab_common::{AggCall, AggKind, DataType, OrderType, ScalarImpl, TableId, VnodeCount};
use epochlab_meta::{BACKFILL_CHUNK_SIZE, StreamScanType};

use super::plan::{GroupKey, ViewJoin, ViewQuery};

/// The view's table before meta gives it its id.
const VIEW_PLACEHOLDER: TableId = TableId(u32::MAX);

/// Why a view's query does not fit its upstreams.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ViewShapeError {
    #[error("column {col} of {relation} is not a BIGINT column")]
    NotBigint { relation: String, col: usize },
    #[error("{0} has no primary key: a view over it would have no stream key")]
    NoStreamKey(String),
    #[error("the query reads {want} upstreams, {got} given")]
    Upstreams { want: usize, got: usize },
    #[error(
        "{0} is no lookup table: its pk and its distribution key must start with its first column"
    )]
    NotLookupTable(String),
}

/// An upstream of a view: its name (for errors) and its table.
pub struct Upstream<'a> {
    pub name: &'a str,
    pub desc: &'a Arc<TableDesc>,
}

impl Upstream<'_> {
    fn bigint(&self, col: usize) -> Result<(), ViewShapeError> {
        match self.desc.column_types.get(col) {
            Some(DataType::Int64) => Ok(()),
            _ => Err(ViewShapeError::NotBigint {
                relation: self.name.to_string(),
                col,
            }),
        }
    }

    fn keyed(&self) -> Result<(), ViewShapeError> {
        if self.desc.pk_indices.is_empty() {
            return Err(ViewShapeError::NoStreamKey(self.name.to_string()));
        }
        Ok(())
    }
}

/// The job's graph and the view's table (its id a placeholder).
pub fn view_graph(
    query: &ViewQuery,
    ups: &[Upstream<'_>],
) -> Result<(StreamFragmentGraph, Arc<TableDesc>), ViewShapeError> {
    let want = query.upstreams().len();
    if ups.len() != want {
        return Err(ViewShapeError::Upstreams {
            want,
            got: ups.len(),
        });
    }
    for up in ups {
        up.keyed()?;
    }
    match query {
        ViewQuery::Agg {
            group, arg, eowc, ..
        } => agg_graph(&ups[0], *group, *arg, *eowc),
        ViewQuery::Join {
            join,
            left_col,
            right_col,
            ..
        } => join_graph(&ups[0], &ups[1], *join, *left_col, *right_col),
        ViewQuery::TemporalJoin { join, left_col, .. } => {
            temporal_join_graph(&ups[0], &ups[1], *join, *left_col)
        }
        ViewQuery::TopN {
            col,
            desc,
            limit,
            offset,
            ..
        } => top_n_graph(&ups[0], *col, *desc, *limit, *offset),
        ViewQuery::OverWindow {
            partition,
            order,
            arg,
            ..
        } => over_window_graph(&ups[0], *partition, *order, *arg),
    }
}

fn int_ref(i: usize) -> ExprNode {
    ExprNode::input_ref(i, DataType::Int64)
}

fn scan(desc: &Arc<TableDesc>) -> StreamNode {
    StreamNode::stream_scan(
        StreamScanType::ArrangementBackfill,
        desc.clone(),
        BACKFILL_CHUNK_SIZE,
    )
}

fn fragment(
    fragment_id: u32,
    node: StreamNode,
    distribution: FragmentDistribution,
) -> StreamFragment {
    StreamFragment {
        fragment_id,
        node,
        distribution,
        parallelism: None,
    }
}

fn edge(upstream: u32, downstream: u32, dispatch: DispatchStrategy) -> StreamFragmentEdge {
    StreamFragmentEdge {
        upstream,
        downstream,
        dispatch,
    }
}

fn hashed(dist_key: Vec<usize>) -> FragmentDistribution {
    FragmentDistribution::Hash { dist_key }
}

/// A view table: `types`, pk `pk` (ascending), hashed by the pk's first column, or a singleton.
fn view_table(types: Vec<DataType>, pk: Vec<usize>, vnode_count: VnodeCount) -> TableDesc {
    let distribution = if pk.is_empty() {
        Distribution::Singleton
    } else {
        Distribution::HashDistKey {
            dist_key_in_pk: vec![0],
        }
    };
    TableDesc {
        table_id: VIEW_PLACEHOLDER,
        value_indices: (0..types.len()).collect(),
        column_types: types,
        pk_orders: vec![OrderType::ascending(); pk.len()],
        pk_indices: pk,
        distribution,
        vnode_count,
    }
}

fn materialize(view: &Arc<TableDesc>, input: StreamNode) -> StreamNode {
    StreamNode::Materialize {
        table: view.clone(),
        conflict: ConflictBehavior::NoCheck,
        input: Box::new(input),
    }
}

fn call(kind: AggKind, arg: Option<usize>, ret: DataType) -> AggCall {
    AggCall {
        kind,
        args: arg.into_iter().collect(),
        arg_types: arg.map(|_| DataType::Int64).into_iter().collect(),
        ret,
        distinct: false,
        order_by: Vec::new(),
        filter: None,
    }
}

/// The aggregation's output types: the group key (if any), then `count(*)`, `sum(x)` (RisingWave's sum of
/// `BIGINT` is `NUMERIC`), `min(x)`, `max(x)`.
pub fn agg_output_types(grouped: bool) -> Vec<DataType> {
    let mut types = vec![DataType::Int64; usize::from(grouped)];
    types.extend([
        DataType::Int64,
        DataType::Decimal,
        DataType::Int64,
        DataType::Int64,
    ]);
    types
}

/// `g` of a group key: column `col`, or `col % modulus`.
fn group_expr(g: GroupKey) -> ExprNode {
    match g.modulus {
        None => int_ref(g.col),
        Some(m) => ExprNode::Call {
            func: ExprType::Modulus,
            args: vec![
                int_ref(g.col),
                ExprNode::literal(Some(ScalarImpl::Int64(m)), DataType::Int64),
            ],
            ret: DataType::Int64,
        },
    }
}

/// A scan fragment projecting `[g?, x, upstream pk...]`, a hash (or simple) exchange, the aggregation and the
/// view in one fragment.
fn agg_graph(
    up: &Upstream<'_>,
    group: Option<GroupKey>,
    arg: usize,
    eowc: bool,
) -> Result<(StreamFragmentGraph, Arc<TableDesc>), ViewShapeError> {
    up.bigint(arg)?;
    let desc = up.desc;
    let mut exprs = Vec::new();
    if let Some(g) = group {
        up.bigint(g.col)?;
        exprs.push(group_expr(g));
    }
    let g = exprs.len();
    exprs.push(int_ref(arg));
    for &p in &desc.pk_indices {
        exprs.push(ExprNode::input_ref(p, desc.column_types[p].clone()));
    }
    let input_types: Vec<DataType> = exprs.iter().map(ExprNode::return_type).collect();
    let stream_key: Vec<usize> = (g + 1..input_types.len()).collect();
    let group_key: Vec<usize> = (0..g).collect();
    let calls = [
        call(AggKind::Count, None, DataType::Int64),
        call(AggKind::Sum, Some(g), DataType::Decimal),
        call(AggKind::Min, Some(g), DataType::Int64),
        call(AggKind::Max, Some(g), DataType::Int64),
    ];
    let vnodes = desc.vnode_count;
    let exchange = StreamNode::Exchange { upstream: 1 };
    let mut agg = agg_node(
        exchange,
        &input_types,
        &stream_key,
        &group_key,
        &calls,
        false,
        vnodes,
    );
    if eowc {
        set_emit_on_window_close(&mut agg, Some(0));
    }
    let view = Arc::new(view_table(agg_output_types(g > 0), group_key, vnodes));
    let project = StreamNode::Project {
        exprs,
        input: Box::new(scan(desc)),
    };
    let (distribution, dispatch) = if g > 0 {
        (hashed(vec![0]), DispatchStrategy::Hash(vec![0]))
    } else {
        (FragmentDistribution::Single, DispatchStrategy::Simple)
    };
    let graph = StreamFragmentGraph {
        fragments: vec![
            fragment(1, project, hashed(desc.dist_key_indices())),
            fragment(2, materialize(&view, agg), distribution),
        ],
        edges: vec![edge(1, 2, dispatch)],
    };
    Ok((graph, view))
}

/// Both sides' scans, the join hashed by the join key, and the view behind a hash exchange on its first pk
/// column (the left's first pk column): output every left column then every right column, pk the left's pk,
/// the right's, then the left's join column ([`join_view_pk`]).
fn join_graph(
    left: &Upstream<'_>,
    right: &Upstream<'_>,
    join: ViewJoin,
    left_col: usize,
    right_col: usize,
) -> Result<(StreamFragmentGraph, Arc<TableDesc>), ViewShapeError> {
    left.bigint(left_col)?;
    right.bigint(right_col)?;
    let (l, r) = (left.desc, right.desc);
    let join_type = match join {
        ViewJoin::Inner => JoinType::Inner,
        ViewJoin::LeftOuter => JoinType::LeftOuter,
    };
    let vnodes = l.vnode_count;
    let (left_table, left_degree_table) = join_side_tables(
        &l.column_types,
        &[left_col],
        &l.pk_indices,
        join_type.left_needs_degree(),
        vnodes,
    );
    let (right_table, right_degree_table) = join_side_tables(
        &r.column_types,
        &[right_col],
        &r.pk_indices,
        join_type.right_needs_degree(),
        vnodes,
    );
    let lw = l.column_types.len();
    let mut types = l.column_types.clone();
    types.extend(r.column_types.iter().cloned());
    let pk = join_view_pk(&l.pk_indices, &r.pk_indices, left_col, lw);
    let view = Arc::new(view_table(types.clone(), pk, vnodes));
    let hash_join = StreamNode::HashJoin {
        join_type,
        left_key: vec![left_col],
        right_key: vec![right_col],
        null_safe: vec![false],
        condition: None,
        left_table,
        right_table,
        left_degree_table,
        right_degree_table,
        output_indices: (0..types.len()).collect(),
        left: Box::new(StreamNode::Exchange { upstream: 1 }),
        right: Box::new(StreamNode::Exchange { upstream: 2 }),
    };
    let view_key = view.dist_key_indices();
    let graph = StreamFragmentGraph {
        fragments: vec![
            fragment(1, scan(l), hashed(l.dist_key_indices())),
            fragment(2, scan(r), hashed(r.dist_key_indices())),
            fragment(3, hash_join, hashed(vec![left_col])),
            fragment(
                4,
                materialize(&view, StreamNode::Exchange { upstream: 3 }),
                hashed(view_key.clone()),
            ),
        ],
        edges: vec![
            edge(1, 3, DispatchStrategy::Hash(vec![left_col])),
            edge(2, 3, DispatchStrategy::Hash(vec![right_col])),
            edge(3, 4, DispatchStrategy::Hash(view_key)),
        ],
    };
    Ok((graph, view))
}

/// A join view's pk (RisingWave's join stream key): the left's pk, the right's, then the left's join key
/// column unless the left's pk has it. Without the join key, a left row whose join key changes while it
/// matches nothing has the same pk `(l, NULL)` before and after; the update's delete and insert are hashed
/// to different join actors (by the old and the new key) and may reach the view in either order: the
/// insert first fails as `row already exists`, the delete last removes the new row.
fn join_view_pk(left_pk: &[usize], right_pk: &[usize], left_col: usize, lw: usize) -> Vec<usize> {
    let mut pk = left_pk.to_vec();
    pk.extend(right_pk.iter().map(|p| p + lw));
    if !pk.contains(&left_col) {
        pk.push(left_col);
    }
    pk
}

/// The order of a top-N view's column (RisingWave's defaults: ASC NULLS LAST, DESC NULLS FIRST).
pub fn top_n_order(desc: bool) -> OrderType {
    if desc {
        OrderType::descending()
    } else {
        OrderType::ascending()
    }
}

/// The scan, then the top-N and the view in a singleton fragment: output the upstream's columns, pk the
/// upstream's pk.
fn top_n_graph(
    up: &Upstream<'_>,
    col: usize,
    desc_order: bool,
    limit: u64,
    offset: u64,
) -> Result<(StreamFragmentGraph, Arc<TableDesc>), ViewShapeError> {
    up.bigint(col)?;
    let desc = up.desc;
    let vnodes = desc.vnode_count;
    let order_by = vec![(col, top_n_order(desc_order))];
    let table = top_n_table(&desc.column_types, &[], &order_by, &desc.pk_indices, vnodes);
    let top_n = StreamNode::TopN {
        order_by,
        offset,
        limit: Some(limit),
        with_ties: false,
        append_only: false,
        table,
        input: Box::new(StreamNode::Exchange { upstream: 1 }),
    };
    let mut view = view_table(desc.column_types.clone(), desc.pk_indices.clone(), vnodes);
    view.distribution = Distribution::Singleton;
    let view = Arc::new(view);
    let graph = StreamFragmentGraph {
        fragments: vec![
            fragment(1, scan(desc), hashed(desc.dist_key_indices())),
            fragment(2, materialize(&view, top_n), FragmentDistribution::Single),
        ],
        edges: vec![edge(1, 2, DispatchStrategy::Simple)],
    };
    Ok((graph, view))
}

/// The over window's calls over its input `[g, upstream columns...]`: `row_number()`, the running
/// `sum(x)` (RisingWave's sum of `BIGINT` is `NUMERIC`) and `lag(x)`.
fn window_calls(x: usize) -> Vec<WindowFuncCall> {
    let call = |kind, args: Vec<usize>, ret, frame| WindowFuncCall {
        kind,
        arg_types: args.iter().map(|_| DataType::Int64).collect(),
        args,
        ret,
        frame,
        offset: 1,
    };
    let running = Frame::rows(FrameBound::UnboundedPreceding, FrameBound::CurrentRow);
    vec![
        call(WindowFuncKind::RowNumber, vec![], DataType::Int64, None),
        call(
            WindowFuncKind::Aggregate(AggKind::Sum),
            vec![x],
            DataType::Decimal,
            Some(running),
        ),
        call(WindowFuncKind::Lag, vec![x], DataType::Int64, None),
    ]
}

/// An over window view, as the planner builds one: the scan projecting `[g, upstream columns...]`, the
/// over window hashed by `g` (RisingWave's `OverWindowExecutor`, its state table keyed by `g`, the order
/// column, then the upstream's pk), and the view behind a hash exchange on its first pk column. Output:
/// `g`, the upstream's columns, then the calls' values; pk the upstream's pk then `g` (the over window's
/// stream key: a row moving to another partition leaves one over window actor and enters another).
fn over_window_graph(
    up: &Upstream<'_>,
    partition: GroupKey,
    order: usize,
    arg: usize,
) -> Result<(StreamFragmentGraph, Arc<TableDesc>), ViewShapeError> {
    for col in [partition.col, order, arg] {
        up.bigint(col)?;
    }
    let desc = up.desc;
    let width = desc.column_types.len();
    let mut exprs = vec![group_expr(partition)];
    exprs.extend((0..width).map(|i| ExprNode::input_ref(i, desc.column_types[i].clone())));
    let calls = window_calls(1 + arg);
    let mut types: Vec<DataType> = exprs.iter().map(ExprNode::return_type).collect();
    types.extend(calls.iter().map(|c| c.ret.clone()));
    let input_key: Vec<usize> = desc.pk_indices.iter().map(|p| p + 1).collect();
    let order_by = vec![(1 + order, OrderType::ascending())];
    let vnodes = desc.vnode_count;
    let state_table = top_n_table(&types, &[0], &order_by, &input_key, vnodes);
    let mut pk = input_key.clone();
    pk.push(0);
    let view = Arc::new(view_table(types, pk, vnodes));
    let over_window = StreamNode::OverWindow {
        calls,
        partition_by: vec![0],
        order_by,
        stream_key: input_key,
        state_table,
        emit_on_window_close: false,
        input: Box::new(StreamNode::Exchange { upstream: 1 }),
    };
    let project = StreamNode::Project {
        exprs,
        input: Box::new(scan(desc)),
    };
    let view_key = view.dist_key_indices();
    let graph = StreamFragmentGraph {
        fragments: vec![
            fragment(1, project, hashed(desc.dist_key_indices())),
            fragment(2, over_window, hashed(vec![0])),
            fragment(
                3,
                materialize(&view, StreamNode::Exchange { upstream: 2 }),
                hashed(view_key.clone()),
            ),
        ],
        edges: vec![
            edge(1, 2, DispatchStrategy::Hash(vec![0])),
            edge(2, 3, DispatchStrategy::Hash(view_key)),
        ],
    };
    Ok((graph, view))
}

/// A temporal join view (`SELECT * FROM left [LEFT] JOIN right FOR SYSTEM_TIME AS OF PROCTIME() ON
/// left.left_col = right.k`, RisingWave's `StreamTemporalJoin`): the left's scan hashed by its join column
/// to the join, whose fragment reads the right table's own changes (an upstream-only scan, so it takes the
/// table's actors) and looks the table up by its first pk column, which must be its distribution key; the
/// view behind a hash exchange on its first pk column. Output: every left column, then every right column;
/// pk as a join view's ([`join_view_pk`]).
pub fn temporal_join_graph(
    left: &Upstream<'_>,
    right: &Upstream<'_>,
    join: ViewJoin,
    left_col: usize,
) -> Result<(StreamFragmentGraph, Arc<TableDesc>), ViewShapeError> {
    left.bigint(left_col)?;
    right.bigint(0)?;
    let (l, r) = (left.desc, right.desc);
    if r.pk_indices.first() != Some(&0) || r.dist_key_indices() != [0] {
        return Err(ViewShapeError::NotLookupTable(right.name.to_string()));
    }
    let join_type = match join {
        ViewJoin::Inner => JoinType::Inner,
        ViewJoin::LeftOuter => JoinType::LeftOuter,
    };
    let lw = l.column_types.len();
    let mut types = l.column_types.clone();
    types.extend(r.column_types.iter().cloned());
    let pk = join_view_pk(&l.pk_indices, &r.pk_indices, left_col, lw);
    let view = Arc::new(view_table(types.clone(), pk, l.vnode_count));
    let lookups =
        StreamNode::stream_scan(StreamScanType::UpstreamOnly, r.clone(), BACKFILL_CHUNK_SIZE);
    let temporal_join = StreamNode::TemporalJoin {
        join_type,
        left_key: vec![left_col],
        right_key: vec![0],
        null_safe: vec![false],
        condition: None,
        table: r.clone(),
        output_indices: (0..types.len()).collect(),
        left: Box::new(StreamNode::Exchange { upstream: 1 }),
        right: Box::new(lookups),
    };
    let view_key = view.dist_key_indices();
    let graph = StreamFragmentGraph {
        fragments: vec![
            fragment(1, scan(l), hashed(l.dist_key_indices())),
            fragment(2, temporal_join, hashed(vec![left_col])),
            fragment(
                3,
                materialize(&view, StreamNode::Exchange { upstream: 2 }),
                hashed(view_key.clone()),
            ),
        ],
        edges: vec![
            edge(1, 2, DispatchStrategy::Hash(vec![left_col])),
            edge(2, 3, DispatchStrategy::Hash(view_key)),
        ],
    };
    Ok((graph, view))
}
