//! The memcomparable encoding of a decimal: a class byte (`-Infinity`, negative, zero, positive,
//! `+Infinity`, NaN, in that order), then for a non-zero number its decimal exponent and its significant
//! digits (trailing zeros dropped, so `1.0` and `1.00` encode alike), each digit `d` as `d + 1`, ended by
//! `0`; a negative number's exponent and digits are inverted so that a larger magnitude sorts first.

use super::{DecodeError, Reader};
use crate::types::Decimal;

const NEG_INF: u8 = 0;
const NEGATIVE: u8 = 1;
const ZERO: u8 = 2;
const POSITIVE: u8 = 3;
const POS_INF: u8 = 4;
const NAN: u8 = 5;
/// The exponent is stored biased so that it fits a byte and orders as unsigned.
const EXPONENT_BIAS: i32 = 128;

pub(super) fn encode_decimal(v: Decimal, buf: &mut Vec<u8>) {
    let d = match v {
        Decimal::NegativeInf => return buf.push(NEG_INF),
        Decimal::PositiveInf => return buf.push(POS_INF),
        Decimal::NaN => return buf.push(NAN),
        Decimal::Normalized(d) if d.is_zero() => return buf.push(ZERO),
        Decimal::Normalized(d) => d,
    };
    let negative = d.is_sign_negative();
    buf.push(if negative { NEGATIVE } else { POSITIVE });
    let start = buf.len();
    let digits = d.mantissa().unsigned_abs().to_string();
    let significant = digits.trim_end_matches('0');
    // value = 0.<digits> * 10^exponent
    let exponent = digits.len() as i32 - d.scale() as i32;
    buf.push((exponent + EXPONENT_BIAS) as u8);
    buf.extend(significant.bytes().map(|c| c - b'0' + 1));
    buf.push(0);
    if negative {
        for b in &mut buf[start..] {
            *b = !*b;
        }
    }
}

pub(super) fn decode_decimal(r: &mut Reader<'_>) -> Result<Decimal, DecodeError> {
    let negative = match r.byte()? {
        NEG_INF => return Ok(Decimal::NegativeInf),
        POS_INF => return Ok(Decimal::PositiveInf),
        NAN => return Ok(Decimal::NaN),
        ZERO => return Ok(Decimal::Normalized(rust_decimal::Decimal::ZERO)),
        NEGATIVE => true,
        POSITIVE => false,
        b => return Err(DecodeError::BadByte(b)),
    };
    let flip = |b: u8| if negative { !b } else { b };
    let exponent = flip(r.byte()?) as i32 - EXPONENT_BIAS;
    let mut mantissa: i128 = 0;
    let mut len = 0i32;
    loop {
        let b = flip(r.byte()?);
        match b {
            0 => break,
            1..=10 if len < 40 => {
                mantissa = mantissa * 10 + i128::from(b - 1);
                len += 1;
            }
            _ => return Err(DecodeError::BadByte(b)),
        }
    }
    let mut scale = len - exponent;
    while scale < 0 {
        mantissa = mantissa
            .checked_mul(10)
            .ok_or(DecodeError::Invalid("decimal"))?;
        scale += 1;
    }
    let signed = if negative { -mantissa } else { mantissa };
    rust_decimal::Decimal::try_from_i128_with_scale(signed, scale as u32)
        .map(Decimal::Normalized)
        .map_err(|_| DecodeError::Invalid("decimal"))
}
