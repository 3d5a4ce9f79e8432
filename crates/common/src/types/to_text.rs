//! Values as RisingWave prints them (PostgreSQL's text format with RisingWave's choices): what a query
//! result shows and what an slt file expects. `Display` of [`ScalarImpl`] is this text.

use std::fmt::{self, Write};

use chrono::Datelike;

use super::{
    Date, Datum, Decimal, F32, F64, Interval, ListValue, ScalarImpl, StructValue, Time, Timestamp,
    Timestamptz, USECS_PER_SEC,
};

/// RisingWave's `ToText`: the text of a value.
pub trait ToText {
    fn write<W: Write>(&self, f: &mut W) -> fmt::Result;

    fn to_text(&self) -> String {
        let mut s = String::new();
        self.write(&mut s).expect("writing to a String cannot fail");
        s
    }
}

impl ToText for ScalarImpl {
    fn write<W: Write>(&self, f: &mut W) -> fmt::Result {
        use ScalarImpl::*;
        match self {
            Bool(v) => f.write_str(if *v { "t" } else { "f" }),
            Int16(v) => write!(f, "{v}"),
            Int32(v) => write!(f, "{v}"),
            Int64(v) => write!(f, "{v}"),
            Serial(v) => write!(f, "{}", v.as_row_id()),
            Float32(v) => v.write(f),
            Float64(v) => v.write(f),
            Decimal(v) => v.write(f),
            Date(v) => v.write(f),
            Time(v) => v.write(f),
            Timestamp(v) => v.write(f),
            Timestamptz(v) => v.write(f),
            Interval(v) => v.write(f),
            Utf8(v) => f.write_str(v),
            Bytea(v) => write_bytea(v, f),
            Jsonb(v) => write!(f, "{v}"),
            Struct(v) => v.write(f),
            List(v) => v.write(f),
        }
    }
}

/// `NULL` for a null datum.
impl ToText for Datum {
    fn write<W: Write>(&self, f: &mut W) -> fmt::Result {
        match self {
            Some(v) => v.write(f),
            None => f.write_str("NULL"),
        }
    }
}

/// Shortest round-trip digits (ryu); `1` not `1.0`; an exponent with its sign and at least two digits
/// (`1e+16`, `1.5e-07`); `NaN`, `Infinity`, `-Infinity`, `-0`.
fn write_float<W: Write>(shortest: &str, f: &mut W) -> fmt::Result {
    let s = shortest.strip_suffix(".0").unwrap_or(shortest);
    let Some((mantissa, exponent)) = s.split_once('e') else {
        return f.write_str(s);
    };
    let (sign, digits) = match exponent.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exponent),
    };
    write!(f, "{mantissa}e{sign}{digits:0>2}")
}

macro_rules! impl_float_to_text {
    ($t:ty) => {
        impl ToText for $t {
            fn write<W: Write>(&self, f: &mut W) -> fmt::Result {
                let v = self.0;
                if v.is_nan() {
                    f.write_str("NaN")
                } else if v.is_infinite() {
                    f.write_str(if v < 0.0 { "-Infinity" } else { "Infinity" })
                } else if v == 0.0 && v.is_sign_negative() {
                    f.write_str("-0")
                } else {
                    write_float(ryu::Buffer::new().format_finite(v), f)
                }
            }
        }
    };
}

impl_float_to_text!(F32);
impl_float_to_text!(F64);

/// A number with its scale as stored (`1.50`), or `NaN`, `Infinity`, `-Infinity`.
impl ToText for Decimal {
    fn write<W: Write>(&self, f: &mut W) -> fmt::Result {
        match self {
            Decimal::Normalized(d) => write!(f, "{d}"),
            Decimal::NaN => f.write_str("NaN"),
            Decimal::PositiveInf => f.write_str("Infinity"),
            Decimal::NegativeInf => f.write_str("-Infinity"),
        }
    }
}

/// `2022-01-01`; years before 1 as `0001-10-26 BC`.
impl ToText for Date {
    fn write<W: Write>(&self, f: &mut W) -> fmt::Result {
        let (ce, year) = self.0.year_ce();
        if ce {
            write!(f, "{}", self.0)
        } else {
            write!(f, "{year:04}-{:02}-{:02} BC", self.0.month(), self.0.day())
        }
    }
}

