//! The rows of one group a top-N keeps in memory (RisingWave's `TopNCache`): a prefix of the group's rows
//! in order, split into three ranges:
//! - `low`: ranks `[0, offset)`;
//! - `middle`: ranks `[offset, offset + limit)`, what the executor outputs (WITH TIES: and every row tying
//!   the last one);
//! - `high`: the rows right after `middle`, at most `high_capacity` (WITH TIES: whole tie groups), kept so
//!   that a delete in `middle` can pull a row up without reading the state table.
//!
//! `high` is refilled from the state table when it runs empty and the cache does not hold the whole group.
//! Invariants (checked by `check`): a range is non-empty only when the ranges before it are full; the three
//! together are the first rows of the group in order; `complete` means they are all of it.

use std::collections::BTreeMap;

use epochlab_common::{Op, OwnedRow};

use super::state::ManagedTopNState;
use crate::executor::StreamExecutorResult;

/// A row's position in its group: the memcomparable order key (the ORDER BY columns), then the
/// memcomparable rest of the state table's pk. Rows with equal first parts are ties.
pub(crate) type CacheKey = (Vec<u8>, Vec<u8>);

/// `high` holds this many times `offset + limit` rows at most (RisingWave's factor)...
const HIGH_CAPACITY_FACTOR: usize = 2;
/// ... and at least this many.
const MIN_HIGH_CAPACITY: usize = 10;

type Range = BTreeMap<CacheKey, OwnedRow>;

/// The changes of the output a cache operation makes.
pub(crate) type Changes = Vec<(Op, OwnedRow)>;

pub(crate) struct TopNCache {
    pub(crate) low: Range,
    pub(crate) middle: Range,
    pub(crate) high: Range,
    pub(crate) high_capacity: usize,
    pub(crate) offset: usize,
    pub(crate) limit: usize,
    pub(crate) with_ties: bool,
    /// The three ranges hold every row of the group (no refill needed).
    pub(crate) complete: bool,
}

impl TopNCache {
    pub(crate) fn new(offset: usize, limit: usize, with_ties: bool) -> Self {
        assert!(limit > 0, "a top-N's limit is at least 1");
        assert!(
            !with_ties || offset == 0,
            "WITH TIES is not supported with an offset"
        );
        let high_capacity = offset
            .saturating_add(limit)
            .saturating_mul(HIGH_CAPACITY_FACTOR)
            .max(MIN_HIGH_CAPACITY);
        Self {
            low: Range::new(),
            middle: Range::new(),
            high: Range::new(),
            high_capacity,
            offset,
            limit,
            with_ties,
            complete: false,
        }
    }

