//! Expressions: an AST expression over a scope becomes an `ExprNode` (types and implicit casts from
//! `sig::build_func`); in a grouped select, aggregate calls and group keys become the aggregation's outputs.

use epochlab_common::{DataType, OwnedRow, ScalarImpl};
use sqlparser::ast::{
    self, BinaryOperator, DuplicateTreatment, Expr as Ast, FunctionArg, FunctionArgExpr,
    FunctionArgumentClause, FunctionArguments, ObjectNamePart, UnaryOperator, Value,
};

use super::{Binder, Scope, ScopeColumn, ident, unsupported};
use crate::dialect::FRAME_EXCLUSIONS;
use crate::error::SqlError;
use crate::scalar::cast::{CastContext, build_cast};
use crate::scalar::sig::build_func;
use crate::scalar::{AggCall, AggKind, ExprNode, ExprType, OrderType, agg, eval, from_text};
use epochlab_common::expr_node::{Frame, WindowFuncKind};

/// The aggregation of a grouped select being bound.
#[derive(Debug, Default)]
pub(super) struct AggCtx {
    /// The scope below the aggregation.
    pub input_scope: Scope,
    /// The group keys, bound over `input_scope`.
    pub group_exprs: Vec<ExprNode>,
    /// The projection under the aggregation: the group keys, then the calls' arguments.
    pub pre_exprs: Vec<ExprNode>,
    pub calls: Vec<AggCall>,
    /// `GROUPING SETS`/`ROLLUP`/`CUBE`: the sets, as positions in `group_exprs`. The aggregation's output
    /// is then the group keys, the grouping set's `Int64` flag, then the calls.
    pub grouping_sets: Option<Vec<Vec<usize>>>,
}

impl AggCtx {
    /// The output position of the first call (after the keys and, with grouping sets, the flag).
    pub fn calls_offset(&self) -> usize {
        self.group_exprs.len() + usize::from(self.grouping_sets.is_some())
    }

