//! Streaming hash join (RisingWave's `HashJoinExecutor`): two inputs, barriers aligned by
//! [`barrier_align`](super::barrier_align::barrier_align); each side keeps its rows in a [`JoinHashMap`]
//! (rows table, degree table where the join type needs one, a bounded cache of join keys).
//!
//! A row of one side is matched against the other side's entry of its join key (a key with a NULL in a
//! column that is not null-safe matches nothing and is not stored), the non-equi `condition` evaluated
//! non-strictly over the left then right columns (an error is NULL: no match). Inserts and deletes emit the
//! joined rows; an update (`U-`/`U+`) is handled as a delete then an insert. The outer side's NULL-padded
//! rows and the rows of semi/anti joins follow the degree of their row (the number of matches): its first
//! match and last unmatch. State is committed on each barrier; a recovered executor starts with an empty
//! cache and reads its entries back from the committed tables. Watermarks on join keys pass as the minimum
//! of both sides' and clean the other side's state ([`JoinCore::handle_watermark`]).

pub mod builder;
pub mod join_hash_map;
pub mod key;
#[cfg(test)]
mod tests;

use epochlab_common::plan::JoinType;
use epochlab_common::{ActorId, ExprNode, Op, OwnedRow, ScalarImpl, StreamChunk};
use epochlab_state_table::StateTable;
use futures::StreamExt;
use futures_async_stream::try_stream;

pub use builder::SideType;
pub use join_hash_map::{JoinEntryState, JoinHashMap, JoinRow};

use self::builder::{JoinChunkBuilder, forward_exactly_once};
use super::barrier_align::{AlignedMessage, barrier_align, expect_first_aligned};
use super::non_strict::NonStrict;
use super::{
    BoxedExecutor, BoxedMessageStream, BufferedWatermarks, Execute, ExecutorStatsHandle, Message,
    StreamExecutorError, StreamExecutorResult, Watermark,
};

/// Join keys cached per side at most, by default (RisingWave bounds its join cache by memory).
pub const DEFAULT_JOIN_CACHE_CAPACITY: usize = 4096;

/// Output rows per chunk, at most (an update pair is never split).
pub const JOIN_CHUNK_SIZE: usize = 1024;

/// One side of a join (RisingWave's `JoinSide`): its rows and where its columns go.
pub struct JoinSide {
    pub ht: JoinHashMap,
    /// Columns of this side's rows.
    pub width: usize,
}

impl JoinSide {
    pub fn new(ht: JoinHashMap, width: usize) -> Self {
        Self { ht, width }
    }

    fn need_degree_table(&self) -> bool {
        self.ht.need_degree_table()
    }
}

/// What a hash join is built from.
pub struct HashJoinArgs {
    pub actor_id: ActorId,
    pub join_type: JoinType,
    pub left: BoxedExecutor,
    pub right: BoxedExecutor,
    pub left_key: Vec<usize>,
    pub right_key: Vec<usize>,
    pub null_safe: Vec<bool>,
    pub condition: Option<ExprNode>,
    pub left_table: StateTable,
    pub right_table: StateTable,
    pub left_degree_table: Option<StateTable>,
    pub right_degree_table: Option<StateTable>,
    pub output_indices: Vec<usize>,
    pub cache_capacity: usize,
    /// Evaluates the condition (non-strict).
    pub eval: NonStrict,
    pub stats: ExecutorStatsHandle,
    /// A test-only mutation (default: none).
    pub row_delete: join_hash_map::JoinRowDelete,
}

fn bad_plan(problem: impl Into<String>) -> StreamExecutorError {
    StreamExecutorError::JoinPlan {
        problem: problem.into(),
    }
}

