//! `epochlab ci` as a user runs it: the table, the totals, the replay lines, shards that add up to the whole,
//! exit statuses and one-line errors for bad input.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn epochlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epochlab"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .output()
        .expect("epochlab runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A root (a copy of e2e_test/) with the given files.
fn root(test: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("epochlab-ci-cli-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (name, body) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
    dir
}

/// The table's rows: (step, seed, result).
fn rows(stdout: &str) -> Vec<(String, u64, String)> {
    stdout
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| !l.starts_with(' '))
        .map(|l| {
            let mut words = l.split_whitespace();
            let step = words.next().unwrap().to_string();
            let seed = words.next().unwrap().parse().unwrap();
            (step, seed, words.collect::<Vec<_>>().join(" "))
        })
        .collect()
}

const CREATE: &str = "statement ok\nCREATE TABLE t (k int PRIMARY KEY);\n\n\
                      statement ok\nINSERT INTO t VALUES (1), (2);\n\n\
                      statement ok\nFLUSH;\n";
const READ: &str = "query I\nSELECT count(*) FROM t;\n----\n2\n";
const FAIL: &str = "query I\nSELECT 1;\n----\n2\n";

#[test]
fn a_step_runs_its_files_in_one_cluster_and_passes() {
    let r = root("pass", &[("ddl/a.slt", CREATE), ("ddl/b.slt", READ)]);
    let out = epochlab(&[
        "ci",
        "--step",
        "ddl",
        "--seeds",
        "1..3",
        "--root",
        r.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let rows = rows(&stdout);
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(
        rows.iter()
            .all(|(_, _, r)| r.starts_with("passed (2 of 2 file(s)")),
        "{stdout}"
    );
    assert!(
        stdout.contains("ddl              2 of 2 seed(s) passed"),
        "{stdout}"
    );
    assert!(text(&out.stderr).contains("deviation: RisingWave's cluster ci-3cn-2fe-3meta"));
}

#[test]
fn the_first_failure_stops_the_step_with_its_place_and_a_replay() {
    let r = root(
        "stop",
        &[
            ("ddl/a.slt", CREATE),
            ("ddl/b.slt", FAIL),
            ("ddl/c.slt", READ),
        ],
    );
    let root = r.to_str().unwrap();
    let out = epochlab(&["ci", "--step", "ddl", "--seeds", "4..5", "--root", root]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let (_, seed, result) = &rows(&stdout)[0];
    assert_eq!(*seed, 4);
    assert!(result.starts_with("failed at ddl/b.slt:1: "), "{result}");
    assert!(
        result.contains("1 of 3 file(s) passed, 1 not run"),
        "{result}"
    );
    let replay = format!(
        "cargo xtask ci --profile pr --step ddl --seeds 4..5 --bug 14910 --mode fixed --root {root}"
    );
    assert!(stdout.contains(&replay), "{stdout}");

    let out = epochlab(&[
        "ci",
        "--step",
        "ddl",
        "--seeds",
        "4..5",
        "--root",
        root,
        "--keep-going",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("2 of 3 file(s) passed;"), "{stdout}");
    assert!(text(&out.stderr).contains("deviation: --keep-going"));
}

#[test]
fn shards_add_up_to_the_whole_run() {
    let r = root("shards", &[("ddl/a.slt", CREATE), ("ddl/b.slt", READ)]);
    let args = [
        "ci",
        "--step",
        "ddl",
        "--seeds",
        "1..6",
        "--root",
        r.to_str().unwrap(),
    ];
    let whole: BTreeSet<(String, u64, String)> =
        rows(&text(&epochlab(&args).stdout)).into_iter().collect();
    assert_eq!(whole.len(), 5);
    let mut union = BTreeSet::new();
    for shard in ["0/2", "1/2"] {
        let mut sharded = args.to_vec();
        sharded.extend(["--shard", shard]);
        let out = epochlab(&sharded);
        let part: Vec<_> = rows(&text(&out.stdout));
        assert!(!part.is_empty() && part.len() < 5, "{shard}: {part:?}");
        for row in part {
            assert!(union.insert(row), "a pair ran in two shards");
        }
    }
    // The same pairs with the same digests (the wall times aside).
    let strip = |set: &BTreeSet<(String, u64, String)>| -> BTreeSet<(String, u64, String)> {
        set.iter()
            .map(|(s, n, r)| {
                (
                    s.clone(),
                    *n,
                    r.split("digest ").nth(1).unwrap_or(r).to_string(),
                )
            })
            .collect()
    };
    assert_eq!(strip(&union), strip(&whole));
}

#[test]
fn steps_without_files_or_with_what_epochlab_lacks_are_not_run() {
    let r = root("notrun", &[("ddl/a.slt", CREATE)]);
    let out = epochlab(&["ci", "--root", r.to_str().unwrap(), "--seeds", "1..2"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("batch            not run: no file under"),
        "{stdout}"
    );
    assert!(
        stdout.contains("source           not run: needs a Kafka source"),
        "{stdout}"
    );
    assert!(
        stdout.contains("streaming        not run: no file under"),
        "{stdout}"
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let empty = root("empty", &[("README", "")]);
    let cases: [&[&str]; 6] = [
        &["ci", "--profile", "nightly"],
        &["ci", "--step", "kafka"],
        &["ci", "--profile", "main-cron-arrangement-backfill"],
        &["ci", "--shard", "2/2"],
        &["ci", "--seeds", "5..2"],
        &["ci", "--root", empty.to_str().unwrap()],
    ];
    for args in cases {
        let out = epochlab(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("epochlab ci: "), "{args:?}: {stderr}");
    }
}
