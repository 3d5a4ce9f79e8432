//! Names the binder cannot read as a table of the engine: a catalog-only index (one the stream planner could
//! not build; read as its table's rows) and a source without its table; and the table a DML statement
//! writes (RisingWave's `resolve_dml_table`).

use super::parse::Name;
use crate::binder::{CatalogReader, RelationRef};
use crate::catalog::{CatalogError, RelationCatalog, RelationKind};
use crate::error::SqlError;
use crate::frontend::Session;

impl Session {
    /// The rows of a relation that has no job of its own: a source without its table (no rows), an index
    /// the stream planner could not build (its table's rows, on the index's columns).
    pub(crate) fn catalog_only_rows(&self, r: &RelationCatalog) -> Result<RelationRef, SqlError> {
        let primary = match (&r.kind, &r.index) {
            (RelationKind::Index, Some(info)) => self
                .engine()
                .catalog()
                .relation(info.primary_table)
                .cloned()
                .ok_or_else(|| CatalogError::NotFound("table", r.name.clone()))?,
            _ => {
                return Ok(RelationRef::Rows {
                    columns: r
                        .visible_columns()
                        .map(|(_, c)| (c.name.clone(), c.ty.clone()))
                        .collect(),
                    rows: Vec::new(),
                });
            }
        };
        let base = self.resolve_relation(&format!("{}.{}", primary.schema, primary.name))?;
        let RelationRef::Table {
            catalog_id,
            table_id,
            columns,
            pk,
            filter,
        } = base
        else {
            return Err(CatalogError::NotFound("table", primary.name).into());
        };
        let picked = r
            .visible_columns()
            .map(|(_, c)| {
                columns
                    .iter()
                    .find(|x| x.name == c.name)
                    .cloned()
                    .ok_or_else(|| {
                        SqlError::Unsupported(format!("reading index {} over expressions", r.name))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RelationRef::Table {
            catalog_id,
            table_id,
            columns: picked,
            pk,
            filter,
        })
    }
}

impl Session {
    /// The table a DML statement writes, by its job's name: RisingWave's `resolve_dml_table` (a
    /// materialized view or an index cannot change; an append-only table takes inserts only).
    pub fn resolve_dml_table(&self, name: &Name, is_insert: bool) -> Result<String, SqlError> {
        let (_, n) = self.schema_qualified(name)?;
        let r = match self.resolve_any(name) {
            Ok(r) => r,
            // A job meta has that the catalog does not list (its CREATE was cut off by a kill).
            Err(CatalogError::NotFound(..))
                if name.0.len() == 1
                    && self.listed_duplicate(&n).is_none()
                    && self.engine().cluster.meta().relation_by_name(&n).is_some() =>
            {
                return Ok(n);
            }
            Err(CatalogError::NotFound(_, n)) => {
                return Err(CatalogError::NotFound("table", n).into());
            }
            Err(e) => return Err(e.into()),
        };
        match r.kind {
            RelationKind::Table => {}
            RelationKind::Index | RelationKind::MaterializedView => {
                return Err(CatalogError::CannotChange(r.kind, n).into());
            }
            _ => return Err(CatalogError::NotFound("table", n).into()),
        }
        if r.append_only && !is_insert {
            return Err(CatalogError::AppendOnlyDml.into());
        }
        Ok(r.job_name())
    }
}
