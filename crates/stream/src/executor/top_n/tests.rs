//! Unit tests of the top-N executors: scripted inputs with the expected output, and seeded random
//! workloads whose accumulated output is compared, at every barrier, with a reference sort + limit of the
//! rows the input holds at that point (ranks, ties, offsets, deletes that pull rows up from below the
//! cached ones, groups, append-only inputs, group caches evicted and loaded again from the state table).

use std::collections::BTreeMap;
use std::sync::Arc;

use epochlab_barrier::{Barrier, BarrierKind};
use epochlab_common::catalog::TableDesc;
use epochlab_common::plan::top_n_table;
use epochlab_common::{
    ActorId, Bitmap, DataType, Epoch, EpochPair, Op, OrderType, OwnedRow, ScalarImpl, StreamChunk,
    TableId, VnodeCount, WorkerId,
};
use epochlab_state_table::{StateTable, StateTableOptions};
use epochlab_storage::{CommittedStore, NodeStorage, OpConsistencyLevel};
use futures::StreamExt;

use super::{
    AppendOnlyGroupTopNExecutor, AppendOnlyTopNExecutor, GroupTopNExecutor, TopNArgs, TopNExecutor,
};
use crate::executor::{BoxedExecutor, BoxedMessageStream, Execute, Message};

const VNODES: u32 = 8;

/// Input rows `(g, v, id)`, stream key `id`.
fn row(g: i64, v: Option<i64>, id: i64) -> OwnedRow {
    OwnedRow::new(vec![
        Some(ScalarImpl::Int64(g)),
        v.map(ScalarImpl::Int64),
        Some(ScalarImpl::Int64(id)),
    ])
}

fn barrier(curr: u64) -> Message {
    Message::Barrier(Barrier::new(
        EpochPair::new(Epoch::test(curr), Epoch::test(curr - 1)),
        BarrierKind::Checkpoint,
        None,
    ))
}

struct Script(Vec<Message>);

impl Execute for Script {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        futures::stream::iter(self.0.into_iter().map(Ok)).boxed()
    }

    fn identity(&self) -> String {
        "Script".into()
    }
}

#[derive(Clone, Copy, Debug)]
struct Config {
    grouped: bool,
    offset: usize,
    limit: usize,
    with_ties: bool,
    append_only: bool,
    order: OrderType,
    group_cache_capacity: usize,
    consistency: OpConsistencyLevel,
}

impl Config {
    fn plain(offset: usize, limit: usize) -> Self {
        Self {
            grouped: false,
            offset,
            limit,
            with_ties: false,
            append_only: false,
            order: OrderType::ascending(),
            group_cache_capacity: 64,
            consistency: OpConsistencyLevel::ConsistentOldValue,
        }
    }

    fn group_key(&self) -> Vec<usize> {
        if self.grouped { vec![0] } else { Vec::new() }
    }

    fn build(&self, msgs: Vec<Message>) -> BoxedExecutor {
        let node = NodeStorage::new(
            WorkerId(1),
            CommittedStore::default(),
            Default::default(),
            1,
        );
        let types = vec![DataType::Int64; 3];
        let order_by = vec![(1, self.order)];
        let count = VnodeCount::new(VNODES).unwrap();
        let desc = top_n_table(&types, &self.group_key(), &order_by, &[2], count);
        let desc = Arc::new(TableDesc {
            table_id: TableId(7),
            ..(*desc).clone()
        });
        let options = StateTableOptions {
            op_consistency_level: self.consistency,
            ..Default::default()
        };
        let vnodes = Arc::new(Bitmap::ones(VNODES as usize));
        let args = TopNArgs {
            actor_id: ActorId(1),
            input: Box::new(Script(msgs)),
            group_key: self.group_key(),
            order_by,
            offset: self.offset,
            limit: self.limit,
            with_ties: self.with_ties,
            table: StateTable::with_options(desc, &node, vnodes, options),
            group_cache_capacity: self.group_cache_capacity,
            stats: crate::executor::ExecutorStatsHandle::detached(),
            row_delete: Default::default(),
        };
        match (self.grouped, self.append_only) {
            (false, false) => Box::new(TopNExecutor::new(args).unwrap()),
            (false, true) => Box::new(AppendOnlyTopNExecutor::new(args).unwrap()),
            (true, false) => Box::new(GroupTopNExecutor::new(args).unwrap()),
            (true, true) => Box::new(AppendOnlyGroupTopNExecutor::new(args).unwrap()),
        }
    }

