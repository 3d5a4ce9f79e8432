//! RisingWave's stream fragmenter: a stream plan cut at its exchanges into the fragment graph meta deploys,
//! each fragment's distribution, its `StreamNode` tree (with the state tables its executors own) and the
//! dispatch strategy of each edge.

use std::sync::Arc;

use epochlab_common::OrderType;
use epochlab_common::catalog::TableDesc;
use epochlab_common::plan::{
    DispatchStrategy, FragmentDistribution, SinkDesc, SinkKind, StreamFragment, StreamFragmentEdge,
    StreamFragmentGraph, StreamNode,
};

use super::{Dist, StreamOp, StreamPlan, UpstreamReader, is_append_only};
use crate::error::SqlError;
use crate::scalar::{AggCall, ExprType};

/// Cut `plan` at its exchanges into a fragment graph (fragment 0 is the root's).
pub fn fragment_graph(
    plan: &StreamPlan,
    table: &Arc<TableDesc>,
    upstreams: &dyn UpstreamReader,
    chunk_size: usize,
) -> Result<StreamFragmentGraph, SqlError> {
    let mut graph = StreamFragmentGraph::default();
    build_fragment(plan, table, upstreams, chunk_size, &mut graph)?;
    Ok(graph)
}

fn fragment_distribution(dist: &Dist) -> FragmentDistribution {
    match dist {
        Dist::Single => FragmentDistribution::Single,
        Dist::HashShard(k) | Dist::UpstreamHashShard(k) => FragmentDistribution::Hash {
            dist_key: k.clone(),
        },
        Dist::SomeShard => FragmentDistribution::Hash {
            dist_key: Vec::new(),
        },
        // Only an exchange broadcasts: no fragment's root has this distribution.
        Dist::Broadcast => FragmentDistribution::Single,
    }
}

fn build_fragment(
    plan: &StreamPlan,
    table: &Arc<TableDesc>,
    up: &dyn UpstreamReader,
    chunk_size: usize,
    graph: &mut StreamFragmentGraph,
) -> Result<u32, SqlError> {
    let id = graph.fragments.len() as u32;
    graph.fragments.push(StreamFragment {
        fragment_id: id,
        node: StreamNode::Union { inputs: Vec::new() },
        distribution: fragment_distribution(&plan.dist),
        parallelism: None,
    });
    let node = stream_node(plan, id, table, up, chunk_size, graph)?;
    graph.fragments[id as usize].node = node;
    Ok(id)
}

