//! The state of one aggregate call over a changing input: every state here is retractable (a delete undoes
//! an insert of the same row), as RisingWave's streaming aggregates need. Min, max, first/last value,
//! string_agg, array_agg and the jsonb aggregates keep a multiset of the live values.

use std::collections::BTreeMap;

use epochlab_common::expr_node::{AggCall, AggKind};
use epochlab_common::memcmp::encode_datum;
use epochlab_common::types::{JsonbVal, ListValue};
use epochlab_common::{DataType, Datum, Op, OrderType, OwnedRow, ScalarImpl};

use super::accumulate::{self, Sum};
use crate::error::{ExprError, Result};
use crate::eval;
use crate::scalar::jsonb::to_jsonb;

/// A multiset of rows keyed by a memcomparable encoding (the key order is the output order).
#[derive(Clone, Debug, Default)]
struct Multiset {
    entries: BTreeMap<Vec<u8>, (Vec<Datum>, u64)>,
}

impl Multiset {
    /// Add or remove one copy; returns the copy count after the change.
    fn apply(&mut self, key: Vec<u8>, values: Vec<Datum>, insert: bool) -> Result<u64> {
        if insert {
            let e = self.entries.entry(key).or_insert((values, 0));
            e.1 += 1;
            return Ok(e.1);
        }
        let Some(e) = self.entries.get_mut(&key) else {
            return Err(ExprError::InvalidState(
                "delete of a value the aggregate never saw".into(),
            ));
        };
        e.1 -= 1;
        let left = e.1;
        if left == 0 {
            self.entries.remove(&key);
        }
        Ok(left)
    }

    /// Every live row, each as many times as it was inserted, in key order.
    fn rows(&self) -> impl DoubleEndedIterator<Item = &Vec<Datum>> {
        self.entries
            .values()
            .flat_map(|(v, n)| std::iter::repeat_n(v, *n as usize))
    }
}

/// DISTINCT: copies of each argument value, and the aggregate key its first copy went in with.
#[derive(Clone, Debug, Default)]
struct DistinctSet {
    entries: BTreeMap<Vec<u8>, (Vec<u8>, u64)>,
}

impl DistinctSet {
    /// Count a copy in or out; the aggregate key to apply when the change reaches the aggregate (the
    /// first copy in, the last copy out), `None` otherwise.
    fn apply(
        &mut self,
        value: Vec<u8>,
        inner_key: Vec<u8>,
        insert: bool,
    ) -> Result<Option<Vec<u8>>> {
        if insert {
            let e = self.entries.entry(value).or_insert((inner_key, 0));
            e.1 += 1;
            return Ok((e.1 == 1).then(|| e.0.clone()));
        }
        let Some(e) = self.entries.get_mut(&value) else {
            return Err(ExprError::InvalidState(
                "delete of a value the aggregate never saw".into(),
            ));
        };
        e.1 -= 1;
        if e.1 > 0 {
            return Ok(None);
        }
        Ok(self.entries.remove(&value).map(|(k, _)| k))
    }
}

fn key_of(datums: &[Datum], orders: &[OrderType]) -> Vec<u8> {
    let mut buf = Vec::new();
    for (i, d) in datums.iter().enumerate() {
        encode_datum(d, orders.get(i).copied().unwrap_or_default(), &mut buf);
    }
    buf
}

#[derive(Clone, Debug)]
enum Inner {
    Count(i64),
    /// `seen`: a value went in since the state was created. RisingWave's sum state starts NULL and only
    /// returns to NULL when the group is emptied (the executor then starts a new state): a sum whose
    /// values were all retracted while the group keeps rows is 0, not NULL.
    Sum {
        sum: Sum,
        count: i64,
        seen: bool,
    },
    Variance {
        sum: Sum,
        sum_sq: Sum,
        count: i64,
    },
    Ordered(Multiset),
    Bools {
        trues: i64,
        falses: i64,
    },
    /// Per-bit counts of set bits and the row count (bit_and/bit_or); xor is its own inverse.
    Bits(Box<Bits>),
}

