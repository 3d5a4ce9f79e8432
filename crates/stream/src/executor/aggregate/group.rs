//! One group of an aggregation (RisingWave's `AggGroup`): its call states, its stored result row, its
//! dedup counts, and what it last emitted.

use std::collections::BTreeMap;
use std::ops::Bound;

use epochlab_common::plan::agg_keeps_input;
use epochlab_common::{
    AggCall, AggKind, Datum, ExprNode, Op, OrderType, OwnedRow, ScalarImpl, memcmp,
};
use epochlab_expr::agg::AggState;
use epochlab_state_table::StateTable;

use super::{CallStateTable, DedupTable, agg_error};
use crate::executor::{StreamExecutorError, StreamExecutorResult};

epochlab_common::toggle! {
    /// A test-only mutation, no RisingWave bug: when a group's changed dedup counts reach the dedup table.
    /// The recovery tests of the aggregations must catch `OneBarrierLate` (a distinct count that a recovery
    /// reloads from a table one barrier behind the result it was emitted with).
    pub enum DedupWrite {
        /// With the barrier whose rows changed them, as RisingWave writes them.
        #[default]
        OnBarrier,
        /// At the group's next flush after that barrier (its next change).
        OneBarrierLate,
    }
}

/// How the executor runs one call: the state sees only the rows its filter keeps and, for a distinct call,
/// only a value's first insert and last delete (so its own call has neither).
pub(crate) struct CallPlan {
    pub call: AggCall,
    pub filter: Option<ExprNode>,
    /// The dedup table and this call's count column in it.
    pub distinct: Option<(usize, usize)>,
    /// The state keeps its input (an ordered aggregate).
    pub ordered: bool,
    /// The input columns that break its sort-key ties (empty: the arguments).
    pub stream_key: Vec<usize>,
}

impl CallPlan {
    /// The call's empty state.
    pub fn new_state(&self) -> AggState {
        AggState::with_stream_key(&self.call, &self.stream_key)
    }
}

fn bad_plan(call: usize, what: &str) -> StreamExecutorError {
    StreamExecutorError::AggPlan {
        call,
        problem: what.to_string(),
    }
}

/// Each call's plan, checked against its state's kind and the dedup tables.
pub(crate) fn plan_calls(
    calls: &[AggCall],
    states: &[CallStateTable],
    dedups: &[DedupTable],
) -> StreamExecutorResult<Vec<CallPlan>> {
    let mut slots: BTreeMap<usize, usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(calls.len());
    for (i, c) in calls.iter().enumerate() {
        let mut call = c.clone();
        call.filter = None;
        call.distinct = false;
        let distinct_call = c.distinct || c.kind == AggKind::ApproxCountDistinct;
        if c.kind == AggKind::ApproxCountDistinct {
            call.kind = AggKind::Count;
        }
        let ordered = agg_keeps_input(call.kind);
        match (&states[i], ordered) {
            (CallStateTable::Value, true) if !matches!(call.kind, AggKind::Min | AggKind::Max) => {
                return Err(bad_plan(
                    i,
                    "only min/max keep a value state over their input",
                ));
            }
            (CallStateTable::MaterializedInput { .. }, false) => {
                return Err(bad_plan(i, "a value aggregate has no materialized input"));
            }
            _ => {}
        }
        let distinct = if distinct_call {
            let column = *c
                .args
                .first()
                .ok_or_else(|| bad_plan(i, "distinct without argument"))?;
            let d = dedups
                .iter()
                .position(|t| t.column == column)
                .ok_or_else(|| bad_plan(i, "no dedup table for the distinct column"))?;
            let slot = slots.entry(d).or_default();
            *slot += 1;
            Some((d, *slot - 1))
        } else {
            None
        };
        let stream_key = match &states[i] {
            CallStateTable::MaterializedInput { stream_key, .. } => stream_key.clone(),
            CallStateTable::Value => vec![],
        };
        out.push(CallPlan {
            call,
            filter: c.filter.clone(),
            distinct,
            ordered,
            stream_key,
        });
    }
    Ok(out)
}

/// The live rows of one value of a dedup table, per distinct call over its column.
struct DedupEntry {
    value: Datum,
    counts: Vec<i64>,
    stored: Option<OwnedRow>,
    dirty: bool,
    /// Under [`DedupWrite::OneBarrierLate`]: its write was held back at the last flush.
    held: bool,
}

