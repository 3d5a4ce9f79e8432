//! Committed data: what meta's `commit_epoch` has made durable (RisingWave's SSTs in object storage),
//! multi-versioned by epoch. Whether a node may *see* a table's committed data is decided by the version it
//! has pinned, not here (see [`crate::local`]).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use epochlab_common::{Epoch, TableId};

#[derive(Clone, Default)]
pub struct CommittedStore {
    tables: Arc<RwLock<BTreeMap<TableId, TableData>>>,
}

#[derive(Default)]
struct TableData {
    rows: BTreeMap<Bytes, Versions>,
}

/// The versions kept of one key: the newest and the one before it, which is enough for every reader at or
/// above the previous max committed epoch (all readers in this model are). Inline: no allocation per key.
/// A `None` value is a delete.
struct Versions {
    latest: (Epoch, Option<Bytes>),
    /// Boxed: most keys are written once, and a small entry keeps the tree's nodes in cache.
    previous: Option<Box<(Epoch, Option<Bytes>)>>,
}

impl Versions {
    fn new(epoch: Epoch, value: Option<Bytes>) -> Self {
        Self {
            latest: (epoch, value),
            previous: None,
        }
    }

    fn push(&mut self, epoch: Epoch, value: Option<Bytes>) {
        let last = self.latest.0;
        assert!(
            epoch >= last,
            "committed versions of a key must not go back in epoch"
        );
        if epoch == last {
            self.latest.1 = value;
        } else {
            let prev = std::mem::replace(&mut self.latest, (epoch, value));
            self.previous = Some(Box::new(prev));
        }
    }
}

/// Batches at least this large relative to the table are merged by rebuilding the tree from two sorted runs
/// (linear) instead of inserting key by key (a descent per key).
const REBUILD_RATIO: usize = 4;

fn visible_at(versions: &Versions, epoch: Epoch) -> Option<&Bytes> {
    if versions.latest.0 <= epoch {
        return versions.latest.1.as_ref();
    }
    match versions.previous.as_deref() {
        Some((e, v)) if *e <= epoch => v.as_ref(),
        _ => None,
    }
}

impl CommittedStore {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<TableId, TableData>> {
        self.tables.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<TableId, TableData>> {
        self.tables.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Add the writes of one table; `entries` are `(key, epoch, value)`, sorted by key then epoch, and epochs
    /// only grow per key.
    pub fn apply(&self, table_id: TableId, entries: Vec<(Bytes, Epoch, Option<Bytes>)>) {
        use std::collections::btree_map::Entry;
        debug_assert!(
            entries
                .windows(2)
                .all(|w| (&w[0].0, w[0].1) <= (&w[1].0, w[1].1))
        );
        let mut tables = self.write();
        let table = tables.entry(table_id).or_default();
        if entries.len() >= 64 && entries.len() * REBUILD_RATIO >= table.rows.len() {
            table.rows = merge_sorted(std::mem::take(&mut table.rows), entries);
            return;
        }
        for (key, epoch, value) in entries {
            match table.rows.entry(key) {
                Entry::Occupied(mut o) => o.get_mut().push(epoch, value),
                Entry::Vacant(v) => {
                    v.insert(Versions::new(epoch, value));
                }
            }
        }
    }

    /// The value of `key` as of `epoch`.
    pub fn get(&self, table_id: TableId, key: &[u8], epoch: Epoch) -> Option<Bytes> {
        let tables = self.read();
        let versions = tables.get(&table_id)?.rows.get(key)?;
        visible_at(versions, epoch).cloned()
    }

    /// Up to `limit` live rows in `range` as of `epoch`, in key order (tombstones skipped).
    pub fn scan(
        &self,
        table_id: TableId,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        epoch: Epoch,
        limit: usize,
    ) -> Vec<(Bytes, Bytes)> {
        let tables = self.read();
        let Some(table) = tables.get(&table_id) else {
            return Vec::new();
        };
        table
            .rows
            .range::<[u8], _>(range)
            .filter_map(|(k, versions)| visible_at(versions, epoch).map(|v| (k.clone(), v.clone())))
            .take(limit)
            .collect()
    }

    /// Live keys of a table at `epoch` (tests and checkers).
    pub fn count(&self, table_id: TableId, epoch: Epoch) -> usize {
        self.read().get(&table_id).map_or(0, |t| {
            t.rows
                .values()
                .filter(|v| visible_at(v, epoch).is_some())
                .count()
        })
    }
}

/// Merge a table's rows with a sorted batch into a new tree, built in one linear pass.
fn merge_sorted(
    old: BTreeMap<Bytes, Versions>,
    batch: Vec<(Bytes, Epoch, Option<Bytes>)>,
) -> BTreeMap<Bytes, Versions> {
    let mut out: Vec<(Bytes, Versions)> = Vec::with_capacity(old.len() + batch.len());
    let mut old = old.into_iter().peekable();
    for (key, epoch, value) in batch {
        while let Some((k, _)) = old.peek() {
            if *k >= key {
                break;
            }
            out.push(old.next().unwrap());
        }
        match out.last_mut() {
            Some((k, versions)) if *k == key => versions.push(epoch, value),
            _ => match old.next_if(|(k, _)| *k == key) {
                Some((k, mut versions)) => {
                    versions.push(epoch, value);
                    out.push((k, versions));
                }
                None => out.push((key, Versions::new(epoch, value))),
            },
        }
    }
    out.extend(old);
    // Sorted input: `from_iter` detects the run and bulk-builds the tree.
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(i: u32) -> Bytes {
        Bytes::from(i.to_be_bytes().to_vec())
    }

    /// Both apply paths (key by key, and the linear rebuild) give the same versions.
    #[test]
    fn rebuild_and_per_key_paths_agree() {
        let t = TableId(1);
        let (a, b) = (CommittedStore::default(), CommittedStore::default());
        let first: Vec<_> = (0..200)
            .map(|i| (k(i * 2), Epoch(10), Some(k(i))))
            .collect();
        a.apply(t, first.clone());
        b.apply(t, first);
        // Overlapping and new keys, two epochs of one key, a delete: large (rebuild) vs. in small slices.
        let mut second: Vec<_> = (0..300)
            .map(|i| (k(i), Epoch(20), Some(k(1000 + i))))
            .collect();
        second.insert(6, (k(5), Epoch(21), None));
        second.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.cmp(&y.1)));
        a.apply(t, second.clone());
        for chunk in second.chunks(7) {
            b.apply(t, chunk.to_vec());
        }
        for epoch in [Epoch(10), Epoch(20), Epoch(21), Epoch(99)] {
            let full = (Bound::Unbounded, Bound::Unbounded);
            assert_eq!(
                a.scan(t, full, epoch, usize::MAX),
                b.scan(t, full, epoch, usize::MAX)
            );
        }
        assert_eq!(a.get(t, &k(4), Epoch(10)), Some(k(2)));
        assert_eq!(a.get(t, &k(4), Epoch(20)), Some(k(1004)));
        assert_eq!(a.get(t, &k(5), Epoch(20)), Some(k(1005)));
        assert_eq!(a.get(t, &k(5), Epoch(21)), None);
        assert_eq!(a.get(t, &k(3), Epoch(10)), None);
        assert_eq!(a.count(t, Epoch(21)), 349); // keys 0..300, even keys 300..400, minus the delete
    }
}
