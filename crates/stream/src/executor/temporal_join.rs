//! RisingWave's `TemporalJoinExecutor` (`FOR SYSTEM_TIME AS OF PROCTIME()`): an append-only left input joined
//! with a table as it stands when each left row arrives. The right input is the table's own change stream
//! (an upstream-only scan through a `NoShuffle` dispatcher, so the actor owns the table's vnodes on the
//! table's node); its rows are never joined: at each barrier they update the cached lookups, and a left row
//! whose key is not cached reads the table's rows with that key prefix through the node's storage
//! (`StorageTable`). The read's epoch is the one decision of #22476 ([`TemporalJoinReadEpoch`]). The inputs
//! are aligned by `barrier_align`, which alternates the input it polls first; RisingWave's `align_input`
//! always polls the left first: both read left rows after the right's barrier until the left's comes.

use std::collections::BTreeMap;

use epochlab_common::plan::JoinType;
use epochlab_common::{
    ActorId, Epoch, ExprNode, Op, OrderType, OwnedRow, ScalarImpl, StreamChunk, StreamChunkBuilder,
    memcmp,
};
use epochlab_state_table::StorageTable;
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::barrier_align::{AlignedMessage, barrier_align, expect_first_aligned};
use super::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, NonStrict, StreamExecutorError,
    StreamExecutorResult,
};

epochlab_common::toggle! {
    /// RisingWave #22476 (fixed by #22935): the epoch a temporal join's lookups read its right table at, in
    /// the epoch a barrier starts. Read only by `TemporalJoinExecutor` at each barrier.
    pub enum TemporalJoinReadEpoch {
        /// Before #22935 (and at f21fb9b7915): the barrier's `curr`. A lookup then sees what the table's
        /// writers flushed of the epoch still running (a spilled mem-table), changes the right input brings
        /// to the cache again at the next barrier: a delete finds its row already gone from the entry.
        Curr,
        /// #22935: the barrier's `prev`, the epoch whose changes the cache has just taken.
        #[default]
        Prev,
    }
}

/// Join keys whose lookups the cache keeps (RisingWave's LRU evicts by the epoch of last use; here by count,
/// least recently used first).
pub const TEMPORAL_JOIN_CACHE_CAPACITY: usize = 4096;

/// The right rows of one join key, by their stream key (RisingWave's `JoinEntry`).
#[derive(Default)]
struct JoinEntry {
    cached: BTreeMap<Vec<u8>, OwnedRow>,
}

impl JoinEntry {
    /// A row the right input inserted; a lookup may have read it already (kept as read).
    fn insert(&mut self, stream_key: Vec<u8>, row: OwnedRow) {
        self.cached.entry(stream_key).or_insert(row);
    }

    /// A row the right input deleted: it must be cached, since every lookup read the table as of the
    /// changes the cache has taken.
    fn remove(&mut self, stream_key: &[u8], pk: &OwnedRow) -> StreamExecutorResult<()> {
        match self.cached.remove(stream_key) {
            Some(_) => Ok(()),
            None => Err(StreamExecutorError::TemporalJoinCacheMiss { key: pk.clone() }),
        }
    }
}

/// The lookups of the join keys seen lately, bounded (least recently used out first).
struct LookupCache {
    entries: BTreeMap<Vec<u8>, (u64, JoinEntry)>,
    by_use: BTreeMap<u64, Vec<u8>>,
    tick: u64,
    capacity: usize,
}

impl LookupCache {
    fn new(capacity: usize) -> Self {
        Self {
            entries: BTreeMap::new(),
            by_use: BTreeMap::new(),
            tick: 0,
            capacity,
        }
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.by_use.clear();
    }

    /// The entry of `key`, marked as just used.
    fn get(&mut self, key: &[u8]) -> Option<&JoinEntry> {
        self.tick += 1;
        let (used, entry) = self.entries.get_mut(key)?;
        self.by_use.remove(used);
        *used = self.tick;
        self.by_use.insert(self.tick, key.to_vec());
        Some(entry)
    }

    fn remove(&mut self, key: &[u8]) {
        if let Some((used, _)) = self.entries.remove(key) {
            self.by_use.remove(&used);
        }
    }

    fn get_mut_unmarked(&mut self, key: &[u8]) -> Option<&mut JoinEntry> {
        self.entries.get_mut(key).map(|(_, e)| e)
    }

    fn put(&mut self, key: Vec<u8>, entry: JoinEntry) {
        self.tick += 1;
        if let Some((used, _)) = self.entries.insert(key.clone(), (self.tick, entry)) {
            self.by_use.remove(&used);
        }
        self.by_use.insert(self.tick, key);
        while self.entries.len() > self.capacity {
            let (_, oldest) = self.by_use.pop_first().expect("an entry per use");
            self.entries.remove(&oldest);
        }
    }
}

