//! One step-seed of RisingWave's recovery CI as `epochlab ci` runs it: the streaming step's files in one cluster
//! under kills (main-cron's profile, `--keep-going` so that every file runs), wall seconds on one thread;
//! beside the same files each run alone in a fresh cluster at the same seed (how `epochlab corpus` runs them),
//! in the same run.
//!
//! `cargo xtask bench -p epochlab-simulation --bench ci-step`; `EPOCHLAB_BENCH_SEED=N` picks the seed (default 1).

use std::path::{Path, PathBuf};
use std::time::Instant;

use epochlab_bench::{Figure, Report};
use epochlab_sim::config::Topology;
use epochlab_sim::{BugMode, Mode, ReproHooks};
use epochlab_simulation::ci::{self, step_files, step_params};
use epochlab_simulation::run_file;

fn main() {
    let seed: u64 = std::env::var("EPOCHLAB_BENCH_SEED")
        .map(|v| v.parse().expect("EPOCHLAB_BENCH_SEED must be a number"))
        .unwrap_or(1);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/slt/risingwave");
    let profile = ci::profile("main-cron").expect("main-cron is a profile");
    let step = ci::step("streaming").expect("streaming is a step");
    let files: Vec<PathBuf> = step_files(&root, step).expect("the vendored streaming files");
    let run = BugMode::of_14910(Mode::Fixed);

    // RisingWave's CI cluster (3 compute nodes of 2 cores, 2 compactors), as `epochlab ci` runs it.
    let p = step_params(profile, step, seed, run, Topology::RISINGWAVE_CI);
    let start = Instant::now();
    let out = ci::run_step(&root, &files, &p, true, ReproHooks::default());
    let one_cluster = start.elapsed();
    let passed_step = out
        .value
        .files
        .iter()
        .filter(|f| f.outcome.as_str() == "passed")
        .count();

    let start = Instant::now();
    let passed_alone = files
        .iter()
        .filter(|f| {
            run_file(f, &p, ReproHooks::default())
                .is_ok_and(|o| o.value.outcome.as_str() == "passed" && !o.value.skipped)
        })
        .count();
    let per_file = start.elapsed();

    let mut report = Report::new("ci-step");
    let ratio = report.add(Figure {
        name: format!(
            "ci streaming step, seed {seed}, {} files, one cluster",
            files.len()
        ),
        unit: "s".into(),
        value: one_cluster.as_secs_f64(),
        baseline: "the same files, one cluster per file".into(),
        baseline_value: per_file.as_secs_f64(),
    });
    println!(
        "{} files: one cluster {:.2} s ({passed_step} passed), a cluster per file {:.2} s ({passed_alone} \
         passed): {ratio:.2}x",
        files.len(),
        one_cluster.as_secs_f64(),
        per_file.as_secs_f64()
    );
    report.finish();
}
