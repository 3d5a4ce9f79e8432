//! Arithmetic on RisingWave's decimal: a `rust_decimal` number or NaN/±Infinity, with PostgreSQL's rules for
//! the special values (`inf - inf` is NaN, `x / inf` is 0, NaN is contagious). A finite result that does not
//! fit is "Numeric out of range"; division of a finite number by zero is "Division by zero".

use std::cmp::Ordering;

use epochlab_common::types::Decimal;
use rust_decimal::Decimal as Rd;
use rust_decimal::prelude::*;

use crate::error::{ExprError, Result};

use Decimal::{NaN, NegativeInf as NegInf, Normalized as N, PositiveInf as PosInf};

fn sign_of(d: &Decimal) -> Ordering {
    match d {
        N(x) if x.is_zero() => Ordering::Equal,
        N(x) if x.is_sign_negative() => Ordering::Less,
        N(_) | PosInf => Ordering::Greater,
        NegInf => Ordering::Less,
        NaN => Ordering::Equal,
    }
}

fn finite(r: Option<Rd>) -> Result<Decimal> {
    r.map(N).ok_or(ExprError::NumericOutOfRange)
}

pub fn add(a: Decimal, b: Decimal) -> Result<Decimal> {
    Ok(match (a, b) {
        (N(x), N(y)) => return finite(x.checked_add(y)),
        (NaN, _) | (_, NaN) | (PosInf, NegInf) | (NegInf, PosInf) => NaN,
        (PosInf, _) | (_, PosInf) => PosInf,
        (NegInf, _) | (_, NegInf) => NegInf,
    })
}

pub fn neg(a: Decimal) -> Decimal {
    match a {
        N(x) => N(-x),
        NaN => NaN,
        PosInf => NegInf,
        NegInf => PosInf,
    }
}

pub fn sub(a: Decimal, b: Decimal) -> Result<Decimal> {
    match (a, b) {
        (N(x), N(y)) => finite(x.checked_sub(y)),
        _ => add(a, neg(b)),
    }
}

pub fn mul(a: Decimal, b: Decimal) -> Result<Decimal> {
    Ok(match (a, b) {
        (N(x), N(y)) => return finite(x.checked_mul(y)),
        (NaN, _) | (_, NaN) => NaN,
        // inf * 0 is NaN; otherwise the signs multiply.
        _ => match (sign_of(&a), sign_of(&b)) {
            (Ordering::Equal, _) | (_, Ordering::Equal) => NaN,
            (x, y) if x == y => PosInf,
            _ => NegInf,
        },
    })
}

pub fn div(a: Decimal, b: Decimal) -> Result<Decimal> {
    Ok(match (a, b) {
        (N(_), N(y)) if y.is_zero() => return Err(ExprError::DivisionByZero),
        (N(x), N(y)) => return finite(x.checked_div(y)),
        (NaN, _) | (_, NaN) => NaN,
        (N(_), PosInf | NegInf) => N(Rd::ZERO),
        (PosInf | NegInf, PosInf | NegInf) => NaN,
        (inf, N(y)) if y.is_zero() => inf,
        (inf, n) => {
            if sign_of(&inf) == sign_of(&n) {
                PosInf
            } else {
                NegInf
            }
        }
    })
}

/// A zero divisor is "Numeric out of range" (RisingWave's checked remainder), not "Division by zero".
pub fn rem(a: Decimal, b: Decimal) -> Result<Decimal> {
    Ok(match (a, b) {
        (N(x), N(y)) => return finite(x.checked_rem(y)),
        (N(x), PosInf | NegInf) => N(x),
        _ => NaN,
    })
}

pub fn abs(a: Decimal) -> Decimal {
    match a {
        N(x) => N(x.abs()),
        NegInf => PosInf,
        other => other,
    }
}

/// Round half away from zero to `dp` places (PostgreSQL's numeric rounding); negative `dp` rounds left of
/// the point.
pub fn round_dp(a: Decimal, dp: i32) -> Result<Decimal> {
    let N(x) = a else { return Ok(a) };
    if dp >= 0 {
        let dp = u32::try_from(dp).unwrap_or(u32::MAX).min(28);
        return Ok(N(x.round_dp_with_strategy(
            dp,
            RoundingStrategy::MidpointAwayFromZero,
        )));
    }
    let left = dp.unsigned_abs();
    if left > 28 {
        return Ok(N(Rd::ZERO));
    }
    let scale = Rd::from_i128_with_scale(10i128.pow(left), 0);
    let shifted = x.checked_div(scale).ok_or(ExprError::NumericOverflow)?;
    let rounded = shifted.round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero);
    rounded
        .checked_mul(scale)
        .map(N)
        .ok_or(ExprError::NumericOverflow)
}

pub fn ceil(a: Decimal) -> Decimal {
    match a {
        N(x) => N(positive_zero(x.ceil())),
        other => other,
    }
}

pub fn floor(a: Decimal) -> Decimal {
    match a {
        N(x) => N(x.floor()),
        other => other,
    }
}

pub fn trunc(a: Decimal) -> Decimal {
    match a {
        N(x) => N(positive_zero(x.trunc())),
        other => other,
    }
}

fn positive_zero(mut x: Rd) -> Rd {
    if x.is_zero() {
        x.set_sign_positive(true);
    }
    x
}

