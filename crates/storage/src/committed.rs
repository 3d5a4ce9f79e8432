//! Committed data: what meta's `commit_epoch` has made durable (RisingWave's SSTs in object storage),
//! multi-versioned by epoch. Whether a node may *see* a table's committed data is decided by the version it
//! has pinned, not here (see [`crate::local`]).
//!
//! Layout, as Hummock's: each commit of a table becomes a sorted run of immutable blocks (an SST of
//! `BLOCK_BYTES` blocks: keys and values back to back in one buffer, a 16-byte entry per version), and runs
//! merge size-tiered (the newest two whenever the older is at most twice the newer), so a table of `n` rows
//! has at most `log2(n)` runs and each row is copied `O(log n)` times. A merge streams block by block and
//! frees each input block as it passes, so it needs one block of headroom, not a second copy of the table.
//! A merge keeps of the older run only each key's newest version, and every version of the newer run:
//! enough for every reader at or above the previous max committed epoch (all readers in this model are).
//! A row costs its key and value bytes plus 16.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use epochlab_common::{Epoch, TableId};

use crate::filter::{KeyFilter, key_hash};
use crate::imm::Imm;
use crate::watermark::{ReadWatermarks, TableWatermarks, VnodeWatermark};

/// A block is cut at the first key boundary past this many bytes of keys and values.
const BLOCK_BYTES: usize = 64 * 1024;
/// The high bit of an entry's `val_end` marks a delete (a tombstone; its value is empty).
const TOMBSTONE: u32 = 1 << 31;

#[derive(Clone, Default)]
pub struct CommittedStore {
    tables: Arc<RwLock<BTreeMap<TableId, TableData>>>,
    /// Epochs pinned by readers below the max committed epoch (RisingWave's pinned snapshots: a frontend's
    /// read-only transaction), each with its count: a merge keeps what a read at each of them sees.
    pins: Arc<RwLock<BTreeMap<Epoch, usize>>>,
    /// Each table's committed watermarks: a read at an epoch skips the keys below those sealed at or before
    /// it ([`crate::watermark`]).
    watermarks: Arc<RwLock<BTreeMap<TableId, TableWatermarks>>>,
}

/// One table's runs, oldest first. A newer run's versions of a key are newer than an older run's.
#[derive(Default)]
struct TableData {
    runs: Vec<Run>,
    /// The key prefix length (bytes, vnode included) the table's prefix reads fix, if it has one: runs built
    /// from now on carry a filter of their keys' prefixes of this length (RisingWave's prefix hint).
    prefix_len: Option<usize>,
}

/// One version of a key. Its key starts where the previous entry's value ends (or at 0).
#[derive(Clone, Copy)]
struct Entry {
    epoch: Epoch,
    key_end: u32,
    /// The value's end; `TOMBSTONE` set for a delete.
    val_end: u32,
}

/// Immutable sorted versions: by key, then by epoch ascending. A key's versions never straddle two blocks.
struct Block {
    data: Bytes,
    entries: Vec<Entry>,
}

impl Block {
    fn start(&self, i: usize) -> usize {
        if i == 0 {
            0
        } else {
            (self.entries[i - 1].val_end & !TOMBSTONE) as usize
        }
    }

    fn key(&self, i: usize) -> &[u8] {
        &self.data[self.start(i)..self.entries[i].key_end as usize]
    }

    fn value_range(&self, i: usize) -> Option<std::ops::Range<usize>> {
        let e = self.entries[i];
        (e.val_end & TOMBSTONE == 0).then_some(e.key_end as usize..e.val_end as usize)
    }

    /// The index just past the versions of the key at `i`.
    fn key_end_index(&self, i: usize) -> usize {
        let key = self.key(i);
        let mut j = i + 1;
        while j < self.entries.len() && self.key(j) == key {
            j += 1;
        }
        j
    }

    /// Among the versions `i..j` of one key, the newest at or below `epoch`: `Some(None)` for a delete.
    fn visible(&self, i: usize, j: usize, epoch: Epoch) -> Option<Option<std::ops::Range<usize>>> {
        (i..j)
            .rev()
            .find(|&x| self.entries[x].epoch <= epoch)
            .map(|x| self.value_range(x))
    }

