//! StateTable rules: key layout and order, distributions, vnode ownership, consistency errors, epochs.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use epochlab_common::{
    Bitmap, DataType, Epoch, EpochPair, Op, OrderType, OwnedRow, StreamChunk, TableId, VirtualNode,
    VnodeCount, WorkerId, row,
};
use epochlab_state_table::{Check, Distribution, Record, StateTable, StateTableError, TableDesc};
use epochlab_storage::{CommittedStore, HummockManager, NodeStorage};
use proptest::prelude::*;

struct Env {
    mgr: HummockManager,
    node: NodeStorage,
}

impl Env {
    fn new(tables: &[TableId]) -> Self {
        let committed = CommittedStore::default();
        let mgr = HummockManager::new(committed.clone(), None);
        mgr.register_tables(tables);
        mgr.set_context(WorkerId(1), 1);
        let node = NodeStorage::new(WorkerId(1), committed, mgr.current_version(), 1);
        Self { mgr, node }
    }

    /// Seal, sync and commit `epoch`, and deliver the version to the node.
    fn checkpoint(&self, epoch: Epoch) {
        self.node.seal_epoch(epoch).unwrap();
        let sync = block_on(self.node.sync(epoch)).unwrap();
        let outcome = self.mgr.commit_epoch(epoch, vec![sync]).unwrap();
        self.node.apply_version_delta(&outcome.delta).unwrap();
    }
}

/// Sync has no upload latency here, so its future completes on the first poll.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(f)
}

fn e(n: u64) -> Epoch {
    Epoch::test(n)
}

fn pair(curr: u64, prev: u64) -> EpochPair {
    EpochPair::new(e(curr), e(prev))
}

fn kv_desc(id: u32, count: u32) -> Arc<TableDesc> {
    Arc::new(TableDesc::hash(
        TableId(id),
        vec![DataType::Int64, DataType::Varchar],
        vec![0],
        vec![0],
        VnodeCount::new(count).unwrap(),
    ))
}

fn all(count: usize) -> Arc<Bitmap> {
    Arc::new(Bitmap::ones(count))
}

#[test]
fn backfill_state_table_round_trip_and_the_missing_row_message() {
    let id = TableId(3);
    let env = Env::new(&[id]);
    let desc = Arc::new(TableDesc::backfill_state(
        id,
        &[DataType::Int64],
        VnodeCount::DEFAULT,
    ));
    let mut t = StateTable::new(desc, &env.node, all(256));
    t.init_epoch(pair(1, 0));
    let progress = row![0i16, 41i64, false, 42i64];
    t.insert(&progress).unwrap();
    assert_eq!(t.get_row(&row![0i16]).unwrap(), Some(progress.clone()));
    t.commit(pair(2, 1)).unwrap();
    env.checkpoint(e(1));
    assert_eq!(
        t.get_row(&row![0i16]).unwrap(),
        Some(progress.clone()),
        "read back from committed"
    );

    // The table is unregistered under the running table: its committed progress row is gone.
    let delta = env.mgr.unregister_tables(&[id], "test").unwrap();
    env.node.apply_version_delta(&delta).unwrap();
    assert_eq!(t.get_row(&row![0i16]).unwrap(), None);
    let err = t
        .update(&progress, &row![0i16, 80i64, false, 81i64])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "row [Some(Int16(0))] not found (by the state-table write check)"
    );
    assert!(matches!(
        err,
        StateTableError::RowNotFound {
            check: Check::StateTableWrite,
            ..
        }
    ));
}