fn stream_node(
    plan: &StreamPlan,
    fragment: u32,
    table: &Arc<TableDesc>,
    up: &dyn UpstreamReader,
    chunk_size: usize,
    graph: &mut StreamFragmentGraph,
) -> Result<StreamNode, SqlError> {
    let child = |i: usize, graph: &mut StreamFragmentGraph| -> Result<Box<StreamNode>, SqlError> {
        stream_node(&plan.inputs[i], fragment, table, up, chunk_size, graph).map(Box::new)
    };
    Ok(match &plan.op {
        StreamOp::TableScan {
            table_id,
            scan_type,
            ..
        } => {
            let desc = up.upstream(*table_id)?.desc;
            StreamNode::stream_scan(*scan_type, desc, chunk_size)
        }
        StreamOp::Values { rows } => StreamNode::Values {
            rows: rows.clone(),
            types: plan.types.clone(),
        },
        op @ (StreamOp::RowIdGen { .. }
        | StreamOp::Project { .. }
        | StreamOp::Filter { .. }
        | StreamOp::HopWindow { .. }
        | StreamOp::ProjectSet { .. }
        | StreamOp::Expand { .. }) => stateless_node(op, child(0, graph)?),
        StreamOp::EowcSort { sort_column } => {
            let i = &plan.inputs[0];
            let dist_key = match &i.dist {
                Dist::HashShard(k) | Dist::UpstreamHashShard(k) => Some(k.as_slice()),
                _ => None,
            };
            let buffer_table = epochlab_common::plan::eowc_sort_buffer_table(
                &i.types,
                *sort_column,
                &i.stream_key,
                dist_key,
                table.vnode_count,
            );
            StreamNode::EowcSort {
                sort_column_index: *sort_column,
                buffer_table,
                input: child(0, graph)?,
            }
        }
        StreamOp::Union => StreamNode::Union {
            inputs: (0..plan.inputs.len())
                .map(|i| child(i, graph).map(|b| *b))
                .collect::<Result<_, _>>()?,
        },
        StreamOp::Materialize { conflict, .. } => StreamNode::Materialize {
            table: table.clone(),
            conflict: *conflict,
            input: child(0, graph)?,
        },
        StreamOp::Sink { pk, .. } => StreamNode::Sink {
            sink: SinkDesc {
                sink_id: table.table_id,
                kind: SinkKind::Blackhole,
                pk_indices: pk.clone(),
                chunk_delay: std::time::Duration::ZERO,
            },
            input: child(0, graph)?,
        },
        StreamOp::Exchange { dist } => {
            let upstream = build_fragment(&plan.inputs[0], table, up, chunk_size, graph)?;
            graph.edges.push(StreamFragmentEdge {
                upstream,
                downstream: fragment,
                dispatch: dispatch_strategy(dist),
            });
            StreamNode::Exchange { upstream }
        }
        StreamOp::HashAgg {
            group_key,
            calls,
            eowc,
        } => {
            let mut node = agg_stream_node(plan, group_key, calls, *child(0, graph)?, table);
            epochlab_common::plan::set_emit_on_window_close(&mut node, *eowc);
            node
        }
        StreamOp::SimpleAgg { calls } => {
            agg_stream_node(plan, &[], calls, *child(0, graph)?, table)
        }
        StreamOp::HashJoin { .. } => {
            let (left, right) = (*child(0, graph)?, *child(1, graph)?);
            crate::planner::stream_join::join_node(plan, left, right, table.vnode_count)
        }
        StreamOp::TemporalJoin {
            kind,
            left_keys,
            right_keys,
            null_safe,
            condition,
            output_indices,
        } => {
            let StreamOp::TableScan { table_id, .. } = &plan.inputs[1].op else {
                unreachable!("a temporal join's right input is its lookup table's scan")
            };
            StreamNode::TemporalJoin {
                join_type: crate::planner::stream_join::stream_join_type(*kind),
                left_key: left_keys.clone(),
                right_key: right_keys.clone(),
                null_safe: null_safe.clone(),
                condition: condition.clone(),
                table: up.upstream(*table_id)?.desc,
                output_indices: output_indices.clone(),
                left: child(0, graph)?,
                right: child(1, graph)?,
            }
        }
        StreamOp::TopN { .. } | StreamOp::GroupTopN { .. } => {
            top_n_node(plan, *child(0, graph)?, table, up)?
        }
        StreamOp::DynamicFilter { key, comparator } => {
            let (left, right) = (child(0, graph)?, child(1, graph)?);
            dynamic_filter_node(plan, *key, *comparator, left, right, table)
        }
        StreamOp::OverWindow {
            calls,
            partition_by,
            order_by,
            eowc,
        } => StreamNode::OverWindow {
            calls: calls.clone(),
            partition_by: partition_by.clone(),
            order_by: order_by.clone(),
            stream_key: plan.inputs[0].stream_key.clone(),
            emit_on_window_close: *eowc,
            // The EOWC one stores input rows only; the general one each row with its values.
            state_table: epochlab_common::plan::top_n_table(
                if *eowc {
                    &plan.inputs[0].types
                } else {
                    &plan.types
                },
                partition_by,
                order_by,
                &plan.inputs[0].stream_key,
                table.vnode_count,
            ),
            input: child(0, graph)?,
        },
        StreamOp::Now => StreamNode::Now {
            state_table: epochlab_common::plan::singleton_row_table(&plan.types, table.vnode_count),
        },
    })
}

