//! The expression interface the binder, planner and batch engine use: `ExprNode` data, `build_func`, casts,
//! `eval` and aggregate states, by the names of `epochlab_common::expr_node` and `epochlab-expr`
//! (interfaces.md). Until the `expr` branch lands this is a small stand-in over the engine's present types
//! (booleans, integers, varchar); switching to the real crate is this one module.

use std::cmp::Ordering;

use epochlab_common::{DataType, Datum, Op, OwnedRow, ScalarImpl};

/// An expression over a row (`epochlab_common::expr_node::ExprNode`).
#[derive(Clone, Debug, PartialEq)]
pub enum ExprNode {
    InputRef {
        index: usize,
        ty: DataType,
    },
    Literal {
        value: Datum,
        ty: DataType,
    },
    Call {
        func: ExprType,
        args: Vec<ExprNode>,
        ret: DataType,
    },
}

impl ExprNode {
    pub fn return_type(&self) -> DataType {
        match self {
            ExprNode::InputRef { ty, .. } | ExprNode::Literal { ty, .. } => *ty,
            ExprNode::Call { ret, .. } => *ret,
        }
    }

    /// Every input column the expression reads.
    pub fn input_refs(&self, out: &mut Vec<usize>) {
        match self {
            ExprNode::InputRef { index, .. } => out.push(*index),
            ExprNode::Literal { .. } => {}
            ExprNode::Call { args, .. } => args.iter().for_each(|a| a.input_refs(out)),
        }
    }

    /// The same expression with each input column moved through `map`.
    pub fn shift(&self, map: &dyn Fn(usize) -> usize) -> ExprNode {
        match self {
            ExprNode::InputRef { index, ty } => ExprNode::InputRef {
                index: map(*index),
                ty: *ty,
            },
            ExprNode::Literal { .. } => self.clone(),
            ExprNode::Call { func, args, ret } => ExprNode::Call {
                func: *func,
                args: args.iter().map(|a| a.shift(map)).collect(),
                ret: *ret,
            },
        }
    }
}

/// A function (RisingWave's `ExprType` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExprType {
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulus,
    Neg,
    Equal,
    NotEqual,
    LessThan,
    LessThanOrEqual,
    GreaterThan,
    GreaterThanOrEqual,
    IsDistinctFrom,
    IsNotDistinctFrom,
    And,
    Or,
    Not,
    IsNull,
    IsNotNull,
    IsTrue,
    IsNotTrue,
    IsFalse,
    IsNotFalse,
    Case,
    Coalesce,
    Cast,
    ConcatOp,
    Lower,
    Upper,
    Length,
    Abs,
    Greatest,
    Least,
}

impl ExprType {
    /// The function a lower-case SQL name calls.
    pub fn from_function_name(name: &str) -> Option<ExprType> {
        Some(match name {
            "lower" => ExprType::Lower,
            "upper" => ExprType::Upper,
            "length" | "char_length" => ExprType::Length,
            "abs" => ExprType::Abs,
            "coalesce" => ExprType::Coalesce,
            "greatest" => ExprType::Greatest,
            "least" => ExprType::Least,
            _ => return None,
        })
    }
}

/// An aggregate function (RisingWave's `AggKind` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggKind {
    Count,
    Sum,
    Sum0,
    Min,
    Max,
    BoolAnd,
    BoolOr,
}

impl AggKind {
    pub fn from_function_name(name: &str) -> Option<AggKind> {
        Some(match name {
            "count" => AggKind::Count,
            "sum" => AggKind::Sum,
            "min" => AggKind::Min,
            "max" => AggKind::Max,
            "bool_and" => AggKind::BoolAnd,
            "bool_or" => AggKind::BoolOr,
            _ => return None,
        })
    }
}

/// Sort direction of one key: descending, NULLs first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderType {
    pub desc: bool,
    pub nulls_first: bool,
}

