//! One side's rows of a hash join (RisingWave's `JoinHashMap`): the rows table and, where the join needs
//! it, the degree table, both written through `StateTable`; in front of them a bounded cache of join keys,
//! each entry every row of the side with that key (with its degree). A miss loads the entry from the state
//! tables; beyond its capacity the least recently used key is evicted. After a recovery the cache is empty.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Bound;
use std::sync::Arc;

use epochlab_common::{Bitmap, EpochPair, OrderType, OwnedRow, ScalarImpl, memcmp};
use epochlab_state_table::StateTable;

use super::key::CompactKey;
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

/// Rows an entry keeps in a sorted vector; beyond this many it moves to a tree (a hot key's inserts stay
/// `O(log n)`). Most keys have a few rows: a vector costs one allocation, a tree node a large one.
const SMALL_ENTRY_ROWS: usize = 32;

/// Every row of one join key, by memcomparable pk (RisingWave's `JoinEntryState`), in pk order.
#[derive(Debug)]
pub enum JoinEntryState {
    Small(Vec<(CompactKey, JoinRow)>),
    Large(BTreeMap<CompactKey, JoinRow>),
}

impl Default for JoinEntryState {
    fn default() -> Self {
        Self::Small(Vec::new())
    }
}

impl JoinEntryState {
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut JoinRow> {
        let (small, large) = match self {
            Self::Small(v) => (Some(v.iter_mut().map(|(_, r)| r)), None),
            Self::Large(m) => (None, Some(m.values_mut())),
        };
        small
            .into_iter()
            .flatten()
            .chain(large.into_iter().flatten())
    }

    pub fn len(&self) -> usize {
        match self {
            Self::Small(v) => v.len(),
            Self::Large(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Store `row` under `pk`; a row of the same pk is there already: RisingWave's `OccupiedError`.
    fn insert(&mut self, pk: CompactKey, row: JoinRow) -> Result<(), JoinEntryError> {
        match self {
            Self::Small(v) => match v.binary_search_by(|(k, _)| k.cmp(&pk)) {
                Ok(_) => return Err(JoinEntryError::Occupied),
                Err(i) if v.len() < SMALL_ENTRY_ROWS => v.insert(i, (pk, row)),
                Err(_) => {
                    let mut m: BTreeMap<_, _> = std::mem::take(v).into_iter().collect();
                    m.insert(pk, row);
                    *self = Self::Large(m);
                }
            },
            Self::Large(m) => match m.entry(pk) {
                Entry::Occupied(_) => return Err(JoinEntryError::Occupied),
                Entry::Vacant(e) => {
                    e.insert(row);
                }
            },
        }
        Ok(())
    }

    /// Rows are appended in pk order while an entry is loaded (a table's rows: each pk once).
    fn push_sorted(&mut self, pk: CompactKey, row: JoinRow) {
        if let Self::Small(v) = self
            && v.len() < SMALL_ENTRY_ROWS
            && v.last().is_none_or(|(k, _)| *k < pk)
        {
            v.push((pk, row));
            return;
        }
        self.insert(pk, row)
            .expect("a table's rows have distinct pks");
    }

    /// Take the row of `pk` out; there is none: RisingWave's `RemoveError`.
    fn remove(&mut self, pk: &[u8]) -> Result<(), JoinEntryError> {
        let found = match self {
            Self::Small(v) => match v.binary_search_by(|(k, _)| k.as_slice().cmp(pk)) {
                Ok(i) => {
                    v.remove(i);
                    true
                }
                Err(_) => false,
            },
            Self::Large(m) => m.remove(pk).is_some(),
        };
        found.then_some(()).ok_or(JoinEntryError::Remove)
    }
}

/// FxHash over a join key's memcomparable bytes: the cache is looked up once per row, and its keys are
/// not chosen by an adversary (no iteration of the map orders anything either).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
        }
        for &b in words.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    /// A final mix: a memcomparable integer varies in its last bytes, which the multiplications leave in the
    /// high bits; the table picks buckets by the low ones.
    fn finish(&self) -> u64 {
        let h = (self.0 ^ (self.0 >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^ (h >> 33)
    }
}

type KeyMap<V> = HashMap<CompactKey, V, BuildHasherDefault<KeyHasher>>;

struct CachedEntry {
    state: JoinEntryState,
    last_used: u64,
    /// Its rows are out (between `take_state` and `update_state`).
    taken: bool,
}

epochlab_common::toggle! {
    /// A test-only mutation, no RisingWave bug: whether a deleted row of a side leaves its state tables. The
    /// join's recovery tests must catch `CacheOnly` (the row is gone from the cache, so the join is right
    /// until the cache is rebuilt from the tables, as after a recovery or an eviction).
    pub enum JoinRowDelete {
        /// From the cache and the tables, as RisingWave deletes it.
        #[default]
        Written,
        /// From the cache only.
        CacheOnly,
    }
}

/// A cached entry's check (RisingWave's `JoinEntryError`, in its words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JoinEntryError {
    #[error("double inserting a join state entry")]
    Occupied,
    #[error("removing a join state entry but it is not in the cache")]
    Remove,
}

pub struct JoinHashMap {
    state: StateTable,
    degree_state: Option<StateTable>,
    /// The join key's columns in the side's rows.
    join_key: Vec<usize>,
    /// Per key column: NULL matches NULL (`IS NOT DISTINCT FROM`).
    null_matched: Vec<bool>,
    pk_indices: Vec<usize>,
    /// Where a row's memcomparable pk is encoded before it is copied into an entry (one allocation a row).
    pk_buf: Vec<u8>,
    /// Looked up only, never iterated (the LRU order decides evictions), so a hash map orders nothing. A key
    /// is kept inline where short (no allocation), and copied into `lru`.
    cache: KeyMap<CachedEntry>,
    /// Tick → key, the eviction order. A key is here once, at a tick at or below its entry's `last_used`
    /// (a hit moves only `last_used`; eviction re-files a key whose tick is stale), so the oldest fresh tick
    /// here is the least recently used key.
    lru: BTreeMap<u64, CompactKey>,
    tick: u64,
    capacity: usize,
    /// The executor's counters (both sides share them).
    stats: ExecutorStatsHandle,
    row_delete: JoinRowDelete,
}

/// A degree table row: the row's pk datums, then its degree.
fn degree_row(pk_indices: &[usize], row: &OwnedRow, degree: u64) -> OwnedRow {
    let mut d: Vec<_> = pk_indices.iter().map(|&c| row[c].clone()).collect();
    d.push(Some(ScalarImpl::Int64(degree as i64)));
    OwnedRow::new(d)
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
            pk_buf: Vec::new(),
            cache: KeyMap::default(),
            lru: BTreeMap::new(),
            tick: 0,
            capacity: capacity.max(1),
            stats,
            row_delete: JoinRowDelete::default(),
        }
    }