pub(crate) struct AggGroup {
    pub(crate) key: OwnedRow,
    states: Vec<AggState>,
    /// The group's result-table row as written (`None`: not stored).
    stored: Option<OwnedRow>,
    /// The output row last emitted (`None`: the group is not in the output).
    pub emitted: Option<OwnedRow>,
    /// Per dedup table: value (memcomparable) → its counts.
    dedup: Vec<BTreeMap<Vec<u8>, DedupEntry>>,
    pub dirty: bool,
}

/// The rows of `table` whose pk starts with `prefix`, in pk order.
fn rows_with_prefix(table: &StateTable, prefix: &OwnedRow) -> StreamExecutorResult<Vec<OwnedRow>> {
    let vnode = table.compute_vnode_by_pk(prefix)?;
    let range = (
        Bound::Included(prefix.clone()),
        Bound::Included(prefix.clone()),
    );
    let mut out = Vec::new();
    for r in table.iter_with_vnode(vnode, range)? {
        out.push(r?);
    }
    Ok(out)
}

/// An input row with `stored`'s datums at the input positions `columns` (the rest NULL).
fn spread(stored: &OwnedRow, columns: &[usize]) -> OwnedRow {
    let width = columns.iter().max().map_or(0, |m| m + 1);
    let mut datums = vec![None; width];
    for (d, &c) in stored.datums().iter().zip(columns) {
        datums[c] = d.clone();
    }
    OwnedRow::new(datums)
}

fn value_key(v: &Datum) -> Vec<u8> {
    let mut buf = Vec::new();
    memcmp::encode_datum(v, OrderType::ascending(), &mut buf);
    buf
}

/// A min/max over an append-only input from its stored output: the one value fed back.
fn restore_extreme(i: usize, call: &AggCall, out: &Datum) -> StreamExecutorResult<AggState> {
    let mut state = AggState::new(call);
    if out.is_some() {
        let arg = *call
            .args
            .first()
            .ok_or_else(|| bad_plan(i, "min/max without argument"))?;
        let row = spread(&OwnedRow::new(vec![out.clone()]), &[arg]);
        state.apply(Op::Insert, &row).map_err(|e| agg_error(i, e))?;
    }
    Ok(state)
}

impl AggGroup {
    /// The group of `key` as the state tables hold it (a new group if they have none of it).
    pub(crate) fn load(
        key: OwnedRow,
        plans: &[CallPlan],
        result: &StateTable,
        call_states: &[CallStateTable],
        dedups: &[DedupTable],
    ) -> StreamExecutorResult<Self> {
        let g = key.len();
        let stored = result.get_row(&key)?;
        let mut states = Vec::with_capacity(plans.len());
        for (i, p) in plans.iter().enumerate() {
            let state = match (&call_states[i], &stored) {
                (CallStateTable::MaterializedInput { table, columns, .. }, _) => {
                    let mut s = p.new_state();
                    for r in rows_with_prefix(table, &key)? {
                        s.apply(Op::Insert, &spread(&r, columns))
                            .map_err(|e| agg_error(i, e))?;
                    }
                    s
                }
                (CallStateTable::Value, None) => p.new_state(),
                (CallStateTable::Value, Some(row)) if p.ordered => {
                    restore_extreme(i, &p.call, row.datum_at(g + i))?
                }
                (CallStateTable::Value, Some(row)) => {
                    AggState::decode_value(&p.call, row.datum_at(g + i))
                        .map_err(|e| agg_error(i, e))?
                }
            };
            states.push(state);
        }
        let mut dedup = Vec::with_capacity(dedups.len());
        for d in dedups {
            let mut entries = BTreeMap::new();
            for r in rows_with_prefix(&d.table, &key)? {
                let value = r.datum_at(g).clone();
                let counts = r.datums()[g + 1..]
                    .iter()
                    .map(|c| c.as_ref().and_then(ScalarImpl::as_int64).unwrap_or(0))
                    .collect();
                let entry = DedupEntry {
                    value: value.clone(),
                    counts,
                    stored: Some(r),
                    dirty: false,
                    held: false,
                };
                entries.insert(value_key(&value), entry);
            }
            dedup.push(entries);
        }
        let mut group = Self {
            key,
            states,
            stored,
            emitted: None,
            dedup,
            dirty: false,
        };
        group.emitted = group.stored.is_some().then(|| group.output());
        Ok(group)
    }

