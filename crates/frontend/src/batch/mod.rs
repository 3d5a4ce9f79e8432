//! The batch engine: a logical plan evaluated over rows read at the max committed epoch. Correct first, not
//! fast: every operator materializes its output.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use epochlab_common::{Datum, Op, OwnedRow, ScalarImpl};

use crate::binder::CatalogReader;
use crate::error::SqlError;
use crate::planner::{JoinType, LogicalPlan, SetOp};
use crate::scalar::agg::AggState;
use crate::scalar::{
    AggCall, EvalContext, ExprNode, OrderType, TableFunctionType, cmp_datum, eval_with,
};

/// Rows a batch query may produce at most (bounded, like everything else).
const MAX_ROWS: usize = 10_000_000;

/// The rows `plan` gives. `now()` is the session's time when the query starts (the simulation's clock), one
/// value for the whole query, as RisingWave's batch query takes it from its epoch.
pub fn execute(plan: &LogicalPlan, catalog: &dyn CatalogReader) -> Result<Vec<OwnedRow>, SqlError> {
    let ctx = EvalContext {
        now_usecs: catalog.now_usecs(),
    };
    run(&crate::planner::optimize(plan), catalog, &ctx)
}

fn run(
    plan: &LogicalPlan,
    catalog: &dyn CatalogReader,
    ctx: &EvalContext,
) -> Result<Vec<OwnedRow>, SqlError> {
    let run_input = |p: &LogicalPlan| run(p, catalog, ctx);
    match plan {
        LogicalPlan::Scan {
            table_id,
            exprs,
            filter,
            ..
        } => Ok(scan(
            catalog.committed_rows(*table_id),
            exprs,
            filter.as_ref(),
            ctx,
        )),
        LogicalPlan::Values { rows, .. } => values(rows, ctx),
        LogicalPlan::Rows { rows, .. } => Ok(rows.clone()),
        LogicalPlan::Project { exprs, input } => run_input(input)?
            .iter()
            .map(|r| project(exprs, r, ctx))
            .collect(),
        LogicalPlan::Filter { predicate, input } => filter(predicate, run_input(input)?, ctx),
        LogicalPlan::Agg {
            group_key,
            calls,
            input,
        } => hash_agg(group_key, calls, run_input(input)?),
        LogicalPlan::Join {
            kind,
            on,
            left,
            right,
        } => run_join(*kind, on.as_ref(), left, right, catalog, ctx),
        LogicalPlan::Union { inputs } => run_union(inputs, catalog, ctx),
        LogicalPlan::SetOp {
            op,
            all,
            left,
            right,
        } => Ok(set_op(*op, *all, run_input(left)?, run_input(right)?)),
        LogicalPlan::TopN {
            order,
            limit,
            offset,
            with_ties,
            input,
        } => Ok(top_n(
            run_input(input)?,
            order,
            (*limit, *offset),
            *with_ties,
        )),
        LogicalPlan::Dedup { keys, input } => Ok(dedup(keys, run_input(input)?)),
        LogicalPlan::TableFunction { func, args, .. } => table_function(*func, args, ctx),
        LogicalPlan::OverWindow { calls, input } => over_window(calls, run_input(input)?),
        LogicalPlan::ProjectSet { select_list, input } => {
            project_set(select_list, run_input(input)?, ctx)
        }
        LogicalPlan::Expand {
            column_subsets,
            input,
        } => Ok(expand(column_subsets, run_input(input)?)),
        LogicalPlan::HopWindow {
            time_col,
            slide,
            size,
            input,
        } => hop_window(*time_col, slide, size, run_input(input)?, ctx),
    }
}

