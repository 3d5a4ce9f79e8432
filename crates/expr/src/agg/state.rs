//! The state of one aggregate call over a changing input: every state here is retractable (a delete undoes
//! an insert of the same row), as RisingWave's streaming aggregates need.

use std::collections::BTreeMap;

use epochlab_common::expr_node::{AggCall, AggKind};
use epochlab_common::memcmp::encode_datum;
use epochlab_common::{Datum, Op, OrderType, OwnedRow, ScalarImpl};

use crate::error::{ExprError, Result};
use crate::eval;

/// A multiset of values keyed by their memcomparable encoding (the key order is the value order).
#[derive(Clone, Debug, Default)]
struct Multiset {
    entries: BTreeMap<Vec<u8>, (Vec<Datum>, u64)>,
}

impl Multiset {
    /// Add (`delta` 1) or remove (-1) one copy; returns the copy count after the change.
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

    fn iter(&self) -> impl DoubleEndedIterator<Item = (&Vec<Datum>, u64)> {
        self.entries.values().map(|(v, n)| (v, *n))
    }
}

fn key_of(datums: &[Datum], orders: &[OrderType]) -> Vec<u8> {
    let mut buf = Vec::new();
    for (i, d) in datums.iter().enumerate() {
        encode_datum(d, orders.get(i).copied().unwrap_or_default(), &mut buf);
    }
    buf
}

/// Running sums of numbers (exact for integers).
#[derive(Clone, Debug, Default)]
struct Sums {
    count: i64,
    int_sum: i128,
}

#[derive(Clone, Debug)]
enum Inner {
    Count(i64),
    Sums(Sums),
    /// Values in an order: min/max/first/last/string_agg/array_agg keep every live value.
    Ordered(Multiset),
    Bools {
        trues: i64,
        falses: i64,
    },
    /// Per-bit counts of set bits and the row count, for retractable bit_and/bit_or; xor is its own inverse.
    Bits(Box<Bits>),
}

#[derive(Clone, Debug)]
struct Bits {
    set: [i64; 64],
    rows: i64,
    xor: i64,
}

/// The state of one aggregate call.
#[derive(Clone, Debug)]
pub struct AggState {
    call: AggCall,
    inner: Inner,
    distinct: Option<Multiset>,
}

