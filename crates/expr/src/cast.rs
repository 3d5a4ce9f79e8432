//! Casts: which are allowed in which context (RisingWave's cast table, itself PostgreSQL's), building cast
//! calls, aligning the types of CASE/COALESCE/IN/UNION branches, and casting values.
//!
//! Implicit casts follow three chains, `int2 → int4 → int8 → numeric → float4 → float8`,
//! `date → timestamp → timestamptz` and `time → interval`; the reverse directions are assignment casts.
//! Anything casts to varchar on assignment; varchar casts to anything only explicitly.

use epochlab_common::expr_node::{ExprNode, ExprType};
use epochlab_common::{DataType, ScalarImpl};

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
            CastContext::Implicit => "implicit",
            CastContext::Assign => "assign",
            CastContext::Explicit => "explicit",
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
        DataType::Varchar => Name::Varchar,
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
    match (name_of(from), name_of(to)) {
        (Some(f), Some(t)) => base_cast(f, t).is_some_and(|c| c <= ctx),
        _ => false,
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

/// Cast one non-NULL value.
pub fn cast_value(v: &ScalarImpl, to: &DataType) -> Result<ScalarImpl> {
    use ScalarImpl as S;
    Ok(match (v, to) {
        (S::Utf8(s), to) => from_text(s, to)?,
        (v, DataType::Varchar) => S::Utf8(v.to_string().into()),
        (S::Bool(b), DataType::Int32) => S::Int32(i32::from(*b)),
        (S::Int32(i), DataType::Boolean) => S::Bool(*i != 0),
        (v, to) if is_int(to) => int_to(int_of(v, to)?, to)?,
        (v, to) => return Err(ExprError::UnsupportedCast(value_type(v), to.clone())),
    })
}

fn is_int(ty: &DataType) -> bool {
    matches!(ty, DataType::Int16 | DataType::Int32 | DataType::Int64)
}

fn int_of(v: &ScalarImpl, to: &DataType) -> Result<i64> {
    match v {
        ScalarImpl::Int16(i) => Ok(i64::from(*i)),
        ScalarImpl::Int32(i) => Ok(i64::from(*i)),
        ScalarImpl::Int64(i) => Ok(*i),
        other => Err(ExprError::UnsupportedCast(value_type(other), to.clone())),
    }
}

fn int_to(i: i64, to: &DataType) -> Result<ScalarImpl> {
    Ok(match to {
        DataType::Int16 => {
            ScalarImpl::Int16(i16::try_from(i).map_err(|_| ExprError::CastOutOfRange("i16"))?)
        }
        DataType::Int32 => {
            ScalarImpl::Int32(i32::try_from(i).map_err(|_| ExprError::CastOutOfRange("i32"))?)
        }
        _ => ScalarImpl::Int64(i),
    })
}

/// The type of a value.
pub fn value_type(v: &ScalarImpl) -> DataType {
    match v {
        ScalarImpl::Bool(_) => DataType::Boolean,
        ScalarImpl::Int16(_) => DataType::Int16,
        ScalarImpl::Int32(_) => DataType::Int32,
        ScalarImpl::Int64(_) => DataType::Int64,
        ScalarImpl::Utf8(_) => DataType::Varchar,
    }
}

/// Parse text as `to`, with RisingWave's error: "Parse error: <type> <reason>".
pub fn from_text(s: &str, to: &DataType) -> Result<ScalarImpl> {
    let bad = |reason: String| ExprError::parse(format!("{} {reason}", crate::sig::type_name(to)));
    let t = s.trim();
    Ok(match to {
        DataType::Varchar => ScalarImpl::Utf8(s.into()),
        DataType::Boolean => {
            ScalarImpl::Bool(str_to_bool(t).ok_or_else(|| ExprError::parse("Invalid bool"))?)
        }
        DataType::Int16 => ScalarImpl::Int16(t.parse().map_err(|e| bad(format!("{e}")))?),
        DataType::Int32 => ScalarImpl::Int32(t.parse().map_err(|e| bad(format!("{e}")))?),
        DataType::Int64 => ScalarImpl::Int64(t.parse().map_err(|e| bad(format!("{e}")))?),
    })
}

/// PostgreSQL's boolean spellings: any prefix of true/false/yes/no, on/off, 1/0, case-insensitively.
fn str_to_bool(s: &str) -> Option<bool> {
    let l = s.to_ascii_lowercase();
    let prefix_of = |word: &str| !l.is_empty() && word.starts_with(l.as_str());
    if prefix_of("true") || prefix_of("yes") || l == "on" || l == "1" {
        Some(true)
    } else if prefix_of("false") || prefix_of("no") || l == "off" || l == "of" || l == "0" {
        Some(false)
    } else {
        None
    }
}
