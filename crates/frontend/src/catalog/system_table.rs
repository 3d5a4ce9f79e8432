//! The system catalogs a query can read (`rw_catalog.rw_tables`, `pg_catalog.pg_class`, ...), as RisingWave's
//! `src/frontend/src/catalog/system_catalog/` defines them, computed from the [`Catalog`]. RisingWave defines
//! several as views over others (`pg_class` over `rw_relations`); here each computes its rows directly, with
//! the same columns. Timestamps (`created_at`, ...) are left out: nothing in the engine has wall time.

use epochlab_common::{DataType, Datum, OwnedRow, ScalarImpl};

use super::{Catalog, ColumnCatalog, RelationCatalog, RelationKind};

/// One system table: its schema, name and columns, and its rows over a catalog.
pub struct SystemTable {
    pub schema: &'static str,
    pub name: &'static str,
    pub columns: &'static [(&'static str, Ty)],
    pub rows: fn(&Catalog) -> Vec<OwnedRow>,
}

/// A system column's type (the `DataType`s the columns use).
#[derive(Clone, Copy, Debug)]
pub enum Ty {
    Int32,
    Varchar,
    Boolean,
}

impl SystemTable {
    pub fn columns(&self) -> Vec<ColumnCatalog> {
        self.columns
            .iter()
            .map(|(n, t)| {
                let ty = match t {
                    Ty::Int32 => DataType::Int32,
                    Ty::Varchar => DataType::Varchar,
                    Ty::Boolean => DataType::Boolean,
                };
                ColumnCatalog::new(*n, ty)
            })
            .collect()
    }

    /// The rows, each checked against the columns' count.
    pub fn rows(&self, catalog: &Catalog) -> Vec<OwnedRow> {
        let rows = (self.rows)(catalog);
        assert!(
            rows.iter().all(|r| r.len() == self.columns.len()),
            "system table {} has rows of another width",
            self.name
        );
        rows
    }
}

fn int(v: u32) -> Datum {
    Some(ScalarImpl::Int32(i32::try_from(v).unwrap_or(i32::MAX)))
}

fn text(v: impl Into<Box<str>>) -> Datum {
    Some(ScalarImpl::Utf8(v.into()))
}

fn boolean(v: bool) -> Datum {
    Some(ScalarImpl::Bool(v))
}

fn row(v: Vec<Datum>) -> OwnedRow {
    OwnedRow::new(v)
}

/// The user id of `name` (0 when it is gone).
fn owner_id(c: &Catalog, name: &str) -> u32 {
    c.user(name).map_or(0, |u| u.id)
}

fn schema_id(c: &Catalog, r: &RelationCatalog) -> u32 {
    c.schema(&r.database, &r.schema).map_or(0, |s| s.id)
}

fn relations_of(c: &Catalog, kind: RelationKind) -> impl Iterator<Item = &RelationCatalog> {
    c.relations().filter(move |r| r.kind == kind)
}

/// `id, name, schema_id, owner, definition, acl` of every relation of `kind`.
fn relation_rows(c: &Catalog, kind: RelationKind) -> Vec<OwnedRow> {
    relations_of(c, kind)
        .map(|r| {
            row(vec![
                int(r.id),
                text(r.name.as_str()),
                int(schema_id(c, r)),
                int(owner_id(c, &r.owner)),
                text(r.definition.as_str()),
                text(""),
            ])
        })
        .collect()
}

const RELATION_COLUMNS: &[(&str, Ty)] = &[
    ("id", Ty::Int32),
    ("name", Ty::Varchar),
    ("schema_id", Ty::Int32),
    ("owner", Ty::Int32),
    ("definition", Ty::Varchar),
    ("acl", Ty::Varchar),
];

fn rw_databases(c: &Catalog) -> Vec<OwnedRow> {
    c.databases()
        .map(|d| {
            row(vec![
                int(d.id),
                text(d.name.as_str()),
                int(owner_id(c, &d.owner)),
                text(""),
            ])
        })
        .collect()
}

fn rw_schemas(c: &Catalog) -> Vec<OwnedRow> {
    c.databases()
        .flat_map(|d| d.schemas.values())
        .map(|s| {
            row(vec![
                int(s.id),
                text(s.name.as_str()),
                int(owner_id(c, &s.owner)),
                text(""),
            ])
        })
        .collect()
}

