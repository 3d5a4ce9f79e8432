//! The session time zone in a plan (RisingWave's `SessionTimezone` rewriter): every call whose meaning
//! depends on a time zone gets the session's as a literal argument, so the batch engine and the streaming
//! executors need no session, and a materialized view keeps the zone of the session that created it.
//!
//! - `timestamptz::varchar`, `varchar::timestamptz` → `cast_with_time_zone(x, zone)`;
//! - `date`/`timestamp` → `timestamptz`: `x::timestamp AT TIME ZONE zone`;
//! - `timestamptz` → `date`/`time`/`timestamp`: `(x AT TIME ZONE zone)::target`;
//! - a comparison of a `timestamptz` with a `date` or `timestamp`: the other side read in the zone;
//! - `timestamptz ± interval` → `add_with_time_zone`/`subtract_with_time_zone(t, i, zone)`;
//! - `date_trunc`, `extract`, `date_part` (but of `epoch`) and `to_char` of a `timestamptz`, and
//!   `make_timestamptz` without a zone, take the zone as their last argument (RisingWave's
//!   `make_timestamptz` reads it from the fragment's expression context, which the zone argument stands for).

use epochlab_common::expr_node::ExprType;
use epochlab_common::{DataType, ScalarImpl};

use crate::planner::{LogicalPlan, ProjectSetSelectItem};
use crate::scalar::ExprNode;

/// Rewrites expressions for one session's zone.
pub struct SessionTimezone {
    zone: String,
}

fn call(func: ExprType, args: Vec<ExprNode>, ret: DataType) -> ExprNode {
    ExprNode::Call { func, args, ret }
}

fn cast(e: ExprNode, ty: DataType) -> ExprNode {
    if e.return_type() == ty {
        return e;
    }
    call(ExprType::Cast, vec![e], ty)
}

impl SessionTimezone {
    /// The zone as its canonical IANA name when it is one (so each call finds it without a scan).
    pub fn new(zone: impl Into<String>) -> Self {
        let zone = zone.into();
        let zone = epochlab_expr::scalar::timestamptz::lookup_time_zone(&zone)
            .map_or(zone, |tz| tz.name().to_string());
        Self { zone }
    }

    fn zone(&self) -> ExprNode {
        ExprNode::literal(
            Some(ScalarImpl::Utf8(self.zone.clone().into())),
            DataType::Varchar,
        )
    }

    fn at_time_zone(&self, e: ExprNode) -> ExprNode {
        let ret = match e.return_type() {
            DataType::Timestamptz => DataType::Timestamp,
            _ => DataType::Timestamptz,
        };
        call(ExprType::AtTimeZone, vec![e, self.zone()], ret)
    }

    /// `e` with its zone-dependent calls given the zone, innermost first.
    pub fn rewrite_expr(&self, e: ExprNode) -> ExprNode {
        let ExprNode::Call { func, args, ret } = e else {
            return e;
        };
        let args: Vec<ExprNode> = args.into_iter().map(|a| self.rewrite_expr(a)).collect();
        self.with_timezone(func, args, ret)
    }

    fn with_timezone(&self, func: ExprType, mut args: Vec<ExprNode>, ret: DataType) -> ExprNode {
        use DataType::{Date, Interval, Time, Timestamp, Timestamptz, Varchar};
        use ExprType::*;
        let types: Vec<DataType> = args.iter().map(ExprNode::return_type).collect();
        match (func, types.as_slice()) {
            (Cast, [from]) if !epochlab_expr::cast::reads_time_zone(from, &ret) => {
                call(func, args, ret)
            }
            (Cast, [from]) => match (from, &ret) {
                (Timestamptz, Varchar) | (Varchar, Timestamptz) => {
                    args.push(self.zone());
                    call(CastWithTimeZone, args, ret)
                }
                (Date | Timestamp, Timestamptz) => {
                    self.at_time_zone(cast(args.remove(0), Timestamp))
                }
                (Timestamptz, Date | Time | Timestamp) => {
                    cast(self.at_time_zone(args.remove(0)), ret)
                }
                _ => call(func, args, ret),
            },
            (
                Equal | NotEqual | LessThan | LessThanOrEqual | GreaterThan | GreaterThanOrEqual
                | IsDistinctFrom | IsNotDistinctFrom,
                [a, b],
            ) => {
                for (i, other) in [(0, b), (1, a)] {
                    if *other == Timestamptz && matches!(types[i], Date | Timestamp) {
                        let side = std::mem::replace(&mut args[i], ExprNode::null(Varchar));
                        args[i] = self.at_time_zone(cast(side, Timestamp));
                        break;
                    }
                }
                call(func, args, ret)
            }
            (Add, [Interval, Timestamptz]) => {
                args.swap(0, 1);
                args.push(self.zone());
                call(AddWithTimeZone, args, ret)
            }
            (Add | Subtract, [Timestamptz, Interval]) => {
                args.push(self.zone());
                let func = if func == Add {
                    AddWithTimeZone
                } else {
                    SubtractWithTimeZone
                };
                call(func, args, ret)
            }
            (Extract | DatePart, [_, Timestamptz]) if is_epoch_or_null(&args[0]) => {
                call(func, args, ret)
            }
            (DateTrunc | Extract | DatePart, [_, Timestamptz])
            | (ToChar, [Timestamptz, Varchar])
            | (ToTimestamp1, [Varchar, Varchar])
            | (MakeTimestamptz, [_, _, _, _, _, _]) => {
                args.push(self.zone());
                call(func, args, ret)
            }
            _ => call(func, args, ret),
        }
    }

