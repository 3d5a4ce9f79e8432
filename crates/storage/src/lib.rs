//! A miniature of Hummock, RisingWave's epoch-versioned state store (reference: risingwave-internals.md §4).
//!
//! Three layers answer a read, newest first:
//! 1. the [`LocalStateStore`]'s own mem-table (writes of the current epoch, not yet flushed);
//! 2. its staging data: immutable batches ([`Imm`]) flushed at an epoch but not yet committed;
//! 3. committed data, which a node sees only through the version it has pinned: **a table that belongs to no
//!    group in that version reads as empty, silently** (RisingWave's `PinnedVersion::levels`). That is the
//!    semantics RisingWave issue #14910 tripped over.
//!
//! Data moves down the layers as the barrier protocol runs: `flush` turns the mem-table into an imm,
//! [`NodeStorage::seal_epoch`] and [`NodeStorage::sync`] gather a node's imms up to an epoch, meta's
//! [`HummockManager::commit_epoch`] makes them committed and emits a [`VersionDelta`], and each node applies
//! deltas in order ([`NodeStorage::apply_version_delta`]), which prunes staging data at or below the new max
//! committed epoch from every local instance. Each commit adds an L0 sub-level to the compaction groups it
//! brought data to, and [`compaction`] empties them, once every member table of the group resolves in the
//! catalog; a group whose L0 reaches the write-stop limit holds back its nodes' syncs.

pub mod access;
pub mod committed;
pub mod compaction;
pub mod error;
mod filter;
mod imm;
pub mod local;
pub mod manager;
pub mod mem_table;
pub mod node;
pub mod version;
pub mod watermark;

pub use access::{Access, AccessKind, AccessObserver, Accessor};
pub use committed::CommittedStore;
pub use compaction::{
    CompactionCatalog, CompactionConfig, CompactionError, CompactionStats, GroupCompaction,
};
pub use error::{Inconsistency, StorageError, StorageResult};
pub use imm::Imm;
pub use local::{
    LocalIter, LocalStateStore, MEM_TABLE_SPILL_THRESHOLD_BYTES, NewLocalOptions,
    OpConsistencyLevel,
};
pub use manager::{CommitOutcome, DeltaHook, HummockManager};
pub use mem_table::{KeyOp, MemTable};
pub use node::{NodeStorage, NodeStorageStats, SstData, SyncResult};
pub use version::{DeltaError, GroupChange, GroupId, HummockVersion, VersionDelta};
pub use watermark::{ReadWatermarks, TableWatermarks, VnodeWatermark};

/// A table-local key: the vnode (2 bytes, big-endian) followed by the memcomparable pk.
pub type Key = bytes::Bytes;
/// An encoded value.
pub type Value = bytes::Bytes;
