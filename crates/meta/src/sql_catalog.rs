//! The SQL catalog, which meta owns and writes (RisingWave's `CatalogManager`, `src/meta/src/manager/catalog/`
//! at f21fb9b7915, whose objects the frontend's `src/frontend/src/catalog/` caches): databases, their
//! schemas, the relations in each schema (tables, materialized views, views, indexes, sinks, sources) and the
//! connections, the users and their privileges. The engine's streaming jobs are meta's; a relation that has
//! one names it by [`RelationCatalog::table_id`].
//!
//! Names: a relation is resolved in the session's database, in the schema it names or else along the
//! session's `search_path` (`"$user"` is the session user's schema, when there is one). Tables, materialized
//! views, views, indexes, sinks and sources share one namespace per schema, as in RisingWave.

mod def;
mod error;
pub mod user;

use std::collections::BTreeMap;

use epochlab_common::{DataType, OrderType, TableId};
use serde::{Deserialize, Serialize};

pub use def::{Column, Def, Kind};
pub use error::CatalogError;
pub use user::{Action, GrantKind, Object, Privilege, UserCatalog};

/// The database a new session connects to (RisingWave's `DEFAULT_DATABASE_NAME`).
pub const DEFAULT_DATABASE_NAME: &str = "dev";
/// The schema every database has (RisingWave's `DEFAULT_SCHEMA_NAME`).
pub const DEFAULT_SCHEMA_NAME: &str = "public";
/// The system schemas, created with every database (RisingWave's `SYSTEM_SCHEMAS`).
pub const SYSTEM_SCHEMAS: [&str; 3] = ["pg_catalog", "information_schema", "rw_catalog"];
/// The default superuser (RisingWave's `DEFAULT_SUPER_USER`), and PostgreSQL's.
pub const DEFAULT_SUPER_USER: &str = "root";
pub const DEFAULT_SUPER_USER_FOR_PG: &str = "postgres";
/// The user ids of the default superusers (RisingWave's `DEFAULT_SUPER_USER_ID`, `..._FOR_PG_ID`).
pub const DEFAULT_SUPER_USER_ID: u32 = 1;
pub const DEFAULT_SUPER_USER_FOR_PG_ID: u32 = 2;
/// Column names PostgreSQL reserves for system columns (RisingWave's `check_valid_column_name`).
pub const SYSTEM_COLUMN_NAMES: [&str; 6] = ["tableoid", "xmin", "cmin", "xmax", "cmax", "ctid"];
/// Bound on every kind of object, so that a runaway test cannot grow the catalog without end.
pub const MAX_OBJECTS: usize = 100_000;

/// A catalog object's id: one space for databases, schemas, relations and connections (RisingWave's oids).
pub type RelationId = u32;
pub type DatabaseId = u32;
pub type SchemaId = u32;
pub type UserId = u32;

/// What a relation is.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum RelationKind {
    #[default]
    Table,
    MaterializedView,
    View,
    Index,
    Sink,
    Source,
}

impl RelationKind {
    /// As RisingWave's messages name it.
    pub fn as_str(self) -> &'static str {
        match self {
            RelationKind::Table => "table",
            RelationKind::MaterializedView => "materialized view",
            RelationKind::View => "view",
            RelationKind::Index => "index",
            RelationKind::Sink => "sink",
            RelationKind::Source => "source",
        }
    }

    /// Whether a relation of this kind is a streaming job of meta's (a view, or a catalog-only index, is
    /// not; a source is backed by a table job).
    pub fn has_job(self) -> bool {
        !matches!(self, RelationKind::View)
    }

    /// As SQL spells it (`DROP MATERIALIZED VIEW`).
    pub fn sql(self) -> &'static str {
        match self {
            RelationKind::Table => "TABLE",
            RelationKind::MaterializedView => "MATERIALIZED VIEW",
            RelationKind::View => "VIEW",
            RelationKind::Index => "INDEX",
            RelationKind::Sink => "SINK",
            RelationKind::Source => "SOURCE",
        }
    }
}

/// A column of a relation.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ColumnCatalog {
    pub name: String,
    pub ty: DataType,
    /// A hidden column (`_row_id`): `SELECT *` leaves it out, `DESCRIBE` shows it.
    pub hidden: bool,
}

