//! Meta's side of the store (RisingWave's `HummockManager`): the authoritative version, table registration,
//! and `commit_epoch`. Every change produces a [`VersionDelta`]; deltas are kept in order so that each node can
//! fetch the ones after its pinned version (delivery, with its latency, belongs to the RPC layer).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};

use epochlab_common::watch::Watch;
use epochlab_common::{Epoch, EventLog, TableId, WorkerId, event, trace, vspan};

use crate::committed::CommittedStore;
use crate::error::{StorageError, StorageResult};
use crate::node::SyncResult;
use crate::version::{GroupChange, GroupId, HummockVersion, VersionDelta};

/// Deltas kept for nodes that lag; a node further behind resynchronises from the full version.
pub const MAX_DELTA_HISTORY: usize = 100_000;

/// Called after every unregistration, with the tables removed (checkers).
/// Told of every unregister: the tables removed and the reason given.
pub type UnregisterHook = Arc<dyn Fn(&[TableId], &str) + Send + Sync>;

pub struct HummockManager {
    inner: Mutex<Inner>,
    unregister_hook: Mutex<Option<UnregisterHook>>,
    committed: CommittedStore,
    latest: Watch<u64>,
    log: Option<EventLog>,
}

struct Inner {
    version: HummockVersion,
    deltas: VecDeque<Arc<VersionDelta>>,
    next_group: GroupId,
    /// Live workers and the generation each is at; data from anything else is rejected at commit.
    contexts: BTreeMap<WorkerId, u64>,
    dropped_write_count: u64,
    /// Every epoch committed, so that an external system (a sink target) can tell a committed epoch from one
    /// that recovery abandoned below a later commit.
    committed_epochs: BTreeSet<Epoch>,
}

/// What `commit_epoch` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitOutcome {
    pub delta: Arc<VersionDelta>,
    /// Rows written to tables that belong to no group, and therefore dropped.
    pub dropped_rows: BTreeMap<TableId, usize>,
}

