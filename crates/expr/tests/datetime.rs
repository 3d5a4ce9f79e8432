mod common;

use common::*;
use epochlab_common::DataType;
use epochlab_common::expr_node::ExprType::*;

fn ts(s: &str) -> epochlab_common::expr_node::ExprNode {
    lit(s, DataType::Timestamp)
}
fn tz(s: &str) -> epochlab_common::expr_node::ExprNode {
    lit(s, DataType::Timestamptz)
}
fn date(s: &str) -> epochlab_common::expr_node::ExprNode {
    lit(s, DataType::Date)
}
fn time(s: &str) -> epochlab_common::expr_node::ExprNode {
    lit(s, DataType::Time)
}
fn iv(s: &str) -> epochlab_common::expr_node::ExprNode {
    lit(s, DataType::Interval)
}

#[test]
fn date_and_timestamp_arithmetic() {
    assert_eq!(t(Add, vec![date("2022-01-31"), i32_(1)]), "2022-02-01");
    assert_eq!(
        t(Subtract, vec![date("2022-03-01"), date("2022-02-01")]),
        "28"
    );
    assert_eq!(
        t(Add, vec![date("2022-01-31"), iv("1 month")]),
        "2022-02-28 00:00:00"
    );
    assert_eq!(
        t(Add, vec![ts("2020-02-29 12:00:00"), iv("1 year")]),
        "2021-02-28 12:00:00"
    );
    assert_eq!(
        t(Subtract, vec![ts("2022-01-01 00:00:00"), iv("1 second")]),
        "2021-12-31 23:59:59"
    );
    assert_eq!(
        t(
            Subtract,
            vec![ts("2022-01-02 03:00:00"), ts("2022-01-01 00:00:00")]
        ),
        "1 day 03:00:00"
    );
    assert_eq!(
        t(Add, vec![tz("2022-01-01 00:00:00+00:00"), iv("1 hour")]),
        "2022-01-01 01:00:00+00:00"
    );
    assert_eq!(
        t(Add, vec![date("2022-01-01"), time("10:00:00")]),
        "2022-01-01 10:00:00"
    );
    assert_eq!(t(Add, vec![time("10:00:00"), iv("1 hour")]), "11:00:00");
    assert_eq!(
        t(Subtract, vec![time("10:00:00"), time("09:30:00")]),
        "00:30:00"
    );
    // An untyped literal next to a timestamp is an interval.
    assert_eq!(
        t(Add, vec![ts("2022-01-01 00:00:00"), str_("1 day")]),
        "2022-01-02 00:00:00"
    );
    // ... and next to a date, the same type if the operator exists: date - date.
    assert_eq!(
        t(Subtract, vec![date("2022-01-11"), str_("2022-01-01")]),
        "10"
    );
}

#[test]
fn interval_arithmetic() {
    // e2e_test/batch/types/interval.slt.part
    assert_eq!(t(Multiply, vec![dec_("1.5"), iv("3 mins")]), "00:04:30");
    assert_eq!(t(Multiply, vec![iv("3 mins"), dec_("1.5")]), "00:04:30");
    assert_eq!(t(Equal, vec![iv("1 month"), iv("30 days")]), "t");
    assert_eq!(
        t(Subtract, vec![iv("1 day"), iv("12 hours")]),
        "1 day -12:00:00"
    );
    assert_eq!(
        t(Divide, vec![iv("3 mons -3 days"), i32_(2)]),
        "1 mon 14 days -12:00:00"
    );
    assert_eq!(t(Multiply, vec![iv("1 day"), i32_(3)]), "3 days");
    assert_eq!(t(Neg, vec![iv("1 mon 2 days")]), "-1 mons -2 days");
}

#[test]
fn extract_and_date_part() {
    assert_eq!(
        t(Extract, vec![str_("hour"), ts("2022-01-01 13:14:15")]),
        "13"
    );
    assert_eq!(t(Extract, vec![str_("year"), date("2022-07-01")]), "2022");
    assert_eq!(
        t(Extract, vec![str_("second"), ts("2022-01-01 13:14:15.5")]),
        "15.500000"
    );
    assert_eq!(
        t(
            Extract,
            vec![str_("epoch"), tz("1970-01-01 00:00:01+00:00")]
        ),
        "1.000000"
    );
    assert_eq!(t(Extract, vec![str_("dow"), date("2022-01-02")]), "0");
    assert_eq!(t(Extract, vec![str_("month"), iv("14 months")]), "2");
    assert_eq!(
        t(DatePart, vec![str_("minute"), ts("2022-01-01 13:14:15")]),
        "14"
    );
    assert_eq!(
        err(Extract, vec![str_("foo"), ts("2022-01-01 13:14:15")]),
        "Invalid parameter unit: unit \"foo\" not recognized"
    );
}

