//! Streaming aggregation (RisingWave's `HashAggExecutor` and `SimpleAggExecutor`, with their
//! `aggregation` module): per group, one [`AggState`] per call; changes are applied per row, and on each
//! barrier the groups that changed are written to the state tables and emitted.
//!
//! State, as RisingWave lays it out (see `epochlab_common::plan::AggCallState`):
//! - the result table: the group key, then per call its value state (or output);
//! - per retractable min/max/string_agg/array_agg/first_value call, a materialized-input table of the rows
//!   it has seen (pk: group key, sort key, upstream stream key);
//! - per column of `DISTINCT` calls, a dedup table: how many live rows of each group hold each value, per call.
//!
//! Groups live in a bounded cache; a miss loads the group from the state tables (a group's value states from
//! its result row, its ordered states by feeding its materialized input back, its dedup counts from the
//! dedup tables). After a recovery the cache starts empty. `FILTER` and `DISTINCT` are applied here, before
//! the states (which see only the rows that reach the aggregate). An emit-on-window-close aggregation emits a
//! group once, when the watermark on its window column passes it (see `AggCore::flush_eowc`).

pub mod group;
pub mod hash_agg;
pub mod simple_agg;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use epochlab_common::plan::AggCallState;
use epochlab_common::{ActorId, AggCall, AggKind, Op, OwnedRow, StreamChunk, memcmp};
use epochlab_state_table::StateTable;

pub use hash_agg::HashAggExecutor;
pub use simple_agg::SimpleAggExecutor;

use self::group::{AggGroup, CallPlan};
use super::non_strict::NonStrict;
use futures_async_stream::try_stream;

use super::{
    BoxedExecutor, Message, StreamExecutorError, StreamExecutorResult, expect_first_barrier,
};

/// What a barrier's flush emits: the changes, then the watermark to send after them.
type Flushed = (Vec<(Op, OwnedRow)>, Option<super::Watermark>);

/// Groups kept in memory at most, by default (RisingWave's agg cache is an LRU bounded by memory).
pub const DEFAULT_GROUP_CACHE_CAPACITY: usize = 4096;

/// Where one call keeps its state, with its table open.
pub enum CallStateTable {
    Value,
    MaterializedInput {
        /// Boxed: a table is large beside `Value`.
        table: Box<StateTable>,
        columns: Vec<usize>,
        /// The input columns that break the call's sort-key ties.
        stream_key: Vec<usize>,
    },
}

/// A dedup table, open.
pub struct DedupTable {
    pub column: usize,
    pub table: StateTable,
}

/// What an aggregation executor is built from.
pub struct AggArgs {
    pub actor_id: ActorId,
    pub input: BoxedExecutor,
    /// Empty for a simple aggregation.
    pub group_key: Vec<usize>,
    pub agg_calls: Vec<AggCall>,
    pub row_count_index: usize,
    pub result_table: StateTable,
    pub call_states: Vec<CallStateTable>,
    pub dedup_tables: Vec<DedupTable>,
    pub cache_capacity: usize,
    /// Evaluates the calls' FILTER clauses (non-strict: an error keeps the row out).
    pub eval: NonStrict,
    /// Cache lookups, groups cached, dirty groups and result-table writes.
    pub stats: crate::executor::ExecutorStatsHandle,
    /// A test-only mutation (default: none).
    pub dedup_write: group::DedupWrite,
    /// Emit on window close: the position in the group key of the window column (RisingWave's EOWC hash
    /// aggregation); `None` emits on update.
    pub eowc: Option<usize>,
    /// RisingWave's debug-build checks, as its ci-sim builds run (`StreamConfig::persist_check`): a group's
    /// row count below zero is an error; a release build takes it as 0 and keeps the group's states.
    pub debug_checks: bool,
}

impl AggArgs {
    /// The plan's per-call states with their tables opened by `open`.
    pub fn open_states(
        states: &[AggCallState],
        mut open: impl FnMut(&std::sync::Arc<epochlab_common::catalog::TableDesc>) -> StateTable,
    ) -> Vec<CallStateTable> {
        states
            .iter()
            .map(|s| match s {
                AggCallState::Value => CallStateTable::Value,
                AggCallState::MaterializedInput {
                    table,
                    columns,
                    stream_key,
                } => CallStateTable::MaterializedInput {
                    table: Box::new(open(table)),
                    columns: columns.clone(),
                    stream_key: stream_key.clone(),
                },
            })
            .collect()
    }
}

