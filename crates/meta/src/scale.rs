//! Recovery's scale-in (RisingWave's `scale_actors` in recovery, `stream/scale.rs`): when compute nodes have
//! been removed from the cluster for good ([`crate::MetaNode::remove_worker`]), recovery gives each job fewer
//! actors instead of moving the removed nodes' actors whole (`migrate_actors`): an actor on a removed node is
//! dropped and its vnodes go to the nearest surviving actor before it in the fragment. Fragments joined by
//! `NoShuffle` edges (a table and its no-shuffle jobs, RisingWave's no-shuffle groups) are scaled as one: the
//! same merges in each, so that actor `i` of a no-shuffle job keeps the vnodes of its upstream's actor `i`;
//! a table's DML fragment, placed as its materializing fragment, takes the same merges.
//!
//! Which jobs still backfilling may be scaled is RisingWave #19138's toggle, [`RescheduleBackfilling`], read
//! only by [`MetaInner::scale_in`]. A no-shuffle backfill cannot take a scale-in: its actor recovers one state
//! for all its vnodes and asserts they agree (`All vnode partitions should have same state (no scale-in
//! supported)`), which they do not when actors at different stages were merged.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use epochlab_common::{ActorId, Bitmap, TableId, WorkerId, event, toggle};

use crate::catalog::{ActorPlacement, Catalog, JobState, Relation, RelationKind};
use crate::meta::MetaInner;

toggle! {
    /// RisingWave #19138: which jobs recovery's scale-in reschedules while they are still being created. Read
    /// only by [`MetaInner::scale_in`].
    pub enum RescheduleBackfilling {
        /// RisingWave v2.0.2 (#19138): recovery scales in unless a materialized view is being created in the
        /// background (`list_background_creating_jobs` listed materialized views only); otherwise every job is
        /// scaled, a `SINK INTO TABLE` still backfilling through no-shuffle backfill included.
        MviewsListed,
        /// RisingWave since PR #23998: every job is scaled except a background job whose backfill cannot be
        /// rescheduled (`collect_unreschedulable_backfill_jobs`, `StreamScanType::is_reschedulable`: no-shuffle
        /// backfill), with the jobs of its no-shuffle group; their actors on removed nodes move whole.
        #[default]
        ReschedulableOnly,
    }
}

/// The relation at the top of `rel`'s no-shuffle group: up its `NoShuffle` edges.
fn group_root(catalog: &Catalog, rel: &Relation) -> TableId {
    let mut id = rel.id;
    let mut at = rel;
    while at.scan_type.is_no_shuffle()
        && let Some(up) = at.upstream.and_then(|u| catalog.get(u))
    {
        id = up.id;
        at = up;
    }
    id
}

/// Every no-shuffle group of the catalog: its root and its members (the root first), in id order.
fn groups(catalog: &Catalog) -> BTreeMap<TableId, Vec<TableId>> {
    let mut out: BTreeMap<TableId, Vec<TableId>> = BTreeMap::new();
    for rel in catalog.relations.values() {
        out.entry(group_root(catalog, rel))
            .or_default()
            .push(rel.id);
    }
    for (root, members) in out.iter_mut() {
        members.sort_by_key(|m| (m != root, *m));
    }
    out
}

/// The merges that scale in `actors` off `removed` workers: each dropped index with the index that takes its
/// vnodes (the nearest surviving one before it, cyclically). Empty when nothing is on a removed worker, or
/// when nothing would survive (those actors move whole instead).
pub(crate) fn merges(
    actors: &[ActorPlacement],
    removed: &BTreeSet<WorkerId>,
) -> Vec<(usize, usize)> {
    let gone: Vec<bool> = actors.iter().map(|a| removed.contains(&a.worker)).collect();
    if !gone.contains(&true) || !gone.contains(&false) {
        return Vec::new();
    }
    let n = actors.len();
    (0..n)
        .filter(|&g| gone[g])
        .map(|g| {
            let to = (1..n).map(|k| (g + n - k) % n).find(|&i| !gone[i]);
            (g, to.expect("a survivor exists"))
        })
        .collect()
}

/// Apply `merges` to `actors`: each target takes the union of its vnodes and its dropped actors'; the dropped
/// actors leave. Returns the dropped actor ids.
fn apply_merges(actors: &mut Vec<ActorPlacement>, merges: &[(usize, usize)]) -> Vec<ActorId> {
    for &(from, to) in merges {
        let len = actors[to].vnodes.len();
        let union: Vec<bool> = (0..len)
            .map(|v| actors[to].vnodes.is_set(v) || actors[from].vnodes.is_set(v))
            .collect();
        actors[to].vnodes = Arc::new(Bitmap::from_bools(&union));
    }
    let dropped: BTreeSet<usize> = merges.iter().map(|(from, _)| *from).collect();
    let ids = dropped.iter().map(|&i| actors[i].actor_id).collect();
    let mut i = 0;
    actors.retain(|_| {
        i += 1;
        !dropped.contains(&(i - 1))
    });
    ids
}

