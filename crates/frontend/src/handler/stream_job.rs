//! Handlers over the binder and planners (RisingWave's `create_mv.rs`, `explain.rs`, `create_table_as`): a
//! materialized view planned as a fragment graph, `EXPLAIN`, `CREATE TABLE AS`.

use epochlab_common::plan::StreamScanType;
use epochlab_common::{DataType, TableId};
use epochlab_meta::{
    BACKFILL_CHUNK_SIZE, CreateStreamingJob, DdlCommand, JobOptions, RelationKind, StreamingJob,
};
use sqlparser::ast::{self, Query, Statement, UtilityOption};

use crate::binder::Binder;
use crate::catalog::{
    ColumnCatalog, DEFAULT_DATABASE_NAME, DEFAULT_SCHEMA_NAME, IndexInfo, RelationCatalog,
    RelationKind as CatalogKind,
};
use crate::error::SqlError;
use crate::expr::Column;
use crate::frontend::ddl::SinkWith;
use crate::frontend::{Def, Kind, Output, ROW_ID, Session, ident};
use crate::handler::parse::Name;
use crate::planner::explain::{explain_batch, explain_stream};
use crate::planner::index::IndexScan;
use crate::planner::stream::{
    StreamOp, StreamPlan, Upstream, UpstreamReader, check_executors, fragment_graph,
    materialize_table, plan_materialize, plan_materialize_eowc, plan_sink, watermark_columns,
};

impl UpstreamReader for Session {
    fn upstream(&self, table_id: TableId) -> Result<Upstream, SqlError> {
        let rel = self
            .cluster()
            .meta()
            .relation(table_id)
            .ok_or_else(|| SqlError::Invalid(format!("table {} is gone", table_id.0)))?;
        let def = self.def_of_table(table_id);
        let n = rel.desc.column_types.len();
        let names = (0..n)
            .map(|pos| {
                let visible = def.as_ref().and_then(|d| {
                    if d.project.is_some() {
                        return None;
                    }
                    d.columns
                        .iter()
                        .find(|c| c.src == pos)
                        .map(|c| c.name.clone())
                });
                visible.unwrap_or_else(|| match &def {
                    Some(d) if d.row_id_index() == Some(pos) => ROW_ID.to_string(),
                    _ => format!("_col{pos}"),
                })
            })
            .collect();
        Ok(Upstream {
            desc: rel.desc.clone(),
            names,
            append_only: def.as_ref().is_some_and(|d| d.append_only),
            watermark_columns: def.map_or_else(Vec::new, |d| {
                let tables = d.watermarks.iter().map(|(c, _)| *c);
                tables.chain(d.watermark_columns.iter().copied()).collect()
            }),
        })
    }

    fn stream_scan_type(&self) -> StreamScanType {
        self.config.stream_scan_type()
    }
    fn indexes(&self, table_id: TableId) -> Vec<IndexScan> {
        self.index_scans(table_id)
    }
}

/// Where a new relation goes: its schema, its bare name, and meta's name for its job.
#[derive(Clone, Debug)]
pub struct CreationTarget {
    pub schema: String,
    pub name: String,
    pub job: String,
}

impl Session {
    /// The schema and names of a relation `CREATE` names (`s.t`, or `t` in the search path's first schema).
    pub(crate) fn creation_name(&self, n: &ast::ObjectName) -> Result<CreationTarget, SqlError> {
        self.creation_name_of(&Name(object_parts(n)?))
    }

    /// [`Self::creation_name`] of a name already split into its parts.
    pub(crate) fn creation_name_of(&self, n: &Name) -> Result<CreationTarget, SqlError> {
        let (schema, name) = self.creation_target(n)?;
        let job = if self.database == DEFAULT_DATABASE_NAME && schema == DEFAULT_SCHEMA_NAME {
            name.clone()
        } else {
            format!("{}.{schema}.{name}", self.database)
        };
        Ok(CreationTarget { schema, name, job })
    }

    /// Meta's name of the table an `INSERT`/`UPDATE`/`DELETE` names (resolved along the search path, with
    /// RisingWave's `resolve_dml_table` errors).
    pub(crate) fn table_job_name(
        &self,
        n: &ast::ObjectName,
        is_insert: bool,
    ) -> Result<String, SqlError> {
        self.resolve_dml_table(&Name(object_parts(n)?), is_insert)
    }

