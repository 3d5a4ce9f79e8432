//! The view oracle's reference evaluation: each stateful view's query evaluated directly over its upstreams'
//! committed rows (a `BTreeMap` group-by, a nested-loop join, a sort and a slice), independent of the stream
//! executors and of any planner, and the first difference from the view's committed rows.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use epochlab_common::catalog::TableDesc;
use epochlab_common::types::Decimal;
use epochlab_common::{Datum, OrderType, OwnedRow, ScalarImpl};

use super::plan::{GroupKey, ViewJoin, ViewQuery};
use super::views::top_n_order;

/// One upstream's committed rows and its table.
pub struct Input<'a> {
    pub desc: &'a TableDesc,
    pub rows: &'a [OwnedRow],
}

/// The rows an emit-on-window-close view must hold of its query's `expected` rows: the groups up to the largest
/// one in its `committed` rows, none above. Windows close in order, and at the same barrier in every actor of
/// the aggregation (each has every upstream's latest watermark then), so the closed groups are a prefix; each
/// was emitted once, when no row could join it any more, so it holds its final value. Any other view must
/// hold all of `expected`.
pub fn closed_windows(
    query: &ViewQuery,
    committed: &[OwnedRow],
    mut expected: Vec<OwnedRow>,
) -> Vec<OwnedRow> {
    if !matches!(query, ViewQuery::Agg { eowc: true, .. }) {
        return expected;
    }
    let window = |r: &OwnedRow| int(r.datum_at(0));
    let last = committed.iter().filter_map(window).max();
    expected.retain(|r| last.is_some_and(|l| window(r).is_some_and(|w| w <= l)));
    expected
}

/// A sum as the engine's `NUMERIC`.
fn decimal(sum: i128) -> ScalarImpl {
    let sum = i64::try_from(sum).expect("the workload's sums fit in a BIGINT");
    ScalarImpl::Decimal(Decimal::from(sum))
}

fn int(d: &Datum) -> Option<i64> {
    d.as_ref().and_then(ScalarImpl::as_int64)
}