/// `12:34:56`, `12:34:56.123` (chrono's: the fraction in groups of three digits).
impl ToText for Time {
    fn write<W: Write>(&self, f: &mut W) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// `2022-01-01 12:34:56`, `2022-01-01 12:34:56.123456`.
impl ToText for Timestamp {
    fn write<W: Write>(&self, f: &mut W) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// In the session time zone, which is UTC: `2022-01-01 12:34:56+00:00`.
impl ToText for Timestamptz {
    fn write<W: Write>(&self, f: &mut W) -> fmt::Result {
        match self.to_utc() {
            Some(t) => write!(f, "{t}+00:00"),
            None => write!(f, "{} microseconds", self.timestamp_micros()),
        }
    }
}

/// PostgreSQL's `postgres` interval style: `1 year 2 mons 3 days 04:05:06.789`, `-1 years -2 mons +3
/// days`, `00:00:00`.
impl ToText for Interval {
    fn write<W: Write>(&self, f: &mut W) -> fmt::Result {
        let mut parts = IntervalParts {
            f,
            any: false,
            last_negative: false,
        };
        parts.unit(self.months() / 12, "year")?;
        parts.unit(self.months() % 12, "mon")?;
        parts.unit(self.days(), "day")?;
        if self.usecs() != 0 || (self.months() == 0 && self.days() == 0) {
            parts.clock(self.usecs())?;
        }
        Ok(())
    }
}

/// The parts of an interval's text: after a negative part, a positive one carries `+`.
struct IntervalParts<'a, W> {
    f: &'a mut W,
    any: bool,
    last_negative: bool,
}

impl<W: Write> IntervalParts<'_, W> {
    fn separate(&mut self, value_positive: bool) -> fmt::Result {
        if self.any {
            self.f.write_char(' ')?;
        }
        if self.last_negative && value_positive {
            self.f.write_char('+')?;
        }
        Ok(())
    }

    fn unit(&mut self, n: i32, unit: &str) -> fmt::Result {
        if n == 0 {
            return Ok(());
        }
        self.separate(n > 0)?;
        let plural = if n == 1 { "" } else { "s" };
        write!(self.f, "{n} {unit}{plural}")?;
        self.any = true;
        self.last_negative = n < 0;
        Ok(())
    }

    fn clock(&mut self, usecs: i64) -> fmt::Result {
        self.separate(usecs > 0)?;
        if usecs < 0 {
            self.f.write_char('-')?;
        }
        // Divide before taking the absolute value: `i64::MIN` has none.
        let fraction = (usecs % USECS_PER_SEC).unsigned_abs();
        let secs = (usecs / USECS_PER_SEC).unsigned_abs();
        let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
        write!(self.f, "{h:02}:{m:02}:{s:02}")?;
        if fraction != 0 {
            let digits = format!("{fraction:06}");
            write!(self.f, ".{}", digits.trim_end_matches('0'))?;
        }
        Ok(())
    }
}

/// `\x` and lowercase hex.
fn write_bytea<W: Write>(bytes: &[u8], f: &mut W) -> fmt::Result {
    f.write_str("\\x")?;
    bytes.iter().try_for_each(|b| write!(f, "{b:02x}"))
}

/// `(1,abc)`: a NULL field is empty; a field that is empty or holds a special character is quoted, with
/// `"` and `\` doubled.
impl ToText for StructValue {
    fn write<W: Write>(&self, f: &mut W) -> fmt::Result {
        f.write_char('(')?;
        for (i, field) in self.fields().iter().enumerate() {
            if i > 0 {
                f.write_char(',')?;
            }
            if let Some(v) = field {
                write_struct_field(&v.to_text(), f)?;
            }
        }
        f.write_char(')')
    }
}

const ARRAY_SPACES: [char; 6] = [' ', '\t', '\n', '\r', '\x0B', '\x0C'];

