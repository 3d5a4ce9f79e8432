//! An order-preserving ("memcomparable") encoding of datums: comparing two encodings byte by byte gives the
//! order of the values, column by column, each ascending or descending, with NULLs first or last.
//!
//! Per datum: a null flag, then the value. Integers are big-endian with the sign bit flipped; booleans one
//! byte; strings escape `0x00` as `0x00 0xFF` and end with `0x00 0x00`, which keeps the encoding prefix-free.
//! A descending column inverts the value bytes (not the flag), which reverses the order of prefix-free
//! encodings. Floats are their bits made order-preserving (one NaN, greatest; `-0.0` as `0.0`); dates,
//! times and timestamps their integer parts; an interval its normalised total; a decimal as in
//! [`decimal`]; jsonb its text; a struct its fields' datums; a list its elements, each after `0x01`, then
//! `0x00`. Equal values encode to equal bytes, so decoding gives an equal value, not always the same fields.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::row::OwnedRow;
use crate::types::{
    DataType, Date, Datum, F32, F64, Interval, ListValue, ScalarImpl, StructValue, Time, Timestamp,
    Timestamptz,
};

mod decimal;

use decimal::{decode_decimal, encode_decimal};

/// The order of one key column. The default is RisingWave's: ascending, NULLs last.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OrderType {
    pub descending: bool,
    pub nulls_first: bool,
}

impl Default for OrderType {
    fn default() -> Self {
        Self::ascending()
    }
}

impl OrderType {
    /// ASC NULLS LAST.
    pub const fn ascending() -> Self {
        Self {
            descending: false,
            nulls_first: false,
        }
    }

    /// The opposite order: the direction and the place of NULLs both flipped.
    pub const fn reverse(self) -> Self {
        Self {
            descending: !self.descending,
            nulls_first: !self.nulls_first,
        }
    }

    /// DESC NULLS FIRST (RisingWave's default for DESC).
    pub const fn descending() -> Self {
        Self {
            descending: true,
            nulls_first: true,
        }
    }

    pub const fn with_nulls_first(self, nulls_first: bool) -> Self {
        Self {
            descending: self.descending,
            nulls_first,
        }
    }
}

/// RisingWave's words for an order: `ASC` or `DESC`, then `NULLS FIRST` or `NULLS LAST` where NULLs are
/// not the largest values (the default of both directions).
impl std::fmt::Display for OrderType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.descending { "DESC" } else { "ASC" })?;
        match (self.descending, self.nulls_first) {
            (false, true) => f.write_str(" NULLS FIRST"),
            (true, false) => f.write_str(" NULLS LAST"),
            _ => Ok(()),
        }
    }
}

