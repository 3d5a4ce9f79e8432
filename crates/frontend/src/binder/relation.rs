//! `FROM`: tables, views (expanded), CTE references, subqueries, table functions and joins.

use epochlab_common::DataType;
use sqlparser::ast::{
    self, FunctionArg, FunctionArgExpr, JoinConstraint, JoinOperator, ObjectNamePart, TableFactor,
    TableWithJoins,
};

use super::expr::coerce;
use super::query::rename_columns;
use super::{
    Binder, BoundQuery, MAX_VIEW_DEPTH, RelationRef, Scope, ScopeColumn, ident, unsupported,
};
use crate::error::SqlError;
use crate::planner::{JoinType, LogicalPlan, ProjectSetSelectItem};
use crate::scalar::cast::CastContext;
use crate::scalar::sig::build_func;
use crate::scalar::{ExprNode, ExprType, TableFunctionType, table_function};

impl Binder<'_> {
    /// The `FROM` list: its items cross-joined (one empty row when there is none).
    pub(super) fn bind_from(
        &mut self,
        from: &[TableWithJoins],
    ) -> Result<(LogicalPlan, Scope), SqlError> {
        let mut acc: Option<(LogicalPlan, Scope)> = None;
        for t in from {
            let right = self.bind_table_with_joins(t)?;
            acc = Some(match acc {
                None => right,
                Some(left) => join(left, right, JoinType::Inner, None),
            });
        }
        Ok(acc.unwrap_or_else(|| {
            (
                LogicalPlan::Values {
                    rows: vec![Vec::new()],
                    types: Vec::new(),
                },
                Scope::default(),
            )
        }))
    }

    fn bind_table_with_joins(
        &mut self,
        t: &TableWithJoins,
    ) -> Result<(LogicalPlan, Scope), SqlError> {
        let mut left = self.bind_table_factor(&t.relation)?;
        for j in &t.joins {
            if let Some(lateral) = self.bind_lateral_table_function(&left, j)? {
                left = lateral;
                continue;
            }
            let right = self.bind_table_factor(&j.relation)?;
            let (kind, constraint) = match &j.join_operator {
                JoinOperator::Join(c) | JoinOperator::Inner(c) => (JoinType::Inner, c),
                JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (JoinType::LeftOuter, c),
                JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (JoinType::RightOuter, c),
                JoinOperator::FullOuter(c) => (JoinType::FullOuter, c),
                JoinOperator::CrossJoin(c) => (JoinType::Inner, c),
                other => {
                    return Err(unsupported(
                        format!("join {other:?}")
                            .chars()
                            .take(40)
                            .collect::<String>(),
                    ));
                }
            };
            left = self.bind_join(left, right, kind, constraint)?;
        }
        Ok(left)
    }

    fn bind_join(
        &mut self,
        left: (LogicalPlan, Scope),
        right: (LogicalPlan, Scope),
        kind: JoinType,
        constraint: &JoinConstraint,
    ) -> Result<(LogicalPlan, Scope), SqlError> {
        let using: Vec<String> = match constraint {
            JoinConstraint::None => return Ok(join(left, right, kind, None)),
            JoinConstraint::On(e) => {
                let (plan, scope) = join(left, right, kind, None);
                let on = self.bind_expr(e, &scope, None)?;
                let on = coerce(on, DataType::Boolean, CastContext::Implicit)?;
                let LogicalPlan::Join {
                    kind, left, right, ..
                } = plan
                else {
                    unreachable!("join() builds a join")
                };
                let plan = LogicalPlan::Join {
                    kind,
                    on: Some(on),
                    left,
                    right,
                };
                return Ok((plan, scope));
            }
            JoinConstraint::Using(cols) => cols
                .iter()
                .map(|c| match c.0.as_slice() {
                    [ObjectNamePart::Identifier(id)] => Ok(ident(id)),
                    _ => Err(unsupported(format!("USING {c}"))),
                })
                .collect::<Result<_, _>>()?,
            JoinConstraint::Natural => {
                let visible = |s: &Scope| -> Vec<String> {
                    s.columns
                        .iter()
                        .filter(|c| !c.hidden && !c.qualified_only)
                        .map(|c| c.name.clone())
                        .collect()
                };
                let r = visible(&right.1);
                visible(&left.1)
                    .into_iter()
                    .filter(|n| r.contains(n))
                    .collect()
            }
            JoinConstraint::UsingAlias(..) => return Err(unsupported("USING ... AS")),
        };
        if using.is_empty() {
            return Ok(join(left, right, kind, None));
        }
        self.bind_using(left, right, kind, &using)
    }

    /// `left CROSS JOIN f(args over left) [WITH ORDINALITY] [AS a(cols)]`: a table function of the left
    /// rows' columns, as RisingWave plans it (a `ProjectSet` over the left side): the left columns, the
    /// function's column, then with ordinality its row number (from 1). `None` when the join is not that.
    fn bind_lateral_table_function(
        &mut self,
        left: &(LogicalPlan, Scope),
        j: &ast::Join,
    ) -> Result<Option<(LogicalPlan, Scope)>, SqlError> {
        let Some((func, arg_exprs, alias, with_ordinality)) = table_function_call(&j.relation)
        else {
            return Ok(None);
        };
        let cross = matches!(
            &j.join_operator,
            JoinOperator::CrossJoin(JoinConstraint::None)
                | JoinOperator::Join(JoinConstraint::None)
                | JoinOperator::Inner(JoinConstraint::None)
        );
        let Some(func) = func.filter(|f| cross && *f != TableFunctionType::PgExpandArray) else {
            return Ok(None);
        };
        let mut bound = Vec::with_capacity(arg_exprs.len());
        for e in arg_exprs {
            match self.bind_expr(e, &left.1, None) {
                Ok(b) => bound.push(b),
                Err(_) => return Ok(None),
            }
        }
        if bound.iter().all(|b| b.input_refs().is_empty()) {
            return Ok(None);
        }
        super::expr::unify_literals(&mut bound)?;
        let (bound, ret) = table_function::build(func, bound)?;
        lateral_project_set(
            left.clone(),
            func,
            bound,
            ret,
            alias.as_ref(),
            with_ordinality,
        )
        .map(Some)
    }

    /// `USING (cols)` / `NATURAL`: equal columns, shown once (PostgreSQL's order: the join columns first).
    fn bind_using(
        &mut self,
        left: (LogicalPlan, Scope),
        right: (LogicalPlan, Scope),
        kind: JoinType,
        using: &[String],
    ) -> Result<(LogicalPlan, Scope), SqlError> {
        let nl = left.1.columns.len();
        let mut pairs = Vec::new();
        for name in using {
            let l = self.column_ref(&left.1, None, name)?;
            let r = self.column_ref(&right.1, None, name)?;
            let (ExprNode::InputRef { index: li, .. }, ExprNode::InputRef { index: ri, .. }) =
                (&l, &r)
            else {
                unreachable!("a column reference is an input ref")
            };
            pairs.push((*li, *ri, name.clone()));
        }
        let (plan, scope) = join(left, right, kind, None);
        let mut on: Option<ExprNode> = None;
        let col = |scope: &Scope, i: usize| ExprNode::InputRef {
            index: i,
            ty: scope.columns[i].ty.clone(),
        };
        let mut merged = Vec::new();
        for (li, ri, name) in &pairs {
            let (l, r) = (col(&scope, *li), col(&scope, nl + ri));
            let eq = super::expr::call(ExprType::Equal, vec![l.clone(), r.clone()])?;
            on = Some(match on {
                None => eq,
                Some(prev) => build_func(ExprType::And, vec![prev, eq])?,
            });
            let m = match kind {
                JoinType::RightOuter => r,
                JoinType::FullOuter => super::expr::call(ExprType::Coalesce, vec![l, r])?,
                _ => l,
            };
            merged.push((m, name.clone()));
        }
        let LogicalPlan::Join {
            kind, left, right, ..
        } = plan
        else {
            unreachable!("join() builds a join")
        };
        let plan = LogicalPlan::Join {
            kind,
            on,
            left,
            right,
        };
        Ok(using_projection(plan, &scope, &merged, &pairs, nl))
    }

    fn bind_table_factor(&mut self, t: &TableFactor) -> Result<(LogicalPlan, Scope), SqlError> {
        if let Some((Some(TableFunctionType::Unnest), args, alias, with_ordinality)) =
            table_function_call(t)
        {
            return self.bind_unnest(&args, alias.as_ref(), with_ordinality);
        }
        match t {
            TableFactor::Table {
                name,
                alias,
                args,
                version,
                ..
            } => {
                let as_of_proctime = as_of_proctime(version.as_ref())?;
                let path: Vec<String> = name
                    .0
                    .iter()
                    .map(|p| match p {
                        ObjectNamePart::Identifier(id) => Ok(ident(id)),
                        other => Err(unsupported(format!("name {other}"))),
                    })
                    .collect::<Result<_, _>>()?;
                let (plan, mut names, default_qualifier) = match args {
                    Some(args) if matches!(path.as_slice(), [n] if n == "tumble" || n == "hop") => {
                        self.bind_window_table_function(&path[0], &args.args)?
                    }
                    Some(args) => self.bind_table_function(&path, &args.args)?,
                    None => self.bind_named(&path, as_of_proctime)?,
                };
                if as_of_proctime && !matches!(plan, LogicalPlan::Scan { .. }) {
                    return Err(SqlError::NotSupported(
                        "FOR SYSTEM_TIME AS OF PROCTIME() is only supported on a table".into(),
                    ));
                }
                // A function of one column aliased without column names: the column takes the alias's name
                // (PostgreSQL's and RisingWave's `FROM generate_series(1, 3) g`, read as `g`).
                if let (Some(_), Some(a), [only]) = (args, alias.as_ref(), names.as_mut_slice())
                    && a.columns.is_empty()
                    && !matches!(path.as_slice(), [n] if n == "tumble" || n == "hop")
                {
                    only.name = ident(&a.name);
                }
                Ok(with_alias(plan, names, default_qualifier, alias.as_ref())?)
            }
            TableFactor::Derived {
                lateral,
                subquery,
                alias,
                ..
            } => {
                if *lateral {
                    return Err(unsupported("LATERAL"));
                }
                let q = self.bind_query_inner(subquery)?;
                let defs = visible_defs(&q);
                with_alias(q.plan, defs, None, alias.as_ref())
            }
            TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                if alias.is_some() {
                    return Err(unsupported("alias of a parenthesized join"));
                }
                self.bind_table_with_joins(table_with_joins)
            }
            other => Err(unsupported(format!("FROM {other}"))),
        }
    }

    /// A named relation: a CTE, a table or materialized view, a view, a system table.
    fn bind_named(
        &mut self,
        path: &[String],
        as_of_proctime: bool,
    ) -> Result<(LogicalPlan, Vec<ScopeColumnDef>, Option<String>), SqlError> {
        let last = path.last().cloned().unwrap_or_default();
        if path.len() == 1
            && let Some(cte) = self.ctes.iter().rev().find(|c| c.name == last)
        {
            let q = cte.query.clone();
            return Ok((q.plan.clone(), visible_defs(&q), Some(last)));
        }
        let rel = self.catalog.resolve_relation(&path.join("."))?;
        match rel {
            RelationRef::Table {
                catalog_id,
                table_id,
                columns,
                pk,
                filter,
            } => {
                let defs = columns
                    .iter()
                    .map(|c| ScopeColumnDef {
                        name: c.name.clone(),
                        ty: c.ty.clone(),
                        hidden: c.hidden,
                    })
                    .collect();
                self.depends_on.extend(catalog_id);
                let plan = LogicalPlan::Scan {
                    table: last.clone(),
                    table_id,
                    exprs: columns.iter().map(|c| c.expr.clone()).collect(),
                    types: columns.iter().map(|c| c.ty.clone()).collect(),
                    pk,
                    filter,
                    as_of_proctime,
                };
                Ok((plan, defs, Some(last)))
            }
            RelationRef::View {
                catalog_id,
                query,
                columns,
            } => {
                self.depends_on.extend(catalog_id);
                self.bind_view(last, &query, columns)
            }
            RelationRef::Rows { columns, rows } => {
                let types: Vec<DataType> = columns.iter().map(|(_, t)| t.clone()).collect();
                let defs = columns
                    .into_iter()
                    .map(|(name, ty)| ScopeColumnDef {
                        name,
                        ty,
                        hidden: false,
                    })
                    .collect();
                Ok((LogicalPlan::Rows { rows, types }, defs, Some(last)))
            }
        }
    }

    /// A view: its query bound (in a binder of its own, one view deeper), its columns renamed as the view
    /// names them.
    fn bind_view(
        &mut self,
        last: String,
        query: &str,
        columns: Vec<String>,
    ) -> Result<(LogicalPlan, Vec<ScopeColumnDef>, Option<String>), SqlError> {
        if self.view_depth >= MAX_VIEW_DEPTH {
            return Err(SqlError::Invalid(format!(
                "view {last} expands to more than {MAX_VIEW_DEPTH} nested views"
            )));
        }
        let q = match crate::frontend::parse_query(query)? {
            Some(q) => q,
            None => return Err(SqlError::Invalid(format!("view {last} has no query"))),
        };
        let mut inner = Binder::new(self.catalog, self.streaming);
        inner.view_depth = self.view_depth + 1;
        let mut bound = inner.bind_query(&q)?;
        for (n, c) in bound.names.iter_mut().zip(columns) {
            *n = c;
        }
        Ok((bound.plan.clone(), visible_defs(&bound), Some(last)))
    }

    /// `tumble(t, col, size)` / `hop(t, col, slide, size)` (RisingWave's window table functions): `t`'s
    /// columns, then `window_start` and `window_end`.
    fn bind_window_table_function(
        &mut self,
        name: &str,
        args: &[FunctionArg],
    ) -> Result<(LogicalPlan, Vec<ScopeColumnDef>, Option<String>), SqlError> {
        let exprs: Vec<&ast::Expr> = args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e),
                other => Err(unsupported(format!("argument {other} of {name}"))),
            })
            .collect::<Result<_, _>>()?;
        let want = if name == "tumble" { 3 } else { 4 };
        if exprs.len() != want {
            return Err(SqlError::Invalid(format!(
                "{name} takes {want} arguments, got {}",
                exprs.len()
            )));
        }
        let path: Vec<String> = match exprs[0] {
            ast::Expr::Identifier(id) => vec![ident(id)],
            ast::Expr::CompoundIdentifier(p) => p.iter().map(ident).collect(),
            other => return Err(unsupported(format!("{name} over {other}"))),
        };
        let (input, defs, qualifier) = self.bind_named(&path, false)?;
        let (input, scope) = with_alias(input, defs, qualifier.clone(), None)?;
        let time = self.bind_expr(exprs[1], &scope, None)?;
        let ExprNode::InputRef {
            index: time_col,
            ty,
        } = time
        else {
            return Err(unsupported(format!("{name} over an expression")));
        };
        let mut defs: Vec<ScopeColumnDef> = scope
            .columns
            .iter()
            .map(|c| ScopeColumnDef {
                name: c.name.clone(),
                ty: c.ty.clone(),
                hidden: c.hidden,
            })
            .collect();
        for n in ["window_start", "window_end"] {
            defs.push(ScopeColumnDef {
                name: n.into(),
                ty: ty.clone(),
                hidden: false,
            });
        }
        let plan = self.bind_window(name, input, time_col, ty, &exprs[2..])?;
        Ok((plan, defs, qualifier))
    }

    /// `tumble`'s window over `input` (a projection adding `window_start`, `window_end`: the start and
    /// start + size), or `hop`'s (a `HopWindow`); `sizes` are the interval arguments after the time column
    /// `time_col` (of type `ty`).
    fn bind_window(
        &mut self,
        name: &str,
        input: LogicalPlan,
        time_col: usize,
        ty: DataType,
        sizes: &[&ast::Expr],
    ) -> Result<LogicalPlan, SqlError> {
        let interval = |b: &mut Self, e: &ast::Expr| -> Result<ExprNode, SqlError> {
            let e = b.bind_expr(e, &Scope::default(), None)?;
            coerce(e, DataType::Interval, CastContext::Explicit)
        };
        Ok(if name == "tumble" {
            let size = interval(self, sizes[0])?;
            let col = ExprNode::InputRef {
                index: time_col,
                ty: ty.clone(),
            };
            let start = build_func(ExprType::TumbleStart, vec![col, size.clone()])?;
            let end = build_func(ExprType::Add, vec![start.clone(), size])?;
            let mut out = input.input_refs();
            out.push(start);
            out.push(end);
            input.project(out)
        } else {
            let slide = interval(self, sizes[0])?;
            let size = interval(self, sizes[1])?;
            LogicalPlan::HopWindow {
                time_col,
                slide,
                size,
                input: Box::new(input),
            }
        })
    }

    /// `FROM f(args)`: a table function, or a scalar function as a one-row table.
    /// `FROM unnest(array, ..)`: the function's rows over one empty row (RisingWave's table function
    /// relation; a ProjectSet here, as the lateral `CROSS JOIN unnest(t.col)`).
    fn bind_unnest(
        &mut self,
        args: &[&ast::Expr],
        alias: Option<&ast::TableAlias>,
        with_ordinality: bool,
    ) -> Result<(LogicalPlan, Scope), SqlError> {
        let mut bound = Vec::with_capacity(args.len());
        for e in args {
            bound.push(self.bind_expr(e, &Scope::default(), None)?);
        }
        super::expr::unify_literals(&mut bound)?;
        let (bound, ret) = table_function::build(TableFunctionType::Unnest, bound)?;
        let one_row = LogicalPlan::Values {
            rows: vec![Vec::new()],
            types: Vec::new(),
        };
        let (plan, mut scope) = lateral_project_set(
            (one_row, Scope::default()),
            TableFunctionType::Unnest,
            bound,
            ret,
            alias,
            with_ordinality,
        )?;
        // A function of one column aliased without column names: the column takes the alias's name.
        if let (Some(a), [only]) = (alias, scope.columns.as_mut_slice())
            && a.columns.is_empty()
        {
            only.name = ident(&a.name);
        }
        Ok((plan, scope))
    }

    fn bind_table_function(
        &mut self,
        path: &[String],
        args: &[FunctionArg],
    ) -> Result<(LogicalPlan, Vec<ScopeColumnDef>, Option<String>), SqlError> {
        let name = match path {
            [name] => name,
            [schema, name] if schema == "information_schema" && name == "_pg_expandarray" => name,
            _ => return Err(unsupported(format!("table function {}", path.join(".")))),
        };
        let scope = Scope::default();
        let mut bound = Vec::with_capacity(args.len());
        for a in args {
            let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = a else {
                return Err(unsupported(format!("argument {a} of {name}")));
            };
            bound.push(self.bind_expr(e, &scope, None)?);
        }
        let def = |ty| {
            vec![ScopeColumnDef {
                name: name.clone(),
                ty,
                hidden: false,
            }]
        };
        if name == "_pg_expandarray" {
            return expand_array(&bound);
        }
        if let Some(func) = TableFunctionType::from_function_name(name) {
            if func == TableFunctionType::Unnest {
                return Err(unsupported("table function unnest"));
            }
            super::expr::unify_literals(&mut bound)?;
            let types: Vec<DataType> = bound.iter().map(ExprNode::return_type).collect();
            let ty = table_function::return_type(func, &types)?;
            let plan = LogicalPlan::TableFunction {
                func,
                args: bound,
                ty: ty.clone(),
            };
            return Ok((plan, def(ty), Some(name.clone())));
        }
        let func = ExprType::from_function_name(name)
            .ok_or_else(|| unsupported(format!("table function {name}")))?;
        let e = super::expr::call(func, bound)?;
        let ty = e.return_type();
        let plan = LogicalPlan::Values {
            rows: vec![vec![e]],
            types: vec![ty.clone()],
        };
        Ok((plan, def(ty), Some(name.clone())))
    }
}

