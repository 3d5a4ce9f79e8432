//! Date and time: arithmetic with intervals, `extract`/`date_part`, `date_trunc`, `tumble_start`, `to_char`,
//! `to_timestamp`, `make_date`/`make_timestamptz`, and `now()`, which reads the epoch's time from the
//! [`EvalContext`], never a clock. A call given no zone reads a timestamptz as its UTC timestamp; the front
//! end gives the zone-dependent ones the session's zone (see [`super::timestamptz`]).

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use epochlab_common::expr_node::ExprType;
use epochlab_common::types::{
    Date, Decimal, F64, Interval, Time, Timestamp, Timestamptz, USECS_PER_DAY, USECS_PER_SEC,
};
use epochlab_common::{DataType, Datum, ScalarImpl};
use rust_decimal::Decimal as Rd;

use super::no_overload;
use super::string::str_of;
use super::timestamptz as tz;
use crate::error::{ExprError, Result};
use crate::eval::EvalContext;

const USECS_PER_HOUR: i64 = 3600 * USECS_PER_SEC;
const USECS_PER_MINUTE: i64 = 60 * USECS_PER_SEC;

pub fn call(func: ExprType, args: &[&ScalarImpl]) -> Result<ScalarImpl> {
    use ExprType::*;
    match (func, args) {
        (Extract, [unit, v]) => extract(str_of(unit)?, v).map(ScalarImpl::Decimal),
        (DatePart, [unit, v]) => {
            let d = extract(str_of(unit)?, v)?;
            Ok(ScalarImpl::Float64(F64::from(super::decimal::to_f64(d))))
        }
        (DateTrunc, [unit, v]) => date_trunc(str_of(unit)?, v),
        (Extract, [unit, ScalarImpl::Timestamptz(t), zone]) => {
            extract_in_zone(str_of(unit)?, *t, str_of(zone)?).map(ScalarImpl::Decimal)
        }
        (DatePart, [unit, ScalarImpl::Timestamptz(t), zone]) => {
            let d = extract_in_zone(str_of(unit)?, *t, str_of(zone)?)?;
            Ok(ScalarImpl::Float64(F64::from(super::decimal::to_f64(d))))
        }
        (DateTrunc, [unit, ScalarImpl::Timestamptz(t), zone]) => {
            let zone = str_of(zone)?;
            let local = tz::timestamptz_at_time_zone(*t, zone)?;
            let truncated = trunc_ts(str_of(unit)?, local)?;
            tz::timestamp_at_time_zone(truncated, zone).map(ScalarImpl::Timestamptz)
        }
        (ToChar, [ScalarImpl::Timestamptz(t), pattern, zone]) => {
            let zone = str_of(zone)?;
            let local = tz::timestamptz_at_time_zone(*t, zone)?;
            to_char_at(local, str_of(pattern)?, tz::offset_secs(*t, zone)?)
        }
        (CastWithTimeZone, [ScalarImpl::Timestamptz(t), zone]) => {
            let zone = tz::lookup_time_zone(str_of(zone)?)?;
            Ok(ScalarImpl::Utf8(tz::to_text_in_zone(*t, zone)?.into()))
        }
        (CastWithTimeZone, [ScalarImpl::Utf8(s), zone]) => {
            tz::str_to_timestamptz(s, str_of(zone)?).map(ScalarImpl::Timestamptz)
        }
        (AddWithTimeZone, [ScalarImpl::Timestamptz(t), ScalarImpl::Interval(i), zone]) => {
            tz::add_with_time_zone(*t, *i, str_of(zone)?).map(ScalarImpl::Timestamptz)
        }
        (SubtractWithTimeZone, [ScalarImpl::Timestamptz(t), ScalarImpl::Interval(i), zone]) => {
            tz::subtract_with_time_zone(*t, *i, str_of(zone)?).map(ScalarImpl::Timestamptz)
        }
        (TumbleStart, [v, size]) => tumble_start(v, size, None),
        (TumbleStart, [v, size, offset]) => tumble_start(v, size, Some(offset)),
        (ToChar, [v, pattern]) => to_char(v, str_of(pattern)?),
        (AtTimeZone, [v, zone]) => at_time_zone(v, str_of(zone)?),
        (ToTimestamp, [ScalarImpl::Float64(secs)]) => to_timestamp(secs.0),
        (ToTimestamp1, [text, template, zone]) => {
            super::datetime_parse::to_timestamp(str_of(text)?, str_of(template)?, str_of(zone)?)
                .map(ScalarImpl::Timestamptz)
        }
        (CharToDate, [text, template]) => {
            super::datetime_parse::to_date(str_of(text)?, str_of(template)?).map(ScalarImpl::Date)
        }
        (MakeDate, [y, m, d]) => make_date(int(y)?, int(m)?, int(d)?).map(ScalarImpl::Date),
        (MakeTimestamptz, [y, mo, d, h, mi, ScalarImpl::Float64(s)]) => {
            let date = make_date(int(y)?, int(mo)?, int(d)?)?;
            let time = make_time(int(h)?, int(mi)?, s.0)?;
            Ok(ScalarImpl::Timestamptz(to_tz(date.0.and_time(time))?))
        }
        (MakeTimestamptz, [y, mo, d, h, mi, ScalarImpl::Float64(s), zone]) => {
            let date = make_date(int(y)?, int(mo)?, int(d)?)?;
            let time = make_time(int(h)?, int(mi)?, s.0)?;
            tz::timestamp_at_time_zone(date.0.and_time(time), str_of(zone)?)
                .map(ScalarImpl::Timestamptz)
        }
        _ => Err(no_overload(func, args)),
    }
}

