//! The read-visibility rules of the store (reference §3.5, §4): which layer answers a read across flush,
//! seal, sync, commit, version application, clear and unregister.

use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;
use epochlab_common::{Epoch, TableId, WorkerId};
use epochlab_storage::local::collect_map;
use epochlab_storage::{
    CommittedStore, HummockManager, LocalStateStore, NewLocalOptions, NodeStorage,
    OpConsistencyLevel, StorageError,
};

const T: TableId = TableId(7);
const W: WorkerId = WorkerId(1);

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn e(n: u64) -> Epoch {
    Epoch::test(n)
}

struct Fixture {
    mgr: Arc<HummockManager>,
    node: NodeStorage,
}

impl Fixture {
    fn new() -> Self {
        let committed = CommittedStore::default();
        let mgr = Arc::new(HummockManager::new(committed.clone(), None));
        mgr.register_tables(&[T]);
        mgr.set_context(W, 1);
        let node = NodeStorage::new(W, committed, Default::default(), 1);
        let f = Self { mgr, node };
        f.catch_up();
        f
    }

    /// Deliver every pending version delta to the node, in order.
    fn catch_up(&self) {
        let pinned = self.node.pinned_version().id;
        for d in self.mgr.deltas_after(pinned).expect("deltas available") {
            self.node.apply_version_delta(&d).unwrap();
        }
    }

    fn local(&self, epoch: Epoch) -> LocalStateStore {
        let mut s = self.node.new_local(NewLocalOptions::new(T));
        s.init(epoch);
        s
    }

