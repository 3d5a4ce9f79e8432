//! Table watermarks (RisingWave's `TableWatermarks`): a state table's cleaning watermark per vnode, from the
//! epoch it was sealed at. A key of a vnode whose pk (after the two vnode bytes) sorts below the vnode's
//! watermark, the memcomparable encoding of the pk's first column, is deleted: every read at or after that
//! epoch skips it, whatever the epoch it was written at (RisingWave's `SkipWatermarkIterator`). Merges of
//! committed runs do not drop it yet (RisingWave's compactor does): the rows stay, unseen. Watermarks only
//! rise: RisingWave's
//! `WatermarkDirection::Ascending` (a state table whose first pk column is descending cleans nothing here).
//!
//! A watermark travels as data does: sealed with its epoch into the local instance's read version (its own
//! reads apply it at once), gathered by the node's sync, committed with the epoch into the committed store
//! and the Hummock version (`VersionDelta::table_watermarks`), which meta keeps in its store.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use epochlab_common::{Bitmap, Epoch};
use serde::{Deserialize, Serialize};

/// How many watermarks of a vnode the committed store keeps besides those pinned readers need.
const KEPT_PER_VNODE: usize = 16;

/// The watermark of a state table over some of its vnodes (RisingWave's `VnodeWatermark`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct VnodeWatermark {
    pub vnodes: Arc<Bitmap>,
    /// The memcomparable first pk column: keys whose pk sorts below it are deleted.
    pub watermark: Vec<u8>,
}

/// Whether `key` (vnode, then pk) sorts below `watermark` in its vnode.
fn below(key: &[u8], watermark: &[u8]) -> bool {
    key.get(2..).is_some_and(|pk| pk < watermark)
}

/// Whether `w` deletes `key`: the key's vnode is one of `w`'s and its pk sorts below.
pub(crate) fn hidden_by(key: &[u8], w: &VnodeWatermark) -> bool {
    let owned = vnode_of(key).is_some_and(|v| v < w.vnodes.len() && w.vnodes.is_set(v));
    owned && below(key, &w.watermark)
}

fn vnode_of(key: &[u8]) -> Option<usize> {
    Some(usize::from(u16::from_be_bytes([
        *key.first()?,
        *key.get(1)?,
    ])))
}

/// The watermarks one reader applies: per vnode, the highest sealed at or before its epoch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadWatermarks {
    per_vnode: BTreeMap<usize, Bytes>,
}

impl ReadWatermarks {
    /// Whether the watermarks delete `key`.
    pub fn hides(&self, key: &[u8]) -> bool {
        let watermark = vnode_of(key).and_then(|v| self.per_vnode.get(&v));
        watermark.is_some_and(|w| below(key, w))
    }

    pub fn is_empty(&self) -> bool {
        self.per_vnode.is_empty()
    }

    /// Raise each vnode of `w` to its watermark (a newer one never lowers a vnode's).
    pub fn raise(&mut self, w: &VnodeWatermark) {
        let watermark = Bytes::from(w.watermark.clone());
        for v in w.vnodes.iter_ones() {
            let slot = self.per_vnode.entry(v).or_insert_with(|| watermark.clone());
            if *slot < watermark {
                *slot = watermark.clone();
            }
        }
    }
}

/// One table's committed watermarks: per vnode, by the epoch each was sealed at, ascending in both.
#[derive(Clone, Debug, Default)]
pub struct TableWatermarks {
    per_vnode: BTreeMap<usize, History>,
}

/// A vnode's watermarks, and whether older ones were pruned: a read older than every kept one then applies
/// the oldest kept (it sees newer state, as a read at an unpinned old epoch sees a key's newest version),
/// never none, which would bring cleaned rows back to a node whose pinned version lags.
#[derive(Clone, Debug, Default)]
struct History {
    kept: Vec<(Epoch, Bytes)>,
    pruned: bool,
}

impl History {
    /// The watermark a read at `epoch` applies.
    fn at(&self, epoch: Epoch) -> Option<&Bytes> {
        match self.kept.partition_point(|(e, _)| *e <= epoch) {
            0 if self.pruned => self.kept.first().map(|(_, w)| w),
            0 => None,
            i => Some(&self.kept[i - 1].1),
        }
    }
}

