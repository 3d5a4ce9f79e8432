use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use epochlab_common::types::cmp_scalar;
use epochlab_common::{
    ActorId, Bitmap, Datum, ExprType, Op, OwnedRow, ScalarImpl, StreamChunk, StreamChunkBuilder,
    VirtualNode,
};
use epochlab_state_table::StateTable;
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::barrier_align::{AlignedMessage, barrier_align, expect_first_aligned};
use super::stats::ExecutorStatsHandle;
use super::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, StreamExecutorResult,
};

/// The comparison of a dynamic filter: `left[key] <op> right`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparator {
    GreaterThan,
    GreaterThanOrEqual,
    LessThan,
    LessThanOrEqual,
}

impl Comparator {
    /// The comparator of an expression type; the others are not a dynamic filter's.
    pub fn from_expr_type(t: ExprType) -> Option<Self> {
        Some(match t {
            ExprType::GreaterThan => Comparator::GreaterThan,
            ExprType::GreaterThanOrEqual => Comparator::GreaterThanOrEqual,
            ExprType::LessThan => Comparator::LessThan,
            ExprType::LessThanOrEqual => Comparator::LessThanOrEqual,
            _ => return None,
        })
    }

    /// Whether `left <op> right` holds for an order of `left` against `right`.
    fn holds(self, o: Ordering) -> bool {
        match self {
            Comparator::GreaterThan => o.is_gt(),
            Comparator::GreaterThanOrEqual => o.is_ge(),
            Comparator::LessThan => o.is_lt(),
            Comparator::LessThanOrEqual => o.is_le(),
        }
    }

    /// Whether a larger right value lets fewer left rows pass.
    fn is_lower_bound(self) -> bool {
        matches!(
            self,
            Comparator::GreaterThan | Comparator::GreaterThanOrEqual
        )
    }

    /// Whether the right value itself passes (the bound is inclusive).
    fn inclusive(self) -> bool {
        matches!(
            self,
            Comparator::GreaterThanOrEqual | Comparator::LessThanOrEqual
        )
    }
}

/// Whether a left key passes against right value `right` (a NULL on either side never does).
pub(super) fn passes(cmp: Comparator, key: &Datum, right: &Datum) -> bool {
    match (key, right) {
        (Some(k), Some(r)) => cmp_scalar(k, r).is_some_and(|o| cmp.holds(o)),
        _ => false,
    }
}

pub(super) type KeyRange = (Bound<ScalarImpl>, Bound<ScalarImpl>);

/// The left keys whose verdict changes when the right value moves from `prev` to `curr` (which differ),
/// and whether they now pass (to be inserted) or no longer pass (to be deleted).
pub(super) fn changed_range(cmp: Comparator, prev: &Datum, curr: &Datum) -> (KeyRange, bool) {
    use Bound::{Excluded, Included, Unbounded};
    let passing = |c: &ScalarImpl| -> KeyRange {
        let b = if cmp.inclusive() {
            Included(c.clone())
        } else {
            Excluded(c.clone())
        };
        if cmp.is_lower_bound() {
            (b, Unbounded)
        } else {
            (Unbounded, b)
        }
    };
    match (prev, curr) {
        (None, Some(c)) => (passing(c), true),
        (Some(p), None) => (passing(p), false),
        (Some(p), Some(c)) => {
            let c_lower = cmp_scalar(c, p).is_some_and(|o| o.is_lt());
            let (lo, hi) = if c_lower { (c, p) } else { (p, c) };
            // Between the two values; the end that passes under the lower-bound comparator is
            // excluded from below, included above (and the reverse for >=, <).
            let range = match cmp {
                Comparator::GreaterThan | Comparator::LessThanOrEqual => {
                    (Excluded(lo.clone()), Included(hi.clone()))
                }
                Comparator::GreaterThanOrEqual | Comparator::LessThan => {
                    (Included(lo.clone()), Excluded(hi.clone()))
                }
            };
            // A lower bound that goes down lets rows in; an upper bound must go up to.
            (range, c_lower == cmp.is_lower_bound())
        }
        (None, None) => unreachable!("the right value did not change"),
    }
}

/// The plan of a dynamic filter: its inputs, the comparison, its tables.
pub struct DynamicFilterArgs {
    pub actor_id: ActorId,
    pub left: BoxedExecutor,
    pub right: BoxedExecutor,
    /// The left column compared with the right value.
    pub key: usize,
    pub comparator: Comparator,
    /// Every left row with a non-NULL key (pk = the key, then the left stream key), over the actor's vnodes.
    pub left_table: StateTable,
    /// The right row (one row, empty pk), opened over vnode 0 only: every actor reads it, the owner of
    /// vnode 0 of the left writes it.
    pub right_table: StateTable,
    pub chunk_size: usize,
    pub stats: ExecutorStatsHandle,
}

