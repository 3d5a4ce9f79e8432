//! The `tests/slt/` suite, with and without kills, RisingWave's `background_ddl/sim/basic.slt` without kills,
//! #14910 from a file, and the front end's errors.

use std::path::{Path, PathBuf};

use epochlab_sim::{BugMode, Mode, Outcome, ReproHooks};
use epochlab_simulation::{SltError, SltParams, run_file};

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/slt")
}

/// Every `.slt` file of epochlab's own under `tests/slt/`, in order. RisingWave's files under
/// `tests/slt/risingwave/` are run by `corpus.rs`: those its ratchet `expected.txt` lists.
fn files() -> Vec<PathBuf> {
    let pattern = format!("{}/**/*.slt", suite().display());
    let risingwave = suite().join("risingwave");
    let mut files: Vec<PathBuf> = glob::glob(&pattern)
        .unwrap()
        .map(Result::unwrap)
        .filter(|f| !f.starts_with(&risingwave))
        .collect();
    files.sort();
    assert!(files.len() >= 7, "the suite is there: {files:?}");
    files
}

fn run(f: &Path, p: &SltParams) -> epochlab_simulation::FileReport {
    let out = run_file(f, p, ReproHooks::default()).unwrap_or_else(|e| panic!("{e}"));
    out.value
}

fn explain(f: &Path, r: &epochlab_simulation::FileReport) -> String {
    format!(
        "{}: {} {:?} {}",
        f.display(),
        r.outcome.as_str(),
        r.error,
        r.failure
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default()
    )
}

#[test]
fn every_file_passes_without_kills() {
    for f in &files() {
        let r = run(f, &SltParams::default());
        assert_eq!(r.outcome, Outcome::Passed, "{}", explain(f, &r));
        assert_eq!(r.kills, 0);
    }
}

#[test]
fn every_file_passes_under_kills() {
    for f in files() {
        for seed in [1, 2] {
            let p = SltParams {
                seed,
                kill: true,
                ..SltParams::default()
            };
            let r = run(&f, &p);
            assert_eq!(
                r.outcome,
                Outcome::Passed,
                "seed {seed}: {}",
                explain(&f, &r)
            );
            assert!(
                r.kills > 0 && r.recoveries > 0,
                "{}: nothing was killed",
                f.display()
            );
        }
    }
}

#[test]
fn risingwave_basic_fails_without_kills_as_it_would_in_risingwave() {
    let f = suite().join("risingwave/background_ddl/sim/basic.slt");
    let r = run(&f, &SltParams::default());
    assert_eq!(r.outcome, Outcome::Failed);
    let failure = r.failure.expect("a record failed");
    assert_eq!(failure.line, 32, "{failure}");
    assert!(failure.actual.contains("still being created"), "{failure}");
}

/// #14910 from a file: under kills the buggy drop fails within a few seeds with RisingWave's own error, and
/// the fix holds on the same seeds.
#[test]
fn drop_sink_during_backfill_reproduces_14910_under_kills() {
    let f = suite().join("recovery/drop_sink_during_backfill.slt");
    let params = |seed, mode| SltParams {
        seed,
        kill: true,
        run: BugMode::of_14910(mode),
        ..SltParams::default()
    };
    let mut found = None;
    for seed in 0..10 {
        let r = run(&f, &params(seed, Mode::Buggy));
        if r.outcome == Outcome::Failed {
            found = Some((seed, r));
            break;
        }
    }
    let (seed, r) = found.expect("buggy fails within seeds 0..10");
    let error = r.error.clone().unwrap_or_default();
    assert!(
        error.contains("row [Some(Int16(") && error.contains("not found"),
        "seed {seed}: {error}"
    );
    assert_eq!(r.kind, Some("actor_failure"));
    let failure = r.failure.expect("the record during which the actor failed");
    assert!(failure.sql.starts_with("DROP SINK"), "{failure}");
    for seed in 0..=seed {
        let r = run(&f, &params(seed, Mode::Fixed));
        assert_eq!(
            r.outcome,
            Outcome::Passed,
            "seed {seed}: {}",
            explain(&f, &r)
        );
    }
}

#[test]
fn a_seed_replays_exactly() {
    let f = suite().join("recovery/drop_mv_during_backfill.slt");
    let p = SltParams {
        seed: 5,
        kill: true,
        background_ddl_rate: 0.0,
        ..SltParams::default()
    };
    let a = run_file(&f, &p, ReproHooks::default()).unwrap();
    let b = run_file(&f, &p, ReproHooks::default()).unwrap();
    assert_eq!(a.digest, b.digest);
    assert_eq!(a.log.lines(), b.log.lines());
}

fn temp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("epochlab-slt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn bad_input_is_an_error_with_the_file_and_line() {
    let missing = run_file(
        Path::new("no/such/file.slt"),
        &SltParams::default(),
        ReproHooks::default(),
    );
    assert!(matches!(missing, Err(SltError::Missing(_))));
    let f = temp(
        "malformed.slt",
        "statement ok\nCREATE TABLE t (v int);\n\nstatement oops\nSELECT 1;\n",
    );
    let Err(SltError::Malformed { at, why }) =
        run_file(&f, &SltParams::default(), ReproHooks::default())
    else {
        panic!("a malformed record is bad input")
    };
    assert!(at.ends_with("malformed.slt:4"), "{at}: {why}");
    let f = temp("system.slt", "system ok\nrm -rf /\n");
    let Err(err) = run_file(&f, &SltParams::default(), ReproHooks::default()) else {
        panic!("a system command is bad input")
    };
    assert!(
        err.to_string().contains("unsupported: system command"),
        "{err}"
    );
}

#[test]
fn a_failing_record_names_its_line_sql_expected_and_actual() {
    let f = temp(
        "mismatch.slt",
        "statement ok\nCREATE TABLE t (v int);\n\nstatement ok\nINSERT INTO t VALUES (1), (2);\n\n\
         statement ok\nFLUSH;\n\nquery I\nSELECT count(*) FROM t;\n----\n3\n",
    );
    let r = run(&f, &SltParams::default());
    assert_eq!(r.outcome, Outcome::Failed);
    let failure = r.failure.unwrap();
    assert_eq!(failure.line, 10);
    assert_eq!(failure.sql.trim(), "SELECT count(*) FROM t;");
    assert!(
        failure.expected.contains('3') && failure.actual.contains('2'),
        "{failure}"
    );
}
