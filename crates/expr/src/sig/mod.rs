//! Overload resolution: given a function and its bound arguments, pick the overload as RisingWave's binder
//! does, insert the implicit casts, and set the call's return type.
//!
//! Untyped arguments are varchar literals (string literals and untyped NULLs, see [`cast::is_untyped`]):
//! they take the type the chosen overload wants, parsed at bind time. Calls with special typing rules
//! (comparisons, CASE, COALESCE, IN, concatenation, arrays) are handled here; the others go through the
//! overload table and [`resolve`].

mod resolve;
pub(crate) mod table;

use epochlab_common::DataType;
use epochlab_common::expr_node::{ExprNode, ExprType};

use crate::cast::{self, CastContext, build_cast, is_untyped};
use crate::error::{ExprError, Result};

/// The SQL name of a type, as RisingWave prints it in errors.
pub fn type_name(ty: &DataType) -> String {
    ty.to_string()
}

fn no_overload(func: ExprType, args: &[ExprNode]) -> ExprError {
    ExprError::NoSuchOverload {
        func: func_name(func),
        args: args_text(args),
    }
}

/// A function's name in messages: RisingWave's snake case of the `ExprType`.
pub fn func_name(func: ExprType) -> String {
    let mut out = String::new();
    for (i, c) in format!("{func:?}").chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

fn call(func: ExprType, args: Vec<ExprNode>, ret: DataType) -> ExprNode {
    ExprNode::Call { func, args, ret }
}

fn is_number(t: &DataType) -> bool {
    use DataType::*;
    matches!(t, Int16 | Int32 | Int64 | Float32 | Float64 | Decimal)
}

fn check_arity(func: ExprType, args: &[ExprNode], min: usize, max: usize) -> Result<()> {
    if args.len() < min || args.len() > max {
        return Err(no_overload(func, args));
    }
    Ok(())
}

/// Build a call of `func` on `args`: the overload, the implicit casts, the return type.
pub fn build_func(func: ExprType, mut args: Vec<ExprNode>) -> Result<ExprNode> {
    use ExprType::*;
    match func {
        Equal | NotEqual | LessThan | LessThanOrEqual | GreaterThan | GreaterThanOrEqual
        | IsDistinctFrom | IsNotDistinctFrom => {
            check_arity(func, &args, 2, 2)?;
            // Numbers of different types compare through the overloads (decimal < real compares as
            // double precision); everything else in one aligned type.
            let numeric = |a: &ExprNode| !is_untyped(a) && is_number(&a.return_type());
            if args.iter().all(numeric) && args[0].return_type() != args[1].return_type() {
                return general(func, args);
            }
            cast::align_types(&mut args)?;
            Ok(call(func, args, DataType::Boolean))
        }
        In => {
            check_arity(func, &args, 2, usize::MAX)?;
            cast::align_types(&mut args)?;
            Ok(call(func, args, DataType::Boolean))
        }
        IsNull | IsNotNull => {
            check_arity(func, &args, 1, 1)?;
            Ok(call(func, args, DataType::Boolean))
        }
        Coalesce | Greatest | Least => {
            check_arity(func, &args, 1, usize::MAX)?;
            let ty = cast::align_types(&mut args)?;
            Ok(call(func, args, ty))
        }
        Nullif => {
            check_arity(func, &args, 2, 2)?;
            let ty = cast::align_types(&mut args)?;
            Ok(call(func, args, ty))
        }
        Case => case(args),
        Cast => Err(ExprError::InvalidState(
            "build a cast with cast::build_cast".into(),
        )),
        ConcatOp | Concat | ConcatWs | Format | BoolOut => concat(func, args),
        Now | Proctime => {
            check_arity(func, &args, 0, 0)?;
            Ok(call(func, args, DataType::Timestamptz))
        }
        ToTimestamp if args.len() >= 2 => general(ToTimestamp1, args),
        Round if args.len() == 2 => general(RoundDigit, args),
        Array | Row | ArrayAccess | ArrayLength | Cardinality | ArrayToString | ArrayCat
        | ArrayAppend | ArrayPrepend | ArrayContains | Field => {
            crate::scalar::array::build(func, args)
        }
        _ => general(func, args),
    }
}

/// Resolve through the overload table and cast the arguments to the chosen parameters.
fn general(func: ExprType, args: Vec<ExprNode>) -> Result<ExprNode> {
    let (args, ret) = resolve_with(&func_name(func), table::overloads(func), args)?;
    Ok(call(func, args, ret))
}

/// Per argument position of a call of `func` with `arity` arguments, the type every overload of that
/// arity takes there (`date_part`'s field and `to_char`'s pattern are text whatever the value's type),
/// else `None`. An unknown-typed literal at a pinned position is read as that type, never as the other
/// arguments' type.
pub fn pinned_params(func: ExprType, arity: usize) -> Vec<Option<DataType>> {
    let mut sigs = table::overloads(func)
        .iter()
        .filter(|s| s.params.len() == arity);
    let Some(first) = sigs.next() else {
        return vec![None; arity];
    };
    let mut pinned: Vec<Option<DataType>> = first.params.iter().cloned().map(Some).collect();
    for s in sigs {
        for (p, t) in pinned.iter_mut().zip(&s.params) {
            if p.as_ref() != Some(t) {
                *p = None;
            }
        }
    }
    pinned
}

/// Pick the overload among `sigs` for `args` and cast them to its parameters; `name` is for errors.
pub(crate) fn resolve_with(
    name: &str,
    sigs: &[table::Sig],
    args: Vec<ExprNode>,
) -> Result<(Vec<ExprNode>, DataType)> {
    let inputs: Vec<Option<DataType>> = args
        .iter()
        .map(|a| (!is_untyped(a)).then(|| a.return_type()))
        .collect();
    let sig = match resolve::resolve(sigs, &inputs) {
        Ok(sig) => sig,
        Err(unique) => {
            let (func, args) = (name.to_string(), args_text(&args));
            return Err(if unique {
                ExprError::NotUnique { func, args }
            } else {
                ExprError::NoSuchOverload { func, args }
            });
        }
    };
    let args = args
        .into_iter()
        .zip(&sig.params)
        .map(|(a, p)| build_cast(a, p.clone(), CastContext::Implicit))
        .collect::<Result<Vec<_>>>()?;
    Ok((args, sig.ret.clone()))
}

fn args_text(args: &[ExprNode]) -> String {
    args.iter()
        .map(|a| {
            if is_untyped(a) {
                "unknown".to_string()
            } else {
                type_name(&a.return_type())
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `args` = [when1, then1, ..., else?]: conditions are boolean, results share one type.
fn case(args: Vec<ExprNode>) -> Result<ExprNode> {
    if args.len() < 2 {
        return Err(no_overload(ExprType::Case, &args));
    }
    let n = args.len();
    let is_result = |i: usize| i % 2 == 1 || (n % 2 == 1 && i == n - 1);
    let (mut results, mut conds) = (Vec::new(), Vec::new());
    for (i, a) in args.into_iter().enumerate() {
        if is_result(i) {
            results.push(a)
        } else {
            conds.push(a)
        }
    }
    let ty = cast::align_types(&mut results)?;
    let mut results = results.into_iter();
    let mut out = Vec::with_capacity(n);
    for c in conds {
        out.push(build_cast(c, DataType::Boolean, CastContext::Implicit)?);
        out.extend(results.next());
    }
    out.extend(results);
    Ok(call(ExprType::Case, out, ty))
}

/// `||` casts both sides to text explicitly (a boolean reads `true`); `concat`, `concat_ws` and
/// `format` use each value's output text (a boolean reads `t`). `||` with an array is array
/// concatenation.
fn concat(func: ExprType, args: Vec<ExprNode>) -> Result<ExprNode> {
    use ExprType::*;
    let is_list = |a: &ExprNode| matches!(a.return_type(), DataType::List(_)) && !is_untyped(a);
    if func == ConcatOp && args.iter().any(is_list) {
        return crate::scalar::array::build(ArrayCat, args);
    }
    match func {
        ConcatOp => {
            check_arity(func, &args, 2, 2)?;
            // One side is text (or an unknown-typed literal, read as text): `2 || 3` has no overload.
            let text = |a: &ExprNode| is_untyped(a) || a.return_type() == DataType::Varchar;
            if !args.iter().any(text) {
                return Err(no_overload(func, &args));
            }
            let args = args
                .into_iter()
                .map(|a| build_cast(a, DataType::Varchar, CastContext::Explicit))
                .collect::<Result<Vec<_>>>()?;
            Ok(call(func, args, DataType::Varchar))
        }
        BoolOut => {
            check_arity(func, &args, 1, 1)?;
            Ok(call(func, args, DataType::Varchar))
        }
        _ => {
            let min = if func == Concat { 1 } else { 2 };
            check_arity(func, &args, min, usize::MAX)?;
            let mut out = Vec::with_capacity(args.len());
            for (i, a) in args.into_iter().enumerate() {
                let first_is_text = i == 0 && func != Concat;
                out.push(if first_is_text {
                    build_cast(a, DataType::Varchar, CastContext::Implicit)?
                } else {
                    cast_output(a)?
                });
            }
            Ok(call(func, out, DataType::Varchar))
        }
    }
}

/// A value as its output text: RisingWave's `cast_output` (booleans through `BoolOut`).
pub fn cast_output(e: ExprNode) -> Result<ExprNode> {
    match e.return_type() {
        DataType::Boolean => Ok(call(ExprType::BoolOut, vec![e], DataType::Varchar)),
        _ => build_cast(e, DataType::Varchar, CastContext::Explicit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `date_part`'s field and `to_char`'s pattern are text in every overload; the value is not pinned.
    /// An operator with overloads of several types pins nothing; a one-overload function pins each argument.
    #[test]
    fn pinned_params_are_the_types_every_overload_agrees_on() {
        use DataType as T;
        assert_eq!(
            pinned_params(ExprType::DatePart, 2),
            vec![Some(T::Varchar), None]
        );
        assert_eq!(
            pinned_params(ExprType::ToChar, 2),
            vec![None, Some(T::Varchar)]
        );
        assert_eq!(pinned_params(ExprType::Add, 2), vec![None, None]);
        assert_eq!(
            pinned_params(ExprType::Substr, 2),
            vec![Some(T::Varchar), Some(T::Int32)]
        );
        // The zone-taking form the session-time-zone rewrite makes: one overload, every type pinned.
        assert_eq!(
            pinned_params(ExprType::DatePart, 3),
            vec![Some(T::Varchar), Some(T::Timestamptz), Some(T::Varchar)]
        );
        assert_eq!(pinned_params(ExprType::DatePart, 4), vec![None; 4]);
    }
}
