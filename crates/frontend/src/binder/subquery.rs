//! The subqueries of a `WHERE` clause, planned as RisingWave's planner plans them (`plan_where`): each
//! top-level `[NOT] EXISTS (..)` and `x [NOT] IN (..)` conjunct a left semi (anti) join, each scalar
//! subquery a column joined past the FROM's (a left outer join when it is correlated, the cross join of its
//! one row otherwise). A correlated subquery is decorrelated ([`crate::planner::decorrelate`]); in a batch
//! query an uncorrelated one is evaluated while binding, its value a literal.

use sqlparser::ast::{self, Expr as Ast, Query, UnaryOperator};

use super::expr::{call, coerce};
use super::{Binder, BoundQuery, Scope};
use crate::error::SqlError;
use crate::planner::decorrelate::{Domain, apply, correlated_columns};
use crate::planner::pushdown::and_all;
use crate::planner::{JoinType, LogicalPlan};
use crate::scalar::cast::CastContext;
use crate::scalar::{ExprNode, ExprType};

/// A `[NOT] EXISTS` or `x [NOT] IN` conjunct of a WHERE clause, bound: a semi (anti) join to come.
struct SemiJoin {
    anti: bool,
    /// `x` of `x IN (..)`, over the FROM's columns.
    probe: Option<ExprNode>,
    /// The subquery's plan (correlated references to the FROM's columns in it).
    plan: LogicalPlan,
}

/// A conjunct of a WHERE clause other than a semi join: still to bind, or bound already (an
/// uncorrelated `EXISTS` or `IN` of a batch query, evaluated).
enum Conjunct<'a> {
    Ast(&'a Ast),
    Bound(ExprNode),
}

/// What a `[NOT] EXISTS` / `[NOT] IN` conjunct becomes.
enum SemiOrValue {
    Semi(SemiJoin),
    Value(ExprNode),
}

/// The conjuncts of `e` (through parentheses).
fn ast_conjuncts(e: &Ast) -> Vec<&Ast> {
    match e {
        Ast::Nested(inner) => ast_conjuncts(inner),
        Ast::BinaryOp {
            left,
            op: ast::BinaryOperator::And,
            right,
        } => {
            let mut out = ast_conjuncts(left);
            out.extend(ast_conjuncts(right));
            out
        }
        other => vec![other],
    }
}

/// `e` without its parentheses.
fn unnested(e: &Ast) -> &Ast {
    match e {
        Ast::Nested(inner) => unnested(inner),
        other => other,
    }
}

/// Whether the conjunct is `[NOT] EXISTS (q)` or `x [NOT] IN (q)`: (anti, x, q).
fn semi_join_conjunct(c: &Ast) -> Option<(bool, Option<&Ast>, &Query)> {
    match unnested(c) {
        Ast::Exists { subquery, negated } => Some((*negated, None, subquery)),
        Ast::In {
            expr,
            target: ast::InTarget::Subquery(subquery),
            negated,
            ..
        } => Some((*negated, Some(expr), subquery)),
        Ast::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => semi_join_conjunct(expr).map(|(anti, x, q)| (!anti, x, q)),
        _ => None,
    }
}

