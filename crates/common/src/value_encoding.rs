//! A compact, self-describing encoding of a row's values (not order-preserving): a tag byte per datum, then
//! fixed-width little-endian integers or a length-prefixed string.

use crate::memcmp::DecodeError;
use crate::row::OwnedRow;
use crate::types::{Datum, ScalarImpl};

const TAG_NULL: u8 = 0;
const TAG_FALSE: u8 = 1;
const TAG_TRUE: u8 = 2;
const TAG_I16: u8 = 3;
const TAG_I32: u8 = 4;
const TAG_I64: u8 = 5;
const TAG_UTF8: u8 = 6;

pub fn encode_datum(datum: &Datum, buf: &mut Vec<u8>) {
    match datum {
        None => buf.push(TAG_NULL),
        Some(ScalarImpl::Bool(false)) => buf.push(TAG_FALSE),
        Some(ScalarImpl::Bool(true)) => buf.push(TAG_TRUE),
        Some(ScalarImpl::Int16(v)) => {
            buf.push(TAG_I16);
            buf.extend_from_slice(&v.to_le_bytes());
        }
        Some(ScalarImpl::Int32(v)) => {
            buf.push(TAG_I32);
            buf.extend_from_slice(&v.to_le_bytes());
        }
        Some(ScalarImpl::Int64(v)) => {
            buf.push(TAG_I64);
            buf.extend_from_slice(&v.to_le_bytes());
        }
        Some(ScalarImpl::Utf8(s)) => {
            buf.push(TAG_UTF8);
            buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
            buf.extend_from_slice(s.as_bytes());
        }
    }
}

/// The length of a datum's value encoding.
pub fn encoded_len(datum: &Datum) -> usize {
    match datum {
        None | Some(ScalarImpl::Bool(_)) => 1,
        Some(ScalarImpl::Int16(_)) => 3,
        Some(ScalarImpl::Int32(_)) => 5,
        Some(ScalarImpl::Int64(_)) => 9,
        Some(ScalarImpl::Utf8(s)) => 5 + s.len(),
    }
}

/// Feed a datum's value encoding to `f` in pieces, without allocating (e.g. to hash it).
pub fn visit_encoded(datum: &Datum, mut f: impl FnMut(&[u8])) {
    let mut buf = [0u8; 9];
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
        Some(ScalarImpl::Utf8(s)) => {
            f(&[TAG_UTF8]);
            f(&(s.len() as u32).to_le_bytes());
            f(s.as_bytes());
            return;
        }
    };
    f(&buf[..n]);
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

pub fn decode_row(bytes: &[u8]) -> Result<OwnedRow, DecodeError> {
    let mut pos = 0;
    let mut datums = Vec::new();
    while pos < bytes.len() {
        let tag = bytes[pos];
        pos += 1;
        let d = match tag {
            TAG_NULL => None,
            TAG_FALSE => Some(ScalarImpl::Bool(false)),
            TAG_TRUE => Some(ScalarImpl::Bool(true)),
            TAG_I16 => Some(ScalarImpl::Int16(i16::from_le_bytes(
                take(bytes, &mut pos, 2)?.try_into().unwrap(),
            ))),
            TAG_I32 => Some(ScalarImpl::Int32(i32::from_le_bytes(
                take(bytes, &mut pos, 4)?.try_into().unwrap(),
            ))),
            TAG_I64 => Some(ScalarImpl::Int64(i64::from_le_bytes(
                take(bytes, &mut pos, 8)?.try_into().unwrap(),
            ))),
            TAG_UTF8 => {
                let len = u32::from_le_bytes(take(bytes, &mut pos, 4)?.try_into().unwrap());
                let s = take(bytes, &mut pos, len as usize)?;
                let s = std::str::from_utf8(s).map_err(|_| DecodeError::NotUtf8)?;
                Some(ScalarImpl::Utf8(s.into()))
            }
            other => return Err(DecodeError::BadFlag(other)),
        };
        datums.push(d);
    }
    Ok(OwnedRow::new(datums))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row;

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
