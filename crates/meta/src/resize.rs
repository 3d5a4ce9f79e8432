//! `ALTER .. SET PARALLELISM`: a job's fragments take a new number of actors (RisingWave's
//! `generate_table_resize_plan` for one job, then its reschedule).
//!
//! Which fragments change is RisingWave's rule: every fragment of the job that is hash-distributed and not the
//! target of a no-shuffle edge gets `n` actors, and each fragment behind a no-shuffle edge from a changed one
//! (in the job, its sink's own fragment, or another job's no-shuffle backfill) follows it actor for actor, so a
//! job reading by no-shuffle keeps no parallelism of its own. A singleton stays one actor; a job (or a
//! follower) still being created is refused, its backfill being tracked by actor.
//!
//! How it is applied is epochlab's own: RisingWave reschedules online (`RescheduleFragment` with actors added
//! and removed, merges and dispatchers updated on one barrier); here meta writes the new actors to its catalog
//! and asks the barrier manager for a recovery, which rebuilds every actor from the catalog, as recovery's
//! scale-in does (`scale.rs`). The state is in storage by vnode, so a new actor reads what its vnodes' old
//! owner committed; what was not committed is lost as in any recovery, and the DDL returns once the
//! recovery is done.

use std::time::Duration;

use epochlab_barrier::SchedulerStatus;
use epochlab_common::plan::DispatchStrategy;
use epochlab_common::{FragmentId, TableId, event};

use crate::catalog::{ActorPlacement, Catalog, JobState, Relation};
use crate::meta::{DdlError, MetaInner, MetaNode};

/// A fragment of a job.
type Site = (TableId, FragmentId);

impl Relation {
    /// The actors of fragment `id` of the job (its first, a graph fragment, or its sink's own).
    fn fragment_actors_mut(&mut self, id: FragmentId) -> Option<&mut Vec<ActorPlacement>> {
        if id == self.fragment_id {
            return Some(&mut self.actors);
        }
        if let Some(f) = self.sink_fragment.as_mut().filter(|f| f.fragment_id == id) {
            return Some(&mut f.actors);
        }
        let g = self.graph.as_mut()?;
        let f = g.fragments.iter_mut().find(|f| f.fragment_id == id)?;
        Some(&mut f.actors)
    }

    fn fragment_actors(&self, id: FragmentId) -> Option<&[ActorPlacement]> {
        let mut r = self.all_fragments();
        r.find(|(f, _)| *f == id).map(|(_, a)| a)
    }

    /// Every fragment of the job with its actors, its sink's own included.
    fn all_fragments(&self) -> impl Iterator<Item = (FragmentId, &[ActorPlacement])> {
        let graph = self.graph.iter().flat_map(|g| {
            g.fragments
                .iter()
                .map(|f| (f.fragment_id, f.actors.as_slice()))
        });
        let sink = self
            .sink_fragment
            .iter()
            .map(|f| (f.fragment_id, f.actors.as_slice()));
        std::iter::once((self.fragment_id, self.actors.as_slice()))
            .chain(graph)
            .chain(sink)
    }

    /// The job's fragments that read by no-shuffle: behind a no-shuffle edge, a sink's own fragment, or
    /// holding a no-shuffle backfill.
    fn no_shuffle_targets(&self) -> Vec<FragmentId> {
        let mut out: Vec<FragmentId> = self.sink_fragment.iter().map(|f| f.fragment_id).collect();
        out.extend(
            self.scan_sites()
                .iter()
                .filter(|s| s.scan_type.is_no_shuffle())
                .map(|s| s.fragment_id),
        );
        if let Some(g) = &self.graph {
            let edges = g
                .edges
                .iter()
                .filter(|e| e.dispatch == DispatchStrategy::NoShuffle);
            out.extend(edges.map(|e| self.fragment_by_local(e.downstream).0));
        }
        out
    }

    /// Whether fragment `id` is planned as a singleton.
    fn is_single(&self, id: FragmentId) -> bool {
        match &self.graph {
            Some(g) if id == self.fragment_id => g.root_single,
            Some(g) => g.fragments.iter().any(|f| f.fragment_id == id && f.single),
            None => false,
        }
    }
}

/// The fragments that follow fragment `at` of `job` actor for actor: behind its no-shuffle edges in the job,
/// the sink's own fragment after the first, and other jobs' no-shuffle backfills of the job's table.
fn followers(catalog: &Catalog, (job, at): Site) -> Vec<Site> {
    let rel = &catalog.relations[&job];
    let mut out = Vec::new();
    if at == rel.fragment_id {
        out.extend(rel.sink_fragment.iter().map(|f| (job, f.fragment_id)));
        for d in catalog.downstreams(job) {
            let sites = d.scan_sites();
            let backfills = sites
                .iter()
                .filter(|s| s.upstream == job && s.scan_type.is_no_shuffle());
            out.extend(backfills.map(|s| (d.id, s.fragment_id)));
        }
    }
    if let Some(g) = &rel.graph {
        let local = rel.local_of(at);
        for e in g
            .edges
            .iter()
            .filter(|e| e.dispatch == DispatchStrategy::NoShuffle)
        {
            if Some(e.upstream) == local {
                out.push((job, rel.fragment_by_local(e.downstream).0));
            }
        }
    }
    out
}

