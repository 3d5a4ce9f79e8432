//! Names in queries, resolved through the catalog (RisingWave's binder's `bind_relation_by_name`): the
//! session's database and search path, schema-qualified names, system tables; every relation a statement
//! resolves is remembered, so that a `CREATE` lists what its new relation depends on.

use epochlab_common::{DataType, OwnedRow};

use super::parse::Name;
use crate::catalog::{CatalogError, RelationCatalog, RelationKind, system_table};
use crate::error::SqlError;
use crate::frontend::Session;

/// What a name in a query is, for the binder.
#[derive(Clone, Debug)]
pub enum Resolved {
    /// A relation with a job (table, materialized view), by the name meta knows it by.
    Job(String),
    /// A logical view, by the name the front end keeps its query under.
    View(String),
    /// Rows computed now: a system table, a source (no rows: catalog only), an index (its table's rows).
    Rows {
        columns: Vec<(String, DataType)>,
        rows: Vec<OwnedRow>,
    },
    /// An index: its table's job, and the index's columns as positions in the table's visible columns.
    Index {
        table_job: String,
        columns: Vec<usize>,
    },
}

impl Session {
    /// Forget the relations resolved so far (at the start of each statement).
    pub fn clear_resolved(&self) {
        self.resolved
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// The relations resolved since the statement started, each once.
    pub fn take_resolved(&self) -> Vec<u32> {
        let mut r = std::mem::take(&mut *self.resolved.lock().unwrap_or_else(|e| e.into_inner()));
        r.dedup();
        r
    }

    /// The relation a query's `dotted` name names.
    pub fn resolve_for_query(&self, dotted: &str) -> Result<Resolved, SqlError> {
        let name = Name(dotted.split('.').map(str::to_string).collect());
        let (schema, n) = self.schema_qualified(&name)?;
        let found = self.resolve_any(&name);
        let r = match found {
            Ok(r) => r,
            Err(CatalogError::NotFound("table or source", _)) => {
                if let Some(t) = system_table(schema.as_deref(), &n) {
                    let catalog = self.engine().catalog();
                    let columns = t.columns().into_iter().map(|c| (c.name, c.ty)).collect();
                    return Ok(Resolved::Rows {
                        columns,
                        rows: t.rows(&catalog),
                    });
                }
                // A job meta has that the catalog does not list (its CREATE was cut off by a kill).
                return match schema {
                    None if self.listed_duplicate(&n).is_none() => Ok(Resolved::Job(n)),
                    None => Err(CatalogError::NotFound("table or source", n).into()),
                    Some(_) => Err(CatalogError::NotFound("table or source", n).into()),
                };
            }
            Err(e) => return Err(e.into()),
        };
        {
            let mut resolved = self.resolved.lock().unwrap_or_else(|e| e.into_inner());
            if !resolved.contains(&r.id) && resolved.len() < crate::catalog::MAX_OBJECTS {
                resolved.push(r.id);
            }
        }
        self.resolved_kind(&r)
    }

    fn resolved_kind(&self, r: &RelationCatalog) -> Result<Resolved, SqlError> {
        // `DataType` stops being `Copy` with the `types` branch; the clone stays right then.
        #[allow(clippy::clone_on_copy)]
        Ok(match r.kind {
            RelationKind::Table | RelationKind::MaterializedView => Resolved::Job(r.job_name()),
            RelationKind::View => Resolved::View(r.job_name()),
            RelationKind::Sink => {
                return Err(CatalogError::NotFound("table or source", r.name.clone()).into());
            }
            RelationKind::Source if r.table_id.is_some() => Resolved::Job(r.job_name()),
            RelationKind::Source => Resolved::Rows {
                columns: r
                    .visible_columns()
                    .map(|(_, c)| (c.name.clone(), c.ty.clone()))
                    .collect(),
                rows: Vec::new(),
            },
            RelationKind::Index => self.index_target(r)?,
        })
    }

    /// An index read as its table's rows, projected onto the index's columns (plain columns only).
    fn index_target(&self, r: &RelationCatalog) -> Result<Resolved, SqlError> {
        if r.table_id.is_some() {
            return Ok(Resolved::Job(r.job_name()));
        }
        let catalog = self.engine().catalog();
        let table = r
            .index
            .as_ref()
            .and_then(|i| catalog.relation(i.primary_table))
            .ok_or_else(|| CatalogError::NotFound("table", r.name.clone()))?;
        let visible: Vec<&str> = table
            .visible_columns()
            .map(|(_, c)| c.name.as_str())
            .collect();
        let columns = r
            .visible_columns()
            .map(|(_, c)| {
                visible.iter().position(|v| *v == c.name).ok_or_else(|| {
                    SqlError::Unsupported(format!("reading index {} over expressions", r.name))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Resolved::Index {
            table_job: table.job_name(),
            columns,
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
                    && self.engine().cluster.meta.relation_by_name(&n).is_some() =>
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