/// One aggregate call over its input's columns (`count(*)` has no args).
#[derive(Clone, Debug, PartialEq)]
pub struct AggCall {
    pub kind: AggKind,
    pub args: Vec<usize>,
    pub arg_types: Vec<DataType>,
    pub ret: DataType,
    pub distinct: bool,
    pub order_by: Vec<(usize, OrderType)>,
    pub filter: Option<ExprNode>,
}

/// An evaluation error (RisingWave's wording).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExprError {
    #[error("Numeric out of range")]
    NumericOutOfRange,
    #[error("Division by zero")]
    DivisionByZero,
    #[error("Parse error: {0}")]
    Parse(String),
    #[error("function {0} does not exist")]
    NoFunction(String),
    #[error("cannot cast type \"{from}\" to \"{to}\"")]
    Cast { from: String, to: String },
}

pub mod cast {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum CastContext {
        Implicit,
        Assign,
        Explicit,
    }

    fn is_int(t: &DataType) -> bool {
        matches!(t, DataType::Int16 | DataType::Int32 | DataType::Int64)
    }

    fn rank(t: &DataType) -> u8 {
        match t {
            DataType::Int16 => 1,
            DataType::Int32 => 2,
            DataType::Int64 => 3,
            _ => 0,
        }
    }

    pub fn cast_ok(from: &DataType, to: &DataType, ctx: CastContext) -> bool {
        if from == to {
            return true;
        }
        match ctx {
            CastContext::Implicit => is_int(from) && is_int(to) && rank(from) < rank(to),
            CastContext::Assign => (is_int(from) && is_int(to)) || *to == DataType::Varchar,
            CastContext::Explicit => true,
        }
    }

    pub fn build_cast(e: ExprNode, to: DataType, ctx: CastContext) -> Result<ExprNode, ExprError> {
        let from = e.return_type();
        if from == to {
            return Ok(e);
        }
        if !cast_ok(&from, &to, ctx) {
            return Err(ExprError::Cast {
                from: type_name(&from).into(),
                to: type_name(&to).into(),
            });
        }
        if let ExprNode::Literal { value, .. } = &e {
            return Ok(ExprNode::Literal {
                value: cast_datum(value.clone(), &to)?,
                ty: to,
            });
        }
        Ok(ExprNode::Call {
            func: ExprType::Cast,
            args: vec![e],
            ret: to,
        })
    }

    pub fn least_restrictive(a: &DataType, b: &DataType) -> Option<DataType> {
        if a == b {
            return Some(*a);
        }
        if is_int(a) && is_int(b) {
            return Some(if rank(a) > rank(b) { *a } else { *b });
        }
        None
    }

    /// One type for all of `exprs`, each cast to it.
    pub fn align_types(exprs: &mut [ExprNode]) -> Result<DataType, ExprError> {
        let mut ty: Option<DataType> = None;
        for e in exprs.iter() {
            let t = e.return_type();
            ty = Some(match ty {
                None => t,
                Some(prev) => least_restrictive(&prev, &t).ok_or_else(|| ExprError::Cast {
                    from: type_name(&t).into(),
                    to: type_name(&prev).into(),
                })?,
            });
        }
        let ty = ty.unwrap_or(DataType::Varchar);
        for e in exprs.iter_mut() {
            *e = build_cast(e.clone(), ty, CastContext::Implicit)?;
        }
        Ok(ty)
    }

