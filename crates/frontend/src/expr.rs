//! Values and the simple expressions the front end evaluates itself: literals, column references, comparisons,
//! `AND`/`OR`/`NOT`, `IS [NOT] NULL`, `BETWEEN` and `IN (list)`, over a row.

use std::cmp::Ordering;

use epochlab_common::{DataType, Datum, OwnedRow, ScalarImpl};
use sqlparser::ast::{BinaryOperator, Expr as Ast, InTarget, UnaryOperator, Value};

use crate::error::SqlError;

pub use epochlab_meta::sql_catalog::Column;

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

/// An expression over a row: a predicate or a value.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Column(usize),
    Literal(Datum),
    Cmp(Cmp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    IsNull(Box<Expr>, bool),
}

impl Expr {
    /// The value of the expression on `row` (a predicate is a boolean; unknown is NULL).
    pub fn eval(&self, row: &OwnedRow) -> Datum {
        match self {
            Expr::Column(i) => row.datum_at(*i).clone(),
            Expr::Literal(d) => d.clone(),
            Expr::Cmp(op, l, r) => {
                let (l, r) = (l.eval(row), r.eval(row));
                let ord = compare(l.as_ref()?, r.as_ref()?)?;
                let b = match op {
                    Cmp::Eq => ord == Ordering::Equal,
                    Cmp::NotEq => ord != Ordering::Equal,
                    Cmp::Lt => ord == Ordering::Less,
                    Cmp::LtEq => ord != Ordering::Greater,
                    Cmp::Gt => ord == Ordering::Greater,
                    Cmp::GtEq => ord != Ordering::Less,
                };
                Some(ScalarImpl::Bool(b))
            }
            Expr::And(l, r) => match (truth(&l.eval(row)), truth(&r.eval(row))) {
                (Some(false), _) | (_, Some(false)) => Some(ScalarImpl::Bool(false)),
                (Some(true), Some(true)) => Some(ScalarImpl::Bool(true)),
                _ => None,
            },
            Expr::Or(l, r) => match (truth(&l.eval(row)), truth(&r.eval(row))) {
                (Some(true), _) | (_, Some(true)) => Some(ScalarImpl::Bool(true)),
                (Some(false), Some(false)) => Some(ScalarImpl::Bool(false)),
                _ => None,
            },
            Expr::Not(e) => truth(&e.eval(row)).map(|b| ScalarImpl::Bool(!b)),
            Expr::IsNull(e, negated) => Some(ScalarImpl::Bool(e.eval(row).is_none() != *negated)),
        }
    }

    /// Whether the predicate holds on `row` (unknown does not).
    pub fn holds(&self, row: &OwnedRow) -> bool {
        truth(&self.eval(row)) == Some(true)
    }

    /// The same expression with every column reference moved through `map`.
    pub fn remap(&self, map: &impl Fn(usize) -> usize) -> Expr {
        let b = |e: &Expr| Box::new(e.remap(map));
        match self {
            Expr::Column(i) => Expr::Column(map(*i)),
            Expr::Literal(d) => Expr::Literal(d.clone()),
            Expr::Cmp(op, l, r) => Expr::Cmp(*op, b(l), b(r)),
            Expr::And(l, r) => Expr::And(b(l), b(r)),
            Expr::Or(l, r) => Expr::Or(b(l), b(r)),
            Expr::Not(e) => Expr::Not(b(e)),
            Expr::IsNull(e, n) => Expr::IsNull(b(e), *n),
        }
    }
}

fn truth(d: &Datum) -> Option<bool> {
    match d {
        Some(ScalarImpl::Bool(b)) => Some(*b),
        _ => None,
    }
}

fn as_i64(s: &ScalarImpl) -> Option<i64> {
    match s {
        ScalarImpl::Int16(v) => Some(i64::from(*v)),
        ScalarImpl::Int32(v) => Some(i64::from(*v)),
        ScalarImpl::Int64(v) => Some(*v),
        _ => None,
    }
}