/// `update_watermark` cleans the rows whose first pk column is below it, from the epoch it is committed with:
/// they read as missing in this epoch and after it, committed or not; rows at or above it stay; a write of a
/// cleaned row's delete is a delete of a missing row.
#[test]
fn a_watermark_cleans_the_rows_below_it_from_its_commit() {
    let id = TableId(9);
    let env = Env::new(&[id]);
    let desc = Arc::new(TableDesc::hash(
        id,
        vec![DataType::Int64, DataType::Int64],
        vec![0, 1],
        vec![1],
        VnodeCount::new(8).unwrap(),
    ));
    let mut t = StateTable::new(desc, &env.node, all(8));
    t.init_epoch(pair(1, 0));
    for ts in 0..10i64 {
        t.insert(&row![ts, ts * 7]).unwrap();
    }
    t.commit(pair(2, 1)).unwrap();
    env.checkpoint(e(1));
    t.update_watermark(Some(epochlab_common::ScalarImpl::Int64(4)), true);
    t.commit(pair(3, 2)).unwrap();
    let firsts = |t: &StateTable| -> Vec<i64> {
        let mut v: Vec<i64> = t
            .iter_all()
            .unwrap()
            .iter()
            .map(|r| r.datum_at(0).as_ref().and_then(|d| d.as_int64()).unwrap())
            .collect();
        v.sort();
        v
    };
    assert_eq!(firsts(&t), (4..10).collect::<Vec<_>>(), "before its commit");
    env.checkpoint(e(2));
    assert_eq!(firsts(&t), (4..10).collect::<Vec<_>>());
    assert_eq!(t.get_row(&row![3i64, 21i64]).unwrap(), None);
    assert_eq!(env.mgr.committed_store().count(id, e(2)), 6);
    let err = t.delete(&row![3i64, 21i64]).unwrap_err();
    assert!(matches!(err, StateTableError::RowNotFound { .. }), "{err}");
    // A lazy cleaning waits for its period: the first lazy watermark after an eager one applies nothing.
    t.update_watermark(Some(epochlab_common::ScalarImpl::Int64(8)), false);
    t.commit(pair(4, 3)).unwrap();
    assert_eq!(firsts(&t), (4..10).collect::<Vec<_>>());
    for epoch in 4..(4 + epochlab_state_table::STATE_CLEANING_PERIOD_EPOCH as u64) {
        t.commit(pair(epoch + 1, epoch)).unwrap();
    }
    t.update_watermark(Some(epochlab_common::ScalarImpl::Int64(8)), false);
    let next = 4 + epochlab_state_table::STATE_CLEANING_PERIOD_EPOCH as u64;
    t.commit(pair(next + 1, next)).unwrap();
    assert_eq!(firsts(&t), vec![8, 9]);
}

#[test]
fn consistency_errors() {
    let env = Env::new(&[TableId(1)]);
    let mut t = StateTable::new(kv_desc(1, 16), &env.node, all(16));
    t.init_epoch(pair(1, 0));
    t.insert(&row![1i64, "a"]).unwrap();
    assert!(matches!(
        t.insert(&row![1i64, "b"]),
        Err(StateTableError::RowExists { .. })
    ));
    assert!(matches!(
        t.delete(&row![2i64, "a"]),
        Err(StateTableError::RowNotFound { .. })
    ));
    assert!(matches!(
        t.delete(&row![1i64, "zzz"]),
        Err(StateTableError::OldRowMismatch { .. })
    ));
    assert!(matches!(
        t.update(&row![1i64, "a"], &row![2i64, "a"]),
        Err(StateTableError::PkChanged { .. })
    ));
    t.update(&row![1i64, "a"], &row![1i64, "b"]).unwrap();
    assert_eq!(t.get_row(&row![1i64]).unwrap(), Some(row![1i64, "b"]));
    t.write_record(&Record::Delete {
        old_row: row![1i64, "b"],
    })
    .unwrap();
    assert_eq!(t.get_row(&row![1i64]).unwrap(), None);
}

