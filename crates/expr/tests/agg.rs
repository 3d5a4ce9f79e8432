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
    // As RisingWave's sum state: NULL until a value goes in, 0 once its values are retracted (an emptied
    // group gets a new state from the executor).
    assert_eq!(feed(&sum, &[]), None);
    assert_eq!(feed(&sum, &[(Op::Insert, null_row())]), None);
    assert_eq!(
        feed(&sum, &[(Op::Insert, i(5)), (Op::Delete, i(5))]),
        Some(ScalarImpl::Int64(0))
    );
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

fn text(d: &Datum) -> String {
    d.as_ref().map_or("NULL".to_string(), |v| v.to_string())
}

fn rounded(d: &Datum, dp: i32) -> String {
    match d {
        Some(ScalarImpl::Decimal(v)) => {
            ScalarImpl::Decimal(epochlab_expr::scalar::decimal::round_dp(*v, dp).unwrap())
                .to_string()
        }
        other => text(other),
    }
}

fn inserts(rows: &[OwnedRow]) -> Vec<(Op, OwnedRow)> {
    rows.iter().map(|r| (Op::Insert, r.clone())).collect()
}

fn lit_row(text: &str, ty: &DataType) -> OwnedRow {
    OwnedRow::new(vec![Some(ScalarImpl::from_text(text, ty).unwrap())])
}

#[test]
fn sum_and_avg_types_and_values() {
    // e2e_test/batch/aggregate/sum.slt.part and avg.slt.part
    let cases = [
        (DataType::Int32, &["1", "4", "7"][..], "12", DataType::Int64),
        (
            DataType::Decimal,
            &["2", "5", "8"][..],
            "15",
            DataType::Decimal,
        ),
        (
            DataType::Float64,
            &["3", "6", "9"][..],
            "18",
            DataType::Float64,
        ),
        (
            DataType::Interval,
            &["10 second", "20 second", "30 second"][..],
            "00:01:00",
            DataType::Interval,
        ),
        (DataType::Int64, &["1", "2"][..], "3", DataType::Decimal),
    ];
    for (ty, values, want, ret) in cases {
        let call = agg(AggKind::Sum, vec![0], vec![ty.clone()]);
        assert_eq!(call.ret, ret, "sum({ty})");
        let rows: Vec<OwnedRow> = values.iter().map(|v| lit_row(v, &ty)).collect();
        assert_eq!(text(&feed(&call, &inserts(&rows))), want, "sum({ty})");
    }
    for ty in [
        DataType::Int16,
        DataType::Int32,
        DataType::Int64,
        DataType::Decimal,
    ] {
        let call = agg(AggKind::Avg, vec![0], vec![ty.clone()]);
        let rows = [lit_row("1", &ty), lit_row("2", &ty)];
        assert_eq!(
            rounded(&feed(&call, &inserts(&rows)), 1),
            "1.5",
            "avg({ty})"
        );
    }
    let call = agg(AggKind::Avg, vec![0], vec![DataType::Float32]);
    assert_eq!(call.ret, DataType::Float64);
    let rows = [
        lit_row("1", &DataType::Float32),
        lit_row("2", &DataType::Float32),
    ];
    assert_eq!(text(&feed(&call, &inserts(&rows))), "1.5");
}

#[test]
fn a_decimal_sum_out_of_range_is_an_error() {
    let call = agg(AggKind::Sum, vec![0], vec![DataType::Decimal]);
    let mut s = AggState::new(&call);
    let big = lit_row("9000000000000000000000000000", &DataType::Decimal);
    for _ in 0..8 {
        s.apply(Op::Insert, &big).unwrap();
    }
    assert_eq!(text(&s.output()), "72000000000000000000000000000");
    assert_eq!(
        s.apply(Op::Insert, &big).unwrap_err().to_string(),
        "Numeric out of range"
    );
}

