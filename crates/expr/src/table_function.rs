//! Set-returning functions: `generate_series` (stop included), `range` (stop excluded), `unnest`.

use epochlab_common::expr_node::TableFunctionType;
use epochlab_common::{DataType, Datum, ScalarImpl};

use crate::error::{ExprError, Result};
use crate::sig::type_name;

/// The type of the rows `f` returns over arguments of `args`.
pub fn return_type(f: TableFunctionType, args: &[DataType]) -> Result<DataType> {
    use TableFunctionType::*;
    match (f, args) {
        (GenerateSeries | Range, [a, b] | [a, b, _]) if a == b => Ok(a.clone()),
        _ => Err(ExprError::NoSuchOverload {
            func: format!("{f:?}").to_lowercase(),
            args: args.iter().map(type_name).collect::<Vec<_>>().join(", "),
        }),
    }
}

/// The rows of `f`; NULL arguments give no rows.
pub fn eval(f: TableFunctionType, args: &[Datum]) -> Result<Vec<Datum>> {
    use TableFunctionType::*;
    if args.iter().any(Option::is_none) {
        return Ok(Vec::new());
    }
    let args: Vec<&ScalarImpl> = args.iter().flatten().collect();
    match f {
        GenerateSeries | Range => series(f == GenerateSeries, &args),
        Unnest => Err(ExprError::UnsupportedFunction("unnest".into())),
    }
}

fn series(inclusive: bool, args: &[&ScalarImpl]) -> Result<Vec<Datum>> {
    let int = |v: &ScalarImpl| match v {
        ScalarImpl::Int16(i) => Some(i64::from(*i)),
        ScalarImpl::Int32(i) => Some(i64::from(*i)),
        ScalarImpl::Int64(i) => Some(*i),
        _ => None,
    };
    let nums: Option<Vec<i64>> = args.iter().map(|v| int(v)).collect();
    let Some(nums) = nums else {
        return Err(ExprError::UnsupportedFunction(
            "generate_series over these types".into(),
        ));
    };
    let (start, stop, step) = match nums[..] {
        [a, b] => (a, b, 1),
        [a, b, s] => (a, b, s),
        _ => {
            return Err(ExprError::UnsupportedFunction(
                "generate_series arity".into(),
            ));
        }
    };
    if step == 0 {
        return Err(ExprError::invalid_param(
            "step",
            "step size cannot equal zero",
        ));
    }
    let wrap = |i: i64| -> Datum {
        Some(match args[0] {
            ScalarImpl::Int32(_) => ScalarImpl::Int32(i as i32),
            ScalarImpl::Int16(_) => ScalarImpl::Int16(i as i16),
            _ => ScalarImpl::Int64(i),
        })
    };
    let mut out = Vec::new();
    let mut cur = start;
    let in_range = |c: i64| match (step > 0, inclusive) {
        (true, true) => c <= stop,
        (true, false) => c < stop,
        (false, true) => c >= stop,
        (false, false) => c > stop,
    };
    while in_range(cur) {
        out.push(wrap(cur));
        match cur.checked_add(step) {
            Some(n) => cur = n,
            None => break,
        }
    }
    Ok(out)
}
