//! The per-vnode snapshot read of the replicated upstream table, and the token bucket that limits it.

use std::collections::VecDeque;
use std::ops::Bound;

use epochlab_common::{OwnedRow, VirtualNode};
use epochlab_state_table::{StateTable, StateTableResult};

use super::state::{BackfillProgressPerVnode, BackfillState};
use crate::executor::StreamExecutorResult;

type RowIter = Box<dyn Iterator<Item = StateTableResult<OwnedRow>> + Send>;

/// Rows of every owned, unfinished vnode after its position, as of the replicated table's epoch, taken one
/// vnode after another in turn (RisingWave merges the per-vnode iterators with `select_all`, which is
/// round-robin when all are ready).
pub struct SnapshotReader {
    iters: VecDeque<(VirtualNode, RowIter)>,
}

impl SnapshotReader {
    pub fn new(upstream_table: &StateTable, state: &BackfillState) -> StreamExecutorResult<Self> {
        let mut iters = VecDeque::new();
        for (vnode, s) in state.vnodes() {
            let start = match &s.current {
                BackfillProgressPerVnode::Completed { .. } => continue,
                BackfillProgressPerVnode::NotStarted => Bound::Unbounded,
                BackfillProgressPerVnode::InProgress { current_pos, .. } => {
                    Bound::Excluded(current_pos.clone())
                }
            };
            let it = upstream_table.iter_with_vnode(vnode, (start, Bound::Unbounded))?;
            iters.push_back((vnode, Box::new(it) as RowIter));
        }
        Ok(Self { iters })
    }

    /// The next row, or `None` when every vnode is exhausted.
    pub fn next_row(&mut self) -> StreamExecutorResult<Option<(VirtualNode, OwnedRow)>> {
        Ok(self
            .next_batch(1)?
            .map(|(vnode, mut rows)| (vnode, rows.pop().expect("a batch has a row"))))
    }

    /// Up to `max` rows of the next vnode in turn, or `None` when every vnode is exhausted. With `max == 1`
    /// the vnodes take turns row by row.
    pub fn next_batch(
        &mut self,
        max: usize,
    ) -> StreamExecutorResult<Option<(VirtualNode, Vec<OwnedRow>)>> {
        while let Some((vnode, mut it)) = self.iters.pop_front() {
            let mut rows = Vec::with_capacity(max.min(256));
            for row in it.by_ref() {
                rows.push(row?);
                if rows.len() == max {
                    break;
                }
            }
            if rows.is_empty() {
                continue;
            }
            if rows.len() == max {
                self.iters.push_back((vnode, it));
            }
            return Ok(Some((vnode, rows)));
        }
        Ok(None)
    }
}
