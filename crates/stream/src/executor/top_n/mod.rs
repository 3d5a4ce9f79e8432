//! Top-N (RisingWave's `executor/top_n`): `ORDER BY .. LIMIT .. OFFSET ..` over a whole input
//! ([`TopNExecutor`], a singleton) or within each group of a group key ([`GroupTopNExecutor`]: `DISTINCT
//! ON`, `row_number()`/`rank()` filtered by a bound), each with an append-only variant
//! ([`AppendOnlyTopNExecutor`], [`AppendOnlyGroupTopNExecutor`]) that keeps only the rows it outputs or
//! skips (the input never deletes, so a row pushed out never comes back).
//!
//! Each group's rows live in a [`cache::TopNCache`] (low, middle, high ranges) over the state table, which
//! holds every input row (append-only: the cached ones). Unlike aggregation, a top-N emits its output's
//! changes as each chunk is applied; on a barrier it commits its table. Caches start empty after a
//! recovery or a reschedule and are filled from the table at the first row of their group (the
//! ungrouped top-N fills its one cache at its first barrier).

pub mod cache;
pub mod state;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;

use epochlab_common::{ActorId, Bitmap, EpochPair, Op, OrderType, OwnedRow, StreamChunk, memcmp};
use epochlab_state_table::StateTable;
use futures::StreamExt;
use futures_async_stream::try_stream;

use self::cache::{Changes, TopNCache};
use self::state::ManagedTopNState;
use super::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, StreamExecutorResult,
    expect_first_barrier,
};

/// Groups whose caches a group top-N keeps at most, by default (RisingWave's is an LRU bounded by
/// memory); an evicted group is loaded again from the state table.
pub const DEFAULT_GROUP_CACHE_CAPACITY: usize = 4096;

/// What a top-N executor is built from.
pub struct TopNArgs {
    pub actor_id: ActorId,
    pub input: BoxedExecutor,
    /// Empty for the ungrouped top-N.
    pub group_key: Vec<usize>,
    pub order_by: Vec<(usize, OrderType)>,
    pub offset: usize,
    /// At least 1 (`usize::MAX`: no limit).
    pub limit: usize,
    /// Also output every row tying the last one (requires `offset == 0`).
    pub with_ties: bool,
    /// The state table (see `epochlab_common::plan::top_n_table`).
    pub table: StateTable,
    pub group_cache_capacity: usize,
    /// Cache lookups, groups cached and state-table writes.
    pub stats: crate::executor::ExecutorStatsHandle,
    /// A test-only mutation (default: none).
    pub row_delete: state::TopNRowDelete,
}

/// The state of a top-N executor: its table and each group's cache.
struct TopNCore {
    actor_id: ActorId,
    name: &'static str,
    group_key: Vec<usize>,
    offset: usize,
    limit: usize,
    with_ties: bool,
    append_only: bool,
    state: ManagedTopNState,
    /// Group key (memcomparable) → its cache.
    caches: BTreeMap<Vec<u8>, TopNCache>,
    group_cache_capacity: usize,
    stats: crate::executor::ExecutorStatsHandle,
}

impl TopNCore {
    fn new(
        args: TopNArgs,
        name: &'static str,
        append_only: bool,
    ) -> StreamExecutorResult<(Self, BoxedExecutor)> {
        let bad = |problem: &str| StreamExecutorError::TopNPlan {
            problem: problem.to_string(),
        };
        if args.limit == 0 {
            return Err(bad("a limit of 0"));
        }
        if args.with_ties && args.offset > 0 {
            return Err(bad("WITH TIES with an offset"));
        }
        let state = ManagedTopNState::new(args.table, &args.group_key, &args.order_by)
            .with_row_delete(args.row_delete);
        let core = Self {
            actor_id: args.actor_id,
            name,
            group_key: args.group_key,
            offset: args.offset,
            limit: args.limit,
            with_ties: args.with_ties,
            append_only,
            state,
            caches: BTreeMap::new(),
            group_cache_capacity: args.group_cache_capacity.max(1),
            stats: args.stats,
        };
        Ok((core, args.input))
    }

    fn new_cache(&self) -> TopNCache {
        if self.append_only {
            TopNCache::new_append_only(self.offset, self.limit, self.with_ties)
        } else {
            TopNCache::new(self.offset, self.limit, self.with_ties)
        }
    }

    fn group_cache_key(key: &OwnedRow) -> Vec<u8> {
        memcmp::encode_row_to_vec(key, &vec![OrderType::ascending(); key.len()])
    }

    /// Make sure the group's cache is in memory (loaded from the table on a miss).
    fn ensure_cached(&mut self, group: &OwnedRow) -> StreamExecutorResult<Vec<u8>> {
        let ck = Self::group_cache_key(group);
        let hit = self.caches.contains_key(&ck);
        self.stats.cache_lookup(hit);
        if !hit {
            let mut cache = self.new_cache();
            self.state.load(group, &mut cache)?;
            self.caches.insert(ck.clone(), cache);
        }
        Ok(ck)
    }

