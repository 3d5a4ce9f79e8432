//! Casts: which are allowed in which context (RisingWave's cast table, itself PostgreSQL's), building cast
//! calls, aligning the types of CASE/COALESCE/IN/UNION branches, and casting values.
//!
//! Implicit casts follow three chains, `int2 → int4 → int8 → numeric → float4 → float8`,
//! `date → timestamp → timestamptz` and `time → interval`; the reverse directions are assignment casts.
//! Anything casts to varchar on assignment; varchar casts to anything only explicitly.

use epochlab_common::expr_node::{ExprNode, ExprType};
use epochlab_common::types::{
    Date, Decimal, F32, F64, Interval, JsonbVal, ListValue, StructType, StructValue, Time,
    Timestamp, Timestamptz,
};
use epochlab_common::{DataType, Datum, ScalarImpl};

use crate::scalar::decimal as dec;

use crate::error::{ExprError, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CastContext {
    Implicit,
    Assign,
    Explicit,
}

impl CastContext {
    fn name(self) -> &'static str {
        match self {
            CastContext::Implicit => "Implicit",
            CastContext::Assign => "Assign",
            CastContext::Explicit => "Explicit",
        }
    }
}

/// The type families of the cast table, in the order of its columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Name {
    Boolean,
    Int16,
    Int32,
    Int64,
    Decimal,
    Float32,
    Float64,
    Date,
    Timestamp,
    Timestamptz,
    Time,
    Interval,
    Jsonb,
    Bytea,
    Varchar,
}

fn name_of(ty: &DataType) -> Option<Name> {
    Some(match ty {
        DataType::Boolean => Name::Boolean,
        DataType::Int16 => Name::Int16,
        DataType::Int32 => Name::Int32,
        DataType::Int64 => Name::Int64,
        DataType::Decimal => Name::Decimal,
        DataType::Float32 => Name::Float32,
        DataType::Float64 => Name::Float64,
        DataType::Date => Name::Date,
        DataType::Timestamp => Name::Timestamp,
        DataType::Timestamptz => Name::Timestamptz,
        DataType::Time => Name::Time,
        DataType::Interval => Name::Interval,
        DataType::Jsonb => Name::Jsonb,
        DataType::Bytea => Name::Bytea,
        DataType::Varchar => Name::Varchar,
        DataType::Serial | DataType::Struct(_) | DataType::List(_) => return None,
    })
}

/// Rows: source type; columns in `Name` order: `i` implicit, `a` assign, `e` explicit, `.` none.
const CAST_TABLE: [(Name, &str); 15] = [
    //               BsilDfFdTzTIjbv
    (Name::Boolean, "..e...........a"),
    (Name::Int16, "..iiiii.......a"),
    (Name::Int32, "ea.iiii.......a"),
    (Name::Int64, ".aa.iii.......a"),
    (Name::Decimal, ".aaa.ii.......a"),
    (Name::Float32, ".aaaa.i.......a"),
    (Name::Float64, ".aaaaa........a"),
    (Name::Date, "........ii....a"),
    (Name::Timestamp, ".......a.ia...a"),
    (Name::Timestamptz, ".......aa.a...a"),
    (Name::Time, "...........i..a"),
    (Name::Interval, "..........a...a"),
    (Name::Jsonb, "eeeeeee.......a"),
    (Name::Bytea, "..............a"),
    (Name::Varchar, "eeeeeeeeeeeeee."),
];

fn base_cast(from: Name, to: Name) -> Option<CastContext> {
    let row = CAST_TABLE.iter().find(|(n, _)| *n == from)?.1;
    match row.as_bytes().get(to as usize)? {
        b'i' => Some(CastContext::Implicit),
        b'a' => Some(CastContext::Assign),
        b'e' => Some(CastContext::Explicit),
        _ => None,
    }
}

/// Whether `from` casts to `to` in `ctx` (a cast allowed implicitly is allowed in every wider context).
pub fn cast_ok(from: &DataType, to: &DataType, ctx: CastContext) -> bool {
    if from == to {
        return true;
    }
    match (from, to) {
        (DataType::List(f), DataType::List(t)) => cast_ok(f, t, ctx),
        (DataType::Struct(f), DataType::Struct(t)) => {
            f.len() == t.len() && f.types().zip(t.types()).all(|(a, b)| cast_ok(a, b, ctx))
        }
        // Text to a composite is explicit; a composite to text is an assignment cast.
        (DataType::Varchar, DataType::List(_) | DataType::Struct(_)) => {
            ctx == CastContext::Explicit
        }
        (DataType::List(_) | DataType::Struct(_) | DataType::Serial, DataType::Varchar) => {
            ctx >= CastContext::Assign
        }
        _ => match (name_of(from), name_of(to)) {
            (Some(f), Some(t)) => base_cast(f, t).is_some_and(|c| c <= ctx),
            _ => false,
        },
    }
}

