mod common;

use common::*;
use epochlab_common::expr_node::ExprType::*;
use epochlab_common::{DataType, ScalarImpl};

#[test]
fn integer_arithmetic_keeps_the_wider_type_and_truncates_division() {
    assert_eq!(val(Add, vec![i16_(1), i32_(2)]), Some(ScalarImpl::Int32(3)));
    assert_eq!(
        val(Multiply, vec![i32_(6), i64_(7)]),
        Some(ScalarImpl::Int64(42))
    );
    assert_eq!(
        val(Divide, vec![i32_(7), i32_(2)]),
        Some(ScalarImpl::Int32(3))
    );
    assert_eq!(
        val(Divide, vec![i32_(-7), i32_(2)]),
        Some(ScalarImpl::Int32(-3))
    );
    assert_eq!(
        val(Modulus, vec![i32_(-7), i32_(2)]),
        Some(ScalarImpl::Int32(-1))
    );
    assert_eq!(
        val(Subtract, vec![i16_(1), i16_(3)]),
        Some(ScalarImpl::Int16(-2))
    );
    assert_eq!(val(Neg, vec![i64_(5)]), Some(ScalarImpl::Int64(-5)));
    assert_eq!(val(Abs, vec![i32_(-5)]), Some(ScalarImpl::Int32(5)));
}

#[test]
fn overflow_and_division_by_zero_are_worded_as_risingwave() {
    assert_eq!(
        err(Add, vec![i32_(i32::MAX), i32_(1)]),
        "Numeric out of range"
    );
    assert_eq!(
        err(Multiply, vec![i16_(300), i16_(300)]),
        "Numeric out of range"
    );
    assert_eq!(err(Neg, vec![i64_(i64::MIN)]), "Numeric out of range");
    assert_eq!(err(Divide, vec![i32_(1), i32_(0)]), "Division by zero");
    assert_eq!(err(Modulus, vec![i64_(1), i64_(0)]), "Division by zero");
    assert_eq!(
        err(Divide, vec![i32_(i32::MIN), i32_(-1)]),
        "Numeric out of range"
    );
}

#[test]
fn null_operands_give_null() {
    assert_eq!(val(Add, vec![i32_(1), null(DataType::Int32)]), None);
}

#[test]
fn an_untyped_literal_takes_the_other_operands_type() {
    assert_eq!(
        val(Add, vec![i64_(1), str_("2")]),
        Some(ScalarImpl::Int64(3))
    );
}

#[test]
fn non_strict_evaluation_turns_an_error_into_null_and_reports_it() {
    let e = call(Divide, vec![i32_(1), col(0, DataType::Int32)]);
    let mut errors = Vec::new();
    let row = epochlab_common::row![0i32];
    let v = epochlab_expr::eval_non_strict(&e, &row, &mut |err| errors.push(err.to_string()));
    assert_eq!(v, None);
    assert_eq!(errors, vec!["Division by zero".to_string()]);
    // An outer call sees the NULL and carries on.
    let outer = call(Coalesce, vec![e, i32_(7)]);
    let v = epochlab_expr::eval_non_strict(&outer, &row, &mut |_| {});
    assert_eq!(v, Some(ScalarImpl::Int32(7)));
    assert!(
        epochlab_expr::eval(&outer, &row).is_err(),
        "strict evaluation fails"
    );
}