    /// `grouping(args)`: per grouping set a bit per argument (the first the most significant), 1 where
    /// the argument is not in the set; over the flag column. RisingWave's `GROUPING`.
    fn grouping(&self, args: &[ExprNode]) -> Result<ExprNode, SqlError> {
        let keys: Vec<usize> = args
            .iter()
            .map(|a| {
                self.group_exprs.iter().position(|g| g == a).ok_or_else(|| {
                    SqlError::Invalid(
                        "arguments to GROUPING must be grouping expressions of the associated query level"
                            .into(),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        if keys.is_empty() || keys.len() > 31 {
            return Err(SqlError::Invalid("GROUPING takes 1 to 31 arguments".into()));
        }
        let value = |set: &[usize]| -> i32 {
            keys.iter()
                .fold(0, |acc, k| (acc << 1) | i32::from(!set.contains(k)))
        };
        let int = |v: i32| ExprNode::Literal {
            value: Some(ScalarImpl::Int32(v)),
            ty: DataType::Int32,
        };
        let Some(sets) = &self.grouping_sets else {
            // Plain GROUP BY: every argument is in the one set.
            return Ok(int(0));
        };
        let flag = ExprNode::InputRef {
            index: self.group_exprs.len(),
            ty: DataType::Int64,
        };
        let mut case_args = Vec::with_capacity(2 * sets.len() + 1);
        for (i, set) in sets.iter().enumerate() {
            let lit = ExprNode::Literal {
                value: Some(ScalarImpl::Int64(i as i64)),
                ty: DataType::Int64,
            };
            case_args.push(call(ExprType::Equal, vec![flag.clone(), lit])?);
            case_args.push(int(value(set)));
        }
        case_args.push(int(0));
        case(case_args)
    }

    fn push_pre(&mut self, e: ExprNode) -> usize {
        if let Some(i) = self.pre_exprs.iter().position(|x| *x == e) {
            return i;
        }
        self.pre_exprs.push(e);
        self.pre_exprs.len() - 1
    }
}

/// The window function calls of a select list (RisingWave binds them into a `LogicalOverWindow` under the
/// select's projection): each call's value is the column `input_width + i` of the over window.
#[derive(Debug, Default)]
pub(super) struct WindowCollector {
    /// The width of the select's input (FROM and WHERE).
    pub input_width: usize,
    pub calls: Vec<BoundWindow>,
}

/// One window function call, its expressions over the select's input.
#[derive(Debug)]
pub(super) struct BoundWindow {
    pub kind: WindowFuncKind,
    pub args: Vec<ExprNode>,
    pub ret: DataType,
    pub offset: usize,
    pub partition_by: Vec<ExprNode>,
    pub order_by: Vec<(ExprNode, OrderType)>,
    /// `ROWS BETWEEN ..` as written (`None`: the default frame).
    pub frame: Option<epochlab_common::expr_node::Frame>,
}

/// The engine's type of a SQL type (`numeric(10, 2)` is `numeric`: RisingWave keeps no precision). RisingWave's
/// parser reads no length after `VARCHAR` (its `varchar(20)` is a syntax error).
pub fn bind_data_type(t: &ast::DataType) -> Result<DataType, SqlError> {
    if let ast::DataType::Varchar(Some(_)) | ast::DataType::CharacterVarying(Some(_)) = t {
        return Err(SqlError::Parse(
            "Expected ',' or ')' after column definition, found: (".into(),
        ));
    }
    let text = t.to_string().to_lowercase().replace('"', "");
    let mut name = String::with_capacity(text.len());
    let mut depth = 0;
    for ch in text.chars() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 => name.push(ch),
            _ => {}
        }
    }
    let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
    name.parse::<DataType>()
        .map_err(|_| SqlError::Unsupported(format!("type {text}")))
}

fn is_untyped_literal(e: &ExprNode) -> bool {
    matches!(
        e,
        ExprNode::Literal {
            value: None | Some(ScalarImpl::Utf8(_)),
            ..
        }
    )
}

/// `e` as a value of `ty`: an unknown-typed literal (a string, NULL) is read as `ty`; otherwise a cast of
/// `ctx`.
pub fn coerce(e: ExprNode, ty: DataType, ctx: CastContext) -> Result<ExprNode, SqlError> {
    if e.return_type() == ty {
        return Ok(e);
    }
    match &e {
        ExprNode::Literal { value: None, .. } => Ok(ExprNode::Literal { value: None, ty }),
        // A timestamptz without an offset is a time in the session's zone: a cast the session-time-zone
        // rewrite gives the zone (RisingWave's eager parse fails there and leaves the cast).
        ExprNode::Literal {
            value: Some(ScalarImpl::Utf8(s)),
            ..
        } if ty == DataType::Timestamptz
            && epochlab_common::types::parse_timestamptz_parts(s.trim())
                .is_some_and(|(_, offset)| offset.is_none()) =>
        {
            Ok(ExprNode::Call {
                func: ExprType::Cast,
                args: vec![e],
                ret: ty,
            })
        }
        ExprNode::Literal {
            value: Some(ScalarImpl::Utf8(s)),
            ..
        } => Ok(ExprNode::Literal {
            value: from_text(s, &ty)?,
            ty,
        }),
        _ => Ok(build_cast(e, ty, ctx)?),
    }
}

/// Unknown-typed literals among `exprs` take the type of the first typed one.
pub fn unify_literals(exprs: &mut [ExprNode]) -> Result<(), SqlError> {
    let Some(ty) = exprs
        .iter()
        .find(|e| !is_untyped_literal(e))
        .map(ExprNode::return_type)
    else {
        return Ok(());
    };
    for e in exprs.iter_mut() {
        if is_untyped_literal(e) && e.return_type() != ty {
            *e = coerce(e.clone(), ty.clone(), CastContext::Implicit)?;
        }
    }
    Ok(())
}

/// A call of `func`, unknown-typed literal arguments read as the others' type (unless `func` types its
/// arguments itself, as `array_to_string`'s delimiter is text).
pub fn call(func: ExprType, mut args: Vec<ExprNode>) -> Result<ExprNode, SqlError> {
    // Text concatenation reads an unknown-typed literal as text, whatever the others' types (`'1' || true`
    // is `1true`, `concat(1, 'A')` is `1A`); `||` with an array is the array's.
    let text_concat = matches!(
        func,
        ExprType::ConcatOp | ExprType::Concat | ExprType::ConcatWs | ExprType::Format
    ) && !args
        .iter()
        .any(|a| matches!(a.return_type(), DataType::List(_)) && !is_untyped_literal(a));
    if !epochlab_expr::scalar::array::types_its_own_arguments(func) && !text_concat {
        // The positions every overload types (a field name, a pattern) keep their literal for overload
        // resolution; the others take each other's type.
        let pinned = epochlab_expr::sig::pinned_params(func, args.len());
        let free: Vec<usize> = (0..args.len()).filter(|&i| pinned[i].is_none()).collect();
        let mut exprs: Vec<ExprNode> = free.iter().map(|&i| args[i].clone()).collect();
        unify_literals(&mut exprs)?;
        for (&i, e) in free.iter().zip(exprs) {
            args[i] = e;
        }
    }
    Ok(build_func(func, args)?)
}

fn binary_func(op: &BinaryOperator) -> Option<ExprType> {
    use BinaryOperator as B;
    Some(match op {
        B::Plus => ExprType::Add,
        B::Minus => ExprType::Subtract,
        B::Multiply => ExprType::Multiply,
        B::Divide => ExprType::Divide,
        B::Modulo => ExprType::Modulus,
        B::Eq => ExprType::Equal,
        B::NotEq => ExprType::NotEqual,
        B::Lt => ExprType::LessThan,
        B::LtEq => ExprType::LessThanOrEqual,
        B::Gt => ExprType::GreaterThan,
        B::GtEq => ExprType::GreaterThanOrEqual,
        B::And => ExprType::And,
        B::Or => ExprType::Or,
        B::StringConcat => ExprType::ConcatOp,
        B::PGExp => ExprType::Pow,
        B::BitwiseAnd => ExprType::BitwiseAnd,
        B::BitwiseOr => ExprType::BitwiseOr,
        B::PGBitwiseXor => ExprType::BitwiseXor,
        B::PGBitwiseShiftLeft => ExprType::BitwiseShiftLeft,
        B::PGBitwiseShiftRight => ExprType::BitwiseShiftRight,
        // jsonb access by key (text) or index (int): `->` gives jsonb, `->>` text.
        B::Arrow => ExprType::JsonbAccess,
        B::LongArrow => ExprType::JsonbAccessStr,
        _ => return None,
    })
}

fn lit_bool(b: bool) -> ExprNode {
    ExprNode::Literal {
        value: Some(ScalarImpl::Bool(b)),
        ty: DataType::Boolean,
    }
}

/// A number literal as PostgreSQL reads it: an integer (`int` when it fits, else `bigint`, else
/// `numeric`), a decimal point makes it `numeric`, an exponent `double precision`.
fn number(n: &str) -> Result<ExprNode, SqlError> {
    // Scientific notation is a decimal, as RisingWave's `bind_number` reads it (`1e-6` is 0.000001).
    if n.contains(['e', 'E']) {
        return match from_text(n, &DataType::Decimal) {
            Ok(value) => Ok(ExprNode::Literal {
                value,
                ty: DataType::Decimal,
            }),
            Err(_) => Err(SqlError::Bind(format!("Number {n} overflows"))),
        };
    }
    let ty = if n.contains('.') || n.parse::<i64>().is_err() {
        Some(DataType::Decimal)
    } else {
        None
    };
    if let Some(ty) = ty {
        return Ok(ExprNode::Literal {
            value: from_text(n, &ty)?,
            ty,
        });
    }
    if let Ok(v) = n.parse::<i32>() {
        return Ok(ExprNode::Literal {
            value: Some(ScalarImpl::Int32(v)),
            ty: DataType::Int32,
        });
    }
    if let Ok(v) = n.parse::<i64>() {
        return Ok(ExprNode::Literal {
            value: Some(ScalarImpl::Int64(v)),
            ty: DataType::Int64,
        });
    }
    Err(unsupported(format!("numeric literal {n}")))
}

fn function_name(f: &ast::Function) -> Result<String, SqlError> {
    match f.name.0.as_slice() {
        [ObjectNamePart::Identifier(id)] => Ok(ident(id)),
        [
            ObjectNamePart::Identifier(s),
            ObjectNamePart::Identifier(id),
        ] if ident(s) == "pg_catalog" => Ok(ident(id)),
        _ => Err(unsupported(format!("function {}", f.name))),
    }
}

/// The plain arguments of a call, its `DISTINCT`, and its `ORDER BY`.
struct CallArgs<'e> {
    args: Vec<Option<&'e Ast>>,
    distinct: bool,
    order_by: Vec<&'e ast::OrderByExpr>,
}

fn call_args(f: &ast::Function) -> Result<CallArgs<'_>, SqlError> {
    let list = match &f.args {
        FunctionArguments::None => {
            return Ok(CallArgs {
                args: Vec::new(),
                distinct: false,
                order_by: Vec::new(),
            });
        }
        FunctionArguments::List(l) => l,
        FunctionArguments::Subquery(_) => return Err(unsupported("subquery as function argument")),
    };
    let mut order_by = Vec::new();
    for c in &list.clauses {
        match c {
            FunctionArgumentClause::OrderBy(o) => order_by.extend(o.iter()),
            other => return Err(unsupported(format!("function argument clause {other}"))),
        }
    }
    let args = list
        .args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(Some(e)),
            FunctionArg::Unnamed(FunctionArgExpr::Wildcard) => Ok(None),
            other => Err(unsupported(format!("function argument {other}"))),
        })
        .collect::<Result<_, _>>()?;
    Ok(CallArgs {
        args,
        distinct: matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct)),
        order_by,
    })
}

