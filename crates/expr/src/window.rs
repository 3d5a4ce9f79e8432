//! Window functions over one partition, as RisingWave's (its `window_function` module): row_number, rank,
//! dense_rank, lag/lead (the argument of the row that far before or after), and every aggregate over a ROWS frame, fed to
//! a retractable [`AggState`] as the frame slides. RisingWave's default frame is ROWS (not PostgreSQL's
//! RANGE): the whole partition without ORDER BY, else UNBOUNDED PRECEDING to CURRENT ROW, peers excluded.

use std::borrow::Borrow;
use std::cmp::Ordering;

use epochlab_common::expr_node::{AggCall, Frame, FrameBound, WindowFuncCall, WindowFuncKind};
use epochlab_common::types::cmp_datum;
use epochlab_common::{DataType, Datum, Op, OrderType, OwnedRow, ScalarImpl};

use crate::agg::{AggState, infer_return_type as agg_return_type};
use crate::error::{ExprError, Result};

/// The type a window function returns over arguments of `args`.
pub fn infer_return_type(kind: WindowFuncKind, args: &[DataType]) -> Result<DataType> {
    match kind {
        WindowFuncKind::RowNumber | WindowFuncKind::Rank | WindowFuncKind::DenseRank => {
            Ok(DataType::Int64)
        }
        WindowFuncKind::Lag | WindowFuncKind::Lead => args
            .first()
            .cloned()
            .ok_or_else(|| ExprError::invalid_param("lag/lead", "needs an argument")),
        WindowFuncKind::Aggregate(agg) => agg_return_type(agg, args),
    }
}

/// The outputs of `call` for each row of one partition; `rows` are sorted by `order_by` (columns of the
/// rows and their order), which also decides peers for rank and dense_rank. Rows are borrowed: a caller
/// holding them elsewhere (a cache) need not copy them.
pub fn eval_partition<R: Borrow<OwnedRow>>(
    call: &WindowFuncCall,
    order_by: &[(usize, OrderType)],
    rows: &[R],
) -> Result<Vec<Datum>> {
    let int = |i: usize| Some(ScalarImpl::Int64(i as i64));
    match call.kind {
        WindowFuncKind::RowNumber => Ok((1..=rows.len()).map(int).collect()),
        WindowFuncKind::Rank | WindowFuncKind::DenseRank => Ok(ranks(call.kind, order_by, rows)
            .into_iter()
            .map(int)
            .collect()),
        WindowFuncKind::Lag | WindowFuncKind::Lead => Ok(shifted(call, rows)),
        WindowFuncKind::Aggregate(kind) => {
            let default = if order_by.is_empty() {
                Frame::rows(
                    FrameBound::UnboundedPreceding,
                    FrameBound::UnboundedFollowing,
                )
            } else {
                Frame::rows(FrameBound::UnboundedPreceding, FrameBound::CurrentRow)
            };
            aggregate(
                &agg_call(call, kind),
                call.frame.unwrap_or(default),
                &positioned(call, rows),
            )
        }
    }
}

/// lag/lead: the argument of the row `offset` before (lag) or after (lead), NULL past the partition's
/// ends (first_value over that one-row frame).
fn shifted<R: Borrow<OwnedRow>>(call: &WindowFuncCall, rows: &[R]) -> Vec<Datum> {
    let arg = call.args[0];
    let n = call.offset;
    (0..rows.len())
        .map(|i| {
            let j = match call.kind {
                WindowFuncKind::Lag => i.checked_sub(n),
                _ => i.checked_add(n),
            };
            j.and_then(|j| rows.get(j))
                .and_then(|r| r.borrow()[arg].clone())
        })
        .collect()
}

fn peers(order_by: &[(usize, OrderType)], a: &OwnedRow, b: &OwnedRow) -> bool {
    order_by
        .iter()
        .all(|(i, _)| cmp_datum(&a[*i], &b[*i]) == Ordering::Equal)
}

fn ranks<R: Borrow<OwnedRow>>(
    kind: WindowFuncKind,
    order_by: &[(usize, OrderType)],
    rows: &[R],
) -> Vec<usize> {
    let mut out = Vec::with_capacity(rows.len());
    let (mut rank, mut dense) = (0, 0);
    for (i, row) in rows.iter().enumerate() {
        if i == 0 || !peers(order_by, rows[i - 1].borrow(), row.borrow()) {
            rank = i + 1;
            dense += 1;
        }
        out.push(if kind == WindowFuncKind::Rank {
            rank
        } else {
            dense
        });
    }
    out
}