/// The rows `query` gives over `inputs` (one per upstream, in [`ViewQuery::upstreams`]'s order), in no
/// particular order. A temporal join's rows depend on when each left row came, which no input tells: its
/// rows are those of the view's `committed` rows that any timing could give ([`temporal_join`]).
pub fn evaluate(query: &ViewQuery, inputs: &[Input<'_>], committed: &[OwnedRow]) -> Vec<OwnedRow> {
    match query {
        ViewQuery::TemporalJoin { join, left_col, .. } => {
            temporal_join(&inputs[0], &inputs[1], *join, *left_col, committed)
        }
        ViewQuery::Agg { group, arg, .. } => aggregate(inputs[0].rows, *group, *arg),
        ViewQuery::Join {
            join,
            left_col,
            right_col,
            ..
        } => nested_loop_join(&inputs[0], &inputs[1], *join, *left_col, *right_col),
        ViewQuery::TopN {
            col,
            desc,
            limit,
            offset,
            ..
        } => top_n(&inputs[0], *col, *desc, *limit, *offset),
        ViewQuery::OverWindow {
            partition,
            order,
            arg,
            ..
        } => over_window(&inputs[0], *partition, *order, *arg),
    }
}

#[derive(Default)]
struct Acc {
    count: i64,
    sum: Option<i128>,
    min: Option<i64>,
    max: Option<i64>,
}

impl Acc {
    fn add(&mut self, x: Option<i64>) {
        self.count += 1;
        if let Some(x) = x {
            self.sum = Some(self.sum.unwrap_or(0) + i128::from(x));
            self.min = Some(self.min.map_or(x, |m| m.min(x)));
            self.max = Some(self.max.map_or(x, |m| m.max(x)));
        }
    }

    fn datums(&self) -> Vec<Datum> {
        let sum = self.sum.map(decimal);
        vec![
            Some(ScalarImpl::Int64(self.count)),
            sum,
            self.min.map(ScalarImpl::Int64),
            self.max.map(ScalarImpl::Int64),
        ]
    }
}

/// The columns of `query`'s rows whose streaming value may be 0 where the batch value is NULL. RisingWave's
/// streaming `sum` keeps one retractable value per group that, once the group has seen a non-NULL input, never
/// returns to NULL: after those inputs are retracted a group of only NULLs (a left join's unmatched rows) reads
/// 0 where PostgreSQL says NULL (RisingWave issue #7412, open at f21fb9b7915). epochlab's views keep 0 as
/// RisingWave does; the oracle accepts either value in these columns, and nowhere else.
pub fn sum_columns(query: &ViewQuery) -> Vec<usize> {
    match query {
        ViewQuery::Agg { group: Some(_), .. } => vec![2],
        ViewQuery::Agg { group: None, .. } => vec![1],
        ViewQuery::Join { .. }
        | ViewQuery::TemporalJoin { .. }
        | ViewQuery::TopN { .. }
        | ViewQuery::OverWindow { .. } => vec![],
    }
}

/// Whether the view's row `got` is the expected row `want`, allowing 0 for NULL in `sum_cols` (see
/// [`sum_columns`]).
fn same_row(got: &OwnedRow, want: &OwnedRow, sum_cols: &[usize]) -> bool {
    let zero = Some(ScalarImpl::Decimal(Decimal::from(0)));
    got.datums().len() == want.datums().len()
        && got
            .datums()
            .iter()
            .zip(want.datums())
            .enumerate()
            .all(|(i, (g, w))| g == w || (sum_cols.contains(&i) && w.is_none() && *g == zero))
}

/// `count(*), sum(x), min(x), max(x)` per group (`NULL` is a group of its own); without a group key one row,
/// also over no rows.
fn aggregate(rows: &[OwnedRow], group: Option<GroupKey>, arg: usize) -> Vec<OwnedRow> {
    let mut groups: BTreeMap<Option<i64>, Acc> = BTreeMap::new();
    for r in rows {
        let g = group.and_then(|g| {
            let v = int(r.datum_at(g.col))?;
            Some(g.modulus.map_or(v, |m| v % m))
        });
        groups.entry(g).or_default().add(int(r.datum_at(arg)));
    }
    if group.is_none() {
        let acc = groups.remove(&None).unwrap_or_default();
        return vec![OwnedRow::new(acc.datums())];
    }
    groups
        .into_iter()
        .map(|(g, acc)| {
            let mut datums = vec![g.map(ScalarImpl::Int64)];
            datums.extend(acc.datums());
            OwnedRow::new(datums)
        })
        .collect()
}

/// Every left row with every right row whose `right_col` equals its `left_col` (NULL equals nothing); a left
/// outer join keeps an unmatched left row with NULLs.
fn nested_loop_join(
    left: &Input<'_>,
    right: &Input<'_>,
    join: ViewJoin,
    left_col: usize,
    right_col: usize,
) -> Vec<OwnedRow> {
    let nulls = OwnedRow::new(vec![None; right.desc.column_types.len()]);
    let mut out = Vec::new();
    for l in left.rows {
        let key = int(l.datum_at(left_col));
        let before = out.len();
        for r in right.rows {
            if key.is_some() && int(r.datum_at(right_col)) == key {
                out.push(l.chain(r));
            }
        }
        if out.len() == before && join == ViewJoin::LeftOuter {
            out.push(l.chain(&nulls));
        }
    }
    out
}

/// A temporal join's rows, as far as they do not depend on when each left row came: per left row, the
/// view's committed rows with that left row and a right part that is NULLs (a left outer join) or keyed by
/// its `left_col` and a version of the right row with its pk (the workload's updates raise `v`, column 1,
/// by one and change nothing else, so a row as it stood then has `v` at most its row's `v` now, the rest
/// equal; a deleted row's versions are not checked); a left outer join's left row with none of them is expected with
/// NULLs (so that a lost left row shows). A committed row that is no such row is not expected. An inner
/// join's left row without a row is not checked: whether its key had a row when it came is timing.
fn temporal_join(
    left: &Input<'_>,
    right: &Input<'_>,
    join: ViewJoin,
    left_col: usize,
    committed: &[OwnedRow],
) -> Vec<OwnedRow> {
    let lw = left.desc.column_types.len();
    let rw = right.desc.column_types.len();
    let mut by_left: BTreeMap<Vec<u8>, Vec<&OwnedRow>> = BTreeMap::new();
    let encode = |r: &OwnedRow| format!("{r:?}").into_bytes();
    for c in committed.iter().filter(|c| c.len() == lw + rw) {
        let l = OwnedRow::new(c.datums()[..lw].to_vec());
        by_left.entry(encode(&l)).or_default().push(c);
    }
    let right_pk = &right.desc.pk_indices;
    let pk_of = |r: &[Datum]| {
        encode(&OwnedRow::new(
            right_pk.iter().map(|&i| r[i].clone()).collect(),
        ))
    };
    let now: BTreeMap<Vec<u8>, &OwnedRow> =
        right.rows.iter().map(|r| (pk_of(r.datums()), r)).collect();
    let a_version = |r: &[Datum]| match now.get(&pk_of(r)) {
        None => true,
        Some(cur) => {
            let (v, cur_v) = (r.get(1).and_then(int), cur.datums().get(1).and_then(int));
            let same_rest = r.get(2..) == cur.datums().get(2..);
            v.zip(cur_v).is_some_and(|(v, c)| v <= c) && same_rest
        }
    };
    let nulls = OwnedRow::new(vec![None; rw]);
    let mut out = Vec::new();
    for l in left.rows {
        let key = int(l.datum_at(left_col));
        let fits = |c: &&&OwnedRow| {
            let r = &c.datums()[lw..];
            let padded = r.iter().all(Option::is_none);
            (padded && join == ViewJoin::LeftOuter)
                || (key.is_some() && r.first().and_then(int) == key && a_version(r))
        };
        let rows: Vec<OwnedRow> = by_left
            .get(&encode(l))
            .map(|cs| cs.iter().filter(fits).map(|c| (**c).clone()).collect())
            .unwrap_or_default();
        if rows.is_empty() && join == ViewJoin::LeftOuter {
            out.push(l.chain(&nulls));
        }
        out.extend(rows);
    }
    out
}

/// The rows ranked `offset..offset + limit` by `col` (ties by the upstream's pk, ascending).
fn top_n(up: &Input<'_>, col: usize, desc: bool, limit: u64, offset: u64) -> Vec<OwnedRow> {
    let order = top_n_order(desc);
    let pk = &up.desc.pk_indices;
    let mut rows: Vec<&OwnedRow> = up.rows.iter().collect();
    rows.sort_by(|a, b| {
        cmp_datum(a.datum_at(col), b.datum_at(col), order).then_with(|| {
            pk.iter()
                .map(|&p| cmp_datum(a.datum_at(p), b.datum_at(p), OrderType::ascending()))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        })
    });
    let start = usize::try_from(offset).unwrap_or(usize::MAX);
    let n = usize::try_from(limit).unwrap_or(usize::MAX);
    rows.into_iter().skip(start).take(n).cloned().collect()
}

/// Per row, `g` (its partition: `NULL` is one of its own), the row, then over its partition sorted by
/// `order` (ascending, NULLs last; ties by the upstream's pk, ascending): its place from 1, the sum of `arg`
/// over the rows up to it (`NULL` until a non-NULL one), and the previous row's `arg` (`NULL` for the
/// first).
fn over_window(up: &Input<'_>, partition: GroupKey, order: usize, arg: usize) -> Vec<OwnedRow> {
    let mut parts: BTreeMap<Option<i64>, Vec<&OwnedRow>> = BTreeMap::new();
    for r in up.rows {
        let g = int(r.datum_at(partition.col)).map(|v| partition.modulus.map_or(v, |m| v % m));
        parts.entry(g).or_default().push(r);
    }
    let by_pk = |a: &OwnedRow, b: &OwnedRow| {
        let pk = &up.desc.pk_indices;
        pk.iter()
            .map(|&p| cmp_datum(a.datum_at(p), b.datum_at(p), OrderType::ascending()))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    };
    let mut out = Vec::new();
    for (g, mut rows) in parts {
        rows.sort_by(|a, b| {
            cmp_datum(a.datum_at(order), b.datum_at(order), OrderType::ascending())
                .then_with(|| by_pk(a, b))
        });
        let mut sum: Option<i128> = None;
        let mut prev: Datum = None;
        for (i, r) in rows.into_iter().enumerate() {
            let x = int(r.datum_at(arg));
            if let Some(x) = x {
                sum = Some(sum.unwrap_or(0) + i128::from(x));
            }
            let mut datums = vec![g.map(ScalarImpl::Int64)];
            datums.extend(r.datums().iter().cloned());
            datums.push(Some(ScalarImpl::Int64(i as i64 + 1)));
            datums.push(sum.map(decimal));
            datums.push(prev);
            prev = x.map(ScalarImpl::Int64);
            out.push(OwnedRow::new(datums));
        }
    }
    out
}

/// Two values in `order`: NULLs first or last as it says, the rest by value (the workload's types).
pub fn cmp_datum(a: &Datum, b: &Datum, order: OrderType) -> Ordering {
    let by_value = match (a, b) {
        (None, None) => return Ordering::Equal,
        (None, Some(_)) => return null_side(order),
        (Some(_), None) => return null_side(order).reverse(),
        (Some(a), Some(b)) => cmp_scalar(a, b),
    };
    if order.descending {
        by_value.reverse()
    } else {
        by_value
    }
}

fn null_side(order: OrderType) -> Ordering {
    if order.nulls_first {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

fn cmp_scalar(a: &ScalarImpl, b: &ScalarImpl) -> Ordering {
    match (a, b) {
        (ScalarImpl::Int64(a), ScalarImpl::Int64(b)) => a.cmp(b),
        (ScalarImpl::Utf8(a), ScalarImpl::Utf8(b)) => a.cmp(b),
        (ScalarImpl::Decimal(a), ScalarImpl::Decimal(b)) => a.cmp(b),
        // Types the workload's views never hold: their canonical encodings' order.
        _ => {
            let enc = |s: &ScalarImpl| {
                let mut buf = Vec::new();
                epochlab_common::memcmp::encode_datum(
                    &Some(s.clone()),
                    OrderType::ascending(),
                    &mut buf,
                );
                buf
            };
            enc(a).cmp(&enc(b))
        }
    }
}

/// The first difference between a view's committed rows and its query's rows, keyed by the view's pk.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error(
    "view {view} differs from its query ({committed} rows committed, {expected} expected): at key {key:?} \
     the view has {got}, its query {want}"
)]
pub struct ViewDiff {
    pub view: String,
    pub committed: usize,
    pub expected: usize,
    pub key: OwnedRow,
    /// `row [..]`, or `no row`.
    pub got: RowText,
    pub want: RowText,
}

/// A row as a difference shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct RowText(pub Option<OwnedRow>);

impl std::fmt::Display for RowText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(r) => write!(f, "row {r:?}"),
            None => write!(f, "no row"),
        }
    }
}

