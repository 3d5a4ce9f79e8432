//! The SQL front end: the subset of RisingWave's SQL that the engine implements, read with `sqlparser`
//! (PostgreSQL dialect) and mapped onto meta's DDL, the cluster's DML path and reads of committed storage.
//!
//! RisingWave's own statements that `sqlparser` does not know (`FLUSH`, `WAIT`, `RECOVER`, `SHOW JOBS`,
//! `CREATE SINK`, `DROP SINK`, `ALTER SYSTEM`, `ALTER ... SET PARALLELISM`, `SET`) are read from its tokens by
//! [`Words`]; the rest goes through `sqlparser`'s `Statement`. Anything else is
//! [`SqlError::Unsupported`], naming the construct.
//!
//! The engine's views and sinks copy their upstream's rows (`SELECT *`): a view's projection and `WHERE` are
//! kept here, in its [`Def`], and applied when it is read. The view's state table therefore holds the rows
//! of its upstream that the arrangement backfill and the upstream's changes put there, which is what recovery
//! and the checkers look at; what a query sees is the same as if the view had projected and filtered them.

mod dml;
mod words;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use epochlab_barrier::SchedulerStatus;
use epochlab_common::plan::SinkKind;
use epochlab_common::{DataType, Datum, OwnedRow, ScalarImpl, TableId};
use epochlab_meta::{JobOptions, JobState, Relation, RelationKind, SinkOptions};
use epochlab_sim::Cluster;
use sqlparser::ast::{
    self, ColumnOption, CreateTableOptions, Expr as Ast, ObjectName, ObjectNamePart, Query,
    SqlOption, Statement, TableConstraint,
};
use sqlparser::tokenizer::Token;

use crate::binder::{Binder, CatalogColumn, CatalogReader, RelationRef};
use crate::catalog::{ColumnCatalog, RelationKind as CatalogKind};
use crate::error::{CatalogProblem, SqlError};
use crate::expr::{Column, format_datum, literal, resolve};
use crate::handler::create_table::{TableExtras, table_definition, validate_compatibility};
use crate::scalar::ExprNode;
use crate::session_config::SessionConfig;
use words::{Stmt, Words, parse_one, rewrite_create_table, split_statements, unsupported_words};

pub use words::SettingValue;

/// Rows per DML chunk sent to the cluster.
const DML_BATCH: usize = 1024;

/// How long `WAIT` waits for background jobs (virtual time).
const WAIT_BUDGET: Duration = Duration::from_secs(3600);

/// How long `RECOVER` waits for the recovery it starts (virtual time).
const RECOVER_BUDGET: Duration = Duration::from_secs(600);

/// The name of the hidden row id column of a table without a primary key (RisingWave's).
pub const ROW_ID: &str = "_row_id";

/// What a relation is, as SQL names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Table,
    MaterializedView,
    Sink,
}

impl Kind {
    fn of(kind: RelationKind) -> Self {
        match kind {
            RelationKind::Table => Kind::Table,
            RelationKind::MaterializedView => Kind::MaterializedView,
            RelationKind::Sink => Kind::Sink,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Table => "table",
            Kind::MaterializedView => "materialized view",
            Kind::Sink => "sink",
        }
    }
}

/// What SQL knows of a relation beyond meta's catalog: its columns, its filter, its statement.
#[derive(Clone, Debug)]
pub struct Def {
    pub kind: Kind,
    /// The columns SQL sees; each `src` is a position in the stored rows.
    pub columns: Vec<Column>,
    /// The view's `WHERE` (and its upstream's), over the stored rows.
    pub filter: Option<ExprNode>,
    /// A view's columns as expressions over the stored rows (one per column); `None`: each column is the
    /// stored column at its `src`.
    pub project: Option<Vec<ExprNode>>,
    /// A table's stored columns (the visible ones, then `_row_id` when it has no primary key).
    pub stored: Vec<DataType>,
    /// A table without a primary key: the last stored column is its hidden row id.
    pub row_id: bool,
    /// The table's primary key, as positions in the stored rows.
    pub pk: Vec<usize>,
    /// `CREATE TABLE ... APPEND ONLY`: no `UPDATE` or `DELETE`.
    pub append_only: bool,
    /// The statement that created it (`SHOW JOBS`).
    pub statement: String,
}

/// A logical view: its query and its column names.
#[derive(Clone, Debug)]
pub struct ViewDef {
    pub query: String,
    pub columns: Vec<String>,
}

/// The output of one statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// A query's rows, every value as text, and whether each column is a number.
    Rows {
        numeric: Vec<bool>,
        rows: Vec<Vec<String>>,
    },
    /// A statement that returns no rows, with the rows it affected.
    Done(u64),
}

/// What every session over one cluster shares: the cluster, SQL's definitions, the notes.
pub struct Engine {
    pub cluster: Arc<Cluster>,
    /// The catalog (databases, schemas, relations, users): `Engine::catalog` locks it.
    pub catalog: Mutex<crate::catalog::Catalog>,
    pub(crate) defs: Mutex<BTreeMap<String, Def>>,
    next_row_id: Mutex<BTreeMap<TableId, i64>>,
    notes: Mutex<Vec<String>>,
    /// Parallelism of a new job when the session sets none (`SET STREAMING_PARALLELISM`).
    pub default_parallelism: usize,
    /// The frontend node: up or down, and its generation (one more at each kill).
    frontend: tokio::sync::watch::Sender<FrontendLife>,
}

