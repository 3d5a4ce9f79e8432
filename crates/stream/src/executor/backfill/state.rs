//! Backfill progress per vnode (RisingWave's `BackfillState`, reference §5.2, §5.5): what the executor
//! believes is persisted (`committed`) and where it is now (`current`).

use std::collections::BTreeMap;
use std::sync::Arc;

use epochlab_common::{Bitmap, OwnedRow, ScalarImpl, VirtualNode, memcmp};
use epochlab_state_table::StateTable;

use crate::executor::{StreamExecutorError, StreamExecutorResult};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackfillProgressPerVnode {
    NotStarted,
    InProgress {
        current_pos: OwnedRow,
        snapshot_row_count: u64,
    },
    /// `current_pos` is `None` for a vnode whose snapshot had no rows.
    Completed {
        current_pos: Option<OwnedRow>,
        snapshot_row_count: u64,
    },
}

impl BackfillProgressPerVnode {
    pub fn row_count(&self) -> u64 {
        match self {
            Self::NotStarted => 0,
            Self::InProgress {
                snapshot_row_count, ..
            }
            | Self::Completed {
                snapshot_row_count, ..
            } => *snapshot_row_count,
        }
    }

    pub fn is_completed(&self) -> bool {
        matches!(self, Self::Completed { .. })
    }

    pub fn position(&self) -> Option<&OwnedRow> {
        match self {
            Self::NotStarted => None,
            Self::InProgress { current_pos, .. } => Some(current_pos),
            Self::Completed { current_pos, .. } => current_pos.as_ref(),
        }
    }

    /// The progress row `(vnode, pos..., is_finished, row_count)`, or `None` before any progress.
    pub fn encode(&self, vnode: VirtualNode, pk_len: usize) -> Option<OwnedRow> {
        let (pos, finished, count) = match self {
            Self::NotStarted => return None,
            Self::InProgress {
                current_pos,
                snapshot_row_count,
            } => (Some(current_pos), false, *snapshot_row_count),
            Self::Completed {
                current_pos,
                snapshot_row_count,
            } => (current_pos.as_ref(), true, *snapshot_row_count),
        };
        let mut datums = vec![Some(vnode.to_scalar())];
        match pos {
            Some(p) => datums.extend(p.datums().iter().cloned()),
            None => datums.extend(std::iter::repeat_n(None, pk_len)),
        }
        datums.push(Some(ScalarImpl::Bool(finished)));
        datums.push(Some(ScalarImpl::Int64(count as i64)));
        Some(OwnedRow::new(datums))
    }

    /// Decode a stored progress row (decoding from the back: row count, finished flag, then the position).
    pub fn decode(row: &OwnedRow, pk_len: usize) -> StreamExecutorResult<Self> {
        let bad =
            || StreamExecutorError::Internal(format!("malformed backfill progress row {row:?}"));
        if row.len() != pk_len + 3 {
            return Err(bad());
        }
        let count = row[pk_len + 2]
            .as_ref()
            .and_then(ScalarImpl::as_int64)
            .ok_or_else(bad)? as u64;
        let finished = row[pk_len + 1]
            .as_ref()
            .and_then(ScalarImpl::as_bool)
            .ok_or_else(bad)?;
        let pos = OwnedRow::new(row.datums()[1..=pk_len].to_vec());
        let pos_is_null = pos.datums().iter().all(Option::is_none);
        Ok(if finished {
            Self::Completed {
                current_pos: (!pos_is_null).then_some(pos),
                snapshot_row_count: count,
            }
        } else {
            Self::InProgress {
                current_pos: pos,
                snapshot_row_count: count,
            }
        })
    }
}