/// The order of two values of comparable types (integers of any width with each other); `None` otherwise.
pub fn compare(a: &ScalarImpl, b: &ScalarImpl) -> Option<Ordering> {
    match (a, b) {
        (ScalarImpl::Utf8(x), ScalarImpl::Utf8(y)) => Some(x.cmp(y)),
        (ScalarImpl::Bool(x), ScalarImpl::Bool(y)) => Some(x.cmp(y)),
        _ => Some(as_i64(a)?.cmp(&as_i64(b)?)),
    }
}

/// Order of two datums for `ORDER BY`: NULLs last, as PostgreSQL's ascending default.
pub fn order_datums(a: &Datum, b: &Datum) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => compare(x, y).unwrap_or(Ordering::Equal),
    }
}

/// A SQL type name as the front end knows it.
pub fn type_name(ty: &DataType) -> &'static str {
    match ty {
        DataType::Boolean => "boolean",
        DataType::Int16 => "smallint",
        DataType::Int32 => "integer",
        DataType::Int64 => "bigint",
        DataType::Varchar => "varchar",
        DataType::Serial => "serial",
        DataType::Float32 => "real",
        DataType::Float64 => "double precision",
        DataType::Decimal => "numeric",
        DataType::Date => "date",
        DataType::Time => "time without time zone",
        DataType::Timestamp => "timestamp without time zone",
        DataType::Timestamptz => "timestamp with time zone",
        DataType::Interval => "interval",
        DataType::Bytea => "bytea",
        DataType::Jsonb => "jsonb",
        DataType::Struct(_) => "struct",
        DataType::List(_) => "list",
    }
}

/// A value as the `sqllogictest` output shows it (PostgreSQL's text format): `NULL`, `t`/`f`, the number, the
/// text (an empty string as `(empty)`, as RisingWave's test client prints it).
pub fn format_datum(d: &Datum) -> String {
    match d {
        None => "NULL".into(),
        Some(ScalarImpl::Bool(b)) => if *b { "t" } else { "f" }.into(),
        Some(ScalarImpl::Int16(v)) => v.to_string(),
        Some(ScalarImpl::Int32(v)) => v.to_string(),
        Some(ScalarImpl::Int64(v)) => v.to_string(),
        Some(ScalarImpl::Utf8(s)) if s.is_empty() => "(empty)".into(),
        Some(ScalarImpl::Utf8(s)) => s.to_string(),
        Some(other) => other.to_string(),
    }
}

/// `value` as a value of type `ty` (integers checked for range, NULL kept).
pub fn cast(value: Datum, ty: DataType) -> Result<Datum, SqlError> {
    let Some(v) = value else { return Ok(None) };
    let out_of_range = || SqlError::Invalid(format!("{} out of range", type_name(&ty)));
    let mismatch = |v: &ScalarImpl| {
        SqlError::Invalid(format!(
            "cannot cast {} to {}",
            format_datum(&Some(v.clone())),
            type_name(&ty)
        ))
    };
    let out = match (&ty, &v) {
        (DataType::Varchar, ScalarImpl::Utf8(_)) => v,
        (DataType::Varchar, _) => ScalarImpl::Utf8(format_datum(&Some(v)).into()),
        (DataType::Boolean, ScalarImpl::Bool(_)) => v,
        (DataType::Boolean, ScalarImpl::Utf8(s)) => match s.to_ascii_lowercase().as_str() {
            "t" | "true" => ScalarImpl::Bool(true),
            "f" | "false" => ScalarImpl::Bool(false),
            _ => return Err(mismatch(&v)),
        },
        (DataType::Int16 | DataType::Int32 | DataType::Int64, _) => {
            let n = match &v {
                ScalarImpl::Utf8(s) => s.trim().parse::<i64>().map_err(|_| mismatch(&v))?,
                other => as_i64(other).ok_or_else(|| mismatch(&v))?,
            };
            match &ty {
                DataType::Int16 => ScalarImpl::Int16(i16::try_from(n).map_err(|_| out_of_range())?),
                DataType::Int32 => ScalarImpl::Int32(i32::try_from(n).map_err(|_| out_of_range())?),
                _ => ScalarImpl::Int64(n),
            }
        }
        _ => return Err(mismatch(&v)),
    };
    Ok(Some(out))
}

