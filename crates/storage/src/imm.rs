//! Immutable batches ("imms", RisingWave's `SharedBufferBatch`): a mem-table flushed at an epoch. Sorted by
//! key; a `None` value is a delete (tombstone). Keys and values lie back to back in one shared buffer with
//! 8 bytes of offsets per entry, so an imm costs its bytes plus 8 per row, and reading a key or value out of
//! it is a slice of that buffer, not a copy.

use std::ops::Bound;

use bytes::Bytes;
use epochlab_common::{Epoch, TableId};

use crate::filter::{KeyFilter, key_hash};

/// The high bit of an entry's `val_end` marks a delete.
const TOMBSTONE: u32 = 1 << 31;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    key_end: u32,
    /// The value's end; `TOMBSTONE` set for a delete. The next key starts here.
    val_end: u32,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Imm {
    pub table_id: TableId,
    pub epoch: Epoch,
    data: Bytes,
    entries: Vec<Entry>,
    filter: KeyFilter,
}

impl Imm {
    /// `kvs` must be sorted by key with no duplicates.
    pub fn new<K, V>(
        table_id: TableId,
        epoch: Epoch,
        kvs: impl ExactSizeIterator<Item = (K, Option<V>)> + Clone,
    ) -> Self
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let bytes: usize = kvs
            .clone()
            .map(|(k, v)| k.as_ref().len() + v.as_ref().map_or(0, |v| v.as_ref().len()))
            .sum();
        assert!(bytes < TOMBSTONE as usize, "an imm is under 2 GiB");
        let mut data = Vec::with_capacity(bytes);
        let mut entries = Vec::with_capacity(kvs.len());
        let mut hashes = Vec::with_capacity(kvs.len());
        for (k, v) in kvs {
            hashes.push(key_hash(k.as_ref()));
            data.extend_from_slice(k.as_ref());
            let key_end = data.len() as u32;
            data.extend_from_slice(v.as_ref().map_or(&[][..], |v| v.as_ref()));
            let val_end = data.len() as u32 | if v.is_some() { 0 } else { TOMBSTONE };
            entries.push(Entry { key_end, val_end });
        }
        let imm = Self {
            table_id,
            epoch,
            data: Bytes::from(data),
            entries,
            filter: KeyFilter::build(&hashes),
        };
        debug_assert!(
            (1..imm.len()).all(|i| imm.key(i - 1) < imm.key(i)),
            "imm keys must be sorted"
        );
        imm
    }

    /// One imm of two of the same table and epoch; of a key in both, `newer`'s entry. Built in place from
    /// the two (no list of the merged entries in between).
    pub fn merge(older: &Imm, newer: &Imm) -> Imm {
        debug_assert!(older.table_id == newer.table_id && older.epoch == newer.epoch);
        let it = Merged {
            older,
            newer,
            i: 0,
            j: 0,
            len: 0,
        };
        let len = it.clone().count();
        Imm::new(newer.table_id, newer.epoch, Merged { len, ..it })
    }

    fn start(&self, i: usize) -> usize {
        start_of(&self.entries, i)
    }

    /// The key of entry `i`.
    pub fn key(&self, i: usize) -> &[u8] {
        &self.data[self.start(i)..self.entries[i].key_end as usize]
    }

    /// The value of entry `i`; `None` for a delete.
    pub fn value(&self, i: usize) -> Option<&[u8]> {
        let e = self.entries[i];
        (e.val_end & TOMBSTONE == 0).then(|| &self.data[e.key_end as usize..e.val_end as usize])
    }

    /// Entry `i` as shared bytes (no copy).
    pub fn entry_bytes(&self, i: usize) -> (Bytes, Option<Bytes>) {
        let e = self.entries[i];
        let key = self.data.slice(self.start(i)..e.key_end as usize);
        let value = (e.val_end & TOMBSTONE == 0)
            .then(|| self.data.slice(e.key_end as usize..e.val_end as usize));
        (key, value)
    }

    /// `Some(None)` for a tombstone, `None` when the key is not in this batch.
    pub fn get(&self, key: &[u8]) -> Option<Option<Bytes>> {
        self.get_hashed(key, key_hash(key))
    }

    /// [`Self::get`] with the key's filter hash computed once by the caller.
    pub fn get_hashed(&self, key: &[u8], hash: u64) -> Option<Option<Bytes>> {
        if !self.filter.may_contain(hash) {
            return None;
        }
        let i = self.partition(|k| k < key);
        (i < self.len() && self.key(i) == key).then(|| self.entry_bytes(i).1)
    }

    fn partition(&self, below: impl Fn(&[u8]) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if below(self.key(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The index range of keys within `range`.
    pub fn index_range(&self, range: &(Bound<Bytes>, Bound<Bytes>)) -> std::ops::Range<usize> {
        let start = match &range.0 {
            Bound::Included(k) => self.partition(|x| x < k),
            Bound::Excluded(k) => self.partition(|x| x <= k),
            Bound::Unbounded => 0,
        };
        let end = match &range.1 {
            Bound::Included(k) => self.partition(|x| x <= k),
            Bound::Excluded(k) => self.partition(|x| x < k),
            Bound::Unbounded => self.len(),
        };
        start..end.max(start)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes of keys and values.
    pub fn size_bytes(&self) -> usize {
        self.data.len()
    }
}

/// The entries of two sorted imms in key order, the newer's where both have a key.
#[derive(Clone)]
struct Merged<'a> {
    older: &'a Imm,
    newer: &'a Imm,
    i: usize,
    j: usize,
    /// What is left, once counted (an exact-size iterator for `Imm::new`).
    len: usize,
}

impl<'a> Iterator for Merged<'a> {
    type Item = (&'a [u8], Option<&'a [u8]>);

    fn next(&mut self) -> Option<Self::Item> {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let (o, n) = (self.older, self.newer);
        let order = match (self.i < o.len(), self.j < n.len()) {
            (false, false) => return None,
            (true, true) => o.key(self.i).cmp(n.key(self.j)),
            (true, false) => Less,
            (false, true) => Greater,
        };
        self.len = self.len.saturating_sub(1);
        if order == Less {
            self.i += 1;
            return Some((o.key(self.i - 1), o.value(self.i - 1)));
        }
        self.i += usize::from(order == Equal);
        self.j += 1;
        Some((n.key(self.j - 1), n.value(self.j - 1)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len, Some(self.len))
    }
}

impl ExactSizeIterator for Merged<'_> {}

fn start_of(entries: &[Entry], i: usize) -> usize {
    if i == 0 {
        0
    } else {
        (entries[i - 1].val_end & !TOMBSTONE) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_values_and_deletes_read_back() {
        let kvs: Vec<(&[u8], Option<&[u8]>)> = vec![
            (b"a", Some(b"1")),
            (b"b", None),
            (b"c", Some(b"")),
            (b"d", Some(b"44")),
        ];
        let imm = Imm::new(TableId(1), Epoch(1), kvs.iter().copied());
        assert_eq!(imm.len(), 4);
        assert_eq!(imm.size_bytes(), 4 + 3);
        for (i, (k, v)) in kvs.iter().enumerate() {
            assert_eq!(imm.key(i), *k);
            assert_eq!(imm.value(i), *v);
        }
        assert_eq!(imm.get(b"a"), Some(Some(Bytes::from_static(b"1"))));
        assert_eq!(imm.get(b"b"), Some(None));
        assert_eq!(imm.get(b"c"), Some(Some(Bytes::new())));
        assert_eq!(imm.get(b"bb"), None);
        let r = (
            Bound::Excluded(Bytes::from_static(b"a")),
            Bound::Included(Bytes::from_static(b"c")),
        );
        assert_eq!(imm.index_range(&r), 1..3);
    }

    /// A merge keeps every key once, the newer imm's entry where both have it.
    #[test]
    fn merge_prefers_the_newer() {
        let older: Vec<(&[u8], Option<&[u8]>)> =
            vec![(b"a", Some(b"1")), (b"b", Some(b"2")), (b"d", None)];
        let newer: Vec<(&[u8], Option<&[u8]>)> =
            vec![(b"b", None), (b"c", Some(b"3")), (b"d", Some(b"4"))];
        let (o, n) = (
            Imm::new(TableId(1), Epoch(1), older.into_iter()),
            Imm::new(TableId(1), Epoch(1), newer.into_iter()),
        );
        let m = Imm::merge(&o, &n);
        let got: Vec<_> = (0..m.len()).map(|i| (m.key(i), m.value(i))).collect();
        let want: Vec<(&[u8], Option<&[u8]>)> = vec![
            (b"a", Some(b"1")),
            (b"b", None),
            (b"c", Some(b"3")),
            (b"d", Some(b"4")),
        ];
        assert_eq!(got, want);
    }
}
