//! What each backfill actor has done, for checks, benchmarks and metrics.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use epochlab_common::{ActorId, Epoch, TableId, VirtualNode};

#[derive(Default, Debug)]
pub struct BackfillActorStats {
    pub snapshot_rows: AtomicU64,
    pub upstream_rows_forwarded: AtomicU64,
    pub upstream_rows_hidden: AtomicU64,
    /// The most snapshot rows read in one epoch.
    pub max_snapshot_rows_per_epoch: AtomicU64,
    /// Barriers handled while backfilling (the finishing one included).
    pub backfill_epochs: AtomicU64,
    pub finished: AtomicBool,
    /// Whether the last persist updated a row that was already stored (the actor is in the middle of a vnode).
    pub last_persist_updated: AtomicBool,
    /// Progress rows found missing (`row [...] not found`).
    pub state_missing: AtomicU64,
    /// The epoch of the last progress row written, of any vnode (raw; 0 before the first).
    pub last_persisted_epoch: AtomicU64,
    /// Per vnode: the epoch of the last progress row written, and whether it said finished.
    persisted: Mutex<BTreeMap<VirtualNode, (Epoch, bool)>>,
}

impl BackfillActorStats {
    pub(crate) fn record_epoch(&self, snapshot_rows: u64) {
        self.backfill_epochs.fetch_add(1, Ordering::Relaxed);
        self.max_snapshot_rows_per_epoch
            .fetch_max(snapshot_rows, Ordering::Relaxed);
    }

    pub(crate) fn record_persisted(&self, vnode: VirtualNode, epoch: Epoch, finished: bool) {
        self.last_persisted_epoch
            .fetch_max(epoch.0, Ordering::Relaxed);
        self.persisted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(vnode, (epoch, finished));
    }

    /// The actor owns `vnodes` now (a reschedule): forget what it persisted for the others.
    pub(crate) fn retain_vnodes(&self, vnodes: &epochlab_common::Bitmap) {
        self.persisted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|v, _| vnodes.is_set(v.to_index()));
    }

    /// Per vnode: the epoch its progress row was last written in, and whether that row said finished.
    pub fn persisted(&self) -> BTreeMap<VirtualNode, (Epoch, bool)> {
        self.persisted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

type ByActor = BTreeMap<(TableId, ActorId), Arc<BackfillActorStats>>;

/// Stats of every backfill actor of the cluster, by (progress table, actor).
#[derive(Clone, Default)]
pub struct BackfillRegistry {
    inner: Arc<Mutex<ByActor>>,
}

impl BackfillRegistry {
    /// The stats of an actor; a rebuilt actor (after recovery) continues its predecessor's.
    pub fn actor(&self, table: TableId, actor: ActorId) -> Arc<BackfillActorStats> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((table, actor))
            .or_default()
            .clone()
    }

    pub fn all(&self) -> Vec<((TableId, ActorId), Arc<BackfillActorStats>)> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect()
    }

    pub fn of_table(&self, table: TableId) -> Vec<(ActorId, Arc<BackfillActorStats>)> {
        self.all()
            .into_iter()
            .filter(|((t, _), _)| *t == table)
            .map(|((_, a), s)| (a, s))
            .collect()
    }
}
