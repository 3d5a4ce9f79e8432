//! RisingWave's corpus under kills: wall seconds to run, one after another on one thread, every file the
//! ratchet (`tests/slt/risingwave/expected.txt`) says passes under kills, with kills at one seed; beside the
//! same files run without kills in the same run (the baseline: what the kills and recoveries add). The target
//! is under 60 s on 2 cores (`epochlab corpus --kill` runs the files on 2 threads; this is one).
//!
//! `cargo xtask bench -p epochlab-simulation --bench corpus`; `EPOCHLAB_BENCH_SEED=N` picks the seed (default 1).

use std::path::Path;
use std::time::{Duration, Instant};

use epochlab_bench::{Figure, Report};
use epochlab_simulation::corpus::{Expected, Verdict, params};

/// Wall time to run `files` (with or without kills at `seed`), and how many passed.
fn run(root: &Path, files: &[String], kill: bool, seed: u64) -> (Duration, usize) {
    let start = Instant::now();
    let passed = files
        .iter()
        .filter(|rel| Verdict::run(root, rel, &params(rel, kill, seed)).passed())
        .count();
    (start.elapsed(), passed)
}

fn main() {
    let seed: u64 = std::env::var("EPOCHLAB_BENCH_SEED")
        .map(|v| v.parse().expect("EPOCHLAB_BENCH_SEED must be a number"))
        .unwrap_or(1);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/slt/risingwave");
    let expected = Expected::read(&root.join("expected.txt")).expect("the ratchet reads");
    let files: Vec<String> = expected
        .files
        .keys()
        .filter(|rel| expected.expects(rel, true))
        .cloned()
        .collect();
    assert!(
        !files.is_empty(),
        "the ratchet lists files that pass under kills"
    );
    let (killed, passed_killed) = run(&root, &files, true, seed);
    let (plain, passed_plain) = run(&root, &files, false, seed);
    let mut report = Report::new("corpus");
    let ratio = report.add(Figure {
        name: format!("corpus under kills, seed {seed}, {} files", files.len()),
        unit: "s".into(),
        value: killed.as_secs_f64(),
        baseline: "the same files without kills".into(),
        baseline_value: plain.as_secs_f64(),
    });
    println!(
        "{} files: under kills {:.2} s ({passed_killed} passed), without {:.2} s ({passed_plain} passed): {ratio:.2}x",
        files.len(),
        killed.as_secs_f64(),
        plain.as_secs_f64()
    );
    report.finish();
}