#[test]
fn vnode_ownership_and_distributions() {
    let env = Env::new(&[TableId(1), TableId(2), TableId(3)]);
    // Hash distribution over 4 vnodes; this table owns only vnodes 0..2.
    let desc = kv_desc(1, 4);
    let mut t = StateTable::new(desc, &env.node, Arc::new(Bitmap::from_range(4, 0..2)));
    t.init_epoch(pair(1, 0));
    let mut owned = 0;
    for i in 0..40i64 {
        let r = row![i, "x"];
        let v = t.compute_vnode_by_pk(&row![i]).unwrap();
        assert_eq!(
            v,
            VirtualNode::compute_row(&r, &[0], VnodeCount::new(4).unwrap())
        );
        match t.insert(&r) {
            Ok(()) => {
                assert!(v.to_index() < 2);
                owned += 1;
            }
            Err(StateTableError::VnodeNotOwned { vnode, .. }) => assert_eq!(vnode, v),
            Err(e) => panic!("{e}"),
        }
    }
    assert!(owned > 0 && owned < 40);

    // Singleton: everything is vnode 0.
    let mut single = TableDesc::hash(
        TableId(2),
        vec![DataType::Int64],
        vec![0],
        vec![],
        VnodeCount::new(1).unwrap(),
    );
    single.distribution = Distribution::Singleton;
    let mut s = StateTable::new(Arc::new(single), &env.node, all(1));
    s.init_epoch(pair(1, 0));
    s.insert(&row![99i64]).unwrap();
    assert_eq!(s.compute_vnode_by_pk(&row![99i64]).unwrap().to_index(), 0);

    // Vnode column: the vnode is the pk value, and it must be below the count.
    let desc = Arc::new(TableDesc::backfill_state(
        TableId(3),
        &[DataType::Int64],
        VnodeCount::new(8).unwrap(),
    ));
    let mut b = StateTable::new(desc, &env.node, Arc::new(Bitmap::from_range(8, 4..8)));
    b.init_epoch(pair(1, 0));
    assert!(matches!(
        b.insert(&row![1i16, 0i64, false, 0i64]),
        Err(StateTableError::VnodeNotOwned { .. })
    ));
    assert!(matches!(
        b.insert(&row![9i16, 0i64, false, 0i64]),
        Err(StateTableError::BadVnodeColumn { .. })
    ));
    b.insert(&row![5i16, 0i64, false, 0i64]).unwrap();
}

#[test]
fn iter_with_vnode_orders_and_ranges() {
    let id = TableId(1);
    let env = Env::new(&[id]);
    // pk (a ASC, b DESC), distributed by a; one vnode so every row is in it.
    let desc = TableDesc {
        table_id: id,
        column_types: vec![DataType::Int32, DataType::Int32, DataType::Varchar],
        pk_indices: vec![0, 1],
        pk_orders: vec![OrderType::ascending(), OrderType::descending()],
        value_indices: vec![2],
        distribution: Distribution::HashDistKey {
            dist_key_in_pk: vec![0],
        },
        vnode_count: VnodeCount::new(1).unwrap(),
    };
    let mut t = StateTable::new(Arc::new(desc), &env.node, all(1));
    t.init_epoch(pair(1, 0));
    for (a, b) in [(1, 1), (1, 2), (2, 5), (2, 7), (3, 0)] {
        t.insert(&row![a, b, format!("{a}-{b}").as_str()]).unwrap();
    }
    t.commit(pair(2, 1)).unwrap();
    env.checkpoint(e(1));
    t.insert(&row![2, 6, "2-6"]).unwrap(); // in the mem-table
    let v0 = VirtualNode::from_index(0);
    let keys = |range| -> Vec<(i32, i32)> {
        t.iter_with_vnode(v0, range)
            .unwrap()
            .map(|r| {
                let r = r.unwrap();
                let get = |i: usize| match r.datum_at(i) {
                    Some(epochlab_common::ScalarImpl::Int32(v)) => *v,
                    _ => panic!(),
                };
                (get(0), get(1))
            })
            .collect()
    };
    assert_eq!(
        keys((Bound::Unbounded, Bound::Unbounded)),
        vec![(1, 2), (1, 1), (2, 7), (2, 6), (2, 5), (3, 0)]
    );
    // From a full pk, exclusive (backfill resuming after its position).
    assert_eq!(
        keys((Bound::Excluded(row![2, 7]), Bound::Unbounded)),
        vec![(2, 6), (2, 5), (3, 0)]
    );
    // Prefix bounds: a > 1 and a <= 2.
    assert_eq!(
        keys((Bound::Excluded(row![1]), Bound::Included(row![2]))),
        vec![(2, 7), (2, 6), (2, 5)]
    );
    assert_eq!(
        keys((Bound::Included(row![1]), Bound::Excluded(row![2]))),
        vec![(1, 2), (1, 1)]
    );
}

