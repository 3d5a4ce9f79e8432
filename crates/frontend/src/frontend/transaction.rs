//! Read-only transactions, as RisingWave's session keeps them (`session/transaction.rs`, `handler/transaction.rs`):
//! `START TRANSACTION READ ONLY` (or `BEGIN READ ONLY`) opens one; its first read pins the max committed
//! epoch (the frontend's pinned snapshot), and every read until `COMMIT` or `ROLLBACK` is at that epoch, its
//! `now()` that epoch's time. Committed storage keeps what a read at a pinned epoch sees
//! (`CommittedStore::pin` in epochlab-storage). Every write in one (DML, DDL, users and grants) is refused
//! where the session would write, so `CREATE TABLE IF NOT EXISTS` of a table that exists still succeeds.
//! A read-write transaction is not one: RisingWave accepts the statement and starts nothing.

use epochlab_common::Epoch;
use sqlparser::ast::{TransactionAccessMode, TransactionMode};

use super::{Output, Session};
use crate::catalog::CatalogError;
use crate::error::SqlError;

/// An open read-only transaction: its snapshot, once a read has pinned it.
#[derive(Debug, Default)]
pub(crate) struct Transaction {
    snapshot: Option<Epoch>,
}

impl Session {
    fn txn(&self) -> std::sync::MutexGuard<'_, Option<Transaction>> {
        self.txn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `START TRANSACTION` / `BEGIN` with `modes`.
    pub(super) fn begin(&self, modes: &[TransactionMode]) -> Result<Output, SqlError> {
        let mut read_only = false;
        for mode in modes {
            match mode {
                TransactionMode::AccessMode(m) => read_only = *m == TransactionAccessMode::ReadOnly,
                TransactionMode::IsolationLevel(_) => {
                    return Err(SqlError::NotImplemented("ISOLATION LEVEL".into()));
                }
            }
        }
        if !read_only {
            self.engine.note(
                "Read-write transaction is not supported yet. Please specify `READ ONLY` to start a read-only transaction. \
                 For compatibility, this statement will still succeed but no transaction is actually started."
                    .to_string(),
            );
            return Ok(Output::Done(0));
        }
        let mut txn = self.txn();
        match txn.is_some() {
            true => self
                .engine
                .note("there is already a transaction in progress".to_string()),
            false => *txn = Some(Transaction::default()),
        }
        Ok(Output::Done(0))
    }

    /// `COMMIT` or `ROLLBACK` (`AND CHAIN` is not implemented): the transaction ends, its snapshot unpinned.
    pub(super) fn end_transaction(&self, chain: bool, what: &str) -> Result<Output, SqlError> {
        if chain {
            return Err(SqlError::NotImplemented(format!("{what} AND CHAIN")));
        }
        match self.txn().take() {
            None => self
                .engine
                .note("there is no transaction in progress".to_string()),
            Some(t) => self.unpin(t),
        }
        Ok(Output::Done(0))
    }

    fn unpin(&self, t: Transaction) {
        if let Some(epoch) = t.snapshot {
            self.cluster().unpin_snapshot(epoch);
        }
    }

    /// The epoch this session's reads are at: an open transaction's snapshot, pinned by its first read;
    /// `None` outside one (each read at the max committed epoch).
    pub(crate) fn read_snapshot(&self) -> Option<Epoch> {
        let mut txn = self.txn();
        let t = txn.as_mut()?;
        Some(
            *t.snapshot
                .get_or_insert_with(|| self.cluster().pin_snapshot()),
        )
    }

    /// Refuse a write inside a read-only transaction (RisingWave's `txn_write_guard`).
    pub(crate) fn check_writable(&self) -> Result<(), CatalogError> {
        match self.txn().is_some() {
            true => Err(CatalogError::ReadOnlyTransaction),
            false => Ok(()),
        }
    }
}

impl Drop for Session {
    /// A closed connection ends its transaction.
    fn drop(&mut self) {
        if let Some(t) = self.txn().take() {
            self.unpin(t);
        }
    }
}
