//! Compaction groups' L0, their compaction tasks against the catalog, and the write stop: a task whose input
//! holds data of a member table the catalog does not know fails (RisingWave's compactor line of #15144), the
//! group's L0 grows with each commit until its writes stop (the stall of #16511 and #20010), and a node's
//! sync of the group's data then waits; unregistering the table lets the next task succeed and the writes
//! resume. A task whose input holds no data of such a table succeeds: its table ids are narrowed to its
//! input's.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use epochlab_common::catalog::TableDesc;
use epochlab_common::{DataType, Epoch, TableId, VnodeCount, WorkerId};
use epochlab_storage::{
    CommittedStore, CompactionCatalog, CompactionConfig, CompactionError, GroupChange,
    HummockManager, LocalStateStore, NewLocalOptions, NodeStorage,
};

const LIVE: TableId = TableId(1);
const STALE: TableId = TableId(2);
const GROUP: u64 = 3;
const W: WorkerId = WorkerId(1);

/// A catalog of the tables it holds.
#[derive(Default)]
struct Catalog(Mutex<BTreeSet<TableId>>);

impl CompactionCatalog for Catalog {
    fn table(&self, table: TableId) -> Option<Arc<TableDesc>> {
        let known = self.0.lock().unwrap().contains(&table);
        known.then(|| {
            Arc::new(TableDesc::hash(
                table,
                vec![DataType::Int64],
                vec![0],
                vec![0],
                VnodeCount::new(16).unwrap(),
            ))
        })
    }
}

struct Fixture {
    mgr: Arc<HummockManager>,
    node: NodeStorage,
    catalog: Arc<Catalog>,
}

impl Fixture {
    /// Both tables in static group 3, the catalog knowing only `LIVE`; compaction at 2 sub-levels, writes
    /// stop at 4.
    fn new() -> Self {
        let committed = CommittedStore::default();
        let mgr = Arc::new(HummockManager::new(committed.clone(), None));
        mgr.set_compaction_config(CompactionConfig {
            trigger_sub_levels: 2,
            write_stop_sub_levels: 4,
        });
        let catalog = Arc::new(Catalog::default());
        catalog.0.lock().unwrap().insert(LIVE);
        mgr.set_compaction_catalog(catalog.clone());
        mgr.register_tables_in(GROUP, &[LIVE]);
        mgr.register_tables_in(GROUP, &[STALE]);
        mgr.set_context(W, 1);
        let node = NodeStorage::new(W, committed, Default::default(), 1);
        let f = Self { mgr, node, catalog };
        f.catch_up();
        f
    }

    fn catch_up(&self) {
        let pinned = self.node.pinned_version().id;
        for d in self.mgr.deltas_after(pinned).expect("deltas available") {
            self.node.apply_version_delta(&d).unwrap();
        }
    }

    /// Write a row to each of `stores` at `epoch`, flush them, seal the epoch.
    fn write(&self, stores: &mut [&mut LocalStateStore], epoch: u64) {
        for store in stores.iter_mut() {
            let key = Bytes::from(format!("k{epoch}"));
            store.insert(key, Bytes::from_static(b"v"), None).unwrap();
            store.flush().unwrap();
            store.seal_current_epoch(Epoch::test(epoch + 1)).unwrap();
        }
        self.node.seal_epoch(Epoch::test(epoch)).unwrap();
    }

    async fn checkpoint(&self, stores: &mut [&mut LocalStateStore], epoch: u64) {
        self.write(stores, epoch);
        let sync = self.node.sync(Epoch::test(epoch)).await.unwrap();
        self.mgr
            .commit_epoch(Epoch::test(epoch), vec![sync])
            .unwrap();
        self.catch_up();
    }

    fn sub_levels(&self) -> u32 {
        self.mgr.group_compaction()[&GROUP].sub_levels
    }
}

