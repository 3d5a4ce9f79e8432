//! The stream side of a join (RisingWave's `LogicalJoin::to_stream` and `StreamHashJoin`): an equi-join is
//! a hash join of its two inputs, each hashed by its side of the key pairs; an inner join's other
//! conjuncts are a filter above it (RisingWave's "pull filter"), an outer, semi or anti join keeps them
//! as the join's condition; a join without a key pair is a nested-loop join, which has no streaming
//! executor (as in RisingWave). [`join_node`] lowers the plan node to [`StreamNode::HashJoin`] with its
//! state tables.

use std::sync::Arc;

use epochlab_common::catalog::TableDesc;
use epochlab_common::plan::{JoinType as StreamJoinType, StreamNode, join_side_tables};
use epochlab_common::{DataType, VnodeCount};

use super::pushdown::{and_all, conjuncts, remap};
use super::stream::{Dist, StreamOp, StreamPlan, UpstreamReader};
use crate::error::SqlError;
use crate::planner::{JoinType, LogicalPlan};
use crate::scalar::{ExprNode, ExprType};

/// The `ON` of a join split into key pairs and the rest (RisingWave's `EqJoinPredicate`), over the left
/// input's `l` columns then the right input's.
#[derive(Clone, Debug, Default)]
pub struct EqJoinPredicate {
    pub left_keys: Vec<usize>,
    /// Positions in the right input.
    pub right_keys: Vec<usize>,
    /// Per pair: `IS NOT DISTINCT FROM` rather than `=`.
    pub null_safe: Vec<bool>,
    pub other: Vec<ExprNode>,
}

impl EqJoinPredicate {
    /// The key pairs of `on` (`l = r` or `l IS NOT DISTINCT FROM r`, a column of each side of one type),
    /// the other conjuncts kept in order.
    pub fn create(on: Option<&ExprNode>, l: usize) -> EqJoinPredicate {
        let mut out = EqJoinPredicate::default();
        for c in on.map(conjuncts).unwrap_or_default() {
            match key_pair(&c, l) {
                Some((lk, rk, null_safe)) => {
                    out.left_keys.push(lk);
                    out.right_keys.push(rk - l);
                    out.null_safe.push(null_safe);
                }
                None => out.other.push(c),
            }
        }
        out
    }
}

/// `(left column, right column, null-safe)` of a key-pair conjunct.
fn key_pair(c: &ExprNode, l: usize) -> Option<(usize, usize, bool)> {
    let ExprNode::Call { func, args, .. } = c else {
        return None;
    };
    let null_safe = match func {
        ExprType::Equal => false,
        ExprType::IsNotDistinctFrom => true,
        _ => return None,
    };
    let [
        ExprNode::InputRef { index: a, ty: ta },
        ExprNode::InputRef { index: b, ty: tb },
    ] = args.as_slice()
    else {
        return None;
    };
    if ta != tb {
        return None;
    }
    match (*a < l, *b < l) {
        (true, false) => Some((*a, *b, null_safe)),
        (false, true) => Some((*b, *a, null_safe)),
        _ => None,
    }
}

/// The plan rehashed by exactly `keys` unless it already is (a table's own distribution is not a join's:
/// RisingWave shuffles an upstream-hashed input of a join).
fn shard_by(plan: StreamPlan, keys: &[usize]) -> StreamPlan {
    let dist = Dist::HashShard(keys.to_vec());
    if plan.dist == dist {
        return plan;
    }
    force_exchange(plan, dist)
}

