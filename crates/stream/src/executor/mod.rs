//! Executors. Each is a struct with an `execute_inner` async generator: it reads its input, handles barriers
//! in one place, and commits its state tables for the barrier's `prev` epoch before yielding the barrier.

pub mod aggregate;
pub mod backfill;
pub mod barrier_align;
pub mod chain;
pub mod dispatch;
pub mod dml;
pub mod dynamic_filter;
#[cfg(test)]
mod dynamic_filter_tests;
pub mod expand;
pub mod filter;
pub mod flow_control;
pub mod hash_join;
pub mod hop_window;
pub mod materialize;
pub mod merge;
pub mod non_strict;
pub mod now;
pub mod over_window;
pub mod project;
pub mod project_set;
pub mod row_id_gen;
pub mod sink;
pub mod sort;
pub mod source;
#[cfg(test)]
mod stateless_tests;
pub mod stats;
pub mod temporal_join;
#[cfg(test)]
mod tests;
pub mod top_n;
pub mod traced;
pub mod union;
pub mod values;
pub mod watermark;
pub mod watermark_filter;

use epochlab_barrier::Barrier;
use epochlab_common::{StreamChunk, VirtualNode};
use epochlab_state_table::StateTableError;
use epochlab_storage::StorageError;
use futures::StreamExt;
use futures::stream::BoxStream;
use thiserror::Error;

pub use aggregate::{AggArgs, CallStateTable, DedupTable, HashAggExecutor, SimpleAggExecutor};
pub use backfill::{
    ArrangementBackfillExecutor, BackfillArgs, BackfillRegistry, NoShuffleBackfillExecutor,
};
pub use chain::ChainExecutor;
pub use dispatch::DispatchExecutor;
pub use dml::DmlExecutor;
pub use dynamic_filter::{Comparator, DynamicFilterArgs, DynamicFilterExecutor};
pub use expand::ExpandExecutor;
pub use filter::FilterExecutor;
pub use flow_control::FlowControlExecutor;
pub use hash_join::{HashJoinArgs, HashJoinExecutor};
pub use hop_window::{HopWindowError, HopWindowExecutor};
pub use materialize::MaterializeExecutor;
pub use merge::MergeExecutor;
pub use non_strict::{ExprErrorCounts, ExprExecutor, NonStrict};
pub use now::{NowExecutor, epoch_timestamp};
pub use project::ProjectExecutor;
pub use project_set::ProjectSetExecutor;
pub use row_id_gen::{RowIdGenExecutor, RowIdGenerator};
pub use sink::{CollectedSink, SinkExecutor, SinkRegistry};
pub use sort::SortExecutor;
pub use source::{SourceArgs, SourceExecutor};
pub use stats::{ExecutorCounters, ExecutorStats, ExecutorStatsHandle, StatefulExecutorKind};
pub use temporal_join::{TemporalJoinArgs, TemporalJoinExecutor};
pub use top_n::{
    AppendOnlyGroupTopNExecutor, AppendOnlyTopNExecutor, GroupTopNExecutor, TopNArgs, TopNExecutor,
};
pub use traced::{ExecutorTracer, TracedExecutor};
pub use union::UnionExecutor;
pub use values::ValuesExecutor;
pub use watermark::{BufferedWatermarks, Watermark};
pub use watermark_filter::WatermarkFilterExecutor;

