//! `EXPLAIN`: plans printed as RisingWave prints them, a tree of `StreamMaterialize`, `StreamExchange { dist:
//! HashShard(..) }`, `StreamHashAgg`, ... (one line per node), and the fragments of a stream plan.

use epochlab_common::plan::{DispatchStrategy, StreamFragmentGraph, StreamScanType};

use crate::planner::pushdown::conjuncts;
use crate::planner::stream::{Dist, StreamOp, StreamPlan};
use crate::planner::{JoinType, LogicalPlan, SetOp};
use crate::scalar::{AggCall, ExprNode, ExprType, OrderType};

/// An expression over columns named `names`.
pub fn fmt_expr(e: &ExprNode, names: &[String]) -> String {
    match e {
        ExprNode::InputRef { index, .. } => names
            .get(*index)
            .cloned()
            .unwrap_or_else(|| format!("${index}")),
        ExprNode::Literal { value, ty } => {
            let v = value
                .as_ref()
                .map_or_else(|| "null".to_string(), |v| v.to_string());
            format!("{v}:{ty:?}")
        }
        ExprNode::Call { func, args, .. } => {
            let op = match func {
                ExprType::Add => Some("+"),
                ExprType::Subtract => Some("-"),
                ExprType::Multiply => Some("*"),
                ExprType::Divide => Some("/"),
                ExprType::Modulus => Some("%"),
                ExprType::Equal => Some("="),
                ExprType::NotEqual => Some("<>"),
                ExprType::LessThan => Some("<"),
                ExprType::LessThanOrEqual => Some("<="),
                ExprType::GreaterThan => Some(">"),
                ExprType::GreaterThanOrEqual => Some(">="),
                ExprType::And => Some("AND"),
                ExprType::Or => Some("OR"),
                _ => None,
            };
            let args: Vec<String> = args.iter().map(|a| fmt_expr(a, names)).collect();
            match (op, args.as_slice()) {
                (Some(op), [l, r]) => format!("({l} {op} {r})"),
                _ => format!("{func:?}({})", args.join(", ")),
            }
        }
    }
}

fn fmt_list(items: impl IntoIterator<Item = String>) -> String {
    items.into_iter().collect::<Vec<_>>().join(", ")
}

fn fmt_cols(cols: &[usize], names: &[String]) -> String {
    fmt_list(
        cols.iter()
            .map(|&c| names.get(c).cloned().unwrap_or_default()),
    )
}

fn fmt_order(order: &[(usize, OrderType)], names: &[String]) -> String {
    fmt_list(order.iter().map(|(c, o)| {
        let dir = if o.descending { "DESC" } else { "ASC" };
        format!("{} {dir}", names.get(*c).cloned().unwrap_or_default())
    }))
}

fn fmt_aggs(calls: &[AggCall], names: &[String]) -> String {
    fmt_list(calls.iter().map(|c| {
        let kind = format!("{:?}", c.kind).to_lowercase();
        let distinct = if c.distinct { "distinct " } else { "" };
        if c.args.is_empty() {
            return kind;
        }
        format!("{kind}({distinct}{})", fmt_cols(&c.args, names))
    }))
}

fn fmt_dist(d: &Dist, names: &[String]) -> String {
    match d {
        Dist::Single => "Single".into(),
        Dist::HashShard(k) => format!("HashShard({})", fmt_cols(k, names)),
        Dist::UpstreamHashShard(k) => format!("UpstreamHashShard({})", fmt_cols(k, names)),
        Dist::SomeShard => "SomeShard".into(),
        Dist::Broadcast => "Broadcast".into(),
    }
}

fn comparator_symbol(c: crate::scalar::ExprType) -> &'static str {
    use crate::scalar::ExprType as T;
    match c {
        T::GreaterThan => ">",
        T::GreaterThanOrEqual => ">=",
        T::LessThan => "<",
        T::LessThanOrEqual => "<=",
        _ => "?",
    }
}

