//! Expressions as data: what a plan carries (a project list, a filter predicate, an aggregate call). Evaluation
//! lives in `epochlab-expr`; names follow RisingWave's `ExprType`, `AggKind` and `TableFunctionType`.

use serde::{Deserialize, Serialize};

use crate::memcmp::OrderType;
use crate::types::{DataType, Datum};

/// A typed expression tree. `Call::ret` is set by `epochlab_expr::sig::build_func`, which also inserts the
/// implicit casts, so every call's arguments already have the types its overload expects.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum ExprNode {
    InputRef {
        index: usize,
        ty: DataType,
    },
    Literal {
        #[serde(with = "crate::value_encoding::serde_datum")]
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
            ExprNode::InputRef { ty, .. } | ExprNode::Literal { ty, .. } => ty.clone(),
            ExprNode::Call { ret, .. } => ret.clone(),
        }
    }

    pub fn input_ref(index: usize, ty: DataType) -> Self {
        ExprNode::InputRef { index, ty }
    }

    pub fn literal(value: Datum, ty: DataType) -> Self {
        ExprNode::Literal { value, ty }
    }

    /// `$col - c` over a BIGINT column (a watermark's usual `ts - lag`).
    pub fn bigint_minus(col: usize, c: i64) -> Self {
        ExprNode::Call {
            func: ExprType::Subtract,
            args: vec![
                ExprNode::input_ref(col, DataType::Int64),
                ExprNode::literal(Some(crate::types::ScalarImpl::Int64(c)), DataType::Int64),
            ],
            ret: DataType::Int64,
        }
    }

    /// A NULL of type `ty`.
    pub fn null(ty: DataType) -> Self {
        ExprNode::Literal { value: None, ty }
    }

    /// The literal's value, when this is a literal.
    pub fn as_literal(&self) -> Option<&Datum> {
        match self {
            ExprNode::Literal { value, .. } => Some(value),
            _ => None,
        }
    }

    /// The input columns this expression reads, each once, ascending.
    pub fn input_refs(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.collect_input_refs(&mut out);
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether a watermark on input column `col` is one on this expression's value (RisingWave's
    /// `WatermarkAnalyzer` deriving `Watermark(col)`): the column itself, the column plus or minus a
    /// constant (`ts - interval '5 minutes'`, also in a session time zone), a tumble's start over it. Such an expression never decreases
    /// as the column rises and reads no other column.
    pub fn derives_watermark(&self, col: usize) -> bool {
        match self {
            ExprNode::InputRef { index, .. } => *index == col,
            ExprNode::Literal { .. } => false,
            ExprNode::Call { func, args, .. } => match (func, args.as_slice()) {
                (ExprType::Add, [a, b]) => {
                    (a.derives_watermark(col) && b.is_constant())
                        || (a.is_constant() && b.derives_watermark(col))
                }
                (ExprType::Subtract, [a, b]) => a.derives_watermark(col) && b.is_constant(),
                // The session-time-zone forms of `ts ± interval` (RisingWave's `AddWithTimeZone`,
                // `SubtractWithTimeZone`: a constant interval and zone).
                (ExprType::AddWithTimeZone | ExprType::SubtractWithTimeZone, [a, b, z]) => {
                    a.derives_watermark(col) && b.is_constant() && z.is_constant()
                }
                (ExprType::TumbleStart, [a, rest @ ..]) => {
                    a.derives_watermark(col) && rest.iter().all(ExprNode::is_constant)
                }
                _ => false,
            },
        }
    }

    /// Whether the expression has the same value over every row: no column read, no `now()` or
    /// `proctime()`.
    pub fn is_constant(&self) -> bool {
        match self {
            ExprNode::InputRef { .. } => false,
            ExprNode::Literal { .. } => true,
            ExprNode::Call { func, args, .. } => {
                !matches!(func, ExprType::Now | ExprType::Proctime)
                    && args.iter().all(ExprNode::is_constant)
            }
        }
    }

    fn collect_input_refs(&self, out: &mut Vec<usize>) {
        match self {
            ExprNode::InputRef { index, .. } => out.push(*index),
            ExprNode::Literal { .. } => {}
            ExprNode::Call { args, .. } => args.iter().for_each(|a| a.collect_input_refs(out)),
        }
    }
}

