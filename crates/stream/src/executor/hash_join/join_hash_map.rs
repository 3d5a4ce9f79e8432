//! One side's rows of a hash join (RisingWave's `JoinHashMap`): the rows table and, where the join needs
//! it, the degree table, both written through `StateTable`; in front of them a bounded cache of join keys,
//! each entry every row of the side with that key (with its degree). A miss loads the entry from the state
//! tables; beyond its capacity the least recently used key is evicted. After a recovery the cache is empty.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::Arc;

use epochlab_common::{Bitmap, EpochPair, OrderType, OwnedRow, ScalarImpl, memcmp};
use epochlab_state_table::StateTable;

use crate::executor::{ExecutorStatsHandle, StreamExecutorError, StreamExecutorResult};

/// A row of one side with its degree: how many rows of the other side it matches (kept only where the
/// side has a degree table, else 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinRow {
    pub row: OwnedRow,
    pub degree: u64,
}

impl JoinRow {
    pub fn is_zero_degree(&self) -> bool {
        self.degree == 0
    }
}

/// Every row of one join key, by memcomparable pk (RisingWave's `JoinEntryState`).
#[derive(Debug, Default)]
pub struct JoinEntryState {
    rows: BTreeMap<Vec<u8>, JoinRow>,
}

impl JoinEntryState {
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut JoinRow> {
        self.rows.values_mut()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

struct CachedEntry {
    state: JoinEntryState,
    last_used: u64,
    /// Its rows are out (between `take_state` and `update_state`).
    taken: bool,
}

pub struct JoinHashMap {
    state: StateTable,
    degree_state: Option<StateTable>,
    /// The join key's columns in the side's rows.
    join_key: Vec<usize>,
    /// Per key column: NULL matches NULL (`IS NOT DISTINCT FROM`).
    null_matched: Vec<bool>,
    pk_indices: Vec<usize>,
    /// Looked up only, never iterated (the LRU order decides evictions), so a hash map orders nothing.
    cache: HashMap<Vec<u8>, CachedEntry>,
    /// Last use → key, the eviction order.
    lru: BTreeMap<u64, Vec<u8>>,
    tick: u64,
    capacity: usize,
    /// The executor's counters (both sides share them).
    stats: ExecutorStatsHandle,
}

/// A degree table row: the row's pk datums, then its degree.
fn degree_row(pk_indices: &[usize], row: &OwnedRow, degree: u64) -> OwnedRow {
    let mut d: Vec<_> = pk_indices.iter().map(|&c| row[c].clone()).collect();
    d.push(Some(ScalarImpl::Int64(degree as i64)));
    OwnedRow::new(d)
}

fn encode_datums<'a>(datums: impl Iterator<Item = &'a epochlab_common::Datum>) -> Vec<u8> {
    let mut buf = Vec::with_capacity(16);
    for d in datums {
        memcmp::encode_datum(d, OrderType::ascending(), &mut buf);
    }
    buf
}

impl JoinHashMap {
    pub fn new(
        state: StateTable,
        degree_state: Option<StateTable>,
        join_key: Vec<usize>,
        null_matched: Vec<bool>,
        capacity: usize,
        stats: ExecutorStatsHandle,
    ) -> Self {
        assert_eq!(
            join_key.len(),
            null_matched.len(),
            "one flag per key column"
        );
        let pk_indices = state.desc().pk_indices.clone();
        assert_eq!(
            pk_indices[..join_key.len()],
            join_key[..],
            "the rows table's pk starts with the join key"
        );
        Self {
            state,
            degree_state,
            join_key,
            null_matched,
            pk_indices,
            cache: HashMap::new(),
            lru: BTreeMap::new(),
            tick: 0,
            capacity: capacity.max(1),
            stats,
        }
    }

    pub fn need_degree_table(&self) -> bool {
        self.degree_state.is_some()
    }

    pub fn table_id(&self) -> epochlab_common::TableId {
        self.state.table_id()
    }

    pub fn entry_count(&self) -> usize {
        self.cache.len()
    }

    /// The join key of `row`, memcomparable, or `None` when a key column that is not null-safe is NULL (the
    /// row can match nothing).
    pub fn join_key_of(&self, row: &OwnedRow) -> Option<Vec<u8>> {
        let matchable = self
            .join_key
            .iter()
            .zip(&self.null_matched)
            .all(|(&c, &safe)| safe || row.datum_at(c).is_some());
        matchable.then(|| encode_datums(self.join_key.iter().map(|&c| row.datum_at(c))))
    }

