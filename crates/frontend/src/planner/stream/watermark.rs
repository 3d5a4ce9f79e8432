//! Which output columns of a stream plan carry a watermark (RisingWave's `watermark_columns`), and the
//! emit-on-window-close requirement a plan must meet (RisingWave's `stream_enforce_eowc_requirement`): an
//! aggregation at its top grouped by a watermark column emits on window close itself, any other plan with
//! a watermark column gets the EOWC sort.
//! Each rule follows the executor that passes the watermark on, so a column listed here is one the
//! running job sends watermarks for.

use epochlab_common::plan::ProjectSetSelectItem;

use super::{Dist, StreamOp, StreamPlan, UpstreamReader};
use crate::error::SqlError;
use crate::scalar::OrderType;

/// The output columns of `plan` with a watermark, ascending.
pub fn watermark_columns(
    plan: &StreamPlan,
    up: &dyn UpstreamReader,
) -> Result<Vec<usize>, SqlError> {
    let input = |i: usize| watermark_columns(&plan.inputs[i], up);
    let mut out: Vec<usize> = match &plan.op {
        StreamOp::TableScan { table_id, .. } => up.upstream(*table_id)?.watermark_columns,
        StreamOp::RowIdGen { .. }
        | StreamOp::Filter { .. }
        | StreamOp::Exchange { .. }
        | StreamOp::Materialize { .. } => input(0)?,
        StreamOp::Project { exprs } => {
            let cols = input(0)?;
            let derived =
                |e: &crate::scalar::ExprNode| cols.iter().any(|&c| e.derives_watermark(c));
            (0..exprs.len()).filter(|&i| derived(&exprs[i])).collect()
        }
        StreamOp::ProjectSet { select_list } => {
            let cols = input(0)?;
            let derived = |item: &ProjectSetSelectItem| match item {
                ProjectSetSelectItem::Expr(e) => cols.iter().any(|&c| e.derives_watermark(c)),
                ProjectSetSelectItem::TableFunction { .. } => false,
            };
            // Output 0 is the projected row id.
            (0..select_list.len())
                .filter(|&i| derived(&select_list[i]))
                .map(|i| i + 1)
                .collect()
        }
        StreamOp::HopWindow { output_indices, .. } => {
            let cols = input(0)?;
            (0..output_indices.len())
                .filter(|&i| cols.contains(&output_indices[i]))
                .collect()
        }
        // A group top-N keeps its input's columns and passes the watermark of its first group-key column.
        StreamOp::GroupTopN { group_key, .. } => {
            let cols = input(0)?;
            group_key
                .first()
                .filter(|k| cols.contains(k))
                .copied()
                .into_iter()
                .collect()
        }
        // A temporal join passes its left input's watermarks on (RisingWave's `TemporalJoinExecutor`).
        StreamOp::TemporalJoin { output_indices, .. } => {
            let cols = input(0)?;
            (0..output_indices.len())
                .filter(|&i| cols.contains(&output_indices[i]))
                .collect()
        }
        // A hash join passes, per key pair whose two columns both carry a watermark, the minimum of the two
        // on each of the pair's output columns (RisingWave's `HashJoinExecutor::handle_watermark`).
        StreamOp::HashJoin {
            left_keys,
            right_keys,
            output_indices,
            ..
        } => {
            let (left, right) = (input(0)?, input(1)?);
            let l_all = plan.inputs[0].types.len();
            let pairs = left_keys.iter().zip(right_keys);
            let keyed: Vec<usize> = pairs
                .filter(|(l, r)| left.contains(l) && right.contains(r))
                .flat_map(|(l, r)| [*l, l_all + r])
                .collect();
            (0..output_indices.len())
                .filter(|&o| keyed.contains(&output_indices[o]))
                .collect()
        }
        // An aggregation passes the watermark of its window column when it emits on window close.
        StreamOp::HashAgg { eowc, .. } => eowc.iter().copied().collect(),
        StreamOp::Union => {
            let mut common = input(0)?;
            for i in 1..plan.inputs.len() {
                let other = input(i)?;
                common.retain(|c| other.contains(c));
            }
            common
        }
        _ => Vec::new(),
    };
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Make the aggregation at the top of `plan` (under projections and filters) emit on window close, on the
/// first group-key column that carries a watermark (RisingWave's EOWC `StreamHashAgg`, whose output then
/// needs no sort); whether there was one.
pub fn agg_on_window_close(
    plan: &mut StreamPlan,
    up: &dyn UpstreamReader,
) -> Result<bool, SqlError> {
    match &plan.op {
        StreamOp::Project { .. } | StreamOp::Filter { .. } | StreamOp::Exchange { .. } => {
            agg_on_window_close(&mut plan.inputs[0], up)
        }
        StreamOp::HashAgg { group_key, .. } => {
            let cols = watermark_columns(&plan.inputs[0], up)?;
            let window = group_key.iter().position(|k| cols.contains(k));
            if let StreamOp::HashAgg { eowc, .. } = &mut plan.op {
                *eowc = window;
            }
            Ok(window.is_some())
        }
        _ => Ok(false),
    }
}

/// Make the over window at the top of `plan` (under projections, filters and exchanges) emit on window
/// close, as RisingWave's `LogicalOverWindow::to_stream` in that mode: one ascending order column that
/// carries a watermark, an append-only input sorted on it by an `EowcSort` (hashed by the partition key as
/// the window is), every call over the same partition and order; whether there was an over window.
pub fn over_window_on_window_close(
    plan: &mut StreamPlan,
    up: &dyn UpstreamReader,
) -> Result<bool, SqlError> {
    let invalid = |why: &str| Err(SqlError::Invalid(why.into()));
    let order = match &plan.op {
        StreamOp::Project { .. } | StreamOp::Filter { .. } | StreamOp::Exchange { .. } => {
            return over_window_on_window_close(&mut plan.inputs[0], up);
        }
        StreamOp::OverWindow { order_by, .. } => order_by.clone(),
        _ => return Ok(false),
    };
    if contains_over_window(&plan.inputs[0]) {
        return invalid("All window functions must have the same PARTITION BY and ORDER BY");
    }
    let [(order_key, o)] = order.as_slice() else {
        return invalid(
            "Only support window functions order by single column and in ascending order",
        );
    };
    if *o != OrderType::ascending() {
        return invalid(
            "Only support window functions order by single column and in ascending order",
        );
    }
    if !watermark_columns(&plan.inputs[0], up)?.contains(order_key) {
        return invalid("The column ordered by must be a watermark column");
    }
    if !super::is_append_only(&plan.inputs[0], up)? {
        return Err(SqlError::NotSupported(
            "The query cannot be executed in Emit-On-Window-Close mode.".into(),
        ));
    }
    let input = plan.inputs.remove(0);
    let (dist, key) = (input.dist.clone(), input.stream_key.clone());
    let sort = StreamOp::EowcSort {
        sort_column: *order_key,
    };
    plan.inputs.push(StreamPlan::unary(sort, input, dist, key));
    if let StreamOp::OverWindow { eowc, .. } = &mut plan.op {
        *eowc = true;
    }
    Ok(true)
}

fn contains_over_window(plan: &StreamPlan) -> bool {
    matches!(plan.op, StreamOp::OverWindow { .. }) || plan.inputs.iter().any(contains_over_window)
}

/// `plan` as an emit-on-window-close job needs it: a plan whose output has a watermark column gets
/// RisingWave's EOWC sort on the first such column, which holds each row until a watermark passes it;
/// one without is refused in RisingWave's words.
pub fn enforce_eowc(plan: StreamPlan, up: &dyn UpstreamReader) -> Result<StreamPlan, SqlError> {
    let Some(&sort_column) = watermark_columns(&plan, up)?.first() else {
        return Err(SqlError::NotSupported(
            "The query cannot be executed in Emit-On-Window-Close mode.".into(),
        ));
    };
    // The buffer is hashed as its input; an input spread by no known key is hashed by its stream key.
    let plan = match plan.dist {
        Dist::SomeShard => {
            let key = plan.stream_key.clone();
            plan.exchange(Dist::HashShard(key))
        }
        _ => plan,
    };
    let (dist, key) = (plan.dist.clone(), plan.stream_key.clone());
    Ok(StreamPlan::unary(
        StreamOp::EowcSort { sort_column },
        plan,
        dist,
        key,
    ))
}