/// The aggregate over the frame, in partition order: it reads compact rows, each the call's arguments
/// then the row's position ([`positioned`]); order-sensitive aggregates (first/last value, string_agg,
/// array_agg) order by that position.
fn agg_call(call: &WindowFuncCall, kind: epochlab_common::AggKind) -> AggCall {
    let position = call.args.len();
    let arg_types = call.arg_types.clone();
    let ret = agg_return_type(kind, &arg_types).unwrap_or_else(|_| call.ret.clone());
    AggCall {
        kind,
        args: (0..position).collect(),
        arg_types,
        ret,
        distinct: false,
        order_by: vec![(position, OrderType::ascending())],
        filter: None,
    }
}

/// Each row as the call's arguments then its position in the partition (its identity in the aggregate's
/// state: rows of equal arguments are still different rows).
fn positioned<R: Borrow<OwnedRow>>(call: &WindowFuncCall, rows: &[R]) -> Vec<OwnedRow> {
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let r = r.borrow();
            let mut v: Vec<Datum> = call.args.iter().map(|&a| r[a].clone()).collect();
            v.push(Some(ScalarImpl::Int64(i as i64)));
            OwnedRow::new(v)
        })
        .collect()
}

/// The rows `[start, end]` (inclusive) of row `i`'s frame in a partition of `n`; empty when start > end.
fn frame_range(frame: &Frame, i: usize, n: usize) -> (usize, Option<usize>) {
    let start = match frame.start {
        FrameBound::UnboundedPreceding => 0,
        FrameBound::Preceding(k) => i.saturating_sub(k),
        FrameBound::CurrentRow => i,
        FrameBound::Following(k) => i + k,
        FrameBound::UnboundedFollowing => n,
    };
    let end = match frame.end {
        FrameBound::UnboundedPreceding => None,
        FrameBound::Preceding(k) => i.checked_sub(k),
        FrameBound::CurrentRow => Some(i),
        FrameBound::Following(k) => Some((i + k).min(n.saturating_sub(1))),
        FrameBound::UnboundedFollowing => n.checked_sub(1),
    };
    (start, end)
}

/// A state over `positioned` rows whose ties go by position in the partition.
fn in_partition_order(agg: &AggCall, positioned: &[OwnedRow]) -> AggState {
    let position = positioned.first().map_or(0, |r| r.len() - 1);
    AggState::with_stream_key(agg, &[position])
}

/// Slide the frame over the `positioned` partition: rows leaving are deleted, rows entering inserted (for
/// ROWS frames both bounds only move forward), as RisingWave's incremental window aggregation. With
/// EXCLUDE CURRENT ROW each frame is aggregated afresh, as RisingWave does then.
fn aggregate(agg: &AggCall, frame: Frame, positioned: &[OwnedRow]) -> Result<Vec<Datum>> {
    let n = positioned.len();
    if frame.exclude_current_row {
        return (0..n).map(|i| fresh(agg, &frame, positioned, i)).collect();
    }
    let mut state = in_partition_order(agg, positioned);
    let (mut lo, mut hi) = (0usize, 0usize); // rows [lo, hi) are in the state
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let (start, end_excl) = bounds(&frame, i, n);
        while lo < start.min(hi) {
            state.apply(Op::Delete, &positioned[lo])?;
            lo += 1;
        }
        if start > hi {
            (lo, hi) = (start, start);
        }
        while hi < end_excl {
            state.apply(Op::Insert, &positioned[hi])?;
            hi += 1;
        }
        out.push(state.try_output()?);
    }
    Ok(out)
}

/// Row `i`'s frame as `[start, end)`, clipped to the partition.
fn bounds(frame: &Frame, i: usize, n: usize) -> (usize, usize) {
    let (start, end) = frame_range(frame, i, n);
    let start = start.min(n);
    (start, end.map_or(0, |e| e + 1).clamp(start, n))
}

fn fresh(agg: &AggCall, frame: &Frame, rows: &[OwnedRow], i: usize) -> Result<Datum> {
    let (start, end) = bounds(frame, i, rows.len());
    let mut state = in_partition_order(agg, rows);
    for (j, row) in rows.iter().enumerate().take(end).skip(start) {
        if j != i {
            state.apply(Op::Insert, row)?;
        }
    }
    state.try_output()
}
