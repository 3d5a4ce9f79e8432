//! Set-returning functions: `generate_series` (stop included) and `range` (stop excluded) over integers,
//! decimals and timestamps (with an interval step), and `unnest` of an array.

use epochlab_common::expr_node::{ExprNode, TableFunctionType};
use epochlab_common::types::{Decimal, Interval, StructType, StructValue, Timestamp, Timestamptz};
use epochlab_common::{DataType, Datum, ScalarImpl};

use crate::error::{ExprError, Result};
use crate::scalar::{datetime, decimal as dec};
use crate::sig::table::Sig;
use crate::sig::type_name;

/// The most rows one call may produce; a series longer than this is an error rather than a hang.
pub const MAX_ROWS: usize = 10_000_000;

/// Type the arguments of `f` (implicit casts, untyped literals read as the overload wants) and give the
/// type of its rows.
pub fn build(f: TableFunctionType, args: Vec<ExprNode>) -> Result<(Vec<ExprNode>, DataType)> {
    use DataType as T;
    let name = format!("{f:?}").to_lowercase();
    if matches!(
        f,
        TableFunctionType::Unnest | TableFunctionType::PgExpandArray
    ) {
        let ty = args.iter().map(ExprNode::return_type).collect::<Vec<_>>();
        return return_type(f, &ty).map(|t| (args, t));
    }
    if f == TableFunctionType::RegexpMatches {
        let sigs = [2, 3].map(|n| Sig {
            params: vec![T::Varchar; n],
            ret: T::List(Box::new(T::Varchar)),
        });
        return crate::sig::resolve_with("regexp_matches", &sigs, args);
    }
    let mut sigs = Vec::new();
    for t in [T::Int32, T::Int64, T::Decimal] {
        sigs.push(Sig {
            params: vec![t.clone(), t.clone()],
            ret: t.clone(),
        });
        sigs.push(Sig {
            params: vec![t.clone(), t.clone(), t.clone()],
            ret: t,
        });
    }
    for t in [T::Timestamp, T::Timestamptz] {
        sigs.push(Sig {
            params: vec![t.clone(), t.clone(), T::Interval],
            ret: t,
        });
    }
    crate::sig::resolve_with(&name, &sigs, args)
}

/// The type of the rows `f` returns over arguments of `args`.
pub fn return_type(f: TableFunctionType, args: &[DataType]) -> Result<DataType> {
    use DataType as T;
    use TableFunctionType::*;
    let bad = || ExprError::NoSuchOverload {
        func: format!("{f:?}").to_lowercase(),
        args: args.iter().map(type_name).collect::<Vec<_>>().join(", "),
    };
    match (f, args) {
        (GenerateSeries | Range, [a, b] | [a, b, _]) if a != b => Err(bad()),
        (GenerateSeries | Range, [t @ (T::Int32 | T::Int64 | T::Decimal), _]) => Ok(t.clone()),
        (GenerateSeries | Range, [t @ (T::Int32 | T::Int64 | T::Decimal), _, s]) if s == t => {
            Ok(t.clone())
        }
        (GenerateSeries | Range, [t @ (T::Timestamp | T::Timestamptz), _, T::Interval]) => {
            Ok(t.clone())
        }
        (Unnest, [T::List(t)]) => Ok(innermost(t).clone()),
        (RegexpMatches, [T::Varchar, T::Varchar] | [T::Varchar, T::Varchar, T::Varchar]) => {
            Ok(T::List(Box::new(T::Varchar)))
        }
        (PgExpandArray, [T::List(t)]) => Ok(T::Struct(StructType::new(vec![
            ("x".to_string(), (**t).clone()),
            ("n".to_string(), T::Int32),
        ]))),
        _ => Err(bad()),
    }
}

/// `unnest` flattens nested arrays all the way down.
fn innermost(t: &DataType) -> &DataType {
    match t {
        DataType::List(inner) => innermost(inner),
        other => other,
    }
}