impl ColumnCatalog {
    pub fn new(name: impl Into<String>, ty: DataType) -> Self {
        Self {
            name: name.into(),
            ty,
            hidden: false,
        }
    }

    pub fn hidden(name: impl Into<String>, ty: DataType) -> Self {
        Self {
            name: name.into(),
            ty,
            hidden: true,
        }
    }
}

/// The streaming parallelism of a job, as `rw_table_fragments` prints it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TableParallelism {
    #[default]
    Adaptive,
    Fixed(usize),
}

impl std::fmt::Display for TableParallelism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TableParallelism::Adaptive => write!(f, "AUTO"),
            TableParallelism::Fixed(n) => write!(f, "FIXED({n})"),
        }
    }
}

/// What an index is beyond its columns: its table, the key and included columns (positions in the table's
/// columns), its distribution key (a prefix of its key, in key positions).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexInfo {
    pub primary_table: RelationId,
    /// The key expressions' text (`v1`, `(j -> 'k')`).
    pub key: Vec<String>,
    /// Each key expression's order (`v1 DESC`); none kept (a store written before orders were) is
    /// every one ascending.
    #[serde(default)]
    pub key_orders: Vec<OrderType>,
    /// The included columns' names.
    pub include: Vec<String>,
    /// How many of the key's columns distribute it.
    pub dist_key_len: usize,
    /// RisingWave's `index_item`: for each of the index table's stored columns, the table's stored column it
    /// holds (`None`: a key expression). Empty for an index without a job (catalog only) or from a store
    /// written before indexes had their own layout: no plan reads such an index instead of its table.
    #[serde(default)]
    pub index_item: Vec<Option<usize>>,
}

impl IndexInfo {
    /// The order of the key's `i`th expression.
    pub fn key_order(&self, i: usize) -> OrderType {
        self.key_orders.get(i).copied().unwrap_or_default()
    }

    /// Each key expression with its order as RisingWave's `DESCRIBE` shows it (`v1 DESC`, `v2 ASC`).
    pub fn key_with_orders(&self) -> Vec<String> {
        let with = |(i, k): (usize, &String)| format!("{k} {}", self.key_order(i));
        self.key.iter().enumerate().map(with).collect()
    }

    /// The key as a `CREATE INDEX` statement writes it: an ascending expression alone, another with its
    /// order.
    pub fn key_definition(&self) -> String {
        let item = |(i, k): (usize, &String)| match self.key_order(i) {
            o if o == OrderType::ascending() => k.clone(),
            o => format!("{k} {o}"),
        };
        let items: Vec<String> = self.key.iter().enumerate().map(item).collect();
        items.join(", ")
    }
}

/// One relation. A literal should end with `..RelationCatalog::default()`: fields are added over time.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct RelationCatalog {
    /// Given by [`Catalog::create_relation`]; any value on the way in.
    pub id: RelationId,
    pub name: String,
    pub schema: String,
    pub database: String,
    pub kind: RelationKind,
    pub columns: Vec<ColumnCatalog>,
    /// Positions in `columns`.
    pub pk: Vec<usize>,
    /// Positions in `columns`.
    pub dist_key: Vec<usize>,
    pub append_only: bool,
    /// The `CREATE` statement as `SHOW CREATE` prints it (RisingWave's canonical text).
    pub definition: String,
    pub owner: String,
    pub depends_on: Vec<RelationId>,
    /// The engine's table, for tables, materialized views and indexes (a sink's job, too).
    pub table_id: Option<TableId>,
    /// The `SELECT` of a (logical) view.
    pub view_query: Option<String>,
    /// A table or source with a connector (`WITH (connector = ...)`).
    pub connector: Option<String>,
    pub parallelism: TableParallelism,
    pub index: Option<IndexInfo>,
    /// `COMMENT ON TABLE`.
    pub description: Option<String>,
    /// `COMMENT ON COLUMN`, by position in `columns`.
    pub column_descriptions: BTreeMap<usize, String>,
    /// The name the front end and meta keep the job (or the view's query) under, fixed at creation: a
    /// rename or a move to another schema changes the catalog's name only.
    pub job: String,
}

/// How a relation is tied to a streaming job of meta's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobLink {
    /// None: a view, or a catalog-only index.
    NoJob,
    /// The job's table.
    Linked(TableId),
    /// A job is to back it, not linked yet: a create in progress (or one a meta kill cut off).
    Pending,
}