/// A literal of the SQL text: a number (an integer), a string, a boolean or NULL, possibly negated.
pub fn literal(e: &Ast) -> Result<Datum, SqlError> {
    match e {
        Ast::Value(v) => match &v.value {
            Value::Number(n, _) => n
                .parse::<i64>()
                .map(|n| Some(ScalarImpl::Int64(n)))
                .map_err(|_| SqlError::Unsupported(format!("numeric literal {n}"))),
            Value::SingleQuotedString(s) => Ok(Some(ScalarImpl::Utf8(s.as_str().into()))),
            Value::Boolean(b) => Ok(Some(ScalarImpl::Bool(*b))),
            Value::Null => Ok(None),
            other => Err(SqlError::Unsupported(format!("literal {other}"))),
        },
        Ast::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match literal(expr)? {
            Some(ScalarImpl::Int64(n)) => Ok(Some(ScalarImpl::Int64(-n))),
            _ => Err(SqlError::Unsupported(format!("expression {e}"))),
        },
        Ast::UnaryOp {
            op: UnaryOperator::Plus,
            expr,
        } => literal(expr),
        Ast::Nested(inner) => literal(inner),
        Ast::Cast {
            expr, data_type, ..
        } => {
            let ty = crate::frontend::data_type(data_type)?;
            cast(literal(expr)?, ty)
        }
        other => Err(SqlError::Unsupported(format!(
            "expression {other} (only literals here)"
        ))),
    }
}

/// An expression over `columns` (resolved by name, unqualified or qualified by `relation`).
pub fn bind(e: &Ast, columns: &[Column], relation: &str) -> Result<Expr, SqlError> {
    let b = |e: &Ast| bind(e, columns, relation).map(Box::new);
    Ok(match e {
        Ast::Identifier(id) => Expr::Column(resolve(columns, &id.value)?),
        Ast::CompoundIdentifier(parts) => match parts.as_slice() {
            [rel, col] if rel.value.eq_ignore_ascii_case(relation) => {
                Expr::Column(resolve(columns, &col.value)?)
            }
            _ => return Err(SqlError::Invalid(format!("column {e} not found"))),
        },
        Ast::Nested(inner) => return bind(inner, columns, relation),
        Ast::BinaryOp { left, op, right } => bind_binary(op, left, right, columns, relation)?,
        Ast::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => Expr::Not(b(expr)?),
        Ast::IsNull(inner) => Expr::IsNull(b(inner)?, false),
        Ast::IsNotNull(inner) => Expr::IsNull(b(inner)?, true),
        Ast::Between {
            expr,
            negated,
            low,
            high,
        } => bind_between([expr, low, high], *negated, columns, relation)?,
        Ast::In {
            expr,
            target: InTarget::List(list),
            negated,
            ..
        } => bind_in_list(expr, list, *negated, columns, relation)?,
        Ast::Value(_) | Ast::UnaryOp { .. } | Ast::Cast { .. } => Expr::Literal(literal(e)?),
        Ast::Subquery(_) | Ast::In { .. } | Ast::Exists { .. } => {
            return Err(SqlError::Unsupported("subquery".into()));
        }
        Ast::Function(f) => return Err(SqlError::Unsupported(format!("function {}", f.name))),
        other => return Err(SqlError::Unsupported(format!("expression {other}"))),
    })
}

