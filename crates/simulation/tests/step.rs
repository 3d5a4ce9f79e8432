//! A step: files in one cluster, a new session per file, the first failure ends it (RisingWave's
//! `run_slt_task` at f21fb9b7915), or every file with `keep_going`.

use std::path::{Path, PathBuf};

use epochlab_sim::{Outcome, ReproHooks};
use epochlab_simulation::{SltParams, StepReport, run_file, run_files};

/// A fresh folder for one test's files.
fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("epochlab-step-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn step(files: &[PathBuf], keep_going: bool) -> StepReport {
    run_files(
        Path::new(""),
        files,
        &SltParams::default(),
        keep_going,
        ReproHooks::default(),
    )
    .value
}

fn outcomes(r: &StepReport) -> Vec<(String, &'static str)> {
    r.files
        .iter()
        .map(|f| {
            let name = Path::new(&f.file).file_name().unwrap();
            (name.to_string_lossy().into_owned(), f.outcome.as_str())
        })
        .collect()
}

const CREATE: &str = "statement ok\nCREATE TABLE t (k int PRIMARY KEY, v int);\n\n\
                      statement ok\nINSERT INTO t VALUES (1, 10), (2, 20);\n\n\
                      statement ok\nFLUSH;\n";
const READ: &str = "query II rowsort\nSELECT k, v FROM t;\n----\n1 10\n2 20\n";
const FAIL: &str = "query I\nSELECT 1;\n----\n2\n";

#[test]
fn a_file_sees_an_earlier_files_table() {
    let d = dir("table");
    let files = [write(&d, "a.slt", CREATE), write(&d, "b.slt", READ)];
    let r = step(&files, false);
    assert_eq!(
        outcomes(&r),
        [("a.slt".into(), "passed"), ("b.slt".into(), "passed")]
    );
    // Alone, the reading file has no table to read.
    let alone = run_file(&files[1], &SltParams::default(), ReproHooks::default()).unwrap();
    assert_eq!(alone.value.outcome, Outcome::Failed);
}

#[test]
fn a_set_does_not_reach_the_next_file() {
    let d = dir("set");
    let set = "statement ok\nSET streaming_parallelism = 2;\n\n\
               query T\nSHOW streaming_parallelism;\n----\n2\n";
    let show = "query T\nSHOW streaming_parallelism;\n----\n0\n";
    let files = [write(&d, "a.slt", set), write(&d, "b.slt", show)];
    let r = step(&files, false);
    assert_eq!(r.outcome(), Outcome::Passed, "{:?}", r.first_failure());
    assert_eq!(r.files.len(), 2);
}

#[test]
fn the_first_failure_ends_the_step_and_keep_going_runs_every_file() {
    let d = dir("stop");
    let files = [
        write(&d, "a.slt", CREATE),
        write(&d, "b.slt", FAIL),
        write(&d, "c.slt", READ),
    ];
    let stopped = step(&files, false);
    assert_eq!(
        outcomes(&stopped),
        [("a.slt".into(), "passed"), ("b.slt".into(), "failed")]
    );
    assert_eq!(stopped.not_run, [files[2].display().to_string()]);
    let failure = stopped.first_failure().unwrap().failure.as_ref().unwrap();
    assert_eq!((failure.line, failure.file.ends_with("b.slt")), (1, true));

    let all = step(&files, true);
    assert_eq!(
        outcomes(&all),
        [
            ("a.slt".into(), "passed"),
            ("b.slt".into(), "failed"),
            ("c.slt".into(), "passed")
        ]
    );
    assert!(all.not_run.is_empty());
    assert_eq!(all.outcome(), Outcome::Failed);
}

#[test]
fn a_file_that_cannot_be_read_fails_the_step_at_its_place() {
    let d = dir("bad");
    let files = [
        write(&d, "a.slt", CREATE),
        d.join("missing.slt"),
        write(&d, "c.slt", READ),
    ];
    let r = step(&files, false);
    assert_eq!(
        outcomes(&r),
        [("a.slt".into(), "passed"), ("missing.slt".into(), "failed")]
    );
    assert_eq!(r.files[1].kind, Some("file"));
    assert_eq!(r.not_run.len(), 1);
}

#[test]
fn a_one_file_step_is_run_file_and_a_seed_replays_exactly() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/slt/basic.slt");
    let p = SltParams {
        seed: 7,
        kill: true,
        ..SltParams::default()
    };
    let one = run_files(
        Path::new(""),
        std::slice::from_ref(&file),
        &p,
        false,
        ReproHooks::default(),
    );
    let alone = run_file(&file, &p, ReproHooks::default()).unwrap();
    assert_eq!(one.digest, alone.digest);
    assert_eq!(one.value.files[0].epochs, alone.value.epochs);
    assert_eq!(one.value.files[0].recoveries, alone.value.recoveries);

    let two = [file.clone(), file.clone()];
    let first = run_files(Path::new(""), &two, &p, true, ReproHooks::default());
    let again = run_files(Path::new(""), &two, &p, true, ReproHooks::default());
    assert_eq!(first.digest, again.digest);
    assert_ne!(first.digest, one.digest);
    // The second run of the file meets the first's table (a retried CREATE may meet `exists`).
    assert_eq!(first.value.files.len(), 2);
    let epochs: u64 = first.value.files.iter().map(|f| f.epochs).sum();
    assert!(epochs > one.value.files[0].epochs, "{epochs}");
}

/// RisingWave's background-DDL step, whole, on one seed of main-cron: it passes.
#[test]
fn the_background_ddl_step_passes_whole_on_a_seed() {
    use epochlab_sim::config::Topology;
    use epochlab_sim::{BugMode, Mode};
    use epochlab_simulation::ci;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/slt/risingwave");
    let step = ci::step("background-ddl").unwrap();
    let files = ci::step_files(&root, step).unwrap();
    assert_eq!(files.len(), 1);
    let profile = ci::profile("main-cron").unwrap();
    let run = BugMode::of_14910(Mode::Fixed);
    let p = ci::step_params(profile, step, 1, run, Topology::RISINGWAVE_CI);
    let out = ci::run_step(&root, &files, &p, false, ReproHooks::default());
    let r = out.value;
    assert_eq!(r.outcome(), Outcome::Passed, "{:?}", r.first_failure());
    assert!(r.files[0].records > 10, "{}", r.files[0].records);
    assert!(r.files[0].kills > 0, "kills at KILL_RATE=1.0");
}

/// A step's files are named by their place under the root: the same run under the root spelled two ways (as a
/// path relative to the working directory, and absolute) has the same digest and the same names.
#[test]
fn the_root_s_spelling_does_not_change_the_run() {
    let p = SltParams {
        seed: 3,
        kill: true,
        ..SltParams::default()
    };
    let absolute = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/slt");
    let relative = Path::new("../../tests/slt");
    assert!(
        relative.join("basic.slt").is_file(),
        "tests run in the crate's folder"
    );
    // (root, the file as a glob under it yields it): the `glob` crate drops a leading `./`.
    let cases = [
        (absolute.clone(), absolute.join("basic.slt")),
        (relative.to_path_buf(), relative.join("basic.slt")),
        (
            PathBuf::from("./../../tests/slt/"),
            relative.join("basic.slt"),
        ),
    ];
    let runs: Vec<_> = cases
        .iter()
        .map(|(root, file)| {
            run_files(
                root,
                std::slice::from_ref(file),
                &p,
                false,
                ReproHooks::default(),
            )
        })
        .collect();
    for run in &runs {
        assert_eq!(run.digest, runs[0].digest);
        assert_eq!(run.value.files[0].file, "basic.slt");
    }
}
