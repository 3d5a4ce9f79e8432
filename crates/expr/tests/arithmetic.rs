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
    // RisingWave's modulus is a checked remainder: a zero divisor is out of range.
    assert_eq!(err(Modulus, vec![i64_(1), i64_(0)]), "Numeric out of range");
    assert_eq!(
        err(Modulus, vec![dec_("1"), dec_("0")]),
        "Numeric out of range"
    );
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

#[test]
fn rounding_as_risingwave() {
    // e2e_test/batch/functions/round.slt.part
    assert_eq!(t(Round, vec![dec_("-5.5")]), "-6");
    assert_eq!(t(Round, vec![dec_("5.5")]), "6");
    assert_eq!(t(Ceil, vec![dec_("4.7")]), "5");
    assert_eq!(t(Floor, vec![f64_("4.7")]), "4");
    assert_eq!(t(Round, vec![i32_(4)]), "4");
    assert_eq!(t(Round, vec![f64_("4.5")]), "4");
    // An untyped literal goes to double precision, the preferred numeric type: ties to even.
    assert_eq!(t(Round, vec![str_("4.5")]), "4");
    assert_eq!(t(Round, vec![dec_("-0.5")]), "-1");
    assert_eq!(t(Round, vec![f64_("-0.5")]), "-0");
    assert_eq!(t(Ceil, vec![f64_("-0.25")]), "-0");
    assert_eq!(t(Ceil, vec![dec_("-0.25")]), "0");
    assert_eq!(t(Round, vec![dec_("84818.15"), i32_(1)]), "84818.2");
    assert_eq!(t(Round, vec![dec_("21.372736"), i32_(-1)]), "20");
    assert_eq!(
        t(
            Round,
            vec![dec_("-792.28162514264337593543950335"), i32_(-3)]
        ),
        "-1000"
    );
}

#[test]
fn power_and_roots() {
    // e2e_test/batch/functions/pow.slt.part and sqrt.slt.part
    assert_eq!(t(Pow, vec![dec_("2.0"), dec_("3.0")]), "8");
    assert_eq!(t(Pow, vec![dec_("2.0"), i32_(-2)]), "0.25");
    assert_eq!(
        t(Pow, vec![f64_("2.23"), dec_("-2.33")]),
        "0.15432975583772085"
    );
    assert_eq!(t(Pow, vec![i32_(100000), i32_(0)]), "1");
    assert!(err(Pow, vec![i32_(100000), i64_(-200000000000000)]).contains("underflow"));
    assert!(err(Pow, vec![i32_(100000), i64_(200000000000000)]).contains("Numeric out of range"));
    assert!(err(Pow, vec![i32_(-100000), i64_(200000000000001)]).contains("Numeric out of range"));
    assert_eq!(t(Exp, vec![i16_(0)]), "1");
    assert_eq!(t(Cbrt, vec![i32_(125)]), "5");
    assert_eq!(t(Cbrt, vec![i32_(-125)]), "-5");
    assert_eq!(t(Sqrt, vec![dec_("NaN")]), "NaN");
    assert_eq!(t(Sqrt, vec![f64_("inf")]), "Infinity");
    assert!(err(Sqrt, vec![f64_("-1")]).contains("negative"));
    assert!(err(Sqrt, vec![dec_("-1")]).contains("negative"));
    assert_eq!(t(Log10, vec![i32_(100)]), "2");
}

#[test]
fn mixed_numeric_types_resolve_as_risingwave() {
    let e = call(Add, vec![i32_(1), lit("1.5", DataType::Float32)]);
    assert_eq!(
        e.return_type(),
        DataType::Float64,
        "int + real is double precision"
    );
    assert_eq!(text(&run(&e).unwrap()), "2.5");
    let e = call(Add, vec![i64_(1), dec_("1.5")]);
    assert_eq!(e.return_type(), DataType::Decimal);
    assert_eq!(text(&run(&e).unwrap()), "2.5");
    let e = call(
        Multiply,
        vec![lit("1.5", DataType::Float32), lit("2", DataType::Float32)],
    );
    assert_eq!(e.return_type(), DataType::Float32);
    assert_eq!(
        call(Pow, vec![dec_("10.0"), i32_(2)]).return_type(),
        DataType::Decimal
    );
    assert_eq!(
        call(Pow, vec![i32_(10), i32_(2)]).return_type(),
        DataType::Float64
    );
}