impl RelationCatalog {
    /// How this relation is tied to its job; the one place that knows a catalog-only index has none.
    pub fn job_link(&self) -> JobLink {
        match self.table_id {
            Some(t) => JobLink::Linked(t),
            None if !self.kind.has_job() || self.kind == RelationKind::Index => JobLink::NoJob,
            None => JobLink::Pending,
        }
    }

    /// The visible columns, in order (what `SELECT *` gives).
    pub fn visible_columns(&self) -> impl Iterator<Item = (usize, &ColumnCatalog)> {
        self.columns.iter().enumerate().filter(|(_, c)| !c.hidden)
    }

    /// The name the job goes by: [`RelationCatalog::job`], or else the one a new job of this name gets.
    pub fn job_name(&self) -> String {
        if self.job.is_empty() {
            job_name(&self.database, &self.schema, &self.name)
        } else {
            self.job.clone()
        }
    }

    /// A table with a connector is a table (and a source of the same name, in RisingWave).
    pub fn is_table_with_connector(&self) -> bool {
        self.kind == RelationKind::Table && self.connector.is_some()
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct SchemaCatalog {
    pub id: SchemaId,
    pub name: String,
    pub owner: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DatabaseCatalog {
    pub id: DatabaseId,
    pub name: String,
    pub owner: String,
    pub schemas: BTreeMap<String, SchemaCatalog>,
}

/// `CREATE CONNECTION` (catalog only).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ConnectionCatalog {
    pub id: RelationId,
    pub name: String,
    pub database: String,
    pub schema: String,
    pub owner: String,
    pub kind: String,
}

/// The catalog of one cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Catalog {
    databases: BTreeMap<String, DatabaseCatalog>,
    relations: BTreeMap<RelationId, RelationCatalog>,
    connections: BTreeMap<RelationId, ConnectionCatalog>,
    users: BTreeMap<String, UserCatalog>,
    next_id: u32,
    next_user_id: UserId,
    /// The front end's definition of each streaming job, by job name.
    defs: BTreeMap<String, Def>,
}

impl Default for Catalog {
    fn default() -> Self {
        Self::new()
    }
}

/// A catalog as meta's SQL store keeps it: each map's entries by their key, and the counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CatalogParts {
    pub databases: Vec<(String, DatabaseCatalog)>,
    pub relations: Vec<(RelationId, RelationCatalog)>,
    pub connections: Vec<(RelationId, ConnectionCatalog)>,
    pub users: Vec<(String, UserCatalog)>,
    pub defs: Vec<(String, Def)>,
    pub next_id: u32,
    pub next_user_id: UserId,
}

impl Catalog {
    /// The catalog's entries, for a store's tables.
    pub fn to_parts(&self) -> CatalogParts {
        fn entries<K: Clone, V: Clone>(m: &BTreeMap<K, V>) -> Vec<(K, V)> {
            m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        }
        CatalogParts {
            databases: entries(&self.databases),
            relations: entries(&self.relations),
            connections: entries(&self.connections),
            users: entries(&self.users),
            defs: entries(&self.defs),
            next_id: self.next_id,
            next_user_id: self.next_user_id,
        }
    }

    /// The catalog a store's tables hold.
    pub fn from_parts(p: CatalogParts) -> Self {
        Self {
            databases: p.databases.into_iter().collect(),
            relations: p.relations.into_iter().collect(),
            connections: p.connections.into_iter().collect(),
            users: p.users.into_iter().collect(),
            defs: p.defs.into_iter().collect(),
            next_id: p.next_id,
            next_user_id: p.next_user_id,
        }
    }
    /// A cluster's first catalog: database `dev` with its schemas, the superusers `root` and `postgres`.
    pub fn new() -> Self {
        let mut c = Self {
            databases: BTreeMap::new(),
            relations: BTreeMap::new(),
            connections: BTreeMap::new(),
            users: BTreeMap::new(),
            next_id: 1,
            next_user_id: DEFAULT_SUPER_USER_FOR_PG_ID + 1,
            defs: BTreeMap::new(),
        };
        for (id, name) in [
            (DEFAULT_SUPER_USER_ID, DEFAULT_SUPER_USER),
            (DEFAULT_SUPER_USER_FOR_PG_ID, DEFAULT_SUPER_USER_FOR_PG),
        ] {
            c.users
                .insert(name.into(), UserCatalog::superuser(id, name));
        }
        c.create_database(DEFAULT_DATABASE_NAME, DEFAULT_SUPER_USER)
            .expect("a fresh catalog has no database");
        c
    }