fn int(v: &ScalarImpl) -> Result<i64> {
    match v {
        ScalarImpl::Int16(i) => Ok(i64::from(*i)),
        ScalarImpl::Int32(i) => Ok(i64::from(*i)),
        ScalarImpl::Int64(i) => Ok(*i),
        other => Err(ExprError::InvalidState(format!(
            "expected an integer, got {other:?}"
        ))),
    }
}

/// `now()`: the context's time.
pub fn now(ctx: &EvalContext, ret: &DataType) -> Result<Datum> {
    let usecs = ctx.now_usecs.ok_or(ExprError::Context("NOW"))?;
    match ret {
        DataType::Timestamptz => Ok(Some(ScalarImpl::Timestamptz(Timestamptz::from_micros(
            usecs,
        )))),
        other => Err(ExprError::UnsupportedFunction(format!(
            "now() as {other:?}"
        ))),
    }
}

// ---- arithmetic -------------------------------------------------------------------------------------

/// Arithmetic on dates, times and intervals; `Ok(None)` when the arguments are not temporal.
pub fn arith(func: ExprType, args: &[&ScalarImpl]) -> Result<Option<ScalarImpl>> {
    use ExprType::*;
    use ScalarImpl as S;
    let out = match (func, args) {
        (Add, [S::Date(d), S::Int32(n)]) | (Add, [S::Int32(n), S::Date(d)]) => {
            date_add_days(*d, i64::from(*n))
        }
        (Subtract, [S::Date(d), S::Int32(n)]) => date_add_days(*d, -i64::from(*n)),
        (Subtract, [S::Date(a), S::Date(b)]) => Ok(S::Int32((a.0 - b.0).num_days() as i32)),
        (Add, [S::Date(d), S::Time(t)]) | (Add, [S::Time(t), S::Date(d)]) => {
            Ok(S::Timestamp(Timestamp(d.0.and_time(t.0))))
        }
        (Add | Subtract, [S::Date(d), S::Interval(i)]) => {
            ts_add(d.0.and_time(NaiveTime::MIN), signed(func, *i)?)
                .map(|t| S::Timestamp(Timestamp(t)))
        }
        (Add, [S::Interval(i), S::Date(d)]) => {
            ts_add(d.0.and_time(NaiveTime::MIN), *i).map(|t| S::Timestamp(Timestamp(t)))
        }
        (Add | Subtract, [S::Timestamp(t), S::Interval(i)]) => {
            ts_add(t.0, signed(func, *i)?).map(|t| S::Timestamp(Timestamp(t)))
        }
        (Add, [S::Interval(i), S::Timestamp(t)]) => {
            ts_add(t.0, *i).map(|t| S::Timestamp(Timestamp(t)))
        }
        (Add | Subtract, [S::Timestamptz(t), S::Interval(i)]) => tz_add(*t, signed(func, *i)?),
        (Add, [S::Interval(i), S::Timestamptz(t)]) => tz_add(*t, *i),
        (Subtract, [S::Timestamp(a), S::Timestamp(b)]) => {
            Ok(S::Interval(duration_interval(a.0 - b.0)?))
        }
        (Subtract, [S::Timestamptz(a), S::Timestamptz(b)]) => {
            let usecs = a.timestamp_micros().checked_sub(b.timestamp_micros());
            let usecs = usecs.ok_or(ExprError::NumericOutOfRange)?;
            Ok(S::Interval(duration_interval(Duration::microseconds(
                usecs,
            ))?))
        }
        (Subtract, [S::Time(a), S::Time(b)]) => {
            let usecs = (a.0 - b.0)
                .num_microseconds()
                .ok_or(ExprError::NumericOutOfRange)?;
            Ok(S::Interval(Interval::from_month_day_usec(0, 0, usecs)))
        }
        (Add | Subtract, [S::Time(t), S::Interval(i)]) => time_add(*t, signed(func, *i)?),
        (Add, [S::Interval(i), S::Time(t)]) => time_add(*t, *i),
        (Add, [S::Interval(a), S::Interval(b)]) => interval_add(*a, *b).map(S::Interval),
        (Subtract, [S::Interval(a), S::Interval(b)]) => interval_add(*a, neg(*b)?).map(S::Interval),
        (Neg, [S::Interval(a)]) => neg(*a).map(S::Interval),
        (Multiply, [S::Interval(i), n]) | (Multiply, [n, S::Interval(i)]) => interval_mul(*i, n),
        (Divide, [S::Interval(i), n]) => interval_div(*i, n),
        _ => return Ok(None),
    };
    out.map(Some)
}

