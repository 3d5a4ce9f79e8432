mod common;

use epochlab_common::expr_node::{AggCall, AggKind};
use epochlab_common::{DataType, Datum, Op, OrderType, OwnedRow, ScalarImpl};
use epochlab_expr::agg::{AggState, infer_return_type};

fn agg(kind: AggKind, args: Vec<usize>, arg_types: Vec<DataType>) -> AggCall {
    let ret = infer_return_type(kind, &arg_types).unwrap();
    AggCall {
        kind,
        args,
        arg_types,
        ret,
        distinct: false,
        order_by: vec![],
        filter: None,
    }
}

fn feed(call: &AggCall, ops: &[(Op, OwnedRow)]) -> Datum {
    let mut s = AggState::new(call);
    for (op, row) in ops {
        s.apply(*op, row).unwrap();
    }
    s.output()
}

fn i(v: i32) -> OwnedRow {
    epochlab_common::row![v]
}

fn null_row() -> OwnedRow {
    OwnedRow::new(vec![None])
}

#[test]
fn count_skips_nulls_and_count_star_does_not() {
    let rows = [
        (Op::Insert, i(1)),
        (Op::Insert, null_row()),
        (Op::Insert, i(3)),
    ];
    assert_eq!(
        feed(&agg(AggKind::Count, vec![0], vec![DataType::Int32]), &rows),
        Some(ScalarImpl::Int64(2))
    );
    assert_eq!(
        feed(&agg(AggKind::Count, vec![], vec![]), &rows),
        Some(ScalarImpl::Int64(3))
    );
}

#[test]
fn sum_and_min_max_retract() {
    let sum = agg(AggKind::Sum, vec![0], vec![DataType::Int32]);
    assert_eq!(sum.ret, DataType::Int64);
    let ops = [(Op::Insert, i(5)), (Op::Insert, i(7)), (Op::Delete, i(5))];
    assert_eq!(feed(&sum, &ops), Some(ScalarImpl::Int64(7)));
    assert_eq!(feed(&sum, &[(Op::Insert, i(5)), (Op::Delete, i(5))]), None);
    let sum0 = agg(AggKind::Sum0, vec![0], vec![DataType::Int64]);
    assert_eq!(feed(&sum0, &[]), Some(ScalarImpl::Int64(0)));
    let max = agg(AggKind::Max, vec![0], vec![DataType::Int32]);
    let ops = [
        (Op::Insert, i(5)),
        (Op::Insert, i(7)),
        (Op::Insert, i(7)),
        (Op::Delete, i(7)),
    ];
    assert_eq!(feed(&max, &ops), Some(ScalarImpl::Int32(7)));
    let ops = [(Op::Insert, i(5)), (Op::Insert, i(7)), (Op::Delete, i(7))];
    assert_eq!(feed(&max, &ops), Some(ScalarImpl::Int32(5)));
    let min = agg(AggKind::Min, vec![0], vec![DataType::Int32]);
    assert_eq!(
        feed(&min, &[(Op::Insert, i(-2)), (Op::Insert, i(7))]),
        Some(ScalarImpl::Int32(-2))
    );
}

#[test]
fn distinct_counts_each_value_once() {
    let mut c = agg(AggKind::Count, vec![0], vec![DataType::Int32]);
    c.distinct = true;
    let ops = [
        (Op::Insert, i(1)),
        (Op::Insert, i(1)),
        (Op::Insert, i(2)),
        (Op::Delete, i(1)),
    ];
    assert_eq!(feed(&c, &ops), Some(ScalarImpl::Int64(2)));
}

#[test]
fn string_agg_orders_and_bool_and_bit_aggs() {
    let mut c = agg(
        AggKind::StringAgg,
        vec![0, 1],
        vec![DataType::Varchar, DataType::Varchar],
    );
    c.order_by = vec![(0, OrderType::descending())];
    let r = |s: &str| epochlab_common::row![s, ","];
    let ops = [
        (Op::Insert, r("a")),
        (Op::Insert, r("c")),
        (Op::Insert, r("b")),
    ];
    assert_eq!(feed(&c, &ops), Some(ScalarImpl::Utf8("c,b,a".into())));
    let band = agg(AggKind::BoolAnd, vec![0], vec![DataType::Boolean]);
    let b = |v: bool| epochlab_common::row![v];
    assert_eq!(
        feed(
            &band,
            &[
                (Op::Insert, b(true)),
                (Op::Insert, b(false)),
                (Op::Delete, b(false))
            ]
        ),
        Some(ScalarImpl::Bool(true))
    );
    let bor = agg(AggKind::BitOr, vec![0], vec![DataType::Int32]);
    assert_eq!(
        feed(
            &bor,
            &[(Op::Insert, i(1)), (Op::Insert, i(4)), (Op::Delete, i(1))]
        ),
        Some(ScalarImpl::Int32(4))
    );
    let band = agg(AggKind::BitAnd, vec![0], vec![DataType::Int32]);
    assert_eq!(
        feed(&band, &[(Op::Insert, i(5)), (Op::Insert, i(7))]),
        Some(ScalarImpl::Int32(5))
    );
}
