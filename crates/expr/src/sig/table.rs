//! The overloads of the functions resolved by [`super::resolve`]: for each function, its parameter types and
//! return type, as RisingWave's function registry lists them (integer and float overloads take every
//! combination of widths and return the wider).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use epochlab_common::DataType;
use epochlab_common::expr_node::ExprType;

#[derive(Clone, Debug)]
pub struct Sig {
    pub params: Vec<DataType>,
    pub ret: DataType,
}

/// The overloads of `func` (empty for functions bound by special rules).
pub fn overloads(func: ExprType) -> &'static [Sig] {
    static TABLE: OnceLock<BTreeMap<ExprType, Vec<Sig>>> = OnceLock::new();
    TABLE
        .get_or_init(build)
        .get(&func)
        .map_or(&[], Vec::as_slice)
}

const INTS: [DataType; 3] = [DataType::Int16, DataType::Int32, DataType::Int64];
const FLOATS: [DataType; 2] = [DataType::Float32, DataType::Float64];

/// The wider of two integer or two float types.
fn wider(a: &DataType, b: &DataType) -> DataType {
    let rank = |t: &DataType| match t {
        DataType::Int16 | DataType::Float32 => 0,
        DataType::Int32 | DataType::Float64 => 1,
        _ => 2,
    };
    if rank(a) >= rank(b) {
        a.clone()
    } else {
        b.clone()
    }
}

struct Builder(BTreeMap<ExprType, Vec<Sig>>);

impl Builder {
    fn add(&mut self, func: ExprType, params: &[DataType], ret: DataType) {
        self.0.entry(func).or_default().push(Sig {
            params: params.to_vec(),
            ret,
        });
    }

    /// Every pair of integer widths and every pair of float widths, returning the wider; and decimal.
    fn numeric_binary(&mut self, func: ExprType, floats: bool) {
        self.numeric_pairs(func, floats, None);
    }

    /// Like [`Self::numeric_binary`] with a fixed return type (comparisons) when `ret` is given.
    fn numeric_pairs(&mut self, func: ExprType, floats: bool, ret: Option<DataType>) {
        for family in [&INTS[..], if floats { &FLOATS[..] } else { &[] }] {
            for a in family {
                for b in family {
                    let r = ret.clone().unwrap_or_else(|| wider(a, b));
                    self.add(func, &[a.clone(), b.clone()], r);
                }
            }
        }
        let r = ret.unwrap_or(DataType::Decimal);
        self.add(func, &[DataType::Decimal, DataType::Decimal], r);
    }

    fn unary_same(&mut self, func: ExprType, types: &[DataType]) {
        for t in types {
            self.add(func, std::slice::from_ref(t), t.clone());
        }
    }
}

fn build() -> BTreeMap<ExprType, Vec<Sig>> {
    let mut b = Builder(BTreeMap::new());
    arithmetic(&mut b);
    temporal(&mut b);
    strings(&mut b);
    b.0
}

fn arithmetic(b: &mut Builder) {
    use DataType::*;
    use ExprType::*;
    for f in [Add, Subtract, Multiply, Divide] {
        b.numeric_binary(f, true);
    }
    b.numeric_binary(Modulus, false);
    for f in [
        Equal,
        NotEqual,
        LessThan,
        LessThanOrEqual,
        GreaterThan,
        GreaterThanOrEqual,
        IsDistinctFrom,
        IsNotDistinctFrom,
    ] {
        b.numeric_pairs(f, true, Some(Boolean));
    }
    for f in [BitwiseAnd, BitwiseOr, BitwiseXor] {
        for t in INTS {
            b.add(f, &[t.clone(), t.clone()], t.clone());
        }
    }
    for t in INTS {
        b.add(BitwiseShiftLeft, &[t.clone(), Int32], t.clone());
        b.add(BitwiseShiftRight, &[t.clone(), Int32], t.clone());
    }
    b.unary_same(BitwiseNot, &INTS);
    let numbers = [Int16, Int32, Int64, Float32, Float64, Decimal];
    b.unary_same(Neg, &numbers);
    b.unary_same(Neg, &[Interval]);
    b.unary_same(Abs, &numbers);
    for f in [Round, Ceil, Floor, Trunc, Sqrt, Exp, Ln, Log10, Sign] {
        b.unary_same(f, &[Float64, Decimal]);
    }
    b.unary_same(Cbrt, &[Float64]);
    for f in [
        Sin, Cos, Tan, Cot, Asin, Acos, Atan, Sinh, Cosh, Tanh, Coth, Asinh, Acosh, Atanh, Degrees,
        Radians,
    ] {
        b.unary_same(f, &[Float64]);
    }
    b.add(Atan2, &[Float64, Float64], Float64);
    b.add(Pi, &[], Float64);
    b.add(RoundDigit, &[Decimal, Int32], Decimal);
    b.add(Pow, &[Float64, Float64], Float64);
    b.add(Pow, &[Decimal, Decimal], Decimal);
}