/// `left JOIN right ON on` (`on` over the inputs' visible columns side by side). Output: the visible
/// columns of both sides (semi and anti joins: the left's), then the hidden ones, left first.
pub fn join(
    kind: JoinType,
    on: Option<&ExprNode>,
    left: StreamPlan,
    right: StreamPlan,
) -> Result<StreamPlan, SqlError> {
    let (lw, l_all) = (left.width, left.types.len());
    let on = on.map(|e| remap(e, &|i| if i < lw { i } else { i - lw + l_all }));
    let eq = EqJoinPredicate::create(on.as_ref(), l_all);
    if eq.left_keys.is_empty() {
        // RisingWave refuses this by design (no streaming nested-loop join executor).
        return Err(SqlError::NotSupported("streaming nested-loop join".into()));
    }
    let left = shard_by(left, &eq.left_keys);
    let right = shard_by(right, &eq.right_keys);
    let pull_filter = kind == JoinType::Inner && !eq.other.is_empty();
    let condition = if pull_filter {
        None
    } else {
        and_all(eq.other.clone())
    };
    let layout = Layout::new(kind, &left, &right);
    let stream_key = layout.stream_key(kind, &left, &right, &eq);
    let dist = join_dist(kind, &eq, &layout, l_all);
    let concat_types: Vec<DataType> = left.types.iter().chain(&right.types).cloned().collect();
    let concat_names: Vec<String> = left.names.iter().chain(&right.names).cloned().collect();
    let join = StreamPlan {
        op: StreamOp::HashJoin {
            kind,
            left_keys: eq.left_keys.clone(),
            right_keys: eq.right_keys.clone(),
            null_safe: eq.null_safe.clone(),
            condition,
            output_indices: layout.output_indices.clone(),
        },
        types: layout.pick(&concat_types),
        names: layout.pick(&concat_names),
        width: layout.width,
        dist: dist.clone(),
        stream_key: stream_key.clone(),
        inputs: vec![left, right],
    };
    if kind == JoinType::FullOuter {
        let keys: Vec<usize> = layout.sides_stream_keys(&join.inputs[0], &join.inputs[1]);
        return Ok(filter_if_keys_all_null(join, &keys));
    }
    if !pull_filter {
        return Ok(join);
    }
    Ok(pulled_filter(join, &eq.other, &layout, dist, stream_key))
}

/// `left JOIN right FOR SYSTEM_TIME AS OF PROCTIME() ON on` (RisingWave's `to_stream_temporal_join`): the
/// key pairs on a prefix of the table's pk that holds its distribution key become the lookup key (in pk
/// order), the other pairs and conjuncts the join's condition; the left input, which must be append-only,
/// is hashed as the table is distributed, so that each left row reaches the actor owning its lookups' vnode;
/// the right input is the table's own changes. RisingWave's errors where it refuses one.
///
/// An index of the table may serve instead (RisingWave's `to_stream_temporal_join_with_index_selection`):
/// unless the table's whole pk is looked up, each index that holds every column the scan reads is tried,
/// in the order they were created, and the longest lookup key wins (the table on a tie); when none
/// plans, the table's error.
pub fn temporal_join(
    kind: JoinType,
    on: Option<&ExprNode>,
    left: StreamPlan,
    right: &LogicalPlan,
    up: &dyn UpstreamReader,
) -> Result<StreamPlan, SqlError> {
    let mut best = temporal_join_over(kind, on, left.clone(), right, up);
    let whole_pk = |(_, n): &(StreamPlan, usize)| match right {
        LogicalPlan::Scan { table_id, .. } => up
            .upstream(*table_id)
            .is_ok_and(|u| u.desc.pk_indices.len() == *n),
        _ => true,
    };
    if best.as_ref().is_ok_and(whole_pk) {
        return best.map(|(plan, _)| plan);
    }
    let LogicalPlan::Scan { table_id, .. } = right else {
        return best.map(|(plan, _)| plan);
    };
    for index in up.indexes(*table_id) {
        let Some(scan) = index.read(right) else {
            continue;
        };
        let Ok((plan, n)) = temporal_join_over(kind, on, left.clone(), &scan, up) else {
            continue;
        };
        if !best.as_ref().is_ok_and(|(_, m)| *m >= n) {
            best = Ok((plan, n));
        }
    }
    best.map(|(plan, _)| plan)
}

