//! Running sums for sum/avg/stddev/variance: exact for integers and decimals, floating for floats, per
//! field for intervals. Every step can be undone (a delete subtracts what an insert added).

use epochlab_common::types::{Decimal, F32, F64, Interval};
use epochlab_common::{DataType, Datum, ScalarImpl};

use crate::error::{ExprError, Result};
use crate::scalar::decimal as dec;

#[derive(Clone, Debug)]
pub enum Sum {
    Int(i128),
    Decimal(Decimal),
    /// real sums in real, step by step, as RisingWave's `sum(float4) -> float4`.
    Float32(f32),
    Float(f64),
    Interval {
        months: i64,
        days: i64,
        usecs: i128,
    },
}

impl Sum {
    pub fn zero_for(arg: &DataType) -> Sum {
        match arg {
            DataType::Int16 | DataType::Int32 | DataType::Int64 => Sum::Int(0),
            DataType::Float32 => Sum::Float32(0.0),
            DataType::Float64 => Sum::Float(0.0),
            DataType::Interval => Sum::Interval {
                months: 0,
                days: 0,
                usecs: 0,
            },
            _ => Sum::Decimal(Decimal::from(0i64)),
        }
    }

    /// Add (`sign` 1) or subtract (-1) a value.
    pub fn add(&mut self, v: &ScalarImpl, sign: i64) -> Result<()> {
        use ScalarImpl as S;
        match (self, v) {
            (Sum::Int(acc), v) => *acc += i128::from(sign) * i128::from(int_of(v)?),
            (Sum::Float32(acc), S::Float32(f)) => *acc += sign as f32 * f.0,
            (Sum::Float(acc), S::Float64(f)) => *acc += sign as f64 * f.0,
            (Sum::Decimal(acc), v) => {
                let d = decimal_of(v)?;
                *acc = if sign > 0 {
                    dec::add(*acc, d)?
                } else {
                    dec::sub(*acc, d)?
                };
            }
            (
                Sum::Interval {
                    months,
                    days,
                    usecs,
                },
                S::Interval(i),
            ) => {
                *months += sign * i64::from(i.months());
                *days += sign * i64::from(i.days());
                *usecs += i128::from(sign) * i128::from(i.usecs());
            }
            (_, v) => return Err(ExprError::InvalidState(format!("cannot sum {v:?}"))),
        }
        Ok(())
    }

    /// The sum as `ret`.
    pub fn value(&self, ret: &DataType) -> Result<ScalarImpl> {
        Ok(match (self, ret) {
            (Sum::Int(s), DataType::Int64) => {
                ScalarImpl::Int64(i64::try_from(*s).map_err(|_| ExprError::NumericOutOfRange)?)
            }
            (Sum::Int(s), _) => ScalarImpl::Decimal(int128_decimal(*s)?),
            (Sum::Decimal(d), _) => ScalarImpl::Decimal(*d),
            (Sum::Float32(f), _) => ScalarImpl::Float32(F32::from(*f)),
            (Sum::Float(f), DataType::Float32) => ScalarImpl::Float32(F32::from(*f as f32)),
            (Sum::Float(f), _) => ScalarImpl::Float64(F64::from(*f)),
            (
                Sum::Interval {
                    months,
                    days,
                    usecs,
                },
                _,
            ) => ScalarImpl::Interval(interval_of(*months, *days, *usecs)?),
        })
    }

    /// The sum as a decimal (integers and decimals) or a float.
    pub fn as_number(&self) -> Result<Number> {
        Ok(match self {
            Sum::Int(s) => Number::Decimal(int128_decimal(*s)?),
            Sum::Decimal(d) => Number::Decimal(*d),
            Sum::Float32(f) => Number::Float(f64::from(*f)),
            Sum::Float(f) => Number::Float(*f),
            Sum::Interval { .. } => {
                return Err(ExprError::InvalidState("interval is not a number".into()));
            }
        })
    }
}

#[derive(Clone, Copy, Debug)]
pub enum Number {
    Decimal(Decimal),
    Float(f64),
}

fn int128_decimal(v: i128) -> Result<Decimal> {
    rust_decimal::Decimal::try_from_i128_with_scale(v, 0)
        .map(Decimal::Normalized)
        .map_err(|_| ExprError::NumericOutOfRange)
}

fn interval_of(months: i64, days: i64, usecs: i128) -> Result<Interval> {
    let m = i32::try_from(months).map_err(|_| ExprError::NumericOutOfRange)?;
    let d = i32::try_from(days).map_err(|_| ExprError::NumericOutOfRange)?;
    let u = i64::try_from(usecs).map_err(|_| ExprError::NumericOutOfRange)?;
    Ok(Interval::from_month_day_usec(m, d, u))
}

pub fn int_of(v: &ScalarImpl) -> Result<i64> {
    match v {
        ScalarImpl::Int16(i) => Ok(i64::from(*i)),
        ScalarImpl::Int32(i) => Ok(i64::from(*i)),
        ScalarImpl::Int64(i) => Ok(*i),
        other => Err(ExprError::InvalidState(format!(
            "expected an integer, got {other:?}"
        ))),
    }
}

fn decimal_of(v: &ScalarImpl) -> Result<Decimal> {
    match v {
        ScalarImpl::Decimal(d) => Ok(*d),
        other => int_of(other).map(Decimal::from),
    }
}

/// The square of a value, in the accumulator's domain (for variance).
pub fn square(v: &ScalarImpl) -> Result<ScalarImpl> {
    Ok(match v {
        ScalarImpl::Float32(f) => ScalarImpl::Float32(F32::from(f.0 * f.0)),
        ScalarImpl::Float64(f) => ScalarImpl::Float64(F64::from(f.0 * f.0)),
        other => {
            let d = decimal_of(other)?;
            ScalarImpl::Decimal(dec::mul(d, d)?)
        }
    })
}

/// avg = sum / count in the return type.
pub fn avg(sum: &Sum, count: i64, ret: &DataType) -> Result<Datum> {
    if count == 0 {
        return Ok(None);
    }
    Ok(Some(match sum {
        Sum::Interval { .. } => {
            let total = sum.value(ret)?;
            let ScalarImpl::Interval(i) = total else {
                unreachable!("an interval sum")
            };
            crate::scalar::datetime::interval_div(i, &ScalarImpl::Int64(count))?
        }
        _ => match sum.as_number()? {
            Number::Decimal(d) => ScalarImpl::Decimal(dec::div(d, Decimal::from(count))?),
            Number::Float(f) => ScalarImpl::Float64(F64::from(f / count as f64)),
        },
    }))
}

/// Population or sample variance (and its square root) from the sum, the sum of squares and the count.
pub fn variance(sum: &Sum, sum_sq: &Sum, count: i64, sample: bool, root: bool) -> Result<Datum> {
    let denom = if sample { count - 1 } else { count };
    if denom <= 0 {
        return Ok(None);
    }
    Ok(Some(match (sum.as_number()?, sum_sq.as_number()?) {
        (Number::Decimal(s), Number::Decimal(sq)) => {
            let n = Decimal::from(count);
            let num = dec::sub(sq, dec::div(dec::mul(s, s)?, n)?)?;
            let var = dec::div(num, Decimal::from(denom))?;
            ScalarImpl::Decimal(if root { dec::sqrt(var)? } else { var })
        }
        (Number::Float(s), Number::Float(sq)) => {
            let var = ((sq - s * s / count as f64) / denom as f64).max(0.0);
            ScalarImpl::Float64(F64::from(if root { var.sqrt() } else { var }))
        }
        _ => return Err(ExprError::InvalidState("mixed variance sums".into())),
    }))
}