impl Binder<'_> {
    /// `WHERE w` over `plan` (whose columns `scope` names when it has as many): its semi joins, its scalar
    /// subqueries' columns joined in, then the filter of the other conjuncts.
    pub(super) fn filter_by_where(
        &mut self,
        plan: LogicalPlan,
        w: &Ast,
        scope: &Scope,
    ) -> Result<LogicalPlan, SqlError> {
        let width = plan.schema().len();
        let from_scope = scope.columns.len() == width;
        let mut semi = Vec::new();
        let mut rest = Vec::new();
        for c in ast_conjuncts(w) {
            match from_scope.then(|| self.semi_join(c, scope)).transpose()? {
                Some(Some(SemiOrValue::Semi(s))) => semi.push(s),
                Some(Some(SemiOrValue::Value(v))) => rest.push(Conjunct::Bound(v)),
                _ => rest.push(Conjunct::Ast(c)),
            }
        }
        let saved = std::mem::replace(&mut self.where_subqueries, from_scope.then(Vec::new));
        let bound = self.bind_conjuncts(rest, scope);
        let subqueries = std::mem::replace(&mut self.where_subqueries, saved).unwrap_or_default();
        let predicate = bound?;
        // A subquery's domain: the values of the FROM's rows that the conjuncts without subqueries keep
        // (every row the WHERE keeps is among them).
        let kept: Vec<ExprNode> = predicate
            .as_ref()
            .map(crate::planner::pushdown::conjuncts)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| {
                crate::planner::pushdown::is_pure(c) && c.input_refs().iter().all(|&i| i < width)
            })
            .collect();
        let from = match and_all(kept) {
            Some(p) => plan.clone().filter(p),
            None => plan.clone(),
        };
        let mut plan = plan;
        for s in semi {
            plan = semi_join_plan(&from, plan, s)?;
        }
        for sub in subqueries {
            plan = scalar_join_plan(&from, plan, sub)?;
        }
        let filtered = match predicate {
            Some(p) => plan.filter(p),
            None => plan,
        };
        // The subqueries' columns served the filter: the rows go on with the FROM's columns, as the scope
        // the select list is bound over names them.
        if filtered.schema().len() == width {
            return Ok(filtered);
        }
        let mut exprs = filtered.input_refs();
        exprs.truncate(width);
        Ok(filtered.project(exprs))
    }

    /// The conjunction of `conjuncts`, bound; `None` for none.
    fn bind_conjuncts(
        &mut self,
        conjuncts: Vec<Conjunct<'_>>,
        scope: &Scope,
    ) -> Result<Option<ExprNode>, SqlError> {
        let mut out: Option<ExprNode> = None;
        for c in conjuncts {
            let p = match c {
                Conjunct::Ast(c) => self.bind_expr(c, scope, None)?,
                Conjunct::Bound(p) => p,
            };
            let p = coerce(p, epochlab_common::DataType::Boolean, CastContext::Implicit)?;
            out = Some(match out {
                None => p,
                Some(prev) => call(ExprType::And, vec![prev, p])?,
            });
        }
        Ok(out)
    }

    /// A `[NOT] EXISTS` / `[NOT] IN` conjunct as a semi (anti) join, RisingWave's `LeftSemi`/`LeftAnti`
    /// apply on `x = y` (so `x NOT IN (..)` keeps a row whose `x` is NULL, as RisingWave's does); an
    /// uncorrelated `EXISTS` of a batch query is evaluated now. `None` for any other conjunct.
    fn semi_join(&mut self, c: &Ast, scope: &Scope) -> Result<Option<SemiOrValue>, SqlError> {
        let Some((anti, x, q)) = semi_join_conjunct(c) else {
            return Ok(None);
        };
        let bound = self.bind_correlatable(q, scope)?;
        if x.is_some() && bound.types().len() != 1 {
            return Err(SqlError::Invalid("subquery has too many columns".into()));
        }
        let probe = x.map(|x| self.bind_expr(x, scope, None)).transpose()?;
        if probe.is_none() && correlated_columns(&bound.plan).is_empty() && !self.streaming {
            let mut plan = bound.plan;
            self.session_timezone().rewrite_plan(&mut plan);
            let rows = crate::batch::execute(&plan, self.catalog)?;
            return Ok(Some(SemiOrValue::Value(ExprNode::Literal {
                value: Some(epochlab_common::ScalarImpl::Bool(rows.is_empty() == anti)),
                ty: epochlab_common::DataType::Boolean,
            })));
        }
        Ok(Some(SemiOrValue::Semi(SemiJoin {
            anti,
            probe,
            plan: bound.plan,
        })))
    }

    /// Bind subquery `q` of an expression over `scope`, whose columns it may read (correlated references).
    pub(super) fn bind_correlatable(
        &mut self,
        q: &Query,
        scope: &Scope,
    ) -> Result<BoundQuery, SqlError> {
        self.outer.push(scope.clone());
        let saved = self.correlatable.replace(self.outer.len() - 1);
        let saved_subqueries = self.where_subqueries.take();
        let bound = self.bind_query_inner(q);
        self.where_subqueries = saved_subqueries;
        self.correlatable = saved;
        self.outer.pop();
        bound
    }

    /// A scalar subquery of a WHERE clause over its FROM's scope: its plan joined after the FROM's columns
    /// and the earlier subqueries', its value the next column (a correlated one, and every one in a
    /// streaming query), or its value now (an uncorrelated one in a batch query).
    pub(super) fn where_scalar_subquery(
        &mut self,
        q: &Query,
        scope: &Scope,
    ) -> Result<ExprNode, SqlError> {
        let bound = self.bind_correlatable(q, scope)?;
        let types = bound.types();
        let [ty] = types.as_slice() else {
            return Err(SqlError::Invalid(
                "subquery must return only one column".into(),
            ));
        };
        let correlated = !correlated_columns(&bound.plan).is_empty();
        if !correlated && !self.streaming {
            let mut plan = bound.plan;
            self.session_timezone().rewrite_plan(&mut plan);
            let rows = crate::batch::execute(&plan, self.catalog)?;
            return scalar_value(rows, ty);
        }
        if correlated && !at_most_one_row(&bound.plan) {
            return Err(super::unsupported(
                "correlated scalar subquery that may return more than one row",
            ));
        }
        let subs = self
            .where_subqueries
            .as_mut()
            .expect("binding a WHERE clause over its FROM");
        let index = scope.columns.len() + subs.len();
        subs.push(bound.plan);
        Ok(ExprNode::InputRef {
            index,
            ty: ty.clone(),
        })
    }
}