    pub fn need_degree_table(&self) -> bool {
        self.degree_state.is_some()
    }

    /// The join key's columns in this side's rows.
    pub fn join_key(&self) -> &[usize] {
        &self.join_key
    }

    /// Clean this side's rows (and degrees) whose first join key column is below `watermark`, lazily
    /// (RisingWave's `JoinHashMap::update_watermark`: the other side's watermark on its first join key
    /// column, below which no row of it will match these any more). The cache keeps what it holds, as
    /// RisingWave's does.
    pub fn update_watermark(&mut self, watermark: ScalarImpl) {
        self.state.update_watermark(Some(watermark.clone()), false);
        if let Some(d) = &mut self.degree_state {
            d.update_watermark(Some(watermark), false);
        }
    }

    pub fn table_id(&self) -> epochlab_common::TableId {
        self.state.table_id()
    }

    pub fn entry_count(&self) -> usize {
        self.cache.len()
    }

    /// The join key of `row`, memcomparable, encoded into `buf` (cleared first); false, with `buf` empty,
    /// when a key column that is not null-safe is NULL (the row can match nothing).
    pub fn join_key_into(&self, row: &OwnedRow, buf: &mut Vec<u8>) -> bool {
        buf.clear();
        let matchable = self
            .join_key
            .iter()
            .zip(&self.null_matched)
            .all(|(&c, &safe)| safe || row.datum_at(c).is_some());
        if matchable {
            for &c in &self.join_key {
                memcmp::encode_datum(row.datum_at(c), OrderType::ascending(), buf);
            }
        }
        matchable
    }

    /// The join key's datums of `row`.
    pub fn key_row_of(&self, row: &OwnedRow) -> OwnedRow {
        row.project(&self.join_key)
    }