fn join_type(k: JoinType) -> &'static str {
    match k {
        JoinType::Inner => "Inner",
        JoinType::LeftOuter => "LeftOuter",
        JoinType::RightOuter => "RightOuter",
        JoinType::FullOuter => "FullOuter",
        JoinType::LeftSemi => "LeftSemi",
        JoinType::LeftAnti => "LeftAnti",
    }
}

/// A hash join's predicate as RisingWave shows it: its key pairs (`l = r`, `l IS NOT DISTINCT FROM r`),
/// then the condition's conjuncts, joined by `AND`.
fn join_predicate(p: &StreamPlan) -> String {
    let (StreamOp::HashJoin {
        left_keys,
        right_keys,
        null_safe,
        condition,
        ..
    }
    | StreamOp::TemporalJoin {
        left_keys,
        right_keys,
        null_safe,
        condition,
        ..
    }) = &p.op
    else {
        return String::new();
    };
    let mut both = p.inputs[0].names.clone();
    let l_all = both.len();
    both.extend(p.inputs[1].names.iter().cloned());
    let name = |i: usize| both.get(i).cloned().unwrap_or_default();
    let mut parts: Vec<String> = left_keys
        .iter()
        .zip(right_keys)
        .zip(null_safe)
        .map(|((&l, &r), &ns)| {
            let op = if ns { "IS NOT DISTINCT FROM" } else { "=" };
            format!("{} {op} {}", name(l), name(l_all + r))
        })
        .collect();
    if let Some(c) = condition {
        parts.extend(conjuncts(c).iter().map(|c| fmt_expr(c, &both)));
    }
    parts.join(" AND ")
}

/// One line of a stream node.
fn stream_line(p: &StreamPlan) -> String {
    let input_names = p.inputs.first().map_or(&p.names, |i| &i.names);
    match &p.op {
        StreamOp::TableScan {
            table, scan_type, ..
        } => stream_table_scan_line(p, table, *scan_type),
        StreamOp::Values { rows } => format!("StreamValues {{ rows: {} }}", rows.len()),
        StreamOp::RowIdGen { row_id_index } => {
            format!("StreamRowIdGen {{ row_id_index: {row_id_index} }}")
        }
        StreamOp::Project { exprs } => format!(
            "StreamProject {{ exprs: [{}] }}",
            fmt_list(exprs.iter().map(|e| fmt_expr(e, input_names)))
        ),
        StreamOp::Filter { predicate } => {
            format!(
                "StreamFilter {{ predicate: {} }}",
                fmt_expr(predicate, input_names)
            )
        }
        op @ (StreamOp::HashAgg { .. } | StreamOp::SimpleAgg { .. }) => {
            stream_agg_line(op, input_names)
        }
        StreamOp::HashJoin { kind, .. } => format!(
            "StreamHashJoin {{ type: {}, predicate: {}, output: [{}] }}",
            join_type(*kind),
            join_predicate(p),
            fmt_list(p.names.iter().cloned())
        ),
        StreamOp::TemporalJoin { kind, .. } => format!(
            "StreamTemporalJoin {{ type: {}, append_only: true, predicate: {}, output: [{}] }}",
            join_type(*kind),
            join_predicate(p),
            fmt_list(p.names.iter().cloned())
        ),
        StreamOp::DynamicFilter { key, comparator } => {
            stream_dynamic_filter_line(p, *key, *comparator)
        }
        StreamOp::Now => "StreamNow { output: [now] }".into(),
        StreamOp::OverWindow { calls, eowc, .. } => format!(
            "Stream{}OverWindow {{ window_functions: [{}] }}",
            if *eowc { "Eowc" } else { "" },
            fmt_list(calls.iter().map(|c| format!("{:?}", c.kind).to_lowercase()))
        ),
        StreamOp::EowcSort { sort_column } => format!(
            "StreamEowcSort {{ sort_column: {} }}",
            input_names.get(*sort_column).cloned().unwrap_or_default()
        ),
        StreamOp::Union => "StreamUnion { all: true }".into(),
        StreamOp::ProjectSet { select_list } => format!(
            "StreamProjectSet {{ select_list: [{}] }}",
            fmt_list(select_list.iter().map(|i| fmt_select_item(i, input_names)))
        ),
        StreamOp::Expand { column_subsets } => format!(
            "StreamExpand {{ column_subsets: [{}] }}",
            fmt_column_subsets(column_subsets, input_names)
        ),
        StreamOp::HopWindow {
            time_col,
            slide,
            size,
            ..
        } => format!(
            "StreamHopWindow {{ time_col: {}, slide: {}, size: {} }}",
            input_names.get(*time_col).cloned().unwrap_or_default(),
            epochlab_common::ScalarImpl::Interval(*slide),
            epochlab_common::ScalarImpl::Interval(*size)
        ),
        op @ (StreamOp::TopN { .. } | StreamOp::GroupTopN { .. }) => {
            stream_top_n_line(op, input_names)
        }
        StreamOp::Exchange { dist } => {
            format!("StreamExchange {{ dist: {} }}", fmt_dist(dist, input_names))
        }
        StreamOp::Materialize { pk, conflict } => stream_materialize_line(p, pk, conflict),
        StreamOp::Sink { pk, append_only } => stream_sink_line(p, pk, *append_only),
    }
}

