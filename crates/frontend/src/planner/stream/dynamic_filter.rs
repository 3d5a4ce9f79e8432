//! RisingWave's dynamic filter in the stream plan (`LogicalJoin::to_stream_dynamic_filter`,
//! `FilterWithNowToJoinRule`): a comparison of a left expression with the one column of a right input that
//! has at most one row (a global aggregation) becomes a `StreamDynamicFilter` over the left, the right
//! broadcast to it; a comparison with `now() [+- const]` in a streaming filter becomes one over `StreamNow`
//! (a temporal filter).

use super::{Dist, StreamOp, StreamPlan, UpstreamReader, refs, to_stream};
use crate::error::SqlError;
use crate::planner::{JoinType, LogicalPlan};
use crate::scalar::{ExprNode, ExprType};
use epochlab_common::DataType;

/// The plan of `plan` when it is a dynamic or temporal filter (RisingWave's shapes), `None` otherwise.
pub(super) fn to_stream_dynamic(
    plan: &LogicalPlan,
    up: &dyn UpstreamReader,
) -> Result<Option<StreamPlan>, SqlError> {
    match plan {
        LogicalPlan::Filter { predicate, input } if count_nows(predicate) > 0 => {
            temporal_filter(predicate, input, up).map(Some)
        }
        LogicalPlan::Project { exprs, input } => {
            let Some(s) = scalar_join(input) else {
                return Ok(None);
            };
            let lw = s.left.schema().len();
            let mut used = Vec::new();
            exprs.iter().for_each(|e| input_refs(e, &mut used));
            // RisingWave's dynamic filter outputs the left's columns only.
            if used.iter().any(|&i| i >= lw) {
                return Ok(None);
            }
            let body = scalar_filter(s, up)?;
            let names = exprs
                .iter()
                .map(|e| match e {
                    ExprNode::InputRef { index, .. } => body.names[*index].clone(),
                    _ => "$expr".into(),
                })
                .collect();
            Ok(Some(body.project(exprs.clone(), names)))
        }
        _ => Ok(None),
    }
}

/// A join of a left input with a one-row, one-column right input on one comparison between them.
struct ScalarJoin<'a> {
    left: &'a LogicalPlan,
    right: &'a LogicalPlan,
    /// Conjuncts over the left's columns only (pushed below the filter).
    left_filter: Vec<ExprNode>,
    /// Conjuncts over the right's columns only (their indices shifted to the right's).
    right_filter: Vec<ExprNode>,
    /// `left_expr cmp right_expr`, the right's indices shifted.
    left_expr: ExprNode,
    comparator: ExprType,
    right_expr: ExprNode,
}

/// `plan` as RisingWave's scalar join (an inner join, maybe under a filter), if it is one.
fn scalar_join(plan: &LogicalPlan) -> Option<ScalarJoin<'_>> {
    let (mut conds, join) = match plan {
        LogicalPlan::Filter { predicate, input } => (conjuncts(predicate), input.as_ref()),
        other => (Vec::new(), other),
    };
    let LogicalPlan::Join {
        kind: JoinType::Inner,
        on,
        left,
        right,
    } = join
    else {
        return None;
    };
    if let Some(on) = on {
        conds.extend(conjuncts(on));
    }
    if right.schema().len() != 1 || !max_one_row(right) || conds.iter().any(|c| count_nows(c) > 0) {
        return None;
    }
    let lw = left.schema().len();
    let (mut left_filter, mut right_filter, mut cross) = (Vec::new(), Vec::new(), Vec::new());
    for c in conds {
        let mut used = Vec::new();
        input_refs(&c, &mut used);
        if used.iter().all(|&i| i < lw) {
            left_filter.push(c);
        } else if used.iter().all(|&i| i >= lw) {
            right_filter.push(shift(&c, lw));
        } else {
            cross.push(c);
        }
    }
    let [cond] = cross.as_slice() else {
        return None;
    };
    let (a, cmp, b) = as_comparison(cond)?;
    let side = |e: &ExprNode| {
        let mut used = Vec::new();
        input_refs(e, &mut used);
        used.iter().all(|&i| i < lw)
    };
    let (l, cmp, r) = if side(a) {
        (a, cmp, b)
    } else {
        (b, reverse(cmp), a)
    };
    if !side(l) {
        return None;
    }
    // Integers of two widths compare as the wider (RisingWave's binder casts them).
    let [l, r] = crate::planner::pushdown::comparable_pair([l.clone(), r.clone()])?;
    Some(ScalarJoin {
        left,
        right,
        left_filter,
        right_filter,
        left_expr: l,
        comparator: cmp,
        right_expr: shift(&r, lw),
    })
}

