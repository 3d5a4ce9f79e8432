//! Scalar functions, one module per family, and the dispatch from an `ExprType` to its family.

pub mod arithmetic;
pub mod array;
pub mod cmp;
pub mod datetime;
pub mod datetime_parse;
pub mod decimal;
pub mod jsonb;
pub mod string;
pub mod timestamptz;

use epochlab_common::expr_node::ExprType;
use epochlab_common::{DataType, Datum, ScalarImpl};

use crate::error::{ExprError, Result};

/// A strict function returns NULL when any argument is NULL, without being called.
pub fn is_strict(func: ExprType) -> bool {
    use ExprType::*;
    !matches!(
        func,
        And | Or
            | IsNull
            | IsNotNull
            | IsTrue
            | IsNotTrue
            | IsFalse
            | IsNotFalse
            | IsDistinctFrom
            | IsNotDistinctFrom
            | In
            | Nullif
            | Greatest
            | Least
            | Concat
            | ConcatWs
            | Format
            | Array
            | Row
            | ArrayAppend
            | ArrayPrepend
            | ArrayCat
            | ArrayToString
            | Case
            | Coalesce
            | ArrayAccess
            | Field
    )
}

/// Call `func` on evaluated arguments; `ret` is the call's return type (casts, mixed-width arithmetic).
pub fn call(func: ExprType, values: &[Datum], ret: &DataType) -> Result<Datum> {
    use ExprType::*;
    match func {
        Add | Subtract | Multiply | Divide | Modulus | Neg | Abs | Round | RoundDigit | Ceil
        | Floor | Trunc | Pow | Sqrt | Cbrt | Exp | Ln | Log10 | Sign | Sin | Cos | Tan | Cot
        | Asin | Acos | Atan | Atan2 | Sinh | Cosh | Tanh | Coth | Asinh | Acosh | Atanh
        | Degrees | Radians | Pi | BitwiseAnd | BitwiseOr | BitwiseXor | BitwiseNot
        | BitwiseShiftLeft | BitwiseShiftRight => {
            arithmetic::call(func, &strict(values), ret).map(Some)
        }
        Equal | NotEqual | LessThan | LessThanOrEqual | GreaterThan | GreaterThanOrEqual | And
        | Or | Not | IsNull | IsNotNull | IsTrue | IsNotTrue | IsFalse | IsNotFalse
        | IsDistinctFrom | IsNotDistinctFrom | In | Nullif | Greatest | Least => {
            cmp::call(func, values)
        }
        Cast => crate::cast::cast_value(strict(values)[0], ret).map(Some),
        Like | ILike | ConcatOp | Concat | ConcatWs | Lower | Upper | Length | CharLength
        | OctetLength | Substr | Trim | Ltrim | Rtrim | Replace | Position | SplitPart | Left
        | Right | Repeat | Reverse | Lpad | Rpad | Initcap | Ascii | Chr | StartsWith
        | Translate | Md5 | RegexpMatch | RegexpReplace | RegexpCount | Format => {
            string::call(func, values)
        }
        Extract | DatePart | DateTrunc | TumbleStart | ToTimestamp | ToTimestamp1 | CharToDate
        | MakeDate | MakeTimestamptz | AtTimeZone | ToChar | CastWithTimeZone | AddWithTimeZone
        | SubtractWithTimeZone => datetime::call(func, &strict(values)).map(Some),
        Array | Row | ArrayAccess | ArrayLength | Cardinality | ArrayToString | ArrayCat
        | ArrayAppend | ArrayPrepend | ArrayContains | Field => array::call_values(func, values),
        JsonbAccess | JsonbAccessStr | JsonbTypeof | JsonbArrayLength => {
            jsonb::call(func, &strict(values))
        }
        BoolOut => Ok(values[0].as_ref().map(|v| {
            ScalarImpl::Utf8(
                if matches!(v, ScalarImpl::Bool(true)) {
                    "t"
                } else {
                    "f"
                }
                .into(),
            )
        })),
        _ => Err(ExprError::UnsupportedFunction(crate::sig::func_name(func))),
    }
}

/// The arguments of a strict call, all non-NULL (the caller returned NULL otherwise).
fn strict(values: &[Datum]) -> Vec<&ScalarImpl> {
    values
        .iter()
        .map(|v| v.as_ref().expect("strict call with a NULL argument"))
        .collect()
}

/// The error for arguments a family does not handle (the binder's overload resolution let them through).
pub(crate) fn no_overload(func: ExprType, args: &[&ScalarImpl]) -> ExprError {
    let names: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    ExprError::NoSuchOverload {
        func: format!("{func:?}"),
        args: names.join(", "),
    }
}
