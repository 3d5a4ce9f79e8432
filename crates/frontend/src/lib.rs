//! The front end (RisingWave's `frontend`): the subset of its SQL the engine implements.
//!
//! - [`frontend`]: sessions, read with `sqlparser` (PostgreSQL dialect) and mapped onto meta's DDL, the DML path
//!   and reads at the max committed epoch. Anything else is an error that names the construct
//!   (`unsupported: JOIN`), never a panic.
//! - [`cluster_client`]: the cluster as the front end sees it ([`ClusterClient`]).
//! - [`handler`], [`binder`], [`planner`], [`batch`], [`catalog`]: statements, binding, stream and batch plans,
//!   the batch engine, the catalog.
//!
//! The test runner above it (sqllogictest files, the kill runner, the corpus) is `epochlab-simulation`.

pub mod batch;
pub mod binder;
pub mod catalog;
pub mod cluster_client;
pub mod dialect;
pub mod error;
pub mod expr;
pub mod frontend;
pub mod handler;
pub mod planner;
pub mod scalar;
pub mod session_config;
pub mod session_timezone;

pub use cluster_client::ClusterClient;
pub use error::{ConnectionError, SqlError};
pub use frontend::{Engine, FrontendId, Output, Session};