#[test]
fn date_trunc_units() {
    // e2e_test/batch/functions/date_trunc.slt.part
    let v = || ts("2022-05-18 13:14:15.123456");
    assert_eq!(
        t(DateTrunc, vec![str_("milliseconds"), v()]),
        "2022-05-18 13:14:15.123"
    );
    assert_eq!(
        t(DateTrunc, vec![str_("second"), v()]),
        "2022-05-18 13:14:15"
    );
    assert_eq!(t(DateTrunc, vec![str_("hour"), v()]), "2022-05-18 13:00:00");
    assert_eq!(t(DateTrunc, vec![str_("week"), v()]), "2022-05-16 00:00:00");
    assert_eq!(
        t(DateTrunc, vec![str_("quarter"), v()]),
        "2022-04-01 00:00:00"
    );
    assert_eq!(
        t(DateTrunc, vec![str_("decade"), v()]),
        "2020-01-01 00:00:00"
    );
    assert_eq!(
        t(DateTrunc, vec![str_("century"), v()]),
        "2001-01-01 00:00:00"
    );
    assert_eq!(
        t(
            DateTrunc,
            vec![str_("day"), iv("1 year 2 mons 3 days 04:05:06")]
        ),
        "1 year 2 mons 3 days"
    );
    assert!(
        err(DateTrunc, vec![str_("ages"), v()])
            .starts_with("Invalid parameter field: invalid field")
    );
}

#[test]
fn tumble_start_and_to_char() {
    assert_eq!(
        t(
            TumbleStart,
            vec![ts("2022-01-01 10:07:00"), iv("5 minutes")]
        ),
        "2022-01-01 10:05:00"
    );
    assert_eq!(
        t(TumbleStart, vec![date("2022-01-01"), iv("1 day")]),
        "2022-01-01 00:00:00"
    );
    assert_eq!(
        t(
            TumbleStart,
            vec![tz("2022-01-01 10:07:00+00:00"), iv("10 minutes")]
        ),
        "2022-01-01 10:00:00+00:00"
    );
    // e2e_test/batch/functions/to_char.slt.part
    assert_eq!(
        t(
            ToChar,
            vec![ts("2002-04-20 17:31:12.66"), str_("HH12:MI:SS")]
        ),
        "05:31:12"
    );
    let v = || ts("2006-01-02 15:04:05.113223");
    assert_eq!(
        t(ToChar, vec![v(), str_("yyyy-mm-dd hh24:mi:ss.us")]),
        "2006-01-02 15:04:05.113223"
    );
    assert_eq!(
        t(ToChar, vec![v(), str_("YYYY-MM-DD HH24:MI:SS.ms")]),
        "2006-01-02 15:04:05.113"
    );
    // The nexmark queries' 'HH:mm' is hour (12) and month, as RisingWave maps it.
    assert_eq!(t(ToChar, vec![v(), str_("HH:mm")]), "03:01");
    assert_eq!(
        t(ToChar, vec![v(), str_("Mon DD, YYYY am")]),
        "Jan 02, 2006 pm"
    );
}

#[test]
fn now_reads_the_context_never_a_clock() {
    let e = call(Now, vec![]);
    assert_eq!(e.return_type(), DataType::Timestamptz);
    let ctx = epochlab_expr::EvalContext {
        now_usecs: Some(1_000_000),
    };
    let v = epochlab_expr::eval_with(&e, &epochlab_common::OwnedRow::empty(), &ctx).unwrap();
    assert_eq!(text(&v), "1970-01-01 00:00:01+00:00");
    assert_eq!(run(&e).unwrap_err().to_string(), "Context NOW not found");
}