    /// The reference: per group, the rows sorted by `v` (in the order) then `id`, ranked. It orders by value
    /// ([`value_order`]), not by the memcomparable encoding the executor's cache keys and table use.
    fn expected(&self, rows: &BTreeMap<i64, OwnedRow>) -> BTreeMap<Key, usize> {
        let mut groups: BTreeMap<i64, Vec<OwnedRow>> = BTreeMap::new();
        for r in rows.values() {
            let g = if self.grouped { group_of(r) } else { 0 };
            groups.entry(g).or_default().push(r.clone());
        }
        let orders = [self.order, OrderType::ascending()];
        let mut out = BTreeMap::new();
        for mut rs in groups.into_values() {
            rs.sort_by(|a, b| {
                value_order(a.datum_at(1), b.datum_at(1), orders[0])
                    .then_with(|| value_order(a.datum_at(2), b.datum_at(2), orders[1]))
            });
            let end = self.offset.saturating_add(self.limit).min(rs.len());
            let mut take = rs.get(self.offset..end).unwrap_or(&[]).to_vec();
            if self.with_ties && end > 0 && end == self.limit {
                let last = rs[end - 1].datum_at(1).clone();
                take.extend(rs[end..].iter().filter(|r| *r.datum_at(1) == last).cloned());
            }
            for r in take {
                *out.entry(key(&r)).or_default() += 1;
            }
        }
        out
    }
}

/// A row as `(g, v, id)`.
type Key = (i64, Option<i64>, i64);

fn key(r: &OwnedRow) -> Key {
    let int = |i: usize| r.datum_at(i).as_ref().and_then(ScalarImpl::as_int64);
    (int(0).unwrap(), int(1), int(2).unwrap())
}

fn group_of(r: &OwnedRow) -> i64 {
    r.datum_at(0)
        .as_ref()
        .and_then(ScalarImpl::as_int64)
        .unwrap()
}

/// Run `exec`; the accumulated output at each barrier (the first left out).
fn outputs_at_barriers(exec: BoxedExecutor) -> Vec<BTreeMap<Key, usize>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let mut acc: BTreeMap<Key, usize> = BTreeMap::new();
        let mut out = Vec::new();
        let mut s = exec.execute();
        while let Some(m) = s.next().await {
            match m.unwrap() {
                Message::Barrier(_) => out.push(acc.clone()),
                Message::Watermark(w) => panic!("a top-N passes no watermark: {w:?}"),
                Message::Chunk(c) => {
                    for (op, r) in c.rows() {
                        if op.is_insert() {
                            *acc.entry(key(r)).or_default() += 1;
                        } else {
                            let n = acc
                                .get_mut(&key(r))
                                .unwrap_or_else(|| panic!("delete of {r:?} not in the output"));
                            *n -= 1;
                            if *n == 0 {
                                acc.remove(&key(r));
                            }
                        }
                    }
                }
            }
        }
        out.remove(0);
        out
    })
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A random workload: per epoch a few chunks of inserts and (unless append-only) deletes and updates;
/// the input's rows after each epoch.
fn workload(
    seed: u64,
    append_only: bool,
    epochs: u64,
) -> (Vec<Message>, Vec<BTreeMap<i64, OwnedRow>>) {
    let mut rng = Rng(seed * 2654435761 + 1);
    let mut rows: BTreeMap<i64, OwnedRow> = BTreeMap::new();
    let mut msgs = vec![barrier(1)];
    let mut states = Vec::new();
    let mut next_id = 0;
    for e in 0..epochs {
        for _ in 0..=rng.next(3) {
            let mut pairs = Vec::new();
            for _ in 0..=rng.next(12) {
                let live: Vec<i64> = rows.keys().copied().collect();
                let roll = rng.next(10);
                if append_only || live.is_empty() || roll < 5 {
                    next_id += 1;
                    let v = (rng.next(9) > 0).then(|| rng.next(8) as i64);
                    let r = row(rng.next(3) as i64, v, next_id);
                    rows.insert(next_id, r.clone());
                    pairs.push((Op::Insert, r));
                } else {
                    let id = live[rng.next(live.len() as u64) as usize];
                    let old = rows.remove(&id).unwrap();
                    if roll < 8 {
                        pairs.push((Op::Delete, old));
                    } else {
                        let new = row(group_of(&old), Some(rng.next(8) as i64), id);
                        rows.insert(id, new.clone());
                        pairs.push((Op::UpdateDelete, old));
                        pairs.push((Op::UpdateInsert, new));
                    }
                }
            }
            msgs.push(Message::Chunk(StreamChunk::from_pairs(pairs)));
        }
        msgs.push(barrier(e + 2));
        states.push(rows.clone());
    }
    (msgs, states)
}