impl HashJoinArgs {
    /// The plan's shape: keys of one length, degree tables where (and only where) the join type needs
    /// them, output columns in range.
    fn check(&self) -> StreamExecutorResult<()> {
        let (lk, rk) = (self.left_key.len(), self.right_key.len());
        if lk != rk || lk != self.null_safe.len() {
            return Err(bad_plan(format!(
                "{lk} left keys, {rk} right keys, {} null-safe flags",
                self.null_safe.len()
            )));
        }
        let t = self.join_type;
        if self.left_degree_table.is_some() != t.left_needs_degree()
            || self.right_degree_table.is_some() != t.right_needs_degree()
        {
            return Err(bad_plan(format!("degree tables do not fit a {t:?} join")));
        }
        for (table, key) in [
            (&self.left_table, &self.left_key),
            (&self.right_table, &self.right_key),
        ] {
            if table.desc().pk_indices.get(..key.len()) != Some(&key[..]) {
                return Err(bad_plan(
                    "a rows table's pk does not start with the join key",
                ));
            }
        }
        let (lw, rw) = (self.left_width(), self.right_width());
        let width = match t {
            JoinType::LeftSemi | JoinType::LeftAnti => lw,
            JoinType::RightSemi | JoinType::RightAnti => rw,
            _ => lw + rw,
        };
        if let Some(i) = self.output_indices.iter().find(|&&i| i >= width) {
            return Err(bad_plan(format!("output column {i} of {width}")));
        }
        Ok(())
    }

    fn left_width(&self) -> usize {
        self.left_table.desc().column_types.len()
    }

    fn right_width(&self) -> usize {
        self.right_table.desc().column_types.len()
    }
}

/// The state and plan of a join, apart from its inputs.
struct JoinCore {
    actor_id: ActorId,
    join_type: JoinType,
    side_l: JoinSide,
    side_r: JoinSide,
    condition: Option<ExprNode>,
    eval: NonStrict,
    output_indices: Vec<usize>,
    stats: ExecutorStatsHandle,
    /// The current row's join key, encoded once per row into a buffer kept across rows.
    key_buf: Vec<u8>,
    /// Per join key position, both sides' watermarks on it (RisingWave's `watermark_buffers`): the minimum
    /// goes out on that key's output columns of both sides.
    watermarks: BufferedWatermarks,
}

pub struct HashJoinExecutor {
    left: BoxedExecutor,
    right: BoxedExecutor,
    core: JoinCore,
}

impl HashJoinExecutor {
    pub fn new(args: HashJoinArgs) -> StreamExecutorResult<Self> {
        args.check()?;
        let (lw, rw) = (args.left_width(), args.right_width());
        let cap = args.cache_capacity;
        let ht_l = JoinHashMap::new(
            args.left_table,
            args.left_degree_table,
            args.left_key,
            args.null_safe.clone(),
            cap,
            args.stats.clone(),
        )
        .with_row_delete(args.row_delete);
        let ht_r = JoinHashMap::new(
            args.right_table,
            args.right_degree_table,
            args.right_key,
            args.null_safe,
            cap,
            args.stats.clone(),
        )
        .with_row_delete(args.row_delete);
        let core = JoinCore {
            actor_id: args.actor_id,
            join_type: args.join_type,
            side_l: JoinSide::new(ht_l, lw),
            side_r: JoinSide::new(ht_r, rw),
            condition: args.condition,
            eval: args.eval,
            output_indices: args.output_indices,
            stats: args.stats,
            key_buf: Vec::new(),
            watermarks: BufferedWatermarks::new(2),
        };
        Ok(Self {
            left: args.left,
            right: args.right,
            core,
        })
    }