/// The view's committed rows against its query's rows, by the view's pk; `None` when they are equal (0 in
/// place of NULL allowed in `sum_cols`, see [`sum_columns`]).
pub fn compare(
    view: &str,
    desc: &TableDesc,
    committed: Vec<OwnedRow>,
    expected: Vec<OwnedRow>,
    sum_cols: &[usize],
) -> Option<ViewDiff> {
    let pk = &desc.pk_indices;
    let sort = |mut rows: Vec<OwnedRow>| {
        rows.sort_by(|a, b| cmp_keys(&a.project(pk), &b.project(pk)));
        rows
    };
    let (got, want) = (sort(committed), sort(expected));
    let (mut i, mut j) = (0, 0);
    let diff = |key: &OwnedRow, g: Option<&OwnedRow>, w: Option<&OwnedRow>| ViewDiff {
        view: view.to_string(),
        committed: got.len(),
        expected: want.len(),
        key: key.clone(),
        got: RowText(g.cloned()),
        want: RowText(w.cloned()),
    };
    loop {
        let (g, w) = (got.get(i), want.get(j));
        let order = match (g, w) {
            (None, None) => return None,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(g), Some(w)) => cmp_keys(&g.project(pk), &w.project(pk)),
        };
        match order {
            Ordering::Less => {
                let g = g.expect("a committed row");
                return Some(diff(&g.project(pk), Some(g), None));
            }
            Ordering::Greater => {
                let w = w.expect("an expected row");
                return Some(diff(&w.project(pk), None, Some(w)));
            }
            Ordering::Equal if !same_row(g.expect("a row"), w.expect("a row"), sum_cols) => {
                let g = g.expect("a committed row");
                return Some(diff(&g.project(pk), g.into(), w));
            }
            Ordering::Equal => (i, j) = (i + 1, j + 1),
        }
    }
}

