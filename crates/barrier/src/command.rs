use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use epochlab_common::catalog::TableDesc;
use epochlab_common::{ActorId, Bitmap, Epoch, TableId, WorkerId};
use epochlab_storage::SyncResult;

use crate::barrier::{AddMutation, BarrierKind, DispatcherUpdate, Mutation, UpdateMutation};

/// Which actors, on which node, a barrier is sent to (sources) and collected from (all).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InflightActorInfo {
    pub actors: BTreeMap<WorkerId, BTreeSet<ActorId>>,
    /// Actors with no upstream actor: the local barrier manager pushes barriers into them.
    pub sources: BTreeMap<WorkerId, BTreeSet<ActorId>>,
}

impl InflightActorInfo {
    pub fn nodes(&self) -> impl Iterator<Item = WorkerId> + '_ {
        self.actors
            .iter()
            .filter(|(_, a)| !a.is_empty())
            .map(|(w, _)| *w)
    }

    pub fn actor_count(&self) -> usize {
        self.actors.values().map(BTreeSet::len).sum()
    }

    fn add(
        map: &mut BTreeMap<WorkerId, BTreeSet<ActorId>>,
        add: &BTreeMap<WorkerId, BTreeSet<ActorId>>,
    ) {
        for (w, actors) in add {
            map.entry(*w).or_default().extend(actors.iter().copied());
        }
    }

    fn remove(map: &mut BTreeMap<WorkerId, BTreeSet<ActorId>>, remove: &BTreeSet<ActorId>) {
        for actors in map.values_mut() {
            actors.retain(|a| !remove.contains(a));
        }
        map.retain(|_, a| !a.is_empty());
    }
}

/// Why the cluster is paused (RisingWave's `PausedReason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PausedReason {
    /// Before a configuration change (a reschedule): the Pause's barrier stops other barriers until it is
    /// completed, and meta's post-collect makes sure every node has its epoch committed before the change.
    ConfigChange,
    /// Asked for (`ALTER SYSTEM SET pause_on_next_bootstrap`, tests): no more than a Pause mutation.
    Manual,
}

/// What a barrier carries out (RisingWave's `Command`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// A barrier with an optional plain mutation (periodic barriers, `FLUSH`).
    Plain(Option<Mutation>),
    Pause(PausedReason),
    Resume,
    /// Create a table, view or sink: its actors are built before the barrier and collect it.
    CreateStreamingJob {
        job_id: TableId,
        actors: BTreeMap<WorkerId, BTreeSet<ActorId>>,
        sources: BTreeMap<WorkerId, BTreeSet<ActorId>>,
        mutation: AddMutation,
    },
    /// Stop the jobs' actors. `unregistered_table_ids` are the jobs' state tables, which meta unregisters from
    /// storage once the stop is collected (or, depending on the drop mode, earlier).
    DropStreamingJobs {
        job_ids: Vec<TableId>,
        actors: BTreeMap<WorkerId, BTreeSet<ActorId>>,
        unregistered_table_ids: Vec<TableId>,
    },
    /// `CANCEL JOB`: stop a creating job's actors (RisingWave's `CancelStreamingJob`). Like a drop, it is
    /// accepted while recovery runs, and recovery pre-applies it; `unregistered_table_ids` are the job's state
    /// tables.
    CancelStreamingJob {
        job_id: TableId,
        actors: BTreeMap<WorkerId, BTreeSet<ActorId>>,
        unregistered_table_ids: Vec<TableId>,
    },
    Throttle(BTreeMap<ActorId, Option<u32>>),
    /// Move vnodes among the existing actors of a job's fragments (RisingWave's `RescheduleFragment`, scaling
    /// without new actors): an `Update` mutation with the actors' new vnode bitmaps and the new hash mappings
    /// of the upstream dispatchers. Meta applies it to its catalog once the barrier is collected.
    RescheduleFragment {
        job_id: TableId,
        vnode_bitmaps: BTreeMap<ActorId, Arc<Bitmap>>,
        dispatchers: BTreeMap<ActorId, Vec<DispatcherUpdate>>,
    },
    /// Give a table a new schema (`ALTER TABLE .. ADD COLUMN`; RisingWave's `ReplaceTable`, which builds the
    /// table's actors anew; here they keep their ids): an `Update` mutation with the table's new desc, taken
    /// by its materialize and by every backfill reading it after the barrier. Meta applies it to its catalog
    /// once the barrier is collected.
    ReplaceTable {
        table_id: TableId,
        desc: Arc<TableDesc>,
    },
}