fn check_random(cfg: Config, seeds: std::ops::Range<u64>) {
    for seed in seeds {
        let (msgs, states) = workload(seed, cfg.append_only, 30);
        let got = outputs_at_barriers(cfg.build(msgs));
        assert_eq!(got.len(), states.len());
        for (i, (g, rows)) in got.iter().zip(&states).enumerate() {
            assert_eq!(g, &cfg.expected(rows), "{cfg:?} seed {seed} epoch {i}");
        }
    }
}

#[test]
fn random_top_n_matches_sort_and_limit() {
    for (offset, limit) in [(0, 1), (0, 3), (2, 3), (5, 1), (0, 40), (1, usize::MAX)] {
        check_random(Config::plain(offset, limit), 0..20);
    }
}

#[test]
fn random_top_n_descending() {
    let cfg = Config {
        order: OrderType::descending(),
        ..Config::plain(1, 2)
    };
    check_random(cfg, 0..20);
}

#[test]
fn random_top_n_with_ties() {
    for limit in [1, 2, 5] {
        let cfg = Config {
            with_ties: true,
            ..Config::plain(0, limit)
        };
        check_random(cfg, 0..20);
    }
}

#[test]
fn random_group_top_n_with_evictions() {
    for (offset, limit, ties, cap) in [
        (0, 1, false, 64),
        (1, 2, false, 1),
        (0, 2, true, 1),
        (0, 1, true, 2),
    ] {
        let cfg = Config {
            grouped: true,
            with_ties: ties,
            group_cache_capacity: cap,
            ..Config::plain(offset, limit)
        };
        check_random(cfg, 0..20);
    }
}

#[test]
fn random_append_only() {
    for (grouped, offset, limit, ties) in [
        (false, 0, 3, false),
        (false, 2, 2, false),
        (false, 0, 2, true),
        (true, 0, 1, false),
        (true, 1, 2, false),
        (true, 0, 2, true),
    ] {
        let cfg = Config {
            grouped,
            with_ties: ties,
            append_only: true,
            group_cache_capacity: 1,
            ..Config::plain(offset, limit)
        };
        check_random(cfg, 0..20);
    }
}

fn insert(rows: &[(i64, i64)]) -> Message {
    Message::Chunk(StreamChunk::from_pairs(
        rows.iter()
            .map(|&(v, id)| (Op::Insert, row(0, Some(v), id))),
    ))
}

fn delete(rows: &[(i64, i64)]) -> Message {
    Message::Chunk(StreamChunk::from_pairs(
        rows.iter()
            .map(|&(v, id)| (Op::Delete, row(0, Some(v), id))),
    ))
}

fn vs(out: &BTreeMap<Key, usize>) -> Vec<i64> {
    let mut v: Vec<i64> = out
        .iter()
        .flat_map(|(r, &n)| std::iter::repeat_n(r.1.unwrap(), n))
        .collect();
    v.sort();
    v
}