    /// A value cast to `to`.
    pub fn cast_datum(v: Datum, to: &DataType) -> Result<Datum, ExprError> {
        let Some(v) = v else { return Ok(None) };
        let out = match (to, &v) {
            (DataType::Varchar, ScalarImpl::Utf8(_)) => v,
            (DataType::Varchar, ScalarImpl::Bool(b)) => {
                ScalarImpl::Utf8(if *b { "true" } else { "false" }.into())
            }
            (DataType::Varchar, other) => ScalarImpl::Utf8(other.to_string().into()),
            (DataType::Boolean, ScalarImpl::Bool(_)) => v,
            (DataType::Boolean, ScalarImpl::Utf8(s)) => {
                match s.trim().to_ascii_lowercase().as_str() {
                    "t" | "true" | "on" | "yes" | "y" | "1" => ScalarImpl::Bool(true),
                    "f" | "false" | "off" | "no" | "n" | "0" => ScalarImpl::Bool(false),
                    _ => return Err(ExprError::Parse(format!("invalid bool {s}"))),
                }
            }
            (DataType::Boolean, other) => ScalarImpl::Bool(int_value(other).unwrap_or(0) != 0),
            (DataType::Int16 | DataType::Int32 | DataType::Int64, _) => {
                let n = match &v {
                    ScalarImpl::Utf8(s) => s.trim().parse::<i64>().map_err(|_| {
                        ExprError::Parse(format!("invalid digit found in string: {s}"))
                    })?,
                    ScalarImpl::Bool(b) => i64::from(*b),
                    other => int_value(other).unwrap_or(0),
                };
                int_of(n, to)?
            }
        };
        Ok(Some(out))
    }
}

/// An integer value of any width.
pub fn int_value(s: &ScalarImpl) -> Option<i64> {
    match s {
        ScalarImpl::Int16(v) => Some(i64::from(*v)),
        ScalarImpl::Int32(v) => Some(i64::from(*v)),
        ScalarImpl::Int64(v) => Some(*v),
        _ => None,
    }
}

/// An integer of type `ty`, range-checked.
fn int_of(n: i64, ty: &DataType) -> Result<ScalarImpl, ExprError> {
    Ok(match ty {
        DataType::Int16 => {
            ScalarImpl::Int16(i16::try_from(n).map_err(|_| ExprError::NumericOutOfRange)?)
        }
        DataType::Int32 => {
            ScalarImpl::Int32(i32::try_from(n).map_err(|_| ExprError::NumericOutOfRange)?)
        }
        _ => ScalarImpl::Int64(n),
    })
}

/// A SQL type's name.
pub fn type_name(ty: &DataType) -> &'static str {
    match ty {
        DataType::Boolean => "boolean",
        DataType::Int16 => "smallint",
        DataType::Int32 => "integer",
        DataType::Int64 => "bigint",
        DataType::Varchar => "character varying",
    }
}

pub mod sig {
    use super::cast::{CastContext, align_types, build_cast};
    use super::*;

    fn no_function(func: ExprType, args: &[ExprNode]) -> ExprError {
        let types: Vec<&str> = args.iter().map(|a| type_name(&a.return_type())).collect();
        ExprError::NoFunction(format!("{func:?}({})", types.join(", ")))
    }

    /// The call of `func` on `args`: the overload picked, implicit casts inserted, the return type set.
    pub fn build_func(func: ExprType, mut args: Vec<ExprNode>) -> Result<ExprNode, ExprError> {
        use ExprType as F;
        let ret = match func {
            F::Add
            | F::Subtract
            | F::Multiply
            | F::Divide
            | F::Modulus
            | F::Greatest
            | F::Least => {
                let ty = align_types(&mut args).map_err(|_| no_function(func, &args))?;
                let numeric = matches!(ty, DataType::Int16 | DataType::Int32 | DataType::Int64);
                if !numeric && !matches!(func, F::Greatest | F::Least) {
                    return Err(no_function(func, &args));
                }
                ty
            }
            F::Neg | F::Abs => args[0].return_type(),
            F::Equal
            | F::NotEqual
            | F::LessThan
            | F::LessThanOrEqual
            | F::GreaterThan
            | F::GreaterThanOrEqual
            | F::IsDistinctFrom
            | F::IsNotDistinctFrom => {
                align_types(&mut args).map_err(|_| no_function(func, &args))?;
                DataType::Boolean
            }
            F::And | F::Or | F::Not | F::IsTrue | F::IsNotTrue | F::IsFalse | F::IsNotFalse => {
                for a in args.iter_mut() {
                    *a = build_cast(a.clone(), DataType::Boolean, CastContext::Implicit)
                        .map_err(|_| ExprError::NoFunction(format!("{func:?}")))?;
                }
                DataType::Boolean
            }
            F::IsNull | F::IsNotNull => DataType::Boolean,
            F::Coalesce => align_types(&mut args)?,
            F::Case => {
                // args: when1, then1, ..., [else]; the results aligned.
                let n = args.len();
                let mut results: Vec<ExprNode> = args
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i % 2 == 1 || (n % 2 == 1 && *i == n - 1))
                    .map(|(_, e)| e.clone())
                    .collect();
                let ty = align_types(&mut results)?;
                let mut it = results.into_iter();
                for (i, a) in args.iter_mut().enumerate() {
                    if i % 2 == 1 || (n % 2 == 1 && i == n - 1) {
                        *a = it.next().expect("aligned result");
                    }
                }
                ty
            }
            F::Cast => args[0].return_type(),
            F::ConcatOp | F::Lower | F::Upper => {
                for a in args.iter_mut() {
                    *a = build_cast(a.clone(), DataType::Varchar, CastContext::Explicit)?;
                }
                DataType::Varchar
            }
            F::Length => DataType::Int32,
        };
        Ok(ExprNode::Call { func, args, ret })
    }
}

