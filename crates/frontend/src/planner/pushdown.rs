//! Predicate push-down over a logical plan (RisingWave's `predicate_pushdown` of its logical nodes): the
//! conjuncts of a `WHERE` move down through projections, filters, aggregations (those over the group key
//! only) and unions, and into joins as RisingWave moves them, so that `FROM a, b WHERE a.x = b.y` is a join
//! on `a.x = b.y` and a conjunct over one side of a join filters that side's input.
//!
//! What may move where, per join type (conjuncts of a filter above the join, and of its `ON`), follows
//! RisingWave's `push_down_into_join` and `push_down_join_condition`: a filter over one side moves into that
//! side where the join cannot make its rows NULL; a filter over both sides becomes part of an inner join's
//! `ON`; an `ON` conjunct over one side moves into that side where the side is the join's inner one.

use epochlab_common::DataType;

use crate::planner::{JoinType, LogicalPlan};
use crate::scalar::{ExprNode, ExprType};

/// The conjuncts of `e` (`a AND b AND c` is three), in order.
pub fn conjuncts(e: &ExprNode) -> Vec<ExprNode> {
    match e {
        ExprNode::Call {
            func: ExprType::And,
            args,
            ..
        } => args.iter().flat_map(conjuncts).collect(),
        other => vec![other.clone()],
    }
}

/// The disjuncts of `e` (`a OR b OR c` is three), in order.
fn disjuncts(e: &ExprNode) -> Vec<ExprNode> {
    match e {
        ExprNode::Call {
            func: ExprType::Or,
            args,
            ..
        } => args.iter().flat_map(disjuncts).collect(),
        other => vec![other.clone()],
    }
}

/// The conjuncts of `e` with the conjuncts every disjunct of an `OR` has taken out of it (RisingWave's
/// common-factor extraction): `(a AND b) OR (a AND c)` is `a` and `b OR c`, so that a join key repeated in
/// each branch of TPC-H's Q19 is a key.
pub fn factored_conjuncts(e: &ExprNode) -> Vec<ExprNode> {
    conjuncts(e)
        .into_iter()
        .flat_map(|c| factor_or(&c))
        .collect()
}

fn factor_or(e: &ExprNode) -> Vec<ExprNode> {
    let branches: Vec<Vec<ExprNode>> = disjuncts(e).iter().map(conjuncts).collect();
    if branches.len() < 2 {
        return vec![e.clone()];
    }
    let common: Vec<ExprNode> = branches[0]
        .iter()
        .filter(|c| branches[1..].iter().all(|b| b.contains(c)))
        .fold(Vec::new(), |mut acc, c| {
            if !acc.contains(c) {
                acc.push(c.clone());
            }
            acc
        });
    if common.is_empty() {
        return vec![e.clone()];
    }
    let rests: Vec<Option<ExprNode>> = branches
        .into_iter()
        .map(|b| and_all(b.into_iter().filter(|c| !common.contains(c)).collect()))
        .collect();
    let mut out = common;
    // A branch left with nothing is true, and so is the OR.
    if rests.iter().all(Option::is_some) {
        let rest = rests.into_iter().flatten().reduce(|a, b| ExprNode::Call {
            func: ExprType::Or,
            args: vec![a, b],
            ret: DataType::Boolean,
        });
        out.extend(rest);
    }
    out
}

/// The conjunction of `cs` (`None` when there is none).
pub fn and_all(cs: Vec<ExprNode>) -> Option<ExprNode> {
    cs.into_iter().reduce(|acc, c| ExprNode::Call {
        func: ExprType::And,
        args: vec![acc, c],
        ret: epochlab_common::DataType::Boolean,
    })
}

/// `e` with each input reference `i` replaced by `f(i)`'s expression.
pub fn rewrite_refs(e: &ExprNode, f: &dyn Fn(usize, &ExprNode) -> ExprNode) -> ExprNode {
    match e {
        ExprNode::InputRef { index, .. } => f(*index, e),
        ExprNode::Literal { .. } => e.clone(),
        ExprNode::Call { func, args, ret } => ExprNode::Call {
            func: *func,
            args: args.iter().map(|a| rewrite_refs(a, f)).collect(),
            ret: ret.clone(),
        },
    }
}

/// `e` with input `i` renumbered `map(i)`.
pub fn remap(e: &ExprNode, map: &dyn Fn(usize) -> usize) -> ExprNode {
    rewrite_refs(e, &|i, r| ExprNode::InputRef {
        index: map(i),
        ty: r.return_type(),
    })
}