/// A static group takes tables as they come and outlives its last member.
#[test]
fn a_static_group_is_shared_and_never_destroyed() {
    let mgr = HummockManager::new(CommittedStore::default(), None);
    let first = mgr.register_tables_in(GROUP, &[LIVE]);
    assert!(matches!(
        first.group_changes[..],
        [GroupChange::Create { group: GROUP, .. }]
    ));
    let second = mgr.register_tables_in(GROUP, &[STALE]);
    assert!(matches!(
        second.group_changes[..],
        [GroupChange::AddTables { group: GROUP, .. }]
    ));
    assert_eq!(
        second.to_string().split("): ").nth(1),
        Some("mce=0 add [TableId(2)] to group 3")
    );
    let gone = mgr.unregister_tables(&[LIVE, STALE], "test").unwrap();
    assert_eq!(gone.group_changes.len(), 1, "{gone}");
    assert!(mgr.current_version().groups.contains_key(&GROUP));
}

/// While the catalog knows every member, the group's L0 never holds more than the trigger.
#[tokio::test(start_paused = true)]
async fn compaction_keeps_l0_below_the_trigger() {
    let f = Fixture::new();
    f.catalog.0.lock().unwrap().insert(STALE);
    let mut store = f.node.new_local(NewLocalOptions::new(LIVE));
    store.init(Epoch::test(1));
    for epoch in 1..20 {
        f.checkpoint(&mut [&mut store], epoch).await;
        assert!(f.sub_levels() < 2, "epoch {epoch}: {}", f.sub_levels());
    }
    let stats = f.mgr.compaction_stats();
    assert_eq!(stats.failures("filter_key_extractor_not_found"), 0);
    assert!(stats.succeeded.load(std::sync::atomic::Ordering::Relaxed) >= 9);
}