    /// The catalog's relations over the engine's table `table_id` (a dependency).
    pub(crate) fn catalog_ids_of(&self, table_id: TableId) -> Vec<u32> {
        self.engine()
            .catalog()
            .relations()
            .filter(|r| r.table_id == Some(table_id) && r.kind != CatalogKind::Index)
            .map(|r| r.id)
            .collect()
    }

    /// The catalog row of a new job in `target`'s schema, depending on `depends_on` (its id is meta's to
    /// give).
    pub(crate) fn job_relation(
        &self,
        target: &CreationTarget,
        kind: CatalogKind,
        columns: Vec<ColumnCatalog>,
        pk: Vec<usize>,
        definition: &str,
        depends_on: Vec<u32>,
    ) -> Result<RelationCatalog, SqlError> {
        let mut r =
            crate::handler::relation_for_job(self, kind, &target.name, columns, pk, definition)?;
        r.schema = target.schema.clone();
        r.depends_on = depends_on;
        Ok(r)
    }

    /// A streaming job's CREATE as one request meta runs whole: its catalog row, definition and job sent
    /// together; answered once this frontend's catalog has the version meta's last commit of it took.
    pub(crate) async fn create_in_meta(
        &self,
        relation: RelationCatalog,
        listed_as: Option<RelationCatalog>,
        def: Def,
        job: StreamingJob,
        options: JobOptions,
    ) -> Result<Output, SqlError> {
        self.check_writable()?;
        let command = DdlCommand::CreateStreamingJob(Box::new(CreateStreamingJob {
            relation,
            listed_as,
            def,
            job,
            options,
        }));
        let outcome = self.cluster().meta().run_command(command).await;
        let outcome = outcome.map_err(SqlError::of_ddl)?;
        self.wait_version(outcome.version).await?;
        Ok(Output::Done(0))
    }

    /// The stream plan of a materialized view's query.
    fn stream_plan(
        &self,
        q: &Query,
        renames: &[String],
        eowc: bool,
    ) -> Result<(StreamPlan, Vec<u32>), SqlError> {
        let mut binder = Binder::new(self, true);
        let mut bound = binder.bind_query(q)?;
        crate::binder::output_names(&mut bound.names, renames)?;
        let mut depends_on = binder.depends_on;
        if self.config.streaming_enable_delta_join() {
            let scans = |t| self.index_scans(t);
            let (plan, _) = crate::planner::delta_join::use_indexes(&bound.plan, &scans);
            bound.plan = plan;
        }
        let plan = plan_materialize_eowc(&bound.plan, &bound.names, self, eowc)?;
        for index in self.indexes_read(&plan) {
            if !depends_on.contains(&index) {
                depends_on.push(index);
            }
        }
        Ok((plan, depends_on))
    }

    /// The indexes of the table whose job's table is `table` that a plan may read instead of it: those
    /// with a job of their own and a known layout (`index_item`), in the order they were created.
    fn index_scans(&self, table: TableId) -> Vec<IndexScan> {
        let catalog = self.catalog();
        let Some(t) = catalog.relations().find(|r| r.table_id == Some(table)) else {
            return Vec::new();
        };
        let meta = self.cluster().meta();
        let Some(width) = meta.relation(table).map(|r| r.desc.column_types.len()) else {
            return Vec::new();
        };
        let mut indexes: Vec<&RelationCatalog> = catalog
            .relations()
            .filter(|r| r.index.as_ref().is_some_and(|i| i.primary_table == t.id))
            .collect();
        indexes.sort_by_key(|r| r.id);
        indexes
            .into_iter()
            .filter_map(|r| {
                let info = r.index.as_ref()?;
                let index_table = r.table_id?;
                let desc = meta.relation(index_table)?.desc;
                (!info.index_item.is_empty()).then(|| {
                    let (id, name, pk) = (r.id, r.name.clone(), desc.pk_indices.clone());
                    IndexScan::new(index_table, id, name, width, &info.index_item, pk)
                })
            })
            .collect()
    }

