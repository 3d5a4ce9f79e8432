//! Shared helpers for the integration tests under `tests/tests/`: a DML workload generator and its oracle, and
//! a real Prometheus to scrape runs with ([`prometheus`]), and the executors' recovery tests' cluster and
//! judgement ([`recovery`]).

pub mod prometheus;
pub mod recovery;

use std::collections::BTreeMap;

use epochlab_common::{DataType, Op, OwnedRow, SimRng, row};

/// The schema the workloads use: `(id BIGINT PRIMARY KEY, v BIGINT, s VARCHAR)`.
pub fn schema() -> (Vec<DataType>, Vec<usize>) {
    (
        vec![DataType::Int64, DataType::Int64, DataType::Varchar],
        vec![0],
    )
}

/// The expected contents of a table, fed the same DML as the cluster and never read back from it.
#[derive(Default, Clone, Debug)]
pub struct Oracle {
    rows: BTreeMap<i64, OwnedRow>,
    /// Every key a generated batch deleted.
    deleted: std::collections::BTreeSet<i64>,
}

impl Oracle {
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// How many of `keys` a generated batch ever deleted (a snapshot read after the delete cannot see them).
    pub fn deleted_among(&self, keys: std::ops::Range<i64>) -> usize {
        self.deleted.range(keys).count()
    }

    /// Take the table's rows as they are (after a kill lost uncommitted DML): `k` in column 0.
    pub fn resync(&mut self, rows: &[OwnedRow]) {
        self.rows = rows
            .iter()
            .map(|r| match r.datum_at(0) {
                Some(epochlab_common::ScalarImpl::Int64(k)) => (*k, r.clone()),
                d => panic!("a row keyed by an integer, got {d:?}"),
            })
            .collect();
    }

    /// The rows in pk order.
    pub fn rows(&self) -> Vec<OwnedRow> {
        self.rows.values().cloned().collect()
    }

    /// Rows sorted the way storage returns them is by vnode; compare as sorted sets.
    pub fn sorted(rows: &[OwnedRow]) -> Vec<OwnedRow> {
        let mut v = rows.to_vec();
        v.sort_by_key(|r| match r.datum_at(0) {
            Some(epochlab_common::ScalarImpl::Int64(k)) => *k,
            _ => i64::MIN,
        });
        v
    }

    /// A batch of `n` consistent changes over keys `0..key_space`: inserts of absent keys, updates and deletes
    /// of present ones.
    pub fn gen_batch(&mut self, rng: &SimRng, n: usize, key_space: i64) -> Vec<(Op, OwnedRow)> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let k = rng.range_u64(0..key_space as u64) as i64;
            let v = rng.range_u64(0..1_000_000) as i64;
            let new = row![k, v, format!("s{v}").as_str()];
            match self.rows.get(&k).cloned() {
                None => {
                    out.push((Op::Insert, new.clone()));
                    self.rows.insert(k, new);
                }
                Some(old) if rng.bool(0.7) => {
                    out.push((Op::UpdateDelete, old));
                    out.push((Op::UpdateInsert, new.clone()));
                    self.rows.insert(k, new);
                }
                Some(old) => {
                    out.push((Op::Delete, old));
                    self.rows.remove(&k);
                    self.deleted.insert(k);
                }
            }
        }
        out
    }

    /// `n` inserts of fresh keys starting at `start`.
    pub fn gen_inserts(&mut self, start: i64, n: usize) -> Vec<(Op, OwnedRow)> {
        (start..start + n as i64)
            .map(|k| {
                let r = row![k, k * 10, format!("s{k}").as_str()];
                self.rows.insert(k, r.clone());
                (Op::Insert, r)
            })
            .collect()
    }
}

pub use epochlab_sim::{CommitCheckError, check_commits};
