//! Queries: `WITH`, set operations, `VALUES`, `SELECT` (grouping, `HAVING`, `DISTINCT [ON]`), `ORDER BY`,
//! `LIMIT`/`OFFSET`, and the subqueries of expressions (evaluated while binding a batch query).

use epochlab_common::{DataType, OwnedRow};
use sqlparser::ast::{
    self, Distinct, Expr as Ast, GroupByExpr, LimitClause, OrderByKind, Query, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, SetOperator, SetQuantifier, Value,
};

use super::expr::{AggCtx, WindowCollector, coerce, order_type, unify_literals};
use super::{Binder, BoundQuery, Cte, Scope, ident, unsupported};
use crate::error::SqlError;
use crate::planner::{LogicalPlan, SetOp, WindowCall, WindowFuncCall};
use crate::scalar::cast::{CastContext, align_types};
use crate::scalar::{AggCall, AggKind, ExprNode, OrderType, eval};

/// A select's plan before `ORDER BY`/`LIMIT`: the visible columns first, then extra sort columns.
struct BoundSelect {
    plan: LogicalPlan,
    names: Vec<String>,
    order: Vec<(usize, OrderType)>,
}

impl Binder<'_> {
    pub(super) fn bind_query_inner(&mut self, q: &Query) -> Result<BoundQuery, SqlError> {
        if !q.locks.is_empty() {
            return Err(unsupported("FOR UPDATE"));
        }
        let n_ctes = self.ctes.len();
        let out = self.bind_with(q).and_then(|()| self.bind_query_body(q));
        self.ctes.truncate(n_ctes);
        out
    }

    fn bind_with(&mut self, q: &Query) -> Result<(), SqlError> {
        let Some(with) = &q.with else { return Ok(()) };
        if with.recursive {
            return Err(unsupported("WITH RECURSIVE"));
        }
        for cte in &with.cte_tables {
            let mut query = self.bind_query_inner(&cte.query)?;
            rename_columns(&mut query.names, &cte.alias.columns)?;
            self.ctes.push(Cte {
                name: ident(&cte.alias.name),
                query,
            });
        }
        Ok(())
    }

    fn bind_query_body(&mut self, q: &Query) -> Result<BoundQuery, SqlError> {
        let order_exprs: Vec<&ast::OrderByExpr> = match &q.order_by {
            None => Vec::new(),
            Some(o) => match &o.kind {
                OrderByKind::Expressions(e) => e.iter().collect(),
                OrderByKind::All(_) => return Err(unsupported("ORDER BY ALL")),
            },
        };
        let (mut limit, offset) = self.bind_limit(q.limit_clause.as_ref())?;
        let mut with_ties = false;
        if let Some(fetch) = &q.fetch {
            (limit, with_ties) = self.bind_fetch(fetch, limit, !order_exprs.is_empty())?;
            if with_ties && offset > 0 {
                // RisingWave's `LogicalTopN::create`.
                return Err(unsupported("WITH TIES is not supported with OFFSET"));
            }
        }
        let bound = match q.body.as_ref() {
            SetExpr::Select(s) => self.bind_select(s, &order_exprs)?,
            body => {
                let inner = self.bind_set_expr(body)?;
                let order = order_exprs
                    .iter()
                    .map(|o| {
                        Ok((
                            output_position(&o.expr, &inner.names)?,
                            order_type(&o.options),
                        ))
                    })
                    .collect::<Result<_, SqlError>>()?;
                BoundSelect {
                    plan: inner.plan,
                    names: inner.names,
                    order,
                }
            }
        };
        let width = bound.names.len();
        let mut plan = bound.plan;
        if !bound.order.is_empty() || limit.is_some() || offset > 0 {
            plan = LogicalPlan::TopN {
                order: bound.order,
                limit,
                offset,
                with_ties,
                input: Box::new(plan),
            };
        }
        if plan.schema().len() > width {
            let exprs = plan.input_refs().into_iter().take(width).collect();
            plan = plan.project(exprs);
        }
        Ok(BoundQuery {
            plan,
            names: bound.names,
        })
    }

    /// `FETCH { FIRST | NEXT } [n] { ROW | ROWS } { ONLY | WITH TIES }` as RisingWave's parser and binder
    /// read it: the limit (1 without a count) and whether ties are kept; refused beside a `LIMIT`, and
    /// `WITH TIES` without an `ORDER BY`.
    fn bind_fetch(
        &mut self,
        fetch: &ast::Fetch,
        limit: Option<u64>,
        ordered: bool,
    ) -> Result<(Option<u64>, bool), SqlError> {
        if limit.is_some() {
            return Err(SqlError::Parse(
                "Cannot specify both LIMIT and FETCH".into(),
            ));
        }
        if fetch.with_ties && !ordered {
            return Err(SqlError::Parse(
                "WITH TIES cannot be specified without ORDER BY clause".into(),
            ));
        }
        if fetch.percent {
            return Err(unsupported("FETCH .. PERCENT"));
        }
        let n = match &fetch.quantity {
            None => 1,
            Some(e) => self.constant_count(e)?.unwrap_or(1),
        };
        Ok((Some(n), fetch.with_ties))
    }

    /// A non-negative integer constant (`LIMIT`, `OFFSET`, `FETCH`'s count); `None` for NULL.
    pub(super) fn constant_count(&mut self, e: &Ast) -> Result<Option<u64>, SqlError> {
        let bound = self.bind_expr(e, &Scope::default(), None)?;
        match eval(&bound, &OwnedRow::empty())? {
            None => Ok(None),
            Some(v) => match crate::scalar::int_value(&v) {
                Some(n) if n >= 0 => Ok(Some(n as u64)),
                _ => Err(SqlError::Invalid("LIMIT and OFFSET take a count".into())),
            },
        }
    }

    /// `LIMIT n OFFSET m`, constants.
    fn bind_limit(&mut self, l: Option<&LimitClause>) -> Result<(Option<u64>, u64), SqlError> {
        let (limit, offset) = match l {
            None => return Ok((None, 0)),
            Some(LimitClause::LimitOffset {
                limit,
                offset,
                limit_by,
            }) if limit_by.is_empty() => (limit.as_ref(), offset.as_ref().map(|o| &o.value)),
            Some(LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit), Some(offset)),
            Some(other) => return Err(unsupported(format!("{other}"))),
        };
        let mut count = |e: Option<&Ast>| -> Result<Option<u64>, SqlError> {
            e.map_or(Ok(None), |e| self.constant_count(e))
        };
        Ok((count(limit)?, count(offset)?.unwrap_or(0)))
    }

    fn bind_set_expr(&mut self, body: &SetExpr) -> Result<BoundQuery, SqlError> {
        match body {
            SetExpr::Select(s) => {
                let b = self.bind_select(s, &[])?;
                Ok(BoundQuery {
                    plan: b.plan,
                    names: b.names,
                })
            }
            SetExpr::Query(q) => self.bind_query_inner(q),
            SetExpr::Values(v) => self.bind_values(v),
            SetExpr::SetOperation {
                left,
                op,
                set_quantifier,
                right,
            } => {
                let all = match set_quantifier {
                    SetQuantifier::All => true,
                    SetQuantifier::Distinct | SetQuantifier::None => false,
                    other => return Err(unsupported(format!("{op} {other}"))),
                };
                let op = match op {
                    SetOperator::Union => SetOp::Union,
                    SetOperator::Except => SetOp::Except,
                    SetOperator::Intersect => SetOp::Intersect,
                    other => return Err(unsupported(format!("{other}"))),
                };
                let l = self.bind_set_expr(left)?;
                let r = self.bind_set_expr(right)?;
                set_operation(op, all, l, r)
            }
            other => Err(unsupported(format!("query {other}"))),
        }
    }

    /// `VALUES (..), (..)`: each column's values of one type.
    pub(super) fn bind_values(&mut self, v: &ast::Values) -> Result<BoundQuery, SqlError> {
        let scope = Scope::default();
        let mut rows: Vec<Vec<ExprNode>> = Vec::with_capacity(v.rows.len());
        for r in &v.rows {
            let row = r
                .content
                .iter()
                .map(|e| self.bind_expr(e, &scope, None))
                .collect::<Result<Vec<_>, _>>()?;
            if let Some(first) = rows.first()
                && first.len() != row.len()
            {
                return Err(SqlError::Invalid(
                    "VALUES lists must all be the same length".into(),
                ));
            }
            rows.push(row);
        }
        let width = rows.first().map_or(0, Vec::len);
        let mut types = Vec::with_capacity(width);
        for c in 0..width {
            let mut column: Vec<ExprNode> = rows.iter().map(|r| r[c].clone()).collect();
            unify_literals(&mut column)?;
            types.push(align_types(&mut column)?);
            for (r, e) in rows.iter_mut().zip(column) {
                r[c] = e;
            }
        }
        Ok(BoundQuery {
            plan: LogicalPlan::Values { rows, types },
            names: (1..=width).map(|i| format!("column{i}")).collect(),
        })
    }

    /// A select, its own table functions collected apart from an enclosing select list's.
    fn bind_select(
        &mut self,
        s: &ast::Select,
        order_exprs: &[&ast::OrderByExpr],
    ) -> Result<BoundSelect, SqlError> {
        let outer_collector = self.project_set.take();
        let out = self.bind_select_inner(s, order_exprs);
        self.project_set = outer_collector;
        out
    }

    fn bind_select_inner(
        &mut self,
        s: &ast::Select,
        order_exprs: &[&ast::OrderByExpr],
    ) -> Result<BoundSelect, SqlError> {
        if s.top.is_some() || s.into.is_some() || !s.named_window.is_empty() || s.qualify.is_some()
        {
            return Err(unsupported("TOP, INTO, WINDOW or QUALIFY"));
        }
        // A window function of an enclosing select list is not allowed in this select's FROM or WHERE.
        let outer_windows = self.windows.take();
        let outer_having = self.having_subqueries.take();
        let out = self.bind_select_body(s, order_exprs, outer_windows);
        self.having_subqueries = outer_having;
        out
    }

    fn bind_select_body(
        &mut self,
        s: &ast::Select,
        order_exprs: &[&ast::OrderByExpr],
        outer_windows: Option<WindowCollector>,
    ) -> Result<BoundSelect, SqlError> {
        let (mut plan, scope) = self.bind_from(&s.from)?;
        if let Some(w) = &s.selection {
            plan = self.filter_by_where(plan, w, &scope)?;
        }
        let group_by: &[Ast] = match &s.group_by {
            GroupByExpr::Expressions(e, m) if m.is_empty() => e,
            _ => return Err(unsupported("GROUP BY ALL or WITH ROLLUP")),
        };
        let mut agg = if is_grouped(s, group_by, order_exprs) {
            Some(self.bind_group_by(group_by, &s.projection, &scope)?)
        } else {
            None
        };
        // A grouped select's window calls are over the aggregation's output, whose width is known once its
        // calls are bound: their columns are placeholders from `WINDOW_BASE` until then.
        self.windows = Some(WindowCollector {
            input_width: match agg {
                Some(_) => super::WINDOW_BASE,
                None => plan.schema().len(),
            },
            calls: Vec::new(),
        });
        // Without aggregation, table functions in the select list become a ProjectSet under it.
        if agg.is_none() {
            self.project_set = Some(super::TableFunctionCollector::new(scope.columns.len()));
        }
        let bound = self.bind_select_list(s, &scope, agg.as_mut(), order_exprs);
        let collected = self.project_set.take();
        let having_subqueries = self.having_subqueries.take().unwrap_or_default();
        let (mut exprs, names, order, distinct_on, having) = bound?;
        if let Some(c) = collected.filter(|c| !c.items.is_empty()) {
            plan = project_set_plan(plan, c);
            exprs = exprs.iter().map(|e| shift_input_refs(e, 1)).collect();
        }
        let mut windows = std::mem::replace(&mut self.windows, outer_windows).unwrap_or_default();
        if let Some(ctx) = agg {
            plan = agg_plan(plan, ctx);
            if let Some(h) = having {
                // The HAVING's subqueries (streaming): each one's row joined after the aggregation's.
                let width = plan.schema().len();
                for sub in having_subqueries {
                    plan = LogicalPlan::Join {
                        kind: crate::planner::JoinType::Inner,
                        on: None,
                        left: Box::new(plan),
                        right: Box::new(sub),
                    };
                }
                let h = crate::planner::pushdown::remap(&h, &|i| {
                    i.checked_sub(super::HAVING_SUBQUERY_BASE)
                        .map_or(i, |k| width + k)
                });
                plan = plan.filter(coerce(h, DataType::Boolean, CastContext::Implicit)?);
            }
            let width = plan.schema().len();
            let calls = windows.calls.len();
            let from_base = |i: usize| match i.checked_sub(super::WINDOW_BASE) {
                Some(k) if k < calls => width + k,
                _ => i,
            };
            exprs = exprs
                .iter()
                .map(|e| crate::planner::pushdown::remap(e, &from_base))
                .collect();
            windows.input_width = width;
        }
        if !windows.calls.is_empty() {
            (plan, exprs) = over_window_plan(plan, windows, exprs);
        }
        plan = plan.project(exprs);
        let plan = distinct_plan(plan, s.distinct.as_ref(), distinct_on, names.len(), &order)?;
        Ok(BoundSelect { plan, names, order })
    }

    /// The select list, `HAVING`, `ORDER BY` and `DISTINCT ON` of a select, bound: the expressions (the
    /// visible ones, then extra sort and `DISTINCT ON` keys), names, order, `DISTINCT ON` keys, `HAVING`.
    #[allow(clippy::type_complexity)]
    fn bind_select_list(
        &mut self,
        s: &ast::Select,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
        order_exprs: &[&ast::OrderByExpr],
    ) -> Result<
        (
            Vec<ExprNode>,
            Vec<String>,
            Vec<(usize, OrderType)>,
            Option<Vec<usize>>,
            Option<ExprNode>,
        ),
        SqlError,
    > {
        let (mut exprs, names) =
            self.bind_select_items(&s.projection, scope, agg.as_deref_mut())?;
        if self.streaming && agg.is_some() {
            self.having_subqueries = Some(Vec::new());
        }
        // A window function call in HAVING is not allowed (RisingWave refuses it too).
        let windows = self.windows.take();
        let having = match &s.having {
            Some(h) => self.bind_expr(h, scope, agg.as_deref_mut()).map(Some),
            None => Ok(None),
        };
        self.windows = windows;
        let having = having?;
        let mut order = Vec::new();
        for o in order_exprs {
            let pos = match output_position(&o.expr, &names) {
                Ok(p) => p,
                // A position must name an output column (`ORDER BY 2` of one column is an error).
                Err(e) if is_number(&o.expr) => return Err(e),
                Err(_) => {
                    let e = self.bind_expr(&o.expr, scope, agg.as_deref_mut())?;
                    match exprs[..names.len()].iter().position(|x| *x == e) {
                        Some(p) => p,
                        None => {
                            exprs.push(e);
                            exprs.len() - 1
                        }
                    }
                }
            };
            order.push((pos, order_type(&o.options)));
        }
        let distinct_on = match &s.distinct {
            Some(Distinct::On(on)) => {
                let mut keys = Vec::new();
                for e in on {
                    let e = self.bind_expr(e, scope, agg.as_deref_mut())?;
                    keys.push(exprs.len());
                    exprs.push(e);
                }
                Some(keys)
            }
            _ => None,
        };
        Ok((exprs, names, order, distinct_on, having))
    }

    /// The group keys (by expression, select-list position or output name) of a grouped select, and its
    /// grouping sets when it has `GROUPING SETS`, `ROLLUP` or `CUBE` (each item's sets, crossed).
    fn bind_group_by(
        &mut self,
        group_by: &[Ast],
        items: &[SelectItem],
        scope: &Scope,
    ) -> Result<AggCtx, SqlError> {
        let mut group_exprs: Vec<ExprNode> = Vec::new();
        let mut sets: Vec<Vec<usize>> = vec![Vec::new()];
        let mut has_sets = false;
        for g in group_by {
            let item_sets: Vec<Vec<usize>> = match g {
                Ast::Rollup(elems) | Ast::Cube(elems) | Ast::GroupingSets(elems) => {
                    has_sets = true;
                    let mut bound = Vec::with_capacity(elems.len());
                    for elem in elems {
                        let mut keys = Vec::with_capacity(elem.len());
                        for e in elem {
                            keys.push(self.bind_group_key(e, items, scope, &mut group_exprs)?);
                        }
                        bound.push(keys);
                    }
                    match g {
                        Ast::Rollup(_) => rollup_sets(&bound),
                        Ast::Cube(_) => cube_sets(&bound)?,
                        _ => bound,
                    }
                }
                other => vec![vec![self.bind_group_key(
                    other,
                    items,
                    scope,
                    &mut group_exprs,
                )?]],
            };
            sets = cross_sets(&sets, &item_sets)?;
        }
        Ok(AggCtx {
            input_scope: scope.clone(),
            pre_exprs: group_exprs.clone(),
            group_exprs,
            calls: Vec::new(),
            grouping_sets: has_sets.then_some(sets),
        })
    }

    /// One group key: its position in `group_exprs` (added when new).
    fn bind_group_key(
        &mut self,
        g: &Ast,
        items: &[SelectItem],
        scope: &Scope,
        group_exprs: &mut Vec<ExprNode>,
    ) -> Result<usize, SqlError> {
        let ast = match g {
            Ast::Rollup(_) | Ast::Cube(_) | Ast::GroupingSets(_) => {
                return Err(unsupported("nested GROUPING SETS, ROLLUP or CUBE"));
            }
            Ast::Value(v) if matches!(v.value, Value::Number(..)) => {
                let Value::Number(n, _) = &v.value else {
                    unreachable!()
                };
                let k: usize = n.parse().unwrap_or(0);
                match items.get(k.wrapping_sub(1)) {
                    Some(
                        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. },
                    ) => e,
                    _ => {
                        return Err(SqlError::Invalid(format!(
                            "GROUP BY position {n} is not in select list"
                        )));
                    }
                }
            }
            Ast::Identifier(id) if self.column_ref(scope, None, &ident(id)).is_err() => {
                let name = ident(id);
                items
                    .iter()
                    .find_map(|i| match i {
                        SelectItem::ExprWithAlias { expr, alias } if ident(alias) == name => {
                            Some(expr)
                        }
                        _ => None,
                    })
                    .unwrap_or(g)
            }
            other => other,
        };
        let e = self.bind_expr(ast, scope, None)?;
        Ok(match group_exprs.iter().position(|x| *x == e) {
            Some(i) => i,
            None => {
                group_exprs.push(e);
                group_exprs.len() - 1
            }
        })
    }

    /// The select list: expressions and output names (`*` and `t.*` expanded).
    fn bind_select_items(
        &mut self,
        items: &[SelectItem],
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<(Vec<ExprNode>, Vec<String>), SqlError> {
        let mut exprs = Vec::new();
        let mut names = Vec::new();
        for item in items {
            match item {
                SelectItem::Wildcard(options) | SelectItem::QualifiedWildcard(_, options) => {
                    let qualifier = match item {
                        SelectItem::QualifiedWildcard(
                            SelectItemQualifiedWildcardKind::ObjectName(n),
                            _,
                        ) => Some(
                            n.0.last()
                                .map(|p| p.to_string().trim_matches('"').to_lowercase())
                                .unwrap_or_default(),
                        ),
                        SelectItem::QualifiedWildcard(..) => {
                            return Err(unsupported("expression.*"));
                        }
                        _ => None,
                    };
                    let except = self.except_indices(options, scope)?;
                    for (i, name) in wildcard_columns(scope, qualifier.as_deref(), &except)? {
                        let ty = scope.columns[i].ty.clone();
                        exprs.push(match agg.as_deref_mut() {
                            None => ExprNode::InputRef { index: i, ty },
                            Some(ctx) => {
                                let name = sqlparser::ast::Ident::new(name.clone());
                                self.bind_expr(&Ast::Identifier(name), scope, Some(ctx))?
                            }
                        });
                        names.push(name);
                    }
                }
                SelectItem::UnnamedExpr(e) => {
                    exprs.push(self.bind_expr(e, scope, agg.as_deref_mut())?);
                    names.push(output_name(e));
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    exprs.push(self.bind_expr(expr, scope, agg.as_deref_mut())?);
                    names.push(ident(alias));
                }
                other => return Err(unsupported(format!("select item {other}"))),
            }
        }
        Ok((exprs, names))
    }

    /// The columns a wildcard's `EXCEPT (..)` leaves out, by position in `scope` (RisingWave's
    /// `generate_except_indices`): each a column of the whole scope, none twice.
    fn except_indices(
        &mut self,
        options: &ast::WildcardAdditionalOptions,
        scope: &Scope,
    ) -> Result<Vec<usize>, SqlError> {
        let Some(except) = &options.opt_except else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let names = std::iter::once(&except.first_element).chain(&except.additional_elements);
        for name in names {
            match self.bind_expr(&Ast::Identifier(name.clone()), scope, None)? {
                ExprNode::InputRef { index, .. } if out.contains(&index) => {
                    return Err(SqlError::Invalid("Duplicate entry in except list".into()));
                }
                ExprNode::InputRef { index, .. } => out.push(index),
                _ => {
                    return Err(SqlError::Invalid(
                        "Only support column name in except list".into(),
                    ));
                }
            }
        }
        Ok(out)
    }

    /// Bind and run an uncorrelated subquery (batch only): its rows and types.
    pub(super) fn eval_subquery(
        &mut self,
        q: &Query,
        scope: &Scope,
    ) -> Result<(Vec<OwnedRow>, Vec<DataType>), SqlError> {
        if self.streaming {
            return Err(unsupported(
                "subquery in an expression of a streaming query",
            ));
        }
        // Evaluated now, it can read no enclosing query (a correlated reference would reach the batch
        // engine): any it makes is refused.
        self.outer.push(scope.clone());
        let correlatable = self.correlatable.take();
        let bound = self.bind_query_inner(q);
        self.correlatable = correlatable;
        self.outer.pop();
        let mut bound = bound?;
        self.session_timezone().rewrite_plan(&mut bound.plan);
        let rows = crate::batch::execute(&bound.plan, self.catalog)?;
        Ok((rows, bound.types()))
    }

    /// The values of a one-column subquery, as literals.
    pub(super) fn subquery_column(
        &mut self,
        q: &Query,
        scope: &Scope,
    ) -> Result<Vec<ExprNode>, SqlError> {
        let (rows, types) = self.eval_subquery(q, scope)?;
        let [ty] = types.as_slice() else {
            return Err(SqlError::Invalid("subquery has too many columns".into()));
        };
        Ok(rows
            .into_iter()
            .map(|r| ExprNode::Literal {
                value: r.datum_at(0).clone(),
                ty: ty.clone(),
            })
            .collect())
    }

    /// A scalar subquery: in a WHERE clause over its FROM's scope, joined or evaluated (see
    /// [`Binder::where_scalar_subquery`]); elsewhere evaluated now (batch).
    pub(super) fn scalar_subquery(
        &mut self,
        q: &Query,
        scope: &Scope,
    ) -> Result<ExprNode, SqlError> {
        if self.where_subqueries.is_some() {
            return self.where_scalar_subquery(q, scope);
        }
        if self.having_subqueries.is_some() {
            return self.having_scalar_subquery(q, scope);
        }
        let (rows, types) = self.eval_subquery(q, scope)?;
        let [ty] = types.as_slice() else {
            return Err(SqlError::Invalid(
                "subquery must return only one column".into(),
            ));
        };
        super::subquery::scalar_value(rows, ty)
    }
}