/// RisingWave's `StreamSink` line: its type, its columns (hidden ones marked), an upsert sink's pk.
fn stream_sink_line(p: &StreamPlan, pk: &[usize], append_only: bool) -> String {
    let kind = if append_only { "append-only" } else { "upsert" };
    let pk = if append_only {
        String::new()
    } else {
        format!(", pk: [{}]", fmt_cols(pk, &p.names))
    };
    format!(
        "StreamSink {{ type: {kind}, columns: [{}]{pk} }}",
        fmt_list(root_columns(p))
    )
}

/// A stream aggregation's line (hash or simple).
fn stream_agg_line(op: &StreamOp, input_names: &[String]) -> String {
    match op {
        StreamOp::HashAgg {
            group_key,
            calls,
            eowc,
        } => format!(
            "StreamHashAgg{} {{ group_key: [{}], aggs: [{}] }}",
            if eowc.is_some() {
                " [emit_on_window_close]"
            } else {
                ""
            },
            fmt_cols(group_key, input_names),
            fmt_aggs(calls, input_names)
        ),
        StreamOp::SimpleAgg { calls } => {
            format!(
                "StreamSimpleAgg {{ aggs: [{}] }}",
                fmt_aggs(calls, input_names)
            )
        }
        other => unreachable!("{other:?} is not an aggregation"),
    }
}

/// A stream top-N's line (plain or per group).
fn stream_top_n_line(op: &StreamOp, input_names: &[String]) -> String {
    match op {
        StreamOp::TopN {
            order,
            limit,
            offset,
            with_ties,
        } => format!(
            "StreamTopN {{ order: [{}], limit: {}, offset: {offset}{} }}",
            fmt_order(order, input_names),
            limit.map_or_else(|| "ALL".into(), |l| l.to_string()),
            if *with_ties { ", with_ties: true" } else { "" }
        ),
        StreamOp::GroupTopN {
            group_key,
            order,
            limit,
            offset,
            with_ties,
        } => format!(
            "StreamGroupTopN {{ order: [{}], limit: {limit}, offset: {offset}{}, group_key: [{}] }}",
            fmt_order(order, input_names),
            if *with_ties { ", with_ties: true" } else { "" },
            fmt_cols(group_key, input_names)
        ),
        other => unreachable!("{other:?} is not a top-N"),
    }
}

fn stream_table_scan_line(p: &StreamPlan, table: &str, scan_type: StreamScanType) -> String {
    format!(
        "StreamTableScan {{ table: {table}, columns: [{}], stream_scan_type: {scan_type:?}, stream_key: [{}], dist: {} }}",
        fmt_list(p.names.iter().cloned()),
        fmt_cols(&p.stream_key, &p.names),
        fmt_dist(&p.dist, &p.names)
    )
}