/// The state of an aggregation executor: its plan, tables and cache of groups (shared by the hash and
/// simple executors, which differ in what they emit for an empty group).
pub(crate) struct AggCore {
    actor_id: ActorId,
    group_key: Vec<usize>,
    plans: Vec<CallPlan>,
    row_count_index: usize,
    result_table: StateTable,
    call_states: Vec<CallStateTable>,
    dedup_tables: Vec<DedupTable>,
    cache: BTreeMap<Vec<u8>, AggGroup>,
    cache_capacity: usize,
    /// The group key's orders in cache keys (ascending).
    key_orders: Vec<epochlab_common::OrderType>,
    eval: NonStrict,
    stats: crate::executor::ExecutorStatsHandle,
    /// Keep a group whose row count is 0 (simple aggregation: its one row always exists).
    keep_empty: bool,
    dedup_write: group::DedupWrite,
    /// The window column's position in the group key, when emitting on window close.
    eowc: Option<usize>,
    debug_checks: bool,
    /// The watermark on the window column received since the last barrier (EOWC).
    window_watermark: Option<super::Watermark>,
    /// The window watermark the closed groups were last taken out below (EOWC): a group below it is gone,
    /// and no row can open one (the filters upstream drop it), so the table is scanned again only when the
    /// watermark rises past it, not at every barrier after a watermark.
    consumed: Option<epochlab_common::ScalarImpl>,
}

impl AggCore {
    pub(crate) fn new(
        args: AggArgs,
        keep_empty: bool,
    ) -> StreamExecutorResult<(Self, BoxedExecutor)> {
        assert_eq!(
            args.agg_calls.len(),
            args.call_states.len(),
            "one state per call"
        );
        let rc = &args.agg_calls[args.row_count_index];
        assert!(
            rc.kind == AggKind::Count && rc.args.is_empty() && rc.filter.is_none(),
            "the row count call is count(*)"
        );
        let plans = group::plan_calls(&args.agg_calls, &args.call_states, &args.dedup_tables)?;
        let key_orders = vec![epochlab_common::OrderType::ascending(); args.group_key.len()];
        let core = Self {
            actor_id: args.actor_id,
            group_key: args.group_key,
            plans,
            row_count_index: args.row_count_index,
            result_table: args.result_table,
            call_states: args.call_states,
            dedup_tables: args.dedup_tables,
            cache: BTreeMap::new(),
            cache_capacity: args.cache_capacity.max(1),
            key_orders,
            eval: args.eval,
            stats: args.stats,
            keep_empty,
            dedup_write: args.dedup_write,
            eowc: args.eowc,
            debug_checks: args.debug_checks,
            window_watermark: None,
            consumed: None,
        };
        Ok((core, args.input))
    }

    fn tables_mut(&mut self) -> Vec<&mut StateTable> {
        let mut out = vec![&mut self.result_table];
        for s in &mut self.call_states {
            if let CallStateTable::MaterializedInput { table, .. } = s {
                out.push(table);
            }
        }
        out.extend(self.dedup_tables.iter_mut().map(|d| &mut d.table));
        out
    }

    pub(crate) fn init_epoch(&mut self, epoch: epochlab_common::EpochPair) {
        for t in self.tables_mut() {
            t.init_epoch(epoch);
        }
    }

    pub(crate) fn commit(&mut self, epoch: epochlab_common::EpochPair) -> StreamExecutorResult<()> {
        for t in self.tables_mut() {
            t.commit(epoch)?;
        }
        Ok(())
    }

    /// A reschedule: the tables take the new vnodes; cached groups may belong elsewhere now.
    pub(crate) fn update_vnodes(
        &mut self,
        vnodes: std::sync::Arc<epochlab_common::Bitmap>,
    ) -> StreamExecutorResult<()> {
        for t in self.tables_mut() {
            t.update_vnode_bitmap(vnodes.clone())?;
        }
        self.cache.clear();
        // The new vnodes' groups were taken out below another actor's watermark: scan at the next one.
        self.consumed = None;
        Ok(())
    }

    fn cache_key(&self, key: &OwnedRow) -> Vec<u8> {
        memcmp::encode_row_to_vec(key, &self.key_orders)
    }

    /// Make sure the group of `key` (its cache key `ck`) is cached: loaded from the state tables on a miss.
    fn load_group(&mut self, ck: &[u8], key: &OwnedRow) -> StreamExecutorResult<()> {
        let hit = self.cache.contains_key(ck);
        self.stats.cache_lookup(hit);
        if !hit {
            let g = AggGroup::load(
                key.clone(),
                &self.plans,
                &self.result_table,
                &self.call_states,
                &self.dedup_tables,
            )?;
            self.cache.insert(ck.to_vec(), g);
        }
        Ok(())
    }

    /// Make sure the group of `key` is cached (the simple aggregation's one group, at start).
    pub(crate) fn touch(&mut self, key: &OwnedRow) -> StreamExecutorResult<()> {
        let ck = self.cache_key(key);
        self.load_group(&ck, key)?;
        self.cache.get_mut(&ck).expect("cached").dirty = true;
        Ok(())
    }

