mod common;

use common::*;
use epochlab_common::DataType;
use epochlab_expr::cast::{CastContext, align_types, build_cast, cast_ok, least_restrictive};

#[test]
fn the_cast_table_contexts() {
    use CastContext::*;
    use DataType::*;
    assert!(cast_ok(&Int16, &Int64, Implicit));
    assert!(!cast_ok(&Int64, &Int32, Implicit));
    assert!(cast_ok(&Int64, &Int32, Assign));
    assert!(cast_ok(&Int32, &Varchar, Assign));
    assert!(!cast_ok(&Int32, &Varchar, Implicit));
    assert!(!cast_ok(&Varchar, &Int32, Assign));
    assert!(cast_ok(&Varchar, &Int32, Explicit));
    assert!(cast_ok(&Boolean, &Int32, Explicit));
    assert!(!cast_ok(&Boolean, &Int64, Explicit));
    assert_eq!(least_restrictive(&Int16, &Int64), Some(Int64));
    assert_eq!(least_restrictive(&Int64, &Int16), Some(Int64));
    assert_eq!(least_restrictive(&Boolean, &Int16), None);
}

fn cast(e: epochlab_common::expr_node::ExprNode, to: DataType) -> Result<String, String> {
    let e = build_cast(e, to, CastContext::Explicit).map_err(|e| e.to_string())?;
    run(&e).map(|d| text(&d)).map_err(|e| e.to_string())
}

#[test]
fn integer_casts_check_range() {
    assert_eq!(
        cast(col_i64(), DataType::Int32).unwrap_err(),
        "Casting to i32 out of range"
    );
    assert_eq!(cast(i64_(7), DataType::Int16).unwrap(), "7");
    assert_eq!(cast(i32_(0), DataType::Boolean).unwrap(), "false");
    assert_eq!(cast(bool_(true), DataType::Int32).unwrap(), "1");
}

fn col_i64() -> epochlab_common::expr_node::ExprNode {
    // A literal is folded at build time; wrap the overflow in a call to see the evaluation error.
    call(
        epochlab_common::expr_node::ExprType::Add,
        vec![i64_(i64::from(i32::MAX)), i64_(1)],
    )
}

#[test]
fn text_casts() {
    assert_eq!(cast(str_(" 42 "), DataType::Int32).unwrap(), "42");
    assert_eq!(cast(str_("yes"), DataType::Boolean).unwrap(), "true");
    assert_eq!(cast(str_("f"), DataType::Boolean).unwrap(), "false");
    assert!(
        cast(str_("x"), DataType::Int32)
            .unwrap_err()
            .starts_with("Parse error: integer")
    );
    assert_eq!(cast(i16_(-3), DataType::Varchar).unwrap(), "-3");
}

#[test]
fn align_types_picks_the_widest_and_untyped_literals_follow() {
    let mut v = vec![i16_(1), str_("2"), i64_(3)];
    assert_eq!(align_types(&mut v).unwrap(), DataType::Int64);
    assert!(v.iter().all(|e| e.return_type() == DataType::Int64));
    let mut v = vec![bool_(true), i32_(1)];
    assert!(align_types(&mut v).is_err());
}
