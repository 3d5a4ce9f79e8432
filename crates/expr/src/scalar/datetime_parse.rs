//! `to_timestamp(text, template)` and `to_date(text, template)`: the inverse of `to_char` for the template
//! patterns RisingWave supports (year, month, day, 12/24-hour, minute, second, ms/us, AM/PM, TZH[:]TZM).
//! Digits are read at their pattern's width; other template characters must match the input.

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use epochlab_common::types::{Date, Timestamptz};

use super::datetime::TO_CHAR_PATTERNS;
use crate::error::{ExprError, Result};

#[derive(Default)]
struct Fields {
    year: i32,
    month: u32,
    day: u32,
    hour: u32,
    pm: Option<bool>,
    minute: u32,
    second: u32,
    micros: u32,
    /// The text's offset from UTC, when its template reads one (`TZH`, `TZH:TZM`).
    offset_secs: Option<i32>,
}

fn bad(msg: &str) -> ExprError {
    ExprError::parse(msg)
}

/// Read exactly `n` digits.
fn digits(s: &mut &str, n: usize) -> Result<u32> {
    let part = s.get(..n).filter(|p| p.bytes().all(|b| b.is_ascii_digit()));
    let part = part.ok_or_else(|| bad("input is too short or not a number for the template"))?;
    *s = &s[n..];
    part.parse().map_err(|_| bad("invalid number"))
}

fn offset(s: &mut &str, colon: Option<bool>) -> Result<i32> {
    let sign = match s.chars().next() {
        Some('+') => 1,
        Some('-') => -1,
        _ => return Err(bad("expected a time zone offset")),
    };
    *s = &s[1..];
    let h = digits(s, 2)? as i32;
    let m = match colon {
        None => 0,
        Some(true) => {
            *s = s
                .strip_prefix(':')
                .ok_or_else(|| bad("expected ':' in the offset"))?;
            digits(s, 2)? as i32
        }
        Some(false) => digits(s, 2)? as i32,
    };
    Ok(sign * (h * 3600 + m * 60))
}

fn read_field(p: &str, s: &mut &str, f: &mut Fields) -> Result<()> {
    match p {
        "YYYY" | "yyyy" | "IYYY" | "iyyy" => f.year = digits(s, 4)? as i32,
        "YY" | "yy" | "IY" | "iy" => f.year = 2000 + digits(s, 2)? as i32,
        "MM" | "mm" => f.month = digits(s, 2)?,
        "DD" | "dd" => f.day = digits(s, 2)?,
        "HH24" | "hh24" | "HH12" | "hh12" | "HH" | "hh" => f.hour = digits(s, 2)?,
        "MI" | "mi" => f.minute = digits(s, 2)?,
        "SS" | "ss" => f.second = digits(s, 2)?,
        "US" | "us" => f.micros = digits(s, 6)?,
        "MS" | "ms" => f.micros = digits(s, 3)? * 1000,
        "AM" | "PM" | "am" | "pm" => {
            let word = s
                .get(..2)
                .map(str::to_ascii_lowercase)
                .ok_or_else(|| bad("expected AM or PM"))?;
            f.pm = Some(match word.as_str() {
                "am" => false,
                "pm" => true,
                _ => return Err(bad("expected AM or PM")),
            });
            *s = &s[2..];
        }
        "TZH:TZM" | "tzh:tzm" => f.offset_secs = Some(offset(s, Some(true))?),
        "TZHTZM" | "tzhtzm" => f.offset_secs = Some(offset(s, Some(false))?),
        "TZH" | "tzh" => f.offset_secs = Some(offset(s, None)?),
        _ => return Err(bad(&format!("unsupported template pattern {p}"))),
    }
    Ok(())
}

fn parse(input: &str, template: &str) -> Result<Fields> {
    let mut f = Fields {
        year: 1,
        month: 1,
        day: 1,
        ..Fields::default()
    };
    let mut s = input;
    let mut t = template;
    while let Some(c) = t.chars().next() {
        if let Some(p) = TO_CHAR_PATTERNS
            .iter()
            .filter(|p| t.starts_with(**p))
            .max_by_key(|p| p.len())
        {
            read_field(p, &mut s, &mut f)?;
            t = &t[p.len()..];
            continue;
        }
        if !s.starts_with(c) {
            return Err(bad("input does not match the template"));
        }
        s = &s[c.len_utf8()..];
        t = &t[c.len_utf8()..];
    }
    if !s.trim().is_empty() {
        return Err(bad("trailing characters after the template"));
    }
    Ok(f)
}

fn to_naive(f: &Fields) -> Result<NaiveDateTime> {
    let hour = match f.pm {
        Some(true) if f.hour < 12 => f.hour + 12,
        Some(false) if f.hour == 12 => 0,
        _ => f.hour,
    };
    let date =
        NaiveDate::from_ymd_opt(f.year, f.month, f.day).ok_or_else(|| bad("date out of range"))?;
    let time = NaiveTime::from_hms_micro_opt(hour, f.minute, f.second, f.micros)
        .ok_or_else(|| bad("time out of range"))?;
    Ok(date.and_time(time))
}

/// `to_timestamp(text, template)` in `zone` (the session's, which the front end's rewrite gives it): a
/// text with an offset is that instant; one without is a wall-clock time in `zone` (RisingWave's
/// `to_timestamp1(s, timezone, template)`).
pub fn to_timestamp(input: &str, template: &str, zone: &str) -> Result<Timestamptz> {
    let f = parse(input, template)?;
    let local = to_naive(&f)?;
    match f.offset_secs {
        Some(offset) => {
            let utc = local.and_utc().timestamp_micros() - i64::from(offset) * 1_000_000;
            Ok(Timestamptz::from_micros(utc))
        }
        None => super::timestamptz::timestamp_at_time_zone(local, zone),
    }
}

/// `to_date(text, template)`.
pub fn to_date(input: &str, template: &str) -> Result<Date> {
    Ok(Date(to_naive(&parse(input, template)?)?.date()))
}
