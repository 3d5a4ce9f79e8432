//! Helpers shared by the tests: build calls through `sig::build_func` (as the binder will) and evaluate them.

#![allow(dead_code)]

use epochlab_common::expr_node::{ExprNode, ExprType};
use epochlab_common::{DataType, Datum, OwnedRow, ScalarImpl};
use epochlab_expr::{ExprError, eval, sig};

pub fn i16_(v: i16) -> ExprNode {
    ExprNode::literal(Some(ScalarImpl::Int16(v)), DataType::Int16)
}
pub fn i32_(v: i32) -> ExprNode {
    ExprNode::literal(Some(ScalarImpl::Int32(v)), DataType::Int32)
}
pub fn i64_(v: i64) -> ExprNode {
    ExprNode::literal(Some(ScalarImpl::Int64(v)), DataType::Int64)
}
pub fn bool_(v: bool) -> ExprNode {
    ExprNode::literal(Some(ScalarImpl::Bool(v)), DataType::Boolean)
}
pub fn str_(v: &str) -> ExprNode {
    ExprNode::literal(Some(ScalarImpl::Utf8(v.into())), DataType::Varchar)
}
/// A typed literal read from text, as `'text'::ty`.
pub fn lit(text: &str, ty: DataType) -> ExprNode {
    let v = ScalarImpl::from_text(text, &ty).unwrap_or_else(|e| panic!("{text} as {ty}: {e}"));
    ExprNode::literal(Some(v), ty)
}
pub fn dec_(text: &str) -> ExprNode {
    lit(text, DataType::Decimal)
}
pub fn f64_(text: &str) -> ExprNode {
    lit(text, DataType::Float64)
}
pub fn cast_to(e: ExprNode, ty: DataType) -> ExprNode {
    epochlab_expr::cast::build_cast(e, ty, epochlab_expr::cast::CastContext::Explicit)
        .unwrap_or_else(|err| panic!("cast: {err}"))
}
pub fn null(ty: DataType) -> ExprNode {
    ExprNode::null(ty)
}
/// A typed (non-literal) varchar: a column.
pub fn col(index: usize, ty: DataType) -> ExprNode {
    ExprNode::input_ref(index, ty)
}

pub fn call(func: ExprType, args: Vec<ExprNode>) -> ExprNode {
    sig::build_func(func, args).unwrap_or_else(|e| panic!("build {func:?}: {e}"))
}

pub fn run(e: &ExprNode) -> Result<Datum, ExprError> {
    eval(e, &OwnedRow::empty())
}

pub fn val(func: ExprType, args: Vec<ExprNode>) -> Datum {
    let e = call(func, args);
    run(&e).unwrap_or_else(|err| panic!("eval {e:?}: {err}"))
}

pub fn err(func: ExprType, args: Vec<ExprNode>) -> String {
    let e = call(func, args);
    match run(&e) {
        Ok(v) => panic!("{e:?} gave {v:?}, expected an error"),
        Err(err) => err.to_string(),
    }
}

/// The text of a datum as RisingWave prints it, NULL for none.
pub fn text(d: &Datum) -> String {
    match d {
        None => "NULL".to_string(),
        Some(v) => v.to_string(),
    }
}

pub fn t(func: ExprType, args: Vec<ExprNode>) -> String {
    text(&val(func, args))
}
