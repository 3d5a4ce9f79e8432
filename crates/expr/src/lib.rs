//! Expression evaluation with RisingWave's semantics (mirrors RisingWave's `src/expr`): scalar functions by
//! family under [`scalar`], casts in [`cast`], overload resolution in [`sig`], aggregate states in [`agg`],
//! set-returning functions in [`table_function`], window functions in [`window`].
//!
//! The binder types a call with [`sig::build_func`] (or [`cast::build_cast`]), which picks the overload,
//! inserts the implicit casts and sets the return type; evaluation then trusts those types.
//!
//! [`eval`] is strict (batch): the first error fails the expression. [`eval_non_strict`] is RisingWave's
//! streaming mode: a call that fails yields NULL, the error goes to the callback, and evaluation continues.

pub mod agg;
pub mod cast;
mod error;
mod eval;
pub mod scalar;
pub mod sig;
pub mod table_function;
mod text;
pub mod window;

pub use error::{ExprError, Result};
pub use eval::{
    EvalContext, eval, eval_non_strict, eval_non_strict_with, eval_with, fold_constants,
};
