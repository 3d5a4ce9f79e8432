//! State table vs. a plain `BTreeMap<Vec<u8>, Vec<u8>>` doing the same work in the same run: insert, commit,
//! point get and range iteration at 10^5 and 10^6 rows. Both sides encode keys (vnode ++ memcomparable pk)
//! and values the same way and decode what they read. Prints ns/row for each and the ratio.
//!
//! `cargo xtask bench -p epochlab-state-table`; set `EPOCHLAB_BENCH_ROWS=100000` to run one size only.

use epochlab_bench::{Figure, Report};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use epochlab_common::{
    Bitmap, DataType, Epoch, EpochPair, OrderType, OwnedRow, TableId, VirtualNode, VnodeCount,
    WorkerId, memcmp, row, value_encoding,
};
use epochlab_state_table::{StateTable, TableDesc};
use epochlab_storage::{CommittedStore, HummockManager, NodeStorage};
use rand::SeedableRng;
use rand::seq::SliceRandom;

const TABLE: TableId = TableId(1);
const REPEATS: usize = 3;

fn make_row(i: i64) -> OwnedRow {
    row![i, i * 7, "a value of moderate length"]
}

fn desc() -> Arc<TableDesc> {
    Arc::new(TableDesc::hash(
        TABLE,
        vec![DataType::Int64, DataType::Int64, DataType::Varchar],
        vec![0],
        vec![0],
        VnodeCount::DEFAULT,
    ))
}

type Pick = fn(&Times) -> Duration;

struct Times {
    insert: Duration,
    commit: Duration,
    get: Duration,
    iter: Duration,
}

fn bench_state_table(n: i64, rt: &tokio::runtime::Runtime, order: &[i64]) -> Times {
    let committed = CommittedStore::default();
    let mgr = HummockManager::new(committed.clone(), None);
    mgr.register_tables(&[TABLE]);
    mgr.set_context(WorkerId(1), 1);
    let node = NodeStorage::new(WorkerId(1), committed, mgr.current_version(), 1);
    let mut t = StateTable::new(desc(), &node, Arc::new(Bitmap::ones(256)));
    let e1 = Epoch::test(1);
    t.init_epoch(EpochPair::new_test_epoch(e1));

    let start = Instant::now();
    for i in 0..n {
        t.insert(&make_row(i)).unwrap();
    }
    let insert = start.elapsed();

    let start = Instant::now();
    t.commit(EpochPair::new(Epoch::test(2), e1)).unwrap();
    node.seal_epoch(e1).unwrap();
    let sync = rt.block_on(node.sync(e1)).unwrap();
    let outcome = mgr.commit_epoch(e1, vec![sync]).unwrap();
    node.apply_version_delta(&outcome.delta).unwrap();
    let commit = start.elapsed();

    let start = Instant::now();
    for &i in order {
        black_box(t.get_row(&row![i]).unwrap().unwrap());
    }
    let get = start.elapsed();

    let start = Instant::now();
    let mut seen = 0;
    for v in 0..256 {
        let it = t
            .iter_with_vnode(
                VirtualNode::from_index(v),
                (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded),
            )
            .unwrap();
        for r in it {
            black_box(r.unwrap());
            seen += 1;
        }
    }
    assert_eq!(seen, n);
    let iter = start.elapsed();
    Times {
        insert,
        commit,
        get,
        iter,
    }
}

fn key_of(pk: &OwnedRow) -> Vec<u8> {
    let vnode = VirtualNode::compute_row(pk, &[0], VnodeCount::DEFAULT);
    let mut key = vnode.to_be_bytes().to_vec();
    memcmp::encode_row(pk, &[OrderType::ascending()], &mut key);
    key
}

fn bench_btreemap(n: i64, order: &[i64]) -> Times {
    let mut buffer: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let start = Instant::now();
    for i in 0..n {
        let r = make_row(i);
        buffer.insert(key_of(&r.project(&[0])), value_encoding::encode_row(&r));
    }
    let insert = start.elapsed();

    // "Commit": move the write buffer into the committed map.
    let start = Instant::now();
    let mut committed: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for (k, v) in std::mem::take(&mut buffer) {
        committed.insert(k, v);
    }
    let commit = start.elapsed();

    let start = Instant::now();
    for &i in order {
        let v = committed.get(&key_of(&row![i])).unwrap();
        black_box(value_encoding::decode_row(v).unwrap());
    }
    let get = start.elapsed();

    let start = Instant::now();
    let mut seen = 0;
    for v in 0..256u16 {
        let lo = v.to_be_bytes().to_vec();
        let hi = (v as u32 + 1).to_be_bytes()[2..].to_vec();
        let range = if v == 255 {
            committed.range(lo..)
        } else {
            committed.range(lo..hi)
        };
        for (_, val) in range {
            black_box(value_encoding::decode_row(val).unwrap());
            seen += 1;
        }
    }
    assert_eq!(seen, n);
    let iter = start.elapsed();
    Times {
        insert,
        commit,
        get,
        iter,
    }
}

fn min_of(runs: &[Times], f: impl Fn(&Times) -> Duration) -> Duration {
    runs.iter().map(f).min().unwrap()
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let sizes: Vec<i64> = match std::env::var("EPOCHLAB_BENCH_ROWS") {
        Ok(v) => vec![v.parse().expect("EPOCHLAB_BENCH_ROWS must be a number")],
        Err(_) => vec![100_000, 1_000_000],
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    println!("state table vs BTreeMap<Vec<u8>, Vec<u8>> (best of {REPEATS}; ns per row)");
    let mut report = Report::new("state-table");
    println!(
        "{:>9} {:>8} {:>14} {:>14} {:>7}",
        "rows", "op", "state table", "BTreeMap", "ratio"
    );
    for n in sizes {
        let mut order: Vec<i64> = (0..n).collect();
        order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(1));
        let ours: Vec<Times> = (0..REPEATS)
            .map(|_| bench_state_table(n, &rt, &order))
            .collect();
        let base: Vec<Times> = (0..REPEATS).map(|_| bench_btreemap(n, &order)).collect();
        let ops: [(&str, Pick); 4] = [
            ("insert", |t| t.insert),
            ("commit", |t| t.commit),
            ("get", |t| t.get),
            ("iter", |t| t.iter),
        ];
        for (name, f) in ops {
            let a = min_of(&ours, f).as_nanos() as f64 / n as f64;
            let b = min_of(&base, f).as_nanos() as f64 / n as f64;
            let ratio = report.add(Figure {
                name: format!("{name} {n} rows"),
                unit: "ns/row".into(),
                value: a,
                baseline: "BTreeMap<Vec<u8>, Vec<u8>>".into(),
                baseline_value: b,
            });
            println!("{n:>9} {name:>8} {a:>14.1} {b:>14.1} {ratio:>6.2}x");
        }
    }
    report.finish();
}