    /// Every expression of `plan` and its inputs rewritten.
    pub fn rewrite_plan(&self, plan: &mut LogicalPlan) {
        let mut f = |e: &mut ExprNode| {
            let old = std::mem::replace(e, ExprNode::null(DataType::Boolean));
            *e = self.rewrite_expr(old);
        };
        visit_plan_exprs(plan, &mut f);
    }
}

/// `extract`'s field is the literal `epoch` or NULL: the instant alone answers it.
fn is_epoch_or_null(field: &ExprNode) -> bool {
    match field.as_literal() {
        Some(None) => true,
        Some(Some(ScalarImpl::Utf8(s))) => s.eq_ignore_ascii_case("epoch"),
        _ => false,
    }
}

/// Calls `f` on every expression of `plan`, its inputs' first.
fn visit_plan_exprs(plan: &mut LogicalPlan, f: &mut dyn FnMut(&mut ExprNode)) {
    match plan {
        LogicalPlan::Scan { exprs, filter, .. } => {
            exprs.iter_mut().for_each(&mut *f);
            filter.iter_mut().for_each(&mut *f);
            return;
        }
        LogicalPlan::Values { rows, .. } => {
            rows.iter_mut().flatten().for_each(f);
            return;
        }
        LogicalPlan::TableFunction { args, .. } => {
            args.iter_mut().for_each(f);
            return;
        }
        LogicalPlan::Rows { .. } => return,
        _ => {}
    }
    for input in plan.inputs_mut() {
        visit_plan_exprs(input, f);
    }
    match plan {
        LogicalPlan::Project { exprs, .. } => exprs.iter_mut().for_each(f),
        LogicalPlan::Filter { predicate, .. } => f(predicate),
        LogicalPlan::Agg { calls, .. } => calls
            .iter_mut()
            .filter_map(|c| c.filter.as_mut())
            .for_each(f),
        LogicalPlan::Join { on, .. } => on.iter_mut().for_each(f),
        LogicalPlan::HopWindow { slide, size, .. } => {
            f(slide);
            f(size);
        }
        LogicalPlan::ProjectSet { select_list, .. } => {
            for item in select_list {
                match item {
                    ProjectSetSelectItem::Expr(e) => f(e),
                    ProjectSetSelectItem::TableFunction { args, .. } => {
                        args.iter_mut().for_each(&mut *f);
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(ty: DataType) -> ExprNode {
        ExprNode::input_ref(0, ty)
    }

    fn rewritten(func: ExprType, args: Vec<ExprNode>, ret: DataType) -> ExprNode {
        SessionTimezone::new("US/Pacific").rewrite_expr(call(func, args, ret))
    }

    fn func_of(e: &ExprNode) -> ExprType {
        match e {
            ExprNode::Call { func, .. } => *func,
            other => panic!("not a call: {other:?}"),
        }
    }

    #[test]
    fn casts_across_timestamptz_read_the_zone() {
        let e = rewritten(
            ExprType::Cast,
            vec![col(DataType::Timestamptz)],
            DataType::Varchar,
        );
        assert_eq!(func_of(&e), ExprType::CastWithTimeZone);
        let e = rewritten(
            ExprType::Cast,
            vec![col(DataType::Date)],
            DataType::Timestamptz,
        );
        assert_eq!(func_of(&e), ExprType::AtTimeZone);
        let e = rewritten(
            ExprType::Cast,
            vec![col(DataType::Timestamptz)],
            DataType::Date,
        );
        assert_eq!(func_of(&e), ExprType::Cast);
        assert_eq!(e.return_type(), DataType::Date);
        let e = rewritten(ExprType::Cast, vec![col(DataType::Int32)], DataType::Int64);
        assert_eq!(func_of(&e), ExprType::Cast);
    }

    #[test]
    fn interval_arithmetic_and_fields_take_the_zone_but_epoch_does_not() {
        let iv = col(DataType::Interval);
        let e = rewritten(
            ExprType::Add,
            vec![iv, col(DataType::Timestamptz)],
            DataType::Timestamptz,
        );
        assert_eq!(func_of(&e), ExprType::AddWithTimeZone);
        let field =
            |s: &str| ExprNode::literal(Some(ScalarImpl::Utf8(s.into())), DataType::Varchar);
        let tz = col(DataType::Timestamptz);
        let e = rewritten(
            ExprType::Extract,
            vec![field("EPOCH"), tz.clone()],
            DataType::Decimal,
        );
        assert!(matches!(&e, ExprNode::Call { args, .. } if args.len() == 2));
        let e = rewritten(ExprType::Extract, vec![field("day"), tz], DataType::Decimal);
        assert!(matches!(&e, ExprNode::Call { args, .. } if args.len() == 3));
    }
}
