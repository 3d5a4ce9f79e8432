//! Values from text, as PostgreSQL and RisingWave read a string literal cast to a type
//! (`'2022-01-01'::date`): [`ScalarImpl::from_text`]. Surrounding whitespace is ignored for every type
//! but `varchar`. Error messages are RisingWave's where its tests check them.

use std::str::FromStr;

use thiserror::Error;

use super::parse_datetime::{parse_date, parse_time, parse_timestamp, parse_timestamptz};
use super::{
    DataType, Date, Datum, Decimal, F32, F64, Interval, JsonbVal, ListValue, ScalarImpl, Serial,
    StructValue, Time, Timestamp, Timestamptz,
};

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// An integer or a float that does not parse; the reason is Rust's (`invalid digit found in
    /// string`, `number too large to fit in target type`), after the type, as RisingWave words it.
    #[error("{ty} {reason}")]
    Number { ty: DataType, reason: String },
    #[error("Invalid bool")]
    Bool,
    #[error("Can't cast string to date (expected format is YYYY-MM-DD)")]
    Date,
    #[error(
        "Can't cast string to time (expected format is HH:MM:SS[.D+{{up to 6 digits}}][Z] or HH:MM)"
    )]
    Time,
    #[error(
        "Can't cast string to timestamp (expected format is YYYY-MM-DD HH:MM:SS[.D+{{up to 6 digits}}] or YYYY-MM-DD HH:MM or YYYY-MM-DD or ISO 8601 format)"
    )]
    Timestamp,
    #[error(
        "Can't cast string to timestamp with time zone (expected format is YYYY-MM-DD HH:MM:SS[.D+{{up to 6 digits}}] followed by +hh:mm or literal Z)\nFor example: '2021-04-01 00:00:00+00:00'"
    )]
    Timestamptz,
    #[error("Invalid interval: {0}")]
    Interval(String),
    #[error(
        "Invalid interval: {0}, expected format P<years>Y<months>M<days>DT<hours>H<minutes>M<seconds>S"
    )]
    IntervalIso(String),
    #[error("Invalid unit: {0}")]
    IntervalUnit(String),
    #[error(
        "Invalid character at offset {offset} in {text}: {c:?}. Only support digit or alphabetic now"
    )]
    IntervalChar {
        offset: usize,
        text: String,
        c: char,
    },
    #[error("invalid hexadecimal digit: \"{0}\"")]
    HexDigit(char),
    #[error("invalid hexadecimal data: odd number of digits")]
    OddHexDigits,
    #[error("invalid input syntax for type bytea")]
    ByteaEscape,
    #[error("{0}")]
    Jsonb(String),
    #[error("malformed {ty} literal: \"{text}\"")]
    Malformed { ty: &'static str, text: String },
}

impl ScalarImpl {
    /// The value of `s` read as a literal of type `ty`.
    pub fn from_text(s: &str, ty: &DataType) -> Result<ScalarImpl, ParseError> {
        let t = s.trim();
        Ok(match ty {
            DataType::Boolean => ScalarImpl::Bool(parse_bool(t)?),
            DataType::Int16 => ScalarImpl::Int16(parse_number(t, ty)?),
            DataType::Int32 => ScalarImpl::Int32(parse_number(t, ty)?),
            DataType::Int64 => ScalarImpl::Int64(parse_number(t, ty)?),
            DataType::Serial => ScalarImpl::Serial(Serial::new(parse_number(t, ty)?)),
            DataType::Float32 => ScalarImpl::Float32(F32::from(parse_number::<f32>(t, ty)?)),
            DataType::Float64 => ScalarImpl::Float64(F64::from(parse_number::<f64>(t, ty)?)),
            DataType::Decimal => ScalarImpl::Decimal(t.parse()?),
            DataType::Date => ScalarImpl::Date(t.parse()?),
            DataType::Time => ScalarImpl::Time(t.parse()?),
            DataType::Timestamp => ScalarImpl::Timestamp(t.parse()?),
            DataType::Timestamptz => ScalarImpl::Timestamptz(t.parse()?),
            DataType::Interval => ScalarImpl::Interval(t.parse::<Interval>()?),
            DataType::Varchar => ScalarImpl::Utf8(s.into()),
            DataType::Bytea => ScalarImpl::Bytea(parse_bytea(s)?.into()),
            DataType::Jsonb => ScalarImpl::Jsonb(t.parse()?),
            DataType::List(elem) => ScalarImpl::List(parse_list(t, elem)?),
            DataType::Struct(st) => ScalarImpl::Struct(parse_struct(t, st.types())?),
        })
    }
}