    /// The first index whose key is not below `bound`.
    fn seek(&self, bound: Bound<&[u8]>) -> usize {
        let n = self.entries.len();
        match bound {
            Bound::Unbounded => 0,
            Bound::Included(k) => partition(n, |i| self.key(i) < k),
            Bound::Excluded(k) => partition(n, |i| self.key(i) <= k),
        }
    }
}

/// The first `i` in `0..n` for which `below(i)` is false (`below` must be monotone).
fn partition(n: usize, below: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

struct Run {
    blocks: Vec<Block>,
    versions: usize,
    /// Over the run's keys: a point read skips a run that does not have the key.
    filter: KeyFilter,
    /// Over the run's keys' prefixes of a length: a read of every key with a prefix of that length skips a
    /// run that has none.
    prefix_filter: Option<(usize, KeyFilter)>,
}

impl Run {
    /// False only if no key of the run starts with `prefix`.
    fn may_have_prefix(&self, prefix: &[u8]) -> bool {
        match &self.prefix_filter {
            Some((len, f)) if *len == prefix.len() => f.may_contain(key_hash(prefix)),
            _ => true,
        }
    }
}

/// Writes versions in order into blocks.
#[derive(Default)]
struct RunBuilder {
    blocks: Vec<Block>,
    data: Vec<u8>,
    entries: Vec<Entry>,
    versions: usize,
    hashes: Vec<u64>,
    /// The prefix length of `prefix_hashes`, if the run gets a prefix filter.
    prefix_len: Option<usize>,
    /// One per distinct prefix (keys come sorted, so a prefix's keys are adjacent).
    prefix_hashes: Vec<u64>,
    last_prefix: Vec<u8>,
}

impl RunBuilder {
    /// A builder for about `versions` versions.
    fn with_capacity(versions: usize, prefix_len: Option<usize>) -> Self {
        Self {
            hashes: Vec::with_capacity(versions),
            prefix_len,
            ..Self::default()
        }
    }

    /// Add the prefix of `key`, unless the previous key had it (a key shorter than the prefix has none).
    fn push_prefix(&mut self, key: &[u8]) {
        let Some(prefix) = self.prefix_len.and_then(|len| key.get(..len)) else {
            return;
        };
        if self.prefix_hashes.is_empty() || self.last_prefix != prefix {
            self.prefix_hashes.push(key_hash(prefix));
            self.last_prefix.clear();
            self.last_prefix.extend_from_slice(prefix);
        }
    }

    /// The versions of one key, epochs ascending.
    fn push_key<'v, I>(&mut self, key: &[u8], versions: I)
    where
        I: Iterator<Item = (Epoch, Option<&'v [u8]>)> + Clone,
    {
        let size: usize = versions
            .clone()
            .map(|(_, v)| key.len() + v.map_or(0, <[u8]>::len))
            .sum();
        if !self.data.is_empty() && self.data.len() + size > BLOCK_BYTES {
            self.cut();
        }
        if self.data.capacity() == 0 {
            self.data.reserve_exact(BLOCK_BYTES.max(size));
        }
        self.hashes.push(key_hash(key));
        self.push_prefix(key);
        for (epoch, value) in versions {
            self.data.extend_from_slice(key);
            let key_end = self.data.len();
            self.data.extend_from_slice(value.unwrap_or_default());
            let val_end = u32::try_from(self.data.len()).expect("a block is under 2 GiB");
            assert!(val_end & TOMBSTONE == 0, "a block is under 2 GiB");
            let val_end = if value.is_some() {
                val_end
            } else {
                val_end | TOMBSTONE
            };
            self.entries.push(Entry {
                epoch,
                key_end: key_end as u32,
                val_end,
            });
            self.versions += 1;
        }
    }

    fn cut(&mut self) {
        if self.entries.is_empty() {
            return;
        }
        // The next block is about as long as this one.
        let next = Vec::with_capacity(self.entries.len());
        let mut entries = std::mem::replace(&mut self.entries, next);
        entries.shrink_to_fit();
        let mut data = std::mem::take(&mut self.data);
        if data.capacity() > data.len() + data.len() / 8 {
            data.shrink_to_fit();
        }
        self.blocks.push(Block {
            data: Bytes::from(data),
            entries,
        });
    }

    fn finish(mut self) -> Run {
        self.cut();
        self.blocks.shrink_to_fit();
        Run {
            blocks: self.blocks,
            versions: self.versions,
            filter: KeyFilter::build(&self.hashes),
            prefix_filter: self
                .prefix_len
                .map(|len| (len, KeyFilter::build(&self.prefix_hashes))),
        }
    }
}

/// A position in a borrowed run.
struct Cursor<'a> {
    run: &'a Run,
    block: usize,
    entry: usize,
}

impl<'a> Cursor<'a> {
    fn seek(run: &'a Run, bound: Bound<&[u8]>) -> Self {
        // The first block whose last key is not below the bound holds the first key not below it.
        let last_below = |b: &Block| {
            let last = b.key(b.entries.len() - 1);
            match bound {
                Bound::Unbounded => false,
                Bound::Included(k) => last < k,
                Bound::Excluded(k) => last <= k,
            }
        };
        let block = partition(run.blocks.len(), |i| last_below(&run.blocks[i]));
        let entry = run.blocks.get(block).map_or(0, |b| b.seek(bound));
        Cursor { run, block, entry }
    }

    fn current(&self) -> Option<(&'a Block, usize)> {
        let b = self.run.blocks.get(self.block)?;
        Some((b, self.entry))
    }

    fn key(&self) -> Option<&'a [u8]> {
        self.current().map(|(b, i)| b.key(i))
    }

    /// Move to `end`, the index past the current key's versions in the current block.
    fn advance_to(&mut self, end: usize) {
        self.entry = end;
        if self
            .run
            .blocks
            .get(self.block)
            .is_none_or(|b| end >= b.entries.len())
        {
            self.block += 1;
            self.entry = 0;
        }
    }
}

