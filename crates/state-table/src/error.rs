use epochlab_common::memcmp::DecodeError;
use epochlab_common::{Epoch, EpochPair, OwnedRow, TableId, VirtualNode};
use epochlab_storage::StorageError;
use thiserror::Error;

pub type StateTableResult<T> = Result<T, StateTableError>;

/// Which consistency check found a row missing. Both are debug-build checks in RisingWave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// `persist_state_per_vnode` reads the progress row before it updates it (RisingWave's `get_row` assert).
    BackfillPersist,
    /// The state table checks an update or delete against storage when it is written (RisingWave's
    /// mem-table and flush-time sanity checks).
    StateTableWrite,
}

impl Check {
    pub fn as_str(self) -> &'static str {
        match self {
            Check::BackfillPersist => "backfill persist check",
            Check::StateTableWrite => "state-table write check",
        }
    }
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StateTableError {
    /// A row that must be stored is not: the message of RisingWave issue #14910, and the check that saw it.
    #[error("row {pk:?} not found (by the {check})")]
    RowNotFound {
        table_id: TableId,
        pk: OwnedRow,
        check: Check,
    },
    #[error("row {pk:?} already exists")]
    RowExists { table_id: TableId, pk: OwnedRow },
    #[error("row {pk:?}: the stored row differs from the old row given")]
    OldRowMismatch { table_id: TableId, pk: OwnedRow },
    #[error("table {table_id}: vnode {vnode} is not in this table's bitmap")]
    VnodeNotOwned {
        table_id: TableId,
        vnode: VirtualNode,
    },
    #[error("table {table_id}: vnode column holds {value:?}, not a vnode below {count}")]
    BadVnodeColumn {
        table_id: TableId,
        value: String,
        count: usize,
    },
    #[error("table {table_id}: an update must keep the pk: {old:?} -> {new:?}")]
    PkChanged {
        table_id: TableId,
        old: OwnedRow,
        new: OwnedRow,
    },
    #[error("table {table_id}: commit of {new:?}, but the table is at epoch {current}")]
    EpochMismatch {
        table_id: TableId,
        current: Epoch,
        new: EpochPair,
    },
    #[error("table {table_id}: used before init_epoch")]
    NotInitialized { table_id: TableId },
    #[error("table {table_id}: cannot change the vnode bitmap with uncommitted writes")]
    DirtyOnVnodeUpdate { table_id: TableId },
    #[error("table {table_id}: cannot change the schema with uncommitted writes")]
    DirtyOnSchemaChange { table_id: TableId },
    #[error("table {table_id}: a new schema must append columns to the old one, its key the same")]
    SchemaNotAppended { table_id: TableId },
    #[error("table {table_id}: stored data does not decode: {source}")]
    Decode {
        table_id: TableId,
        source: DecodeError,
    },
    #[error(transparent)]
    Storage(#[from] StorageError),
}