impl TableWatermarks {
    /// `w`, sealed at `epoch`, committed. History older than what `oldest_pin` reads is dropped, and all
    /// but the newest [`KEPT_PER_VNODE`] of a vnode when nothing is pinned.
    pub fn add(&mut self, epoch: Epoch, w: &VnodeWatermark, oldest_pin: Option<Epoch>) {
        let watermark = Bytes::from(w.watermark.clone());
        for v in w.vnodes.iter_ones() {
            let history = self.per_vnode.entry(v).or_default();
            let kept = &mut history.kept;
            let higher = kept.last().is_none_or(|(_, last)| *last < watermark);
            if higher {
                kept.push((epoch, watermark.clone()));
            }
            let keep_from = match oldest_pin {
                Some(pin) => kept.partition_point(|(e, _)| *e <= pin).saturating_sub(1),
                None => kept.len().saturating_sub(KEPT_PER_VNODE),
            };
            let drop = keep_from.min(kept.len().saturating_sub(1));
            kept.drain(..drop);
            history.pruned |= drop > 0;
        }
    }

    /// Whether a read at `epoch` skips `key`.
    pub fn hides(&self, key: &[u8], epoch: Epoch) -> bool {
        let history = vnode_of(key).and_then(|v| self.per_vnode.get(&v));
        let watermark = history.and_then(|h| h.at(epoch));
        watermark.is_some_and(|w| below(key, w))
    }

    /// What a read at `epoch` applies.
    pub fn at(&self, epoch: Epoch) -> ReadWatermarks {
        let per_vnode = self
            .per_vnode
            .iter()
            .filter_map(|(v, history)| Some((*v, history.at(epoch)?.clone())))
            .collect();
        ReadWatermarks { per_vnode }
    }

    /// Each vnode's newest watermark (the Hummock version's view).
    pub fn latest(&self) -> ReadWatermarks {
        self.at(Epoch(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wm(vnodes: &[usize], w: u8) -> VnodeWatermark {
        let bools: Vec<bool> = (0..4).map(|v| vnodes.contains(&v)).collect();
        VnodeWatermark {
            vnodes: Arc::new(Bitmap::from_bools(&bools)),
            watermark: vec![w],
        }
    }

    fn key(vnode: u16, pk: u8) -> Vec<u8> {
        let mut k = vnode.to_be_bytes().to_vec();
        k.extend([pk, 7]);
        k
    }

    #[test]
    fn a_key_below_its_vnodes_watermark_is_hidden_from_the_epoch_it_was_sealed_at() {
        let mut t = TableWatermarks::default();
        t.add(Epoch(10), &wm(&[0, 1], 5), None);
        t.add(Epoch(20), &wm(&[1], 8), None);
        assert!(t.at(Epoch(9)).is_empty());
        let at10 = t.at(Epoch(10));
        assert!(at10.hides(&key(0, 4)) && at10.hides(&key(1, 4)));
        assert!(
            !at10.hides(&key(0, 5)),
            "a key whose first column is the watermark stays"
        );
        assert!(!at10.hides(&key(1, 6)) && !at10.hides(&key(2, 0)));
        assert!(t.hides(&key(0, 4), Epoch(10)) && !t.hides(&key(0, 4), Epoch(9)));
        let at20 = t.at(Epoch(25));
        assert!(at20.hides(&key(1, 6)) && !at20.hides(&key(0, 6)));
        // A lower watermark never lowers a vnode's.
        t.add(Epoch(30), &wm(&[1], 2), None);
        assert!(t.latest().hides(&key(1, 6)));
    }

    #[test]
    fn history_is_kept_for_the_oldest_pinned_reader_only() {
        let mut t = TableWatermarks::default();
        for e in 1..=40u64 {
            t.add(Epoch(e), &wm(&[0], e as u8), Some(Epoch(30)));
        }
        assert!(t.at(Epoch(30)).hides(&key(0, 29)) && !t.at(Epoch(30)).hides(&key(0, 30)));
        assert_eq!(t.per_vnode[&0].kept.len(), 11, "epochs 30..=40");
        assert!(
            t.hides(&key(0, 29), Epoch(5)),
            "older than all kept: the oldest kept, not none"
        );
        t.add(Epoch(41), &wm(&[0], 41), None);
        assert_eq!(t.per_vnode[&0].kept.len(), KEPT_PER_VNODE.min(12));
        assert!(!TableWatermarks::default().hides(&key(0, 0), Epoch(5)));
        let mut r = ReadWatermarks::default();
        r.raise(&wm(&[2], 9));
        r.raise(&wm(&[2], 3));
        assert!(r.hides(&key(2, 8)));
    }
}
