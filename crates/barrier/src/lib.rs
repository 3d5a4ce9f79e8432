//! The barrier protocol's shared half (reference §1, §6): barrier and mutation types that flow through
//! executors, the commands DDL rides on, the scheduler callers queue them in, and meta's global barrier
//! manager, which injects barriers, collects them from every compute node, and commits the completed prefix
//! in epoch order. Everything it needs from the rest of meta comes through [`GlobalBarrierManagerContext`].
//!
//! The compute-node half (the local barrier manager) lives in the `stream` crate, as in RisingWave, so this
//! crate does not depend on executors.

pub mod barrier;
pub mod collect;
pub mod command;
pub mod error;
pub mod manager;
pub mod schedule;

pub use barrier::{
    AddMutation, Barrier, BarrierKind, DispatcherUpdate, Mutation, TracingContext, UpdateMutation,
};
pub use command::{
    BarrierCompleteResponse, Command, CommandContext, CreateMviewProgress, InflightActorInfo,
    PausedReason,
};
pub use error::{BarrierError, BarrierResult};
pub use manager::{
    BarrierConfig, BarrierManagerStats, GlobalBarrierManager, GlobalBarrierManagerContext,
    RecoveredState,
};
pub use schedule::{BarrierScheduler, ScheduledBarriers, SchedulerStatus};