impl AggState {
    pub fn new(call: &AggCall) -> Self {
        use AggKind::*;
        let inner = match call.kind {
            Count | ApproxCountDistinct => Inner::Count(0),
            Sum | Sum0 | Avg | StddevPop | StddevSamp | VarPop | VarSamp => {
                Inner::Sums(Sums::default())
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
        let distinct = (call.distinct || call.kind == ApproxCountDistinct).then(Multiset::default);
        Self {
            call: call.clone(),
            inner,
            distinct,
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
        // count(x), sum(x), ... skip NULL arguments; count(*) has none and counts every row.
        let skip_nulls = !matches!(
            self.call.kind,
            AggKind::StringAgg | AggKind::ArrayAgg | AggKind::FirstValue | AggKind::LastValue
        );
        if skip_nulls && args.first().is_some_and(Option::is_none) {
            return Ok(());
        }
        if self.call.kind == AggKind::StringAgg && args.first().is_some_and(Option::is_none) {
            return Ok(());
        }
        let insert = op.is_insert();
        if let Some(seen) = &mut self.distinct {
            let left = seen.apply(key_of(&args, &[]), args.clone(), insert)?;
            // Only a value's first copy in and last copy out reach the aggregate.
            if (insert && left != 1) || (!insert && left != 0) {
                return Ok(());
            }
        }
        let order_key: Vec<Datum> = self
            .call
            .order_by
            .iter()
            .map(|(i, _)| row[*i].clone())
            .collect();
        let orders: Vec<OrderType> = self.call.order_by.iter().map(|(_, o)| *o).collect();
        self.apply_inner(insert, args, order_key, &orders)
    }

    fn apply_inner(
        &mut self,
        insert: bool,
        args: Vec<Datum>,
        order_key: Vec<Datum>,
        orders: &[OrderType],
    ) -> Result<()> {
        let sign: i64 = if insert { 1 } else { -1 };
        match &mut self.inner {
            Inner::Count(n) => *n += sign,
            Inner::Sums(s) => {
                s.count += sign;
                s.int_sum += i128::from(sign) * i128::from(int_arg(&args[0])?);
            }
            Inner::Bools { trues, falses } => match args[0] {
                Some(ScalarImpl::Bool(true)) => *trues += sign,
                _ => *falses += sign,
            },
            Inner::Bits(b) => {
                let v = int_arg(&args[0])?;
                b.rows += sign;
                b.xor ^= v;
                for (bit, n) in b.set.iter_mut().enumerate() {
                    if v >> bit & 1 == 1 {
                        *n += sign;
                    }
                }
            }
            Inner::Ordered(m) => {
                // Min/max order by the value itself; the others by the ORDER BY key, then the value.
                let mut key_datums = order_key;
                let mut key_orders = orders.to_vec();
                key_datums.extend(args.iter().cloned());
                key_orders.resize(key_datums.len(), OrderType::ascending());
                m.apply(key_of(&key_datums, &key_orders), args, insert)?;
            }
        }
        Ok(())
    }

    /// The aggregate's current value.
    pub fn output(&self) -> Datum {
        use AggKind::*;
        match (&self.inner, self.call.kind) {
            (Inner::Count(n), _) => Some(ScalarImpl::Int64(*n)),
            (Inner::Sums(s), Sum0) => Some(ScalarImpl::Int64(s.int_sum as i64)),
            (Inner::Sums(s), _) if s.count == 0 => None,
            (Inner::Sums(s), Sum) => Some(ScalarImpl::Int64(s.int_sum as i64)),
            (Inner::Sums(s), Avg) => {
                Some(ScalarImpl::Int64((s.int_sum / i128::from(s.count)) as i64))
            }
            (Inner::Sums(_), _) => None,
            (Inner::Bools { trues, falses }, _) if trues + falses == 0 => None,
            (Inner::Bools { falses, .. }, BoolAnd) => Some(ScalarImpl::Bool(*falses == 0)),
            (Inner::Bools { trues, .. }, _) => Some(ScalarImpl::Bool(*trues > 0)),
            (Inner::Bits(b), _) if b.rows == 0 => None,
            (Inner::Bits(b), kind) => Some(self.int_out(bits_out(kind, b))),
            (Inner::Ordered(m), kind) => ordered_out(kind, m),
        }
    }

    fn int_out(&self, v: i64) -> ScalarImpl {
        match self.call.ret {
            epochlab_common::DataType::Int16 => ScalarImpl::Int16(v as i16),
            epochlab_common::DataType::Int32 => ScalarImpl::Int32(v as i32),
            _ => ScalarImpl::Int64(v),
        }
    }
}

fn int_arg(v: &Datum) -> Result<i64> {
    match v {
        Some(ScalarImpl::Int16(i)) => Ok(i64::from(*i)),
        Some(ScalarImpl::Int32(i)) => Ok(i64::from(*i)),
        Some(ScalarImpl::Int64(i)) => Ok(*i),
        other => Err(ExprError::InvalidState(format!(
            "expected an integer, got {other:?}"
        ))),
    }
}

fn bits_out(kind: AggKind, b: &Bits) -> i64 {
    let mut out = 0i64;
    for (bit, n) in b.set.iter().enumerate() {
        let on = match kind {
            AggKind::BitAnd => *n == b.rows,
            _ => *n > 0,
        };
        if on {
            out |= 1 << bit;
        }
    }
    if kind == AggKind::BitXor { b.xor } else { out }
}

fn ordered_out(kind: AggKind, m: &Multiset) -> Datum {
    use AggKind::*;
    match kind {
        Min | FirstValue => m.iter().next().and_then(|(v, _)| v[0].clone()),
        Max | LastValue => m.iter().next_back().and_then(|(v, _)| v[0].clone()),
        StringAgg => string_agg(m),
        _ => None,
    }
}

/// Values joined in order, each but the first preceded by its own row's delimiter.
fn string_agg(m: &Multiset) -> Datum {
    let mut out: Option<String> = None;
    for (v, n) in m.iter() {
        for _ in 0..n {
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
    }
    out.map(|s| ScalarImpl::Utf8(s.into()))
}