/// The type both `a` and `b` cast to implicitly, preferring the wider of the two.
pub fn least_restrictive(a: &DataType, b: &DataType) -> Option<DataType> {
    if a == b || cast_ok(b, a, CastContext::Implicit) {
        Some(a.clone())
    } else if cast_ok(a, b, CastContext::Implicit) {
        Some(b.clone())
    } else {
        None
    }
}

/// Whether `e` is a literal PostgreSQL would call "unknown": a string literal or an untyped NULL, both carried
/// as varchar literals. They take the type of their context.
pub fn is_untyped(e: &ExprNode) -> bool {
    matches!(
        e,
        ExprNode::Literal {
            ty: DataType::Varchar,
            ..
        }
    )
}

/// Whether a cast from `from` to `to` depends on a time zone (RisingWave's session-time-zone rewrite gives
/// these the session's): between `timestamptz` and text, from `date` or `timestamp` to `timestamptz`, and
/// from `timestamptz` to `date`, `time` or `timestamp`.
pub fn reads_time_zone(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    matches!(
        (from, to),
        (Timestamptz, Varchar)
            | (Varchar, Timestamptz)
            | (Date | Timestamp, Timestamptz)
            | (Timestamptz, Date | Time | Timestamp)
    )
}

/// Cast `e` to `to` if the context allows it. Literals are folded (an untyped literal is parsed now, as
/// PostgreSQL reads a quoted literal in the type its context wants).
pub fn build_cast(e: ExprNode, to: DataType, ctx: CastContext) -> Result<ExprNode> {
    let from = e.return_type();
    if from == to {
        return Ok(e);
    }
    let ctx = if is_untyped(&e) {
        CastContext::Explicit
    } else {
        ctx
    };
    if !cast_ok(&from, &to, ctx) {
        return Err(ExprError::CannotCast {
            from: crate::sig::type_name(&from),
            to: crate::sig::type_name(&to),
            ctx: ctx.name(),
        });
    }
    match e {
        // A cast that reads the session's zone stays a call for the front end to give the zone.
        ExprNode::Literal { value: Some(_), .. } if reads_time_zone(&from, &to) => {
            Ok(ExprNode::Call {
                func: ExprType::Cast,
                args: vec![e],
                ret: to,
            })
        }
        ExprNode::Literal { value, .. } => {
            let value = value.map(|v| cast_value(&v, &to)).transpose()?;
            Ok(ExprNode::Literal { value, ty: to })
        }
        e => Ok(ExprNode::Call {
            func: ExprType::Cast,
            args: vec![e],
            ret: to,
        }),
    }
}

/// Give every expression one type, as CASE branches, COALESCE/IN arguments and UNION columns need; untyped
/// literals follow the typed ones, and all-untyped means varchar.
pub fn align_types(exprs: &mut [ExprNode]) -> Result<DataType> {
    let mut ty: Option<DataType> = None;
    for e in exprs.iter().filter(|e| !is_untyped(e)) {
        let t = e.return_type();
        ty = Some(match ty {
            None => t,
            Some(cur) => least_restrictive(&cur, &t).ok_or(ExprError::CannotMatch(cur, t))?,
        });
    }
    let ty = ty.unwrap_or(DataType::Varchar);
    for e in exprs.iter_mut() {
        let taken = std::mem::replace(e, ExprNode::null(DataType::Boolean));
        *e = build_cast(taken, ty.clone(), CastContext::Implicit)?;
    }
    Ok(ty)
}

/// Cast one non-NULL value to `to` (the cast is allowed: [`build_cast`] checked it).
pub fn cast_value(v: &ScalarImpl, to: &DataType) -> Result<ScalarImpl> {
    use ScalarImpl as S;
    if value_type(v) == *to {
        return Ok(v.clone());
    }
    Ok(match (v, to) {
        (S::Utf8(s), to) => from_text(s, to)?,
        (S::Bool(b), DataType::Varchar) => S::Utf8(if *b { "true" } else { "false" }.into()),
        (v, DataType::Varchar) => S::Utf8(v.to_string().into()),
        (S::Bool(b), DataType::Int32) => S::Int32(i32::from(*b)),
        (S::Int32(i), DataType::Boolean) => S::Bool(*i != 0),
        (S::Jsonb(j), to) => jsonb_to(j, to)?,
        (S::List(l), DataType::List(elem)) => {
            S::List(ListValue::new(cast_datums(l.values(), |_| elem)?))
        }
        (S::Struct(sv), DataType::Struct(st)) => {
            let types: Vec<&DataType> = st.types().collect();
            S::Struct(StructValue::new(cast_datums(sv.fields(), |i| types[i])?))
        }
        (v, to) if is_number(v) => number_to(v, to)?,
        (v, to) => temporal_to(v, to)?,
    })
}