/// A column of a relation before it gets its qualifier.
pub(super) struct ScopeColumnDef {
    name: String,
    ty: DataType,
    hidden: bool,
}

fn visible_defs(q: &BoundQuery) -> Vec<ScopeColumnDef> {
    q.names
        .iter()
        .zip(q.types())
        .map(|(n, ty)| ScopeColumnDef {
            name: n.clone(),
            ty,
            hidden: false,
        })
        .collect()
}

/// The `ProjectSet` of a lateral table function `func(args)` over `left`'s rows: the left columns, the
/// function's column (of type `ret`), then with ordinality its row number; `alias` names the function's
/// columns.
fn lateral_project_set(
    left: (LogicalPlan, Scope),
    func: TableFunctionType,
    args: Vec<ExprNode>,
    ret: DataType,
    alias: Option<&ast::TableAlias>,
    with_ordinality: bool,
) -> Result<(LogicalPlan, Scope), SqlError> {
    let (plan, scope) = left;
    let lw = scope.columns.len();
    let select_list = plan
        .input_refs()
        .into_iter()
        .map(ProjectSetSelectItem::Expr)
        .chain([ProjectSetSelectItem::TableFunction {
            func,
            args,
            ret: ret.clone(),
        }])
        .collect();
    let set = LogicalPlan::ProjectSet {
        select_list,
        input: Box::new(plan),
    };
    let mut exprs: Vec<ExprNode> = set.input_refs().into_iter().skip(1).collect();
    let fname = format!("{func:?}").to_lowercase();
    let mut defs = vec![ScopeColumnDef {
        name: fname.clone(),
        ty: ret,
        hidden: false,
    }];
    if with_ordinality {
        exprs.push(ordinality()?);
        defs.push(ScopeColumnDef {
            name: "ordinality".into(),
            ty: DataType::Int64,
            hidden: false,
        });
    }
    debug_assert_eq!(exprs.len(), lw + defs.len());
    let (_, right_scope) = with_alias(
        LogicalPlan::Values {
            rows: Vec::new(),
            types: Vec::new(),
        },
        defs,
        Some(fname),
        alias,
    )?;
    let mut scope = scope;
    scope.columns.extend(right_scope.columns);
    Ok((set.project(exprs), scope))
}