    /// The catalog ids of the indexes `plan` scans (a view that reads an index depends on it).
    fn indexes_read(&self, plan: &StreamPlan) -> Vec<u32> {
        fn scans(plan: &StreamPlan, out: &mut Vec<TableId>) {
            if let StreamOp::TableScan { table_id, .. } = &plan.op {
                out.push(*table_id);
            }
            plan.inputs.iter().for_each(|i| scans(i, out));
        }
        let mut scanned = Vec::new();
        scans(plan, &mut scanned);
        let catalog = self.catalog();
        catalog
            .relations()
            .filter(|r| r.index.is_some() && r.table_id.is_some_and(|t| scanned.contains(&t)))
            .map(|r| r.id)
            .collect()
    }

    /// `CREATE MATERIALIZED VIEW` beyond one table's rows: the stream plan cut into a fragment graph, which
    /// meta builds. An operator without a stream executor here is `unsupported: streaming <operator>`.
    pub(crate) async fn create_mv_graph(
        &self,
        target: &CreationTarget,
        cv: &ast::CreateView,
        renames: &[String],
        options: JobOptions,
        text: &str,
        eowc: bool,
    ) -> Result<Output, SqlError> {
        let (plan, depends_on) = self.stream_plan(&cv.query, renames, eowc)?;
        let StreamOp::Materialize { pk, .. } = &plan.op else {
            unreachable!("plan_materialize puts a Materialize at the root")
        };
        // A view that cannot recover its progress is created in the foreground whatever the session says.
        let options = JobOptions {
            background: options.background && plan.has_backfill_leaf_nodes(),
            ..options
        };
        let job = GraphJob {
            kind: RelationKind::MaterializedView,
            pk: pk.clone(),
            definition: crate::handler::mv_definition(text),
            def: mv_def(&plan, pk, text, watermark_columns(&plan, self)?),
            depends_on,
            listing: None,
        };
        self.create_graph_job(target, &plan, job, options).await
    }

    /// `CREATE SINK` beyond one table's rows (RisingWave's `gen_sink_plan`): the query's stream plan
    /// under a `Sink`, cut into a fragment graph, which meta builds as it builds a materialized view's.
    pub(crate) async fn create_sink_graph(
        &self,
        target: &CreationTarget,
        query: &Query,
        with: &SinkWith,
        options: JobOptions,
        text: &str,
    ) -> Result<Output, SqlError> {
        let (plan, depends_on) = self.sink_plan(query, with)?;
        let StreamOp::Sink { pk, .. } = &plan.op else {
            unreachable!("plan_sink puts a Sink at the root")
        };
        let mut def = mv_def(&plan, pk, text, Vec::new());
        def.kind = Kind::Sink;
        let job = GraphJob {
            kind: RelationKind::Sink,
            pk: Vec::new(),
            definition: crate::handler::sink_definition(text),
            def,
            depends_on,
            listing: None,
        };
        self.create_graph_job(target, &plan, job, options).await
    }

    /// A planned job's fragment graph built by meta, the job listed in the catalog first.
    async fn create_graph_job(
        &self,
        target: &CreationTarget,
        plan: &StreamPlan,
        job: GraphJob,
        options: JobOptions,
    ) -> Result<Output, SqlError> {
        check_executors(plan)?;
        let vnode_count = self.cluster().meta().config().vnode_count;
        let table = materialize_table(plan, vnode_count);
        let graph = fragment_graph(plan, &table, self, BACKFILL_CHUNK_SIZE)?;
        let catalog_kind = match job.kind {
            RelationKind::Sink => CatalogKind::Sink,
            _ => CatalogKind::MaterializedView,
        };
        let relation = self.job_relation(
            target,
            catalog_kind,
            mv_listed_columns(plan),
            job.pk,
            &job.definition,
            job.depends_on,
        )?;
        let listed_as = job.listing.as_ref().map(|listing| {
            let mut listed = relation.clone();
            listing.apply(&mut listed);
            listed
        });
        let tables = vec![table];
        let job_spec = StreamingJob::Graph {
            kind: job.kind,
            graph,
            tables,
        };
        self.create_in_meta(relation, listed_as, job.def, job_spec, options)
            .await
    }

    /// The stream plan of a sink's query.
    pub(crate) fn sink_plan(
        &self,
        q: &Query,
        with: &SinkWith,
    ) -> Result<(StreamPlan, Vec<u32>), SqlError> {
        let mut binder = Binder::new(self, true);
        let bound = binder.bind_query(q)?;
        let plan = plan_sink(
            &bound.plan,
            &bound.names,
            self,
            with.append_only,
            with.forced,
        )?;
        Ok((plan, binder.depends_on))
    }