/// A join of its two inputs' rows.
fn run_join(
    kind: JoinType,
    on: Option<&ExprNode>,
    left: &LogicalPlan,
    right: &LogicalPlan,
    catalog: &dyn CatalogReader,
    ctx: &EvalContext,
) -> Result<Vec<OwnedRow>, SqlError> {
    let width = right.schema().len();
    let lw = left.schema().len();
    join(
        kind,
        on,
        run(left, catalog, ctx)?,
        run(right, catalog, ctx)?,
        (lw, width),
        ctx,
    )
}

/// `UNION ALL`: each input's rows in turn.
fn run_union(
    inputs: &[LogicalPlan],
    catalog: &dyn CatalogReader,
    ctx: &EvalContext,
) -> Result<Vec<OwnedRow>, SqlError> {
    let mut out = Vec::new();
    for i in inputs {
        out.extend(run(i, catalog, ctx)?);
    }
    Ok(out)
}

/// A table's committed rows through its filter, then `exprs`. A view's expressions are a streaming job's:
/// evaluated non-strictly (an error is a NULL).
fn scan(
    rows: impl IntoIterator<Item = OwnedRow>,
    exprs: &[ExprNode],
    filter: Option<&ExprNode>,
    ctx: &EvalContext,
) -> Vec<OwnedRow> {
    let mut ignore = |_: crate::scalar::ExprError| {};
    let mut out = Vec::new();
    for r in rows {
        let keep = filter.is_none_or(|f| {
            crate::scalar::eval_non_strict_with(f, &r, ctx, &mut ignore)
                == Some(ScalarImpl::Bool(true))
        });
        if keep {
            let row = exprs
                .iter()
                .map(|e| crate::scalar::eval_non_strict_with(e, &r, ctx, &mut ignore))
                .collect();
            out.push(OwnedRow::new(row));
        }
    }
    out
}

/// Constant rows, each expression evaluated over no input.
fn values(rows: &[Vec<ExprNode>], ctx: &EvalContext) -> Result<Vec<OwnedRow>, SqlError> {
    rows.iter()
        .map(|r| {
            let empty = OwnedRow::empty();
            r.iter()
                .map(|e| eval_with(e, &empty, ctx))
                .collect::<Result<Vec<_>, _>>()
                .map(OwnedRow::new)
                .map_err(SqlError::from)
        })
        .collect()
}

/// The rows for which `predicate` holds.
fn filter(
    predicate: &ExprNode,
    rows: Vec<OwnedRow>,
    ctx: &EvalContext,
) -> Result<Vec<OwnedRow>, SqlError> {
    let mut out = Vec::new();
    for r in rows {
        if holds(predicate, &r, ctx)? {
            out.push(r);
        }
    }
    Ok(out)
}

/// `ORDER BY .. LIMIT .. OFFSET ..`; `with_ties` (`FETCH FIRST n ROWS WITH TIES`, never with an offset)
/// also keeps the rows that sort equal to the last one kept.
fn top_n(
    mut rows: Vec<OwnedRow>,
    order: &[(usize, OrderType)],
    (limit, offset): (Option<u64>, u64),
    with_ties: bool,
) -> Vec<OwnedRow> {
    sort(&mut rows, order);
    let skip = usize::try_from(offset).unwrap_or(usize::MAX);
    let mut take = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    if with_ties && take > 0 {
        let last = skip.saturating_add(take) - 1;
        if let Some(edge) = rows.get(last) {
            let ties = rows[last + 1..]
                .iter()
                .take_while(|r| order_cmp(r, edge, order) == Ordering::Equal)
                .count();
            take += ties;
        }
    }
    rows.into_iter().skip(skip).take(take).collect()
}

/// `DISTINCT ON (keys)`: the first row of each key, in input order.
fn dedup(keys: &[usize], rows: Vec<OwnedRow>) -> Vec<OwnedRow> {
    let mut seen: BTreeMap<Key, ()> = BTreeMap::new();
    let mut out = Vec::new();
    for r in rows {
        if seen.insert(Key(r.project(keys).into_inner()), ()).is_none() {
            out.push(r);
        }
    }
    out
}

