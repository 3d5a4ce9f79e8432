//! A Bloom filter over keys, as Hummock's SSTs carry: a point read skips an imm or a committed run whose
//! filter says the key is not there. A write to a fresh key (every insert into a new view) checks every layer
//! below the mem-table and finds nothing; without filters that is a binary search per layer.

/// A few percent false positives at 10 bits (rounded up to a power of two in all) and 4 probes per key.
const BITS_PER_KEY: usize = 10;
const PROBES: u64 = 4;

/// The hash a filter is built from and probed with; computed once per key for all layers.
pub fn key_hash(key: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = key.len() as u64;
    let mut words = key.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    h = (h.rotate_left(5) ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    // A final mix, so that the high and low halves (the two probe hashes) are independent.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

#[derive(Debug, PartialEq, Eq)]
pub struct KeyFilter {
    bits: Box<[u64]>,
}

impl KeyFilter {
    /// A filter of `hashes` (one per key).
    pub fn build(hashes: &[u64]) -> Self {
        // A power of two, so that picking a word is a mask, not a division.
        let words = (hashes.len() * BITS_PER_KEY)
            .div_ceil(64)
            .max(1)
            .next_power_of_two();
        let mut bits = vec![0u64; words].into_boxed_slice();
        let mask = (words - 1) as u64;
        for &h in hashes {
            let (word, probe) = split(h, mask);
            bits[word] |= probe;
        }
        Self { bits }
    }

    /// False only if the key of hash `h` was not among those the filter was built from.
    pub fn may_contain(&self, h: u64) -> bool {
        let (word, probe) = split(h, (self.bits.len() - 1) as u64);
        self.bits[word] & probe == probe
    }
}

/// A blocked filter: a key's probes all fall in one 64-bit word (one cache miss to build or probe, not one
/// per probe). The low bits pick the word; four 6-bit fields of the high half pick the bits in it.
fn split(h: u64, mask: u64) -> (usize, u64) {
    let word = (h & mask) as usize;
    let probe = (0..PROBES).fold(0u64, |acc, i| acc | 1 << ((h >> (32 + 6 * i)) & 63));
    (word, probe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let keys: Vec<Vec<u8>> = (0..10_000u32).map(|i| i.to_be_bytes().repeat(3)).collect();
        let hashes: Vec<u64> = keys.iter().map(|k| key_hash(k)).collect();
        let f = KeyFilter::build(&hashes);
        assert!(hashes.iter().all(|&h| f.may_contain(h)));
        let false_positives = (10_000..20_000u32)
            .filter(|i| f.may_contain(key_hash(&i.to_be_bytes().repeat(3))))
            .count();
        assert!(false_positives < 300, "{false_positives} of 10000");
        assert!(!KeyFilter::build(&[]).may_contain(key_hash(b"x")));
    }
}