/// Above a `USING` join `plan` (its columns `scope`, the left side's first `nl`): the `merged` join
/// columns, then every column of both sides, the `pairs`' (left, right) ones only by a qualified name.
fn using_projection(
    plan: LogicalPlan,
    scope: &Scope,
    merged: &[(ExprNode, String)],
    pairs: &[(usize, usize, String)],
    nl: usize,
) -> (LogicalPlan, Scope) {
    let col = |scope: &Scope, i: usize| ExprNode::InputRef {
        index: i,
        ty: scope.columns[i].ty.clone(),
    };
    let mut exprs: Vec<ExprNode> = merged.iter().map(|(e, _)| e.clone()).collect();
    let mut out = Scope::default();
    for (e, name) in merged {
        out.columns.push(ScopeColumn {
            qualifier: None,
            name: name.clone(),
            ty: e.return_type(),
            hidden: false,
            qualified_only: false,
        });
    }
    for (i, c) in scope.columns.iter().enumerate() {
        let is_using = pairs.iter().any(|(li, ri, _)| i == *li || i == nl + ri);
        exprs.push(col(scope, i));
        out.columns.push(ScopeColumn {
            qualified_only: c.qualified_only || is_using,
            ..c.clone()
        });
    }
    (plan.project(exprs), out)
}