pub struct TemporalJoinArgs {
    pub actor_id: ActorId,
    pub join_type: JoinType,
    pub left: BoxedExecutor,
    pub right: BoxedExecutor,
    /// The right table over the actor's vnodes, read at the lookups' epoch.
    pub table: StorageTable,
    pub left_key: Vec<usize>,
    /// The table's pk prefix, by position in its columns (the right input's).
    pub right_key: Vec<usize>,
    pub null_safe: Vec<bool>,
    pub condition: Option<ExprNode>,
    pub output_indices: Vec<usize>,
    pub eval: NonStrict,
    pub read_epoch: TemporalJoinReadEpoch,
    pub chunk_size: usize,
    pub cache_capacity: usize,
}

pub struct TemporalJoinExecutor {
    args: TemporalJoinArgs,
    cache: LookupCache,
    /// The order of every join key column in a cache key (ascending), made once.
    key_orders: Vec<OrderType>,
    /// The same for the table's pk, a cached row's key in its entry.
    pk_orders: Vec<OrderType>,
}

impl TemporalJoinExecutor {
    pub fn new(args: TemporalJoinArgs) -> StreamExecutorResult<Self> {
        let n = args.left_key.len();
        if n == 0 || args.right_key.len() != n || args.null_safe.len() != n {
            return Err(StreamExecutorError::JoinPlan {
                problem: format!(
                    "temporal join keys: {} left, {} right, {} null-safe flags",
                    n,
                    args.right_key.len(),
                    args.null_safe.len()
                ),
            });
        }
        let pk = &args.table.desc().pk_indices;
        if pk.get(..n) != Some(&args.right_key[..]) || n < args.table.vnode_prefix_len() {
            return Err(StreamExecutorError::JoinPlan {
                problem: format!(
                    "temporal join lookup key {:?} is no prefix of the table's pk {pk:?} holding its distribution key",
                    args.right_key
                ),
            });
        }
        if !matches!(args.join_type, JoinType::Inner | JoinType::LeftOuter) {
            return Err(StreamExecutorError::JoinPlan {
                problem: format!(
                    "a temporal join is inner or left outer, not {:?}",
                    args.join_type
                ),
            });
        }
        let cache = LookupCache::new(args.cache_capacity.max(1));
        let key_orders = vec![OrderType::ascending(); n];
        let pk_orders = vec![OrderType::ascending(); pk.len()];
        Ok(Self {
            args,
            cache,
            key_orders,
            pk_orders,
        })
    }

    /// Whether a key matches nothing: a NULL in a pair that is not null-safe.
    fn matches_nothing(&self, key: &OwnedRow) -> bool {
        let nulls = key.datums().iter().map(Option::is_none);
        nulls
            .zip(&self.args.null_safe)
            .any(|(null, safe)| null && !safe)
    }

    /// The right rows of `key` as of `epoch`: cached, or read from the table. As at f21fb9b7915, only an
    /// entry with rows is kept (`insert_back` after a non-empty lookup): a key that matches nothing is read
    /// again next time, and a cached entry found empty leaves the cache (f21fb9b7915 left an empty slot
    /// there, which its next access would panic on). v2.2.3, where #22476 was reported, caches every key
    /// it looks up, empty or not: there a late lookup of a key with one row deleted already shows the bug,
    /// here the key needs another row.
    fn lookup(&mut self, key: &OwnedRow, epoch: Epoch) -> StreamExecutorResult<Vec<OwnedRow>> {
        let encoded = memcmp::encode_row_to_vec(key, &self.key_orders);
        if let Some(entry) = self.cache.get(&encoded) {
            let rows: Vec<OwnedRow> = entry.cached.values().cloned().collect();
            if rows.is_empty() {
                self.cache.remove(&encoded);
            }
            return Ok(rows);
        }
        let pk = &self.args.table.desc().pk_indices;
        let mut entry = JoinEntry::default();
        for row in self.args.table.batch_iter_with_pk_prefix(key, epoch)? {
            entry.insert(
                memcmp::encode_row_to_vec(&row.project(pk), &self.pk_orders),
                row,
            );
        }
        let rows: Vec<OwnedRow> = entry.cached.values().cloned().collect();
        if !rows.is_empty() {
            self.cache.put(encoded, entry);
        }
        Ok(rows)
    }

