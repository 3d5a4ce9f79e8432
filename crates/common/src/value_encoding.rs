//! A compact, self-describing encoding of a row's values (not order-preserving): a tag byte per datum, then
//! fixed-width little-endian integers or a length-prefixed string. Every field of a value is kept (a
//! decimal's scale, a float's sign of zero, an interval's months, days and microseconds); structs and lists
//! are a count and their datums.

use crate::memcmp::DecodeError;
use crate::row::OwnedRow;
use crate::types::{
    Date, Datum, Decimal, Interval, JsonbVal, ListValue, ScalarImpl, StructValue, Time, Timestamp,
    Timestamptz,
};

const TAG_NULL: u8 = 0;
const TAG_FALSE: u8 = 1;
const TAG_TRUE: u8 = 2;
const TAG_I16: u8 = 3;
const TAG_I32: u8 = 4;
const TAG_I64: u8 = 5;
const TAG_UTF8: u8 = 6;
const TAG_SERIAL: u8 = 7;
const TAG_F32: u8 = 8;
const TAG_F64: u8 = 9;
const TAG_DECIMAL: u8 = 10;
const TAG_DECIMAL_NAN: u8 = 11;
const TAG_DECIMAL_POS_INF: u8 = 12;
const TAG_DECIMAL_NEG_INF: u8 = 13;
const TAG_DATE: u8 = 14;
const TAG_TIME: u8 = 15;
const TAG_TIMESTAMP: u8 = 16;
const TAG_TIMESTAMPTZ: u8 = 17;
const TAG_INTERVAL: u8 = 18;
const TAG_BYTEA: u8 = 19;
const TAG_JSONB: u8 = 20;
const TAG_STRUCT: u8 = 21;
const TAG_LIST: u8 = 22;

pub fn encode_datum(datum: &Datum, buf: &mut Vec<u8>) {
    visit_encoded(datum, |b| buf.extend_from_slice(b));
}

/// The length of a datum's value encoding.
pub fn encoded_len(datum: &Datum) -> usize {
    let mut n = 0;
    visit_encoded(datum, |b| n += b.len());
    n
}

/// Feed a datum's value encoding to `f` in pieces (the old types without allocating, e.g. to hash them).
pub fn visit_encoded(datum: &Datum, mut f: impl FnMut(&[u8])) {
    let mut buf = [0u8; 17];
    let mut fixed = |tag: u8, bytes: &[u8]| {
        buf[0] = tag;
        buf[1..=bytes.len()].copy_from_slice(bytes);
        1 + bytes.len()
    };
    let n = match datum {
        None => fixed(TAG_NULL, &[]),
        Some(ScalarImpl::Bool(false)) => fixed(TAG_FALSE, &[]),
        Some(ScalarImpl::Bool(true)) => fixed(TAG_TRUE, &[]),
        Some(ScalarImpl::Int16(v)) => fixed(TAG_I16, &v.to_le_bytes()),
        Some(ScalarImpl::Int32(v)) => fixed(TAG_I32, &v.to_le_bytes()),
        Some(ScalarImpl::Int64(v)) => fixed(TAG_I64, &v.to_le_bytes()),
        Some(ScalarImpl::Utf8(s)) => return visit_bytes(TAG_UTF8, s.as_bytes(), f),
        Some(other) => return visit_scalar(other, &mut f),
    };
    f(&buf[..n]);
}

fn visit_bytes(tag: u8, bytes: &[u8], mut f: impl FnMut(&[u8])) {
    f(&[tag]);
    f(&(bytes.len() as u32).to_le_bytes());
    f(bytes);
}