/// The frontend node's life. Sessions are its connections: a kill closes them all, and a client reconnects
/// once it is up again. Its catalog (the definitions) is meta's, so it survives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrontendLife {
    pub up: bool,
    pub generation: u64,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Engine {
    pub fn new(cluster: Arc<Cluster>, default_parallelism: usize) -> Arc<Self> {
        Arc::new(Self {
            cluster,
            catalog: Mutex::new(crate::catalog::Catalog::new()),
            defs: Mutex::default(),
            next_row_id: Mutex::default(),
            notes: Mutex::default(),
            default_parallelism: default_parallelism.max(1),
            frontend: tokio::sync::watch::Sender::new(FrontendLife {
                up: true,
                generation: 0,
            }),
        })
    }

    /// The frontend's generation when it is up; `None` while it is down.
    pub fn frontend_up(&self) -> Option<u64> {
        let life = *self.frontend.borrow();
        life.up.then_some(life.generation)
    }

    /// Kill the frontend: every connection closes, in-flight statements fail with `connection closed`.
    /// `false` when it was down already.
    pub fn kill_frontend(&self) -> bool {
        self.frontend.send_if_modified(|life| {
            let was_up = life.up;
            if was_up {
                life.up = false;
                life.generation += 1;
            }
            was_up
        })
    }

    /// Start the killed frontend again; clients reconnect to it.
    pub fn restart_frontend(&self) {
        self.frontend.send_modify(|life| life.up = true);
    }

    /// Resolves once the frontend of `generation` has been killed.
    pub async fn frontend_killed(&self, generation: u64) {
        let mut rx = self.frontend.subscribe();
        // The sender lives as long as the engine, which the caller holds.
        let _ = rx.wait_for(|life| life.generation != generation).await;
    }

    /// Things the front end accepted without doing them (options ignored, system settings it does not have).
    pub fn notes(&self) -> Vec<String> {
        lock(&self.notes).clone()
    }

    pub fn note(&self, note: String) {
        let mut notes = lock(&self.notes);
        if !notes.contains(&note) && notes.len() < 64 {
            notes.push(note);
        }
    }

    /// The relation named `name` in meta's catalog, with SQL's definition of it.
    fn lookup(&self, name: &str) -> Option<(Relation, Def)> {
        let rel = self.cluster.meta.relation_by_name(name)?;
        let def = lock(&self.defs).get(name).cloned()?;
        (def.kind == Kind::of(rel.kind)).then_some((rel, def))
    }

    /// Jobs still creating, each with its statement and its backfill's progress.
    fn creating_jobs(&self) -> Vec<(TableId, String, String)> {
        let relations: Vec<Relation> = self
            .cluster
            .meta
            .catalog()
            .relations
            .values()
            .filter(|r| r.state == JobState::Creating && r.upstream.is_some())
            .cloned()
            .collect();
        let defs = lock(&self.defs).clone();
        relations
            .into_iter()
            .map(|r| {
                let statement = defs
                    .get(&r.name)
                    .map_or_else(|| r.name.clone(), |d| d.statement.clone());
                let consumed = self.cluster.meta.backfill_progress(r.id).unwrap_or(0);
                let total = r
                    .upstream
                    .map_or(0, |u| self.cluster.committed_rows(u).len() as u64);
                let progress = if total == 0 {
                    0.0
                } else {
                    (consumed as f64 * 100.0 / total as f64).min(100.0)
                };
                (r.id, statement, format!("{progress:.2}%"))
            })
            .collect()
    }

    fn row_ids(&self, table: TableId, n: usize) -> i64 {
        let mut ids = lock(&self.next_row_id);
        let next = ids.entry(table).or_insert(0);
        let first = *next;
        *next += n as i64;
        first
    }
}

/// One connection's session: its settings, over the shared engine.
pub struct Session {
    engine: Arc<Engine>,
    /// The session's variables (`SET`, `SHOW`).
    pub config: SessionConfig,
    /// The database it is connected to.
    pub database: String,
    /// The user it is connected as.
    pub user: String,
}

