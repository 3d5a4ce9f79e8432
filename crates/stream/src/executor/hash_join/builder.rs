//! What a hash join emits for one row of one side (RisingWave's `JoinChunkBuilder` and the join-type
//! predicates of its `join` module): joined rows, NULL-padded rows of outer sides as their degree moves
//! between 0 and 1, and for semi/anti joins the rows of their side as their degree moves between 0 and 1.

use epochlab_common::plan::JoinType;
use epochlab_common::{Op, OwnedRow, StreamChunk};

use super::join_hash_map::JoinRow;

/// The side a chunk came in on (RisingWave's `SideType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SideType {
    Left,
    Right,
}

/// The side's rows are kept in the output even without a match (NULL-padded).
pub fn is_outer_side(t: JoinType, side: SideType) -> bool {
    t == JoinType::FullOuter
        || (t == JoinType::LeftOuter && side == SideType::Left)
        || (t == JoinType::RightOuter && side == SideType::Right)
}

/// The other side of `side` is an outer side: its rows are NULL-padded while `side` has none matching.
pub fn outer_side_null(t: JoinType, side: SideType) -> bool {
    t == JoinType::FullOuter
        || (t == JoinType::LeftOuter && side == SideType::Right)
        || (t == JoinType::RightOuter && side == SideType::Left)
}

/// A semi/anti join whose output side is `side`: a row of it is emitted once, by its own degree.
pub fn forward_exactly_once(t: JoinType, side: SideType) -> bool {
    match side {
        SideType::Left => matches!(t, JoinType::LeftSemi | JoinType::LeftAnti),
        SideType::Right => matches!(t, JoinType::RightSemi | JoinType::RightAnti),
    }
}

/// A semi/anti join whose output side is the other side of `side`.
pub fn only_forward_matched_side(t: JoinType, side: SideType) -> bool {
    match side {
        SideType::Left => matches!(t, JoinType::RightSemi | JoinType::RightAnti),
        SideType::Right => matches!(t, JoinType::LeftSemi | JoinType::LeftAnti),
    }
}

pub fn is_semi(t: JoinType) -> bool {
    matches!(t, JoinType::LeftSemi | JoinType::RightSemi)
}

pub fn is_anti(t: JoinType) -> bool {
    matches!(t, JoinType::LeftAnti | JoinType::RightAnti)
}

/// The output rows of one input chunk of one side.
pub struct JoinChunkBuilder<'a> {
    join_type: JoinType,
    side: SideType,
    output_indices: &'a [usize],
    left_width: usize,
    rows: Vec<(Op, OwnedRow)>,
}

impl<'a> JoinChunkBuilder<'a> {
    pub fn new(
        join_type: JoinType,
        side: SideType,
        output_indices: &'a [usize],
        left_width: usize,
    ) -> Self {
        Self {
            join_type,
            side,
            output_indices,
            left_width,
            rows: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The output row of a left and a right row (either absent: NULLs). A semi/anti join outputs its side's
    /// columns only.
    fn output(&self, left: Option<&OwnedRow>, right: Option<&OwnedRow>) -> OwnedRow {
        let at = |r: Option<&OwnedRow>, i: usize| r.and_then(|r| r[i].clone());
        let lw = self.left_width;
        let datums = self.output_indices.iter().map(|&i| match self.join_type {
            JoinType::LeftSemi | JoinType::LeftAnti => at(left, i),
            JoinType::RightSemi | JoinType::RightAnti => at(right, i),
            _ if i < lw => at(left, i),
            _ => at(right, i - lw),
        });
        OwnedRow::new(datums.collect())
    }

    /// Emit the row of the updated side joined with a matched row.
    fn append_row(&mut self, op: Op, row: &OwnedRow, matched: &OwnedRow) {
        let out = match self.side {
            SideType::Left => self.output(Some(row), Some(matched)),
            SideType::Right => self.output(Some(matched), Some(row)),
        };
        self.rows.push((op, out));
    }

    /// Emit a matched row alone (NULL-padded, or as a semi/anti join's output).
    fn append_row_matched(&mut self, op: Op, matched: &OwnedRow) {
        let out = match self.side {
            SideType::Left => self.output(None, Some(matched)),
            SideType::Right => self.output(Some(matched), None),
        };
        self.rows.push((op, out));
    }

    /// Emit the updated side's row alone.
    fn append_row_update(&mut self, op: Op, row: &OwnedRow) {
        let out = match self.side {
            SideType::Left => self.output(Some(row), None),
            SideType::Right => self.output(None, Some(row)),
        };
        self.rows.push((op, out));
    }

    /// `row` was inserted and matches `matched` (whose degree is not yet counted up).
    pub fn with_match_on_insert(&mut self, row: &OwnedRow, matched: &JoinRow) {
        let (t, side) = (self.join_type, self.side);
        if is_anti(t) || is_semi(t) {
            if matched.is_zero_degree() && only_forward_matched_side(t, side) {
                let op = if is_anti(t) { Op::Delete } else { Op::Insert };
                self.append_row_matched(op, &matched.row);
            }
        } else if matched.is_zero_degree() && outer_side_null(t, side) {
            // The matched row's NULL-padded output becomes the joined row.
            self.append_row_matched(Op::UpdateDelete, &matched.row);
            self.append_row(Op::UpdateInsert, row, &matched.row);
        } else {
            self.append_row(Op::Insert, row, &matched.row);
        }
    }

    /// `row` was deleted and matched `matched` (whose degree is already counted down).
    pub fn with_match_on_delete(&mut self, row: &OwnedRow, matched: &JoinRow) {
        let (t, side) = (self.join_type, self.side);
        if is_anti(t) || is_semi(t) {
            if matched.is_zero_degree() && only_forward_matched_side(t, side) {
                let op = if is_anti(t) { Op::Insert } else { Op::Delete };
                self.append_row_matched(op, &matched.row);
            }
        } else if matched.is_zero_degree() && outer_side_null(t, side) {
            // The joined row goes back to the matched row's NULL-padded output.
            self.append_row(Op::UpdateDelete, row, &matched.row);
            self.append_row_matched(Op::UpdateInsert, &matched.row);
        } else {
            // A plain delete even for an update's old row: an update's new row may join differently.
            self.append_row(Op::Delete, row, &matched.row);
        }
    }

    /// A semi join's own row that has a match (`op`: its insert or delete).
    pub fn forward_exactly_once_if_matched(&mut self, op: Op, row: &OwnedRow) {
        if is_semi(self.join_type) && forward_exactly_once(self.join_type, self.side) {
            self.append_row_update(op, row);
        }
    }

    /// A row that matches nothing: an outer side's NULL-padded row, or an anti join's own row.
    pub fn forward_if_not_matched(&mut self, op: Op, row: &OwnedRow) {
        let (t, side) = (self.join_type, self.side);
        if (is_anti(t) && forward_exactly_once(t, side)) || is_outer_side(t, side) {
            self.append_row_update(op, row);
        }
    }

    /// The rows so far as a chunk (`None` if there are none).
    pub fn take(&mut self) -> Option<StreamChunk> {
        if self.rows.is_empty() {
            return None;
        }
        Some(StreamChunk::from_pairs(std::mem::take(&mut self.rows)))
    }
}
