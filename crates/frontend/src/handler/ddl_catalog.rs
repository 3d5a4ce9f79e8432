//! `CREATE / DROP DATABASE | SCHEMA | CONNECTION | USER`, `CREATE SOURCE` and `CREATE INDEX` (RisingWave's
//! `create_database.rs`, `create_schema.rs`, `create_connection.rs`, `create_source.rs`, `create_index.rs`,
//! `drop_*.rs`).
//!
//! A source is catalog only: `CREATE SOURCE` is accepted with its connector, `FORMAT` and `ENCODE`, and no
//! data is generated (the engine has no connectors); a view or materialized view over it sees no rows.

use epochlab_common::OrderType;
use sqlparser::ast::Statement;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;
use std::sync::atomic::Ordering;

use super::parse::{Cursor, Value};
use super::{HandlerResult, done};
use crate::catalog::{
    CatalogError, ColumnCatalog, ConnectionCatalog, IndexInfo, RelationCatalog, RelationKind,
    TableParallelism, check_valid_column_name,
};
use crate::dialect::RisingWaveDialect;
use crate::error::SqlError;
use crate::frontend::{Output, Session, data_type};

/// A relation's catalog entry for a job the front end creates (table, materialized view, sink, view), in
/// the session's creation schema. Its `table_id` is set once meta has the job.
pub fn relation_for_job(
    session: &Session,
    kind: RelationKind,
    name: &str,
    columns: Vec<ColumnCatalog>,
    pk: Vec<usize>,
    definition: &str,
) -> Result<RelationCatalog, CatalogError> {
    for c in &columns {
        check_valid_column_name(&c.name)?;
    }
    let schema = session.catalog().creation_schema(
        &session.database,
        &session.search_path(),
        &session.user,
    )?;
    Ok(RelationCatalog {
        name: name.into(),
        schema,
        database: session.database.clone(),
        kind,
        columns,
        dist_key: pk.clone(),
        pk,
        definition: definition.trim().trim_end_matches(';').to_string(),
        owner: session.user.clone(),
        // RisingWave: a job created under `SET streaming_parallelism = n` keeps `n`; otherwise it is adaptive.
        parallelism: match session.config.streaming_parallelism() {
            Some(n) => TableParallelism::Fixed(n),
            None => TableParallelism::Adaptive,
        },
        ..RelationCatalog::default()
    })
}

impl Session {
    /// `CREATE DATABASE | SCHEMA | CONNECTION [IF NOT EXISTS] name ...`.
    pub(super) fn handle_create_catalog(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        c.expect(&["CREATE"])?;
        let what = c.keyword_at(0).unwrap_or_default();
        c.eat(&[&what]);
        let if_not_exists = c.eat(&["IF", "NOT", "EXISTS"]);
        let name = c.name()?;
        if name.0.iter().any(String::is_empty) {
            return Err(SqlError::Parse("zero-length delimited identifier".into()));
        }
        let user = self.user.clone();
        let db = self.database.clone();
        let result = match what.as_str() {
            "DATABASE" => {
                c.end()?;
                self.catalog_write(|c| c.create_database(name.last(), &user).map(drop))
            }
            "SCHEMA" => {
                let owner = if c.eat(&["AUTHORIZATION"]) {
                    c.ident()?
                } else {
                    user
                };
                c.end()?;
                let (schema, db) = match name.0.as_slice() {
                    [s] => (s.clone(), db),
                    [d, s] => (s.clone(), d.clone()),
                    _ => return Err(CatalogError::NameTooLong(name.to_string()).into()),
                };
                self.catalog_write(|catalog| {
                    catalog.user(&owner)?;
                    catalog.create_schema(&db, &schema, &owner).map(drop)
                })
            }
            _ => {
                c.expect(&["WITH"])?;
                let options = c.options()?.unwrap_or_default();
                c.end()?;
                let (schema, n) = self.creation_target(&name)?;
                let kind = options
                    .iter()
                    .find(|(k, _)| k == "type")
                    .map_or_else(|| "privatelink".into(), |(_, v)| v.text());
                let conn = ConnectionCatalog {
                    id: 0,
                    name: n,
                    database: db,
                    schema,
                    owner: user,
                    kind,
                };
                self.catalog_write(|c| c.create_connection(conn).map(drop))
            }
        };
        match result {
            Err(CatalogError::Duplicated(..)) if if_not_exists => done(),
            other => {
                other?;
                done()
            }
        }
    }

