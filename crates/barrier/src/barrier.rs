use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use epochlab_common::catalog::TableDesc;
use epochlab_common::plan::{ActorMapping, DispatcherDesc};
use epochlab_common::{ActorId, Bitmap, EpochPair, FragmentId, TableId};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BarrierKind {
    /// The first barrier after bootstrap or recovery: no data belongs to `prev`; nothing is sealed or synced.
    Initial,
    /// Flushed locally only.
    Barrier,
    /// Synced to shared storage and committed by meta.
    Checkpoint,
}

impl BarrierKind {
    pub fn is_checkpoint(self) -> bool {
        self == BarrierKind::Checkpoint
    }

    pub fn as_str(self) -> &'static str {
        match self {
            BarrierKind::Initial => "initial",
            BarrierKind::Barrier => "barrier",
            BarrierKind::Checkpoint => "checkpoint",
        }
    }
}

/// The epoch's span, carried by the barrier so that every actor's work for it joins the epoch's trace.
/// Everything runs in one process, so the span itself travels where RisingWave sends a W3C `traceparent`.
/// Disabled when tracing is off. Barriers compare equal whatever their spans.
#[derive(Clone, Debug, Default)]
pub struct TracingContext(pub Option<tracing::Span>);

impl TracingContext {
    /// The span to parent work for this barrier under (a disabled span when there is none).
    pub fn span(&self) -> tracing::Span {
        self.0.clone().unwrap_or_else(tracing::Span::none)
    }
}

impl PartialEq for TracingContext {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for TracingContext {}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AddMutation {
    /// New dispatchers of existing (upstream) actors, towards the new job's actors.
    pub adds: BTreeMap<ActorId, Vec<DispatcherDesc>>,
    /// The actors this barrier creates.
    pub added_actors: BTreeSet<ActorId>,
    /// Start paused (recovery while paused).
    pub pause: bool,
}

/// A new hash mapping for an upstream actor's dispatcher towards a rescheduled fragment (RisingWave's
/// `DispatcherUpdate`): rows after the barrier go by it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatcherUpdate {
    /// The dispatcher's downstream fragment (an actor has at most one dispatcher per downstream fragment).
    pub downstream_fragment: FragmentId,
    pub mapping: Arc<ActorMapping>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpdateMutation {
    /// New dispatcher mappings of upstream actors, by actor.
    pub dispatchers: BTreeMap<ActorId, Vec<DispatcherUpdate>>,
    /// New vnode bitmaps of actors whose ownership changes (scaling).
    pub vnode_bitmaps: BTreeMap<ActorId, Arc<Bitmap>>,
    /// Actors that stop at this barrier.
    pub dropped_actors: BTreeSet<ActorId>,
    /// Tables that take a new schema at this barrier (`ALTER TABLE .. ADD COLUMN`, RisingWave's
    /// replace-table): the table's materialize and every backfill reading it take the new desc after the
    /// barrier; its columns are appended, its key the same.
    pub table_descs: BTreeMap<TableId, Arc<TableDesc>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    Add(AddMutation),
    /// Drop streaming jobs: these actors stop after this barrier.
    Stop(BTreeSet<ActorId>),
    Update(UpdateMutation),
    Pause,
    Resume,
    /// New rate limits per actor (`None` is unlimited).
    Throttle(BTreeMap<ActorId, Option<u32>>),
}

impl Mutation {
    pub fn name(&self) -> &'static str {
        match self {
            Mutation::Add(_) => "add",
            Mutation::Stop(_) => "stop",
            Mutation::Update(_) => "update",
            Mutation::Pause => "pause",
            Mutation::Resume => "resume",
            Mutation::Throttle(_) => "throttle",
        }
    }
}

#[derive(Clone, PartialEq, Eq)]
pub struct Barrier {
    pub epoch: EpochPair,
    pub kind: BarrierKind,
    pub mutation: Option<Arc<Mutation>>,
    pub tracing_context: TracingContext,
}

impl Barrier {
    pub fn new(epoch: EpochPair, kind: BarrierKind, mutation: Option<Mutation>) -> Self {
        Self {
            epoch,
            kind,
            mutation: mutation.map(Arc::new),
            tracing_context: TracingContext::default(),
        }
    }

    pub fn is_checkpoint(&self) -> bool {
        self.kind.is_checkpoint()
    }

    /// Whether `actor` stops after this barrier.
    pub fn is_stop(&self, actor: ActorId) -> bool {
        match self.mutation.as_deref() {
            Some(Mutation::Stop(actors)) => actors.contains(&actor),
            Some(Mutation::Update(u)) => u.dropped_actors.contains(&actor),
            _ => false,
        }
    }

    /// Every actor this barrier stops.
    pub fn all_stop_actors(&self) -> Option<&BTreeSet<ActorId>> {
        match self.mutation.as_deref() {
            Some(Mutation::Stop(actors)) => Some(actors),
            Some(Mutation::Update(u)) => Some(&u.dropped_actors),
            _ => None,
        }
    }