fn signed(func: ExprType, i: Interval) -> Result<Interval> {
    if func == ExprType::Subtract {
        neg(i)
    } else {
        Ok(i)
    }
}

fn neg(i: Interval) -> Result<Interval> {
    let m = i.months().checked_neg();
    let d = i.days().checked_neg();
    let u = i.usecs().checked_neg();
    match (m, d, u) {
        (Some(m), Some(d), Some(u)) => Ok(Interval::from_month_day_usec(m, d, u)),
        _ => Err(ExprError::NumericOutOfRange),
    }
}

fn interval_add(a: Interval, b: Interval) -> Result<Interval> {
    let m = a.months().checked_add(b.months());
    let d = a.days().checked_add(b.days());
    let u = a.usecs().checked_add(b.usecs());
    match (m, d, u) {
        (Some(m), Some(d), Some(u)) => Ok(Interval::from_month_day_usec(m, d, u)),
        _ => Err(ExprError::NumericOutOfRange),
    }
}

fn date_add_days(d: Date, n: i64) -> Result<ScalarImpl> {
    d.0.checked_add_signed(Duration::days(n))
        .map(|d| ScalarImpl::Date(Date(d)))
        .ok_or(ExprError::NumericOutOfRange)
}

/// Months first (the day clamped to the new month's length: Jan 31 + 1 month is Feb 28), then days, then
/// microseconds, as PostgreSQL.
pub fn ts_add(t: NaiveDateTime, i: Interval) -> Result<NaiveDateTime> {
    let mut date = t.date();
    if i.months() != 0 {
        let total = i64::from(date.year()) * 12 + i64::from(date.month0()) + i64::from(i.months());
        let year = i32::try_from(total.div_euclid(12)).map_err(|_| ExprError::NumericOutOfRange)?;
        let month = total.rem_euclid(12) as u32 + 1;
        let day = date.day().min(days_in_month(year, month));
        date = NaiveDate::from_ymd_opt(year, month, day).ok_or(ExprError::NumericOutOfRange)?;
    }
    date.and_time(t.time())
        .checked_add_signed(Duration::days(i64::from(i.days())))
        .and_then(|t| t.checked_add_signed(Duration::microseconds(i.usecs())))
        .ok_or(ExprError::NumericOutOfRange)
}

fn days_in_month(year: i32, month: u32) -> u32 {
    let next = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    NaiveDate::from_ymd_opt(next.0, next.1, 1)
        .and_then(|d| d.pred_opt())
        .map_or(31, |d| d.day())
}

fn tz_add(t: Timestamptz, i: Interval) -> Result<ScalarImpl> {
    let utc = t.to_utc().ok_or(ExprError::NumericOutOfRange)?;
    Ok(ScalarImpl::Timestamptz(to_tz(ts_add(utc, i)?)?))
}

fn to_tz(t: NaiveDateTime) -> Result<Timestamptz> {
    Ok(Timestamptz::from_micros(t.and_utc().timestamp_micros()))
}

/// A duration as days and microseconds (no months), as timestamp subtraction gives.
fn duration_interval(d: Duration) -> Result<Interval> {
    let days = d.num_days();
    let usecs = (d - Duration::days(days))
        .num_microseconds()
        .ok_or(ExprError::NumericOutOfRange)?;
    let days = i32::try_from(days).map_err(|_| ExprError::NumericOutOfRange)?;
    Ok(Interval::from_month_day_usec(0, days, usecs))
}

/// `time ± interval` uses the interval's microseconds only and must stay within the day (RisingWave's).
fn time_add(t: Time, i: Interval) -> Result<ScalarImpl> {
    let (time, wrapped) =
        t.0.overflowing_add_signed(Duration::microseconds(i.usecs()));
    if wrapped != 0 {
        return Err(ExprError::NumericOutOfRange);
    }
    Ok(ScalarImpl::Time(Time(time)))
}

