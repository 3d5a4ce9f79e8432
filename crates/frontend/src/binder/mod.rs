//! The binder (RisingWave's `Binder`): a parsed query, resolved against the catalog, becomes a logical plan
//! with the names and types of its output columns. Views are expanded here (their stored query is parsed and
//! bound), CTEs too; uncorrelated subqueries in expressions are evaluated by the batch engine while binding a
//! batch query and refused in a streaming one.

mod expr;
mod query;
mod relation;
mod subquery;

use epochlab_common::{DataType, OwnedRow, TableId};

use crate::error::SqlError;
use crate::planner::LogicalPlan;
use crate::scalar::ExprNode;
use crate::session_timezone::SessionTimezone;

pub use expr::{bind_data_type, coerce};

/// One column of a relation a catalog gives the binder.
#[derive(Clone, Debug)]
pub struct CatalogColumn {
    pub name: String,
    pub ty: DataType,
    /// Its value over the stored rows (a stored column, or a view's expression).
    pub expr: ExprNode,
    /// `_row_id`: readable by name, not in `*`.
    pub hidden: bool,
}

/// What a name in `FROM` resolves to.
#[derive(Clone, Debug)]
pub enum RelationRef {
    /// A table or materialized view with a state table.
    Table {
        /// The catalog's id of the relation (a dependency of what is created over it).
        catalog_id: Option<u32>,
        table_id: TableId,
        columns: Vec<CatalogColumn>,
        pk: Vec<usize>,
        filter: Option<ExprNode>,
    },
    /// A (logical) view: its query, expanded at bind.
    View {
        catalog_id: Option<u32>,
        query: String,
        columns: Vec<String>,
    },
    /// A system table's rows, read now.
    Rows {
        columns: Vec<(String, DataType)>,
        rows: Vec<OwnedRow>,
    },
}

/// The catalog and storage the binder reads (the session implements it).
pub trait CatalogReader {
    /// The relation `name` (dotted when qualified) names.
    fn resolve_relation(&self, name: &str) -> Result<RelationRef, SqlError>;
    /// The rows of a table at the max committed epoch (for subqueries evaluated while binding).
    fn committed_rows(&self, table_id: TableId) -> Vec<OwnedRow>;
    /// `now()` for a query starting now: microseconds since the Unix epoch on the simulation's clock.
    fn now_usecs(&self) -> Option<i64> {
        None
    }
    /// The session's `TimeZone`, given to every zone-dependent call of a bound query.
    fn timezone(&self) -> String {
        "UTC".into()
    }
}

/// A column of the scope an expression is bound in.
#[derive(Clone, Debug)]
pub struct ScopeColumn {
    /// The relation (alias) that names it.
    pub qualifier: Option<String>,
    pub name: String,
    pub ty: DataType,
    /// Not in `*` (a hidden column, or a `USING` column's copy).
    pub hidden: bool,
    /// Not found by its bare name (a `USING` column's per-side copy).
    pub qualified_only: bool,
}

/// The columns an expression may name, in the plan's output order.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub columns: Vec<ScopeColumn>,
}

/// A bound query: its plan and its visible output columns' names.
#[derive(Clone, Debug)]
pub struct BoundQuery {
    pub plan: LogicalPlan,
    pub names: Vec<String>,
}

impl BoundQuery {
    pub fn types(&self) -> Vec<DataType> {
        self.plan.schema()
    }
}

/// A CTE in scope.
#[derive(Clone, Debug)]
struct Cte {
    name: String,
    query: BoundQuery,
}

/// Binds queries against one catalog.
pub struct Binder<'a> {
    catalog: &'a dyn CatalogReader,
    ctes: Vec<Cte>,
    /// The scopes of enclosing queries (a name found only there is a correlated reference).
    outer: Vec<Scope>,
    /// Binding a streaming query (a materialized view): subqueries in expressions are refused.
    streaming: bool,
    /// Views being expanded (bounded, and a cycle is an error).
    view_depth: usize,
    /// Binding a WHERE clause whose scope is its FROM's plan: the scalar subqueries to join to the FROM
    /// clause's plan (each a column past the FROM's), as RisingWave's apply of a scalar subquery is: the
    /// correlated ones, and in a streaming query every one.
    where_subqueries: Option<Vec<crate::planner::LogicalPlan>>,
    /// The position in `outer` of the scope a subquery being bound may read (a WHERE clause's, which
    /// decorrelates it): a column found there is a correlated reference (see
    /// [`crate::planner::decorrelate`]); one found in any other enclosing scope is refused.
    correlatable: Option<usize>,
    /// Binding the HAVING clause of a streaming query: its (uncorrelated) scalar subqueries, each joined
    /// after the aggregation's columns (see [`HAVING_SUBQUERY_BASE`]).
    having_subqueries: Option<Vec<crate::planner::LogicalPlan>>,
    /// The catalog's relations the query reads directly (tables, views), for dependencies.
    pub depends_on: Vec<u32>,
    /// The window function calls of the select list being bound (`None`: none allowed here).
    windows: Option<expr::WindowCollector>,
    /// While a select list is bound: the table functions found in it (they become a `ProjectSet`).
    project_set: Option<TableFunctionCollector>,
    /// Binding a table's generated column (RisingWave's `Clause::GeneratedColumn`): `proctime()` is
    /// allowed there alone, `now()` is not.
    generated_column: bool,
}

