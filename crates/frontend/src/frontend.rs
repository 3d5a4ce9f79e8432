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
//!
//! Here: the [`Engine`] a run's sessions share, a [`Session`] and its statement dispatch, utility statements
//! and queries. Its parts: `words` (a record's text split into statements, and [`Words`]), `ddl` (CREATE,
//! ALTER), `dml` (INSERT, UPDATE, DELETE).

pub(crate) mod ddl;
mod dml;
mod transaction;
mod words;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use epochlab_barrier::SchedulerStatus;
use epochlab_common::{DataType, Datum, OwnedRow, ScalarImpl, TableId};
use epochlab_meta::notification::NotificationVersion;
use epochlab_meta::{JobState, Relation};
use epochlab_rpc::{MetaClient, MetaRpcError};
use sqlparser::ast::{self, Expr as Ast, ObjectName, ObjectNamePart, Query, SqlOption, Statement};

use crate::binder::{Binder, CatalogColumn, CatalogReader, RelationRef};
use crate::catalog::{CatalogCache, ColumnCatalog, RelationKind as CatalogKind};
pub use crate::catalog::{Def, Kind};
use crate::cluster_client::ClusterClient;
use crate::error::SqlError;
use crate::expr::format_datum;
use crate::handler::create_table::TableExtras;
use crate::scalar::ExprNode;
use crate::session_config::SessionConfig;
use words::{Stmt, Words, parse_one, rewrite_create_table, split_statements, unsupported_words};

pub use words::SettingValue;
pub(crate) use words::token_sql;

/// The statements of a SQL text, each as its own text, as `psql -f` sends them one by one.
pub fn statement_texts(sql: &str) -> Result<Vec<String>, SqlError> {
    Ok(split_statements(sql)?.into_iter().map(|s| s.text).collect())
}

/// Rows per DML chunk sent to the cluster.
const DML_BATCH: usize = 1024;

/// How long `WAIT` waits for background jobs (virtual time).
const WAIT_BUDGET: Duration = Duration::from_secs(3600);

/// How long `RECOVER` waits for the recovery it starts (virtual time).
const RECOVER_BUDGET: Duration = Duration::from_secs(600);

/// How often a DDL's wait for its catalog version looks again (virtual time).
const WAIT_VERSION_POLL: Duration = Duration::from_millis(10);

/// The name of the hidden row id column of a table without a primary key (RisingWave's).
pub const ROW_ID: &str = "_row_id";

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
    pub cluster: Arc<dyn ClusterClient>,
    /// The catalog as the sessions of no frontend node see it (meta's, cached).
    pub(crate) catalog: CatalogCache,
    /// The meta client of the sessions of no frontend node.
    meta_client: Arc<MetaClient>,
    /// Each frontend node's catalog cache and meta client; `None` while the node is down.
    nodes: Mutex<Vec<Option<FrontendNode>>>,
    notes: Mutex<Vec<String>>,
    /// Parallelism of a new job when the session sets none (`SET STREAMING_PARALLELISM`).
    pub default_parallelism: usize,
    /// Whether a datagen `CREATE SOURCE` runs its connector (a `StreamNode::Source` in its table job);
    /// otherwise the source is a table nothing writes.
    pub run_connectors: std::sync::atomic::AtomicBool,
    /// The frontend nodes: each up or down, with its generation (one more at each kill).
    frontends: tokio::sync::watch::Sender<Vec<FrontendLife>>,
    /// The next frontend a connection goes to (RisingWave's `frontend:4566`, a round-robin IPVS service).
    next_frontend: Mutex<usize>,
}

/// A frontend node's life. Sessions are its connections: a kill closes them all, and a client reconnects
/// (to whichever frontend the address gives it next). Each keeps its own cache of meta's catalog, dropped
/// with its kill and rebuilt from meta's snapshot when it restarts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrontendLife {
    pub up: bool,
    pub generation: u64,
}