    /// The memcomparable pk of `row`, encoded in `pk_buf`.
    fn encode_pk(&mut self, row: &OwnedRow) -> &[u8] {
        encode_pk(&self.pk_indices, row, &mut self.pk_buf)
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
        let key = CompactKey::new(key);
        self.lru.insert(self.tick, key.clone());
        let entry = CachedEntry {
            state,
            last_used: self.tick,
            taken: false,
        };
        self.cache.insert(key, entry);
        while self.cache.len() > self.capacity {
            self.evict_least_recently_used();
        }
        assert_eq!(
            self.cache.len(),
            self.lru.len(),
            "every cached key is in the LRU order"
        );
    }

    /// Drop the entry used least recently: the oldest tick in `lru` whose key was not used since (a key
    /// used since is filed again under its last use).
    fn evict_least_recently_used(&mut self) {
        loop {
            let (tick, k) = self.lru.pop_first().expect("lru tracks every cached key");
            let last_used = self.cache[&k].last_used;
            if last_used == tick {
                self.cache.remove(&k);
                return;
            }
            assert!(
                last_used > tick,
                "a key's tick in lru is at most its last use"
            );
            self.lru.insert(last_used, k);
        }
    }

    /// Every row of `key_row`'s key in the state tables, with its degree from the degree table.
    fn fetch(&mut self, key_row: &OwnedRow) -> StreamExecutorResult<JoinEntryState> {
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
            let pk = CompactKey::new(self.encode_pk(&row));
            entry.push_sorted(pk, JoinRow { row, degree });
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

    /// Under a test-only mutation (see [`JoinRowDelete`]).
    pub fn with_row_delete(mut self, row_delete: JoinRowDelete) -> Self {
        self.row_delete = row_delete;
        self
    }

    /// Store a row of this side (with its degree where the side keeps degrees): a cached entry of its key
    /// takes it first, and must not hold its pk already (RisingWave's check, in every consistency mode).
    pub fn insert(&mut self, key: &[u8], row: &OwnedRow, degree: u64) -> StreamExecutorResult<()> {
        if let Some(e) = self.cache.get_mut(key) {
            assert!(
                !e.taken,
                "a row is stored only in an entry that is not taken"
            );
            let pk = CompactKey::new(encode_pk(&self.pk_indices, row, &mut self.pk_buf));
            let joined = JoinRow {
                row: row.clone(),
                degree,
            };
            if let Err(source) = e.state.insert(pk, joined) {
                return Err(self.entry_error(source, row));
            }
        }
        self.state.insert(row)?;
        if let Some(t) = &mut self.degree_state {
            t.insert(&degree_row(&self.pk_indices, row, degree))?;
        }
        self.stats.state_rows_written(self.tables_per_row(), 0);
        Ok(())
    }

    /// Remove a row of this side (`degree`: its degree, as the delete's matches counted it): a cached entry
    /// of its key gives it up first, and must hold it (RisingWave's check, in every consistency mode).
    pub fn delete(&mut self, key: &[u8], row: &OwnedRow, degree: u64) -> StreamExecutorResult<()> {
        if let Some(e) = self.cache.get_mut(key) {
            assert!(
                !e.taken,
                "a row is removed only from an entry that is not taken"
            );
            let pk = encode_pk(&self.pk_indices, row, &mut self.pk_buf);
            if let Err(source) = e.state.remove(pk) {
                return Err(self.entry_error(source, row));
            }
        }
        if self.row_delete == JoinRowDelete::Written {
            self.state.delete(row)?;
            if let Some(t) = &mut self.degree_state {
                t.delete(&degree_row(&self.pk_indices, row, degree))?;
            }
        }
        self.stats.state_rows_written(0, self.tables_per_row());
        Ok(())
    }

    /// A cache check's failure with RisingWave's context: the row's join key, pk, the row and the table.
    fn entry_error(&self, source: JoinEntryError, row: &OwnedRow) -> StreamExecutorError {
        StreamExecutorError::JoinEntry {
            source,
            join_key: row.project(&self.join_key),
            pk: self.state.pk_of(row),
            row: row.clone(),
            table_id: self.state.table_id(),
        }
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

/// The memcomparable pk (columns `pk_indices`) of `row`, encoded in `buf`.
fn encode_pk<'b>(pk_indices: &[usize], row: &OwnedRow, buf: &'b mut Vec<u8>) -> &'b [u8] {
    buf.clear();
    for &c in pk_indices {
        memcmp::encode_datum(row.datum_at(c), OrderType::ascending(), buf);
    }
    buf
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
