//! Handlers of the statements about the catalog and the session (RisingWave's `src/frontend/src/handler/`):
//! databases, schemas, users, privileges, connections, drops, `ALTER ... RENAME / OWNER TO / SET SCHEMA /
//! SET PARALLELISM`, `COMMENT ON`, `SHOW`, `DESCRIBE`, `SET` / `RESET`, and the catalog side of `CREATE
//! INDEX`, `CREATE SOURCE` and `CREATE TABLE`, entered through [`handle`] (in `dispatch`); in
//! [`stream_job`], the streaming side of `CREATE MATERIALIZED VIEW` (a plan cut into a fragment graph),
//! `EXPLAIN` and `CREATE TABLE AS`.

mod alter;
mod alter_table_column;
mod comment;
pub mod create_table;
mod ddl_catalog;
mod describe;
mod dispatch;
mod drop;
pub mod parse;
mod privilege;
mod rename;
mod resolve;
mod set;
mod show;
pub(crate) mod stream_job;
mod user;

pub use ddl_catalog::relation_for_job;
pub use dispatch::{HandlerResult, handle};
use dispatch::{done, text_rows};
pub use rename::{mv_definition, sink_definition};