#[derive(Clone, Debug)]
pub enum Message {
    Chunk(StreamChunk),
    Barrier(Barrier),
    Watermark(Watermark),
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StreamExecutorError {
    #[error(transparent)]
    StateTable(#[from] StateTableError),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("channel {0} closed")]
    ChannelClosed(String),
    /// An upstream's barrier of another epoch than the one the other upstreams delivered: RisingWave's
    /// `AlignBarrier`, in its words (`error.rs` at 4a4e769995f), each barrier as [`align_text`] writes it;
    /// `executor` names the merge, union or align and its actor.
    #[error("Failed to align barrier: expected {expected} but got {got}")]
    BarrierMisaligned {
        executor: String,
        expected: String,
        got: String,
    },
    #[error("{executor}: the first message must be an Initial or Checkpoint barrier, got {got}")]
    FirstMessage { executor: String, got: String },
    /// The stored backfill progress of a vnode is not what the executor believes it committed.
    #[error(
        "backfill progress of vnode {vnode} in storage {stored} differs from the committed copy {committed} (by the backfill persist check)"
    )]
    ProgressDiverged {
        vnode: u32,
        stored: String,
        committed: String,
    },
    /// The backfill has no progress for a vnode: RisingWave's `BackfillState::get_progress` error, with its
    /// format (`{:#?}` of the vnode; epochlab's `VirtualNode` prints its Debug on one line, where RisingWave's
    /// derived Debug spreads it over three). #16815's symptom when an upstream row's vnode is derived from its
    /// pk rather than the table's distribution key.
    #[error(
        "Backfill progress for vnode {vnode:#?} not found, backfill_state not initialized properly"
    )]
    ProgressNotFound { vnode: VirtualNode },
    /// RisingWave's assertion in the no-shuffle backfill's `recover_backfill_state` (PR #12767), the comment
    /// above it as the message: the progress rows of an actor's vnodes disagree on `backfill_finished`, as
    /// after a scale-in merged the vnodes of actors at different stages (RisingWave #19138). RisingWave's
    /// `assert_eq!(state.is_finished, expected_state.is_finished)` panicked; here it fails the actor.
    #[error(
        "All vnode partitions should have same state (no scale-in supported): vnode {vnode} backfill_finished={finished}, its first vnode {first_vnode} backfill_finished={expected} (assertion `left == right` failed, left: {finished}, right: {expected})"
    )]
    BackfillStatesDiffer {
        first_vnode: u32,
        vnode: u32,
        expected: bool,
        finished: bool,
    },
    /// An aggregation plan the executor cannot run (a call's state kind or dedup table is wrong).
    #[error("aggregate call {call}: {problem}")]
    AggPlan { call: usize, problem: String },
    /// An aggregate's state refused a row (a delete of a value it never saw) or its stored state.
    #[error("aggregate call {call}: {source}")]
    Aggregate {
        call: usize,
        source: epochlab_expr::ExprError,
    },
    /// A window function call of an over window could not evaluate a partition.
    #[error("window function call {call}: {source}")]
    WindowFunction {
        call: usize,
        source: epochlab_expr::ExprError,
    },
    /// A distinct value deleted more often than inserted.
    #[error("distinct dedup count of {value} below zero")]
    DedupUnderflow { value: String },
    /// A hash join plan the executor cannot run (keys of different lengths, degree tables that do not fit
    /// the join type).
    #[error("hash join plan: {problem}")]
    JoinPlan { problem: String },
    /// A hash join's degree table disagrees with its rows table (or a degree would go below zero).
    #[error("hash join table {table_id}: {detail} at pk {pk:?}")]
    JoinDegreeMismatch {
        table_id: epochlab_common::TableId,
        pk: epochlab_common::OwnedRow,
        detail: &'static str,
    },
    /// A hash join's cached entry refused a change: an insert of a pk it holds, a delete of one it does not
    /// (RisingWave's `JoinEntryError` with its `error_context`).
    #[error(
        "{source}: join key: {join_key:?}, pk: {pk:?}, row: {row:?}, state_table_id: {table_id}"
    )]
    JoinEntry {
        source: hash_join::join_hash_map::JoinEntryError,
        join_key: epochlab_common::OwnedRow,
        pk: epochlab_common::OwnedRow,
        row: epochlab_common::OwnedRow,
        table_id: epochlab_common::TableId,
    },
    /// An aggregation group's row count went below zero (RisingWave's panic in a debug build).
    #[error("row count should be non-negative: group {group:?}")]
    NegativeRowCount { group: epochlab_common::OwnedRow },
    /// A top-N plan the executor cannot run (a limit of 0, WITH TIES with an offset, a group key where
    /// none belongs).
    #[error("top-N: {problem}")]
    TopNPlan { problem: String },
    /// An over window plan the executor cannot run (a state table not keyed as it reads it).
    #[error("over window: {problem}")]
    OverWindowPlan { problem: &'static str },
    /// An append-only executor got a delete.
    #[error("{executor}: a delete of {row} in an append-only input")]
    NotAppendOnly { executor: String, row: String },
    /// A dynamic filter's right input deleted a value other than its current one (RisingWave's
    /// "Inconsistent Delete").
    #[error(
        "{executor}: inconsistent delete of the right value {deleted}, the current one is {current}"
    )]
    RightValueMismatch {
        executor: String,
        current: String,
        deleted: String,
    },
    /// RisingWave #8440's bail in the watermark filter's recovery read, its text as RisingWave printed it: some
    /// vnodes have a stored watermark and some none (vnodes that never saw a row legitimately have none).
    #[error("Watermark for vnodes should be either all None or all Some()")]
    WatermarkVnodesDiffer { with: usize, without: usize },
    /// RisingWave #22476's panic in the temporal join's `JoinEntry::remove`, its text as RisingWave printed it
    /// (its `OwnedRow`'s derived Debug): the right input deleted a row (by its stream key) that the cached
    /// lookup of its join key does not hold.
    #[error("key OwnedRow({key:?}) should be in the cache")]
    TemporalJoinCacheMiss { key: epochlab_common::OwnedRow },
    #[error("{0}")]
    Internal(String),
}

