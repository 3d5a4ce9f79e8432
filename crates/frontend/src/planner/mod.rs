//! Logical plans (RisingWave's `LogicalScan`, `LogicalProject`, ...): what the binder builds from a query, what
//! the batch engine evaluates and what the stream planner cuts into fragments.

pub mod decorrelate;
pub mod delta_join;
pub mod explain;
pub mod index;
pub mod join_order;
pub mod pushdown;
pub mod stream;
pub mod stream_join;

use epochlab_common::{DataType, OwnedRow, TableId};

pub use epochlab_common::plan::ProjectSetSelectItem;

use crate::scalar::{AggCall, ExprNode, OrderType, TableFunctionType};
pub use epochlab_common::expr_node::WindowFuncCall;

/// The kind of a join (RisingWave's `JoinType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinType {
    Inner,
    LeftOuter,
    RightOuter,
    FullOuter,
    LeftSemi,
    LeftAnti,
}

/// A set operation other than `UNION ALL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Except,
    Intersect,
}

/// A window function call of an [`LogicalPlan::OverWindow`]: the function over the input's columns, its
/// partition columns and its order.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowCall {
    pub func: WindowFuncCall,
    pub partition_by: Vec<usize>,
    pub order_by: Vec<(usize, OrderType)>,
}

/// A logical plan node; every node's output is a row of `schema()`'s types.
#[derive(Clone, Debug)]
pub enum LogicalPlan {
    /// A table or materialized view at the max committed epoch: `exprs` over its stored rows give the
    /// columns (a stored column each for a table), `filter` over them picks rows (a view kept as its
    /// upstream's rows), `pk` the stored pk positions. `as_of_proctime`: written
    /// `FOR SYSTEM_TIME AS OF PROCTIME()` (RisingWave's `for_system_time_as_of_proctime`): on the right of a
    /// join, a streaming job reads it as a temporal join's lookup table; a batch query reads it as any scan.
    Scan {
        table: String,
        table_id: TableId,
        exprs: Vec<ExprNode>,
        types: Vec<DataType>,
        pk: Vec<usize>,
        filter: Option<ExprNode>,
        as_of_proctime: bool,
    },
    /// Constant rows (also a system table's rows, read at bind).
    Values {
        rows: Vec<Vec<ExprNode>>,
        types: Vec<DataType>,
    },
    Project {
        exprs: Vec<ExprNode>,
        input: Box<LogicalPlan>,
    },
    Filter {
        predicate: ExprNode,
        input: Box<LogicalPlan>,
    },
    /// Group by `group_key` (the first outputs), then one column per call.
    Agg {
        group_key: Vec<usize>,
        calls: Vec<AggCall>,
        input: Box<LogicalPlan>,
    },
    /// `on` is over the left's columns then the right's; semi/anti joins output the left's only.
    Join {
        kind: JoinType,
        on: Option<ExprNode>,
        left: Box<LogicalPlan>,
        right: Box<LogicalPlan>,
    },
    /// `UNION ALL` of inputs of one schema.
    Union { inputs: Vec<LogicalPlan> },
    /// `UNION`/`EXCEPT`/`INTERSECT` [ALL].
    SetOp {
        op: SetOp,
        all: bool,
        left: Box<LogicalPlan>,
        right: Box<LogicalPlan>,
    },
    /// `ORDER BY` with an optional `LIMIT`/`OFFSET` (RisingWave's `LogicalTopN`; a plain limit has no order).
    TopN {
        order: Vec<(usize, OrderType)>,
        limit: Option<u64>,
        offset: u64,
        /// `FETCH FIRST n ROWS WITH TIES`: the rows tied with the last one kept as well.
        with_ties: bool,
        input: Box<LogicalPlan>,
    },
    /// `DISTINCT ON (keys)`: the first row of each key (in input order).
    Dedup {
        keys: Vec<usize>,
        input: Box<LogicalPlan>,
    },
    /// A table function's rows (`generate_series`, `range`, `unnest`).
    TableFunction {
        func: TableFunctionType,
        args: Vec<ExprNode>,
        ty: DataType,
    },
    /// `hop(t, col, slide, size)`: each input row once per window that holds `time_col`, with the
    /// window's start and end appended (`slide` and `size` are interval literals).
    HopWindow {
        time_col: usize,
        slide: ExprNode,
        size: ExprNode,
        input: Box<LogicalPlan>,
    },
    /// A select list with set-returning functions (RisingWave's `LogicalProjectSet`): the `Int64`
    /// `projected_row_id` (0, 1, .. within each input row), then one column per item; each input row gives
    /// as many rows as its longest table function (shorter ones NULL past their end, expressions repeat).
    ProjectSet {
        select_list: Vec<ProjectSetSelectItem>,
        input: Box<LogicalPlan>,
    },
    /// Each input row once per grouping set (RisingWave's `LogicalExpand`): the input's columns with those
    /// not in `column_subsets[i]` NULL, the input's columns as they are, then the `Int64` flag `i`.
    Expand {
        column_subsets: Vec<Vec<usize>>,
        input: Box<LogicalPlan>,
    },
    /// The input's columns, then one column per window function call (RisingWave's `LogicalOverWindow`):
    /// each call's value for each row over the row's partition in the call's order.
    OverWindow {
        calls: Vec<WindowCall>,
        input: Box<LogicalPlan>,
    },
    /// Materialized rows (an uncorrelated subquery evaluated at bind, a system table).
    Rows {
        rows: Vec<OwnedRow>,
        types: Vec<DataType>,
    },
}