/// RisingWave's boolean literals: `true`, `t`, `yes`, `on`, `1` and their prefixes, any case.
pub fn parse_bool(s: &str) -> Result<bool, ParseError> {
    const TRUE: [&str; 9] = ["true", "tru", "tr", "t", "on", "1", "yes", "ye", "y"];
    const FALSE: [&str; 10] = [
        "false", "fals", "fal", "fa", "f", "off", "of", "0", "no", "n",
    ];
    let s = s.trim();
    if TRUE.iter().any(|w| w.eq_ignore_ascii_case(s)) {
        Ok(true)
    } else if FALSE.iter().any(|w| w.eq_ignore_ascii_case(s)) {
        Ok(false)
    } else {
        Err(ParseError::Bool)
    }
}

fn parse_number<T: FromStr<Err: ToString>>(s: &str, ty: &DataType) -> Result<T, ParseError> {
    s.parse().map_err(|e: T::Err| ParseError::Number {
        ty: ty.clone(),
        reason: e.to_string(),
    })
}

/// `NaN`, `inf`, `+Infinity`, `-inf` in any case, a plain decimal, or scientific notation.
impl FromStr for Decimal {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        let s = s.trim();
        Ok(match s.to_ascii_lowercase().as_str() {
            "nan" => Decimal::NaN,
            "inf" | "+inf" | "infinity" | "+infinity" => Decimal::PositiveInf,
            "-inf" | "-infinity" => Decimal::NegativeInf,
            _ => rust_decimal::Decimal::from_str(s)
                .or_else(|_| rust_decimal::Decimal::from_scientific(s))
                .map(Decimal::Normalized)
                .map_err(|e| ParseError::Number {
                    ty: DataType::Decimal,
                    reason: e.to_string(),
                })?,
        })
    }
}

/// `\x` then hex digit pairs (whitespace between pairs allowed), or the escape format: bytes as they
/// are, `\\` for a backslash, `\ooo` for an octal byte.
pub fn parse_bytea(s: &str) -> Result<Vec<u8>, ParseError> {
    match s.strip_prefix("\\x") {
        Some(hex) => parse_hex(hex),
        None => parse_escaped_bytes(s),
    }
}

fn hex_value(c: u8) -> Result<u8, ParseError> {
    (c as char)
        .to_digit(16)
        .map(|d| d as u8)
        .ok_or(ParseError::HexDigit(c as char))
}

fn parse_hex(s: &str) -> Result<Vec<u8>, ParseError> {
    let mut out = Vec::with_capacity(s.len() / 2);
    let mut bytes = s
        .bytes()
        .filter(|b| !matches!(b, b' ' | b'\n' | b'\t' | b'\r'));
    while let Some(hi) = bytes.next() {
        let lo = bytes.next().ok_or(ParseError::OddHexDigits)?;
        out.push(hex_value(hi)? << 4 | hex_value(lo)?);
    }
    Ok(out)
}

fn parse_escaped_bytes(s: &str) -> Result<Vec<u8>, ParseError> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match bytes.next() {
            Some(b'\\') => out.push(b'\\'),
            Some(d1 @ b'0'..=b'3') => {
                let (d2, d3) = (bytes.next(), bytes.next());
                match (d2, d3) {
                    (Some(d2 @ b'0'..=b'7'), Some(d3 @ b'0'..=b'7')) => {
                        out.push((d1 - b'0') << 6 | (d2 - b'0') << 3 | (d3 - b'0'))
                    }
                    _ => return Err(ParseError::ByteaEscape),
                }
            }
            _ => return Err(ParseError::ByteaEscape),
        }
    }
    Ok(out)
}

impl FromStr for JsonbVal {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        serde_json::from_str(s)
            .map(JsonbVal::new)
            .map_err(|e| ParseError::Jsonb(e.to_string()))
    }
}

impl FromStr for Date {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        parse_date(s.trim()).map(Date).ok_or(ParseError::Date)
    }
}

impl FromStr for Time {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        parse_time(s.trim()).map(Time).ok_or(ParseError::Time)
    }
}

impl FromStr for Timestamp {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        parse_timestamp(s.trim())
            .map(Timestamp)
            .ok_or(ParseError::Timestamp)
    }
}

/// Without an offset the text is in the session time zone, UTC (RisingWave's cast from text).
impl FromStr for Timestamptz {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        parse_timestamptz(s.trim())
            .map(Timestamptz::from_micros)
            .ok_or(ParseError::Timestamptz)
    }
}