/// A relation's scope: its alias (or its own name) qualifies its columns; `AS t(a, b)` renames them.
/// Whether a table is read `FOR SYSTEM_TIME AS OF PROCTIME()`; any other version of a table (time travel to
/// a timestamp, a version number) is refused.
fn as_of_proctime(version: Option<&sqlparser::ast::TableVersion>) -> Result<bool, SqlError> {
    use sqlparser::ast::{Expr, FunctionArguments, TableVersion};
    match version {
        None => Ok(false),
        Some(TableVersion::ForSystemTimeAsOf(Expr::Function(f)))
            if f.name.to_string().eq_ignore_ascii_case("proctime")
                && match &f.args {
                    FunctionArguments::None => true,
                    FunctionArguments::List(l) => l.args.is_empty(),
                    FunctionArguments::Subquery(_) => false,
                } =>
        {
            Ok(true)
        }
        Some(v) => Err(unsupported(format!("time travel ({v})"))),
    }
}

fn with_alias(
    plan: LogicalPlan,
    defs: Vec<ScopeColumnDef>,
    default_qualifier: Option<String>,
    alias: Option<&ast::TableAlias>,
) -> Result<(LogicalPlan, Scope), SqlError> {
    let mut names: Vec<String> = defs.iter().map(|d| d.name.clone()).collect();
    let qualifier = match alias {
        Some(a) => {
            rename_columns(&mut names, &a.columns)?;
            Some(ident(&a.name))
        }
        None => default_qualifier,
    };
    let columns = defs
        .into_iter()
        .zip(names)
        .map(|(d, name)| ScopeColumn {
            qualifier: qualifier.clone(),
            name,
            ty: d.ty,
            hidden: d.hidden,
            qualified_only: false,
        })
        .collect();
    Ok((plan, Scope { columns }))
}

