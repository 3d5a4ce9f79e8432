//! Subqueries that read their enclosing query's columns, planned as joins (RisingWave's `LogicalApply` and
//! its elimination, in the general form of Neumann and Kemper's "Unnesting Arbitrary Queries", which
//! RisingWave's `ApplyEliminateRule` and friends implement rule by rule).
//!
//! The binder binds a reference to a column of the enclosing query's FROM as [`correlated_ref`]: an input
//! reference far above any real column. [`apply`] then takes the subquery's plan and the domain `D` (the
//! distinct values of the enclosing columns it reads) and returns a plan with `D`'s columns appended,
//! computing the subquery once per domain value: `D` is cross-joined in where no correlated reference is
//! below, each correlated reference becomes a reference to its domain column, an aggregation groups by the
//! domain as well (a scalar one is left-joined to `D`, so that a domain value without rows still has its
//! row: COUNT's 0), and a join carries the domain through the side it must. The enclosing query joins the
//! result on its columns `IS NOT DISTINCT FROM` the domain's (a semi, anti or left outer join); predicate
//! pushdown then turns the cross joins under the subquery's equalities into hash joins.

use epochlab_common::DataType;

use super::pushdown::{and_all, rewrite_refs};
use super::{JoinType, LogicalPlan, ProjectSetSelectItem};
use crate::error::SqlError;
use crate::scalar::{AggKind, ExprNode, ExprType};

/// Where correlated references start: `CORRELATED_BASE + i` is column `i` of the enclosing query's FROM
/// (RisingWave's `CorrelatedInputRef` at depth 1).
const CORRELATED_BASE: usize = usize::MAX / 4;

/// Correlated references stay below this (the enclosing FROM has fewer columns).
const CORRELATED_END: usize = CORRELATED_BASE + (1 << 32);

/// A reference to column `index` of the enclosing query's FROM, of type `ty`.
pub fn correlated_ref(index: usize, ty: DataType) -> ExprNode {
    ExprNode::InputRef {
        index: CORRELATED_BASE + index,
        ty,
    }
}

/// The enclosing column a correlated reference reads.
fn correlated_column(index: usize) -> Option<usize> {
    (CORRELATED_BASE..CORRELATED_END)
        .contains(&index)
        .then(|| index - CORRELATED_BASE)
}

/// The enclosing columns `e` reads.
fn expr_correlated(e: &ExprNode, out: &mut Vec<usize>) {
    out.extend(e.input_refs().into_iter().filter_map(correlated_column));
}

/// The expressions of one node (not of its inputs).
fn node_exprs(plan: &LogicalPlan) -> Vec<&ExprNode> {
    match plan {
        LogicalPlan::Scan { exprs, filter, .. } => exprs.iter().chain(filter).collect(),
        LogicalPlan::Values { rows, .. } => rows.iter().flatten().collect(),
        LogicalPlan::Project { exprs, .. } => exprs.iter().collect(),
        LogicalPlan::Filter { predicate, .. } => vec![predicate],
        LogicalPlan::Agg { calls, .. } => calls.iter().filter_map(|c| c.filter.as_ref()).collect(),
        LogicalPlan::Join { on, .. } => on.iter().collect(),
        LogicalPlan::TableFunction { args, .. } => args.iter().collect(),
        LogicalPlan::HopWindow { slide, size, .. } => vec![slide, size],
        LogicalPlan::ProjectSet { select_list, .. } => select_list
            .iter()
            .flat_map(|i| match i {
                ProjectSetSelectItem::Expr(e) => vec![e],
                ProjectSetSelectItem::TableFunction { args, .. } => args.iter().collect(),
            })
            .collect(),
        LogicalPlan::Union { .. }
        | LogicalPlan::SetOp { .. }
        | LogicalPlan::TopN { .. }
        | LogicalPlan::Dedup { .. }
        | LogicalPlan::Expand { .. }
        | LogicalPlan::OverWindow { .. }
        | LogicalPlan::Rows { .. } => Vec::new(),
    }
}

/// The enclosing columns `plan` reads anywhere, sorted, each once.
pub fn correlated_columns(plan: &LogicalPlan) -> Vec<usize> {
    let mut out = Vec::new();
    collect(plan, &mut out);
    out.sort_unstable();
    out.dedup();
    out
}

fn collect(plan: &LogicalPlan, out: &mut Vec<usize>) {
    for e in node_exprs(plan) {
        expr_correlated(e, out);
    }
    for i in plan.inputs() {
        collect(i, out);
    }
}

fn is_correlated(plan: &LogicalPlan) -> bool {
    !correlated_columns(plan).is_empty()
}

/// The domain of a correlated subquery: the distinct values of the enclosing columns it reads.
pub struct Domain {
    /// The enclosing columns, sorted.
    columns: Vec<usize>,
    types: Vec<DataType>,
    /// `SELECT DISTINCT columns FROM` the enclosing FROM.
    plan: LogicalPlan,
}