fn interval_mul(i: Interval, n: &ScalarImpl) -> Result<ScalarImpl> {
    let out = match n {
        ScalarImpl::Int16(_) | ScalarImpl::Int32(_) | ScalarImpl::Int64(_) => {
            let k = i32::try_from(int(n)?).ok();
            k.and_then(|k| {
                Some(Interval::from_month_day_usec(
                    i.months().checked_mul(k)?,
                    i.days().checked_mul(k)?,
                    i.usecs().checked_mul(i64::from(k))?,
                ))
            })
        }
        other => from_floats(i, float_of(other)?, false),
    };
    out.map(ScalarImpl::Interval)
        .ok_or(ExprError::NumericOutOfRange)
}

pub fn interval_div(i: Interval, n: &ScalarImpl) -> Result<ScalarImpl> {
    let f = match n {
        ScalarImpl::Int16(_) | ScalarImpl::Int32(_) | ScalarImpl::Int64(_) => int(n)? as f64,
        other => float_of(other)?,
    };
    // RisingWave's interval division reports a zero divisor as out of range.
    if f == 0.0 {
        return Err(ExprError::NumericOutOfRange);
    }
    from_floats(i, f, true)
        .map(ScalarImpl::Interval)
        .ok_or(ExprError::NumericOutOfRange)
}

fn float_of(v: &ScalarImpl) -> Result<f64> {
    match v {
        ScalarImpl::Float32(f) => Ok(f64::from(f.0)),
        ScalarImpl::Float64(f) => Ok(f.0),
        ScalarImpl::Decimal(d) => Ok(super::decimal::to_f64(*d)),
        other => Err(ExprError::InvalidState(format!(
            "expected a number, got {other:?}"
        ))),
    }
}

/// Multiply (or divide) each field by `k`, carrying fractions down: a fraction of a month becomes days (30
/// to a month), a fraction of a day microseconds; rounded to microseconds as PostgreSQL's TSROUND.
fn from_floats(i: Interval, k: f64, divide: bool) -> Option<Interval> {
    let apply = |v: f64| if divide { v / k } else { v * k };
    let (months, days, usecs) = (
        apply(f64::from(i.months())),
        apply(f64::from(i.days())),
        apply(i.usecs() as f64),
    );
    let round_to = |v: f64, unit: f64| (v * unit).round_ties_even() / unit;
    let month_usecs = (30 * USECS_PER_DAY) as f64;
    let day_usecs = USECS_PER_DAY as f64;
    let months = round_to(months, month_usecs);
    let whole_months = checked_i32(months.trunc())?;
    let leftover_days = round_to(months.fract() * 30.0, day_usecs);
    let days = round_to(days, day_usecs);
    let fract_sum = round_to(days.fract() + leftover_days.fract(), day_usecs);
    let whole_days = checked_i32(days.trunc())?
        .checked_add(checked_i32(leftover_days.trunc())?)?
        .checked_add(checked_i32(fract_sum.trunc())?)?;
    let usecs = (usecs + fract_sum.fract() * day_usecs).round_ties_even();
    if usecs.is_nan() || usecs < i64::MIN as f64 || usecs > i64::MAX as f64 {
        return None;
    }
    Some(Interval::from_month_day_usec(
        whole_months,
        whole_days,
        usecs as i64,
    ))
}

fn checked_i32(v: f64) -> Option<i32> {
    (!v.is_nan() && v >= f64::from(i32::MIN) && v <= f64::from(i32::MAX)).then_some(v as i32)
}

// ---- extract ----------------------------------------------------------------------------------------

fn invalid_unit(unit: &str) -> ExprError {
    ExprError::invalid_param("unit", format!("unit \"{unit}\" not recognized"))
}

fn unsupported_unit(unit: &str, ty: &str) -> ExprError {
    ExprError::invalid_param(
        "unit",
        format!("unit \"{unit}\" not supported for type {ty}"),
    )
}