/// The stream plan of a scalar join: the filters pushed to each side, then the dynamic filter.
fn scalar_filter(s: ScalarJoin<'_>, up: &dyn UpstreamReader) -> Result<StreamPlan, SqlError> {
    let with_filter = |p: StreamPlan, conds: Vec<ExprNode>| -> Result<StreamPlan, SqlError> {
        Ok(match and_all(conds)? {
            Some(predicate) => {
                let (dist, key) = (p.dist.clone(), p.stream_key.clone());
                StreamPlan::unary(StreamOp::Filter { predicate }, p, dist, key)
            }
            None => p,
        })
    };
    let left = with_filter(to_stream(s.left, up)?, s.left_filter)?;
    let right = with_filter(to_stream(s.right, up)?, s.right_filter)?;
    Ok(dynamic_filter(
        left,
        &s.left_expr,
        s.comparator,
        right,
        &s.right_expr,
    ))
}

/// `left` rows whose `left_expr cmp right_expr` holds, `right` one row: the left's layout, a computed key
/// projected in and out again, the right's value projected and broadcast.
fn dynamic_filter(
    left: StreamPlan,
    left_expr: &ExprNode,
    comparator: ExprType,
    right: StreamPlan,
    right_expr: &ExprNode,
) -> StreamPlan {
    let w = left.width;
    let names = left.names[..w].to_vec();
    let left = match left.dist {
        Dist::SomeShard => {
            let key = left.stream_key.clone();
            left.exchange(Dist::HashShard(key))
        }
        _ => left,
    };
    let (left, key, computed) = match left_expr {
        ExprNode::InputRef { index, .. } => (left, *index, false),
        e => {
            let mut exprs = refs(&left.types[..w]);
            exprs.push(e.clone());
            let mut n = names.clone();
            n.push("$expr".into());
            (left.project(exprs, n), w, true)
        }
    };
    let right = right.exchange(Dist::Single);
    let right = match right_expr {
        ExprNode::InputRef { index: 0, .. } => right,
        e => right.project(vec![e.clone()], vec!["$expr".into()]),
    };
    let right = right.exchange(Dist::Broadcast);
    let filtered = StreamPlan {
        op: StreamOp::DynamicFilter { key, comparator },
        types: left.types.clone(),
        names: left.names.clone(),
        width: left.width,
        dist: left.dist.clone(),
        stream_key: left.stream_key.clone(),
        inputs: vec![left, right],
    };
    if computed {
        let types = filtered.types[..w].to_vec();
        filtered.project(refs(&types), names)
    } else {
        filtered
    }
}

/// RisingWave's refusal of a filter with `now()` that is not a temporal filter.
fn bad_now() -> SqlError {
    SqlError::Invalid(
        "Conditions containing now must be of the form `input_expr cmp now() [+- const_expr]` or \
         `now() [+- const_expr] cmp input_expr`, where `input_expr` references a column and contains \
         no `now()`."
            .into(),
    )
}

/// A filter with `now()`: each `input_expr cmp now() [+- const]` conjunct a dynamic filter over `Now`
/// (one after the other), the other conjuncts a filter above them.
fn temporal_filter(
    predicate: &ExprNode,
    input: &LogicalPlan,
    up: &dyn UpstreamReader,
) -> Result<StreamPlan, SqlError> {
    let mut now_filters = Vec::new();
    let mut remainder = Vec::new();
    for c in conjuncts(predicate) {
        if count_nows(&c) == 0 {
            remainder.push(c);
            continue;
        }
        let (input_expr, cmp, now_expr) = as_now_comparison(&c).ok_or_else(bad_now)?;
        if input_expr.return_type() != now_expr.return_type() {
            return Err(bad_now());
        }
        now_filters.push((input_expr.clone(), cmp, now_expr.clone()));
    }
    let mut plan = to_stream(input, up)?;
    for (input_expr, cmp, now_expr) in now_filters {
        let now = StreamPlan {
            op: StreamOp::Now,
            inputs: Vec::new(),
            types: vec![DataType::Timestamptz],
            names: vec!["now".into()],
            width: 1,
            dist: Dist::Single,
            stream_key: Vec::new(),
        };
        let now_ref = ExprNode::InputRef {
            index: 0,
            ty: DataType::Timestamptz,
        };
        let right_expr = replace_now(&now_expr, &now_ref);
        plan = dynamic_filter(plan, &input_expr, cmp, now, &right_expr);
    }
    if let Some(predicate) = and_all(remainder)? {
        let (dist, key) = (plan.dist.clone(), plan.stream_key.clone());
        plan = StreamPlan::unary(StreamOp::Filter { predicate }, plan, dist, key);
    }
    Ok(plan)
}

/// `a cmp b` with `cmp` one of `<`, `<=`, `>`, `>=`.
fn as_comparison(e: &ExprNode) -> Option<(&ExprNode, ExprType, &ExprNode)> {
    match e {
        ExprNode::Call { func, args, .. }
            if matches!(
                func,
                ExprType::GreaterThan
                    | ExprType::GreaterThanOrEqual
                    | ExprType::LessThan
                    | ExprType::LessThanOrEqual
            ) && args.len() == 2 =>
        {
            Some((&args[0], *func, &args[1]))
        }
        _ => None,
    }
}