#[derive(Clone, Debug)]
struct Bits {
    set: [i64; 64],
    rows: i64,
    xor: i64,
}

/// How an ordered state orders rows its call's sort key ties (RisingWave's materialized-input state keys
/// them by the upstream stream key, or by the argument for a DISTINCT call; a batch aggregate sees rows in
/// input order).
#[derive(Clone, Debug)]
enum TieBreak {
    /// By the arguments' values (a DISTINCT call; a state without a stream key).
    Args,
    /// By these input columns, the upstream stream key.
    StreamKey(Vec<usize>),
    /// By arrival: the next row's sequence number.
    Arrival(i64),
}

/// The state of one aggregate call.
#[derive(Clone, Debug)]
pub struct AggState {
    call: AggCall,
    inner: Inner,
    distinct: Option<DistinctSet>,
    tie: TieBreak,
}

impl AggState {
    pub fn new(call: &AggCall) -> Self {
        use AggKind::*;
        let arg = call.arg_types.first().cloned().unwrap_or(DataType::Int64);
        let inner = match call.kind {
            Count | ApproxCountDistinct => Inner::Count(0),
            Sum | Sum0 | Avg => Inner::Sum {
                sum: accumulate::Sum::zero_for(&arg),
                count: 0,
                seen: false,
            },
            StddevPop | StddevSamp | VarPop | VarSamp => {
                let sq = if matches!(arg, DataType::Float32 | DataType::Float64) {
                    arg.clone()
                } else {
                    DataType::Decimal
                };
                Inner::Variance {
                    sum: accumulate::Sum::zero_for(&arg),
                    sum_sq: accumulate::Sum::zero_for(&sq),
                    count: 0,
                }
            }
            BoolAnd | BoolOr => Inner::Bools {
                trues: 0,
                falses: 0,
            },
            BitAnd | BitOr | BitXor => Inner::Bits(Box::new(Bits {
                set: [0; 64],
                rows: 0,
                xor: 0,
            })),
            _ => Inner::Ordered(Multiset::default()),
        };
        let distinct =
            (call.distinct || call.kind == ApproxCountDistinct).then(DistinctSet::default);
        Self {
            call: call.clone(),
            inner,
            distinct,
            tie: TieBreak::Args,
        }
    }

    /// A streaming state whose rows tie-break by the input columns `stream_key` (empty: by arguments).
    pub fn with_stream_key(call: &AggCall, stream_key: &[usize]) -> Self {
        let mut state = Self::new(call);
        if !stream_key.is_empty() && !call.distinct {
            state.tie = TieBreak::StreamKey(stream_key.to_vec());
        }
        state
    }

    /// A batch state, never retracted, whose rows tie-break by arrival (input order).
    pub fn in_arrival_order(call: &AggCall) -> Self {
        let mut state = Self::new(call);
        if !call.distinct {
            state.tie = TieBreak::Arrival(0);
        }
        state
    }

    /// The row's sort key as RisingWave's materialized-input state orders it: min by the argument, max by
    /// it descending, last_value by the reversed ORDER BY (each then takes the first row), percentile and
    /// mode by their ordered argument, the others by their ORDER BY; then the tie-break.
    fn sort_key(&mut self, row: &OwnedRow, args: &[Datum]) -> Vec<u8> {
        use AggKind::*;
        let asc = OrderType::ascending();
        let mut key: Vec<Datum> = Vec::new();
        let mut orders: Vec<OrderType> = Vec::new();
        let order_by = self
            .call
            .order_by
            .iter()
            .map(|(i, o)| (row[*i].clone(), *o));
        match self.call.kind {
            Min | Max => {
                key.push(args[0].clone());
                orders.push(if self.call.kind == Max {
                    OrderType::descending()
                } else {
                    asc
                });
            }
            LastValue => (key, orders) = order_by.map(|(d, o)| (d, o.reverse())).unzip(),
            _ => (key, orders) = order_by.unzip(),
        }
        if matches!(self.call.kind, PercentileDisc | PercentileCont | Mode) {
            key.extend(args.iter().cloned());
        }
        match &mut self.tie {
            TieBreak::Args => key.extend(args.iter().cloned()),
            TieBreak::StreamKey(cols) => key.extend(cols.iter().map(|&c| row[c].clone())),
            TieBreak::Arrival(n) => {
                key.push(Some(ScalarImpl::Int64(*n)));
                *n += 1;
            }
        }
        orders.resize(key.len(), asc);
        key_of(&key, &orders)
    }

