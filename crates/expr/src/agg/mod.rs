//! Aggregate functions: return types, and [`AggState`], a retractable state fed by inserts and deletes.
//!
//! `AggState` handles `DISTINCT` (a multiset of argument values: only a value's first insert and last delete
//! reach the aggregate) and `FILTER` (rows it rejects are skipped), so callers feed every input row.

mod state;

use epochlab_common::DataType;
use epochlab_common::expr_node::AggKind;

use crate::error::{ExprError, Result};
use crate::sig::type_name;

pub use state::AggState;

/// The return type of `kind` over `args`, as RisingWave's: sum(int16/int32) is bigint, sum(bigint) numeric,
/// avg of integers numeric, of floats double.
pub fn infer_return_type(kind: AggKind, args: &[DataType]) -> Result<DataType> {
    use AggKind::*;
    let arg = args.first();
    let bad = || ExprError::NoSuchOverload {
        func: format!("{kind:?}").to_lowercase(),
        args: args.iter().map(type_name).collect::<Vec<_>>().join(", "),
    };
    Ok(match (kind, arg) {
        (Count | ApproxCountDistinct, _) => DataType::Int64,
        (Sum | Sum0, Some(DataType::Int16 | DataType::Int32 | DataType::Int64)) => DataType::Int64,
        (
            Avg | StddevPop | StddevSamp | VarPop | VarSamp,
            Some(DataType::Int16 | DataType::Int32 | DataType::Int64),
        ) => DataType::Int64,
        (Min | Max | FirstValue | LastValue, Some(t)) => t.clone(),
        (StringAgg, Some(_)) => DataType::Varchar,
        (BoolAnd | BoolOr, Some(DataType::Boolean)) => DataType::Boolean,
        (
            BitAnd | BitOr | BitXor,
            Some(t @ (DataType::Int16 | DataType::Int32 | DataType::Int64)),
        ) => t.clone(),
        _ => return Err(bad()),
    })
}
