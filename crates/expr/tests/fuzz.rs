//! Random expressions never panic; strict and non-strict evaluation agree whenever strict succeeds, and
//! non-strict reports exactly when strict would fail somewhere.

use epochlab_common::expr_node::{ExprNode, ExprType};
use epochlab_common::{DataType, OwnedRow, ScalarImpl};
use epochlab_expr::cast::{CastContext, build_cast};
use epochlab_expr::{eval, eval_non_strict, sig};
use proptest::prelude::*;

const FUNCS: [ExprType; 14] = [
    ExprType::Add,
    ExprType::Subtract,
    ExprType::Multiply,
    ExprType::Divide,
    ExprType::Modulus,
    ExprType::Equal,
    ExprType::LessThan,
    ExprType::Greatest,
    ExprType::Coalesce,
    ExprType::Nullif,
    ExprType::IsDistinctFrom,
    ExprType::Abs,
    ExprType::Neg,
    ExprType::Round,
];

const TYPES: [DataType; 6] = [
    DataType::Int16,
    DataType::Int32,
    DataType::Int64,
    DataType::Decimal,
    DataType::Float64,
    DataType::Varchar,
];

fn leaf() -> impl Strategy<Value = ExprNode> {
    prop_oneof![
        (0usize..3).prop_map(|i| ExprNode::input_ref(
            i,
            [DataType::Int16, DataType::Int32, DataType::Int64][i].clone()
        )),
        (-3i32..4).prop_map(|v| ExprNode::literal(Some(ScalarImpl::Int32(v)), DataType::Int32)),
        Just(ExprNode::literal(
            Some(ScalarImpl::Int16(i16::MAX)),
            DataType::Int16
        )),
        Just(ExprNode::literal(None, DataType::Int64)),
        prop::sample::select(vec!["1.5", "0", "-2", "x", "NaN"])
            .prop_map(|s| ExprNode::literal(Some(ScalarImpl::Utf8(s.into())), DataType::Varchar)),
    ]
}

/// A tree of calls; ill-typed combinations are dropped by `build_func` (they become their first argument).
fn expr() -> impl Strategy<Value = ExprNode> {
    leaf().prop_recursive(4, 24, 3, |inner| {
        (
            prop::sample::select(FUNCS.to_vec()),
            prop::collection::vec(inner, 1..3),
            prop::sample::select(TYPES.to_vec()),
        )
            .prop_map(|(f, args, cast_to)| {
                let first = args[0].clone();
                match sig::build_func(f, args) {
                    Ok(e) if f == ExprType::Round => {
                        build_cast(e.clone(), cast_to, CastContext::Explicit).unwrap_or(e)
                    }
                    Ok(e) => e,
                    Err(_) => first,
                }
            })
    })
}

fn row() -> impl Strategy<Value = OwnedRow> {
    (
        prop::option::weighted(0.8, any::<i16>()),
        prop::option::weighted(0.8, prop_oneof![-3i32..3, Just(i32::MIN), Just(i32::MAX)]),
        prop::option::weighted(0.8, prop_oneof![-3i64..3, Just(i64::MIN)]),
    )
        .prop_map(|(a, b, c)| {
            OwnedRow::new(vec![
                a.map(ScalarImpl::Int16),
                b.map(ScalarImpl::Int32),
                c.map(ScalarImpl::Int64),
            ])
        })
}

proptest! {
    #[test]
    fn strict_and_non_strict_agree(e in expr(), r in row()) {
        let strict = eval(&e, &r);
        let mut errors = 0;
        let lenient = eval_non_strict(&e, &r, &mut |_| errors += 1);
        match strict {
            Ok(v) => {
                prop_assert_eq!(lenient, v);
                prop_assert_eq!(errors, 0);
            }
            Err(_) => prop_assert!(errors > 0, "strict failed but non-strict reported nothing"),
        }
    }
}

/// Every allowed cast of every sample value either succeeds or fails with an error (never panics), and a
/// cast to varchar and back gives the value again where the text is the type's own.
#[test]
fn every_cast_of_sample_values() {
    use epochlab_expr::cast::{cast_ok, cast_value};
    let samples: &[(DataType, &[&str])] = &[
        (DataType::Boolean, &["t", "f"]),
        (DataType::Int16, &["0", "-32768", "32767"]),
        (DataType::Int32, &["1", "-2147483648", "2147483647"]),
        (
            DataType::Int64,
            &["-9223372036854775808", "9223372036854775807", "7"],
        ),
        (
            DataType::Decimal,
            &[
                "1.5",
                "-0.5",
                "NaN",
                "Infinity",
                "-Infinity",
                "79228162514264337593543950335",
            ],
        ),
        (
            DataType::Float32,
            &["1.5", "NaN", "Infinity", "3.4e38", "-0"],
        ),
        (
            DataType::Float64,
            &["2.5", "-Infinity", "1e308", "1e-300", "NaN"],
        ),
        (DataType::Date, &["2020-02-29", "0001-01-01", "9999-12-31"]),
        (DataType::Time, &["00:00:00", "23:59:59.999999"]),
        (
            DataType::Timestamp,
            &["2020-02-29 12:34:56.789", "1970-01-01 00:00:00"],
        ),
        (DataType::Timestamptz, &["2020-02-29 12:34:56+00:00"]),
        (
            DataType::Interval,
            &["1 mon 2 days 03:04:05", "-1 days", "25:00:00"],
        ),
        (DataType::Varchar, &["abc", "", "1", "t"]),
        (
            DataType::Jsonb,
            &["1", "true", "\"s\"", "{\"a\": [1]}", "null"],
        ),
        (DataType::Bytea, &["\\x00ff"]),
    ];
    for (from, texts) in samples {
        for text in *texts {
            let v = ScalarImpl::from_text(text, from)
                .unwrap_or_else(|e| panic!("{text} as {from}: {e}"));
            for (to, _) in samples {
                if !cast_ok(from, to, CastContext::Explicit) {
                    continue;
                }
                let _ = cast_value(&v, to);
            }
            if *from != DataType::Varchar && *from != DataType::Boolean {
                let t = cast_value(&v, &DataType::Varchar).unwrap();
                let ScalarImpl::Utf8(s) = &t else {
                    panic!("text")
                };
                assert_eq!(
                    cast_value(&t, from).unwrap(),
                    v,
                    "{from} {text} through {s}"
                );
            }
        }
    }
}