impl Domain {
    /// The domain of `columns` of `outer` (the enclosing query's FROM).
    pub fn new(outer: &LogicalPlan, columns: Vec<usize>) -> Domain {
        let schema = outer.schema();
        let types = columns.iter().map(|&c| schema[c].clone()).collect();
        let plan = LogicalPlan::Agg {
            group_key: columns.clone(),
            calls: Vec::new(),
            input: Box::new(outer.clone()),
        };
        Domain {
            columns,
            types,
            plan,
        }
    }

    pub fn width(&self) -> usize {
        self.columns.len()
    }

    /// `e` with each correlated reference read from the domain's columns, which start at `at`.
    fn substitute(&self, e: &ExprNode, at: usize) -> ExprNode {
        rewrite_refs(e, &|i, r| match correlated_column(i) {
            Some(c) => {
                let j = self
                    .columns
                    .iter()
                    .position(|&x| x == c)
                    .expect("a domain holds every column its subquery reads");
                ExprNode::InputRef {
                    index: at + j,
                    ty: r.return_type(),
                }
            }
            None => r.clone(),
        })
    }

    /// References to the domain's columns, which start at `at`.
    fn refs(&self, at: usize) -> Vec<ExprNode> {
        self.types
            .iter()
            .enumerate()
            .map(|(j, ty)| input_ref(at + j, ty.clone()))
            .collect()
    }

    /// Each enclosing column (at its place in the enclosing rows) `IS NOT DISTINCT FROM` its domain column
    /// (the domain's columns starting at `at`).
    pub fn matches_outer(&self, at: usize) -> Option<ExprNode> {
        let eqs = self
            .columns
            .iter()
            .zip(self.refs(at))
            .zip(&self.types)
            .map(|((&c, d), ty)| {
                bool_call(
                    ExprType::IsNotDistinctFrom,
                    vec![input_ref(c, ty.clone()), d],
                )
            });
        and_all(eqs.collect())
    }

    /// `a.D IS NOT DISTINCT FROM b.D` for domain columns starting at `a` and at `b`.
    pub fn same(&self, a: usize, b: usize) -> Option<ExprNode> {
        let eqs = self
            .refs(a)
            .into_iter()
            .zip(self.refs(b))
            .map(|(x, y)| bool_call(ExprType::IsNotDistinctFrom, vec![x, y]));
        and_all(eqs.collect())
    }
}

fn input_ref(index: usize, ty: DataType) -> ExprNode {
    ExprNode::InputRef { index, ty }
}

fn bool_call(func: ExprType, args: Vec<ExprNode>) -> ExprNode {
    ExprNode::Call {
        func,
        args,
        ret: DataType::Boolean,
    }
}

fn unsupported(what: &str) -> SqlError {
    SqlError::Unsupported(format!("correlated subquery {what}"))
}

/// `plan` (a subquery reading the enclosing columns of `d`) computed for each value of the domain: its
/// columns, then the domain's.
pub fn apply(plan: &LogicalPlan, d: &Domain) -> Result<LogicalPlan, SqlError> {
    if !is_correlated(plan) {
        return Ok(join(JoinType::Inner, None, plan.clone(), d.plan.clone()));
    }
    let width = |p: &LogicalPlan| p.schema().len();
    Ok(match plan {
        LogicalPlan::Project { exprs, input } => {
            let w = width(input);
            let mut out: Vec<ExprNode> = exprs.iter().map(|e| d.substitute(e, w)).collect();
            out.extend(d.refs(w));
            apply(input, d)?.project(out)
        }
        LogicalPlan::Filter { predicate, input } => {
            let w = width(input);
            apply(input, d)?.filter(d.substitute(predicate, w))
        }
        LogicalPlan::Agg {
            group_key,
            calls,
            input,
        } => apply_agg(group_key, calls, input, d)?,
        LogicalPlan::Join {
            kind,
            on,
            left,
            right,
        } => apply_join(*kind, on.as_ref(), left, right, d)?,
        LogicalPlan::Union { inputs } => LogicalPlan::Union {
            inputs: inputs
                .iter()
                .map(|i| apply(i, d))
                .collect::<Result<_, _>>()?,
        },
        LogicalPlan::Scan { .. } => return Err(unsupported("reading a column in a scan")),
        LogicalPlan::Values { .. } => return Err(unsupported("in VALUES")),
        LogicalPlan::TableFunction { .. } | LogicalPlan::ProjectSet { .. } => {
            return Err(unsupported("in a table function's arguments"));
        }
        LogicalPlan::HopWindow { .. } => return Err(unsupported("in a hop window")),
        LogicalPlan::TopN { .. } => return Err(unsupported("under ORDER BY or LIMIT")),
        LogicalPlan::Dedup { .. } => return Err(unsupported("under DISTINCT ON")),
        LogicalPlan::SetOp { .. } => return Err(unsupported("under a set operation")),
        LogicalPlan::Expand { .. } => return Err(unsupported("under grouping sets")),
        LogicalPlan::OverWindow { .. } => return Err(unsupported("under a window function")),
        LogicalPlan::Rows { .. } => unreachable!("rows read no column"),
    })
}

