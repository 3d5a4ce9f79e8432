//! Virtual nodes: the unit of data distribution. A table's key space is split into `VnodeCount` vnodes by a
//! stable hash of the distribution key; each actor of a fragment owns a disjoint set of them.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::hash::Crc32;
use crate::memcmp::{self, OrderType};
use crate::row::OwnedRow;
use crate::types::{Datum, ScalarImpl};
use crate::value_encoding;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct VirtualNode(u16);

impl VirtualNode {
    /// Bytes of a vnode in a storage key (big-endian, so keys sort by vnode first).
    pub const SIZE: usize = 2;

    pub const fn from_index(i: usize) -> Self {
        assert!(i < VnodeCount::MAX as usize);
        Self(i as u16)
    }

    pub const fn to_index(self) -> usize {
        self.0 as usize
    }

    pub fn to_be_bytes(self) -> [u8; 2] {
        self.0.to_be_bytes()
    }

    pub fn from_be_bytes(b: [u8; 2]) -> Self {
        Self(u16::from_be_bytes(b))
    }

    /// The vnode as a datum: `Int16`, as in the backfill progress table's `vnode` column.
    pub fn to_scalar(self) -> ScalarImpl {
        ScalarImpl::Int16(self.0 as i16)
    }

    pub fn from_scalar(s: &ScalarImpl) -> Option<Self> {
        match s {
            ScalarImpl::Int16(v) if *v >= 0 => Some(Self(*v as u16)),
            _ => None,
        }
    }

    /// The vnode of `row` by the datums at `dist_key_indices`: CRC-32 of their value encoding, modulo the
    /// count. An empty distribution key (a singleton table) maps to vnode 0.
    pub fn compute_row(row: &OwnedRow, dist_key_indices: &[usize], count: VnodeCount) -> Self {
        Self::compute_datums(dist_key_indices.iter().map(|&i| row.datum_at(i)), count)
    }

    /// The vnode a hash dispatcher sends `row` to: [`Self::compute_row`], except that when the key is one row
    /// id column (`row_id_key`) and the row's is NULL, the whole row is hashed (RisingWave's
    /// `VirtualNode::compute_chunk`: rows not yet given a row id spread over the downstream actors).
    pub fn compute_dispatch(
        row: &OwnedRow,
        dist_key_indices: &[usize],
        row_id_key: bool,
        count: VnodeCount,
    ) -> Self {
        match dist_key_indices {
            [k] if row_id_key && row.datum_at(*k).is_none() => {
                Self::compute_datums(row.datums().iter(), count)
            }
            _ => Self::compute_row(row, dist_key_indices, count),
        }
    }

    /// The vnode of a distribution key given as its datums (the same hash as [`Self::compute_row`]).
    pub fn compute_datums<'a>(
        datums: impl ExactSizeIterator<Item = &'a Datum>,
        count: VnodeCount,
    ) -> Self {
        if datums.len() == 0 {
            return Self(0);
        }
        let datums: Vec<&Datum> = datums.collect();
        // RisingWave: a row id carries the vnode its generator took it for, so a key that is one row id is
        // not hashed: its vnode is read from it.
        if let [Some(ScalarImpl::Serial(id))] = datums[..] {
            return Self((vnode_of_row_id(id.as_row_id()) % count.get()) as u16);
        }
        let mut h = Crc32::default();
        for d in datums {
            visit_hash_bytes(d, |b| h.update(b));
        }
        Self((h.finish() % count.get() as u32) as u16)
    }
}

/// Bits of a row id (RisingWave's `RowIdGenerator`): the millisecond above bit 22, the vnode in bits
/// 12..22, a sequence number in the low 12 bits.
pub const ROW_ID_TIMESTAMP_SHIFT_BITS: u32 = 22;
pub const ROW_ID_VNODE_SHIFT_BITS: u32 = 12;
/// Vnodes a row id can carry (10 bits).
pub const ROW_ID_VNODE_UPPER_BOUND: usize = 1 << 10;

/// The vnode a row id carries (RisingWave's `extract_vnode_id_from_row_id`).
pub fn vnode_of_row_id(id: i64) -> usize {
    ((id >> ROW_ID_VNODE_SHIFT_BITS) as usize) & (ROW_ID_VNODE_UPPER_BOUND - 1)
}

/// The bytes a distribution-key datum hashes as. Equal values hash alike: the first five types by their
/// value encoding (the vnodes of existing tables never move); the others by their memcomparable encoding,
/// which is canonical (`1.0` = `1.00`, `-0.0` = `0.0`, `1 mon` = `30 days`).
fn visit_hash_bytes(datum: &Datum, mut f: impl FnMut(&[u8])) {
    use ScalarImpl::*;
    match datum {
        None | Some(Bool(_) | Int16(_) | Int32(_) | Int64(_) | Utf8(_)) => {
            value_encoding::visit_encoded(datum, f)
        }
        Some(_) => {
            let mut buf = vec![HASH_BY_KEY_ENCODING];
            memcmp::encode_datum(datum, OrderType::ascending(), &mut buf);
            f(&buf);
        }
    }
}

/// Marks a datum hashed by its memcomparable encoding; not a tag of the value encoding.
const HASH_BY_KEY_ENCODING: u8 = 0xFE;