/// Visit the live rows of `runs` in `range` as of `epoch`, in key order; `f` returns false to stop.
fn visit(
    runs: &[&Run],
    range: (Bound<&[u8]>, Bound<&[u8]>),
    epoch: Epoch,
    mut f: impl FnMut(&Block, usize, std::ops::Range<usize>) -> bool,
) {
    let mut cursors: Vec<Cursor> = runs
        .iter()
        .rev()
        .map(|r| Cursor::seek(r, range.0))
        .collect();
    let past_end = |k: &[u8]| match range.1 {
        Bound::Unbounded => false,
        Bound::Included(e) => k > e,
        Bound::Excluded(e) => k >= e,
    };
    loop {
        let Some(min) = cursors.iter().filter_map(Cursor::key).min() else {
            return;
        };
        if past_end(min) {
            return;
        }
        // Newest run first: the first run with a version at or below `epoch` decides.
        let mut decided = false;
        let mut keep_going = true;
        for c in cursors.iter_mut() {
            if c.key() != Some(min) {
                continue;
            }
            let (b, i) = c.current().expect("a cursor with a key");
            let end = b.key_end_index(i);
            if !decided && let Some(v) = b.visible(i, end, epoch) {
                decided = true;
                if let Some(range) = v {
                    keep_going = f(b, i, range);
                }
            }
            c.advance_to(end);
        }
        if !keep_going {
            return;
        }
    }
}

/// An owned run consumed block by block: each block is freed once the cursor leaves it.
struct Draining {
    blocks: std::vec::IntoIter<Block>,
    current: Option<Block>,
    entry: usize,
}

impl Draining {
    fn new(run: Run) -> Self {
        let mut blocks = run.blocks.into_iter();
        let current = blocks.next();
        Draining {
            blocks,
            current,
            entry: 0,
        }
    }

    fn key(&self) -> Option<&[u8]> {
        self.current.as_ref().map(|b| b.key(self.entry))
    }

    /// Append the current key's versions (epochs ascending) to `out`, tagged with `from`; returns the
    /// index past them.
    fn take_versions(&self, out: &mut Vec<Version>, from: Side, pins: &[Epoch]) -> usize {
        let b = self.current.as_ref().expect("a current block");
        let end = b.key_end_index(self.entry);
        for i in self.entry..end {
            // Of the older run, a key's newest version, and the newest at or below each pinned epoch: every
            // other reader reads at or above the previous max committed epoch, which is at or above every
            // epoch of the older run.
            let next = (i + 1 < end).then(|| b.entries[i + 1].epoch);
            let seen = |e: Epoch| b.entries[i].epoch <= e && next.is_none_or(|n| n > e);
            if from == Side::Newer || next.is_none() || pins.iter().any(|&p| seen(p)) {
                out.push((b.entries[i].epoch, b.value_range(i), from));
            }
        }
        end
    }

