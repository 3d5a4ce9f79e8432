//! The ratchet on RisingWave's corpus (`tests/slt/risingwave/`): every file `expected.txt` lists passes,
//! without kills and under kills (one seed, as `epochlab corpus --kill` runs it), as it lists; and the corpus
//! is RisingWave's 127 files.

use std::path::{Path, PathBuf};

use epochlab_simulation::corpus::{self, EXPECTED, Expected, Verdict};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/slt/risingwave")
}

fn expected() -> Expected {
    Expected::read(&root().join(EXPECTED)).unwrap_or_else(|e| panic!("{e}"))
}

/// The listed files that pass in a run with (`kill`) or without kills.
fn listed(kill: bool) -> Vec<String> {
    let e = expected();
    let files: Vec<String> = e
        .files
        .keys()
        .filter(|f| e.expects(f, kill))
        .cloned()
        .collect();
    assert!(!files.is_empty(), "expected.txt lists files");
    files
}

/// Run each file on a thread of its own (each is a simulation of its own); the ones that did not pass.
fn failures(files: &[String], kill: bool, seed: u64) -> Vec<String> {
    let root = root();
    std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .iter()
            .map(|f| {
                let root = &root;
                let handle = std::thread::Builder::new()
                    .stack_size(64 << 20)
                    .spawn_scoped(scope, move || {
                        Verdict::run(root, f, &corpus::params(f, kill, seed))
                    })
                    .expect("a thread");
                (f, handle)
            })
            .collect();
        handles
            .into_iter()
            .filter_map(
                |(f, h)| match h.join().expect("no panic escapes Verdict::run") {
                    Verdict::Passed => None,
                    other => Some(format!("{f}: {other:?}")),
                },
            )
            .collect()
    })
}

#[test]
fn every_listed_file_passes_without_kills() {
    let failed = failures(&listed(false), false, 0);
    assert!(
        failed.is_empty(),
        "regressed without kills:\n{}",
        failed.join("\n")
    );
}

#[test]
fn every_listed_file_passes_under_kills() {
    // Seed 1: kill rate 1.0 and background-DDL rate 0.8 (0.0 in background_ddl/), as main-cron's job.
    let failed = failures(&listed(true), true, 1);
    assert!(
        failed.is_empty(),
        "regressed under kills:\n{}",
        failed.join("\n")
    );
}

#[test]
fn the_ratchet_is_sorted_and_names_files_of_the_corpus() {
    let files = corpus::files(&root()).unwrap();
    let path = root().join(EXPECTED);
    let text = std::fs::read_to_string(&path).unwrap();
    let e = Expected::parse(&path.display().to_string(), &text).unwrap();
    // What `--update-expected` would write: sorted, one entry a line, comments only at the top.
    assert_eq!(e.render(), text, "expected.txt is in its canonical form");
    for f in e.files.keys() {
        assert!(files.contains(f), "{f} is not a .slt file of the corpus");
    }
}

#[test]
fn the_corpus_is_risingwaves_127_files() {
    let files = corpus::files(&root()).unwrap();
    let count = |folder: &str| files.iter().filter(|f| corpus::folder(f) == folder).count();
    // The batch step's files (issue 43) are reported apart from the 127.
    assert_eq!(corpus::APART, ["batch"]);
    assert_eq!(count("batch"), 23);
    assert_eq!(files.len(), 127 + 23);
    assert_eq!(count("ddl"), 25);
    assert_eq!(count("streaming"), 76);
    assert_eq!(count("background_ddl"), 15);
    assert_eq!(count("backfill"), 11);
}