    /// Seal, sync and commit `epoch` on the node (without delivering the delta).
    async fn checkpoint(&self, epoch: Epoch) {
        self.node.seal_epoch(epoch).unwrap();
        let sync = self.node.sync(epoch).await.unwrap();
        self.mgr.commit_epoch(epoch, vec![sync]).unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn visibility_matrix() {
    let f = Fixture::new();
    let mut writer = f.local(e(1));
    writer.insert(b("k1"), b("v1"), None).unwrap();

    // Mem-table: visible to the writer only.
    let reader = f.local(e(1));
    assert_eq!(writer.get(b"k1").unwrap(), Some(b("v1")));
    assert_eq!(reader.get(b"k1").unwrap(), None);

    // Flushed to staging: still the writer's alone.
    writer.flush().unwrap();
    assert!(!writer.is_dirty());
    assert_eq!(writer.get(b"k1").unwrap(), Some(b("v1")));
    assert_eq!(reader.get(b"k1").unwrap(), None);
    assert!(f.node.uncommitted_bytes() > 0);

    // Sealed and synced but not committed: no change for readers.
    writer.seal_current_epoch(e(2)).unwrap();
    f.node.seal_epoch(e(1)).unwrap();
    let sync = f.node.sync(e(1)).await.unwrap();
    assert_eq!(f.node.uncommitted_bytes(), 0);
    assert_eq!(writer.get(b"k1").unwrap(), Some(b("v1")));
    assert_eq!(reader.get(b"k1").unwrap(), None);

    // Committed by meta, delta not yet delivered: the node's pinned version still says epoch 0.
    f.mgr.commit_epoch(e(1), vec![sync]).unwrap();
    assert_eq!(f.node.max_committed_epoch(), Epoch::INVALID);
    let late = f.local(e(2));
    assert_eq!(
        late.get(b"k1").unwrap(),
        None,
        "committed data is read only up to the pinned epoch"
    );
    assert_eq!(
        writer.get(b"k1").unwrap(),
        Some(b("v1")),
        "staging still serves the writer"
    );

    // Delta delivered: staging at or below the new committed epoch is pruned; committed serves everyone.
    f.catch_up();
    assert_eq!(f.node.max_committed_epoch(), e(1));
    assert!(
        f.node
            .stats()
            .pruned_imms
            .load(std::sync::atomic::Ordering::Relaxed)
            >= 1
    );
    assert_eq!(writer.get(b"k1").unwrap(), Some(b("v1")));
    assert_eq!(late.get(b"k1").unwrap(), Some(b("v1")));

    // A reader at an epoch below the write does not see it.
    let old_reader = f.local(Epoch(1)); // strictly below test epoch 1
    assert_eq!(old_reader.get(b"k1").unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn unregister_empties_committed_reads_but_not_uncommitted_ones() {
    let f = Fixture::new();
    let mut s = f.local(e(1));
    s.insert(b("vnode0"), b("pos=10"), None).unwrap();
    s.flush().unwrap();
    s.seal_current_epoch(e(2)).unwrap();
    f.checkpoint(e(1)).await;
    f.catch_up();
    assert_eq!(
        s.get(b"vnode0").unwrap(),
        Some(b("pos=10")),
        "served from committed"
    );

    // Epoch 2: another write, flushed but not committed.
    s.insert(b("vnode1"), b("pos=3"), None).unwrap();
    s.flush().unwrap();
    // Epoch 3 is open with a mem-table write.
    s.seal_current_epoch(e(3)).unwrap();
    f.node.seal_epoch(e(2)).unwrap();
    s.insert(b("vnode2"), b("pos=1"), None).unwrap();

    // Meta unregisters the table; the node applies the delta.
    f.mgr.unregister_tables(&[T], "test").unwrap();
    f.catch_up();
    assert!(!f.node.pinned_version().contains_table(T));
    assert_eq!(
        s.get(b"vnode0").unwrap(),
        None,
        "committed data of an unregistered table reads as empty"
    );
    assert_eq!(
        s.get(b"vnode1").unwrap(),
        Some(b("pos=3")),
        "staging stays visible"
    );
    assert_eq!(
        s.get(b"vnode2").unwrap(),
        Some(b("pos=1")),
        "mem-table stays visible"
    );
    let all = collect_map(s.iter((Bound::Unbounded, Bound::Unbounded)).unwrap());
    assert_eq!(
        all.keys().cloned().collect::<Vec<_>>(),
        vec![b("vnode1"), b("vnode2")]
    );

    // The update of vnode0 now fails exactly as the backfill's did: the old row is gone.
    let err = s
        .insert(b("vnode0"), b("pos=20"), Some(b("pos=10")))
        .unwrap_err();
    assert!(
        matches!(&err, StorageError::InconsistentOperation(i) if i.prev.is_none()),
        "{err}"
    );

    // Committing epoch 2 drops the table's data (it is in no group) and prunes the staging copy.
    let sync = f.node.sync(e(2)).await.unwrap();
    let outcome = f.mgr.commit_epoch(e(2), vec![sync]).unwrap();
    assert_eq!(outcome.dropped_rows.get(&T), Some(&1));
    assert_eq!(f.mgr.dropped_write_count(), 1);
    f.catch_up();
    assert_eq!(
        s.get(b"vnode1").unwrap(),
        None,
        "pruned staging is not replaced by anything"
    );
}

#[tokio::test(start_paused = true)]
async fn clear_drops_staging_fails_pending_syncs_and_fences_old_writers() {
    let f = Fixture::new();
    f.node
        .set_upload_latency(std::time::Duration::from_millis(50));
    let mut s = f.local(e(1));
    s.insert(b("a"), b("1"), None).unwrap();
    s.flush().unwrap();
    s.seal_current_epoch(e(2)).unwrap();
    f.node.seal_epoch(e(1)).unwrap();

    let node = f.node.clone();
    let pending = tokio::spawn(async move { node.sync(e(1)).await });
    tokio::task::yield_now().await;
    f.node.clear(2);
    let err = pending.await.unwrap().unwrap_err();
    assert!(matches!(err, StorageError::SyncCleared { .. }), "{err}");
    assert_eq!(s.get(b"a").unwrap(), None, "staging cleared");
    assert_eq!(f.node.uncommitted_bytes(), 0);

    // The old store belongs to generation 1: its next flush is rejected and counted.
    s.insert(b("b"), b("2"), None).unwrap();
    let err = s.flush().unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::StaleGeneration {
                generation: 1,
                current: 2,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        f.node
            .stats()
            .rejected_stale_writes
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );

    // Meta rejects data from the old generation, and from a dead worker.
    f.mgr.set_context(W, 2);
    let stale = epochlab_storage::SyncResult {
        epoch: e(1),
        worker: W,
        generation: 1,
        ssts: vec![],
        table_watermarks: vec![],
    };
    let err = f.mgr.commit_epoch(e(1), vec![stale.clone()]).unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::InvalidContext {
                why: "of a stale generation",
                ..
            }
        ),
        "{err}"
    );
    f.mgr.remove_context(W);
    let err = f.mgr.commit_epoch(e(1), vec![stale]).unwrap_err();
    assert!(
        matches!(err, StorageError::InvalidContext { why: "dead", .. }),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn commit_epochs_must_increase_and_deltas_must_not_gap() {
    let f = Fixture::new();
    f.mgr.commit_epoch(e(5), vec![]).unwrap();
    let err = f.mgr.commit_epoch(e(5), vec![]).unwrap_err();
    assert!(matches!(err, StorageError::CommitEpochNotIncreasing { .. }));
    let err = f.mgr.commit_epoch(e(4), vec![]).unwrap_err();
    assert!(matches!(err, StorageError::CommitEpochNotIncreasing { .. }));

    f.mgr.commit_epoch(e(6), vec![]).unwrap();
    let deltas = f.mgr.deltas_after(f.node.pinned_version().id).unwrap();
    assert_eq!(deltas.len(), 2);
    let err = f.node.apply_version_delta(&deltas[1]).unwrap_err();
    assert!(matches!(err, StorageError::VersionGap { .. }), "{err}");
    f.node.apply_version_delta(&deltas[0]).unwrap();
    f.node.apply_version_delta(&deltas[1]).unwrap();
    assert_eq!(f.node.max_committed_epoch(), e(6));
}

#[tokio::test(start_paused = true)]
async fn seal_rules() {
    let f = Fixture::new();
    let mut s = f.local(e(2));
    s.insert(b("a"), b("1"), None).unwrap();
    assert!(matches!(
        s.seal_current_epoch(e(3)),
        Err(StorageError::SealDirty { .. })
    ));
    s.flush().unwrap();
    assert!(matches!(
        s.seal_current_epoch(e(2)),
        Err(StorageError::EpochNotIncreasing { .. })
    ));
    assert!(matches!(
        s.seal_current_epoch(e(1)),
        Err(StorageError::EpochNotIncreasing { .. })
    ));
    s.seal_current_epoch(e(3)).unwrap();
    f.node.seal_epoch(e(2)).unwrap();
    assert!(matches!(
        f.node.seal_epoch(e(2)),
        Err(StorageError::SealNotIncreasing { .. })
    ));
    let uninit = f.node.new_local(NewLocalOptions::new(T));
    assert!(matches!(
        uninit.get(b"a"),
        Err(StorageError::NotInitialized { .. })
    ));
}

#[tokio::test(start_paused = true)]
async fn iter_merges_layers_newest_first() {
    let f = Fixture::new();
    let mut s = f.local(e(1));
    for k in ["a", "b", "c", "d"] {
        s.insert(b(k), b("committed"), None).unwrap();
    }
    s.flush().unwrap();
    s.seal_current_epoch(e(2)).unwrap();
    f.checkpoint(e(1)).await;
    f.catch_up();
    // Staging (epoch 2): delete b, update c, insert e.
    s.delete(b("b"), b("committed")).unwrap();
    s.insert(b("c"), b("staged"), Some(b("committed"))).unwrap();
    s.insert(b("e"), b("staged"), None).unwrap();
    s.flush().unwrap();
    s.seal_current_epoch(e(3)).unwrap();
    // Mem-table (epoch 3): delete c, re-insert b, update a.
    s.delete(b("c"), b("staged")).unwrap();
    s.insert(b("b"), b("mem"), None).unwrap();
    s.insert(b("a"), b("mem"), Some(b("committed"))).unwrap();

    let all: Vec<(Bytes, Bytes)> = s
        .iter((Bound::Unbounded, Bound::Unbounded))
        .unwrap()
        .collect();
    let expect = vec![
        (b("a"), b("mem")),
        (b("b"), b("mem")),
        (b("d"), b("committed")),
        (b("e"), b("staged")),
    ];
    assert_eq!(all, expect);
    let ranged: Vec<Bytes> = s
        .iter((Bound::Excluded(b("a")), Bound::Included(b("d"))))
        .unwrap()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(ranged, vec![b("b"), b("d")]);
}

#[tokio::test(start_paused = true)]
async fn committed_iteration_crosses_batches() {
    let f = Fixture::new();
    let mut s = f.local(e(1));
    for i in 0..2000u32 {
        s.insert(Bytes::from(i.to_be_bytes().to_vec()), b("v"), None)
            .unwrap();
    }
    s.flush().unwrap();
    s.seal_current_epoch(e(2)).unwrap();
    f.checkpoint(e(1)).await;
    f.catch_up();
    let keys: Vec<u32> = s
        .iter((Bound::Unbounded, Bound::Unbounded))
        .unwrap()
        .map(|(k, _)| u32::from_be_bytes(k.as_ref().try_into().unwrap()))
        .collect();
    assert_eq!(keys, (0..2000).collect::<Vec<_>>());
}

#[tokio::test(start_paused = true)]
async fn replicated_store_sees_its_writes_but_never_uploads_them() {
    let f = Fixture::new();
    let mut opts = NewLocalOptions::new(T);
    opts.is_replicated = true;
    opts.op_consistency_level = OpConsistencyLevel::Inconsistent;
    let mut r = f.node.new_local(opts);
    r.init(e(1));
    r.insert(b("x"), b("1"), None).unwrap();
    r.flush().unwrap();
    assert_eq!(r.get(b"x").unwrap(), Some(b("1")));
    assert_eq!(f.node.uncommitted_bytes(), 0);
    r.seal_current_epoch(e(2)).unwrap();
    f.node.seal_epoch(e(1)).unwrap();
    let sync = f.node.sync(e(1)).await.unwrap();
    assert!(sync.ssts.is_empty());
}

#[tokio::test(start_paused = true)]
async fn wait_for_epoch_returns_once_the_version_arrives() {
    let f = Fixture::new();
    let node = f.node.clone();
    let waiter = tokio::spawn(async move {
        node.wait_for_epoch(e(3)).await;
    });
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    f.mgr.commit_epoch(e(3), vec![]).unwrap();
    f.catch_up();
    waiter.await.unwrap();
}

/// An epoch that outgrows the mem-table spills it into imms (and merges them past four); reads, the
/// consistency rules across spills and the committed result are those of one big mem-table.
#[tokio::test(start_paused = true)]
async fn spilled_epochs_read_and_commit_like_one_mem_table() {
    use epochlab_storage::MEM_TABLE_SPILL_THRESHOLD_BYTES;
    let f = Fixture::new();
    let mut w = f.local(e(1));
    let key = |i: u32| Bytes::from(format!("key{i:08}"));
    let value = |i: u32| Bytes::from(format!("value {i:08} {}", "x".repeat(40)));
    let n = (8 * MEM_TABLE_SPILL_THRESHOLD_BYTES / 60) as u32;
    let mut spills = 0;
    for i in 0..n {
        w.insert(key(i), value(i), None).unwrap();
        spills += usize::from(w.try_flush().unwrap());
    }
    assert!(spills >= 6, "{spills} spills");
    let counted = f
        .node
        .stats()
        .mem_table_spills
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(counted as usize, spills);
    // Across spills: an insert over a spilled key is an error, a delete with its value hides it.
    assert!(matches!(
        w.insert(key(3), value(3), None),
        Err(StorageError::InconsistentOperation(_))
    ));
    w.delete(key(5), value(5)).unwrap();
    w.insert(key(6), value(60), Some(value(6))).unwrap();
    assert_eq!(w.get(&key(5)).unwrap(), None);
    assert_eq!(w.get(&key(6)).unwrap(), Some(value(60)));
    assert_eq!(w.get(&key(n - 1)).unwrap(), Some(value(n - 1)));
    w.flush().unwrap();
    w.seal_current_epoch(e(2)).unwrap();
    f.checkpoint(e(1)).await;
    f.catch_up();
    let r = f.local(e(2));
    let all = collect_map(r.iter((Bound::Unbounded, Bound::Unbounded)).unwrap());
    assert_eq!(all.len(), n as usize - 1);
    assert_eq!(all.get(&key(6)), Some(&value(60)));
    assert_eq!(all.get(&key(5)), None);
    assert_eq!(all.get(&key(7)), Some(&value(7)));
}

/// A table watermark (keys are the vnode's two bytes, then the pk): from the epoch it was sealed at, the
/// writer's own reads skip the keys of its vnodes below it at once; another reader's, once it is committed
/// and the node has the delta; the Hummock version keeps it. A key below it reads as missing: a delete of one
/// is a delete of a missing row.
#[tokio::test(start_paused = true)]
async fn a_table_watermark_hides_the_keys_below_it_from_its_epoch() {
    let f = Fixture::new();
    let key = |vnode: u16, pk: u8| {
        let mut k = vnode.to_be_bytes().to_vec();
        k.push(pk);
        Bytes::from(k)
    };
    let mut w = f.local(e(1));
    for vnode in [0, 1] {
        for pk in [1, 5, 9] {
            w.insert(key(vnode, pk), b("v"), None).unwrap();
        }
    }
    w.flush().unwrap();
    w.seal_current_epoch(e(2)).unwrap();
    f.checkpoint(e(1)).await;
    f.catch_up();
    let below_5_in_vnode_0 = epochlab_storage::VnodeWatermark {
        vnodes: Arc::new(epochlab_common::Bitmap::from_bools(&[true, false])),
        watermark: vec![5],
    };
    w.seal_current_epoch_with(e(3), Some(below_5_in_vnode_0))
        .unwrap();
    let full = || (Bound::Unbounded, Bound::Unbounded);
    let keys = |s: &LocalStateStore| collect_map(s.iter(full()).unwrap()).len();
    assert_eq!(
        w.get(&key(0, 1)).unwrap(),
        None,
        "the writer skips it at once"
    );
    assert_eq!(
        w.get(&key(0, 5)).unwrap(),
        Some(b("v")),
        "the watermark itself stays"
    );
    assert_eq!(
        w.get(&key(1, 1)).unwrap(),
        Some(b("v")),
        "another vnode's stays"
    );
    assert_eq!(keys(&w), 5);
    let other = f.local(e(3));
    assert_eq!(
        other.get(&key(0, 1)).unwrap(),
        Some(b("v")),
        "not committed yet"
    );
    f.checkpoint(e(2)).await;
    f.catch_up();
    assert_eq!(other.get(&key(0, 1)).unwrap(), None);
    assert_eq!(keys(&other), 5);
    assert_eq!(f.mgr.committed_store().count(T, e(2)), 5);
    assert_eq!(
        f.mgr.committed_store().count(T, e(1)),
        6,
        "a read before it sees the key"
    );
    assert_eq!(f.mgr.current_version().table_watermarks[&T][&0], vec![5]);
    let err = w.delete(key(0, 1), b("v")).unwrap_err();
    assert!(matches!(err, StorageError::InconsistentOperation(_)));
}