/// The aggregation: the projection of its keys and arguments, then the grouping. With grouping sets
/// (RisingWave's `LogicalExpand` under the `LogicalAgg`): the projection expanded once per set, grouped by
/// the keys (NULL outside the set) and the set's flag, the calls over the columns as they were.
fn agg_plan(input: LogicalPlan, ctx: AggCtx) -> LogicalPlan {
    let g = ctx.group_exprs.len();
    let input = input.project(ctx.pre_exprs);
    let Some(sets) = ctx.grouping_sets else {
        return LogicalPlan::Agg {
            group_key: (0..g).collect(),
            calls: ctx.calls,
            input: Box::new(input),
        };
    };
    let m = input.schema().len();
    let calls = ctx
        .calls
        .into_iter()
        .map(|c| shift_agg_call(c, m))
        .collect();
    LogicalPlan::Agg {
        group_key: (0..g).chain([2 * m]).collect(),
        calls,
        input: Box::new(LogicalPlan::Expand {
            column_subsets: sets,
            input: Box::new(input),
        }),
    }
}

/// `c` over columns `by` places to the right (the unchanged copies of an `Expand`'s input).
fn shift_agg_call(mut c: AggCall, by: usize) -> AggCall {
    for a in &mut c.args {
        *a += by;
    }
    for (i, _) in &mut c.order_by {
        *i += by;
    }
    c.filter = c.filter.map(|f| shift_input_refs(&f, by));
    c
}

