//! `CREATE / DROP DATABASE | SCHEMA | CONNECTION | USER`, `CREATE SOURCE` and `CREATE INDEX` (RisingWave's
//! `create_database.rs`, `create_schema.rs`, `create_connection.rs`, `create_source.rs`, `create_index.rs`,
//! `drop_*.rs`).
//!
//! A source is catalog only: `CREATE SOURCE` is accepted with its connector, `FORMAT` and `ENCODE`, and no
//! data is generated (the engine has no connectors); a view or materialized view over it sees no rows.

use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use super::parse::{Cursor, Value};
use super::{HandlerResult, done};
use crate::catalog::{
    CatalogError, ColumnCatalog, ConnectionCatalog, IndexInfo, RelationCatalog, RelationKind,
    check_valid_column_name,
};
use crate::error::SqlError;
use crate::frontend::{Output, Session, data_type};

/// A relation's catalog entry for a job the front end creates (table, materialized view, sink), in the
/// session's creation schema. Its `table_id` is set once meta has the job.
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
    let schema = session.engine().catalog().creation_schema(
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
                self.engine()
                    .catalog()
                    .create_database(name.last(), &user)
                    .map(drop)
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
                let mut catalog = self.engine().catalog();
                catalog.user(&owner)?;
                catalog.create_schema(&db, &schema, &owner).map(drop)
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
                self.engine().catalog().create_connection(conn).map(drop)
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
    pub(super) fn handle_drop_catalog(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
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
            "DATABASE" if name.last() == db => Err(CatalogError::DropCurrentDatabase),
            "DATABASE" => self.drop_database(name.last()),
            "SCHEMA" if cascade => {
                return Err(SqlError::Unsupported("DROP SCHEMA ... CASCADE".into()));
            }
            "SCHEMA" => self.engine().catalog().drop_schema(&db, name.last()),
            "USER" => self.engine().catalog().drop_user(name.last()).map(drop),
            _ => self.drop_connection(&name),
        };
        match result {
            Err(CatalogError::NotFound(..)) if if_exists => done(),
            other => {
                other?;
                done()
            }
        }
    }

    fn drop_database(&mut self, name: &str) -> Result<(), CatalogError> {
        let dropped = self.engine().catalog().drop_database(name)?;
        let jobs: Vec<_> = dropped.iter().filter_map(|r| r.table_id).collect();
        if !jobs.is_empty() {
            self.engine().note(format!(
                "DROP DATABASE {name}: its {} streaming job(s) are left to meta (dropped from the catalog only)",
                jobs.len()
            ));
        }
        Ok(())
    }

    fn drop_connection(&mut self, name: &super::Name) -> Result<(), CatalogError> {
        let (schema, n) = self.schema_qualified(name)?;
        let mut catalog = self.engine().catalog();
        let schemas = match schema {
            Some(s) => vec![s],
            None => catalog.search_schemas(&self.database, &self.search_path(), &self.user),
        };
        let id = schemas
            .iter()
            .find_map(|s| catalog.get_connection(&self.database, s, &n))
            .map(|x| x.id)
            .ok_or_else(|| CatalogError::NotFound("connection", n.clone()))?;
        catalog.drop_connection(id);
        Ok(())
    }

    /// `CREATE SOURCE [IF NOT EXISTS] name (columns) WITH (connector = ...) [FORMAT f ENCODE e]`: catalog only.
    pub(super) fn handle_create_source(
        &mut self,
        c: &mut Cursor<'_>,
        _text: &str,
    ) -> HandlerResult {
        c.expect(&["CREATE", "SOURCE"])?;
        let if_not_exists = c.eat(&["IF", "NOT", "EXISTS"]);
        let name = c.name()?;
        let columns_text = c.text_until("WITH");
        c.expect(&["WITH"])?;
        let options = c.options()?.unwrap_or_default();
        let format = format_encode(c)?;
        c.end()?;
        let (defs, columns) = source_columns(name.last(), &columns_text)?;
        let connector = options
            .iter()
            .find(|(k, _)| k == "connector")
            .map(|(_, v)| v.text())
            .ok_or_else(|| SqlError::Invalid("missing field `connector`".into()))?;
        let (schema, n) = self.creation_target(&name)?;
        let definition = format!(
            "CREATE SOURCE {n} {defs} WITH ({}){format}",
            options_sql(&options)
        );
        let r = RelationCatalog {
            name: n,
            schema,
            database: self.database.clone(),
            kind: RelationKind::Source,
            columns,
            append_only: true,
            definition,
            owner: self.user.clone(),
            connector: Some(connector.clone()),
            ..RelationCatalog::default()
        };
        match self.engine().catalog().create_relation(r) {
            Err(CatalogError::Duplicated(..)) if if_not_exists => return done(),
            other => other?,
        };
        self.engine().note(format!(
            "CREATE SOURCE: connector {connector} is catalog only here; the source has no rows"
        ));
        done()
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
        let key = paren_list(c)?;
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
        let table = self.resolve_any(&table_name).map_err(|e| match e {
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
            info.key.join(", ")
        );
        let columns = index_columns(&table, &info);
        let r = RelationCatalog {
            name: index_name.clone(),
            schema: table.schema.clone(),
            database: table.database.clone(),
            kind: RelationKind::Index,
            pk: (0..info.key.len()).collect(),
            dist_key: (0..info.dist_key_len).collect(),
            columns,
            definition,
            owner: table.owner.clone(),
            depends_on: vec![table.id],
            table_id: table.table_id,
            index: Some(info),
            ..RelationCatalog::default()
        };
        self.engine().catalog().create_relation(r)?;
        self.engine()
            .note("CREATE INDEX: catalog only; a query of the index reads its table's rows".into());
        Ok(Output::Done(0))
    }
}