/// Scalar functions and operators, by RisingWave's names. A few are epochlab's own, where RisingWave's
/// binder rewrites the SQL into another call: `Nullif` and `Concat` are kept as calls here (BETWEEN is
/// `>= AND <=`, as RisingWave binds it).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExprType {
    // arithmetic
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulus,
    Neg,
    Abs,
    Round,
    RoundDigit,
    Ceil,
    Floor,
    Trunc,
    Pow,
    Sqrt,
    Cbrt,
    Exp,
    Ln,
    Log10,
    Sign,
    Sin,
    Cos,
    Tan,
    Cot,
    Asin,
    Acos,
    Atan,
    Atan2,
    Sinh,
    Cosh,
    Tanh,
    Coth,
    Asinh,
    Acosh,
    Atanh,
    Degrees,
    Radians,
    Pi,
    BitwiseAnd,
    BitwiseOr,
    BitwiseXor,
    BitwiseNot,
    BitwiseShiftLeft,
    BitwiseShiftRight,
    // comparison and logic
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
    In,
    Case,
    Coalesce,
    Nullif,
    Greatest,
    Least,
    Cast,
    // strings
    Like,
    ILike,
    ConcatOp,
    Concat,
    ConcatWs,
    Lower,
    Upper,
    Length,
    CharLength,
    OctetLength,
    Substr,
    Trim,
    Ltrim,
    Rtrim,
    Replace,
    Position,
    SplitPart,
    Left,
    Right,
    Repeat,
    Reverse,
    Lpad,
    Rpad,
    Initcap,
    Ascii,
    Chr,
    StartsWith,
    Translate,
    Md5,
    ToChar,
    RegexpMatch,
    RegexpReplace,
    RegexpCount,
    Format,
    /// A boolean's output text (`t`/`f`), as `concat` prints it.
    BoolOut,
    // date and time
    Extract,
    DatePart,
    DateTrunc,
    TumbleStart,
    ToTimestamp,
    ToTimestamp1,
    MakeTimestamptz,
    CharToDate,
    MakeDate,
    AtTimeZone,
    /// A cast between `timestamptz` and `varchar` in a zone (the session's, given by the front end).
    CastWithTimeZone,
    /// `timestamptz ± interval` in a zone: days and months move the wall-clock time there.
    AddWithTimeZone,
    SubtractWithTimeZone,
    /// The epoch's time, taken from the evaluation context, never from a clock.
    Now,
    Proctime,
    // arrays, structs, jsonb
    Array,
    ArrayAccess,
    ArrayLength,
    Cardinality,
    ArrayToString,
    ArrayCat,
    ArrayAppend,
    ArrayPrepend,
    ArrayContains,
    Row,
    Field,
    JsonbAccess,
    JsonbAccessStr,
    JsonbTypeof,
    JsonbArrayLength,
    Vnode,
}

impl ExprType {
    /// The call a SQL function name (lower case) binds to, for names that are plain function calls.
    /// Operators (`+`, `=`, `||`, `LIKE`) and syntax (`CASE`, `CAST`, `EXTRACT`, `IN`) are bound by the parser's
    /// shape, not here.
    pub fn from_function_name(name: &str) -> Option<ExprType> {
        Self::numeric_function(name)
            .or_else(|| Self::conditional_function(name))
            .or_else(|| Self::string_function(name))
            .or_else(|| Self::datetime_function(name))
            .or_else(|| Self::collection_function(name))
    }

    /// A numeric function: arithmetic, rounding, powers and logarithms, trigonometry.
    fn numeric_function(name: &str) -> Option<ExprType> {
        use ExprType::*;
        Some(match name {
            "abs" => Abs,
            "round" => Round,
            "ceil" | "ceiling" => Ceil,
            "floor" => Floor,
            "trunc" => Trunc,
            "pow" | "power" => Pow,
            "sqrt" => Sqrt,
            "cbrt" => Cbrt,
            "exp" => Exp,
            "ln" => Ln,
            "log" | "log10" => Log10,
            "sign" => Sign,
            "sin" => Sin,
            "cos" => Cos,
            "tan" => Tan,
            "cot" => Cot,
            "asin" => Asin,
            "acos" => Acos,
            "atan" => Atan,
            "atan2" => Atan2,
            "sinh" => Sinh,
            "cosh" => Cosh,
            "tanh" => Tanh,
            "coth" => Coth,
            "asinh" => Asinh,
            "acosh" => Acosh,
            "atanh" => Atanh,
            "degrees" => Degrees,
            "radians" => Radians,
            "pi" => Pi,
            "mod" => Modulus,
            _ => return None,
        })
    }

