//! Data types and datums with RisingWave's names and semantics. `Debug` of a datum prints like RisingWave's
//! (`Some(Int16(0))`), so that a missing-row error reads exactly as the original failure log:
//! `row [Some(Int16(0))] not found`.
//!
//! One file per family: ordered floats, decimal, date/time, interval, jsonb, struct and list.

mod data_type;
mod datetime;
mod decimal;
mod from_text;
mod interval;
mod jsonb;
mod ordered_float;
mod parse_datetime;
mod parse_interval;
mod struct_type;
mod to_text;

#[cfg(test)]
pub(crate) mod arbitrary;

use std::cmp::Ordering;
use std::fmt;

pub use data_type::UnknownTypeName;
pub use datetime::{Date, Time, Timestamp, Timestamptz};
pub use decimal::Decimal;
pub use from_text::{ParseError, parse_bool, parse_bytea};
pub use interval::{Interval, USECS_PER_DAY, USECS_PER_MONTH, USECS_PER_SEC};
pub use jsonb::JsonbVal;
pub use ordered_float::{F32, F64, OrderedFloat};
pub use parse_datetime::parse_timestamptz_parts;
pub use parse_interval::DateTimeField;
pub use struct_type::{ListValue, StructType, StructValue};
pub use to_text::ToText;

use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataType {
    Boolean,
    Int16,
    Int32,
    Int64,
    Serial,
    Float32,
    Float64,
    Decimal,
    Date,
    Time,
    Timestamp,
    Timestamptz,
    Interval,
    Varchar,
    Bytea,
    Jsonb,
    Struct(StructType),
    List(Box<DataType>),
}

/// The hidden row id's type: a 64-bit id, ordered and hashed as its integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Serial(i64);

impl Serial {
    pub const fn new(v: i64) -> Self {
        Self(v)
    }

    pub const fn as_row_id(self) -> i64 {
        self.0
    }
}

impl From<i64> for Serial {
    fn from(v: i64) -> Self {
        Self(v)
    }
}

/// A non-null value. `Debug` is derived-like, as RisingWave's: `Int16(0)`, `Float64(OrderedFloat(1.5))`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum ScalarImpl {
    Bool(bool),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    Serial(Serial),
    Float32(F32),
    Float64(F64),
    Decimal(Decimal),
    Date(Date),
    Time(Time),
    Timestamp(Timestamp),
    Timestamptz(Timestamptz),
    Interval(Interval),
    Utf8(Box<str>),
    Bytea(Box<[u8]>),
    Jsonb(JsonbVal),
    Struct(StructValue),
    List(ListValue),
}

pub type Datum = Option<ScalarImpl>;

impl ScalarImpl {
    /// The value as it comes out of RisingWave's hash key (`HashKeySer`/`HashKeyDe`), which the
    /// aggregations' group keys go through: values that compare equal become one representative, so a
    /// group's key does not depend on which of its rows came first. An interval becomes its justified
    /// form (`24:00:00` is `1 day`, 30 days a month), a decimal loses its trailing zeros, a float's `-0`
    /// is `0`; structs and lists field by field. Other values are kept.
    pub fn hash_key_canonical(self) -> Self {
        match self {
            ScalarImpl::Interval(i) => {
                ScalarImpl::Interval(Interval::from_total_usecs(i.total_usecs()).unwrap_or(i))
            }
            ScalarImpl::Decimal(d) => ScalarImpl::Decimal(d.normalize()),
            ScalarImpl::Float32(f) if f.0 == 0.0 => ScalarImpl::Float32(OrderedFloat(0.0)),
            ScalarImpl::Float64(f) if f.0 == 0.0 => ScalarImpl::Float64(OrderedFloat(0.0)),
            ScalarImpl::Struct(s) => ScalarImpl::Struct(StructValue::new(
                s.fields()
                    .iter()
                    .cloned()
                    .map(datum_hash_key_canonical)
                    .collect(),
            )),
            ScalarImpl::List(l) => ScalarImpl::List(ListValue::new(
                l.values()
                    .iter()
                    .cloned()
                    .map(datum_hash_key_canonical)
                    .collect(),
            )),
            other => other,
        }
    }