/// A tag, then fixed-width little-endian fields or a length-prefixed payload; structs and lists as a
/// count and their datums.
fn visit_scalar(scalar: &ScalarImpl, f: &mut dyn FnMut(&[u8])) {
    let mut out = Vec::with_capacity(17);
    match scalar {
        // Encoded without allocating by `visit_encoded`; the same bytes here.
        ScalarImpl::Bool(v) => out.push(if *v { TAG_TRUE } else { TAG_FALSE }),
        ScalarImpl::Int16(v) => put(&mut out, TAG_I16, &[&v.to_le_bytes()]),
        ScalarImpl::Int32(v) => put(&mut out, TAG_I32, &[&v.to_le_bytes()]),
        ScalarImpl::Int64(v) => put(&mut out, TAG_I64, &[&v.to_le_bytes()]),
        ScalarImpl::Utf8(s) => return visit_bytes(TAG_UTF8, s.as_bytes(), f),
        ScalarImpl::Serial(v) => put(&mut out, TAG_SERIAL, &[&v.as_row_id().to_le_bytes()]),
        ScalarImpl::Float32(v) => put(&mut out, TAG_F32, &[&v.0.to_bits().to_le_bytes()]),
        ScalarImpl::Float64(v) => put(&mut out, TAG_F64, &[&v.0.to_bits().to_le_bytes()]),
        ScalarImpl::Decimal(v) => put_decimal(&mut out, *v),
        ScalarImpl::Date(v) => put(&mut out, TAG_DATE, &[&v.days_from_ce().to_le_bytes()]),
        ScalarImpl::Time(v) => {
            let (secs, nanos) = v.secs_nanos();
            put(
                &mut out,
                TAG_TIME,
                &[&secs.to_le_bytes(), &nanos.to_le_bytes()],
            );
        }
        ScalarImpl::Timestamp(v) => {
            let (secs, nanos) = v.secs_nanos();
            put(
                &mut out,
                TAG_TIMESTAMP,
                &[&secs.to_le_bytes(), &nanos.to_le_bytes()],
            );
        }
        ScalarImpl::Timestamptz(v) => {
            put(
                &mut out,
                TAG_TIMESTAMPTZ,
                &[&v.timestamp_micros().to_le_bytes()],
            );
        }
        ScalarImpl::Interval(v) => put(
            &mut out,
            TAG_INTERVAL,
            &[
                &v.months().to_le_bytes(),
                &v.days().to_le_bytes(),
                &v.usecs().to_le_bytes(),
            ],
        ),
        ScalarImpl::Bytea(b) => return visit_bytes(TAG_BYTEA, b, f),
        ScalarImpl::Jsonb(j) => {
            let text = serde_json::to_string(j.value()).expect("a JSON value serialises");
            return visit_bytes(TAG_JSONB, text.as_bytes(), f);
        }
        ScalarImpl::Struct(s) => return visit_datums(TAG_STRUCT, s.fields(), f),
        ScalarImpl::List(l) => return visit_datums(TAG_LIST, l.values(), f),
    }
    f(&out);
}

fn put(out: &mut Vec<u8>, tag: u8, fields: &[&[u8]]) {
    out.push(tag);
    for field in fields {
        out.extend_from_slice(field);
    }
}

fn put_decimal(out: &mut Vec<u8>, v: Decimal) {
    match v {
        Decimal::Normalized(d) => put(out, TAG_DECIMAL, &[&d.serialize()]),
        Decimal::NaN => out.push(TAG_DECIMAL_NAN),
        Decimal::PositiveInf => out.push(TAG_DECIMAL_POS_INF),
        Decimal::NegativeInf => out.push(TAG_DECIMAL_NEG_INF),
    }
}

fn visit_datums(tag: u8, datums: &[Datum], f: &mut dyn FnMut(&[u8])) {
    f(&[tag]);
    f(&(datums.len() as u32).to_le_bytes());
    for d in datums {
        visit_encoded(d, &mut *f);
    }
}

pub fn encode_row(row: &OwnedRow) -> Vec<u8> {
    let mut buf = Vec::with_capacity(row.datums().iter().map(encoded_len).sum());
    for d in row.datums() {
        encode_datum(d, &mut buf);
    }
    buf
}

/// Encode only the datums at `indices`.
pub fn encode_row_projected(row: &OwnedRow, indices: &[usize]) -> Vec<u8> {
    let mut buf = Vec::with_capacity(projected_len(row, indices));
    encode_projected_into(row, indices, &mut buf);
    buf
}

