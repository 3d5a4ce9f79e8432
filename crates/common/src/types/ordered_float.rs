//! Floats with a total order, as RisingWave's `OrderedFloat`: NaN equals itself and is greater than every
//! other value; `-0.0` equals `+0.0`. `Eq`, `Ord` and `Hash` agree with that order.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

/// A float with a total order. `Debug` prints `OrderedFloat(1.5)`, as RisingWave's.
#[derive(Debug, Default, Clone, Copy)]
pub struct OrderedFloat<T>(pub T);

/// `real`.
pub type F32 = OrderedFloat<f32>;
/// `double precision`.
pub type F64 = OrderedFloat<f64>;

macro_rules! impl_ordered_float {
    ($t:ty, $bits:ty) => {
        impl OrderedFloat<$t> {
            pub const fn into_inner(self) -> $t {
                self.0
            }

            /// The bits that identify the value: one NaN, one zero.
            pub fn canonical_bits(self) -> $bits {
                if self.0.is_nan() {
                    <$t>::NAN.to_bits()
                } else if self.0 == 0.0 {
                    0
                } else {
                    self.0.to_bits()
                }
            }
        }

        impl PartialEq for OrderedFloat<$t> {
            fn eq(&self, other: &Self) -> bool {
                self.cmp(other) == Ordering::Equal
            }
        }

        impl Eq for OrderedFloat<$t> {}

        impl PartialOrd for OrderedFloat<$t> {
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for OrderedFloat<$t> {
            fn cmp(&self, other: &Self) -> Ordering {
                match (self.0.is_nan(), other.0.is_nan()) {
                    (true, true) => Ordering::Equal,
                    (true, false) => Ordering::Greater,
                    (false, true) => Ordering::Less,
                    (false, false) => self.0.partial_cmp(&other.0).expect("neither is NaN"),
                }
            }
        }

        impl Hash for OrderedFloat<$t> {
            fn hash<H: Hasher>(&self, state: &mut H) {
                self.canonical_bits().hash(state);
            }
        }

        impl From<$t> for OrderedFloat<$t> {
            fn from(v: $t) -> Self {
                Self(v)
            }
        }
    };
}

impl_ordered_float!(f32, u32);
impl_ordered_float!(f64, u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_is_greatest_and_zeros_are_equal() {
        let nan = F64::from(f64::NAN);
        assert_eq!(nan, F64::from(-f64::NAN));
        assert!(nan > F64::from(f64::INFINITY));
        assert_eq!(F64::from(-0.0), F64::from(0.0));
        assert_eq!(
            F32::from(-0.0).canonical_bits(),
            F32::from(0.0).canonical_bits()
        );
        assert!(F32::from(f32::NEG_INFINITY) < F32::from(-1e30));
        assert_eq!(format!("{:?}", F64::from(1.5)), "OrderedFloat(1.5)");
    }
}
