//! Date and time functions. `now()` reads the epoch's time from the [`EvalContext`], never a clock.

use epochlab_common::expr_node::ExprType;
use epochlab_common::{DataType, Datum, ScalarImpl};

use super::no_overload;
use crate::error::{ExprError, Result};
use crate::eval::EvalContext;

pub fn call(func: ExprType, args: &[&ScalarImpl], ret: &DataType) -> Result<ScalarImpl> {
    let _ = ret;
    Err(no_overload(func, args))
}

/// `now()`: the context's time as the call's return type.
pub fn now(ctx: &EvalContext, ret: &DataType) -> Result<Datum> {
    let usecs = ctx.now_usecs.ok_or(ExprError::Context("NOW"))?;
    match ret {
        DataType::Int64 => Ok(Some(ScalarImpl::Int64(usecs))),
        other => Err(ExprError::UnsupportedFunction(format!(
            "now() as {other:?}"
        ))),
    }
}