    /// `DROP DATABASE | SCHEMA | USER | CONNECTION [IF EXISTS] name [CASCADE]`.
    pub(super) async fn handle_drop_catalog(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        c.expect(&["DROP"])?;
        let what = c.keyword_at(0).unwrap_or_default();
        c.eat(&[&what]);
        let if_exists = c.eat(&["IF", "EXISTS"]);
        let name = c.name()?;
        let cascade = c.eat(&["CASCADE"]);
        c.eat(&["RESTRICT"]);
        c.end()?;
        let db = self.database.clone();
        let result = match what.as_str() {
            "DATABASE" if name.last() == db => Err(CatalogError::DropCurrentDatabase.into()),
            "DATABASE" => self.drop_database(name.last()).await,
            "SCHEMA" if cascade => {
                return Err(SqlError::Unsupported("DROP SCHEMA ... CASCADE".into()));
            }
            "SCHEMA" => self
                .catalog_write(|c| c.drop_schema(&db, name.last()))
                .map_err(SqlError::from),
            "USER" => self
                .catalog_write(|c| c.drop_user(name.last()).map(drop))
                .map_err(SqlError::from),
            _ => self.drop_connection(&name).map_err(SqlError::from),
        };
        match result {
            Err(SqlError::CatalogError(CatalogError::NotFound(..))) if if_exists => done(),
            other => {
                other?;
                done()
            }
        }
    }

    /// `DROP DATABASE`: one request meta runs whole, the database's rows, then its streaming jobs
    /// (RisingWave's `drop_database`).
    async fn drop_database(&mut self, name: &str) -> Result<(), SqlError> {
        let meta = self.cluster().meta();
        let command = epochlab_meta::DdlCommand::DropDatabase { name: name.into() };
        let outcome = meta.run_command(command).await.map_err(SqlError::of_ddl)?;
        self.wait_version(outcome.version).await
    }

    fn drop_connection(&mut self, name: &super::parse::Name) -> Result<(), CatalogError> {
        let (schema, n) = self.schema_qualified(name)?;
        let (db, search_path, user) = (&self.database, self.search_path(), &self.user);
        self.catalog_write(|catalog| {
            let schemas = match schema {
                Some(s) => vec![s],
                None => catalog.search_schemas(db, &search_path, user),
            };
            let id = schemas
                .iter()
                .find_map(|s| catalog.get_connection(db, s, &n))
                .map(|x| x.id)
                .ok_or_else(|| CatalogError::NotFound("connection", n.clone()))?;
            catalog.drop_connection(id);
            Ok(())
        })
    }

    /// `CREATE SOURCE [IF NOT EXISTS] name (columns) WITH (connector = ...) [FORMAT f ENCODE e]`. The
    /// source is backed by a table job (its columns and a hidden row id), so that views, materialized views
    /// and sinks over it are built as over a table: a datagen source's job runs its connector
    /// ([`Session::datagen_source`]); another connector's is a table nothing writes, and jobs over
    /// it see no rows.
    pub(super) async fn handle_create_source(
        &mut self,
        c: &mut Cursor<'_>,
        text: &str,
    ) -> HandlerResult {
        c.expect(&["CREATE", "SOURCE"])?;
        let if_not_exists = c.eat(&["IF", "NOT", "EXISTS"]);
        let name = c.name()?;
        let columns_text = c.text_until("WITH");
        c.expect(&["WITH"])?;
        let options = c.options()?.unwrap_or_default();
        let format = if c.is("FORMAT") {
            Some(super::create_table::format_encode(c)?)
        } else {
            None
        };
        c.end()?;
        let (defs, columns) = source_columns(name.last(), &columns_text)?;
        let (connector, format) = source_connector(&options, format)?;
        let (schema, bare) = self.creation_target(&name)?;
        let target = crate::handler::stream_job::CreationTarget {
            job: crate::catalog::job_name(&self.database, &schema, &bare),
            schema,
            name: bare,
        };
        let n = target.name.clone();
        let definition = format!(
            "CREATE SOURCE {n} {defs} WITH ({}){format}",
            options_sql(&options)
        );
        if self.check_free(&target.job, if_not_exists)? {
            return done();
        }
        let run = connector.eq_ignore_ascii_case("datagen")
            && self.engine().run_connectors.load(Ordering::Relaxed);
        let datagen = match run {
            true => {
                let texts: Vec<(String, String)> =
                    options.iter().map(|(k, v)| (k.clone(), v.text())).collect();
                Some(self.datagen_source(&target.job, &columns_text, &texts, text)?)
            }
            false => None,
        };
        let (def, job) = match datagen {
            Some(source) => source.into_job(),
            None => {
                self.engine().note(format!(
                    "CREATE SOURCE: connector {connector} does not run here; the source is an empty table"
                ));
                empty_source_job(&columns, text)
            }
        };
        let r = RelationCatalog {
            name: n,
            schema: target.schema.clone(),
            job: target.job.clone(),
            database: self.database.clone(),
            kind: RelationKind::Source,
            columns,
            append_only: true,
            definition,
            owner: self.user.clone(),
            connector: Some(connector.clone()),
            ..RelationCatalog::default()
        };
        let options = epochlab_meta::JobOptions::parallelism(self.parallelism());
        match self.create_in_meta(r, None, def, job, options).await {
            Err(SqlError::CatalogError(CatalogError::Duplicated(..))) if if_not_exists => done(),
            other => other,
        }
    }