/// One select-list item of a `ProjectSet` over one input row: a plain value, or a table function's rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProjectSetValue {
    One(Datum),
    Set(Vec<Datum>),
}

/// The rows a `ProjectSet` gives for one input row (RisingWave's `ProjectSetExecutor`): as many as the
/// longest table function's (none when every one is empty), each the `Int64` `projected_row_id` (0, 1, ..)
/// then the items: a plain value repeated, a shorter table function NULL past its end.
pub fn project_set_rows(values: &[ProjectSetValue]) -> Vec<Vec<Datum>> {
    let n = values
        .iter()
        .map(|v| match v {
            ProjectSetValue::Set(s) => s.len(),
            ProjectSetValue::One(_) => 0,
        })
        .max()
        .unwrap_or(0);
    (0..n)
        .map(|k| {
            let mut row = Vec::with_capacity(values.len() + 1);
            row.push(Some(ScalarImpl::Int64(k as i64)));
            row.extend(values.iter().map(|v| match v {
                ProjectSetValue::One(d) => d.clone(),
                ProjectSetValue::Set(s) => s.get(k).cloned().flatten(),
            }));
            row
        })
        .collect()
}

/// The rows of `f`; NULL arguments give no rows.
pub fn eval(f: TableFunctionType, args: &[Datum]) -> Result<Vec<Datum>> {
    if args.iter().any(Option::is_none) {
        return Ok(Vec::new());
    }
    let args: Vec<&ScalarImpl> = args.iter().flatten().collect();
    match f {
        TableFunctionType::Unnest => match args[..] {
            [ScalarImpl::List(l)] => {
                let mut out = Vec::new();
                flatten(l.values(), &mut out);
                Ok(out)
            }
            _ => Err(ExprError::UnsupportedFunction("unnest".into())),
        },
        TableFunctionType::PgExpandArray => match args[..] {
            [ScalarImpl::List(l)] => Ok(l
                .values()
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let n = Some(ScalarImpl::Int32(i as i32 + 1));
                    Some(ScalarImpl::Struct(StructValue::new(vec![v.clone(), n])))
                })
                .collect()),
            _ => Err(ExprError::UnsupportedFunction("_pg_expandarray".into())),
        },
        TableFunctionType::RegexpMatches => match args[..] {
            [ScalarImpl::Utf8(s), ScalarImpl::Utf8(p)] => {
                crate::scalar::string::regexp_matches(s, p, None)
            }
            [
                ScalarImpl::Utf8(s),
                ScalarImpl::Utf8(p),
                ScalarImpl::Utf8(f),
            ] => crate::scalar::string::regexp_matches(s, p, Some(f)),
            _ => Err(ExprError::UnsupportedFunction("regexp_matches".into())),
        },
        _ => series(f == TableFunctionType::GenerateSeries, &args),
    }
}

fn flatten(values: &[Datum], out: &mut Vec<Datum>) {
    for v in values {
        match v {
            Some(ScalarImpl::List(inner)) => flatten(inner.values(), out),
            other => out.push(other.clone()),
        }
    }
}

fn step_zero() -> ExprError {
    ExprError::invalid_param("step", "step size cannot equal zero")
}

fn series(inclusive: bool, args: &[&ScalarImpl]) -> Result<Vec<Datum>> {
    use ScalarImpl as S;
    match args {
        [S::Int32(a), S::Int32(b)] => {
            ints(*a as i64, *b as i64, 1, inclusive, |i| S::Int32(i as i32))
        }
        [S::Int32(a), S::Int32(b), S::Int32(s)] => {
            ints(*a as i64, *b as i64, *s as i64, inclusive, |i| {
                S::Int32(i as i32)
            })
        }
        [S::Int64(a), S::Int64(b)] => ints(*a, *b, 1, inclusive, S::Int64),
        [S::Int64(a), S::Int64(b), S::Int64(s)] => ints(*a, *b, *s, inclusive, S::Int64),
        [S::Decimal(a), S::Decimal(b)] => decimals(*a, *b, Decimal::from(1i64), inclusive),
        [S::Decimal(a), S::Decimal(b), S::Decimal(s)] => decimals(*a, *b, *s, inclusive),
        [S::Timestamp(a), S::Timestamp(b), S::Interval(s)] => {
            timestamps(a.0, b.0, *s, inclusive, |t| S::Timestamp(Timestamp(t)))
        }
        [S::Timestamptz(a), S::Timestamptz(b), S::Interval(s)] => {
            let (a, b) = (utc(a)?, utc(b)?);
            timestamps(a, b, *s, inclusive, |t| {
                S::Timestamptz(Timestamptz::from_micros(t.and_utc().timestamp_micros()))
            })
        }
        _ => Err(ExprError::UnsupportedFunction(
            "generate_series over these types".into(),
        )),
    }
}