/// `GROUPING SETS`: every row once per column subset, with the subset's flag.
fn expand(column_subsets: &[Vec<usize>], rows: Vec<OwnedRow>) -> Vec<OwnedRow> {
    let mut out = Vec::with_capacity(rows.len() * column_subsets.len());
    for (flag, subset) in column_subsets.iter().enumerate() {
        out.extend(
            rows.iter()
                .map(|r| epochlab_common::plan::expand_row(r, subset, flag)),
        );
    }
    out
}

/// Each row with its window functions' values (RisingWave's `BatchOverWindow`): per call, the rows split
/// by partition, each partition sorted by the call's order (peers in input order) and evaluated whole.
fn over_window(
    calls: &[crate::planner::WindowCall],
    rows: Vec<OwnedRow>,
) -> Result<Vec<OwnedRow>, SqlError> {
    let width = rows.first().map_or(0, OwnedRow::len);
    let columns: Vec<usize> = (0..width).collect();
    let mut values: Vec<Vec<Datum>> = vec![Vec::with_capacity(calls.len()); rows.len()];
    for call in calls {
        let mut parts: BTreeMap<Key, Vec<OwnedRow>> = BTreeMap::new();
        for (i, r) in rows.iter().enumerate() {
            let at = OwnedRow::new(vec![Some(ScalarImpl::Int64(i as i64))]);
            let part = Key(r.project(&call.partition_by).into_inner());
            parts.entry(part).or_default().push(r.chain(&at));
        }
        for mut part in parts.into_values() {
            sort(&mut part, &call.order_by);
            let plain: Vec<OwnedRow> = part.iter().map(|r| r.project(&columns)).collect();
            let out = epochlab_expr::window::eval_partition(&call.func, &call.order_by, &plain)?;
            for (r, v) in part.iter().zip(out) {
                let i = r
                    .datum_at(width)
                    .as_ref()
                    .and_then(crate::scalar::int_value);
                values[i.expect("a row's position") as usize].push(v);
            }
        }
    }
    Ok(rows
        .into_iter()
        .zip(values)
        .map(|(r, v)| r.chain(&OwnedRow::new(v)))
        .collect())
}

fn project(exprs: &[ExprNode], row: &OwnedRow, ctx: &EvalContext) -> Result<OwnedRow, SqlError> {
    exprs
        .iter()
        .map(|e| eval_with(e, row, ctx))
        .collect::<Result<Vec<_>, _>>()
        .map(OwnedRow::new)
        .map_err(SqlError::from)
}

fn holds(predicate: &ExprNode, row: &OwnedRow, ctx: &EvalContext) -> Result<bool, SqlError> {
    Ok(matches!(
        eval_with(predicate, row, ctx)?,
        Some(ScalarImpl::Bool(true))
    ))
}

/// A row as a map key: datums ordered as `ORDER BY` orders them (NULLs equal to each other).
#[derive(Clone, Debug)]
struct Key(Vec<Datum>);

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        for (a, b) in self.0.iter().zip(&other.0) {
            let o = cmp_datum(a, b);
            if o != Ordering::Equal {
                return o;
            }
        }
        self.0.len().cmp(&other.0.len())
    }
}

