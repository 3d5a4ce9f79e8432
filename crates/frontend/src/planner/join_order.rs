//! Inner joins put in an order where each join has an equality to hash on, when the query's conditions
//! allow one (RisingWave's `LogicalMultiJoin` and its heuristic left-deep ordering): `FROM part, supplier,
//! partsupp WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey` joins part to partsupp, then supplier,
//! instead of crossing part with supplier first (a nested-loop join, which streaming refuses and batch
//! pays for in rows).
//!
//! A tree of inner joins is flattened into its inputs and its conditions (over the inputs' columns side
//! by side); the inputs are taken in order from the first, each next one the first that an equality
//! connects to those joined (else the first left: a cross join); each condition goes to the first join
//! that has every input it reads; a projection restores the columns' order. Run after predicate pushdown,
//! which has put a WHERE's conditions into the joins.

use super::pushdown::{and_all, conjuncts, is_pure, remap};
use super::{JoinType, LogicalPlan};
use crate::scalar::{ExprNode, ExprType};

/// `plan` with each tree of three or more inner joins reordered (see the module's text).
pub fn reorder_joins(plan: &LogicalPlan) -> LogicalPlan {
    if matches!(
        plan,
        LogicalPlan::Join {
            kind: JoinType::Inner,
            ..
        }
    ) {
        let mut inputs = Vec::new();
        let mut conds = Vec::new();
        flatten(plan, &mut inputs, &mut conds);
        if inputs.len() > 2 {
            let inputs: Vec<LogicalPlan> = inputs.iter().map(reorder_joins).collect();
            if let Some(reordered) = MultiJoin::new(inputs, conds).left_deep() {
                return reordered;
            }
        }
    }
    let mut out = plan.clone();
    for input in out.inputs_mut() {
        *input = reorder_joins(input);
    }
    out
}

/// The inputs of a tree of inner joins, left to right, and its conditions over their columns side by side.
fn flatten(plan: &LogicalPlan, inputs: &mut Vec<LogicalPlan>, conds: &mut Vec<ExprNode>) {
    match plan {
        LogicalPlan::Join {
            kind: JoinType::Inner,
            on,
            left,
            right,
        } => {
            let base: usize = inputs.iter().map(|i| i.schema().len()).sum();
            flatten(left, inputs, conds);
            flatten(right, inputs, conds);
            for c in on.as_ref().map(conjuncts).unwrap_or_default() {
                conds.push(remap(&c, &|i| i + base));
            }
        }
        other => inputs.push(other.clone()),
    }
}

struct MultiJoin {
    inputs: Vec<LogicalPlan>,
    /// Where each input's columns start, side by side.
    offsets: Vec<usize>,
    conds: Vec<ExprNode>,
}

impl MultiJoin {
    fn new(inputs: Vec<LogicalPlan>, conds: Vec<ExprNode>) -> MultiJoin {
        let mut offsets = Vec::with_capacity(inputs.len());
        let mut at = 0;
        for i in &inputs {
            offsets.push(at);
            at += i.schema().len();
        }
        MultiJoin {
            inputs,
            offsets,
            conds,
        }
    }

    /// The input column `c` belongs to.
    fn input_of(&self, c: usize) -> usize {
        self.offsets.partition_point(|&o| o <= c) - 1
    }

