//! `numeric`: RisingWave's decimal, a `rust_decimal::Decimal` or one of NaN and the two infinities. The
//! order is `-Infinity < numbers < +Infinity < NaN`; equal numbers of different scales (`1.0`, `1.00`) are
//! equal and hash equal.

use std::cmp::Ordering;

/// RisingWave's decimal. `Debug` prints `Normalized(1.50)`, `NaN`, `PositiveInf`, `NegativeInf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decimal {
    Normalized(rust_decimal::Decimal),
    NaN,
    PositiveInf,
    NegativeInf,
}

impl Decimal {
    /// The rank of the variant in the order; numbers compare among themselves by value.
    fn rank(&self) -> u8 {
        match self {
            Decimal::NegativeInf => 0,
            Decimal::Normalized(_) => 1,
            Decimal::PositiveInf => 2,
            Decimal::NaN => 3,
        }
    }

    /// The same value with trailing zeros of the fraction removed (`1.50` -> `1.5`).
    pub fn normalize(self) -> Self {
        match self {
            Decimal::Normalized(d) => Decimal::Normalized(d.normalize()),
            other => other,
        }
    }

    pub fn as_normalized(&self) -> Option<rust_decimal::Decimal> {
        match self {
            Decimal::Normalized(d) => Some(*d),
            _ => None,
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Decimal::Normalized(a), Decimal::Normalized(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl From<rust_decimal::Decimal> for Decimal {
    fn from(d: rust_decimal::Decimal) -> Self {
        Decimal::Normalized(d)
    }
}

impl From<i64> for Decimal {
    fn from(v: i64) -> Self {
        Decimal::Normalized(v.into())
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, RandomState};

    use super::*;

    #[test]
    fn order_and_scale() {
        let d = |m: i64, s: u32| Decimal::Normalized(rust_decimal::Decimal::new(m, s));
        assert_eq!(d(10, 1), d(100, 2));
        let h = RandomState::new();
        assert_eq!(h.hash_one(d(10, 1)), h.hash_one(d(100, 2)));
        let ordered = [
            Decimal::NegativeInf,
            d(-5, 0),
            d(15, 1),
            Decimal::PositiveInf,
            Decimal::NaN,
        ];
        assert!(ordered.windows(2).all(|w| w[0] < w[1]));
    }
}