    fn data(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |b| &b.data[..])
    }

    fn advance_to(&mut self, end: usize) {
        let len = self.current.as_ref().map_or(0, |b| b.entries.len());
        self.entry = end;
        if self.entry >= len {
            self.current = self.blocks.next();
            self.entry = 0;
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Older,
    Newer,
}

/// A version found during a merge: its epoch, its value's place in its block (`None`: a delete), its run.
type Version = (Epoch, Option<std::ops::Range<usize>>, Side);

/// Merge two adjacent runs (`newer` after `older`) into one: of a key, the older run's newest version and
/// every version of the newer run (of two versions at one epoch, the newer run's).
fn merge(older: Run, newer: Run, prefix_len: Option<usize>, pins: &[Epoch]) -> Run {
    let mut out = RunBuilder::with_capacity(older.versions + newer.versions, prefix_len);
    let (mut a, mut b) = (Draining::new(older), Draining::new(newer));
    let mut versions: Vec<Version> = Vec::new();
    loop {
        let (take_a, take_b) = match (a.key(), b.key()) {
            (None, None) => break,
            (Some(_), None) => (true, false),
            (None, Some(_)) => (false, true),
            (Some(x), Some(y)) => (x <= y, y <= x),
        };
        versions.clear();
        let end_a = take_a.then(|| a.take_versions(&mut versions, Side::Older, pins));
        let end_b = take_b.then(|| b.take_versions(&mut versions, Side::Newer, pins));
        versions.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                *earlier = later.clone();
            }
            same
        });
        debug_assert!(
            versions.windows(2).all(|w| w[0].0 < w[1].0),
            "committed versions of a key must not go back in epoch"
        );
        let key = if take_a { a.key() } else { b.key() }.expect("a key");
        let resolve = |(epoch, range, side): &Version| {
            let data = if *side == Side::Older {
                a.data()
            } else {
                b.data()
            };
            (*epoch, range.clone().map(|r| &data[r]))
        };
        out.push_key(key, versions.iter().map(resolve));
        if let Some(end) = end_a {
            a.advance_to(end);
        }
        if let Some(end) = end_b {
            b.advance_to(end);
        }
    }
    out.finish()
}

/// The smallest key greater than every key that starts with `prefix`; `None` when there is none (the
/// prefix is all `0xFF`). A read of `prefix..next_key(prefix)` is a prefix read, which [`prefix_of_range`]
/// recognises.
pub fn next_key(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut k = prefix.to_vec();
    while let Some(last) = k.pop() {
        if last < 0xFF {
            k.push(last + 1);
            return Some(k);
        }
    }
    None
}

/// `p` when `range` is exactly the keys that start with `p` (`p` included, [`next_key`] of `p` excluded).
fn prefix_of_range<'a>(range: (Bound<&'a [u8]>, Bound<&[u8]>)) -> Option<&'a [u8]> {
    let (Bound::Included(p), Bound::Excluded(end)) = range else {
        return None;
    };
    // The end is `p` cut after its last byte below 0xFF, that byte plus one.
    let (&last, head) = end.split_last()?;
    let cut = head.len();
    let successor = p.len() > cut
        && p[..cut] == *head
        && p[cut] < 0xFF
        && p[cut] + 1 == last
        && p[cut + 1..].iter().all(|&b| b == 0xFF);
    successor.then_some(p)
}

/// A k-way merge of sorted imms into one run: a heap of (key, imm index), so that a key's versions come out
/// oldest first.
fn run_of_imms(imms: &[Arc<Imm>], prefix_len: Option<usize>) -> Run {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut pos = vec![0usize; imms.len()];
    let mut heap: BinaryHeap<Reverse<(&[u8], usize)>> = imms
        .iter()
        .enumerate()
        .filter(|(_, imm)| !imm.is_empty())
        .map(|(n, imm)| Reverse((imm.key(0), n)))
        .collect();
    let mut out = RunBuilder::with_capacity(imms.iter().map(|i| i.len()).sum(), prefix_len);
    let mut versions: Vec<(Epoch, Option<&[u8]>)> = Vec::new();
    while let Some(Reverse((key, _))) = heap.peek().copied() {
        versions.clear();
        while let Some(Reverse((k, n))) = heap.peek().copied()
            && k == key
        {
            heap.pop();
            let imm = &imms[n];
            let epoch = imm.epoch;
            match versions.last_mut() {
                Some(last) if last.0 == epoch => last.1 = imm.value(pos[n]),
                _ => versions.push((epoch, imm.value(pos[n]))),
            }
            pos[n] += 1;
            if pos[n] < imm.len() {
                heap.push(Reverse((imm.key(pos[n]), n)));
            }
        }
        out.push_key(key, versions.iter().copied());
    }
    out.finish()
}

