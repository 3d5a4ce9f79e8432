//! `DESCRIBE relation` (RisingWave's `describe.rs`): its columns (name, type, hidden, description), its
//! primary key and distribution key, its indexes, and its own description.

use super::parse::Cursor;
use super::{HandlerResult, text_rows};
use crate::catalog::{ColumnCatalog, RelationCatalog, RelationKind, system_table};
use crate::frontend::Session;

/// A column's type as RisingWave names it (`integer`, `character varying`; a hidden row id is `serial`).
pub fn type_name(c: &ColumnCatalog) -> String {
    if c.hidden && c.name.ends_with("_row_id") {
        return "serial".into();
    }
    pg_type_name(&c.ty)
}

pub fn pg_type_name(ty: &epochlab_common::DataType) -> String {
    use epochlab_common::DataType as T;
    #[allow(unreachable_patterns)]
    match ty {
        T::Boolean => "boolean".into(),
        T::Int16 => "smallint".into(),
        T::Int32 => "integer".into(),
        T::Int64 => "bigint".into(),
        T::Varchar => "character varying".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// One row per column: name, type, hidden, description.
pub(super) fn column_rows(r: &RelationCatalog) -> Vec<Vec<String>> {
    r.columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            vec![
                c.name.clone(),
                type_name(c),
                c.hidden.to_string(),
                r.column_descriptions
                    .get(&i)
                    .cloned()
                    .unwrap_or_else(|| "NULL".into()),
            ]
        })
        .collect()
}

/// A system table as a relation (for `DESCRIBE` and `SHOW COLUMNS`).
pub(super) fn system_relation(schema: Option<&str>, name: &str) -> Option<RelationCatalog> {
    let t = system_table(schema, name)?;
    Some(RelationCatalog {
        name: t.name.into(),
        schema: t.schema.into(),
        columns: t.columns(),
        ..RelationCatalog::default()
    })
}

impl Session {
    /// The relation a `DESCRIBE` or `SHOW COLUMNS` names: a relation, else a system table.
    pub(super) fn describable(
        &self,
        c: &mut Cursor<'_>,
    ) -> Result<RelationCatalog, crate::error::SqlError> {
        let name = c.name()?;
        match self.resolve_any(&name) {
            Ok(r) => Ok(r),
            Err(e) => {
                let (schema, n) = self.schema_qualified(&name)?;
                system_relation(schema.as_deref(), &n).ok_or_else(|| e.into())
            }
        }
    }

    pub(super) fn handle_describe(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        c.eat(&["DESCRIBE"]);
        c.eat(&["DESC"]);
        let r = self.describable(c)?;
        c.end()?;
        let mut rows = column_rows(&r);
        let names = |cols: &[usize]| {
            cols.iter()
                .map(|&i| r.columns[i].name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let null = || "NULL".to_string();
        if !r.pk.is_empty() && r.kind != RelationKind::Sink {
            rows.push(vec!["primary key".into(), names(&r.pk), null(), null()]);
        }
        if !r.dist_key.is_empty() {
            rows.push(vec![
                "distribution key".into(),
                names(&r.dist_key),
                null(),
                null(),
            ]);
        }
        let catalog = self.catalog();
        for idx in catalog.relations().filter(|x| {
            x.kind == RelationKind::Index
                && x.index.as_ref().is_some_and(|i| i.primary_table == r.id)
        }) {
            let info = idx.index.as_ref().expect("filtered");
            let mut text = format!("index({})", info.key_with_orders().join(", "));
            if !info.include.is_empty() {
                text.push_str(&format!(" include({})", info.include.join(", ")));
            }
            text.push_str(&format!(
                " distributed by({})",
                info.key[..info.dist_key_len].join(", ")
            ));
            rows.push(vec![idx.name.clone(), text, null(), null()]);
        }
        rows.push(vec![
            "table description".into(),
            r.name.clone(),
            null(),
            r.description.clone().unwrap_or_else(null),
        ]);
        text_rows(4, rows)
    }
}
