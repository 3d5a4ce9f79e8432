//! `+ - * / %`, unary minus and the numeric functions for integers, floats and decimals, with RisingWave's
//! errors: "Numeric out of range" on overflow, "Division by zero". Integer division truncates toward zero;
//! float division by zero gives ±Infinity/NaN as RisingWave's (its float division never fails). Temporal
//! arithmetic (dates, times, intervals) is in [`super::datetime`].

use epochlab_common::expr_node::ExprType;
use epochlab_common::types::{Decimal, F32, F64, OrderedFloat};
use epochlab_common::{DataType, ScalarImpl};

use super::{decimal as dec, no_overload};
use crate::error::{ExprError, Result};

pub fn call(func: ExprType, args: &[&ScalarImpl], ret: &DataType) -> Result<ScalarImpl> {
    if let Some(v) = super::datetime::arith(func, args)? {
        return Ok(v);
    }
    match args {
        [] if func == ExprType::Pi => Ok(ScalarImpl::Float64(F64::from(std::f64::consts::PI))),
        [a, b]
            if std::mem::discriminant(*a) != std::mem::discriminant(*b)
                && !is_shift(func)
                && func != ExprType::RoundDigit =>
        {
            // Mixed integer (or float) widths compute in the wider type, the call's return type.
            let a = crate::cast::cast_value(a, ret)?;
            let b = crate::cast::cast_value(b, ret)?;
            binary(func, &a, &b)
        }
        [a, b] => binary(func, a, b),
        [a] => unary(func, a),
        _ => Err(no_overload(func, args)),
    }
}

/// Checked integer operations, the same for every width.
trait CheckedInt: Copy + Ord + Default {
    fn add(self, o: Self) -> Option<Self>;
    fn sub(self, o: Self) -> Option<Self>;
    fn mul(self, o: Self) -> Option<Self>;
    fn div(self, o: Self) -> Option<Self>;
    fn rem(self, o: Self) -> Option<Self>;
    fn neg(self) -> Option<Self>;
    fn abs(self) -> Option<Self>;
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
    fn not(self) -> Self;
    fn shl(self, n: i32) -> Self;
    fn shr(self, n: i32) -> Self;
}

macro_rules! impl_checked_int {
    ($($t:ty),*) => {$(
        impl CheckedInt for $t {
            fn add(self, o: Self) -> Option<Self> { self.checked_add(o) }
            fn sub(self, o: Self) -> Option<Self> { self.checked_sub(o) }
            fn mul(self, o: Self) -> Option<Self> { self.checked_mul(o) }
            fn div(self, o: Self) -> Option<Self> { self.checked_div(o) }
            fn rem(self, o: Self) -> Option<Self> { self.checked_rem(o) }
            fn neg(self) -> Option<Self> { self.checked_neg() }
            fn abs(self) -> Option<Self> { self.checked_abs() }
            fn and(self, o: Self) -> Self { self & o }
            fn or(self, o: Self) -> Self { self | o }
            fn xor(self, o: Self) -> Self { self ^ o }
            fn not(self) -> Self { !self }
            fn shl(self, n: i32) -> Self { self.wrapping_shl(n as u32) }
            fn shr(self, n: i32) -> Self { self.wrapping_shr(n as u32) }
        }
    )*};
}
impl_checked_int!(i16, i32, i64);

fn int_binary<T: CheckedInt>(func: ExprType, a: T, b: T) -> Result<T> {
    use ExprType::*;
    // Division by zero is its own error; a zero modulus is "out of range", as RisingWave's checked
    // remainder reports it.
    if func == Divide && b == T::default() {
        return Err(ExprError::DivisionByZero);
    }
    let r = match func {
        Add => a.add(b),
        Subtract => a.sub(b),
        Multiply => a.mul(b),
        Divide => a.div(b),
        Modulus => a.rem(b),
        BitwiseAnd => Some(a.and(b)),
        BitwiseOr => Some(a.or(b)),
        BitwiseXor => Some(a.xor(b)),
        _ => return Err(ExprError::UnsupportedFunction(format!("{func:?}"))),
    };
    r.ok_or(ExprError::NumericOutOfRange)
}

