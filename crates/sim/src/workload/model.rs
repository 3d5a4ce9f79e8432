//! The model of a table's contents that DML streams keep: which keys hold which value for sure.
//!
//! A write is *durable* once an epoch at or above the one the barrier manager had injected when the write
//! returned is committed, with no recovery started in between (a recovery drops uncommitted data; a commit
//! needs every node, so a killed node's writes never commit). Updates and deletes are drawn only from durable
//! keys, so every statement is consistent with the table whatever the faults lost; a key whose fate is
//! unknown (a failed or timed-out write, a recovery before its commit) is never touched again.

use std::collections::BTreeMap;

/// What the model knows about one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyState {
    /// Committed: the value (`None`: deleted).
    Durable(Option<i64>),
    /// Written, not yet known to be committed.
    Pending,
    /// Lost or not: never written again, never checked.
    Unknown,
}

/// Writes that returned, waiting to be known committed.
struct PendingBatch {
    writes: Vec<(i64, Option<i64>)>,
    /// The last injected epoch when the batch returned.
    epoch: u64,
    /// Recoveries started when the batch returned.
    recoveries: u64,
}

#[derive(Default)]
pub struct TableModel {
    next_key: i64,
    keys: BTreeMap<i64, KeyState>,
    pending: Vec<PendingBatch>,
    /// An append-only table's `WATERMARK FOR v AS v - lag`.
    watermark: Option<WatermarkModel>,
}

/// Bounds on what the watermark filters of a table with `WATERMARK FOR v AS v - lag` drop, from the rows as the
/// runner sent them; the filters' own watermarks are never read. A filter's watermark is the largest `v - lag`
/// of the rows it has seen, or after a recovery the largest its table stored, so: it is never above the largest
/// `v - lag` sent by the time a row's batch returned, its own batch's included (a row at or above that is
/// kept: a looser bound than the filter's, which judges a chunk by the rows before it), and after a recovery
/// never below the largest
/// `v - lag` of the rows committed before it (a row below that is dropped).
#[derive(Default)]
pub struct WatermarkModel {
    lag: i64,
    /// The largest `v - lag` of every row whose batch was sent.
    sent_max: Option<i64>,
    /// Each insert that returned with no recovery around it: its `v` and the recoveries started by then.
    inserts: BTreeMap<i64, (i64, u64)>,
}

/// A row a watermark should have dropped, committed: its key, its `v`, and the watermark below it.
#[derive(Debug, PartialEq, Eq)]
pub struct LateRowKept {
    pub key: i64,
    pub v: i64,
    pub watermark: i64,
}

impl TableModel {
    /// The model of an append-only table with `WATERMARK FOR v AS v - lag`.
    pub fn with_watermark(lag: i64) -> Self {
        let watermark = WatermarkModel {
            lag,
            ..WatermarkModel::default()
        };
        Self {
            watermark: Some(watermark),
            ..Self::default()
        }
    }

    /// The table's watermark lag, if it has one.
    pub fn watermark_lag(&self) -> Option<i64> {
        self.watermark.as_ref().map(|w| w.lag)
    }

    /// Whether the table only takes inserts (it has a watermark).
    pub fn append_only(&self) -> bool {
        self.watermark.is_some()
    }

    /// A batch with these inserts' `v` is about to be sent: no watermark can exceed their `v - lag` from now.
    pub fn sending(&mut self, values: impl Iterator<Item = i64>) {
        if let Some(w) = &mut self.watermark {
            let top = values.map(|v| v - w.lag).max();
            w.sent_max = w.sent_max.max(top);
        }
    }

    /// A fresh key for an insert.
    pub fn new_key(&mut self) -> i64 {
        let k = self.next_key;
        self.next_key += 1;
        self.keys.insert(k, KeyState::Pending);
        k
    }

    /// The first durable, present key at or after `from` (wrapping), marked pending for an update or delete.
    pub fn take_durable(&mut self, from: i64) -> Option<(i64, i64)> {
        let hit = |(k, s): (&i64, &KeyState)| match s {
            KeyState::Durable(Some(v)) => Some((*k, *v)),
            _ => None,
        };
        let found = self
            .keys
            .range(from..)
            .find_map(hit)
            .or_else(|| self.keys.range(..from).find_map(hit))?;
        self.keys.insert(found.0, KeyState::Pending);
        Some(found)
    }

    pub fn key_space(&self) -> i64 {
        self.next_key.max(1)
    }

    /// A batch returned: its writes become durable once `epoch` is committed without a recovery. On a table with
    /// a watermark, an insert below the largest `v - lag` sent so far may have been dropped: its fate is unknown.
    pub fn returned(&mut self, mut writes: Vec<(i64, Option<i64>)>, epoch: u64, recoveries: u64) {
        if let Some(w) = &mut self.watermark {
            let bound = w.sent_max;
            for (k, v) in &writes {
                w.inserts.insert(*k, (v.unwrap_or_default(), recoveries));
            }
            let (kept, maybe_dropped): (Vec<_>, Vec<_>) = writes
                .into_iter()
                .partition(|(_, v)| bound.is_none_or(|b| v.is_some_and(|v| v >= b)));
            self.unknown(&maybe_dropped);
            writes = kept;
        }
        self.pending.push(PendingBatch {
            writes,
            epoch,
            recoveries,
        });
    }