impl TableData {
    /// Merge the newest runs while the older of the two is at most twice the newer (size-tiered).
    fn compact(&mut self, pins: &[Epoch]) {
        while let [.., older, newer] = self.runs.as_slice() {
            if older.versions > 2 * newer.versions {
                break;
            }
            let newer = self.runs.pop().expect("two runs");
            let older = self.runs.pop().expect("two runs");
            self.runs.push(merge(older, newer, self.prefix_len, pins));
        }
    }
}

impl CommittedStore {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<TableId, TableData>> {
        self.tables.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<TableId, TableData>> {
        self.tables.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Add the synced imms of one table (oldest first: by epoch, then in flush order) as one run. A key's new
    /// versions are at or above its committed ones (checked when runs merge; other keys of the commit may be
    /// older than the table's newest: a node syncs what it has). Of two writes of a key at one epoch (a spilled
    /// mem-table's and a later one) the later is kept.
    pub fn apply(&self, table_id: TableId, imms: &[Arc<Imm>]) {
        if imms.iter().all(|i| i.is_empty()) {
            return;
        }
        debug_assert!(imms.windows(2).all(|w| w[0].epoch <= w[1].epoch));
        let prefix_len = self.read().get(&table_id).and_then(|t| t.prefix_len);
        let run = run_of_imms(imms, prefix_len);
        let pins = self.pinned();
        let mut tables = self.write();
        let table = tables.entry(table_id).or_default();
        table.runs.push(run);
        table.compact(&pins);
    }

    /// Commit `w`, a watermark of `table_id` sealed at `epoch`.
    pub fn apply_watermark(&self, table_id: TableId, epoch: Epoch, w: &VnodeWatermark) {
        let oldest_pin = self.pinned().first().copied();
        let mut watermarks = self.watermarks.write().unwrap_or_else(|e| e.into_inner());
        watermarks
            .entry(table_id)
            .or_default()
            .add(epoch, w, oldest_pin);
    }

    /// Whether a read of `table_id` at `epoch` skips `key` (below a committed watermark).
    pub fn watermark_hides(&self, table_id: TableId, key: &[u8], epoch: Epoch) -> bool {
        let watermarks = self.watermarks.read().unwrap_or_else(|e| e.into_inner());
        watermarks
            .get(&table_id)
            .is_some_and(|w| w.hides(key, epoch))
    }

    /// The committed watermarks a read of `table_id` at `epoch` applies.
    pub fn watermarks_at(&self, table_id: TableId, epoch: Epoch) -> ReadWatermarks {
        let watermarks = self.watermarks.read().unwrap_or_else(|e| e.into_inner());
        watermarks
            .get(&table_id)
            .map_or_else(ReadWatermarks::default, |w| w.at(epoch))
    }

    /// Keep what a read at `epoch` sees until [`CommittedStore::unpin`] (a pin per call).
    pub fn pin(&self, epoch: Epoch) {
        let mut pins = self.pins.write().unwrap_or_else(|e| e.into_inner());
        *pins.entry(epoch).or_default() += 1;
    }

    /// Drop one pin of `epoch`; a pin that is not there is ignored (its reader's store was replaced).
    pub fn unpin(&self, epoch: Epoch) {
        let mut pins = self.pins.write().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = pins.get_mut(&epoch) {
            *n -= 1;
            if *n == 0 {
                pins.remove(&epoch);
            }
        }
    }

    /// The pinned epochs, ascending.
    pub fn pinned(&self) -> Vec<Epoch> {
        let pins = self.pins.read().unwrap_or_else(|e| e.into_inner());
        pins.keys().copied().collect()
    }

    /// From now on, runs of `table_id` carry a filter of their keys' prefixes of `len` bytes, which a read of
    /// exactly the keys with one such prefix uses to skip runs (RisingWave's prefix hint). Runs built before
    /// have none; a read of another shape uses none.
    pub fn set_prefix_len(&self, table_id: TableId, len: usize) {
        let mut tables = self.write();
        tables.entry(table_id).or_default().prefix_len = Some(len);
    }

    /// The value of `key` as of `epoch`.
    pub fn get(&self, table_id: TableId, key: &[u8], epoch: Epoch) -> Option<Bytes> {
        self.get_hashed(table_id, key, key_hash(key), epoch)
    }

    /// [`Self::get`] with the key's filter hash computed once by the caller.
    pub fn get_hashed(
        &self,
        table_id: TableId,
        key: &[u8],
        hash: u64,
        epoch: Epoch,
    ) -> Option<Bytes> {
        if self.watermark_hides(table_id, key, epoch) {
            return None;
        }
        let tables = self.read();
        let table = tables.get(&table_id)?;
        for run in table.runs.iter().rev() {
            if !run.filter.may_contain(hash) {
                continue;
            }
            let c = Cursor::seek(run, Bound::Included(key));
            let Some((b, i)) = c.current().filter(|(b, i)| b.key(*i) == key) else {
                continue;
            };
            if let Some(v) = b.visible(i, b.key_end_index(i), epoch) {
                return v.map(|r| b.data.slice(r));
            }
        }
        None
    }

    /// Up to `limit` live rows in `range` as of `epoch`, in key order (tombstones skipped). Keys and values
    /// share the blocks' buffers: no row is copied.
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
        let mut out = Vec::new();
        if limit == 0 {
            return out;
        }
        let prefix = prefix_of_range(range);
        let runs: Vec<&Run> = table
            .runs
            .iter()
            .filter(|r| prefix.is_none_or(|p| r.may_have_prefix(p)))
            .collect();
        if runs.is_empty() {
            return out;
        }
        let hidden = self.watermarks_at(table_id, epoch);
        visit(&runs, range, epoch, |b, i, v| {
            if hidden.hides(b.key(i)) {
                return true;
            }
            let key = b.data.slice(b.start(i)..b.entries[i].key_end as usize);
            out.push((key, b.data.slice(v)));
            out.len() < limit
        });
        out
    }