/// `e` with every input reference `by` columns to the right.
pub(super) fn shift_input_refs(e: &ExprNode, by: usize) -> ExprNode {
    remap_input_refs(e, &|i| i + by)
}

/// `e` with input reference `i` made `map(i)`.
fn remap_input_refs(e: &ExprNode, map: &dyn Fn(usize) -> usize) -> ExprNode {
    match e {
        ExprNode::InputRef { index, ty } => ExprNode::InputRef {
            index: map(*index),
            ty: ty.clone(),
        },
        ExprNode::Literal { .. } => e.clone(),
        ExprNode::Call { func, args, ret } => ExprNode::Call {
            func: *func,
            args: args.iter().map(|a| remap_input_refs(a, map)).collect(),
            ret: ret.clone(),
        },
    }
}

/// The `ProjectSet` of a select list's table functions over `input` (its columns, then the functions):
/// the `projected_row_id`, the input's columns, the functions. Table functions nested in their arguments
/// are a `ProjectSet` below it, as RisingWave plans them.
fn project_set_plan(input: LogicalPlan, c: super::TableFunctionCollector) -> LogicalPlan {
    use crate::planner::ProjectSetSelectItem as Item;
    let w = c.base;
    let refs = input.input_refs();
    let nested = !c.nested.is_empty();
    let (input, items) = if !nested {
        (input, c.items)
    } else {
        let lower = LogicalPlan::ProjectSet {
            select_list: refs
                .iter()
                .cloned()
                .map(Item::Expr)
                .chain(c.nested)
                .collect(),
            input: Box::new(input),
        };
        let map = move |i: usize| {
            if i >= super::NESTED_TABLE_FUNCTION_BASE {
                1 + w + (i - super::NESTED_TABLE_FUNCTION_BASE)
            } else {
                i + 1
            }
        };
        let items = c
            .items
            .into_iter()
            .map(|item| match item {
                Item::TableFunction { func, args, ret } => Item::TableFunction {
                    func,
                    args: args.iter().map(|a| remap_input_refs(a, &map)).collect(),
                    ret,
                },
                Item::Expr(e) => Item::Expr(remap_input_refs(&e, &map)),
            })
            .collect();
        (lower, items)
    };
    // The input's columns (after a nested ProjectSet's row id), then the functions.
    let skip = usize::from(nested);
    let select_list = input
        .input_refs()
        .into_iter()
        .skip(skip)
        .take(w)
        .map(Item::Expr)
        .chain(items)
        .collect();
    LogicalPlan::ProjectSet {
        select_list,
        input: Box::new(input),
    }
}

