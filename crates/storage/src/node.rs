//! One compute node's storage (RisingWave's `HummockStorage` with its event handler and uploader): the version
//! the node has pinned, every local instance's read version, and the uploader that seals and syncs epochs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use epochlab_common::watch::Watch;
use epochlab_common::{Epoch, TableId, WorkerId};

use crate::committed::CommittedStore;
use crate::error::{StorageError, StorageResult};
use crate::imm::Imm;
use crate::local::{LocalStateStore, NewLocalOptions, ReadVersion};
use crate::version::{HummockVersion, VersionDelta};
use crate::watermark::VnodeWatermark;

/// One table's synced writes: its imms, oldest first (by epoch, then in flush order), shared with the
/// instances' read versions until they are pruned (no copy is made to upload them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SstData {
    pub table_id: TableId,
    pub imms: Vec<Arc<Imm>>,
}

impl SstData {
    /// Entries (versions of keys) in all its imms.
    pub fn len(&self) -> usize {
        self.imms.iter().map(|i| i.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.imms.iter().all(|i| i.is_empty())
    }
}

/// One table's staging data on a node, as a read through the node sees it (see [`NodeStorage::batch_iter`]).
#[derive(Default)]
pub(crate) struct NodeStaging {
    pub(crate) imms: Vec<Arc<Imm>>,
    pub(crate) watermarks: Vec<VnodeWatermark>,
}

/// What a node's sync of an epoch produced, tagged with the node and its generation so that meta can reject
/// data from a dead or reset node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncResult {
    pub epoch: Epoch,
    pub worker: WorkerId,
    pub generation: u64,
    pub ssts: Vec<SstData>,
    /// Table watermarks sealed at or below the epoch, each with its table and the epoch it was sealed at.
    pub table_watermarks: Vec<(TableId, Epoch, VnodeWatermark)>,
}

impl SyncResult {
    pub fn size_bytes(&self) -> usize {
        self.ssts
            .iter()
            .flat_map(|s| &s.imms)
            .map(|i| i.size_bytes() + 8 * i.len())
            .sum()
    }
}

#[derive(Clone)]
pub struct NodeStorage {
    pub(crate) inner: Arc<NodeInner>,
}

pub(crate) struct NodeInner {
    pub(crate) worker: WorkerId,
    pub(crate) committed: CommittedStore,
    pub(crate) state: Mutex<NodeState>,
    mce: Watch<Epoch>,
    /// Bumped by every version installed and every clear: what a sync held back by a write stop waits on.
    changes: Watch<u64>,
    pub(crate) stats: NodeStorageStats,
    upload_latency_us: AtomicU64,
    /// Set once, by a checker: told of every access of a local store that knows its actor.
    pub(crate) access_observer: std::sync::OnceLock<crate::access::AccessObserver>,
}

pub(crate) struct NodeState {
    pub(crate) pinned: Arc<HummockVersion>,
    pub(crate) generation: u64,
    instances: BTreeMap<u64, Instance>,
    next_instance: u64,
    uploader: Uploader,
}

/// A local instance as its node tracks it: its table, whether it is a replicated copy (arrangement backfill's,
/// never uploaded nor read by others), and its staging data.
struct Instance {
    table_id: TableId,
    replicated: bool,
    read_version: Weak<Mutex<ReadVersion>>,
}

#[derive(Default)]
struct Uploader {
    /// Flushed, not yet synced data of non-replicated instances, by epoch.
    unsynced: BTreeMap<Epoch, Vec<Arc<Imm>>>,
    /// Table watermarks of those instances, sealed and not yet synced, by epoch.
    unsynced_watermarks: BTreeMap<Epoch, Vec<(TableId, VnodeWatermark)>>,
    unsynced_bytes: usize,
    max_sealed: Epoch,
    max_synced: Epoch,
    /// Bumped by `clear()`: a sync that started before a clear fails.
    clear_count: u64,
}

/// Counters a node keeps (exported as metrics by the telemetry crate).
#[derive(Default, Debug)]
pub struct NodeStorageStats {
    pub rejected_stale_writes: AtomicU64,
    pub applied_deltas: AtomicU64,
    pub pruned_imms: AtomicU64,
    pub synced_bytes: AtomicU64,
    /// Syncs that waited because a group of their data had its writes stopped.
    pub write_stopped_syncs: AtomicU64,
    /// Mem-tables flushed before their epoch ended because they outgrew the spill threshold.
    pub mem_table_spills: AtomicU64,
}

