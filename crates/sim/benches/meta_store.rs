//! The meta store's cost: the SQLite store beside the memory store, in the same run.
//!
//! 1. Soak throughput: random plans at the generator's kill 1 / background-DDL 1 corner, fixed mode, one thread,
//!    seeds/s with meta's rows in SQLite, beside the same seeds with the memory store. Target: a ratio of at
//!    least 0.9.
//! 2. One epoch's commit: what meta writes when a barrier's epoch commits (a Hummock version delta and the
//!    epoch high-water mark, one commit each), in µs, SQLite beside memory.
//!
//! `cargo xtask bench -p epochlab-sim --bench meta_store`; `EPOCHLAB_BENCH_SEEDS=N` sets the soak's seeds
//! (default 40).

use std::sync::Arc;
use std::time::{Duration, Instant};

use epochlab_bench::{Figure, Report};
use epochlab_common::{Epoch, TableId};
use epochlab_meta::store::{MetaBackend, Sequence, StoreOp};
use epochlab_sim::workload::{GenParams, generate, run_plan};
use epochlab_sim::{BugMode, Mode, Outcome, ReproHooks};
use epochlab_storage::{GroupChange, VersionDelta};

fn soak(backend: MetaBackend, seeds: std::ops::Range<u64>) -> Duration {
    let g = GenParams {
        kill_rate: 1.0,
        background_ddl_rate: 1.0,
        ..GenParams::default()
    };
    let start = Instant::now();
    for seed in seeds {
        let hooks = ReproHooks {
            meta_store: Some(backend),
            ..Default::default()
        };
        let out = run_plan(&generate(seed, &g), BugMode::of_14910(Mode::Fixed), hooks);
        assert_eq!(out.value.outcome, Outcome::Passed, "seed {seed}");
    }
    start.elapsed()
}

/// `n` epochs' commits into a fresh store of `backend`: per epoch a delta (one group change in ten) and the
/// high-water mark.
fn epoch_commits(backend: MetaBackend, n: u64) -> Duration {
    let store = backend.open().expect("a store opens");
    let term = store.claim().unwrap();
    let start = Instant::now();
    for id in 1..=n {
        let group_changes = match id % 10 {
            0 => vec![GroupChange::AddTables {
                group: 3,
                tables: vec![TableId(id as u32)],
            }],
            _ => Vec::new(),
        };
        let delta = VersionDelta {
            id,
            prev_id: id - 1,
            max_committed_epoch: Epoch(id << 16),
            group_changes,
            table_watermarks: Default::default(),
        };
        let ops = vec![StoreOp::PushHummockDelta(Arc::new(delta))];
        store.commit(term, ops).unwrap();
        let ops = vec![StoreOp::PutSequence(Sequence::EpochHighWater, id << 16)];
        store.commit(term, ops).unwrap();
    }
    start.elapsed()
}

fn main() {
    let n: u64 = std::env::var("EPOCHLAB_BENCH_SEEDS")
        .ok()
        .map(|v| v.parse().expect("EPOCHLAB_BENCH_SEEDS must be a number"))
        .unwrap_or(40);
    let seeds = 500..500 + n;
    let best = |b: MetaBackend| (0..2).map(|_| soak(b, seeds.clone())).min().unwrap();
    let (memory, sqlite) = (best(MetaBackend::Memory), best(MetaBackend::Sqlite));
    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    println!("soak, {n} random plans at kill 1 / background DDL 1, fixed, one thread (best of 2)");
    println!("  SQLite store: {:>8.1} seeds/s", rate(sqlite));
    println!("  memory store: {:>8.1} seeds/s", rate(memory));
    let mut report = Report::new("meta-store");
    let ratio = report.add(Figure {
        name: "soak with the SQLite store".into(),
        unit: "seeds/s".into(),
        value: rate(sqlite),
        baseline: "the memory store".into(),
        baseline_value: rate(memory),
    });
    println!("  ratio (SQLite / memory): {ratio:>8.3}");

    let epochs: u64 = std::env::var("EPOCHLAB_BENCH_EPOCHS")
        .ok()
        .map_or(20_000, |v| v.parse().unwrap());
    let per = |b: MetaBackend| {
        let d = (0..3).map(|_| epoch_commits(b, epochs)).min().unwrap();
        d.as_secs_f64() * 1e6 / epochs as f64
    };
    let (memory, sqlite) = (per(MetaBackend::Memory), per(MetaBackend::Sqlite));
    println!(
        "one epoch's commits (a version delta, the epoch high-water mark), {epochs} epochs (best of 3)"
    );
    println!("  SQLite store: {sqlite:>8.2} µs/epoch");
    println!("  memory store: {memory:>8.2} µs/epoch");
    let ratio = report.add(Figure {
        name: "an epoch's commits to the SQLite store".into(),
        unit: "µs".into(),
        value: sqlite,
        baseline: "the memory store".into(),
        baseline_value: memory,
    });
    println!("  ratio (SQLite / memory): {ratio:>8.3}");
    report.finish();
}