/// The table functions of a select list, each bound as a reference to its column of the `ProjectSet` to
/// come: column `base + i` for the `i`th (the select's input columns come first).
#[derive(Debug)]
struct TableFunctionCollector {
    base: usize,
    items: Vec<crate::planner::ProjectSetSelectItem>,
    /// Table functions inside the arguments of `items`' (`unnest(regexp_matches(..))`): a `ProjectSet`
    /// below, the `i`th referred to as column `NESTED_TABLE_FUNCTION_BASE + i` until it is planned.
    nested: Vec<crate::planner::ProjectSetSelectItem>,
}

/// Where the placeholders of a HAVING clause's subqueries start: the `i`th is column `HAVING_SUBQUERY_BASE
/// + i` until the aggregation's width is known (far above any real column, below correlated references).
const HAVING_SUBQUERY_BASE: usize = usize::MAX / 8;

/// Where the placeholders of a grouped select's window function columns start (see `bind_select_body`).
const WINDOW_BASE: usize = usize::MAX / 16 * 3;

/// Where the placeholders of nested table functions start (far above any real column).
const NESTED_TABLE_FUNCTION_BASE: usize = usize::MAX / 2;

impl TableFunctionCollector {
    fn new(base: usize) -> Self {
        Self {
            base,
            items: Vec::new(),
            nested: Vec::new(),
        }
    }
}

/// Views expanded inside each other at most.
const MAX_VIEW_DEPTH: usize = 16;

impl<'a> Binder<'a> {
    pub fn new(catalog: &'a dyn CatalogReader, streaming: bool) -> Self {
        Self {
            catalog,
            ctes: Vec::new(),
            outer: Vec::new(),
            streaming,
            view_depth: 0,
            where_subqueries: None,
            correlatable: None,
            having_subqueries: None,
            depends_on: Vec::new(),
            windows: None,
            project_set: None,
            generated_column: false,
        }
    }

    /// A binder of a table's generated columns (see [`Binder::generated_column`]).
    pub fn for_generated_column(catalog: &'a dyn CatalogReader) -> Self {
        Self {
            generated_column: true,
            ..Self::new(catalog, false)
        }
    }

    /// Bind one expression over `scope` (no aggregates).
    pub fn bind_scalar(
        &mut self,
        e: &sqlparser::ast::Expr,
        scope: &Scope,
    ) -> Result<ExprNode, SqlError> {
        let bound = self.bind_expr(e, scope, None)?;
        Ok(self.session_timezone().rewrite_expr(bound))
    }

    /// The session's zone, for [`SessionTimezone`]'s rewrite.
    fn session_timezone(&self) -> SessionTimezone {
        SessionTimezone::new(self.catalog.timezone())
    }

    /// Bind a whole query, its zone-dependent calls given the session's zone (once, over the whole plan:
    /// its views, CTEs and subqueries are in it; one evaluated while binding is rewritten before it runs).
    pub fn bind_query(&mut self, q: &sqlparser::ast::Query) -> Result<BoundQuery, SqlError> {
        let mut bound = self.bind_query_inner(q)?;
        self.session_timezone().rewrite_plan(&mut bound.plan);
        Ok(bound)
    }
}

/// An identifier as SQL means it: unquoted ones are lower-cased.
pub fn ident(id: &sqlparser::ast::Ident) -> String {
    match id.quote_style {
        Some(_) => id.value.clone(),
        None => id.value.to_lowercase(),
    }
}

/// A relation's column may not be named as a system column (the catalog's rule).
pub fn check_column_name(name: &str) -> Result<(), SqlError> {
    Ok(crate::catalog::check_valid_column_name(name)?)
}

/// A stored relation's output names: `renames` (`CREATE MATERIALIZED VIEW mv (a, b)`) over the query's,
/// each checked against the system columns.
pub fn output_names(names: &mut [String], renames: &[String]) -> Result<(), SqlError> {
    if !renames.is_empty() && renames.len() != names.len() {
        return Err(SqlError::Invalid(format!(
            "Incorrect number of columns: {} column names for {} columns",
            renames.len(),
            names.len()
        )));
    }
    for (n, r) in names.iter_mut().zip(renames) {
        *n = r.clone();
    }
    names.iter().try_for_each(|n| check_column_name(n))
}

fn unsupported(what: impl Into<String>) -> SqlError {
    SqlError::Unsupported(what.into())
}
