use epochlab_common::{Epoch, TableId, WorkerId};
use thiserror::Error;

use crate::mem_table::KeyOp;

pub type StorageResult<T> = Result<T, StorageError>;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StorageError {
    /// An insert over an existing key, or a delete/update whose old value is missing or different.
    /// `prev` is `None` when the key does not exist at all (below the mem-table, too).
    #[error("mem-table operation inconsistent! {0}")]
    InconsistentOperation(Box<Inconsistency>),
    #[error("table {table_id}: local store used before init_epoch")]
    NotInitialized { table_id: TableId },
    #[error("table {table_id}: cannot seal epoch {epoch}: the mem-table is dirty")]
    SealDirty { table_id: TableId, epoch: Epoch },
    #[error("table {table_id}: next epoch {next} is not above {prev}")]
    EpochNotIncreasing {
        table_id: TableId,
        prev: Epoch,
        next: Epoch,
    },
    #[error(
        "table {table_id}: write from stale generation {generation} rejected (node {worker} is at {current})"
    )]
    StaleGeneration {
        table_id: TableId,
        worker: WorkerId,
        generation: u64,
        current: u64,
    },
    #[error("node {worker}: seal of epoch {epoch} is not above the sealed epoch {sealed}")]
    SealNotIncreasing {
        worker: WorkerId,
        epoch: Epoch,
        sealed: Epoch,
    },
    #[error("node {worker}: the sync of epoch {epoch} has been cleared")]
    SyncCleared { worker: WorkerId, epoch: Epoch },
    #[error("node {worker}: version delta gap: pinned version {pinned}, delta follows {prev}")]
    VersionGap {
        worker: WorkerId,
        pinned: u64,
        prev: u64,
    },
    #[error("commit of epoch {epoch} rejected: not above the max committed epoch {max_committed}")]
    CommitEpochNotIncreasing { epoch: Epoch, max_committed: Epoch },
    #[error(
        "commit of epoch {epoch} rejected: data from worker {worker} generation {generation}, which is {why}"
    )]
    InvalidContext {
        epoch: Epoch,
        worker: WorkerId,
        generation: u64,
        why: &'static str,
    },
}

/// The details of an inconsistent operation (boxed: they are large and rare).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inconsistency {
    pub table_id: TableId,
    pub key: bytes::Bytes,
    pub prev: Option<KeyOp>,
    pub new: KeyOp,
}

impl std::fmt::Display for Inconsistency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "table_id: {}, key: {:?}, prev: {:?}, new: {:?}",
            self.table_id, self.key, self.prev, self.new
        )
    }
}