    /// `EXPLAIN [(options)] statement`: the plan, one line a row; names are not checked. `eowc`: the
    /// materialized view's `EMIT ON WINDOW CLOSE`, which the statement's text had.
    pub(crate) fn explain(
        &self,
        statement: &Statement,
        options: Option<&[UtilityOption]>,
        eowc: bool,
    ) -> Result<Output, SqlError> {
        let distsql = options
            .unwrap_or_default()
            .iter()
            .any(|o| ident(&o.name) == "distsql");
        let lines = match statement {
            Statement::Query(q) => {
                let bound = Binder::new(self, false).bind_query(q)?;
                explain_batch(&bound.plan)
            }
            Statement::CreateView(cv) if cv.materialized => {
                let renames: Vec<String> = cv.columns.iter().map(|c| ident(&c.name)).collect();
                let (plan, _) = self.stream_plan(&cv.query, &renames, eowc)?;
                let mut lines = explain_stream(&plan);
                if distsql {
                    lines.extend(crate::planner::explain::explain_stream_fragments(&plan));
                }
                lines
            }
            // RisingWave explains no logical view.
            Statement::CreateView(_) => {
                return Err(SqlError::NotSupported("EXPLAIN CREATE VIEW".into()));
            }
            Statement::CreateTable(ct) => explain_create_table(ct)?,
            Statement::CreateIndex(ci) => {
                let plan = self.index_plan(ci)?;
                explain_stream(&plan)
            }
            other => {
                let head: String = other.to_string().chars().take(24).collect();
                return Err(SqlError::Unsupported(format!("EXPLAIN {head}")));
            }
        };
        Ok(Output::Rows {
            numeric: vec![false],
            rows: lines.into_iter().map(|l| vec![l]).collect(),
        })
    }

    /// `EXPLAIN CREATE INDEX`'s stream plan: the table's rows keyed by the indexed columns, then the table's
    /// pk, hashed by the first (RisingWave's index arrangement).
    fn index_plan(&self, ci: &ast::CreateIndex) -> Result<StreamPlan, SqlError> {
        let table = ci.table_name.to_string();
        let mut cols = Vec::new();
        for c in &ci.columns {
            match &c.column.expr {
                ast::Expr::Identifier(id) => cols.push(ident(id)),
                other => return Err(SqlError::Unsupported(format!("index on {other}"))),
            }
        }
        let text = format!("SELECT {} FROM {table}", cols.join(", "));
        let q = crate::frontend::parse_query(&text)?
            .ok_or_else(|| SqlError::Invalid("index query".into()))?;
        let bound = Binder::new(self, true).bind_query(&q)?;
        // RisingWave's `gen_index_plan` plans through `gen_optimized_stream_plan`: the session's scan type.
        let plan = plan_materialize(&bound.plan, &bound.names, self)?;
        Ok(index_arrangement(plan, cols.len(), 1.min(cols.len())))
    }

    /// The stream plan of an index's job (RisingWave's `assemble_materialize`): its key and included columns
    /// over its table, arranged by [`index_arrangement`]; and its `index_item`, each stored column's table
    /// column (`None`: a key expression). `select` is the index's `SELECT .. FROM` its table.
    pub(crate) fn index_stream_plan(
        &self,
        select: &str,
        table: TableId,
        key_len: usize,
        dist_key_len: usize,
    ) -> Result<(StreamPlan, Vec<Option<usize>>), SqlError> {
        let q = crate::frontend::parse_query(select)?
            .ok_or_else(|| SqlError::Invalid("index query".into()))?;
        let bound = Binder::new(self, true).bind_query(&q)?;
        let plan = plan_materialize(&bound.plan, &bound.names, self)?;
        let plan = index_arrangement(plan, key_len, dist_key_len);
        let table_names = self.upstream(table)?.names;
        let index_item = plan
            .names
            .iter()
            .map(|n| {
                let n = n.rsplit('.').next().unwrap_or(n);
                table_names.iter().position(|t| t == n)
            })
            .collect();
        Ok((plan, index_item))
    }