/// Table functions (valid in `FROM` only, here).
pub(super) fn is_table_function(name: &str) -> bool {
    crate::scalar::TableFunctionType::from_function_name(name).is_some()
}

impl Binder<'_> {
    /// Bind `e` over `scope`; in a grouped select `agg` is the aggregation.
    pub(super) fn bind_expr(
        &mut self,
        e: &Ast,
        scope: &Scope,
        agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        match agg {
            None => self.bind_expr_inner(e, scope, None),
            Some(ctx) => self.bind_grouped(e, ctx),
        }
    }

    /// In a grouped select: a group key or a constant as it is, an aggregate call as its output, anything
    /// else built from those.
    fn bind_grouped(&mut self, e: &Ast, ctx: &mut AggCtx) -> Result<ExprNode, SqlError> {
        let input_scope = ctx.input_scope.clone();
        // The attempt as a plain expression registers no HAVING subquery and no window function call (the
        // grouped binding does).
        let having = self.having_subqueries.take();
        let windows = self.windows.take();
        let plain = self.bind_expr_inner(e, &input_scope, None);
        self.having_subqueries = having;
        self.windows = windows;
        if let Ok(plain) = plain {
            if let Some(i) = ctx.group_exprs.iter().position(|g| *g == plain) {
                return Ok(ExprNode::InputRef {
                    index: i,
                    ty: plain.return_type(),
                });
            }
            if plain.input_refs().is_empty() {
                return Ok(plain);
            }
            if let Ast::Identifier(_) | Ast::CompoundIdentifier(_) = e {
                return Err(SqlError::Invalid(format!(
                    "column \"{e}\" must appear in the GROUP BY clause or be used in an aggregate function"
                )));
            }
        }
        self.bind_expr_inner(e, &input_scope, Some(ctx))
    }

    pub(super) fn bind_expr_inner(
        &mut self,
        e: &Ast,
        scope: &Scope,
        agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        Ok(match e {
            Ast::Identifier(id) => self.column_ref(scope, None, &ident(id))?,
            Ast::CompoundIdentifier(parts) => {
                let names: Vec<String> = parts.iter().map(ident).collect();
                let (col, qual) = names.split_last().expect("a compound identifier has parts");
                self.column_ref(scope, Some(&qual[qual.len() - 1]), col)?
            }
            // Children are bound in the same mode (grouped or not).
            Ast::Nested(inner) => self.bind_expr(inner, scope, agg)?,
            Ast::Value(v) => bind_literal(&v.value)?,
            Ast::Exists { subquery, negated } => {
                let rows = self.eval_subquery(subquery, scope)?;
                lit_bool(rows.0.is_empty() == *negated)
            }
            Ast::Subquery(q) => self.scalar_subquery(q, scope)?,
            Ast::Cast {
                expr, data_type, ..
            } => {
                let ty = bind_data_type(data_type)?;
                coerce(self.bind_expr(expr, scope, agg)?, ty, CastContext::Explicit)?
            }
            Ast::TypedString(ts) => bind_typed_string(ts)?,
            Ast::Collate { expr, collation } => {
                bind_collate(self.bind_expr(expr, scope, agg)?, collation)?
            }
            Ast::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.bind_case(
                operand.as_deref(),
                conditions,
                else_result.as_deref(),
                scope,
                agg,
            )?,
            Ast::CompoundFieldAccess { root, access_chain } => {
                self.bind_field_access(root, access_chain, scope, agg)?
            }
            Ast::Tuple(items) => self.bind_row(items, scope, agg)?,
            Ast::Array(arr) => self.bind_array(&arr.elem, scope, agg)?,
            Ast::Function(f) => self.bind_function(f, scope, agg)?,
            Ast::Interval(iv) => bind_interval(iv)?,
            _ => self.bind_operator(e, scope, agg)?,
        })
    }

    /// An operator or a predicate over bound operands: `a + b`, `NOT a`, `a IS NULL`, `BETWEEN`, `IN`,
    /// `LIKE`; any other expression is unsupported.
    fn bind_operator(
        &mut self,
        e: &Ast,
        scope: &Scope,
        agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        match e {
            Ast::BinaryOp { left, op, right } => {
                let func = binary_func(op).ok_or_else(|| unsupported(format!("operator {op}")))?;
                self.bind_call(func, [left, right], scope, agg)
            }
            Ast::UnaryOp { op, expr } => self.bind_unary_expr(op, expr, scope, agg),
            Ast::IsNull(x) => self.bind_call(ExprType::IsNull, [x], scope, agg),
            Ast::IsNotNull(x) => self.bind_call(ExprType::IsNotNull, [x], scope, agg),
            Ast::IsTrue(x) => self.bind_call(ExprType::IsTrue, [x], scope, agg),
            Ast::IsNotTrue(x) => self.bind_call(ExprType::IsNotTrue, [x], scope, agg),
            Ast::IsFalse(x) => self.bind_call(ExprType::IsFalse, [x], scope, agg),
            Ast::IsNotFalse(x) => self.bind_call(ExprType::IsNotFalse, [x], scope, agg),
            Ast::IsDistinctFrom(a, b) => {
                self.bind_call(ExprType::IsDistinctFrom, [a, b], scope, agg)
            }
            Ast::IsNotDistinctFrom(a, b) => {
                self.bind_call(ExprType::IsNotDistinctFrom, [a, b], scope, agg)
            }
            Ast::Between {
                expr,
                negated,
                low,
                high,
            } => self.bind_between([expr, low, high], *negated, scope, agg),
            Ast::In {
                expr,
                target: target @ (ast::InTarget::List(_) | ast::InTarget::Subquery(_)),
                negated,
                ..
            } => self.bind_in(expr, target, *negated, scope, agg),
            Ast::Like {
                negated,
                expr,
                pattern,
                escape_char: None,
                any: false,
            } => self.bind_like(ExprType::Like, [expr, pattern], *negated, scope, agg),
            Ast::ILike {
                negated,
                expr,
                pattern,
                escape_char: None,
                any: false,
            } => self.bind_like(ExprType::ILike, [expr, pattern], *negated, scope, agg),
            Ast::Like { .. } | Ast::ILike { .. } => Err(unsupported("LIKE ... ESCAPE or ANY")),
            Ast::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => self.bind_substring(
                expr,
                substring_from.as_deref(),
                substring_for.as_deref(),
                scope,
                agg,
            ),
            Ast::AtTimeZone {
                timestamp,
                time_zone,
            } => self.bind_call(ExprType::AtTimeZone, [timestamp, time_zone], scope, agg),
            Ast::Extract { field, expr, .. } => {
                let source = self.bind_expr(expr, scope, agg)?;
                let field = ExprNode::literal(
                    Some(ScalarImpl::Utf8(field.to_string().into())),
                    DataType::Varchar,
                );
                Ok(build_func(ExprType::Extract, vec![field, source])?)
            }
            Ast::Ceil {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            } => self.bind_call(ExprType::Ceil, [expr], scope, agg),
            Ast::Floor {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            } => self.bind_call(ExprType::Floor, [expr], scope, agg),
            Ast::Trim {
                trim_where,
                trim_what,
                expr,
                trim_characters: None,
            } => self.bind_trim(trim_where.as_ref(), trim_what.as_deref(), expr, scope, agg),
            other => Err(unsupported(format!("expression {other}"))),
        }
    }

    /// `SUBSTRING(s FROM a FOR n)` and `substr(s, a, n)` (sqlparser reads both as one node): RisingWave's
    /// `substr`, from 1 when no start is given.
    fn bind_substring(
        &mut self,
        expr: &Ast,
        from: Option<&Ast>,
        count: Option<&Ast>,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        let mut args = vec![self.bind_expr(expr, scope, agg.as_deref_mut())?];
        args.push(match from {
            Some(a) => self.bind_expr(a, scope, agg.as_deref_mut())?,
            None => ExprNode::literal(Some(ScalarImpl::Int32(1)), DataType::Int32),
        });
        if let Some(n) = count {
            args.push(self.bind_expr(n, scope, agg)?);
        }
        call(ExprType::Substr, args)
    }

    /// `func(args..)`, its arguments bound left to right in the same mode (grouped or not).
    fn bind_call<const N: usize>(
        &mut self,
        func: ExprType,
        args: [&Ast; N],
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        let mut bound = Vec::with_capacity(N);
        for a in args {
            bound.push(self.bind_expr(a, scope, agg.as_deref_mut())?);
        }
        call(func, bound)
    }

    /// `x [NOT] IN (a, b, ..)` and `x [NOT] IN (subquery)` (`target` is one of the two), the subquery's
    /// column evaluated now.
    fn bind_in(
        &mut self,
        expr: &Ast,
        target: &ast::InTarget,
        negated: bool,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        let x = self.bind_expr(expr, scope, agg.as_deref_mut())?;
        let items = match target {
            ast::InTarget::List(list) => self.bind_exprs(list, scope, agg)?,
            ast::InTarget::Subquery(subquery) => self.subquery_column(subquery, scope)?,
            other => unreachable!("bind_expr_inner passes IN a list or a subquery, not {other:?}"),
        };
        in_list(x, items, negated)
    }

    /// `(a, b)` and `ROW(a, b)`: a struct of fields f1, f2, .. (RisingWave's `Row` call).
    fn bind_row(
        &mut self,
        items: &[Ast],
        scope: &Scope,
        agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        let fields = self.bind_exprs(items, scope, agg)?;
        // Each field keeps its own type (an untyped literal is a varchar), unlike a call's
        // arguments, whose untyped literals take their siblings' type.
        Ok(build_func(ExprType::Row, fields)?)
    }

    /// `ARRAY[a, b, ..]`: the elements aligned to one type.
    fn bind_array(
        &mut self,
        elem: &[Ast],
        scope: &Scope,
        agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        let mut elems = self.bind_exprs(elem, scope, agg)?;
        crate::scalar::cast::align_types(&mut elems)?;
        Ok(build_func(ExprType::Array, elems)?)
    }

    /// Bind each of `items` in order, in the same mode (grouped or not).
    fn bind_exprs(
        &mut self,
        items: &[Ast],
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<Vec<ExprNode>, SqlError> {
        let mut out = Vec::with_capacity(items.len());
        for x in items {
            out.push(self.bind_expr(x, scope, agg.as_deref_mut())?);
        }
        Ok(out)
    }

    /// `NOT x`, `+x`, `-x` (a negative number literal folded).
    fn bind_unary_expr(
        &mut self,
        op: &UnaryOperator,
        expr: &Ast,
        scope: &Scope,
        agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        match op {
            UnaryOperator::Not => call(ExprType::Not, vec![self.bind_expr(expr, scope, agg)?]),
            UnaryOperator::Plus => self.bind_expr(expr, scope, agg),
            UnaryOperator::Minus => match expr {
                Ast::Value(sqlparser::ast::ValueWithSpan {
                    value: Value::Number(n, _),
                    ..
                }) => number(&format!("-{n}")),
                _ => call(ExprType::Neg, vec![self.bind_expr(expr, scope, agg)?]),
            },
            UnaryOperator::BitwiseNot => call(
                ExprType::BitwiseNot,
                vec![self.bind_expr(expr, scope, agg)?],
            ),
            other => Err(unsupported(format!("operator {other}"))),
        }
    }

    /// `TRIM([BOTH | LEADING | TRAILING] [chars] FROM s)`: RisingWave's `btrim`, `ltrim`, `rtrim`.
    fn bind_trim(
        &mut self,
        trim_where: Option<&ast::TrimWhereField>,
        trim_what: Option<&Ast>,
        expr: &Ast,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        let func = match trim_where {
            None | Some(ast::TrimWhereField::Both) => ExprType::Trim,
            Some(ast::TrimWhereField::Leading) => ExprType::Ltrim,
            Some(ast::TrimWhereField::Trailing) => ExprType::Rtrim,
        };
        let mut args = vec![self.bind_expr(expr, scope, agg.as_deref_mut())?];
        if let Some(what) = trim_what {
            args.push(self.bind_expr(what, scope, agg)?);
        }
        call(func, args)
    }

    /// `x [NOT] BETWEEN lo AND hi` as `x >= lo AND x <= hi` (negated).
    fn bind_between(
        &mut self,
        [expr, low, high]: [&Ast; 3],
        negated: bool,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        let x = self.bind_expr(expr, scope, agg.as_deref_mut())?;
        let lo = self.bind_expr(low, scope, agg.as_deref_mut())?;
        let hi = self.bind_expr(high, scope, agg)?;
        let ge = call(ExprType::GreaterThanOrEqual, vec![x.clone(), lo])?;
        let le = call(ExprType::LessThanOrEqual, vec![x, hi])?;
        let both = call(ExprType::And, vec![ge, le])?;
        if negated {
            call(ExprType::Not, vec![both])
        } else {
            Ok(both)
        }
    }

    /// `CASE [operand] WHEN .. THEN .. [ELSE ..] END`: with an operand each condition is `operand = c`.
    fn bind_case(
        &mut self,
        operand: Option<&Ast>,
        conditions: &[ast::CaseWhen],
        else_result: Option<&Ast>,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        let operand = match operand {
            Some(o) => Some(self.bind_expr(o, scope, agg.as_deref_mut())?),
            None => None,
        };
        let mut args = Vec::new();
        for w in conditions {
            let c = self.bind_expr(&w.condition, scope, agg.as_deref_mut())?;
            let c = match &operand {
                Some(o) => call(ExprType::Equal, vec![o.clone(), c])?,
                None => c,
            };
            args.push(c);
            args.push(self.bind_expr(&w.result, scope, agg.as_deref_mut())?);
        }
        if let Some(e) = else_result {
            args.push(self.bind_expr(e, scope, agg)?);
        }
        case(args)
    }

    /// `root.field` and `root[i]`, left to right.
    fn bind_field_access(
        &mut self,
        root: &Ast,
        access_chain: &[ast::AccessExpr],
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        let mut e = self.bind_expr(root, scope, agg.as_deref_mut())?;
        for access in access_chain {
            e = match access {
                ast::AccessExpr::Dot(Ast::Identifier(id)) => struct_field(e, &ident(id))?,
                ast::AccessExpr::Subscript(ast::Subscript::Index { index }) => {
                    let i = self.bind_expr(index, scope, agg.as_deref_mut())?;
                    call(ExprType::ArrayAccess, vec![e, i])?
                }
                other => return Err(unsupported(format!("access {other}"))),
            };
        }
        Ok(e)
    }

    /// `x [NOT] LIKE p` / `ILIKE` (`func`), without ESCAPE or ANY.
    fn bind_like(
        &mut self,
        func: ExprType,
        [expr, pattern]: [&Ast; 2],
        negated: bool,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        let x = self.bind_expr(expr, scope, agg.as_deref_mut())?;
        let p = self.bind_expr(pattern, scope, agg)?;
        let like = call(func, vec![x, p])?;
        if negated {
            call(ExprType::Not, vec![like])
        } else {
            Ok(like)
        }
    }

    fn bind_function(
        &mut self,
        f: &ast::Function,
        scope: &Scope,
        agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        let name = function_name(f)?;
        if let Some(over) = &f.over {
            return self.bind_over(&name, f, over, scope, agg);
        }
        let ca = call_args(f)?;
        if name == "grouping"
            && let Some(ctx) = agg
        {
            let input_scope = ctx.input_scope.clone();
            let args = ca
                .args
                .iter()
                .map(|a| {
                    let a = a.ok_or_else(|| unsupported("grouping(*)"))?;
                    self.bind_expr_inner(a, &input_scope, None)
                })
                .collect::<Result<Vec<_>, _>>()?;
            return ctx.grouping(&args);
        }
        if let Some(kind) = AggKind::from_function_name(&name) {
            let Some(ctx) = agg else {
                return Err(SqlError::Invalid(format!(
                    "aggregate function {name} is not allowed here"
                )));
            };
            // A window function call inside an aggregate call is not allowed (RisingWave refuses it too).
            let windows = self.windows.take();
            let bound = self.bind_agg_call(kind, &name, f, ca, ctx);
            self.windows = windows;
            return bound;
        }
        if f.filter.is_some() || ca.distinct || !ca.order_by.is_empty() {
            return Err(SqlError::Invalid(format!(
                "DISTINCT, ORDER BY or FILTER in {name}, which is not an aggregate"
            )));
        }
        if is_table_function(&name) {
            if agg.is_some() {
                return Err(unsupported(format!(
                    "table function {name} in a grouped select list"
                )));
            }
            return self.bind_select_table_function(&name, &ca, scope);
        }
        self.bind_scalar_function(&name, &ca, scope, agg)
    }

    /// A window function call `name(..) OVER (..)`, collected into the select's windows.
    fn bind_over(
        &mut self,
        name: &str,
        f: &ast::Function,
        over: &ast::WindowType,
        scope: &Scope,
        agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        let Some(mut windows) = self.windows.take() else {
            return Err(SqlError::Invalid(format!(
                "window function {name} is not allowed here"
            )));
        };
        let bound = self.bind_window_call(name, f, over, (scope, agg), &mut windows);
        self.windows = Some(windows);
        bound
    }

    /// A scalar function: its arguments bound (grouped or not), then `nullif` as a CASE, `row` as a
    /// struct, any other by its `ExprType`.
    fn bind_scalar_function(
        &mut self,
        name: &str,
        ca: &CallArgs<'_>,
        scope: &Scope,
        mut agg: Option<&mut AggCtx>,
    ) -> Result<ExprNode, SqlError> {
        let mut args = Vec::with_capacity(ca.args.len());
        for a in &ca.args {
            let a = a.ok_or_else(|| unsupported(format!("{name}(*)")))?;
            args.push(match agg.as_deref_mut() {
                None => self.bind_expr_inner(a, scope, None)?,
                Some(ctx) => self.bind_grouped(a, ctx)?,
            });
        }
        if name == "pg_typeof" && args.len() == 1 {
            // The argument's type, as PostgreSQL's regtype prints it (known when binding).
            let ty = args[0].return_type();
            let name = if is_untyped_literal(&args[0]) {
                "unknown".to_string()
            } else {
                ty.to_string()
            };
            return Ok(ExprNode::literal(
                Some(ScalarImpl::Utf8(name.into())),
                DataType::Varchar,
            ));
        }
        if name == "nullif" && args.len() == 2 {
            let eq = call(ExprType::Equal, args.clone())?;
            let null = ExprNode::Literal {
                value: None,
                ty: args[0].return_type(),
            };
            return case(vec![eq, null, args[0].clone()]);
        }
        if name == "row" {
            return Ok(build_func(ExprType::Row, args)?);
        }
        let func = ExprType::from_function_name(name)
            .ok_or_else(|| unsupported(format!("function {name}")))?;
        self.check_time_function(func)?;
        call(func, args)
    }

    /// `now()` and `proctime()` where RisingWave's binder allows them: `proctime()` only in a table's or
    /// source's generated column, `now()` anywhere but there.
    fn check_time_function(&self, func: ExprType) -> Result<(), SqlError> {
        match func {
            ExprType::Now if self.generated_column => Err(SqlError::InvalidInputSyntax(
                "Cannot use `NOW()` function in generated columns. Do you want `PROCTIME()`?".into(),
            )),
            ExprType::Proctime if !self.generated_column => Err(SqlError::InvalidInputSyntax(
                "Function `PROCTIME()` is only allowed in CREATE TABLE/SOURCE. Is `NOW()` what you want?"
                    .into(),
            )),
            _ => Ok(()),
        }
    }

    /// A table function in a select list: its arguments bound over the select's input, the call kept for
    /// the `ProjectSet`, and a reference to its column there.
    fn bind_select_table_function(
        &mut self,
        name: &str,
        ca: &CallArgs<'_>,
        scope: &Scope,
    ) -> Result<ExprNode, SqlError> {
        let func = crate::scalar::TableFunctionType::from_function_name(name)
            .filter(|f| *f != crate::scalar::TableFunctionType::PgExpandArray)
            .ok_or_else(|| unsupported(format!("table function {name} in a select list")))?;
        // Arguments are bound with a collector of their own: a table function inside one is planned in a
        // ProjectSet below (one level of nesting).
        let Some(mut collector) = self.project_set.take() else {
            return Err(unsupported(format!("table function {name} here")));
        };
        let nested_base = super::NESTED_TABLE_FUNCTION_BASE + collector.nested.len();
        let nesting = collector.base >= super::NESTED_TABLE_FUNCTION_BASE;
        self.project_set = (!nesting).then(|| super::TableFunctionCollector::new(nested_base));
        let args: Result<Vec<ExprNode>, SqlError> = ca
            .args
            .iter()
            .map(|a| {
                let a = a.ok_or_else(|| unsupported(format!("{name}(*)")))?;
                self.bind_expr_inner(a, scope, None)
            })
            .collect();
        if let Some(inner) = self.project_set.take() {
            collector.nested.extend(inner.items);
        }
        self.project_set = Some(collector);
        let mut args = args?;
        unify_literals(&mut args)?;
        let (args, ret) = crate::scalar::table_function::build(func, args)?;
        let collector = self.project_set.as_mut().expect("restored above");
        let index = collector.base + collector.items.len();
        collector
            .items
            .push(crate::planner::ProjectSetSelectItem::TableFunction {
                func,
                args,
                ret: ret.clone(),
            });
        Ok(ExprNode::InputRef { index, ty: ret })
    }

    /// An ordered-set aggregate's arguments as RisingWave's `bind_ordered_set_agg` checks them: the
    /// `WITHIN GROUP` expression (double precision for percentile_cont), then percentile's fraction, a
    /// constant folded to a double precision literal between 0 and 1 (NULL allowed).
    fn bind_ordered_set_args(
        &mut self,
        kind: AggKind,
        name: &str,
        f: &ast::Function,
        ca: &CallArgs<'_>,
        input_scope: &Scope,
    ) -> Result<Vec<ExprNode>, SqlError> {
        let syntax = SqlError::InvalidInputSyntax;
        if ca.distinct {
            return Err(syntax(format!(
                "DISTINCT is not allowed for ordered-set aggregation `{name}`"
            )));
        }
        let within = match f.within_group.as_slice() {
            [] => {
                return Err(syntax(format!(
                    "WITHIN GROUP is expected for ordered-set aggregation `{name}`"
                )));
            }
            [o] => o,
            _ => return Err(invalid_ordered_set_args(name)),
        };
        let mut arg = self.bind_expr_inner(&within.expr, input_scope, None)?;
        let fraction = match (kind, ca.args.as_slice()) {
            (AggKind::Mode, []) => return Ok(vec![arg]),
            (AggKind::PercentileCont | AggKind::PercentileDisc, [Some(a)]) => a,
            _ => return Err(invalid_ordered_set_args(name)),
        };
        let fraction = self.bind_expr_inner(fraction, input_scope, None)?;
        let fraction =
            coerce(fraction, DataType::Float64, CastContext::Implicit).map_err(|_| {
                syntax(format!(
                    "direct arg in `{name}` must be castable to float64"
                ))
            })?;
        if !fraction.input_refs().is_empty() {
            return Err(SqlError::NotImplemented(
                "variable as direct argument of ordered-set aggregate".into(),
            ));
        }
        let value = eval(&fraction, &OwnedRow::empty())?;
        if let Some(ScalarImpl::Float64(v)) = &value
            && !(0.0..=1.0).contains(&v.0)
        {
            return Err(syntax(format!(
                "direct arg in `{name}` must between 0.0 and 1.0"
            )));
        }
        if kind == AggKind::PercentileCont {
            arg = coerce(arg, DataType::Float64, CastContext::Implicit)
                .map_err(|_| syntax(format!("arg in `{name}` must be castable to float64")))?;
        }
        let fraction = ExprNode::Literal {
            value,
            ty: DataType::Float64,
        };
        Ok(vec![arg, fraction])
    }

    fn bind_agg_call(
        &mut self,
        kind: AggKind,
        name: &str,
        f: &ast::Function,
        ca: CallArgs<'_>,
        ctx: &mut AggCtx,
    ) -> Result<ExprNode, SqlError> {
        let input_scope = ctx.input_scope.clone();
        let mut args = Vec::new();
        let mut arg_types = Vec::new();
        let mut order_by = Vec::new();
        if is_ordered_set(kind) {
            for e in self.bind_ordered_set_args(kind, name, f, &ca, &input_scope)? {
                arg_types.push(e.return_type());
                args.push(ctx.push_pre(e));
            }
            let o = &f.within_group[0];
            order_by.push((args[0], order_type(&o.options)));
        } else if !f.within_group.is_empty() {
            return Err(SqlError::Invalid(format!(
                "WITHIN GROUP is not allowed for non-ordered-set aggregation `{name}`"
            )));
        }
        for a in ca.args.iter().filter(|_| !is_ordered_set(kind)) {
            match a {
                None if kind == AggKind::Count && ca.args.len() == 1 => {}
                None => return Err(unsupported(format!("{name}(*)"))),
                Some(a) => {
                    let e = self.bind_expr_inner(a, &input_scope, None)?;
                    arg_types.push(e.return_type());
                    args.push(ctx.push_pre(e));
                }
            }
        }
        let filter = match &f.filter {
            Some(w) => {
                let p = self.bind_expr_inner(w, &input_scope, None)?;
                let ty = p.return_type();
                Some(ExprNode::InputRef {
                    index: ctx.push_pre(p),
                    ty,
                })
            }
            None => None,
        };
        for o in &ca.order_by {
            let e = self.bind_expr_inner(&o.expr, &input_scope, None)?;
            order_by.push((ctx.push_pre(e), order_type(&o.options)));
        }
        let ret = agg::infer_return_type(kind, &arg_types)?;
        let call = AggCall {
            kind,
            args,
            arg_types,
            ret: ret.clone(),
            distinct: ca.distinct,
            order_by,
            filter,
        };
        let index = ctx.calls_offset() + ctx.calls.len();
        ctx.calls.push(call);
        Ok(ExprNode::InputRef { index, ty: ret })
    }

    /// The column `name` (of `qualifier`) of an enclosing query: a correlated reference when that query's
    /// WHERE clause is binding this subquery (and the name is in its scope, the nearest one holding it),
    /// else RisingWave's refusal; `None` when no enclosing scope has it.
    fn outer_column(
        &self,
        qualifier: Option<&str>,
        name: &str,
    ) -> Result<Option<ExprNode>, SqlError> {
        for (depth, scope) in self.outer.iter().enumerate().rev() {
            let hits: Vec<(usize, &ScopeColumn)> = scope
                .columns
                .iter()
                .enumerate()
                .filter(|(_, c)| names_column(c, qualifier, name))
                .collect();
            match hits.as_slice() {
                [] => continue,
                [(i, c)] if self.correlatable == Some(depth) => {
                    return Ok(Some(crate::planner::decorrelate::correlated_ref(
                        *i,
                        c.ty.clone(),
                    )));
                }
                [_] => return Err(unsupported("correlated subquery")),
                _ => return Err(SqlError::AmbiguousColumn(name.to_string())),
            }
        }
        Ok(None)
    }

    /// The column `name` (of `qualifier`) in `scope`.
    pub(super) fn column_ref(
        &self,
        scope: &Scope,
        qualifier: Option<&str>,
        name: &str,
    ) -> Result<ExprNode, SqlError> {
        let hits: Vec<usize> = scope
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| names_column(c, qualifier, name))
            .map(|(i, _)| i)
            .collect();
        match hits.as_slice() {
            [i] => Ok(ExprNode::InputRef {
                index: *i,
                ty: scope.columns[*i].ty.clone(),
            }),
            [] => {
                if let Some(outer) = self.outer_column(qualifier, name)? {
                    return Ok(outer);
                }
                match qualifier {
                    Some(q) if scope.columns.iter().any(|c| c.name == name) => {
                        Err(SqlError::ItemNotFound(format!(
                            "missing FROM-clause entry for table \"{q}\""
                        )))
                    }
                    _ => Err(SqlError::ItemNotFound(format!("Invalid column: {name}"))),
                }
            }
            _ => Err(SqlError::AmbiguousColumn(name.to_string())),
        }
    }
}

