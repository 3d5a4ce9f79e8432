//! Proptest strategies for every type and its values (tests only), with the edge cases that matter to the
//! encodings: NaN and -0.0, decimals of one value at different scales, intervals equal when normalised.

use proptest::prelude::*;

use super::*;

fn leaf_type() -> impl Strategy<Value = DataType> {
    prop_oneof![
        Just(DataType::Boolean),
        Just(DataType::Int16),
        Just(DataType::Int32),
        Just(DataType::Int64),
        Just(DataType::Serial),
        Just(DataType::Float32),
        Just(DataType::Float64),
        Just(DataType::Decimal),
        Just(DataType::Date),
        Just(DataType::Time),
        Just(DataType::Timestamp),
        Just(DataType::Timestamptz),
        Just(DataType::Interval),
        Just(DataType::Varchar),
        Just(DataType::Bytea),
        Just(DataType::Jsonb),
    ]
}

/// Any type, structs and lists nested at most twice.
pub fn arb_type() -> impl Strategy<Value = DataType> {
    leaf_type().prop_recursive(2, 6, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| DataType::List(Box::new(t))),
            proptest::collection::vec(inner, 1..3).prop_map(|ts| {
                let fields = ts
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| (format!("f{i}"), t));
                DataType::Struct(StructType::new(fields.collect()))
            }),
        ]
    })
}

/// A datum of `ty`, NULL one time in seven.
pub fn arb_datum(ty: &DataType) -> BoxedStrategy<Datum> {
    proptest::option::weighted(0.85, arb_scalar(ty)).boxed()
}

pub fn arb_scalar(ty: &DataType) -> BoxedStrategy<ScalarImpl> {
    match ty {
        DataType::Boolean => any::<bool>().prop_map(ScalarImpl::Bool).boxed(),
        DataType::Int16 => any::<i16>().prop_map(ScalarImpl::Int16).boxed(),
        DataType::Int32 => any::<i32>().prop_map(ScalarImpl::Int32).boxed(),
        DataType::Int64 => any::<i64>().prop_map(ScalarImpl::Int64).boxed(),
        DataType::Serial => any::<i64>().prop_map(|v| Serial::new(v).into()).boxed(),
        DataType::Float32 => arb_f64().prop_map(|v| ScalarImpl::from(v as f32)).boxed(),
        DataType::Float64 => arb_f64().prop_map(ScalarImpl::from).boxed(),
        DataType::Decimal => arb_decimal().prop_map(ScalarImpl::Decimal).boxed(),
        DataType::Date => (-1_000_000i32..4_000_000)
            .prop_map(|d| Date::from_days_from_ce(d).unwrap().into())
            .boxed(),
        DataType::Time => (0u32..86_400, 0u32..1_000_000)
            .prop_map(|(s, us)| Time::from_secs_nanos(s, us * 1000).unwrap().into())
            .boxed(),
        DataType::Timestamp => (-100_000_000_000i64..100_000_000_000, 0u32..1_000_000)
            .prop_map(|(s, us)| Timestamp::from_secs_nanos(s, us * 1000).unwrap().into())
            .boxed(),
        DataType::Timestamptz => any::<i64>()
            .prop_map(|v| Timestamptz::from_micros(v).into())
            .boxed(),
        DataType::Interval => arb_interval().prop_map(ScalarImpl::Interval).boxed(),
        DataType::Varchar => arb_string().prop_map(ScalarImpl::from).boxed(),
        DataType::Bytea => {
            proptest::collection::vec(prop_oneof![Just(0u8), Just(0xFF), any::<u8>()], 0..5)
                .prop_map(|b| ScalarImpl::Bytea(b.into()))
                .boxed()
        }
        DataType::Jsonb => arb_json().prop_map(|v| JsonbVal::new(v).into()).boxed(),
        DataType::Struct(st) => st
            .types()
            .map(arb_datum)
            .collect::<Vec<_>>()
            .prop_map(|fields| StructValue::new(fields).into())
            .boxed(),
        DataType::List(elem) => proptest::collection::vec(arb_datum(elem), 0..4)
            .prop_map(|values| ListValue::new(values).into())
            .boxed(),
    }
}

fn arb_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(-0.0),
        Just(0.0),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        (-4i32..4).prop_map(f64::from),
        any::<f64>(),
    ]
}

fn arb_string() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just('\0'),
            Just('a'),
            Just('b'),
            Just('\u{ff}'),
            any::<char>()
        ],
        0..6,
    )
    .prop_map(|cs| cs.into_iter().collect())
}

fn arb_decimal() -> impl Strategy<Value = Decimal> {
    prop_oneof![
        Just(Decimal::NaN),
        Just(Decimal::PositiveInf),
        Just(Decimal::NegativeInf),
        // Small values at several scales: `1.0` and `1.00` meet often.
        (-30i64..30, 0u32..3)
            .prop_map(|(m, s)| rust_decimal::Decimal::new(m * 10i64.pow(s), s).into()),
        (-(1i128 << 96) + 1..(1i128 << 96), 0u32..=28)
            .prop_map(|(m, s)| rust_decimal::Decimal::from_i128_with_scale(m, s).into()),
    ]
}

fn arb_interval() -> impl Strategy<Value = Interval> {
    prop_oneof![
        (any::<i32>(), any::<i32>(), any::<i64>()),
        (
            -2i32..2,
            -60i32..60,
            (-3i64..3).prop_map(|d| d * USECS_PER_DAY)
        ),
    ]
    .prop_map(|(m, d, us)| Interval::from_month_day_usec(m, d, us))
}

fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-100i64..100).prop_map(Value::from),
        arb_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::btree_map(arb_string(), inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