    /// Whether a row with these arguments is skipped: NULL arguments are, except where the aggregate keeps
    /// them (array_agg, first/last value, jsonb_agg); string_agg skips a NULL value.
    fn skips(&self, args: &[Datum]) -> bool {
        use AggKind::*;
        match self.call.kind {
            ArrayAgg | FirstValue | LastValue | JsonbAgg => false,
            JsonbObjectAgg => args.first().is_some_and(Option::is_none),
            _ => args.first().is_some_and(Option::is_none),
        }
    }

    /// Feed one input row: inserts add it, deletes retract it.
    pub fn apply(&mut self, op: Op, row: &OwnedRow) -> Result<()> {
        if let Some(filter) = &self.call.filter
            && !matches!(eval(filter, row)?, Some(ScalarImpl::Bool(true)))
        {
            return Ok(());
        }
        let args: Vec<Datum> = self.call.args.iter().map(|&i| row[i].clone()).collect();
        if self.skips(&args) {
            return Ok(());
        }
        let insert = op.is_insert();
        let mut inner_key = self.sort_key(row, &args);
        if let Some(seen) = &mut self.distinct {
            // Only a value's first copy in and last copy out reach the aggregate, under the key the
            // first copy had (its ORDER BY columns may differ from a later copy's).
            match seen.apply(key_of(&args, &[]), inner_key, insert)? {
                Some(k) => inner_key = k,
                None => return Ok(()),
            }
        }
        self.apply_inner(insert, args, inner_key)
    }

    fn apply_inner(&mut self, insert: bool, args: Vec<Datum>, key: Vec<u8>) -> Result<()> {
        let sign: i64 = if insert { 1 } else { -1 };
        let first = args.first().cloned().flatten();
        match &mut self.inner {
            Inner::Count(n) => *n += sign,
            Inner::Sum { sum, count, seen } => {
                sum.add(first.as_ref().expect("non-NULL"), sign)?;
                *count += sign;
                *seen = true;
            }
            Inner::Variance { sum, sum_sq, count } => {
                let v = first.as_ref().expect("non-NULL");
                sum.add(v, sign)?;
                sum_sq.add(&accumulate::square(v)?, sign)?;
                *count += sign;
            }
            Inner::Bools { trues, falses } => match first {
                Some(ScalarImpl::Bool(true)) => *trues += sign,
                _ => *falses += sign,
            },
            Inner::Bits(b) => {
                let v = accumulate::int_of(first.as_ref().expect("non-NULL"))?;
                b.rows += sign;
                b.xor ^= v;
                for (bit, n) in b.set.iter_mut().enumerate() {
                    if (v >> bit) & 1 == 1 {
                        *n += sign;
                    }
                }
            }
            Inner::Ordered(m) => {
                m.apply(key, args, insert)?;
            }
        }
        Ok(())
    }

    /// The aggregate's current value. A value that cannot be represented (an overflowing sum) is NULL;
    /// [`AggState::try_output`] reports it.
    pub fn output(&self) -> Datum {
        self.try_output().unwrap_or(None)
    }

