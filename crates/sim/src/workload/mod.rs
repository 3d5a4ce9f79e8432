//! Random workloads for soak campaigns: a plan as data ([`Plan`]), drawn from a seed ([`generate`]), played
//! on a simulated cluster under faults ([`run_plan`]) and judged ([`PlanReport`]); a failing plan shrinks to
//! the steps that matter ([`shrink`]).

mod file;
mod generate;
mod model;
mod plan;
mod reference;
mod runner;
mod shrink;
mod verdict;
mod views;

pub use file::{Expected, PlanFile, PlanFileError};
pub use generate::{GenParams, generate};
pub use plan::{
    Action, GroupKey, JobSpec, MAX_STEPS, PLAN_VERSION, Plan, PlanCluster, PlanError, PlanRpc,
    Step, StepError, ViewJoin, ViewQuery,
};
pub use reference::{ViewDiff, evaluate as evaluate_view};
pub use runner::{STALL_LIMIT, run_plan, watchdog};
pub use shrink::{ShrinkOutcome, shrink};
pub use verdict::{FailureKind, PlanReport, failure_signature, mask, stuck_signature};
pub use views::{Upstream as ViewUpstream, ViewShapeError, temporal_join_graph, view_graph};