    /// Every relation and connection id below it has been handed out.
    pub fn ids_handed_out(&self) -> u32 {
        self.next_id
    }

    fn next_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    // ---- the front end's job definitions ----

    /// The definition of the job named `job` (its [`job_name`]), as last set.
    pub fn def(&self, job: &str) -> Option<&Def> {
        self.defs.get(job)
    }

    pub fn defs(&self) -> &BTreeMap<String, Def> {
        &self.defs
    }

    /// Set the definition of the job named `job`, replacing an earlier one of that name.
    pub fn set_def(&mut self, job: String, def: Def) {
        self.defs.insert(job, def);
    }

    // ---- databases ----

    pub fn databases(&self) -> impl Iterator<Item = &DatabaseCatalog> {
        self.databases.values()
    }

    pub fn database(&self, name: &str) -> Result<&DatabaseCatalog, CatalogError> {
        self.databases
            .get(name)
            .ok_or_else(|| CatalogError::NotFound("database", name.into()))
    }

    fn database_mut(&mut self, name: &str) -> Result<&mut DatabaseCatalog, CatalogError> {
        self.databases
            .get_mut(name)
            .ok_or_else(|| CatalogError::NotFound("database", name.into()))
    }

    /// A new database with `public` and the system schemas.
    pub fn create_database(&mut self, name: &str, owner: &str) -> Result<DatabaseId, CatalogError> {
        if self.databases.contains_key(name) {
            return Err(CatalogError::Duplicated("database", name.into()));
        }
        self.check_capacity(self.databases.len())?;
        let id = self.next_id();
        let mut schemas = BTreeMap::new();
        for s in std::iter::once(DEFAULT_SCHEMA_NAME).chain(SYSTEM_SCHEMAS) {
            let sid = self.next_id();
            schemas.insert(
                s.to_string(),
                SchemaCatalog {
                    id: sid,
                    name: s.into(),
                    owner: owner.into(),
                },
            );
        }
        let db = DatabaseCatalog {
            id,
            name: name.into(),
            owner: owner.into(),
            schemas,
        };
        self.databases.insert(name.into(), db);
        Ok(id)
    }

    /// Drops the database and everything in it (RisingWave drops its relations with it).
    pub fn drop_database(&mut self, name: &str) -> Result<Vec<RelationCatalog>, CatalogError> {
        self.database(name)?;
        let ids: Vec<RelationId> = self
            .relations
            .values()
            .filter(|r| r.database == name)
            .map(|r| r.id)
            .collect();
        let dropped = ids
            .into_iter()
            .filter_map(|id| self.relations.remove(&id))
            .collect();
        self.connections.retain(|_, c| c.database != name);
        self.databases.remove(name);
        Ok(dropped)
    }

    pub fn rename_database(&mut self, name: &str, to: &str) -> Result<(), CatalogError> {
        if self.databases.contains_key(to) {
            return Err(CatalogError::Duplicated("database", to.into()));
        }
        let mut db = self
            .databases
            .remove(name)
            .ok_or_else(|| CatalogError::NotFound("database", name.into()))?;
        db.name = to.into();
        self.databases.insert(to.into(), db);
        for r in self.relations.values_mut().filter(|r| r.database == name) {
            r.database = to.into();
        }
        for c in self.connections.values_mut().filter(|c| c.database == name) {
            c.database = to.into();
        }
        Ok(())
    }

    pub fn set_database_owner(&mut self, name: &str, owner: &str) -> Result<(), CatalogError> {
        self.user(owner)?;
        self.database_mut(name)?.owner = owner.into();
        Ok(())
    }

    // ---- schemas ----

    pub fn schema(&self, db: &str, name: &str) -> Result<&SchemaCatalog, CatalogError> {
        self.database(db)?
            .schemas
            .get(name)
            .ok_or_else(|| CatalogError::NotFound("schema", name.into()))
    }