    /// Which calls' FILTER clauses keep `row` (all of them when no call has one).
    fn filter_passes(&self, row: &OwnedRow, passes: &mut Vec<bool>) {
        passes.clear();
        passes.extend(self.plans.iter().map(|p| {
            p.filter.as_ref().is_none_or(|f| {
                matches!(
                    self.eval.eval(f, row),
                    Some(epochlab_common::ScalarImpl::Bool(true))
                )
            })
        }));
    }

    /// Apply a chunk's rows to their groups' states (and the materialized-input tables).
    pub(crate) fn apply_chunk(&mut self, chunk: &StreamChunk) -> StreamExecutorResult<()> {
        let mut passes = Vec::with_capacity(self.plans.len());
        let mut ck = Vec::new();
        for (op, row) in chunk.rows() {
            self.filter_passes(row, &mut passes);
            // The cache key straight from the row's group-key columns; the key row only on a miss.
            ck.clear();
            for (&i, &o) in self.group_key.iter().zip(&self.key_orders) {
                memcmp::encode_datum(&row[i], o, &mut ck);
            }
            if !self.cache.contains_key(ck.as_slice()) {
                // The group key as RisingWave's hash key gives it back (equal values, one representative).
                let key = row.project(&self.group_key).into_inner();
                let key = key
                    .into_iter()
                    .map(epochlab_common::types::datum_hash_key_canonical);
                self.load_group(&ck, &OwnedRow::new(key.collect()))?;
            } else {
                self.stats.cache_lookup(true);
            }
            let g = self.cache.get_mut(&ck).expect("cached");
            g.apply_row(
                op,
                row,
                &passes,
                &self.plans,
                &mut self.call_states,
                &self.dedup_tables,
            )?;
        }
        Ok(())
    }

    /// Write every changed group to the state tables; the changes to emit, in group-key order.
    pub(crate) fn flush(&mut self) -> StreamExecutorResult<Vec<(Op, OwnedRow)>> {
        let mut out = Vec::new();
        let mut emptied = Vec::new();
        let dirty = self.cache.values().filter(|g| g.dirty).count();
        self.stats.set_dirty_groups(dirty);
        for (ck, g) in self.cache.iter_mut().filter(|(_, g)| g.dirty) {
            let row_count = g.row_count(self.row_count_index);
            if row_count == 0 {
                // An empty group's states start over (RisingWave resets them): a sum retracted to 0 over
                // no rows is NULL again.
                g.reset(&self.plans);
            }
            // A delete of a row the group never had (RisingWave's `curr_row_count`): an error in a debug
            // build; a release build shows the group as empty and keeps its states.
            let negative = row_count < 0;
            if negative {
                tracing::error!(group = ?g.key, "bad row count");
                if self.debug_checks {
                    return Err(StreamExecutorError::NegativeRowCount {
                        group: g.key.clone(),
                    });
                }
            }
            let keep = row_count > 0 || self.keep_empty;
            g.write(
                keep || negative,
                &mut self.result_table,
                &mut self.dedup_tables,
                self.dedup_write,
            )?;
            let new = keep.then(|| g.output());
            match (g.emitted.take(), &new) {
                (None, Some(n)) => out.push((Op::Insert, n.clone())),
                (Some(old), None) => out.push((Op::Delete, old)),
                (Some(old), Some(n)) if &old != n => {
                    out.push((Op::UpdateDelete, old));
                    out.push((Op::UpdateInsert, n.clone()));
                }
                _ => {}
            }
            g.emitted = new;
            g.dirty = false;
            if !keep && !negative {
                emptied.push(ck.clone());
            }
        }
        // Result-table rows: each kept group written once, each emptied one deleted.
        let deleted = emptied.len() as u64;
        self.stats
            .state_rows_written(dirty as u64 - deleted, deleted);
        for ck in emptied {
            self.cache.remove(&ck);
        }
        while self.cache.len() > self.cache_capacity {
            self.cache.pop_first();
        }
        self.stats.set_cache_entries(self.cache.len());
        Ok(out)
    }