    /// An index's job: its planned arrangement built by meta as a materialized view's, listed in the catalog
    /// first (the caller then lists it as the index).
    pub(crate) async fn create_index_graph(
        &self,
        target: &CreationTarget,
        plan: &StreamPlan,
        definition: &str,
        listing: IndexListing,
    ) -> Result<Output, SqlError> {
        let StreamOp::Materialize { pk, .. } = &plan.op else {
            unreachable!("plan_materialize puts a Materialize at the root")
        };
        let job = GraphJob {
            kind: RelationKind::MaterializedView,
            pk: pk.clone(),
            definition: definition.to_string(),
            def: mv_def(plan, pk, definition, Vec::new()),
            depends_on: vec![listing.table],
            listing: Some(listing),
        };
        let options = self.job_options(self.rate_limit());
        self.create_graph_job(target, plan, job, options).await
    }

    /// `CREATE TABLE name AS query`: a table of the query's columns (and a hidden row id), then its rows.
    pub(crate) async fn create_table_as(
        &self,
        ct: &ast::CreateTable,
        column_names: &[String],
        q: &Query,
        text: &str,
    ) -> Result<Output, SqlError> {
        let bound = Binder::new(self, false).bind_query(q)?;
        let types = bound.types();
        if column_names.len() > types.len() {
            return Err(SqlError::InvalidInputSyntax(
                "too many column names were specified".into(),
            ));
        }
        let mut names = bound.names.clone();
        for (n, c) in names.iter_mut().zip(column_names) {
            n.clone_from(c);
        }
        let cols: Vec<String> = names
            .iter()
            .zip(&types)
            .map(|(n, t)| Ok(format!("\"{n}\" {}", sql_type(t)?)))
            .collect::<Result<_, SqlError>>()?;
        let name = ct.name.to_string();
        let create = format!("CREATE TABLE {name} ({})", cols.join(", "));
        let create = match crate::frontend::parse_statement(&create)? {
            Statement::CreateTable(c) => c,
            _ => unreachable!("a CREATE TABLE parses as one"),
        };
        let target = self.creation_name(&ct.name)?;
        if self.check_free(&target.job, ct.if_not_exists)? {
            return Ok(Output::Done(0));
        }
        self.create_table(
            &create,
            text,
            &crate::handler::create_table::TableExtras::default(),
        )
        .await?;
        let insert = format!("INSERT INTO {name} {q}");
        match crate::frontend::parse_statement(&insert)? {
            Statement::Insert(ins) => {
                let out = self.insert(&ins).await?;
                // The rows are there when the statement returns, as RisingWave's CTAS has them.
                self.flush().await?;
                Ok(out)
            }
            _ => unreachable!("an INSERT parses as one"),
        }
    }
}

/// What the catalog and the front end keep of a graph job beside its plan.
struct GraphJob {
    kind: RelationKind,
    /// The catalog's pk (a sink lists none).
    pk: Vec<usize>,
    /// The definition the catalog shows.
    definition: String,
    def: Def,
    depends_on: Vec<u32>,
    /// An index's job: how its catalog row is listed as the index (sent with the CREATE when meta runs
    /// it whole; else written after it, by the caller).
    listing: Option<IndexListing>,
}

/// What lists a view's catalog row as an index: the `CREATE INDEX` text, its table's catalog id, its
/// key and each stored column's table column.
#[derive(Clone)]
pub(crate) struct IndexListing {
    pub definition: String,
    pub table: u32,
    pub info: IndexInfo,
    pub index_item: Vec<Option<usize>>,
}

impl IndexListing {
    /// `r` listed as the index.
    pub(crate) fn apply(&self, r: &mut RelationCatalog) {
        r.kind = CatalogKind::Index;
        r.definition = self.definition.clone();
        r.pk = (0..self.info.key.len()).collect();
        r.dist_key = (0..self.info.dist_key_len).collect();
        r.index = Some(IndexInfo {
            index_item: self.index_item.clone(),
            ..self.info.clone()
        });
        if !r.depends_on.contains(&self.table) {
            r.depends_on.push(self.table);
        }
    }
}

/// A materialized view's definition for the front end: its visible columns, all stored, keyed by `pk`.
fn mv_def(plan: &StreamPlan, pk: &[usize], text: &str, watermark_columns: Vec<usize>) -> Def {
    let columns = plan.names[..plan.width]
        .iter()
        .enumerate()
        .map(|(i, n)| Column {
            name: n.clone(),
            ty: plan.types[i].clone(),
            src: i,
        })
        .collect();
    Def {
        kind: Kind::MaterializedView,
        columns,
        filter: None,
        project: None,
        stored: plan.types.clone(),
        row_id: false,
        row_id_at: None,
        pk: pk.to_vec(),
        append_only: false,
        statement: text.trim().to_string(),
        generated: Vec::new(),
        watermarks: Vec::new(),
        watermark_columns,
    }
}

