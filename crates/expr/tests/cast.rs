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
    assert_eq!(cast(i32_(0), DataType::Boolean).unwrap(), "f");
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
    assert_eq!(cast(str_("yes"), DataType::Boolean).unwrap(), "t");
    assert_eq!(cast(str_("f"), DataType::Boolean).unwrap(), "f");
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

#[test]
fn casts_as_risingwave_prints_them() {
    // e2e_test/batch/types/cast.slt.part
    use DataType::*;
    assert_eq!(cast(i32_(10), Boolean).unwrap(), "t");
    assert_eq!(cast(bool_(false), Int32).unwrap(), "0");
    assert_eq!(
        cast(cast_to(dec_("1.23"), Float64), Varchar).unwrap(),
        "1.23"
    );
    assert_eq!(cast(lit("nan", Float32), Varchar).unwrap(), "NaN");
    assert_eq!(cast(lit("-inf", Float32), Varchar).unwrap(), "-Infinity");
    assert_eq!(
        cast(dec_("1.233333333333333321123123123"), Varchar).unwrap(),
        "1.233333333333333321123123123"
    );
    assert_eq!(
        cast(bool_(true), Varchar).unwrap(),
        "true",
        "an explicit cast spells booleans out"
    );
    // Floats round half to even on the way to integers, decimals half away from zero.
    assert_eq!(cast(f64_("2.5"), Int32).unwrap(), "2");
    assert_eq!(cast(f64_("-0.5"), Int32).unwrap(), "0");
    assert_eq!(cast(dec_("2.5"), Int32).unwrap(), "3");
    assert_eq!(cast(dec_("-0.5"), Int32).unwrap(), "-1");
    assert_eq!(cast(f64_("0.1"), Decimal).unwrap(), "0.1");
    assert_eq!(cast(f64_("Infinity"), Decimal).unwrap(), "Infinity");
    assert_eq!(
        cast(dec_("NaN"), Int32).unwrap_err(),
        "Casting to i32 out of range"
    );
    assert_eq!(
        cast(lit("2020-01-02 03:04:05", Timestamp), Date).unwrap(),
        "2020-01-02"
    );
    assert_eq!(
        cast(lit("2020-01-02", Date), Timestamptz).unwrap(),
        "2020-01-02 00:00:00+00:00"
    );
    assert_eq!(
        cast(lit("2020-01-02 03:04:05+00:00", Timestamptz), Time).unwrap(),
        "03:04:05"
    );
    assert_eq!(cast(lit("01:02:03", Time), Interval).unwrap(), "01:02:03");
}

#[test]
fn text_to_every_type_and_its_errors() {
    use DataType::*;
    assert_eq!(cast(str_("2030-03-30"), Date).unwrap(), "2030-03-30");
    assert!(
        cast(str_("2000-13-03"), Date)
            .unwrap_err()
            .starts_with("Parse error: date ")
    );
    assert_eq!(
        cast(str_("1 day 2 hours"), Interval).unwrap(),
        "1 day 02:00:00"
    );
    assert_eq!(cast(str_("1.50"), Decimal).unwrap(), "1.50");
    assert_eq!(
        cast(str_("maybe"), Boolean).unwrap_err(),
        "Parse error: Invalid bool"
    );
    assert_eq!(
        build_cast(i32_(1), Date, CastContext::Explicit)
            .unwrap_err()
            .to_string(),
        "cannot cast type \"integer\" to \"date\" in Explicit context"
    );
}

#[test]
fn decimal_and_real_compare_as_double() {
    // e2e_test/batch/types/interoperate_decimal_float.slt.part
    use epochlab_common::expr_node::ExprType::*;
    let r = || lit("1.1", DataType::Float32);
    assert_eq!(t(LessThan, vec![dec_("1.1"), r()]), "t");
    assert_eq!(
        t(Equal, vec![dec_("1.0"), lit("1.0", DataType::Float32)]),
        "t"
    );
    let e = call(Add, vec![dec_("1.0"), lit("-1", DataType::Float32)]);
    assert_eq!(e.return_type(), DataType::Float64);
    let mut v = vec![lit("1", DataType::Float32), dec_("1")];
    assert_eq!(
        align_types(&mut v).unwrap(),
        DataType::Float32,
        "a union of real and numeric is real"
    );
}

/// The three cast tables RisingWave's binder checks (frontend type_inference/cast.rs), row by row: `T`
/// where the cast is allowed in that context.
#[test]
fn cast_contexts_match_risingwaves_tables() {
    use DataType as T;
    let types = [
        T::Boolean,
        T::Int16,
        T::Int32,
        T::Int64,
        T::Decimal,
        T::Float32,
        T::Float64,
        T::Varchar,
        T::Date,
        T::Timestamp,
        T::Timestamptz,
        T::Time,
        T::Interval,
    ];
    let table = |ctx: CastContext| -> Vec<String> {
        types
            .iter()
            .map(|from| {
                types
                    .iter()
                    .map(|to| {
                        if from != to && cast_ok(from, to, ctx) {
                            'T'
                        } else {
                            ' '
                        }
                    })
                    .collect()
            })
            .collect()
    };
    let implicit = [
        "             ",
        "  TTTTT      ",
        "   TTTT      ",
        "    TTT      ",
        "     TT      ",
        "      T      ",
        "             ",
        "             ",
        "         TT  ",
        "          T  ",
        "             ",
        "            T",
        "             ",
    ];
    let assign = [
        "       T     ",
        "  TTTTTT     ",
        " T TTTTT     ",
        " TT TTTT     ",
        " TTT TTT     ",
        " TTTT TT     ",
        " TTTTT T     ",
        "             ",
        "       T TT  ",
        "       TT TT ",
        "       TTT T ",
        "       T    T",
        "       T   T ",
    ];
    let explicit = [
        "  T    T     ",
        "  TTTTTT     ",
        "TT TTTTT     ",
        " TT TTTT     ",
        " TTT TTT     ",
        " TTTT TT     ",
        " TTTTT T     ",
        "TTTTTTT TTTTT",
        "       T TT  ",
        "       TT TT ",
        "       TTT T ",
        "       T    T",
        "       T   T ",
    ];
    assert_eq!(table(CastContext::Implicit), implicit);
    assert_eq!(table(CastContext::Assign), assign);
    assert_eq!(table(CastContext::Explicit), explicit);
}
