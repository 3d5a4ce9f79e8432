//! A top-N's state table (RisingWave's `ManagedTopNState`): every input row (append-only: the rows of low
//! and middle), pk = the group key, the order columns, then the rest of the input's stream key. It turns
//! rows into cache keys and fills a group's cache from the table: whole at a cache miss (after a
//! recovery or an eviction every cache starts empty), `high` alone when it runs empty.

use std::ops::Bound;

use epochlab_common::{OrderType, OwnedRow, memcmp};
use epochlab_state_table::StateTable;

use super::cache::{CacheKey, TopNCache};
use crate::executor::StreamExecutorResult;

epochlab_common::toggle! {
    /// A test-only mutation, no RisingWave bug: whether a row deleted from a top-N leaves its state table. The
    /// top-N's recovery tests must catch `CacheOnly` (a deleted row that a cache rebuilt from the table, after
    /// a recovery, brings back).
    pub enum TopNRowDelete {
        /// From the cache and the table, as RisingWave deletes it.
        #[default]
        Written,
        /// From the cache only.
        CacheOnly,
    }
}

pub(crate) struct ManagedTopNState {
    table: StateTable,
    row_delete: TopNRowDelete,
    /// The length of the group key, the first pk columns.
    group_len: usize,
    /// The order columns in the pk after the group key (a sort key is the memcmp of these).
    order_len: usize,
    /// Rows inserted and deleted since the last `take_writes` (metrics).
    writes: (u64, u64),
}

impl ManagedTopNState {
    /// Clean the groups whose first group-key column is below `val`, lazily (the table's pk starts with it).
    pub(crate) fn clean_below(&mut self, val: &epochlab_common::ScalarImpl) {
        self.table.update_watermark(Some(val.clone()), false);
    }

    /// `table`'s pk must start with `group_key`, then the order columns not in the group key.
    pub(crate) fn new(
        table: StateTable,
        group_key: &[usize],
        order_by: &[(usize, OrderType)],
    ) -> Self {
        let pk = table.desc().pk_indices.clone();
        assert!(
            pk.starts_with(group_key),
            "the pk starts with the group key"
        );
        let mut order_cols: Vec<usize> = Vec::new();
        for &(c, _) in order_by {
            if !group_key.contains(&c) && !order_cols.contains(&c) {
                order_cols.push(c);
            }
        }
        let g = group_key.len();
        assert_eq!(
            pk.get(g..g + order_cols.len()),
            Some(order_cols.as_slice()),
            "the pk's order columns follow the group key"
        );
        Self {
            table,
            row_delete: TopNRowDelete::default(),
            group_len: g,
            order_len: order_cols.len(),
            writes: (0, 0),
        }
    }

    pub(crate) fn table(&self) -> &StateTable {
        &self.table
    }

    pub(crate) fn table_mut(&mut self) -> &mut StateTable {
        &mut self.table
    }

    /// The row's cache key: its pk after the group key, memcomparable, split after the order columns.
    pub(crate) fn cache_key(&self, row: &OwnedRow) -> CacheKey {
        let desc = self.table.desc();
        let (g, o) = (self.group_len, self.group_len + self.order_len);
        let encode = |range: std::ops::Range<usize>| {
            let mut buf = Vec::new();
            for p in range {
                memcmp::encode_datum(
                    row.datum_at(desc.pk_indices[p]),
                    desc.pk_orders[p],
                    &mut buf,
                );
            }
            buf
        };
        (encode(g..o), encode(o..desc.pk_indices.len()))
    }

    pub(crate) fn insert(&mut self, row: &OwnedRow) -> StreamExecutorResult<()> {
        self.table.insert(row)?;
        self.writes.0 += 1;
        Ok(())
    }

    /// Under a test-only mutation (see [`TopNRowDelete`]).
    pub(crate) fn with_row_delete(mut self, row_delete: TopNRowDelete) -> Self {
        self.row_delete = row_delete;
        self
    }

    pub(crate) fn delete(&mut self, row: &OwnedRow) -> StreamExecutorResult<()> {
        if self.row_delete == TopNRowDelete::Written {
            self.table.delete(row)?;
        }
        self.writes.1 += 1;
        Ok(())
    }