    /// `CREATE INDEX [IF NOT EXISTS] name ON table (key) [INCLUDE (cols)] [DISTRIBUTED BY (cols)]`.
    pub(super) async fn handle_create_index(
        &mut self,
        c: &mut Cursor<'_>,
        text: &str,
    ) -> Option<HandlerResult> {
        Some(self.create_index(c, text).await)
    }

    async fn create_index(&mut self, c: &mut Cursor<'_>, _text: &str) -> HandlerResult {
        c.expect(&["CREATE", "INDEX"])?;
        let if_not_exists = c.eat(&["IF", "NOT", "EXISTS"]);
        let name = c.name()?;
        if name.0.len() > 1 {
            return Err(SqlError::Parse(format!(
                "index name {name} must not be schema-qualified"
            )));
        }
        c.expect(&["ON"])?;
        let table_name = c.name()?;
        let key = paren_token_lists(c)?
            .iter()
            .map(|item| ordered_item(item))
            .collect::<Result<Vec<_>, _>>()?;
        let include = if c.eat(&["INCLUDE"]) {
            Some(paren_list(c)?)
        } else {
            None
        };
        let distributed = if c.eat(&["DISTRIBUTED", "BY"]) {
            Some(paren_list(c)?)
        } else {
            None
        };
        c.end()?;
        let table = self.index_table(&table_name)?;
        let index_name = name.last().to_string();
        if let Some(existing) =
            self.engine()
                .catalog()
                .get_relation(&table.database, &table.schema, &index_name)
        {
            if if_not_exists {
                return done();
            }
            return Err(CatalogError::Duplicated(existing.kind.as_str(), index_name).into());
        }
        let info = index_info(&table, key, include, distributed)?;
        let definition = format!(
            "CREATE INDEX {index_name} ON {}({})",
            table.name,
            info.key_definition()
        );
        if let Some(done) = self
            .create_index_job(&table, &index_name, &info, &definition)
            .await?
        {
            return Ok(done);
        }
        self.create_catalog_only_index(&table, index_name, info, definition)
    }

    /// The table an index is on: a table or a materialized view.
    fn index_table(&self, table_name: &super::parse::Name) -> Result<RelationCatalog, SqlError> {
        let table = self.resolve_any(table_name).map_err(|e| match e {
            CatalogError::NotFound("table or source", n) => CatalogError::NotFound("table", n),
            e => e,
        })?;
        if !matches!(
            table.kind,
            RelationKind::Table | RelationKind::MaterializedView
        ) {
            return Err(SqlError::Invalid(format!(
                "\"{}\" is not a table or materialized view",
                table.name
            )));
        }
        Ok(table)
    }

    /// An index the stream planner cannot build: listed in the catalog only (a query of it reads its
    /// table's rows).
    fn create_catalog_only_index(
        &self,
        table: &RelationCatalog,
        index_name: String,
        info: IndexInfo,
        definition: String,
    ) -> HandlerResult {
        let columns = index_columns(table, &info);
        let r = RelationCatalog {
            name: index_name,
            schema: table.schema.clone(),
            database: table.database.clone(),
            kind: RelationKind::Index,
            pk: (0..info.key.len()).collect(),
            dist_key: (0..info.dist_key_len).collect(),
            columns,
            definition,
            owner: table.owner.clone(),
            depends_on: vec![table.id],
            index: Some(info),
            ..RelationCatalog::default()
        };
        self.catalog_write(|c| c.create_relation(r))?;
        self.engine().note(
            "CREATE INDEX: an index the stream planner cannot build is catalog only; a query of it reads its table's rows"
                .into(),
        );
        Ok(Output::Done(0))
    }