fn write_struct_field<W: Write>(text: &str, f: &mut W) -> fmt::Result {
    let special = |c: char| matches!(c, '"' | '\\' | '(' | ')' | ',') || ARRAY_SPACES.contains(&c);
    if !text.is_empty() && !text.contains(special) {
        return f.write_str(text);
    }
    f.write_char('"')?;
    for c in text.chars() {
        match c {
            '"' => f.write_str("\"\"")?,
            '\\' => f.write_str("\\\\")?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

/// `{1,2,NULL}`: an element that is empty, `null` in any case, or holds a special character is quoted,
/// with `"` and `\` escaped by a backslash; NULL and nested arrays never are.
impl ToText for ListValue {
    fn write<W: Write>(&self, f: &mut W) -> fmt::Result {
        f.write_char('{')?;
        for (i, elem) in self.values().iter().enumerate() {
            if i > 0 {
                f.write_char(',')?;
            }
            let text = elem.to_text();
            let special =
                |c: char| matches!(c, '"' | '\\' | '{' | '}' | ',') || ARRAY_SPACES.contains(&c);
            let quote = !matches!(elem, None | Some(ScalarImpl::List(_)))
                && (text.is_empty() || text.eq_ignore_ascii_case("null") || text.contains(special));
            if quote {
                write_array_quoted(&text, f)?;
            } else {
                f.write_str(&text)?;
            }
        }
        f.write_char('}')
    }
}

fn write_array_quoted<W: Write>(text: &str, f: &mut W) -> fmt::Result {
    f.write_char('"')?;
    for c in text.chars() {
        if c == '"' || c == '\\' {
            f.write_char('\\')?;
        }
        f.write_char(c)?;
    }
    f.write_char('"')
}

/// Expected texts from RisingWave's `e2e_test/batch` at f21fb9b7915 (file named per case).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{DataType, JsonbVal};

    fn text(s: impl Into<ScalarImpl>) -> String {
        s.into().to_text()
    }

    #[test]
    fn floats() {
        // basic/scientific_number.slt.part, types/decimal.slt.part
        assert_eq!(text(1e6f64), "1000000");
        assert_eq!(text(1e-6f64), "1e-06");
        assert_eq!(text(-1e-6f64), "-1e-06");
        assert_eq!(text(7.922_816_3e28f32), "7.9228163e+28");
        assert_eq!(text(7.922816251426434e28f64), "7.922816251426434e+28");
        assert_eq!(text(1e-28f32), "1e-28");
        assert_eq!(text(2.5f64), "2.5");
        assert_eq!(text(f64::NAN), "NaN");
        assert_eq!(text(f32::INFINITY), "Infinity");
        assert_eq!(text(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(text(-0.0f64), "-0");
        assert_eq!(text(1.234567f32), "1.234567");
    }

    #[test]
    fn decimals_keep_their_scale() {
        // types/decimal.slt.part: `round(v1, 2)` of 1.1987 prints 1.20.
        let d = |m: i64, s: u32| text(Decimal::from(rust_decimal::Decimal::new(m, s)));
        assert_eq!(d(120, 2), "1.20");
        assert_eq!(d(1, 28), "0.0000000000000000000000000001");
        assert_eq!(d(-32768, 0), "-32768");
        assert_eq!(text(Decimal::NaN), "NaN");
        assert_eq!(text(Decimal::PositiveInf), "Infinity");
        assert_eq!(text(Decimal::NegativeInf), "-Infinity");
    }

    #[test]
    fn intervals() {
        // types/interval.slt.part
        let i = |m, d, us| text(Interval::from_month_day_usec(m, d, us));
        let h = 3600 * USECS_PER_SEC;
        assert_eq!(i(500 * 12, 0, 0), "500 years");
        assert_eq!(i(-50, 0, 0), "-4 years -2 mons");
        assert_eq!(i(0, 0, 5 * h), "05:00:00");
        assert_eq!(i(0, 0, 0), "00:00:00");
        assert_eq!(i(1, 0, 0), "1 mon");
        assert_eq!(i(13, 1, USECS_PER_SEC), "1 year 1 mon 1 day 00:00:01");
        assert_eq!(
            i(13, 1, h + 61 * USECS_PER_SEC + 9000),
            "1 year 1 mon 1 day 01:01:01.009"
        );
        assert_eq!(i(1, 1, 1), "1 mon 1 day 00:00:00.000001");
        assert_eq!(i(1, 14, -12 * h), "1 mon 14 days -12:00:00");
        assert_eq!(
            i(14, 3, 4 * h + 306 * USECS_PER_SEC),
            "1 year 2 mons 3 days 04:05:06"
        );
        assert_eq!(i(0, 0, i64::MAX), "2562047788:00:54.775807");
        assert_eq!(i(0, 0, i64::MIN), "-2562047788:00:54.775808");
        assert_eq!(i(4 * 12 + 2147483599, 0, 0), "178956970 years 7 mons");
        assert_eq!(i(-14, 3, 0), "-1 years -2 mons +3 days");
        // time.slt.part: timestamp - timestamp
        assert_eq!(i(0, 28, 3 * h + 5 * USECS_PER_SEC), "28 days 03:00:05");
    }

    #[test]
    fn dates_and_times() {
        // types/time.slt.part, types/timestamptz_utc.slt.part
        let date = Date::from_ymd(2019, 10, 8).unwrap();
        let time = Time::from_hms_micro(10, 13, 36, 70_000).unwrap();
        assert_eq!(text(date), "2019-10-08");
        assert_eq!(text(time), "10:13:36.070");
        assert_eq!(
            text(Time::from_hms_micro(20, 55, 12, 0).unwrap()),
            "20:55:12"
        );
        assert_eq!(text(Timestamp::new(date, time)), "2019-10-08 10:13:36.070");
        let tz = Timestamptz::from_micros(1_664_654_400_000_000);
        assert_eq!(text(tz), "2022-10-01 20:00:00+00:00");
        assert_eq!(text(Date::from_ymd(0, 10, 26).unwrap()), "0001-10-26 BC");
    }

    #[test]
    fn bytea_jsonb_bool() {
        // types/bytea.slt.part, types/jsonb.slt.part, types/boolean.slt.part
        assert_eq!(text(&[0xde, 0xad, 0xbe, 0xef][..]), "\\xdeadbeef");
        assert_eq!(text(&b"0xfgh"[..]), "\\x3078666768");
        let j = |s: &str| text(JsonbVal::new(serde_json::from_str(s).unwrap()));
        assert_eq!(j(r#"[1, true]"#), "[1, true]");
        assert_eq!(j("null"), "null");
        assert_eq!(text(true), "t");
        assert_eq!(text(false), "f");
    }

    #[test]
    fn structs_and_lists() {
        // types/struct/struct.slt.part, struct_cast.slt.part, types/list/list_cast.slt.part
        let st = |fields: Vec<Datum>| ScalarImpl::Struct(StructValue::new(fields));
        let list = |values: Vec<Datum>| ScalarImpl::List(ListValue::new(values));
        let int = |v: i64| Some(ScalarImpl::Int64(v));
        assert_eq!(
            st(vec![int(1), Some(st(vec![int(1), int(2)]))]).to_text(),
            "(1,\"(1,2)\")"
        );
        assert_eq!(st(vec![None, Some("hello".into())]).to_text(), "(,hello)");
        assert_eq!(st(vec![None, None]).to_text(), "(,)");
        // types/jsonb.slt.part: `jsonb_each` rows.
        let foo = JsonbVal::new(serde_json::Value::String("foo".into()));
        assert_eq!(
            st(vec![Some("a".into()), Some(foo.into())]).to_text(),
            r#"(a,"""foo""")"#
        );
        assert_eq!(
            st(vec![int(1), Some(st(vec![None, int(3)]))]).to_text(),
            "(1,\"(,3)\")"
        );
        let nested = list(vec![
            Some(list(vec![int(1), int(2)])),
            Some(list(vec![int(3), int(5)])),
            None,
            Some(list(vec![None])),
        ]);
        assert_eq!(nested.to_text(), "{{1,2},{3,5},NULL,{NULL}}");
        let words = list(vec![
            Some("a b".into()),
            Some("".into()),
            Some("NULL".into()),
            None,
        ]);
        assert_eq!(words.to_text(), r#"{"a b","","NULL",NULL}"#);
        assert_eq!(None::<ScalarImpl>.to_text(), "NULL");
        assert_eq!(
            ScalarImpl::from_text("{1,2,NULL}", &"int[]".parse::<DataType>().unwrap())
                .unwrap()
                .to_text(),
            "{1,2,NULL}"
        );
    }
}