#[test]
fn stddev_and_variance_retract() {
    // e2e_test/batch/aggregate/stddev_and_variance.slt.part
    let kinds = [
        AggKind::StddevPop,
        AggKind::StddevSamp,
        AggKind::VarPop,
        AggKind::VarSamp,
    ];
    let mut states: Vec<AggState> = kinds
        .iter()
        .map(|k| AggState::new(&agg(*k, vec![0], vec![DataType::Int32])))
        .collect();
    let out = |states: &[AggState], dps: [i32; 4]| -> Vec<String> {
        states
            .iter()
            .zip(dps)
            .map(|(s, dp)| rounded(&s.output(), dp))
            .collect()
    };
    assert_eq!(
        out(&states, [16, 16, 16, 1]),
        ["NULL", "NULL", "NULL", "NULL"]
    );
    let apply = |states: &mut Vec<AggState>, op: Op, v: i32| {
        for s in states.iter_mut() {
            s.apply(op, &i(v)).unwrap();
        }
    };
    apply(&mut states, Op::Insert, 1);
    assert_eq!(out(&states, [16, 16, 16, 1]), ["0", "NULL", "0", "NULL"]);
    for v in 2..=6 {
        apply(&mut states, Op::Insert, v);
    }
    assert_eq!(
        out(&states, [16, 16, 16, 1]),
        [
            "1.7078251276599331",
            "1.8708286933869707",
            "2.9166666666666667",
            "3.5"
        ]
    );
    apply(&mut states, Op::Delete, 3);
    assert_eq!(
        out(&states, [16, 16, 2, 1]),
        ["1.8547236990991408", "2.0736441353327721", "3.44", "4.3"]
    );
    apply(&mut states, Op::Delete, 4);
    apply(&mut states, Op::Insert, 7);
    assert_eq!(
        out(&states, [16, 16, 2, 1]),
        ["2.3151673805580451", "2.5884358211089569", "5.36", "6.7"]
    );
}

#[test]
fn array_agg_first_last_and_jsonb_agg_follow_the_order_by() {
    let ty = [DataType::Int32, DataType::Int32];
    let rows = [
        epochlab_common::row![3i32, 1i32],
        epochlab_common::row![1i32, 2i32],
        OwnedRow::new(vec![None, Some(ScalarImpl::Int32(3))]),
    ];
    let with_order = |kind| {
        let mut c = agg(kind, vec![0], ty[..1].to_vec());
        c.order_by = vec![(1, OrderType::ascending())];
        c
    };
    assert_eq!(
        text(&feed(&with_order(AggKind::ArrayAgg), &inserts(&rows))),
        "{3,1,NULL}"
    );
    assert_eq!(
        text(&feed(&with_order(AggKind::FirstValue), &inserts(&rows))),
        "3"
    );
    assert_eq!(
        text(&feed(&with_order(AggKind::LastValue), &inserts(&rows))),
        "NULL"
    );
    assert_eq!(
        text(&feed(&with_order(AggKind::JsonbAgg), &inserts(&rows))),
        "[3, 1, null]"
    );
    let mut ops = inserts(&rows);
    ops.push((Op::Delete, rows[0].clone()));
    assert_eq!(
        text(&feed(&with_order(AggKind::ArrayAgg), &ops)),
        "{1,NULL}"
    );
}

#[test]
fn filter_skips_rows() {
    use epochlab_common::expr_node::{ExprNode, ExprType};
    let mut c = agg(AggKind::Count, vec![], vec![]);
    let pred = epochlab_expr::sig::build_func(
        ExprType::GreaterThan,
        vec![
            ExprNode::input_ref(0, DataType::Int32),
            ExprNode::literal(Some(ScalarImpl::Int32(1)), DataType::Int32),
        ],
    )
    .unwrap();
    c.filter = Some(pred);
    assert_eq!(
        feed(&c, &inserts(&[i(1), i(2), i(3)])),
        Some(ScalarImpl::Int64(2))
    );
}

