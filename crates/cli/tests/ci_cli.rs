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
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "ci: cluster: 2 frontend(s) behind one round-robin address, 3 compute node(s) of 2 core(s) \
             (parallelism 6), 2 compactor(s)"
        ),
        "{stderr}"
    );
    let line = "3 metas on a lease as in RisingWave's ci-3cn-2fe-3meta, killed with the other roles \
                (drawn first), never all at once";
    assert!(stderr.contains(line), "{stderr}");
    // One meta never killed, as RisingWave's runner at HEAD: the same files pass, and the line says so.
    let args = [
        "ci",
        "--step",
        "ddl",
        "--seeds",
        "1..2",
        "--meta-nodes",
        "1",
    ];
    let out = epochlab(&[&args[..], &["--spare-meta", "--root", r.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let line = "deviation: RisingWave's ci-3cn-2fe-3meta has 3 metas, here 1 meta never killed (--spare-meta)";
    assert!(text(&out.stderr).contains(line), "{}", text(&out.stderr));
}

/// RisingWave's arrangement-backfill variant set `--use-arrangement-backfill`, whose SET reached no session of
/// the slt runner: its files see the variable's default, and the run is its twin's, step for step. Both
/// commands say so.
#[test]
fn the_arrangement_backfill_variant_reaches_no_file() {
    const SHOW: &str = "query T\nSHOW streaming_enable_arrangement_backfill;\n----\nfalse\n";
    let r = root("arrangement", &[("ddl/a.slt", CREATE), ("ddl/b.slt", SHOW)]);
    let run = |profile: &str| {
        let out = epochlab(&[
            "ci",
            "--profile",
            profile,
            "--step",
            "ddl",
            "--seeds",
            "1..3",
            "--root",
            r.to_str().unwrap(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        // Each row without its wall time: (seed, digest).
        let digests: Vec<(u64, String)> = rows(&text(&out.stdout))
            .into_iter()
            .map(|(_, seed, r)| (seed, r.split("digest ").nth(1).unwrap_or(&r).to_string()))
            .collect();
        (digests, text(&out.stderr) + &text(&out.stdout))
    };
    let (variant, said) = run("main-cron-arrangement-backfill");
    let (twin, _) = run("main-cron-background-ddl");
    assert_eq!(variant, twin);
    assert!(
        said.contains("ci: --use-arrangement-backfill: as at f21fb9b7915"),
        "{said}"
    );
    assert!(
        said.contains("\nnote: --use-arrangement-backfill: as at f21fb9b7915"),
        "the table's reader is told too: {said}"
    );
    let file = r.join("ddl/b.slt");
    let out = epochlab(&["slt", "--use-arrangement-backfill", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("epochlab slt: --use-arrangement-backfill: as at f21fb9b7915"),
        "{}",
        text(&out.stderr)
    );
}

/// RisingWave's backfill-tests script: a line per (function, seed) that runs, the functions not run with what
/// they need; exit 0 when none failed.
#[test]
fn the_backfill_tests_profile_runs_the_scripts_functions() {
    let r = root("backfill-tests", &[]);
    let (xml, logs) = (r.join("reports/backfill.xml"), r.join("logs"));
    let out = epochlab(&[
        "ci",
        "--profile",
        "backfill-tests",
        "--seeds",
        "1..2",
        "--junit",
        xml.to_str().unwrap(),
        "--log-dir",
        logs.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("test_replication_with_column_pruning                          1  passed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("test_snapshot_and_upstream_read                               1  passed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("2 run(s), 0 failed or stuck; 7 of 9 function(s) not run:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  test_sink_backfill_recovery: needs restart_cluster"),
        "{stdout}"
    );
    // One suite: a case per (function, seed) that ran, a skipped one per function not run.
    let read = junit_read_back(&xml);
    assert!(read.starts_with("suite backfill-tests 9 0 7\n"), "{read}");
    assert!(
        read.contains("case test_replication_with_column_pruning (seed 1) | passed\n"),
        "{read}"
    );
    assert!(
        read.contains(
            "case test_sink_backfill_recovery (not run) | skipped: not run: needs restart_cluster"
        ),
        "{read}"
    );
    // Logs are kept for failing runs only: none failed.
    let kept: Vec<_> = std::fs::read_dir(&logs).unwrap().collect();
    assert!(kept.is_empty(), "{kept:?}");
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
    // Meta spared: the file that fails fails the same, and its replay spares meta again.
    let out = epochlab(&[
        "ci",
        "--step",
        "ddl",
        "--seeds",
        "4..5",
        "--root",
        root,
        "--spare-meta",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        rows(&stdout)[0].2.starts_with("failed at ddl/b.slt:1: "),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{replay} --spare-meta")),
        "{stdout}"
    );
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

/// Asked only for what cannot run (a step epochlab lacks, a shard with no pair), the run says nothing ran.
#[test]
fn a_run_where_nothing_runs_says_so() {
    let r = root("nothing", &[("ddl/a.slt", CREATE)]);
    let root = r.to_str().unwrap();
    let out = epochlab(&["ci", "--step", "source", "--root", root]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("\nnothing ran: no step asked for can run here"),
        "{stdout}"
    );
    let args = [
        "ci", "--step", "ddl", "--seeds", "1..2", "--root", root, "--shard", "1/2",
    ];
    let out = epochlab(&args);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("nothing ran: shard 1/2 holds none of the 1 (step, seed) pair(s)"),
        "{stdout}"
    );
}

/// The script runs under `set -e`: a step with a failing seed ends the run, and the steps after it are reported
/// not run; `--keep-going` runs them.
#[test]
fn a_failing_step_ends_the_run_as_set_e_does() {
    let r = root("set-e", &[("ddl/b.slt", FAIL), ("streaming/a.slt", CREATE)]);
    let root = r.to_str().unwrap();
    let out = epochlab(&["ci", "--seeds", "1..3", "--root", root]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "streaming        not run: step ddl failed before it, which ended the script (set -e"
        ),
        "{stdout}"
    );
    assert!(
        !rows(&stdout).iter().any(|(s, _, _)| s == "streaming"),
        "{stdout}"
    );
    let out = epochlab(&["ci", "--seeds", "1..3", "--root", root, "--keep-going"]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("streaming        2 of 2 seed(s) passed"),
        "{stdout}"
    );
}

/// A failure in an included part names the part and the file including it, relative to the root; a result's
/// columns read as the file writes them, and an empty result as `no rows`.
#[test]
fn failures_read_as_the_files_are_written() {
    let r = root(
        "failures",
        &[
            ("ddl/a.slt", "include ./part/*.slt.part\n"),
            ("ddl/part/p.slt.part", "query II\nSELECT 1, 1;\n----\n1 2\n"),
            ("ddl/b.slt", "query I\nSELECT 1 WHERE false;\n----\n1\n"),
        ],
    );
    // The root however spelled: with `//` and `./` in it too.
    let dir = r.to_str().unwrap();
    let spelled = format!(
        "{}/.//{}",
        Path::new(dir).parent().unwrap().display(),
        r.file_name().unwrap().to_str().unwrap()
    );
    for root in [dir, spelled.as_str()] {
        let out = epochlab(&[
            "ci",
            "--step",
            "ddl",
            "--seeds",
            "1..2",
            "--root",
            root,
            "--keep-going",
        ]);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{stdout}");
        assert!(
            stdout.contains(
                "failed at ddl/part/p.slt.part:1 (included by ddl/a.slt): 1 1 (expected 1 2)"
            ),
            "{stdout}"
        );
        assert!(
            stdout.contains("also failed at ddl/b.slt:1: no rows (expected 1)"),
            "{stdout}"
        );
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let empty = root("empty", &[("README", "")]);
    let over = root(
        "over",
        &[
            ("ddl/a.slt", CREATE),
            ("ci-expected.txt", "pr ddl stop 2\n"),
        ],
    );
    let unknown = root(
        "unknown",
        &[
            ("ddl/a.slt", CREATE),
            ("ci-expected.txt", "nope ddl stop 1\n"),
        ],
    );
    let twice = root(
        "twice",
        &[
            ("ddl/a.slt", CREATE),
            ("ci-expected.txt", "pr ddl stop 1\npr ddl stop 0\n"),
        ],
    );
    let no_files = root(
        "nofiles",
        &[
            ("ddl/a.slt", CREATE),
            ("ci-expected.txt", "pr batch stop 3\n"),
        ],
    );
    let cases: [&[&str]; 22] = [
        &["ci", "--meta-nodes", "0"],
        &["ci", "--meta-nodes", "17"],
        &["ci", "--step", "ddl", "--root", unknown.to_str().unwrap()],
        &["ci", "--step", "ddl", "--root", twice.to_str().unwrap()],
        &["ci", "--step", "ddl", "--root", no_files.to_str().unwrap()],
        &["ci", "--update-expected", "--shard", "0/2"],
        &["ci", "--root", "README.md"],
        &["ci", "--compute-nodes", "0"],
        &["ci", "--frontend-nodes", "0"],
        &["ci", "--compute-node-cores", "65"],
        &["ci", "--compactor-nodes", "-1"],
        &["ci", "--profile", "nightly"],
        &["ci", "--step", "kafka"],
        &["ci", "--profile", "backfill-tests", "--step", "ddl"],
        &["ci", "--profile", "backfill-tests", "--compute-nodes", "8"],
        &["ci", "--profile", "backfill-tests", "--jobs", "1"],
        &[
            "ci",
            "--profile",
            "backfill-tests",
            "--log-dir",
            "README.md",
        ],
        &["ci", "--shard", "2/2"],
        &["ci", "--seeds", "5..2"],
        &["ci", "--seeds", "-1..2"],
        &["ci", "--root", empty.to_str().unwrap()],
        &["ci", "--step", "ddl", "--root", over.to_str().unwrap()],
    ];
    let negative = epochlab(&["ci", "--seeds", "-1..2"]);
    assert!(
        text(&negative.stderr)
            .contains("--seeds takes A..B, whole numbers in 0..=18446744073709551615 with A < B"),
        "a negative seed is a bad range, not a flag: {}",
        text(&negative.stderr)
    );
    for args in cases {
        let out = epochlab(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("epochlab ci: "), "{args:?}: {stderr}");
    }
}

/// A JUnit file as a JUnit reader (Debian's python3-junitparser) reads it: per suite its name, tests,
/// failures and skipped, then each case's name and result (`passed`, `failure: MESSAGE`, `skipped: MESSAGE`).
fn junit_read_back(path: &Path) -> String {
    let script = "import sys\n\
                  from junitparser import JUnitXml\n\
                  for suite in JUnitXml.fromfile(sys.argv[1]):\n\
                  \x20   print('suite', suite.name, suite.tests, suite.failures, suite.skipped)\n\
                  \x20   for case in suite:\n\
                  \x20       r = [type(x).__name__.lower() + ': ' + (x.message or '') for x in case.result]\n\
                  \x20       print('case', case.name, '|', r[0] if r else 'passed')\n";
    let out = Command::new("/usr/bin/python3")
        .args(["-c", script, path.to_str().unwrap()])
        .output()
        .expect("Debian's python3 runs (`cargo xtask setup` installs python3-junitparser)");
    assert!(
        out.status.success(),
        "junitparser (`cargo xtask setup` installs Debian's python3-junitparser): {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

#[test]
fn junit_is_read_back_by_a_junit_reader() {
    let r = root(
        "junit",
        &[
            ("ddl/a.slt", CREATE),
            ("ddl/b.slt", FAIL),
            ("ddl/c.slt", READ),
        ],
    );
    // Its folder is made when missing.
    let xml = r.join("reports/out.xml");
    let out = epochlab(&[
        "ci",
        "--step",
        "ddl",
        "--seeds",
        "1..3",
        "--root",
        r.to_str().unwrap(),
        "--junit",
        xml.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let read = junit_read_back(&xml);
    assert!(read.starts_with("suite ddl 6 2 2\n"), "{read}");
    assert!(
        read.contains("case ddl/a.slt (seed 1) | passed\n"),
        "{read}"
    );
    assert!(
        read.contains("case ddl/b.slt (seed 2) | failure: failed at ddl/b.slt:1: 1 (expected 2)\n"),
        "{read}"
    );
    assert!(
        read.contains(
            "case ddl/c.slt (seed 1) | skipped: not run: the step stopped at ddl/b.slt\n"
        ),
        "{read}"
    );
    // A whole run: the steps without files are suites of one skipped case.
    let out = epochlab(&[
        "ci",
        "--seeds",
        "1..2",
        "--root",
        r.to_str().unwrap(),
        "--junit",
        xml.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let read = junit_read_back(&xml);
    let suites: Vec<&str> = read.lines().filter(|l| l.starts_with("suite ")).collect();
    assert_eq!(suites.len(), 5, "{read}");
    assert!(
        read.contains("case source (not run) | skipped: not run: needs a Kafka source"),
        "{read}"
    );
}

#[test]
fn logs_are_kept_for_failing_seeds_only_and_triaged() {
    let r = root("logs", &[]);
    let streaming = r.join("streaming");
    std::fs::create_dir_all(&streaming).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::copy(
        repo.join("tests/slt/recovery/drop_sink_during_backfill.slt"),
        streaming.join("drop_sink_during_backfill.slt"),
    )
    .unwrap();
    let logs = r.join("logs");
    let out = epochlab(&[
        "ci",
        "--profile",
        "main-cron",
        "--step",
        "streaming",
        "--mode",
        "buggy",
        "--seeds",
        "7..9",
        "--root",
        r.to_str().unwrap(),
        "--log-dir",
        logs.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let kept: Vec<String> = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // Seed 7 fails (#14910's zombie), seed 8 passes: its log is gone.
    assert_eq!(kept, ["recovery-streaming-7.log"], "{stdout}");
    let log = std::fs::read_to_string(logs.join(&kept[0])).unwrap();
    assert!(
        log.contains("not found (by the backfill persist check)"),
        "{}",
        &log[log.len().saturating_sub(2000)..]
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("streaming") && l.contains(" 7  "))
        .unwrap();
    assert!(row.contains("triage: 14910"), "{row}");

    let unwritable = epochlab(&["ci", "--log-dir", "/proc/epochlab-logs"]);
    assert_eq!(unwritable.status.code(), Some(2));
    assert_eq!(text(&unwritable.stderr).lines().count(), 1);
}

#[test]
fn the_ratchet_names_a_regression_and_is_updated() {
    let r = root(
        "ratchet",
        &[
            ("ddl/a.slt", CREATE),
            ("ddl/b.slt", FAIL),
            ("ci-expected.txt", "# mine\npr ddl stop 2\n"),
        ],
    );
    let root = r.to_str().unwrap();
    let out = epochlab(&["ci", "--step", "ddl", "--seeds", "1..3", "--root", root]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("  ddl              1 file(s) passed before its stop on its worst seed: REGRESSED from 2"),
        "{stdout}"
    );
    let out = epochlab(&[
        "ci",
        "--step",
        "ddl",
        "--seeds",
        "1..3",
        "--root",
        root,
        "--update-expected",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let ratchet = std::fs::read_to_string(r.join("ci-expected.txt")).unwrap();
    assert_eq!(ratchet, "# mine\npr ddl stop 1\n");
    let out = epochlab(&[
        "ci",
        "--step",
        "ddl",
        "--seeds",
        "1..3",
        "--root",
        root,
        "--keep-going",
    ]);
    assert!(text(&out.stdout).contains("in all (--keep-going) on its worst seed: no line yet"));

    std::fs::write(r.join("ci-expected.txt"), "pr ddl halt 2\n").unwrap();
    let out = epochlab(&["ci", "--root", root]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("`halt` is not stop or keep-going"));
}

/// The vendored steps hold their ratchet (`tests/slt/risingwave/ci-expected.txt`) on main-cron's first seed:
/// the whole profile, which `streaming`'s failure ends (`set -e`), then `batch` alone.
#[test]
fn the_vendored_steps_hold_their_ratchet() {
    let mut checked = 0;
    for step in [None, Some("batch")] {
        let mut args = vec![
            "ci",
            "--profile",
            "main-cron",
            "--seeds",
            "1..2",
            "--jobs",
            "2",
        ];
        if let Some(step) = step {
            args.extend(["--step", step]);
        }
        let out = epochlab(&args);
        let stdout = text(&out.stdout);
        let lines: Vec<&str> = stdout
            .lines()
            .skip_while(|l| !l.starts_with("ratchet ("))
            .skip(1)
            .collect();
        assert_eq!(lines.len(), if step.is_some() { 1 } else { 3 }, "{stdout}");
        for line in lines {
            assert!(
                line.contains(": as its ") || line.contains(": more than its "),
                "{line}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 4);
}