fn join(
    kind: JoinType,
    on: Option<ExprNode>,
    left: LogicalPlan,
    right: LogicalPlan,
) -> LogicalPlan {
    LogicalPlan::Join {
        kind,
        on,
        left: Box::new(left),
        right: Box::new(right),
    }
}

/// An aggregation per domain value: grouped by the domain as well. A scalar aggregation (no group key)
/// has a row for every domain value, as it has one over no rows: the domain left-joined to it, its counts
/// 0 where the domain value had no rows.
fn apply_agg(
    group_key: &[usize],
    calls: &[crate::scalar::AggCall],
    input: &LogicalPlan,
    d: &Domain,
) -> Result<LogicalPlan, SqlError> {
    let w = input.schema().len();
    let (g, k, c) = (group_key.len(), d.width(), calls.len());
    let mut key = group_key.to_vec();
    key.extend(w..w + k);
    let calls: Vec<_> = calls
        .iter()
        .map(|call| {
            let mut call = call.clone();
            call.filter = call.filter.map(|f| d.substitute(&f, w));
            call
        })
        .collect();
    let grouped = LogicalPlan::Agg {
        group_key: key,
        calls: calls.clone(),
        input: Box::new(apply(input, d)?),
    };
    let types = grouped.schema();
    let col = |i: usize| input_ref(i, types[i].clone());
    if g > 0 {
        // keys, domain, calls -> keys, calls, domain.
        let order = (0..g).chain(g + k..g + k + c).chain(g..g + k);
        return Ok(grouped.project(order.map(col).collect()));
    }
    // The domain, then the grouped domain and calls: the calls (counts 0 where NULL), then the domain.
    let on = d.same(0, k);
    let joined = join(JoinType::LeftOuter, on, d.plan.clone(), grouped);
    let mut exprs: Vec<ExprNode> = calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let v = input_ref(2 * k + i, call.ret.clone());
            if matches!(
                call.kind,
                AggKind::Count | AggKind::Sum0 | AggKind::ApproxCountDistinct
            ) && call.ret == DataType::Int64
            {
                let zero = ExprNode::Literal {
                    value: Some(epochlab_common::ScalarImpl::Int64(0)),
                    ty: call.ret.clone(),
                };
                ExprNode::Call {
                    func: ExprType::Coalesce,
                    args: vec![v, zero],
                    ret: call.ret.clone(),
                }
            } else {
                v
            }
        })
        .collect();
    exprs.extend(d.refs(0));
    Ok(joined.project(exprs))
}

/// A join per domain value: the domain goes down the side whose rows every domain value needs (the left
/// of a left join; either of an inner join), and down both when both read it, their domains then equal.
fn apply_join(
    kind: JoinType,
    on: Option<&ExprNode>,
    left: &LogicalPlan,
    right: &LogicalPlan,
    d: &Domain,
) -> Result<LogicalPlan, SqlError> {
    let (lw, rw, k) = (left.schema().len(), right.schema().len(), d.width());
    let on_reads = on.is_some_and(|e| {
        e.input_refs()
            .iter()
            .any(|&i| correlated_column(i).is_some())
    });
    let (lc, rc) = (is_correlated(left), is_correlated(right));
    let (to_left, to_right) = match kind {
        JoinType::Inner => (lc || on_reads || !rc, rc),
        JoinType::LeftOuter | JoinType::LeftSemi | JoinType::LeftAnti => (true, rc),
        JoinType::RightOuter | JoinType::FullOuter => {
            return Err(unsupported("under a right or full outer join"));
        }
    };
    let left_plan = if to_left {
        apply(left, d)?
    } else {
        left.clone()
    };
    let right_plan = if to_right {
        apply(right, d)?
    } else {
        right.clone()
    };
    // Positions: left, [left's domain], right, [right's domain].
    let lk = if to_left { k } else { 0 };
    let shift_right = |e: &ExprNode| {
        rewrite_refs(e, &|i, r| {
            if i >= lw && correlated_column(i).is_none() {
                input_ref(i + lk, r.return_type())
            } else {
                r.clone()
            }
        })
    };
    let domain_at = if to_left { lw } else { lw + rw };
    let mut conds: Vec<ExprNode> = on
        .map(|e| d.substitute(&shift_right(e), domain_at))
        .into_iter()
        .collect();
    if to_left && to_right {
        conds.extend(d.same(lw, lw + k + rw));
    }
    let joined = join(kind, and_all(conds), left_plan, right_plan);
    if matches!(kind, JoinType::LeftSemi | JoinType::LeftAnti) {
        return Ok(joined);
    }
    let types = joined.schema();
    let col = |i: usize| input_ref(i, types[i].clone());
    // left, right, then the domain.
    let order: Vec<usize> = (0..lw)
        .chain(lw + lk..lw + lk + rw)
        .chain(domain_at..domain_at + k)
        .collect();
    Ok(joined.project(order.into_iter().map(col).collect()))
}
