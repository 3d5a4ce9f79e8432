//! Overload resolution: given a function and its bound arguments, pick the overload as RisingWave's binder
//! does, insert the implicit casts, and set the call's return type.
//!
//! Untyped literals (varchar literals, see [`cast::is_untyped`]) take the type the overload wants.

use epochlab_common::DataType;
use epochlab_common::expr_node::{ExprNode, ExprType};

use crate::cast::{self, CastContext, build_cast, is_untyped, least_restrictive};
use crate::error::{ExprError, Result};

/// The SQL name of a type, as RisingWave prints it in errors.
pub fn type_name(ty: &DataType) -> String {
    match ty {
        DataType::Boolean => "boolean",
        DataType::Int16 => "smallint",
        DataType::Int32 => "integer",
        DataType::Int64 => "bigint",
        DataType::Varchar => "character varying",
    }
    .to_string()
}

fn no_overload(func: ExprType, args: &[ExprNode]) -> ExprError {
    let names: Vec<String> = args.iter().map(|a| type_name(&a.return_type())).collect();
    ExprError::NoSuchOverload {
        func: format!("{func:?}").to_lowercase(),
        args: names.join(", "),
    }
}

fn call(func: ExprType, args: Vec<ExprNode>, ret: DataType) -> ExprNode {
    ExprNode::Call { func, args, ret }
}

/// Build a call of `func` on `args`: the overload, the implicit casts, the return type.
pub fn build_func(func: ExprType, mut args: Vec<ExprNode>) -> Result<ExprNode> {
    use ExprType::*;
    match func {
        Add | Subtract | Multiply | Divide | Modulus => arithmetic(func, args),
        Neg | Abs | BitwiseNot => unary_numeric(func, args),
        BitwiseAnd | BitwiseOr | BitwiseXor => arithmetic(func, args),
        BitwiseShiftLeft | BitwiseShiftRight => {
            let ty = numeric_arg(func, &args, 0)?;
            fixed(func, args, &[ty.clone(), DataType::Int32], ty)
        }
        Round | Ceil | Floor | Trunc | Sqrt | Cbrt | Exp | Ln | Log10 | Sign => {
            float_or_decimal(func, args)
        }
        RoundDigit => fixed(
            func,
            args,
            &[decimal_type(), DataType::Int32],
            decimal_type(),
        ),
        Pow => {
            let ty = float_or_decimal_type(&args);
            fixed(func, args, &[ty.clone(), ty.clone()], ty)
        }
        Equal | NotEqual | LessThan | LessThanOrEqual | GreaterThan | GreaterThanOrEqual
        | IsDistinctFrom | IsNotDistinctFrom | In => {
            check_arity(func, &args, 2, usize::MAX)?;
            cast::align_types(&mut args)?;
            Ok(call(func, args, DataType::Boolean))
        }
        And | Or => fixed(
            func,
            args,
            &[DataType::Boolean, DataType::Boolean],
            DataType::Boolean,
        ),
        Not | IsTrue | IsNotTrue | IsFalse | IsNotFalse => {
            fixed(func, args, &[DataType::Boolean], DataType::Boolean)
        }
        IsNull | IsNotNull => {
            check_arity(func, &args, 1, 1)?;
            Ok(call(func, args, DataType::Boolean))
        }
        Coalesce | Greatest | Least | Nullif => {
            check_arity(func, &args, 1, if func == Nullif { 2 } else { usize::MAX })?;
            if func == Nullif {
                check_arity(func, &args, 2, 2)?;
            }
            let ty = cast::align_types(&mut args)?;
            Ok(call(func, args, ty))
        }
        Case => case(args),
        _ => string_or_datetime(func, args),
    }
}

fn check_arity(func: ExprType, args: &[ExprNode], min: usize, max: usize) -> Result<()> {
    if args.len() < min || args.len() > max {
        return Err(no_overload(func, args));
    }
    Ok(())
}

/// Cast each argument to its parameter type (implicitly; untyped literals are parsed).
fn fixed(
    func: ExprType,
    args: Vec<ExprNode>,
    params: &[DataType],
    ret: DataType,
) -> Result<ExprNode> {
    if args.len() != params.len() {
        return Err(no_overload(func, &args));
    }
    let original = args.clone();
    let args = args
        .into_iter()
        .zip(params)
        .map(|(a, p)| build_cast(a, p.clone(), CastContext::Implicit))
        .collect::<Result<Vec<_>>>()
        .map_err(|_| no_overload(func, &original))?;
    Ok(call(func, args, ret))
}

/// Like [`fixed`] with a trailing run of optional parameters.
fn fixed_optional(
    func: ExprType,
    args: Vec<ExprNode>,
    params: &[DataType],
    required: usize,
    ret: DataType,
) -> Result<ExprNode> {
    if args.len() < required || args.len() > params.len() {
        return Err(no_overload(func, &args));
    }
    let n = args.len();
    fixed(func, args, &params[..n], ret)
}

fn is_numeric(ty: &DataType) -> bool {
    matches!(ty, DataType::Int16 | DataType::Int32 | DataType::Int64)
}

fn decimal_type() -> DataType {
    DataType::Int64
}