    /// An append-only top-N's cache: its state table holds only low and middle, all of it cached (high
    /// only passes the rows pushed out of middle on to their delete).
    pub(crate) fn new_append_only(offset: usize, limit: usize, with_ties: bool) -> Self {
        Self {
            high_capacity: usize::MAX,
            ..Self::new(offset, limit, with_ties)
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.low.len() + self.middle.len() + self.high.len()
    }

    fn low_full(&self) -> bool {
        self.low.len() >= self.offset
    }

    fn middle_full(&self) -> bool {
        self.middle.len() >= self.limit
    }

    /// The last key before `high`: where a refill of `high` starts after.
    pub(crate) fn last_before_high(&self) -> Option<(&CacheKey, &OwnedRow)> {
        self.middle
            .last_key_value()
            .or_else(|| self.low.last_key_value())
    }

    /// The ranges' invariants (cheap: lengths and the boundaries between ranges).
    pub(crate) fn check(&self) {
        assert!(self.low.len() <= self.offset, "low over the offset");
        if !self.low_full() {
            assert!(
                self.middle.is_empty() && self.high.is_empty(),
                "low not full"
            );
        }
        if !self.with_ties {
            assert!(self.middle.len() <= self.limit, "middle over the limit");
        }
        if !self.middle_full() {
            assert!(self.high.is_empty(), "high rows below a middle not full");
        }
        let bounds = [
            (self.low.last_key_value(), self.middle.first_key_value()),
            (self.middle.last_key_value(), self.high.first_key_value()),
        ];
        for (a, b) in bounds {
            if let (Some((a, _)), Some((b, _))) = (a, b) {
                assert!(a < b, "cache ranges out of order");
            }
        }
    }

    /// Insert a row of the group (already written to the state table).
    pub(crate) fn insert(&mut self, key: CacheKey, row: OwnedRow, out: &mut Changes) {
        if self.with_ties {
            self.insert_with_ties(key, row, out);
        } else {
            self.insert_plain(key, row, out);
        }
    }

    fn insert_plain(&mut self, key: CacheKey, row: OwnedRow, out: &mut Changes) {
        if !self.low_full() {
            self.low.insert(key, row);
            return;
        }
        // A row before low's last takes its place; low's last moves on to middle.
        let (key, row) = match self.low.last_key_value() {
            Some((last, _)) if key < *last => {
                let moved = self.low.pop_last().expect("low is not empty");
                self.low.insert(key, row);
                moved
            }
            _ => (key, row),
        };
        if !self.middle_full() {
            out.push((Op::Insert, row.clone()));
            self.middle.insert(key, row);
            return;
        }
        let middle_last = self.middle.last_key_value().map(|(k, _)| k);
        if middle_last.is_some_and(|last| key < *last) {
            let (mk, mr) = self.middle.pop_last().expect("middle is full");
            out.push((Op::Delete, mr.clone()));
            out.push((Op::Insert, row.clone()));
            self.middle.insert(key, row);
            self.insert_high(mk, mr, true);
        } else {
            self.insert_high(key, row, false);
        }
    }

    /// A row after middle. It joins high only where high stays a prefix of the rows after middle: it
    /// comes from middle's end, or lies before high's last, or the cache holds the whole group.
    fn insert_high(&mut self, key: CacheKey, row: OwnedRow, from_middle: bool) {
        let before_last = self.high.last_key_value().is_some_and(|(k, _)| key < *k);
        let contiguous = from_middle || before_last || (self.high.is_empty() && self.complete);
        if !contiguous {
            self.complete = false;
            return;
        }
        self.high.insert(key, row);
        if self.high.len() > self.high_capacity {
            self.high.pop_last();
            self.complete = false;
        }
    }

    fn insert_with_ties(&mut self, key: CacheKey, row: OwnedRow, out: &mut Changes) {
        debug_assert!(self.low.is_empty(), "WITH TIES has no offset");
        if !self.middle_full() {
            out.push((Op::Insert, row.clone()));
            self.middle.insert(key, row);
            return;
        }
        let last_sort = self
            .middle
            .last_key_value()
            .expect("middle is full")
            .0
            .0
            .clone();
        match key.0.cmp(&last_sort) {
            std::cmp::Ordering::Less => {
                // The last tie group leaves middle when the rows before it and the new one reach the limit.
                let ties = self
                    .middle
                    .iter()
                    .rev()
                    .take_while(|(k, _)| k.0 == last_sort)
                    .count();
                if self.middle.len() - ties + 1 >= self.limit {
                    let evicted = take_last_group(&mut self.middle);
                    for (k, r) in evicted {
                        out.push((Op::Delete, r.clone()));
                        self.high.insert(k, r);
                    }
                    self.trim_high_groups();
                }
                out.push((Op::Insert, row.clone()));
                self.middle.insert(key, row);
            }
            std::cmp::Ordering::Equal => {
                out.push((Op::Insert, row.clone()));
                self.middle.insert(key, row);
            }
            std::cmp::Ordering::Greater => self.insert_high_with_ties(key, row),
        }
    }

    /// WITH TIES: high is whole tie groups; a row joins it before or in its last group (or when the cache
    /// holds the whole group), then whole groups beyond the capacity leave (keeping at least one).
    fn insert_high_with_ties(&mut self, key: CacheKey, row: OwnedRow) {
        let joins = match self.high.last_key_value() {
            Some((last, _)) => key.0 <= last.0,
            None => self.complete,
        };
        if !joins {
            self.complete = false;
            return;
        }
        self.high.insert(key, row);
        self.trim_high_groups();
    }

    fn trim_high_groups(&mut self) {
        while self.high.len() > self.high_capacity {
            let first = &self.high.first_key_value().expect("high is not empty").0.0;
            let last = &self.high.last_key_value().expect("high is not empty").0.0;
            if first == last {
                break;
            }
            take_last_group(&mut self.high);
            self.complete = false;
        }
    }

    /// Delete a row of the group (already deleted from the state table); a row pulled up into middle is
    /// read from `state` when high has run empty.
    pub(crate) fn delete(
        &mut self,
        key: &CacheKey,
        row: OwnedRow,
        group_key: &OwnedRow,
        state: &ManagedTopNState,
        out: &mut Changes,
    ) -> StreamExecutorResult<()> {
        if self.with_ties {
            return self.delete_with_ties(key, row, group_key, state, out);
        }
        let after_middle =
            self.middle_full() && self.middle.last_key_value().is_some_and(|(k, _)| key > k);
        let in_middle = self.low_full()
            && (self.offset == 0 || self.low.last_key_value().is_some_and(|(k, _)| key > k));
        if after_middle {
            self.high.remove(key);
        } else if in_middle {
            // Emitted whether or not the cache held it, as RisingWave's cache does: a delete inside the
            // range the view shows reaches the view.
            self.middle.remove(key);
            out.push((Op::Delete, row));
            self.pull_up_one(group_key, state, out)?;
        } else {
            self.low.remove(key);
            if let Some((k, r)) = self.middle.pop_first() {
                out.push((Op::Delete, r.clone()));
                self.low.insert(k, r);
                self.pull_up_one(group_key, state, out)?;
            }
        }
        Ok(())
    }

    /// Middle lost a row: high's first moves in (high refilled first if it ran empty).
    fn pull_up_one(
        &mut self,
        group_key: &OwnedRow,
        state: &ManagedTopNState,
        out: &mut Changes,
    ) -> StreamExecutorResult<()> {
        self.refill_high(group_key, state)?;
        if let Some((k, r)) = self.high.pop_first() {
            out.push((Op::Insert, r.clone()));
            self.middle.insert(k, r);
        }
        Ok(())
    }

    fn refill_high(
        &mut self,
        group_key: &OwnedRow,
        state: &ManagedTopNState,
    ) -> StreamExecutorResult<()> {
        if self.high.is_empty() && !self.complete {
            state.fill_high(group_key, self)?;
        }
        Ok(())
    }

    fn delete_with_ties(
        &mut self,
        key: &CacheKey,
        row: OwnedRow,
        group_key: &OwnedRow,
        state: &ManagedTopNState,
        out: &mut Changes,
    ) -> StreamExecutorResult<()> {
        let Some(last_sort) = self.middle.last_key_value().map(|(k, _)| k.0.clone()) else {
            return Ok(());
        };
        if key.0 > last_sort {
            self.high.remove(key);
            return Ok(());
        }
        // As above: emitted whether or not the cache held it.
        self.middle.remove(key);
        out.push((Op::Delete, row));
        if self.middle.len() >= self.limit {
            // The last rank still reaches the limit through its ties.
            return Ok(());
        }
        self.refill_high(group_key, state)?;
        for (k, r) in take_first_group(&mut self.high) {
            out.push((Op::Insert, r.clone()));
            self.middle.insert(k, r);
        }
        Ok(())
    }

    /// Append-only top-N (RisingWave's `AppendOnlyTopNCacheTrait`): only the rows of low and middle are
    /// kept, in the cache and in the state table; a row pushed out of middle is deleted from both.
    pub(crate) fn insert_append_only(
        &mut self,
        key: CacheKey,
        row: OwnedRow,
        state: &mut ManagedTopNState,
        out: &mut Changes,
    ) -> StreamExecutorResult<()> {
        debug_assert!(self.high.is_empty(), "append-only top-N keeps no high rows");
        let middle_last = self.middle.last_key_value().map(|(k, _)| k.clone());
        if self.middle_full() {
            let last = middle_last.expect("middle is full");
            let beyond = if self.with_ties {
                key.0 > last.0
            } else {
                key >= last
            };
            if beyond {
                return Ok(());
            }
        }
        state.insert(&row)?;
        let mut changes = Changes::new();
        self.insert(key, row, &mut changes);
        // Whatever reached high has left the output for good.
        for (_, r) in std::mem::take(&mut self.high) {
            state.delete(&r)?;
        }
        debug_assert!(self.complete, "an append-only cache holds its whole table");
        out.extend(changes);
        Ok(())
    }
}

/// Remove and return the rows of `range`'s last tie group.
fn take_last_group(range: &mut Range) -> Vec<(CacheKey, OwnedRow)> {
    let Some(sort) = range.last_key_value().map(|(k, _)| k.0.clone()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    while range.last_key_value().is_some_and(|(k, _)| k.0 == sort) {
        out.push(range.pop_last().expect("checked"));
    }
    out.reverse();
    out
}

/// Remove and return the rows of `range`'s first tie group.
fn take_first_group(range: &mut Range) -> Vec<(CacheKey, OwnedRow)> {
    let Some(sort) = range.first_key_value().map(|(k, _)| k.0.clone()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    while range.first_key_value().is_some_and(|(k, _)| k.0 == sort) {
        out.push(range.pop_first().expect("checked"));
    }
    out
}