fn stream_dynamic_filter_line(p: &StreamPlan, key: usize, comparator: ExprType) -> String {
    let left = &p.inputs[0].names;
    let right = p.inputs[1].names.first().cloned().unwrap_or_default();
    format!(
        "StreamDynamicFilter {{ predicate: ({} {} {right}), output: [{}] }}",
        left.get(key).cloned().unwrap_or_default(),
        comparator_symbol(comparator),
        fmt_list(p.names[..p.width].iter().cloned())
    )
}

/// A job root's columns by their short names, the hidden ones (after `width`) by full name and marked.
fn root_columns(p: &StreamPlan) -> impl Iterator<Item = String> + '_ {
    p.names.iter().enumerate().map(|(i, n)| {
        let short = n.rsplit('.').next().unwrap_or(n).to_string();
        if i < p.width {
            short
        } else {
            format!("{n}(hidden)")
        }
    })
}

fn stream_materialize_line(
    p: &StreamPlan,
    pk: &[usize],
    conflict: &epochlab_common::plan::ConflictBehavior,
) -> String {
    format!(
        "StreamMaterialize {{ columns: [{}], stream_key: [{}], pk_columns: [{}], pk_conflict: {conflict:?} }}",
        fmt_list(root_columns(p)),
        fmt_cols(pk, &p.names),
        fmt_cols(pk, &p.names)
    )
}

/// `[a, b], [a]`: each subset's columns.
fn fmt_column_subsets(column_subsets: &[Vec<usize>], names: &[String]) -> String {
    fmt_list(
        column_subsets
            .iter()
            .map(|s| format!("[{}]", fmt_cols(s, names))),
    )
}

/// A tree as RisingWave draws it: `└─` before the last child, `├─` before the others.
fn draw<T>(
    node: &T,
    line: &dyn Fn(&T) -> String,
    kids: &dyn Fn(&T) -> Vec<&T>,
    out: &mut Vec<String>,
) {
    fn go<T>(
        node: &T,
        prefix: &str,
        head: &str,
        line: &dyn Fn(&T) -> String,
        kids: &dyn Fn(&T) -> Vec<&T>,
        out: &mut Vec<String>,
    ) {
        out.push(format!("{prefix}{head}{}", line(node)));
        let children = kids(node);
        let n = children.len();
        let cont = match head {
            "└─" => "  ",
            "├─" => "│ ",
            _ => "",
        };
        let prefix = format!("{prefix}{cont}");
        for (i, c) in children.into_iter().enumerate() {
            let head = if i + 1 == n { "└─" } else { "├─" };
            go(c, &prefix, head, line, kids, out);
        }
    }
    go(node, "", "", line, kids, out);
}

/// The lines of a stream plan's `EXPLAIN`.
pub fn explain_stream(plan: &StreamPlan) -> Vec<String> {
    let mut out = Vec::new();
    draw(
        plan,
        &stream_line,
        &|p: &StreamPlan| p.inputs.iter().collect(),
        &mut out,
    );
    out
}

/// The fragments of a graph, as `EXPLAIN (DISTSQL)` lists them.
pub fn explain_fragments(graph: &StreamFragmentGraph) -> Vec<String> {
    let mut out = Vec::new();
    for f in &graph.fragments {
        out.push(format!(
            "Fragment {} {{ distribution: {:?} }}",
            f.fragment_id, f.distribution
        ));
        for e in graph.inputs_of(f.fragment_id) {
            let how = match &e.dispatch {
                DispatchStrategy::Hash(k) => format!("Hash({k:?})"),
                other => format!("{other:?}"),
            };
            out.push(format!("  <- Fragment {} via {how}", e.upstream));
        }
    }
    out
}