/// A value state stored and read back (what a streaming aggregation's result table holds) goes on exactly as
/// the original: same output, and the same after a further insert and delete.
#[test]
fn value_states_survive_encode_and_decode() {
    use epochlab_common::types::{Decimal, F64, Interval};
    let cases: Vec<(AggKind, DataType, Vec<ScalarImpl>)> = vec![
        (
            AggKind::Count,
            DataType::Int32,
            vec![ScalarImpl::Int32(3), ScalarImpl::Int32(4)],
        ),
        (
            AggKind::Sum,
            DataType::Int64,
            vec![ScalarImpl::Int64(i64::MAX), ScalarImpl::Int64(5)],
        ),
        (
            AggKind::Avg,
            DataType::Int32,
            vec![ScalarImpl::Int32(3), ScalarImpl::Int32(4)],
        ),
        (
            AggKind::Sum,
            DataType::Float64,
            vec![
                ScalarImpl::Float64(F64::from(1.5)),
                ScalarImpl::Float64(F64::from(-0.25)),
            ],
        ),
        (
            AggKind::Sum,
            DataType::Decimal,
            vec![
                ScalarImpl::Decimal(Decimal::from(7i64)),
                ScalarImpl::Decimal(Decimal::from(-2i64)),
            ],
        ),
        (
            AggKind::Sum,
            DataType::Interval,
            vec![ScalarImpl::Interval(Interval::from_month_day_usec(
                1, 2, -3,
            ))],
        ),
        (
            AggKind::StddevSamp,
            DataType::Int32,
            vec![
                ScalarImpl::Int32(1),
                ScalarImpl::Int32(4),
                ScalarImpl::Int32(9),
            ],
        ),
        (
            AggKind::BoolAnd,
            DataType::Boolean,
            vec![ScalarImpl::Bool(true), ScalarImpl::Bool(false)],
        ),
        (
            AggKind::BitOr,
            DataType::Int32,
            vec![ScalarImpl::Int32(5), ScalarImpl::Int32(-8)],
        ),
        (
            AggKind::BitXor,
            DataType::Int32,
            vec![ScalarImpl::Int32(5), ScalarImpl::Int32(3)],
        ),
    ];
    for (kind, ty, values) in cases {
        let call = agg(kind, vec![0], vec![ty]);
        let mut s = AggState::new(&call);
        for v in &values {
            s.apply(Op::Insert, &OwnedRow::new(vec![Some(v.clone())]))
                .unwrap();
        }
        assert!(s.is_value(), "{kind:?}");
        let stored = s.encode_value().expect("a value state");
        let mut back = AggState::decode_value(&call, &stored).unwrap();
        assert_eq!(back.try_output(), s.try_output(), "{kind:?}");
        let last = OwnedRow::new(vec![Some(values[values.len() - 1].clone())]);
        for op in [Op::Delete, Op::Insert, Op::Delete] {
            s.apply(op, &last).unwrap();
            back.apply(op, &last).unwrap();
            assert_eq!(back.try_output(), s.try_output(), "{kind:?} after {op:?}");
        }
        assert_eq!(back.encode_value(), s.encode_value(), "{kind:?}");
    }
    let min = agg(AggKind::Min, vec![0], vec![DataType::Int32]);
    assert!(!AggState::new(&min).is_value());
    assert_eq!(AggState::new(&min).encode_value(), None);
    assert!(AggState::decode_value(&min, &Some(ScalarImpl::Bytea(Box::new([])))).is_err());
}

#[test]
fn percentiles_and_mode() {
    // streaming/aggregate/... hdr histogram test: percentile_disc over four generate_series, with a delete.
    let mut c = agg(
        AggKind::PercentileDisc,
        vec![0, 1],
        vec![DataType::Int64, DataType::Float64],
    );
    c.order_by = vec![(0, OrderType::ascending())];
    let values: Vec<i64> = (1..=10)
        .chain(1000..=1100)
        .chain(10000..=11000)
        .chain(100000..=110000)
        .collect();
    let row = |v: i64, f: f64| {
        OwnedRow::new(vec![
            Some(ScalarImpl::Int64(v)),
            Some(ScalarImpl::Float64(f.into())),
        ])
    };
    let run = |f: f64, values: &[i64]| {
        let ops: Vec<(Op, OwnedRow)> = values.iter().map(|v| (Op::Insert, row(*v, f))).collect();
        text(&feed(&c, &ops))
    };
    assert_eq!(run(0.9, &values), "108889");
    assert_eq!(run(0.5, &values), "104444");
    let mut s = AggState::new(&c);
    for v in &values {
        s.apply(Op::Insert, &row(*v, 0.5)).unwrap();
    }
    for v in values.iter().filter(|v| **v > 100000) {
        s.apply(Op::Delete, &row(*v, 0.5)).unwrap();
    }
    assert_eq!(text(&s.output()), "10445");
    let cont = agg(
        AggKind::PercentileCont,
        vec![0, 1],
        vec![DataType::Int64, DataType::Float64],
    );
    assert_eq!(cont.ret, DataType::Float64);
    let ops: Vec<(Op, OwnedRow)> = [1, 2, 3, 4]
        .iter()
        .map(|v| (Op::Insert, row(*v, 0.5)))
        .collect();
    assert_eq!(text(&feed(&cont, &ops)), "2.5");
    let m = agg(AggKind::Mode, vec![0], vec![DataType::Int32]);
    assert_eq!(
        text(&feed(&m, &inserts(&[i(3), i(1), i(3), i(1), i(2)]))),
        "1"
    );
}

