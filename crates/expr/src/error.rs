//! Evaluation errors, worded as RisingWave's `ExprError`.

use epochlab_common::DataType;
use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ExprError {
    #[error("Unsupported function: {0}")]
    UnsupportedFunction(String),
    #[error("Unsupported cast: {0} to {1}")]
    UnsupportedCast(DataType, DataType),
    /// The target is named as RisingWave names it (the Rust type: `i16`, `i32`, ...).
    #[error("Casting to {0} out of range")]
    CastOutOfRange(&'static str),
    #[error("Numeric out of range")]
    NumericOutOfRange,
    #[error("Numeric out of range: underflow")]
    NumericUnderflow,
    #[error("Numeric out of range: overflow")]
    NumericOverflow,
    #[error("Division by zero")]
    DivisionByZero,
    #[error("Parse error: {0}")]
    Parse(Box<str>),
    #[error("Invalid parameter {name}: {reason}")]
    InvalidParam {
        name: &'static str,
        reason: Box<str>,
    },
    #[error("Context {0} not found")]
    Context(&'static str),
    #[error("too few arguments for format()")]
    TooFewArguments,
    /// A call whose arguments do not match any overload (a bind-time error in RisingWave).
    #[error("function {func}({args}) does not exist")]
    NoSuchOverload { func: String, args: String },
    #[error("function {func}({args}) is not unique")]
    NotUnique { func: String, args: String },
    #[error("cannot cast type \"{from}\" to \"{to}\" in {ctx} context")]
    CannotCast {
        from: String,
        to: String,
        ctx: &'static str,
    },
    #[error("types {0:?} and {1:?} cannot be matched")]
    CannotMatch(DataType, DataType),
    #[error("invalid state: {0}")]
    InvalidState(String),
}

impl ExprError {
    pub fn parse(msg: impl Into<String>) -> Self {
        ExprError::Parse(msg.into().into_boxed_str())
    }

    pub fn invalid_param(name: &'static str, reason: impl Into<String>) -> Self {
        ExprError::InvalidParam {
            name,
            reason: reason.into().into_boxed_str(),
        }
    }
}

pub type Result<T, E = ExprError> = std::result::Result<T, E>;