/// Whether `e` calls a function whose value is not a function of its row (a conjunct with one stays where
/// it is: `now()` is the temporal filter's).
pub(crate) fn is_pure(e: &ExprNode) -> bool {
    match e {
        ExprNode::Call { func, args, .. } => {
            !matches!(func, ExprType::Now | ExprType::Proctime) && args.iter().all(is_pure)
        }
        _ => true,
    }
}

/// `plan` with its filters pushed down as far as RisingWave pushes them.
pub fn predicate_pushdown(plan: &LogicalPlan) -> LogicalPlan {
    push(plan, Vec::new())
}

/// `plan` under the conjuncts `preds` (over its output), pushed into it where they may go.
fn push(plan: &LogicalPlan, preds: Vec<ExprNode>) -> LogicalPlan {
    match plan {
        LogicalPlan::Filter { predicate, input } => {
            let mut all = preds;
            all.extend(factored_conjuncts(predicate));
            push(input, all)
        }
        LogicalPlan::Project { exprs, input } => {
            let (down, keep): (Vec<_>, Vec<_>) = preds
                .into_iter()
                .partition(|p| p.input_refs().iter().all(|&i| is_pure(&exprs[i])));
            let down = down
                .iter()
                .map(|p| rewrite_refs(p, &|i, _| exprs[i].clone()))
                .collect();
            let input = push(input, down);
            above(merge_projects(exprs, input), keep)
        }
        LogicalPlan::Agg {
            group_key,
            calls,
            input,
        } => {
            let n = group_key.len();
            let (down, keep): (Vec<_>, Vec<_>) = preds
                .into_iter()
                .partition(|p| n > 0 && p.input_refs().iter().all(|&i| i < n));
            let down = down.iter().map(|p| remap(p, &|i| group_key[i])).collect();
            let agg = LogicalPlan::Agg {
                group_key: group_key.clone(),
                calls: calls.clone(),
                input: Box::new(push(input, down)),
            };
            above(agg, keep)
        }
        LogicalPlan::Union { inputs } => LogicalPlan::Union {
            inputs: inputs.iter().map(|i| push(i, preds.clone())).collect(),
        },
        LogicalPlan::Join {
            kind,
            on,
            left,
            right,
        } => push_join(*kind, on.as_ref(), left, right, preds),
        other => above(with_inputs_pushed(other), preds),
    }
}

/// `exprs` over `input`, one projection where `input` is one whose expressions it may inline (RisingWave's
/// `ProjectMergeRule`: a filter pushed out of two projections leaves them adjacent; merged, the plan keeps
/// the shapes later rules match, such as a filter on a rank over its window).
fn merge_projects(exprs: &[ExprNode], input: LogicalPlan) -> LogicalPlan {
    if let LogicalPlan::Project {
        exprs: inner,
        input: below,
    } = &input
        && exprs
            .iter()
            .flat_map(ExprNode::input_refs)
            .all(|i| is_pure(&inner[i]))
    {
        let merged = exprs
            .iter()
            .map(|e| rewrite_refs(e, &|i, _| inner[i].clone()))
            .collect();
        return LogicalPlan::Project {
            exprs: merged,
            input: below.clone(),
        };
    }
    input.project(exprs.to_vec())
}

/// `plan` under a filter of `preds` (none: `plan`).
fn above(plan: LogicalPlan, preds: Vec<ExprNode>) -> LogicalPlan {
    match and_all(preds) {
        Some(p) => plan.filter(p),
        None => plan,
    }
}

/// `plan` with push-down applied inside each of its inputs (none pushed into it).
fn with_inputs_pushed(plan: &LogicalPlan) -> LogicalPlan {
    let mut out = plan.clone();
    match &mut out {
        LogicalPlan::TopN { input, .. }
        | LogicalPlan::Dedup { input, .. }
        | LogicalPlan::HopWindow { input, .. }
        | LogicalPlan::ProjectSet { input, .. }
        | LogicalPlan::Expand { input, .. }
        | LogicalPlan::OverWindow { input, .. } => **input = push(input, Vec::new()),
        LogicalPlan::SetOp { left, right, .. } => {
            **left = push(left, Vec::new());
            **right = push(right, Vec::new());
        }
        // Handled by `push`, or leaves.
        LogicalPlan::Filter { .. }
        | LogicalPlan::Project { .. }
        | LogicalPlan::Agg { .. }
        | LogicalPlan::Union { .. }
        | LogicalPlan::Join { .. }
        | LogicalPlan::Scan { .. }
        | LogicalPlan::Values { .. }
        | LogicalPlan::TableFunction { .. }
        | LogicalPlan::Rows { .. } => {}
    }
    out
}