#[test]
fn real_sums_accumulate_in_real() {
    // RisingWave's sum(float4) -> float4 adds in single precision.
    let c = agg(AggKind::Sum, vec![0], vec![DataType::Float32]);
    assert_eq!(c.ret, DataType::Float32);
    let rows: Vec<OwnedRow> = ["16777216", "1", "1"]
        .iter()
        .map(|v| lit_row(v, &DataType::Float32))
        .collect();
    assert_eq!(
        text(&feed(&c, &inserts(&rows))),
        "16777216",
        "2^24 + 1 rounds back in f32, twice"
    );
}

/// `(key, value, pk)` rows for jsonb_object_agg(key, value) over a stream keyed by `pk`.
fn kv(key: &str, value: &str, pk: i64) -> OwnedRow {
    OwnedRow::new(vec![
        Some(ScalarImpl::Utf8(key.into())),
        Some(ScalarImpl::Jsonb(epochlab_common::types::JsonbVal::new(
            serde_json::from_str(value).unwrap(),
        ))),
        Some(ScalarImpl::Int64(pk)),
    ])
}

#[test]
fn a_duplicate_key_takes_the_value_of_the_row_last_in_stream_key_order() {
    let call = agg(
        AggKind::JsonbObjectAgg,
        vec![0, 1],
        vec![DataType::Varchar, DataType::Jsonb],
    );
    let text = |s: &AggState| s.output().map(|v| v.to_string());
    // Streaming: the upstream stream key breaks ties, whatever the arrival order (RisingWave's
    // materialized-input state is keyed by it), and a retraction finds its row.
    let mut s = AggState::with_stream_key(&call, &[2]);
    s.apply(Op::Insert, &kv("b", "999", 2)).unwrap();
    s.apply(Op::Insert, &kv("b", "null", 1)).unwrap();
    assert_eq!(text(&s).as_deref(), Some(r#"{"b": 999}"#));
    s.apply(Op::Delete, &kv("b", "999", 2)).unwrap();
    assert_eq!(text(&s).as_deref(), Some(r#"{"b": null}"#));
    // Batch: input order, the last row's value.
    let mut s = AggState::in_arrival_order(&call);
    s.apply(Op::Insert, &kv("b", "999", 2)).unwrap();
    s.apply(Op::Insert, &kv("b", "null", 1)).unwrap();
    assert_eq!(text(&s).as_deref(), Some(r#"{"b": null}"#));
}

#[test]
fn first_and_last_value_break_ties_by_stream_key() {
    let mut call = agg(AggKind::LastValue, vec![0], vec![DataType::Varchar]);
    call.order_by = vec![(1, OrderType::ascending())];
    let row = |v: &str, o: i64, pk: i64| {
        OwnedRow::new(vec![
            Some(ScalarImpl::Utf8(v.into())),
            Some(ScalarImpl::Int64(o)),
            Some(ScalarImpl::Int64(pk)),
        ])
    };
    let mut s = AggState::with_stream_key(&call, &[2]);
    for r in [row("x", 1, 3), row("y", 5, 2), row("z", 5, 1)] {
        s.apply(Op::Insert, &r).unwrap();
    }
    // last_value reverses the ORDER BY, then takes the first row: among the ties on 5, the smallest key.
    assert_eq!(s.output(), Some(ScalarImpl::Utf8("z".into())));
    call.kind = AggKind::FirstValue;
    let mut s = AggState::with_stream_key(&call, &[2]);
    for r in [row("x", 1, 3), row("y", 5, 2), row("z", 5, 1)] {
        s.apply(Op::Insert, &r).unwrap();
    }
    assert_eq!(s.output(), Some(ScalarImpl::Utf8("x".into())));
}
