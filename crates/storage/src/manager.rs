//! Meta's side of the store (RisingWave's `HummockManager`): the authoritative version, table registration,
//! and `commit_epoch`. Every change produces a [`VersionDelta`]; deltas are kept in order so that each node can
//! fetch the ones after its pinned version (delivery, with its latency, belongs to the RPC layer).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use epochlab_common::watch::Watch;
use epochlab_common::{Epoch, EventLog, TableId, WorkerId, event, trace, vspan};

use crate::committed::CommittedStore;
use crate::compaction::{
    Compaction, CompactionCatalog, CompactionConfig, CompactionError, CompactionStats,
    GroupCompaction,
};
use crate::error::{StorageError, StorageResult};
use crate::node::SyncResult;
use crate::version::{GroupChange, GroupId, HummockVersion, VersionDelta};
use crate::watermark::VnodeWatermark;

/// Deltas kept for nodes that lag; a node further behind resynchronises from the full version.
pub const MAX_DELTA_HISTORY: usize = 100_000;

/// Called after every unregistration, with the tables removed (checkers).
/// Told of every unregister: the tables removed and the reason given.
pub type UnregisterHook = Arc<dyn Fn(&[TableId], &str) + Send + Sync>;

/// Told of every version delta as it is made (meta's store keeps them).
pub type DeltaHook = Arc<dyn Fn(&Arc<VersionDelta>) + Send + Sync>;

