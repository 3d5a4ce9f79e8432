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
}

impl TableModel {
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

    /// A batch returned: its writes become durable once `epoch` is committed without a recovery.
    pub fn returned(&mut self, writes: Vec<(i64, Option<i64>)>, epoch: u64, recoveries: u64) {
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
}