/// `extract(unit from v)` as a decimal.
pub fn extract(unit: &str, v: &ScalarImpl) -> Result<Decimal> {
    let u = unit.to_ascii_lowercase();
    let known = [
        "millennium",
        "century",
        "decade",
        "year",
        "isoyear",
        "quarter",
        "month",
        "week",
        "day",
        "doy",
        "dow",
        "isodow",
        "hour",
        "minute",
        "second",
        "millisecond",
        "microsecond",
        "epoch",
        "julian",
        "timezone",
        "timezone_hour",
        "timezone_minute",
    ];
    if !known.contains(&u.as_str()) {
        return Err(invalid_unit(unit));
    }
    let out = match v {
        ScalarImpl::Date(d) => {
            extract_date(&u, d.0).ok_or_else(|| unsupported_unit(unit, "date"))?
        }
        ScalarImpl::Time(t) => {
            extract_time(&u, t.0).ok_or_else(|| unsupported_unit(unit, "time"))?
        }
        ScalarImpl::Timestamp(t) => {
            extract_ts(&u, t.0).ok_or_else(|| unsupported_unit(unit, "timestamp"))?
        }
        ScalarImpl::Timestamptz(t) if u == "epoch" => {
            Rd::from_i128_with_scale(i128::from(t.timestamp_micros()), 6)
        }
        ScalarImpl::Timestamptz(t) => {
            let utc = t.to_utc().ok_or(ExprError::NumericOutOfRange)?;
            extract_ts(&u, utc).ok_or_else(|| unsupported_unit(unit, "timestamp with time zone"))?
        }
        ScalarImpl::Interval(i) => {
            extract_interval(&u, *i).ok_or_else(|| unsupported_unit(unit, "interval"))?
        }
        other => return Err(ExprError::InvalidState(format!("extract from {other:?}"))),
    };
    Ok(Decimal::Normalized(out))
}

/// `extract(unit from t)` of an instant as seen in `zone`: its offset there for the `timezone` units, its
/// wall-clock time there for the others (RisingWave's `extract_from_timestamptz_at_timezone`).
fn extract_in_zone(unit: &str, t: Timestamptz, zone: &str) -> Result<Decimal> {
    let u = unit.to_ascii_lowercase();
    let offset = i64::from(tz::offset_secs(t, zone)?);
    let out = match u.as_str() {
        "epoch" => Rd::from_i128_with_scale(i128::from(t.timestamp_micros()), 6),
        "timezone" => Rd::from(offset),
        "timezone_hour" => Rd::from(offset / 3600),
        "timezone_minute" => Rd::from(offset % 3600 / 60),
        _ => {
            return extract(
                unit,
                &ScalarImpl::Timestamp(Timestamp(tz::timestamptz_at_time_zone(t, zone)?)),
            );
        }
    };
    Ok(Decimal::Normalized(out))
}

fn extract_date(u: &str, d: NaiveDate) -> Option<Rd> {
    let v: i64 = match u {
        "millennium" => i64::from((d.year() - 1).div_euclid(1000) + 1),
        "century" => i64::from((d.year() - 1).div_euclid(100) + 1),
        "decade" => i64::from(d.year().div_euclid(10)),
        "year" => i64::from(d.year()),
        "isoyear" => i64::from(d.iso_week().year()),
        "quarter" => i64::from(d.month0() / 3 + 1),
        "month" => i64::from(d.month()),
        "week" => i64::from(d.iso_week().week()),
        "day" => i64::from(d.day()),
        "doy" => i64::from(d.ordinal()),
        "dow" => i64::from(d.weekday().num_days_from_sunday()),
        "isodow" => i64::from(d.weekday().number_from_monday()),
        "epoch" => d.and_time(NaiveTime::MIN).and_utc().timestamp(),
        "julian" => i64::from(d.num_days_from_ce() - 719_163 + 2_440_588),
        _ => return None,
    };
    Some(Rd::from(v))
}

fn extract_time(u: &str, t: NaiveTime) -> Option<Rd> {
    let sec_usecs = i128::from(t.second()) * 1_000_000 + i128::from(t.nanosecond() / 1000);
    Some(match u {
        "hour" => Rd::from(t.hour()),
        "minute" => Rd::from(t.minute()),
        "second" => Rd::from_i128_with_scale(sec_usecs, 6),
        "millisecond" => Rd::from_i128_with_scale(sec_usecs, 3),
        "microsecond" => Rd::from_i128_with_scale(sec_usecs, 0),
        "epoch" => Rd::from_i128_with_scale(
            i128::from(t.num_seconds_from_midnight()) * 1_000_000
                + i128::from(t.nanosecond() / 1000),
            6,
        ),
        _ => return None,
    })
}

fn extract_ts(u: &str, t: NaiveDateTime) -> Option<Rd> {
    match u {
        "epoch" => Some(Rd::from_i128_with_scale(
            i128::from(t.and_utc().timestamp_micros()),
            6,
        )),
        // Days since the Julian epoch, with the time of day as a fraction (RisingWave's).
        "julian" => Some(
            Rd::from_i128_with_scale(i128::from(t.and_utc().timestamp_micros()), 6)
                / Rd::from(86_400)
                + Rd::from(2_440_588),
        ),
        "hour" | "minute" | "second" | "millisecond" | "microsecond" => extract_time(u, t.time()),
        _ => extract_date(u, t.date()),
    }
}