    pub fn as_int64(&self) -> Option<i64> {
        match self {
            ScalarImpl::Int64(v) => Some(*v),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            ScalarImpl::Bool(v) => Some(*v),
            _ => None,
        }
    }

    pub fn as_utf8(&self) -> Option<&str> {
        match self {
            ScalarImpl::Utf8(v) => Some(v),
            _ => None,
        }
    }

    /// The position of the variant in the enum; orders scalars of different types in [`cmp_datum`].
    fn variant_index(&self) -> u8 {
        use ScalarImpl::*;
        match self {
            Bool(_) => 0,
            Int16(_) => 1,
            Int32(_) => 2,
            Int64(_) => 3,
            Serial(_) => 4,
            Float32(_) => 5,
            Float64(_) => 6,
            Decimal(_) => 7,
            Date(_) => 8,
            Time(_) => 9,
            Timestamp(_) => 10,
            Timestamptz(_) => 11,
            Interval(_) => 12,
            Utf8(_) => 13,
            Bytea(_) => 14,
            Jsonb(_) => 15,
            Struct(_) => 16,
            List(_) => 17,
        }
    }
}

impl fmt::Debug for ScalarImpl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ScalarImpl::*;
        let (name, value): (&str, &dyn fmt::Debug) = match self {
            Bool(v) => ("Bool", v),
            Int16(v) => ("Int16", v),
            Int32(v) => ("Int32", v),
            Int64(v) => ("Int64", v),
            Serial(v) => ("Serial", v),
            Float32(v) => ("Float32", v),
            Float64(v) => ("Float64", v),
            Decimal(v) => ("Decimal", v),
            Date(v) => ("Date", v),
            Time(v) => ("Time", v),
            Timestamp(v) => ("Timestamp", v),
            Timestamptz(v) => ("Timestamptz", v),
            Interval(v) => ("Interval", v),
            Utf8(v) => ("Utf8", v),
            Bytea(v) => ("Bytea", v),
            Jsonb(v) => ("Jsonb", v),
            Struct(v) => ("Struct", v),
            List(v) => ("List", v),
        };
        f.debug_tuple(name).field(value).finish()
    }
}

/// The text RisingWave prints for the value ([`ToText`]).
impl fmt::Display for ScalarImpl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f)
    }
}

/// The value order of two scalars of the same type; `None` across types.
pub fn cmp_scalar(a: &ScalarImpl, b: &ScalarImpl) -> Option<Ordering> {
    use ScalarImpl::*;
    Some(match (a, b) {
        (Bool(a), Bool(b)) => a.cmp(b),
        (Int16(a), Int16(b)) => a.cmp(b),
        (Int32(a), Int32(b)) => a.cmp(b),
        (Int64(a), Int64(b)) => a.cmp(b),
        (Serial(a), Serial(b)) => a.cmp(b),
        (Float32(a), Float32(b)) => a.cmp(b),
        (Float64(a), Float64(b)) => a.cmp(b),
        (Decimal(a), Decimal(b)) => a.cmp(b),
        (Date(a), Date(b)) => a.cmp(b),
        (Time(a), Time(b)) => a.cmp(b),
        (Timestamp(a), Timestamp(b)) => a.cmp(b),
        (Timestamptz(a), Timestamptz(b)) => a.cmp(b),
        (Interval(a), Interval(b)) => a.cmp(b),
        (Utf8(a), Utf8(b)) => a.as_bytes().cmp(b.as_bytes()),
        (Bytea(a), Bytea(b)) => a.cmp(b),
        (Jsonb(a), Jsonb(b)) => a.cmp(b),
        (Struct(a), Struct(b)) => a.cmp(b),
        (List(a), List(b)) => a.cmp(b),
        _ => return None,
    })
}