impl fmt::Display for VirtualNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Debug for VirtualNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VirtualNode({})", self.0)
    }
}

/// The number of vnodes of a table: 1 to 32768, default 256 (RisingWave's `COUNT_FOR_COMPAT`).
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VnodeCount(u16);

impl VnodeCount {
    pub const DEFAULT: VnodeCount = VnodeCount(256);
    pub const MAX: u32 = 32768;

    /// `None` unless `1 <= n <= 32768`. Stored as `n - 1` would be tidier; a `u16` holds 32768 anyway.
    pub fn new(n: u32) -> Option<Self> {
        (1..=Self::MAX).contains(&n).then_some(Self(n as u16))
    }

    pub fn get(self) -> usize {
        self.0 as usize
    }

    pub fn vnodes(self) -> impl Iterator<Item = VirtualNode> {
        (0..self.get()).map(VirtualNode::from_index)
    }
}

impl Default for VnodeCount {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl fmt::Debug for VnodeCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row;

    #[test]
    fn count_bounds() {
        assert!(VnodeCount::new(0).is_none());
        assert!(VnodeCount::new(1).is_some());
        assert_eq!(VnodeCount::new(32768).unwrap().get(), 32768);
        assert!(VnodeCount::new(32769).is_none());
    }

    /// Equal values of the new types land on the same vnode, whatever their representation.
    #[test]
    fn equal_values_hash_equal() {
        use crate::types::{Decimal, F64, Interval, ListValue, USECS_PER_DAY};
        let vnode = |s: ScalarImpl| {
            VirtualNode::compute_datums([Some(s)].iter(), VnodeCount::new(32768).unwrap())
        };
        let dec = |m: i64, scale: u32| {
            ScalarImpl::Decimal(Decimal::from(rust_decimal::Decimal::new(m, scale)))
        };
        assert_eq!(vnode(dec(10, 1)), vnode(dec(100, 2)));
        assert_ne!(vnode(dec(10, 1)), vnode(dec(11, 1)));
        assert_eq!(vnode(F64::from(-0.0).into()), vnode(F64::from(0.0).into()));
        assert_eq!(
            vnode(F64::from(f64::NAN).into()),
            vnode(F64::from(-f64::NAN).into())
        );
        let mon = Interval::from_month_day_usec(1, 0, 0);
        let days = Interval::from_month_day_usec(0, 29, USECS_PER_DAY);
        assert_eq!(vnode(mon.into()), vnode(days.into()));
        let list = |d: ScalarImpl| ScalarImpl::List(ListValue::new(vec![Some(d), None]));
        assert_eq!(vnode(list(dec(10, 1))), vnode(list(dec(1, 0))));
    }

    proptest::proptest! {
        /// A value and another representation of it (more trailing zeros; months, days and microseconds
        /// split differently) land on the same vnode, also inside a list.
        #[test]
        fn representations_of_a_value_hash_equal(
            m in -(1i64 << 40)..(1i64 << 40),
            scale in 0u32..10,
            zeros in 0u32..6,
            months in -1000i32..1000,
            days in -1000i32..1000,
            usecs in -(1i64 << 50)..(1i64 << 50),
        ) {
            use crate::types::{Decimal, Interval, ListValue};
            let count = VnodeCount::new(32768).unwrap();
            let vnode = |s: ScalarImpl| {
                let list = ScalarImpl::List(ListValue::new(vec![Some(s.clone())]));
                let a = VirtualNode::compute_datums([Some(s)].iter(), count);
                let b = VirtualNode::compute_datums([Some(list)].iter(), count);
                (a, b)
            };
            let d1 = rust_decimal::Decimal::new(m, scale);
            let d2 = rust_decimal::Decimal::from_i128_with_scale(
                i128::from(m) * 10i128.pow(zeros),
                scale + zeros,
            );
            proptest::prop_assert_eq!(vnode(Decimal::from(d1).into()), vnode(Decimal::from(d2).into()));
            let i1 = Interval::from_month_day_usec(months, days, usecs);
            let i2 = Interval::from_total_usecs(i1.total_usecs()).unwrap();
            proptest::prop_assert_eq!(vnode(i1.into()), vnode(i2.into()));
        }
    }

    /// Golden values, computed independently (Python's `binascii.crc32` over the same value encoding):
    /// vnode assignment must never change between runs, processes, machines or releases.
    #[test]
    fn hashing_is_stable() {
        let rows = [
            row![0i64],
            row![1i64],
            row![42i32],
            row!["alice"],
            row![1i64, 2i64],
        ];
        let vnodes = |count: u32| -> Vec<usize> {
            let count = VnodeCount::new(count).unwrap();
            rows.iter()
                .map(|r| {
                    let idx: Vec<usize> = (0..r.len()).collect();
                    VirtualNode::compute_row(r, &idx, count).to_index()
                })
                .collect()
        };
        assert_eq!(vnodes(256), [225, 127, 135, 36, 219]);
        assert_eq!(vnodes(32768), [20961, 20863, 7815, 5668, 10203]);
        assert_eq!(vnodes(1), [0, 0, 0, 0, 0]);
        let c256 = VnodeCount::DEFAULT;
        assert_eq!(
            VirtualNode::compute_row(&row![7i64], &[], c256).to_index(),
            0
        );
    }
}