fn hash_agg(
    group_key: &[usize],
    calls: &[AggCall],
    rows: Vec<OwnedRow>,
) -> Result<Vec<OwnedRow>, SqlError> {
    let mut groups: BTreeMap<Key, (usize, Vec<AggState>)> = BTreeMap::new();
    for r in &rows {
        // The group key as RisingWave's hash key gives it back (equal values, one representative).
        let key = r.project(group_key).into_inner();
        let key = Key(key
            .into_iter()
            .map(epochlab_common::types::datum_hash_key_canonical)
            .collect());
        let next = groups.len();
        let (_, states) = groups
            .entry(key)
            .or_insert_with(|| (next, calls.iter().map(AggState::in_arrival_order).collect()));
        for s in states.iter_mut() {
            s.apply(Op::Insert, r)?;
        }
    }
    if groups.is_empty() && group_key.is_empty() {
        let states: Vec<AggState> = calls.iter().map(AggState::in_arrival_order).collect();
        return Ok(vec![OwnedRow::new(
            states.iter().map(AggState::output).collect(),
        )]);
    }
    // Groups in the order they were first seen.
    let mut out: Vec<(usize, OwnedRow)> = groups
        .into_iter()
        .map(|(key, (seq, states))| {
            let mut row = key.0;
            row.extend(states.iter().map(AggState::output));
            (seq, OwnedRow::new(row))
        })
        .collect();
    out.sort_by_key(|(seq, _)| *seq);
    Ok(out.into_iter().map(|(_, r)| r).collect())
}

/// Equi-join keys of `on` (`l = r` and `l IS NOT DISTINCT FROM r` conjuncts between the sides, the second
/// matching NULL with NULL): hash join on them, the rest checked per pair; none: nested loop.
pub fn equi_keys(on: Option<&ExprNode>, lw: usize) -> Vec<(usize, usize, bool)> {
    fn conjuncts<'a>(e: &'a ExprNode, out: &mut Vec<&'a ExprNode>) {
        match e {
            ExprNode::Call {
                func: crate::scalar::ExprType::And,
                args,
                ..
            } => args.iter().for_each(|a| conjuncts(a, out)),
            other => out.push(other),
        }
    }
    let mut cs = Vec::new();
    if let Some(on) = on {
        conjuncts(on, &mut cs);
    }
    use crate::scalar::ExprType;
    cs.into_iter()
        .filter_map(|c| match c {
            ExprNode::Call { func, args, .. }
                if matches!(func, ExprType::Equal | ExprType::IsNotDistinctFrom) =>
            {
                let null_safe = *func == ExprType::IsNotDistinctFrom;
                match (&args[0], &args[1]) {
                    (
                        ExprNode::InputRef { index: a, ty: ta },
                        ExprNode::InputRef { index: b, ty: tb },
                    ) if ta == tb => match (*a < lw, *b < lw) {
                        (true, false) => Some((*a, *b - lw, null_safe)),
                        (false, true) => Some((*b, *a - lw, null_safe)),
                        _ => None,
                    },
                    _ => None,
                }
            }
            _ => None,
        })
        .collect()
}

fn join(
    kind: JoinType,
    on: Option<&ExprNode>,
    left: Vec<OwnedRow>,
    right: Vec<OwnedRow>,
    (lw, rw): (usize, usize),
    ctx: &EvalContext,
) -> Result<Vec<OwnedRow>, SqlError> {
    let keys = equi_keys(on, lw);
    let lk: Vec<usize> = keys.iter().map(|k| k.0).collect();
    let rk: Vec<usize> = keys.iter().map(|k| k.1).collect();
    // A key with NULL in a column compared by `=` matches nothing.
    let unmatchable = |k: &[Datum]| k.iter().zip(&keys).any(|(v, key)| v.is_none() && !key.2);
    // Right rows by key.
    let mut index: BTreeMap<Key, Vec<usize>> = BTreeMap::new();
    for (i, r) in right.iter().enumerate() {
        let k = r.project(&rk).into_inner();
        if unmatchable(&k) {
            continue;
        }
        index.entry(Key(k)).or_default().push(i);
    }
    let all_right: Vec<usize> = (0..right.len()).collect();
    let mut right_matched = vec![false; right.len()];
    let mut out = Vec::new();
    for l in &left {
        let k = l.project(&lk).into_inner();
        let candidates: &[usize] = if keys.is_empty() {
            &all_right
        } else if unmatchable(&k) {
            &[]
        } else {
            index.get(&Key(k)).map_or(&[], Vec::as_slice)
        };
        let mut matched = false;
        for &ri in candidates {
            let row = l.chain(&right[ri]);
            if on.is_none_or(|p| holds(p, &row, ctx).unwrap_or(false)) {
                matched = true;
                right_matched[ri] = true;
                match kind {
                    JoinType::LeftSemi | JoinType::LeftAnti => break,
                    _ => out.push(row),
                }
                if out.len() > MAX_ROWS {
                    return Err(SqlError::Invalid(format!(
                        "a join of more than {MAX_ROWS} rows"
                    )));
                }
            }
        }
        match kind {
            JoinType::LeftSemi if matched => out.push(l.clone()),
            JoinType::LeftAnti if !matched => out.push(l.clone()),
            JoinType::LeftOuter | JoinType::FullOuter if !matched => {
                out.push(l.chain(&OwnedRow::new(vec![None; rw])));
            }
            _ => {}
        }
    }
    if matches!(kind, JoinType::RightOuter | JoinType::FullOuter) {
        for (ri, r) in right.iter().enumerate() {
            if !right_matched[ri] {
                out.push(OwnedRow::new(vec![None; lw]).chain(r));
            }
        }
    }
    Ok(out)
}

