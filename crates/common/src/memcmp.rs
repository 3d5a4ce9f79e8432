//! An order-preserving ("memcomparable") encoding of datums: comparing two encodings byte by byte gives the
//! order of the values, column by column, each ascending or descending, with NULLs first or last.
//!
//! Per datum: a null flag, then the value. Integers are big-endian with the sign bit flipped; booleans one
//! byte; strings escape `0x00` as `0x00 0xFF` and end with `0x00 0x00`, which keeps the encoding prefix-free.
//! A descending column inverts the value bytes (not the flag), which reverses the order of prefix-free
//! encodings.

use thiserror::Error;

use crate::row::OwnedRow;
use crate::types::{DataType, Datum, ScalarImpl};

/// The order of one key column. The default is RisingWave's: ascending, NULLs last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    match scalar {
        ScalarImpl::Bool(v) => buf.push(u8::from(*v)),
        ScalarImpl::Int16(v) => buf.extend_from_slice(&((*v as u16) ^ 0x8000).to_be_bytes()),
        ScalarImpl::Int32(v) => buf.extend_from_slice(&((*v as u32) ^ 0x8000_0000).to_be_bytes()),
        ScalarImpl::Int64(v) => {
            buf.extend_from_slice(&((*v as u64) ^ 0x8000_0000_0000_0000).to_be_bytes())
        }
        ScalarImpl::Utf8(s) => {
            for &b in s.as_bytes() {
                buf.push(b);
                if b == 0 {
                    buf.push(0xFF);
                }
            }
            buf.extend_from_slice(&[0, 0]);
        }
    }
    if order.descending {
        for b in &mut buf[start..] {
            *b = !*b;
        }
    }
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

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    invert: bool,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, DecodeError> {
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
}

/// Decode one datum of type `ty` from the front of `bytes`; returns it and the bytes consumed.
pub fn decode_datum(
    bytes: &[u8],
    ty: DataType,
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
    let scalar = match ty {
        DataType::Boolean => match r.byte()? {
            0 => ScalarImpl::Bool(false),
            1 => ScalarImpl::Bool(true),
            b => return Err(DecodeError::BadByte(b)),
        },
        DataType::Int16 => ScalarImpl::Int16((u16::from_be_bytes(r.array()?) ^ 0x8000) as i16),
        DataType::Int32 => ScalarImpl::Int32((u32::from_be_bytes(r.array()?) ^ 0x8000_0000) as i32),
        DataType::Int64 => {
            ScalarImpl::Int64((u64::from_be_bytes(r.array()?) ^ 0x8000_0000_0000_0000) as i64)
        }
        DataType::Varchar => {
            let mut out = Vec::new();
            loop {
                let b = r.byte()?;
                if b != 0 {
                    out.push(b);
                    continue;
                }
                match r.byte()? {
                    0xFF => out.push(0),
                    0x00 => break,
                    b => return Err(DecodeError::BadByte(b)),
                }
            }
            let s = String::from_utf8(out).map_err(|_| DecodeError::NotUtf8)?;
            ScalarImpl::Utf8(s.into_boxed_str())
        }
    };
    Ok((Some(scalar), r.pos))
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
    for (&ty, &order) in types.iter().zip(orders) {
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

    fn arb_datum(ty: DataType) -> BoxedStrategy<Datum> {
        let scalar: BoxedStrategy<ScalarImpl> = match ty {
            DataType::Boolean => any::<bool>().prop_map(ScalarImpl::Bool).boxed(),
            DataType::Int16 => any::<i16>().prop_map(ScalarImpl::Int16).boxed(),
            DataType::Int32 => any::<i32>().prop_map(ScalarImpl::Int32).boxed(),
            DataType::Int64 => any::<i64>().prop_map(ScalarImpl::Int64).boxed(),
            DataType::Varchar => proptest::collection::vec(
                prop_oneof![
                    Just('\0'),
                    Just('a'),
                    Just('b'),
                    Just('\u{ff}'),
                    any::<char>()
                ],
                0..6,
            )
            .prop_map(|cs| ScalarImpl::Utf8(cs.into_iter().collect::<String>().into()))
            .boxed(),
        };
        proptest::option::weighted(0.85, scalar).boxed()
    }

    fn arb_order() -> impl Strategy<Value = OrderType> {
        (any::<bool>(), any::<bool>()).prop_map(|(descending, nulls_first)| OrderType {
            descending,
            nulls_first,
        })
    }

    fn arb_schema() -> impl Strategy<Value = Vec<(DataType, OrderType)>> {
        proptest::collection::vec(
            (
                prop_oneof![
                    Just(DataType::Boolean),
                    Just(DataType::Int16),
                    Just(DataType::Int32),
                    Just(DataType::Int64),
                    Just(DataType::Varchar)
                ],
                arb_order(),
            ),
            1..4,
        )
    }

    fn arb_rows() -> impl Strategy<Value = (Vec<(DataType, OrderType)>, OwnedRow, OwnedRow)> {
        arb_schema().prop_flat_map(|schema| {
            let row = |schema: &Vec<(DataType, OrderType)>| {
                schema
                    .iter()
                    .map(|(t, _)| arb_datum(*t))
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
            let types: Vec<_> = schema.iter().map(|(t, _)| *t).collect();
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