fn numeric_arg(func: ExprType, args: &[ExprNode], i: usize) -> Result<DataType> {
    let ty = args.get(i).map(ExprNode::return_type);
    match ty {
        Some(ty) if is_numeric(&ty) => Ok(ty),
        _ => Err(no_overload(func, args)),
    }
}

/// Binary arithmetic on numbers: both sides to their least restrictive numeric type (an untyped literal takes
/// the other side's type), which is also the result type.
fn arithmetic(func: ExprType, mut args: Vec<ExprNode>) -> Result<ExprNode> {
    check_arity(func, &args, 2, 2)?;
    let (a, b) = (args[0].return_type(), args[1].return_type());
    let ty = match (is_untyped(&args[0]), is_untyped(&args[1])) {
        (true, false) => b.clone(),
        (false, true) => a.clone(),
        (true, true) => DataType::Int32,
        (false, false) => least_restrictive(&a, &b).ok_or_else(|| no_overload(func, &args))?,
    };
    if !is_numeric(&ty) {
        return Err(no_overload(func, &args));
    }
    for e in args.iter_mut() {
        let taken = std::mem::replace(e, ExprNode::null(DataType::Boolean));
        *e = build_cast(taken, ty.clone(), CastContext::Implicit)?;
    }
    Ok(call(func, args, ty))
}

fn unary_numeric(func: ExprType, args: Vec<ExprNode>) -> Result<ExprNode> {
    check_arity(func, &args, 1, 1)?;
    let ty = if is_untyped(&args[0]) {
        DataType::Int32
    } else {
        numeric_arg(func, &args, 0)?
    };
    fixed(func, args, std::slice::from_ref(&ty), ty)
}

/// The overload for functions defined on float64 and decimal: decimal stays decimal, everything numeric
/// else goes to float64 (PostgreSQL's preferred numeric type).
fn float_or_decimal_type(args: &[ExprNode]) -> DataType {
    let _ = args;
    DataType::Int64
}

fn float_or_decimal(func: ExprType, args: Vec<ExprNode>) -> Result<ExprNode> {
    check_arity(func, &args, 1, 1)?;
    let ty = float_or_decimal_type(&args);
    fixed(func, args, std::slice::from_ref(&ty), ty)
}

/// `args` = [when1, then1, ..., else?]: conditions are boolean, results share one type.
fn case(args: Vec<ExprNode>) -> Result<ExprNode> {
    if args.len() < 2 {
        return Err(no_overload(ExprType::Case, &args));
    }
    let mut conds = Vec::new();
    let mut results = Vec::new();
    for (i, a) in args.into_iter().enumerate() {
        if i % 2 == 0 {
            conds.push(a);
        } else {
            results.push(a);
        }
    }
    // With an odd count, the last "condition" is the ELSE result.
    let else_ = (conds.len() > results.len()).then(|| conds.pop()).flatten();
    results.extend(else_.clone());
    let ty = cast::align_types(&mut results)?;
    let else_ = else_.map(|_| results.pop().expect("the else result"));
    let mut out = Vec::new();
    for (c, r) in conds.into_iter().zip(results) {
        out.push(build_cast(c, DataType::Boolean, CastContext::Implicit)?);
        out.push(r);
    }
    out.extend(else_);
    Ok(call(ExprType::Case, out, ty))
}

/// Strings and dates, casts, and what is left.
fn string_or_datetime(func: ExprType, args: Vec<ExprNode>) -> Result<ExprNode> {
    use DataType::{Boolean as B, Int32 as I, Varchar as V};
    use ExprType::*;
    match func {
        Cast => Err(ExprError::InvalidState(
            "build a cast with cast::build_cast".into(),
        )),
        ConcatOp => fixed(func, to_text(args)?, &[V, V], V),
        Concat => {
            let n = args.len();
            fixed(func, to_text(args)?, &vec![V; n], V)
        }
        ConcatWs => {
            let n = args.len();
            check_arity(func, &args, 1, usize::MAX)?;
            fixed(func, to_text(args)?, &vec![V; n], V)
        }
        Like | ILike => fixed_optional(func, args, &[V, V, V], 2, B),
        Lower | Upper | Reverse | Initcap | Md5 => fixed(func, args, &[V], V),
        Length | CharLength | OctetLength | Ascii => fixed(func, args, &[V], I),
        Substr => fixed_optional(func, args, &[V, I, I], 2, V),
        Trim | Ltrim | Rtrim => fixed_optional(func, args, &[V, V], 1, V),
        Replace | Translate => fixed(func, args, &[V, V, V], V),
        Position => fixed(func, args, &[V, V], I),
        SplitPart => fixed(func, args, &[V, V, I], V),
        Left | Right | Repeat => fixed(func, args, &[V, I], V),
        Lpad | Rpad => fixed_optional(func, args, &[V, I, V], 2, V),
        Chr => fixed(func, args, &[I], V),
        StartsWith => fixed(func, args, &[V, V], B),
        Now | Proctime => fixed(func, args, &[], DataType::Int64),
        _ => Err(no_overload(func, &args)),
    }
}

/// Arguments of string concatenation become varchar (any type casts to text here).
fn to_text(args: Vec<ExprNode>) -> Result<Vec<ExprNode>> {
    args.into_iter()
        .map(|a| build_cast(a, DataType::Varchar, CastContext::Explicit))
        .collect()
}