const NULL_FIRST_FLAG: u8 = 0x00;
const NOT_NULL_FLAG: u8 = 0x01;
const NULL_LAST_FLAG: u8 = 0x02;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DecodeError {
    #[error("memcomparable key ended early")]
    Truncated,
    #[error("invalid null flag {0:#04x}")]
    BadFlag(u8),
    #[error("invalid byte {0:#04x} in encoded value")]
    BadByte(u8),
    #[error("encoded string is not UTF-8")]
    NotUtf8,
    #[error("invalid {0} in encoded value")]
    Invalid(&'static str),
    #[error("{0} bytes left after the last key column")]
    TrailingBytes(usize),
}

/// Append the encoding of `datum` to `buf`.
pub fn encode_datum(datum: &Datum, order: OrderType, buf: &mut Vec<u8>) {
    let Some(scalar) = datum else {
        buf.push(if order.nulls_first {
            NULL_FIRST_FLAG
        } else {
            NULL_LAST_FLAG
        });
        return;
    };
    buf.push(NOT_NULL_FLAG);
    let start = buf.len();
    encode_scalar(scalar, buf);
    if order.descending {
        for b in &mut buf[start..] {
            *b = !*b;
        }
    }
}

/// The ascending, prefix-free encoding of a value. Equal values (`1.0` and `1.00`, `-0.0` and `0.0`,
/// `1 mon` and `30 days`) encode to the same bytes.
fn encode_scalar(scalar: &ScalarImpl, buf: &mut Vec<u8>) {
    match scalar {
        ScalarImpl::Bool(v) => buf.push(u8::from(*v)),
        ScalarImpl::Int16(v) => buf.extend_from_slice(&((*v as u16) ^ 0x8000).to_be_bytes()),
        ScalarImpl::Int32(v) => put_i32(*v, buf),
        ScalarImpl::Int64(v) => put_i64(*v, buf),
        ScalarImpl::Serial(v) => put_i64(v.as_row_id(), buf),
        ScalarImpl::Float32(v) => buf.extend_from_slice(&order_bits32(*v).to_be_bytes()),
        ScalarImpl::Float64(v) => buf.extend_from_slice(&order_bits64(*v).to_be_bytes()),
        ScalarImpl::Decimal(v) => encode_decimal(*v, buf),
        ScalarImpl::Date(v) => put_i32(v.days_from_ce(), buf),
        ScalarImpl::Time(v) => {
            let (secs, nanos) = v.secs_nanos();
            buf.extend_from_slice(&secs.to_be_bytes());
            buf.extend_from_slice(&nanos.to_be_bytes());
        }
        ScalarImpl::Timestamp(v) => {
            let (secs, nanos) = v.secs_nanos();
            put_i64(secs, buf);
            buf.extend_from_slice(&nanos.to_be_bytes());
        }
        ScalarImpl::Timestamptz(v) => put_i64(v.timestamp_micros(), buf),
        ScalarImpl::Interval(v) => {
            let flipped = (v.total_usecs() as u128) ^ (1 << 127);
            buf.extend_from_slice(&flipped.to_be_bytes());
        }
        ScalarImpl::Utf8(s) => put_escaped(s.as_bytes(), buf),
        ScalarImpl::Bytea(b) => put_escaped(b, buf),
        ScalarImpl::Jsonb(j) => put_escaped(j.to_text().as_bytes(), buf),
        ScalarImpl::Struct(s) => {
            for d in s.fields() {
                encode_datum(d, OrderType::ascending(), buf);
            }
        }
        ScalarImpl::List(l) => {
            for d in l.values() {
                buf.push(LIST_MORE);
                encode_datum(d, OrderType::ascending(), buf);
            }
            buf.push(LIST_END);
        }
    }
}

const LIST_MORE: u8 = 0x01;
const LIST_END: u8 = 0x00;

fn put_i32(v: i32, buf: &mut Vec<u8>) {
    buf.extend_from_slice(&((v as u32) ^ 0x8000_0000).to_be_bytes());
}

fn put_i64(v: i64, buf: &mut Vec<u8>) {
    buf.extend_from_slice(&((v as u64) ^ 0x8000_0000_0000_0000).to_be_bytes());
}

/// `0x00` escaped as `0x00 0xFF`, then `0x00 0x00`: prefix-free and order-preserving.
fn put_escaped(bytes: &[u8], buf: &mut Vec<u8>) {
    for &b in bytes {
        buf.push(b);
        if b == 0 {
            buf.push(0xFF);
        }
    }
    buf.extend_from_slice(&[0, 0]);
}

/// A float's bits made order-preserving: negatives inverted, positives with the sign bit set.
fn order_bits64(v: F64) -> u64 {
    let bits = v.canonical_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

fn order_bits32(v: F32) -> u32 {
    let bits = v.canonical_bits();
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | (1 << 31)
    }
}

fn float_from_order_bits64(bits: u64) -> F64 {
    let raw = if bits >> 63 == 1 {
        bits & !(1 << 63)
    } else {
        !bits
    };
    F64::from(f64::from_bits(raw))
}

fn float_from_order_bits32(bits: u32) -> F32 {
    let raw = if bits >> 31 == 1 {
        bits & !(1 << 31)
    } else {
        !bits
    };
    F32::from(f32::from_bits(raw))
}

/// Append the encoding of every datum of `row`, each with its order.
pub fn encode_row(row: &OwnedRow, orders: &[OrderType], buf: &mut Vec<u8>) {
    assert_eq!(row.len(), orders.len(), "one order type per key column");
    for (datum, &order) in row.datums().iter().zip(orders) {
        encode_datum(datum, order, buf);
    }
}

pub fn encode_row_to_vec(row: &OwnedRow, orders: &[OrderType]) -> Vec<u8> {
    let mut buf = Vec::with_capacity(row.len() * 9);
    encode_row(row, orders, &mut buf);
    buf
}

pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    invert: bool,
}