/// Deletes in middle pull rows up from below high's capacity (30 rows, high holds 10): the state table
/// refills high.
#[test]
fn deletes_pull_rows_up_from_the_table() {
    let all: Vec<(i64, i64)> = (0..30).map(|i| (i, i)).collect();
    let mut msgs = vec![barrier(1), insert(&all), barrier(2)];
    for i in 0..25 {
        msgs.push(delete(&[(i, i)]));
    }
    msgs.push(barrier(3));
    let got = outputs_at_barriers(Config::plain(1, 3).build(msgs));
    assert_eq!(vs(&got[0]), vec![1, 2, 3]);
    assert_eq!(vs(&got[1]), vec![26, 27, 28]);
}

/// `rank() <= 2`: ties at the last rank are in; a row before them pushes them out once the rows before
/// them reach the limit.
#[test]
fn ties_at_the_last_rank() {
    let cfg = Config {
        with_ties: true,
        ..Config::plain(0, 2)
    };
    let msgs = vec![
        barrier(1),
        insert(&[(1, 1), (5, 2), (5, 3), (5, 4), (7, 5)]),
        barrier(2),
        insert(&[(0, 6)]),
        barrier(3),
        delete(&[(0, 6), (1, 1)]),
        barrier(4),
    ];
    let got = outputs_at_barriers(cfg.build(msgs));
    assert_eq!(vs(&got[0]), vec![1, 5, 5, 5]);
    assert_eq!(vs(&got[1]), vec![0, 1]);
    assert_eq!(vs(&got[2]), vec![5, 5, 5]);
}

#[test]
fn plans_it_cannot_run_are_refused() {
    let node = NodeStorage::new(
        WorkerId(1),
        CommittedStore::default(),
        Default::default(),
        1,
    );
    let types = vec![DataType::Int64; 3];
    let desc = top_n_table(
        &types,
        &[],
        &[(1, OrderType::ascending())],
        &[2],
        VnodeCount::new(VNODES).unwrap(),
    );
    let args = TopNArgs {
        actor_id: ActorId(1),
        input: Box::new(Script(Vec::new())),
        group_key: Vec::new(),
        order_by: vec![(1, OrderType::ascending())],
        offset: 1,
        limit: 2,
        with_ties: true,
        table: StateTable::new(desc, &node, Arc::new(Bitmap::ones(VNODES as usize))),
        group_cache_capacity: 1,
        stats: crate::executor::ExecutorStatsHandle::detached(),
        row_delete: Default::default(),
    };
    assert!(TopNExecutor::new(args).is_err());
}

/// Two integer datums in `order`, by their values (independent of `memcmp`): NULL first or last as the order
/// says, whatever its direction.
fn value_order(
    a: &Option<epochlab_common::ScalarImpl>,
    b: &Option<epochlab_common::ScalarImpl>,
    order: OrderType,
) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let int = |d: &epochlab_common::ScalarImpl| d.as_int64().expect("an integer column");
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) if order.nulls_first => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => value_order(b, a, order).reverse(),
        (Some(x), Some(y)) if order.descending => int(y).cmp(&int(x)),
        (Some(x), Some(y)) => int(x).cmp(&int(y)),
    }
}

/// RisingWave's cache emits a delete inside the range the view shows whether or not the cache held the row
/// (its table, without consistency checks, took the delete too): here one never inserted.
#[test]
fn a_delete_inside_the_shown_range_is_emitted() {
    let cfg = Config {
        consistency: OpConsistencyLevel::Inconsistent,
        ..Config::plain(0, 5)
    };
    let msgs = vec![
        barrier(1),
        insert(&[(10, 1), (20, 2), (30, 3)]),
        barrier(2),
        delete(&[(15, 99)]),
        barrier(3),
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let records: Vec<(Op, OwnedRow)> = rt.block_on(async {
        let mut s = cfg.build(msgs).execute();
        let mut out = Vec::new();
        while let Some(m) = s.next().await {
            if let Message::Chunk(c) = m.unwrap() {
                out.extend(c.rows().map(|(op, r)| (op, r.clone())));
            }
        }
        out
    });
    assert_eq!(records.last(), Some(&(Op::Delete, row(0, Some(15), 99))));
}