/// The length of the encoding of the datums at `indices`.
pub fn projected_len(row: &OwnedRow, indices: &[usize]) -> usize {
    indices.iter().map(|&i| encoded_len(row.datum_at(i))).sum()
}

/// Append the encoding of the datums at `indices` to `buf`.
pub fn encode_projected_into(row: &OwnedRow, indices: &[usize], buf: &mut Vec<u8>) {
    for &i in indices {
        encode_datum(row.datum_at(i), buf);
    }
}

fn take<'a>(bytes: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8], DecodeError> {
    let s = bytes.get(*pos..*pos + n).ok_or(DecodeError::Truncated)?;
    *pos += n;
    Ok(s)
}

fn take_array<const N: usize>(bytes: &[u8], pos: &mut usize) -> Result<[u8; N], DecodeError> {
    Ok(take(bytes, pos, N)?.try_into().expect("took N bytes"))
}

fn take_prefixed<'a>(bytes: &'a [u8], pos: &mut usize) -> Result<&'a [u8], DecodeError> {
    let len = u32::from_le_bytes(take_array(bytes, pos)?);
    take(bytes, pos, len as usize)
}

/// Whether `written`, a row's old value in a delete or update, is the row `stored` holds, which may have
/// been written before its table gained columns (`ALTER TABLE .. ADD COLUMN` appends them): the same bytes,
/// or `stored`'s followed by NULLs only. Two rows of one schema have the same number of values, so this is
/// equality for them.
pub fn same_row(written: &[u8], stored: &[u8]) -> bool {
    written.starts_with(stored) && written[stored.len()..].iter().all(|&t| t == TAG_NULL)
}

pub fn decode_row(bytes: &[u8]) -> Result<OwnedRow, DecodeError> {
    let mut pos = 0;
    let mut datums = Vec::new();
    while pos < bytes.len() {
        datums.push(decode_datum(bytes, &mut pos)?);
    }
    Ok(OwnedRow::new(datums))
}

/// Decode the datum at `*pos` and advance past it.
pub fn decode_datum(bytes: &[u8], pos: &mut usize) -> Result<Datum, DecodeError> {
    let tag = *bytes.get(*pos).ok_or(DecodeError::Truncated)?;
    *pos += 1;
    let scalar = match tag {
        TAG_NULL => return Ok(None),
        TAG_FALSE => ScalarImpl::Bool(false),
        TAG_TRUE => ScalarImpl::Bool(true),
        TAG_I16 => ScalarImpl::Int16(i16::from_le_bytes(take_array(bytes, pos)?)),
        TAG_I32 => ScalarImpl::Int32(i32::from_le_bytes(take_array(bytes, pos)?)),
        TAG_I64 => ScalarImpl::Int64(i64::from_le_bytes(take_array(bytes, pos)?)),
        TAG_UTF8 => {
            let s = std::str::from_utf8(take_prefixed(bytes, pos)?);
            ScalarImpl::Utf8(s.map_err(|_| DecodeError::NotUtf8)?.into())
        }
        TAG_SERIAL => ScalarImpl::Serial(i64::from_le_bytes(take_array(bytes, pos)?).into()),
        TAG_F32 => ScalarImpl::Float32(f32::from_le_bytes(take_array(bytes, pos)?).into()),
        TAG_F64 => ScalarImpl::Float64(f64::from_le_bytes(take_array(bytes, pos)?).into()),
        TAG_DECIMAL..=TAG_DECIMAL_NEG_INF => ScalarImpl::Decimal(decode_decimal(tag, bytes, pos)?),
        TAG_DATE..=TAG_INTERVAL => decode_temporal(tag, bytes, pos)?,
        TAG_BYTEA => ScalarImpl::Bytea(take_prefixed(bytes, pos)?.into()),
        TAG_JSONB => {
            let v = serde_json::from_slice(take_prefixed(bytes, pos)?);
            ScalarImpl::Jsonb(JsonbVal::new(v.map_err(|_| DecodeError::Invalid("jsonb"))?))
        }
        TAG_STRUCT => ScalarImpl::Struct(StructValue::new(decode_datums(bytes, pos)?)),
        TAG_LIST => ScalarImpl::List(ListValue::new(decode_datums(bytes, pos)?)),
        other => return Err(DecodeError::BadFlag(other)),
    };
    Ok(Some(scalar))
}