/// `{1,2,NULL}`, `{"a b",c}`, `{{1,2},{3}}`: elements separated by commas, double-quoted with backslash
/// escapes where needed; an unquoted `NULL` (any case) is a null.
fn parse_list(s: &str, elem: &DataType) -> Result<ListValue, ParseError> {
    let malformed = || ParseError::Malformed {
        ty: "array",
        text: s.to_owned(),
    };
    let body = s
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .ok_or_else(malformed)?;
    let items = split_items(body, '{', '}').ok_or_else(malformed)?;
    let values = items
        .into_iter()
        .map(|item| item_datum(item, elem, true))
        .collect::<Result<_, _>>()?;
    Ok(ListValue::new(values))
}

/// `(1,abc)`, `(,"a b")`: fields separated by commas; an empty unquoted field is a null.
fn parse_struct<'a>(
    s: &str,
    types: impl ExactSizeIterator<Item = &'a DataType>,
) -> Result<StructValue, ParseError> {
    let malformed = || ParseError::Malformed {
        ty: "record",
        text: s.to_owned(),
    };
    let body = s
        .strip_prefix('(')
        .and_then(|b| b.strip_suffix(')'))
        .ok_or_else(malformed)?;
    let items = split_items(body, '(', ')').ok_or_else(malformed)?;
    if items.len() != types.len() {
        return Err(malformed());
    }
    let fields = items
        .into_iter()
        .zip(types)
        .map(|(item, ty)| item_datum(item, ty, false))
        .collect::<Result<_, _>>()?;
    Ok(StructValue::new(fields))
}

/// One element or field of an array or record literal, before unquoting.
struct Item {
    text: String,
    quoted: bool,
}

fn item_datum(item: Item, ty: &DataType, null_word: bool) -> Result<Datum, ParseError> {
    let is_null = if null_word {
        !item.quoted && item.text.trim().eq_ignore_ascii_case("null")
    } else {
        !item.quoted && item.text.is_empty()
    };
    if is_null {
        return Ok(None);
    }
    let text = if item.quoted {
        item.text.as_str()
    } else {
        item.text.trim()
    };
    ScalarImpl::from_text(text, ty).map(Some)
}

/// Split at top-level commas, honouring nested `open`/`close` and double quotes (a backslash escapes the
/// next character inside or outside quotes). `None` when the text is unbalanced.
fn split_items(body: &str, open: char, close: char) -> Option<Vec<Item>> {
    if body.trim().is_empty() && open == '{' {
        return Some(Vec::new());
    }
    let mut items = Vec::new();
    let mut cur = Item {
        text: String::new(),
        quoted: false,
    };
    let (mut depth, mut in_quotes) = (0i32, false);
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let next = chars.next()?;
                if depth > 0 {
                    cur.text.push('\\');
                }
                cur.text.push(next);
            }
            // A doubled quote inside quotes is a quote (records write `"` so).
            '"' if in_quotes && depth == 0 && chars.peek() == Some(&'"') => {
                chars.next();
                cur.text.push('"');
            }
            '"' => {
                in_quotes = !in_quotes;
                if depth == 0 {
                    cur.quoted = true;
                } else {
                    cur.text.push('"');
                }
            }
            ',' if depth == 0 && !in_quotes => items.push(std::mem::replace(
                &mut cur,
                Item {
                    text: String::new(),
                    quoted: false,
                },
            )),
            c if c == open && !in_quotes => {
                depth += 1;
                cur.text.push(c);
            }
            c if c == close && !in_quotes => {
                depth -= 1;
                cur.text.push(c);
            }
            c => cur.text.push(c),
        }
    }
    items.push(cur);
    (depth == 0 && !in_quotes).then_some(items)
}

