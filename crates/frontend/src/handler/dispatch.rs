//! The entry point of the catalog's and the session's statements (see the module above): [`handle`] gets
//! every statement first and answers `None` for one that is not of these.

use std::sync::Arc;

use epochlab_meta::notification::NotificationVersion;

use sqlparser::tokenizer::Token;

use super::parse::{Cursor, Name};
use crate::catalog::{Catalog, CatalogError, RelationCatalog, RelationKind};
use crate::error::SqlError;
use crate::frontend::{Engine, Output, Session};

impl Engine {
    /// The catalog as of the newest version meta has notified, as a session of no frontend node reads it.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.catalog()
    }

    /// The notification version of the catalog sessions of no frontend node read.
    pub fn catalog_version(&self) -> NotificationVersion {
        self.catalog.version()
    }
}

/// A statement's result type for the handlers.
pub type HandlerResult = Result<Output, SqlError>;

/// Runs `tokens` (whitespace dropped) when it is one of the handlers' statements.
pub async fn handle(session: &mut Session, tokens: &[Token], text: &str) -> Option<HandlerResult> {
    let mut c = Cursor::new(tokens);
    let first = c.keyword_at(0)?;
    let second = c.keyword_at(1).unwrap_or_default();
    let out = match (first.as_str(), second.as_str()) {
        ("SET", _) | ("RESET", _) => session.handle_set(&mut c),
        ("SHOW", "JOBS") => return None,
        ("SHOW", _) => session.handle_show(&mut c),
        ("DESCRIBE", _) | ("DESC", _) => session.handle_describe(&mut c),
        ("CREATE", "DATABASE" | "SCHEMA" | "CONNECTION") => session.handle_create_catalog(&mut c),
        ("CREATE", "USER") => session.handle_create_user(&mut c),
        ("CREATE", "TABLE") => return session.handle_create_table(tokens).await,
        ("CREATE", "SOURCE") => session.handle_create_source(&mut c, text).await,
        ("CREATE", "INDEX") => return session.handle_create_index(&mut c, text).await,
        ("DROP", "DATABASE" | "SCHEMA" | "USER" | "CONNECTION") => {
            session.handle_drop_catalog(&mut c).await
        }
        ("DROP", _) => session.handle_drop_relation(&mut c).await,
        ("ALTER", "USER") => session.handle_alter_user(&mut c),
        ("ALTER", "SYSTEM") => return None,
        ("ALTER", "TABLE") if super::alter_table_column::is_column_change(tokens) => {
            session.handle_alter_table_column(text).await
        }
        ("ALTER", _) => return session.handle_alter(&mut c).await,
        ("GRANT", _) => session.handle_grant(&mut c),
        ("REVOKE", _) => session.handle_revoke(&mut c),
        ("COMMENT", "ON") => session.handle_comment(&mut c),
        _ => return None,
    };
    Some(out)
}

impl Session {
    /// The session's search path.
    pub fn search_path(&self) -> Vec<String> {
        self.config.search_path()
    }

    /// `(schema, name)` of a relation's name, checked against the session's database (RisingWave's
    /// `Binder::resolve_schema_qualified_name`).
    pub fn schema_qualified(&self, name: &Name) -> Result<(Option<String>, String), CatalogError> {
        match name.0.as_slice() {
            [n] => Ok((None, n.clone())),
            [s, n] => Ok((Some(s.clone()), n.clone())),
            [d, s, n] if *d == self.database => Ok((Some(s.clone()), n.clone())),
            [_, _, _] => Err(CatalogError::CrossDatabase(name.to_string())),
            _ => Err(CatalogError::NameTooLong(name.to_string())),
        }
    }

    /// The schema a new relation called `name` goes to, and its bare name.
    pub fn creation_target(&self, name: &Name) -> Result<(String, String), CatalogError> {
        let (schema, n) = self.schema_qualified(name)?;
        let catalog = self.catalog();
        let schema = match schema {
            Some(s) => {
                catalog.schema(&self.database, &s)?;
                s
            }
            None => catalog.creation_schema(&self.database, &self.search_path(), &self.user)?,
        };
        Ok((schema, n))
    }

    /// The relation of `kind` that `name` names (a clone: the catalog is not held).
    pub fn resolve_kind(
        &self,
        name: &Name,
        kind: RelationKind,
    ) -> Result<RelationCatalog, CatalogError> {
        let (schema, n) = self.schema_qualified(name)?;
        let catalog = self.catalog();
        catalog
            .resolve_relation_of_kind(
                &self.database,
                &self.search_path(),
                &self.user,
                schema.as_deref(),
                &n,
                kind,
            )
            .cloned()
    }

    /// The relation `name` names, whatever its kind.
    pub fn resolve_any(&self, name: &Name) -> Result<RelationCatalog, CatalogError> {
        let (schema, n) = self.schema_qualified(name)?;
        let catalog = self.catalog();
        catalog
            .resolve_relation(
                &self.database,
                &self.search_path(),
                &self.user,
                schema.as_deref(),
                &n,
            )
            .cloned()
    }
}

/// A statement with no rows.
pub(super) fn done() -> HandlerResult {
    Ok(Output::Done(0))
}

/// Rows of text (no numeric columns).
pub(super) fn text_rows(width: usize, rows: Vec<Vec<String>>) -> HandlerResult {
    Ok(Output::Rows {
        numeric: vec![false; width],
        rows,
    })
}
