//! Rescheduling a job's fragments: moving vnodes among its existing actors (RisingWave's
//! `RescheduleFragment`, scaling without new actors), and the wait that makes it safe while the job backfills:
//! the place of epochlab's own reschedule-unpinned check (the wait is RisingWave's `wait_epoch_commit` from PR
//! #5517, removed by #20493; no RisingWave bug is filed under it). A no-shuffle job is not rescheduled on its
//! own; recovery's scale-in (`scale.rs`) is where RisingWave #19138 lives.
//!
//! Meta runs it as RisingWave's `run_config_change_command_with_pause`: three commands queued at once, on
//! consecutive barriers.
//! 1. `Pause(ConfigChange)`: every actor stops reading (DML waits, backfills read no snapshot). It is a
//!    checkpoint, and no other barrier is injected until it has completed: its epoch is committed, and its
//!    post-collect waits until every node has pinned that commit ([`ConfigChangeWait`]).
//! 2. `RescheduleFragment`: an `Update` mutation with the actors' new vnode bitmaps and the new hash mappings of
//!    the upstream dispatchers. Each actor takes its new bitmap after the barrier; a backfill reads the progress
//!    rows of the vnodes it gained, which their old owner wrote (and the Pause's commit holds).
//! 3. `Resume`.
//!
//! Meta's catalog takes the new bitmaps when the Update's barrier is collected (a recovery before that rebuilds
//! the actors with the old ones), and its progress tracker waits again for every backfill actor of the job
//! (RisingWave's `refresh_after_reschedule`): each reports as its new vnodes are done.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use epochlab_barrier::{BarrierError, BarrierResult, Command, DispatcherUpdate, PausedReason};
use epochlab_common::plan::ActorMapping;
use epochlab_common::{ActorId, Bitmap, Epoch, TableId, WorkerId, event, vspan};
use epochlab_common::{toggle, trace};
use epochlab_rpc::Request;
use futures::future::join_all;
use tracing::Instrument;

use crate::catalog::{Catalog, Relation, RelationKind};
use crate::meta::{DdlError, MetaInner, MetaNode};

impl Relation {
    /// The job's first fragment with vnode ownership rotated by `k`: the owner of vnode `v` becomes the actor
    /// that owned `v + k` (mod the vnode count). Each actor keeps as many vnodes; with two actors or more and
    /// `k` not a multiple of the count, some vnodes change owners.
    pub fn rotated_vnodes(&self, k: usize) -> BTreeMap<ActorId, Arc<Bitmap>> {
        let n = self.desc.vnode_count.get();
        self.actors
            .iter()
            .map(|a| {
                let bools: Vec<bool> = (0..n).map(|v| a.vnodes.is_set((v + k) % n)).collect();
                (a.actor_id, Arc::new(Bitmap::from_bools(&bools)))
            })
            .collect()
    }
}

/// Why bitmaps given to [`MetaNode::reschedule`] are not a new assignment of the job's vnodes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadAssignment {
    #[error("the bitmaps must name exactly the actors {actors:?} of {name}")]
    Actors { name: String, actors: Vec<ActorId> },
    #[error("actor {actor}: a bitmap of {len} vnodes, not {count}")]
    Size {
        actor: ActorId,
        len: usize,
        count: usize,
    },
    #[error("vnode {vnode} has {owners} owners: the bitmaps must partition the vnodes")]
    NotAPartition { vnode: usize, owners: u32 },
}