impl NodeStorage {
    pub fn new(
        worker: WorkerId,
        committed: CommittedStore,
        version: HummockVersion,
        generation: u64,
    ) -> Self {
        let mce = Watch::new(version.max_committed_epoch);
        Self {
            inner: Arc::new(NodeInner {
                worker,
                committed,
                state: Mutex::new(NodeState {
                    pinned: Arc::new(version),
                    generation,
                    instances: BTreeMap::new(),
                    next_instance: 0,
                    uploader: Uploader::default(),
                }),
                mce,
                changes: Watch::new(0),
                stats: NodeStorageStats::default(),
                upload_latency_us: AtomicU64::new(0),
                access_observer: std::sync::OnceLock::new(),
            }),
        }
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, NodeState> {
        self.inner.lock_state()
    }

    /// Tell `observer` of every read and flush of this node's local stores that know their actor (at most
    /// once per node; later calls are ignored).
    pub fn set_access_observer(&self, observer: crate::access::AccessObserver) {
        let _ = self.inner.access_observer.set(observer);
    }

    pub fn worker(&self) -> WorkerId {
        self.inner.worker
    }

    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    pub fn stats(&self) -> &NodeStorageStats {
        &self.inner.stats
    }

    /// Simulated time an upload (sync) takes; a clear during it fails the sync.
    pub fn set_upload_latency(&self, latency: Duration) {
        self.inner
            .upload_latency_us
            .store(latency.as_micros() as u64, Ordering::Relaxed);
    }

    pub fn pinned_version(&self) -> Arc<HummockVersion> {
        self.lock().pinned.clone()
    }

    pub fn max_committed_epoch(&self) -> Epoch {
        self.lock().pinned.max_committed_epoch
    }

    /// Bytes flushed but not yet synced.
    pub fn uncommitted_bytes(&self) -> usize {
        self.lock().uploader.unsynced_bytes
    }

    /// A local state store for one table of one actor, at the node's current generation.
    pub fn new_local(&self, opts: NewLocalOptions) -> LocalStateStore {
        let read_version = Arc::new(Mutex::new(ReadVersion::default()));
        let mut state = self.lock();
        let id = state.next_instance;
        state.next_instance += 1;
        let instance = Instance {
            table_id: opts.table_id,
            replicated: opts.is_replicated,
            read_version: Arc::downgrade(&read_version),
        };
        state.instances.insert(id, instance);
        let generation = state.generation;
        drop(state);
        if let Some(len) = opts.prefix_filter_len {
            self.inner.committed.set_prefix_len(opts.table_id, len);
        }
        LocalStateStore::new(self.inner.clone(), opts, id, generation, read_version)
    }

    /// All actors have collected the barrier of `epoch`: no more writes at or below it.
    pub fn seal_epoch(&self, epoch: Epoch) -> StorageResult<()> {
        let mut state = self.lock();
        let up = &mut state.uploader;
        if epoch <= up.max_sealed {
            return Err(StorageError::SealNotIncreasing {
                worker: self.inner.worker,
                epoch,
                sealed: up.max_sealed,
            });
        }
        up.max_sealed = epoch;
        Ok(())
    }

    /// Gather every flushed imm at or below `epoch` into one result per table ("upload" them). Data of a
    /// group whose writes are stopped waits until the pinned version lifts the stop (RisingWave's write
    /// limiter holds the actor's flush; here the node's sync waits: either way the barrier cannot complete).
    /// Takes the configured upload latency; a `clear()` meanwhile fails the sync.
    pub async fn sync(&self, epoch: Epoch) -> StorageResult<SyncResult> {
        let (imms, watermarks, clear_count, generation) = {
            let mut state = self.lock();
            assert!(
                epoch <= state.uploader.max_sealed,
                "sync of an unsealed epoch {epoch}"
            );
            let up = &mut state.uploader;
            let later = up.unsynced.split_off(&Epoch(epoch.0 + 1));
            let imms: Vec<Arc<Imm>> = std::mem::replace(&mut up.unsynced, later)
                .into_values()
                .flatten()
                .collect();
            let later = up.unsynced_watermarks.split_off(&Epoch(epoch.0 + 1));
            let watermarks = std::mem::replace(&mut up.unsynced_watermarks, later);
            let bytes: usize = imms.iter().map(|i| i.size_bytes()).sum();
            up.unsynced_bytes -= bytes;
            (imms, watermarks, up.clear_count, state.generation)
        };
        let tables: BTreeSet<TableId> = imms.iter().map(|i| i.table_id).collect();
        self.wait_for_write_limits(&tables, clear_count, epoch)
            .await?;
        let latency = self.inner.upload_latency_us.load(Ordering::Relaxed);
        if latency > 0 {
            tokio::time::sleep(Duration::from_micros(latency)).await;
        }
        let mut state = self.lock();
        if state.uploader.clear_count != clear_count {
            return Err(StorageError::SyncCleared {
                worker: self.inner.worker,
                epoch,
            });
        }
        state.uploader.max_synced = state.uploader.max_synced.max(epoch);
        drop(state);
        let result = SyncResult {
            epoch,
            worker: self.inner.worker,
            generation,
            ssts: merge_imms(imms),
            table_watermarks: watermarks
                .into_iter()
                .flat_map(|(e, ws)| ws.into_iter().map(move |(t, w)| (t, e, w)))
                .collect(),
        };
        self.inner
            .stats
            .synced_bytes
            .fetch_add(result.size_bytes() as u64, Ordering::Relaxed);
        Ok(result)
    }

    /// Wait until no group of `tables` has its writes stopped in the pinned version; fails if the node is
    /// cleared meanwhile.
    async fn wait_for_write_limits(
        &self,
        tables: &BTreeSet<TableId>,
        clear_count: u64,
        epoch: Epoch,
    ) -> StorageResult<()> {
        let stopped =
            |state: &NodeState| state.pinned.write_stopped_group_of(tables.iter().copied());
        let Some(group) = stopped(&self.lock()) else {
            return Ok(());
        };
        self.inner
            .stats
            .write_stopped_syncs
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!(worker = self.inner.worker.0, %epoch, group, "sync held back: the group's writes are stopped");
        self.inner
            .changes
            .wait_for(|_| {
                let state = self.lock();
                state.uploader.clear_count != clear_count || stopped(&state).is_none()
            })
            .await;
        if self.lock().uploader.clear_count != clear_count {
            return Err(StorageError::SyncCleared {
                worker: self.inner.worker,
                epoch,
            });
        }
        Ok(())
    }

    /// Recovery's reset of this node's storage: drop all uncommitted data (the uploader's and every local
    /// instance's staging), fail pending syncs, and move to `generation`. Local stores created before keep the
    /// old generation, so their later flushes are rejected.
    pub fn clear(&self, generation: u64) {
        let mut state = self.lock();
        assert!(
            generation > state.generation,
            "a reset must move to a new generation"
        );
        state.generation = generation;
        let mce = state.pinned.max_committed_epoch;
        let up = &mut state.uploader;
        up.unsynced.clear();
        up.unsynced_watermarks.clear();
        up.unsynced_bytes = 0;
        up.clear_count += 1;
        up.max_sealed = mce;
        up.max_synced = mce;
        state.instances.retain(|_, i| {
            let Some(rv) = i.read_version.upgrade() else {
                return false;
            };
            rv.lock().unwrap_or_else(|e| e.into_inner()).clear();
            true
        });
        drop(state);
        self.inner.changes.update(|n| {
            *n += 1;
            true
        });
    }

    /// Apply the next version delta. A delta that does not follow the pinned version is a gap: an error.
    /// Staging data at or below the new max committed epoch is pruned from every local instance; from now on it
    /// is served by the committed layer (or, for a table in no group, by nothing).
    pub fn apply_version_delta(&self, delta: &VersionDelta) -> StorageResult<()> {
        let mut state = self.lock();
        if delta.prev_id != state.pinned.id {
            return Err(StorageError::VersionGap {
                worker: self.inner.worker,
                pinned: state.pinned.id,
                prev: delta.prev_id,
            });
        }
        let mut version = (*state.pinned).clone();
        version.apply(delta);
        self.install(&mut state, version);
        self.inner
            .stats
            .applied_deltas
            .fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Replace the pinned version wholesale (a node too far behind for deltas, or a restarted node).
    pub fn reset_version(&self, version: HummockVersion) {
        let mut state = self.lock();
        // RisingWave's `new_pin_version` asserts the same: a node never pins an older version (a meta restored
        // from an older store needs the whole cluster restarted, as RisingWave's backup restore does).
        assert!(
            version.id >= state.pinned.id,
            "pinning a older version {}. Current is {}",
            version.id,
            state.pinned.id
        );
        self.install(&mut state, version);
    }

    fn install(&self, state: &mut NodeState, version: HummockVersion) {
        let mce = version.max_committed_epoch;
        state.pinned = Arc::new(version);
        let mut pruned = 0;
        state.instances.retain(|_, i| {
            let Some(rv) = i.read_version.upgrade() else {
                return false;
            };
            pruned += rv
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .prune_committed(mce);
            true
        });
        self.inner
            .stats
            .pruned_imms
            .fetch_add(pruned as u64, Ordering::Relaxed);
        self.inner.mce.update(|cur| {
            let changed = *cur != mce;
            *cur = mce;
            changed
        });
        self.inner.changes.update(|n| {
            *n += 1;
            true
        });
    }

    /// The staging data at or below `epoch` of every live, non-replicated instance of `table_id` on this node
    /// (its writers here), newest epoch first, and the table watermarks they sealed at or below `epoch`.
    pub(crate) fn staging_of(&self, table_id: TableId, epoch: Epoch) -> NodeStaging {
        let state = self.lock();
        let mut out = NodeStaging::default();
        let writers = state
            .instances
            .values()
            .filter(|i| i.table_id == table_id && !i.replicated);
        for rv in writers.filter_map(|i| i.read_version.upgrade()) {
            let rv = rv.lock().unwrap_or_else(|e| e.into_inner());
            out.imms
                .extend(rv.staging().filter(|imm| imm.epoch <= epoch).cloned());
            out.watermarks
                .extend(rv.watermarks_to(epoch).map(|(_, w)| w.clone()));
        }
        // An instance's staging is newest first; across instances (disjoint vnodes within an epoch) the newer
        // epoch wins a key that moved between them.
        out.imms.sort_by_key(|imm| std::cmp::Reverse(imm.epoch));
        out
    }

    /// Wait until this node has pinned a version whose max committed epoch is at least `epoch`.
    pub async fn wait_for_epoch(&self, epoch: Epoch) {
        self.inner.mce.wait_for(|mce| *mce >= epoch).await;
    }
}

impl NodeInner {
    pub(crate) fn lock_state(&self) -> std::sync::MutexGuard<'_, NodeState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Put `merged` where `older` waits for upload, and drop `newer` (an instance merged its two newest imms
    /// of one epoch).
    pub(crate) fn replace_unsynced(&self, older: &Arc<Imm>, newer: &Arc<Imm>, merged: Arc<Imm>) {
        let mut state = self.lock_state();
        let up = &mut state.uploader;
        let Some(imms) = up.unsynced.get_mut(&merged.epoch) else {
            debug_assert!(false, "merged imms of an epoch not waiting for upload");
            return;
        };
        let (before, after) = (older.size_bytes() + newer.size_bytes(), merged.size_bytes());
        imms.retain(|i| !Arc::ptr_eq(i, newer));
        match imms.iter_mut().find(|i| Arc::ptr_eq(i, older)) {
            Some(slot) => *slot = merged,
            None => debug_assert!(false, "the older imm waits for upload"),
        }
        up.unsynced_bytes = up.unsynced_bytes - before + after;
    }

    /// A table watermark sealed at `epoch` goes to the uploader with the epoch's data.
    pub(crate) fn upload_watermark(&self, table_id: TableId, epoch: Epoch, w: VnodeWatermark) {
        let mut state = self.lock_state();
        let up = &mut state.uploader;
        debug_assert!(epoch > up.max_sealed, "a watermark of a sealed epoch");
        up.unsynced_watermarks
            .entry(epoch)
            .or_default()
            .push((table_id, w));
    }

    /// Hand a flushed imm of a non-replicated instance to the uploader.
    pub(crate) fn upload(&self, imm: Arc<Imm>) {
        let mut state = self.lock_state();
        let up = &mut state.uploader;
        debug_assert!(imm.epoch > up.max_sealed, "flush into a sealed epoch");
        up.unsynced_bytes += imm.size_bytes();
        up.unsynced.entry(imm.epoch).or_default().push(imm);
    }
}

/// Group imms (any epochs, any tables; oldest first) by table, keeping their order.
fn merge_imms(imms: Vec<Arc<Imm>>) -> Vec<SstData> {
    let mut by_table: BTreeMap<TableId, Vec<Arc<Imm>>> = BTreeMap::new();
    for imm in imms {
        by_table.entry(imm.table_id).or_default().push(imm);
    }
    by_table
        .into_iter()
        .map(|(table_id, imms)| SstData { table_id, imms })
        .collect()
}