impl Binder<'_> {
    /// `f(..) OVER (PARTITION BY .. ORDER BY ..)` in a select list: the call is collected; its value is the
    /// over window's column for it.
    fn bind_window_call(
        &mut self,
        name: &str,
        f: &ast::Function,
        over: &ast::WindowType,
        (scope, mut agg): (&Scope, Option<&mut AggCtx>),
        windows: &mut WindowCollector,
    ) -> Result<ExprNode, SqlError> {
        let ast::WindowType::WindowSpec(spec) = over else {
            return Err(unsupported("named window"));
        };
        let exclusion = spec
            .window_name
            .as_ref()
            .map(
                |n| match FRAME_EXCLUSIONS.iter().position(|e| *e == n.value) {
                    Some(i) if n.quote_style == Some('"') => Ok(FRAME_EXCLUSIONS[i]),
                    _ => Err(unsupported("named window")),
                },
            )
            .transpose()?;
        // RisingWave's binder: GROUP and TIES are not built (its issue 9124); NO OTHERS is no exclusion.
        let exclude_current_row = match exclusion {
            None | Some("exclude no others") => false,
            Some("exclude current row") => true,
            Some(other) => {
                return Err(SqlError::NotImplemented(format!(
                    "window frame exclusion `{}` is not supported yet",
                    other.to_uppercase()
                )));
            }
        };
        let frame = match &spec.window_frame {
            Some(f) => Some(Frame {
                exclude_current_row,
                ..self.window_frame(f)?
            }),
            None if exclude_current_row => {
                return Err(SqlError::Parse(
                    "syntax error at or near \"EXCLUDE\": a frame exclusion needs a frame".into(),
                ));
            }
            None => None,
        };
        let kind = WindowFuncKind::from_function_name(name).ok_or_else(|| {
            SqlError::Invalid(format!("function {name} is not a window function"))
        })?;
        let ca = call_args(f)?;
        if ca.distinct || !ca.order_by.is_empty() || f.filter.is_some() {
            return Err(unsupported(format!(
                "DISTINCT, ORDER BY or FILTER in window function {name}"
            )));
        }
        let mut args = Vec::new();
        for a in ca.args.iter().flatten() {
            args.push(self.bind_expr(a, scope, agg.as_deref_mut())?);
        }
        let mut offset = 1;
        if matches!(kind, WindowFuncKind::Lag | WindowFuncKind::Lead) && args.len() > 1 {
            let n = crate::scalar::eval(&args[1], &epochlab_common::OwnedRow::empty())?;
            offset = n
                .as_ref()
                .and_then(crate::scalar::int_value)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| SqlError::Invalid(format!("{name} takes a constant offset")))?;
            args.truncate(1);
        }
        let arg_types: Vec<DataType> = args.iter().map(ExprNode::return_type).collect();
        let ret = epochlab_expr::window::infer_return_type(kind, &arg_types)?;
        let mut partition_by = Vec::new();
        for e in &spec.partition_by {
            partition_by.push(self.bind_expr(e, scope, agg.as_deref_mut())?);
        }
        let mut order_by = Vec::new();
        for o in &spec.order_by {
            order_by.push((
                self.bind_expr(&o.expr, scope, agg.as_deref_mut())?,
                order_type(&o.options),
            ));
        }
        windows.calls.push(BoundWindow {
            kind,
            args,
            ret: ret.clone(),
            offset,
            partition_by,
            order_by,
            frame,
        });
        Ok(ExprNode::InputRef {
            index: windows.input_width + windows.calls.len() - 1,
            ty: ret,
        })
    }
}