fn int_unary<T: CheckedInt>(func: ExprType, a: T) -> Result<T> {
    use ExprType::*;
    let r = match func {
        Neg => a.neg(),
        Abs => a.abs(),
        BitwiseNot => Some(a.not()),
        _ => return Err(ExprError::UnsupportedFunction(format!("{func:?}"))),
    };
    r.ok_or(ExprError::NumericOutOfRange)
}

fn float_binary(func: ExprType, a: f64, b: f64) -> Result<f64> {
    use ExprType::*;
    Ok(match func {
        Add => a + b,
        Subtract => a - b,
        Multiply => a * b,
        Divide => a / b,
        Modulus => a % b,
        Pow => return pow_f64(a, b),
        Atan2 => a.atan2(b),
        _ => return Err(ExprError::UnsupportedFunction(format!("{func:?}"))),
    })
}

fn f32_binary(func: ExprType, a: f32, b: f32) -> Result<f32> {
    use ExprType::*;
    Ok(match func {
        Add => a + b,
        Subtract => a - b,
        Multiply => a * b,
        Divide => a / b,
        Modulus => a % b,
        _ => return Err(ExprError::UnsupportedFunction(format!("{func:?}"))),
    })
}

fn dec_binary(func: ExprType, a: Decimal, b: Decimal) -> Result<Decimal> {
    use ExprType::*;
    match func {
        Add => dec::add(a, b),
        Subtract => dec::sub(a, b),
        Multiply => dec::mul(a, b),
        Divide => dec::div(a, b),
        Modulus => dec::rem(a, b),
        Pow => dec::pow(a, b),
        _ => Err(ExprError::UnsupportedFunction(format!("{func:?}"))),
    }
}

fn binary(func: ExprType, a: &ScalarImpl, b: &ScalarImpl) -> Result<ScalarImpl> {
    use ScalarImpl::*;
    if is_shift(func) {
        return shift(func, a, b);
    }
    match (a, b) {
        (Int16(a), Int16(b)) => int_binary(func, *a, *b).map(Int16),
        (Int32(a), Int32(b)) => int_binary(func, *a, *b).map(Int32),
        (Int64(a), Int64(b)) => int_binary(func, *a, *b).map(Int64),
        (Float32(a), Float32(b)) => f32_binary(func, a.0, b.0).map(|v| Float32(OrderedFloat(v))),
        (Float64(a), Float64(b)) => float_binary(func, a.0, b.0).map(|v| Float64(OrderedFloat(v))),
        (Decimal(a), Decimal(b)) => dec_binary(func, *a, *b).map(Decimal),
        (Decimal(a), Int32(n)) if func == ExprType::RoundDigit => {
            dec::round_dp(*a, *n).map(Decimal)
        }
        _ => Err(no_overload(func, &[a, b])),
    }
}

fn is_shift(func: ExprType) -> bool {
    matches!(
        func,
        ExprType::BitwiseShiftLeft | ExprType::BitwiseShiftRight
    )
}

/// Shifts take an int32 count whatever the operand's width.
fn shift(func: ExprType, a: &ScalarImpl, b: &ScalarImpl) -> Result<ScalarImpl> {
    fn go<T: CheckedInt>(func: ExprType, a: T, n: i32) -> T {
        if func == ExprType::BitwiseShiftLeft {
            a.shl(n)
        } else {
            a.shr(n)
        }
    }
    use ScalarImpl::*;
    match (a, b) {
        (Int16(a), Int32(n)) => Ok(Int16(go(func, *a, *n))),
        (Int32(a), Int32(n)) => Ok(Int32(go(func, *a, *n))),
        (Int64(a), Int32(n)) => Ok(Int64(go(func, *a, *n))),
        _ => Err(no_overload(func, &[a, b])),
    }
}