/// A temporal join that looks `right`'s scan up, and the length of its lookup key.
fn temporal_join_over(
    kind: JoinType,
    on: Option<&ExprNode>,
    left: StreamPlan,
    right: &LogicalPlan,
    up: &dyn UpstreamReader,
) -> Result<(StreamPlan, usize), SqlError> {
    let not_supported = |what: &str| Err(SqlError::NotSupported(what.into()));
    let LogicalPlan::Scan {
        table,
        table_id,
        exprs,
        filter: None,
        ..
    } = right
    else {
        return not_supported("Temporal join requires a table scan as its lookup table");
    };
    // The scan's columns as stored positions: a table's own columns, each once, unfiltered.
    let stored: Option<Vec<usize>> = exprs
        .iter()
        .map(|e| match e {
            ExprNode::InputRef { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    let Some(stored) = stored else {
        return not_supported("Temporal join requires a table scan as its lookup table");
    };
    // RisingWave turns a right or full join into one whose lookup table is not on its right.
    if !matches!(kind, JoinType::Inner | JoinType::LeftOuter) {
        return not_supported("exist dangling temporal scan");
    }
    let right = super::stream::lookup_table_scan(table, *table_id, up)?;
    let desc = up.upstream(*table_id)?.desc;
    let (lw, l_all) = (left.width, left.types.len());
    let on = on.map(|e| remap(e, &|i| if i < lw { i } else { l_all + stored[i - lw] }));
    let mut eq = EqJoinPredicate::create(on.as_ref(), l_all);
    lookup_prefix(&mut eq, &desc, l_all)?;
    if !super::stream::is_append_only(&left, up)? {
        return not_supported("Temporal join requires an append-only left input");
    }
    // The table's distribution key, each by the left column it is looked up with, in the key's order.
    let left_dist: Vec<usize> = desc
        .dist_key_indices()
        .iter()
        .map(|d| {
            eq.left_keys[eq
                .right_keys
                .iter()
                .position(|r| r == d)
                .expect("in the prefix")]
        })
        .collect();
    let left = force_exchange(left, Dist::HashShard(left_dist.clone()));
    let visible: Vec<usize> = (0..lw).chain(stored.iter().map(|&s| l_all + s)).collect();
    let hidden = (lw..l_all).chain(desc.pk_indices.iter().map(|&k| l_all + k));
    let mut output_indices = visible.clone();
    for h in hidden {
        if !output_indices.contains(&h) {
            output_indices.push(h);
        }
    }
    let layout = Layout {
        output_indices,
        width: visible.len(),
    };
    let stream_key = layout.stream_key(kind, &left, &right, &eq);
    let dist = Dist::HashShard(left_dist.iter().map(|&k| layout.out(k)).collect());
    let concat_types: Vec<DataType> = left.types.iter().chain(&right.types).cloned().collect();
    let concat_names: Vec<String> = left.names.iter().chain(&right.names).cloned().collect();
    let lookup_len = eq.left_keys.len();
    let plan = StreamPlan {
        op: StreamOp::TemporalJoin {
            kind,
            left_keys: eq.left_keys.clone(),
            right_keys: eq.right_keys.clone(),
            null_safe: eq.null_safe.clone(),
            condition: and_all(eq.other.clone()),
            output_indices: layout.output_indices.clone(),
        },
        types: layout.pick(&concat_types),
        names: layout.pick(&concat_names),
        width: layout.width,
        dist,
        stream_key,
        inputs: vec![left, right],
    };
    Ok((plan, lookup_len))
}

/// Keep in `eq` the key pairs that look the table up, in pk order: the longest pk prefix each of whose
/// columns a pair keys on; the other pairs go into the condition. The prefix must hold the table's
/// distribution key (RisingWave's error otherwise).
fn lookup_prefix(eq: &mut EqJoinPredicate, desc: &TableDesc, l_all: usize) -> Result<(), SqlError> {
    let mut order = Vec::new();
    for pk_col in &desc.pk_indices {
        match eq.right_keys.iter().position(|r| r == pk_col) {
            Some(i) => order.push(i),
            None => break,
        }
    }
    let dist = desc.dist_key_indices();
    let shortest = dist
        .iter()
        .filter_map(|d| desc.pk_indices.iter().position(|p| p == d))
        .max()
        .map_or(0, |p| p + 1);
    if order.is_empty() || order.len() < shortest || dist.is_empty() {
        return Err(SqlError::NotSupported(
            "Temporal join requires the lookup table's primary key contained exactly in the equivalence condition"
                .into(),
        ));
    }
    let mut kept = EqJoinPredicate {
        other: Vec::new(),
        ..EqJoinPredicate::default()
    };
    for &i in &order {
        kept.left_keys.push(eq.left_keys[i]);
        kept.right_keys.push(eq.right_keys[i]);
        kept.null_safe.push(eq.null_safe[i]);
    }
    for i in (0..eq.left_keys.len()).filter(|i| !order.contains(i)) {
        let (l, r) = (eq.left_keys[i], l_all + eq.right_keys[i]);
        let ty = desc.column_types[eq.right_keys[i]].clone();
        let func = match eq.null_safe[i] {
            true => ExprType::IsNotDistinctFrom,
            false => ExprType::Equal,
        };
        kept.other.push(ExprNode::Call {
            func,
            args: vec![
                ExprNode::input_ref(l, ty.clone()),
                ExprNode::input_ref(r, ty),
            ],
            ret: DataType::Boolean,
        });
    }
    kept.other.append(&mut eq.other);
    *eq = kept;
    Ok(())
}

/// The plan behind an exchange to `dist`, even when it is already so distributed (RisingWave enforces a
/// shuffle of a temporal join's left input, so that the join's fragment can take the table's actors).
fn force_exchange(plan: StreamPlan, dist: Dist) -> StreamPlan {
    let stream_key = plan.stream_key.clone();
    StreamPlan {
        op: StreamOp::Exchange { dist: dist.clone() },
        types: plan.types.clone(),
        names: plan.names.clone(),
        width: plan.width,
        dist,
        stream_key,
        inputs: vec![plan],
    }
}

/// A full outer join's rows whose key columns (`keys`: both sides' stream keys, in the output) are all
/// NULL dropped (RisingWave's `LogicalFilter::filter_if_keys_all_null`, its workaround of #8084): a row
/// with a NULL join key pads on both sides, and the two padded rows would share one stream key.
fn filter_if_keys_all_null(join: StreamPlan, keys: &[usize]) -> StreamPlan {
    let not_null = keys.iter().map(|&i| ExprNode::Call {
        func: ExprType::IsNotNull,
        args: vec![ExprNode::InputRef {
            index: i,
            ty: join.types[i].clone(),
        }],
        ret: DataType::Boolean,
    });
    let Some(predicate) = not_null.reduce(|acc, c| ExprNode::Call {
        func: ExprType::Or,
        args: vec![acc, c],
        ret: DataType::Boolean,
    }) else {
        return join;
    };
    StreamPlan {
        types: join.types.clone(),
        names: join.names.clone(),
        width: join.width,
        dist: join.dist.clone(),
        stream_key: join.stream_key.clone(),
        op: StreamOp::Filter { predicate },
        inputs: vec![join],
    }
}

/// A hash join's distribution: by its output's join keys (the right side's for a right outer join);
/// a full outer join's is some shard.
fn join_dist(kind: JoinType, eq: &EqJoinPredicate, layout: &Layout, l_all: usize) -> Dist {
    match kind {
        JoinType::RightOuter => Dist::HashShard(
            eq.right_keys
                .iter()
                .map(|&k| layout.out(l_all + k))
                .collect(),
        ),
        JoinType::FullOuter => Dist::SomeShard,
        _ => Dist::HashShard(eq.left_keys.iter().map(|&k| layout.out(k)).collect()),
    }
}

/// An inner join's non-equi conditions (`other`, over the inputs side by side) as a `Filter` above it.
fn pulled_filter(
    join: StreamPlan,
    other: &[ExprNode],
    layout: &Layout,
    dist: Dist,
    stream_key: Vec<usize>,
) -> StreamPlan {
    let predicate = and_all(other.iter().map(|c| remap(c, &|j| layout.out(j))).collect())
        .expect("a pulled filter has a conjunct");
    StreamPlan {
        types: join.types.clone(),
        names: join.names.clone(),
        width: join.width,
        op: StreamOp::Filter { predicate },
        inputs: vec![join],
        dist,
        stream_key,
    }
}

/// A join's output columns, as positions in its inputs' columns side by side.
struct Layout {
    output_indices: Vec<usize>,
    width: usize,
}

impl Layout {
    fn new(kind: JoinType, left: &StreamPlan, right: &StreamPlan) -> Layout {
        let (lw, l_all) = (left.width, left.types.len());
        let (rw, r_all) = (right.width, right.types.len());
        if matches!(kind, JoinType::LeftSemi | JoinType::LeftAnti) {
            return Layout {
                output_indices: (0..l_all).collect(),
                width: lw,
            };
        }
        let output_indices = (0..lw)
            .chain(l_all..l_all + rw)
            .chain(lw..l_all)
            .chain(l_all + rw..l_all + r_all)
            .collect();
        Layout {
            output_indices,
            width: lw + rw,
        }
    }

    /// The output position of input column `j` (both inputs side by side), which the output has.
    fn out(&self, j: usize) -> usize {
        self.output_indices
            .iter()
            .position(|&o| o == j)
            .expect("a join outputs every column it keys on")
    }

    fn pick<T: Clone>(&self, all: &[T]) -> Vec<T> {
        self.output_indices
            .iter()
            .map(|&j| all[j].clone())
            .collect()
    }

    /// Each side's stream key columns, as positions in the join's output (left's first).
    fn sides_stream_keys(&self, left: &StreamPlan, right: &StreamPlan) -> Vec<usize> {
        let l_all = left.types.len();
        left.stream_key
            .iter()
            .copied()
            .chain(right.stream_key.iter().map(|&k| l_all + k))
            .map(|j| self.out(j))
            .collect()
    }

    /// RisingWave's stream key of a join: both sides' stream keys (the left's only for semi and anti
    /// joins) with the join key of the side the join cannot pad with NULLs added (both for a full outer
    /// join), and the other side's key columns dropped where they equal it.
    fn stream_key(
        &self,
        kind: JoinType,
        left: &StreamPlan,
        right: &StreamPlan,
        eq: &EqJoinPredicate,
    ) -> Vec<usize> {
        let l_all = left.types.len();
        let semi = matches!(kind, JoinType::LeftSemi | JoinType::LeftAnti);
        let mut key: Vec<usize> = left.stream_key.clone();
        if !semi {
            key.extend(right.stream_key.iter().map(|&k| l_all + k));
        }
        let pairs = eq.left_keys.iter().zip(&eq.right_keys);
        for (&lk, &rk) in pairs {
            let (drop, add): (Option<usize>, Vec<usize>) = match kind {
                JoinType::RightOuter => (Some(lk), vec![l_all + rk]),
                JoinType::FullOuter => (None, vec![lk, l_all + rk]),
                _ => (Some(l_all + rk), vec![lk]),
            };
            if let Some(d) = drop {
                key.retain(|&k| k != d);
            }
            for a in add {
                if !key.contains(&a) {
                    key.push(a);
                }
            }
        }
        key.into_iter().map(|j| self.out(j)).collect()
    }
}

/// The executor's join type of a logical join type.
pub(crate) fn stream_join_type(kind: JoinType) -> StreamJoinType {
    match kind {
        JoinType::Inner => StreamJoinType::Inner,
        JoinType::LeftOuter => StreamJoinType::LeftOuter,
        JoinType::RightOuter => StreamJoinType::RightOuter,
        JoinType::FullOuter => StreamJoinType::FullOuter,
        JoinType::LeftSemi => StreamJoinType::LeftSemi,
        JoinType::LeftAnti => StreamJoinType::LeftAnti,
    }
}

/// A hash-join plan node as the executor's node: each side's state table (and degree table where the
/// join type needs one), keyed by the side's join key then its stream key.
pub fn join_node(
    plan: &StreamPlan,
    left: StreamNode,
    right: StreamNode,
    vnode_count: VnodeCount,
) -> StreamNode {
    let StreamOp::HashJoin {
        kind,
        left_keys,
        right_keys,
        null_safe,
        condition,
        output_indices,
    } = &plan.op
    else {
        unreachable!("join_node lowers a HashJoin")
    };
    let join_type = stream_join_type(*kind);
    let (l, r) = (&plan.inputs[0], &plan.inputs[1]);
    let side = |p: &StreamPlan, keys: &[usize], degree: bool| -> (Arc<TableDesc>, _) {
        join_side_tables(&p.types, keys, &p.stream_key, degree, vnode_count)
    };
    let (left_table, left_degree_table) = side(l, left_keys, join_type.left_needs_degree());
    let (right_table, right_degree_table) = side(r, right_keys, join_type.right_needs_degree());
    StreamNode::HashJoin {
        join_type,
        left_key: left_keys.clone(),
        right_key: right_keys.clone(),
        null_safe: null_safe.clone(),
        condition: condition.clone(),
        left_table,
        right_table,
        left_degree_table,
        right_degree_table,
        output_indices: output_indices.clone(),
        left: Box::new(left),
        right: Box::new(right),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use epochlab_common::catalog::TableDesc;
    use epochlab_common::plan::{
        JoinType as StreamJoinType, StreamFragmentGraph, StreamNode, StreamScanType,
    };
    use epochlab_common::{DataType, TableId, VnodeCount};

    use crate::error::SqlError;
    use crate::planner::stream::{
        StreamPlan, Upstream, UpstreamReader, fragment_graph, materialize_table, plan_materialize,
    };
    use crate::planner::{JoinType, LogicalPlan};
    use crate::scalar::{ExprNode, ExprType};

    /// Tables of two `Int32` columns and a hidden `Int64` row id (their pk), by id.
    struct Tables(BTreeMap<u32, Upstream>);

    impl UpstreamReader for Tables {
        fn upstream(&self, table_id: TableId) -> Result<Upstream, SqlError> {
            self.0
                .get(&table_id.0)
                .cloned()
                .ok_or_else(|| SqlError::Invalid("no such table".into()))
        }
        fn stream_scan_type(&self) -> StreamScanType {
            StreamScanType::ArrangementBackfill
        }
        fn indexes(&self, _: TableId) -> Vec<crate::planner::index::IndexScan> {
            Vec::new()
        }
    }

    fn tables() -> Tables {
        let mut map = BTreeMap::new();
        for id in 1..=3u32 {
            let desc = TableDesc::hash(
                TableId(id),
                vec![DataType::Int32, DataType::Int32, DataType::Int64],
                vec![2],
                vec![0],
                VnodeCount::DEFAULT,
            );
            let names = vec![format!("a{id}"), format!("b{id}"), "_row_id".into()];
            map.insert(
                id,
                Upstream {
                    desc: std::sync::Arc::new(desc),
                    names,
                    append_only: false,
                    watermark_columns: Vec::new(),
                },
            );
        }
        Tables(map)
    }

    fn scan(id: u32) -> LogicalPlan {
        let types = vec![DataType::Int32, DataType::Int32, DataType::Int64];
        LogicalPlan::Scan {
            table: format!("t{id}"),
            table_id: TableId(id),
            exprs: (0..3)
                .map(|i| ExprNode::input_ref(i, types[i].clone()))
                .collect(),
            types,
            as_of_proctime: false,
            pk: vec![2],
            filter: None,
        }
    }

    fn col(i: usize) -> ExprNode {
        let ty = if i % 3 == 2 {
            DataType::Int64
        } else {
            DataType::Int32
        };
        ExprNode::input_ref(i, ty)
    }

    fn call(func: ExprType, l: ExprNode, r: ExprNode) -> ExprNode {
        ExprNode::Call {
            func,
            args: vec![l, r],
            ret: DataType::Boolean,
        }
    }

    fn join(kind: JoinType, on: Option<ExprNode>, l: LogicalPlan, r: LogicalPlan) -> LogicalPlan {
        LogicalPlan::Join {
            kind,
            on,
            left: Box::new(l),
            right: Box::new(r),
        }
    }

    fn plan(logical: &LogicalPlan) -> Result<(StreamPlan, StreamFragmentGraph), SqlError> {
        let t = tables();
        let n = logical.schema().len();
        let names: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
        let plan = plan_materialize(logical, &names, &t)?;
        let table = materialize_table(&plan, VnodeCount::DEFAULT);
        let graph = fragment_graph(&plan, &table, &t, 16)?;
        Ok((plan, graph))
    }

    fn joins(graph: &StreamFragmentGraph) -> Vec<StreamNode> {
        graph
            .fragments
            .iter()
            .flat_map(|f| f.node.walk().into_iter().cloned().collect::<Vec<_>>())
            .filter(|n| matches!(n, StreamNode::HashJoin { .. }))
            .collect()
    }

    #[test]
    fn a_comma_join_with_where_equalities_is_two_hash_joins() {
        let eq = |a, b| call(ExprType::Equal, col(a), col(b));
        let cross = join(
            JoinType::Inner,
            None,
            join(JoinType::Inner, None, scan(1), scan(2)),
            scan(3),
        );
        let where_ = call(ExprType::And, eq(0, 3), eq(0, 6));
        let (_, graph) = plan(&cross.clone().filter(where_)).expect("hash joins");
        let js = joins(&graph);
        assert_eq!(js.len(), 2, "{js:#?}");
        for j in &js {
            let StreamNode::HashJoin {
                join_type,
                left_key,
                right_key,
                condition,
                left_degree_table,
                right_degree_table,
                ..
            } = j
            else {
                unreachable!()
            };
            assert_eq!(*join_type, StreamJoinType::Inner);
            assert_eq!(
                (left_key.as_slice(), right_key.as_slice()),
                (&[0][..], &[0][..])
            );
            assert!(condition.is_none());
            assert!(left_degree_table.is_none() && right_degree_table.is_none());
        }
        // Without the WHERE there is no key: a nested-loop join, which streaming refuses.
        let err = plan(&cross).expect_err("no key pair");
        assert!(
            matches!(&err, SqlError::NotSupported(w) if w == "streaming nested-loop join"),
            "{err}"
        );
    }

    #[test]
    fn an_outer_join_keeps_its_condition_and_its_degree_tables() {
        // t1 LEFT JOIN t2 ON t1.a1 = t2.a2 AND t1.b1 > t2.b2
        let on = call(
            ExprType::And,
            call(ExprType::Equal, col(0), col(3)),
            call(ExprType::GreaterThan, col(1), col(4)),
        );
        for (kind, left_degree, right_degree) in [
            (JoinType::LeftOuter, true, false),
            (JoinType::RightOuter, false, true),
            (JoinType::FullOuter, true, true),
        ] {
            let (_, graph) = plan(&join(kind, Some(on.clone()), scan(1), scan(2))).unwrap();
            let js = joins(&graph);
            let [
                StreamNode::HashJoin {
                    condition,
                    left_table,
                    right_table,
                    left_degree_table,
                    right_degree_table,
                    output_indices,
                    ..
                },
            ] = js.as_slice()
            else {
                panic!("one join: {js:#?}")
            };
            // The condition reads the right row's columns after the left row's (3 of them).
            assert_eq!(
                condition.as_ref(),
                Some(&call(ExprType::GreaterThan, col(1), col(4)))
            );
            assert_eq!(left_table.pk_indices, vec![0, 2], "join key, then row id");
            assert_eq!(right_table.pk_indices, vec![0, 2]);
            assert_eq!(left_degree_table.is_some(), left_degree, "{kind:?}");
            assert_eq!(right_degree_table.is_some(), right_degree, "{kind:?}");
            let degree = left_degree_table.as_ref().or(right_degree_table.as_ref());
            let degree = degree.expect("a degree table");
            assert_eq!(
                degree.column_types,
                vec![DataType::Int32, DataType::Int64, DataType::Int64]
            );
            assert_eq!(*output_indices, vec![0, 1, 2, 3, 4, 5]);
        }
    }

    #[test]
    fn an_inner_join_pulls_its_other_conjuncts_into_a_filter_above() {
        let on = call(
            ExprType::And,
            call(ExprType::IsNotDistinctFrom, col(3), col(0)),
            call(ExprType::GreaterThan, col(1), col(4)),
        );
        let (_, graph) = plan(&join(JoinType::Inner, Some(on), scan(1), scan(2))).unwrap();
        let root = &graph.fragments[0].node;
        let filter = root
            .walk()
            .into_iter()
            .find(|n| matches!(n, StreamNode::Filter { .. }))
            .expect("a filter");
        let StreamNode::Filter { predicate, input } = filter else {
            unreachable!()
        };
        assert_eq!(*predicate, call(ExprType::GreaterThan, col(1), col(4)));
        let StreamNode::HashJoin {
            null_safe,
            condition,
            left_key,
            right_key,
            ..
        } = input.as_ref()
        else {
            panic!("the filter is over the join: {input:#?}")
        };
        assert_eq!(*null_safe, vec![true]);
        assert_eq!((left_key.clone(), right_key.clone()), (vec![0], vec![0]));
        assert!(condition.is_none());
    }

    #[test]
    fn a_semi_join_outputs_its_left_rows_with_a_left_degree_table() {
        let on = call(ExprType::Equal, col(1), col(4));
        let (plan, graph) = plan(&join(JoinType::LeftSemi, Some(on), scan(1), scan(2))).unwrap();
        assert_eq!(plan.width, 3);
        let js = joins(&graph);
        let [
            StreamNode::HashJoin {
                output_indices,
                left_degree_table,
                right_degree_table,
                ..
            },
        ] = js.as_slice()
        else {
            panic!("one join: {js:#?}")
        };
        assert_eq!(*output_indices, vec![0, 1, 2]);
        assert!(left_degree_table.is_some() && right_degree_table.is_none());
    }
}