fn truth(d: &Datum) -> Option<bool> {
    match d {
        Some(ScalarImpl::Bool(b)) => Some(*b),
        _ => None,
    }
}

/// The order of two non-NULL values of one type.
pub fn cmp_scalar(a: &ScalarImpl, b: &ScalarImpl) -> Ordering {
    match (a, b) {
        (ScalarImpl::Utf8(x), ScalarImpl::Utf8(y)) => x.cmp(y),
        (ScalarImpl::Bool(x), ScalarImpl::Bool(y)) => x.cmp(y),
        _ => int_value(a).unwrap_or(0).cmp(&int_value(b).unwrap_or(0)),
    }
}

/// Evaluate `expr` on `row`.
pub fn eval(expr: &ExprNode, row: &OwnedRow) -> Result<Datum, ExprError> {
    match expr {
        ExprNode::InputRef { index, .. } => Ok(row.datum_at(*index).clone()),
        ExprNode::Literal { value, .. } => Ok(value.clone()),
        ExprNode::Call { func, args, ret } => eval_call(*func, args, ret, row),
    }
}

fn eval_call(
    func: ExprType,
    args: &[ExprNode],
    ret: &DataType,
    row: &OwnedRow,
) -> Result<Datum, ExprError> {
    use ExprType as F;
    match func {
        F::And | F::Or => {
            let (l, r) = (truth(&eval(&args[0], row)?), truth(&eval(&args[1], row)?));
            let and = func == F::And;
            return Ok(match (l, r) {
                (Some(x), _) | (_, Some(x)) if x != and => Some(ScalarImpl::Bool(x)),
                (Some(_), Some(_)) => Some(ScalarImpl::Bool(and)),
                _ => None,
            });
        }
        F::Case => {
            let n = args.len();
            let mut i = 0;
            while i + 1 < n {
                if truth(&eval(&args[i], row)?) == Some(true) {
                    return eval(&args[i + 1], row);
                }
                i += 2;
            }
            return if n % 2 == 1 {
                eval(&args[n - 1], row)
            } else {
                Ok(None)
            };
        }
        F::Coalesce => {
            for a in args {
                let v = eval(a, row)?;
                if v.is_some() {
                    return Ok(v);
                }
            }
            return Ok(None);
        }
        _ => {}
    }
    let vals: Vec<Datum> = args
        .iter()
        .map(|a| eval(a, row))
        .collect::<Result<_, _>>()?;
    let b = |x: bool| Ok(Some(ScalarImpl::Bool(x)));
    match func {
        F::IsNull => return b(vals[0].is_none()),
        F::IsNotNull => return b(vals[0].is_some()),
        F::IsTrue => return b(truth(&vals[0]) == Some(true)),
        F::IsNotTrue => return b(truth(&vals[0]) != Some(true)),
        F::IsFalse => return b(truth(&vals[0]) == Some(false)),
        F::IsNotFalse => return b(truth(&vals[0]) != Some(false)),
        F::IsDistinctFrom | F::IsNotDistinctFrom => {
            let same = match (&vals[0], &vals[1]) {
                (None, None) => true,
                (Some(x), Some(y)) => cmp_scalar(x, y) == Ordering::Equal,
                _ => false,
            };
            return b(same == (func == F::IsNotDistinctFrom));
        }
        F::Greatest | F::Least => {
            let mut best: Option<ScalarImpl> = None;
            for v in vals.into_iter().flatten() {
                let better = best.as_ref().is_none_or(|x| {
                    let o = cmp_scalar(&v, x);
                    if func == F::Greatest {
                        o == Ordering::Greater
                    } else {
                        o == Ordering::Less
                    }
                });
                if better {
                    best = Some(v);
                }
            }
            return Ok(best);
        }
        F::Cast => return cast::cast_datum(vals[0].clone(), ret),
        _ => {}
    }
    if vals.iter().any(Option::is_none) {
        return Ok(None);
    }
    let v: Vec<ScalarImpl> = vals.into_iter().map(|d| d.expect("checked")).collect();
    let int = |i: usize| int_value(&v[i]).unwrap_or(0);
    let out = match func {
        F::Equal => ScalarImpl::Bool(cmp_scalar(&v[0], &v[1]) == Ordering::Equal),
        F::NotEqual => ScalarImpl::Bool(cmp_scalar(&v[0], &v[1]) != Ordering::Equal),
        F::LessThan => ScalarImpl::Bool(cmp_scalar(&v[0], &v[1]) == Ordering::Less),
        F::LessThanOrEqual => ScalarImpl::Bool(cmp_scalar(&v[0], &v[1]) != Ordering::Greater),
        F::GreaterThan => ScalarImpl::Bool(cmp_scalar(&v[0], &v[1]) == Ordering::Greater),
        F::GreaterThanOrEqual => ScalarImpl::Bool(cmp_scalar(&v[0], &v[1]) != Ordering::Less),
        F::Not => ScalarImpl::Bool(!v[0].as_bool().unwrap_or(false)),
        F::Add | F::Subtract | F::Multiply | F::Divide | F::Modulus => {
            let (x, y) = (int(0), int(1));
            let r = match func {
                F::Add => x.checked_add(y),
                F::Subtract => x.checked_sub(y),
                F::Multiply => x.checked_mul(y),
                _ if y == 0 => return Err(ExprError::DivisionByZero),
                F::Divide => x.checked_div(y),
                _ => x.checked_rem(y),
            };
            int_of(r.ok_or(ExprError::NumericOutOfRange)?, ret)?
        }
        F::Neg => int_of(
            int(0).checked_neg().ok_or(ExprError::NumericOutOfRange)?,
            ret,
        )?,
        F::Abs => int_of(
            int(0).checked_abs().ok_or(ExprError::NumericOutOfRange)?,
            ret,
        )?,
        F::ConcatOp => ScalarImpl::Utf8(format!("{}{}", text(&v[0]), text(&v[1])).into()),
        F::Lower => ScalarImpl::Utf8(text(&v[0]).to_lowercase().into()),
        F::Upper => ScalarImpl::Utf8(text(&v[0]).to_uppercase().into()),
        F::Length => ScalarImpl::Int32(text(&v[0]).chars().count() as i32),
        _ => unreachable!("handled above: {func:?}"),
    };
    Ok(Some(out))
}

