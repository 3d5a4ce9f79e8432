//! The streaming pipeline's throughput and barrier latency.
//!
//! 1. Rows per second (wall clock) from DML through a table (4 actors), hash dispatch and a materialized view
//!    (4 actors) over 3 compute nodes, until a flush has committed them; beside a baseline that inserts the same
//!    rows into a `BTreeMap` with the same key and value encoding.
//! 2. Barrier latency (inject to fully collected), in simulated time, with RPC latencies of 1-3 ms and a
//!    one sink actor that spends 3 ms per chunk: the pipeline idle, and overloaded with DML (each batch reaches
//!    the sink as 4 chunks, 12 ms of work, one batch every 5 ms), so that back-pressure through the bounded
//!    exchange channels holds barriers behind data.
//!
//! `cargo xtask bench -p epochlab-sim`; `EPOCHLAB_BENCH_ROWS=N` sets the row count (default 200000).

use epochlab_bench::{Figure, Report};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use epochlab_common::plan::SinkKind;
use epochlab_common::{
    DataType, Op, OrderType, OwnedRow, StreamChunk, VirtualNode, VnodeCount, memcmp, row,
    value_encoding,
};
use epochlab_meta::{JobOptions, MetaConfig, SinkOptions};
use epochlab_rpc::RpcKind;
use epochlab_sim::{Cluster, ClusterConfig};

const CHUNK: usize = 1000;

fn make_row(k: i64) -> OwnedRow {
    row![k, k * 3, "some payload text"]
}

fn schema() -> (Vec<DataType>, Vec<usize>) {
    (
        vec![DataType::Int64, DataType::Int64, DataType::Varchar],
        vec![0],
    )
}

fn config() -> ClusterConfig {
    let mut meta = MetaConfig::default();
    meta.barrier.interval = Duration::from_millis(100);
    ClusterConfig {
        compute_nodes: 3,
        meta,
        ..Default::default()
    }
}

/// Wall time to push `n` rows through table -> dispatch -> view and commit them.
fn pipeline(n: usize) -> Duration {
    let mut elapsed = Duration::ZERO;
    let elapsed_ref = &mut elapsed;
    epochlab_sim::run(1, |ctx| async move {
        let cluster = Cluster::start(&ctx, config()).await;
        let (types, pk) = schema();
        let t = cluster
            .meta()
            .create_table("t", types, pk, 4)
            .await
            .unwrap();
        let mv = cluster
            .meta()
            .create_materialized_view("mv", t, JobOptions::parallelism(4))
            .await
            .unwrap();
        let start = Instant::now();
        for base in (0..n).step_by(CHUNK) {
            let rows = (base..(base + CHUNK).min(n))
                .map(|k| (Op::Insert, make_row(k as i64)))
                .collect();
            cluster.dml(t, rows).await.unwrap();
        }
        cluster.meta().flush().await.unwrap();
        *elapsed_ref = start.elapsed();
        assert_eq!(cluster.committed_rows(mv).len(), n);
    });
    elapsed
}

/// The same rows into a `BTreeMap`, keyed as the state table keys them.
fn baseline(n: usize) -> Duration {
    let start = Instant::now();
    let mut map: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let orders = [OrderType::ascending()];
    for base in (0..n).step_by(CHUNK) {
        // Build the chunk as the DML path does, then encode each row.
        let chunk = StreamChunk::from_pairs(
            (base..(base + CHUNK).min(n)).map(|k| (Op::Insert, make_row(k as i64))),
        );
        for (_, r) in chunk.rows() {
            let pk = r.project(&[0]);
            let vnode = VirtualNode::compute_row(r, &[0], VnodeCount::DEFAULT);
            let mut key = vnode.to_be_bytes().to_vec();
            memcmp::encode_row(&pk, &orders, &mut key);
            map.insert(key, value_encoding::encode_row(r));
        }
    }
    black_box(&map);
    start.elapsed()
}

fn percentiles(mut v: Vec<u64>) -> String {
    if v.is_empty() {
        return "no samples".into();
    }
    v.sort_unstable();
    let p = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize] as f64 / 1000.0;
    format!(
        "n={:>4}  p50={:>7.2} ms  p90={:>7.2} ms  p99={:>7.2} ms  max={:>7.2} ms",
        v.len(),
        p(0.5),
        p(0.9),
        p(0.99),
        p(1.0)
    )
}

/// Barrier latencies (simulated), idle then loaded.
fn latencies() -> (Vec<u64>, Vec<u64>) {
    let out = epochlab_sim::run(2, |ctx| async move {
        let cluster = Cluster::start(&ctx, config()).await;
        for kind in [RpcKind::InjectBarrier, RpcKind::BarrierComplete] {
            cluster
                .network
                .set_latency(kind, Duration::from_millis(1)..Duration::from_millis(3));
        }
        let (types, pk) = schema();
        let t = cluster
            .meta()
            .create_table("t", types, pk, 4)
            .await
            .unwrap();
        cluster
            .meta()
            .create_materialized_view("mv", t, JobOptions::parallelism(4))
            .await
            .unwrap();
        let options = SinkOptions {
            kind: SinkKind::Blackhole,
            chunk_delay: Duration::from_millis(3),
            sink_rate_limit: None,
        };
        cluster
            .meta()
            .create_sink("s", t, JobOptions::parallelism(1), options)
            .await
            .unwrap();
        let stats = cluster.barrier_stats().clone();
        stats.clear_latencies();
        tokio::time::sleep(Duration::from_secs(10)).await;
        let idle = stats.latencies_us();
        stats.clear_latencies();
        // Loaded: a batch of 100 rows every 5 ms for 10 seconds.
        for i in 0..2000i64 {
            let rows = (i * 100..(i + 1) * 100)
                .map(|k| (Op::Insert, make_row(k)))
                .collect();
            cluster.dml(t, rows).await.unwrap();
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        cluster.meta().flush().await.unwrap();
        let loaded = stats.latencies_us();
        assert_eq!(stats.recoveries.load(Ordering::Relaxed), 0);
        (idle, loaded)
    });
    out.value
}

fn main() {
    let n: usize = std::env::var("EPOCHLAB_BENCH_ROWS")
        .ok()
        .map(|v| v.parse().expect("EPOCHLAB_BENCH_ROWS must be a number"))
        .unwrap_or(200_000);
    let ours = (0..3).map(|_| pipeline(n)).min().unwrap();
    let base = (0..3).map(|_| baseline(n)).min().unwrap();
    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    println!("pipeline throughput, {n} rows (best of 3, wall clock)");
    println!(
        "  DML -> table -> hash dispatch -> view: {:>12.0} rows/s",
        rate(ours)
    );
    println!(
        "  baseline BTreeMap insert (same keys):  {:>12.0} rows/s",
        rate(base)
    );
    let mut report = Report::new("pipeline");
    let ratio = report.add(Figure {
        name: "DML pipeline".into(),
        unit: "rows/s".into(),
        value: rate(ours),
        baseline: "BTreeMap insert of the same keys".into(),
        baseline_value: rate(base),
    });
    println!("  ratio (pipeline / baseline):           {ratio:>12.3}");
    let (idle, loaded) = latencies();
    println!("barrier latency, inject to collected (simulated time; RPC 1-3 ms, sink 3 ms/chunk)");
    println!("  idle:   {}", percentiles(idle));
    println!("  loaded: {}", percentiles(loaded));
    report.finish();
}