impl Binder<'_> {
    /// A window frame: `ROWS` only, with constant offsets (RisingWave's binder, which has no `RANGE` or
    /// `GROUPS` frames); the end bound of `ROWS n PRECEDING` is the current row.
    fn window_frame(&mut self, f: &ast::WindowFrame) -> Result<Frame, SqlError> {
        use epochlab_common::expr_node::FrameBound;
        let units = match f.units {
            ast::WindowFrameUnits::Rows => None,
            ast::WindowFrameUnits::Range => Some("RANGE"),
            ast::WindowFrameUnits::Groups => Some("GROUPS"),
        };
        if let Some(units) = units {
            return Err(SqlError::NotImplemented(format!(
                "window frame in `{units}` mode is not supported yet"
            )));
        }
        let mut bound = |b: &ast::WindowFrameBound| -> Result<FrameBound, SqlError> {
            let mut offset = |e: &ast::Expr| -> Result<usize, SqlError> {
                let invalid = || {
                    SqlError::Invalid(format!("frame offset must be a non-negative integer: {e}"))
                };
                self.constant_count(e)
                    .map_err(|_| invalid())?
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(invalid)
            };
            Ok(match b {
                ast::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
                ast::WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
                ast::WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
                ast::WindowFrameBound::Preceding(Some(e)) => FrameBound::Preceding(offset(e)?),
                ast::WindowFrameBound::Following(Some(e)) => FrameBound::Following(offset(e)?),
            })
        };
        let start = bound(&f.start_bound)?;
        let end = match &f.end_bound {
            Some(b) => bound(b)?,
            None => FrameBound::CurrentRow,
        };
        // RisingWave's `FrameBound::validate_bounds`.
        let refused = match (start, end) {
            (_, FrameBound::UnboundedPreceding) => Some("frame end cannot be UNBOUNDED PRECEDING"),
            (FrameBound::UnboundedFollowing, _) => {
                Some("frame start cannot be UNBOUNDED FOLLOWING")
            }
            (FrameBound::Following(_), FrameBound::CurrentRow | FrameBound::Preceding(_)) => {
                Some("frame starting from following row cannot have preceding rows")
            }
            (FrameBound::CurrentRow, FrameBound::Preceding(_)) => {
                Some("frame starting from current row cannot have preceding rows")
            }
            _ => None,
        };
        match refused {
            Some(why) => Err(SqlError::Invalid(why.into())),
            None => Ok(Frame::rows(start, end)),
        }
    }
}