    /// The aggregate's current value, or the error computing it (sum out of range).
    pub fn try_output(&self) -> Result<Datum> {
        use AggKind::*;
        let ret = &self.call.ret;
        Ok(match (&self.inner, self.call.kind) {
            (Inner::Count(n), _) => Some(ScalarImpl::Int64(*n)),
            (Inner::Sum { sum, .. }, Sum0) => Some(sum.value(ret)?),
            (Inner::Sum { sum, count, .. }, Avg) => accumulate::avg(sum, *count, ret)?,
            (Inner::Sum { seen: false, .. }, _) => None,
            (Inner::Sum { sum, .. }, _) => Some(sum.value(ret)?),
            (Inner::Variance { sum, sum_sq, count }, kind) => {
                let sample = matches!(kind, StddevSamp | VarSamp);
                let root = matches!(kind, StddevSamp | StddevPop);
                accumulate::variance(sum, sum_sq, *count, sample, root)?
            }
            (Inner::Bools { trues, falses }, _) if trues + falses == 0 => None,
            (Inner::Bools { falses, .. }, BoolAnd) => Some(ScalarImpl::Bool(*falses == 0)),
            (Inner::Bools { trues, .. }, _) => Some(ScalarImpl::Bool(*trues > 0)),
            (Inner::Bits(b), _) if b.rows == 0 => None,
            (Inner::Bits(b), kind) => Some(int_out(ret, bits_out(kind, b))),
            (Inner::Ordered(m), kind) => ordered_out(kind, &self.call.arg_types, m)?,
        })
    }
}

fn int_out(ret: &DataType, v: i64) -> ScalarImpl {
    match ret {
        DataType::Int16 => ScalarImpl::Int16(v as i16),
        DataType::Int32 => ScalarImpl::Int32(v as i32),
        _ => ScalarImpl::Int64(v),
    }
}

fn bits_out(kind: AggKind, b: &Bits) -> i64 {
    if kind == AggKind::BitXor {
        return b.xor;
    }
    let mut out = 0i64;
    for (bit, n) in b.set.iter().enumerate() {
        let on = if kind == AggKind::BitAnd {
            *n == b.rows
        } else {
            *n > 0
        };
        if on {
            out |= 1 << bit;
        }
    }
    out
}

fn ordered_out(kind: AggKind, arg_types: &[DataType], m: &Multiset) -> Result<Datum> {
    let arg_type = |i: usize| arg_types.get(i).unwrap_or(&DataType::Varchar);
    use AggKind::*;
    let mut rows = m.rows();
    Ok(match kind {
        Min | Max | FirstValue | LastValue => rows.next().and_then(|v| v[0].clone()),
        StringAgg => string_agg(m),
        ArrayAgg if m.entries.is_empty() => None,
        ArrayAgg => Some(ScalarImpl::List(ListValue::new(
            m.rows().map(|v| v[0].clone()).collect(),
        ))),
        JsonbAgg if m.entries.is_empty() => None,
        JsonbAgg => {
            let items = m
                .rows()
                .map(|v| to_jsonb(&v[0], arg_type(0)))
                .collect::<Result<_>>()?;
            Some(ScalarImpl::Jsonb(JsonbVal::new(serde_json::Value::Array(
                items,
            ))))
        }
        JsonbObjectAgg if m.entries.is_empty() => None,
        JsonbObjectAgg => {
            let mut obj = serde_json::Map::new();
            for v in m.rows() {
                let Some(ScalarImpl::Utf8(k)) = &v[0] else {
                    continue;
                };
                let value = to_jsonb(v.get(1).unwrap_or(&None), arg_type(1))?;
                obj.insert(k.to_string(), value);
            }
            Some(ScalarImpl::Jsonb(JsonbVal::new(serde_json::Value::Object(
                obj,
            ))))
        }
        PercentileDisc | PercentileCont => percentile(kind, m)?,
        Mode => mode(m),
        _ => return Err(ExprError::UnsupportedFunction(format!("{kind:?}"))),
    })
}

/// The fraction, the second argument of every row (a constant column).
fn fraction(m: &Multiset) -> Result<Option<f64>> {
    let Some(v) = m.rows().next() else {
        return Ok(None);
    };
    let f = match v.get(1) {
        Some(None) => return Ok(None),
        Some(Some(ScalarImpl::Float64(f))) => f.0,
        Some(Some(ScalarImpl::Decimal(d))) => crate::scalar::decimal::to_f64(*d),
        other => {
            return Err(ExprError::InvalidState(format!(
                "percentile fraction {other:?}"
            )));
        }
    };
    if !(0.0..=1.0).contains(&f) {
        return Err(ExprError::invalid_param(
            "fraction",
            format!("percentile value {f} is not between 0 and 1"),
        ));
    }
    Ok(Some(f))
}