    /// The join key's datums of `row`.
    pub fn key_row_of(&self, row: &OwnedRow) -> OwnedRow {
        row.project(&self.join_key)
    }

    fn pk_of(&self, row: &OwnedRow) -> Vec<u8> {
        encode_datums(self.pk_indices.iter().map(|&c| row.datum_at(c)))
    }

    /// Rows written per row of this side: its row, and its degree row.
    fn tables_per_row(&self) -> u64 {
        1 + u64::from(self.degree_state.is_some())
    }

    pub fn init(&mut self, epoch: EpochPair) {
        self.state.init_epoch(epoch);
        if let Some(d) = &mut self.degree_state {
            d.init_epoch(epoch);
        }
    }

    /// Commit both tables for the barrier's epoch.
    pub fn flush(&mut self, epoch: EpochPair) -> StreamExecutorResult<()> {
        self.state.commit(epoch)?;
        if let Some(d) = &mut self.degree_state {
            d.commit(epoch)?;
        }
        Ok(())
    }

    /// A reschedule: the tables take the new vnodes; the cache is dropped (its keys may be elsewhere now).
    pub fn update_vnode_bitmap(&mut self, vnodes: Arc<Bitmap>) -> StreamExecutorResult<()> {
        self.state.update_vnode_bitmap(vnodes.clone())?;
        if let Some(d) = &mut self.degree_state {
            d.update_vnode_bitmap(vnodes)?;
        }
        self.cache.clear();
        self.lru.clear();
        Ok(())
    }

    /// Take the entry of `key` out of the cache, or load it from the state tables (`key_row`: the key's
    /// datums, needed only then). Give it back with [`Self::update_state`]. A cached entry keeps its slot
    /// (its rows are moved out, its key is not copied): a hit costs one lookup and a move in the LRU order.
    pub fn take_state(
        &mut self,
        key: &[u8],
        key_row: impl FnOnce() -> OwnedRow,
    ) -> StreamExecutorResult<JoinEntryState> {
        if let Some(e) = self.cache.get_mut(key) {
            assert!(!e.taken, "a join key's entry is taken once at a time");
            e.taken = true;
            self.tick += 1;
            let k = self
                .lru
                .remove(&e.last_used)
                .expect("lru tracks every cached key");
            self.lru.insert(self.tick, k);
            e.last_used = self.tick;
            self.stats.cache_lookup(true);
            return Ok(std::mem::take(&mut e.state));
        }
        self.stats.cache_lookup(false);
        self.fetch(&key_row())
    }

    /// Put an entry back (as the most recently used), evicting beyond the capacity.
    pub fn update_state(&mut self, key: &[u8], state: JoinEntryState) {
        if let Some(e) = self.cache.get_mut(key) {
            assert!(e.taken, "a join key's entry is taken before it is put back");
            e.taken = false;
            e.state = state;
            return;
        }
        self.tick += 1;
        self.lru.insert(self.tick, key.to_vec());
        self.cache.insert(
            key.to_vec(),
            CachedEntry {
                state,
                last_used: self.tick,
                taken: false,
            },
        );
        while self.cache.len() > self.capacity {
            let (_, k) = self.lru.pop_first().expect("lru tracks every cached key");
            self.cache.remove(&k);
        }
        assert_eq!(
            self.cache.len(),
            self.lru.len(),
            "every cached key is in the LRU order"
        );
    }

    /// Every row of `key_row`'s key in the state tables, with its degree from the degree table.
    fn fetch(&self, key_row: &OwnedRow) -> StreamExecutorResult<JoinEntryState> {
        let rows = rows_with_prefix(&self.state, key_row)?;
        let degrees = match &self.degree_state {
            Some(d) => Some(rows_with_prefix(d, key_row)?),
            None => None,
        };
        if let Some(d) = &degrees
            && d.len() != rows.len()
        {
            return Err(self.degree_mismatch(key_row, "row and degree counts differ"));
        }
        let mut entry = JoinEntryState::default();
        for (i, row) in rows.into_iter().enumerate() {
            let degree = match &degrees {
                Some(d) => self.stored_degree(&row, &d[i])?,
                None => 0,
            };
            entry.rows.insert(self.pk_of(&row), JoinRow { row, degree });
        }
        Ok(entry)
    }

