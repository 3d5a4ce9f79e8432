use epochlab_common::memcmp::DecodeError;
use epochlab_common::{Epoch, EpochPair, OwnedRow, TableId, VirtualNode};
use epochlab_storage::StorageError;
use thiserror::Error;

pub type StateTableResult<T> = Result<T, StateTableError>;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StateTableError {
    /// A delete or update whose old row is not stored: the message of RisingWave issue #14910.
    #[error("row {pk:?} not found")]
    RowNotFound { table_id: TableId, pk: OwnedRow },
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
    #[error("table {table_id}: stored data does not decode: {source}")]
    Decode {
        table_id: TableId,
        source: DecodeError,
    },
    #[error(transparent)]
    Storage(#[from] StorageError),
}