/// What a frontend node holds while it runs: its copy of meta's catalog and its client of meta, both made
/// at its start.
#[derive(Clone)]
struct FrontendNode {
    catalog: Arc<CatalogCache>,
    meta: Arc<MetaClient>,
}

impl FrontendNode {
    fn start(cluster: &Arc<dyn ClusterClient>, index: usize) -> Self {
        Self {
            catalog: Arc::new(CatalogCache::subscribe(cluster.clone())),
            meta: Arc::new(cluster.meta_client(format!("frontend-{}", index + 1))),
        }
    }
}

/// A connection's frontend: its index and the generation it was connected in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrontendId {
    pub index: usize,
    pub generation: u64,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Engine {
    /// An engine with one frontend node.
    pub fn new(cluster: Arc<dyn ClusterClient>, default_parallelism: usize) -> Arc<Self> {
        Self::with_frontends(cluster, default_parallelism, 1)
    }

    /// An engine with `frontend_nodes` frontend nodes (at least one) behind one round-robin address.
    pub fn with_frontends(
        cluster: Arc<dyn ClusterClient>,
        default_parallelism: usize,
        frontend_nodes: usize,
    ) -> Arc<Self> {
        let life = FrontendLife {
            up: true,
            generation: 0,
        };
        let nodes = frontend_nodes.max(1);
        Arc::new(Self {
            catalog: CatalogCache::subscribe(cluster.clone()),
            meta_client: Arc::new(cluster.meta_client("frontend".into())),
            nodes: Mutex::new(
                (0..nodes)
                    .map(|i| Some(FrontendNode::start(&cluster, i)))
                    .collect(),
            ),
            cluster,
            notes: Mutex::default(),
            default_parallelism: default_parallelism.max(1),
            run_connectors: std::sync::atomic::AtomicBool::new(true),
            frontends: tokio::sync::watch::Sender::new(vec![life; nodes]),
            next_frontend: Mutex::new(0),
        })
    }

    pub fn frontend_nodes(&self) -> usize {
        self.frontends.borrow().len()
    }

    /// A new connection: the address gives the next frontend in turn, up or down (madsim's IPVS round robin
    /// does not skip a dead server), and a frontend that is down refuses it.
    pub fn connect(&self) -> Result<FrontendId, crate::error::ConnectionError> {
        let index = {
            let mut next = lock(&self.next_frontend);
            let index = *next % self.frontend_nodes();
            *next = index + 1;
            index
        };
        let life = self.frontends.borrow()[index];
        if !life.up {
            return Err(crate::error::ConnectionError::Refused);
        }
        Ok(FrontendId {
            index,
            generation: life.generation,
        })
    }

    /// Whether a connection made to `id` is still open (its frontend has not been killed since).
    pub fn is_connected(&self, id: FrontendId) -> bool {
        self.frontends
            .borrow()
            .get(id.index)
            .is_some_and(|life| life.up && life.generation == id.generation)
    }

    /// Kill frontend `index`: its connections close, their statements in flight fail with `connection
    /// closed`, and their DML writes nothing more. `false` when it was down already (or is no frontend).
    pub fn kill_frontend(&self, index: usize) -> bool {
        let killed = self
            .frontends
            .send_if_modified(|lives| match lives.get_mut(index) {
                Some(life) if life.up => {
                    life.up = false;
                    life.generation += 1;
                    true
                }
                _ => false,
            });
        if killed && let Some(node) = lock(&self.nodes).get_mut(index) {
            *node = None;
        }
        killed
    }

    /// Start killed frontend `index` again: new connections may reach it, its catalog cache is built
    /// again from meta's snapshot and its meta client finds the leader anew.
    pub fn restart_frontend(&self, index: usize) {
        if let Some(node) = lock(&self.nodes).get_mut(index)
            && node.is_none()
        {
            *node = Some(FrontendNode::start(&self.cluster, index));
        }
        self.frontends.send_modify(|lives| {
            if let Some(life) = lives.get_mut(index) {
                life.up = true;
            }
        });
    }

    /// Frontend `index`'s catalog cache (`None` while it is down).
    pub fn frontend_catalog(&self, index: usize) -> Option<Arc<CatalogCache>> {
        Some(lock(&self.nodes).get(index)?.as_ref()?.catalog.clone())
    }

    /// Frontend `index`'s meta client (`None` while it is down).
    pub fn frontend_meta_client(&self, index: usize) -> Option<Arc<MetaClient>> {
        Some(lock(&self.nodes).get(index)?.as_ref()?.meta.clone())
    }

    /// Resolves once the connection to `id` has been closed by a kill of its frontend.
    pub async fn frontend_killed(&self, id: FrontendId) {
        let mut rx = self.frontends.subscribe();
        // The sender lives as long as the engine, which the caller holds.
        let _ = rx
            .wait_for(|lives| {
                lives
                    .get(id.index)
                    .is_none_or(|life| life.generation != id.generation)
            })
            .await;
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
        let rel = self.cluster.meta().relation_by_name(name)?;
        let def = self.catalog().def(name).cloned()?;
        (def.kind == Kind::of(rel.kind)).then_some((rel, def))
    }

    /// Jobs still creating, each with its statement and its backfill's progress.
    fn creating_jobs(&self) -> Vec<(TableId, String, String)> {
        let relations: Vec<Relation> = self
            .cluster
            .meta()
            .catalog()
            .relations
            .values()
            .filter(|r| r.state == JobState::Creating && r.upstream.is_some())
            .cloned()
            .collect();
        let catalog = self.catalog();
        let defs = catalog.defs();
        relations
            .into_iter()
            .map(|r| {
                let statement = defs
                    .get(&r.name)
                    .map_or_else(|| r.name.clone(), |d| d.statement.clone());
                let consumed = self.cluster.meta().backfill_progress(r.id).unwrap_or(0);
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
        self.cluster.meta().next_row_ids(table, n)
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
    /// The frontend it is a connection of (`None`: a session of no node, which no kill closes).
    frontend: Option<FrontendId>,
    /// Its open read-only transaction (see `frontend/transaction.rs`).
    txn: std::sync::Mutex<Option<transaction::Transaction>>,
}

impl Session {
    pub fn new(engine: Arc<Engine>) -> Self {
        Self {
            engine,
            config: SessionConfig::new(),
            database: crate::catalog::DEFAULT_DATABASE_NAME.into(),
            user: crate::catalog::DEFAULT_SUPER_USER.into(),
            frontend: None,
            txn: std::sync::Mutex::default(),
        }
    }

    /// `e` with its zone-dependent calls given this session's zone (an expression bound outside a query).
    pub(crate) fn in_session_zone(&self, e: ExprNode) -> ExprNode {
        crate::session_timezone::SessionTimezone::new(self.config.timezone()).rewrite_expr(e)
    }

    /// A session that is a connection of frontend `id`: once that frontend is killed, it writes nothing.
    pub fn on_frontend(mut self, id: FrontendId) -> Self {
        self.frontend = Some(id);
        self
    }

    /// `connection closed` once this session's frontend has been killed: checked before each write the
    /// session itself sends, so a killed frontend's statement stops where the kill found it.
    pub(crate) fn check_connected(&self) -> Result<(), SqlError> {
        match self.frontend {
            Some(id) if !self.engine.is_connected(id) => {
                Err(SqlError::Connection(crate::error::ConnectionError::Closed))
            }
            _ => Ok(()),
        }
    }

    /// The catalog cache this session reads: its frontend's (the engine's for a session of no node, or of a
    /// frontend that is down, whose statements fail on their connection anyway).
    fn catalog_cache(&self) -> Option<Arc<CatalogCache>> {
        self.frontend
            .and_then(|id| self.engine.frontend_catalog(id.index))
    }

    /// The meta client this session's statements call meta with: its frontend's (the engine's for a
    /// session of no node, or of a frontend that is down).
    fn meta_client(&self) -> Arc<MetaClient> {
        self.frontend
            .and_then(|id| self.engine.frontend_meta_client(id.index))
            .unwrap_or_else(|| self.engine.meta_client.clone())
    }

    /// The catalog as this session's frontend has it (never held across an await: a later read sees later
    /// versions).
    pub fn catalog(&self) -> Arc<crate::catalog::Catalog> {
        self.catalog_cache()
            .map_or_else(|| self.engine.catalog(), |c| c.catalog())
    }

    /// The notification version of the catalog this session reads.
    pub fn catalog_version(&self) -> NotificationVersion {
        self.catalog_cache()
            .map_or_else(|| self.engine.catalog_version(), |c| c.version())
    }

    /// Change the catalog: meta applies `change` and commits it as a new version, which this session's
    /// frontend has seen when this returns (RisingWave's frontend waits for the version its DDL returned).
    pub(crate) fn catalog_write<T, E: From<crate::catalog::CatalogError>>(
        &self,
        change: impl FnOnce(&mut crate::catalog::Catalog) -> Result<T, E>,
    ) -> Result<T, E> {
        self.check_writable()?;
        let (out, version) = self.engine.cluster.meta().catalog_write(change)?;
        assert!(
            self.catalog_version() >= version,
            "a frontend's catalog is behind the version its own DDL committed"
        );
        Ok(out)
    }

    /// Wait until the catalog this session reads has `version` (RisingWave's frontend `wait_version`): a
    /// DDL answers its client once the client's next statement sees what it did. A frontend killed
    /// meanwhile ends the wait with its connection.
    pub(crate) async fn wait_version(&self, version: NotificationVersion) -> Result<(), SqlError> {
        while self.catalog_version() < version {
            self.check_connected()?;
            tokio::time::sleep(WAIT_VERSION_POLL).await;
        }
        Ok(())
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    pub(crate) fn cluster(&self) -> &dyn ClusterClient {
        &*self.engine.cluster
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
        // A statement that is a request to meta is one leader-only call of this session's meta client: it
        // fails at once when the meta the client points at is down or not the serving leader (DML and
        // queries go to the compute nodes and go on).
        if let Some(path) = meta_rpc(&s.tokens) {
            self.meta_client().call(&path).map_err(|e| match e {
                MetaRpcError::Unavailable => crate::catalog::CatalogError::MetaUnavailable,
                MetaRpcError::Unimplemented(path) => {
                    crate::catalog::CatalogError::MetaServiceNotFound(path)
                }
            })?;
        }
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
            "EXPLAIN"
                if w.peek_upper_at(1).as_deref() == Some("CREATE")
                    && w.peek_upper_at(2).as_deref() == Some("SINK") =>
            {
                return self.explain_sink(&mut w).map(Some);
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
                Some(q) => {
                    self.create_table_as(&ct, &syntax.column_names, q, &s.text)
                        .await
                }
                None => {
                    let extras = TableExtras {
                        append_only: syntax.append_only,
                        ..TableExtras::default()
                    };
                    self.create_table(&ct, &s.text, &extras).await
                }
            },
            Statement::CreateView(cv) if !cv.materialized => self.create_view(&cv),
            Statement::CreateView(cv) => {
                self.create_mv(&cv, &s.text, syntax.emit_on_window_close)
                    .await
            }
            Statement::Insert(ins) => self.insert(&ins).await,
            Statement::Update(up) => self.update(&up).await,
            Statement::Delete(del) => self.delete(&del).await,
            Statement::Query(q) => {
                let (columns, rows) = self.query(&q).await?;
                Ok(rows_output(&columns, rows, &self.config.timezone()))
            }
            Statement::Explain {
                statement, options, ..
            } => self.explain(&statement, options.as_deref(), syntax.emit_on_window_close),
            Statement::StartTransaction { modes, .. } => self.begin(&modes),
            Statement::Commit { chain, .. } => self.end_transaction(chain, "COMMIT"),
            Statement::Rollback {
                chain,
                savepoint: None,
            } => self.end_transaction(chain, "ROLLBACK"),
            _ => Err(unsupported_words(&s.tokens, 2)),
        }
    }

    // ---- utility statements ----

    pub(crate) async fn flush(&self) -> Result<(), SqlError> {
        Ok(self.cluster().meta().flush().await?)
    }

    /// `WAIT`: until no job is still creating.
    async fn wait(&self) -> Result<(), SqlError> {
        let cluster = self.cluster();
        let waited = tokio::time::timeout(WAIT_BUDGET, async {
            loop {
                let creating = cluster
                    .meta()
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
        let before = cluster.recoveries();
        cluster.fail_next_injection();
        let done = tokio::time::timeout(RECOVER_BUDGET, async {
            loop {
                let recovered = cluster.recoveries() > before;
                if recovered && cluster.meta().scheduler().status() == SchedulerStatus::Ready {
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

    /// `rw_catalog.rw_fragments`: every job's fragments as meta has them (`list_fragment_distribution`),
    /// each under its relation's id.
    fn fragments(&self) -> RelationRef {
        use epochlab_common::types::ListValue;
        let catalog = self.catalog();
        let relation_id = |job: TableId| {
            catalog
                .relations()
                .find(|r| r.table_id == Some(job))
                .map(|r| r.id)
        };
        let int = |v: u32| Some(ScalarImpl::Int32(i32::try_from(v).unwrap_or(i32::MAX)));
        let ints = |v: Vec<u32>| {
            let values = v.into_iter().map(int).collect();
            Some(ScalarImpl::List(ListValue::new(values)))
        };
        let rows = self
            .cluster()
            .meta()
            .list_fragment_distribution()
            .into_iter()
            .filter_map(|(job, f)| {
                let id = relation_id(job)?;
                let flags = f.flags.iter().map(|&x| Some(ScalarImpl::Utf8(x.into())));
                Some(OwnedRow::new(vec![
                    int(f.fragment_id.0),
                    int(id),
                    Some(ScalarImpl::Utf8(
                        if f.single { "SINGLE" } else { "HASH" }.into(),
                    )),
                    ints(f.state_tables.iter().map(|t| t.0).collect()),
                    ints(f.upstream_fragments.iter().map(|t| t.0).collect()),
                    Some(ScalarImpl::List(ListValue::new(flags.collect()))),
                    int(u32::try_from(f.parallelism).unwrap_or(u32::MAX)),
                ]))
            })
            .collect();
        let ints_ty = DataType::List(Box::new(DataType::Int32));
        RelationRef::Rows {
            columns: vec![
                ("fragment_id".into(), DataType::Int32),
                ("table_id".into(), DataType::Int32),
                ("distribution_type".into(), DataType::Varchar),
                ("state_table_ids".into(), ints_ty.clone()),
                ("upstream_fragment_ids".into(), ints_ty),
                ("flags".into(), DataType::List(Box::new(DataType::Varchar))),
                ("parallelism".into(), DataType::Int32),
            ],
            rows,
        }
    }

    /// The system tables read from meta rather than the catalog (RisingWave's frontend asks meta for them).
    fn meta_system_table(&self, name: &str) -> Option<RelationRef> {
        match name.strip_prefix("rw_catalog.").unwrap_or(name) {
            "rw_ddl_progress" => Some(self.ddl_progress()),
            "rw_fragments" => Some(self.fragments()),
            _ => None,
        }
    }
}

impl CatalogReader for Session {
    fn resolve_relation(&self, name: &str) -> Result<RelationRef, SqlError> {
        if let Some(rows) = self.meta_system_table(name) {
            return Ok(rows);
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
                let rows = (t.rows)(&self.catalog());
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
        match self.read_snapshot() {
            Some(epoch) => self.cluster().committed_rows_at(table_id, epoch),
            None => self.cluster().committed_rows(table_id),
        }
    }

    /// A transaction's snapshot's time (RisingWave inlines `now()` from the pinned snapshot), else the
    /// clock's.
    fn now_usecs(&self) -> Option<i64> {
        if let Some(epoch) = self.read_snapshot() {
            return i64::try_from(epoch.as_unix_millis() * 1000).ok();
        }
        epochlab_common::clock::with_current_run(|run| {
            run.and_then(|(clock, _)| i64::try_from(clock.now_unix_us()).ok())
        })
    }

    fn timezone(&self) -> String {
        self.config.timezone()
    }
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
    if let Some(index) = def.row_id_index() {
        out.push(CatalogColumn {
            name: ROW_ID.into(),
            ty: DataType::Int64,
            expr: ExprNode::InputRef {
                index,
                ty: DataType::Int64,
            },
            hidden: true,
        });
    }
    out
}

/// Rows as text; a timestamptz column in the session's zone (RisingWave's pgwire output; one inside a
/// struct or array stays in UTC, as there).
fn rows_output(types: &[DataType], rows: Vec<Vec<Datum>>, zone: &str) -> Output {
    use epochlab_expr::scalar::timestamptz::{lookup_time_zone, to_text_in_zone};
    let numeric = types.iter().map(DataType::is_numeric).collect();
    let zone = lookup_time_zone(zone).ok();
    let text = |d: &Datum| match (d, zone) {
        (Some(ScalarImpl::Timestamptz(t)), Some(z)) => {
            to_text_in_zone(*t, z).unwrap_or_else(|_| format_datum(d))
        }
        _ => format_datum(d),
    };
    let rows = rows
        .into_iter()
        .map(|r| r.iter().map(text).collect())
        .collect();
    Output::Rows { numeric, rows }
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

/// The leader-only call to meta a statement is, as its path in RisingWave's services
/// (`/ddl_service.DdlService/DropTable`), or `None` for one that asks no meta (DML and queries go to the
/// compute nodes). A `CREATE` or `DROP` of a kind is `Create<Kind>` / `Drop<Kind>` of the DDL service (users
/// are the user service's).
fn meta_rpc(tokens: &[sqlparser::tokenizer::Token]) -> Option<String> {
    let words: Vec<String> = tokens
        .iter()
        .filter_map(|t| match t {
            sqlparser::tokenizer::Token::Word(w) => Some(w.value.to_ascii_uppercase()),
            sqlparser::tokenizer::Token::Whitespace(_) => None,
            _ => Some(String::new()),
        })
        .collect();
    let w = |i: usize| words.get(i).map_or("", String::as_str);
    let method = match w(0) {
        "CREATE" if w(1) == "OR" && w(2) == "REPLACE" => object_rpc("Create", w(3), w(4)),
        "CREATE" => object_rpc("Create", w(1), w(2)),
        "DROP" => object_rpc("Drop", w(1), w(2)),
        "ALTER" => alter_rpc(&words),
        "GRANT" => "/user.UserService/GrantPrivilege".into(),
        "REVOKE" => "/user.UserService/RevokePrivilege".into(),
        "COMMENT" => "/ddl_service.DdlService/CommentOn".into(),
        "FLUSH" => "/meta.StreamManagerService/Flush".into(),
        "WAIT" => "/ddl_service.DdlService/Wait".into(),
        "RECOVER" => "/meta.StreamManagerService/Recover".into(),
        _ => return None,
    };
    Some(method)
}

/// `Create` or `Drop` of the object `kind` (`next`: the word after it) names.
fn object_rpc(verb: &str, kind: &str, next: &str) -> String {
    let kind = match (kind, next) {
        ("USER", _) => return format!("/user.UserService/{verb}User"),
        ("MATERIALIZED", _) => "MaterializedView".to_string(),
        ("UNIQUE", _) | ("INDEX", _) => "Index".to_string(),
        ("AGGREGATE", _) => "Function".to_string(),
        (k, _) => camel(k),
    };
    format!("/ddl_service.DdlService/{verb}{kind}")
}

/// The `ALTER` call: a rename, a new owner or schema, parallelism, a rate limit, a new column (the table's
/// plan replaced), a source's or a user's or the system's change.
fn alter_rpc(words: &[String]) -> String {
    let has = |w: &str| words.iter().any(|x| x == w);
    let method = if words.get(1).is_some_and(|w| w == "USER") {
        return "/user.UserService/UpdateUser".into();
    } else if words.get(1).is_some_and(|w| w == "SYSTEM") {
        return "/meta.SystemParamsService/SetSystemParam".into();
    } else if has("RENAME") {
        "AlterName"
    } else if has("OWNER") {
        "AlterOwner"
    } else if has("PARALLELISM") {
        "AlterParallelism"
    } else if words.iter().any(|w| w.ends_with("RATE_LIMIT")) {
        return "/meta.StreamManagerService/ApplyThrottle".into();
    } else if has("SCHEMA") {
        "AlterSetSchema"
    } else if words.get(1).is_some_and(|w| w == "SOURCE") {
        "AlterSource"
    } else {
        "ReplaceTablePlan"
    };
    format!("/ddl_service.DdlService/{method}")
}

/// `SINK` as `Sink`.
fn camel(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |c| {
        c.to_ascii_uppercase().to_string() + &chars.as_str().to_ascii_lowercase()
    })
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

/// A `CREATE TABLE` as `sqlparser` reads it: its `STRUCT<..>` column types quoted (see
/// `rewrite_create_table`).
pub(crate) fn readable_create_table(text: &str) -> Result<String, SqlError> {
    let statements = split_statements(text)?;
    match statements.first() {
        Some(s) => Ok(rewrite_create_table(s).0),
        None => Ok(text.to_string()),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rpc(sql: &str) -> Option<String> {
        meta_rpc(&split_statements(sql).unwrap()[0].tokens)
    }

    #[test]
    fn each_statement_to_meta_is_its_call_and_dml_and_queries_are_none() {
        let calls = [
            ("DROP TABLE t", "/ddl_service.DdlService/DropTable"),
            (
                "create materialized view m as select 1",
                "/ddl_service.DdlService/CreateMaterializedView",
            ),
            (
                "CREATE OR REPLACE VIEW v AS SELECT 1",
                "/ddl_service.DdlService/CreateView",
            ),
            (
                "CREATE UNIQUE INDEX i ON t(k)",
                "/ddl_service.DdlService/CreateIndex",
            ),
            ("DROP SINK s", "/ddl_service.DdlService/DropSink"),
            ("CREATE USER u", "/user.UserService/CreateUser"),
            ("GRANT ALL ON t TO u", "/user.UserService/GrantPrivilege"),
            (
                "ALTER TABLE t RENAME TO u",
                "/ddl_service.DdlService/AlterName",
            ),
            (
                "ALTER MATERIALIZED VIEW m SET PARALLELISM = 2",
                "/ddl_service.DdlService/AlterParallelism",
            ),
            (
                "ALTER TABLE t ADD COLUMN c int",
                "/ddl_service.DdlService/ReplaceTablePlan",
            ),
            ("FLUSH", "/meta.StreamManagerService/Flush"),
            ("WAIT", "/ddl_service.DdlService/Wait"),
        ];
        for (sql, path) in calls {
            assert_eq!(rpc(sql).as_deref(), Some(path), "{sql}");
        }
        for sql in [
            "SELECT 1",
            "INSERT INTO t VALUES (1)",
            "SET x = 1",
            "SHOW TABLES",
        ] {
            assert_eq!(rpc(sql), None, "{sql}");
        }
    }
}
