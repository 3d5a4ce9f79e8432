//! `ALTER ... RENAME TO`, `ALTER ... OWNER TO`, `ALTER ... SET SCHEMA`, `ALTER ... SET PARALLELISM` of
//! relations, databases, schemas and connections (RisingWave's `alter_rename.rs`, `alter_owner.rs`,
//! `alter_set_schema.rs`, `alter_parallelism.rs`).
//!
//! A rename changes the catalog and rewrites the definitions of the relations that use the renamed one, as
//! RisingWave does (`rename.rs`); `SET PARALLELISM` has meta give the job's fragments that many actors
//! (`MetaNode::alter_parallelism`; `AUTO` is the default parallelism), then records it in the catalog.

use sqlparser::tokenizer::Token;

use super::drop::relation_kind;
use super::parse::{Cursor, Name, Value};
use super::rename::{rename_in_definition, rename_in_query, rename_in_sink};
use super::{HandlerResult, done};
use crate::catalog::{Catalog, CatalogError, RelationCatalog, RelationKind, TableParallelism};
use crate::error::SqlError;
use crate::frontend::Session;

/// What an `ALTER` does.
enum Change {
    Rename(String),
    Owner(String),
    Schema(String),
    Parallelism(TableParallelism),
}

fn change(c: &mut Cursor<'_>) -> Result<Option<Change>, SqlError> {
    let ch = if c.eat(&["RENAME", "TO"]) {
        Change::Rename(c.ident()?)
    } else if c.eat(&["OWNER", "TO"]) {
        Change::Owner(c.ident()?)
    } else if c.eat(&["SET", "SCHEMA"]) {
        Change::Schema(c.ident()?)
    } else if c.eat(&["SET", "PARALLELISM"]) {
        if !(c.eat_token(&Token::Eq) || c.eat(&["TO"])) {
            return Err(c.unexpected("= or TO"));
        }
        Change::Parallelism(target_parallelism(c.value()?)?)
    } else {
        return Ok(None);
    };
    c.end()?;
    Ok(Some(ch))
}

/// RisingWave's `extract_table_parallelism`: `auto`, `DEFAULT` and 0 are adaptive, another number (a `u32`)
/// is fixed; anything else is refused.
fn target_parallelism(v: Value) -> Result<TableParallelism, SqlError> {
    const WORDS: &str = "target parallelism must be a valid number or auto";
    match v {
        Value::Word(w) if w.eq_ignore_ascii_case("auto") || w.eq_ignore_ascii_case("default") => {
            Ok(TableParallelism::Adaptive)
        }
        Value::Number(n) => match n.parse::<u32>() {
            Ok(0) => Ok(TableParallelism::Adaptive),
            Ok(n) => Ok(TableParallelism::Fixed(n as usize)),
            Err(e) => Err(SqlError::InvalidInputSyntax(format!("{WORDS}: {e}"))),
        },
        _ => Err(SqlError::InvalidInputSyntax(WORDS.into())),
    }
}