/// `left op right`: a comparison, `AND` or `OR`.
fn bind_binary(
    op: &BinaryOperator,
    left: &Ast,
    right: &Ast,
    columns: &[Column],
    relation: &str,
) -> Result<Expr, SqlError> {
    let b = |e: &Ast| bind(e, columns, relation).map(Box::new);
    let cmp = match op {
        BinaryOperator::Eq => Some(Cmp::Eq),
        BinaryOperator::NotEq => Some(Cmp::NotEq),
        BinaryOperator::Lt => Some(Cmp::Lt),
        BinaryOperator::LtEq => Some(Cmp::LtEq),
        BinaryOperator::Gt => Some(Cmp::Gt),
        BinaryOperator::GtEq => Some(Cmp::GtEq),
        _ => None,
    };
    Ok(match (cmp, op) {
        (Some(c), _) => Expr::Cmp(c, b(left)?, b(right)?),
        (None, BinaryOperator::And) => Expr::And(b(left)?, b(right)?),
        (None, BinaryOperator::Or) => Expr::Or(b(left)?, b(right)?),
        _ => return Err(SqlError::Unsupported(format!("operator {op}"))),
    })
}

/// `x [NOT] BETWEEN lo AND hi` as `x >= lo AND x <= hi` (negated).
fn bind_between(
    [expr, low, high]: [&Ast; 3],
    negated: bool,
    columns: &[Column],
    relation: &str,
) -> Result<Expr, SqlError> {
    let b = |e: &Ast| bind(e, columns, relation).map(Box::new);
    let x = bind(expr, columns, relation)?;
    let both = Expr::And(
        Box::new(Expr::Cmp(Cmp::GtEq, Box::new(x.clone()), b(low)?)),
        Box::new(Expr::Cmp(Cmp::LtEq, Box::new(x), b(high)?)),
    );
    Ok(if negated {
        Expr::Not(Box::new(both))
    } else {
        both
    })
}

/// `x [NOT] IN (a, b, ..)` as `x = a OR x = b ..` (negated; `false` for no items).
fn bind_in_list(
    expr: &Ast,
    list: &[Ast],
    negated: bool,
    columns: &[Column],
    relation: &str,
) -> Result<Expr, SqlError> {
    let b = |e: &Ast| bind(e, columns, relation).map(Box::new);
    let x = bind(expr, columns, relation)?;
    let mut any: Option<Expr> = None;
    for item in list {
        let eq = Expr::Cmp(Cmp::Eq, Box::new(x.clone()), b(item)?);
        any = Some(match any {
            None => eq,
            Some(prev) => Expr::Or(Box::new(prev), Box::new(eq)),
        });
    }
    let any = any.unwrap_or(Expr::Literal(Some(ScalarImpl::Bool(false))));
    Ok(if negated {
        Expr::Not(Box::new(any))
    } else {
        any
    })
}

/// The position of the column named `name` (case-insensitive, as unquoted SQL names are).
pub fn resolve(columns: &[Column], name: &str) -> Result<usize, SqlError> {
    columns
        .iter()
        .position(|c| c.name.eq_ignore_ascii_case(name))
        .map(|i| columns[i].src)
        .ok_or_else(|| SqlError::Invalid(format!("column \"{name}\" does not exist")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_valued_logic_and_casts() {
        let row = OwnedRow::new(vec![Some(ScalarImpl::Int32(5)), None]);
        let gt = Expr::Cmp(
            Cmp::Gt,
            Box::new(Expr::Column(0)),
            Box::new(Expr::Literal(Some(ScalarImpl::Int64(3)))),
        );
        assert!(gt.holds(&row));
        let null_cmp = Expr::Cmp(
            Cmp::Eq,
            Box::new(Expr::Column(1)),
            Box::new(Expr::Column(0)),
        );
        assert!(!null_cmp.holds(&row));
        assert!(!Expr::Not(Box::new(null_cmp.clone())).holds(&row));
        assert!(Expr::Or(Box::new(null_cmp), Box::new(gt)).holds(&row));
        assert_eq!(
            cast(Some(ScalarImpl::Int64(70000)), DataType::Int16)
                .unwrap_err()
                .to_string(),
            "smallint out of range"
        );
        assert_eq!(format_datum(&Some(ScalarImpl::Utf8("".into()))), "(empty)");
    }
}