/// `left[key] <op> right` where the right input is one row that changes (RisingWave's
/// `DynamicFilterExecutor`): `v > (SELECT max(..) FROM ..)`, and over `Now` a temporal filter. A left row
/// passes against the right value of the epoch before its own (the value as of the last barrier); when
/// the right value moves, at the barrier, the left rows whose verdict changes are range-scanned from the
/// left table and emitted as inserts or deletes. Both tables commit on every barrier; a rebuilt actor
/// starts from the committed right row. A watermark of the right side (`now()`'s) cleans the left table
/// below it, lazily, when a higher right value lets fewer rows pass (`>`, `>=`: a row below it never passes
/// again), and goes downstream on the key column at the barrier; a left change of a row the table cleaned is
/// not written (RisingWave #17816: its delete would find no row).
pub struct DynamicFilterExecutor {
    actor_id: ActorId,
    inputs: Option<(BoxedExecutor, BoxedExecutor)>,
    key: usize,
    comparator: Comparator,
    left_table: StateTable,
    right_table: StateTable,
    chunk_size: usize,
    stats: ExecutorStatsHandle,
}

/// The right value as the executor tracks it over an epoch.
#[derive(Default)]
struct RightState {
    /// The value the left rows of this epoch pass against (the committed one).
    prev: Datum,
    /// The row as of the last right change.
    curr_row: Option<OwnedRow>,
    /// The row in the right table.
    committed_row: Option<OwnedRow>,
}

impl RightState {
    fn curr(&self) -> Datum {
        self.curr_row.as_ref().and_then(|r| r.datum_at(0).clone())
    }
}

impl DynamicFilterExecutor {
    pub fn new(args: DynamicFilterArgs) -> Self {
        assert!(args.chunk_size > 0, "a dynamic filter needs a chunk size");
        assert!(
            args.right_table.desc().pk_indices.is_empty(),
            "the right table is one row with an empty pk"
        );
        assert_eq!(
            args.left_table.desc().pk_indices.first(),
            Some(&args.key),
            "the left table's pk starts with the filter's key"
        );
        Self {
            actor_id: args.actor_id,
            inputs: Some((args.left, args.right)),
            key: args.key,
            comparator: args.comparator,
            left_table: args.left_table,
            right_table: args.right_table,
            chunk_size: args.chunk_size,
            stats: args.stats,
        }
    }

    /// The vnode bitmap a right table is opened over: vnode 0 of `vnode_count`.
    pub fn right_vnodes(vnode_count: usize) -> Arc<Bitmap> {
        Arc::new(Bitmap::from_range(vnode_count, 0..1))
    }

    fn name(&self) -> String {
        format!("DynamicFilter(actor {})", self.actor_id)
    }

    /// The committed right row (none for a new job).
    fn recover_right(&self) -> StreamExecutorResult<Option<OwnedRow>> {
        let vnode = VirtualNode::from_index(0);
        let mut rows = self
            .right_table
            .iter_with_vnode(vnode, (Bound::Unbounded, Bound::Unbounded))?;
        let row = rows.next().transpose()?;
        if rows.next().is_some() {
            return Err(StreamExecutorError::Internal(format!(
                "{}: the right table holds more than one row",
                self.name()
            )));
        }
        Ok(row)
    }

    /// Filter a left chunk against `right`, keeping its rows with a non-NULL key in the left table. An
    /// update pair whose halves differ in verdict becomes a lone delete or insert.
    fn apply_left(
        &mut self,
        chunk: &StreamChunk,
        right: &Datum,
    ) -> StreamExecutorResult<Vec<(Op, OwnedRow)>> {
        let mut out = Vec::with_capacity(chunk.cardinality());
        let mut pending: Option<(bool, OwnedRow)> = None;
        for (op, row) in chunk.rows() {
            let key = row.datum_at(self.key);
            let pass = passes(self.comparator, key, right);
            let paired = match pending.take() {
                Some((old_pass, old)) if op == Op::UpdateInsert => {
                    match (old_pass, pass) {
                        (true, true) => {
                            out.push((Op::UpdateDelete, old));
                            out.push((Op::UpdateInsert, row.clone()));
                        }
                        (true, false) => out.push((Op::Delete, old)),
                        (false, true) => out.push((Op::Insert, row.clone())),
                        (false, false) => {}
                    }
                    true
                }
                Some((true, old)) => {
                    out.push((Op::Delete, old));
                    false
                }
                _ => false,
            };
            match op {
                Op::UpdateDelete => pending = Some((pass, row.clone())),
                _ if paired || !pass => {}
                // A lone update half is a plain insert or delete.
                op => out.push((op.normalize(), row.clone())),
            }
            if key.is_some() && !self.left_table.is_cleaned(row)? {
                if op.is_insert() {
                    self.left_table.insert(row)?;
                    self.stats.state_rows_written(1, 0);
                } else {
                    self.left_table.delete(row)?;
                    self.stats.state_rows_written(0, 1);
                }
            }
        }
        if let Some((true, old)) = pending {
            out.push((Op::Delete, old));
        }
        Ok(out)
    }