    /// The rows inserted and deleted since the last call.
    pub(crate) fn take_writes(&mut self) -> (u64, u64) {
        std::mem::take(&mut self.writes)
    }

    /// The group's rows in order, after the row `after` (a full row) when given.
    fn scan(
        &self,
        group_key: &OwnedRow,
        after: Option<&OwnedRow>,
    ) -> StreamExecutorResult<impl Iterator<Item = StreamExecutorResult<OwnedRow>> + use<>> {
        let vnode = self.table.compute_vnode_by_pk(group_key)?;
        let start = match after {
            Some(row) => Bound::Excluded(self.table.pk_of(row)),
            None if group_key.is_empty() => Bound::Unbounded,
            None => Bound::Included(group_key.clone()),
        };
        let end = if group_key.is_empty() {
            Bound::Unbounded
        } else {
            Bound::Included(group_key.clone())
        };
        let iter = self.table.iter_with_vnode(vnode, (start, end))?;
        Ok(iter.map(|r| r.map_err(Into::into)))
    }

    /// A new cache of the group, filled from the table: low, middle (with its ties), high (whole tie
    /// groups), `complete` when the table had no more.
    pub(crate) fn load(
        &self,
        group_key: &OwnedRow,
        cache: &mut TopNCache,
    ) -> StreamExecutorResult<()> {
        assert_eq!(cache.len(), 0, "a cache is loaded empty");
        let mut rows = self.scan(group_key, None)?.peekable();
        while cache.low.len() < cache.offset {
            let Some(r) = rows.next() else { break };
            let r = r?;
            cache.low.insert(self.cache_key(&r), r);
        }
        while cache.low.len() == cache.offset && cache.middle.len() < cache.limit {
            let Some(r) = rows.next() else { break };
            let r = r?;
            cache.middle.insert(self.cache_key(&r), r);
        }
        if cache.with_ties {
            self.take_ties(&mut rows, |c| &mut c.middle, cache)?;
        }
        if cache.middle.len() >= cache.limit {
            self.fill(&mut rows, cache)?;
        }
        cache.complete = rows.peek().is_none();
        Ok(())
    }

    /// Refill the empty `high` from the rows after the cache's last.
    pub(crate) fn fill_high(
        &self,
        group_key: &OwnedRow,
        cache: &mut TopNCache,
    ) -> StreamExecutorResult<()> {
        assert!(cache.high.is_empty(), "high is refilled when empty");
        let after = cache.last_before_high().map(|(_, r)| r.clone());
        let mut rows = self.scan(group_key, after.as_ref())?.peekable();
        self.fill(&mut rows, cache)?;
        cache.complete = rows.peek().is_none();
        Ok(())
    }

    fn fill(
        &self,
        rows: &mut std::iter::Peekable<impl Iterator<Item = StreamExecutorResult<OwnedRow>>>,
        cache: &mut TopNCache,
    ) -> StreamExecutorResult<()> {
        while cache.high.len() < cache.high_capacity {
            let Some(r) = rows.next() else { break };
            let r = r?;
            cache.high.insert(self.cache_key(&r), r);
        }
        if cache.with_ties {
            self.take_ties(rows, |c| &mut c.high, cache)?;
        }
        Ok(())
    }

    /// Move the next rows tying the last of a range into it.
    fn take_ties(
        &self,
        rows: &mut std::iter::Peekable<impl Iterator<Item = StreamExecutorResult<OwnedRow>>>,
        range: impl Fn(&mut TopNCache) -> &mut std::collections::BTreeMap<CacheKey, OwnedRow>,
        cache: &mut TopNCache,
    ) -> StreamExecutorResult<()> {
        let Some(sort) = range(cache).last_key_value().map(|(k, _)| k.0.clone()) else {
            return Ok(());
        };
        while let Some(Ok(next)) = rows.peek() {
            let key = self.cache_key(next);
            if key.0 != sort {
                break;
            }
            let r = rows.next().expect("peeked")?;
            range(cache).insert(key, r);
        }
        if let Some(Err(_)) = rows.peek() {
            rows.next().expect("peeked")?;
        }
        Ok(())
    }
}