/// A total order of datums: values by [`cmp_scalar`], NULL after every value (PostgreSQL's default), and
/// scalars of different types by their type (which a well-typed caller never compares).
pub fn cmp_datum(a: &Datum, b: &Datum) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => {
            cmp_scalar(x, y).unwrap_or_else(|| x.variant_index().cmp(&y.variant_index()))
        }
    }
}

macro_rules! impl_from_for_scalar {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl From<$t> for ScalarImpl {
            fn from(v: $t) -> Self {
                ScalarImpl::$variant(v.into())
            }
        }
    )*};
}

impl_from_for_scalar!(
    bool => Bool,
    i16 => Int16,
    i32 => Int32,
    i64 => Int64,
    Serial => Serial,
    f32 => Float32,
    f64 => Float64,
    F32 => Float32,
    F64 => Float64,
    Decimal => Decimal,
    Date => Date,
    Time => Time,
    Timestamp => Timestamp,
    Timestamptz => Timestamptz,
    Interval => Interval,
    &str => Utf8,
    String => Utf8,
    JsonbVal => Jsonb,
    StructValue => Struct,
    ListValue => List,
);

impl From<&[u8]> for ScalarImpl {
    fn from(v: &[u8]) -> Self {
        ScalarImpl::Bytea(v.into())
    }
}

/// [`ScalarImpl::hash_key_canonical`] of a datum (NULL stays NULL).
pub fn datum_hash_key_canonical(d: Datum) -> Datum {
    d.map(ScalarImpl::hash_key_canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_of_new_variants() {
        let d = |s: ScalarImpl| format!("{:?}", Some(s));
        assert_eq!(d(ScalarImpl::Int16(0)), "Some(Int16(0))");
        assert_eq!(d(1.5f64.into()), "Some(Float64(OrderedFloat(1.5)))");
        assert_eq!(d(Serial::new(7).into()), "Some(Serial(Serial(7)))");
        assert_eq!(
            d(Interval::from_month_day_usec(1, 2, 3).into()),
            "Some(Interval(Interval { months: 1, days: 2, usecs: 3 }))"
        );
    }

    /// Equal values come out of the hash key as one representative, in RisingWave's form.
    #[test]
    fn hash_key_canonical_picks_one_representative() {
        let iv = |m, d, us| ScalarImpl::Interval(Interval::from_month_day_usec(m, d, us));
        let day = USECS_PER_DAY;
        assert_eq!(
            format!("{:?}", iv(0, 0, 24 * 3600 * 1_000_000).hash_key_canonical()),
            format!("{:?}", iv(0, 1, 0))
        );
        assert_eq!(
            format!("{:?}", iv(0, 45, 0).hash_key_canonical()),
            format!("{:?}", iv(1, 15, 0))
        );
        assert_eq!(
            format!("{:?}", iv(0, 0, -day - 1).hash_key_canonical()),
            format!("{:?}", iv(0, -1, -1))
        );
        let dec =
            |m, scale| ScalarImpl::Decimal(Decimal::from(rust_decimal::Decimal::new(m, scale)));
        assert_eq!(
            format!("{:?}", dec(250, 2).hash_key_canonical()),
            format!("{:?}", dec(25, 1))
        );
        let neg_zero = ScalarImpl::Float64(OrderedFloat(-0.0));
        let ScalarImpl::Float64(z) = neg_zero.hash_key_canonical() else {
            unreachable!()
        };
        assert!(z.0.is_sign_positive());
        let nested = ScalarImpl::List(ListValue::new(vec![Some(iv(0, 30, 0)), None]));
        assert_eq!(
            format!("{:?}", nested.hash_key_canonical()),
            format!(
                "{:?}",
                ScalarImpl::List(ListValue::new(vec![Some(iv(1, 0, 0)), None]))
            )
        );
    }

    #[test]
    fn datum_order_puts_null_last() {
        let one = Some(ScalarImpl::Int32(1));
        assert_eq!(cmp_datum(&one, &None), Ordering::Less);
        assert_eq!(cmp_datum(&None, &None), Ordering::Equal);
    }
}
