//! Window functions over partitions of the input, as RisingWave's two over window executors: the general
//! one, which emits each change as it comes ([`general`]), and the one that emits each row once its window
//! closes ([`eowc`]).

pub mod eowc;
pub mod general;

pub use eowc::EowcOverWindowExecutor;
pub use general::{OverWindowArgs, OverWindowExecutor, OverWindowStateWrites};

use std::ops::Bound;

use epochlab_common::OwnedRow;
use epochlab_state_table::StateTable;

use super::StreamExecutorResult;

/// The stored rows of `row`'s partition (those whose pk starts with its `partition_by` columns), in pk
/// order: both executors' tables are keyed by the partition key first and hashed by it.
fn partition_rows(
    table: &StateTable,
    partition_by: &[usize],
    row: &OwnedRow,
) -> StreamExecutorResult<Vec<OwnedRow>> {
    let vnode = table.compute_vnode_by_pk(&table.pk_of(row))?;
    let prefix = row.project(partition_by);
    let range = (Bound::Included(prefix.clone()), Bound::Included(prefix));
    let mut rows = Vec::new();
    for stored in table.iter_with_vnode(vnode, range)? {
        rows.push(stored?);
    }
    Ok(rows)
}