pub fn sign(a: Decimal) -> Decimal {
    match a {
        NaN => NaN,
        _ => N(match sign_of(&a) {
            Ordering::Less => Rd::NEGATIVE_ONE,
            Ordering::Equal => Rd::ZERO,
            Ordering::Greater => Rd::ONE,
        }),
    }
}

fn err_param(reason: &str) -> ExprError {
    ExprError::invalid_param("rhs", reason)
}

pub fn pow(a: Decimal, b: Decimal) -> Result<Decimal> {
    let one = N(Rd::ONE);
    match (a, b) {
        (N(x), N(y)) => {
            if x.is_zero() && y.is_sign_negative() && !y.is_zero() {
                return Err(err_param("zero raised to a negative power is undefined"));
            }
            if x.is_sign_negative() && !x.is_zero() && !y.fract().is_zero() {
                return Err(err_param(
                    "a negative number raised to a non-integer power yields a complex result",
                ));
            }
            x.checked_powd(y).map(N).ok_or(ExprError::NumericOverflow)
        }
        (N(x), NaN) if x == Rd::ONE => Ok(one),
        (NaN, N(y)) if y.is_zero() => Ok(one),
        (NaN, _) | (_, NaN) => Ok(NaN),
        (N(x), PosInf) => Ok(match x.abs().cmp(&Rd::ONE) {
            Ordering::Greater => PosInf,
            Ordering::Equal => one,
            Ordering::Less => N(Rd::ZERO),
        }),
        (N(x), NegInf) => match x.abs().cmp(&Rd::ONE) {
            Ordering::Greater => Ok(N(Rd::ZERO)),
            Ordering::Equal => Ok(one),
            Ordering::Less if x.is_zero() => {
                Err(err_param("zero raised to a negative power is undefined"))
            }
            Ordering::Less => Ok(PosInf),
        },
        (PosInf | NegInf, PosInf) => Ok(PosInf),
        (PosInf | NegInf, NegInf) => Ok(N(Rd::ZERO)),
        (PosInf, N(y)) => Ok(match sign_of(&N(y)) {
            Ordering::Greater => PosInf,
            Ordering::Equal => one,
            Ordering::Less => N(Rd::ZERO),
        }),
        (NegInf, N(y)) => neg_inf_pow(y),
    }
}

fn neg_inf_pow(y: Rd) -> Result<Decimal> {
    if !y.fract().is_zero() {
        return Err(err_param(
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    let odd = (y % Rd::TWO).abs() == Rd::ONE;
    Ok(match (sign_of(&N(y)), odd) {
        (Ordering::Greater, true) => NegInf,
        (Ordering::Greater, false) => PosInf,
        (Ordering::Equal, _) => N(Rd::ONE),
        (Ordering::Less, _) => N(Rd::ZERO),
    })
}

fn sqrt_err() -> ExprError {
    ExprError::invalid_param("sqrt input", "input cannot be negative value")
}

pub fn sqrt(a: Decimal) -> Result<Decimal> {
    match a {
        NaN | PosInf => Ok(a),
        NegInf => Err(sqrt_err()),
        N(x) => x.sqrt().map(N).ok_or_else(sqrt_err),
    }
}

pub fn exp(a: Decimal) -> Result<Decimal> {
    match a {
        N(x) => x.checked_exp().map(N).ok_or(ExprError::NumericOverflow),
        NegInf => Ok(N(Rd::ZERO)),
        other => Ok(other),
    }
}

/// `ln` and `log10`: PostgreSQL's errors for zero and negative arguments.
pub fn log(a: Decimal, base10: bool) -> Result<Decimal> {
    match a {
        N(x) if x.is_zero() => Err(ExprError::invalid_param(
            "input",
            "cannot take logarithm of zero",
        )),
        N(x) if x.is_sign_negative() => Err(ExprError::invalid_param(
            "input",
            "cannot take logarithm of a negative number",
        )),
        N(x) => {
            let r = if base10 {
                x.checked_log10()
            } else {
                x.checked_ln()
            };
            r.map(N).ok_or(ExprError::NumericOutOfRange)
        }
        NegInf => Err(ExprError::invalid_param(
            "input",
            "cannot take logarithm of a negative number",
        )),
        other => Ok(other),
    }
}

/// A decimal from a float: NaN and the infinities map to decimal's; a finite float out of decimal's range
/// is out of range.
pub fn from_f64(f: f64) -> Result<Decimal> {
    if f.is_nan() {
        Ok(NaN)
    } else if f.is_infinite() {
        Ok(if f > 0.0 { PosInf } else { NegInf })
    } else {
        Rd::from_f64(f)
            .map(|d| N(d.normalize()))
            .ok_or(ExprError::CastOutOfRange("decimal"))
    }
}

pub fn to_f64(d: Decimal) -> f64 {
    match d {
        N(x) => x.to_f64().unwrap_or(f64::NAN),
        NaN => f64::NAN,
        PosInf => f64::INFINITY,
        NegInf => f64::NEG_INFINITY,
    }
}

/// An integer from a decimal, rounding half away from zero.
pub fn to_i64(d: Decimal, target: &'static str) -> Result<i64> {
    match d {
        N(x) => x
            .round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero)
            .to_i64()
            .ok_or(ExprError::CastOutOfRange(target)),
        _ => Err(ExprError::CastOutOfRange(target)),
    }
}
