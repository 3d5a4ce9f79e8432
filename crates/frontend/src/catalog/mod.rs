//! The catalog as a frontend sees it: meta's SQL catalog ([`epochlab_meta::sql_catalog`], re-exported here),
//! which meta alone writes and each frontend caches ([`CatalogCache`]), and the system catalogs a query reads,
//! computed from it.

mod cache;
pub mod system_table;

pub use cache::CatalogCache;
pub use epochlab_meta::sql_catalog::*;
pub use system_table::{SystemTable, system_table, system_tables};

#[cfg(test)]
mod tests {
    use epochlab_common::DataType;

    use super::*;

    fn table(name: &str, schema: &str) -> RelationCatalog {
        RelationCatalog {
            name: name.into(),
            schema: schema.into(),
            database: DEFAULT_DATABASE_NAME.into(),
            kind: RelationKind::Table,
            columns: vec![ColumnCatalog::new("v", DataType::Int32)],
            owner: DEFAULT_SUPER_USER.into(),
            ..RelationCatalog::default()
        }
    }

    #[test]
    fn system_tables_list_the_catalog() {
        let mut c = Catalog::new();
        c.create_relation(table("t", "public")).unwrap();
        let class = system_table(None, "pg_class").unwrap();
        let rows = class.rows(&c);
        assert_eq!(rows.len(), 1);
        let ns = system_table(Some("pg_catalog"), "pg_namespace").unwrap();
        assert_eq!(ns.rows(&c).len(), 4);
        assert!(system_table(Some("rw_catalog"), "pg_class").is_none());
    }
}