    /// Visit every live row of `table` as of `epoch`, in key order, without collecting them.
    pub fn for_each(&self, table_id: TableId, epoch: Epoch, mut f: impl FnMut(&[u8], &[u8])) {
        let tables = self.read();
        let Some(table) = tables.get(&table_id) else {
            return;
        };
        let full = (Bound::Unbounded, Bound::Unbounded);
        let runs: Vec<&Run> = table.runs.iter().collect();
        let hidden = self.watermarks_at(table_id, epoch);
        visit(&runs, full, epoch, |b, i, v| {
            if !hidden.hides(b.key(i)) {
                f(b.key(i), &b.data[v]);
            }
            true
        });
    }

    /// Live keys of a table at `epoch` (tests and checkers).
    pub fn count(&self, table_id: TableId, epoch: Epoch) -> usize {
        let mut n = 0;
        self.for_each(table_id, epoch, |_, _| n += 1);
        n
    }

    /// The number of runs of a table (tests: the merge policy keeps it logarithmic).
    pub fn runs(&self, table_id: TableId) -> usize {
        self.read().get(&table_id).map_or(0, |t| t.runs.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(i: u32) -> Bytes {
        Bytes::from(i.to_be_bytes().to_vec())
    }

    /// `(key, epoch, value)` sorted by key then epoch, as imms: one per epoch, oldest first.
    fn imms(batch: &[(Bytes, Epoch, Option<Bytes>)]) -> Vec<Arc<Imm>> {
        let epochs: std::collections::BTreeSet<Epoch> = batch.iter().map(|e| e.1).collect();
        epochs
            .into_iter()
            .map(|epoch| {
                let kvs: Vec<_> = batch
                    .iter()
                    .filter(|e| e.1 == epoch)
                    .map(|e| (&e.0, e.2.as_ref()))
                    .collect();
                Arc::new(Imm::new(TableId(1), epoch, kvs.into_iter()))
            })
            .collect()
    }

    /// A model: every version of every key, in a `BTreeMap`.
    #[derive(Default)]
    struct Model(BTreeMap<Bytes, Vec<(Epoch, Option<Bytes>)>>);

    impl Model {
        fn apply(&mut self, entries: &[(Bytes, Epoch, Option<Bytes>)]) {
            for (key, e, v) in entries {
                self.0.entry(key.clone()).or_default().push((*e, v.clone()));
            }
        }

        fn scan(&self, epoch: Epoch) -> Vec<(Bytes, Bytes)> {
            let visible = |vs: &Vec<(Epoch, Option<Bytes>)>| {
                vs.iter()
                    .rev()
                    .find(|(e, _)| *e <= epoch)
                    .and_then(|(_, v)| v.clone())
            };
            self.0
                .iter()
                .filter_map(|(k, vs)| visible(vs).map(|v| (k.clone(), v)))
                .collect()
        }
    }

    /// Many commits of overlapping keys (updates, deletes, several epochs of one key in one commit): reads
    /// at the newest epoch and at the one before agree with a model that keeps every version, across merges.
    #[test]
    fn runs_agree_with_a_model_across_merges() {
        let t = TableId(1);
        let store = CommittedStore::default();
        let mut model = Model::default();
        let mut rng = 7u64;
        let mut next = || {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 33) as u32
        };
        for commit in 1..=200u64 {
            let epoch = commit * 10;
            let n = 1 + next() % if commit % 50 == 0 { 3000 } else { 40 };
            let mut batch: Vec<(Bytes, Epoch, Option<Bytes>)> = (0..n)
                .map(|_| {
                    let key = next() % 5000;
                    // 32-byte values: the large commits fill several blocks.
                    let value =
                        (next() % 5 != 0).then(|| Bytes::from(next().to_be_bytes().repeat(8)));
                    (k(key), Epoch(epoch + u64::from(next() % 2)), value)
                })
                .collect();
            batch.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.cmp(&y.1)));
            batch.dedup_by(|x, y| x.0 == y.0 && x.1 == y.1);
            model.apply(&batch);
            store.apply(t, &imms(&batch));
            let full = (Bound::Unbounded, Bound::Unbounded);
            // The newest epoch, and the previous commit's newest (the previous max committed epoch).
            for read in [Epoch(epoch + 1), Epoch(epoch - 9)] {
                assert_eq!(
                    store.scan(t, full, read, usize::MAX),
                    model.scan(read),
                    "commit {commit}"
                );
            }
        }
        assert!(store.runs(t) <= 12, "{} runs", store.runs(t));
        let blocks = store.read()[&t]
            .runs
            .iter()
            .map(|r| r.blocks.len())
            .sum::<usize>();
        assert!(blocks > store.runs(t), "some run has several blocks");
        let e = Epoch(2001);
        let want = model.scan(e);
        assert_eq!(store.count(t, e), want.len());
        for (key, v) in want.iter().step_by(37) {
            assert_eq!(store.get(t, key, e).as_ref(), Some(v));
        }
        let (lo, hi) = (k(1000), k(2000));
        let ranged = store.scan(
            t,
            (Bound::Excluded(&lo[..]), Bound::Included(&hi[..])),
            e,
            10,
        );
        let model_ranged: Vec<_> = want
            .into_iter()
            .filter(|(key, _)| *key > lo && *key <= hi)
            .take(10)
            .collect();
        assert_eq!(ranged, model_ranged);
    }