/// Whether `bitmaps` is a new assignment of `rel`'s vnodes: one bitmap per actor of its first fragment, the
/// vnode count long, partitioning the vnodes.
fn check_assignment(
    rel: &Relation,
    bitmaps: &BTreeMap<ActorId, Arc<Bitmap>>,
) -> Result<(), BadAssignment> {
    let count = rel.desc.vnode_count.get();
    let actors: BTreeSet<ActorId> = rel.actors.iter().map(|a| a.actor_id).collect();
    if !bitmaps.keys().copied().eq(actors.iter().copied()) {
        return Err(BadAssignment::Actors {
            name: rel.name.clone(),
            actors: actors.into_iter().collect(),
        });
    }
    let mut owners = vec![0u32; count];
    for (actor, b) in bitmaps {
        if b.len() != count {
            return Err(BadAssignment::Size {
                actor: *actor,
                len: b.len(),
                count,
            });
        }
        for v in b.iter_ones() {
            owners[v] += 1;
        }
    }
    match owners.iter().position(|&o| o != 1) {
        Some(vnode) => Err(BadAssignment::NotAPartition {
            vnode,
            owners: owners[vnode],
        }),
        None => Ok(()),
    }
}

/// `moves=[4:+3-1 5:+1-3]`: per actor, vnodes gained and lost.
fn describe_moves(rel: &Relation, bitmaps: &BTreeMap<ActorId, Arc<Bitmap>>) -> String {
    let parts: Vec<String> = rel
        .actors
        .iter()
        .map(|a| {
            let new = &bitmaps[&a.actor_id];
            let gained = new.iter_ones().filter(|v| !a.vnodes.is_set(*v)).count();
            let lost = a.vnodes.iter_ones().filter(|v| !new.is_set(*v)).count();
            format!("{}:+{gained}-{lost}", a.actor_id)
        })
        .collect();
    parts.join(" ")
}

impl MetaNode {
    /// Give the actors of view or sink `id` the vnode bitmaps `bitmaps` (one per actor of its first fragment,
    /// partitioning the vnodes; a sink's own actors follow their backfill actors), on a Pause, an Update and a
    /// Resume barrier. Returns once the Resume is collected; an assignment that moves nothing returns at once.
    pub async fn reschedule(
        &self,
        id: TableId,
        bitmaps: BTreeMap<ActorId, Arc<Bitmap>>,
    ) -> Result<(), DdlError> {
        let inner = &self.inner;
        // RisingWave's reschedule lock: no job is being created (between its actors' build and its Add barrier)
        // while a reschedule runs, and one reschedule runs at a time.
        let _exclusive = inner.reschedule_lock.write().await;
        let Some((command, what)) = reschedule_command(&inner.catalog(), id, &bitmaps)? else {
            return Ok(());
        };
        let clock = inner.clock.clone();
        let span = vspan!(parent: trace::root(), "reschedule streaming job", clock, table_id = id.0 as i64);
        let commands = vec![
            Command::Pause(PausedReason::ConfigChange),
            command,
            Command::Resume,
        ];
        Ok(inner.run_traced(span, &what, commands).await?)
    }
}

impl MetaInner {
    /// Run a DDL's barrier `commands` in `span`: the event log says `what`, then how it ended, and the span
    /// ends or fails with it.
    pub(crate) async fn run_traced(
        &self,
        span: tracing::Span,
        what: &str,
        commands: Vec<Command>,
    ) -> BarrierResult<()> {
        event!(self.log, "ddl", "{what}");
        let result = self
            .scheduler
            .run_commands(commands)
            .instrument(span.clone())
            .await;
        match &result {
            Ok(()) => {
                event!(self.log, "ddl", "{what}: done");
                trace::end(&span, &self.clock);
            }
            Err(e) => {
                event!(self.log, "ddl", "{what}: failed: {e}");
                trace::fail(&span, &self.clock, &e.to_string());
            }
        }
        result
    }
}

