//! The catalog's errors, with RisingWave's wording (its frontend's `CatalogError` and the errors of its
//! meta's catalog manager that the test files match).

use super::RelationKind;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// The catalog's writer, meta, is down: RisingWave's frontend sees its meta client's gRPC error.
    #[error("gRPC request to meta service failed: The service is currently unavailable")]
    MetaUnavailable,
    /// The meta the frontend's client points at runs without the leader services (a follower, or a leader
    /// starting them): madsim's tonic answers Unimplemented with the call's path.
    #[error(
        "gRPC request to meta service failed: Operation is not implemented or not supported: service not found: {0}"
    )]
    MetaServiceNotFound(String),
    /// `table not found: t`.
    #[error("Catalog error: {0} not found: {1}")]
    NotFound(&'static str, String),
    /// `table with name t exists`.
    #[error("Catalog error: {0} with name {1} exists")]
    Duplicated(&'static str, String),
    /// `cannot drop schema s because table t depend on it`.
    #[error("Catalog error: cannot drop {0} {1} because {2} {3} depend on it")]
    NotEmpty(&'static str, String, &'static str, String),
    /// A `DROP` without `CASCADE` of a relation others depend on (meta's `PermissionDenied`).
    #[error("Permission denied: PermissionDenied: Fail to delete {} `{name}` because {count} other relation(s) depend on it", depended_kind(*.kind))]
    DependedOn {
        kind: RelationKind,
        name: String,
        count: usize,
    },
    /// A `DROP`/`ALTER` of the wrong kind of relation.
    #[error("{}", wrong_kind_hint(*.0))]
    WrongKind(RelationKind),
    /// `DROP SCHEMA pg_catalog`, `ALTER SCHEMA pg_catalog RENAME`.
    #[error(
        "Permission denied: cannot drop or alter schema {0} because it is required by the database system"
    )]
    SystemSchema(String),
    /// `a.b.c` where `a` is not the session's database.
    #[error("cross-database references are not implemented: \"{0}\"")]
    CrossDatabase(String),
    /// `a.b.c.d`.
    #[error("improper qualified name (too many dotted names): {0}")]
    NameTooLong(String),
    /// No schema of the search path exists, so a new relation has nowhere to go.
    #[error("Bind error: no schema has been selected to create in")]
    NoSchemaSelected,
    #[error("Invalid input syntax: column name \"{0}\" conflicts with a system column name")]
    SystemColumnName(String),
    #[error("Permission denied: cannot drop the default user {0}")]
    DefaultUser(String),
    #[error("Permission denied: user {0} cannot be dropped because some objects depend on it")]
    UserOwnsObjects(String),
    #[error("Permission denied: Do not have the privilege")]
    NoPrivilege,
    /// A privilege that the object does not have (`GRANT INSERT ON DATABASE`).
    #[error("Bind error: Invalid privilege type for the given object.")]
    InvalidPrivilegeType,
    #[error("Bind error: Grantee does not exist")]
    GranteeNotFound,
    #[error("Bind error: Grantor does not exist")]
    GrantorNotFound,
    #[error("Permission denied: cannot drop the currently open database")]
    DropCurrentDatabase,
    #[error("Permission denied: cannot rename the currently open database")]
    RenameCurrentDatabase,
    /// A connector that does not take the `FORMAT ... ENCODE ...` given (RisingWave's
    /// `validate_compatibility`).
    #[error("Protocol error: connector {connector} does not support format {format}{}", encode.as_ref().map_or_else(String::new, |e| format!(" with encode {e}")))]
    FormatNotSupported {
        connector: String,
        format: String,
        encode: Option<String>,
    },
    /// DML on a materialized view or an index.
    #[error("Invalid input syntax: cannot change {kind} \"{name}\"", kind = .0.as_str(), name = .1)]
    CannotChange(RelationKind, String),
    #[error("Bind error: append-only table does not support update or delete")]
    AppendOnlyDml,
    #[error("Catalog error: too many objects (at most {0})")]
    TooMany(usize),
    /// A write inside a read-only transaction (RisingWave's `txn_write_guard`).
    #[error("Permission denied: cannot execute in a read-only transaction")]
    ReadOnlyTransaction,
}

fn depended_kind(kind: RelationKind) -> &'static str {
    match kind {
        RelationKind::Index => "index",
        other => other.as_str(),
    }
}

fn wrong_kind_hint(kind: RelationKind) -> &'static str {
    match kind {
        RelationKind::MaterializedView => {
            "Use `DROP MATERIALIZED VIEW` to drop a materialized view."
        }
        RelationKind::Index => "Use `DROP INDEX` to drop an index.",
        RelationKind::Table => "Use `DROP TABLE` to drop a table.",
        RelationKind::View => "Use `DROP VIEW` to drop a view.",
        RelationKind::Sink => "Use `DROP SINK` to drop a sink.",
        RelationKind::Source => "Use `DROP SOURCE` to drop a source.",
    }
}