fn unary(func: ExprType, a: &ScalarImpl) -> Result<ScalarImpl> {
    use ScalarImpl::*;
    match a {
        Int16(a) => int_unary(func, *a).map(Int16),
        Int32(a) => int_unary(func, *a).map(Int32),
        Int64(a) => int_unary(func, *a).map(Int64),
        Float32(f) if matches!(func, ExprType::Neg | ExprType::Abs) => {
            let v = if func == ExprType::Neg {
                -f.0
            } else {
                f.0.abs()
            };
            Ok(Float32(F32::from(v)))
        }
        Float64(f) => float_unary(func, f.0).map(|v| Float64(F64::from(v))),
        Decimal(d) => dec_unary(func, *d).map(Decimal),
        _ => Err(no_overload(func, &[a])),
    }
}

fn float_unary(func: ExprType, a: f64) -> Result<f64> {
    use ExprType::*;
    Ok(match func {
        Neg => -a,
        Abs => a.abs(),
        Round => a.round_ties_even(),
        Ceil => a.ceil(),
        Floor => a.floor(),
        Trunc => a.trunc(),
        Sqrt if a < 0.0 => {
            return Err(ExprError::invalid_param(
                "sqrt input",
                "input cannot be negative value",
            ));
        }
        Sqrt => a.sqrt(),
        Cbrt => a.cbrt(),
        Exp => return float_overflow(a.exp(), a.is_finite()),
        Ln | Log10 if a == 0.0 => {
            return Err(ExprError::invalid_param(
                "input",
                "cannot take logarithm of zero",
            ));
        }
        Ln | Log10 if a < 0.0 => {
            return Err(ExprError::invalid_param(
                "input",
                "cannot take logarithm of a negative number",
            ));
        }
        Ln => a.ln(),
        Log10 => a.log10(),
        Sin => a.sin(),
        Cos => a.cos(),
        Tan => a.tan(),
        Cot => 1.0 / a.tan(),
        Asin => a.asin(),
        Acos => a.acos(),
        Atan => a.atan(),
        Sinh => a.sinh(),
        Cosh => a.cosh(),
        Tanh => a.tanh(),
        Coth => 1.0 / a.tanh(),
        Asinh => a.asinh(),
        Acosh => a.acosh(),
        Atanh => a.atanh(),
        Degrees => a.to_degrees(),
        Radians => a.to_radians(),
        Sign if a.is_nan() || a == 0.0 => 0.0,
        Sign => a.signum(),
        _ => return Err(ExprError::UnsupportedFunction(format!("{func:?}"))),
    })
}

fn float_overflow(v: f64, input_finite: bool) -> Result<f64> {
    if v.is_infinite() && input_finite {
        Err(ExprError::NumericOverflow)
    } else if v == 0.0 && input_finite {
        Err(ExprError::NumericUnderflow)
    } else {
        Ok(v)
    }
}

fn pow_f64(a: f64, b: f64) -> Result<f64> {
    if a == 0.0 && b < 0.0 {
        return Err(ExprError::invalid_param(
            "rhs",
            "zero raised to a negative power is undefined",
        ));
    }
    if a < 0.0 && b.is_finite() && b.fract() != 0.0 {
        return Err(ExprError::invalid_param(
            "rhs",
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    let r = a.powf(b);
    let finite = a.is_finite() && b.is_finite();
    if r.is_infinite() && finite {
        return Err(ExprError::NumericOverflow);
    }
    if r == 0.0 && finite && a != 0.0 {
        return Err(ExprError::NumericUnderflow);
    }
    Ok(r)
}

fn dec_unary(func: ExprType, a: Decimal) -> Result<Decimal> {
    use ExprType::*;
    Ok(match func {
        Neg => dec::neg(a),
        Abs => dec::abs(a),
        Round => dec::round_dp(a, 0)?,
        Ceil => dec::ceil(a),
        Floor => dec::floor(a),
        Trunc => dec::trunc(a),
        Sign => dec::sign(a),
        Sqrt => dec::sqrt(a)?,
        Exp => dec::exp(a)?,
        Ln => dec::log(a, false)?,
        Log10 => dec::log(a, true)?,
        _ => return Err(ExprError::UnsupportedFunction(format!("{func:?}"))),
    })
}