impl Reader<'_> {
    pub(crate) fn byte(&mut self) -> Result<u8, DecodeError> {
        let b = *self.bytes.get(self.pos).ok_or(DecodeError::Truncated)?;
        self.pos += 1;
        Ok(if self.invert { !b } else { b })
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        for b in &mut out {
            *b = self.byte()?;
        }
        Ok(out)
    }

    fn i32(&mut self) -> Result<i32, DecodeError> {
        Ok((u32::from_be_bytes(self.array()?) ^ 0x8000_0000) as i32)
    }

    fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok((u64::from_be_bytes(self.array()?) ^ 0x8000_0000_0000_0000) as i64)
    }

    /// The bytes of an escaped string (see [`put_escaped`]).
    fn escaped(&mut self) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        loop {
            let b = self.byte()?;
            if b != 0 {
                out.push(b);
                continue;
            }
            match self.byte()? {
                0xFF => out.push(0),
                0x00 => return Ok(out),
                b => return Err(DecodeError::BadByte(b)),
            }
        }
    }

    fn utf8(&mut self) -> Result<String, DecodeError> {
        String::from_utf8(self.escaped()?).map_err(|_| DecodeError::NotUtf8)
    }
}

/// Decode one datum of type `ty` from the front of `bytes`; returns it and the bytes consumed.
pub fn decode_datum(
    bytes: &[u8],
    ty: &DataType,
    order: OrderType,
) -> Result<(Datum, usize), DecodeError> {
    let flag = *bytes.first().ok_or(DecodeError::Truncated)?;
    match flag {
        NULL_FIRST_FLAG | NULL_LAST_FLAG => return Ok((None, 1)),
        NOT_NULL_FLAG => {}
        other => return Err(DecodeError::BadFlag(other)),
    }
    let mut r = Reader {
        bytes,
        pos: 1,
        invert: order.descending,
    };
    let scalar = decode_scalar(&mut r, ty)?;
    Ok((Some(scalar), r.pos))
}

/// A datum nested in a struct or list (ascending, NULLs last, inverted with its parent).
fn decode_nested(r: &mut Reader<'_>, ty: &DataType) -> Result<Datum, DecodeError> {
    match r.byte()? {
        NULL_FIRST_FLAG | NULL_LAST_FLAG => Ok(None),
        NOT_NULL_FLAG => decode_scalar(r, ty).map(Some),
        other => Err(DecodeError::BadFlag(other)),
    }
}