fn cmp_keys(a: &OwnedRow, b: &OwnedRow) -> Ordering {
    a.datums()
        .iter()
        .zip(b.datums())
        .map(|(x, y)| cmp_datum(x, y, OrderType::ascending()))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use epochlab_common::catalog::Distribution;
    use epochlab_common::{DataType, TableId, VnodeCount};

    use super::*;

    fn table(types: usize, pk: Vec<usize>) -> TableDesc {
        TableDesc {
            table_id: TableId(1),
            column_types: vec![DataType::Int64; types],
            pk_orders: vec![OrderType::ascending(); pk.len()],
            value_indices: (0..types).collect(),
            pk_indices: pk,
            distribution: Distribution::Singleton,
            vnode_count: VnodeCount::new(16).unwrap(),
        }
    }

    fn row(values: &[Option<i64>]) -> OwnedRow {
        OwnedRow::new(values.iter().map(|v| v.map(ScalarImpl::Int64)).collect())
    }

    fn dec(v: i64) -> Datum {
        Some(ScalarImpl::Decimal(Decimal::from(v)))
    }

    #[test]
    fn aggregation_groups_nulls_together_and_skips_null_arguments() {
        let rows = [
            row(&[Some(1), Some(7)]),
            row(&[Some(4), Some(2)]),
            row(&[None, Some(5)]),
            row(&[Some(2), None]),
        ];
        let group = Some(GroupKey {
            col: 0,
            modulus: Some(3),
        });
        let mut got = aggregate(&rows, group, 1);
        got.sort_by(|a, b| cmp_keys(&a.project(&[0]), &b.project(&[0])));
        let int = |v: i64| Some(ScalarImpl::Int64(v));
        assert_eq!(
            got,
            vec![
                // 1 % 3 and 4 % 3.
                OwnedRow::new(vec![int(1), int(2), dec(9), int(2), int(7)]),
                OwnedRow::new(vec![int(2), int(1), None, None, None]),
                OwnedRow::new(vec![None, int(1), dec(5), int(5), int(5)]),
            ]
        );
        let none = aggregate(&[], None, 1);
        assert_eq!(none, vec![OwnedRow::new(vec![int(0), None, None, None])]);
    }

    #[test]
    fn a_left_join_keeps_unmatched_rows_and_null_matches_nothing() {
        let (l, r) = (table(2, vec![0]), table(2, vec![0]));
        let left = [row(&[Some(1), Some(10)]), row(&[Some(2), None])];
        let right = [row(&[Some(10), Some(0)]), row(&[None, Some(1)])];
        let input = |desc, rows| Input { desc, rows };
        let joined = |join| nested_loop_join(&input(&l, &left), &input(&r, &right), join, 1, 0);
        let matched = row(&[Some(1), Some(10), Some(10), Some(0)]);
        assert_eq!(joined(ViewJoin::Inner), vec![matched.clone()]);
        let unmatched = row(&[Some(2), None, None, None]);
        assert_eq!(joined(ViewJoin::LeftOuter), vec![matched, unmatched]);
    }

    #[test]
    fn top_n_orders_nulls_as_risingwave_and_breaks_ties_by_the_pk() {
        let desc = table(2, vec![0]);
        let rows = [
            row(&[Some(3), Some(1)]),
            row(&[Some(1), Some(1)]),
            row(&[Some(2), None]),
            row(&[Some(4), Some(0)]),
        ];
        let up = Input {
            desc: &desc,
            rows: &rows,
        };
        let keys = |rows: Vec<OwnedRow>| -> Vec<Datum> {
            rows.iter().map(|r| r.datum_at(0).clone()).collect()
        };
        let int = |v: i64| Some(ScalarImpl::Int64(v));
        // ASC NULLS LAST: 0 (k 4), 1 (k 1), 1 (k 3), NULL (k 2).
        assert_eq!(keys(top_n(&up, 1, false, 2, 1)), vec![int(1), int(3)]);
        // DESC NULLS FIRST.
        assert_eq!(keys(top_n(&up, 1, true, 2, 0)), vec![int(2), int(1)]);
    }

    #[test]
    fn the_first_difference_names_the_view_the_key_and_both_rows() {
        let desc = table(2, vec![0]);
        let want = vec![row(&[Some(1), Some(5)]), row(&[Some(2), Some(6)])];
        assert_eq!(compare("v1", &desc, want.clone(), want.clone(), &[]), None);
        let got = vec![row(&[Some(2), Some(7)]), row(&[Some(1), Some(5)])];
        let diff = compare("v1", &desc, got, want.clone(), &[]).unwrap();
        assert_eq!(diff.key, row(&[Some(2)]));
        assert_eq!(
            diff.to_string(),
            "view v1 differs from its query (2 rows committed, 2 expected): at key [Some(Int64(2))] \
             the view has row [Some(Int64(2)), Some(Int64(7))], its query row [Some(Int64(2)), Some(Int64(6))]"
        );
        let missing = compare("v1", &desc, want[..1].to_vec(), want.clone(), &[]).unwrap();
        assert!(
            missing
                .to_string()
                .ends_with("the view has no row, its query row [Some(Int64(2)), Some(Int64(6))]")
        );
        let extra = compare("v1", &desc, want.clone(), want[1..].to_vec(), &[]).unwrap();
        assert_eq!(extra.key, row(&[Some(1)]));
        assert_eq!(extra.want, RowText(None));
    }

    #[test]
    fn a_sum_of_only_nulls_may_read_zero_as_in_risingwave_and_nothing_else_may() {
        let desc = table(3, vec![0]);
        let int = |v: i64| Some(ScalarImpl::Int64(v));
        let want = vec![OwnedRow::new(vec![int(1), int(2), None])];
        let zero = vec![OwnedRow::new(vec![int(1), int(2), dec(0)])];
        assert_eq!(compare("v1", &desc, zero.clone(), want.clone(), &[2]), None);
        assert!(compare("v1", &desc, zero, want.clone(), &[]).is_some());
        let one = vec![OwnedRow::new(vec![int(1), int(2), dec(1)])];
        assert!(compare("v1", &desc, one, want.clone(), &[2]).is_some());
        // Zero where the query has a value, or NULL where it has 0, is a difference.
        let want_zero = vec![OwnedRow::new(vec![int(1), int(2), dec(0)])];
        let null = vec![OwnedRow::new(vec![int(1), int(2), None])];
        assert!(compare("v1", &desc, null, want_zero, &[2]).is_some());
        let agg = |group| ViewQuery::Agg {
            upstream: "t".into(),
            group,
            arg: 1,
            eowc: false,
        };
        let g = GroupKey {
            col: 0,
            modulus: None,
        };
        assert_eq!(sum_columns(&agg(Some(g))), vec![2]);
        assert_eq!(sum_columns(&agg(None)), vec![1]);
    }
}