#[test]
fn decimal_special_values_and_division() {
    assert_eq!(
        t(Divide, vec![dec_("1"), dec_("3")]),
        "0.3333333333333333333333333333"
    );
    assert_eq!(err(Divide, vec![dec_("1"), dec_("0")]), "Division by zero");
    assert_eq!(t(Add, vec![dec_("Infinity"), dec_("1")]), "Infinity");
    assert_eq!(t(Subtract, vec![dec_("Infinity"), dec_("Infinity")]), "NaN");
    assert_eq!(t(Divide, vec![dec_("1"), dec_("-Infinity")]), "0");
    assert_eq!(t(Multiply, vec![dec_("0"), dec_("Infinity")]), "NaN");
    assert_eq!(t(Modulus, vec![dec_("7.5"), dec_("2")]), "1.5");
    assert_eq!(
        t(Abs, vec![dec_("-1000.2131293210382103821")]),
        "1000.2131293210382103821"
    );
    assert_eq!(t(Neg, vec![dec_("-Infinity")]), "Infinity");
    // Float division by zero does not fail in RisingWave: it is IEEE's.
    assert_eq!(t(Divide, vec![f64_("1"), f64_("0")]), "Infinity");
    assert_eq!(
        t(Subtract, vec![f64_("0.1"), f64_("0.3")]),
        "-0.19999999999999998"
    );
}

#[test]
fn non_strict_nulls_each_failing_node_as_risingwave() {
    // e2e_test/streaming/non_strict_mode.slt: 10/x, 10/x IS NULL, WHERE 10/x > 0, coalesce(x::int, 0)
    let x = || col(0, DataType::Int32);
    let div = || call(Divide, vec![i32_(10), x()]);
    let is_null = call(IsNull, vec![div()]);
    let positive = call(GreaterThan, vec![div(), i32_(0)]);
    let mut errors = 0;
    let mut eval = |e: &epochlab_common::expr_node::ExprNode, v: Option<i32>| {
        let row = epochlab_common::OwnedRow::new(vec![v.map(ScalarImpl::Int32)]);
        text(&epochlab_expr::eval_non_strict(e, &row, &mut |_| {
            errors += 1
        }))
    };
    let xs = [Some(0), Some(1), Some(2), None];
    assert_eq!(xs.map(|v| eval(&div(), v)), ["NULL", "10", "5", "NULL"]);
    assert_eq!(xs.map(|v| eval(&is_null, v)), ["t", "f", "f", "t"]);
    assert_eq!(xs.map(|v| eval(&positive, v)), ["NULL", "t", "t", "NULL"]);
    let coalesced = call(
        Coalesce,
        vec![cast_to(col(0, DataType::Varchar), DataType::Int32), i32_(0)],
    );
    let row = |s: &str| epochlab_common::OwnedRow::new(vec![Some(ScalarImpl::Utf8(s.into()))]);
    let mut seen = Vec::new();
    let v =
        epochlab_expr::eval_non_strict(&coalesced, &row("two"), &mut |e| seen.push(e.to_string()));
    assert_eq!(text(&v), "0");
    assert_eq!(seen, ["Parse error: integer invalid digit found in string"]);
    let v = epochlab_expr::eval_non_strict(&coalesced, &row("4"), &mut |_| {});
    assert_eq!(text(&v), "4");
    assert_eq!(errors, 3, "one error per failing division");
}

#[test]
fn trigonometry_in_double_precision() {
    assert_eq!(t(Sin, vec![i32_(0)]), "0");
    assert_eq!(t(Cos, vec![i32_(0)]), "1");
    assert_eq!(t(Degrees, vec![call(Pi, vec![])]), "180");
    assert_eq!(t(Atan2, vec![i32_(1), i32_(1)]), "0.7853981633974483");
    assert_eq!(
        call(Radians, vec![i32_(180)]).return_type(),
        DataType::Float64
    );
}
