//! DML through the front end: `INSERT`, `UPDATE` and `DELETE` on a table, sent to the cluster's DML path in
//! batches, with `RETURNING`.

use epochlab_barrier::SchedulerStatus;
use epochlab_common::{DataType, Datum, Op, OwnedRow, ScalarImpl, TableId};
use epochlab_meta::Relation;
use sqlparser::ast::{self, Expr as Ast, Query, SetExpr, TableFactor, TableObject};

use super::{DML_BATCH, Def, Kind, Output, ROW_ID, Session, object_name, rows_output};
use crate::binder::{Binder, Scope, ScopeColumn};
use crate::error::{CatalogProblem, SqlError};
use crate::expr::Column;
use crate::scalar::ExprNode;
use crate::scalar::cast::CastContext;

impl Session {
    /// A table DML may write: it exists, is a table, and the cluster is ready for DML.
    pub(super) fn writable(&self, name: &str) -> Result<(Relation, Def), SqlError> {
        let Some((rel, def)) = self.engine.lookup(name) else {
            return Err(SqlError::catalog(
                CatalogProblem::NotFound,
                format!("table not found: {name}"),
            ));
        };
        if def.kind != Kind::Table {
            return Err(SqlError::Invalid(format!(
                "cannot write to {} {name}",
                def.kind.as_str()
            )));
        }
        if let SchedulerStatus::Blocked(why) = self.cluster().meta().scheduler().status() {
            return Err(SqlError::NoReader {
                table: name.to_string(),
                why: format!("the cluster is recovering ({why})"),
            });
        }
        Ok((rel, def))
    }

    /// Send `ops` to the table, in batches; an update's two halves stay in one batch.
    pub(super) async fn send(
        &self,
        name: &str,
        table: TableId,
        ops: Vec<(Op, OwnedRow)>,
    ) -> Result<(), SqlError> {
        self.check_writable()?;
        let mut batch = Vec::with_capacity(DML_BATCH.min(ops.len()));
        let mut ops = ops.into_iter().peekable();
        while let Some((op, row)) = ops.next() {
            let pair = op == Op::UpdateDelete;
            batch.push((op, row));
            if pair && let Some(next) = ops.next() {
                batch.push(next);
            }
            if batch.len() >= DML_BATCH || ops.peek().is_none() {
                let chunk = std::mem::take(&mut batch);
                self.check_connected()?;
                self.cluster()
                    .dml(table, chunk)
                    .await
                    .map_err(|e| SqlError::NoReader {
                        table: name.to_string(),
                        why: e.to_string(),
                    })?;
            }
        }
        if self.config.implicit_flush() {
            self.flush().await?;
        }
        Ok(())
    }

    pub(crate) async fn insert(&self, ins: &ast::Insert) -> Result<Output, SqlError> {
        if ins.returning.is_some() || ins.on.is_some() {
            return Err(SqlError::Unsupported(
                "INSERT ... RETURNING / ON CONFLICT".into(),
            ));
        }
        let name = match &ins.table {
            TableObject::TableName(n) => self.table_job_name(n, true)?,
            other => return Err(SqlError::Unsupported(format!("INSERT INTO {other}"))),
        };
        let (rel, def) = self.writable(&name)?;
        // Which stored column each value goes to.
        let targets: Vec<Column> = if ins.columns.is_empty() {
            let written = def.columns.iter().filter(|c| !def.is_generated(c.src));
            written.cloned().collect()
        } else {
            ins.columns
                .iter()
                .map(|c| {
                    let n = object_name(c)?;
                    def.columns
                        .iter()
                        .find(|x| x.name == n)
                        .cloned()
                        .ok_or_else(|| SqlError::Invalid(format!("column \"{n}\" does not exist")))
                })
                .collect::<Result<_, _>>()?
        };
        if let Some(c) = targets.iter().find(|c| def.is_generated(c.src)) {
            return Err(SqlError::Bind(format!(
                "cannot insert a non-DEFAULT value into column \"{0}\".  Column \"{0}\" is a generated column.",
                c.name
            )));
        }
        let Some(source) = &ins.source else {
            return Err(SqlError::Unsupported(
                "INSERT without VALUES or SELECT".into(),
            ));
        };
        let values = self.insert_values(source, &targets, !ins.columns.is_empty())?;
        let first_id = if def.row_id {
            self.engine.row_ids(rel.id, values.len())
        } else {
            0
        };
        let mut ops = Vec::with_capacity(values.len());
        let ctx = self.dml_eval_context();
        for (i, v) in values.into_iter().enumerate() {
            let mut row: Vec<Datum> = vec![None; def.stored.len()];
            for (value, col) in v.into_iter().zip(&targets) {
                row[col.src] = value;
            }
            if let Some(at) = def.row_id_index() {
                row[at] = Some(ScalarImpl::Int64(first_id + i as i64));
            }
            ops.push((Op::Insert, generate(&def, row, &ctx)?));
        }
        let n = ops.len() as u64;
        self.send(&name, rel.id, ops).await?;
        Ok(Output::Done(n))
    }