    /// Apply a chunk's rows to the table and their groups' caches: the output's changes.
    fn apply_chunk(&mut self, chunk: &StreamChunk) -> StreamExecutorResult<Changes> {
        let mut out = Changes::new();
        for (op, row) in chunk.rows() {
            let group = row.project(&self.group_key);
            let ck = self.ensure_cached(&group)?;
            let cache = self.caches.get_mut(&ck).expect("just cached");
            let key = self.state.cache_key(row);
            match (op, self.append_only) {
                (Op::Insert | Op::UpdateInsert, false) => {
                    self.state.insert(row)?;
                    cache.insert(key, row.clone(), &mut out);
                }
                (Op::Delete | Op::UpdateDelete, false) => {
                    self.state.delete(row)?;
                    cache.delete(&key, row.clone(), &group, &self.state, &mut out)?;
                }
                (Op::Insert | Op::UpdateInsert, true) => {
                    cache.insert_append_only(key, row.clone(), &mut self.state, &mut out)?;
                }
                (Op::Delete | Op::UpdateDelete, true) => {
                    return Err(StreamExecutorError::NotAppendOnly {
                        executor: self.name.to_string(),
                        row: format!("{row:?}"),
                    });
                }
            }
            if cfg!(debug_assertions) {
                cache.check();
            }
        }
        while self.caches.len() > self.group_cache_capacity {
            self.caches.pop_first();
        }
        self.stats.set_cache_entries(self.caches.len());
        let (inserts, deletes) = self.state.take_writes();
        self.stats.state_rows_written(inserts, deletes);
        Ok(out)
    }

    fn init_epoch(&mut self, epoch: EpochPair) -> StreamExecutorResult<()> {
        self.state.table_mut().init_epoch(epoch);
        if self.group_key.is_empty() {
            self.ensure_cached(&OwnedRow::empty())?;
        }
        Ok(())
    }

    fn commit(&mut self, epoch: EpochPair) -> StreamExecutorResult<()> {
        Ok(self.state.table_mut().commit(epoch)?)
    }

    /// A reschedule: the table takes the new vnodes; the caches may hold groups of other actors now.
    fn update_vnodes(&mut self, vnodes: Arc<Bitmap>) -> StreamExecutorResult<()> {
        self.state.table_mut().update_vnode_bitmap(vnodes)?;
        self.caches.clear();
        if self.group_key.is_empty() {
            self.ensure_cached(&OwnedRow::empty())?;
        }
        Ok(())
    }

    fn identity(&self) -> String {
        format!(
            "{}(actor {}, table {}, offset {}, limit {}{})",
            self.name,
            self.actor_id,
            self.state.table().table_id(),
            self.offset,
            self.limit,
            if self.with_ties { ", with ties" } else { "" }
        )
    }

    /// The loop of every top-N executor: each chunk's output changes go out at once; on a barrier the
    /// table is committed with the barrier's epoch, the barrier passes, and a new vnode bitmap is taken
    /// after it.
    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self, input: BoxedExecutor) {
        let mut input = input.execute();
        let first = expect_first_barrier(&mut input, self.name).await?;
        self.init_epoch(first.epoch)?;
        yield Message::Barrier(first);
        #[for_await]
        for msg in input {
            match msg? {
                Message::Chunk(chunk) => {
                    let out = self.apply_chunk(&chunk)?;
                    if !out.is_empty() {
                        yield Message::Chunk(StreamChunk::from_pairs(out));
                    }
                }
                // A group top-N passes the watermark on its first group-key column and cleans its table by
                // it, lazily (RisingWave's `handle_watermark`); any other stops here.
                Message::Watermark(w) => {
                    if self.group_key.first() == Some(&w.col_idx) {
                        self.state.clean_below(&w.val);
                        yield Message::Watermark(w);
                    }
                }
                Message::Barrier(barrier) => {
                    self.commit(barrier.epoch)?;
                    let update = barrier.as_update_vnode_bitmap(self.actor_id);
                    yield Message::Barrier(barrier);
                    if let Some(vnodes) = update {
                        self.update_vnodes(vnodes)?;
                    }
                }
            }
        }
    }
}

macro_rules! top_n_executor {
    ($(#[$doc:meta])* $name:ident, $label:literal, grouped: $grouped:literal, append_only: $ao:literal) => {
        $(#[$doc])*
        pub struct $name {
            core: TopNCore,
            input: BoxedExecutor,
        }

        impl $name {
            pub fn new(args: TopNArgs) -> StreamExecutorResult<Self> {
                if args.group_key.is_empty() == $grouped {
                    return Err(StreamExecutorError::TopNPlan {
                        problem: format!("{} with group key {:?}", $label, args.group_key),
                    });
                }
                let (core, input) = TopNCore::new(args, $label, $ao)?;
                Ok(Self { core, input })
            }
        }

        impl Execute for $name {
            fn execute(self: Box<Self>) -> BoxedMessageStream {
                let Self { core, input } = *self;
                core.execute_inner(input).boxed()
            }

            fn identity(&self) -> String {
                self.core.identity()
            }
        }
    };
}

top_n_executor!(
    /// Top-N over the whole input, in a singleton fragment (RisingWave's `TopNExecutor`).
    TopNExecutor, "TopN", grouped: false, append_only: false
);
top_n_executor!(
    /// Top-N within each group (RisingWave's `GroupTopNExecutor`), hashed by the group key.
    GroupTopNExecutor, "GroupTopN", grouped: true, append_only: false
);
top_n_executor!(
    /// Top-N over an append-only input (RisingWave's `AppendOnlyTopNExecutor`).
    AppendOnlyTopNExecutor, "AppendOnlyTopN", grouped: false, append_only: true
);
top_n_executor!(
    /// Group top-N over an append-only input (RisingWave's `AppendOnlyGroupTopNExecutor`).
    AppendOnlyGroupTopNExecutor, "AppendOnlyGroupTopN", grouped: true, append_only: true
);