    /// The index's job: a materialized view of its key and included columns over its table in the index's
    /// own layout (keyed by its key, then the table's pk; hashed by its distribution key), then listed as
    /// the index. `None` when the planner cannot build it (the index is then catalog only).
    async fn create_index_job(
        &mut self,
        table: &RelationCatalog,
        index_name: &str,
        info: &IndexInfo,
        definition: &str,
    ) -> Result<Option<Output>, SqlError> {
        let quoted = |n: &str| format!("\"{}\"", n.replace('"', "\"\""));
        let items: Vec<String> = info
            .key
            .iter()
            .map(|k| {
                if k.starts_with('(') {
                    format!("{k} AS {}", quoted(k))
                } else {
                    quoted(k)
                }
            })
            .chain(info.include.iter().map(|c| quoted(c)))
            .collect();
        let select = format!(
            "SELECT {} FROM {}.{}",
            items.join(", "),
            quoted(&table.schema),
            quoted(&table.name)
        );
        let Some(table_id) = table.table_id else {
            return Ok(None);
        };
        let planned = self.index_stream_plan(&select, table_id, info.key.len(), info.dist_key_len);
        let (plan, index_item) = match planned {
            Ok(p) => p,
            Err(SqlError::Unsupported(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let name = super::parse::Name(vec![table.schema.clone(), index_name.to_string()]);
        let target = self.creation_name_of(&name)?;
        let sql = format!(
            "CREATE MATERIALIZED VIEW {}.{} AS {select}",
            quoted(&table.schema),
            quoted(index_name),
        );
        let listing = crate::handler::stream_job::IndexListing {
            definition: definition.to_string(),
            table: table.id,
            info: info.clone(),
            index_item,
        };
        // Meta lists the row as the index in the commit that links its job.
        self.create_index_graph(&target, &plan, &sql, listing)
            .await?;
        Ok(Some(Output::Done(0)))
    }
}

/// A source's connector (its `connector` option, which it must have) and its `FORMAT .. ENCODE ..` clause
/// as SQL (checked against the connector; empty without one).
fn source_connector(
    options: &[(String, Value)],
    format: Option<super::create_table::FormatEncode>,
) -> Result<(String, String), SqlError> {
    let connector = options
        .iter()
        .find(|(k, _)| k == "connector")
        .map(|(_, v)| v.text())
        .ok_or_else(|| SqlError::Invalid("missing field `connector`".into()))?;
    if let Some(f) = &format {
        super::create_table::validate_compatibility(&connector, f)?;
    }
    let format = format.map(|f| f.sql).unwrap_or_default();
    Ok((connector, format))
}

/// `(a, b, ...)`: each item's text (a column name, or an expression as written).
fn paren_list(c: &mut Cursor<'_>) -> Result<Vec<String>, SqlError> {
    Ok(paren_token_lists(c)?.iter().map(|t| item_text(t)).collect())
}

/// The items of a parenthesized list, each its tokens.
fn paren_token_lists(c: &mut Cursor<'_>) -> Result<Vec<Vec<Token>>, SqlError> {
    if !c.eat_token(&Token::LParen) {
        return Err(c.unexpected("("));
    }
    let mut items = Vec::new();
    let mut current: Vec<Token> = Vec::new();
    let mut depth = 0;
    loop {
        let Some(t) = c.peek().cloned() else {
            return Err(c.unexpected(")"));
        };
        c.eat_token(&t);
        match &t {
            Token::LParen => depth += 1,
            Token::RParen if depth == 0 => break,
            Token::RParen => depth -= 1,
            Token::Comma if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(t);
    }
    if !current.is_empty() {
        items.push(current);
    }
    Ok(items)
}

/// An index key item: its expression's text and its order, `[ASC | DESC] [NULLS {FIRST | LAST}]` at its
/// end as PostgreSQL defaults them (NULLs largest).
fn ordered_item(tokens: &[Token]) -> Result<(String, OrderType), SqlError> {
    let word = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    let mut end = tokens.len();
    let mut nulls_first = None;
    if end >= 2 && word(&tokens[end - 2], Keyword::NULLS) {
        nulls_first = match &tokens[end - 1] {
            t if word(t, Keyword::FIRST) => Some(true),
            t if word(t, Keyword::LAST) => Some(false),
            t => {
                return Err(SqlError::Parse(format!(
                    "expected FIRST or LAST, found: {t}"
                )));
            }
        };
        end -= 2;
    }
    let mut order = OrderType::ascending();
    if end >= 1 && word(&tokens[end - 1], Keyword::DESC) {
        order = OrderType::descending();
        end -= 1;
    } else if end >= 1 && word(&tokens[end - 1], Keyword::ASC) {
        end -= 1;
    }
    if end == 0 {
        return Err(SqlError::Parse(
            "expected an expression in the index key".into(),
        ));
    }
    let order = nulls_first.map_or(order, |n| order.with_nulls_first(n));
    Ok((item_text(&tokens[..end]), order))
}

/// A key item's text: a column name folded as an identifier, an expression parenthesized as RisingWave
/// prints it.
fn item_text(tokens: &[Token]) -> String {
    match tokens {
        [Token::Word(w)] => match w.quote_style {
            Some(_) => w.value.clone(),
            None => w.value.to_lowercase(),
        },
        _ => format!("({})", super::parse::join_tokens(tokens)),
    }
}

/// The index's key, included columns and distribution key, checked as RisingWave's `create_index` checks
/// them: the distribution key is a prefix of the key.
fn index_info(
    table: &RelationCatalog,
    key: Vec<(String, OrderType)>,
    include: Option<Vec<String>>,
    distributed: Option<Vec<String>>,
) -> Result<IndexInfo, SqlError> {
    let (key, key_orders): (Vec<String>, Vec<OrderType>) = key.into_iter().unzip();
    let visible: Vec<&str> = table
        .visible_columns()
        .map(|(_, c)| c.name.as_str())
        .collect();
    for k in &key {
        if !k.starts_with('(') && !visible.contains(&k.as_str()) {
            return Err(SqlError::ItemNotFound(format!("Invalid column: {k}")));
        }
    }
    let include: Vec<String> = match include {
        Some(cols) => cols.into_iter().filter(|c| !key.contains(c)).collect(),
        None => visible
            .iter()
            .filter(|c| !key.iter().any(|k| k == *c))
            .map(|c| c.to_string())
            .collect(),
    };
    let dist_key_len = match distributed {
        None => 1.min(key.len()),
        Some(d) => {
            if d.len() > key.len() || d.iter().zip(&key).any(|(a, b)| a != b) {
                return Err(SqlError::Invalid(
                    "Index distributed key must be a prefix of index key".into(),
                ));
            }
            d.len()
        }
    };
    Ok(IndexInfo {
        primary_table: table.id,
        key,
        key_orders,
        include,
        dist_key_len,
        index_item: Vec::new(),
    })
}

/// The index's columns: its key, its included columns, then the table's primary key (hidden).
// `DataType` stops being `Copy` with the `types` branch; the clones stay right then.
#[allow(clippy::clone_on_copy)]
fn index_columns(table: &RelationCatalog, info: &IndexInfo) -> Vec<ColumnCatalog> {
    let ty_of = |n: &str| {
        table
            .columns
            .iter()
            .find(|c| c.name == n)
            .map(|c| c.ty.clone())
    };
    let mut cols: Vec<ColumnCatalog> = Vec::new();
    for n in info.key.iter().chain(&info.include) {
        let ty = ty_of(n).unwrap_or(epochlab_common::DataType::Varchar);
        cols.push(ColumnCatalog::new(n.clone(), ty));
    }
    for &p in &table.pk {
        let c = &table.columns[p];
        if !cols.iter().any(|x| x.name == c.name) {
            cols.push(ColumnCatalog::hidden(c.name.clone(), c.ty.clone()));
        }
    }
    cols
}

/// `key = value, ...` as `SHOW CREATE` prints a `WITH` clause.
pub(super) fn options_sql(options: &[(String, Value)]) -> String {
    options
        .iter()
        .map(|(k, v)| format!("{k} = {}", v.sql()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A source's columns, read by `sqlparser` as a table's: their text as `SHOW CREATE` prints it, and their
/// catalog entries (a generated column `AS expr` is kept as written).
fn source_columns(name: &str, text: &str) -> Result<(String, Vec<ColumnCatalog>), SqlError> {
    if text.trim().is_empty() {
        return Ok((String::new(), Vec::new()));
    }
    let sql = format!("CREATE TABLE {name} {text}");
    let parsed = Parser::parse_sql(&RisingWaveDialect, &sql)?;
    let Some(Statement::CreateTable(ct)) = parsed.first() else {
        return Err(SqlError::Parse(format!("expected columns, found {text}")));
    };
    let mut cols = Vec::new();
    for c in &ct.columns {
        let n = match c.name.quote_style {
            Some(_) => c.name.value.clone(),
            None => c.name.value.to_lowercase(),
        };
        check_valid_column_name(&n)?;
        cols.push(ColumnCatalog::new(n, data_type(&c.data_type)?));
    }
    let defs: Vec<String> = ct.columns.iter().map(ToString::to_string).collect();
    Ok((format!("({})", defs.join(", ")), cols))
}

impl Session {
    /// A job over one upstream (`upstream`, meta's table) lists the upstream's key among its columns (see
    /// [`add_stream_key`]), from this frontend's catalog, on its row before it is sent.
    pub fn with_upstream_key(&self, r: &mut RelationCatalog, upstream: epochlab_common::TableId) {
        let catalog = self.catalog();
        if let Some(up) = catalog.relations().find(|x| x.table_id == Some(upstream))
            && r.pk.is_empty()
        {
            add_stream_key(r, up);
        }
    }
}

/// A job over one upstream keeps the upstream's key: its key columns the job's output leaves out are hidden
/// columns named after the upstream (`t._row_id`, as RisingWave names them), and they are the job's primary
/// and distribution key.
// `DataType` stops being `Copy` with the `types` branch; the clone stays right then.
#[allow(clippy::clone_on_copy)]
fn add_stream_key(r: &mut RelationCatalog, upstream: &RelationCatalog) {
    let mut key = Vec::new();
    for &p in &upstream.pk {
        let c = &upstream.columns[p];
        let hidden_name = format!("{}.{}", upstream.name, c.name);
        let found = r
            .columns
            .iter()
            .position(|x| (!c.hidden && x.name == c.name) || x.name == hidden_name);
        let at = found.unwrap_or_else(|| {
            r.columns
                .push(ColumnCatalog::hidden(hidden_name, c.ty.clone()));
            r.columns.len() - 1
        });
        key.push(at);
    }
    r.pk = key.clone();
    r.dist_key = key;
}

/// The definition and the job of the empty table behind a source whose connector does not run here: its
/// columns, then a hidden row id as its key.
// `DataType` stops being `Copy` with the `types` branch; the clones stay right then.
#[allow(clippy::clone_on_copy)]
fn empty_source_job(
    columns: &[ColumnCatalog],
    text: &str,
) -> (crate::frontend::Def, epochlab_meta::StreamingJob) {
    let columns = columns
        .iter()
        .enumerate()
        .map(|(i, c)| crate::expr::Column {
            name: c.name.clone(),
            ty: c.ty.clone(),
            src: i,
        })
        .collect();
    let def =
        crate::frontend::ddl::source_table_def(columns, epochlab_common::DataType::Int64, text);
    let job = epochlab_meta::StreamingJob::Source {
        column_types: def.stored.clone(),
        row_id_index: def.stored.len() - 1,
        datagen: None,
        generated: Vec::new(),
    };
    (def, job)
}

impl Session {
    /// The catalog's `Duplicated` error when a relation goes by the job name `job`.
    pub fn listed_duplicate(&self, job: &str) -> Option<CatalogError> {
        let catalog = self.catalog();
        let r = catalog.relations().find(|r| r.job_name() == job)?;
        Some(CatalogError::Duplicated(r.kind.as_str(), r.name.clone()))
    }
}

impl Session {
    /// What a job over one upstream depends on: the relations its query names (views included, which the
    /// upstream, a table, does not show) and the upstream's.
    pub fn job_dependencies(
        &self,
        upstream: epochlab_common::TableId,
        query: &sqlparser::ast::Query,
    ) -> Vec<u32> {
        let mut deps = self.catalog_ids_of(upstream);
        let mut binder = crate::binder::Binder::new(self, true);
        if binder.bind_query(query).is_ok() {
            for d in binder.depends_on {
                if !deps.contains(&d) {
                    deps.push(d);
                }
            }
        }
        deps
    }
}