/// percentile_disc: the first value at or past the fraction of the ordered values; percentile_cont: the
/// linear interpolation between the two values around it (as double precision).
fn percentile(kind: AggKind, m: &Multiset) -> Result<Datum> {
    let Some(f) = fraction(m)? else {
        return Ok(None);
    };
    let values: Vec<&Datum> = m.rows().map(|v| &v[0]).collect();
    let n = values.len();
    if kind == AggKind::PercentileDisc {
        let idx = ((f * n as f64).ceil() as usize)
            .saturating_sub(1)
            .min(n - 1);
        return Ok(values[idx].clone());
    }
    let pos = f * (n - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    let as_f64 = |d: &Datum| match d {
        Some(v) => match crate::cast::cast_value(v, &DataType::Float64)? {
            ScalarImpl::Float64(f) => Ok(f.0),
            other => Err(ExprError::InvalidState(format!(
                "percentile_cont of {other:?}"
            ))),
        },
        None => Err(ExprError::InvalidState("percentile_cont of NULL".into())),
    };
    let (a, b) = (as_f64(values[lo])?, as_f64(values[hi])?);
    Ok(Some(ScalarImpl::Float64(
        (a + (b - a) * (pos - lo as f64)).into(),
    )))
}

/// The most frequent value; ties go to the first in order.
fn mode(m: &Multiset) -> Datum {
    let mut best: Option<(&Datum, u64)> = None;
    let mut run: Option<(&Datum, u64)> = None;
    for v in m.rows() {
        run = match run {
            Some((d, n)) if *d == v[0] => Some((d, n + 1)),
            _ => Some((&v[0], 1)),
        };
        let (d, n) = run.expect("set above");
        if best.is_none_or(|(_, b)| n > b) {
            best = Some((d, n));
        }
    }
    best.and_then(|(d, _)| d.clone())
}

/// Values joined in order, each but the first preceded by its own row's delimiter.
fn string_agg(m: &Multiset) -> Datum {
    let mut out: Option<String> = None;
    for v in m.rows() {
        let Some(ScalarImpl::Utf8(s)) = &v[0] else {
            continue;
        };
        match &mut out {
            None => out = Some(s.to_string()),
            Some(acc) => {
                if let Some(Some(ScalarImpl::Utf8(d))) = v.get(1) {
                    acc.push_str(d);
                }
                acc.push_str(s);
            }
        }
    }
    out.map(|s| ScalarImpl::Utf8(s.into()))
}

/// Value states in one stored datum (the `bytea` column of a streaming aggregation's result table, RisingWave's
/// "intermediate state" of a value agg): a few numbers, value-encoded. Ordered states (min/max,
/// string_agg, ...) keep their input instead and are rebuilt by feeding it back.
impl AggState {
    /// Whether the state is a few numbers (count, sum, avg, variance, bool and bit aggregates).
    pub fn is_value(&self) -> bool {
        !matches!(self.inner, Inner::Ordered(_))
    }

    /// The value state as one datum; `None` for an ordered state.
    pub fn encode_value(&self) -> Option<Datum> {
        let mut d: Vec<Datum> = Vec::new();
        let int = |v: i64| Some(ScalarImpl::Int64(v));
        match &self.inner {
            Inner::Ordered(_) => return None,
            Inner::Count(n) => d.push(int(*n)),
            Inner::Sum { sum, count, seen } => {
                encode_sum(sum, &mut d);
                d.extend([int(*count), int(i64::from(*seen))]);
            }
            Inner::Variance { sum, sum_sq, count } => {
                encode_sum(sum, &mut d);
                encode_sum(sum_sq, &mut d);
                d.push(int(*count));
            }
            Inner::Bools { trues, falses } => d.extend([int(*trues), int(*falses)]),
            Inner::Bits(b) => {
                d.extend(b.set.iter().map(|n| int(*n)));
                d.extend([int(b.rows), int(b.xor)]);
            }
        }
        let bytes = epochlab_common::value_encoding::encode_row(&OwnedRow::new(d));
        Some(Some(ScalarImpl::Bytea(bytes.into_boxed_slice())))
    }

    /// A value state of `call` from [`AggState::encode_value`]'s datum (`None`: the empty state).
    pub fn decode_value(call: &AggCall, stored: &Datum) -> Result<Self> {
        let mut state = Self::new(call);
        let Some(stored) = stored else {
            return Ok(state);
        };
        let bad = || ExprError::InvalidState(format!("stored state of {:?}", call.kind));
        let ScalarImpl::Bytea(bytes) = stored else {
            return Err(bad());
        };
        let row = epochlab_common::value_encoding::decode_row(bytes).map_err(|_| bad())?;
        let it = &mut row.into_inner().into_iter();
        match &mut state.inner {
            Inner::Ordered(_) => return Err(bad()),
            Inner::Count(n) => *n = next_int(it)?,
            Inner::Sum { sum, count, seen } => {
                *sum = decode_sum(it)?;
                *count = next_int(it)?;
                *seen = next_int(it)? != 0;
            }
            Inner::Variance { sum, sum_sq, count } => {
                *sum = decode_sum(it)?;
                *sum_sq = decode_sum(it)?;
                *count = next_int(it)?;
            }
            Inner::Bools { trues, falses } => (*trues, *falses) = (next_int(it)?, next_int(it)?),
            Inner::Bits(b) => {
                for n in b.set.iter_mut() {
                    *n = next_int(it)?;
                }
                (b.rows, b.xor) = (next_int(it)?, next_int(it)?);
            }
        }
        Ok(state)
    }
}

fn next_int(it: &mut impl Iterator<Item = Datum>) -> Result<i64> {
    match it.next() {
        Some(Some(ScalarImpl::Int64(v))) => Ok(v),
        other => Err(ExprError::InvalidState(format!(
            "stored state: {other:?} where an integer belongs"
        ))),
    }
}

fn next_i128(it: &mut impl Iterator<Item = Datum>) -> Result<i128> {
    let (hi, lo) = (next_int(it)?, next_int(it)?);
    Ok((i128::from(hi) << 64) | i128::from(lo as u64))
}

/// A sum as a tag then its fields (an `i128` as two halves, a float by its bits, a decimal as itself).
fn encode_sum(sum: &Sum, d: &mut Vec<Datum>) {
    let int = |v: i64| Some(ScalarImpl::Int64(v));
    let halves = |v: i128| [int((v >> 64) as i64), int(v as u64 as i64)];
    match sum {
        Sum::Int(v) => {
            d.push(int(0));
            d.extend(halves(*v));
        }
        Sum::Float(f) => d.extend([int(1), int(f.to_bits() as i64)]),
        Sum::Float32(f) => d.extend([int(4), int(i64::from(f.to_bits()))]),
        Sum::Decimal(x) => d.extend([int(2), Some(ScalarImpl::Decimal(*x))]),
        Sum::Interval {
            months,
            days,
            usecs,
        } => {
            d.extend([int(3), int(*months), int(*days)]);
            d.extend(halves(*usecs));
        }
    }
}

fn decode_sum(it: &mut impl Iterator<Item = Datum>) -> Result<Sum> {
    Ok(match next_int(it)? {
        0 => Sum::Int(next_i128(it)?),
        1 => Sum::Float(f64::from_bits(next_int(it)? as u64)),
        2 => match it.next() {
            Some(Some(ScalarImpl::Decimal(x))) => Sum::Decimal(x),
            other => {
                return Err(ExprError::InvalidState(format!(
                    "stored sum: {other:?} where a decimal belongs"
                )));
            }
        },
        3 => Sum::Interval {
            months: next_int(it)?,
            days: next_int(it)?,
            usecs: next_i128(it)?,
        },
        4 => Sum::Float32(f32::from_bits(next_int(it)? as u32)),
        t => return Err(ExprError::InvalidState(format!("stored sum tag {t}"))),
    })
}
