//! The stream side of a logical plan: which operators a streaming job can run here. One typed check in one
//! place: an operator without a stream executor yet is `unsupported: streaming <operator>`.

use epochlab_common::TableId;

use crate::error::SqlError;
use crate::planner::LogicalPlan;
use crate::scalar::sig::build_func;
use crate::scalar::{ExprNode, ExprType};

/// A plan that is a scan of one table under projections and filters, as expressions over the table's
/// stored rows.
#[derive(Clone, Debug)]
pub struct SingleTable {
    pub table_id: TableId,
    pub exprs: Vec<ExprNode>,
    pub filter: Option<ExprNode>,
}

/// The operator a streaming job would need for `plan`'s root (RisingWave's names).
pub fn operator_name(plan: &LogicalPlan) -> &'static str {
    match plan {
        LogicalPlan::Scan { .. } => "table scan",
        LogicalPlan::Values { .. } | LogicalPlan::Rows { .. } => "values",
        LogicalPlan::Project { .. } => "project",
        LogicalPlan::Filter { .. } => "filter",
        LogicalPlan::Agg { .. } => "agg",
        LogicalPlan::Join { .. } => "join",
        LogicalPlan::Union { .. } => "union",
        LogicalPlan::SetOp { .. } => "set operation",
        LogicalPlan::TopN { .. } => "top-N",
        LogicalPlan::Dedup { .. } => "dedup",
        LogicalPlan::TableFunction { .. } => "table function",
    }
}

/// `plan` as one table's rows under projections and filters; any other operator is unsupported.
pub fn single_table(plan: &LogicalPlan) -> Result<SingleTable, SqlError> {
    match plan {
        LogicalPlan::Scan {
            table_id,
            exprs,
            filter,
            ..
        } => Ok(SingleTable {
            table_id: *table_id,
            exprs: exprs.clone(),
            filter: filter.clone(),
        }),
        LogicalPlan::Project { exprs, input } => {
            let inner = single_table(input)?;
            let exprs = exprs.iter().map(|e| substitute(e, &inner.exprs)).collect();
            Ok(SingleTable { exprs, ..inner })
        }
        LogicalPlan::Filter { predicate, input } => {
            let inner = single_table(input)?;
            let p = substitute(predicate, &inner.exprs);
            let filter = match inner.filter {
                None => p,
                Some(f) => build_func(ExprType::And, vec![f, p])?,
            };
            Ok(SingleTable {
                filter: Some(filter),
                ..inner
            })
        }
        other => Err(SqlError::Unsupported(format!(
            "streaming {}",
            operator_name(other)
        ))),
    }
}

/// `e` with each input reference replaced by the expression it refers to.
fn substitute(e: &ExprNode, inputs: &[ExprNode]) -> ExprNode {
    match e {
        ExprNode::InputRef { index, .. } => inputs[*index].clone(),
        ExprNode::Literal { .. } => e.clone(),
        ExprNode::Call { func, args, ret } => ExprNode::Call {
            func: *func,
            args: args.iter().map(|a| substitute(a, inputs)).collect(),
            ret: *ret,
        },
    }
}