/// The `RescheduleFragment` command that gives `id`'s actors `bitmaps`, and its description for the event log;
/// `None` when nothing moves.
fn reschedule_command(
    catalog: &Catalog,
    id: TableId,
    bitmaps: &BTreeMap<ActorId, Arc<Bitmap>>,
) -> Result<Option<(Command, String)>, DdlError> {
    let rel = catalog
        .get(id)
        .ok_or_else(|| DdlError::NotFound(format!("relation {id}")))?;
    if rel.kind == RelationKind::Table {
        return Err(DdlError::Invalid(format!(
            "table {} cannot be rescheduled: only views and sinks",
            rel.name
        )));
    }
    // RisingWave schedules a no-shuffle job with its upstream: it is not rescheduled on its own.
    if rel.scan_type.is_no_shuffle() {
        return Err(DdlError::Invalid(format!(
            "{} {} uses no-shuffle backfill: it takes its upstream's distribution",
            rel.kind.as_str(),
            rel.name
        )));
    }
    if rel.has_graph_fragments() {
        return Err(DdlError::Invalid(format!(
            "{} {} has several fragments: rescheduling them is not supported yet",
            rel.kind.as_str(),
            rel.name
        )));
    }
    check_assignment(rel, bitmaps)?;
    if rel.actors.iter().all(|a| bitmaps[&a.actor_id] == a.vnodes) {
        return Ok(None);
    }
    let mut vnode_bitmaps = bitmaps.clone();
    if let Some(sink) = &rel.sink_fragment {
        // No shuffle: sink actor i has the vnodes of backfill actor i.
        for (s, b) in sink.actors.iter().zip(&rel.actors) {
            vnode_bitmaps.insert(s.actor_id, bitmaps[&b.actor_id].clone());
        }
    }
    let pairs: Vec<(ActorId, Arc<Bitmap>)> = bitmaps.iter().map(|(a, b)| (*a, b.clone())).collect();
    let update = DispatcherUpdate {
        downstream_fragment: rel.fragment_id,
        mapping: Arc::new(ActorMapping::from_bitmaps(&pairs)),
    };
    let upstream = rel.upstream.and_then(|u| catalog.get(u));
    let dispatchers = upstream
        .iter()
        .flat_map(|up| up.actors.iter())
        .map(|a| (a.actor_id, vec![update.clone()]))
        .collect();
    let command = Command::RescheduleFragment {
        job_id: id,
        vnode_bitmaps,
        dispatchers,
    };
    let what = format!(
        "reschedule {} {} id={id} moves=[{}]",
        rel.kind.as_str(),
        rel.name,
        describe_moves(rel, bitmaps)
    );
    Ok(Some((command, what)))
}

toggle! {
    /// epochlab's reschedule-unpinned check: what the post-collect of a configuration change's Pause waits for
    /// before the change's barrier may go out. Read only by [`MetaInner::wait_for_config_change`].
    pub enum ConfigChangeWait {
        /// Before the fix: nothing beyond meta's own commit. The Update reaches an actor before its node has
        /// pinned the version that commits the Pause's epoch: the new owner of a vnode reads its progress (and
        /// the upstream snapshot) without the old owner's last writes.
        None,
        /// RisingWave's `wait_epoch_commit` for `PausedReason::ConfigChange`: every node with actors has pinned
        /// a version whose max committed epoch is at least the Pause's.
        #[default]
        EpochCommit,
    }
}

impl MetaInner {
    /// Post-collect of a configuration change's Pause of epoch `prev` (its barrier was sent to `nodes`): what
    /// [`ConfigChangeWait`] says to wait for before the change goes out.
    pub(crate) async fn wait_for_config_change(
        &self,
        prev: Epoch,
        nodes: Vec<WorkerId>,
    ) -> BarrierResult<()> {
        match self.config.toggles.get::<ConfigChangeWait>() {
            ConfigChangeWait::None => Ok(()),
            ConfigChangeWait::EpochCommit => {
                let waits = nodes
                    .iter()
                    .map(|w| self.call(*w, Request::WaitEpochCommit { epoch: prev }));
                for result in join_all(waits).await {
                    if let Err(e) = result {
                        return Err(BarrierError::Rpc {
                            worker: e.worker,
                            rpc: "wait_epoch_commit",
                            message: e.source.to_string(),
                        });
                    }
                }
                event!(
                    self.log,
                    "wait epoch commit",
                    "epoch={prev} nodes={:?}",
                    nodes.iter().map(|w| w.0).collect::<Vec<_>>()
                );
                Ok(())
            }
        }
    }

