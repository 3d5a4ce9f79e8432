//! The tree walk: input refs, literals, and calls, with the calls that see NULLs (logic, CASE, COALESCE, IN,
//! IS ...) handled before the strict ones, which return NULL on any NULL argument.

use epochlab_common::expr_node::{ExprNode, ExprType};
use epochlab_common::{Datum, OwnedRow};

use crate::error::{ExprError, Result};
use crate::scalar;

/// What an expression may read besides its row. `now` is the epoch's time (µs since the Unix epoch, UTC),
/// supplied by the caller: evaluation never reads a clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvalContext {
    pub now_usecs: Option<i64>,
}

/// Strict evaluation (batch): the first error is returned.
pub fn eval(expr: &ExprNode, row: &OwnedRow) -> Result<Datum> {
    eval_with(expr, row, &EvalContext::default())
}

/// Strict evaluation with a context (for `now()`).
pub fn eval_with(expr: &ExprNode, row: &OwnedRow, ctx: &EvalContext) -> Result<Datum> {
    Evaluator {
        ctx,
        on_error: None,
    }
    .eval(expr, row)
}

/// Non-strict evaluation (streaming): a failing call becomes NULL and its error is handed to `on_error`.
pub fn eval_non_strict(
    expr: &ExprNode,
    row: &OwnedRow,
    on_error: &mut dyn FnMut(ExprError),
) -> Datum {
    eval_non_strict_with(expr, row, &EvalContext::default(), on_error)
}

/// Non-strict evaluation with a context.
pub fn eval_non_strict_with(
    expr: &ExprNode,
    row: &OwnedRow,
    ctx: &EvalContext,
    on_error: &mut dyn FnMut(ExprError),
) -> Datum {
    let mut ev = Evaluator {
        ctx,
        on_error: Some(on_error),
    };
    // Non-strict calls never fail: every call's error is absorbed where it happens.
    ev.eval(expr, row).unwrap_or(None)
}

struct Evaluator<'a, 'b> {
    ctx: &'a EvalContext,
    on_error: Option<&'b mut dyn FnMut(ExprError)>,
}

impl Evaluator<'_, '_> {
    fn eval(&mut self, expr: &ExprNode, row: &OwnedRow) -> Result<Datum> {
        match expr {
            ExprNode::InputRef { index, .. } => {
                assert!(
                    *index < row.len(),
                    "input ref {index} out of a row of {}",
                    row.len()
                );
                Ok(row[*index].clone())
            }
            ExprNode::Literal { value, .. } => Ok(value.clone()),
            ExprNode::Call { func, args, ret } => {
                let res = self.eval_call(*func, args, ret, row);
                match (res, self.on_error.as_mut()) {
                    (Err(e), Some(on_error)) => {
                        on_error(e);
                        Ok(None)
                    }
                    (res, _) => res,
                }
            }
        }
    }

    fn eval_args(&mut self, args: &[ExprNode], row: &OwnedRow) -> Result<Vec<Datum>> {
        args.iter().map(|a| self.eval(a, row)).collect()
    }

    fn eval_call(
        &mut self,
        func: ExprType,
        args: &[ExprNode],
        ret: &epochlab_common::DataType,
        row: &OwnedRow,
    ) -> Result<Datum> {
        match func {
            ExprType::Case => return self.eval_case(args, row),
            ExprType::Coalesce => return self.eval_coalesce(args, row),
            ExprType::Now | ExprType::Proctime => {
                return scalar::datetime::now(self.ctx, ret);
            }
            _ => {}
        }
        let values = self.eval_args(args, row)?;
        if scalar::is_strict(func) && values.iter().any(Option::is_none) {
            return Ok(None);
        }
        scalar::call(func, &values, ret)
    }

    /// `args` = [when1, then1, when2, then2, ..., else?]; a NULL condition does not match.
    fn eval_case(&mut self, args: &[ExprNode], row: &OwnedRow) -> Result<Datum> {
        let mut pairs = args.chunks_exact(2);
        for pair in pairs.by_ref() {
            if scalar::cmp::is_true(&self.eval(&pair[0], row)?) {
                return self.eval(&pair[1], row);
            }
        }
        match pairs.remainder() {
            [else_] => self.eval(else_, row),
            _ => Ok(None),
        }
    }

    fn eval_coalesce(&mut self, args: &[ExprNode], row: &OwnedRow) -> Result<Datum> {
        for arg in args {
            let v = self.eval(arg, row)?;
            if v.is_some() {
                return Ok(v);
            }
        }
        Ok(None)
    }
}

/// Evaluate every call whose arguments are all literals, bottom up, into a literal (the binder's constant
/// folding). `now()`/`proctime()` and calls that fail stay calls, so an error surfaces when the row is
/// evaluated, as RisingWave reports it.
pub fn fold_constants(expr: ExprNode) -> ExprNode {
    let ExprNode::Call { func, args, ret } = expr else {
        return expr;
    };
    let args: Vec<ExprNode> = args.into_iter().map(fold_constants).collect();
    let call = ExprNode::Call { func, args, ret };
    let ExprNode::Call { func, args, ret } = &call else {
        unreachable!("built above")
    };
    let foldable = !matches!(func, ExprType::Now | ExprType::Proctime)
        && args.iter().all(|a| matches!(a, ExprNode::Literal { .. }));
    if !foldable {
        return call;
    }
    match eval(&call, &OwnedRow::empty()) {
        Ok(value) => ExprNode::Literal {
            value,
            ty: ret.clone(),
        },
        Err(_) => call,
    }
}