    /// The inputs a condition reads; an impure one reads every input (it stays at the top join).
    fn reads(&self, c: &ExprNode) -> Vec<usize> {
        if !is_pure(c) {
            return (0..self.inputs.len()).collect();
        }
        let mut out: Vec<usize> = c.input_refs().iter().map(|&i| self.input_of(i)).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether `c` is an equality of an expression of input `next` and one of the inputs `joined`.
    fn connects(&self, c: &ExprNode, joined: &[usize], next: usize) -> bool {
        let ExprNode::Call { func, args, .. } = c else {
            return false;
        };
        if !matches!(func, ExprType::Equal | ExprType::IsNotDistinctFrom) || args.len() != 2 {
            return false;
        }
        let sides: Vec<Vec<usize>> = args.iter().map(|a| self.reads(a)).collect();
        let only = |s: &[usize], k: usize| s == [k];
        let within = |s: &[usize]| !s.is_empty() && s.iter().all(|i| joined.contains(i));
        (only(&sides[0], next) && within(&sides[1])) || (only(&sides[1], next) && within(&sides[0]))
    }

    /// The order the inputs are joined in.
    fn order(&self) -> Vec<usize> {
        let n = self.inputs.len();
        let mut order = vec![0];
        while order.len() < n {
            let left: Vec<usize> = (0..n).filter(|k| !order.contains(k)).collect();
            let next = left
                .iter()
                .copied()
                .find(|&k| self.conds.iter().any(|c| self.connects(c, &order, k)))
                .unwrap_or(left[0]);
            order.push(next);
        }
        order
    }

    /// The left-deep tree of the inputs in [`MultiJoin::order`], under a projection to the columns'
    /// first order; `None` when that order is the inputs' own (the tree stays as it was).
    fn left_deep(self) -> Option<LogicalPlan> {
        let order = self.order();
        if order.iter().copied().eq(0..self.inputs.len()) {
            return None;
        }
        let reads: Vec<Vec<usize>> = self.conds.iter().map(|c| self.reads(c)).collect();
        let mut placed = vec![false; self.conds.len()];
        // Where each column of the side-by-side schema is in the tree built so far.
        let total: usize = self.inputs.iter().map(|i| i.schema().len()).sum();
        let mut at: Vec<Option<usize>> = vec![None; total];
        let mut width = 0;
        let mut tree: Option<LogicalPlan> = None;
        let mut joined = Vec::with_capacity(order.len());
        for &k in &order {
            let w = self.inputs[k].schema().len();
            for j in 0..w {
                at[self.offsets[k] + j] = Some(width + j);
            }
            width += w;
            joined.push(k);
            let Some(left) = tree.take() else {
                tree = Some(self.inputs[k].clone());
                continue;
            };
            let mut on = Vec::new();
            for (i, c) in self.conds.iter().enumerate() {
                if !placed[i] && reads[i].iter().all(|r| joined.contains(r)) {
                    placed[i] = true;
                    on.push(remap(c, &|x| at[x].expect("a joined input's column")));
                }
            }
            tree = Some(LogicalPlan::Join {
                kind: JoinType::Inner,
                on: and_all(on),
                left: Box::new(left),
                right: Box::new(self.inputs[k].clone()),
            });
        }
        let tree = tree.expect("a multi-join has inputs");
        let types = tree.schema();
        let exprs = (0..total)
            .map(|c| {
                let index = at[c].expect("every input is joined");
                ExprNode::InputRef {
                    index,
                    ty: types[index].clone(),
                }
            })
            .collect();
        Some(tree.project(exprs))
    }
}

#[cfg(test)]
mod tests {
    use epochlab_common::{DataType, TableId};

    use super::*;
    use crate::planner::pushdown::predicate_pushdown;

    fn scan(id: u32) -> LogicalPlan {
        let types = vec![DataType::Int32, DataType::Int32];
        LogicalPlan::Scan {
            table: format!("t{id}"),
            table_id: TableId(id),
            exprs: (0..2)
                .map(|i| ExprNode::input_ref(i, types[i].clone()))
                .collect(),
            types,
            as_of_proctime: false,
            pk: vec![0],
            filter: None,
        }
    }

    fn eq(a: usize, b: usize) -> ExprNode {
        ExprNode::Call {
            func: ExprType::Equal,
            args: vec![
                ExprNode::input_ref(a, DataType::Int32),
                ExprNode::input_ref(b, DataType::Int32),
            ],
            ret: DataType::Boolean,
        }
    }

    fn cross(l: LogicalPlan, r: LogicalPlan) -> LogicalPlan {
        LogicalPlan::Join {
            kind: JoinType::Inner,
            on: None,
            left: Box::new(l),
            right: Box::new(r),
        }
    }

    /// Each join of a tree, its `ON`.
    fn ons(plan: &LogicalPlan, out: &mut Vec<Option<ExprNode>>) {
        if let LogicalPlan::Join { on, .. } = plan {
            out.push(on.clone());
        }
        for i in plan.inputs() {
            ons(i, out);
        }
    }

    #[test]
    fn a_comma_join_whose_first_two_inputs_share_no_key_joins_through_the_third() {
        // FROM t1, t2, t3 WHERE t1.0 = t3.0 AND t2.1 = t3.1: t1 and t2 have no key of their own.
        let from = cross(cross(scan(1), scan(2)), scan(3));
        let plan = from.filter(and_all(vec![eq(0, 4), eq(3, 5)]).unwrap());
        let pushed = predicate_pushdown(&plan);
        let mut before = Vec::new();
        ons(&pushed, &mut before);
        assert!(before.contains(&None), "a cross join before: {pushed:#?}");
        let reordered = reorder_joins(&pushed);
        let mut after = Vec::new();
        ons(&reordered, &mut after);
        assert_eq!(after.len(), 2);
        assert!(after.iter().all(Option::is_some), "{reordered:#?}");
        // The columns keep their order: t1's, t2's, t3's.
        let LogicalPlan::Project { exprs, .. } = &reordered else {
            panic!("{reordered:#?}");
        };
        let at: Vec<usize> = exprs.iter().flat_map(ExprNode::input_refs).collect();
        assert_eq!(at, [0, 1, 4, 5, 2, 3]);
    }
}