    /// Whether this barrier creates `actor` (a new job's actor, which must scan history).
    pub fn is_newly_added(&self, actor: ActorId) -> bool {
        matches!(self.mutation.as_deref(), Some(Mutation::Add(a)) if a.added_actors.contains(&actor))
    }

    pub fn is_pause_on_startup(&self) -> bool {
        matches!(
            self.mutation.as_deref(),
            Some(Mutation::Add(AddMutation { pause: true, .. }))
        )
    }

    pub fn is_pause(&self) -> bool {
        matches!(self.mutation.as_deref(), Some(Mutation::Pause))
    }

    pub fn is_resume(&self) -> bool {
        matches!(self.mutation.as_deref(), Some(Mutation::Resume))
    }

    /// The new vnode bitmap of `actor`, when this barrier rescales it.
    pub fn as_update_vnode_bitmap(&self, actor: ActorId) -> Option<Arc<Bitmap>> {
        match self.mutation.as_deref() {
            Some(Mutation::Update(u)) => u.vnode_bitmaps.get(&actor).cloned(),
            _ => None,
        }
    }

    /// The new schema of `table`, when this barrier replaces it.
    pub fn as_update_table_desc(&self, table: TableId) -> Option<Arc<TableDesc>> {
        match self.mutation.as_deref() {
            Some(Mutation::Update(u)) => u.table_descs.get(&table).cloned(),
            _ => None,
        }
    }

    /// The new mappings of `actor`'s dispatchers, when this barrier reschedules a fragment downstream of it.
    pub fn as_update_dispatchers(&self, actor: ActorId) -> Option<&[DispatcherUpdate]> {
        match self.mutation.as_deref() {
            Some(Mutation::Update(u)) => u.dispatchers.get(&actor).map(Vec::as_slice),
            _ => None,
        }
    }

    /// The new rate limit of `actor`, when this barrier throttles it.
    pub fn as_throttle(&self, actor: ActorId) -> Option<Option<u32>> {
        match self.mutation.as_deref() {
            Some(Mutation::Throttle(m)) => m.get(&actor).copied(),
            _ => None,
        }
    }

    /// New dispatchers for `actor`, when this barrier adds downstream jobs to it.
    pub fn as_add_dispatchers(&self, actor: ActorId) -> Option<&[DispatcherDesc]> {
        match self.mutation.as_deref() {
            Some(Mutation::Add(a)) => a.adds.get(&actor).map(Vec::as_slice),
            _ => None,
        }
    }

    pub fn mutation_name(&self) -> &'static str {
        self.mutation.as_deref().map_or("none", Mutation::name)
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Barrier {{ epoch: {:?}, mutation: {}, kind: {:?} }}",
            self.epoch,
            self.mutation_name(),
            self.kind
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use epochlab_common::Epoch;

    fn barrier(mutation: Mutation) -> Barrier {
        let epoch = EpochPair::new(Epoch::test(2), Epoch::test(1));
        Barrier::new(epoch, BarrierKind::Checkpoint, Some(mutation))
    }

    /// An `Update` (scaling) stops its dropped actors and hands new vnode bitmaps to the others.
    #[test]
    fn update_stops_dropped_actors_and_carries_bitmaps() {
        let bitmap = Arc::new(Bitmap::partition(8, 2).remove(0));
        let other = Arc::new(Bitmap::partition(8, 2).remove(1));
        let mapping = Arc::new(ActorMapping::from_bitmaps(&[
            (ActorId(1), bitmap.clone()),
            (ActorId(2), other),
        ]));
        let update = UpdateMutation {
            dispatchers: [(
                ActorId(3),
                vec![DispatcherUpdate {
                    downstream_fragment: FragmentId(7),
                    mapping: mapping.clone(),
                }],
            )]
            .into(),
            vnode_bitmaps: [(ActorId(1), bitmap.clone())].into(),
            dropped_actors: [ActorId(2)].into(),
            ..UpdateMutation::default()
        };
        let b = barrier(Mutation::Update(update));
        assert!(b.is_stop(ActorId(2)));
        assert!(!b.is_stop(ActorId(1)));
        assert_eq!(b.as_update_vnode_bitmap(ActorId(1)), Some(bitmap));
        assert_eq!(b.as_update_vnode_bitmap(ActorId(2)), None);
        assert!(b.all_stop_actors().is_some_and(|s| s.contains(&ActorId(2))));
        let updates = b.as_update_dispatchers(ActorId(3)).unwrap();
        assert_eq!(updates[0].mapping, mapping);
        assert!(b.as_update_dispatchers(ActorId(1)).is_none());
    }

    #[test]
    fn pause_and_resume_predicates() {
        assert!(barrier(Mutation::Pause).is_pause());
        assert!(!barrier(Mutation::Pause).is_resume());
        assert!(barrier(Mutation::Resume).is_resume());
    }
}
