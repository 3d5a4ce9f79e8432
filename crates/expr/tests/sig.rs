mod common;

use common::*;
use epochlab_common::DataType::{self, *};
use epochlab_common::expr_node::ExprType;

fn one(ty: &DataType) -> epochlab_common::expr_node::ExprNode {
    match ty {
        Boolean => bool_(true),
        Int16 => i16_(1),
        Int32 => i32_(1),
        Int64 => i64_(1),
        other => lit("1", other.clone()),
    }
}

/// RisingWave's `test_arithmetics` promotion table (type_inference/func.rs), evaluated too.
#[test]
fn arithmetic_promotion_as_risingwave() {
    let table = [
        (Int16, Int16, Int16),
        (Int16, Int32, Int32),
        (Int16, Int64, Int64),
        (Int16, Decimal, Decimal),
        (Int16, Float32, Float64),
        (Int16, Float64, Float64),
        (Int32, Int16, Int32),
        (Int32, Int32, Int32),
        (Int32, Int64, Int64),
        (Int32, Decimal, Decimal),
        (Int32, Float32, Float64),
        (Int32, Float64, Float64),
        (Int64, Int16, Int64),
        (Int64, Int32, Int64),
        (Int64, Int64, Int64),
        (Int64, Decimal, Decimal),
        (Int64, Float32, Float64),
        (Int64, Float64, Float64),
        (Decimal, Int16, Decimal),
        (Decimal, Int32, Decimal),
        (Decimal, Int64, Decimal),
        (Decimal, Decimal, Decimal),
        (Decimal, Float32, Float64),
        (Decimal, Float64, Float64),
        (Float32, Int16, Float64),
        (Float32, Int32, Float64),
        (Float32, Int64, Float64),
        (Float32, Decimal, Float64),
        (Float32, Float32, Float32),
        (Float32, Float64, Float64),
        (Float64, Int16, Float64),
        (Float64, Int32, Float64),
        (Float64, Int64, Float64),
        (Float64, Decimal, Float64),
        (Float64, Float32, Float64),
        (Float64, Float64, Float64),
    ];
    for func in [
        ExprType::Add,
        ExprType::Subtract,
        ExprType::Multiply,
        ExprType::Divide,
    ] {
        for (a, b, want) in &table {
            let e = call(func, vec![one(a), one(b)]);
            assert_eq!(&e.return_type(), want, "{func:?}({a}, {b})");
            let v = run(&e).unwrap_or_else(|err| panic!("{func:?}({a}, {b}): {err}"));
            let expected = if func == ExprType::Add {
                "2"
            } else if func == ExprType::Subtract {
                "0"
            } else {
                "1"
            };
            assert_eq!(text(&v), expected, "{func:?}({a}, {b})");
        }
    }
}

#[test]
fn bitwise_promotion_as_risingwave() {
    let ints = [Int16, Int32, Int64];
    for f in [
        ExprType::BitwiseAnd,
        ExprType::BitwiseOr,
        ExprType::BitwiseXor,
    ] {
        for (i, a) in ints.iter().enumerate() {
            for (j, b) in ints.iter().enumerate() {
                let e = call(f, vec![one(a), one(b)]);
                assert_eq!(e.return_type(), ints[i.max(j)], "{f:?}({a}, {b})");
                assert!(run(&e).is_ok());
            }
        }
    }
    for (a, b, want) in [
        (Int16, Int16, Int16),
        (Int32, Int16, Int32),
        (Int64, Int16, Int64),
        (Int16, Int32, Int16),
    ] {
        let e = call(ExprType::BitwiseShiftLeft, vec![one(&a), one(&b)]);
        assert_eq!(e.return_type(), want);
        assert_eq!(text(&run(&e).unwrap()), "2");
    }
}

/// RisingWave's `test_bool_num_not_exist`: no arithmetic, comparison or logic between a number and a
/// boolean.
#[test]
fn numbers_and_booleans_do_not_mix() {
    use ExprType::*;
    for f in [
        Add,
        Subtract,
        Multiply,
        Divide,
        Modulus,
        Equal,
        NotEqual,
        LessThan,
        LessThanOrEqual,
        GreaterThan,
        GreaterThanOrEqual,
        And,
        Or,
    ] {
        for t in [Int16, Int32, Int64, Float32, Float64, Decimal] {
            let r = epochlab_expr::sig::build_func(f, vec![one(&t), bool_(true)]);
            assert!(r.is_err(), "{f:?}({t}, boolean) resolved to {r:?}");
        }
    }
    let r = epochlab_expr::sig::build_func(Not, vec![i32_(1)]);
    assert!(r.is_err());
}

#[test]
fn error_messages_name_the_function_and_types() {
    let e = epochlab_expr::sig::build_func(ExprType::Add, vec![i32_(1), bool_(true)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "function add(integer, boolean) does not exist"
    );
    let e = epochlab_expr::sig::build_func(ExprType::Add, vec![str_("1"), str_("2")]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "function add(unknown, unknown) is not unique"
    );
}