/// The stale member's data in L0 fails every task; at the limit the group's writes stop, and the node's next
/// sync of the group's data waits; the unregister of the stale table lets a task succeed, the writes resume
/// and the sync finishes.
#[tokio::test(start_paused = true)]
async fn an_unknown_members_data_fails_compaction_until_writes_stop_and_its_unregister_resumes_them()
 {
    let f = Fixture::new();
    let mut store = f.node.new_local(NewLocalOptions::new(LIVE));
    let mut stale = f.node.new_local(NewLocalOptions::new(STALE));
    store.init(Epoch::test(1));
    stale.init(Epoch::test(1));
    f.checkpoint(&mut [&mut store, &mut stale], 1).await;
    drop(stale);
    for epoch in 2..=4 {
        f.checkpoint(&mut [&mut store], epoch).await;
    }
    let g = f.mgr.group_compaction()[&GROUP].clone();
    assert_eq!(g.sub_levels, 4);
    let e = CompactionError::FilterKeyExtractorNotFound {
        group: GROUP,
        compact_tables: vec![LIVE, STALE],
        removed_tables: vec![STALE],
    };
    assert_eq!(
        e.to_string(),
        "Failed to fetch filter key extractor tables [{1, 2}. [[2]] may be removed by meta-service. "
    );
    assert_eq!(g.last_error, Some(e));
    assert_eq!(g.failures, 3);
    assert!(g.write_stopped_since_us.is_some());
    assert!(f.node.pinned_version().is_write_stopped(GROUP));
    assert_eq!(f.mgr.write_stopped_groups().len(), 1);

    f.write(&mut [&mut store], 5);
    let node = f.node.clone();
    let sync = tokio::spawn(async move { node.sync(Epoch::test(5)).await });
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(
        !sync.is_finished(),
        "the sync waits while writes are stopped"
    );

    f.mgr.unregister_tables(&[STALE], "purge");
    f.catch_up();
    let synced = sync.await.unwrap().unwrap();
    assert_eq!(synced.ssts.len(), 1);
    assert_eq!(f.sub_levels(), 0);
    assert!(!f.node.pinned_version().is_write_stopped(GROUP));
    let stats = f.mgr.compaction_stats();
    assert_eq!(stats.failures("filter_key_extractor_not_found"), 3);
    assert_eq!(
        stats.write_stops.load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

/// A member the catalog does not know, with no data in the group's L0, fails no task: a task's table ids
/// are those whose data its input holds.
#[tokio::test(start_paused = true)]
async fn an_unknown_member_without_data_in_l0_fails_no_task() {
    let f = Fixture::new();
    let mut store = f.node.new_local(NewLocalOptions::new(LIVE));
    store.init(Epoch::test(1));
    for epoch in 1..=8 {
        f.checkpoint(&mut [&mut store], epoch).await;
        assert!(f.sub_levels() < 2, "epoch {epoch}: {}", f.sub_levels());
    }
    let stats = f.mgr.compaction_stats();
    assert_eq!(stats.failures("filter_key_extractor_not_found"), 0);
    assert_eq!(
        stats.succeeded.load(std::sync::atomic::Ordering::Relaxed),
        4
    );
    assert!(f.mgr.write_stopped_groups().is_empty());
}

/// A reset (clear) of the node fails a sync held back by a write stop.
#[tokio::test(start_paused = true)]
async fn a_clear_fails_a_sync_held_back_by_a_write_stop() {
    let f = Fixture::new();
    let mut store = f.node.new_local(NewLocalOptions::new(LIVE));
    store.init(Epoch::test(1));
    let mut stale = f.node.new_local(NewLocalOptions::new(STALE));
    stale.init(Epoch::test(1));
    f.checkpoint(&mut [&mut store, &mut stale], 1).await;
    drop(stale);
    for epoch in 2..=4 {
        f.checkpoint(&mut [&mut store], epoch).await;
    }
    f.write(&mut [&mut store], 5);
    let node = f.node.clone();
    let sync = tokio::spawn(async move { node.sync(Epoch::test(5)).await });
    tokio::time::sleep(Duration::from_secs(1)).await;
    f.node.clear(2);
    let err = sync.await.unwrap().unwrap_err();
    assert!(err.to_string().contains("has been cleared"), "{err}");
}

/// While no meta schedules compaction (the leader was killed), a group that falls due gets no task, even
/// when the compactor comes back meanwhile; the next leader's scheduling runs it.
#[tokio::test(start_paused = true)]
async fn no_task_runs_while_compaction_is_paused_and_the_next_leader_runs_the_due_ones() {
    let f = Fixture::new();
    f.catalog.0.lock().unwrap().insert(STALE);
    let mut store = f.node.new_local(NewLocalOptions::new(LIVE));
    store.init(Epoch::test(1));
    assert!(f.mgr.set_compaction_paused(true));
    assert!(!f.mgr.set_compaction_paused(true), "paused already");
    for epoch in 1..=3 {
        f.checkpoint(&mut [&mut store], epoch).await;
    }
    assert!(f.mgr.set_compactor_up(false));
    assert!(f.mgr.set_compactor_up(true));
    let tasks = || {
        f.mgr
            .compaction_stats()
            .tasks
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    assert_eq!((tasks(), f.sub_levels()), (0, 3));
    assert!(f.mgr.set_compaction_paused(false));
    assert_eq!((tasks(), f.sub_levels()), (1, 0));
}

/// A leader's load of its store's version replaces the version held, and the history of deltas with it: a
/// node behind it or ahead of it resynchronises from the full version. Loading the version held changes
/// nothing.
#[test]
fn a_loaded_version_replaces_the_one_held_and_its_deltas() {
    let mgr = HummockManager::new(CommittedStore::default(), None);
    mgr.register_tables_in(GROUP, &[LIVE]);
    let stored = mgr.current_version();
    mgr.register_tables_in(GROUP, &[STALE]);
    assert!(!mgr.load_version(mgr.current_version()));
    assert_eq!(mgr.deltas_after(stored.id).map(|d| d.len()), Ok(1));

    let ahead = mgr.current_version().id;
    assert!(mgr.load_version(stored.clone()));
    assert_eq!(mgr.current_version(), stored);
    assert_eq!(mgr.registered_tables(), BTreeSet::from([LIVE]));
    assert_eq!(mgr.latest_version_id().get(), stored.id);
    assert_eq!(mgr.deltas_after(0), Err(stored.clone()), "a node behind");
    assert_eq!(mgr.deltas_after(ahead), Err(stored), "a node ahead");
}
