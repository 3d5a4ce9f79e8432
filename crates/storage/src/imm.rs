//! Immutable batches ("imms", RisingWave's `SharedBufferBatch`): a mem-table flushed at an epoch. Sorted by
//! key; a `None` value is a delete (tombstone).

use std::ops::Bound;

use bytes::Bytes;
use epochlab_common::{Epoch, TableId};

#[derive(Debug)]
pub struct Imm {
    pub table_id: TableId,
    pub epoch: Epoch,
    kvs: Vec<(Bytes, Option<Bytes>)>,
    size_bytes: usize,
}

impl Imm {
    /// `kvs` must be sorted by key with no duplicates.
    pub fn new(table_id: TableId, epoch: Epoch, kvs: Vec<(Bytes, Option<Bytes>)>) -> Self {
        debug_assert!(
            kvs.windows(2).all(|w| w[0].0 < w[1].0),
            "imm keys must be sorted"
        );
        let size_bytes = kvs
            .iter()
            .map(|(k, v)| k.len() + v.as_ref().map_or(0, |v| v.len()))
            .sum();
        Self {
            table_id,
            epoch,
            kvs,
            size_bytes,
        }
    }

    /// `Some(None)` for a tombstone, `None` when the key is not in this batch.
    pub fn get(&self, key: &[u8]) -> Option<Option<&Bytes>> {
        self.kvs
            .binary_search_by(|(k, _)| k.as_ref().cmp(key))
            .ok()
            .map(|i| self.kvs[i].1.as_ref())
    }

    /// The index range of keys within `range`.
    pub fn index_range(&self, range: &(Bound<Bytes>, Bound<Bytes>)) -> std::ops::Range<usize> {
        let start = match &range.0 {
            Bound::Included(k) => self.kvs.partition_point(|(x, _)| x < k),
            Bound::Excluded(k) => self.kvs.partition_point(|(x, _)| x <= k),
            Bound::Unbounded => 0,
        };
        let end = match &range.1 {
            Bound::Included(k) => self.kvs.partition_point(|(x, _)| x <= k),
            Bound::Excluded(k) => self.kvs.partition_point(|(x, _)| x < k),
            Bound::Unbounded => self.kvs.len(),
        };
        start..end.max(start)
    }

    pub fn entry(&self, i: usize) -> (&Bytes, Option<&Bytes>) {
        let (k, v) = &self.kvs[i];
        (k, v.as_ref())
    }

    pub fn kvs(&self) -> &[(Bytes, Option<Bytes>)] {
        &self.kvs
    }

    pub fn len(&self) -> usize {
        self.kvs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kvs.is_empty()
    }

    pub fn size_bytes(&self) -> usize {
        self.size_bytes
    }
}