/// A stateless operator of one input: its node around `input`.
fn stateless_node(op: &StreamOp, input: Box<StreamNode>) -> StreamNode {
    match op {
        StreamOp::RowIdGen { row_id_index } => StreamNode::RowIdGen {
            row_id_index: *row_id_index,
            input,
        },
        StreamOp::Project { exprs } => StreamNode::Project {
            exprs: exprs.clone(),
            input,
        },
        StreamOp::Filter { predicate } => StreamNode::Filter {
            predicate: predicate.clone(),
            input,
        },
        StreamOp::HopWindow {
            time_col,
            slide,
            size,
            output_indices,
        } => StreamNode::HopWindow {
            time_col: *time_col,
            window_slide: *slide,
            window_size: *size,
            output_indices: output_indices.clone(),
            input,
        },
        StreamOp::ProjectSet { select_list } => StreamNode::ProjectSet {
            select_list: select_list.clone(),
            input,
        },
        StreamOp::Expand { column_subsets } => StreamNode::Expand {
            column_subsets: column_subsets.clone(),
            input,
        },
        other => unreachable!("{other:?} is not a stateless operator of one input"),
    }
}

/// How an exchange to `dist` dispatches rows.
fn dispatch_strategy(dist: &Dist) -> DispatchStrategy {
    match dist {
        Dist::Single => DispatchStrategy::Simple,
        Dist::HashShard(k) | Dist::UpstreamHashShard(k) => DispatchStrategy::Hash(k.clone()),
        Dist::SomeShard => DispatchStrategy::NoShuffle,
        Dist::Broadcast => DispatchStrategy::Broadcast,
    }
}

/// A dynamic filter with its left table (keyed by the filter's key, hashed as the left is) and its right
/// table.
fn dynamic_filter_node(
    plan: &StreamPlan,
    key: usize,
    comparator: ExprType,
    left: Box<StreamNode>,
    right: Box<StreamNode>,
    table: &Arc<TableDesc>,
) -> StreamNode {
    let (l, r) = (&plan.inputs[0], &plan.inputs[1]);
    let dist_key: &[usize] = match &l.dist {
        Dist::HashShard(d) | Dist::UpstreamHashShard(d) => d,
        _ => &[],
    };
    let (left_table, right_table) = epochlab_common::plan::dynamic_filter_tables(
        &l.types,
        key,
        dist_key,
        &l.stream_key,
        &r.types,
        table.vnode_count,
    );
    StreamNode::DynamicFilter {
        key,
        comparator,
        left_table,
        right_table,
        left,
        right,
    }
}

/// A hash or simple aggregation with its state tables (the input's stream key completes the
/// materialized-input tables' pk; every input is treated as retractable).
fn agg_stream_node(
    plan: &StreamPlan,
    group_key: &[usize],
    calls: &[AggCall],
    input: StreamNode,
    table: &Arc<TableDesc>,
) -> StreamNode {
    let i = &plan.inputs[0];
    let vnodes = table.vnode_count;
    epochlab_common::plan::agg_node(
        input,
        &i.types,
        &i.stream_key,
        group_key,
        calls,
        false,
        vnodes,
    )
}

/// A top-N's stream node with its state table (pk: the group key, the order columns, the input's stream
/// key), append-only when its input is.
fn top_n_node(
    plan: &StreamPlan,
    input: StreamNode,
    table: &Arc<TableDesc>,
    up: &dyn UpstreamReader,
) -> Result<StreamNode, SqlError> {
    let i = &plan.inputs[0];
    let append_only = is_append_only(i, up)?;
    let vnodes = table.vnode_count;
    let state = |group_key: &[usize], order: &[(usize, OrderType)]| {
        epochlab_common::plan::top_n_table(&i.types, group_key, order, &i.stream_key, vnodes)
    };
    Ok(match &plan.op {
        StreamOp::TopN {
            order,
            limit,
            offset,
            with_ties,
        } => StreamNode::TopN {
            order_by: order.clone(),
            offset: *offset,
            limit: *limit,
            with_ties: *with_ties,
            append_only,
            table: state(&[], order),
            input: Box::new(input),
        },
        StreamOp::GroupTopN {
            group_key,
            order,
            limit,
            offset,
            with_ties,
        } => StreamNode::GroupTopN {
            group_key: group_key.clone(),
            order_by: order.clone(),
            offset: *offset,
            limit: *limit,
            with_ties: *with_ties,
            append_only,
            table: state(group_key, order),
            input: Box::new(input),
        },
        other => unreachable!("not a top-N: {other:?}"),
    })
}