impl Session {
    pub fn new(engine: Arc<Engine>) -> Self {
        Self {
            engine,
            config: SessionConfig::new(),
            database: crate::catalog::DEFAULT_DATABASE_NAME.into(),
            user: crate::catalog::DEFAULT_SUPER_USER.into(),
        }
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    pub(crate) fn cluster(&self) -> &Cluster {
        &self.engine.cluster
    }

    /// Run every statement of `sql` in turn; the output is the last one's.
    pub async fn execute(&mut self, sql: &str) -> Result<Output, SqlError> {
        let statements = split_statements(sql)?;
        if statements.is_empty() {
            return Err(SqlError::Invalid("empty statement".into()));
        }
        let mut out = Output::Done(0);
        for s in statements {
            out = self.statement(&s).await?;
        }
        Ok(out)
    }

    async fn statement(&mut self, s: &Stmt) -> Result<Output, SqlError> {
        if let Some(out) = crate::handler::handle(self, &s.tokens, &s.text).await {
            return out;
        }
        if let Some(out) = self.word_statement(s).await? {
            return Ok(out);
        }
        self.parsed_statement(s).await
    }

    /// The statements read word by word here (`FLUSH`, `WAIT`, `RECOVER`, `SHOW JOBS`, `ALTER`, `CREATE
    /// SINK`), or `None` for one `sqlparser` reads; a `CREATE` of an object neither reads is unsupported.
    async fn word_statement(&mut self, s: &Stmt) -> Result<Option<Output>, SqlError> {
        let mut w = Words::new(&s.tokens);
        let first = w.peek_upper().unwrap_or_default();
        match first.as_str() {
            "FLUSH" => {
                w.next();
                w.end()?;
                self.flush().await?;
                return Ok(Some(Output::Done(0)));
            }
            "WAIT" => {
                w.next();
                w.end()?;
                self.wait().await?;
                return Ok(Some(Output::Done(0)));
            }
            "RECOVER" => {
                w.next();
                w.end()?;
                self.recover().await?;
                return Ok(Some(Output::Done(0)));
            }
            "SHOW" => {
                w.next();
                if w.eat("JOBS") {
                    w.end()?;
                    return Ok(Some(self.show_jobs()));
                }
                return Err(unsupported_words(&s.tokens, 2));
            }
            "ALTER" => return self.alter(&mut w).await.map(Some),
            "CREATE" if w.peek_upper_at(1).as_deref() == Some("SINK") => {
                return self.create_sink(&mut w, &s.text).await.map(Some);
            }
            "EXPLAIN" => {}
            "CREATE" => {
                let object = w.peek_upper_at(1).unwrap_or_default();
                if !matches!(
                    object.as_str(),
                    "TABLE" | "MATERIALIZED" | "VIEW" | "OR" | "IF"
                ) {
                    return Err(unsupported_words(&s.tokens, 2));
                }
            }
            _ => {}
        }
        Ok(None)
    }

    /// A statement `sqlparser` reads (a `CREATE TABLE` rewritten first, see `rewrite_create_table`).
    async fn parsed_statement(&mut self, s: &Stmt) -> Result<Output, SqlError> {
        let (text, syntax) = rewrite_create_table(s);
        let statement = parse_one(&text)?;
        match statement {
            Statement::CreateTable(ct) => match &ct.query {
                Some(q) => self.create_table_as(&ct, q, &s.text).await,
                None => {
                    let extras = TableExtras {
                        append_only: syntax.append_only,
                        format: None,
                    };
                    self.create_table(&ct, &s.text, &extras).await
                }
            },
            Statement::CreateView(cv) if !cv.materialized => self.create_view(&cv),
            Statement::CreateView(cv) => self.create_mv(&cv, &s.text).await,
            Statement::Insert(ins) => self.insert(&ins).await,
            Statement::Update(up) => self.update(&up).await,
            Statement::Delete(del) => self.delete(&del).await,
            Statement::Query(q) => {
                let (columns, rows) = self.query(&q).await?;
                Ok(rows_output(&columns, rows))
            }
            Statement::Explain {
                statement, options, ..
            } => self.explain(&statement, options.as_deref()),
            _ => Err(unsupported_words(&s.tokens, 2)),
        }
    }

    // ---- utility statements ----

    pub(crate) async fn flush(&self) -> Result<(), SqlError> {
        Ok(self.cluster().meta.flush().await?)
    }

    /// `WAIT`: until no job is still creating.
    async fn wait(&self) -> Result<(), SqlError> {
        let cluster = self.cluster();
        let waited = tokio::time::timeout(WAIT_BUDGET, async {
            loop {
                let creating = cluster
                    .meta
                    .catalog()
                    .relations
                    .values()
                    .any(|r| r.state == JobState::Creating);
                if !creating {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await;
        waited.map_err(|_| SqlError::Timeout("WAIT", WAIT_BUDGET.as_secs()))
    }

    /// `RECOVER`: fail the next barrier injection, so that meta recovers, and wait until it has.
    async fn recover(&self) -> Result<(), SqlError> {
        let cluster = self.cluster();
        let stats = cluster.barrier_stats();
        let before = stats.recoveries.load(AtomicOrdering::Relaxed);
        cluster
            .network
            .fail_next(epochlab_rpc::RpcKind::InjectBarrier, None, 1);
        let done = tokio::time::timeout(RECOVER_BUDGET, async {
            loop {
                let recovered = stats.recoveries.load(AtomicOrdering::Relaxed) > before;
                if recovered && cluster.meta.scheduler().status() == SchedulerStatus::Ready {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        done.map_err(|_| SqlError::Timeout("RECOVER", RECOVER_BUDGET.as_secs()))
    }

    fn show_jobs(&self) -> Output {
        let rows = self
            .engine
            .creating_jobs()
            .into_iter()
            .map(|(id, statement, progress)| vec![id.0.to_string(), statement, progress])
            .collect();
        Output::Rows {
            numeric: vec![true, false, false],
            rows,
        }
    }

    // ---- DDL ----

    pub(crate) fn parallelism(&self) -> usize {
        self.config
            .streaming_parallelism()
            .unwrap_or(self.engine.default_parallelism)
    }

    fn rate_limit(&self) -> Option<u32> {
        self.config.streaming_rate_limit()
    }

    /// A new relation's name must be free: `Ok(true)` when it exists and `IF NOT EXISTS` was given. A job
    /// still being created is RisingWave's meta's `table is in creating procedure` (see
    /// [`SqlError::InCreatingProcedure`]), not `exists`.
    /// The catalog's relation of that name answers with its kind (RisingWave's frontend catalog check).
    pub(crate) fn check_free(&self, name: &str, if_not_exists: bool) -> Result<bool, SqlError> {
        let rel = self.cluster().meta.relation_by_name(name);
        if let Some(rel) = &rel
            && rel.state == JobState::Creating
        {
            return Err(SqlError::InCreatingProcedure { id: rel.id.0 });
        }
        let listed = self.listed_duplicate(name);
        if rel.is_none() && listed.is_none() {
            return Ok(false);
        }
        if if_not_exists {
            return Ok(true);
        }
        let Some(rel) = rel else {
            return Err(listed.expect("checked above").into());
        };
        if let Some(dup) = listed {
            return Err(dup.into());
        }
        Err(SqlError::catalog(
            CatalogProblem::Exists,
            format!(
                "{} with name \"{name}\" exists",
                Kind::of(rel.kind).as_str()
            ),
        ))
    }

    /// A `CREATE TABLE`'s `connector` option: only datagen (not run: the table gets rows from DML only), in
    /// a plain format.
    fn table_connector(
        &self,
        name: &str,
        ct: &ast::CreateTable,
        extras: &TableExtras,
    ) -> Result<Option<String>, SqlError> {
        let mut connector = None;
        if let CreateTableOptions::With(options) = &ct.table_options {
            for (key, value) in distinct_options(options)? {
                if key == "connector" {
                    // A datagen table is accepted without its generator (the ddl files only list it);
                    // other connectors need an external system.
                    let datagen = value
                        .to_string()
                        .trim_matches('\'')
                        .eq_ignore_ascii_case("datagen");
                    if !datagen {
                        return Err(SqlError::Unsupported(
                            "CREATE TABLE with a connector (a source)".into(),
                        ));
                    }
                    if let Some(f) = extras.format.as_ref().map(|f| f.format.clone())
                        && !f.eq_ignore_ascii_case("plain")
                    {
                        let mut f = f.to_lowercase();
                        if let Some(c) = f.get_mut(0..1) {
                            c.make_ascii_uppercase();
                        }
                        return Err(SqlError::Invalid(format!(
                            "connector datagen does not support format {f}"
                        )));
                    }
                    self.engine.note(format!(
                        "CREATE TABLE {name}: its datagen connector is not run; the table gets rows from DML only"
                    ));
                    connector = Some("datagen".to_string());
                }
            }
        }
        if let (Some(c), Some(f)) = (&connector, &extras.format) {
            validate_compatibility(c, f)?;
        }
        Ok(connector)
    }

    /// `CREATE TABLE`, with RisingWave's clauses `sqlparser` does not read in `extras` (see
    /// [`crate::handler::create_table`]).
    pub(crate) async fn create_table(
        &self,
        ct: &ast::CreateTable,
        text: &str,
        extras: &TableExtras,
    ) -> Result<Output, SqlError> {
        let target = self.creation_name(&ct.name)?;
        let name = target.job.clone();
        if self.check_free(&name, ct.if_not_exists)? {
            return Ok(Output::Done(0));
        }
        let connector = self.table_connector(&name, ct, extras)?;
        let (columns, pk_names) = bind_table_columns(&name, ct)?;
        let (stored, row_id, pk) = table_key(&columns, &pk_names)?;
        let def = Def {
            kind: Kind::Table,
            columns,
            filter: None,
            project: None,
            stored: stored.clone(),
            row_id,
            pk: pk.clone(),
            append_only: extras.append_only,
            statement: text.trim().to_string(),
        };
        let mut columns_listed = listed_columns(&def);
        if row_id {
            columns_listed.push(ColumnCatalog::hidden(ROW_ID, DataType::Int64));
        }
        // The STRUCT<..> types the rewrite quoted (see `rewrite_create_table`), shown as written.
        let shown = table_definition(ct, extras)
            .replace("\"STRUCT<", "STRUCT<")
            .replace(">\"", ">");
        let id = self.register_job_in(
            &target,
            CatalogKind::Table,
            columns_listed,
            pk.clone(),
            &shown,
            Vec::new(),
            None,
        )?;
        self.set_table_extras(id, connector, extras);
        lock(&self.engine.defs).insert(name.clone(), def);
        let created = self
            .cluster()
            .meta
            .create_table_with_conflict(
                &name,
                stored,
                pk.clone(),
                (0..pk.len()).collect(),
                self.parallelism(),
                table_conflict(row_id),
            )
            .await;
        self.job_created(id, created, |t| Some(*t))?;
        Ok(Output::Done(0))
    }

    async fn create_mv(&self, cv: &ast::CreateView, text: &str) -> Result<Output, SqlError> {
        if cv.or_replace || cv.or_alter {
            return Err(SqlError::Unsupported("CREATE OR REPLACE".into()));
        }
        let target = self.creation_name(&cv.name)?;
        let name = target.job.clone();
        let options = match &cv.options {
            CreateTableOptions::None => Vec::new(),
            CreateTableOptions::With(o) => o.clone(),
            other => return Err(SqlError::Unsupported(format!("view options {other}"))),
        };
        let mut rate_limit = self.rate_limit();
        for (key, value) in distinct_options(&options)? {
            match key.as_str() {
                "streaming_rate_limit" | "backfill_rate_limit" => {
                    rate_limit = positive_u32(&literal(&value)?, &key)?;
                }
                other => return Err(SqlError::UnexpectedOptions(other.to_string())),
            }
        }
        if self.check_free(&name, cv.if_not_exists)? {
            return Ok(Output::Done(0));
        }
        let options = JobOptions {
            parallelism: self.parallelism(),
            rate_limit,
            background: self.config.background_ddl(),
            scan_type: epochlab_meta::StreamScanType::ArrangementBackfill,
        };
        let renames: Vec<String> = cv.columns.iter().map(|c| ident(&c.name)).collect();
        let (upstream, def) = match self.view_of(&cv.query, Kind::MaterializedView, text, &renames)
        {
            Ok(v) => v,
            Err(SqlError::Unsupported(_)) => {
                return self
                    .create_mv_graph(&target, cv, &renames, options, text)
                    .await;
            }
            Err(e) => return Err(e),
        };
        let mut shown = cv.clone();
        shown.if_not_exists = false;
        let id = self.register_job_in(
            &target,
            CatalogKind::MaterializedView,
            listed_columns(&def),
            Vec::new(),
            &shown.to_string(),
            self.job_dependencies(upstream, &cv.query),
            None,
        )?;
        self.list_upstream_key(id, upstream);
        lock(&self.engine.defs).insert(name.clone(), def);
        let created = self
            .cluster()
            .meta
            .create_materialized_view(&name, upstream, options)
            .await;
        self.job_created(id, created, |t| Some(*t))?;
        Ok(Output::Done(0))
    }

    /// `CREATE SINK [IF NOT EXISTS] name (FROM relation | AS query) WITH (connector = 'blackhole', ...)`.
    async fn create_sink(&self, w: &mut Words<'_>, text: &str) -> Result<Output, SqlError> {
        w.next();
        w.next();
        let if_not_exists = w.eat_seq(&["IF", "NOT", "EXISTS"]);
        let target = self.creation_name(&ast::ObjectName::from(vec![ast::Ident::with_quote(
            '"',
            w.ident()?,
        )]))?;
        let name = target.job.clone();
        let query_text = if w.eat("FROM") {
            let from = w.ident()?;
            format!("SELECT * FROM {from}")
        } else if w.eat("AS") {
            w.text_until_with()
        } else {
            return Err(SqlError::Parse(format!(
                "expected FROM or AS after CREATE SINK {name}"
            )));
        };
        if !w.eat("WITH") {
            // RisingWave's parser requires the clause.
            return Err(SqlError::Parse(format!(
                "Expected WITH, found: EOF (sink {name} needs WITH (connector = ...))"
            )));
        }
        let options = w.options()?;
        w.end()?;
        let rate_limit = self.sink_with(&name, options)?;
        if self.check_free(&name, if_not_exists)? {
            return Ok(Output::Done(0));
        }
        let query = match parse_one(&query_text)? {
            Statement::Query(q) => q,
            _ => return Err(SqlError::Parse("expected a query after AS".into())),
        };
        let (upstream, def) = self.view_of(&query, Kind::Sink, text, &[])?;
        let id = self.register_job_in(
            &target,
            CatalogKind::Sink,
            listed_columns(&def),
            Vec::new(),
            &crate::handler::sink_definition(text),
            self.job_dependencies(upstream, &query),
            None,
        )?;
        self.list_upstream_key(id, upstream);
        lock(&self.engine.defs).insert(name.clone(), def);
        let options = JobOptions {
            parallelism: self.parallelism(),
            rate_limit,
            background: self.config.background_ddl(),
            scan_type: epochlab_meta::StreamScanType::ArrangementBackfill,
        };
        let sink = SinkOptions {
            kind: SinkKind::Blackhole,
            ..SinkOptions::default()
        };
        let created = self
            .cluster()
            .meta
            .create_sink(&name, upstream, options, sink)
            .await;
        self.job_created(id, created, |t| Some(*t))?;
        Ok(Output::Done(0))
    }

    /// A sink's WITH options: its connector (only `blackhole`), its rate limit (the session's unless
    /// given); any other option noted and ignored.
    fn sink_with(
        &self,
        name: &str,
        options: Vec<(String, SettingValue)>,
    ) -> Result<Option<u32>, SqlError> {
        let mut connector = None;
        let mut rate_limit = self.rate_limit();
        let mut seen = Vec::new();
        for (key, value) in options {
            if seen.contains(&key) {
                return Err(SqlError::DuplicatedOption(key));
            }
            seen.push(key.clone());
            match key.as_str() {
                "connector" => connector = Some(value),
                "streaming_rate_limit" | "backfill_rate_limit" => {
                    rate_limit = positive_u32(&value.datum()?, &key)?;
                }
                _ => self.engine.note(format!(
                    "CREATE SINK {name}: option {key} accepted and ignored"
                )),
            }
        }
        match connector.as_ref().map(SettingValue::text) {
            Some(c) if c.eq_ignore_ascii_case("blackhole") => {}
            Some(c) => return Err(SqlError::Unsupported(format!("sink connector '{c}'"))),
            None => {
                return Err(SqlError::Invalid(format!(
                    "sink {name} needs WITH (connector = ...)"
                )));
            }
        }
        Ok(rate_limit)
    }

    /// The upstream and definition of a view or sink over one table: a plan that is a scan of it under
    /// projections and filters (see [`crate::planner::stream::single_table`]), kept as expressions over the
    /// upstream's stored rows and applied when the view is read.
    fn view_of(
        &self,
        q: &Query,
        kind: Kind,
        text: &str,
        renames: &[String],
    ) -> Result<(TableId, Def), SqlError> {
        let mut bound = Binder::new(self, true).bind_query(q)?;
        crate::binder::output_names(&mut bound.names, renames)?;
        let shape = crate::planner::stream::single_table(&bound.plan)?;
        let upstream = self.def_of_table(shape.table_id).ok_or_else(|| {
            SqlError::Invalid(format!("the upstream of {} is gone", kind.as_str()))
        })?;
        let columns = bound
            .names
            .iter()
            .zip(&shape.exprs)
            .enumerate()
            .map(|(i, (name, e))| Column {
                name: name.clone(),
                ty: e.return_type(),
                src: i,
            })
            .collect();
        let def = Def {
            kind,
            columns,
            filter: shape.filter,
            project: Some(shape.exprs),
            stored: upstream.stored.clone(),
            row_id: false,
            pk: Vec::new(),
            append_only: false,
            statement: text.trim().to_string(),
        };
        Ok((shape.table_id, def))
    }

    /// SQL's definition of the relation with the engine's table `id`.
    pub(crate) fn def_of_table(&self, id: TableId) -> Option<Def> {
        let rel = self.cluster().meta.catalog().relations.get(&id).cloned()?;
        lock(&self.engine.defs).get(&rel.name).cloned()
    }

    /// `CREATE VIEW name [(cols)] AS query`: a logical view, its query bound to check it and kept as text.
    fn create_view(&self, cv: &ast::CreateView) -> Result<Output, SqlError> {
        if cv.or_replace || cv.or_alter {
            return Err(SqlError::Unsupported("CREATE OR REPLACE VIEW".into()));
        }
        let target = self.creation_name(&cv.name)?;
        let mut binder = Binder::new(self, false);
        let mut bound = binder.bind_query(&cv.query)?;
        let renames: Vec<String> = cv.columns.iter().map(|c| ident(&c.name)).collect();
        crate::binder::output_names(&mut bound.names, &renames)?;
        let columns = bound
            .names
            .iter()
            .zip(bound.types())
            .map(|(n, t)| ColumnCatalog::new(n.clone(), t))
            .collect();
        let mut shown = cv.clone();
        shown.if_not_exists = false;
        let registered = self.register_job_in(
            &target,
            CatalogKind::View,
            columns,
            Vec::new(),
            &shown.to_string(),
            binder.depends_on.clone(),
            Some(cv.query.to_string()),
        );
        match registered {
            Ok(_) => Ok(Output::Done(0)),
            Err(SqlError::CatalogError(crate::catalog::CatalogError::Duplicated(..)))
                if cv.if_not_exists =>
            {
                Ok(Output::Done(0))
            }
            Err(e) => Err(e),
        }
    }

    /// A relation a query or a view may read: it exists, is not a sink, and is created.
    fn readable(&self, name: &str) -> Result<(Relation, Def), SqlError> {
        let Some((rel, def)) = self.engine.lookup(name) else {
            return Err(SqlError::catalog(
                CatalogProblem::NotFound,
                format!("table or source not found: {name}"),
            ));
        };
        self.check_readable(name, rel, def)
    }

    /// The engine's table `id` (which the catalog's relation `name` lists), readable.
    fn readable_id(&self, id: TableId, name: &str) -> Result<(Relation, Def), SqlError> {
        let rel = self.cluster().meta.relation(id);
        let found = rel.and_then(|r| self.def_of_table(id).map(|d| (r, d)));
        let Some((rel, def)) = found else {
            return Err(SqlError::catalog(
                CatalogProblem::NotFound,
                format!("table or source not found: {name}"),
            ));
        };
        self.check_readable(name, rel, def)
    }

    fn check_readable(
        &self,
        name: &str,
        rel: Relation,
        def: Def,
    ) -> Result<(Relation, Def), SqlError> {
        if def.kind == Kind::Sink {
            return Err(SqlError::Invalid(format!("sink {name} cannot be read")));
        }
        if rel.state != JobState::Created {
            return Err(SqlError::catalog(
                CatalogProblem::StillCreating,
                format!(
                    "{} \"{name}\" is still being created (table is in creating procedure)",
                    def.kind.as_str()
                ),
            ));
        }
        Ok((rel, def))
    }

    /// `ALTER SYSTEM SET name TO value` (noted), `ALTER (TABLE | MATERIALIZED VIEW | SINK) name SET
    /// (STREAMING_RATE_LIMIT | BACKFILL_RATE_LIMIT | PARALLELISM) (= | TO) value`.
    async fn alter(&self, w: &mut Words<'_>) -> Result<Output, SqlError> {
        w.next();
        if w.eat("SYSTEM") {
            if !w.eat("SET") {
                return Err(unsupported_words(w.tokens, 3));
            }
            let name = w.ident()?;
            if !(w.eat_token(&Token::Eq) || w.eat("TO")) {
                return Err(SqlError::Parse(format!("expected = or TO after {name}")));
            }
            let value = w.setting_value()?;
            w.end()?;
            self.engine.note(format!(
                "ALTER SYSTEM SET {name} TO {} accepted and ignored: epochlab has no such system parameter at runtime",
                value.text()
            ));
            return Ok(Output::Done(0));
        }
        let kind = if w.eat("TABLE") {
            Kind::Table
        } else if w.eat_seq(&["MATERIALIZED", "VIEW"]) {
            Kind::MaterializedView
        } else if w.eat("SINK") {
            Kind::Sink
        } else {
            return Err(unsupported_words(w.tokens, 2));
        };
        let name = w.ident()?;
        if !w.eat("SET") {
            return Err(unsupported_words(w.tokens, 2));
        }
        let setting = w.ident()?;
        if !(w.eat_token(&Token::Eq) || w.eat("TO")) {
            return Err(SqlError::Parse(format!("expected = or TO after {setting}")));
        }
        let value = w.setting_value()?;
        w.end()?;
        let Some(rel) = self.cluster().meta.relation_by_name(&name) else {
            return Err(SqlError::catalog(
                CatalogProblem::NotFound,
                format!("{} not found: {name}", kind.as_str()),
            ));
        };
        match setting.as_str() {
            "parallelism" => Err(SqlError::Unsupported(
                "ALTER ... SET PARALLELISM (a reschedule here moves vnodes among a job's actors, never changes their number)".into(),
            )),
            "streaming_rate_limit" | "backfill_rate_limit" if kind != Kind::Table => {
                let limit = value.rate_limit()?;
                self.cluster().meta.set_rate_limit(rel.id, limit).await?;
                Ok(Output::Done(0))
            }
            other => Err(SqlError::Unsupported(format!(
                "ALTER {} ... SET {other}",
                kind.as_str().to_uppercase()
            ))),
        }
    }

    // ---- queries ----

    /// A query's column types and rows, at the max committed epoch.
    async fn query(&self, q: &Query) -> Result<(Vec<DataType>, Vec<Vec<Datum>>), SqlError> {
        let bound = Binder::new(self, false).bind_query(q)?;
        let rows = crate::batch::execute(&bound.plan, self)?;
        Ok((
            bound.types(),
            rows.into_iter().map(OwnedRow::into_inner).collect(),
        ))
    }

    /// `rw_catalog.rw_ddl_progress`: the jobs still creating.
    fn ddl_progress(&self) -> RelationRef {
        let rows = self
            .engine
            .creating_jobs()
            .into_iter()
            .map(|(id, statement, progress)| {
                OwnedRow::new(vec![
                    Some(ScalarImpl::Int64(i64::from(id.0))),
                    Some(ScalarImpl::Utf8(statement.into())),
                    Some(ScalarImpl::Utf8(progress.into())),
                ])
            })
            .collect();
        RelationRef::Rows {
            columns: vec![
                ("ddl_id".into(), DataType::Int64),
                ("ddl_statement".into(), DataType::Varchar),
                ("progress".into(), DataType::Varchar),
            ],
            rows,
        }
    }
}

impl CatalogReader for Session {
    fn resolve_relation(&self, name: &str) -> Result<RelationRef, SqlError> {
        if name == "rw_catalog.rw_ddl_progress" || name == "rw_ddl_progress" {
            return Ok(self.ddl_progress());
        }
        let parts: Vec<String> = name.split('.').map(str::to_string).collect();
        let found = self.resolve_any(&crate::handler::parse::Name(parts.clone()));
        let rel = match found {
            Ok(r) => r,
            Err(e) => {
                let (schema, bare) = match parts.as_slice() {
                    [s, n] => (Some(s.as_str()), n.as_str()),
                    [n] => (None, n.as_str()),
                    _ => return Err(e.into()),
                };
                let Some(t) = crate::catalog::system_table::system_table(schema, bare) else {
                    return Err(e.into());
                };
                let rows = (t.rows)(&self.engine.catalog());
                let columns = t.columns().into_iter().map(|c| (c.name, c.ty)).collect();
                return Ok(RelationRef::Rows { columns, rows });
            }
        };
        match rel.kind {
            CatalogKind::View => Ok(RelationRef::View {
                catalog_id: Some(rel.id),
                query: rel.view_query.clone().unwrap_or_default(),
                columns: rel.visible_columns().map(|(_, c)| c.name.clone()).collect(),
            }),
            CatalogKind::Table
            | CatalogKind::MaterializedView
            | CatalogKind::Index
            | CatalogKind::Source
                if rel.table_id.is_some() =>
            {
                let id = rel.table_id.expect("matched above");
                let (meta_rel, def) = self.readable_id(id, &rel.name)?;
                Ok(RelationRef::Table {
                    catalog_id: Some(rel.id),
                    table_id: meta_rel.id,
                    columns: catalog_columns(&def),
                    pk: def.pk.clone(),
                    filter: def.filter.clone(),
                })
            }
            // RisingWave's binder does not find a sink among tables and sources.
            CatalogKind::Sink => Err(crate::catalog::CatalogError::NotFound(
                "table or source",
                rel.name.clone(),
            )
            .into()),
            // A job meta has not answered for yet (being created): meta's relation of that name says so.
            CatalogKind::Table | CatalogKind::MaterializedView => {
                let (meta_rel, def) = self.readable(&rel.job_name())?;
                Ok(RelationRef::Table {
                    catalog_id: Some(rel.id),
                    table_id: meta_rel.id,
                    columns: catalog_columns(&def),
                    pk: def.pk.clone(),
                    filter: def.filter.clone(),
                })
            }
            // A catalog-only index (one the stream planner could not build) or source.
            _ => Ok(self.catalog_only_rows(&rel)?),
        }
    }

    fn committed_rows(&self, table_id: TableId) -> Vec<OwnedRow> {
        self.cluster().committed_rows(table_id)
    }

    fn now_usecs(&self) -> Option<i64> {
        epochlab_common::clock::with_current_run(|run| {
            run.and_then(|(clock, _)| i64::try_from(clock.now_unix_us()).ok())
        })
    }
}

/// A table's stored types, whether it has a hidden row id (no primary key given: the last stored
/// column), and its primary key's positions.
fn table_key(
    columns: &[Column],
    pk_names: &[String],
) -> Result<(Vec<DataType>, bool, Vec<usize>), SqlError> {
    let mut stored: Vec<DataType> = columns.iter().map(|c| c.ty.clone()).collect();
    let row_id = pk_names.is_empty();
    let pk = if row_id {
        stored.push(DataType::Int64);
        vec![stored.len() - 1]
    } else {
        pk_names
            .iter()
            .map(|n| resolve(columns, n))
            .collect::<Result<Vec<_>, _>>()?
    };
    Ok((stored, row_id, pk))
}

/// A view's, sink's or table's visible columns as the catalog lists them.
fn listed_columns(def: &Def) -> Vec<ColumnCatalog> {
    def.columns
        .iter()
        .map(|c| ColumnCatalog::new(c.name.clone(), c.ty.clone()))
        .collect()
}

/// A relation's columns as the binder sees them: the visible ones, then a table's hidden row id.
fn catalog_columns(def: &Def) -> Vec<CatalogColumn> {
    let mut out: Vec<CatalogColumn> = def
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| CatalogColumn {
            name: c.name.clone(),
            ty: c.ty.clone(),
            expr: match &def.project {
                Some(p) => p[i].clone(),
                None => ExprNode::InputRef {
                    index: c.src,
                    ty: c.ty.clone(),
                },
            },
            hidden: false,
        })
        .collect();
    if def.row_id {
        out.push(CatalogColumn {
            name: ROW_ID.into(),
            ty: DataType::Int64,
            expr: ExprNode::InputRef {
                index: def.stored.len() - 1,
                ty: DataType::Int64,
            },
            hidden: true,
        });
    }
    out
}

fn rows_output(types: &[DataType], rows: Vec<Vec<Datum>>) -> Output {
    let numeric = types.iter().map(DataType::is_numeric).collect();
    let rows = rows
        .into_iter()
        .map(|r| r.iter().map(format_datum).collect())
        .collect();
    Output::Rows { numeric, rows }
}

/// How a table's materialize meets a row whose pk it holds: a table with a primary key overwrites it (an insert
/// of an existing key is an update, RisingWave's default `ON CONFLICT OVERWRITE`); a table keyed by its hidden
/// row id never meets one.
fn table_conflict(row_id: bool) -> epochlab_common::plan::ConflictBehavior {
    use epochlab_common::plan::ConflictBehavior;
    if row_id {
        ConflictBehavior::NoCheck
    } else {
        ConflictBehavior::Overwrite
    }
}

/// An identifier as SQL means it: unquoted ones are lower-cased.
pub(crate) fn ident(id: &ast::Ident) -> String {
    match id.quote_style {
        Some(_) => id.value.clone(),
        None => id.value.to_lowercase(),
    }
}

/// A one-part name.
pub(crate) fn object_name(n: &ObjectName) -> Result<String, SqlError> {
    match n.0.as_slice() {
        [ObjectNamePart::Identifier(id)] => Ok(ident(id)),
        [
            ObjectNamePart::Identifier(schema),
            ObjectNamePart::Identifier(id),
        ] if ident(schema) == "public" => Ok(ident(id)),
        _ => Err(SqlError::Unsupported(format!("qualified name {n}"))),
    }
}

/// A name with its parts joined by dots (`rw_catalog.rw_ddl_progress`), `public.` dropped.
fn object_name_path(n: &ObjectName) -> Result<String, SqlError> {
    let parts =
        n.0.iter()
            .map(|p| match p {
                ObjectNamePart::Identifier(id) => Ok(ident(id)),
                other => Err(SqlError::Unsupported(format!("name {other}"))),
            })
            .collect::<Result<Vec<_>, _>>()?;
    let parts: Vec<&str> = match parts.first().map(String::as_str) {
        Some("public") if parts.len() == 2 => parts[1..].iter().map(String::as_str).collect(),
        _ => parts.iter().map(String::as_str).collect(),
    };
    Ok(parts.join("."))
}

/// The engine's type of a SQL type.
pub fn data_type(t: &ast::DataType) -> Result<DataType, SqlError> {
    crate::binder::bind_data_type(t)
}

/// `WITH (key = value, ...)` as pairs; a key given twice is RisingWave's `Duplicated option`.
fn distinct_options(options: &[SqlOption]) -> Result<Vec<(String, Ast)>, SqlError> {
    let mut out: Vec<(String, Ast)> = Vec::new();
    for o in options {
        let SqlOption::KeyValue { key, value } = o else {
            return Err(SqlError::Unsupported(format!("option {o}")));
        };
        let key = object_name_path(key)?;
        if out.iter().any(|(k, _)| *k == key) {
            return Err(SqlError::DuplicatedOption(key));
        }
        out.push((key, value.clone()));
    }
    Ok(out)
}

/// A rate limit: a positive number, or none for 0.
fn positive_u32(d: &Datum, what: &str) -> Result<Option<u32>, SqlError> {
    match d {
        Some(ScalarImpl::Int64(n)) if *n >= 0 => {
            let n =
                u32::try_from(*n).map_err(|_| SqlError::Invalid(format!("{what} out of range")))?;
            Ok((n > 0).then_some(n))
        }
        None => Ok(None),
        _ => Err(SqlError::Invalid(format!(
            "{what} takes a non-negative integer"
        ))),
    }
}

/// The query of a stored view's text (`None` when the text is not a query).
pub(crate) fn parse_query(text: &str) -> Result<Option<Box<Query>>, SqlError> {
    match parse_one(text)? {
        Statement::Query(q) => Ok(Some(q)),
        _ => Ok(None),
    }
}

/// `sqlparser`'s reading of one statement.
pub(crate) fn parse_statement(text: &str) -> Result<Statement, SqlError> {
    parse_one(text)
}

/// A `CREATE TABLE`'s columns and the names of its primary key (from a column option or the constraint).
fn bind_table_columns(
    name: &str,
    ct: &ast::CreateTable,
) -> Result<(Vec<Column>, Vec<String>), SqlError> {
    let mut columns = Vec::new();
    let mut pk_names: Vec<String> = Vec::new();
    for (i, c) in ct.columns.iter().enumerate() {
        let col = ident(&c.name);
        crate::binder::check_column_name(&col)?;
        if columns.iter().any(|x: &Column| x.name == col) {
            return Err(SqlError::Invalid(format!(
                "column \"{col}\" specified more than once"
            )));
        }
        columns.push(Column {
            name: col.clone(),
            ty: data_type(&c.data_type)?,
            src: i,
        });
        for o in &c.options {
            match &o.option {
                ColumnOption::PrimaryKey(_) => pk_names.push(col.clone()),
                ColumnOption::Null | ColumnOption::NotNull => {}
                other => return Err(SqlError::Unsupported(format!("column option {other}"))),
            }
        }
    }
    for constraint in &ct.constraints {
        match constraint {
            TableConstraint::PrimaryKey(pk) => {
                if !pk_names.is_empty() {
                    return Err(SqlError::Invalid(format!(
                        "multiple primary keys for table {name} are not allowed"
                    )));
                }
                for c in &pk.columns {
                    match &c.column.expr {
                        Ast::Identifier(id) => pk_names.push(ident(id)),
                        other => {
                            return Err(SqlError::Unsupported(format!(
                                "primary key expression {other}"
                            )));
                        }
                    }
                }
            }
            other => return Err(SqlError::Unsupported(format!("table constraint {other}"))),
        }
    }
    Ok((columns, pk_names))
}