    /// A batch failed or timed out: whether it applied is unknown.
    pub fn unknown(&mut self, writes: &[(i64, Option<i64>)]) {
        for (k, _) in writes {
            self.keys.insert(*k, KeyState::Unknown);
        }
    }

    /// Settle pending batches against the max committed epoch and the recoveries started so far.
    pub fn promote(&mut self, max_committed_epoch: u64, recoveries: u64) {
        let keys = &mut self.keys;
        self.pending.retain(|b| {
            let state = if b.recoveries != recoveries {
                |_: Option<i64>| KeyState::Unknown
            } else if max_committed_epoch >= b.epoch {
                KeyState::Durable
            } else {
                return true;
            };
            for (k, v) in &b.writes {
                keys.insert(*k, state(*v));
            }
            false
        });
    }

    /// The durable keys and their values (`None`: deleted).
    pub fn durable(&self) -> impl Iterator<Item = (i64, Option<i64>)> + '_ {
        self.keys.iter().filter_map(|(k, s)| match s {
            KeyState::Durable(v) => Some((*k, *v)),
            _ => None,
        })
    }

    /// The committed rows (key and `v`) that a watermark should have dropped: each sent after a recovery with
    /// its `v` below the largest `v - lag` of the durable rows committed before that recovery.
    pub fn late_rows_kept(&self, committed: &BTreeMap<i64, i64>) -> Vec<LateRowKept> {
        let Some(w) = &self.watermark else {
            return Vec::new();
        };
        // The largest `v - lag` of the durable, committed rows sent before each count of recoveries.
        let mut restored: BTreeMap<u64, i64> = BTreeMap::new();
        for (k, (v, r)) in &w.inserts {
            let durable = matches!(self.keys.get(k), Some(KeyState::Durable(Some(_))));
            if durable && committed.contains_key(k) {
                let top = restored.entry(*r).or_insert(i64::MIN);
                *top = (*top).max(v - w.lag);
            }
        }
        let below = |r: u64| restored.range(..r).map(|(_, m)| *m).max();
        let late = |(k, (v, r)): (&i64, &(i64, u64))| {
            let watermark = below(*r)?;
            (committed.contains_key(k) && *v < watermark).then_some(LateRowKept {
                key: *k,
                v: *v,
                watermark,
            })
        };
        w.inserts.iter().filter_map(late).collect()
    }

    /// Whether the runner ever wrote `key`.
    pub fn knows(&self, key: i64) -> bool {
        self.keys.contains_key(&key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_become_durable_only_when_committed_without_a_recovery() {
        let mut m = TableModel::default();
        let (a, b) = (m.new_key(), m.new_key());
        m.returned(vec![(a, Some(0))], 10, 0);
        m.returned(vec![(b, Some(0))], 20, 0);
        m.promote(15, 0);
        assert_eq!(m.durable().collect::<Vec<_>>(), vec![(a, Some(0))]);
        m.promote(25, 1);
        assert_eq!(m.keys[&b], KeyState::Unknown);
        assert_eq!(m.take_durable(b), Some((a, 0)));
        assert_eq!(m.take_durable(0), None, "a taken key is pending");
    }

    #[test]
    fn a_watermark_table_checks_rows_kept_below_the_sent_bound_and_late_rows_after_a_recovery() {
        let mut m = TableModel::with_watermark(5);
        assert!(m.append_only());
        let a = m.new_key();
        m.sending([100].into_iter());
        m.returned(vec![(a, Some(100))], 10, 0);
        let (b, c) = (m.new_key(), m.new_key());
        m.sending([90, 97].into_iter());
        // 90 is below 95, the largest `v - lag` sent: maybe dropped; 97 is kept.
        m.returned(vec![(b, Some(90)), (c, Some(97))], 20, 0);
        m.promote(25, 0);
        assert_eq!(m.keys[&b], KeyState::Unknown);
        assert_eq!(m.durable().count(), 2);
        // After recovery 1, a row at 50 was kept: the recovery restored 95 (from a, durable before it).
        let (d, e) = (m.new_key(), m.new_key());
        m.sending([50, 96].into_iter());
        m.returned(vec![(d, Some(50)), (e, Some(96))], 40, 1);
        let committed: BTreeMap<i64, i64> = [(a, 100), (c, 97), (d, 50), (e, 96)].into();
        let late = m.late_rows_kept(&committed);
        assert_eq!(
            late,
            vec![LateRowKept {
                key: d,
                v: 50,
                watermark: 95
            }]
        );
        // Dropped, as it should be: nothing to say.
        assert!(
            m.late_rows_kept(&[(a, 100), (c, 97), (e, 96)].into())
                .is_empty()
        );
    }
}