/// `CASE` over `when, then, ..., [else]`.
fn case(mut args: Vec<ExprNode>) -> Result<ExprNode, SqlError> {
    let n = args.len();
    let mut results: Vec<ExprNode> = args
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 2 == 1 || (n % 2 == 1 && *i == n - 1))
        .map(|(_, e)| e.clone())
        .collect();
    unify_literals(&mut results)?;
    let mut it = results.into_iter();
    for (i, a) in args.iter_mut().enumerate() {
        if i % 2 == 1 || (n % 2 == 1 && i == n - 1) {
            *a = it.next().expect("one result per slot");
        }
    }
    Ok(build_func(ExprType::Case, args)?)
}

/// `x [NOT] IN (items)`, as comparisons.
fn in_list(x: ExprNode, items: Vec<ExprNode>, negated: bool) -> Result<ExprNode, SqlError> {
    let mut any: Option<ExprNode> = None;
    for item in items {
        let eq = call(ExprType::Equal, vec![x.clone(), item])?;
        any = Some(match any {
            None => eq,
            Some(prev) => call(ExprType::Or, vec![prev, eq])?,
        });
    }
    let any = any.unwrap_or_else(|| lit_bool(false));
    if negated {
        call(ExprType::Not, vec![any])
    } else {
        Ok(any)
    }
}

