//! How meta's managers commit to the store ([`crate::store`]). Each keeps its state behind a lock whose guard,
//! [`Committing`], notes a mutable borrow; when a guard that was borrowed mutably is dropped, the manager's
//! rows are computed from its state, compared with what it last committed, and the difference committed
//! while the lock is still held, so the store sees each critical section whole and in order. A store error
//! is kept (the first one) for the run to report; the in-memory state goes on.

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};

use epochlab_common::{FragmentId, TableId, WorkerId};

use crate::catalog::Catalog;
use crate::meta::{ClusterState, Ids};
use crate::store::{
    FragmentRow, MetaRows, MetaStore, MetaStoreError, Sequence, StoreOp, StreamingJobRow,
    WorkerRow, catalog_rows,
};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The store and, per manager, the rows it last committed.
pub(crate) struct Persistence {
    store: Arc<dyn MetaStore>,
    /// The term this meta claimed the store with: its writes land only while it leads.
    term: u64,
    jobs: Mutex<BTreeMap<TableId, StreamingJobRow>>,
    fragments: Mutex<BTreeMap<FragmentId, FragmentRow>>,
    workers: Mutex<BTreeMap<WorkerId, WorkerRow>>,
    sequences: Mutex<BTreeMap<Sequence, u64>>,
    error: Mutex<Option<MetaStoreError>>,
    fenced: std::sync::atomic::AtomicBool,
}

impl Persistence {
    /// Refuse every later write of this meta (it was killed); the store would refuse them too once another
    /// meta claims it.
    pub fn fence(&self) {
        self.fenced
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Claim `store` and start from `rows`, what it held (empty for a new cluster).
    pub fn claim(store: Arc<dyn MetaStore>, rows: &MetaRows) -> Result<Self, MetaStoreError> {
        let term = store.claim()?;
        Ok(Self {
            term,
            jobs: Mutex::new(rows.jobs.clone()),
            fragments: Mutex::new(rows.fragments.clone()),
            workers: Mutex::new(rows.workers.clone()),
            sequences: Mutex::new(rows.sequences.clone()),
            error: Mutex::default(),
            fenced: std::sync::atomic::AtomicBool::new(false),
            store,
        })
    }

    pub fn store(&self) -> &Arc<dyn MetaStore> {
        &self.store
    }

    /// The first commit that failed, if one did.
    pub fn error(&self) -> Option<MetaStoreError> {
        lock(&self.error).clone()
    }

    /// One commit (nothing when `ops` is empty).
    pub fn commit(&self, ops: Vec<StoreOp>) {
        if ops.is_empty() || self.fenced.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        if let Err(e) = self.store.commit(self.term, ops) {
            lock(&self.error).get_or_insert(e);
        }
    }

    /// The jobs' catalog: the jobs in one commit, then their fragments in another (RisingWave's catalog and
    /// fragment managers write separately).
    pub fn commit_catalog(&self, catalog: &Catalog) {
        let (jobs, fragments) = catalog_rows(catalog.relations.values());
        let ops = diff(
            &mut lock(&self.jobs),
            jobs,
            |_, j| StoreOp::PutJob(Box::new(j)),
            StoreOp::DeleteJob,
        );
        self.commit(ops);
        let ops = diff(
            &mut lock(&self.fragments),
            fragments,
            |_, f| StoreOp::PutFragment(f),
            StoreOp::DeleteFragment,
        );
        self.commit(ops);
    }

    /// The workers and the recovery generation, in one commit.
    pub fn commit_cluster(&self, cluster: &ClusterState) {
        let mut ops = diff(
            &mut lock(&self.workers),
            cluster.worker_rows(),
            StoreOp::PutWorker,
            StoreOp::DeleteWorker,
        );
        ops.extend(self.sequence_ops(cluster.sequences()));
        self.commit(ops);
    }

    /// The id sequences, in one commit.
    pub fn commit_ids(&self, ids: &Ids) {
        let ops = self.sequence_ops(ids.sequences());
        self.commit(ops);
    }

    /// One sequence's new value, in a commit of its own (nothing when it has not moved).
    pub fn commit_sequence(&self, sequence: Sequence, value: u64) {
        let ops = self.sequence_ops([(sequence, value)]);
        self.commit(ops);
    }

    /// A sequence's value as last committed.
    pub fn sequence(&self, sequence: Sequence) -> Option<u64> {
        lock(&self.sequences).get(&sequence).copied()
    }

    pub fn term(&self) -> u64 {
        self.term
    }

    fn sequence_ops(&self, now: impl IntoIterator<Item = (Sequence, u64)>) -> Vec<StoreOp> {
        let mut last = lock(&self.sequences);
        let mut ops = Vec::new();
        for (s, v) in now {
            if last.insert(s, v) != Some(v) {
                ops.push(StoreOp::PutSequence(s, v));
            }
        }
        ops
    }
}

/// The ops that take `last` to `now` (and `last` becomes `now`).
fn diff<K: Ord + Copy, V: PartialEq + Clone>(
    last: &mut BTreeMap<K, V>,
    now: BTreeMap<K, V>,
    put: impl Fn(K, V) -> StoreOp,
    delete: impl Fn(K) -> StoreOp,
) -> Vec<StoreOp> {
    let mut ops: Vec<StoreOp> = last
        .keys()
        .filter(|k| !now.contains_key(k))
        .map(|k| delete(*k))
        .collect();
    last.retain(|k, _| now.contains_key(k));
    for (k, v) in now {
        if last.get(&k) != Some(&v) {
            ops.push(put(k, v.clone()));
            last.insert(k, v);
        }
    }
    ops
}

/// A manager's lock, held: a mutable borrow marks it changed, and dropping a changed guard commits the
/// manager's rows (under the lock).
pub struct Committing<'a, T> {
    guard: MutexGuard<'a, T>,
    changed: bool,
    persistence: &'a Persistence,
    commit: fn(&Persistence, &T),
}

impl<'a, T> Committing<'a, T> {
    pub(crate) fn new(
        lock: &'a Mutex<T>,
        persistence: &'a Persistence,
        commit: fn(&Persistence, &T),
    ) -> Self {
        Self {
            guard: lock.lock().unwrap_or_else(|e| e.into_inner()),
            changed: false,
            persistence,
            commit,
        }
    }
}

impl<T> Deref for Committing<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for Committing<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.changed = true;
        &mut self.guard
    }
}

impl<T> Drop for Committing<'_, T> {
    fn drop(&mut self) {
        if self.changed {
            (self.commit)(self.persistence, &self.guard);
        }
    }
}