/// Grouping sets at most (`CUBE` of n items is 2^n sets).
const MAX_GROUPING_SETS: usize = 4096;

/// `ROLLUP (e1, .., en)`: `(e1, .., en)`, `(e1, .., en-1)`, .., `()`.
fn rollup_sets(elems: &[Vec<usize>]) -> Vec<Vec<usize>> {
    (0..=elems.len())
        .rev()
        .map(|k| union_keys(elems[..k].iter()))
        .collect()
}

/// `CUBE (e1, .., en)`: every subset of the items, the full one first.
fn cube_sets(elems: &[Vec<usize>]) -> Result<Vec<Vec<usize>>, SqlError> {
    if elems.len() > 12 {
        return Err(SqlError::Invalid("CUBE is limited to 12 elements".into()));
    }
    let n = elems.len();
    Ok((0..1usize << n)
        .rev()
        .map(|mask| {
            union_keys(
                (0..n)
                    .filter(|i| mask & (1 << (n - 1 - i)) != 0)
                    .map(|i| &elems[i]),
            )
        })
        .collect())
}

fn union_keys<'a>(parts: impl Iterator<Item = &'a Vec<usize>>) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for k in parts.flatten() {
        if !out.contains(k) {
            out.push(*k);
        }
    }
    out
}

/// Every union of a set of `a` with a set of `b` (the grouping sets of two `GROUP BY` items).
fn cross_sets(a: &[Vec<usize>], b: &[Vec<usize>]) -> Result<Vec<Vec<usize>>, SqlError> {
    if a.len().saturating_mul(b.len()) > MAX_GROUPING_SETS {
        return Err(SqlError::Invalid(format!(
            "more than {MAX_GROUPING_SETS} grouping sets"
        )));
    }
    Ok(a.iter()
        .flat_map(|x| b.iter().map(move |y| union_keys([x, y].into_iter())))
        .collect())
}

