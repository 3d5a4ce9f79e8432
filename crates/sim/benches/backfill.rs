//! Arrangement backfill throughput: rows per second (wall clock) for a view created over a table of
//! 10^6 rows while inserts keep arriving from upstream, beside a baseline that scans the same encoded rows from
//! a `BTreeMap` and decodes each into a row (the irreducible work of a snapshot read).
//!
//! `cargo xtask bench -p epochlab-sim --bench backfill`; `EPOCHLAB_BENCH_ROWS=N` sets the table size.

use epochlab_bench::{Figure, Report};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use epochlab_common::{
    DataType, Op, OrderType, OwnedRow, VirtualNode, VnodeCount, memcmp, row, value_encoding,
};
use epochlab_meta::{JobOptions, MetaConfig};
use epochlab_sim::{Cluster, ClusterConfig};

fn make_row(k: i64, v: i64) -> OwnedRow {
    row![k, v, "some payload text"]
}

/// (wall time of the backfill, upstream rows sent meanwhile)
fn backfill(n: usize) -> (Duration, u64) {
    epochlab_sim::run(1, |ctx| async move {
        let mut meta = MetaConfig::default();
        meta.barrier.interval = Duration::from_millis(100);
        let cluster = Arc::new(
            Cluster::start(
                &ctx,
                ClusterConfig {
                    compute_nodes: 3,
                    meta,
                    ..Default::default()
                },
            )
            .await,
        );
        let types = vec![DataType::Int64, DataType::Int64, DataType::Varchar];
        let t = cluster
            .meta()
            .create_table("t", types, vec![0], 4)
            .await
            .unwrap();
        for base in (0..n).step_by(10_000) {
            let rows = (base..(base + 10_000).min(n))
                .map(|k| (Op::Insert, make_row(k as i64, 0)))
                .collect();
            cluster.dml(t, rows).await.unwrap();
        }
        cluster.meta().flush().await.unwrap();

        // Concurrent upstream: batches of 100 new rows, yielding between them so they interleave.
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let writer = {
            let (cluster, stop, sent) = (cluster.clone(), stop.clone(), sent.clone());
            tokio::spawn(async move {
                let mut v = 0i64;
                // At most n/10 rows: an unlimited backfill chasing an endless stream of new keys never ends.
                while !stop.load(Ordering::Relaxed) && (v as usize) * 100 < n / 10 {
                    v += 1;
                    // New keys above the snapshot's: every one is hidden while the backfill runs and read
                    // later through the replicated table.
                    let fresh = (0..100)
                        .map(|i| (Op::Insert, make_row(n as i64 + v * 100 + i, v)))
                        .collect();
                    cluster.dml(t, fresh).await.unwrap();
                    sent.fetch_add(100, Ordering::Relaxed);
                    for _ in 0..50 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        };
        let start = Instant::now();
        let mv = cluster
            .meta()
            .create_materialized_view("mv", t, JobOptions::parallelism(4))
            .await
            .unwrap();
        let elapsed = start.elapsed();
        stop.store(true, Ordering::Relaxed);
        writer.await.unwrap();
        cluster.meta().flush().await.unwrap();
        let expect = n + sent.load(Ordering::Relaxed) as usize;
        assert_eq!(
            cluster.committed_rows(mv).len(),
            expect,
            "the view has every row"
        );
        (elapsed, sent.load(Ordering::Relaxed))
    })
    .value
}

/// Scan the same encoded rows from a `BTreeMap` and decode each.
fn baseline(n: usize) -> Duration {
    let orders = [OrderType::ascending()];
    let mut map: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for k in 0..n as i64 {
        let r = make_row(k, 0);
        let vnode = VirtualNode::compute_row(&r, &[0], VnodeCount::DEFAULT);
        let mut key = vnode.to_be_bytes().to_vec();
        memcmp::encode_row(&r.project(&[0]), &orders, &mut key);
        map.insert(key, value_encoding::encode_row(&r));
    }
    let start = Instant::now();
    let mut count = 0;
    for v in map.values() {
        black_box(value_encoding::decode_row(v).unwrap());
        count += 1;
    }
    assert_eq!(count, n);
    start.elapsed()
}

fn main() {
    let n: usize = std::env::var("EPOCHLAB_BENCH_ROWS")
        .ok()
        .map(|v| v.parse().expect("EPOCHLAB_BENCH_ROWS must be a number"))
        .unwrap_or(1_000_000);
    let runs: Vec<(Duration, u64)> = (0..3).map(|_| backfill(n)).collect();
    let (ours, sent) = runs.iter().min_by_key(|r| r.0).copied().unwrap();
    let base = (0..3).map(|_| baseline(n)).min().unwrap();
    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    println!("arrangement backfill, {n} rows, 4 actors over 3 nodes (best of 3, wall clock)");
    println!(
        "  backfill (snapshot + {sent} upstream rows meanwhile): {:>12.0} rows/s",
        rate(ours)
    );
    println!(
        "  baseline: scan + decode from a BTreeMap:           {:>12.0} rows/s",
        rate(base)
    );
    let mut report = Report::new("backfill");
    let ratio = report.add(Figure {
        name: "arrangement backfill".into(),
        unit: "rows/s".into(),
        value: rate(ours),
        baseline: "scan + decode from a BTreeMap".into(),
        baseline_value: rate(base),
    });
    println!("  ratio (backfill / baseline):                       {ratio:>12.3}");
    report.finish();
}