impl Session {
    /// `None` for an `ALTER` that is not the catalog's (`SET STREAMING_RATE_LIMIT`, `ALTER SYSTEM`, ...).
    pub(super) async fn handle_alter(&mut self, c: &mut Cursor<'_>) -> Option<HandlerResult> {
        c.eat(&["ALTER"]);
        if c.eat(&["DATABASE"]) {
            return Some(self.alter_database(c));
        }
        if c.eat(&["SCHEMA"]) {
            return Some(self.alter_schema(c));
        }
        if c.eat(&["CONNECTION"]) {
            return Some(self.alter_connection(c));
        }
        let kind = relation_kind(c)?;
        let name = match c.name() {
            Ok(n) => n,
            Err(e) => return Some(Err(e)),
        };
        match change(c) {
            Ok(Some(Change::Parallelism(p))) => Some(self.alter_parallelism(kind, &name, p).await),
            Ok(Some(ch)) => Some(self.alter_relation(kind, &name, ch)),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }

    fn resolve_altered(
        &self,
        kind: RelationKind,
        name: &Name,
    ) -> Result<RelationCatalog, SqlError> {
        match self.resolve_kind(name, kind) {
            Err(CatalogError::WrongKind(RelationKind::Table)) if kind == RelationKind::Source => {
                Err(SqlError::Invalid(
                    "Use `ALTER TABLE` to alter a table with connector.".into(),
                ))
            }
            other => Ok(other?),
        }
    }

    /// `ALTER .. SET PARALLELISM`: meta reschedules the job's actors first (a relation without a job only
    /// records it), then the catalog records it.
    async fn alter_parallelism(
        &mut self,
        kind: RelationKind,
        name: &Name,
        p: TableParallelism,
    ) -> HandlerResult {
        if kind == RelationKind::View {
            return Err(SqlError::Parse(
                "expected RENAME or OWNER TO or SET SCHEMA after ALTER VIEW, found: PARALLELISM"
                    .into(),
            ));
        }
        let r = self.resolve_altered(kind, name)?;
        self.check_writable()?;
        if let Some(job) = r.table_id {
            let n = match p {
                TableParallelism::Fixed(n) => n,
                TableParallelism::Adaptive => self.engine().default_parallelism,
            };
            self.cluster().meta().alter_parallelism(job, n).await?;
        }
        self.alter_relation(kind, name, Change::Parallelism(p))
    }

    fn alter_relation(&mut self, kind: RelationKind, name: &Name, ch: Change) -> HandlerResult {
        let r = self.resolve_altered(kind, name)?;
        self.catalog_write(|catalog| {
            match ch {
                Change::Rename(to) => rename_relation(catalog, &r, kind, &to)?,
                Change::Owner(to) => catalog.set_relation_owner(r.id, &to)?,
                Change::Schema(to) => catalog.set_relation_schema(r.id, &to)?,
                Change::Parallelism(p) => {
                    catalog
                        .relation_mut(r.id)
                        .expect("resolved above")
                        .parallelism = p;
                }
            }
            Ok::<_, SqlError>(())
        })?;
        done()
    }

    fn alter_database(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        let name = c.ident()?;
        let Some(ch) = change(c)? else {
            return Err(c.unexpected("RENAME TO or OWNER TO"));
        };
        match ch {
            Change::Rename(_) if name == self.database => {
                Err(CatalogError::RenameCurrentDatabase.into())
            }
            Change::Rename(to) => {
                self.catalog_write(|catalog| catalog.rename_database(&name, &to))?;
                done()
            }
            Change::Owner(to) => {
                self.catalog_write(|catalog| catalog.set_database_owner(&name, &to))?;
                done()
            }
            _ => Err(SqlError::Unsupported("ALTER DATABASE ... SET".into())),
        }
    }

    fn alter_schema(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        let name = c.ident()?;
        let Some(ch) = change(c)? else {
            return Err(c.unexpected("RENAME TO or OWNER TO"));
        };
        let db = self.database.clone();
        match ch {
            Change::Rename(to) => {
                self.catalog_write(|catalog| catalog.rename_schema(&db, &name, &to))?
            }
            Change::Owner(to) => {
                self.catalog_write(|catalog| catalog.set_schema_owner(&db, &name, &to))?
            }
            _ => return Err(SqlError::Unsupported("ALTER SCHEMA ... SET".into())),
        }
        done()
    }

    fn alter_connection(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        let name = c.name()?;
        let Some(Change::Schema(to)) = change(c)? else {
            return Err(SqlError::Unsupported(
                "ALTER CONNECTION other than SET SCHEMA".into(),
            ));
        };
        let (schema, n) = self.schema_qualified(&name)?;
        let db = self.database.clone();
        let search_path = self.search_path();
        let user = self.user.clone();
        self.catalog_write(|catalog| {
            catalog.schema(&db, &to)?;
            let schemas = match schema {
                Some(s) => vec![s],
                None => catalog.search_schemas(&db, &search_path, &user),
            };
            let id = schemas
                .iter()
                .find_map(|s| catalog.get_connection(&db, s, &n))
                .map(|x| x.id)
                .ok_or_else(|| CatalogError::NotFound("connection", n.clone()))?;
            if catalog.get_connection(&db, &to, &n).is_some() {
                return Err(CatalogError::Duplicated("connection", n));
            }
            catalog.connection_mut(id).expect("found above").schema = to;
            Ok(())
        })?;
        done()
    }
}

/// The definition with the relation's own name changed: `CREATE <KIND> old` becomes `CREATE <KIND> new`.
fn rename_definition(def: &str, kind: RelationKind, old: &str, new: &str) -> String {
    let head = format!("CREATE {} {old}", kind.sql());
    match def.strip_prefix(&head) {
        Some(rest) => format!("CREATE {} {new}{rest}", kind.sql()),
        None => def.to_string(),
    }
}

/// Rename relation `r` to `to`, with its definition and its dependents' queries and definitions.
fn rename_relation(
    catalog: &mut Catalog,
    r: &RelationCatalog,
    kind: RelationKind,
    to: &str,
) -> Result<(), SqlError> {
    if r.is_table_with_connector()
        && let Some(s) = catalog.get_relation(&r.database, &r.schema, to)
    {
        return Err(CatalogError::Duplicated(s.kind.as_str(), to.into()).into());
    }
    catalog.rename_relation(r.id, to)?;
    let rel = catalog.relation_mut(r.id).expect("renamed above");
    rel.definition = rename_definition(&rel.definition, kind, &r.name, to);
    for d in catalog.dependents(r.id) {
        let dep = catalog.relation_mut(d).expect("a dependent is listed");
        if let Some(q) = &dep.view_query
            && let Some(renamed) = rename_in_query(q, &r.name, to)
        {
            dep.view_query = Some(renamed);
        }
        let renamed = match (&dep.kind, &dep.index) {
            (RelationKind::Index, Some(info)) => Some(format!(
                "CREATE INDEX {} ON {to}({})",
                dep.name,
                info.key_definition()
            )),
            (RelationKind::Sink, _) => rename_in_sink(&dep.definition, &r.name, to),
            _ => rename_in_definition(&dep.definition, &r.name, to),
        };
        if let Some(renamed) = renamed {
            dep.definition = renamed;
        }
    }
    Ok(())
}