    /// The right input's changes of the epoch that ended, applied to the keys the cache holds.
    fn update_cache(&mut self, chunks: Vec<StreamChunk>) -> StreamExecutorResult<()> {
        let pk = self.args.table.desc().pk_indices.clone();
        for chunk in chunks {
            for (op, row) in chunk.rows() {
                let key = row.project(&self.args.right_key);
                let encoded = memcmp::encode_row_to_vec(&key, &self.key_orders);
                let Some(entry) = self.cache.get_mut_unmarked(&encoded) else {
                    continue;
                };
                let row_pk = row.project(&pk);
                let stream_key = memcmp::encode_row_to_vec(&row_pk, &self.pk_orders);
                match op {
                    Op::Insert | Op::UpdateInsert => entry.insert(stream_key, row.clone()),
                    Op::Delete | Op::UpdateDelete => entry.remove(&stream_key, &row_pk)?,
                }
            }
        }
        Ok(())
    }

    fn condition_holds(&self, joined: &OwnedRow) -> bool {
        let Some(cond) = &self.args.condition else {
            return true;
        };
        matches!(
            self.args.eval.eval(cond, joined),
            Some(ScalarImpl::Bool(true))
        )
    }

    /// The output of one left chunk, its rows looked up as of `epoch`. A left outer join pads a left row
    /// with NULLs when no right row passes the condition (RisingWave since #15327; at f21fb9b7915 a row whose
    /// key had rows, none passing, was dropped).
    fn join_left(
        &mut self,
        chunk: &StreamChunk,
        epoch: Epoch,
    ) -> StreamExecutorResult<Vec<StreamChunk>> {
        let right_width = self.args.table.desc().column_types.len();
        let mut builder = StreamChunkBuilder::new(self.args.chunk_size);
        let mut out = Vec::new();
        for (op, left_row) in chunk.rows() {
            let key = left_row.project(&self.args.left_key);
            let right_rows = match self.matches_nothing(&key) {
                true => Vec::new(),
                false => self.lookup(&key, epoch)?,
            };
            let mut matched = false;
            for right_row in &right_rows {
                let joined = left_row.chain(right_row);
                if self.condition_holds(&joined) {
                    matched = true;
                    out.extend(builder.append(op, joined.project(&self.args.output_indices)));
                }
            }
            if !matched && self.args.join_type == JoinType::LeftOuter {
                let padded = left_row.chain(&OwnedRow::new(vec![None; right_width]));
                out.extend(builder.append(op, padded.project(&self.args.output_indices)));
            }
        }
        out.extend(builder.take());
        Ok(out)
    }

    /// Where left column `col` is in the output, if it is output.
    fn output_of_left(&self, col: usize) -> Option<usize> {
        self.args.output_indices.iter().position(|&i| i == col)
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let placeholder: BoxedExecutor = Box::new(super::Taken);
        let left = std::mem::replace(&mut self.args.left, placeholder);
        let placeholder: BoxedExecutor = Box::new(super::Taken);
        let right = std::mem::replace(&mut self.args.right, placeholder);
        let aligned = barrier_align(left.execute(), right.execute(), self.args.actor_id);
        futures::pin_mut!(aligned);
        let name = self.identity();
        let first = expect_first_aligned(&mut aligned, &name).await?;
        let mut read_epoch = self.read_epoch_of(&first);
        yield Message::Barrier(first);
        // The right input's changes since the last barrier: the cache takes them at the next one.
        let mut right_chunks: Vec<StreamChunk> = Vec::new();
        #[for_await]
        for msg in aligned {
            match msg? {
                AlignedMessage::Left(chunk) => {
                    for c in self.join_left(&chunk, read_epoch)? {
                        yield Message::Chunk(c);
                    }
                }
                AlignedMessage::Right(chunk) => right_chunks.push(chunk),
                AlignedMessage::WatermarkLeft(w) => {
                    if let Some(col) = self.output_of_left(w.col_idx) {
                        yield Message::Watermark(w.with_idx(col));
                    }
                }
                AlignedMessage::WatermarkRight(_) => {}
                AlignedMessage::Barrier(barrier) => {
                    if let Some(vnodes) = barrier.as_update_vnode_bitmap(self.args.actor_id) {
                        self.args.table.update_vnode_bitmap(vnodes);
                        self.cache.clear();
                    }
                    self.update_cache(std::mem::take(&mut right_chunks))?;
                    read_epoch = self.read_epoch_of(&barrier);
                    yield Message::Barrier(barrier);
                }
            }
        }
    }

    /// The epoch the lookups read at until the next barrier: the one decision of #22476.
    fn read_epoch_of(&self, barrier: &epochlab_barrier::Barrier) -> Epoch {
        match self.args.read_epoch {
            TemporalJoinReadEpoch::Prev => barrier.epoch.prev,
            TemporalJoinReadEpoch::Curr => barrier.epoch.curr,
        }
    }

    /// Cached join keys (the stall report's and tests' view).
    pub fn cached_keys(&self) -> usize {
        self.cache.len()
    }
}

impl Execute for TemporalJoinExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!(
            "TemporalJoin(actor {}, table {})",
            self.args.actor_id,
            self.args.table.desc().table_id
        )
    }
}