fn set_op(op: SetOp, all: bool, left: Vec<OwnedRow>, right: Vec<OwnedRow>) -> Vec<OwnedRow> {
    let mut counts: BTreeMap<Key, usize> = BTreeMap::new();
    for r in &right {
        *counts.entry(Key(r.datums().to_vec())).or_default() += 1;
    }
    let mut out = Vec::new();
    let mut emitted: BTreeMap<Key, ()> = BTreeMap::new();
    let rows: Vec<OwnedRow> = match op {
        SetOp::Union => left.into_iter().chain(right).collect(),
        _ => left,
    };
    for r in rows {
        let key = Key(r.datums().to_vec());
        let keep = match op {
            SetOp::Union => true,
            SetOp::Intersect => match counts.get_mut(&key) {
                Some(n) if *n > 0 => {
                    if all {
                        *n -= 1;
                    }
                    true
                }
                _ => false,
            },
            SetOp::Except => match counts.get_mut(&key) {
                Some(n) if *n > 0 => {
                    if all {
                        *n -= 1;
                    }
                    false
                }
                _ => true,
            },
        };
        if keep && (all || emitted.insert(key, ()).is_none()) {
            out.push(r);
        }
    }
    out
}

/// Sort rows by `order` (stable).
pub fn sort(rows: &mut [OwnedRow], order: &[(usize, OrderType)]) {
    rows.sort_by(|a, b| order_cmp(a, b, order));
}

/// Two rows compared by `order`, column by column.
fn order_cmp(a: &OwnedRow, b: &OwnedRow, order: &[(usize, OrderType)]) -> Ordering {
    for &(i, o) in order {
        let (x, y) = (a.datum_at(i), b.datum_at(i));
        let ord = match (x, y) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) if o.nulls_first => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) if o.nulls_first => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            _ if o.descending => cmp_datum(x, y).reverse(),
            _ => cmp_datum(x, y),
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

/// A select list with table functions (RisingWave's `BatchProjectSet`): each row's items, then its rows.
fn project_set(
    select_list: &[crate::planner::ProjectSetSelectItem],
    rows: Vec<OwnedRow>,
    ctx: &EvalContext,
) -> Result<Vec<OwnedRow>, SqlError> {
    use crate::planner::ProjectSetSelectItem as Item;
    use crate::scalar::table_function::{ProjectSetValue, eval, project_set_rows};
    let mut out = Vec::new();
    for r in &rows {
        let mut values = Vec::with_capacity(select_list.len());
        for item in select_list {
            values.push(match item {
                Item::Expr(e) => ProjectSetValue::One(eval_with(e, r, ctx)?),
                Item::TableFunction { func, args, .. } => {
                    let args = args
                        .iter()
                        .map(|a| eval_with(a, r, ctx))
                        .collect::<Result<Vec<_>, _>>()?;
                    ProjectSetValue::Set(eval(*func, &args)?)
                }
            });
        }
        out.extend(project_set_rows(&values).into_iter().map(OwnedRow::new));
        if out.len() > MAX_ROWS {
            return Err(SqlError::Invalid(format!(
                "ProjectSet: more than {MAX_ROWS} rows"
            )));
        }
    }
    Ok(out)
}

