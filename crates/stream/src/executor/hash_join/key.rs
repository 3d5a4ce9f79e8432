//! Memcomparable bytes (a join key, a pk) kept inline when short: a cached key or a cached row's pk costs no
//! allocation of its own, and a lookup compares bytes held in the table's slot instead of behind a pointer.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// Bytes kept inline up to this many (a key of up to three integers).
const INLINE: usize = 30;

#[derive(Clone)]
pub enum CompactKey {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl CompactKey {
    pub fn new(b: &[u8]) -> Self {
        if b.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..b.len()].copy_from_slice(b);
            Self::Inline {
                len: b.len() as u8,
                bytes,
            }
        } else {
            Self::Heap(b.into())
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        match self {
            Self::Inline { len, bytes } => &bytes[..*len as usize],
            Self::Heap(b) => b,
        }
    }
}

impl Borrow<[u8]> for CompactKey {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

/// As the bytes hash (so a lookup by `&[u8]` finds the key).
impl Hash for CompactKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl PartialEq for CompactKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for CompactKey {}

impl PartialOrd for CompactKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// As the bytes order (memcomparable order).
impl Ord for CompactKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl std::fmt::Debug for CompactKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use super::*;

    #[test]
    fn short_and_long_keys_compare_hash_and_borrow_as_their_bytes() {
        let keys: Vec<Vec<u8>> = vec![
            vec![],
            vec![1],
            vec![1, 0],
            vec![7; 30],
            vec![7; 31],
            vec![2; 40],
        ];
        let mut hashed = HashMap::new();
        let mut ordered = BTreeMap::new();
        for (i, k) in keys.iter().enumerate() {
            let c = CompactKey::new(k);
            assert_eq!(c.as_slice(), &k[..]);
            assert_eq!(matches!(c, CompactKey::Inline { .. }), k.len() <= INLINE);
            hashed.insert(c.clone(), i);
            ordered.insert(c, i);
        }
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(hashed.get(&k[..]), Some(&i));
            assert_eq!(ordered.get(&k[..]), Some(&i));
        }
        let order: Vec<usize> = ordered.into_values().collect();
        let mut sorted: Vec<usize> = (0..keys.len()).collect();
        sorted.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
        assert_eq!(order, sorted);
    }
}