fn extract_interval(u: &str, i: Interval) -> Option<Rd> {
    let years = i.months() / 12;
    let sec_usecs = i128::from(i.usecs() % USECS_PER_MINUTE);
    Some(match u {
        "millennium" => Rd::from(years / 1000),
        "century" => Rd::from(years / 100),
        "decade" => Rd::from(years / 10),
        "year" => Rd::from(years),
        "quarter" => Rd::from(i.months() % 12 / 3 + 1),
        "month" => Rd::from(i.months() % 12),
        "day" => Rd::from(i.days()),
        "hour" => Rd::from(i.usecs() / USECS_PER_HOUR),
        "minute" => Rd::from(i.usecs() % USECS_PER_HOUR / USECS_PER_MINUTE),
        "second" => Rd::from_i128_with_scale(sec_usecs, 6),
        "millisecond" => Rd::from_i128_with_scale(sec_usecs, 3),
        "microsecond" => Rd::from_i128_with_scale(sec_usecs, 0),
        "epoch" => {
            // PostgreSQL: a year is 365.25 days, a leftover month 30 days.
            let year_usecs = i128::from(years) * 36_525 * i128::from(USECS_PER_DAY) / 100;
            let month_usecs = i128::from(i.months() % 12) * 30 * i128::from(USECS_PER_DAY);
            let total = year_usecs
                + month_usecs
                + i128::from(i.days()) * i128::from(USECS_PER_DAY)
                + i128::from(i.usecs());
            Rd::from_i128_with_scale(total, 6)
        }
        _ => return None,
    })
}

// ---- date_trunc, tumble_start ------------------------------------------------------------------------

fn invalid_field(field: &str) -> ExprError {
    ExprError::invalid_param(
        "field",
        format!(
            "invalid field {field:?}. must be one of: microseconds, milliseconds, second, minute, hour, day, \
             week, month, quarter, year, decade, century, millennium"
        ),
    )
}

pub fn date_trunc(field: &str, v: &ScalarImpl) -> Result<ScalarImpl> {
    match v {
        ScalarImpl::Timestamp(t) => Ok(ScalarImpl::Timestamp(Timestamp(trunc_ts(field, t.0)?))),
        ScalarImpl::Timestamptz(t) => {
            let utc = t.to_utc().ok_or(ExprError::NumericOutOfRange)?;
            Ok(ScalarImpl::Timestamptz(to_tz(trunc_ts(field, utc)?)?))
        }
        ScalarImpl::Interval(i) => trunc_interval(field, *i).map(ScalarImpl::Interval),
        other => Err(ExprError::InvalidState(format!("date_trunc of {other:?}"))),
    }
}

fn trunc_ts(field: &str, t: NaiveDateTime) -> Result<NaiveDateTime> {
    let d = t.date();
    let micros = t.time().nanosecond() / 1000;
    let (h, m, s) = (t.hour(), t.minute(), t.second());
    let at = |date: NaiveDate, h, m, s, us| {
        date.and_hms_micro_opt(h, m, s, us)
            .ok_or(ExprError::NumericOutOfRange)
    };
    let ymd =
        |y: i32, mo: u32| NaiveDate::from_ymd_opt(y, mo, 1).ok_or(ExprError::NumericOutOfRange);
    let y = d.year();
    match field.to_ascii_lowercase().as_str() {
        "microseconds" => Ok(t),
        "milliseconds" => at(d, h, m, s, micros / 1000 * 1000),
        "second" => at(d, h, m, s, 0),
        "minute" => at(d, h, m, 0, 0),
        "hour" => at(d, h, 0, 0, 0),
        "day" => at(d, 0, 0, 0, 0),
        "week" => at(
            d - Duration::days(i64::from(d.weekday().num_days_from_monday())),
            0,
            0,
            0,
            0,
        ),
        "month" => at(ymd(y, d.month())?, 0, 0, 0, 0),
        "quarter" => at(ymd(y, d.month0() / 3 * 3 + 1)?, 0, 0, 0, 0),
        "year" => at(ymd(y, 1)?, 0, 0, 0, 0),
        "decade" => at(ymd(y.div_euclid(10) * 10, 1)?, 0, 0, 0, 0),
        "century" => at(ymd((y - 1).div_euclid(100) * 100 + 1, 1)?, 0, 0, 0, 0),
        "millennium" => at(ymd((y - 1).div_euclid(1000) * 1000 + 1, 1)?, 0, 0, 0, 0),
        _ => Err(invalid_field(field)),
    }
}