impl Command {
    pub fn name(&self) -> &'static str {
        match self {
            Command::Plain(_) => "plain",
            Command::Pause(_) => "pause",
            Command::Resume => "resume",
            Command::CreateStreamingJob { .. } => "create streaming job",
            Command::DropStreamingJobs { .. } => "drop streaming jobs",
            Command::CancelStreamingJob { .. } => "cancel streaming job",
            Command::Throttle(_) => "throttle",
            Command::RescheduleFragment { .. } => "reschedule fragment",
            Command::ReplaceTable { .. } => "replace table",
        }
    }

    /// Whether no other barrier may be injected while this one is in flight (RisingWave's
    /// `should_pause_inject_barrier`): a configuration change's Pause must complete, its post-collect
    /// included, before the change's own barrier goes out.
    pub fn should_pause_inject_barrier(&self) -> bool {
        matches!(self, Command::Pause(PausedReason::ConfigChange))
    }

    /// Every command but a plain barrier or a resume forces a checkpoint (RisingWave's `need_checkpoint`).
    pub fn need_checkpoint(&self) -> bool {
        !matches!(self, Command::Plain(None) | Command::Resume)
    }

    /// Drops (and cancels) are accepted while the scheduler is blocked for recovery.
    pub fn is_drop(&self) -> bool {
        matches!(
            self,
            Command::DropStreamingJobs { .. } | Command::CancelStreamingJob { .. }
        )
    }

    /// The state tables a drop or cancel leaves to be unregistered (none for other commands).
    pub fn unregistered_table_ids(&self) -> &[TableId] {
        match self {
            Command::DropStreamingJobs {
                unregistered_table_ids,
                ..
            }
            | Command::CancelStreamingJob {
                unregistered_table_ids,
                ..
            } => unregistered_table_ids,
            _ => &[],
        }
    }

    /// The actors a drop or cancel stops (none for other commands).
    pub fn stopped_actors(&self) -> Option<&BTreeMap<WorkerId, BTreeSet<ActorId>>> {
        match self {
            Command::DropStreamingJobs { actors, .. }
            | Command::CancelStreamingJob { actors, .. } => Some(actors),
            _ => None,
        }
    }

    pub fn to_mutation(&self) -> Option<Mutation> {
        match self {
            Command::Plain(m) => m.clone(),
            Command::Pause(_) => Some(Mutation::Pause),
            Command::Resume => Some(Mutation::Resume),
            Command::CreateStreamingJob { mutation, .. } => Some(Mutation::Add(mutation.clone())),
            Command::DropStreamingJobs { actors, .. }
            | Command::CancelStreamingJob { actors, .. } => {
                Some(Mutation::Stop(actors.values().flatten().copied().collect()))
            }
            Command::Throttle(t) => Some(Mutation::Throttle(t.clone())),
            Command::RescheduleFragment {
                vnode_bitmaps,
                dispatchers,
                ..
            } => Some(Mutation::Update(UpdateMutation {
                dispatchers: dispatchers.clone(),
                vnode_bitmaps: vnode_bitmaps.clone(),
                ..UpdateMutation::default()
            })),
            Command::ReplaceTable { table_id, desc } => Some(Mutation::Update(UpdateMutation {
                table_descs: [(*table_id, desc.clone())].into(),
                ..UpdateMutation::default()
            })),
        }
    }

    /// The actor info a barrier of this command is sent with: new actors collect their creating barrier.
    pub fn pre_apply(&self, info: &InflightActorInfo) -> InflightActorInfo {
        let mut info = info.clone();
        if let Command::CreateStreamingJob {
            actors, sources, ..
        } = self
        {
            InflightActorInfo::add(&mut info.actors, actors);
            InflightActorInfo::add(&mut info.sources, sources);
        }
        info
    }

    /// The actor info after this command's barrier: stopped actors collect no more barriers.
    pub fn post_apply(&self, info: &InflightActorInfo) -> InflightActorInfo {
        let mut info = info.clone();
        if let Some(actors) = self.stopped_actors() {
            let stopped: BTreeSet<ActorId> = actors.values().flatten().copied().collect();
            InflightActorInfo::remove(&mut info.actors, &stopped);
            InflightActorInfo::remove(&mut info.sources, &stopped);
        }
        info
    }
}

/// One barrier's command with its epochs and the actors it was sent to.
#[derive(Clone, Debug)]
pub struct CommandContext {
    pub prev_epoch: Epoch,
    pub curr_epoch: Epoch,
    pub kind: BarrierKind,
    pub command: Command,
    pub info: InflightActorInfo,
}

/// A backfill actor's progress, reported with the barrier it was made in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateMviewProgress {
    pub backfill_actor_id: ActorId,
    pub done: bool,
    pub consumed_epoch: Epoch,
    pub consumed_rows: u64,
}

/// A compute node's answer to "is epoch `prev_epoch` complete?".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BarrierCompleteResponse {
    pub worker: WorkerId,
    pub prev_epoch: Epoch,
    /// The synced data (checkpoint barriers only).
    pub synced: Option<SyncResult>,
    pub create_progress: Vec<CreateMviewProgress>,
}