    /// Post-collect of a reschedule: the catalog takes the new bitmaps, and the progress tracker waits again
    /// for every backfill actor of the job (a job dropped meanwhile is gone from both).
    pub(crate) fn apply_reschedule(
        &self,
        job: TableId,
        vnode_bitmaps: &BTreeMap<ActorId, Arc<Bitmap>>,
    ) {
        if let Some(rel) = self.catalog().relations.get_mut(&job) {
            for a in rel.all_actors_mut() {
                if let Some(b) = vnode_bitmaps.get(&a.actor_id) {
                    a.vnodes = b.clone();
                }
            }
        }
        self.tracker().refresh_after_reschedule(job);
    }
}

#[cfg(test)]
mod tests {
    use crate::catalog::StreamScanType;
    use epochlab_common::{FragmentId, VnodeCount};

    use super::*;
    use crate::catalog::{ActorPlacement, JobState};

    fn view(actors: usize, vnodes: u32) -> Relation {
        let count = VnodeCount::new(vnodes).unwrap();
        let desc = epochlab_common::catalog::TableDesc::hash(
            TableId(2),
            vec![epochlab_common::DataType::Int64],
            vec![0],
            vec![0],
            count,
        );
        Relation {
            id: TableId(2),
            name: "m".into(),
            kind: RelationKind::MaterializedView,
            desc: Arc::new(desc),
            upstream: Some(TableId(1)),
            state: JobState::Creating,
            fragments_initial: false,
            fragment_id: FragmentId(2),
            actors: Bitmap::partition(count.get(), actors)
                .into_iter()
                .enumerate()
                .map(|(i, b)| ActorPlacement {
                    actor_id: ActorId(10 + i as u32),
                    worker: WorkerId(1),
                    vnodes: Arc::new(b),
                })
                .collect(),
            sink: None,
            rate_limit: None,
            sink_rate_limit: None,
            progress_table: None,
            scan_type: StreamScanType::ArrangementBackfill,
            background: true,
            sink_fragment: None,
            graph: None,
        }
    }

    /// A rotation keeps a partition and each actor's share; by half the vnodes, two actors swap theirs.
    #[test]
    fn rotations_partition_the_vnodes() {
        let rel = view(3, 16);
        for k in 0..20 {
            let rotated = rel.rotated_vnodes(k);
            check_assignment(&rel, &rotated).unwrap();
            for a in &rel.actors {
                assert_eq!(rotated[&a.actor_id].count_ones(), a.vnodes.count_ones());
            }
        }
        let two = view(2, 16);
        let swapped = two.rotated_vnodes(8);
        assert_eq!(swapped[&ActorId(10)], two.actors[1].vnodes);
        assert_eq!(swapped[&ActorId(11)], two.actors[0].vnodes);
        assert_eq!(
            describe_moves(&two, &swapped),
            "10:+8-8 11:+8-8",
            "every vnode moves"
        );
    }

    /// Bitmaps that do not partition the vnodes, or name other actors, are refused.
    #[test]
    fn a_bad_assignment_is_refused() {
        let rel = view(2, 8);
        let mut both = rel.rotated_vnodes(0);
        both.insert(ActorId(11), Arc::new(Bitmap::ones(8)));
        let err = check_assignment(&rel, &both).unwrap_err();
        assert_eq!(
            err,
            BadAssignment::NotAPartition {
                vnode: 0,
                owners: 2
            }
        );
        let mut missing = rel.rotated_vnodes(0);
        missing.remove(&ActorId(11));
        assert!(matches!(
            check_assignment(&rel, &missing),
            Err(BadAssignment::Actors { .. })
        ));
        let mut short = rel.rotated_vnodes(0);
        short.insert(ActorId(11), Arc::new(Bitmap::zeros(4)));
        assert!(matches!(
            check_assignment(&rel, &short),
            Err(BadAssignment::Size { len: 4, .. })
        ));
    }
}
