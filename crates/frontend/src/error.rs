//! What a statement can fail with: one line, never a panic.

use epochlab_meta::DdlError;

use crate::catalog::CatalogError;

/// An error of one SQL statement, as the client sees it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqlError {
    /// The text is not SQL that `sqlparser` (PostgreSQL dialect) reads.
    #[error("sql parser error: {0}")]
    Parse(String),
    /// A construct outside the subset the engine implements, named.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A query RisingWave itself refuses by design (its `ErrorCode::NotSupported`, e.g. a streaming
    /// nested-loop join), as opposed to [`SqlError::Unsupported`], a construct RisingWave runs and this
    /// engine does not yet.
    #[error("Not supported: {0}")]
    NotSupported(String),
    /// What RisingWave itself has not implemented (its `bail_not_implemented!`).
    #[error("Feature is not yet implemented: {0}")]
    NotImplemented(String),
    /// A statement the subset has, with a wrong argument (a column that does not exist, a bad value).
    #[error("{0}")]
    Invalid(String),
    /// A name that exists already, does not exist, or names a job still being created (RisingWave's wording,
    /// which its test files match; the kill runner's retries match on `problem`).
    #[error("Catalog error: {message}")]
    Catalog {
        problem: CatalogProblem,
        message: String,
    },
    /// A DML statement that could not reach its table's actors (a node down, recovery running): nothing was
    /// written. RisingWave's wording, which its simulation runner retries on.
    #[error("no reader for dml in table {table}: {why}")]
    NoReader { table: String, why: String },
    /// A `WITH` option given twice (RisingWave's wording).
    #[error("Duplicated option: {0}")]
    DuplicatedOption(String),
    /// A `WITH` option the statement does not take (RisingWave's wording).
    #[error("unexpected options in WITH clause: {0}")]
    UnexpectedOptions(String),
    /// The engine refused or failed the DDL (recovery running, a barrier failed, ...).
    /// A name the binder finds nothing under (RisingWave's `ItemNotFound`: `Invalid column: v5`).
    #[error("Item not found: {0}")]
    ItemNotFound(String),
    /// A column name more than one relation in scope has (RisingWave's bind context's wording).
    #[error("Ambiguous column name: {0}")]
    AmbiguousColumn(String),
    /// Syntax the binder refuses where it stands (RisingWave's `InvalidInputSyntax`).
    #[error("Invalid input syntax: {0}")]
    InvalidInputSyntax(String),
    /// A statement its binder refuses as a whole (RisingWave's `BindError`).
    #[error("Bind error: {0}")]
    Bind(String),
    /// An expression of a DDL statement that failed to bind, and why (RisingWave's wording).
    #[error("Failed to bind expression: {expr}: {source}")]
    BindExpr { expr: String, source: Box<SqlError> },
    #[error("{0}")]
    Ddl(#[from] DdlError),
    /// A CREATE whose name belongs to a job still being created. RisingWave's frontend catalog did not list
    /// creating jobs at f21fb9b7915, so the CREATE reached meta, whose `check_relation_name_duplicated`
    /// bailed with this (an internal error, not the frontend's `Catalog error: ... exists`), whatever the
    /// job's kind and with or without `IF NOT EXISTS`. The kill runner waits for the view on it.
    #[error("table is in creating procedure: {id}")]
    InCreatingProcedure { id: u32 },
    /// The session's frontend was killed while the statement ran, or is down when the client connects.
    #[error("{0}")]
    Connection(ConnectionError),
    /// An expression failed to bind or evaluate (types, casts, overflow: RisingWave's wording).
    #[error("{0}")]
    Expr(#[from] crate::scalar::ExprError),
    /// The catalog refused (RisingWave's wording).
    #[error(transparent)]
    CatalogError(#[from] crate::catalog::CatalogError),
    /// A `SET` / `SHOW` of a session variable that does not exist, or a bad value.
    #[error(transparent)]
    SessionConfig(#[from] crate::session_config::SessionConfigError),
    /// A datagen source's `WITH` options refused.
    #[error(transparent)]
    Datagen(#[from] epochlab_common::source::DatagenError),
    /// A statement that waited longer than its (virtual) budget.
    #[error("{0} timed out after {1} s")]
    Timeout(&'static str, u64),
}

/// A client's connection to a killed frontend (tokio-postgres's wording, which RisingWave's runner saw).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionError {
    /// The frontend died with the statement in flight: the client has no result (the DDL it sent to meta
    /// may still finish, as meta runs each DDL in a task of its own).
    #[error("connection closed")]
    Closed,
    /// The frontend is down: a (re)connect fails.
    #[error("error connecting to server: Connection refused")]
    Refused,
}

/// What a catalog error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CatalogProblem {
    /// The name is taken (`... with name "m" exists`).
    Exists,
    /// No relation has the name (`... not found: m`).
    NotFound,
    /// The relation is a job still being created, which a query cannot read yet.
    StillCreating,
}

impl SqlError {
    /// Meta's answer to a DDL: a refused catalog change, or a meta that does not answer, is the catalog's
    /// error, as the front end's own catalog write gives it.
    pub fn of_ddl(e: DdlError) -> Self {
        match e {
            DdlError::Catalog(e) => SqlError::CatalogError(e),
            DdlError::MetaUnavailable => SqlError::CatalogError(CatalogError::MetaUnavailable),
            e => SqlError::Ddl(e),
        }
    }

    /// The error's kind in a few words (what `epochlab corpus` counts a file's unexpected error by).
    pub fn kind(&self) -> &'static str {
        match self {
            SqlError::Parse(_) => "sql parser error",
            SqlError::Unsupported(_) => "unsupported",
            SqlError::NotSupported(_) | SqlError::NotImplemented(_) => {
                "not supported (as in RisingWave)"
            }
            SqlError::Invalid(_) | SqlError::InvalidInputSyntax(_) => "invalid statement",
            SqlError::Bind(_) | SqlError::BindExpr { .. } => "bind error",
            SqlError::ItemNotFound(_) | SqlError::AmbiguousColumn(_) => "column binding",
            SqlError::Catalog { problem, .. } => match problem {
                CatalogProblem::Exists => "catalog: exists",
                CatalogProblem::NotFound => "catalog: not found",
                CatalogProblem::StillCreating => "catalog: still creating",
            },
            SqlError::NoReader { .. } => "no reader for dml",
            SqlError::DuplicatedOption(_)
            | SqlError::UnexpectedOptions(_)
            | SqlError::Datagen(_) => "WITH options",
            SqlError::Ddl(_) => "DDL refused or failed",
            SqlError::InCreatingProcedure { .. } => "table is in creating procedure",
            SqlError::Connection(_) => "connection",
            SqlError::Timeout(..) => "timeout",
            SqlError::CatalogError(_) => "catalog",
            SqlError::SessionConfig(_) => "session variable",
            SqlError::Expr(_) => "expression error",
        }
    }

    /// A catalog error about `problem`, saying `message`.
    pub fn catalog(problem: CatalogProblem, message: String) -> Self {
        SqlError::Catalog { problem, message }
    }
}

/// `sqlparser`'s error as the client sees it: its message once, under [`SqlError::Parse`]'s own prefix.
impl From<sqlparser::parser::ParserError> for SqlError {
    fn from(e: sqlparser::parser::ParserError) -> Self {
        use sqlparser::parser::ParserError as P;
        match e {
            P::TokenizerError(m) | P::ParserError(m) => SqlError::Parse(m),
            P::RecursionLimitExceeded => SqlError::Parse("recursion limit exceeded".into()),
        }
    }
}