/// Two bound set operands combined: column counts checked, types aligned.
fn set_operation(
    op: SetOp,
    all: bool,
    l: BoundQuery,
    r: BoundQuery,
) -> Result<BoundQuery, SqlError> {
    let (lt, rt) = (l.types(), r.types());
    if lt.len() != rt.len() {
        return Err(SqlError::Invalid(format!(
            "each {} query must have the same number of columns",
            match op {
                SetOp::Union => "UNION",
                SetOp::Except => "EXCEPT",
                SetOp::Intersect => "INTERSECT",
            }
        )));
    }
    let mut lexprs = l.plan.input_refs();
    let mut rexprs = r.plan.input_refs();
    for i in 0..lt.len() {
        let mut pair = [lexprs[i].clone(), rexprs[i].clone()];
        align_types(&mut pair)?;
        let [a, b] = pair;
        lexprs[i] = a;
        rexprs[i] = b;
    }
    let cast_if = |plan: LogicalPlan, exprs: Vec<ExprNode>| {
        if exprs.iter().all(|e| matches!(e, ExprNode::InputRef { .. })) {
            plan
        } else {
            plan.project(exprs)
        }
    };
    let (left, right) = (cast_if(l.plan, lexprs), cast_if(r.plan, rexprs));
    let plan = match (op, all) {
        (SetOp::Union, true) => {
            let mut inputs = Vec::new();
            for p in [left, right] {
                match p {
                    LogicalPlan::Union { inputs: inner } => inputs.extend(inner),
                    other => inputs.push(other),
                }
            }
            LogicalPlan::Union { inputs }
        }
        _ => LogicalPlan::SetOp {
            op,
            all,
            left: Box::new(left),
            right: Box::new(right),
        },
    };
    Ok(BoundQuery {
        plan,
        names: l.names,
    })
}