/// `left JOIN right [ON on]`, the scope the two side by side.
fn join(
    left: (LogicalPlan, Scope),
    right: (LogicalPlan, Scope),
    kind: JoinType,
    on: Option<ExprNode>,
) -> (LogicalPlan, Scope) {
    let mut scope = left.1;
    scope.columns.extend(right.1.columns);
    let plan = LogicalPlan::Join {
        kind,
        on,
        left: Box::new(left.0),
        right: Box::new(right.0),
    };
    (plan, scope)
}

/// `information_schema._pg_expandarray(array)` (PostgreSQL's, which RisingWave has): a row `(x, n)` per
/// element, `n` from 1. The argument is a constant here.
fn expand_array(
    args: &[ExprNode],
) -> Result<(LogicalPlan, Vec<ScopeColumnDef>, Option<String>), SqlError> {
    let [arg] = args else {
        return Err(SqlError::Invalid("_pg_expandarray takes one array".into()));
    };
    let elem = match arg.return_type() {
        DataType::List(t) => *t,
        other => return Err(SqlError::Invalid(format!("_pg_expandarray over {other}"))),
    };
    let value = crate::scalar::eval(arg, &epochlab_common::OwnedRow::empty())?;
    let rows = match value {
        Some(epochlab_common::ScalarImpl::List(l)) => l
            .values()
            .iter()
            .enumerate()
            .map(|(i, v)| {
                epochlab_common::OwnedRow::new(vec![
                    v.clone(),
                    Some(epochlab_common::ScalarImpl::Int32(i as i32 + 1)),
                ])
            })
            .collect(),
        _ => Vec::new(),
    };
    let defs = vec![
        ScopeColumnDef {
            name: "x".into(),
            ty: elem.clone(),
            hidden: false,
        },
        ScopeColumnDef {
            name: "n".into(),
            ty: DataType::Int32,
            hidden: false,
        },
    ];
    let plan = LogicalPlan::Rows {
        rows,
        types: vec![elem, DataType::Int32],
    };
    Ok((plan, defs, Some("_pg_expandarray".into())))
}