impl LogicalPlan {
    /// The types of the node's output columns.
    pub fn schema(&self) -> Vec<DataType> {
        match self {
            LogicalPlan::Scan { types, .. }
            | LogicalPlan::Values { types, .. }
            | LogicalPlan::Rows { types, .. } => types.clone(),
            LogicalPlan::Project { exprs, .. } => exprs.iter().map(ExprNode::return_type).collect(),
            LogicalPlan::Filter { input, .. }
            | LogicalPlan::TopN { input, .. }
            | LogicalPlan::Dedup { input, .. } => input.schema(),
            LogicalPlan::Agg {
                group_key,
                calls,
                input,
            } => {
                let types = input.schema();
                group_key
                    .iter()
                    .map(|&i| types[i].clone())
                    .chain(calls.iter().map(|c| c.ret.clone()))
                    .collect()
            }
            LogicalPlan::Join {
                kind, left, right, ..
            } => match kind {
                JoinType::LeftSemi | JoinType::LeftAnti => left.schema(),
                _ => left.schema().into_iter().chain(right.schema()).collect(),
            },
            LogicalPlan::Union { inputs } => inputs.first().map_or_else(Vec::new, |i| i.schema()),
            LogicalPlan::SetOp { left, .. } => left.schema(),
            LogicalPlan::TableFunction { ty, .. } => vec![ty.clone()],
            LogicalPlan::ProjectSet { select_list, .. } => std::iter::once(DataType::Int64)
                .chain(select_list.iter().map(ProjectSetSelectItem::return_type))
                .collect(),
            LogicalPlan::Expand { input, .. } => {
                let types = input.schema();
                let mut out = types.clone();
                out.extend(types);
                out.push(DataType::Int64);
                out
            }
            LogicalPlan::OverWindow { calls, input } => {
                let mut types = input.schema();
                types.extend(calls.iter().map(|c| c.func.ret.clone()));
                types
            }
            LogicalPlan::HopWindow {
                time_col, input, ..
            } => {
                let mut types = input.schema();
                let t = types[*time_col].clone();
                types.push(t.clone());
                types.push(t);
                types
            }
        }
    }

    /// The node's inputs, to change.
    pub fn inputs_mut(&mut self) -> Vec<&mut LogicalPlan> {
        match self {
            LogicalPlan::Scan { .. }
            | LogicalPlan::Values { .. }
            | LogicalPlan::TableFunction { .. }
            | LogicalPlan::Rows { .. } => Vec::new(),
            LogicalPlan::Project { input, .. }
            | LogicalPlan::Filter { input, .. }
            | LogicalPlan::Agg { input, .. }
            | LogicalPlan::TopN { input, .. }
            | LogicalPlan::Dedup { input, .. }
            | LogicalPlan::OverWindow { input, .. }
            | LogicalPlan::HopWindow { input, .. }
            | LogicalPlan::ProjectSet { input, .. }
            | LogicalPlan::Expand { input, .. } => vec![input],
            LogicalPlan::Join { left, right, .. } | LogicalPlan::SetOp { left, right, .. } => {
                vec![left, right]
            }
            LogicalPlan::Union { inputs } => inputs.iter_mut().collect(),
        }
    }

    /// The node's inputs.
    pub fn inputs(&self) -> Vec<&LogicalPlan> {
        match self {
            LogicalPlan::Scan { .. }
            | LogicalPlan::Values { .. }
            | LogicalPlan::TableFunction { .. }
            | LogicalPlan::Rows { .. } => Vec::new(),
            LogicalPlan::Project { input, .. }
            | LogicalPlan::Filter { input, .. }
            | LogicalPlan::Agg { input, .. }
            | LogicalPlan::TopN { input, .. }
            | LogicalPlan::Dedup { input, .. }
            | LogicalPlan::OverWindow { input, .. }
            | LogicalPlan::HopWindow { input, .. }
            | LogicalPlan::ProjectSet { input, .. }
            | LogicalPlan::Expand { input, .. } => vec![input],
            LogicalPlan::Join { left, right, .. } | LogicalPlan::SetOp { left, right, .. } => {
                vec![left, right]
            }
            LogicalPlan::Union { inputs } => inputs.iter().collect(),
        }
    }

    pub fn project(self, exprs: Vec<ExprNode>) -> LogicalPlan {
        LogicalPlan::Project {
            exprs,
            input: Box::new(self),
        }
    }

    pub fn filter(self, predicate: ExprNode) -> LogicalPlan {
        LogicalPlan::Filter {
            predicate,
            input: Box::new(self),
        }
    }

    /// Input references to every column of the node, for projections.
    pub fn input_refs(&self) -> Vec<ExprNode> {
        self.schema()
            .into_iter()
            .enumerate()
            .map(|(index, ty)| ExprNode::InputRef { index, ty })
            .collect()
    }
}

/// The logical rewrites every plan takes before it runs, batch or streaming (RisingWave's logical
/// optimization, the part of it this planner has): filters pushed down into joins, inner joins ordered
/// so that each has an equality key where one exists, and each key compared as a column.
pub fn optimize(plan: &LogicalPlan) -> LogicalPlan {
    let pushed = pushdown::predicate_pushdown(plan);
    let ordered = join_order::reorder_joins(&pushed);
    pushdown::join_key_calculations(&ordered)
}
