//! `COMMENT ON TABLE t IS '...'`, `COMMENT ON COLUMN t.c IS '...'` (RisingWave's `comment.rs`). An empty
//! comment or `NULL` removes it.

use super::parse::{Cursor, Name, Value};
use super::{HandlerResult, done};
use crate::catalog::CatalogError;
use crate::error::SqlError;
use crate::frontend::Session;

impl Session {
    pub(super) fn handle_comment(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        c.expect(&["COMMENT", "ON"])?;
        let column = if c.eat(&["TABLE"]) {
            false
        } else if c.eat(&["COLUMN"]) {
            true
        } else {
            return Err(c.unexpected("TABLE or COLUMN"));
        };
        let name = c.name()?;
        c.expect(&["IS"])?;
        let text = match c.value()? {
            Value::Text(t) if !t.is_empty() => Some(t),
            Value::Text(_) | Value::Null => None,
            _ => return Err(c.unexpected("a string or NULL")),
        };
        c.end()?;
        let (table, col) = if column {
            let mut parts = name.0.clone();
            let Some(col) = parts.pop().filter(|_| !parts.is_empty()) else {
                return Err(SqlError::Invalid(format!(
                    "column name {name} needs its table"
                )));
            };
            (Name(parts), Some(col))
        } else {
            (name, None)
        };
        let r = self.resolve_any(&table).map_err(|e| match e {
            CatalogError::NotFound("table or source", n) => CatalogError::NotFound("table", n),
            e => e,
        })?;
        self.catalog_write(|catalog| {
            let rel = catalog.relation_mut(r.id).expect("resolved above");
            match col {
                None => rel.description = text,
                Some(col) => {
                    let i = rel
                        .columns
                        .iter()
                        .position(|x| x.name == col)
                        .ok_or_else(|| {
                            SqlError::Invalid(format!("column \"{col}\" does not exist"))
                        })?;
                    match text {
                        Some(t) => rel.column_descriptions.insert(i, t),
                        None => rel.column_descriptions.remove(&i),
                    };
                }
            }
            Ok::<_, SqlError>(())
        })?;
        done()
    }
}
