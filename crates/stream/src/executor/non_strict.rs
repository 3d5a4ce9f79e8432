//! RisingWave's non-strict evaluation in streaming: an expression that fails on a row gives NULL (a filter
//! drops the row), the error is logged and counted, and the actor goes on.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use epochlab_common::{ActorId, Datum, ExprNode, OwnedRow};
use epochlab_expr::ExprError;

/// The executor kinds that evaluate expressions (the `executor` label of `epochlab_expr_errors_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExprExecutor {
    Project,
    Filter,
    HopWindow,
    /// An aggregation's FILTER clauses.
    Aggregate,
    /// A hash join's non-equi condition.
    HashJoin,
    /// A temporal join's non-equi condition.
    TemporalJoin,
    ProjectSet,
    /// A source's generated columns.
    Source,
    /// A table's watermark expression.
    WatermarkFilter,
}

impl ExprExecutor {
    pub fn as_str(self) -> &'static str {
        match self {
            ExprExecutor::Project => "project",
            ExprExecutor::Filter => "filter",
            ExprExecutor::HopWindow => "hop_window",
            ExprExecutor::Aggregate => "aggregate",
            ExprExecutor::HashJoin => "hash_join",
            ExprExecutor::TemporalJoin => "temporal_join",
            ExprExecutor::ProjectSet => "project_set",
            ExprExecutor::Source => "source",
            ExprExecutor::WatermarkFilter => "watermark_filter",
        }
    }
}

/// The `error` label of `epochlab_expr_errors_total`: the error's kind, a small fixed set.
pub fn expr_error_label(e: &ExprError) -> &'static str {
    match e {
        ExprError::NumericOutOfRange
        | ExprError::NumericUnderflow
        | ExprError::NumericOverflow
        | ExprError::CastOutOfRange(_) => "out_of_range",
        ExprError::DivisionByZero => "division_by_zero",
        ExprError::Parse(_) => "parse",
        ExprError::InvalidParam { .. } => "invalid_param",
        _ => "other",
    }
}

/// Expression errors of a node's executors, by executor kind and error kind
/// (`epochlab_expr_errors_total{executor, error}`).
#[derive(Clone, Default, Debug)]
pub struct ExprErrorCounts {
    inner: Arc<Mutex<BTreeMap<(ExprExecutor, &'static str), u64>>>,
}

impl ExprErrorCounts {
    fn record(&self, executor: ExprExecutor, error: &ExprError) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        *g.entry((executor, expr_error_label(error))).or_default() += 1;
    }

    /// Every count so far: (executor, error kind) → errors.
    pub fn counts(&self) -> BTreeMap<(ExprExecutor, &'static str), u64> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn total(&self) -> u64 {
        self.counts().values().sum()
    }
}

/// What a non-strict executor evaluates with: its identity for logs, and where errors are counted.
#[derive(Clone, Debug)]
pub struct NonStrict {
    pub actor_id: ActorId,
    pub executor: ExprExecutor,
    pub counts: ExprErrorCounts,
}

impl NonStrict {
    /// `expr` over `row`; NULL where it fails, the failure logged and counted.
    pub fn eval(&self, expr: &ExprNode, row: &OwnedRow) -> Datum {
        epochlab_expr::eval_non_strict(expr, row, &mut |e| self.report(&e))
    }

    /// `expr` over `row` with `ctx` (`now()`, `proctime()`); NULL where it fails, logged and counted.
    pub fn eval_with(
        &self,
        expr: &ExprNode,
        row: &OwnedRow,
        ctx: &epochlab_expr::EvalContext,
    ) -> Datum {
        epochlab_expr::eval_with(expr, row, ctx).unwrap_or_else(|e| {
            self.report(&e);
            None
        })
    }

    /// Log and count an error of this executor's evaluation.
    pub fn report(&self, e: &ExprError) {
        self.counts.record(self.executor, e);
        tracing::warn!(
            actor = self.actor_id.0,
            executor = self.executor.as_str(),
            error = %e,
            "expression error in streaming (non-strict): NULL"
        );
    }
}