fn utc(t: &Timestamptz) -> Result<chrono::NaiveDateTime> {
    t.to_utc().ok_or(ExprError::NumericOutOfRange)
}

fn too_many() -> ExprError {
    ExprError::invalid_param("generate_series", format!("more than {MAX_ROWS} rows"))
}

/// Whether `cur` has not yet passed `stop` in the direction of the step.
fn before<T: PartialOrd>(cur: &T, stop: &T, ascending: bool, inclusive: bool) -> bool {
    match (ascending, inclusive) {
        (true, true) => cur <= stop,
        (true, false) => cur < stop,
        (false, true) => cur >= stop,
        (false, false) => cur > stop,
    }
}

fn ints(
    start: i64,
    stop: i64,
    step: i64,
    inclusive: bool,
    wrap: impl Fn(i64) -> ScalarImpl,
) -> Result<Vec<Datum>> {
    if step == 0 {
        return Err(step_zero());
    }
    let mut out = Vec::new();
    let mut cur = start;
    while before(&cur, &stop, step > 0, inclusive) {
        if out.len() >= MAX_ROWS {
            return Err(too_many());
        }
        out.push(Some(wrap(cur)));
        let Some(next) = cur.checked_add(step) else {
            break;
        };
        cur = next;
    }
    Ok(out)
}

/// A decimal bound or step of a series is finite, or RisingWave's error naming it.
fn finite(name: &'static str, d: &Decimal) -> Result<()> {
    match d {
        Decimal::Normalized(_) => Ok(()),
        Decimal::NaN => Err(ExprError::invalid_param(
            name,
            format!("{name} value cannot be NaN"),
        )),
        _ => Err(ExprError::invalid_param(
            name,
            format!("{name} value cannot be infinity"),
        )),
    }
}

fn decimals(start: Decimal, stop: Decimal, step: Decimal, inclusive: bool) -> Result<Vec<Datum>> {
    for (name, d) in [("start", &start), ("stop", &stop), ("step", &step)] {
        finite(name, d)?;
    }
    let zero = Decimal::from(0i64);
    if step == zero {
        return Err(step_zero());
    }
    let mut out = Vec::new();
    let mut cur = start;
    while before(&cur, &stop, step > zero, inclusive) {
        if out.len() >= MAX_ROWS {
            return Err(too_many());
        }
        out.push(Some(ScalarImpl::Decimal(cur)));
        cur = dec::add(cur, step)?;
    }
    Ok(out)
}

fn timestamps(
    start: chrono::NaiveDateTime,
    stop: chrono::NaiveDateTime,
    step: Interval,
    inclusive: bool,
    wrap: impl Fn(chrono::NaiveDateTime) -> ScalarImpl,
) -> Result<Vec<Datum>> {
    if step.total_usecs() == 0 {
        return Err(step_zero());
    }
    let mut out = Vec::new();
    let mut cur = start;
    while before(&cur, &stop, step.total_usecs() > 0, inclusive) {
        if out.len() >= MAX_ROWS {
            return Err(too_many());
        }
        out.push(Some(wrap(cur)));
        cur = datetime::ts_add(cur, step)?;
    }
    Ok(out)
}