#[test]
fn commit_and_vnode_bitmap_rules() {
    let env = Env::new(&[TableId(1)]);
    let mut t = StateTable::new(kv_desc(1, 4), &env.node, all(4));
    assert!(matches!(
        t.get_row(&row![1i64]),
        Err(StateTableError::Storage(_))
    ));
    t.init_epoch(pair(2, 1));
    let err = t.commit(pair(4, 3)).unwrap_err();
    assert!(
        matches!(err, StateTableError::EpochMismatch { .. }),
        "{err}"
    );
    t.insert(&row![1i64, "a"]).unwrap();
    assert!(matches!(
        t.update_vnode_bitmap(Arc::new(Bitmap::from_range(4, 0..2))),
        Err(StateTableError::DirtyOnVnodeUpdate { .. })
    ));
    t.commit(pair(3, 2)).unwrap();
    assert!(!t.is_dirty());
    let old = t
        .update_vnode_bitmap(Arc::new(Bitmap::from_range(4, 0..2)))
        .unwrap();
    assert!(old.all());
}

#[test]
fn write_chunk_pairs_updates() {
    let env = Env::new(&[TableId(1)]);
    let mut t = StateTable::new(kv_desc(1, 4), &env.node, all(4));
    t.init_epoch(pair(1, 0));
    t.write_chunk(&StreamChunk::from_pairs([
        (Op::Insert, row![1i64, "a"]),
        (Op::Insert, row![2i64, "b"]),
    ]))
    .unwrap();
    t.write_chunk(&StreamChunk::from_pairs([
        (Op::UpdateDelete, row![1i64, "a"]),
        (Op::UpdateInsert, row![1i64, "c"]),
        (Op::Delete, row![2i64, "b"]),
    ]))
    .unwrap();
    assert_eq!(t.iter_all().unwrap(), vec![row![1i64, "c"]]);
}

#[test]
fn replicated_table_reads_its_own_writes_without_uploading() {
    let env = Env::new(&[TableId(1)]);
    let mut t = StateTable::new_replicated(kv_desc(1, 4), &env.node, all(4));
    t.init_epoch(pair(1, 0));
    t.insert(&row![5i64, "r"]).unwrap();
    t.commit(pair(2, 1)).unwrap();
    assert_eq!(t.get_row(&row![5i64]).unwrap(), Some(row![5i64, "r"]));
    assert_eq!(env.node.uncommitted_bytes(), 0);
}

#[derive(Clone, Debug)]
enum Action {
    Upsert(i64, u8),
    Delete(i64),
    Commit { checkpoint: bool },
}

fn arb_action() -> impl Strategy<Value = Action> {
    prop_oneof![
        4 => (0i64..40, any::<u8>()).prop_map(|(k, v)| Action::Upsert(k, v)),
        2 => (0i64..40).prop_map(Action::Delete),
        1 => any::<bool>().prop_map(|checkpoint| Action::Commit { checkpoint }),
    ]
}