    /// Take a right chunk: the last insert is the new row; a delete must be of the current row.
    fn apply_right(&self, chunk: &StreamChunk, right: &mut RightState) -> StreamExecutorResult<()> {
        for (op, row) in chunk.rows() {
            if op.is_insert() {
                right.curr_row = Some(row.clone());
            } else if right.curr_row.as_ref().map(|r| r.datum_at(0)) == Some(row.datum_at(0)) {
                right.curr_row = None;
            } else {
                return Err(StreamExecutorError::RightValueMismatch {
                    executor: self.name(),
                    current: format!("{:?}", right.curr()),
                    deleted: format!("{:?}", row.datum_at(0)),
                });
            }
        }
        Ok(())
    }

    /// The left rows whose keys lie in `range`, over the actor's vnodes in order.
    fn scan_left(&self, range: &KeyRange) -> StreamExecutorResult<Vec<OwnedRow>> {
        let bound = |b: &Bound<ScalarImpl>| b.clone().map(|s| OwnedRow::new(vec![Some(s)]));
        let mut out = Vec::new();
        for v in self.left_table.vnodes().iter_ones() {
            let rows = self.left_table.iter_with_vnode(
                VirtualNode::from_index(v),
                (bound(&range.0), bound(&range.1)),
            )?;
            for row in rows {
                out.push(row?);
            }
        }
        Ok(out)
    }

    /// Write the right row if it changed (only the owner of vnode 0 of the left writes it).
    fn write_right(&mut self, right: &mut RightState) -> StreamExecutorResult<()> {
        if right.committed_row == right.curr_row {
            return Ok(());
        }
        if self.left_table.vnodes().is_set(0) {
            match (&right.committed_row, &right.curr_row) {
                (Some(old), Some(new)) => self.right_table.update(old, new)?,
                (Some(old), None) => self.right_table.delete(old)?,
                (None, Some(new)) => self.right_table.insert(new)?,
                (None, None) => {}
            }
        }
        right.committed_row = right.curr_row.clone();
        Ok(())
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let (left, right) = self.inputs.take().expect("inputs taken once");
        let aligned = barrier_align(left.execute(), right.execute(), self.actor_id);
        futures::pin_mut!(aligned);
        let name = self.name();
        let first = expect_first_aligned(&mut aligned, &name).await?;
        self.left_table.init_epoch(first.epoch);
        self.right_table.init_epoch(first.epoch);
        let recovered = self.recover_right()?;
        let mut right = RightState {
            prev: recovered.as_ref().and_then(|r| r.datum_at(0).clone()),
            curr_row: recovered.clone(),
            committed_row: recovered,
        };
        yield Message::Barrier(first);
        let mut builder = StreamChunkBuilder::new(self.chunk_size);
        // The right side's watermark since the last barrier, when it can clean the left table.
        let mut right_watermark: Option<super::Watermark> = None;
        #[for_await]
        for msg in aligned {
            match msg? {
                AlignedMessage::Left(chunk) => {
                    let out = self.apply_left(&chunk, &right.prev)?;
                    for chunk in out.chunks(self.chunk_size) {
                        yield Message::Chunk(StreamChunk::from_pairs(chunk.iter().cloned()));
                    }
                }
                AlignedMessage::Right(chunk) => self.apply_right(&chunk, &mut right)?,
                AlignedMessage::WatermarkLeft(_) => {}
                AlignedMessage::WatermarkRight(w) => {
                    let key_type = &self.left_table.desc().column_types[self.key];
                    if self.comparator.is_lower_bound() && w.data_type == *key_type {
                        right_watermark = Some(w);
                    }
                }
                AlignedMessage::Barrier(barrier) => {
                    let curr = right.curr();
                    if curr != right.prev {
                        let (range, insert) = changed_range(self.comparator, &right.prev, &curr);
                        let op = if insert { Op::Insert } else { Op::Delete };
                        for row in self.scan_left(&range)? {
                            if let Some(c) = builder.append(op, row) {
                                yield Message::Chunk(c);
                            }
                        }
                        if let Some(c) = builder.take() {
                            yield Message::Chunk(c);
                        }
                    }
                    if let Some(w) = right_watermark.take() {
                        self.left_table.update_watermark(Some(w.val.clone()), false);
                        yield Message::Watermark(w.with_idx(self.key));
                    }
                    self.write_right(&mut right)?;
                    self.left_table.commit(barrier.epoch)?;
                    self.right_table.commit(barrier.epoch)?;
                    right.prev = curr;
                    if let Some(vnodes) = barrier.as_update_vnode_bitmap(self.actor_id) {
                        self.left_table.update_vnode_bitmap(vnodes)?;
                    }
                    yield Message::Barrier(barrier);
                }
            }
        }
    }
}

impl Execute for DynamicFilterExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!(
            "DynamicFilter(actor {}, ${} {:?})",
            self.actor_id, self.key, self.comparator
        )
    }
}
