//! Comparisons, three-valued logic, `IS ...`, `IN`, `NULLIF`, `GREATEST`/`LEAST`.

use std::cmp::Ordering;

use epochlab_common::expr_node::ExprType;
use epochlab_common::types::cmp_scalar;
use epochlab_common::{Datum, ScalarImpl};

use crate::cast::{cast_value, least_restrictive, value_type};
use crate::error::{ExprError, Result};

/// The order of two values of the same type (the binder aligned them), or of two numbers of different
/// widths (compared in the wider).
pub fn compare(a: &ScalarImpl, b: &ScalarImpl) -> Result<Ordering> {
    if let Some(o) = cmp_scalar(a, b) {
        return Ok(o);
    }
    let bad = || ExprError::InvalidState(format!("cannot compare {a:?} with {b:?}"));
    let wider = least_restrictive(&value_type(a), &value_type(b)).ok_or_else(bad)?;
    let (x, y) = (cast_value(a, &wider)?, cast_value(b, &wider)?);
    cmp_scalar(&x, &y).ok_or_else(bad)
}

/// SQL equality of two values (NULL is not equal to anything here: callers handle NULL first).
pub fn equal(a: &ScalarImpl, b: &ScalarImpl) -> Result<bool> {
    Ok(compare(a, b)? == Ordering::Equal)
}

pub fn is_true(v: &Datum) -> bool {
    matches!(v, Some(ScalarImpl::Bool(true)))
}

fn as_bool(v: &Datum) -> Result<Option<bool>> {
    match v {
        None => Ok(None),
        Some(ScalarImpl::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(ExprError::InvalidState(format!(
            "expected a boolean, got {other:?}"
        ))),
    }
}

pub fn call(func: ExprType, values: &[Datum]) -> Result<Datum> {
    use ExprType::*;
    let bool_datum = |b: bool| Ok(Some(ScalarImpl::Bool(b)));
    match (func, values) {
        (
            Equal | NotEqual | LessThan | LessThanOrEqual | GreaterThan | GreaterThanOrEqual,
            [Some(a), Some(b)],
        ) => bool_datum(cmp_op(func, compare(a, b)?)),
        (And, [a, b]) => Ok(and(as_bool(a)?, as_bool(b)?).map(ScalarImpl::Bool)),
        (Or, [a, b]) => Ok(or(as_bool(a)?, as_bool(b)?).map(ScalarImpl::Bool)),
        (Not, [a]) => Ok(as_bool(a)?.map(|b| ScalarImpl::Bool(!b))),
        (IsNull, [a]) => bool_datum(a.is_none()),
        (IsNotNull, [a]) => bool_datum(a.is_some()),
        (IsTrue, [a]) => bool_datum(as_bool(a)? == Some(true)),
        (IsNotTrue, [a]) => bool_datum(as_bool(a)? != Some(true)),
        (IsFalse, [a]) => bool_datum(as_bool(a)? == Some(false)),
        (IsNotFalse, [a]) => bool_datum(as_bool(a)? != Some(false)),
        (IsDistinctFrom, [a, b]) => bool_datum(!not_distinct(a, b)?),
        (IsNotDistinctFrom, [a, b]) => bool_datum(not_distinct(a, b)?),
        (In, [probe, list @ ..]) => in_list(probe, list),
        (Nullif, [a, b]) => nullif(a, b),
        (Greatest, _) => extreme(values, Ordering::Greater),
        (Least, _) => extreme(values, Ordering::Less),
        _ => Err(ExprError::UnsupportedFunction(format!(
            "{func:?} of {} arguments",
            values.len()
        ))),
    }
}

fn cmp_op(func: ExprType, ord: Ordering) -> bool {
    use ExprType::*;
    match func {
        Equal => ord == Ordering::Equal,
        NotEqual => ord != Ordering::Equal,
        LessThan => ord == Ordering::Less,
        LessThanOrEqual => ord != Ordering::Greater,
        GreaterThan => ord == Ordering::Greater,
        GreaterThanOrEqual => ord != Ordering::Less,
        _ => unreachable!("{func:?} is not a comparison"),
    }
}

/// Three-valued AND: false wins over NULL.
pub fn and(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

/// Three-valued OR: true wins over NULL.
pub fn or(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

fn not_distinct(a: &Datum, b: &Datum) -> Result<bool> {
    match (a, b) {
        (None, None) => Ok(true),
        (Some(a), Some(b)) => equal(a, b),
        _ => Ok(false),
    }
}

/// `x IN (list)`: true on a match; NULL when `x` is NULL or nothing matched but the list has a NULL.
fn in_list(probe: &Datum, list: &[Datum]) -> Result<Datum> {
    let Some(probe) = probe else { return Ok(None) };
    let mut saw_null = false;
    for item in list {
        match item {
            None => saw_null = true,
            Some(v) if equal(probe, v)? => return Ok(Some(ScalarImpl::Bool(true))),
            Some(_) => {}
        }
    }
    Ok((!saw_null).then_some(ScalarImpl::Bool(false)))
}

fn nullif(a: &Datum, b: &Datum) -> Result<Datum> {
    match (a, b) {
        (Some(x), Some(y)) if equal(x, y)? => Ok(None),
        _ => Ok(a.clone()),
    }
}

/// GREATEST/LEAST ignore NULLs; NULL only when every argument is.
fn extreme(values: &[Datum], want: Ordering) -> Result<Datum> {
    let mut best: Option<&ScalarImpl> = None;
    for v in values.iter().flatten() {
        best = match best {
            Some(b) if compare(v, b)? != want => Some(b),
            _ => Some(v),
        };
    }
    Ok(best.cloned())
}
