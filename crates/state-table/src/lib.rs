//! `StateTable`: the row-level view of a local state store that executors use (reference §3).
//!
//! A row's storage key is its vnode (2 bytes, big-endian) followed by the memcomparable encoding of its pk;
//! its value is the value encoding of the columns at `value_indices`. The vnode comes from the table's
//! distribution: none (singleton), a hash of the distribution key, or, for backfill progress tables, the
//! value of a pk column. A table may only write vnodes in its bitmap.

mod error;
mod storage_table;
mod table;

pub use epochlab_common::catalog::{Distribution, TableDesc};
pub use error::{Check, StateTableError, StateTableResult};
pub use storage_table::StorageTable;
pub use table::{Record, STATE_CLEANING_PERIOD_EPOCH, StateTable, StateTableOptions};
