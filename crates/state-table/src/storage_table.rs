//! `StorageTable`: a table read by an executor that does not write it (RisingWave's batch `StorageTable`, as
//! the temporal join reads its right table): rows of the vnodes it is given, read through the node's storage
//! at an epoch the reader names, not through a local store of its own.

use std::ops::Bound;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use epochlab_common::catalog::{Distribution, TableDesc};
use epochlab_common::{Bitmap, DataType, Epoch, OwnedRow, memcmp};
use epochlab_storage::NodeStorage;

use crate::error::{StateTableError, StateTableResult};
use crate::table::{decode_with, next_key, vnode_of};

pub struct StorageTable {
    desc: Arc<TableDesc>,
    node: NodeStorage,
    vnodes: Arc<Bitmap>,
    pk_types: Vec<DataType>,
    value_is_row: bool,
}

impl StorageTable {
    pub fn new(desc: Arc<TableDesc>, node: &NodeStorage, vnodes: Arc<Bitmap>) -> Self {
        desc.validate();
        let n = desc.column_types.len();
        Self {
            pk_types: desc.pk_types(),
            value_is_row: desc.value_indices.iter().copied().eq(0..n),
            desc,
            node: node.clone(),
            vnodes,
        }
    }

    pub fn desc(&self) -> &Arc<TableDesc> {
        &self.desc
    }

    /// Take new vnodes (a reschedule); returns the old ones.
    pub fn update_vnode_bitmap(&mut self, new: Arc<Bitmap>) -> Arc<Bitmap> {
        std::mem::replace(&mut self.vnodes, new)
    }

    /// How many leading pk columns a prefix needs before its vnode is known: up to the last distribution
    /// key column (0 for a singleton).
    pub fn vnode_prefix_len(&self) -> usize {
        match &self.desc.distribution {
            Distribution::Singleton => 0,
            Distribution::HashDistKey { dist_key_in_pk } => {
                dist_key_in_pk.iter().max().map_or(0, |p| p + 1)
            }
            Distribution::VnodeColumn {
                vnode_col_idx_in_pk,
            } => vnode_col_idx_in_pk + 1,
        }
    }

    /// The rows whose pk starts with `prefix`, in pk order, as of `epoch` (see
    /// [`NodeStorage::batch_iter`]). The prefix must hold the distribution key; its vnode must be one of
    /// this table's.
    pub fn batch_iter_with_pk_prefix(
        &self,
        prefix: &OwnedRow,
        epoch: Epoch,
    ) -> StateTableResult<Vec<OwnedRow>> {
        let table_id = self.desc.table_id;
        assert!(
            prefix.len() >= self.vnode_prefix_len() && prefix.len() <= self.pk_types.len(),
            "a lookup prefix of table {table_id} holds its distribution key"
        );
        let vnode = vnode_of(&self.desc, |p| prefix.datum_at(p))?;
        if !self.vnodes.is_set(vnode.to_index()) {
            return Err(StateTableError::VnodeNotOwned { table_id, vnode });
        }
        let mut key = BytesMut::new();
        key.extend_from_slice(&vnode.to_be_bytes());
        let mut buf = Vec::new();
        memcmp::encode_row(prefix, &self.desc.pk_orders[..prefix.len()], &mut buf);
        key.extend_from_slice(&buf);
        let start: Bytes = key.freeze();
        let end = next_key(&start).map_or(Bound::Unbounded, Bound::Excluded);
        let iter = self
            .node
            .batch_iter(table_id, (Bound::Included(start), end), epoch)?;
        let decode = |(k, v): (Bytes, Bytes)| {
            decode_with(&self.desc, &self.pk_types, self.value_is_row, &k, &v)
        };
        iter.map(decode).collect()
    }
}