fn decode_scalar(r: &mut Reader<'_>, ty: &DataType) -> Result<ScalarImpl, DecodeError> {
    Ok(match ty {
        DataType::Boolean => match r.byte()? {
            0 => ScalarImpl::Bool(false),
            1 => ScalarImpl::Bool(true),
            b => return Err(DecodeError::BadByte(b)),
        },
        DataType::Int16 => ScalarImpl::Int16((u16::from_be_bytes(r.array()?) ^ 0x8000) as i16),
        DataType::Int32 => ScalarImpl::Int32(r.i32()?),
        DataType::Int64 => ScalarImpl::Int64(r.i64()?),
        DataType::Serial => ScalarImpl::Serial(r.i64()?.into()),
        DataType::Float32 => {
            ScalarImpl::Float32(float_from_order_bits32(u32::from_be_bytes(r.array()?)))
        }
        DataType::Float64 => {
            ScalarImpl::Float64(float_from_order_bits64(u64::from_be_bytes(r.array()?)))
        }
        DataType::Decimal => ScalarImpl::Decimal(decode_decimal(r)?),
        DataType::Date => {
            ScalarImpl::Date(Date::from_days_from_ce(r.i32()?).ok_or(DecodeError::Invalid("date"))?)
        }
        DataType::Time => {
            let (secs, nanos) = (
                u32::from_be_bytes(r.array()?),
                u32::from_be_bytes(r.array()?),
            );
            let t = Time::from_secs_nanos(secs, nanos).ok_or(DecodeError::Invalid("time"))?;
            ScalarImpl::Time(t)
        }
        DataType::Timestamp => {
            let (secs, nanos) = (r.i64()?, u32::from_be_bytes(r.array()?));
            let t =
                Timestamp::from_secs_nanos(secs, nanos).ok_or(DecodeError::Invalid("timestamp"))?;
            ScalarImpl::Timestamp(t)
        }
        DataType::Timestamptz => ScalarImpl::Timestamptz(Timestamptz::from_micros(r.i64()?)),
        DataType::Interval => {
            let total = (u128::from_be_bytes(r.array()?) ^ (1 << 127)) as i128;
            let i = Interval::from_total_usecs(total).ok_or(DecodeError::Invalid("interval"))?;
            ScalarImpl::Interval(i)
        }
        DataType::Varchar => ScalarImpl::Utf8(r.utf8()?.into_boxed_str()),
        DataType::Bytea => ScalarImpl::Bytea(r.escaped()?.into_boxed_slice()),
        DataType::Jsonb => {
            let v = serde_json::from_str(&r.utf8()?).map_err(|_| DecodeError::Invalid("jsonb"))?;
            ScalarImpl::Jsonb(crate::types::JsonbVal::new(v))
        }
        DataType::Struct(st) => {
            let fields = st
                .types()
                .map(|t| decode_nested(r, t))
                .collect::<Result<_, _>>()?;
            ScalarImpl::Struct(StructValue::new(fields))
        }
        DataType::List(elem) => ScalarImpl::List(decode_list(r, elem)?),
    })
}

fn decode_list(r: &mut Reader<'_>, elem: &DataType) -> Result<ListValue, DecodeError> {
    let mut values = Vec::new();
    loop {
        match r.byte()? {
            LIST_END => return Ok(ListValue::new(values)),
            LIST_MORE => values.push(decode_nested(r, elem)?),
            b => return Err(DecodeError::BadByte(b)),
        }
    }
}

/// Decode a whole key of the given column types and orders; every byte must be used.
pub fn decode_row(
    bytes: &[u8],
    types: &[DataType],
    orders: &[OrderType],
) -> Result<OwnedRow, DecodeError> {
    assert_eq!(types.len(), orders.len(), "one order type per key column");
    let mut pos = 0;
    let mut datums = Vec::with_capacity(types.len());
    for (ty, &order) in types.iter().zip(orders) {
        let (d, n) = decode_datum(&bytes[pos..], ty, order)?;
        datums.push(d);
        pos += n;
    }
    if pos != bytes.len() {
        return Err(DecodeError::TrailingBytes(bytes.len() - pos));
    }
    Ok(OwnedRow::new(datums))
}