impl Relation {
    fn local_of(&self, id: FragmentId) -> Option<u32> {
        let g = self.graph.as_ref()?;
        if id == self.fragment_id {
            return Some(g.root);
        }
        g.fragments
            .iter()
            .find(|f| f.fragment_id == id)
            .map(|f| f.local_id)
    }
}

/// Why a job's parallelism cannot change now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResizeError {
    #[error("cannot alter the parallelism of {0}: it is being created")]
    Creating(String),
    #[error("the parallelism must be at least 1")]
    Zero,
    /// More actors than vnodes: an actor would own none. (RisingWave at f21fb9b7915 refuses more actors than
    /// the cluster's parallel units, `Not enough ParallelUnits available for fragment ..`; epochlab does not
    /// yet: the corpus runs on 3 units where RisingWave's simulation has 6, README Limits.)
    #[error("the parallelism {n} is more than the {vnodes} vnodes of fragment {fragment}")]
    MoreThanVnodes {
        n: usize,
        vnodes: usize,
        fragment: FragmentId,
    },
}

impl MetaInner {
    /// Give every fragment of `job` that RisingWave's rule changes `n` new actors, and its followers as many
    /// (see the module doc). Returns the fragments changed, none when every one has `n` already.
    fn resize_job(&self, job: TableId, n: usize) -> Result<Vec<Site>, DdlError> {
        let mut catalog = self.catalog();
        let rel = catalog
            .get(job)
            .ok_or_else(|| DdlError::NotFound(format!("job {job}")))?;
        // A job being created is refused whatever its plan changes (a no-shuffle view's changes none).
        if rel.state == JobState::Creating {
            let name = rel.name.clone();
            return Err(DdlError::Invalid(ResizeError::Creating(name).to_string()));
        }
        let targets = rel.no_shuffle_targets();
        let roots: Vec<FragmentId> = rel
            .all_fragments()
            .filter(|(f, a)| !targets.contains(f) && !rel.is_single(*f) && a.len() != n)
            .map(|(f, _)| f)
            .collect();
        // Never more actors than vnodes: an actor without vnodes has nothing to own.
        let vnodes = self.config.vnode_count.get();
        if let Some(&fragment) = roots.first().filter(|_| n > vnodes) {
            let e = ResizeError::MoreThanVnodes {
                n,
                vnodes,
                fragment,
            };
            return Err(DdlError::Invalid(e.to_string()));
        }
        let mut plan: Vec<(Site, Option<Site>)> = Vec::new();
        let mut stack: Vec<(Site, Option<Site>)> =
            roots.iter().map(|f| ((job, *f), None)).collect();
        while let Some((site, like)) = stack.pop() {
            stack.extend(
                followers(&catalog, site)
                    .into_iter()
                    .map(|f| (f, Some(site))),
            );
            plan.push((site, like));
        }
        if let Some(((j, _), _)) = plan
            .iter()
            .find(|((j, _), _)| catalog.relations[j].state == JobState::Creating)
        {
            let name = catalog.relations[j].name.clone();
            return Err(DdlError::Invalid(ResizeError::Creating(name).to_string()));
        }
        for ((j, f), like) in &plan {
            let actors = match like {
                // One offset for the job: a table's DML fragment is placed as its materializing one.
                None => self.place_actors(n, j.0 as usize)?,
                Some((lj, lf)) => {
                    let leader = catalog.relations[lj].fragment_actors(*lf);
                    self.actors_like(leader.expect("a planned fragment"))
                }
            };
            let rel = catalog.relations.get_mut(j).expect("a planned job");
            *rel.fragment_actors_mut(*f).expect("a planned fragment") = actors;
        }
        Ok(plan.into_iter().map(|(site, _)| site).collect())
    }
}

impl MetaNode {
    /// `ALTER .. SET PARALLELISM = n` of `job` (see the module doc): returns once the recovery that builds the
    /// new actors is done; at once when nothing changes.
    pub async fn alter_parallelism(&self, job: TableId, n: usize) -> Result<(), DdlError> {
        if n == 0 {
            return Err(DdlError::Invalid(ResizeError::Zero.to_string()));
        }
        let inner = &self.inner;
        let _exclusive = inner.reschedule_lock.write().await;
        let generation = self.generation();
        let changed = inner.resize_job(job, n)?;
        if changed.is_empty() {
            return Ok(());
        }
        let sites: Vec<String> = changed.iter().map(|(j, f)| format!("{j}/{f}")).collect();
        let what = format!(
            "alter parallelism job={job} n={n} fragments=[{}]",
            sites.join(" ")
        );
        event!(inner.log, "ddl", "{what}");
        inner.scheduler.request_recovery(&what);
        while self.generation() == generation || inner.scheduler.status() != SchedulerStatus::Ready
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        event!(inner.log, "ddl", "{what}: done");
        Ok(())
    }
}
