//! Plans: what meta sends a compute node to build an actor (RisingWave's `StreamActor` and `StreamNode`
//! protos), and the dispatcher descriptions that `Add` mutations carry to upstream actors.

use std::sync::Arc;
use std::time::Duration;

use crate::catalog::TableDesc;
use crate::{ActorId, Bitmap, DataType, FragmentId, TableId, VirtualNode, VnodeCount};

/// vnode → the actor that owns it, for one downstream fragment (RisingWave's `ActorMapping`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActorMapping {
    owners: Vec<ActorId>,
}

impl ActorMapping {
    /// From each actor's vnode bitmap; the bitmaps must partition the vnodes.
    pub fn from_bitmaps(actors: &[(ActorId, Arc<Bitmap>)]) -> Self {
        let count = actors.first().map_or(0, |(_, b)| b.len());
        let mut owners = vec![None; count];
        for (actor, bitmap) in actors {
            for v in bitmap.iter_ones() {
                assert!(owners[v].is_none(), "vnode {v} owned twice");
                owners[v] = Some(*actor);
            }
        }
        Self {
            owners: owners
                .into_iter()
                .enumerate()
                .map(|(v, o)| o.unwrap_or_else(|| panic!("vnode {v} has no owner")))
                .collect(),
        }
    }

    pub fn owner(&self, vnode: VirtualNode) -> ActorId {
        self.owners[vnode.to_index()]
    }

    pub fn vnode_count(&self) -> usize {
        self.owners.len()
    }
}

/// How a job over a table reads its upstream (RisingWave's `StreamScanType`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StreamScanType {
    /// Arrangement backfill: the job's own parallelism, a hash exchange from the upstream, progress per vnode.
    #[default]
    ArrangementBackfill,
    /// No-shuffle backfill (RisingWave's `Backfill`): the upstream's distribution, one upstream actor per
    /// backfill actor through a `NoShuffle` dispatcher, one position per actor. RisingWave plans it where no
    /// reshuffle is needed (a `SINK INTO TABLE`, a view over a view with the same distribution, or with
    /// `streaming_use_arrangement_backfill` off).
    Backfill,
}

impl StreamScanType {
    /// Whether a job backfilling with it may be rescheduled (RisingWave's `is_reschedulable`, PR #23998).
    pub fn is_reschedulable(self) -> bool {
        match self {
            StreamScanType::ArrangementBackfill => true,
            StreamScanType::Backfill => false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DispatcherKind {
    /// Rows go to the actor owning the vnode of their distribution key.
    Hash {
        dist_key_indices: Vec<usize>,
        mapping: Arc<ActorMapping>,
        vnode_count: VnodeCount,
    },
    /// Every row to every downstream actor.
    Broadcast,
    /// One downstream actor with the same vnodes.
    NoShuffle,
}

/// One dispatcher of an actor: its downstream fragment's actors and how rows are routed to them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatcherDesc {
    /// The downstream fragment; an actor has at most one dispatcher per downstream fragment.
    pub downstream_fragment: FragmentId,
    pub kind: DispatcherKind,
    pub downstream_actors: Vec<ActorId>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SinkKind {
    /// Drops everything (RisingWave's `blackhole` connector).
    Blackhole,
    /// Applies the changes to an in-memory copy that checks can read.
    Collecting,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkDesc {
    pub sink_id: TableId,
    pub kind: SinkKind,
    /// Positions of the pk in the sink's input rows.
    pub pk_indices: Vec<usize>,
    /// Simulated time the sink spends on each chunk: a slow sink makes barrier latency high.
    pub chunk_delay: Duration,
}

/// An executor tree, leaves first built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamNode {
    /// The table's DML entry: emits DML chunks between the barriers injected by the local barrier manager.
    Dml {
        table_id: TableId,
        column_types: Vec<DataType>,
    },
    /// N upstream actors, barriers aligned.
    Merge {
        upstream_fragment: FragmentId,
        upstream_actors: Vec<ActorId>,
    },
    /// A backfill over `input` (RisingWave's `StreamScan`): reads the upstream table's snapshot through a
    /// replicated copy, merges it with the upstream's changes, and persists its progress per vnode in
    /// `state_table`. `scan_type` says which executor: arrangement backfill over a Merge of every upstream
    /// actor, or no-shuffle backfill over a Merge of the one upstream actor with the same vnodes.
    StreamScan {
        scan_type: StreamScanType,
        upstream_table: Arc<TableDesc>,
        state_table: Arc<TableDesc>,
        /// Snapshot rows per second per actor; `None` is unlimited.
        rate_limit: Option<u32>,
        /// Rows per snapshot chunk at most.
        chunk_size: usize,
        input: Box<StreamNode>,
    },
    /// Write every change into a table's state table, then forward it.
    Materialize {
        table: Arc<TableDesc>,
        input: Box<StreamNode>,
    },
    /// Limit rows per second (on the simulation clock); `None` is unlimited.
    FlowControl {
        rate_limit: Option<u32>,
        input: Box<StreamNode>,
    },
    Sink {
        sink: SinkDesc,
        input: Box<StreamNode>,
    },
}

/// Everything a compute node needs to build one actor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamActorDesc {
    pub actor_id: ActorId,
    pub fragment_id: FragmentId,
    /// The streaming job (the table, view or sink) the actor belongs to.
    pub job_id: TableId,
    pub vnodes: Arc<Bitmap>,
    pub node: StreamNode,
    pub dispatchers: Vec<DispatcherDesc>,
}

impl StreamActorDesc {
    /// Whether the actor receives barriers from the local barrier manager (it has no upstream actor).
    pub fn is_source(&self) -> bool {
        fn has_dml(n: &StreamNode) -> bool {
            match n {
                StreamNode::Dml { .. } => true,
                StreamNode::Merge { .. } => false,
                StreamNode::StreamScan { input, .. }
                | StreamNode::Materialize { input, .. }
                | StreamNode::FlowControl { input, .. }
                | StreamNode::Sink { input, .. } => has_dml(input),
            }
        }
        has_dml(&self.node)
    }
}