    /// A conditional function: the first non-NULL, NULLIF, the greatest or least.
    fn conditional_function(name: &str) -> Option<ExprType> {
        use ExprType::*;
        Some(match name {
            "coalesce" => Coalesce,
            "nullif" => Nullif,
            "greatest" => Greatest,
            "least" => Least,
            _ => return None,
        })
    }

    /// A string function.
    fn string_function(name: &str) -> Option<ExprType> {
        use ExprType::*;
        Some(match name {
            "concat" => Concat,
            "concat_ws" => ConcatWs,
            "lower" => Lower,
            "upper" => Upper,
            "length" => Length,
            "char_length" | "character_length" => CharLength,
            "octet_length" => OctetLength,
            "substr" | "substring" => Substr,
            "trim" | "btrim" => Trim,
            "ltrim" => Ltrim,
            "rtrim" => Rtrim,
            "replace" => Replace,
            "strpos" | "position" => Position,
            "split_part" => SplitPart,
            "left" => Left,
            "right" => Right,
            "repeat" => Repeat,
            "reverse" => Reverse,
            "lpad" => Lpad,
            "rpad" => Rpad,
            "initcap" => Initcap,
            "ascii" => Ascii,
            "chr" => Chr,
            "starts_with" => StartsWith,
            "translate" => Translate,
            "md5" => Md5,
            "to_char" => ToChar,
            "regexp_match" => RegexpMatch,
            "regexp_replace" => RegexpReplace,
            "regexp_count" => RegexpCount,
            "format" => Format,
            _ => return None,
        })
    }

    /// A date and time function.
    fn datetime_function(name: &str) -> Option<ExprType> {
        use ExprType::*;
        Some(match name {
            "date_part" => DatePart,
            "date_trunc" => DateTrunc,
            "tumble_start" => TumbleStart,
            "to_timestamp" => ToTimestamp,
            "to_date" => CharToDate,
            "make_date" => MakeDate,
            "make_timestamptz" => MakeTimestamptz,
            "now" | "current_timestamp" => Now,
            "proctime" => Proctime,
            _ => return None,
        })
    }

    /// An array or JSONB function, or `rw_vnode`.
    fn collection_function(name: &str) -> Option<ExprType> {
        use ExprType::*;
        Some(match name {
            "array_length" | "array_upper" => ArrayLength,
            "cardinality" => Cardinality,
            "array_to_string" | "array_join" => ArrayToString,
            "array_cat" => ArrayCat,
            "array_append" => ArrayAppend,
            "array_prepend" => ArrayPrepend,
            "array_contains" | "arraycontains" => ArrayContains,
            "jsonb_typeof" => JsonbTypeof,
            "jsonb_array_length" => JsonbArrayLength,
            "rw_vnode" => Vnode,
            _ => return None,
        })
    }
}

/// An aggregate call over the columns of its input.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct AggCall {
    pub kind: AggKind,
    /// Input columns of the arguments (empty for `count(*)`).
    pub args: Vec<usize>,
    pub arg_types: Vec<DataType>,
    pub ret: DataType,
    pub distinct: bool,
    /// `ORDER BY` inside the call (string_agg, array_agg, first_value, ...): input column and order.
    pub order_by: Vec<(usize, OrderType)>,
    /// `FILTER (WHERE ...)`, over the input row.
    pub filter: Option<ExprNode>,
}

/// Aggregate functions, by RisingWave's names. `Count` with no arguments is `count(*)`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AggKind {
    Count,
    Sum,
    /// The sum of counts in two-phase aggregation: 0 instead of NULL over no rows.
    Sum0,
    Avg,
    Min,
    Max,
    StringAgg,
    ArrayAgg,
    BoolAnd,
    BoolOr,
    BitAnd,
    BitOr,
    BitXor,
    FirstValue,
    LastValue,
    JsonbAgg,
    JsonbObjectAgg,
    ApproxCountDistinct,
    StddevPop,
    StddevSamp,
    VarPop,
    VarSamp,
    /// Ordered-set aggregates (`... WITHIN GROUP (ORDER BY x)`): `args` = [x, fraction column] for the
    /// percentiles (the fraction, RisingWave's direct argument, is a constant column of the input), [x]
    /// for mode.
    PercentileCont,
    PercentileDisc,
    Mode,
}