fn text(s: &ScalarImpl) -> String {
    match s {
        ScalarImpl::Utf8(t) => t.to_string(),
        other => other.to_string(),
    }
}

/// `eval`, NULL on an error (RisingWave's non-strict mode).
pub fn eval_non_strict(
    expr: &ExprNode,
    row: &OwnedRow,
    on_error: &mut dyn FnMut(ExprError),
) -> Datum {
    eval(expr, row).unwrap_or_else(|e| {
        on_error(e);
        None
    })
}

pub mod agg {
    use super::*;

    pub fn infer_return_type(kind: AggKind, args: &[DataType]) -> Result<DataType, ExprError> {
        Ok(match kind {
            AggKind::Count | AggKind::Sum0 => DataType::Int64,
            AggKind::Sum => match args.first() {
                Some(DataType::Int16 | DataType::Int32 | DataType::Int64) => DataType::Int64,
                other => return Err(ExprError::NoFunction(format!("sum({other:?})"))),
            },
            AggKind::Min | AggKind::Max => *args.first().unwrap_or(&DataType::Int64),
            AggKind::BoolAnd | AggKind::BoolOr => DataType::Boolean,
        })
    }

    /// The state of one aggregate call over the rows applied to it.
    pub struct AggState {
        call: AggCall,
        count: i64,
        sum: i64,
        values: Vec<ScalarImpl>,
    }