    pub fn create_schema(
        &mut self,
        db: &str,
        name: &str,
        owner: &str,
    ) -> Result<SchemaId, CatalogError> {
        if self.database(db)?.schemas.contains_key(name) {
            return Err(CatalogError::Duplicated("schema", name.into()));
        }
        let id = self.next_id();
        let schema = SchemaCatalog {
            id,
            name: name.into(),
            owner: owner.into(),
        };
        self.database_mut(db)?.schemas.insert(name.into(), schema);
        Ok(id)
    }

    /// Drops an empty schema (RisingWave does not cascade to a schema's relations).
    pub fn drop_schema(&mut self, db: &str, name: &str) -> Result<(), CatalogError> {
        self.schema(db, name)?;
        if is_system_schema(name) {
            return Err(CatalogError::SystemSchema(name.into()));
        }
        let in_schema = |r_db: &str, r_schema: &str| r_db == db && r_schema == name;
        if let Some(r) = self
            .relations
            .values()
            .find(|r| in_schema(&r.database, &r.schema))
        {
            let what = if r.kind == RelationKind::Source {
                "source"
            } else {
                "table"
            };
            return Err(CatalogError::NotEmpty(
                "schema",
                name.into(),
                what,
                r.name.clone(),
            ));
        }
        self.connections
            .retain(|_, c| !in_schema(&c.database, &c.schema));
        self.database_mut(db)?.schemas.remove(name);
        Ok(())
    }

    pub fn rename_schema(&mut self, db: &str, name: &str, to: &str) -> Result<(), CatalogError> {
        self.schema(db, name)?;
        if is_system_schema(name) {
            return Err(CatalogError::SystemSchema(name.into()));
        }
        if self.database(db)?.schemas.contains_key(to) {
            return Err(CatalogError::Duplicated("schema", to.into()));
        }
        let d = self.database_mut(db)?;
        let mut s = d.schemas.remove(name).expect("checked above");
        s.name = to.into();
        d.schemas.insert(to.into(), s);
        for r in self.relations.values_mut() {
            if r.database == db && r.schema == name {
                r.schema = to.into();
            }
        }
        for c in self.connections.values_mut() {
            if c.database == db && c.schema == name {
                c.schema = to.into();
            }
        }
        Ok(())
    }

    pub fn set_schema_owner(
        &mut self,
        db: &str,
        name: &str,
        owner: &str,
    ) -> Result<(), CatalogError> {
        self.user(owner)?;
        self.schema(db, name)?;
        let d = self.database_mut(db)?;
        d.schemas.get_mut(name).expect("checked above").owner = owner.into();
        Ok(())
    }

    /// The schemas a name without one is looked up in: `search_path`'s existing ones, `"$user"` being the
    /// user's schema. System schemas are searched first when `search_path` does not name them (pg_catalog,
    /// as PostgreSQL; RisingWave's binder also finds rw_catalog's relations).
    pub fn search_schemas(&self, db: &str, search_path: &[String], user: &str) -> Vec<String> {
        let Ok(d) = self.database(db) else {
            return Vec::new();
        };
        let mut out: Vec<String> = Vec::new();
        for s in search_path {
            let s = if s == "$user" { user } else { s.as_str() };
            if d.schemas.contains_key(s) && !out.iter().any(|x| x == s) {
                out.push(s.to_string());
            }
        }
        out
    }

    /// The schema a new relation without a schema goes to: the first existing schema of `search_path`.
    pub fn creation_schema(
        &self,
        db: &str,
        search_path: &[String],
        user: &str,
    ) -> Result<String, CatalogError> {
        self.search_schemas(db, search_path, user)
            .into_iter()
            .next()
            .ok_or(CatalogError::NoSchemaSelected)
    }

    // ---- relations ----

    pub fn relations(&self) -> impl Iterator<Item = &RelationCatalog> {
        self.relations.values()
    }

    pub fn relation(&self, id: RelationId) -> Option<&RelationCatalog> {
        self.relations.get(&id)
    }

    pub fn relation_mut(&mut self, id: RelationId) -> Option<&mut RelationCatalog> {
        self.relations.get_mut(&id)
    }

    /// The relation called `name` in `db.schema`.
    pub fn get_relation(&self, db: &str, schema: &str, name: &str) -> Option<&RelationCatalog> {
        self.relations
            .values()
            .find(|r| r.database == db && r.schema == schema && r.name == name)
    }