fn rw_relations(c: &Catalog) -> Vec<OwnedRow> {
    c.relations()
        .map(|r| {
            row(vec![
                int(r.id),
                text(r.name.as_str()),
                text(r.kind.as_str()),
                int(schema_id(c, r)),
                int(owner_id(c, &r.owner)),
                text(r.definition.as_str()),
                text(""),
            ])
        })
        .collect()
}

fn rw_sinks(c: &Catalog) -> Vec<OwnedRow> {
    relations_of(c, RelationKind::Sink)
        .map(|r| {
            row(vec![
                int(r.id),
                text(r.name.as_str()),
                int(schema_id(c, r)),
                int(owner_id(c, &r.owner)),
                text(r.connector.clone().unwrap_or_default()),
                text(if r.append_only {
                    "append-only"
                } else {
                    "upsert"
                }),
                None,
                text(r.definition.as_str()),
                text(""),
            ])
        })
        .collect()
}

fn rw_sources(c: &Catalog) -> Vec<OwnedRow> {
    c.relations()
        .filter(|r| r.kind == RelationKind::Source)
        .map(|r| {
            row(vec![
                int(r.id),
                text(r.name.as_str()),
                int(schema_id(c, r)),
                int(owner_id(c, &r.owner)),
                text(r.connector.clone().unwrap_or_default()),
                text(
                    r.columns
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(","),
                ),
                text(r.definition.as_str()),
                text(""),
            ])
        })
        .collect()
}

fn rw_indexes(c: &Catalog) -> Vec<OwnedRow> {
    relations_of(c, RelationKind::Index)
        .map(|r| {
            let primary = r.index.as_ref().map_or(0, |i| i.primary_table);
            row(vec![
                int(r.id),
                text(r.name.as_str()),
                int(primary),
                int(schema_id(c, r)),
                int(owner_id(c, &r.owner)),
                text(r.definition.as_str()),
                text(""),
            ])
        })
        .collect()
}

fn rw_connections(c: &Catalog) -> Vec<OwnedRow> {
    c.connections()
        .map(|x| {
            let schema = c.schema(&x.database, &x.schema).map_or(0, |s| s.id);
            row(vec![
                int(x.id),
                text(x.name.as_str()),
                int(schema),
                int(owner_id(c, &x.owner)),
                text(x.kind.as_str()),
                text("mock"),
                text(""),
            ])
        })
        .collect()
}

fn rw_table_fragments(c: &Catalog) -> Vec<OwnedRow> {
    c.relations()
        .filter(|r| r.table_id.is_some())
        .map(|r| {
            row(vec![
                int(r.id),
                text("CREATED"),
                text(r.parallelism.to_string()),
            ])
        })
        .collect()
}

fn rw_users(c: &Catalog) -> Vec<OwnedRow> {
    c.users()
        .map(|u| {
            row(vec![
                int(u.id),
                text(u.name.as_str()),
                boolean(u.is_super),
                boolean(u.can_create_db),
                boolean(u.can_create_user),
                boolean(u.can_login),
            ])
        })
        .collect()
}

fn pg_roles(c: &Catalog) -> Vec<OwnedRow> {
    c.users()
        .map(|u| {
            row(vec![
                int(u.id),
                text(u.name.as_str()),
                boolean(u.is_super),
                boolean(true),
                boolean(u.can_create_user),
                boolean(u.can_create_db),
                boolean(u.can_login),
                boolean(true),
                Some(ScalarImpl::Int32(-1)),
                boolean(true),
                text("********"),
            ])
        })
        .collect()
}

fn pg_class(c: &Catalog) -> Vec<OwnedRow> {
    c.relations()
        .map(|r| {
            let kind = match r.kind {
                RelationKind::Table => "r",
                RelationKind::Index => "i",
                RelationKind::View => "v",
                RelationKind::MaterializedView => "m",
                RelationKind::Sink | RelationKind::Source => "",
            };
            row(vec![
                int(r.id),
                text(r.name.as_str()),
                int(schema_id(c, r)),
                int(owner_id(c, &r.owner)),
                text("p"),
                text(kind),
                int(0),
                int(0),
            ])
        })
        .collect()
}