fn decode_decimal(tag: u8, bytes: &[u8], pos: &mut usize) -> Result<Decimal, DecodeError> {
    Ok(match tag {
        TAG_DECIMAL => {
            let d = rust_decimal::Decimal::deserialize(take_array(bytes, pos)?);
            Decimal::Normalized(d)
        }
        TAG_DECIMAL_NAN => Decimal::NaN,
        TAG_DECIMAL_POS_INF => Decimal::PositiveInf,
        _ => Decimal::NegativeInf,
    })
}

fn decode_temporal(tag: u8, bytes: &[u8], pos: &mut usize) -> Result<ScalarImpl, DecodeError> {
    let i32_at = |pos: &mut usize| take_array(bytes, pos).map(i32::from_le_bytes);
    let u32_at = |pos: &mut usize| take_array(bytes, pos).map(u32::from_le_bytes);
    let i64_at = |pos: &mut usize| take_array(bytes, pos).map(i64::from_le_bytes);
    Ok(match tag {
        TAG_DATE => Date::from_days_from_ce(i32_at(pos)?)
            .ok_or(DecodeError::Invalid("date"))?
            .into(),
        TAG_TIME => Time::from_secs_nanos(u32_at(pos)?, u32_at(pos)?)
            .ok_or(DecodeError::Invalid("time"))?
            .into(),
        TAG_TIMESTAMP => Timestamp::from_secs_nanos(i64_at(pos)?, u32_at(pos)?)
            .ok_or(DecodeError::Invalid("timestamp"))?
            .into(),
        TAG_TIMESTAMPTZ => Timestamptz::from_micros(i64_at(pos)?).into(),
        _ => Interval::from_month_day_usec(i32_at(pos)?, i32_at(pos)?, i64_at(pos)?).into(),
    })
}