    /// The relation a query names: in `schema` when given, else in the first schema of the search path that
    /// has it.
    pub fn resolve_relation(
        &self,
        db: &str,
        search_path: &[String],
        user: &str,
        schema: Option<&str>,
        name: &str,
    ) -> Result<&RelationCatalog, CatalogError> {
        if let Some(schema) = schema {
            self.schema(db, schema)?;
            return self
                .get_relation(db, schema, name)
                .ok_or_else(|| CatalogError::NotFound("table or source", name.into()));
        }
        self.search_schemas(db, search_path, user)
            .iter()
            .find_map(|s| self.get_relation(db, s, name))
            .ok_or_else(|| CatalogError::NotFound("table or source", name.into()))
    }

    /// The relation of kind `kind` a `DROP` or `ALTER` names, with RisingWave's errors for a missing one and
    /// one of another kind (`Use \`DROP TABLE\` to drop a table.`).
    pub fn resolve_relation_of_kind(
        &self,
        db: &str,
        search_path: &[String],
        user: &str,
        schema: Option<&str>,
        name: &str,
        kind: RelationKind,
    ) -> Result<&RelationCatalog, CatalogError> {
        let found = match self.resolve_relation(db, search_path, user, schema, name) {
            Ok(r) => r,
            Err(CatalogError::NotFound("table or source", n)) => {
                return Err(CatalogError::NotFound(kind.as_str(), n));
            }
            Err(e) => return Err(e),
        };
        check_kind(found, kind)?;
        Ok(found)
    }

    /// Adds `r` under a fresh id, which it returns. Its name must be free in its schema (one namespace for
    /// every kind), its schema must exist, its owner be a user, and its dependencies be relations.
    pub fn create_relation(&mut self, mut r: RelationCatalog) -> Result<RelationId, CatalogError> {
        self.schema(&r.database, &r.schema)?;
        self.check_name_free(&r.database, &r.schema, &r.name)?;
        self.user(&r.owner)?;
        if let Some(d) = r
            .depends_on
            .iter()
            .find(|d| !self.relations.contains_key(d))
        {
            return Err(CatalogError::NotFound("relation", d.to_string()));
        }
        self.check_capacity(self.relations.len())?;
        r.id = self.next_id();
        if r.job.is_empty() {
            r.job = job_name(&r.database, &r.schema, &r.name);
        }
        let id = r.id;
        self.relations.insert(id, r);
        Ok(id)
    }

    /// `Duplicated` when `name` is taken in `db.schema`, with the kind RisingWave names (a table with a
    /// connector answers `table`).
    pub fn check_name_free(&self, db: &str, schema: &str, name: &str) -> Result<(), CatalogError> {
        match self.get_relation(db, schema, name) {
            Some(r) => Err(CatalogError::Duplicated(r.kind.as_str(), name.into())),
            None => Ok(()),
        }
    }

    /// The relations that depend on `id` directly.
    pub fn dependents(&self, id: RelationId) -> Vec<RelationId> {
        self.relations
            .values()
            .filter(|r| r.depends_on.contains(&id))
            .map(|r| r.id)
            .collect()
    }

    /// Drops `id`, and with `cascade` everything that depends on it (dependents first). Without `cascade`,
    /// a relation others depend on is RisingWave's meta's `PermissionDenied`. An index goes with its table.
    /// Returns the dropped relations, dependents before what they depend on.
    pub fn drop_relation(
        &mut self,
        id: RelationId,
        cascade: bool,
    ) -> Result<Vec<RelationCatalog>, CatalogError> {
        let r = self
            .relations
            .get(&id)
            .ok_or_else(|| CatalogError::NotFound("relation", id.to_string()))?;
        let order = self.drop_order(id);
        if !cascade {
            // A table's own indexes go with it; anything else depending on what goes is an error.
            let going: Vec<RelationId> = order
                .iter()
                .copied()
                .filter(|d| *d == id || self.is_index_of(*d, id))
                .collect();
            let blocking = going
                .iter()
                .flat_map(|g| self.dependents(*g))
                .filter(|d| !going.contains(d))
                .count();
            if blocking > 0 {
                return Err(CatalogError::DependedOn {
                    kind: r.kind,
                    name: r.name.clone(),
                    count: blocking,
                });
            }
            return Ok(going
                .iter()
                .filter_map(|g| self.relations.remove(g))
                .collect());
        }
        Ok(order
            .iter()
            .filter_map(|g| self.relations.remove(g))
            .collect())
    }