/// An `ORDER BY` item naming an output column: its position (1-based in SQL) or its name.
/// Whether `e` is a number literal (an output position where `ORDER BY` takes one).
fn is_number(e: &Ast) -> bool {
    matches!(e, Ast::Value(v) if matches!(v.value, Value::Number(..)))
}

fn output_position(e: &Ast, names: &[String]) -> Result<usize, SqlError> {
    match e {
        Ast::Value(v) if matches!(v.value, Value::Number(..)) => {
            let Value::Number(n, _) = &v.value else {
                unreachable!()
            };
            match n.parse::<usize>() {
                Ok(k) if k >= 1 && k <= names.len() => Ok(k - 1),
                _ => Err(SqlError::Invalid(format!(
                    "ORDER BY position {n} is not in select list"
                ))),
            }
        }
        Ast::Identifier(id) => names
            .iter()
            .position(|n| *n == ident(id))
            .ok_or_else(|| SqlError::Invalid(format!("column \"{}\" does not exist", ident(id)))),
        other => Err(unsupported(format!(
            "ORDER BY {other} over a set operation"
        ))),
    }
}

/// `AS t(a, b)`: the first columns renamed.
pub(super) fn rename_columns(
    names: &mut [String],
    aliases: &[ast::TableAliasColumnDef],
) -> Result<(), SqlError> {
    if aliases.len() > names.len() {
        return Err(SqlError::Invalid(format!(
            "table has {} columns available but {} columns specified",
            names.len(),
            aliases.len()
        )));
    }
    for (n, a) in names.iter_mut().zip(aliases) {
        *n = ident(&a.name);
    }
    Ok(())
}

