//! The per-vnode snapshot read of the replicated upstream table, and the token bucket that limits it.

use std::collections::VecDeque;
use std::ops::Bound;

use epochlab_common::{Clock, OwnedRow, VirtualNode};
use epochlab_state_table::{StateTable, StateTableResult};
use futures::StreamExt;

use super::arrangement_backfill::{SnapshotBatch, until};
use super::state::{BackfillProgressPerVnode, BackfillState};
use crate::executor::{BoxedMessageStream, Message, StreamExecutorResult};

/// A backfill's snapshot, read a batch at a time: the arrangement backfill's per-vnode reader, the no-shuffle
/// backfill's merged one.
pub(super) trait SnapshotSource {
    /// What one read returns.
    type Rows;
    /// Up to `max` rows, or `None` when the snapshot is exhausted.
    fn next_rows(&mut self, max: usize) -> StreamExecutorResult<Option<Self::Rows>>;
    /// How many rows a read returned.
    fn count(rows: &Self::Rows) -> usize;
}

/// What a backfill's epoch loop takes next.
pub(super) enum Next<T> {
    Upstream(Option<StreamExecutorResult<Message>>),
    Snapshot(StreamExecutorResult<Option<T>>),
}

/// The next upstream message or (while a snapshot is read) up to `batch.rows()` snapshot rows, once `batch`
/// lets the read take place; upstream first, so a barrier preempts a paced read's wait.
pub(super) async fn next_event<S: SnapshotSource>(
    upstream: &mut BoxedMessageStream,
    snapshot: Option<&mut S>,
    batch: &mut SnapshotBatch,
    clock: &Clock,
) -> Next<S::Rows> {
    let Some(s) = snapshot else {
        return Next::Upstream(upstream.next().await);
    };
    let at = batch.next_read_at();
    tokio::select! {
        biased;
        m = upstream.next() => Next::Upstream(m),
        () = until(clock, at) => {
            let read = s.next_rows(batch.rows());
            if let Ok(Some(rows)) = &read {
                batch.read(S::count(rows), clock.elapsed_us());
            }
            Next::Snapshot(read)
        }
    }
}

type RowIter = Box<dyn Iterator<Item = StateTableResult<OwnedRow>> + Send>;

/// Rows of every owned, unfinished vnode after its position, as of the replicated table's epoch, taken one
/// vnode after another in turn (RisingWave merges the per-vnode iterators with `select_all`, which is
/// round-robin when all are ready).
pub struct SnapshotReader {
    iters: VecDeque<(VirtualNode, RowIter)>,
}

impl SnapshotSource for SnapshotReader {
    type Rows = (VirtualNode, Vec<OwnedRow>);

    fn next_rows(&mut self, max: usize) -> StreamExecutorResult<Option<Self::Rows>> {
        self.next_batch(max)
    }

    fn count(rows: &Self::Rows) -> usize {
        rows.1.len()
    }
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
