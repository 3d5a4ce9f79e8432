//! Stream chunks: a batch of rows, each with an op, and a visibility bitmap (invisible rows are skipped by
//! every consumer; backfill hides upstream rows that its snapshot will deliver later).

use crate::bitmap::Bitmap;
use crate::row::OwnedRow;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Insert,
    Delete,
    UpdateDelete,
    UpdateInsert,
}

impl Op {
    /// Insert-like ops add the row; delete-like ops remove it.
    pub fn is_insert(self) -> bool {
        matches!(self, Op::Insert | Op::UpdateInsert)
    }

    /// The op as a plain insert or delete, for outputs that do not keep update pairs together.
    pub fn normalize(self) -> Op {
        if self.is_insert() {
            Op::Insert
        } else {
            Op::Delete
        }
    }
}

#[derive(Clone, PartialEq, Eq)]
pub struct StreamChunk {
    ops: Vec<Op>,
    rows: Vec<OwnedRow>,
    visibility: Bitmap,
}

impl StreamChunk {
    pub fn new(ops: Vec<Op>, rows: Vec<OwnedRow>) -> Self {
        assert_eq!(ops.len(), rows.len(), "one op per row");
        let visibility = Bitmap::ones(rows.len());
        Self {
            ops,
            rows,
            visibility,
        }
    }

    pub fn from_pairs(pairs: impl IntoIterator<Item = (Op, OwnedRow)>) -> Self {
        let (ops, rows) = pairs.into_iter().unzip();
        Self::new(ops, rows)
    }

    pub fn with_visibility(mut self, visibility: Bitmap) -> Self {
        assert_eq!(
            visibility.len(),
            self.rows.len(),
            "one visibility bit per row"
        );
        self.visibility = visibility;
        self
    }

    /// Rows including invisible ones.
    pub fn capacity(&self) -> usize {
        self.rows.len()
    }

    /// Visible rows.
    pub fn cardinality(&self) -> usize {
        self.visibility.count_ones()
    }

    pub fn is_empty(&self) -> bool {
        self.cardinality() == 0
    }

    pub fn visibility(&self) -> &Bitmap {
        &self.visibility
    }

    /// Every row, visible or not, with its op: `(index, op, row)`.
    pub fn rows_with_holes(&self) -> impl Iterator<Item = (usize, Op, &OwnedRow)> {
        self.ops
            .iter()
            .zip(&self.rows)
            .enumerate()
            .map(|(i, (op, row))| (i, *op, row))
    }

    /// Visible rows with their ops.
    pub fn rows(&self) -> impl Iterator<Item = (Op, &OwnedRow)> {
        self.rows_with_holes()
            .filter(|(i, _, _)| self.visibility.is_set(*i))
            .map(|(_, op, row)| (op, row))
    }

    /// Drop invisible rows.
    pub fn compact(self) -> Self {
        if self.visibility.all() {
            return self;
        }
        let vis = self.visibility;
        Self::from_pairs(
            self.ops
                .into_iter()
                .zip(self.rows)
                .enumerate()
                .filter(|(i, _)| vis.is_set(*i))
                .map(|(_, p)| p),
        )
    }

    /// Keep the columns at `indices` of every row.
    pub fn project(&self, indices: &[usize]) -> Self {
        Self {
            ops: self.ops.clone(),
            rows: self.rows.iter().map(|r| r.project(indices)).collect(),
            visibility: self.visibility.clone(),
        }
    }
}

impl std::fmt::Debug for StreamChunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "StreamChunk({} rows, {} visible)",
            self.capacity(),
            self.cardinality()
        )
    }
}

/// Collects rows into chunks of at most `capacity` rows.
#[derive(Debug)]
pub struct StreamChunkBuilder {
    capacity: usize,
    ops: Vec<Op>,
    rows: Vec<OwnedRow>,
}

impl StreamChunkBuilder {
    pub fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "a chunk builder needs room for one row");
        Self {
            capacity,
            ops: Vec::with_capacity(capacity),
            rows: Vec::with_capacity(capacity),
        }
    }

    /// Append a row; returns a full chunk when the builder reaches its capacity, but never between an
    /// `UpdateDelete` and its `UpdateInsert` (RisingWave's builder: such a chunk holds one row more).
    pub fn append(&mut self, op: Op, row: OwnedRow) -> Option<StreamChunk> {
        self.ops.push(op);
        self.rows.push(row);
        let full = self.rows.len() >= self.capacity && op != Op::UpdateDelete;
        full.then(|| self.take().unwrap())
    }

    /// The rows so far as a chunk, or `None` when empty.
    pub fn take(&mut self) -> Option<StreamChunk> {
        if self.rows.is_empty() {
            return None;
        }
        let ops = std::mem::replace(&mut self.ops, Vec::with_capacity(self.capacity));
        let rows = std::mem::replace(&mut self.rows, Vec::with_capacity(self.capacity));
        Some(StreamChunk::new(ops, rows))
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_builder_keeps_an_update_pair_in_one_chunk() {
        let mut b = StreamChunkBuilder::new(2);
        assert!(b.append(Op::Insert, OwnedRow::empty()).is_none());
        assert!(b.append(Op::UpdateDelete, OwnedRow::empty()).is_none());
        let chunk = b.append(Op::UpdateInsert, OwnedRow::empty()).expect("full");
        assert_eq!(chunk.cardinality(), 3);
        assert!(b.is_empty());
    }
    use crate::row;

    #[test]
    fn visibility_and_compact() {
        let c = StreamChunk::from_pairs([
            (Op::Insert, row![1i64]),
            (Op::Delete, row![2i64]),
            (Op::UpdateInsert, row![3i64]),
        ])
        .with_visibility(Bitmap::from_bools(&[true, false, true]));
        assert_eq!(c.cardinality(), 2);
        assert_eq!(c.capacity(), 3);
        let c = c.compact();
        let got: Vec<_> = c.rows().map(|(op, r)| (op, r.clone())).collect();
        assert_eq!(
            got,
            vec![(Op::Insert, row![1i64]), (Op::UpdateInsert, row![3i64])]
        );
    }

    #[test]
    fn builder_emits_full_chunks() {
        let mut b = StreamChunkBuilder::new(2);
        assert!(b.append(Op::Insert, row![1i64]).is_none());
        assert_eq!(b.append(Op::Insert, row![2i64]).unwrap().cardinality(), 2);
        assert!(b.take().is_none());
    }
}
