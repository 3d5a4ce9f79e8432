//! Aggregate functions: return types, and [`AggState`], a retractable state fed by inserts and deletes.
//!
//! `AggState` handles `DISTINCT` (a multiset of argument values: only a value's first insert and last delete
//! reach the aggregate) and `FILTER` (rows it rejects are skipped), so callers feed every input row.

mod accumulate;
mod state;

use epochlab_common::DataType;
use epochlab_common::expr_node::AggKind;

use crate::error::{ExprError, Result};
use crate::sig::type_name;

pub use state::AggState;

fn is_int(t: &DataType) -> bool {
    matches!(t, DataType::Int16 | DataType::Int32 | DataType::Int64)
}

fn is_float(t: &DataType) -> bool {
    matches!(t, DataType::Float32 | DataType::Float64)
}

/// The return type of `kind` over `args`, as RisingWave's: sum(smallint/int) is bigint, sum(bigint) and
/// avg of integers numeric, avg of floats double precision.
pub fn infer_return_type(kind: AggKind, args: &[DataType]) -> Result<DataType> {
    use AggKind::*;
    use DataType as T;
    let bad = || ExprError::NoSuchOverload {
        func: format!("{kind:?}").to_lowercase(),
        args: args.iter().map(type_name).collect::<Vec<_>>().join(", "),
    };
    let Some(arg) = args.first() else {
        return if kind == Count {
            Ok(T::Int64)
        } else {
            Err(bad())
        };
    };
    Ok(match (kind, arg) {
        (Count | ApproxCountDistinct, _) => T::Int64,
        (Sum, T::Int16 | T::Int32) | (Sum0, T::Int16 | T::Int32 | T::Int64) => T::Int64,
        (Sum, T::Int64 | T::Decimal) => T::Decimal,
        (Sum, t @ (T::Float32 | T::Float64 | T::Interval)) => t.clone(),
        (Avg | StddevPop | StddevSamp | VarPop | VarSamp, t) if is_int(t) || *t == T::Decimal => {
            T::Decimal
        }
        (Avg | StddevPop | StddevSamp | VarPop | VarSamp, t) if is_float(t) => T::Float64,
        (Avg, T::Interval) => T::Interval,
        (Min | Max | FirstValue | LastValue, t) => t.clone(),
        (StringAgg, _) => T::Varchar,
        (ArrayAgg, t) => T::List(Box::new(t.clone())),
        (BoolAnd | BoolOr, T::Boolean) => T::Boolean,
        (BitAnd | BitOr | BitXor, t) if is_int(t) => t.clone(),
        (JsonbAgg | JsonbObjectAgg, _) => T::Jsonb,
        (PercentileCont, _) => T::Float64,
        (PercentileDisc | Mode, t) => t.clone(),
        _ => return Err(bad()),
    })
}
