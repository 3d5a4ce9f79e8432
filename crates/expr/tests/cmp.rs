mod common;

use common::*;
use epochlab_common::DataType;
use epochlab_common::expr_node::ExprType::*;

#[test]
fn comparisons_align_integer_widths() {
    assert_eq!(t(LessThan, vec![i16_(1), i64_(2)]), "t");
    assert_eq!(t(Equal, vec![i32_(2), i64_(2)]), "t");
    assert_eq!(t(GreaterThanOrEqual, vec![str_("b"), str_("a")]), "t");
    assert_eq!(t(NotEqual, vec![i32_(1), null(DataType::Int32)]), "NULL");
}

#[test]
fn three_valued_logic() {
    let n = || null(DataType::Boolean);
    assert_eq!(t(And, vec![bool_(false), n()]), "f");
    assert_eq!(t(And, vec![bool_(true), n()]), "NULL");
    assert_eq!(t(Or, vec![bool_(true), n()]), "t");
    assert_eq!(t(Or, vec![bool_(false), n()]), "NULL");
    assert_eq!(t(Not, vec![n()]), "NULL");
    assert_eq!(t(IsNull, vec![n()]), "t");
    assert_eq!(t(IsNotTrue, vec![n()]), "t");
    assert_eq!(t(IsFalse, vec![n()]), "f");
}

#[test]
fn distinct_from_treats_nulls_as_equal() {
    let n = || null(DataType::Int32);
    assert_eq!(t(IsDistinctFrom, vec![n(), n()]), "f");
    assert_eq!(t(IsDistinctFrom, vec![i32_(1), n()]), "t");
    assert_eq!(t(IsNotDistinctFrom, vec![i32_(1), i64_(1)]), "t");
}

#[test]
fn in_list_is_null_when_no_match_and_a_null_in_the_list() {
    assert_eq!(t(In, vec![i32_(1), i32_(2), i64_(1)]), "t");
    assert_eq!(t(In, vec![i32_(1), i32_(2), null(DataType::Int32)]), "NULL");
    assert_eq!(t(In, vec![i32_(1), i32_(2)]), "f");
    assert_eq!(t(In, vec![null(DataType::Int32), i32_(2)]), "NULL");
}

#[test]
fn case_coalesce_nullif_greatest_least() {
    let c = call(
        Case,
        vec![
            bool_(false),
            i32_(1),
            null(DataType::Boolean),
            i32_(2),
            i64_(3),
        ],
    );
    assert_eq!(c.return_type(), DataType::Int64);
    assert_eq!(text(&run(&c).unwrap()), "3");
    assert_eq!(t(Case, vec![bool_(false), i32_(1)]), "NULL");
    assert_eq!(
        t(Coalesce, vec![null(DataType::Int32), i32_(5), i32_(6)]),
        "5"
    );
    assert_eq!(t(Nullif, vec![i32_(5), i32_(5)]), "NULL");
    assert_eq!(t(Nullif, vec![i32_(5), null(DataType::Int32)]), "5");
    assert_eq!(
        t(Greatest, vec![i32_(5), null(DataType::Int32), i64_(9)]),
        "9"
    );
    assert_eq!(t(Least, vec![i32_(5), null(DataType::Int32), i64_(9)]), "5");
    assert_eq!(t(Least, vec![null(DataType::Int32)]), "NULL");
}

#[test]
fn constant_folding_keeps_failing_calls_and_now() {
    use epochlab_common::expr_node::ExprNode;
    let e = call(Add, vec![i32_(1), call(Multiply, vec![i32_(2), i32_(3)])]);
    assert_eq!(epochlab_expr::fold_constants(e), i32_(7));
    let failing = call(Divide, vec![i32_(1), i32_(0)]);
    assert_eq!(epochlab_expr::fold_constants(failing.clone()), failing);
    let now = call(Now, vec![]);
    assert_eq!(epochlab_expr::fold_constants(now.clone()), now);
    let with_col = call(
        Add,
        vec![col(0, DataType::Int32), call(Add, vec![i32_(1), i32_(1)])],
    );
    let ExprNode::Call { args, .. } = epochlab_expr::fold_constants(with_col) else {
        panic!("a call")
    };
    assert_eq!(args[1], i32_(2));
}
