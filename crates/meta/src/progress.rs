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
    #[error("recovery cleaned it up")]
    CleanedByRecovery,
    #[error("its creation failed")]
    CreationFailed,
    #[error("meta stopped")]
    MetaStopped,
}

pub type Finished = oneshot::Receiver<Result<(), CreateAborted>>;

struct TrackedJob {
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
                pending: actors,
                consumed_rows: BTreeMap::new(),
                waiter: wait.then_some(tx),
            },
        );
        wait.then_some(rx)
    }

    /// Stop tracking; a waiting DDL fails with `why`.
    pub fn remove(&mut self, job: TableId, why: CreateAborted) {
        if let Some(j) = self.jobs.remove(&job)
            && let Some(w) = j.waiter
        {
            let _ = w.send(Err(why));
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