    /// `p` then `p`'s successor: the range of the keys that start with `p`.
    #[test]
    fn a_prefix_range_is_recognised_only_as_one() {
        for p in [&[1u8, 2, 3][..], &[1, 0xFF, 0xFF], &[0xFE], &[0, 0]] {
            let end = next_key(p).unwrap();
            let range = (Bound::Included(p), Bound::Excluded(&end[..]));
            assert_eq!(prefix_of_range(range), Some(p), "{p:?}");
        }
        let not = [
            (
                Bound::Included(&[1u8, 2][..]),
                Bound::Excluded(&[1u8, 4][..]),
            ),
            (Bound::Included(&[1, 2]), Bound::Included(&[1, 3])),
            (Bound::Excluded(&[1, 2]), Bound::Excluded(&[1, 3])),
            (Bound::Included(&[1, 2, 0]), Bound::Excluded(&[1, 3])),
            (Bound::Included(&[1, 2]), Bound::Excluded(&[])),
        ];
        for range in not {
            assert_eq!(prefix_of_range(range), None, "{range:?}");
        }
    }

    /// Reads of every key with a prefix agree with a model, on runs built before and after the table got a
    /// prefix filter and merged together; prefixes no key has read empty, and most skip every run.
    #[test]
    fn prefix_reads_agree_with_a_model_with_and_without_prefix_filters() {
        let t = TableId(1);
        let store = CommittedStore::default();
        let mut model = Model::default();
        for commit in 1..=40u32 {
            if commit == 10 {
                store.set_prefix_len(t, 3);
            }
            let epoch = Epoch(u64::from(commit));
            // Keys of even prefixes only (a prefix is the key's top 3 bytes: 256 keys each).
            let batch: Vec<_> = (0..50u32)
                .map(|i| k(((commit * 50 + i) % 1000) * 512))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .map(|key| (key, epoch, (commit % 7 != 0).then(|| k(commit))))
                .collect();
            model.apply(&batch);
            store.apply(t, &imms(&batch));
        }
        let read = Epoch(40);
        let all = model.scan(read);
        let with_filter = store.read()[&t]
            .runs
            .iter()
            .filter(|r| r.prefix_filter.is_some())
            .count();
        assert!(with_filter > 0 && store.runs(t) > 1);
        let mut skipped_all = 0;
        for top in 0..2100u32 {
            let p = &k(top << 8)[..3];
            let end = next_key(p).unwrap();
            let range = (Bound::Included(p), Bound::Excluded(&end[..]));
            let want: Vec<_> = all
                .iter()
                .filter(|(key, _)| key.starts_with(p))
                .cloned()
                .collect();
            assert_eq!(store.scan(t, range, read, usize::MAX), want, "prefix {p:?}");
            let tables = store.read();
            if tables[&t].runs.iter().all(|r| !r.may_have_prefix(p)) {
                assert!(want.is_empty());
                skipped_all += 1;
            }
        }
        assert!(
            skipped_all > 900,
            "{skipped_all} absent prefixes skipped every run"
        );
    }