fn pg_tables(c: &Catalog) -> Vec<OwnedRow> {
    relations_of(c, RelationKind::Table)
        .map(|r| {
            row(vec![
                text(r.schema.as_str()),
                text(r.name.as_str()),
                text(r.owner.as_str()),
                None,
            ])
        })
        .collect()
}

fn pg_indexes(c: &Catalog) -> Vec<OwnedRow> {
    relations_of(c, RelationKind::Index)
        .map(|r| {
            let table = r
                .index
                .as_ref()
                .and_then(|i| c.relation(i.primary_table))
                .map_or_else(String::new, |t| t.name.clone());
            row(vec![
                text(r.schema.as_str()),
                text(table),
                text(r.name.as_str()),
                None,
                text(r.definition.as_str()),
            ])
        })
        .collect()
}

fn pg_matviews(c: &Catalog) -> Vec<OwnedRow> {
    relations_of(c, RelationKind::MaterializedView)
        .map(|r| {
            row(vec![
                text(r.schema.as_str()),
                text(r.name.as_str()),
                int(owner_id(c, &r.owner)),
                text(r.definition.as_str()),
                int(r.id),
                text("UTC"),
                text("{}"),
            ])
        })
        .collect()
}

fn pg_namespace(c: &Catalog) -> Vec<OwnedRow> {
    rw_schemas(c)
}

fn pg_views(c: &Catalog) -> Vec<OwnedRow> {
    relations_of(c, RelationKind::View)
        .map(|r| {
            row(vec![
                text(r.schema.as_str()),
                text(r.name.as_str()),
                text(r.owner.as_str()),
                text(r.view_query.clone().unwrap_or_default()),
            ])
        })
        .collect()
}

const SCHEMA_COLUMNS: &[(&str, Ty)] = &[
    ("id", Ty::Int32),
    ("name", Ty::Varchar),
    ("owner", Ty::Int32),
    ("acl", Ty::Varchar),
];