fn trunc_interval(field: &str, i: Interval) -> Result<Interval> {
    let (m, d, u) = (i.months(), i.days(), i.usecs());
    let iv = Interval::from_month_day_usec;
    Ok(match field.to_ascii_lowercase().as_str() {
        "microseconds" => i,
        "milliseconds" => iv(m, d, u - u % 1000),
        "second" => iv(m, d, u - u % USECS_PER_SEC),
        "minute" => iv(m, d, u - u % USECS_PER_MINUTE),
        "hour" => iv(m, d, u - u % USECS_PER_HOUR),
        "day" => iv(m, d, 0),
        "week" => {
            return Err(ExprError::UnsupportedFunction(
                "interval units \"week\" not supported because months usually have fractional weeks".into(),
            ));
        }
        "month" => iv(m, 0, 0),
        "quarter" => iv(m / 3 * 3, 0, 0),
        "year" => iv(m / 12 * 12, 0, 0),
        "decade" => iv(m / 120 * 120, 0, 0),
        "century" => iv(m / 1200 * 1200, 0, 0),
        "millennium" => iv(m / 12000 * 12000, 0, 0),
        _ => return Err(invalid_field(field)),
    })
}

fn interval_usecs(i: &Interval) -> Result<i64> {
    i64::try_from(i.total_usecs()).map_err(|_| ExprError::NumericOutOfRange)
}

/// The start of the tumbling window of `size` (shifted by `offset`) holding `v`.
fn tumble_start(
    v: &ScalarImpl,
    size: &ScalarImpl,
    offset: Option<&ScalarImpl>,
) -> Result<ScalarImpl> {
    let ScalarImpl::Interval(size) = size else {
        return Err(ExprError::InvalidState("window size".into()));
    };
    let offset = match offset {
        Some(ScalarImpl::Interval(o)) => interval_usecs(o)?,
        _ => 0,
    };
    let size = interval_usecs(size)?;
    let start = |t: i64| -> Result<i64> {
        let rem = t.checked_sub(offset).ok_or(ExprError::NumericOutOfRange)?;
        let rem = rem.checked_rem(size).ok_or(ExprError::DivisionByZero)?;
        let back = if rem < 0 { rem + size } else { rem };
        t.checked_sub(back).ok_or(ExprError::NumericOutOfRange)
    };
    let naive_us = |t: NaiveDateTime| t.and_utc().timestamp_micros();
    let from_us = |us: i64| {
        chrono::DateTime::from_timestamp_micros(us)
            .map(|t| ScalarImpl::Timestamp(Timestamp(t.naive_utc())))
            .ok_or(ExprError::NumericOutOfRange)
    };
    match v {
        ScalarImpl::Date(d) => from_us(start(naive_us(d.0.and_time(NaiveTime::MIN)))?),
        ScalarImpl::Timestamp(t) => from_us(start(naive_us(t.0))?),
        ScalarImpl::Timestamptz(t) => Ok(ScalarImpl::Timestamptz(Timestamptz::from_micros(start(
            t.timestamp_micros(),
        )?))),
        other => Err(ExprError::InvalidState(format!(
            "tumble_start of {other:?}"
        ))),
    }
}

// ---- to_char, to_timestamp, make_date -----------------------------------------------------------------

/// PostgreSQL template patterns RisingWave supports, longest first where one is a prefix of another.
pub(crate) const TO_CHAR_PATTERNS: &[&str] = &[
    "HH24", "hh24", "HH12", "hh12", "HH", "hh", "AM", "PM", "am", "pm", "MI", "mi", "SS", "ss",
    "YYYY", "yyyy", "YY", "yy", "IYYY", "iyyy", "IY", "iy", "MM", "mm", "Month", "Mon", "DD", "dd",
    "US", "us", "MS", "ms", "TZH:TZM", "tzh:tzm", "TZHTZM", "tzhtzm", "TZH", "tzh",
];

fn to_char(v: &ScalarImpl, pattern: &str) -> Result<ScalarImpl> {
    let t = match v {
        ScalarImpl::Timestamp(t) => t.0,
        ScalarImpl::Timestamptz(t) => t.to_utc().ok_or(ExprError::NumericOutOfRange)?,
        ScalarImpl::Date(d) => d.0.and_time(NaiveTime::MIN),
        other => return Err(ExprError::InvalidState(format!("to_char of {other:?}"))),
    };
    to_char_at(t, pattern, 0)
}