fn temporal(b: &mut Builder) {
    use DataType::*;
    use ExprType::*;
    let sigs: &[(ExprType, [DataType; 2], DataType)] = &[
        (Add, [Date, Int32], Date),
        (Add, [Int32, Date], Date),
        (Subtract, [Date, Int32], Date),
        (Subtract, [Date, Date], Int32),
        (Add, [Date, Interval], Timestamp),
        (Add, [Interval, Date], Timestamp),
        (Subtract, [Date, Interval], Timestamp),
        (Add, [Date, Time], Timestamp),
        (Add, [Time, Date], Timestamp),
        (Add, [Timestamp, Interval], Timestamp),
        (Add, [Interval, Timestamp], Timestamp),
        (Subtract, [Timestamp, Interval], Timestamp),
        (Subtract, [Timestamp, Timestamp], Interval),
        (Add, [Timestamptz, Interval], Timestamptz),
        (Add, [Interval, Timestamptz], Timestamptz),
        (Subtract, [Timestamptz, Interval], Timestamptz),
        (Subtract, [Timestamptz, Timestamptz], Interval),
        (Add, [Time, Interval], Time),
        (Add, [Interval, Time], Time),
        (Subtract, [Time, Interval], Time),
        (Subtract, [Time, Time], Interval),
        (Add, [Interval, Interval], Interval),
        (Subtract, [Interval, Interval], Interval),
    ];
    for (f, params, ret) in sigs {
        b.add(*f, params, ret.clone());
    }
    for n in [Int16, Int32, Int64, Float32, Float64, Decimal] {
        b.add(Multiply, &[Interval, n.clone()], Interval);
        b.add(Multiply, &[n.clone(), Interval], Interval);
        b.add(Divide, &[Interval, n.clone()], Interval);
    }
    for src in [Date, Time, Timestamp, Timestamptz, Interval] {
        b.add(Extract, &[Varchar, src.clone()], Decimal);
        b.add(DatePart, &[Varchar, src], Float64);
    }
    for t in [Timestamp, Timestamptz, Interval] {
        b.add(DateTrunc, &[Varchar, t.clone()], t);
    }
    for (t, ret) in [
        (Date, Timestamp),
        (Timestamp, Timestamp),
        (Timestamptz, Timestamptz),
    ] {
        b.add(TumbleStart, &[t.clone(), Interval], ret.clone());
        b.add(TumbleStart, &[t, Interval, Interval], ret);
    }
    b.add(ToChar, &[Timestamp, Varchar], Varchar);
    b.add(ToChar, &[Timestamptz, Varchar], Varchar);
    // The zone-taking forms the session-time-zone rewrite makes (and a user may call).
    b.add(Extract, &[Varchar, Timestamptz, Varchar], Decimal);
    b.add(DatePart, &[Varchar, Timestamptz, Varchar], Float64);
    b.add(DateTrunc, &[Varchar, Timestamptz, Varchar], Timestamptz);
    b.add(ToChar, &[Timestamptz, Varchar, Varchar], Varchar);
    b.add(CastWithTimeZone, &[Timestamptz, Varchar], Varchar);
    b.add(CastWithTimeZone, &[Varchar, Varchar], Timestamptz);
    b.add(
        AddWithTimeZone,
        &[Timestamptz, Interval, Varchar],
        Timestamptz,
    );
    b.add(
        SubtractWithTimeZone,
        &[Timestamptz, Interval, Varchar],
        Timestamptz,
    );
    b.add(ToTimestamp, &[Float64], Timestamptz);
    b.add(AtTimeZone, &[Timestamp, Varchar], Timestamptz);
    b.add(AtTimeZone, &[Timestamptz, Varchar], Timestamp);
    // The two-argument form is bound, then given the session's zone (RisingWave's `rewritten` one).
    b.add(ToTimestamp1, &[Varchar, Varchar], Timestamptz);
    b.add(ToTimestamp1, &[Varchar, Varchar, Varchar], Timestamptz);
    b.add(CharToDate, &[Varchar, Varchar], Date);
    b.add(MakeDate, &[Int32, Int32, Int32], Date);
    b.add(
        MakeTimestamptz,
        &[Int32, Int32, Int32, Int32, Int32, Float64],
        Timestamptz,
    );
    b.add(
        MakeTimestamptz,
        &[Int32, Int32, Int32, Int32, Int32, Float64, Varchar],
        Timestamptz,
    );
}