static SYSTEM_TABLES: &[SystemTable] = &[
    SystemTable {
        schema: "rw_catalog",
        name: "rw_databases",
        columns: SCHEMA_COLUMNS,
        rows: rw_databases,
    },
    SystemTable {
        schema: "rw_catalog",
        name: "rw_schemas",
        columns: SCHEMA_COLUMNS,
        rows: rw_schemas,
    },
    SystemTable {
        schema: "rw_catalog",
        name: "rw_tables",
        columns: RELATION_COLUMNS,
        rows: |c| relation_rows(c, RelationKind::Table),
    },
    SystemTable {
        schema: "rw_catalog",
        name: "rw_materialized_views",
        columns: RELATION_COLUMNS,
        rows: |c| relation_rows(c, RelationKind::MaterializedView),
    },
    SystemTable {
        schema: "rw_catalog",
        name: "rw_views",
        columns: RELATION_COLUMNS,
        rows: |c| relation_rows(c, RelationKind::View),
    },
    SystemTable {
        schema: "rw_catalog",
        name: "rw_indexes",
        columns: &[
            ("id", Ty::Int32),
            ("name", Ty::Varchar),
            ("primary_table_id", Ty::Int32),
            ("schema_id", Ty::Int32),
            ("owner", Ty::Int32),
            ("definition", Ty::Varchar),
            ("acl", Ty::Varchar),
        ],
        rows: rw_indexes,
    },
    SystemTable {
        schema: "rw_catalog",
        name: "rw_sinks",
        columns: &[
            ("id", Ty::Int32),
            ("name", Ty::Varchar),
            ("schema_id", Ty::Int32),
            ("owner", Ty::Int32),
            ("connector", Ty::Varchar),
            ("sink_type", Ty::Varchar),
            ("connection_id", Ty::Int32),
            ("definition", Ty::Varchar),
            ("acl", Ty::Varchar),
        ],
        rows: rw_sinks,
    },
    SystemTable {
        schema: "rw_catalog",
        name: "rw_sources",
        columns: &[
            ("id", Ty::Int32),
            ("name", Ty::Varchar),
            ("schema_id", Ty::Int32),
            ("owner", Ty::Int32),
            ("connector", Ty::Varchar),
            ("columns", Ty::Varchar),
            ("definition", Ty::Varchar),
            ("acl", Ty::Varchar),
        ],
        rows: rw_sources,
    },
    SystemTable {
        schema: "rw_catalog",
        name: "rw_connections",
        columns: &[
            ("id", Ty::Int32),
            ("name", Ty::Varchar),
            ("schema_id", Ty::Int32),
            ("owner", Ty::Int32),
            ("type", Ty::Varchar),
            ("provider", Ty::Varchar),
            ("acl", Ty::Varchar),
        ],
        rows: rw_connections,
    },
    SystemTable {
        schema: "rw_catalog",
        name: "rw_relations",
        columns: &[
            ("id", Ty::Int32),
            ("name", Ty::Varchar),
            ("relation_type", Ty::Varchar),
            ("schema_id", Ty::Int32),
            ("owner", Ty::Int32),
            ("definition", Ty::Varchar),
            ("acl", Ty::Varchar),
        ],
        rows: rw_relations,
    },
    SystemTable {
        schema: "rw_catalog",
        name: "rw_table_fragments",
        columns: &[
            ("table_id", Ty::Int32),
            ("status", Ty::Varchar),
            ("parallelism", Ty::Varchar),
        ],
        rows: rw_table_fragments,
    },
    SystemTable {
        schema: "rw_catalog",
        name: "rw_users",
        columns: &[
            ("id", Ty::Int32),
            ("name", Ty::Varchar),
            ("is_super", Ty::Boolean),
            ("create_db", Ty::Boolean),
            ("create_user", Ty::Boolean),
            ("can_login", Ty::Boolean),
        ],
        rows: rw_users,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_namespace",
        columns: &[
            ("oid", Ty::Int32),
            ("nspname", Ty::Varchar),
            ("nspowner", Ty::Int32),
            ("nspacl", Ty::Varchar),
        ],
        rows: pg_namespace,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_class",
        columns: &[
            ("oid", Ty::Int32),
            ("relname", Ty::Varchar),
            ("relnamespace", Ty::Int32),
            ("relowner", Ty::Int32),
            ("relpersistence", Ty::Varchar),
            ("relkind", Ty::Varchar),
            ("relam", Ty::Int32),
            ("reltablespace", Ty::Int32),
        ],
        rows: pg_class,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_roles",
        columns: &[
            ("oid", Ty::Int32),
            ("rolname", Ty::Varchar),
            ("rolsuper", Ty::Boolean),
            ("rolinherit", Ty::Boolean),
            ("rolcreaterole", Ty::Boolean),
            ("rolcreatedb", Ty::Boolean),
            ("rolcanlogin", Ty::Boolean),
            ("rolreplication", Ty::Boolean),
            ("rolconnlimit", Ty::Int32),
            ("rolbypassrls", Ty::Boolean),
            ("rolpassword", Ty::Varchar),
        ],
        rows: pg_roles,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_tables",
        columns: &[
            ("schemaname", Ty::Varchar),
            ("tablename", Ty::Varchar),
            ("tableowner", Ty::Varchar),
            ("tablespace", Ty::Varchar),
        ],
        rows: pg_tables,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_indexes",
        columns: &[
            ("schemaname", Ty::Varchar),
            ("tablename", Ty::Varchar),
            ("indexname", Ty::Varchar),
            ("tablespace", Ty::Varchar),
            ("indexdef", Ty::Varchar),
        ],
        rows: pg_indexes,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_matviews",
        columns: &[
            ("schemaname", Ty::Varchar),
            ("matviewname", Ty::Varchar),
            ("matviewowner", Ty::Int32),
            ("definition", Ty::Varchar),
            ("matviewid", Ty::Int32),
            ("matviewtimezone", Ty::Varchar),
            ("matviewgraph", Ty::Varchar),
        ],
        rows: pg_matviews,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_views",
        columns: &[
            ("schemaname", Ty::Varchar),
            ("viewname", Ty::Varchar),
            ("viewowner", Ty::Varchar),
            ("definition", Ty::Varchar),
        ],
        rows: pg_views,
    },
];

/// Every system table.
pub fn system_tables() -> &'static [SystemTable] {
    SYSTEM_TABLES
}

/// The system table `name`, in `schema` when given (system tables are found without one, as RisingWave's
/// binder finds `pg_catalog`'s and `rw_catalog`'s).
pub fn system_table(schema: Option<&str>, name: &str) -> Option<&'static SystemTable> {
    SYSTEM_TABLES
        .iter()
        .find(|t| t.name == name && schema.is_none_or(|s| s == t.schema))
}