/// Which inputs of a join a conjunct reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sides {
    None,
    Left,
    Right,
    Both,
}

fn sides(e: &ExprNode, lw: usize) -> Sides {
    let refs = e.input_refs();
    match (refs.iter().any(|&i| i < lw), refs.iter().any(|&i| i >= lw)) {
        (false, false) => Sides::None,
        (true, false) => Sides::Left,
        (false, true) => Sides::Right,
        (true, true) => Sides::Both,
    }
}

/// Where the conjuncts of a join's filter and `ON` go.
#[derive(Default)]
struct Split {
    left: Vec<ExprNode>,
    right: Vec<ExprNode>,
    on: Vec<ExprNode>,
    above: Vec<ExprNode>,
}

fn push_join(
    kind: JoinType,
    on: Option<&ExprNode>,
    left: &LogicalPlan,
    right: &LogicalPlan,
    preds: Vec<ExprNode>,
) -> LogicalPlan {
    let lw = left.schema().len();
    let kind = simplify_outer(&preds, lw, kind);
    let mut split = Split::default();
    // The ON: a conjunct over one side moves into that side where that side is the inner one.
    for c in on.map(factored_conjuncts).unwrap_or_default() {
        let s = if is_pure(&c) {
            sides(&c, lw)
        } else {
            Sides::None
        };
        match (kind, s) {
            (JoinType::Inner | JoinType::RightOuter | JoinType::LeftSemi, Sides::Left) => {
                split.left.push(c)
            }
            (
                JoinType::Inner | JoinType::LeftOuter | JoinType::LeftSemi | JoinType::LeftAnti,
                Sides::Right,
            ) => split.right.push(c),
            _ => split.on.push(c),
        }
    }
    // A filter above: a side the join never pads with NULLs takes its conjuncts; an inner join takes
    // those over both sides into its ON (after the ON's own, as RisingWave's `on.and(..)`).
    for p in preds {
        let s = if is_pure(&p) {
            sides(&p, lw)
        } else {
            Sides::None
        };
        let semi = matches!(kind, JoinType::LeftSemi | JoinType::LeftAnti);
        match (kind, s) {
            (JoinType::Inner | JoinType::LeftOuter, Sides::Left) => split.left.push(p),
            (_, Sides::Left) if semi => split.left.push(p),
            (JoinType::Inner | JoinType::RightOuter, Sides::Right) => split.right.push(p),
            (JoinType::Inner, Sides::Both) => split.on.push(p),
            _ => split.above.push(p),
        }
    }
    let right_preds = split.right.iter().map(|p| remap(p, &|i| i - lw)).collect();
    let join = LogicalPlan::Join {
        kind,
        on: and_all(split.on),
        left: Box::new(push(left, split.left)),
        right: Box::new(push(right, right_preds)),
    };
    above(join, split.above)
}

/// RisingWave's `simplify_outer`: a filter comparing a column of the side an outer join pads with NULLs
/// drops the padded rows, so the join need not make them (`a LEFT JOIN b .. WHERE b.x > 1` is an inner
/// join).
fn simplify_outer(preds: &[ExprNode], lw: usize, kind: JoinType) -> JoinType {
    let (mut null_left, mut null_right) = match kind {
        JoinType::LeftOuter => (false, true),
        JoinType::RightOuter => (true, false),
        JoinType::FullOuter => (true, true),
        _ => return kind,
    };
    for p in preds {
        let ExprNode::Call { func, args, .. } = p else {
            continue;
        };
        let comparison = matches!(
            func,
            ExprType::Equal
                | ExprType::NotEqual
                | ExprType::LessThan
                | ExprType::LessThanOrEqual
                | ExprType::GreaterThan
                | ExprType::GreaterThanOrEqual
        );
        if !comparison {
            continue;
        }
        for a in args {
            if let ExprNode::InputRef { index, .. } = a {
                if *index < lw {
                    null_left = false;
                } else {
                    null_right = false;
                }
            }
        }
    }
    match (null_left, null_right) {
        (true, true) => JoinType::FullOuter,
        (true, false) => JoinType::RightOuter,
        (false, true) => JoinType::LeftOuter,
        (false, false) => JoinType::Inner,
    }
}

