//! The `sqllogictest` crate's [`AsyncDB`] over a session of the simulated cluster.

use std::sync::Arc;
use std::time::Duration;

use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};

use epochlab_frontend::error::{ConnectionError, SqlError};
use epochlab_frontend::frontend::{Engine, FrontendId, Output, Session};

/// One connection of a test file, as RisingWave's simulation client (`src/tests/simulation/src/client.rs`):
/// it connects on first use and sets `RW_IMPLICIT_FLUSH` (a DML waits for a checkpoint); when its frontend
/// was killed it reconnects on the next statement and replays the `SET` statements it ran (each variable's
/// last, in the order they were last set; only those that succeeded, where RisingWave's client kept a failed
/// one too and then failed every reconnect on it). Each (re)connect goes to the next frontend of the
/// round-robin address (RisingWave's `frontend:4566`), and fails with `connection refused` when that one is
/// down; a kill of its frontend fails the statement in flight with `connection closed`: a DML writes nothing
/// more, while what it sent on (a DDL meta runs) goes on in its own task.
pub struct SimDb {
    engine: Arc<Engine>,
    /// The session and the frontend it is connected to; `None` before the first statement.
    session: Option<(Session, FrontendId)>,
    /// The `SET` statements run, by variable, the last set last.
    set_stmts: Vec<(String, String)>,
    /// Told each statement's `unsupported` construct (or none).
    probe: UnsupportedProbe,
    /// Whether each connection first sets `RW_IMPLICIT_FLUSH` (the simulation client does; psql does not).
    implicit_flush: bool,
}

/// The construct of the last statement's `unsupported` error, shared by the connections of a file's run: a
/// record that expects any error (`statement error` without a message) is not met by a construct the front
/// end refused (RisingWave would have run it and failed for its own reason), and the runner asks this.
#[derive(Clone, Debug, Default)]
pub struct UnsupportedProbe(Arc<std::sync::Mutex<Option<String>>>);

impl UnsupportedProbe {
    fn set(&self, construct: Option<String>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = construct;
    }

    /// The construct the last statement was refused for, if it was; clears it.
    pub fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// What RisingWave's simulation client runs first on each connection (`connect_inner` in
/// `src/tests/simulation/src/client.rs` at f21fb9b7915).
const IMPLICIT_FLUSH: &str = "SET RW_IMPLICIT_FLUSH TO true;";

/// Replayed `SET` statements of one connection, at most (bounded like everything else).
const MAX_SET_STMTS: usize = 64;

impl SimDb {
    pub fn new(engine: Arc<Engine>) -> Self {
        Self {
            engine,
            session: None,
            set_stmts: Vec::new(),
            probe: UnsupportedProbe::default(),
            implicit_flush: true,
        }
    }

    /// A connection as `psql` makes it: nothing set first.
    pub fn psql(engine: Arc<Engine>) -> Self {
        Self {
            implicit_flush: false,
            ..Self::new(engine)
        }
    }

    /// This connection tells `probe` each statement's `unsupported` construct.
    pub fn probed_by(mut self, probe: UnsupportedProbe) -> Self {
        self.probe = probe;
        self
    }

    /// The session of the open connection, connecting (and replaying the `SET`s) when there is none.
    async fn connected(&mut self) -> Result<(Session, FrontendId), SqlError> {
        if let Some((s, id)) = self.session.take()
            && self.engine.is_connected(id)
        {
            return Ok((s, id));
        }
        let id = self.engine.connect().map_err(SqlError::Connection)?;
        let mut session = Session::new(self.engine.clone()).on_frontend(id);
        // RisingWave's client sets it on every connection, "for recovery": a DML returns once a checkpoint
        // holds its rows, so a kill after it cannot lose them.
        if self.implicit_flush {
            session.execute(IMPLICIT_FLUSH).await?;
        }
        for (_, sql) in &self.set_stmts {
            session.execute(sql).await?;
        }
        Ok((session, id))
    }

    /// Remember a `SET` statement for replay (RisingWave's client keys them by variable).
    fn remember_set(&mut self, sql: &str) {
        let words: Vec<String> = sql
            .split(|c: char| c.is_whitespace() || c == '=')
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let key = match words.as_slice() {
            [_, scope, var, ..] if scope == "session" || scope == "local" => var.clone(),
            [_, var, ..] => var.clone(),
            _ => return,
        };
        self.set_stmts.retain(|(k, _)| *k != key);
        if self.set_stmts.len() == MAX_SET_STMTS {
            self.set_stmts.remove(0);
        }
        self.set_stmts.push((key, sql.to_string()));
    }

    /// Run `sql` on the connected session; a kill of the frontend meanwhile fails it with `connection closed`.
    pub async fn execute(&mut self, sql: &str) -> Result<Output, SqlError> {
        let (mut session, id) = self.connected().await?;
        let is_set = sql.trim_start().to_lowercase().starts_with("set");
        let text = sql.to_string();
        let mut task = tokio::spawn(async move {
            let out = session.execute(&text).await;
            (session, out)
        });
        tokio::select! {
            biased;
            () = self.engine.frontend_killed(id) => {
                Err(SqlError::Connection(ConnectionError::Closed))
            }
            joined = &mut task => match joined {
                Ok((session, out)) => {
                    self.session = Some((session, id));
                    if is_set && out.is_ok() {
                        self.remember_set(sql);
                    }
                    out
                }
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                // Aborted: the run is ending.
                Err(_) => Err(SqlError::Connection(ConnectionError::Closed)),
            },
        }
    }
}

#[async_trait::async_trait]
impl AsyncDB for SimDb {
    type Error = SqlError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SqlError> {
        let out = self.execute(sql).await;
        self.probe.set(match &out {
            Err(SqlError::Unsupported(construct)) => Some(construct.clone()),
            _ => None,
        });
        Ok(match out? {
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