    /// Emit on window close, at a barrier: the changed groups are written (nothing is emitted for them), then
    /// every group whose window is below the window watermark goes out once, as an insert of its final
    /// value, and leaves the state (RisingWave's EOWC `flush_data`). With the window first in the group key,
    /// the tables' pk starts with it and table watermarks clean them: the result table at this commit (the
    /// sort buffer's eager cleaning), the materialized-input and dedup tables lazily; otherwise the result
    /// row is deleted and the other rows stay, never read again (a late row is dropped upstream). Returns the
    /// rows and the watermark to send after them.
    fn flush_eowc(&mut self, window: usize) -> StreamExecutorResult<Flushed> {
        self.flush()?;
        let Some(w) = self.window_watermark.take() else {
            return Ok((Vec::new(), None));
        };
        let risen = self
            .consumed
            .as_ref()
            .is_none_or(|c| super::watermark::cmp_watermark(c, &w.val).is_lt());
        if !risen {
            return Ok((Vec::new(), Some(w.with_idx(window))));
        }
        self.consumed = Some(w.val.clone());
        let g = self.group_key.len();
        let closed: Vec<OwnedRow> = self
            .result_table
            .iter_all()?
            .into_iter()
            .map(|row| OwnedRow::new(row.datums()[..g].to_vec()))
            .filter(|key| {
                key.datum_at(window)
                    .as_ref()
                    .is_some_and(|v| super::watermark::cmp_watermark(v, &w.val).is_lt())
            })
            .collect();
        let mut out = Vec::with_capacity(closed.len());
        for key in closed {
            let ck = self.cache_key(&key);
            self.load_group(&ck, &key)?;
            let mut group = self.cache.remove(&ck).expect("loaded");
            out.push((Op::Insert, group.output()));
            if window != 0 {
                let tables = (&mut self.result_table, &mut self.dedup_tables);
                group.write(false, tables.0, tables.1, self.dedup_write)?;
            }
        }
        if window == 0 {
            self.clean_below(&w.val);
        } else {
            self.stats.state_rows_written(0, out.len() as u64);
        }
        Ok((out, Some(w.with_idx(window))))
    }

    /// Clean every state table below the window watermark `val` (their pk starts with the window): the result
    /// table at this commit, the others lazily (RisingWave's `update_watermark(watermark, false)`).
    fn clean_below(&mut self, val: &epochlab_common::ScalarImpl) {
        self.result_table.update_watermark(Some(val.clone()), true);
        for t in self.tables_mut().into_iter().skip(1) {
            t.update_watermark(Some(val.clone()), false);
        }
    }

    /// A watermark of the input: the window column's is kept for the next barrier (EOWC); others stop here
    /// (no state cleaning yet).
    fn on_watermark(&mut self, w: super::Watermark) {
        let Some(window) = self.eowc else {
            return;
        };
        if w.col_idx != self.group_key[window] {
            return;
        }
        let higher = self
            .window_watermark
            .as_ref()
            .is_none_or(|old| super::watermark::cmp_watermark(&old.val, &w.val).is_lt());
        if higher {
            self.window_watermark = Some(w);
        }
    }

    /// At a barrier: the changes to emit and the watermark to send after them.
    fn flush_at_barrier(&mut self) -> StreamExecutorResult<Flushed> {
        match self.eowc {
            Some(window) => self.flush_eowc(window),
            None => Ok((self.flush()?, None)),
        }
    }

    pub(crate) fn identity(&self, name: &str) -> String {
        format!(
            "{name}(actor {}, table {}, {} calls)",
            self.actor_id,
            self.result_table.table_id(),
            self.plans.len()
        )
    }
}

/// The loop of both aggregation executors: rows go into their groups; on each barrier the changed groups
/// are emitted, the state tables committed with the barrier's epoch, then the barrier passes (and a new
/// vnode bitmap is taken after it). A simple aggregation's one group is touched at start (and after a
/// reschedule) so that its row is emitted at its first barrier.
impl AggCore {
    #[try_stream(ok = Message, error = StreamExecutorError)]
    pub(crate) async fn execute_inner(mut self, input: BoxedExecutor, name: &'static str) {
        let mut input = input.execute();
        let first = expect_first_barrier(&mut input, name).await?;
        self.init_epoch(first.epoch);
        if self.keep_empty {
            self.touch(&OwnedRow::empty())?;
        }
        yield Message::Barrier(first);
        #[for_await]
        for msg in input {
            match msg? {
                Message::Chunk(chunk) => self.apply_chunk(&chunk)?,
                Message::Watermark(w) => self.on_watermark(w),
                Message::Barrier(barrier) => {
                    let (out, watermark) = self.flush_at_barrier()?;
                    if !out.is_empty() {
                        yield Message::Chunk(StreamChunk::from_pairs(out));
                    }
                    if let Some(w) = watermark {
                        yield Message::Watermark(w);
                    }
                    self.commit(barrier.epoch)?;
                    let update = barrier.as_update_vnode_bitmap(self.actor_id);
                    yield Message::Barrier(barrier);
                    if let Some(vnodes) = update {
                        self.update_vnodes(vnodes)?;
                        if self.keep_empty {
                            self.touch(&OwnedRow::empty())?;
                        }
                    }
                }
            }
        }
    }
}

/// The typed error of an aggregate's state.
fn agg_error(call: usize, e: epochlab_expr::ExprError) -> StreamExecutorError {
    StreamExecutorError::Aggregate { call, source: e }
}