/// An index's arrangement of `plan` (a materialized view of its columns, the key's `key_len` first): keyed by
/// its key, then by the rest of the stream key (the table's pk), and hashed by the key's first
/// `dist_key_len` columns (RisingWave's `gen_index_plan` under `RequiredDist::PhysicalDist`).
fn index_arrangement(mut plan: StreamPlan, key_len: usize, dist_key_len: usize) -> StreamPlan {
    if let StreamOp::Materialize { pk, .. } = &mut plan.op {
        let mut key: Vec<usize> = (0..key_len).collect();
        key.extend(pk.iter().copied().filter(|p| *p >= key_len));
        *pk = key;
    }
    if let Some(input) = plan.inputs.pop() {
        let dist = crate::planner::stream::Dist::HashShard((0..dist_key_len).collect());
        let ex = StreamPlan {
            op: StreamOp::Exchange { dist: dist.clone() },
            types: input.types.clone(),
            names: input.names.clone(),
            width: input.width,
            dist: dist.clone(),
            stream_key: input.stream_key.clone(),
            inputs: vec![input],
        };
        plan.inputs.push(ex);
        plan.dist = dist;
    }
    plan
}

/// A materialized view's columns as the catalog lists them: its visible ones (unqualified names), then
/// the hidden ones its stream key needs.
fn mv_listed_columns(plan: &StreamPlan) -> Vec<ColumnCatalog> {
    plan.names
        .iter()
        .zip(&plan.types)
        .enumerate()
        .map(|(i, (n, t))| {
            let n = n.rsplit('.').next().unwrap_or(n).to_string();
            if i < plan.width {
                ColumnCatalog::new(n, t.clone())
            } else {
                ColumnCatalog::hidden(n, t.clone())
            }
        })
        .collect()
}

/// A type as SQL names it (for the columns of `CREATE TABLE AS`).
fn sql_type(t: &DataType) -> Result<String, SqlError> {
    Ok(t.to_string())
}

/// `EXPLAIN CREATE TABLE`: the table's DML path into its materialize (RisingWave's shape).
fn explain_create_table(ct: &ast::CreateTable) -> Result<Vec<String>, SqlError> {
    let mut cols: Vec<String> = ct.columns.iter().map(|c| ident(&c.name)).collect();
    let mut pk: Vec<String> = Vec::new();
    for c in &ct.columns {
        if c.options
            .iter()
            .any(|o| matches!(o.option, ast::ColumnOption::PrimaryKey(_)))
        {
            pk.push(ident(&c.name));
        }
    }
    let row_id = pk.is_empty();
    if row_id {
        cols.push(format!("{ROW_ID}(hidden)"));
        pk.push(ROW_ID.into());
    }
    let pk = pk.join(", ");
    let mut lines = vec![format!(
        "StreamMaterialize {{ columns: [{}], stream_key: [{pk}], pk_columns: [{pk}], pk_conflict: Overwrite }}",
        cols.join(", ")
    )];
    let mut indent = String::new();
    if row_id {
        lines.push(format!(
            "└─StreamRowIdGen {{ row_id_index: {} }}",
            cols.len() - 1
        ));
        indent.push_str("  ");
    }
    lines.push(format!("{indent}└─StreamUnion {{ all: true }}"));
    lines.push(format!(
        "{indent}  └─StreamExchange {{ dist: HashShard({pk}) }}"
    ));
    lines.push(format!(
        "{indent}    └─StreamDml {{ columns: [{}] }}",
        cols.join(", ").replace("(hidden)", "")
    ));
    lines.push(format!("{indent}      └─StreamSource"));
    Ok(lines)
}

/// The parts of a name, as SQL means them (unquoted ones lower-cased).
fn object_parts(n: &ast::ObjectName) -> Result<Vec<String>, SqlError> {
    n.0.iter()
        .map(|p| match p {
            ast::ObjectNamePart::Identifier(id) => Ok(ident(id)),
            other => Err(SqlError::Unsupported(format!("name {other}"))),
        })
        .collect()
}