/// Inputs and expected results from RisingWave's `e2e_test/batch` at f21fb9b7915 and its unit tests.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ToText, USECS_PER_SEC};

    fn read(s: &str, ty: &str) -> Result<ScalarImpl, ParseError> {
        ScalarImpl::from_text(s, &ty.parse().unwrap())
    }

    /// Read, then print: what `SELECT '<s>'::<ty>` shows.
    fn shown(s: &str, ty: &str) -> String {
        read(s, ty).unwrap().to_text()
    }

    #[test]
    fn numbers() {
        assert_eq!(shown(" 42 ", "int"), "42");
        assert_eq!(shown("-32768", "int2"), "-32768");
        let err = read("32768", "smallint").unwrap_err();
        assert_eq!(
            err.to_string(),
            "smallint number too large to fit in target type"
        );
        assert_eq!(
            read("1a", "bigint").unwrap_err().to_string(),
            "bigint invalid digit found in string"
        );
        assert_eq!(shown("NaN", "float8"), "NaN");
        assert_eq!(shown("-inf", "real"), "-Infinity");
        assert_eq!(shown("Infinity", "float8"), "Infinity");
        assert_eq!(shown("1e-6", "double precision"), "1e-06");
        // types/decimal.slt.part
        assert_eq!(shown("  +inFInity", "decimal"), "Infinity");
        assert_eq!(shown("  -inF ", "decimal"), "-Infinity");
        assert_eq!(shown("nan", "numeric"), "NaN");
        assert_eq!(shown("2.", "numeric"), "2");
        assert_eq!(shown("1.50", "numeric"), "1.50");
        assert_eq!(shown("1e-28", "numeric"), "0.0000000000000000000000000001");
        assert!(read("abc", "numeric").is_err());
    }

    #[test]
    fn booleans() {
        for t in ["true", "t", "yes", "on", "1", "TRUE", " y "] {
            assert_eq!(read(t, "bool"), Ok(ScalarImpl::Bool(true)), "{t}");
        }
        for f in ["false", "f", "no", "off", "0", "Of"] {
            assert_eq!(read(f, "boolean"), Ok(ScalarImpl::Bool(false)), "{f}");
        }
        assert_eq!(read("maybe", "bool"), Err(ParseError::Bool));
    }

    #[test]
    fn dates_and_times() {
        // types/time.slt.part
        assert_eq!(shown("2022-07-12", "date"), "2022-07-12");
        assert_eq!(shown("20:55:12", "time"), "20:55:12");
        assert_eq!(shown("10:13:36.07", "time"), "10:13:36.070");
        assert_eq!(shown("04:05", "time"), "04:05:00");
        assert_eq!(
            shown("2019-10-08 10:13:36.07", "timestamp"),
            "2019-10-08 10:13:36.070"
        );
        assert_eq!(
            shown("1999-01-08T04:05:06", "timestamp"),
            "1999-01-08 04:05:06"
        );
        assert_eq!(shown("1999-01-08", "timestamp"), "1999-01-08 00:00:00");
        assert_eq!(read("2022-13-01", "date"), Err(ParseError::Date));
        assert_eq!(
            read("2022-01-01 12:00:00+08:00", "timestamp"),
            Err(ParseError::Timestamp)
        );
        assert_eq!(read("12:00:00.1234567", "time"), Err(ParseError::Time));
    }

    #[test]
    fn timestamptz_offsets() {
        // types/timestamptz_utc.slt.part
        let tz = |s| shown(s, "timestamptz");
        assert_eq!(tz("2022-10-01 12:00:00-08:00"), "2022-10-01 20:00:00+00:00");
        assert_eq!(tz("2022-10-01 12:00:00+08:00"), "2022-10-01 04:00:00+00:00");
        assert_eq!(tz("2022-10-01 12:00:00Z"), "2022-10-01 12:00:00+00:00");
        assert_eq!(tz("2022-10-01T12:00:00-08:00"), "2022-10-01 20:00:00+00:00");
        assert_eq!(tz("2023-11-05 01:40-07:00"), "2023-11-05 08:40:00+00:00");
        // RisingWave's unit tests: PostgreSQL's `+08`, a space before the offset.
        assert_eq!(tz("2023-07-12 11:01:32+08"), "2023-07-12 03:01:32+00:00");
        assert_eq!(
            tz("2006-01-02 15:04:05 -07:00"),
            "2006-01-02 22:04:05+00:00"
        );
        // No offset: the session time zone, UTC.
        assert_eq!(tz("2022-10-01 12:00:00"), "2022-10-01 12:00:00+00:00");
        assert_eq!(read("0", "timestamptz"), Err(ParseError::Timestamptz));
    }

    #[test]
    fn intervals() {
        // types/interval.slt.part
        let i = |s| shown(s, "interval");
        assert_eq!(i("1 year"), "1 year");
        assert_eq!(i("1 y"), "1 year");
        assert_eq!(i("2 mon"), "2 mons");
        assert_eq!(i("3 day"), "3 days");
        assert_eq!(i("4 hour"), "04:00:00");
        assert_eq!(i("2 m"), "00:02:00");
        assert_eq!(i("6"), "00:00:06");
        assert_eq!(i("5minute"), "00:05:00");
        assert_eq!(i("1 year 1 month 1 day 1"), "1 year 1 mon 1 day 00:00:01");
        assert_eq!(i("1 year 1 month 1 day 1:"), "1 year 1 mon 1 day 01:00:00");
        assert_eq!(
            i("1 year 1 month 1 day 1:1:1.009"),
            "1 year 1 mon 1 day 01:01:01.009"
        );
        assert_eq!(i("1 mons 1 days 00:00:00.0000001"), "1 mon 1 day");
        assert_eq!(i("2562047788:00:54.775807"), "2562047788:00:54.775807");
        assert_eq!(i("-2562047788:00:54.775808"), "-2562047788:00:54.775808");
        assert!(read("2562047788:00:54.775808", "interval").is_err());
        assert_eq!(i("4 years 2147483599 mon"), "178956970 years 7 mons");
        assert!(read("4 years 2147483600 mon", "interval").is_err());
        assert_eq!(i("12:34:56.1234565"), "12:34:56.123456");
        assert_eq!(i("12:34:56.1234566"), "12:34:56.123457");
        assert_eq!(i("-1 hours"), "-01:00:00");
        assert_eq!(i("P1Y2M3DT4H5M6S"), "1 year 2 mons 3 days 04:05:06");
        assert_eq!(i("P0Y0M0DT0H0M0S"), "00:00:00");
        assert_eq!(
            i("P12Y2M30DT4H5M0.1234567S"),
            "12 years 2 mons 30 days 04:05:00.123456"
        );
        assert_eq!(i("P1Y2M"), "1 year 2 mons");
        assert!(read("P0Y0M0DT0H0M0S1", "interval").is_err());
        assert_eq!(
            read("1 fortnight", "interval"),
            Err(ParseError::IntervalUnit("fortnight".into()))
        );
        let one_hour = Interval::parse_with_unit("1", crate::types::DateTimeField::Hour).unwrap();
        assert_eq!(one_hour.usecs(), 3600 * USECS_PER_SEC);
        // `interval '500' year`, `interval '-50' month`
        let y = Interval::parse_with_unit("500", crate::types::DateTimeField::Year).unwrap();
        assert_eq!(ScalarImpl::Interval(y).to_text(), "500 years");
    }

    #[test]
    fn bytea() {
        // types/bytea.slt.part and RisingWave's unit tests
        assert_eq!(shown("fgh", "bytea"), "\\x666768");
        assert_eq!(shown("\\xDEADBeef", "bytea"), "\\xdeadbeef");
        assert_eq!(shown("\\x De Ad Be Ef ", "bytea"), "\\xdeadbeef");
        assert_eq!(shown("12CD", "bytea"), "\\x31324344");
        assert_eq!(read("\\xDeAdBeEx", "bytea"), Err(ParseError::HexDigit('x')));
        assert_eq!(shown("a\\\\b\\001", "bytea"), "\\x615c6201");
        assert_eq!(read("\\9", "bytea"), Err(ParseError::ByteaEscape));
    }

    #[test]
    fn jsonb_struct_list() {
        // types/jsonb.slt.part
        assert_eq!(
            shown(r#"{"a":[2, true, "", {}]}"#, "jsonb"),
            r#"{"a": [2, true, "", {}]}"#
        );
        assert!(read("{", "jsonb").is_err());
        assert_eq!(shown("{1,2,3}", "int[]"), "{1,2,3}");
        assert!(read("{'1','2','a'}", "int[]").is_err());
        assert_eq!(
            shown("{{1,2},{3,5},NULL,{NULL}}", "int[][]"),
            "{{1,2},{3,5},NULL,{NULL}}"
        );
        assert_eq!(
            shown(r#"{"a b","x\"y",null}"#, "varchar[]"),
            r#"{"a b","x\"y",NULL}"#
        );
        assert_eq!(shown("{}", "int[]"), "{}");
        assert_eq!(
            shown("(1,hello)", "struct<i bigint, j varchar>"),
            "(1,hello)"
        );
        assert_eq!(shown("(,)", "struct<i bigint, j varchar>"), "(,)");
        let nested = "struct<i bigint, j struct<a bigint, b varchar>>";
        assert_eq!(shown(r#"(1,"(,3)")"#, nested), r#"(1,"(,3)")"#);
        assert!(read("(1)", "struct<i bigint, j varchar>").is_err());
    }
}