    #[test]
    fn point_reads_see_versions_and_deletes() {
        let t = TableId(1);
        let s = CommittedStore::default();
        let first: Vec<_> = (0..200)
            .map(|i| (k(i * 2), Epoch(10), Some(k(i))))
            .collect();
        s.apply(t, &imms(&first));
        s.apply(
            t,
            &imms(&[
                (k(4), Epoch(20), Some(k(1004))),
                (k(5), Epoch(20), Some(k(1005))),
            ]),
        );
        s.apply(t, &imms(&[(k(5), Epoch(21), None)]));
        assert_eq!(s.get(t, &k(4), Epoch(10)), Some(k(2)));
        assert_eq!(s.get(t, &k(4), Epoch(20)), Some(k(1004)));
        assert_eq!(s.get(t, &k(5), Epoch(20)), Some(k(1005)));
        assert_eq!(s.get(t, &k(5), Epoch(21)), None);
        assert_eq!(s.get(t, &k(3), Epoch(10)), None);
        assert_eq!(s.count(t, Epoch(21)), 200);
    }

    #[test]
    fn a_pinned_epoch_reads_the_same_across_merges() {
        let (s, t) = (CommittedStore::default(), TableId(1));
        let write = |e: u64| {
            let batch: Vec<_> = (0..8)
                .map(|i| (k(i), Epoch(e), Some(k(1000 * e as u32 + i))))
                .collect();
            s.apply(t, &imms(&batch));
        };
        for e in 1..=5 {
            write(e);
        }
        s.pin(Epoch(5));
        let pinned = s.scan(
            t,
            (Bound::Unbounded, Bound::Unbounded),
            Epoch(5),
            usize::MAX,
        );
        for e in 6..=40 {
            write(e);
        }
        assert!(s.runs(t) < 10, "the runs merged");
        let read = |e| {
            s.scan(
                t,
                (Bound::Unbounded, Bound::Unbounded),
                Epoch(e),
                usize::MAX,
            )
        };
        assert_eq!(read(5), pinned, "a pinned epoch keeps its versions");
        s.unpin(Epoch(5));
        for e in 41..=80 {
            write(e);
        }
        assert_ne!(read(5), pinned, "without the pin the merges drop them");
        assert_eq!(read(80).len(), 8);
    }
}
