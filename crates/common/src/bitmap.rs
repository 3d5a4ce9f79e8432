//! A fixed-length bitmap: the vnodes an actor owns, or the visible rows of a chunk.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, PartialEq, Eq, Hash)]
pub struct Bitmap {
    len: usize,
    words: Vec<u64>,
}

impl Bitmap {
    pub fn zeros(len: usize) -> Self {
        Self {
            len,
            words: vec![0; len.div_ceil(64)],
        }
    }

    pub fn ones(len: usize) -> Self {
        let mut b = Self::zeros(len);
        for i in 0..len {
            b.set(i, true);
        }
        b
    }

    pub fn from_range(len: usize, range: std::ops::Range<usize>) -> Self {
        assert!(range.end <= len, "range {range:?} outside bitmap of {len}");
        let mut b = Self::zeros(len);
        for i in range {
            b.set(i, true);
        }
        b
    }

    pub fn from_bools(bools: &[bool]) -> Self {
        let mut b = Self::zeros(bools.len());
        for (i, &v) in bools.iter().enumerate() {
            b.set(i, v);
        }
        b
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn is_set(&self, i: usize) -> bool {
        assert!(i < self.len, "bit {i} outside bitmap of {}", self.len);
        self.words[i / 64] & (1 << (i % 64)) != 0
    }

    pub fn set(&mut self, i: usize, v: bool) {
        assert!(i < self.len, "bit {i} outside bitmap of {}", self.len);
        if v {
            self.words[i / 64] |= 1 << (i % 64);
        } else {
            self.words[i / 64] &= !(1 << (i % 64));
        }
    }

    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn all(&self) -> bool {
        self.count_ones() == self.len
    }

    /// The indices of set bits, ascending.
    pub fn iter_ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let tz = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(wi * 64 + tz)
            })
        })
    }

    /// Split `len` bits into `n` contiguous, nearly equal, disjoint parts that cover all bits: how meta
    /// spreads a fragment's vnodes over its actors.
    pub fn partition(len: usize, n: usize) -> Vec<Bitmap> {
        assert!(n >= 1, "cannot partition into zero parts");
        let base = len / n;
        let extra = len % n;
        let mut start = 0;
        (0..n)
            .map(|i| {
                let size = base + usize::from(i < extra);
                let b = Self::from_range(len, start..start + size);
                start += size;
                b
            })
            .collect()
    }
}

impl fmt::Debug for Bitmap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Print runs of set bits: `{0..128, 200}`.
        let mut runs = Vec::new();
        let mut iter = self.iter_ones().peekable();
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.peek() == Some(&(end + 1)) {
                end = iter.next().unwrap();
            }
            runs.push(if start == end {
                format!("{start}")
            } else {
                format!("{start}..={end}")
            });
        }
        write!(f, "Bitmap({}){{{}}}", self.len, runs.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_covers_everything_once() {
        for len in [1usize, 7, 256, 1000] {
            for n in 1..=8 {
                let parts = Bitmap::partition(len, n);
                assert_eq!(parts.len(), n);
                for i in 0..len {
                    assert_eq!(parts.iter().filter(|p| p.is_set(i)).count(), 1);
                }
            }
        }
    }

    #[test]
    fn iter_ones_ascending() {
        let mut b = Bitmap::zeros(130);
        for i in [0, 63, 64, 129] {
            b.set(i, true);
        }
        assert_eq!(b.iter_ones().collect::<Vec<_>>(), vec![0, 63, 64, 129]);
        assert_eq!(b.count_ones(), 4);
        assert_eq!(format!("{b:?}"), "Bitmap(130){0, 63..=64, 129}");
    }
}