fn decode_datums(bytes: &[u8], pos: &mut usize) -> Result<Vec<Datum>, DecodeError> {
    let n = u32::from_le_bytes(take_array(bytes, pos)?) as usize;
    // Every datum takes at least one byte: a count beyond the input is corrupt, not a huge allocation.
    if n > bytes.len() - *pos {
        return Err(DecodeError::Truncated);
    }
    (0..n).map(|_| decode_datum(bytes, pos)).collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::row;
    use crate::types::arbitrary::{arb_datum, arb_type};

    fn arb_row() -> impl Strategy<Value = OwnedRow> {
        proptest::collection::vec(arb_type(), 1..4).prop_flat_map(|types| {
            let datums: Vec<_> = types.iter().map(arb_datum).collect();
            datums.prop_map(OwnedRow::new)
        })
    }

    fn arb_literal() -> impl Strategy<Value = crate::expr_node::ExprNode> {
        arb_type().prop_flat_map(|ty| {
            arb_datum(&ty)
                .prop_map(move |value| crate::expr_node::ExprNode::literal(value, ty.clone()))
        })
    }

    #[test]
    fn a_row_and_its_padded_self_are_the_same_row() {
        let short = encode_row(&OwnedRow::new(vec![Some(ScalarImpl::Int32(5))]));
        let padded = encode_row(&OwnedRow::new(vec![Some(ScalarImpl::Int32(5)), None, None]));
        let other = encode_row(&OwnedRow::new(vec![
            Some(ScalarImpl::Int32(5)),
            Some(ScalarImpl::Int32(0)),
        ]));
        assert!(same_row(&padded, &short) && same_row(&short, &short));
        assert!(
            !same_row(&short, &padded),
            "a stored row is never wider than its delete"
        );
        assert!(!same_row(&other, &short) && !same_row(&other, &padded));
    }

    proptest! {
        /// Every type round-trips, bit for bit: the fields (`1.50` keeps its scale, `-0.0` its sign,
        /// `1 mon` stays a month), not only an equal value.
        #[test]
        fn round_trips_every_type(r in arb_row()) {
            let bytes = encode_row(&r);
            let back = decode_row(&bytes).unwrap();
            prop_assert_eq!(format!("{back:?}"), format!("{r:?}"));
            prop_assert_eq!(bytes.len(), r.datums().iter().map(encoded_len).sum::<usize>());
        }
    }

    proptest! {
        /// A literal of every type, and a row of a plan's `Values`, come back from JSON (meta's store) with
        /// their fields, not only an equal value.
        #[test]
        fn serde_round_trips_literals_and_rows(r in arb_row(), lit in arb_literal()) {
            let json = serde_json::to_string(&lit).unwrap();
            let back: crate::expr_node::ExprNode = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(format!("{back:?}"), format!("{lit:?}"));
            let json = serde_json::to_string(&r).unwrap();
            let back: OwnedRow = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(format!("{back:?}"), format!("{r:?}"));
        }
    }

    #[test]
    fn serde_refuses_a_bad_encoding() {
        for bad in ["\"zz\"", "\"0\"", "\"0500\"", "\"00ff\""] {
            let lit = format!(r#"{{"Literal":{{"value":{bad},"ty":"Int64"}}}}"#);
            assert!(
                serde_json::from_str::<crate::expr_node::ExprNode>(&lit).is_err(),
                "{lit}"
            );
        }
    }

    #[test]
    fn round_trip() {
        let r = row![1i16, 2i32, 3i64, true, "héllo\0", None::<i64>];
        assert_eq!(decode_row(&encode_row(&r)).unwrap(), r);
        assert_eq!(decode_row(&[TAG_I64, 1]), Err(DecodeError::Truncated));
    }

    /// The length and the piecewise visit agree with the encoding, datum by datum.
    #[test]
    fn length_and_visit_match_the_encoding() {
        let r = row![1i16, 2i32, 3i64, true, false, "héllo\0", "", None::<i64>];
        for d in r.datums() {
            let mut whole = Vec::new();
            encode_datum(d, &mut whole);
            let mut pieces = Vec::new();
            visit_encoded(d, |b| pieces.extend_from_slice(b));
            assert_eq!(pieces, whole, "{d:?}");
            assert_eq!(encoded_len(d), whole.len(), "{d:?}");
        }
        let v = encode_row_projected(&r, &[5, 2]);
        assert_eq!(v.len(), v.capacity(), "sized exactly");
    }
}

/// A datum where a plan is serialized (meta's store): its value encoding, as lowercase hex. Use with
/// `#[serde(with = "crate::value_encoding::serde_datum")]`.
pub mod serde_datum {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::{decode_datum, encode_datum, from_hex, to_hex};
    use crate::types::Datum;

    pub fn serialize<S: Serializer>(datum: &Datum, s: S) -> Result<S::Ok, S::Error> {
        let mut buf = Vec::new();
        encode_datum(datum, &mut buf);
        s.serialize_str(&to_hex(&buf))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Datum, D::Error> {
        use serde::de::Error as _;
        let bytes = from_hex::<D::Error>(&String::deserialize(d)?)?;
        let mut pos = 0;
        let datum = decode_datum(&bytes, &mut pos).map_err(D::Error::custom)?;
        if pos != bytes.len() {
            return Err(D::Error::custom("a datum's encoding has trailing bytes"));
        }
        Ok(datum)
    }
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex<E: serde::de::Error>(hex: &str) -> Result<Vec<u8>, E> {
    if !hex.len().is_multiple_of(2) || !hex.is_ascii() {
        return Err(E::custom("a value encoding is not hex"));
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).map_err(E::custom))
        .collect()
}

/// A row where a plan is serialized (a `Values` node's rows): its value encoding, as hex.
impl serde::Serialize for OwnedRow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&to_hex(&encode_row(self)))
    }
}

impl<'de> serde::Deserialize<'de> for OwnedRow {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let hex = <String as serde::Deserialize>::deserialize(d)?;
        decode_row(&from_hex::<D::Error>(&hex)?).map_err(serde::de::Error::custom)
    }
}
