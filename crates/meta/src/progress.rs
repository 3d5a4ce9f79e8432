//! Tracking creating jobs until their backfill is done (RisingWave's `CreateMviewProgressTracker`).

use std::collections::{BTreeMap, BTreeSet};

use epochlab_barrier::CreateMviewProgress;
use epochlab_common::{ActorId, TableId};
use thiserror::Error;
use tokio::sync::oneshot;

/// Why a foreground job's creation ended before its backfill finished.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum CreateAborted {
    #[error("it was dropped")]
    Dropped,
    #[error("it was cancelled")]
    Cancelled,
    #[error("recovery cleaned it up")]
    CleanedByRecovery,
    /// Out of the catalog (cleaned by a recovery, or dropped) while its actors were being built.
    #[error("it was removed while its actors were built")]
    RemovedWhileBuilding,
    #[error("its creation failed")]
    CreationFailed,
    #[error("meta stopped")]
    MetaStopped,
}

pub type Finished = oneshot::Receiver<Result<(), CreateAborted>>;

struct TrackedJob {
    /// Every backfill actor of the job.
    actors: BTreeSet<ActorId>,
    pending: BTreeSet<ActorId>,
    consumed_rows: BTreeMap<ActorId, u64>,
    waiter: Option<oneshot::Sender<Result<(), CreateAborted>>>,
}

#[derive(Default)]
pub struct CreateTracker {
    jobs: BTreeMap<TableId, TrackedJob>,
}

impl CreateTracker {
    /// Track a creating job; with `wait`, the returned receiver resolves when it is created (or fails).
    pub fn add(&mut self, job: TableId, actors: BTreeSet<ActorId>, wait: bool) -> Option<Finished> {
        let (tx, rx) = oneshot::channel();
        self.jobs.insert(
            job,
            TrackedJob {
                pending: actors.clone(),
                actors,
                consumed_rows: BTreeMap::new(),
                waiter: wait.then_some(tx),
            },
        );
        wait.then_some(rx)
    }

    /// Stop tracking; a waiting DDL fails with `why`.
    /// Stop tracking every job: each waiter learns `why`.
    pub fn drain(&mut self, why: CreateAborted) {
        let jobs: Vec<TableId> = self.jobs.keys().copied().collect();
        for job in jobs {
            self.remove(job, why);
        }
    }

    pub fn remove(&mut self, job: TableId, why: CreateAborted) {
        if let Some(j) = self.jobs.remove(&job)
            && let Some(w) = j.waiter
        {
            let _ = w.send(Err(why));
        }
    }

    /// Recovery (RisingWave's `recover_background_mv_progress`): track exactly `jobs`, the creating jobs that
    /// survive recovery, each with every backfill actor pending again. Reports collected before recovery came
    /// from epochs that may never commit (a `done` at a non-checkpoint epoch whose checkpoint failed): the
    /// rebuilt actors resume from the committed progress and report again. A job no longer listed fails its
    /// waiter as cleaned by recovery.
    pub fn recover(&mut self, jobs: Vec<(TableId, BTreeSet<ActorId>)>) {
        let mut old = std::mem::take(&mut self.jobs);
        for (job, actors) in jobs {
            let waiter = old.remove(&job).and_then(|j| j.waiter);
            self.jobs.insert(
                job,
                TrackedJob {
                    pending: actors.clone(),
                    actors,
                    consumed_rows: BTreeMap::new(),
                    waiter,
                },
            );
        }
        for (_, j) in old {
            if let Some(w) = j.waiter {
                let _ = w.send(Err(CreateAborted::CleanedByRecovery));
            }
        }
    }

    /// A reschedule of `job` was collected (RisingWave's `refresh_after_reschedule`): done reports were about
    /// the actors' old vnodes, so every backfill actor is pending again; each reports done once its new
    /// vnodes are (an actor with every vnode completed does so on its next barrier).
    pub fn refresh_after_reschedule(&mut self, job: TableId) {
        if let Some(j) = self.jobs.get_mut(&job) {
            j.pending = j.actors.clone();
        }
    }