proptest! {
    /// Any sequence of writes, commits and checkpoints reads back exactly like a BTreeMap fed the same writes,
    /// through get_row and iteration, for any vnode count.
    #[test]
    fn matches_a_btreemap(actions in proptest::collection::vec(arb_action(), 1..120), count in 1u32..64) {
        let env = Env::new(&[TableId(1)]);
        let mut t = StateTable::new(kv_desc(1, count), &env.node, all(count as usize));
        let mut epoch = 1;
        t.init_epoch(pair(epoch, 0));
        let mut oracle: BTreeMap<i64, String> = BTreeMap::new();
        for a in actions {
            match a {
                Action::Upsert(k, v) => {
                    let new = row![k, v.to_string().as_str()];
                    match oracle.insert(k, v.to_string()) {
                        Some(old) => t.update(&row![k, old.as_str()], &new).unwrap(),
                        None => t.insert(&new).unwrap(),
                    }
                }
                Action::Delete(k) => {
                    if let Some(old) = oracle.remove(&k) {
                        t.delete(&row![k, old.as_str()]).unwrap();
                    }
                }
                Action::Commit { checkpoint } => {
                    t.commit(pair(epoch + 1, epoch)).unwrap();
                    if checkpoint {
                        env.checkpoint(e(epoch));
                    }
                    epoch += 1;
                }
            }
            for k in [0i64, 7, 39] {
                let expect = oracle.get(&k).map(|v| row![k, v.as_str()]);
                prop_assert_eq!(t.get_row(&row![k]).unwrap(), expect);
            }
        }
        let mut got: Vec<OwnedRow> = t.iter_all().unwrap();
        got.sort_by_key(|r| format!("{r:?}"));
        let mut expect: Vec<OwnedRow> = oracle.iter().map(|(k, v)| row![*k, v.as_str()]).collect();
        expect.sort_by_key(|r| format!("{r:?}"));
        prop_assert_eq!(got, expect);
    }
}

/// `ALTER TABLE .. ADD COLUMN`: a table that takes a desc with a column appended reads its older rows with
/// NULL there, deletes and updates them by their padded value (storage's old-value check holds), refuses
/// the change with uncommitted writes, and a reader of the old desc reads the new rows cut to its columns.
#[test]
fn a_table_takes_a_wider_desc_and_reads_older_rows_padded() {
    let env = Env::new(&[TableId(1)]);
    let old = kv_desc(1, 16);
    let mut wide = (*old).clone();
    wide.column_types.push(DataType::Int32);
    wide.value_indices = vec![0, 1, 2];
    let wide = Arc::new(wide);
    let mut t = StateTable::new(old.clone(), &env.node, all(16));
    t.init_epoch(pair(1, 0));
    t.insert(&row![1i64, "a"]).unwrap();
    t.insert(&row![2i64, "b"]).unwrap();
    assert!(matches!(
        t.update_desc(wide.clone()),
        Err(StateTableError::DirtyOnSchemaChange { .. })
    ));
    t.commit(pair(2, 1)).unwrap();
    env.checkpoint(e(1));
    t.update_desc(wide.clone()).unwrap();
    let none: Option<i32> = None;
    assert_eq!(t.get_row(&row![1i64]).unwrap(), Some(row![1i64, "a", none]));
    t.insert(&row![3i64, "c", 7i32]).unwrap();
    t.delete(&row![1i64, "a", none]).unwrap();
    t.update(&row![2i64, "b", none], &row![2i64, "b", 5i32])
        .unwrap();
    assert!(matches!(
        t.delete(&row![2i64, "b", 6i32]),
        Err(StateTableError::OldRowMismatch { .. })
    ));
    t.commit(pair(3, 2)).unwrap();
    env.checkpoint(e(2));
    // A reader still of the old desc (a job planned before the column) reads the columns it knows.
    let mut reader = StateTable::new(old, &env.node, all(16));
    reader.init_epoch(pair(3, 2));
    assert_eq!(reader.get_row(&row![3i64]).unwrap(), Some(row![3i64, "c"]));
    assert_eq!(t.get_row(&row![2i64]).unwrap(), Some(row![2i64, "b", 5i32]));
}
