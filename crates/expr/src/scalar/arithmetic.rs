//! `+ - * / %`, unary minus and the numeric functions, with RisingWave's overflow and division errors.
//! Integer division truncates toward zero.

use epochlab_common::expr_node::ExprType;
use epochlab_common::{DataType, ScalarImpl};

use super::no_overload;
use crate::error::{ExprError, Result};

pub fn call(func: ExprType, args: &[&ScalarImpl], ret: &DataType) -> Result<ScalarImpl> {
    let _ = ret;
    match args {
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
    let zero = T::default();
    if matches!(func, Divide | Modulus) && b == zero {
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
        // Rounding an integer is the integer.
        Round | Ceil | Floor | Trunc => Some(a),
        _ => return Err(ExprError::UnsupportedFunction(format!("{func:?}"))),
    };
    r.ok_or(ExprError::NumericOutOfRange)
}

fn binary(func: ExprType, a: &ScalarImpl, b: &ScalarImpl) -> Result<ScalarImpl> {
    use ScalarImpl::*;
    match (a, b) {
        (Int16(a), Int32(n)) if is_shift(func) => Ok(Int16(shift(func, *a, *n))),
        (Int32(a), Int32(n)) if is_shift(func) => Ok(Int32(shift(func, *a, *n))),
        (Int64(a), Int32(n)) if is_shift(func) => Ok(Int64(shift(func, *a, *n))),
        (Int16(a), Int16(b)) => int_binary(func, *a, *b).map(Int16),
        (Int32(a), Int32(b)) => int_binary(func, *a, *b).map(Int32),
        (Int64(a), Int64(b)) => int_binary(func, *a, *b).map(Int64),
        _ => Err(no_overload(func, &[a, b])),
    }
}

fn is_shift(func: ExprType) -> bool {
    matches!(
        func,
        ExprType::BitwiseShiftLeft | ExprType::BitwiseShiftRight
    )
}

fn shift<T: CheckedInt>(func: ExprType, a: T, n: i32) -> T {
    match func {
        ExprType::BitwiseShiftLeft => a.shl(n),
        _ => a.shr(n),
    }
}

fn unary(func: ExprType, a: &ScalarImpl) -> Result<ScalarImpl> {
    use ScalarImpl::*;
    match a {
        Int16(a) => int_unary(func, *a).map(Int16),
        Int32(a) => int_unary(func, *a).map(Int32),
        Int64(a) => int_unary(func, *a).map(Int64),
        _ => Err(no_overload(func, &[a])),
    }
}