/// Whether `name` (of `qualifier`) names scope column `c`: a column only its qualifier reaches (a hidden
/// row id) is named with it.
fn names_column(c: &ScopeColumn, qualifier: Option<&str>, name: &str) -> bool {
    c.name == name
        && match qualifier {
            None => !c.qualified_only,
            Some(q) => c.qualifier.as_deref() == Some(q),
        }
}

/// `ASC`/`DESC` and `NULLS FIRST`/`LAST` as PostgreSQL defaults them (NULLs largest).
pub(super) fn order_type(o: &ast::OrderByOptions) -> OrderType {
    let desc = matches!(o.sort, Some(ast::OrderBySort::Desc));
    OrderType {
        descending: desc,
        nulls_first: o.nulls_first.unwrap_or(desc),
    }
}

/// A literal value: numbers, strings (varchar), booleans, NULL (an untyped varchar).
fn bind_literal(v: &Value) -> Result<ExprNode, SqlError> {
    Ok(match v {
        Value::Number(n, _) => number(n)?,
        Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => ExprNode::Literal {
            value: Some(ScalarImpl::Utf8(s.as_str().into())),
            ty: DataType::Varchar,
        },
        Value::Boolean(b) => lit_bool(*b),
        Value::Null => ExprNode::Literal {
            value: None,
            ty: DataType::Varchar,
        },
        other => return Err(unsupported(format!("literal {other}"))),
    })
}