/// A table function's rows (`generate_series`, `range`).
fn table_function(
    func: TableFunctionType,
    args: &[ExprNode],
    ctx: &EvalContext,
) -> Result<Vec<OwnedRow>, SqlError> {
    let empty = OwnedRow::empty();
    let args = args
        .iter()
        .map(|a| eval_with(a, &empty, ctx))
        .collect::<Result<Vec<_>, _>>()?;
    let values = crate::scalar::table_function::eval(func, &args)?;
    if values.len() > MAX_ROWS {
        return Err(SqlError::Invalid(format!(
            "{func:?}: more than {MAX_ROWS} rows"
        )));
    }
    Ok(values.into_iter().map(|v| OwnedRow::new(vec![v])).collect())
}

/// The windows of `hop`: for a row at `t`, the starts `s` that are multiples of `slide` with
/// `s <= t < s + size`, newest first: `tumble_start(t, slide) - k * slide` for `k` in `0..size / slide`.
fn hop_window(
    time_col: usize,
    slide: &ExprNode,
    size: &ExprNode,
    rows: Vec<OwnedRow>,
    ctx: &EvalContext,
) -> Result<Vec<OwnedRow>, SqlError> {
    use crate::scalar::sig::build_func;
    let empty = OwnedRow::empty();
    let interval = |e: &ExprNode| match eval_with(e, &empty, ctx) {
        Ok(Some(ScalarImpl::Interval(i))) => Ok(i),
        _ => Err(SqlError::Invalid("hop takes interval literals".into())),
    };
    let (slide_v, size_v) = (interval(slide)?, interval(size)?);
    let (s, z) = (slide_v.total_usecs(), size_v.total_usecs());
    if s <= 0 || z <= 0 || z % s != 0 || slide_v.months() != 0 || size_v.months() != 0 {
        return Err(SqlError::Invalid(
            "Invalid parameter window_size: window_size must be a positive multiple of window_slide"
                .into(),
        ));
    }
    let n = usize::try_from(z / s).unwrap_or(usize::MAX).min(MAX_ROWS);
    let mut windows = Vec::with_capacity(n);
    for k in 0..n {
        let back = epochlab_common::types::Interval::from_total_usecs(s * k as i128)
            .ok_or_else(|| SqlError::Invalid("hop window out of range".into()))?;
        windows.push(back);
    }
    let mut out = Vec::new();
    for r in rows {
        let Some(t) = r.datum_at(time_col).clone() else {
            continue;
        };
        let ty = crate::scalar::cast::value_type(&t);
        let col = ExprNode::Literal { value: Some(t), ty };
        let base = build_func(
            crate::scalar::ExprType::TumbleStart,
            vec![col, slide.clone()],
        )?;
        for back in &windows {
            let back = ExprNode::Literal {
                value: Some(ScalarImpl::Interval(*back)),
                ty: epochlab_common::DataType::Interval,
            };
            let start = build_func(crate::scalar::ExprType::Subtract, vec![base.clone(), back])?;
            let end = build_func(
                crate::scalar::ExprType::Add,
                vec![start.clone(), size.clone()],
            )?;
            let mut row = r.datums().to_vec();
            row.push(eval_with(&start, &empty, ctx)?);
            row.push(eval_with(&end, &empty, ctx)?);
            out.push(OwnedRow::new(row));
        }
    }
    Ok(out)
}