/// The select's input under its window function calls (RisingWave's `LogicalOverWindow`): a projection
/// adds the calls' arguments, partition and order expressions that are not input columns, then the over
/// window appends one column per call; `exprs`' references to the calls move past the added columns.
fn over_window_plan(
    plan: LogicalPlan,
    windows: WindowCollector,
    exprs: Vec<ExprNode>,
) -> (LogicalPlan, Vec<ExprNode>) {
    let width = windows.input_width;
    let mut pre = plan.input_refs();
    let mut column = |e: ExprNode| match e {
        ExprNode::InputRef { index, .. } if index < width => index,
        e => pre.iter().position(|x| *x == e).unwrap_or_else(|| {
            pre.push(e);
            pre.len() - 1
        }),
    };
    let mut calls = Vec::with_capacity(windows.calls.len());
    for w in windows.calls {
        let arg_types = w.args.iter().map(ExprNode::return_type).collect();
        let args = w.args.into_iter().map(&mut column).collect();
        let partition_by = w.partition_by.into_iter().map(&mut column).collect();
        let order_by = w
            .order_by
            .into_iter()
            .map(|(e, o)| (column(e), o))
            .collect();
        calls.push(WindowCall {
            func: WindowFuncCall {
                kind: w.kind,
                args,
                arg_types,
                ret: w.ret,
                frame: w.frame,
                offset: w.offset,
            },
            partition_by,
            order_by,
        });
    }
    let added = pre.len() - width;
    let input = if added > 0 { plan.project(pre) } else { plan };
    let plan = LogicalPlan::OverWindow {
        calls,
        input: Box::new(input),
    };
    let exprs = exprs
        .into_iter()
        .map(|e| shift_refs(e, width, added))
        .collect();
    (plan, exprs)
}

/// `e` with its references to columns from `from` on moved `by` columns right.
fn shift_refs(e: ExprNode, from: usize, by: usize) -> ExprNode {
    match e {
        ExprNode::InputRef { index, ty } if index >= from => ExprNode::InputRef {
            index: index + by,
            ty,
        },
        ExprNode::Call { func, args, ret } => ExprNode::Call {
            func,
            args: args.into_iter().map(|a| shift_refs(a, from, by)).collect(),
            ret,
        },
        other => other,
    }
}