    impl AggState {
        pub fn new(call: &AggCall) -> Self {
            Self {
                call: call.clone(),
                count: 0,
                sum: 0,
                values: Vec::new(),
            }
        }

        pub fn apply(&mut self, op: Op, row: &OwnedRow) -> Result<(), ExprError> {
            if let Some(f) = &self.call.filter
                && truth(&eval(f, row)?) != Some(true)
            {
                return Ok(());
            }
            let sign = match op {
                Op::Insert | Op::UpdateInsert => 1,
                Op::Delete | Op::UpdateDelete => -1,
            };
            let arg = match self.call.args.first() {
                None => {
                    self.count += sign;
                    return Ok(());
                }
                Some(&i) => row.datum_at(i).clone(),
            };
            let Some(v) = arg else { return Ok(()) };
            if self.call.distinct
                && sign > 0
                && self
                    .values
                    .iter()
                    .any(|x| cmp_scalar(x, &v) == Ordering::Equal)
            {
                return Ok(());
            }
            self.count += sign;
            self.sum = self
                .sum
                .checked_add(sign * int_value(&v).unwrap_or(0))
                .ok_or(ExprError::NumericOutOfRange)?;
            if sign > 0 {
                self.values.push(v);
            } else if let Some(p) = self
                .values
                .iter()
                .position(|x| cmp_scalar(x, &v) == Ordering::Equal)
            {
                self.values.remove(p);
            }
            Ok(())
        }

        pub fn output(&self) -> Datum {
            let pick = |want: Ordering| {
                self.values
                    .iter()
                    .fold(None::<&ScalarImpl>, |best, v| match best {
                        Some(b) if cmp_scalar(v, b) != want => Some(b),
                        _ => Some(v),
                    })
                    .cloned()
            };
            match self.call.kind {
                AggKind::Count => Some(ScalarImpl::Int64(self.count)),
                AggKind::Sum0 => Some(ScalarImpl::Int64(self.sum)),
                AggKind::Sum => (self.count > 0).then_some(ScalarImpl::Int64(self.sum)),
                AggKind::Min => pick(Ordering::Less),
                AggKind::Max => pick(Ordering::Greater),
                AggKind::BoolAnd | AggKind::BoolOr => {
                    let want = self.call.kind == AggKind::BoolOr;
                    (self.count > 0).then(|| {
                        let any = self.values.iter().any(|v| v.as_bool() == Some(want));
                        ScalarImpl::Bool(if any { want } else { !want })
                    })
                }
            }
        }
    }
}

/// A datum as RisingWave's text format prints it (`t`/`f`, numbers, text; NULL as `NULL`).
pub fn to_text(d: &Datum) -> String {
    crate::expr::format_datum(d)
}

/// The order of two datums (NULLs largest, as PostgreSQL's).
pub fn cmp_datum(a: &Datum, b: &Datum) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => cmp_scalar(x, y),
    }
}

/// A value parsed from text as a value of `ty` (an unknown-typed literal).
pub fn from_text(s: &str, ty: &DataType) -> Result<Datum, ExprError> {
    cast::cast_datum(Some(ScalarImpl::Utf8(s.into())), ty)
}