    /// Recovery scaled `job` in (RisingWave's `refresh_after_reschedule`, PR #23998): its backfill actors are now
    /// `actors`, every one pending; reports of the old ones no longer count.
    pub fn refresh_after_scale(&mut self, job: TableId, actors: BTreeSet<ActorId>) {
        if let Some(j) = self.jobs.get_mut(&job) {
            j.pending = actors.clone();
            j.actors = actors;
            j.consumed_rows.clear();
        }
    }

    /// Rows consumed so far by a job's backfill.
    pub fn consumed_rows(&self, job: TableId) -> Option<u64> {
        self.jobs.get(&job).map(|j| j.consumed_rows.values().sum())
    }

    /// Apply progress reports; returns the jobs whose every backfill actor is done.
    pub fn update(&mut self, progress: &[CreateMviewProgress]) -> Vec<TableId> {
        for p in progress {
            for j in self.jobs.values_mut() {
                if j.pending.contains(&p.backfill_actor_id)
                    || j.consumed_rows.contains_key(&p.backfill_actor_id)
                {
                    j.consumed_rows.insert(p.backfill_actor_id, p.consumed_rows);
                    if p.done {
                        j.pending.remove(&p.backfill_actor_id);
                    }
                }
            }
        }
        self.jobs
            .iter()
            .filter(|(_, j)| j.pending.is_empty())
            .map(|(id, _)| *id)
            .collect()
    }

    /// The job is created: stop tracking it and release its DDL.
    pub fn finish(&mut self, job: TableId) {
        if let Some(j) = self.jobs.remove(&job)
            && let Some(w) = j.waiter
        {
            let _ = w.send(Ok(()));
        }
    }
}

#[cfg(test)]
mod tests {
    use epochlab_common::Epoch;

    use super::*;

    fn report(actor: u32, done: bool, rows: u64) -> CreateMviewProgress {
        CreateMviewProgress {
            backfill_actor_id: ActorId(actor),
            done,
            consumed_epoch: Epoch(1 << 16),
            consumed_rows: rows,
        }
    }

    /// Done reports collected before a recovery do not survive it: the job waits for new ones.
    #[test]
    fn recover_forgets_done_reports() {
        let job = TableId(2);
        let actors: BTreeSet<ActorId> = [ActorId(3), ActorId(4)].into();
        let mut t = CreateTracker::default();
        assert!(t.add(job, actors.clone(), false).is_none());
        // Done at a non-checkpoint barrier: the job is done, but not finished yet.
        assert_eq!(
            t.update(&[report(3, true, 500), report(4, true, 500)]),
            vec![job]
        );
        t.recover(vec![(job, actors)]);
        assert_eq!(t.consumed_rows(job), Some(0));
        assert!(t.update(&[report(3, false, 100)]).is_empty());
        assert!(t.update(&[report(3, true, 500)]).is_empty());
        assert_eq!(t.update(&[report(4, true, 500)]), vec![job]);
        assert_eq!(t.consumed_rows(job), Some(1000));
    }

    /// After a reschedule every actor must report done again, about its new vnodes.
    #[test]
    fn a_reschedule_forgets_done_reports() {
        let job = TableId(2);
        let mut t = CreateTracker::default();
        assert!(t.add(job, [ActorId(3), ActorId(4)].into(), false).is_none());
        assert!(t.update(&[report(3, true, 500)]).is_empty());
        t.refresh_after_reschedule(job);
        assert!(t.update(&[report(4, true, 300)]).is_empty());
        assert_eq!(t.update(&[report(3, true, 200)]), vec![job]);
        assert_eq!(t.consumed_rows(job), Some(500));
        t.refresh_after_reschedule(TableId(9));
    }

    /// A job recovery no longer lists fails its waiter.
    #[test]
    fn recover_drops_unlisted_jobs() {
        let mut t = CreateTracker::default();
        let mut rx = t.add(TableId(2), [ActorId(3)].into(), true).unwrap();
        t.recover(Vec::new());
        assert_eq!(t.consumed_rows(TableId(2)), None);
        assert_eq!(rx.try_recv(), Ok(Err(CreateAborted::CleanedByRecovery)));
    }
}