/// `TYPE 'text'`: the text parsed as the type.
fn bind_typed_string(ts: &ast::TypedString) -> Result<ExprNode, SqlError> {
    let ty = bind_data_type(&ts.data_type)?;
    let text = match &ts.value.value {
        Value::SingleQuotedString(s) => s.clone(),
        other => return Err(unsupported(format!("typed literal {other}"))),
    };
    Ok(ExprNode::Literal {
        value: from_text(&text, &ty)?,
        ty,
    })
}

/// `INTERVAL 'value' [unit]`: an interval literal.
fn bind_interval(iv: &ast::Interval) -> Result<ExprNode, SqlError> {
    let value = match iv.value.as_ref() {
        Ast::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => s.clone(),
            Value::Number(n, _) => n.clone(),
            other => return Err(unsupported(format!("interval {other}"))),
        },
        other => return Err(unsupported(format!("interval {other}"))),
    };
    let text = match &iv.leading_field {
        Some(f) if iv.last_field.is_none() => format!("{value} {f}"),
        None => value,
        Some(_) => return Err(unsupported(format!("interval {iv}"))),
    };
    Ok(ExprNode::Literal {
        value: from_text(&text, &DataType::Interval)?,
        ty: DataType::Interval,
    })
}

/// `e.name` on a struct: RisingWave's `Field` call with the field's position.
fn struct_field(e: ExprNode, name: &str) -> Result<ExprNode, SqlError> {
    let ty = e.return_type();
    let index = ty
        .as_struct()
        .and_then(|st| st.field(name))
        .map(|(i, _)| i)
        .ok_or_else(|| SqlError::Invalid(format!("column \"{name}\" not found in {ty}")))?;
    let index = ExprNode::Literal {
        value: Some(ScalarImpl::Int32(index as i32)),
        ty: DataType::Int32,
    };
    Ok(build_func(ExprType::Field, vec![e, index])?)
}

/// percentile_cont, percentile_disc and mode: aggregates of a `WITHIN GROUP (ORDER BY ..)`.
fn is_ordered_set(kind: AggKind) -> bool {
    matches!(
        kind,
        AggKind::PercentileCont | AggKind::PercentileDisc | AggKind::Mode
    )
}

fn invalid_ordered_set_args(name: &str) -> SqlError {
    SqlError::InvalidInputSyntax(format!(
        "invalid direct args or within group argument for `{name}` aggregation"
    ))
}

/// `expr COLLATE "C"` (or `"POSIX"`, the names case-sensitive): the value as it is, as RisingWave's
/// `bind_collate` (its only collations order strings by byte, as every comparison here does); the checks are
/// a column's `COLLATE`'s.
fn bind_collate(e: ExprNode, collation: &ast::ObjectName) -> Result<ExprNode, SqlError> {
    crate::frontend::ddl::check_collation(collation, &e.return_type())?;
    Ok(e)
}