    /// Chunks of either side are joined as they come; on a barrier (both inputs delivered it) both
    /// sides' tables are committed, a new vnode bitmap is taken, then the barrier passes.
    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(self) {
        let Self {
            left,
            right,
            mut core,
        } = self;
        let aligned = barrier_align(left.execute(), right.execute(), core.actor_id);
        futures::pin_mut!(aligned);
        let identity = core.identity();
        let first = expect_first_aligned(&mut aligned, &identity).await?;
        core.side_l.ht.init(first.epoch);
        core.side_r.ht.init(first.epoch);
        yield Message::Barrier(first);
        while let Some(msg) = aligned.next().await {
            match msg? {
                AlignedMessage::Left(chunk) => {
                    for c in core.eq_join_oneside(SideType::Left, &chunk)? {
                        yield Message::Chunk(c);
                    }
                }
                AlignedMessage::Right(chunk) => {
                    for c in core.eq_join_oneside(SideType::Right, &chunk)? {
                        yield Message::Chunk(c);
                    }
                }
                AlignedMessage::WatermarkLeft(w) => {
                    for w in core.handle_watermark(SideType::Left, w) {
                        yield Message::Watermark(w);
                    }
                }
                AlignedMessage::WatermarkRight(w) => {
                    for w in core.handle_watermark(SideType::Right, w) {
                        yield Message::Watermark(w);
                    }
                }
                AlignedMessage::Barrier(barrier) => {
                    core.side_l.ht.flush(barrier.epoch)?;
                    core.side_r.ht.flush(barrier.epoch)?;
                    if let Some(vnodes) = barrier.as_update_vnode_bitmap(core.actor_id) {
                        core.side_l.ht.update_vnode_bitmap(vnodes.clone())?;
                        core.side_r.ht.update_vnode_bitmap(vnodes)?;
                    }
                    let entries = core.side_l.ht.entry_count() + core.side_r.ht.entry_count();
                    core.stats.set_cache_entries(entries);
                    yield Message::Barrier(barrier);
                }
            }
        }
    }
}

impl JoinCore {
    fn identity(&self) -> String {
        format!(
            "HashJoin(actor {}, {:?}, tables {} {})",
            self.actor_id,
            self.join_type,
            self.side_l.ht.table_id(),
            self.side_r.ht.table_id()
        )
    }

    /// The side a chunk came in on, and the other.
    fn sides(&mut self, side: SideType) -> (&mut JoinSide, &mut JoinSide) {
        match side {
            SideType::Left => (&mut self.side_l, &mut self.side_r),
            SideType::Right => (&mut self.side_r, &mut self.side_l),
        }
    }

    /// A watermark of `side` (RisingWave's `handle_watermark`, without interval joins): on the side's first
    /// join key column, it cleans the other side's rows below it (no later row of this side can match them;
    /// RisingWave's planner first moves the key pairs with watermarks on both sides to the front, which the
    /// planner here does not, so a join whose first pair has none cleans nothing);
    /// on any join key column, once both sides sent one there, their minimum goes out on that key's output
    /// columns of both sides. A watermark on another column stops here.
    fn handle_watermark(&mut self, side: SideType, w: Watermark) -> Vec<Watermark> {
        let (update, other) = self.sides(side);
        if update.ht.join_key().first() == Some(&w.col_idx) {
            other.ht.update_watermark(w.val.clone());
        }
        let positions: Vec<usize> = update
            .ht
            .join_key()
            .iter()
            .enumerate()
            .filter(|(_, c)| **c == w.col_idx)
            .map(|(i, _)| i)
            .collect();
        let mut out = Vec::new();
        for i in positions {
            let upstream = usize::from(side == SideType::Right);
            let Some(min) = self.watermarks.handle(upstream, w.clone().with_idx(i)) else {
                continue;
            };
            let (l, r) = (self.side_l.ht.join_key()[i], self.side_r.ht.join_key()[i]);
            for o in self.output_positions(l, r) {
                out.push(min.clone().with_idx(o));
            }
        }
        out
    }

    /// The output positions of left column `l` and right column `r` (a semi or anti join outputs its side's
    /// columns only).
    fn output_positions(&self, l: usize, r: usize) -> Vec<usize> {
        let lw = self.side_l.width;
        let inputs: Vec<usize> = match self.join_type {
            JoinType::LeftSemi | JoinType::LeftAnti => vec![l],
            JoinType::RightSemi | JoinType::RightAnti => vec![r],
            _ => vec![l, lw + r],
        };
        self.output_indices
            .iter()
            .enumerate()
            .filter(|(_, i)| inputs.contains(i))
            .map(|(o, _)| o)
            .collect()
    }