/// RisingWave's `PushCalculationOfJoinRule`: in a join without a key pair of columns, an equality between
/// an expression of each side (`CAST(a.v AS BIGINT) IS NOT DISTINCT FROM b.w`) becomes one, its
/// expressions computed as columns below the join and dropped above it.
pub fn join_key_calculations(plan: &LogicalPlan) -> LogicalPlan {
    let mut out = plan.clone();
    for input in out.inputs_mut() {
        *input = join_key_calculations(input);
    }
    match out {
        LogicalPlan::Join {
            kind,
            on: Some(on),
            left,
            right,
        } => computed_keys(kind, &on, *left, *right),
        other => other,
    }
}

/// An equality conjunct's two sides, the left's over the left input and the right's over the right
/// input (its own positions), when each side reads one input and they are of one type.
fn computed_pair(c: &ExprNode, lw: usize) -> Option<(ExprType, ExprNode, ExprNode)> {
    let ExprNode::Call { func, args, .. } = c else {
        return None;
    };
    if !matches!(func, ExprType::Equal | ExprType::IsNotDistinctFrom) || !is_pure(c) {
        return None;
    }
    let [a, b] = args.as_slice() else {
        return None;
    };
    let (l, r) = match (sides(a, lw), sides(b, lw)) {
        (Sides::Left, Sides::Right) => (a, b),
        (Sides::Right, Sides::Left) => (b, a),
        _ => return None,
    };
    let [l, r] = comparable_pair([l.clone(), remap(r, &|i| i - lw)])?;
    Some((*func, l, r))
}

/// The two sides of a comparison in one type, as a hash key or a dynamic filter compares them: as they
/// are when they have one, both cast to the wider when they are integers of two widths (their values
/// kept), `None` otherwise.
pub(crate) fn comparable_pair(mut pair: [ExprNode; 2]) -> Option<[ExprNode; 2]> {
    if pair[0].return_type() == pair[1].return_type() {
        return Some(pair);
    }
    let integer = |e: &ExprNode| {
        matches!(
            e.return_type(),
            DataType::Int16 | DataType::Int32 | DataType::Int64
        )
    };
    if !pair.iter().all(integer) {
        return None;
    }
    crate::scalar::cast::align_types(&mut pair).ok()?;
    Some(pair)
}

fn computed_keys(
    kind: JoinType,
    on: &ExprNode,
    left: LogicalPlan,
    right: LogicalPlan,
) -> LogicalPlan {
    let (lw, rw) = (left.schema().len(), right.schema().len());
    let cs = conjuncts(on);
    let column_pair = |c: &ExprNode| {
        matches!(
            computed_pair(c, lw),
            Some((_, ExprNode::InputRef { .. }, ExprNode::InputRef { .. }))
        )
    };
    let pairs: Vec<_> = cs.iter().map(|c| computed_pair(c, lw)).collect();
    if cs.iter().any(column_pair) || pairs.iter().all(Option::is_none) {
        return LogicalPlan::Join {
            kind,
            on: Some(on.clone()),
            left: Box::new(left),
            right: Box::new(right),
        };
    }
    let computed = |e: &ExprNode| !matches!(e, ExprNode::InputRef { .. });
    let nl = pairs
        .iter()
        .flatten()
        .filter(|(_, l, _)| computed(l))
        .count();
    let (mut lcols, mut rcols) = (left.input_refs(), right.input_refs());
    let mut conds = Vec::with_capacity(cs.len());
    // A side's column where it is one, else a column computed after the side's own.
    let place = |cols: &mut Vec<ExprNode>, e: ExprNode| match e {
        ExprNode::InputRef { index, .. } => index,
        e => {
            cols.push(e);
            cols.len() - 1
        }
    };
    for (c, pair) in cs.iter().zip(pairs) {
        let Some((func, l, r)) = pair else {
            // Right columns move past the left's computed ones.
            conds.push(remap(c, &|i| if i < lw { i } else { i + nl }));
            continue;
        };
        let ty = l.return_type();
        let li = place(&mut lcols, l);
        let ri = lw + nl + place(&mut rcols, r);
        conds.push(ExprNode::Call {
            func,
            args: vec![
                ExprNode::InputRef {
                    index: li,
                    ty: ty.clone(),
                },
                ExprNode::InputRef { index: ri, ty },
            ],
            ret: DataType::Boolean,
        });
    }
    let join = LogicalPlan::Join {
        kind,
        on: and_all(conds),
        left: Box::new(left.project(lcols)),
        right: Box::new(right.project(rcols)),
    };
    let all = join.input_refs();
    let kept: Vec<ExprNode> = match kind {
        JoinType::LeftSemi | JoinType::LeftAnti => all[..lw].to_vec(),
        _ => all[..lw]
            .iter()
            .chain(&all[lw + nl..lw + nl + rw])
            .cloned()
            .collect(),
    };
    join.project(kept)
}