impl AggKind {
    pub fn from_function_name(name: &str) -> Option<AggKind> {
        use AggKind::*;
        Some(match name {
            "count" => Count,
            "sum" => Sum,
            "sum0" => Sum0,
            "avg" => Avg,
            "min" => Min,
            "max" => Max,
            "string_agg" => StringAgg,
            "array_agg" => ArrayAgg,
            "bool_and" | "every" => BoolAnd,
            "bool_or" => BoolOr,
            "bit_and" => BitAnd,
            "bit_or" => BitOr,
            "bit_xor" => BitXor,
            "first_value" => FirstValue,
            "last_value" => LastValue,
            "jsonb_agg" => JsonbAgg,
            "jsonb_object_agg" => JsonbObjectAgg,
            "approx_count_distinct" => ApproxCountDistinct,
            "stddev_pop" => StddevPop,
            "stddev_samp" | "stddev" => StddevSamp,
            "var_pop" => VarPop,
            "var_samp" | "variance" => VarSamp,
            "percentile_cont" => PercentileCont,
            "percentile_disc" => PercentileDisc,
            "mode" => Mode,
            _ => return None,
        })
    }
}

/// Set-returning functions in FROM or the select list.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TableFunctionType {
    GenerateSeries,
    Range,
    Unnest,
    /// `information_schema._pg_expandarray(array)`: rows of struct (x element, n position).
    PgExpandArray,
    /// `regexp_matches(s, pattern [, flags])`: a `varchar[]` of capture groups per match (every match with
    /// flag `g`, else the first).
    RegexpMatches,
}

impl TableFunctionType {
    pub fn from_function_name(name: &str) -> Option<TableFunctionType> {
        Some(match name {
            "generate_series" => TableFunctionType::GenerateSeries,
            "range" => TableFunctionType::Range,
            "unnest" => TableFunctionType::Unnest,
            "_pg_expandarray" => TableFunctionType::PgExpandArray,
            "regexp_matches" => TableFunctionType::RegexpMatches,
            _ => return None,
        })
    }
}

/// Window functions (`f(...) OVER (...)`), by RisingWave's names.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WindowFuncKind {
    RowNumber,
    Rank,
    DenseRank,
    Lag,
    Lead,
    Aggregate(AggKind),
}

impl WindowFuncKind {
    /// The kind of a function name used with OVER: the ranking functions, lag/lead, or an aggregate.
    pub fn from_function_name(name: &str) -> Option<WindowFuncKind> {
        Some(match name {
            "row_number" => WindowFuncKind::RowNumber,
            "rank" => WindowFuncKind::Rank,
            "dense_rank" => WindowFuncKind::DenseRank,
            "lag" => WindowFuncKind::Lag,
            "lead" => WindowFuncKind::Lead,
            other => WindowFuncKind::Aggregate(AggKind::from_function_name(other)?),
        })
    }
}

/// A bound of a ROWS frame (the only frame unit RisingWave supports here).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(usize),
    CurrentRow,
    Following(usize),
    UnboundedFollowing,
}

/// `ROWS BETWEEN start AND end [EXCLUDE CURRENT ROW]`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    pub start: FrameBound,
    pub end: FrameBound,
    pub exclude_current_row: bool,
}

impl Frame {
    pub const fn rows(start: FrameBound, end: FrameBound) -> Self {
        Self {
            start,
            end,
            exclude_current_row: false,
        }
    }
}

/// A window function call over the columns of its input, evaluated per partition in ORDER BY order.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct WindowFuncCall {
    pub kind: WindowFuncKind,
    /// Input columns of the arguments; for lag/lead only the value (the offset is in `offset`).
    pub args: Vec<usize>,
    pub arg_types: Vec<DataType>,
    pub ret: DataType,
    /// The frame of an aggregate; `None` is RisingWave's default (the whole partition without ORDER BY,
    /// else from the first row to the current row).
    pub frame: Option<Frame>,
    /// lag/lead's offset (1 by default).
    pub offset: usize,
}