fn cast_datums<'a>(values: &[Datum], ty: impl Fn(usize) -> &'a DataType) -> Result<Vec<Datum>> {
    values
        .iter()
        .enumerate()
        .map(|(i, d)| d.as_ref().map(|v| cast_value(v, ty(i))).transpose())
        .collect()
}

fn is_number(v: &ScalarImpl) -> bool {
    use ScalarImpl as S;
    matches!(
        v,
        S::Int16(_) | S::Int32(_) | S::Int64(_) | S::Float32(_) | S::Float64(_) | S::Decimal(_)
    )
}

/// The name RisingWave gives an integer target in "Casting to ... out of range" (Rust's type name).
fn int_target(to: &DataType) -> &'static str {
    match to {
        DataType::Int16 => "i16",
        DataType::Int32 => "i32",
        _ => "i64",
    }
}

fn number_to(v: &ScalarImpl, to: &DataType) -> Result<ScalarImpl> {
    use ScalarImpl as S;
    let unsupported = || ExprError::UnsupportedCast(value_type(v), to.clone());
    match to {
        DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            let target = int_target(to);
            let i = match v {
                S::Int16(i) => i64::from(*i),
                S::Int32(i) => i64::from(*i),
                S::Int64(i) => *i,
                S::Float32(f) => float_to_i64(f64::from(f.0), target)?,
                S::Float64(f) => float_to_i64(f.0, target)?,
                S::Decimal(d) => dec::to_i64(*d, target)?,
                _ => return Err(unsupported()),
            };
            int_to(i, to)
        }
        DataType::Float32 => {
            let f = number_f64(v);
            let narrowed = f as f32;
            if narrowed.is_infinite() && f.is_finite() {
                return Err(ExprError::CastOutOfRange("real"));
            }
            Ok(S::Float32(F32::from(narrowed)))
        }
        DataType::Float64 => Ok(S::Float64(F64::from(number_f64(v)))),
        DataType::Decimal => Ok(S::Decimal(match v {
            S::Int16(i) => Decimal::from(i64::from(*i)),
            S::Int32(i) => Decimal::from(i64::from(*i)),
            S::Int64(i) => Decimal::from(*i),
            S::Float32(f) => dec::from_f64(f64::from(f.0))?,
            S::Float64(f) => dec::from_f64(f.0)?,
            _ => return Err(unsupported()),
        })),
        _ => Err(unsupported()),
    }
}

fn number_f64(v: &ScalarImpl) -> f64 {
    match v {
        ScalarImpl::Int16(i) => f64::from(*i),
        ScalarImpl::Int32(i) => f64::from(*i),
        ScalarImpl::Int64(i) => *i as f64,
        ScalarImpl::Float32(f) => f64::from(f.0),
        ScalarImpl::Float64(f) => f.0,
        ScalarImpl::Decimal(d) => dec::to_f64(*d),
        _ => f64::NAN,
    }
}

/// Floats round half to even on the way to integers, as RisingWave's.
fn float_to_i64(f: f64, target: &'static str) -> Result<i64> {
    let r = f.round_ties_even();
    if r.is_nan() || r < i64::MIN as f64 || r >= -(i64::MIN as f64) {
        return Err(ExprError::CastOutOfRange(target));
    }
    Ok(r as i64)
}

fn int_to(i: i64, to: &DataType) -> Result<ScalarImpl> {
    let target = int_target(to);
    Ok(match to {
        DataType::Int16 => {
            ScalarImpl::Int16(i16::try_from(i).map_err(|_| ExprError::CastOutOfRange(target))?)
        }
        DataType::Int32 => {
            ScalarImpl::Int32(i32::try_from(i).map_err(|_| ExprError::CastOutOfRange(target))?)
        }
        _ => ScalarImpl::Int64(i),
    })
}