    /// The degree in `degree_row`, which must be `row`'s.
    fn stored_degree(&self, row: &OwnedRow, degree_row: &OwnedRow) -> StreamExecutorResult<u64> {
        let n = self.pk_indices.len();
        let same = self
            .pk_indices
            .iter()
            .enumerate()
            .all(|(p, &c)| row[c] == degree_row[p]);
        match degree_row
            .datum_at(n)
            .as_ref()
            .and_then(ScalarImpl::as_int64)
        {
            Some(d) if same && d >= 0 => Ok(d as u64),
            _ => Err(self.degree_mismatch(&self.state.pk_of(row), "degree row does not match")),
        }
    }

    fn degree_mismatch(&self, pk: &OwnedRow, detail: &'static str) -> StreamExecutorError {
        StreamExecutorError::JoinDegreeMismatch {
            table_id: self.state.table_id(),
            pk: pk.clone(),
            detail,
        }
    }

    /// Store a row of this side (with its degree where the side keeps degrees); a cached entry of its key
    /// takes it too.
    pub fn insert(&mut self, key: &[u8], row: &OwnedRow, degree: u64) -> StreamExecutorResult<()> {
        self.state.insert(row)?;
        if let Some(t) = &mut self.degree_state {
            t.insert(&degree_row(&self.pk_indices, row, degree))?;
        }
        self.stats.state_rows_written(self.tables_per_row(), 0);
        if let Some(e) = self.cache.get_mut(key) {
            assert!(
                !e.taken,
                "a row is stored only in an entry that is not taken"
            );
            let pk = encode_datums(self.pk_indices.iter().map(|&c| row.datum_at(c)));
            let row = row.clone();
            e.state.rows.insert(pk, JoinRow { row, degree });
        }
        Ok(())
    }

    /// Remove a row of this side (`degree`: its degree, as the delete's matches counted it).
    pub fn delete(&mut self, key: &[u8], row: &OwnedRow, degree: u64) -> StreamExecutorResult<()> {
        self.state.delete(row)?;
        if let Some(t) = &mut self.degree_state {
            t.delete(&degree_row(&self.pk_indices, row, degree))?;
        }
        self.stats.state_rows_written(0, self.tables_per_row());
        if let Some(e) = self.cache.get_mut(key) {
            assert!(
                !e.taken,
                "a row is removed only from an entry that is not taken"
            );
            let pk = encode_datums(self.pk_indices.iter().map(|&c| row.datum_at(c)));
            e.state.rows.remove(&pk);
        }
        Ok(())
    }

    /// One more match of a row of a taken entry.
    pub fn inc_degree(&mut self, jr: &mut JoinRow) -> StreamExecutorResult<()> {
        self.move_degree(jr, jr.degree + 1)
    }

    /// One match less of a row of a taken entry.
    pub fn dec_degree(&mut self, jr: &mut JoinRow) -> StreamExecutorResult<()> {
        if jr.degree == 0 {
            let pk = self.state.pk_of(&jr.row);
            return Err(self.degree_mismatch(&pk, "degree below zero"));
        }
        self.move_degree(jr, jr.degree - 1)
    }

    fn move_degree(&mut self, jr: &mut JoinRow, degree: u64) -> StreamExecutorResult<()> {
        let old = degree_row(&self.pk_indices, &jr.row, jr.degree);
        let new = degree_row(&self.pk_indices, &jr.row, degree);
        let table = self
            .degree_state
            .as_mut()
            .expect("degrees change only on a side with a degree table");
        table.update(&old, &new)?;
        self.stats.state_rows_written(1, 1);
        jr.degree = degree;
        Ok(())
    }
}

/// The rows of `table` whose pk starts with `prefix`, in pk order.
fn rows_with_prefix(table: &StateTable, prefix: &OwnedRow) -> StreamExecutorResult<Vec<OwnedRow>> {
    let vnode = table.compute_vnode_by_pk(prefix)?;
    let range = (
        Bound::Included(prefix.clone()),
        Bound::Included(prefix.clone()),
    );
    let mut out = Vec::new();
    for r in table.iter_with_vnode(vnode, range)? {
        out.push(r?);
    }
    Ok(out)
}
