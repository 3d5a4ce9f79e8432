//! A local state store: one table of one actor on one node (RisingWave's `LocalHummockStorage`).
//!
//! Reads at the store's epoch see, newest first: its mem-table; its staging imms at or below that epoch; and
//! the committed data of its table as of `min(epoch, pinned max committed epoch)` **only if the node's pinned
//! version has the table in a group**. An unregistered table's committed data reads as empty, silently.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use epochlab_common::{Epoch, TableId};

use crate::access::{Access, AccessKind, Accessor};
use crate::committed::CommittedStore;
use crate::error::{StorageError, StorageResult};
use crate::imm::Imm;
use crate::mem_table::{KeyOp, MemTable};
use crate::node::NodeInner;
use crate::watermark::{ReadWatermarks, VnodeWatermark};

/// A mem-table larger than this spills into an imm before its epoch ends (RisingWave's
/// `mem_table_spill_threshold`, 4 MiB by default): a large load in one epoch holds sorted batches, not a tree.
pub const MEM_TABLE_SPILL_THRESHOLD_BYTES: usize = 4 << 20;

/// Spilled imms of one epoch merge up to this size (four spills): fewer imms for a point read to probe,
/// without holding two copies of a large epoch while merging.
const MERGED_IMM_MAX_BYTES: usize = 4 * MEM_TABLE_SPILL_THRESHOLD_BYTES;

/// An epoch's imms merge only once there are more than this many: a few spills cost a few filter probes,
/// less than copying them again.
const MERGE_IMMS_ABOVE: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OpConsistencyLevel {
    /// No checks; the last write of a key wins.
    Inconsistent,
    /// Inserts must not overwrite, deletes and updates must name the stored old value.
    #[default]
    ConsistentOldValue,
}

#[derive(Clone, Debug)]
pub struct NewLocalOptions {
    pub table_id: TableId,
    pub op_consistency_level: OpConsistencyLevel,
    /// A replicated store (arrangement backfill's copy of its upstream table): its flushes are visible to its
    /// own reads but never uploaded.
    pub is_replicated: bool,
    /// The actor using the store, reported to the node's access observer.
    pub accessor: Option<Accessor>,
    /// The length in bytes (vnode included) of the key prefix the table's prefix reads fix, where every key
    /// has one (a join side's join key): its committed runs get a filter of those prefixes, so a read of a
    /// prefix no key has skips them (RisingWave's prefix hint). Only a hint: a read of another shape, or a
    /// key shorter than it, is served as without it.
    pub prefix_filter_len: Option<usize>,
}

impl NewLocalOptions {
    pub fn new(table_id: TableId) -> Self {
        Self {
            table_id,
            op_consistency_level: OpConsistencyLevel::ConsistentOldValue,
            is_replicated: false,
            accessor: None,
            prefix_filter_len: None,
        }
    }
}

/// A local instance's staging data (RisingWave's `HummockReadVersion`), newest first.
#[derive(Default)]
pub(crate) struct ReadVersion {
    staging: VecDeque<Arc<Imm>>,
    /// Table watermarks this instance sealed and no commit has brought yet, with their epochs, oldest first.
    watermarks: Vec<(Epoch, VnodeWatermark)>,
}

impl ReadVersion {
    /// Drop imms and watermarks at or below the new max committed epoch; returns how many imms.
    pub(crate) fn prune_committed(&mut self, mce: Epoch) -> usize {
        let before = self.staging.len();
        self.staging.retain(|imm| imm.epoch > mce);
        self.watermarks.retain(|(e, _)| *e > mce);
        before - self.staging.len()
    }

    pub(crate) fn clear(&mut self) {
        self.staging.clear();
        self.watermarks.clear();
    }

    /// Its staging imms, newest first.
    pub(crate) fn staging(&self) -> impl Iterator<Item = &Arc<Imm>> {
        self.staging.iter()
    }

    /// The table watermarks it sealed at or before `epoch`, oldest first.
    pub(crate) fn watermarks_to(
        &self,
        epoch: Epoch,
    ) -> impl Iterator<Item = &(Epoch, VnodeWatermark)> {
        self.watermarks.iter().filter(move |(e, _)| *e <= epoch)
    }