/// `to_char` of a wall-clock time whose zone is `offset` seconds east of UTC.
fn to_char_at(t: NaiveDateTime, pattern: &str, offset: i32) -> Result<ScalarImpl> {
    let mut out = String::new();
    let mut rest = pattern;
    while !rest.is_empty() {
        let longest = TO_CHAR_PATTERNS
            .iter()
            .filter(|p| rest.starts_with(**p))
            .max_by_key(|p| p.len());
        match longest {
            Some(p) => {
                out.push_str(&format_field(p, t, offset));
                rest = &rest[p.len()..];
            }
            None => {
                let c = rest.chars().next().expect("non-empty");
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    Ok(ScalarImpl::Utf8(out.into()))
}

fn format_field(p: &str, t: NaiveDateTime, offset: i32) -> String {
    let sign = if offset < 0 { '-' } else { '+' };
    let (hours, minutes) = (offset.abs() / 3600, offset.abs() % 3600 / 60);
    let hour12 = (t.hour() + 11) % 12 + 1;
    let micros = t.nanosecond() / 1000;
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let month_name = MONTHS[t.month0() as usize];
    match p {
        "HH24" | "hh24" => format!("{:02}", t.hour()),
        "HH12" | "hh12" | "HH" | "hh" => format!("{hour12:02}"),
        "AM" | "PM" => (if t.hour() < 12 { "AM" } else { "PM" }).to_string(),
        "am" | "pm" => (if t.hour() < 12 { "am" } else { "pm" }).to_string(),
        "MI" | "mi" => format!("{:02}", t.minute()),
        "SS" | "ss" => format!("{:02}", t.second()),
        "YYYY" | "yyyy" => format!("{:04}", t.year()),
        "YY" | "yy" => format!("{:02}", t.year().rem_euclid(100)),
        "IYYY" | "iyyy" => format!("{:04}", t.iso_week().year()),
        "IY" | "iy" => format!("{:02}", t.iso_week().year().rem_euclid(100)),
        "MM" | "mm" => format!("{:02}", t.month()),
        "Month" => month_name.to_string(),
        "Mon" => month_name[..3].to_string(),
        "DD" | "dd" => format!("{:02}", t.day()),
        "US" | "us" => format!("{micros:06}"),
        "MS" | "ms" => format!("{:03}", micros / 1000),
        "TZH:TZM" | "tzh:tzm" => format!("{sign}{hours:02}:{minutes:02}"),
        "TZHTZM" | "tzhtzm" => format!("{sign}{hours:02}{minutes:02}"),
        _ => format!("{sign}{hours:02}"),
    }
}

/// `x AT TIME ZONE zone`: a timestamp read in the zone (a timestamptz), or a timestamptz shown in it (a
/// timestamp).
fn at_time_zone(v: &ScalarImpl, zone: &str) -> Result<ScalarImpl> {
    match v {
        ScalarImpl::Timestamp(t) => {
            tz::timestamp_at_time_zone(t.0, zone).map(ScalarImpl::Timestamptz)
        }
        ScalarImpl::Timestamptz(t) => {
            tz::timestamptz_at_time_zone(*t, zone).map(|t| ScalarImpl::Timestamp(Timestamp(t)))
        }
        other => Err(ExprError::InvalidState(format!(
            "AT TIME ZONE of {other:?}"
        ))),
    }
}

/// `to_timestamp(seconds)`: a timestamptz from seconds since the Unix epoch.
fn to_timestamp(secs: f64) -> Result<ScalarImpl> {
    let usecs = (secs * 1e6).round();
    if !usecs.is_finite() || usecs < i64::MIN as f64 || usecs > i64::MAX as f64 {
        return Err(ExprError::NumericOutOfRange);
    }
    Ok(ScalarImpl::Timestamptz(Timestamptz::from_micros(
        usecs as i64,
    )))
}

fn make_date(y: i64, m: i64, d: i64) -> Result<Date> {
    let bad = || {
        ExprError::invalid_param(
            "date",
            format!("date field value out of range: {y}-{m:02}-{d:02}"),
        )
    };
    let year = i32::try_from(y).map_err(|_| bad())?;
    // PostgreSQL: negative years are BC, year 0 does not exist.
    let year = if year < 0 {
        year + 1
    } else if year == 0 {
        return Err(bad());
    } else {
        year
    };
    let (m, d) = (
        u32::try_from(m).map_err(|_| bad())?,
        u32::try_from(d).map_err(|_| bad())?,
    );
    NaiveDate::from_ymd_opt(year, m, d)
        .map(Date)
        .ok_or_else(bad)
}

fn make_time(h: i64, m: i64, s: f64) -> Result<NaiveTime> {
    let bad = || {
        ExprError::invalid_param(
            "time",
            format!("time field value out of range: {h}:{m}:{s}"),
        )
    };
    let usecs = (s * 1e6).round();
    if !(0.0..60e6).contains(&usecs) {
        return Err(bad());
    }
    let whole = (usecs / 1e6).trunc();
    let (h, m) = (
        u32::try_from(h).map_err(|_| bad())?,
        u32::try_from(m).map_err(|_| bad())?,
    );
    NaiveTime::from_hms_micro_opt(h, m, whole as u32, (usecs - whole * 1e6) as u32).ok_or_else(bad)
}