fn batch_line(p: &LogicalPlan) -> String {
    let names: Vec<String> = (0..p.inputs().first().map_or(0, |i| i.schema().len()))
        .map(|i| format!("${i}"))
        .collect();
    match p {
        LogicalPlan::Scan { table, .. } => format!("BatchScan {{ table: {table} }}"),
        LogicalPlan::Values { rows, .. } => format!("BatchValues {{ rows: {} }}", rows.len()),
        LogicalPlan::Rows { rows, .. } => format!("BatchValues {{ rows: {} }}", rows.len()),
        LogicalPlan::Project { exprs, .. } => format!(
            "BatchProject {{ exprs: [{}] }}",
            fmt_list(exprs.iter().map(|e| fmt_expr(e, &names)))
        ),
        LogicalPlan::Filter { predicate, .. } => {
            format!(
                "BatchFilter {{ predicate: {} }}",
                fmt_expr(predicate, &names)
            )
        }
        LogicalPlan::Agg {
            group_key, calls, ..
        } => batch_agg_line(group_key, calls, &names),
        LogicalPlan::Join {
            kind,
            on,
            left,
            right,
        } => batch_join_line(*kind, on.as_ref(), left, right),
        LogicalPlan::Union { .. } => "BatchUnion { all: true }".into(),
        LogicalPlan::SetOp { op, all, .. } => format!(
            "Batch{} {{ all: {all} }}",
            match op {
                SetOp::Union => "Union",
                SetOp::Except => "Except",
                SetOp::Intersect => "Intersect",
            }
        ),
        LogicalPlan::TopN { .. } | LogicalPlan::Dedup { .. } => batch_top_n_line(p, &names),
        LogicalPlan::TableFunction { func, .. } => format!("BatchTableFunction {{ {func:?} }}"),
        LogicalPlan::ProjectSet { select_list, .. } => format!(
            "BatchProjectSet {{ select_list: [{}] }}",
            fmt_list(select_list.iter().map(|i| fmt_select_item(i, &names)))
        ),
        LogicalPlan::Expand { column_subsets, .. } => format!(
            "BatchExpand {{ column_subsets: [{}] }}",
            fmt_column_subsets(column_subsets, &names)
        ),
        LogicalPlan::OverWindow { calls, .. } => format!(
            "BatchOverWindow {{ window_functions: [{}] }}",
            fmt_window_functions(calls, &names)
        ),
        LogicalPlan::HopWindow {
            time_col,
            slide,
            size,
            ..
        } => format!(
            "BatchHopWindow {{ time_col: ${time_col}, slide: {}, size: {} }}",
            fmt_expr(slide, &[]),
            fmt_expr(size, &[])
        ),
    }
}

/// A batch aggregation's line: simple without a group key, else hash.
fn batch_agg_line(group_key: &[usize], calls: &[AggCall], names: &[String]) -> String {
    if group_key.is_empty() {
        format!("BatchSimpleAgg {{ aggs: [{}] }}", fmt_aggs(calls, names))
    } else {
        format!(
            "BatchHashAgg {{ group_key: [{}], aggs: [{}] }}",
            fmt_cols(group_key, names),
            fmt_aggs(calls, names)
        )
    }
}

/// A batch top-N's line: `ORDER BY .. LIMIT`, or a dedup (a group top-1).
fn batch_top_n_line(p: &LogicalPlan, names: &[String]) -> String {
    match p {
        LogicalPlan::TopN {
            order,
            limit,
            offset,
            with_ties,
            ..
        } => format!(
            "BatchTopN {{ order: [{}], limit: {}, offset: {offset}{} }}",
            fmt_order(order, names),
            limit.map_or_else(|| "ALL".into(), |l| l.to_string()),
            if *with_ties { ", with_ties: true" } else { "" }
        ),
        LogicalPlan::Dedup { keys, .. } => {
            format!(
                "BatchGroupTopN {{ limit: 1, group_key: [{}] }}",
                fmt_cols(keys, names)
            )
        }
        other => unreachable!("{other:?} is not a top-N"),
    }
}