/// `none`, `at [Some(Int64(7))] (3 rows)` or `done (5 rows)`: a vnode's progress in one short phrase.
impl std::fmt::Display for BackfillProgressPerVnode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotStarted => f.write_str("none"),
            Self::InProgress {
                current_pos,
                snapshot_row_count,
            } => write!(f, "at {current_pos:?} ({snapshot_row_count} rows)"),
            Self::Completed {
                snapshot_row_count, ..
            } => write!(f, "done ({snapshot_row_count} rows)"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct BackfillStatePerVnode {
    pub committed: BackfillProgressPerVnode,
    pub current: BackfillProgressPerVnode,
}

#[derive(Clone, Debug)]
pub struct BackfillState {
    per_vnode: BTreeMap<VirtualNode, BackfillStatePerVnode>,
}

impl BackfillState {
    /// Read each owned vnode's progress row; a missing row means `NotStarted`.
    pub fn load(
        state_table: &StateTable,
        vnodes: &Arc<Bitmap>,
        pk_len: usize,
    ) -> StreamExecutorResult<Self> {
        let mut per_vnode = BTreeMap::new();
        for v in vnodes.iter_ones() {
            let vnode = VirtualNode::from_index(v);
            let progress = Self::read(state_table, vnode, pk_len)?;
            per_vnode.insert(
                vnode,
                BackfillStatePerVnode {
                    committed: progress.clone(),
                    current: progress,
                },
            );
        }
        Ok(Self { per_vnode })
    }

    /// A new vnode bitmap (a reschedule): vnodes outside `vnodes` leave; each one gained takes the progress
    /// its row in `state_table` holds now (the table must own `vnodes` already). Returns the gained vnodes with
    /// the progress read.
    pub fn update_vnodes(
        &mut self,
        state_table: &StateTable,
        vnodes: &Arc<Bitmap>,
        pk_len: usize,
    ) -> StreamExecutorResult<Vec<(VirtualNode, BackfillProgressPerVnode)>> {
        self.per_vnode.retain(|v, _| vnodes.is_set(v.to_index()));
        let mut gained = Vec::new();
        for v in vnodes.iter_ones() {
            let vnode = VirtualNode::from_index(v);
            if self.per_vnode.contains_key(&vnode) {
                continue;
            }
            let progress = Self::read(state_table, vnode, pk_len)?;
            gained.push((vnode, progress.clone()));
            self.per_vnode.insert(
                vnode,
                BackfillStatePerVnode {
                    committed: progress.clone(),
                    current: progress,
                },
            );
        }
        Ok(gained)
    }

    /// The progress `state_table` holds for `vnode` at its epoch; no row is `NotStarted`.
    fn read(
        state_table: &StateTable,
        vnode: VirtualNode,
        pk_len: usize,
    ) -> StreamExecutorResult<BackfillProgressPerVnode> {
        Ok(
            match state_table.get_row(&OwnedRow::new(vec![Some(vnode.to_scalar())]))? {
                Some(row) => BackfillProgressPerVnode::decode(&row, pk_len)?,
                None => BackfillProgressPerVnode::NotStarted,
            },
        )
    }

    pub fn vnodes(&self) -> impl Iterator<Item = (VirtualNode, &BackfillStatePerVnode)> {
        self.per_vnode.iter().map(|(v, s)| (*v, s))
    }

    pub fn get_progress(
        &self,
        vnode: VirtualNode,
    ) -> StreamExecutorResult<&BackfillProgressPerVnode> {
        self.per_vnode
            .get(&vnode)
            .map(|s| &s.current)
            .ok_or(StreamExecutorError::ProgressNotFound { vnode })
    }

    pub fn has_progress(&self) -> bool {
        self.per_vnode
            .values()
            .any(|s| s.current != BackfillProgressPerVnode::NotStarted)
    }

    pub fn is_completely_finished(&self) -> bool {
        self.per_vnode
            .values()
            .all(|s| matches!(s.current, BackfillProgressPerVnode::Completed { .. }))
    }

    pub fn total_rows(&self) -> u64 {
        self.per_vnode.values().map(|s| s.current.row_count()).sum()
    }

    /// Move `vnode`'s position to `pos` after `rows` more snapshot rows. Positions only move forward.
    pub fn update_pos(
        &mut self,
        vnode: VirtualNode,
        pos: OwnedRow,
        rows: u64,
        orders: &[epochlab_common::OrderType],
    ) -> StreamExecutorResult<()> {
        let s = self.per_vnode.get_mut(&vnode).ok_or_else(|| {
            StreamExecutorError::Internal(format!("vnode {vnode:?} is not owned by this backfill"))
        })?;
        let (old_pos, count) = match &s.current {
            BackfillProgressPerVnode::NotStarted => (None, 0),
            BackfillProgressPerVnode::InProgress {
                current_pos,
                snapshot_row_count,
            } => (Some(current_pos), *snapshot_row_count),
            BackfillProgressPerVnode::Completed { .. } => {
                return Err(StreamExecutorError::Internal(format!(
                    "snapshot row for vnode {vnode:?}, which has completed"
                )));
            }
        };
        if let Some(old) = old_pos
            && memcmp::cmp_rows(&pos, old, orders) != std::cmp::Ordering::Greater
        {
            return Err(StreamExecutorError::Internal(format!(
                "backfill position of vnode {vnode:?} went backwards: {old:?} -> {pos:?}"
            )));
        }
        s.current = BackfillProgressPerVnode::InProgress {
            current_pos: pos,
            snapshot_row_count: count + rows,
        };
        Ok(())
    }

    /// The snapshot is fully read: every vnode is completed at its current position.
    pub fn finish_all(&mut self) {
        for s in self.per_vnode.values_mut() {
            s.current = BackfillProgressPerVnode::Completed {
                current_pos: s.current.position().cloned(),
                snapshot_row_count: s.current.row_count(),
            };
        }
    }

    /// Whether `vnode`'s progress must be written: it moved since the last persist.
    pub fn need_commit(&self, vnode: VirtualNode) -> bool {
        let s = &self.per_vnode[&vnode];
        s.current != s.committed && s.current != BackfillProgressPerVnode::NotStarted
    }

    /// The rows to write for `vnode`: the old (as committed) and the new.
    pub fn get_commit_state(
        &self,
        vnode: VirtualNode,
        pk_len: usize,
    ) -> (Option<OwnedRow>, OwnedRow) {
        let s = &self.per_vnode[&vnode];
        let new = s
            .current
            .encode(vnode, pk_len)
            .expect("need_commit excludes NotStarted");
        (s.committed.encode(vnode, pk_len), new)
    }

    /// The in-memory copy now matches what was written. Optimistic: it does not wait for the epoch to commit.
    pub fn mark_committed(&mut self, vnode: VirtualNode) {
        let s = self.per_vnode.get_mut(&vnode).expect("owned vnode");
        s.committed = s.current.clone();
    }
}

#[cfg(test)]
mod tests {
    use epochlab_common::row;

    use super::*;

    #[test]
    fn progress_rows_round_trip() {
        let v = VirtualNode::from_index(3);
        for p in [
            BackfillProgressPerVnode::InProgress {
                current_pos: row![42i64],
                snapshot_row_count: 7,
            },
            BackfillProgressPerVnode::Completed {
                current_pos: Some(row![42i64]),
                snapshot_row_count: 7,
            },
            BackfillProgressPerVnode::Completed {
                current_pos: None,
                snapshot_row_count: 0,
            },
        ] {
            let r = p.encode(v, 1).unwrap();
            assert_eq!(r[0], Some(ScalarImpl::Int16(3)));
            assert_eq!(BackfillProgressPerVnode::decode(&r, 1).unwrap(), p);
        }
        assert!(BackfillProgressPerVnode::NotStarted.encode(v, 1).is_none());
    }
}