/// The value order of two rows under `orders`: what the encoding must reproduce. Used by tests and by
/// executors that compare keys without encoding them.
pub fn cmp_rows(a: &OwnedRow, b: &OwnedRow, orders: &[OrderType]) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    for ((x, y), order) in a.datums().iter().zip(b.datums()).zip(orders) {
        let ord = match (x, y) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => {
                if order.nulls_first {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (Some(_), None) => {
                if order.nulls_first {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            (Some(x), Some(y)) => {
                let o = crate::types::cmp_scalar(x, y).expect("compared datums of different types");
                if order.descending { o.reverse() } else { o }
            }
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::types::arbitrary::{arb_datum, arb_type};

    fn arb_order() -> impl Strategy<Value = OrderType> {
        (any::<bool>(), any::<bool>()).prop_map(|(descending, nulls_first)| OrderType {
            descending,
            nulls_first,
        })
    }

    fn arb_schema() -> impl Strategy<Value = Vec<(DataType, OrderType)>> {
        proptest::collection::vec((arb_type(), arb_order()), 1..4)
    }

    fn arb_rows() -> impl Strategy<Value = (Vec<(DataType, OrderType)>, OwnedRow, OwnedRow)> {
        arb_schema().prop_flat_map(|schema| {
            let row = |schema: &Vec<(DataType, OrderType)>| {
                schema
                    .iter()
                    .map(|(t, _)| arb_datum(t))
                    .collect::<Vec<_>>()
                    .prop_map(OwnedRow::new)
            };
            (Just(schema.clone()), row(&schema), row(&schema))
        })
    }

    proptest! {
        #[test]
        fn encoding_order_equals_value_order((schema, a, b) in arb_rows()) {
            let orders: Vec<_> = schema.iter().map(|(_, o)| *o).collect();
            let types: Vec<_> = schema.iter().map(|(t, _)| t.clone()).collect();
            let ea = encode_row_to_vec(&a, &orders);
            let eb = encode_row_to_vec(&b, &orders);
            prop_assert_eq!(ea.cmp(&eb), cmp_rows(&a, &b, &orders));
            prop_assert_eq!(decode_row(&ea, &types, &orders).unwrap(), a);
            prop_assert_eq!(decode_row(&eb, &types, &orders).unwrap(), b);
        }
    }

    #[test]
    fn nulls_placement() {
        let asc = OrderType::ascending();
        let enc = |d: Datum, o| {
            let mut v = vec![];
            encode_datum(&d, o, &mut v);
            v
        };
        let null = enc(None, asc);
        let min = enc(Some(ScalarImpl::Int64(i64::MIN)), asc);
        let max = enc(Some(ScalarImpl::Int64(i64::MAX)), asc);
        assert!(min < max && max < null, "ASC NULLS LAST");
        let desc = OrderType::descending();
        let null = enc(None, desc);
        let min = enc(Some(ScalarImpl::Int64(i64::MIN)), desc);
        let max = enc(Some(ScalarImpl::Int64(i64::MAX)), desc);
        assert!(null < max && max < min, "DESC NULLS FIRST");
    }

    /// Equal values encode alike; the order is RisingWave's (`-Infinity < numbers < Infinity < NaN`).
    #[test]
    fn canonical_and_ordered() {
        use crate::types::{Decimal, F64, Interval, USECS_PER_DAY};
        let enc = |s: ScalarImpl| {
            let mut v = vec![];
            encode_datum(&Some(s), OrderType::ascending(), &mut v);
            v
        };
        let dec =
            |m: i64, scale: u32| enc(Decimal::from(rust_decimal::Decimal::new(m, scale)).into());
        assert_eq!(dec(10, 1), dec(100, 2));
        assert_eq!(dec(-10, 1), dec(-1, 0));
        assert_eq!(dec(0, 3), dec(0, 0));
        let ordered = [
            enc(Decimal::NegativeInf.into()),
            dec(-100, 0),
            dec(-99, 0),
            dec(-1, 2),
            dec(0, 0),
            dec(1, 28),
            dec(5, 1),
            dec(51, 2),
            dec(1, 0),
            dec(10, 0),
            enc(Decimal::PositiveInf.into()),
            enc(Decimal::NaN.into()),
        ];
        assert!(ordered.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(enc(F64::from(-0.0).into()), enc(F64::from(0.0).into()));
        assert!(enc(F64::from(f64::INFINITY).into()) < enc(F64::from(f64::NAN).into()));
        let mon = Interval::from_month_day_usec(1, 0, 0);
        assert_eq!(
            enc(mon.into()),
            enc(Interval::from_month_day_usec(0, 30, 0).into())
        );
        let day = Interval::from_month_day_usec(0, 0, USECS_PER_DAY);
        assert!(enc(day.into()) < enc(mon.into()));
    }

    #[test]
    fn rejects_garbage() {
        let t = [DataType::Int16];
        let o = [OrderType::ascending()];
        assert_eq!(decode_row(&[7], &t, &o), Err(DecodeError::BadFlag(7)));
        assert_eq!(decode_row(&[1, 0x80], &t, &o), Err(DecodeError::Truncated));
        assert_eq!(
            decode_row(&[1, 0x80, 0, 9], &t, &o),
            Err(DecodeError::TrailingBytes(1))
        );
    }
}
