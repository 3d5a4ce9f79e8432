//! The expression interface the binder, planner and batch engine use, in one place: `ExprNode` data from
//! `epochlab_common::expr_node`, evaluation, overloads, casts and aggregate states from `epochlab-expr`.

use std::cmp::Ordering;

use epochlab_common::{DataType, Datum, ScalarImpl};

pub use epochlab_common::OrderType;
pub use epochlab_common::expr_node::{AggCall, AggKind, ExprNode, ExprType, TableFunctionType};
pub use epochlab_expr::{
    EvalContext, ExprError, agg, cast, eval, eval_non_strict, eval_non_strict_with, eval_with, sig,
    table_function,
};

/// An integer value of any width.
pub fn int_value(s: &ScalarImpl) -> Option<i64> {
    match s {
        ScalarImpl::Int16(v) => Some(i64::from(*v)),
        ScalarImpl::Int32(v) => Some(i64::from(*v)),
        ScalarImpl::Int64(v) => Some(*v),
        _ => None,
    }
}

/// A value parsed from text as a value of `ty` (an unknown-typed literal).
pub fn from_text(s: &str, ty: &DataType) -> Result<Datum, ExprError> {
    Ok(Some(cast::from_text(s, ty)?))
}

/// The order of two datums of one type: NULLs largest, as PostgreSQL's.
pub fn cmp_datum(a: &Datum, b: &Datum) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => epochlab_common::types::cmp_scalar(x, y).unwrap_or(Ordering::Equal),
    }
}