impl HummockManager {
    pub fn new(committed: CommittedStore, log: Option<EventLog>) -> Self {
        Self {
            inner: Mutex::new(Inner {
                version: HummockVersion::default(),
                deltas: VecDeque::new(),
                next_group: 2, // RisingWave's static groups are 2 and 3; ours are created per job.
                contexts: BTreeMap::new(),
                dropped_write_count: 0,
                committed_epochs: BTreeSet::new(),
            }),
            unregister_hook: Mutex::new(None),
            committed,
            latest: Watch::new(0),
            log,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_unregister_hook(&self, hook: UnregisterHook) {
        *self
            .unregister_hook
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(hook);
    }

    pub fn committed_store(&self) -> &CommittedStore {
        &self.committed
    }

    pub fn current_version(&self) -> HummockVersion {
        self.lock().version.clone()
    }

    pub fn max_committed_epoch(&self) -> Epoch {
        self.lock().version.max_committed_epoch
    }

    /// Whether `table` is in a group of the latest version.
    /// Whether `epoch` was committed (not merely below the max committed epoch).
    pub fn is_committed(&self, epoch: Epoch) -> bool {
        self.lock().committed_epochs.contains(&epoch)
    }

    pub fn is_registered(&self, table: TableId) -> bool {
        self.lock().version.contains_table(table)
    }

    pub fn registered_tables(&self) -> BTreeSet<TableId> {
        self.lock().version.member_tables().collect()
    }

    /// Rows dropped at commit because their table was in no group.
    pub fn dropped_write_count(&self) -> u64 {
        self.lock().dropped_write_count
    }

    /// The id of the latest version, watched.
    pub fn latest_version_id(&self) -> Watch<u64> {
        self.latest.clone()
    }

    /// The deltas after version `id`, in order; `Err(full version)` when `id` is too old to serve by deltas.
    pub fn deltas_after(&self, id: u64) -> Result<Vec<Arc<VersionDelta>>, HummockVersion> {
        let inner = self.lock();
        if id >= inner.version.id {
            return Ok(Vec::new());
        }
        match inner.deltas.front() {
            Some(first) if first.prev_id <= id => Ok(inner
                .deltas
                .iter()
                .filter(|d| d.prev_id >= id)
                .cloned()
                .collect()),
            _ => Err(inner.version.clone()),
        }
    }

    /// A worker joins (or rejoins after a restart or reset) at `generation`.
    pub fn set_context(&self, worker: WorkerId, generation: u64) {
        self.lock().contexts.insert(worker, generation);
    }

    /// A worker is dead: its data is no longer accepted.
    pub fn remove_context(&self, worker: WorkerId) {
        self.lock().contexts.remove(&worker);
    }

    fn push_delta(
        &self,
        inner: &mut Inner,
        mce: Epoch,
        changes: Vec<GroupChange>,
    ) -> Arc<VersionDelta> {
        let delta = Arc::new(VersionDelta {
            id: inner.version.id + 1,
            prev_id: inner.version.id,
            max_committed_epoch: mce,
            group_changes: changes,
        });
        inner.version.apply(&delta);
        inner.deltas.push_back(delta.clone());
        if inner.deltas.len() > MAX_DELTA_HISTORY {
            inner.deltas.pop_front();
        }
        self.latest.set(delta.id);
        delta
    }

    /// Register `tables` in a new group.
    pub fn register_tables(&self, tables: &[TableId]) -> (GroupId, Arc<VersionDelta>) {
        let mut inner = self.lock();
        for t in tables {
            assert!(
                !inner.version.contains_table(*t),
                "table {t} is already registered"
            );
        }
        let group = inner.next_group;
        inner.next_group += 1;
        let mce = inner.version.max_committed_epoch;
        let delta = self.push_delta(
            &mut inner,
            mce,
            vec![GroupChange::Create {
                group,
                tables: tables.to_vec(),
            }],
        );
        drop(inner);
        if let Some(log) = &self.log {
            event!(
                log,
                "register tables",
                "tables={tables:?} group={group} version={}",
                delta.id
            );
        }
        (group, delta)
    }

    /// Remove `tables` from their groups; groups left empty are destroyed. Unknown tables are ignored (they
    /// may have been unregistered already). Returns `None` when nothing changed.
    pub fn unregister_tables(&self, tables: &[TableId], reason: &str) -> Option<Arc<VersionDelta>> {
        let span = self.log.as_ref().map(|log| {
            let ids: Vec<u32> = tables.iter().map(|t| t.0).collect();
            vspan!("unregister tables", log.clock(), tables = ?ids, reason = reason)
        });
        let result = self.unregister_tables_inner(tables, reason);
        if let (Some(span), Some(log)) = (&span, &self.log) {
            trace::end(span, log.clock());
            // A zombie that later finds one of these tables' rows gone links back here.
            for &t in tables {
                trace::mark(trace::Cause::TableUnregistered(t), span);
            }
        }
        result
    }

    fn unregister_tables_inner(
        &self,
        tables: &[TableId],
        reason: &str,
    ) -> Option<Arc<VersionDelta>> {
        let mut inner = self.lock();
        let mut by_group: BTreeMap<GroupId, Vec<TableId>> = BTreeMap::new();
        for t in tables {
            if let Some(g) = inner.version.group_of(*t) {
                by_group.entry(g).or_default().push(*t);
            }
        }
        if by_group.is_empty() {
            return None;
        }
        let mut changes = Vec::new();
        for (group, ts) in by_group {
            let remaining = inner.version.groups[&group].len() - ts.len();
            changes.push(GroupChange::RemoveTables { group, tables: ts });
            if remaining == 0 {
                changes.push(GroupChange::Destroy { group });
            }
        }
        let removed: Vec<TableId> = changes
            .iter()
            .filter_map(|c| match c {
                GroupChange::RemoveTables { tables, .. } => Some(tables.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        let mce = inner.version.max_committed_epoch;
        let delta = self.push_delta(&mut inner, mce, changes);
        drop(inner);
        if let Some(log) = &self.log {
            event!(
                log,
                "unregister tables",
                "tables={removed:?} reason={reason} version={}",
                delta.id
            );
        }
        let hook = self
            .unregister_hook
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(hook) = hook {
            hook(&removed, reason);
        }
        Some(delta)
    }

    /// Unregister every table not in `keep` (recovery's purge). Returns the tables removed.
    pub fn purge(&self, keep: &BTreeSet<TableId>, reason: &str) -> Vec<TableId> {
        let stale: Vec<TableId> = self
            .registered_tables()
            .into_iter()
            .filter(|t| !keep.contains(t))
            .collect();
        if !stale.is_empty() {
            self.unregister_tables(&stale, reason);
        }
        stale
    }

    /// Commit `epoch` with the data synced by the nodes that had to collect it. Rejects an epoch not above the
    /// max committed epoch, and data from a worker that is dead or at another generation (the whole commit
    /// fails: RisingWave's `commit_epoch_sanity_check`). Rows of tables in no group are dropped and counted.
    pub fn commit_epoch(
        &self,
        epoch: Epoch,
        syncs: Vec<SyncResult>,
    ) -> StorageResult<CommitOutcome> {
        let mut inner = self.lock();
        let mce = inner.version.max_committed_epoch;
        if epoch <= mce {
            return Err(StorageError::CommitEpochNotIncreasing {
                epoch,
                max_committed: mce,
            });
        }
        for s in &syncs {
            let why = match inner.contexts.get(&s.worker) {
                None => Some("dead"),
                Some(g) if *g != s.generation => Some("of a stale generation"),
                Some(_) => None,
            };
            if let Some(why) = why {
                return Err(StorageError::InvalidContext {
                    epoch,
                    worker: s.worker,
                    generation: s.generation,
                    why,
                });
            }
            assert!(s.epoch <= epoch, "synced data of a later epoch");
        }
        let workers: Vec<u32> = syncs.iter().map(|s| s.worker.0).collect();
        let mut dropped_rows: BTreeMap<TableId, usize> = BTreeMap::new();
        for s in syncs {
            for sst in s.ssts {
                if inner.version.contains_table(sst.table_id) {
                    self.committed.apply(sst.table_id, sst.entries);
                } else {
                    *dropped_rows.entry(sst.table_id).or_default() += sst.entries.len();
                }
            }
        }
        let dropped_total: usize = dropped_rows.values().sum();
        inner.dropped_write_count += dropped_total as u64;
        let delta = self.push_delta(&mut inner, epoch, Vec::new());
        inner.committed_epochs.insert(epoch);
        drop(inner);
        for (table, rows) in &dropped_rows {
            tracing::warn!(table_id = table.0, rows, %epoch, "table doesn't belong to any group: its writes are dropped");
        }
        if let Some(log) = &self.log {
            event!(
                log,
                "commit epoch",
                "epoch={epoch} workers={workers:?} version={} dropped_rows={dropped_total}",
                delta.id
            );
        }
        Ok(CommitOutcome {
            delta,
            dropped_rows,
        })
    }
}
