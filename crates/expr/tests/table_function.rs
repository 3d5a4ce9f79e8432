use epochlab_common::expr_node::TableFunctionType::*;
use epochlab_common::{DataType, ScalarImpl};
use epochlab_expr::table_function::{eval, return_type};

fn ints(v: &[i32]) -> Vec<Option<ScalarImpl>> {
    v.iter().map(|i| Some(ScalarImpl::Int32(*i))).collect()
}

#[test]
fn generate_series_includes_the_stop_and_range_excludes_it() {
    assert_eq!(
        return_type(GenerateSeries, &[DataType::Int32, DataType::Int32]).unwrap(),
        DataType::Int32
    );
    assert_eq!(
        eval(GenerateSeries, &ints(&[1, 3])).unwrap(),
        ints(&[1, 2, 3])
    );
    assert_eq!(eval(Range, &ints(&[1, 3])).unwrap(), ints(&[1, 2]));
    assert_eq!(
        eval(GenerateSeries, &ints(&[5, 1, -2])).unwrap(),
        ints(&[5, 3, 1])
    );
    assert_eq!(eval(GenerateSeries, &ints(&[3, 1])).unwrap(), ints(&[]));
    assert_eq!(
        eval(GenerateSeries, &ints(&[1, 3, 0]))
            .unwrap_err()
            .to_string(),
        "Invalid parameter step: step size cannot equal zero"
    );
}

#[test]
fn series_of_decimals_and_timestamps_and_unnest() {
    use epochlab_common::expr_node::ExprNode;
    use epochlab_common::types::ListValue;
    let lit =
        |s: &str, ty: DataType| ExprNode::literal(Some(ScalarImpl::from_text(s, &ty).unwrap()), ty);
    let untyped = |s: &str| ExprNode::literal(Some(ScalarImpl::Utf8(s.into())), DataType::Varchar);
    let text = |v: Vec<Option<ScalarImpl>>| {
        v.iter()
            .map(|d| d.as_ref().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let values = |args: &[ExprNode]| -> Vec<Option<ScalarImpl>> {
        args.iter()
            .map(|a| a.as_literal().unwrap().clone())
            .collect()
    };
    let (args, ty) = epochlab_expr::table_function::build(
        GenerateSeries,
        vec![
            lit("2020-01-01 00:00:00", DataType::Timestamp),
            untyped("2020-01-01 02:00:00"),
            untyped("1 hour"),
        ],
    )
    .unwrap();
    assert_eq!(ty, DataType::Timestamp);
    assert_eq!(
        text(eval(GenerateSeries, &values(&args)).unwrap()),
        [
            "2020-01-01 00:00:00",
            "2020-01-01 01:00:00",
            "2020-01-01 02:00:00"
        ]
    );
    let (args, ty) = epochlab_expr::table_function::build(
        Range,
        vec![
            lit("0.1", DataType::Decimal),
            lit("0.4", DataType::Decimal),
            lit("0.1", DataType::Decimal),
        ],
    )
    .unwrap();
    assert_eq!(ty, DataType::Decimal);
    assert_eq!(
        text(eval(Range, &values(&args)).unwrap()),
        ["0.1", "0.2", "0.3"]
    );
    let nested = ListValue::new(vec![
        Some(ScalarImpl::List(ListValue::new(vec![
            Some(ScalarImpl::Int32(1)),
            None,
        ]))),
        Some(ScalarImpl::List(ListValue::new(vec![Some(
            ScalarImpl::Int32(3),
        )]))),
    ]);
    let list_ty = DataType::List(Box::new(DataType::List(Box::new(DataType::Int32))));
    assert_eq!(return_type(Unnest, &[list_ty]).unwrap(), DataType::Int32);
    let rows = eval(Unnest, &[Some(ScalarImpl::List(nested))]).unwrap();
    assert_eq!(
        rows,
        vec![Some(ScalarImpl::Int32(1)), None, Some(ScalarImpl::Int32(3))]
    );
}

#[test]
fn pg_expandarray_numbers_the_elements() {
    use epochlab_common::types::ListValue;
    let list = ListValue::new(
        ["a", "b"]
            .iter()
            .map(|s| Some(ScalarImpl::Utf8((*s).into())))
            .collect(),
    );
    let ty = return_type(
        PgExpandArray,
        &[DataType::List(Box::new(DataType::Varchar))],
    )
    .unwrap();
    assert_eq!(ty.to_string(), "struct<x character varying, n integer>");
    let rows = eval(PgExpandArray, &[Some(ScalarImpl::List(list))]).unwrap();
    let text: Vec<String> = rows
        .iter()
        .map(|r| r.as_ref().unwrap().to_string())
        .collect();
    assert_eq!(text, ["(a,1)", "(b,2)"]);
}

/// `regexp_matches`: a `varchar[]` of capture groups (or the whole match) per match; every match with
/// `g`, the first without; no match is no row.
#[test]
fn regexp_matches_gives_a_row_per_match() {
    use epochlab_common::types::ListValue;
    let s = |v: &str| Some(ScalarImpl::Utf8(v.into()));
    let arr = |v: &[&str]| {
        Some(ScalarImpl::List(ListValue::new(
            v.iter().map(|x| s(x)).collect(),
        )))
    };
    assert_eq!(
        return_type(RegexpMatches, &[DataType::Varchar, DataType::Varchar]).unwrap(),
        DataType::List(Box::new(DataType::Varchar))
    );
    let text = s("x=1, y=22, z=3");
    assert_eq!(
        eval(RegexpMatches, &[text.clone(), s("[0-9]+"), s("g")]).unwrap(),
        vec![arr(&["1"]), arr(&["22"]), arr(&["3"])]
    );
    assert_eq!(
        eval(RegexpMatches, &[text.clone(), s("([a-z])=([0-9]+)")]).unwrap(),
        vec![arr(&["x", "1"])]
    );
    assert_eq!(eval(RegexpMatches, &[text, s("q")]).unwrap(), vec![]);
    assert!(eval(RegexpMatches, &[s("a"), s("a"), s("z")]).is_err());
}