/// Dates, timestamps and times among themselves; the session time zone is UTC.
fn temporal_to(v: &ScalarImpl, to: &DataType) -> Result<ScalarImpl> {
    use ScalarImpl as S;
    let tz_of = |t: chrono::NaiveDateTime| {
        S::Timestamptz(Timestamptz::from_micros(t.and_utc().timestamp_micros()))
    };
    let utc = |t: &Timestamptz| t.to_utc().ok_or(ExprError::NumericOutOfRange);
    Ok(match (v, to) {
        (S::Date(d), DataType::Timestamp) => {
            S::Timestamp(Timestamp(d.0.and_time(chrono::NaiveTime::MIN)))
        }
        (S::Date(d), DataType::Timestamptz) => tz_of(d.0.and_time(chrono::NaiveTime::MIN)),
        (S::Timestamp(t), DataType::Date) => S::Date(Date(t.0.date())),
        (S::Timestamp(t), DataType::Time) => S::Time(Time(t.0.time())),
        (S::Timestamp(t), DataType::Timestamptz) => tz_of(t.0),
        (S::Timestamptz(t), DataType::Date) => S::Date(Date(utc(t)?.date())),
        (S::Timestamptz(t), DataType::Time) => S::Time(Time(utc(t)?.time())),
        (S::Timestamptz(t), DataType::Timestamp) => S::Timestamp(Timestamp(utc(t)?)),
        (S::Time(t), DataType::Interval) => {
            let (secs, nanos) = t.secs_nanos();
            S::Interval(Interval::from_month_day_usec(
                0,
                0,
                i64::from(secs) * 1_000_000 + i64::from(nanos / 1000),
            ))
        }
        (S::Interval(i), DataType::Time) => {
            let day = 86_400 * 1_000_000i64;
            let us = i.usecs().rem_euclid(day);
            let time =
                Time::from_secs_nanos((us / 1_000_000) as u32, (us % 1_000_000) as u32 * 1000);
            S::Time(time.ok_or(ExprError::NumericOutOfRange)?)
        }
        (v, to) => return Err(ExprError::UnsupportedCast(value_type(v), to.clone())),
    })
}

fn jsonb_to(j: &JsonbVal, to: &DataType) -> Result<ScalarImpl> {
    let v = j.value();
    let kind = match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    };
    let bad = || {
        ExprError::parse(format!(
            "cannot cast jsonb {kind} to type {}",
            crate::sig::type_name(to)
        ))
    };
    match (v, to) {
        (serde_json::Value::Bool(b), DataType::Boolean) => Ok(ScalarImpl::Bool(*b)),
        (serde_json::Value::Number(n), to) if *to != DataType::Boolean => {
            let text = n.to_string();
            let d = from_text(&text, &DataType::Decimal)?;
            number_to(&d, to).map_err(|_| ExprError::NumericOutOfRange)
        }
        _ => Err(bad()),
    }
}

/// The type of a value (a list's element type comes from its first non-NULL element; an empty list is a
/// varchar list).
pub fn value_type(v: &ScalarImpl) -> DataType {
    use ScalarImpl as S;
    match v {
        S::Bool(_) => DataType::Boolean,
        S::Int16(_) => DataType::Int16,
        S::Int32(_) => DataType::Int32,
        S::Int64(_) => DataType::Int64,
        S::Serial(_) => DataType::Serial,
        S::Float32(_) => DataType::Float32,
        S::Float64(_) => DataType::Float64,
        S::Decimal(_) => DataType::Decimal,
        S::Date(_) => DataType::Date,
        S::Time(_) => DataType::Time,
        S::Timestamp(_) => DataType::Timestamp,
        S::Timestamptz(_) => DataType::Timestamptz,
        S::Interval(_) => DataType::Interval,
        S::Utf8(_) => DataType::Varchar,
        S::Bytea(_) => DataType::Bytea,
        S::Jsonb(_) => DataType::Jsonb,
        S::Struct(s) => DataType::Struct(StructType::new(
            s.fields()
                .iter()
                .enumerate()
                .map(|(i, f)| (format!("f{}", i + 1), datum_type(f)))
                .collect(),
        )),
        S::List(l) => DataType::List(Box::new(
            l.values()
                .iter()
                .find_map(|d| d.as_ref())
                .map_or(DataType::Varchar, value_type),
        )),
    }
}

fn datum_type(d: &Datum) -> DataType {
    d.as_ref().map_or(DataType::Varchar, value_type)
}

/// Parse text as `to`, with RisingWave's error: "Parse error: <type> <reason>".
pub fn from_text(s: &str, to: &DataType) -> Result<ScalarImpl> {
    crate::text::from_text(s, to)
}