/// Why an actor failed, a small fixed set (the `reason` label of `epochlab_actor_failures_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FailureReason {
    /// A row that must be stored was not found (RisingWave #14910's message).
    StateMissing,
    /// An upstream or downstream actor went away.
    ChannelClosed,
    /// Stored state disagrees with what was written or expected.
    InconsistentState,
    /// A barrier out of its epoch order: a merge's upstreams delivered barriers of different epochs, or a
    /// state table was asked to commit an epoch that does not follow its own (RisingWave #5244).
    EpochOrder,
    /// A write from a reset node's older generation.
    StaleGeneration,
    Other,
}

impl FailureReason {
    pub const ALL: [FailureReason; 6] = [
        FailureReason::StateMissing,
        FailureReason::ChannelClosed,
        FailureReason::InconsistentState,
        FailureReason::EpochOrder,
        FailureReason::StaleGeneration,
        FailureReason::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureReason::StateMissing => "state_missing",
            FailureReason::ChannelClosed => "channel_closed",
            FailureReason::InconsistentState => "inconsistent_state",
            FailureReason::EpochOrder => "epoch_order",
            FailureReason::StaleGeneration => "stale_generation",
            FailureReason::Other => "other",
        }
    }

    /// Whether this failure is a finding about state or its epochs (as opposed to the fallout of a fault: a
    /// closed channel or a fenced zombie write).
    pub fn is_state_error(self) -> bool {
        matches!(
            self,
            FailureReason::StateMissing
                | FailureReason::InconsistentState
                | FailureReason::EpochOrder
        )
    }
}

