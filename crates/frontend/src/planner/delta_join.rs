//! `SET rw_streaming_enable_delta_join = true`: an inner equi-join of two tables that each have an index on
//! their join key reads the indexes (RisingWave's `IndexDeltaJoinRule`), so the view depends on them: `DROP
//! INDEX` refuses while it exists, `DROP INDEX .. CASCADE` drops it.
//!
//! RisingWave's delta join keeps no join state: each side's changes look the other side's index arrangement
//! up (`StreamDeltaJoin`, lookup executors). Here the join is the hash join over scans of the indexes
//! ([`IndexScan::read`]): the same rows, read from the indexes.

use epochlab_common::TableId;

use super::index::IndexScan;
use super::{JoinType, LogicalPlan};
use crate::scalar::{ExprNode, ExprType};

/// `plan` with each inner equi-join of two table scans reading, on both sides, an index whose first key
/// column is that side's join key and that holds every column the side reads (`indexes` lists a table's);
/// the indexes' catalog ids, which the view depends on.
pub fn use_indexes(
    plan: &LogicalPlan,
    indexes: &dyn Fn(TableId) -> Vec<IndexScan>,
) -> (LogicalPlan, Vec<u32>) {
    let mut plan = plan.clone();
    let mut used = Vec::new();
    rewrite(&mut plan, indexes, &mut used);
    (plan, used)
}

fn rewrite(
    plan: &mut LogicalPlan,
    indexes: &dyn Fn(TableId) -> Vec<IndexScan>,
    used: &mut Vec<u32>,
) {
    if let LogicalPlan::Join {
        kind: JoinType::Inner,
        on: Some(on),
        left,
        right,
    } = plan
        && let Some((l, r)) = index_pair(on, left, right, indexes)
    {
        for (side, index) in [(left.as_mut(), l), (right.as_mut(), r)] {
            *side = index.read(side).expect("index_pair picks covering indexes");
            used.push(index.catalog_id);
        }
        return;
    }
    for child in plan.inputs_mut() {
        rewrite(child, indexes, used);
    }
}

/// The indexes both sides of a join read: one per side whose first key column is a join key of an
/// equality in `on` between the two scans.
fn index_pair(
    on: &ExprNode,
    left: &LogicalPlan,
    right: &LogicalPlan,
    indexes: &dyn Fn(TableId) -> Vec<IndexScan>,
) -> Option<(IndexScan, IndexScan)> {
    let (
        LogicalPlan::Scan {
            table_id: lt,
            exprs: le,
            ..
        },
        LogicalPlan::Scan {
            table_id: rt,
            exprs: re,
            ..
        },
    ) = (left, right)
    else {
        return None;
    };
    let stored = |exprs: &[ExprNode], i: usize| match exprs.get(i) {
        Some(ExprNode::InputRef { index, .. }) => Some(*index),
        _ => None,
    };
    super::pushdown::conjuncts(on).into_iter().find_map(|c| {
        let ExprNode::Call {
            func: ExprType::Equal,
            args,
            ..
        } = &c
        else {
            return None;
        };
        let [
            ExprNode::InputRef { index: a, .. },
            ExprNode::InputRef { index: b, .. },
        ] = args.as_slice()
        else {
            return None;
        };
        let (a, b) = (*a.min(b), *a.max(b));
        let (l, r) = (stored(le, a)?, stored(re, b.checked_sub(le.len())?)?);
        let pick = |table: TableId, key: usize, side: &LogicalPlan| {
            indexes(table)
                .into_iter()
                .find(|i| i.first_key() == Some(key) && i.read(side).is_some())
        };
        Some((pick(*lt, l, left)?, pick(*rt, r, right)?))
    })
}