    /// Whether a distinct call sees this row (its value's first insert or last delete), counting it.
    fn dedup_passes(
        &mut self,
        (d, slot): (usize, usize),
        value: &Datum,
        slots: usize,
        insert: bool,
    ) -> StreamExecutorResult<bool> {
        let e = self.dedup[d]
            .entry(value_key(value))
            .or_insert_with(|| DedupEntry {
                value: value.clone(),
                counts: vec![0; slots],
                stored: None,
                dirty: false,
                held: false,
            });
        e.dirty = true;
        e.counts[slot] += if insert { 1 } else { -1 };
        if e.counts[slot] < 0 {
            return Err(StreamExecutorError::DedupUnderflow {
                value: format!("{value:?}"),
            });
        }
        Ok(if insert {
            e.counts[slot] == 1
        } else {
            e.counts[slot] == 0
        })
    }

    /// Apply one input row: `passes[i]` says whether call `i`'s filter keeps it.
    pub(crate) fn apply_row(
        &mut self,
        op: Op,
        row: &OwnedRow,
        passes: &[bool],
        plans: &[CallPlan],
        call_states: &mut [CallStateTable],
        dedups: &[DedupTable],
    ) -> StreamExecutorResult<()> {
        self.dirty = true;
        let insert = op.is_insert();
        let g = self.key.len();
        for (i, p) in plans.iter().enumerate() {
            if !passes[i] {
                continue;
            }
            if let Some((d, slot)) = p.distinct {
                let value = &row[dedups[d].column];
                // A NULL never reaches a distinct aggregate.
                if value.is_none() {
                    continue;
                }
                let slots = dedups[d].table.desc().column_types.len() - g - 1;
                if !self.dedup_passes((d, slot), value, slots, insert)? {
                    continue;
                }
            }
            if let CallStateTable::MaterializedInput { table, columns, .. } = &mut call_states[i] {
                let r = row.project(columns);
                if insert {
                    table.insert(&r)?;
                } else {
                    table.delete(&r)?;
                }
            }
            self.states[i].apply(op, row).map_err(|e| agg_error(i, e))?;
        }
        Ok(())
    }

    /// Every state back to empty (the group has no rows).
    pub(crate) fn reset(&mut self, plans: &[CallPlan]) {
        self.states = plans.iter().map(CallPlan::new_state).collect();
    }

    /// The value of the row count call.
    pub(crate) fn row_count(&self, index: usize) -> i64 {
        self.states[index]
            .output()
            .as_ref()
            .and_then(ScalarImpl::as_int64)
            .unwrap_or(0)
    }

    /// The group's output row: its key, then each call's value.
    pub(crate) fn output(&self) -> OwnedRow {
        let mut d = self.key.datums().to_vec();
        d.extend(self.states.iter().map(AggState::output));
        OwnedRow::new(d)
    }

    /// The group's result-table row: its key, then each call's value state (or output).
    fn result_row(&self) -> OwnedRow {
        let mut d = self.key.datums().to_vec();
        for s in &self.states {
            d.push(s.encode_value().unwrap_or_else(|| s.output()));
        }
        OwnedRow::new(d)
    }

    /// Write the group's result row (`keep`: the group stays; otherwise its row goes) and its changed dedup
    /// counts.
    pub(crate) fn write(
        &mut self,
        keep: bool,
        result: &mut StateTable,
        dedups: &mut [DedupTable],
        dedup_write: DedupWrite,
    ) -> StreamExecutorResult<()> {
        let new = keep.then(|| self.result_row());
        write_change(result, self.stored.take(), new.clone())?;
        self.stored = new;
        let late = dedup_write == DedupWrite::OneBarrierLate;
        for (d, entries) in self.dedup.iter_mut().enumerate() {
            let table = &mut dedups[d].table;
            for e in entries.values_mut().filter(|e| e.dirty) {
                if late && !e.held {
                    e.held = true;
                    continue;
                }
                e.held = false;
                let live = e.counts.iter().any(|c| *c > 0);
                let new = live.then(|| {
                    let mut r = self.key.datums().to_vec();
                    r.push(e.value.clone());
                    r.extend(e.counts.iter().map(|c| Some(ScalarImpl::Int64(*c))));
                    OwnedRow::new(r)
                });
                write_change(table, e.stored.take(), new.clone())?;
                e.stored = new;
                e.dirty = false;
            }
            entries.retain(|_, e| e.stored.is_some() || e.dirty);
        }
        Ok(())
    }
}

/// Move a table's row from `old` to `new` (either may be absent).
fn write_change(
    table: &mut StateTable,
    old: Option<OwnedRow>,
    new: Option<OwnedRow>,
) -> StreamExecutorResult<()> {
    match (old, new) {
        (None, Some(n)) => table.insert(&n)?,
        (Some(o), None) => table.delete(&o)?,
        (Some(o), Some(n)) if o != n => table.update(&o, &n)?,
        _ => {}
    }
    Ok(())
}