/// `input_expr cmp now_expr` (reordered so), where `input_expr` references a column and has no `now()`
/// and `now_expr` is `now() [+- const]` (RisingWave's `as_now_comparison_cond`).
fn as_now_comparison(e: &ExprNode) -> Option<(&ExprNode, ExprType, &ExprNode)> {
    let (a, cmp, b) = as_comparison(e)?;
    let column = |x: &ExprNode| {
        let mut used = Vec::new();
        input_refs(x, &mut used);
        count_nows(x) == 0 && !used.is_empty()
    };
    if column(a) && is_now_offset(b) {
        Some((a, cmp, b))
    } else if column(b) && is_now_offset(a) {
        Some((b, reverse(cmp), a))
    } else {
        None
    }
}

fn is_now_offset(e: &ExprNode) -> bool {
    match e {
        ExprNode::Call { func, args, .. } => match func {
            ExprType::Now => true,
            ExprType::Add | ExprType::Subtract if args.len() == 2 => {
                is_now_offset(&args[0]) && is_const(&args[1])
            }
            // The session-time-zone rewrite's form of `now() ± interval`.
            ExprType::AddWithTimeZone | ExprType::SubtractWithTimeZone if args.len() == 3 => {
                is_now_offset(&args[0]) && is_const(&args[1]) && is_const(&args[2])
            }
            _ => false,
        },
        _ => false,
    }
}

fn is_const(e: &ExprNode) -> bool {
    let mut used = Vec::new();
    input_refs(e, &mut used);
    used.is_empty() && count_nows(e) == 0
}

/// The comparison with its sides swapped.
fn reverse(cmp: ExprType) -> ExprType {
    match cmp {
        ExprType::GreaterThan => ExprType::LessThan,
        ExprType::GreaterThanOrEqual => ExprType::LessThanOrEqual,
        ExprType::LessThan => ExprType::GreaterThan,
        ExprType::LessThanOrEqual => ExprType::GreaterThanOrEqual,
        other => other,
    }
}

/// Whether a plan has at most one row (RisingWave's `max_one_row`): a global aggregation, under
/// projections and filters.
fn max_one_row(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Agg { group_key, .. } => group_key.is_empty(),
        LogicalPlan::Project { input, .. } | LogicalPlan::Filter { input, .. } => {
            max_one_row(input)
        }
        _ => false,
    }
}

fn conjuncts(e: &ExprNode) -> Vec<ExprNode> {
    match e {
        ExprNode::Call {
            func: ExprType::And,
            args,
            ..
        } => args.iter().flat_map(conjuncts).collect(),
        other => vec![other.clone()],
    }
}

/// The conjunction of `conds`, `None` when there are none.
fn and_all(conds: Vec<ExprNode>) -> Result<Option<ExprNode>, SqlError> {
    let mut it = conds.into_iter();
    let Some(first) = it.next() else {
        return Ok(None);
    };
    it.try_fold(first, |acc, c| {
        crate::scalar::sig::build_func(ExprType::And, vec![acc, c])
    })
    .map(Some)
    .map_err(SqlError::from)
}

fn input_refs(e: &ExprNode, out: &mut Vec<usize>) {
    match e {
        ExprNode::InputRef { index, .. } => out.push(*index),
        ExprNode::Literal { .. } => {}
        ExprNode::Call { args, .. } => args.iter().for_each(|a| input_refs(a, out)),
    }
}

fn count_nows(e: &ExprNode) -> usize {
    match e {
        ExprNode::Call {
            func: ExprType::Now,
            ..
        } => 1,
        ExprNode::Call { args, .. } => args.iter().map(count_nows).sum(),
        _ => 0,
    }
}

/// `e` with every input reference moved down by `by` (a right side's column in the right's own order).
fn shift(e: &ExprNode, by: usize) -> ExprNode {
    match e {
        ExprNode::InputRef { index, ty } => ExprNode::InputRef {
            index: index - by,
            ty: ty.clone(),
        },
        ExprNode::Literal { .. } => e.clone(),
        ExprNode::Call { func, args, ret } => ExprNode::Call {
            func: *func,
            args: args.iter().map(|a| shift(a, by)).collect(),
            ret: ret.clone(),
        },
    }
}

fn replace_now(e: &ExprNode, with: &ExprNode) -> ExprNode {
    match e {
        ExprNode::Call {
            func: ExprType::Now,
            ..
        } => with.clone(),
        ExprNode::Call { func, args, ret } => ExprNode::Call {
            func: *func,
            args: args.iter().map(|a| replace_now(a, with)).collect(),
            ret: ret.clone(),
        },
        other => other.clone(),
    }
}