impl Binder<'_> {
    /// A scalar subquery of a streaming query's HAVING clause: its plan joined after the aggregation's
    /// columns and the earlier subqueries', its value a placeholder until the aggregation's width is known.
    pub(super) fn having_scalar_subquery(
        &mut self,
        q: &Query,
        scope: &Scope,
    ) -> Result<ExprNode, SqlError> {
        self.outer.push(scope.clone());
        let saved = self.having_subqueries.take();
        let correlatable = self.correlatable.take();
        let bound = self.bind_query_inner(q);
        self.correlatable = correlatable;
        self.having_subqueries = saved;
        self.outer.pop();
        let bound = bound?;
        let types = bound.types();
        let [ty] = types.as_slice() else {
            return Err(SqlError::Invalid(
                "subquery must return only one column".into(),
            ));
        };
        let subs = self
            .having_subqueries
            .as_mut()
            .expect("binding a streaming HAVING clause");
        let index = super::HAVING_SUBQUERY_BASE + subs.len();
        subs.push(bound.plan);
        Ok(ExprNode::InputRef {
            index,
            ty: ty.clone(),
        })
    }
}

/// The value of a scalar subquery's rows: NULL for none, RisingWave's error for more than one.
pub(super) fn scalar_value(
    rows: Vec<epochlab_common::OwnedRow>,
    ty: &epochlab_common::DataType,
) -> Result<ExprNode, SqlError> {
    if rows.len() > 1 {
        return Err(SqlError::Invalid(
            "Scalar subquery produced more than one row".into(),
        ));
    }
    Ok(ExprNode::Literal {
        value: rows.first().and_then(|r| r.datum_at(0).clone()),
        ty: ty.clone(),
    })
}

/// Whether `plan` gives one row at most whatever its input: an aggregation without a group key, under
/// projections and filters.
fn at_most_one_row(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Project { input, .. } | LogicalPlan::Filter { input, .. } => {
            at_most_one_row(input)
        }
        LogicalPlan::Agg { group_key, .. } => group_key.is_empty(),
        LogicalPlan::TopN { limit, .. } => limit.is_some_and(|l| l <= 1),
        _ => false,
    }
}

/// The subquery's plan per value of the FROM's columns it reads, and the condition that joins it to the
/// FROM's rows (`None` when it reads none: the plan as it is). Its columns start at `at` in the join.
fn decorrelated(
    from: &LogicalPlan,
    sub: LogicalPlan,
    at: usize,
) -> Result<(LogicalPlan, Option<ExprNode>), SqlError> {
    let columns = correlated_columns(&sub);
    if columns.is_empty() {
        return Ok((sub, None));
    }
    let width = sub.schema().len();
    let d = Domain::new(from, columns);
    let plan = apply(&sub, &d)?;
    Ok((plan, d.matches_outer(at + width)))
}

fn semi_join_plan(
    from: &LogicalPlan,
    plan: LogicalPlan,
    s: SemiJoin,
) -> Result<LogicalPlan, SqlError> {
    let at = plan.schema().len();
    let first = s.plan.schema().first().cloned();
    let (right, on) = decorrelated(from, s.plan, at)?;
    let mut conds: Vec<ExprNode> = on.into_iter().collect();
    if let (Some(x), Some(ty)) = (s.probe, first) {
        let y = ExprNode::InputRef { index: at, ty };
        conds.push(call(ExprType::Equal, vec![x, y])?);
    }
    Ok(LogicalPlan::Join {
        kind: if s.anti {
            JoinType::LeftAnti
        } else {
            JoinType::LeftSemi
        },
        on: and_all(conds),
        left: Box::new(plan),
        right: Box::new(right),
    })
}

/// `plan` with the scalar subquery's value as one more column: the left outer join of its decorrelated
/// plan (projected to the value), or the cross join of its one row.
fn scalar_join_plan(
    from: &LogicalPlan,
    plan: LogicalPlan,
    sub: LogicalPlan,
) -> Result<LogicalPlan, SqlError> {
    let at = plan.schema().len();
    let (right, on) = decorrelated(from, sub, at)?;
    let Some(on) = on else {
        return Ok(LogicalPlan::Join {
            kind: JoinType::Inner,
            on: None,
            left: Box::new(plan),
            right: Box::new(right),
        });
    };
    let joined = LogicalPlan::Join {
        kind: JoinType::LeftOuter,
        on: Some(on),
        left: Box::new(plan),
        right: Box::new(right),
    };
    let mut exprs = joined.input_refs();
    exprs.truncate(at + 1);
    Ok(joined.project(exprs))
}