/// The name of an unaliased select item, as PostgreSQL gives it.
fn output_name(e: &Ast) -> String {
    match e {
        Ast::Identifier(id) => ident(id),
        Ast::CompoundIdentifier(p) => p.last().map(ident).unwrap_or_default(),
        Ast::Nested(inner) => output_name(inner),
        Ast::Cast { expr, .. } => match expr.as_ref() {
            Ast::Value(_) => "?column?".into(),
            inner => output_name(inner),
        },
        Ast::Function(f) => f
            .name
            .0
            .last()
            .map(|p| p.to_string().to_lowercase())
            .unwrap_or_default(),
        Ast::Case { .. } => "case".into(),
        _ => "?column?".into(),
    }
}

/// Whether `e` calls an aggregate (outside subqueries).
pub(super) fn has_agg(e: &Ast) -> bool {
    match e {
        Ast::Function(f) => {
            let name = f
                .name
                .0
                .last()
                .map(|p| p.to_string().to_lowercase())
                .unwrap_or_default();
            if f.over.is_none() && AggKind::from_function_name(&name).is_some() {
                return true;
            }
            match &f.args {
                ast::FunctionArguments::List(l) => l.args.iter().any(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => has_agg(x),
                    _ => false,
                }),
                _ => false,
            }
        }
        Ast::BinaryOp { left, right, .. } => has_agg(left) || has_agg(right),
        Ast::UnaryOp { expr, .. }
        | Ast::Nested(expr)
        | Ast::Cast { expr, .. }
        | Ast::IsNull(expr)
        | Ast::IsNotNull(expr)
        | Ast::IsTrue(expr)
        | Ast::IsFalse(expr)
        | Ast::IsNotTrue(expr)
        | Ast::IsNotFalse(expr) => has_agg(expr),
        Ast::Between {
            expr, low, high, ..
        } => has_agg(expr) || has_agg(low) || has_agg(high),
        Ast::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            operand.as_deref().is_some_and(has_agg)
                || conditions
                    .iter()
                    .any(|w| has_agg(&w.condition) || has_agg(&w.result))
                || else_result.as_deref().is_some_and(has_agg)
        }
        Ast::In { expr, target, .. } => {
            has_agg(expr) || matches!(target, ast::InTarget::List(l) if l.iter().any(has_agg))
        }
        _ => false,
    }
}

/// Whether a select aggregates: a GROUP BY, a HAVING, or an aggregate call in its select list or ORDER BY.
fn is_grouped(s: &ast::Select, group_by: &[Ast], order_exprs: &[&ast::OrderByExpr]) -> bool {
    !group_by.is_empty()
        || s.having.is_some()
        || s.projection.iter().any(|i| match i {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => has_agg(e),
            _ => false,
        })
        || order_exprs.iter().any(|o| has_agg(&o.expr))
}

/// `SELECT DISTINCT` (a grouping by every visible column, of which there are `width`) or `DISTINCT ON
/// (keys)` (the first row per key in `order`) over the projected `plan`.
fn distinct_plan(
    plan: LogicalPlan,
    distinct: Option<&Distinct>,
    distinct_on: Option<Vec<usize>>,
    width: usize,
    order: &[(usize, OrderType)],
) -> Result<LogicalPlan, SqlError> {
    Ok(match (distinct, distinct_on) {
        (Some(Distinct::Distinct), _) => {
            if plan.schema().len() > width {
                return Err(SqlError::Invalid(
                    "for SELECT DISTINCT, ORDER BY expressions must appear in select list".into(),
                ));
            }
            LogicalPlan::Agg {
                group_key: (0..width).collect(),
                calls: Vec::new(),
                input: Box::new(plan),
            }
        }
        (_, Some(keys)) => LogicalPlan::Dedup {
            keys,
            input: Box::new(LogicalPlan::TopN {
                order: order.to_vec(),
                limit: None,
                offset: 0,
                with_ties: false,
                input: Box::new(plan),
            }),
        },
        _ => plan,
    })
}

/// The columns `*` (or `qualifier.*`) stands for, by position in `scope`, with their names: the visible
/// ones (of that relation), but those in `except`.
fn wildcard_columns(
    scope: &Scope,
    qualifier: Option<&str>,
    except: &[usize],
) -> Result<Vec<(usize, String)>, SqlError> {
    let mut any = false;
    let mut out = Vec::new();
    for (i, c) in scope.columns.iter().enumerate() {
        let take = match qualifier {
            None => !c.hidden && !c.qualified_only,
            Some(q) => !c.hidden && c.qualifier.as_deref() == Some(q),
        };
        any |= take;
        if take && !except.contains(&i) {
            out.push((i, c.name.clone()));
        }
    }
    match qualifier {
        Some(q) if !any => Err(SqlError::Invalid(format!(
            "missing FROM-clause entry for table \"{q}\""
        ))),
        _ => Ok(out),
    }
}