    /// Whether a watermark this instance sealed at or before `epoch` deletes `key`.
    fn hides(&self, key: &[u8], epoch: Epoch) -> bool {
        self.watermarks
            .iter()
            .any(|(e, w)| *e <= epoch && crate::watermark::hidden_by(key, w))
    }
}

pub struct LocalStateStore {
    node: Arc<NodeInner>,
    opts: NewLocalOptions,
    instance_id: u64,
    generation: u64,
    epoch: Option<Epoch>,
    mem_table: MemTable,
    read_version: Arc<Mutex<ReadVersion>>,
}

impl LocalStateStore {
    pub(crate) fn new(
        node: Arc<NodeInner>,
        opts: NewLocalOptions,
        instance_id: u64,
        generation: u64,
        read_version: Arc<Mutex<ReadVersion>>,
    ) -> Self {
        Self {
            node,
            opts,
            instance_id,
            generation,
            epoch: None,
            mem_table: MemTable::default(),
            read_version,
        }
    }

    pub fn table_id(&self) -> TableId {
        self.opts.table_id
    }

    pub fn instance_id(&self) -> u64 {
        self.instance_id
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn is_replicated(&self) -> bool {
        self.opts.is_replicated
    }

    pub fn op_consistency_level(&self) -> OpConsistencyLevel {
        self.opts.op_consistency_level
    }

    /// The epoch writes go to and reads are taken at.
    pub fn epoch(&self) -> StorageResult<Epoch> {
        self.epoch.ok_or(StorageError::NotInitialized {
            table_id: self.opts.table_id,
        })
    }

    pub fn is_dirty(&self) -> bool {
        self.mem_table.is_dirty()
    }

    pub fn init(&mut self, epoch: Epoch) {
        assert!(self.epoch.is_none(), "local store initialised twice");
        self.epoch = Some(epoch);
    }

    fn read_version(&self) -> std::sync::MutexGuard<'_, ReadVersion> {
        self.read_version.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the committed layer is visible, and up to which epoch.
    fn committed_bound(&self, read_epoch: Epoch) -> Option<Epoch> {
        committed_bound(&self.node, self.opts.table_id, read_epoch)
    }

    /// The value below the mem-table: staging, then committed.
    fn get_below_mem_table(&self, key: &[u8], read_epoch: Epoch) -> Option<Bytes> {
        read_below_mem_table(
            &self.read_version,
            &self.node,
            self.opts.table_id,
            key,
            read_epoch,
        )
    }

    /// Report an access to the node's observer, if there is one and this store knows its actor.
    fn observe(&self, kind: AccessKind, epoch: Epoch) {
        if let (Some(accessor), Some(observer)) =
            (self.opts.accessor, self.node.access_observer.get())
        {
            observer(&Access {
                worker: self.node.worker,
                table: self.opts.table_id,
                accessor,
                kind,
                epoch,
                generation: self.generation,
            });
        }
    }

    /// Whether a table watermark deletes `key` for a read at `epoch`: one this instance sealed, or a committed
    /// one the read sees.
    fn hidden(&self, key: &[u8], epoch: Epoch) -> bool {
        if self.read_version().hides(key, epoch) {
            return true;
        }
        let committed = self.committed_bound(epoch);
        committed.is_some_and(|bound| {
            self.node
                .committed
                .watermark_hides(self.opts.table_id, key, bound)
        })
    }

    /// Whether a table watermark deletes `key` for a read at the store's epoch (the row was cleaned).
    pub fn is_hidden(&self, key: &[u8]) -> StorageResult<bool> {
        Ok(self.hidden(key, self.epoch()?))
    }

    /// The table watermarks a read at `epoch` applies (an iterator's snapshot of them).
    fn read_watermarks(&self, epoch: Epoch) -> ReadWatermarks {
        let mut w = match self.committed_bound(epoch) {
            Some(bound) => self.node.committed.watermarks_at(self.opts.table_id, bound),
            None => ReadWatermarks::default(),
        };
        for (e, vw) in &self.read_version().watermarks {
            if *e <= epoch {
                w.raise(vw);
            }
        }
        w
    }

    /// The value of `key` at the store's epoch (none below a table watermark).
    pub fn get(&self, key: &[u8]) -> StorageResult<Option<Bytes>> {
        let epoch = self.epoch()?;
        self.observe(AccessKind::Read, epoch);
        if let Some(op) = self.mem_table.get(key) {
            let live = op.new_value().filter(|_| !self.hidden(key, epoch));
            return Ok(live.cloned());
        }
        Ok(self.get_below_mem_table(key, epoch))
    }

    fn write(&mut self, key: Bytes, op: KeyOp) -> StorageResult<()> {
        let epoch = self.epoch()?;
        match self.opts.op_consistency_level {
            OpConsistencyLevel::Inconsistent => {
                self.mem_table.apply_inconsistent(key, op);
                Ok(())
            }
            OpConsistencyLevel::ConsistentOldValue => {
                let table_id = self.opts.table_id;
                let (read_version, node) = (&self.read_version, &self.node);
                self.mem_table.apply_consistent(table_id, key, op, |k| {
                    read_below_mem_table(read_version, node, table_id, k, epoch)
                })
            }
        }
    }

    pub fn insert(&mut self, key: Bytes, new: Bytes, old: Option<Bytes>) -> StorageResult<()> {
        match old {
            None => self.write(key, KeyOp::Insert(new)),
            Some(old) => self.write(key, KeyOp::Update(old, new)),
        }
    }

    pub fn delete(&mut self, key: Bytes, old: Bytes) -> StorageResult<()> {
        self.write(key, KeyOp::Delete(old))
    }

    /// Turn the mem-table into an imm at the current epoch. Rejected (and counted) when the node has been
    /// reset since this store was created: the writer is a zombie of an older generation.
    pub fn flush(&mut self) -> StorageResult<usize> {
        let epoch = self.epoch()?;
        if !self.mem_table.is_dirty() {
            return Ok(0);
        }
        self.observe(AccessKind::Write, epoch);
        let current = self.node.lock_state().generation;
        if current != self.generation {
            self.mem_table.drain();
            self.node
                .stats
                .rejected_stale_writes
                .fetch_add(1, Ordering::Relaxed);
            return Err(StorageError::StaleGeneration {
                table_id: self.opts.table_id,
                worker: self.node.worker,
                generation: self.generation,
                current,
            });
        }
        let ops = self.mem_table.drain();
        let kvs = ops.iter().map(|(k, op)| (k, op.new_value()));
        let imm = Arc::new(Imm::new(self.opts.table_id, epoch, kvs));
        let size = imm.size_bytes();
        self.read_version().staging.push_front(imm.clone());
        if !self.opts.is_replicated {
            self.node.upload(imm);
        }
        self.merge_staged();
        Ok(size)
    }

    /// Once an epoch has more than `MERGE_IMMS_ABOVE` imms, merge its two newest while the older is at most
    /// twice the newer and the result is at most `MERGED_IMM_MAX_BYTES` (RisingWave merges imms too): an
    /// epoch of many spills keeps about a quarter of them, so a point read probes fewer filters. The
    /// uploader's copy of the pair is replaced by the merge.
    fn merge_staged(&mut self) {
        loop {
            let (newer, older) = {
                let rv = self.read_version();
                let epoch = rv.staging.front().map(|i| i.epoch);
                let of_epoch = rv
                    .staging
                    .iter()
                    .take_while(|i| Some(i.epoch) == epoch)
                    .count();
                match (rv.staging.front(), rv.staging.get(1)) {
                    (Some(n), Some(o))
                        if of_epoch > MERGE_IMMS_ABOVE
                            && n.epoch == o.epoch
                            && o.len() <= 2 * n.len()
                            && o.size_bytes() + n.size_bytes() <= MERGED_IMM_MAX_BYTES =>
                    {
                        (n.clone(), o.clone())
                    }
                    _ => return,
                }
            };
            let merged = Arc::new(Imm::merge(&older, &newer));
            {
                let mut rv = self.read_version();
                rv.staging.drain(..2);
                rv.staging.push_front(merged.clone());
            }
            if !self.opts.is_replicated {
                self.node.replace_unsynced(&older, &newer, merged);
            }
        }
    }

    /// Spill the mem-table into an imm of the current epoch once it holds more than
    /// [`MEM_TABLE_SPILL_THRESHOLD_BYTES`] (RisingWave's `try_flush`). Later writes of the epoch go to a fresh
    /// mem-table; reads see the spilled imm, newest first, like any other of the epoch. Returns whether it
    /// spilled.
    pub fn try_flush(&mut self) -> StorageResult<bool> {
        if self.mem_table.size_bytes() <= MEM_TABLE_SPILL_THRESHOLD_BYTES {
            return Ok(false);
        }
        self.flush()?;
        self.node
            .stats
            .mem_table_spills
            .fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// Move to the next epoch. The mem-table must have been flushed.
    pub fn seal_current_epoch(&mut self, next: Epoch) -> StorageResult<()> {
        self.seal_current_epoch_with(next, None)
    }

    /// Move to the next epoch with a table watermark (RisingWave's `SealCurrentEpochOptions::table_watermarks`):
    /// from the epoch it seals, reads of this instance skip the keys below it, and its commit brings it to
    /// every reader. A stale instance's watermark goes nowhere, as its writes do.
    pub fn seal_current_epoch_with(
        &mut self,
        next: Epoch,
        watermark: Option<VnodeWatermark>,
    ) -> StorageResult<()> {
        let prev = self.epoch()?;
        if self.mem_table.is_dirty() {
            return Err(StorageError::SealDirty {
                table_id: self.opts.table_id,
                epoch: prev,
            });
        }
        if next <= prev {
            return Err(StorageError::EpochNotIncreasing {
                table_id: self.opts.table_id,
                prev,
                next,
            });
        }
        if let Some(w) = watermark {
            let current = self.node.lock_state().generation;
            if !self.opts.is_replicated && current == self.generation {
                self.node
                    .upload_watermark(self.opts.table_id, prev, w.clone());
            }
            self.read_version().watermarks.push((prev, w));
        }
        self.epoch = Some(next);
        Ok(())
    }

    /// Live rows in `range` at the store's epoch, in key order. The iterator owns snapshots of the layers
    /// (the mem-table range is copied; imms are shared; committed data is read in batches), so it may outlive
    /// later writes to this store, which it does not see.
    pub fn iter(&self, range: (Bound<Bytes>, Bound<Bytes>)) -> StorageResult<LocalIter> {
        let epoch = self.epoch()?;
        self.observe(AccessKind::Read, epoch);
        let mut sources = Vec::new();
        let borrowed = (
            range.0.as_ref().map(|b| b.as_ref()),
            range.1.as_ref().map(|b| b.as_ref()),
        );
        let mem: Vec<(Bytes, Option<Bytes>)> = self
            .mem_table
            .range(borrowed)
            .map(|(k, op)| (k.clone(), op.new_value().cloned()))
            .collect();
        // Empty layers are left out: a read of a freshly committed table has one source, and merges nothing.
        if !mem.is_empty() {
            sources.push(Source::Mem(mem, 0));
        }
        for imm in self.read_version().staging.iter() {
            if imm.epoch <= epoch {
                let r = imm.index_range(&range);
                if !r.is_empty() {
                    sources.push(Source::Imm(imm.clone(), r.start, r.end));
                }
            }
        }
        let watermarks = self.read_watermarks(epoch);
        if let Some(bound) = self.committed_bound(epoch) {
            let cursor =
                CommittedCursor::new(&self.node.committed, self.opts.table_id, bound, &range);
            sources.push(Source::Committed(cursor));
        }
        Ok(LocalIter {
            sources,
            watermarks,
        })
    }
}

impl crate::node::NodeStorage {
    /// Live rows of `table_id` in `range` as of `epoch`, read through the node rather than one local instance
    /// (RisingWave's `HummockStorage::iter` at `HummockReadEpoch::NoWait(epoch)`, what a `StorageTable`'s batch
    /// read does): the staging data at or below `epoch` of the table's writers on this node, over the
    /// committed data of the node's pinned version up to `epoch`, under the table watermarks that apply. Data
    /// of `epoch` itself is seen only as far as a writer flushed it (a spilled mem-table), never its
    /// mem-table.
    pub fn batch_iter(
        &self,
        table_id: TableId,
        range: (Bound<Bytes>, Bound<Bytes>),
        epoch: Epoch,
    ) -> StorageResult<LocalIter> {
        let staging = self.staging_of(table_id, epoch);
        let mut sources = Vec::new();
        for imm in staging.imms {
            let r = imm.index_range(&range);
            if !r.is_empty() {
                sources.push(Source::Imm(imm, r.start, r.end));
            }
        }
        let bound = committed_bound(&self.inner, table_id, epoch);
        let mut watermarks = match bound {
            Some(b) => self.inner.committed.watermarks_at(table_id, b),
            None => ReadWatermarks::default(),
        };
        for w in &staging.watermarks {
            watermarks.raise(w);
        }
        if let Some(bound) = bound {
            let cursor = CommittedCursor::new(&self.inner.committed, table_id, bound, &range);
            sources.push(Source::Committed(cursor));
        }
        Ok(LocalIter {
            sources,
            watermarks,
        })
    }
}

/// The value of `key` below a store's mem-table: its staging imms at or below `read_epoch`, newest first, then
/// committed data, if the node's pinned version has the table in a group; none below a table watermark the
/// read applies (the instance's own, or a committed one).
fn read_below_mem_table(
    read_version: &Mutex<ReadVersion>,
    node: &NodeInner,
    table_id: TableId,
    key: &[u8],
    read_epoch: Epoch,
) -> Option<Bytes> {
    let hash = crate::filter::key_hash(key);
    let bound = committed_bound(node, table_id, read_epoch);
    if bound.is_some_and(|b| node.committed.watermark_hides(table_id, key, b)) {
        return None;
    }
    {
        let rv = read_version.lock().unwrap_or_else(|e| e.into_inner());
        if rv.hides(key, read_epoch) {
            return None;
        }
        for imm in rv.staging.iter() {
            if imm.epoch > read_epoch {
                continue;
            }
            if let Some(v) = imm.get_hashed(key, hash) {
                return v;
            }
        }
    }
    node.committed.get_hashed(table_id, key, hash, bound?)
}

/// Up to which epoch a read at `read_epoch` sees `table_id`'s committed data on `node`: none at all when the
/// node's pinned version has the table in no group.
fn committed_bound(node: &NodeInner, table_id: TableId, read_epoch: Epoch) -> Option<Epoch> {
    let state = node.lock_state();
    state
        .pinned
        .contains_table(table_id)
        .then(|| read_epoch.min(state.pinned.max_committed_epoch))
}

const COMMITTED_BATCH: usize = 512;

struct CommittedCursor {
    store: CommittedStore,
    table_id: TableId,
    epoch: Epoch,
    next_start: Bound<Bytes>,
    end: Bound<Bytes>,
    buf: VecDeque<(Bytes, Bytes)>,
    done: bool,
}

impl CommittedCursor {
    /// A cursor over `table_id`'s committed rows in `range` as of `epoch`, read in batches.
    fn new(
        store: &CommittedStore,
        table_id: TableId,
        epoch: Epoch,
        range: &(Bound<Bytes>, Bound<Bytes>),
    ) -> Self {
        Self {
            store: store.clone(),
            table_id,
            epoch,
            next_start: range.0.clone(),
            end: range.1.clone(),
            buf: VecDeque::new(),
            done: false,
        }
    }

    fn fill(&mut self) {
        if !self.buf.is_empty() || self.done {
            return;
        }
        let range = (
            self.next_start.as_ref().map(|b| b.as_ref()),
            self.end.as_ref().map(|b| b.as_ref()),
        );
        let batch = self
            .store
            .scan(self.table_id, range, self.epoch, COMMITTED_BATCH);
        if batch.len() < COMMITTED_BATCH {
            self.done = true;
        }
        if let Some((k, _)) = batch.last() {
            self.next_start = Bound::Excluded(k.clone());
        }
        self.buf.extend(batch);
    }
}

enum Source {
    Mem(Vec<(Bytes, Option<Bytes>)>, usize),
    Imm(Arc<Imm>, usize, usize),
    Committed(CommittedCursor),
}

impl Source {
    /// Make the head available (a committed cursor reads its next batch when empty).
    fn prepare(&mut self) {
        if let Source::Committed(c) = self {
            c.fill();
        }
    }

    /// The head, after `prepare`.
    fn head(&self) -> Option<(&[u8], Option<&[u8]>)> {
        match self {
            Source::Mem(v, i) => v.get(*i).map(|(k, v)| (&k[..], v.as_deref())),
            Source::Imm(imm, i, end) => (*i < *end).then(|| (imm.key(*i), imm.value(*i))),
            Source::Committed(c) => c.buf.front().map(|(k, v)| (&k[..], Some(&v[..]))),
        }
    }

    /// The head as shared bytes (no copy of the data).
    fn head_bytes(&self) -> Option<(Bytes, Option<Bytes>)> {
        match self {
            Source::Mem(v, i) => v.get(*i).cloned(),
            Source::Imm(imm, i, end) => (*i < *end).then(|| imm.entry_bytes(*i)),
            Source::Committed(c) => c.buf.front().map(|(k, v)| (k.clone(), Some(v.clone()))),
        }
    }

    /// The head, taken out (no copy or reference count for a committed row), and the source advanced.
    fn take_head(&mut self) -> Option<(Bytes, Option<Bytes>)> {
        match self {
            Source::Mem(v, i) => {
                let head = v.get_mut(*i).map(std::mem::take);
                *i += 1;
                head
            }
            Source::Imm(imm, i, end) => {
                let head = (*i < *end).then(|| imm.entry_bytes(*i));
                *i += 1;
                head
            }
            Source::Committed(c) => c.buf.pop_front().map(|(k, v)| (k, Some(v))),
        }
    }

    fn advance(&mut self) {
        match self {
            Source::Mem(_, i) | Source::Imm(_, i, _) => *i += 1,
            Source::Committed(c) => {
                c.buf.pop_front();
            }
        }
    }
}

/// A merge of the layers: for each key, the newest layer's value wins; deletes hide the key, and so do the
/// table watermarks the read applies.
pub struct LocalIter {
    sources: Vec<Source>,
    watermarks: ReadWatermarks,
}

impl Iterator for LocalIter {
    type Item = (Bytes, Bytes);

    fn next(&mut self) -> Option<(Bytes, Bytes)> {
        loop {
            let (key, value) = self.merged()?;
            if !self.watermarks.hides(&key) {
                return Some((key, value));
            }
        }
    }
}

impl LocalIter {
    fn merged(&mut self) -> Option<(Bytes, Bytes)> {
        if let [only] = self.sources.as_mut_slice() {
            // One layer: its rows in order, deletes skipped, nothing to compare.
            loop {
                only.prepare();
                let (key, value) = only.take_head()?;
                if let Some(v) = value {
                    return Some((key, v));
                }
            }
        }
        loop {
            for s in self.sources.iter_mut() {
                s.prepare();
            }
            // The smallest head key; among equal keys the first (newest) layer's value wins.
            let mut best: Option<(usize, &[u8])> = None;
            for (i, s) in self.sources.iter().enumerate() {
                if let Some((k, _)) = s.head()
                    && best.is_none_or(|(_, bk)| k < bk)
                {
                    best = Some((i, k));
                }
            }
            let (i, _) = best?;
            let (key, value) = self.sources[i]
                .head_bytes()
                .expect("the best source has a head");
            for s in self.sources.iter_mut() {
                if s.head().is_some_and(|(k, _)| k == &key[..]) {
                    s.advance();
                }
            }
            if let Some(v) = value {
                return Some((key, v));
            }
        }
    }
}

/// Collect an iterator into a map (tests).
pub fn collect_map(iter: LocalIter) -> BTreeMap<Bytes, Bytes> {
    iter.collect()
}