/// `(a, b, ...)`: each item's text (a column name, or an expression as written).
fn paren_list(c: &mut Cursor<'_>) -> Result<Vec<String>, SqlError> {
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
                items.push(item_text(&current));
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(t);
    }
    if !current.is_empty() {
        items.push(item_text(&current));
    }
    Ok(items)
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
    key: Vec<String>,
    include: Option<Vec<String>>,
    distributed: Option<Vec<String>>,
) -> Result<IndexInfo, SqlError> {
    let visible: Vec<&str> = table
        .visible_columns()
        .map(|(_, c)| c.name.as_str())
        .collect();
    for k in &key {
        if !k.starts_with('(') && !visible.contains(&k.as_str()) {
            return Err(SqlError::Invalid(format!("column \"{k}\" does not exist")));
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
        include,
        dist_key_len,
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

/// `FORMAT f ENCODE e`, as ` FORMAT F ENCODE E` (empty when absent).
pub(super) fn format_encode(c: &mut Cursor<'_>) -> Result<String, SqlError> {
    if !c.eat(&["FORMAT"]) {
        return Ok(String::new());
    }
    let format = c.ident()?.to_uppercase();
    c.expect(&["ENCODE"])?;
    let encode = c.ident()?.to_uppercase();
    let rest = c.options()?;
    let mut out = format!(" FORMAT {format} ENCODE {encode}");
    if let Some(o) = rest {
        out.push_str(&format!(" ({})", options_sql(&o)));
    }
    Ok(out)
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
    let parsed = Parser::parse_sql(&PostgreSqlDialect {}, &sql)
        .map_err(|e| SqlError::Parse(e.to_string()))?;
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
    /// Lists a job the front end is about to create (its columns: the visible ones, then a hidden row id),
    /// before meta creates it; [`Session::job_created`] then records meta's id, or forgets the entry when
    /// meta failed. `upstream` is the job's upstream in meta, which the entry depends on.
    pub fn register_job(
        &self,
        kind: RelationKind,
        name: &str,
        columns: Vec<ColumnCatalog>,
        pk: Vec<usize>,
        definition: &str,
        upstream: Option<epochlab_common::TableId>,
    ) -> Result<u32, SqlError> {
        let mut r = relation_for_job(self, kind, name, columns, pk, definition)?;
        let mut catalog = self.engine().catalog();
        if let Some(up) = upstream
            && let Some(u) = catalog
                .relations()
                .find(|x| x.table_id == Some(up) && x.kind != RelationKind::Index)
        {
            r.depends_on.push(u.id);
        }
        Ok(catalog.create_relation(r)?)
    }

    /// Meta's answer to the `CREATE` of the job listed as `id`.
    pub fn job_created<T>(
        &self,
        id: u32,
        created: Result<T, epochlab_meta::DdlError>,
        table_id: impl FnOnce(&T) -> Option<epochlab_common::TableId>,
    ) -> Result<T, SqlError> {
        let mut catalog = self.engine().catalog();
        match created {
            Ok(v) => {
                if let Some(r) = catalog.relation_mut(id) {
                    r.table_id = table_id(&v);
                }
                Ok(v)
            }
            Err(e) => {
                let _ = catalog.drop_relation(id, true);
                Err(e.into())
            }
        }
    }
}