fn strings(b: &mut Builder) {
    use DataType::{Boolean as B, Int32 as I, Varchar as V};
    use ExprType::*;
    let sigs: &[(ExprType, &[DataType], DataType)] = &[
        (Like, &[V, V], B),
        (Like, &[V, V, V], B),
        (ILike, &[V, V], B),
        (ILike, &[V, V, V], B),
        (Lower, &[V], V),
        (Upper, &[V], V),
        (Reverse, &[V], V),
        (Initcap, &[V], V),
        (Md5, &[V], V),
        (Length, &[V], I),
        (CharLength, &[V], I),
        (OctetLength, &[V], I),
        (OctetLength, &[DataType::Bytea], I),
        (Length, &[DataType::Bytea], I),
        (Ascii, &[V], I),
        (Substr, &[V, I], V),
        (Substr, &[V, I, I], V),
        (Trim, &[V], V),
        (Trim, &[V, V], V),
        (Ltrim, &[V], V),
        (Ltrim, &[V, V], V),
        (Rtrim, &[V], V),
        (Rtrim, &[V, V], V),
        (Replace, &[V, V, V], V),
        (Translate, &[V, V, V], V),
        (Position, &[V, V], I),
        (SplitPart, &[V, V, I], V),
        (Left, &[V, I], V),
        (Right, &[V, I], V),
        (Repeat, &[V, I], V),
        (Lpad, &[V, I], V),
        (Lpad, &[V, I, V], V),
        (Rpad, &[V, I], V),
        (Rpad, &[V, I, V], V),
        (Chr, &[I], V),
        (StartsWith, &[V, V], B),
        (RegexpCount, &[V, V], I),
        (RegexpReplace, &[V, V, V], V),
        (RegexpReplace, &[V, V, V, V], V),
    ];
    for (f, params, ret) in sigs {
        b.add(*f, params, ret.clone());
    }
    let j = DataType::Jsonb;
    for key in [V, I] {
        b.add(JsonbAccess, &[j.clone(), key.clone()], j.clone());
        b.add(JsonbAccessStr, &[j.clone(), key], V);
    }
    b.add(JsonbTypeof, std::slice::from_ref(&j), V);
    b.add(JsonbArrayLength, &[j], I);
    b.add(RegexpMatch, &[V, V], DataType::List(Box::new(V)));
    b.add(RegexpMatch, &[V, V, V], DataType::List(Box::new(V)));
    for f in [And, Or] {
        b.add(f, &[B, B], B);
    }
    for f in [Not, IsTrue, IsNotTrue, IsFalse, IsNotFalse] {
        b.add(f, &[B], B);
    }
}