    /// The rows an `INSERT` writes, each value cast (assignment casts) to its target column's type.
    pub(super) fn insert_values(
        &self,
        source: &Query,
        targets: &[Column],
        listed: bool,
    ) -> Result<Vec<Vec<Datum>>, SqlError> {
        // Fewer values than the table's columns leave the rest NULL, as PostgreSQL's INSERT does; fewer
        // than the columns the statement lists is an error, as it is there.
        let too_many =
            || SqlError::Invalid("INSERT has more expressions than target columns".into());
        let too_few = |n: usize| {
            (listed && n < targets.len()).then(|| {
                SqlError::Invalid("INSERT has more target columns than expressions".into())
            })
        };
        let mut binder = Binder::new(self, false);
        if let (SetExpr::Values(v), None, None) =
            (source.body.as_ref(), &source.order_by, &source.limit_clause)
        {
            let empty = OwnedRow::empty();
            let ctx = self.dml_eval_context();
            let mut out = Vec::with_capacity(v.rows.len());
            for r in &v.rows {
                if r.content.len() > targets.len() {
                    return Err(too_many());
                }
                if let Some(e) = too_few(r.content.len()) {
                    return Err(e);
                }
                let mut row = Vec::with_capacity(targets.len());
                for (e, col) in r.content.iter().zip(targets) {
                    let e = binder.bind_scalar(e, &Scope::default())?;
                    let e = crate::binder::coerce(e, col.ty.clone(), CastContext::Assign)?;
                    let e = self.in_session_zone(e);
                    row.push(crate::scalar::eval_with(&e, &empty, &ctx)?);
                }
                out.push(row);
            }
            return Ok(out);
        }
        let bound = binder.bind_query(source)?;
        let types = bound.types();
        if types.len() > targets.len() {
            return Err(too_many());
        }
        if let Some(e) = too_few(types.len()) {
            return Err(e);
        }
        let exprs = bound
            .plan
            .input_refs()
            .into_iter()
            .zip(targets)
            .map(|(e, col)| {
                let e = crate::binder::coerce(e, col.ty.clone(), CastContext::Assign)?;
                Ok::<_, SqlError>(self.in_session_zone(e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let plan = bound.plan.project(exprs);
        Ok(crate::batch::execute(&plan, self)?
            .into_iter()
            .map(OwnedRow::into_inner)
            .collect())
    }

    /// The scope of a table's stored rows (for `UPDATE` and `DELETE`).
    pub(super) fn stored_scope(name: &str, def: &Def) -> Scope {
        let mut columns: Vec<ScopeColumn> = def
            .stored
            .iter()
            .map(|ty| ScopeColumn {
                qualifier: Some(name.to_string()),
                name: String::new(),
                ty: ty.clone(),
                hidden: true,
                qualified_only: true,
            })
            .collect();
        for c in &def.columns {
            columns[c.src].name = c.name.clone();
            columns[c.src].hidden = false;
            columns[c.src].qualified_only = false;
        }
        if let Some(row_id) = def.row_id_index().and_then(|at| columns.get_mut(at)) {
            row_id.name = ROW_ID.into();
            row_id.qualified_only = false;
        }
        Scope { columns }
    }

    /// The table's rows that `predicate` picks, after a `FLUSH` (so that they include every earlier write).
    pub(super) async fn rows_where(
        &self,
        rel: &Relation,
        predicate: Option<ExprNode>,
    ) -> Result<Vec<OwnedRow>, SqlError> {
        self.flush().await?;
        let ctx = self.dml_eval_context();
        let mut out = Vec::new();
        for r in self.cluster().committed_rows(rel.id) {
            let keep = match &predicate {
                None => true,
                Some(p) => crate::scalar::eval_with(p, &r, &ctx)? == Some(ScalarImpl::Bool(true)),
            };
            if keep {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// What a DML statement's expressions read besides their row: `now()` is the simulation's clock when
    /// the statement runs (as a batch query's).
    pub(super) fn dml_eval_context(&self) -> crate::scalar::EvalContext {
        crate::scalar::EvalContext {
            now_usecs: crate::binder::CatalogReader::now_usecs(self),
        }
    }

    /// A `WHERE` over a table's stored rows.
    pub(super) fn bind_where(
        &self,
        name: &str,
        def: &Def,
        selection: Option<&Ast>,
    ) -> Result<Option<ExprNode>, SqlError> {
        let scope = Self::stored_scope(name, def);
        let mut binder = Binder::new(self, false);
        selection
            .map(|w| {
                let p = binder.bind_scalar(w, &scope)?;
                crate::binder::coerce(p, DataType::Boolean, CastContext::Implicit)
            })
            .transpose()
    }

    pub(super) async fn update(&self, up: &ast::Update) -> Result<Output, SqlError> {
        if up.from.is_some() || !up.table.joins.is_empty() {
            return Err(SqlError::Unsupported("UPDATE ... FROM / JOIN".into()));
        }
        let name = match &up.table.relation {
            TableFactor::Table { name, .. } => self.table_job_name(name, false)?,
            other => return Err(SqlError::Unsupported(format!("UPDATE {other}"))),
        };
        let (rel, def) = self.writable(&name)?;
        let (sets, predicate) = self.bind_update(&name, &def, up)?;
        if sets.iter().any(|(src, _)| def.pk.contains(src)) {
            return Err(SqlError::Invalid(
                "update modifying the PK column is unsupported".into(),
            ));
        }
        if sets.iter().any(|(src, _)| def.is_generated(*src)) {
            return Err(SqlError::Bind(
                "update modifying the generated column is unsupported".into(),
            ));
        }
        let returning = match &up.returning {
            Some(items) => Some(self.bind_returning(&name, &def, items)?),
            None => None,
        };
        let rows = self.rows_where(&rel, predicate).await?;
        let mut ops = Vec::with_capacity(rows.len() * 2);
        let ctx = self.dml_eval_context();
        for old in &rows {
            let mut new = old.datums().to_vec();
            for (src, e) in &sets {
                new[*src] = crate::scalar::eval_with(e, old, &ctx)?;
            }
            ops.push((Op::UpdateDelete, old.clone()));
            ops.push((Op::UpdateInsert, generate(&def, new, &ctx)?));
        }
        let returned = match &returning {
            Some(exprs) => {
                let new_rows = ops.iter().skip(1).step_by(2).map(|(_, r)| r);
                let rows = new_rows
                    .map(|r| {
                        exprs
                            .iter()
                            .map(|e| crate::scalar::eval_with(e, r, &ctx))
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let types: Vec<DataType> = exprs.iter().map(ExprNode::return_type).collect();
                Some(rows_output(&types, rows, &self.config.timezone()))
            }
            None => None,
        };
        self.send(&name, rel.id, ops).await?;
        Ok(returned.unwrap_or(Output::Done(rows.len() as u64)))
    }

    /// The expressions of a DML statement's `RETURNING` list over the table's stored row.
    pub(super) fn bind_returning(
        &self,
        name: &str,
        def: &Def,
        items: &[ast::SelectItem],
    ) -> Result<Vec<ExprNode>, SqlError> {
        let scope = Self::stored_scope(name, def);
        let mut binder = Binder::new(self, false);
        let mut exprs = Vec::new();
        for item in items {
            match item {
                ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                    exprs.push(binder.bind_scalar(e, &scope)?)
                }
                ast::SelectItem::Wildcard(o) if o.opt_except.is_none() => {
                    for (i, c) in scope.columns.iter().enumerate() {
                        if !c.hidden {
                            exprs.push(ExprNode::InputRef {
                                index: i,
                                ty: c.ty.clone(),
                            });
                        }
                    }
                }
                other => return Err(SqlError::Unsupported(format!("RETURNING {other}"))),
            }
        }
        Ok(exprs)
    }

    /// An `UPDATE`'s assignments (stored position, value over the old row) and its `WHERE`.
    #[allow(clippy::type_complexity)]
    pub(super) fn bind_update(
        &self,
        name: &str,
        def: &Def,
        up: &ast::Update,
    ) -> Result<(Vec<(usize, ExprNode)>, Option<ExprNode>), SqlError> {
        let scope = Self::stored_scope(name, def);
        let mut binder = Binder::new(self, false);
        let mut sets = Vec::new();
        for a in &up.assignments {
            let col = match &a.target {
                ast::AssignmentTarget::ColumnName(n) => object_name(n)?,
                ast::AssignmentTarget::Tuple(_) => {
                    return Err(SqlError::Unsupported("UPDATE SET (tuple)".into()));
                }
            };
            let c = def
                .columns
                .iter()
                .find(|c| c.name == col)
                .ok_or_else(|| SqlError::Invalid(format!("column \"{col}\" does not exist")))?;
            let e = binder.bind_scalar(&a.value, &scope)?;
            sets.push((
                c.src,
                crate::binder::coerce(e, c.ty.clone(), CastContext::Assign)?,
            ));
        }
        drop(binder);
        let predicate = self.bind_where(name, def, up.selection.as_ref())?;
        Ok((sets, predicate))
    }

    pub(super) async fn delete(&self, del: &ast::Delete) -> Result<Output, SqlError> {
        let tables = match &del.from {
            ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t,
        };
        let [table] = tables.as_slice() else {
            return Err(SqlError::Unsupported("DELETE from several tables".into()));
        };
        if del.using.is_some() || del.returning.is_some() || !table.joins.is_empty() {
            return Err(SqlError::Unsupported(
                "DELETE ... USING / RETURNING / JOIN".into(),
            ));
        }
        let name = match &table.relation {
            TableFactor::Table { name, .. } => self.table_job_name(name, false)?,
            other => return Err(SqlError::Unsupported(format!("DELETE FROM {other}"))),
        };
        let (rel, def) = self.writable(&name)?;
        let predicate = self.bind_where(&name, &def, del.selection.as_ref())?;
        let rows = self.rows_where(&rel, predicate).await?;
        let n = rows.len() as u64;
        let ops = rows.into_iter().map(|r| (Op::Delete, r)).collect();
        self.send(&name, rel.id, ops).await?;
        Ok(Output::Done(n))
    }
}

/// A table's row with its generated columns computed over the written ones (RisingWave's table job
/// computes them in a project after its DML; here the front end does before sending, so a row's
/// `proctime()` is the time its statement ran, and a retried DML computes it anew).
fn generate(
    def: &Def,
    mut row: Vec<Datum>,
    ctx: &crate::scalar::EvalContext,
) -> Result<OwnedRow, SqlError> {
    if def.generated.is_empty() {
        return Ok(OwnedRow::new(row));
    }
    let written = OwnedRow::new(row.clone());
    for (src, e) in &def.generated {
        row[*src] = crate::scalar::eval_with(e, &written, ctx)?;
    }
    Ok(OwnedRow::new(row))
}