#[test]
fn make_and_to_timestamp() {
    assert_eq!(
        t(ToTimestamp, vec![i32_(1617235200)]),
        "2021-04-01 00:00:00+00:00"
    );
    assert_eq!(
        t(
            MakeTimestamptz,
            vec![
                i32_(1973),
                i32_(7),
                i32_(15),
                i32_(8),
                i32_(15),
                dec_("55.33")
            ]
        ),
        "1973-07-15 08:15:55.330+00:00"
    );
    assert_eq!(
        t(MakeDate, vec![i32_(2020), i32_(2), i32_(29)]),
        "2020-02-29"
    );
}

#[test]
fn to_timestamp_and_to_date_with_templates() {
    // e2e_test/batch/functions/to_timestamp.slt.part and to_date.slt.part
    let tt = |a: &str, b: &str| t(ToTimestamp, vec![str_(a), str_(b), str_("UTC")]);
    assert_eq!(tt("2022 12 25", "YYYY MM DD"), "2022-12-25 00:00:00+00:00");
    // Without an offset the text is a wall-clock time in the zone (the session's); with one, that instant.
    let in_tokyo = |a: &str, b: &str| t(ToTimestamp, vec![str_(a), str_(b), str_("Asia/Tokyo")]);
    assert_eq!(
        in_tokyo("2022-12-25 10:00", "YYYY-MM-DD HH24:MI"),
        "2022-12-25 01:00:00+00:00"
    );
    assert_eq!(
        in_tokyo("2022-12-25 10:00 +01", "YYYY-MM-DD HH24:MI TZH"),
        "2022-12-25 09:00:00+00:00"
    );
    assert_eq!(
        tt("2022/12/25 10:24:33", "YYYY/MM/DD HH12:MI:SS"),
        "2022-12-25 10:24:33+00:00"
    );
    assert_eq!(
        tt("2022/12/25 15", "YYYY/MM/DD HH24"),
        "2022-12-25 15:00:00+00:00"
    );
    assert_eq!(
        tt("2001-04-17 00:00:00.900006", "YYYY-MM-DD HH24:MI:SS.US"),
        "2001-04-17 00:00:00.900006+00:00"
    );
    assert_eq!(
        tt("2001-04-17 00:00:00.906", "YYYY-MM-DD HH24:MI:SS.MS"),
        "2001-04-17 00:00:00.906+00:00"
    );
    assert_eq!(
        tt(
            "2021/12/30 14:52:49 +03:30",
            "YYYY/MM/DD HH24:MI:SS TZH:TZM"
        ),
        "2021-12-30 11:22:49+00:00"
    );
    assert_eq!(
        tt("2021/12/30 14:52:49 +0330", "YYYY/MM/DD HH24:MI:SS TZHTZM"),
        "2021-12-30 11:22:49+00:00"
    );
    for (a, b) in [
        ("2001-04-17 00:00:00.9", "YYYY-MM-DD HH24:MI:SS.MS"),
        ("2001-04-17 00:00:00.9999", "YYYY-MM-DD HH24:MI:SS.US"),
        ("2021/12/30 14:52:49 +330", "YYYY/MM/DD HH24:MI:SS TZHTZM"),
    ] {
        assert!(
            run(&call(ToTimestamp, vec![str_(a), str_(b), str_("UTC")])).is_err(),
            "{a} as {b}"
        );
    }
    assert_eq!(
        t(CharToDate, vec![str_("12/25/2022"), str_("MM/DD/YYYY")]),
        "2022-12-25"
    );
    assert_eq!(
        t(
            CharToDate,
            vec![str_("2022-12-25 15:24:33"), str_("YYYY-MM-DD HH24:MI:SS")]
        ),
        "2022-12-25"
    );
}

#[test]
fn at_time_zone_reads_the_iana_zone() {
    assert_eq!(
        t(AtTimeZone, vec![ts("2022-01-01 10:00:00"), str_("UTC")]),
        "2022-01-01 10:00:00+00:00"
    );
    assert_eq!(
        t(
            AtTimeZone,
            vec![tz("2022-01-01 10:00:00+02:00"), str_("utc")]
        ),
        "2022-01-01 08:00:00"
    );
    // 10:00 in New York in winter is 15:00 UTC; a zone name in any case.
    assert_eq!(
        t(
            AtTimeZone,
            vec![ts("2022-01-01 10:00:00"), str_("america/new_york")]
        ),
        "2022-01-01 15:00:00+00:00"
    );
    assert!(
        err(
            AtTimeZone,
            vec![ts("2022-01-01 10:00:00"), str_("Mars/Olympus")]
        )
        .contains("not a valid timezone")
    );
}