impl MetaInner {
    /// Recovery's scale-in off the removed workers (before actors are moved off dead ones): per no-shuffle
    /// group that [`RescheduleBackfilling`] lets through, the same merges in every member and its sink
    /// fragment. Each creating job scaled has its progress tracker refreshed (RisingWave's
    /// `refresh_after_reschedule`): its backfill actors are the new set, all pending. Forgets the removed set.
    pub(crate) fn scale_in(&self) {
        let removed = std::mem::take(&mut self.cluster().removed);
        if removed.is_empty() {
            return;
        }
        let rule = self.config.toggles.get::<RescheduleBackfilling>();
        let mut catalog = self.catalog();
        let creating_mview = catalog.relations.values().any(|r| {
            r.state == JobState::Creating
                && r.background
                && r.kind == RelationKind::MaterializedView
        });
        if rule == RescheduleBackfilling::MviewsListed && creating_mview {
            event!(
                self.log,
                "recovery step",
                "scale in skipped: a background materialized view is creating"
            );
            return;
        }
        for (root, members) in groups(&catalog) {
            let unreschedulable = members.iter().any(|m| {
                let r = &catalog.relations[m];
                r.state == JobState::Creating && !r.scan_type.is_reschedulable()
            });
            let plan = merges(&catalog.relations[&root].actors, &removed);
            if plan.is_empty() {
                continue;
            }
            // A graph job's other fragments are not merged alike yet (a table's DML fragment, placed as its
            // materializing fragment, is): its actors on removed nodes move whole.
            if members.iter().any(|m| {
                let r = &catalog.relations[m];
                r.has_graph_fragments() && r.kind != RelationKind::Table
            }) {
                event!(
                    self.log,
                    "recovery step",
                    "scale in skipped group={root}: a job with several fragments"
                );
                continue;
            }
            if rule == RescheduleBackfilling::ReschedulableOnly && unreschedulable {
                event!(
                    self.log,
                    "recovery step",
                    "scale in skipped group={root}: a backfill that cannot be rescheduled"
                );
                continue;
            }
            for m in &members {
                self.scale_in_relation(&mut catalog, *m, &plan);
            }
        }
    }

    /// Scale in one relation (and its sink fragment) with `plan`; refresh its tracking if it is creating.
    fn scale_in_relation(&self, catalog: &mut Catalog, id: TableId, plan: &[(usize, usize)]) {
        let rel = catalog.relations.get_mut(&id).expect("a member of a group");
        let dropped = apply_merges(&mut rel.actors, plan);
        if let Some(sink) = &mut rel.sink_fragment {
            apply_merges(&mut sink.actors, plan);
        }
        for f in rel.graph.iter_mut().flat_map(|g| g.fragments.iter_mut()) {
            apply_merges(&mut f.actors, plan);
        }
        let kept: Vec<String> = rel
            .actors
            .iter()
            .map(|a| format!("{}:{}", a.actor_id, a.vnodes.count_ones()))
            .collect();
        event!(
            self.log,
            "recovery step",
            "scale in {} {} id={id} dropped={dropped:?} actors=[{}]",
            rel.kind.as_str(),
            rel.name,
            kept.join(" ")
        );
        let actors = rel.progress_actors();
        if rel.state == JobState::Creating && !actors.is_empty() {
            self.tracker().refresh_after_scale(id, actors);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn actors(workers: &[u32], vnodes: usize) -> Vec<ActorPlacement> {
        Bitmap::partition(vnodes, workers.len())
            .into_iter()
            .zip(workers)
            .enumerate()
            .map(|(i, (b, w))| ActorPlacement {
                actor_id: ActorId(i as u32 + 1),
                worker: WorkerId(*w),
                vnodes: Arc::new(b),
            })
            .collect()
    }

    /// An actor on a removed worker gives its vnodes to the surviving actor before it; the vnodes stay a
    /// partition.
    #[test]
    fn merges_keep_a_partition() {
        let removed = BTreeSet::from([WorkerId(2)]);
        let mut a = actors(&[1, 2, 3, 2], 16);
        let plan = merges(&a, &removed);
        assert_eq!(plan, vec![(1, 0), (3, 2)]);
        let dropped = apply_merges(&mut a, &plan);
        assert_eq!(dropped, vec![ActorId(2), ActorId(4)]);
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].vnodes.count_ones() + a[1].vnodes.count_ones(), 16);
        assert!((0..16).all(|v| a[0].vnodes.is_set(v) != a[1].vnodes.is_set(v)));
        // The first actor removed: the last survivor takes its vnodes.
        assert_eq!(merges(&actors(&[2, 1], 8), &removed), vec![(0, 1)]);
        // Nothing removed, or nothing left: no merge.
        assert!(merges(&actors(&[1, 3], 8), &removed).is_empty());
        assert!(merges(&actors(&[2, 2], 8), &removed).is_empty());
    }
}