/// A table function call in a FROM item: the function (`None` when the name is not one), its arguments,
/// the alias and WITH ORDINALITY. `None` when the item is not a call or an argument is not a plain expression.
#[allow(clippy::type_complexity)]
fn table_function_call(
    relation: &TableFactor,
) -> Option<(
    Option<TableFunctionType>,
    Vec<&ast::Expr>,
    &Option<ast::TableAlias>,
    bool,
)> {
    match relation {
        TableFactor::Table {
            name,
            alias,
            args: Some(args),
            with_ordinality,
            ..
        } => {
            let func = match name.0.as_slice() {
                [ObjectNamePart::Identifier(id)] => {
                    TableFunctionType::from_function_name(&ident(id))
                }
                _ => None,
            };
            let mut exprs = Vec::with_capacity(args.args.len());
            for a in &args.args {
                let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = a else {
                    return None;
                };
                exprs.push(e);
            }
            Some((func, exprs, alias, *with_ordinality))
        }
        TableFactor::UNNEST {
            alias,
            array_exprs,
            with_offset: false,
            with_ordinality,
            ..
        } => Some((
            Some(TableFunctionType::Unnest),
            array_exprs.iter().collect(),
            alias,
            *with_ordinality,
        )),
        _ => None,
    }
}

/// WITH ORDINALITY's column over a `ProjectSet`: its projected row id (from 0) plus one.
fn ordinality() -> Result<ExprNode, SqlError> {
    let prid = ExprNode::InputRef {
        index: 0,
        ty: DataType::Int64,
    };
    let one = ExprNode::Literal {
        value: Some(epochlab_common::ScalarImpl::Int64(1)),
        ty: DataType::Int64,
    };
    Ok(build_func(ExprType::Add, vec![prid, one])?)
}