    /// Join one chunk of `side` against the other side's state, and store its rows.
    fn eq_join_oneside(
        &mut self,
        side: SideType,
        chunk: &StreamChunk,
    ) -> StreamExecutorResult<Vec<StreamChunk>> {
        let lw = self.side_l.width;
        let join_type = self.join_type;
        let output_indices = std::mem::take(&mut self.output_indices);
        let mut builder = JoinChunkBuilder::new(join_type, side, &output_indices, lw);
        let mut out = Vec::new();
        let mut result = Ok(());
        for (op, row) in chunk.rows() {
            result = self.join_row(side, op, row, &mut builder);
            if result.is_err() {
                break;
            }
            if builder.len() >= JOIN_CHUNK_SIZE {
                out.extend(builder.take());
            }
        }
        out.extend(builder.take());
        drop(builder);
        self.output_indices = output_indices;
        result.map(|()| out)
    }

    /// Whether the condition holds for `row` of `side` and `matched` of the other side.
    fn condition_holds(&self, side: SideType, row: &OwnedRow, matched: &OwnedRow) -> bool {
        let Some(cond) = &self.condition else {
            return true;
        };
        let joined = match side {
            SideType::Left => row.chain(matched),
            SideType::Right => matched.chain(row),
        };
        matches!(self.eval.eval(cond, &joined), Some(ScalarImpl::Bool(true)))
    }

    /// One row of `side`: match it, emit what it changes, move the matched rows' degrees, store it.
    fn join_row(
        &mut self,
        side: SideType,
        op: Op,
        row: &OwnedRow,
        builder: &mut JoinChunkBuilder<'_>,
    ) -> StreamExecutorResult<()> {
        let mut key = std::mem::take(&mut self.key_buf);
        let result = self.join_row_with_key(side, op, row, &mut key, builder);
        self.key_buf = key;
        result
    }

    /// [`Self::join_row`], with `key` the buffer its join key is encoded into.
    fn join_row_with_key(
        &mut self,
        side: SideType,
        op: Op,
        row: &OwnedRow,
        key: &mut Vec<u8>,
        builder: &mut JoinChunkBuilder<'_>,
    ) -> StreamExecutorResult<()> {
        let insert = op.is_insert();
        let plain = if insert { Op::Insert } else { Op::Delete };
        let (update, matched) = self.sides(side);
        if !update.ht.join_key_into(row, key) {
            // A key that can match nothing; such a row is not stored either.
            builder.forward_if_not_matched(plain, row);
            return Ok(());
        }
        let mut entry = matched.ht.take_state(key, || update.ht.key_row_of(row))?;
        let degree = self.match_entry(side, insert, row, &mut entry, builder);
        let (update, matched) = self.sides(side);
        matched.ht.update_state(key, entry);
        let degree = degree?;
        if degree == 0 {
            builder.forward_if_not_matched(plain, row);
        } else {
            builder.forward_exactly_once_if_matched(plain, row);
        }
        let kept = if update.need_degree_table() {
            degree
        } else {
            0
        };
        if insert {
            update.ht.insert(key, row, kept)
        } else {
            update.ht.delete(key, row, kept)
        }
    }

    /// Match `row` against the other side's `entry`: emit the joined rows and move the matched rows'
    /// degrees. Returns how many rows matched.
    fn match_entry(
        &mut self,
        side: SideType,
        insert: bool,
        row: &OwnedRow,
        entry: &mut JoinEntryState,
        builder: &mut JoinChunkBuilder<'_>,
    ) -> StreamExecutorResult<u64> {
        let forward = !forward_exactly_once(self.join_type, side);
        let mut degree = 0;
        for jr in entry.values_mut() {
            if !self.condition_holds(side, row, &jr.row) {
                continue;
            }
            degree += 1;
            let matched = self.sides(side).1;
            let need_degree = matched.need_degree_table();
            if insert {
                if forward {
                    builder.with_match_on_insert(row, jr);
                }
                if need_degree {
                    matched.ht.inc_degree(jr)?;
                }
            } else {
                if need_degree {
                    matched.ht.dec_degree(jr)?;
                }
                if forward {
                    builder.with_match_on_delete(row, jr);
                }
            }
        }
        Ok(degree)
    }
}

impl Execute for HashJoinExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        self.core.identity()
    }
}