    fn is_index_of(&self, index: RelationId, table: RelationId) -> bool {
        self.relations
            .get(&index)
            .and_then(|r| r.index.as_ref())
            .is_some_and(|i| i.primary_table == table)
    }

    /// `id` and everything depending on it, each after all of its dependents.
    fn drop_order(&self, id: RelationId) -> Vec<RelationId> {
        let mut order = Vec::new();
        let mut stack = vec![(id, false)];
        while let Some((r, expanded)) = stack.pop() {
            if expanded {
                if !order.contains(&r) {
                    order.push(r);
                }
                continue;
            }
            stack.push((r, true));
            for d in self.dependents(r) {
                if !order.contains(&d) {
                    stack.push((d, false));
                }
            }
            assert!(
                stack.len() <= MAX_OBJECTS,
                "dependency cycle in the catalog"
            );
        }
        order
    }

    /// Renames a relation in its schema.
    pub fn rename_relation(&mut self, id: RelationId, to: &str) -> Result<(), CatalogError> {
        let r = self
            .relations
            .get(&id)
            .ok_or_else(|| CatalogError::NotFound("relation", id.to_string()))?;
        self.check_name_free(&r.database.clone(), &r.schema.clone(), to)?;
        self.relations.get_mut(&id).expect("found above").name = to.into();
        Ok(())
    }

    /// Moves a relation (and a table's indexes) to another schema of its database.
    pub fn set_relation_schema(&mut self, id: RelationId, to: &str) -> Result<(), CatalogError> {
        let r = self
            .relations
            .get(&id)
            .ok_or_else(|| CatalogError::NotFound("relation", id.to_string()))?
            .clone();
        self.schema(&r.database, to)?;
        if r.schema == to {
            return Ok(());
        }
        let moving: Vec<RelationId> = std::iter::once(id)
            .chain(
                self.relations
                    .values()
                    .filter(|x| self.is_index_of(x.id, id))
                    .map(|x| x.id),
            )
            .collect();
        for m in &moving {
            let name = self.relations[m].name.clone();
            self.check_name_free(&r.database, to, &name)?;
        }
        for m in moving {
            self.relations.get_mut(&m).expect("listed above").schema = to.into();
        }
        Ok(())
    }

    /// Gives a relation (and a table's indexes, as RisingWave does) to `owner`.
    pub fn set_relation_owner(&mut self, id: RelationId, owner: &str) -> Result<(), CatalogError> {
        self.user(owner)?;
        let ids: Vec<RelationId> = self
            .relations
            .values()
            .filter(|x| x.id == id || self.is_index_of(x.id, id))
            .map(|x| x.id)
            .collect();
        if ids.is_empty() {
            return Err(CatalogError::NotFound("relation", id.to_string()));
        }
        for i in ids {
            self.relations.get_mut(&i).expect("listed above").owner = owner.into();
        }
        Ok(())
    }

    // ---- connections ----

    pub fn connections(&self) -> impl Iterator<Item = &ConnectionCatalog> {
        self.connections.values()
    }

    pub fn get_connection(&self, db: &str, schema: &str, name: &str) -> Option<&ConnectionCatalog> {
        self.connections
            .values()
            .find(|c| c.database == db && c.schema == schema && c.name == name)
    }

    pub fn create_connection(
        &mut self,
        mut c: ConnectionCatalog,
    ) -> Result<RelationId, CatalogError> {
        self.schema(&c.database, &c.schema)?;
        if self
            .get_connection(&c.database, &c.schema, &c.name)
            .is_some()
        {
            return Err(CatalogError::Duplicated("connection", c.name));
        }
        self.check_capacity(self.connections.len())?;
        c.id = self.next_id();
        let id = c.id;
        self.connections.insert(id, c);
        Ok(id)
    }

    pub fn connection_mut(&mut self, id: RelationId) -> Option<&mut ConnectionCatalog> {
        self.connections.get_mut(&id)
    }

    pub fn drop_connection(&mut self, id: RelationId) -> Option<ConnectionCatalog> {
        self.connections.remove(&id)
    }

    // ---- users ----

    pub fn users(&self) -> impl Iterator<Item = &UserCatalog> {
        self.users.values()
    }