impl StreamExecutorError {
    pub fn reason(&self) -> FailureReason {
        use epochlab_storage::StorageError as S;
        match self {
            Self::StateTable(StateTableError::RowNotFound { .. }) => FailureReason::StateMissing,
            Self::StateTable(
                StateTableError::RowExists { .. } | StateTableError::OldRowMismatch { .. },
            )
            | Self::ProgressDiverged { .. }
            | Self::ProgressNotFound { .. }
            | Self::BackfillStatesDiffer { .. }
            | Self::DedupUnderflow { .. }
            | Self::JoinDegreeMismatch { .. }
            | Self::JoinEntry { .. }
            | Self::NegativeRowCount { .. }
            | Self::RightValueMismatch { .. }
            | Self::WatermarkVnodesDiffer { .. }
            | Self::TemporalJoinCacheMiss { .. }
            | Self::Aggregate {
                source: epochlab_expr::ExprError::InvalidState(_),
                ..
            } => FailureReason::InconsistentState,
            Self::StateTable(StateTableError::Storage(S::StaleGeneration { .. }))
            | Self::Storage(S::StaleGeneration { .. }) => FailureReason::StaleGeneration,
            Self::StateTable(StateTableError::Storage(S::InconsistentOperation(_)))
            | Self::Storage(S::InconsistentOperation(_)) => FailureReason::InconsistentState,
            Self::ChannelClosed(_) => FailureReason::ChannelClosed,
            Self::BarrierMisaligned { .. }
            | Self::StateTable(StateTableError::EpochMismatch { .. }) => FailureReason::EpochOrder,
            _ => FailureReason::Other,
        }
    }
}

/// A barrier as RisingWave's `AlignBarrier` error printed it (its `Debug` at 4a4e769995f, with epochlab's
/// fields): `Barrier { epoch: Epoch { curr: C, prev: P }, mutation: Some(Stop({1, 2})), checkpoint: true }`.
pub fn align_text(b: &Barrier) -> String {
    use epochlab_barrier::Mutation;
    let mutation = match b.mutation.as_deref() {
        None => "None".to_string(),
        Some(Mutation::Stop(actors)) => {
            let ids: Vec<String> = actors.iter().map(|a| a.0.to_string()).collect();
            format!("Some(Stop({{{}}}))", ids.join(", "))
        }
        Some(Mutation::Pause) => "Some(Pause)".to_string(),
        Some(Mutation::Resume) => "Some(Resume)".to_string(),
        Some(Mutation::Add(_)) => "Some(Add(..))".to_string(),
        Some(Mutation::Update(_)) => "Some(Update(..))".to_string(),
        Some(Mutation::Throttle(_)) => "Some(Throttle(..))".to_string(),
    };
    format!(
        "Barrier {{ epoch: Epoch {{ curr: {}, prev: {} }}, mutation: {mutation}, checkpoint: {} }}",
        b.epoch.curr.0,
        b.epoch.prev.0,
        b.is_checkpoint()
    )
}

impl StreamExecutorError {
    /// `executor` (a merge, union or align, and its actor) holds `expected` from some upstreams and got
    /// `got`, of another epoch, from another.
    pub fn misaligned(executor: String, expected: &Barrier, got: &Barrier) -> Self {
        StreamExecutorError::BarrierMisaligned {
            executor,
            expected: align_text(expected),
            got: align_text(got),
        }
    }
}

pub type StreamExecutorResult<T> = Result<T, StreamExecutorError>;
pub type BoxedMessageStream = BoxStream<'static, StreamExecutorResult<Message>>;

/// An executor, ready to run.
pub trait Execute: Send + 'static {
    fn execute(self: Box<Self>) -> BoxedMessageStream;
    fn identity(&self) -> String;
}

pub type BoxedExecutor = Box<dyn Execute>;

/// What is left in an executor's `input` once its generator has taken the input to run it (so that the
/// generator can still borrow the executor's other fields through `self`).
pub(crate) struct Taken;

impl Execute for Taken {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        futures::stream::empty().boxed()
    }

    fn identity(&self) -> String {
        "Taken".into()
    }
}

/// Take the first message of `input`, which must be an Initial or Checkpoint barrier.
pub async fn expect_first_barrier(
    input: &mut BoxedMessageStream,
    executor: &str,
) -> StreamExecutorResult<Barrier> {
    let got = match input.next().await {
        Some(Ok(Message::Barrier(b))) if b.kind != epochlab_barrier::BarrierKind::Barrier => {
            return Ok(b);
        }
        Some(Ok(m)) => format!("{m:?}"),
        Some(Err(e)) => return Err(e),
        None => "end of stream".to_string(),
    };
    Err(StreamExecutorError::FirstMessage {
        executor: executor.to_string(),
        got,
    })
}