/// A join's predicate over the left's then the right's columns.
fn batch_join_line(
    kind: JoinType,
    on: Option<&ExprNode>,
    left: &LogicalPlan,
    right: &LogicalPlan,
) -> String {
    let n = left.schema().len() + right.schema().len();
    let names: Vec<String> = (0..n).map(|i| format!("${i}")).collect();
    let pred = on.map_or_else(|| "true".into(), |e| fmt_expr(e, &names));
    format!(
        "BatchHashJoin {{ type: {}, predicate: {pred} }}",
        join_type(kind)
    )
}

fn fmt_window_functions(calls: &[crate::planner::WindowCall], names: &[String]) -> String {
    calls
        .iter()
        .map(|c| {
            format!(
                "{:?}() OVER(PARTITION BY [{}] ORDER BY [{}])",
                c.func.kind,
                fmt_cols(&c.partition_by, names),
                fmt_order(&c.order_by, names)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The lines of a batch plan's `EXPLAIN`: the plan as it runs (after [`super::optimize`]).
pub fn explain_batch(plan: &LogicalPlan) -> Vec<String> {
    let mut out = vec!["BatchExchange { order: [], dist: Single }".to_string()];
    let mut body = Vec::new();
    let plan = super::optimize(plan);
    draw(&plan, &batch_line, &|p: &LogicalPlan| p.inputs(), &mut body);
    out.extend(body.into_iter().enumerate().map(|(i, l)| {
        let head = if i == 0 { "└─" } else { "  " };
        format!("{head}{l}")
    }));
    out
}

/// The fragments of a stream plan (`EXPLAIN (DISTSQL)`): each fragment's nodes, an exchange shown as the
/// fragment it reads from.
pub fn explain_stream_fragments(plan: &StreamPlan) -> Vec<String> {
    let mut fragments: Vec<Vec<String>> = Vec::new();
    collect_fragment(plan, &mut fragments);
    let mut out = Vec::new();
    for (i, lines) in fragments.into_iter().enumerate() {
        out.push(String::new());
        out.push(format!("Fragment {i}"));
        out.extend(lines);
    }
    out
}

fn collect_fragment(root: &StreamPlan, fragments: &mut Vec<Vec<String>>) -> usize {
    let id = fragments.len();
    fragments.push(Vec::new());
    let mut lines = Vec::new();
    fragment_lines(root, "", "", fragments, &mut lines);
    fragments[id] = lines;
    id
}

fn fragment_lines(
    p: &StreamPlan,
    prefix: &str,
    head: &str,
    fragments: &mut Vec<Vec<String>>,
    out: &mut Vec<String>,
) {
    if let StreamOp::Exchange { dist } = &p.op {
        let from = collect_fragment(&p.inputs[0], fragments);
        out.push(format!(
            "{prefix}{head}StreamExchange {} from {from}",
            fmt_dist(dist, &p.inputs[0].names)
        ));
        return;
    }
    out.push(format!("{prefix}{head}{}", stream_line(p)));
    let cont = match head {
        "└── " => "    ",
        "├── " => "│   ",
        _ => "",
    };
    let prefix = format!("{prefix}{cont}");
    let n = p.inputs.len();
    for (i, c) in p.inputs.iter().enumerate() {
        let head = if i + 1 == n {
            "└── "
        } else {
            "├── "
        };
        fragment_lines(c, &prefix, head, fragments, out);
    }
}

/// A project-set item: an expression, or a table function call as RisingWave prints it (`Unnest($0)`).
fn fmt_select_item(item: &crate::planner::ProjectSetSelectItem, names: &[String]) -> String {
    match item {
        crate::planner::ProjectSetSelectItem::Expr(e) => fmt_expr(e, names),
        crate::planner::ProjectSetSelectItem::TableFunction { func, args, .. } => format!(
            "{func:?}({})",
            fmt_list(args.iter().map(|a| fmt_expr(a, names)))
        ),
    }
}