    pub fn user(&self, name: &str) -> Result<&UserCatalog, CatalogError> {
        self.users
            .get(name)
            .ok_or_else(|| CatalogError::NotFound("user", name.into()))
    }

    pub fn user_mut(&mut self, name: &str) -> Result<&mut UserCatalog, CatalogError> {
        self.users
            .get_mut(name)
            .ok_or_else(|| CatalogError::NotFound("user", name.into()))
    }

    pub fn user_by_id(&self, id: UserId) -> Option<&UserCatalog> {
        self.users.values().find(|u| u.id == id)
    }

    /// Adds `u` under a fresh id.
    pub fn create_user(&mut self, mut u: UserCatalog) -> Result<UserId, CatalogError> {
        if self.users.contains_key(&u.name) {
            return Err(CatalogError::Duplicated("user", u.name));
        }
        self.check_capacity(self.users.len())?;
        u.id = self.next_user_id;
        self.next_user_id += 1;
        let id = u.id;
        self.users.insert(u.name.clone(), u);
        Ok(id)
    }

    pub fn rename_user(&mut self, name: &str, to: &str) -> Result<(), CatalogError> {
        if self.users.contains_key(to) {
            return Err(CatalogError::Duplicated("user", to.into()));
        }
        let mut u = self
            .users
            .remove(name)
            .ok_or_else(|| CatalogError::NotFound("user", name.into()))?;
        u.name = to.into();
        self.users.insert(to.into(), u);
        for r in self.relations.values_mut().filter(|r| r.owner == name) {
            r.owner = to.into();
        }
        for d in self.databases.values_mut() {
            if d.owner == name {
                d.owner = to.into();
            }
            for s in d.schemas.values_mut().filter(|s| s.owner == name) {
                s.owner = to.into();
            }
        }
        Ok(())
    }

    /// Drops a user that owns nothing (RisingWave's meta refuses to drop an owner).
    pub fn drop_user(&mut self, name: &str) -> Result<UserCatalog, CatalogError> {
        let u = self.user(name)?;
        if u.id == DEFAULT_SUPER_USER_ID || u.id == DEFAULT_SUPER_USER_FOR_PG_ID {
            return Err(CatalogError::DefaultUser(name.into()));
        }
        let owns = self.relations.values().any(|r| r.owner == name)
            || self
                .databases
                .values()
                .any(|d| d.owner == name || d.schemas.values().any(|s| s.owner == name));
        if owns {
            return Err(CatalogError::UserOwnsObjects(name.into()));
        }
        Ok(self.users.remove(name).expect("found above"))
    }

    fn check_capacity(&self, len: usize) -> Result<(), CatalogError> {
        if len >= MAX_OBJECTS {
            return Err(CatalogError::TooMany(MAX_OBJECTS));
        }
        Ok(())
    }
}

/// `r` is of `kind`, else RisingWave's hint for the right `DROP` (tables, materialized views and indexes are
/// one kind of catalog entry there; any other mismatch is not found).
pub fn check_kind(r: &RelationCatalog, kind: RelationKind) -> Result<(), CatalogError> {
    use RelationKind as K;
    if r.kind == kind {
        return Ok(());
    }
    let table_like = |k| matches!(k, K::Table | K::MaterializedView | K::Index);
    if table_like(r.kind) && (table_like(kind) || kind == K::Source) {
        return Err(CatalogError::WrongKind(r.kind));
    }
    Err(CatalogError::NotFound(kind.as_str(), r.name.clone()))
}

/// The name a new job called `name` in `db.schema` gets in meta (whose names are one namespace): the bare
/// name in `dev.public`, else the qualified one.
pub fn job_name(db: &str, schema: &str, name: &str) -> String {
    if db == DEFAULT_DATABASE_NAME && schema == DEFAULT_SCHEMA_NAME {
        name.to_string()
    } else {
        format!("{db}.{schema}.{name}")
    }
}

pub fn is_system_schema(name: &str) -> bool {
    SYSTEM_SCHEMAS.contains(&name)
}

/// A column name RisingWave reserves (`check_valid_column_name`).
pub fn check_valid_column_name(name: &str) -> Result<(), CatalogError> {
    if SYSTEM_COLUMN_NAMES.contains(&name) {
        return Err(CatalogError::SystemColumnName(name.into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
