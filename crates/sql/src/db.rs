//! The `sqllogictest` crate's [`AsyncDB`] over a session of the simulated cluster.

use std::sync::Arc;
use std::time::Duration;

use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};

use crate::error::SqlError;
use crate::frontend::{Engine, Output, Session};

/// One connection of a test file: a [`Session`] over the file's cluster.
pub struct SimDb {
    session: Session,
}

impl SimDb {
    pub fn new(engine: Arc<Engine>) -> Self {
        Self {
            session: Session::new(engine),
        }
    }
}

#[async_trait::async_trait]
impl AsyncDB for SimDb {
    type Error = SqlError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SqlError> {
        Ok(match self.session.execute(sql).await? {
            Output::Rows { numeric, rows } => DBOutput::Rows {
                types: numeric
                    .into_iter()
                    .map(|n| {
                        if n {
                            DefaultColumnType::Integer
                        } else {
                            DefaultColumnType::Text
                        }
                    })
                    .collect(),
                rows,
            },
            Output::Done(n) => DBOutput::StatementComplete(n),
        })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "epochlab"
    }

    /// Virtual time: a `sleep` record lets the simulated cluster run on.
    async fn sleep(dur: Duration) {
        tokio::time::sleep(dur).await;
    }

    /// `system` records are refused before they run (see the runner); nothing runs a process here.
    async fn run_command(_command: std::process::Command) -> std::io::Result<std::process::Output> {
        Err(std::io::Error::other("unsupported: system command"))
    }
}