pub struct HummockManager {
    inner: Mutex<Inner>,
    unregister_hook: Mutex<Option<UnregisterHook>>,
    delta_hook: Mutex<Option<DeltaHook>>,
    /// The catalog compaction tasks resolve member tables against (meta's); none: every table resolves.
    catalog: Mutex<Option<Arc<dyn CompactionCatalog>>>,
    compaction_stats: Arc<CompactionStats>,
    /// The compactor node is up: compaction tasks run. While it is down (killed) none does, and L0 grows.
    compactor_up: std::sync::atomic::AtomicBool,
    /// No meta schedules compaction (it was killed and no other leads yet): no task runs, as with the
    /// compactor down. RisingWave's compactors get their tasks from meta.
    compaction_paused: std::sync::atomic::AtomicBool,
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
    /// Every group's L0 and compaction state.
    compaction: Compaction,
    /// Groups that tables join rather than create (RisingWave's static groups): never destroyed.
    static_groups: BTreeSet<GroupId>,
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
                compaction: Compaction::default(),
                static_groups: BTreeSet::new(),
            }),
            unregister_hook: Mutex::new(None),
            delta_hook: Mutex::new(None),
            catalog: Mutex::new(None),
            compaction_stats: Arc::default(),
            compactor_up: std::sync::atomic::AtomicBool::new(true),
            compaction_paused: std::sync::atomic::AtomicBool::new(false),
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

    /// Call `hook` with every delta from now on, in order (under the version's lock, so it must not call
    /// back into the manager).
    pub fn set_delta_hook(&self, hook: DeltaHook) {
        *self.delta_hook.lock().unwrap_or_else(|e| e.into_inner()) = Some(hook);
    }

    /// When compaction runs and when writes stop.
    pub fn set_compaction_config(&self, config: CompactionConfig) {
        assert!(config.is_valid(), "{config:?}");
        self.lock().compaction.config = config;
    }

    /// The catalog that compaction tasks resolve member tables against (meta installs its own).
    pub fn set_compaction_catalog(&self, catalog: Arc<dyn CompactionCatalog>) {
        *self.catalog.lock().unwrap_or_else(|e| e.into_inner()) = Some(catalog);
    }

    pub fn compaction_stats(&self) -> &Arc<CompactionStats> {
        &self.compaction_stats
    }

    /// Every group's compaction state (groups that never had data are absent).
    pub fn group_compaction(&self) -> BTreeMap<GroupId, GroupCompaction> {
        self.lock().compaction.groups.clone()
    }

    /// The groups whose writes are stopped, with their state.
    pub fn write_stopped_groups(&self) -> BTreeMap<GroupId, GroupCompaction> {
        let inner = self.lock();
        inner
            .compaction
            .groups
            .iter()
            .filter(|(_, g)| g.write_stopped_since_us.is_some())
            .map(|(id, g)| (*id, g.clone()))
            .collect()
    }

    fn now_us(&self) -> u64 {
        self.log.as_ref().map_or(0, |l| l.clock().elapsed_us())
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

    /// The deltas after version `id`, in order; `Err(full version)` when `id` is too old to serve by deltas,
    /// or above the latest (a version of a history meta's load replaced: [`HummockManager::load_version`]).
    pub fn deltas_after(&self, id: u64) -> Result<Vec<Arc<VersionDelta>>, HummockVersion> {
        let inner = self.lock();
        if id > inner.version.id {
            return Err(inner.version.clone());
        }
        if id == inner.version.id {
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
        self.push_delta_with(inner, mce, changes, BTreeMap::new())
    }

    fn push_delta_with(
        &self,
        inner: &mut Inner,
        mce: Epoch,
        changes: Vec<GroupChange>,
        table_watermarks: BTreeMap<TableId, Vec<(Epoch, VnodeWatermark)>>,
    ) -> Arc<VersionDelta> {
        let delta = Arc::new(VersionDelta {
            id: inner.version.id + 1,
            prev_id: inner.version.id,
            max_committed_epoch: mce,
            group_changes: changes,
            table_watermarks,
        });
        inner.version.apply(&delta);
        if let Some(hook) = &*self.delta_hook.lock().unwrap_or_else(|e| e.into_inner()) {
            hook(&delta);
        }
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
        assert!(
            inner.static_groups.is_empty(),
            "a group per job beside static groups"
        );
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

    /// Register `tables` in `group`, a static group (RisingWave's `StateDefault` 2 and `MaterializedView` 3),
    /// created the first time. A static group is never destroyed.
    pub fn register_tables_in(&self, group: GroupId, tables: &[TableId]) -> Arc<VersionDelta> {
        let mut inner = self.lock();
        for t in tables {
            assert!(
                !inner.version.contains_table(*t),
                "table {t} is already registered"
            );
        }
        let change = if inner.version.groups.contains_key(&group) {
            GroupChange::AddTables {
                group,
                tables: tables.to_vec(),
            }
        } else {
            assert!(
                inner.static_groups.contains(&group) || inner.next_group == 2,
                "static group {group} beside groups per job"
            );
            GroupChange::Create {
                group,
                tables: tables.to_vec(),
            }
        };
        inner.static_groups.insert(group);
        let mce = inner.version.max_committed_epoch;
        let delta = self.push_delta(&mut inner, mce, vec![change]);
        drop(inner);
        if let Some(log) = &self.log {
            event!(
                log,
                "register tables",
                "tables={tables:?} group={group} version={}",
                delta.id
            );
        }
        delta
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
        let affected: BTreeSet<GroupId> = by_group.keys().copied().collect();
        let mut changes = Vec::new();
        for (group, ts) in by_group {
            let remaining = inner.version.groups[&group].len() - ts.len();
            changes.push(GroupChange::RemoveTables { group, tables: ts });
            if remaining == 0 && !inner.static_groups.contains(&group) {
                changes.push(GroupChange::Destroy { group });
                inner.compaction.groups.remove(&group);
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
        // The groups' members changed: a task that failed on one of them may succeed now.
        self.compact(&affected);
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
        commit_epoch_sanity_check(&inner, epoch, &syncs)?;
        let workers: Vec<u32> = syncs.iter().map(|s| s.worker.0).collect();
        let mut dropped_rows: BTreeMap<TableId, usize> = BTreeMap::new();
        // Per group the commit brings data to, the tables whose data it brings: one L0 sub-level each.
        let mut fed: BTreeMap<GroupId, BTreeSet<TableId>> = BTreeMap::new();
        let mut watermarks: BTreeMap<TableId, Vec<(Epoch, VnodeWatermark)>> = BTreeMap::new();
        for s in syncs {
            for (table, sealed, w) in s.table_watermarks {
                if inner.version.group_of(table).is_some() {
                    self.committed.apply_watermark(table, sealed, &w);
                    watermarks.entry(table).or_default().push((sealed, w));
                }
            }
            for sst in s.ssts {
                if let Some(group) = inner.version.group_of(sst.table_id) {
                    if !sst.is_empty() {
                        fed.entry(group).or_default().insert(sst.table_id);
                    }
                    self.committed.apply(sst.table_id, &sst.imms);
                } else {
                    *dropped_rows.entry(sst.table_id).or_default() += sst.len();
                }
            }
        }
        let dropped_total: usize = dropped_rows.values().sum();
        inner.dropped_write_count += dropped_total as u64;
        let delta = self.push_delta_with(&mut inner, epoch, Vec::new(), watermarks);
        inner.committed_epochs.insert(epoch);
        for (group, tables) in &fed {
            inner
                .compaction
                .add_sub_level(*group, tables, &self.compaction_stats);
        }
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
        // Each group the commit brought data to has one more L0 sub-level: compact those that are due.
        self.compact(&fed.into_keys().collect());
        Ok(CommitOutcome {
            delta,
            dropped_rows,
        })
    }

    /// Run a compaction task for each of `groups` that is due, then stop or resume writes where the groups'
    /// L0 now says so.
    fn compact(&self, groups: &BTreeSet<GroupId>) {
        if !self.compactor_up.load(Ordering::Relaxed)
            || self.compaction_paused.load(Ordering::Relaxed)
        {
            self.apply_write_limits();
            return;
        }
        for &group in groups {
            let due = self.lock().compaction.due(group);
            if due {
                self.run_task(group);
            }
        }
        self.apply_write_limits();
    }

    /// The compactor node goes down (`false`) or comes back (`true`); whether that changed anything. Tasks
    /// run within a commit here, so none is ever in flight when it dies: a task that falls due while it is
    /// down waits, as RisingWave's meta cancels an expired compactor's tasks and schedules them again, and
    /// at restart every due group gets its task.
    pub fn set_compactor_up(&self, up: bool) -> bool {
        if self.compactor_up.swap(up, Ordering::Relaxed) == up {
            return false;
        }
        if up {
            let groups: BTreeSet<GroupId> = self.lock().compaction.groups.keys().copied().collect();
            self.compact(&groups);
        }
        true
    }

    /// Meta stops scheduling compaction (`true`: it was killed) or a meta starts scheduling it again
    /// (`false`); whether that changed anything. As with the compactor down, a group that falls due meanwhile
    /// waits, and every due group gets its task when scheduling resumes.
    pub fn set_compaction_paused(&self, paused: bool) -> bool {
        if self.compaction_paused.swap(paused, Ordering::Relaxed) == paused {
            return false;
        }
        if !paused {
            let groups: BTreeSet<GroupId> = self.lock().compaction.groups.keys().copied().collect();
            self.compact(&groups);
        }
        true
    }

    /// Meta's load of the version at its start (RisingWave's `load_meta_store_state`: the checkpoint, then
    /// the deltas its store keeps): from now on `version` is the latest. Whether it differed from the version
    /// held: if so the delta history is gone too, and a node at another id resynchronises from the full
    /// version, whether behind it or ahead (a store that lost deltas, or one restored from an older backup;
    /// the latest id then goes back, and the nodes' observers wake on any change of it). A node already at
    /// the loaded id keeps its version: in a store that is not damaged one id names one version. The data
    /// the versions point at (the object store's) stays as it is; so do the group id counter (an id
    /// sequence) and each group's L0.
    pub fn load_version(&self, version: HummockVersion) -> bool {
        let mut inner = self.lock();
        if inner.version == version {
            return false;
        }
        inner.deltas.clear();
        self.latest.set(version.id);
        inner.version = version;
        true
    }

    /// Whether the compactor node is up.
    pub fn compactor_up(&self) -> bool {
        self.compactor_up.load(Ordering::Relaxed)
    }

    /// One compaction task of `group`, as RisingWave's compactor runs it: the task's table ids are the tables
    /// whose data its input (the L0 sub-levels) holds and that are still members of the group (RisingWave's
    /// `compact_table_ids`, filtered by `existing_table_ids`); each must resolve in the catalog (the filter key
    /// extractor fetch), or the task fails. The catalog is asked without holding the manager's lock (meta's
    /// catalog may call into storage while it holds its own).
    fn run_task(&self, group: GroupId) {
        let compact_tables: Vec<TableId> = {
            let inner = self.lock();
            let Some(members) = inner.version.groups.get(&group) else {
                return;
            };
            let input = inner.compaction.input_tables(group);
            input.intersection(members).copied().collect()
        };
        let catalog = self
            .catalog
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let removed_tables: Vec<TableId> = match &catalog {
            Some(c) => compact_tables
                .iter()
                .copied()
                .filter(|t| c.table(*t).is_none())
                .collect(),
            None => Vec::new(),
        };
        let stats = &self.compaction_stats;
        stats.tasks.fetch_add(1, Ordering::Relaxed);
        let result = if removed_tables.is_empty() {
            stats.succeeded.fetch_add(1, Ordering::Relaxed);
            Ok(())
        } else {
            let e = CompactionError::FilterKeyExtractorNotFound {
                group,
                compact_tables,
                removed_tables,
            };
            stats.failed(&e);
            tracing::error!(group, "{e}");
            Err(e)
        };
        let now = self.now_us();
        self.lock().compaction.finish(group, result, now);
    }

    /// Stop the writes of groups whose L0 reached the limit, resume those back under it; each change is a
    /// version delta (nodes hold back a stopped group's data) and an event.
    fn apply_write_limits(&self) {
        let mut inner = self.lock();
        let changes = inner.compaction.write_limit_changes();
        if changes.is_empty() {
            return;
        }
        let now = self.now_us();
        let mut lines = Vec::new();
        for (group, stopped) in changes {
            let mce = inner.version.max_committed_epoch;
            let delta = self.push_delta(
                &mut inner,
                mce,
                vec![GroupChange::WriteLimit { group, stopped }],
            );
            let limit = inner.compaction.config.write_stop_sub_levels;
            let g = inner.compaction.groups.entry(group).or_default();
            if stopped {
                g.write_stopped_since_us = Some(now);
                self.compaction_stats
                    .write_stops
                    .fetch_add(1, Ordering::Relaxed);
                let why = g
                    .last_error
                    .as_ref()
                    .map_or_else(|| "no compaction yet".to_string(), |e| e.to_string());
                lines.push((
                    "write stop",
                    format!(
                        "group={group} sub_levels={} limit={limit} version={} cause={why}",
                        g.sub_levels, delta.id
                    ),
                ));
            } else {
                g.write_stopped_since_us = None;
                lines.push((
                    "write resume",
                    format!(
                        "group={group} sub_levels={} version={}",
                        g.sub_levels, delta.id
                    ),
                ));
            }
        }
        drop(inner);
        if let Some(log) = &self.log {
            for (kind, line) in lines {
                event!(log, kind, "{line}");
            }
        }
    }
}

/// RisingWave's `commit_epoch_sanity_check`: `epoch` is above the max committed epoch, and every sync comes
/// from a live worker at its current generation, with data of `epoch` or before.
fn commit_epoch_sanity_check(
    inner: &Inner,
    epoch: Epoch,
    syncs: &[SyncResult],
) -> StorageResult<()> {
    let mce = inner.version.max_committed_epoch;
    if epoch <= mce {
        return Err(StorageError::CommitEpochNotIncreasing {
            epoch,
            max_committed: mce,
        });
    }
    for s in syncs {
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
    Ok(())
}
