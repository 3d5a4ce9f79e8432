//! `epochlab corpus` as a user runs it, on small corpora of its own (`--root`): one line per file, the totals
//! and blockers, the JSON report, the ratchet (`newly passing`, `regressed`, `--update-expected`), exit
//! statuses, and one-line errors for bad input.

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

const PASS: &str = "statement ok\nCREATE TABLE t (v int);\n\ninclude ./part.slt.part\n";
const PART: &str = "statement ok\nINSERT INTO t VALUES (1);\n\nstatement ok\nFLUSH;\n\n\
                    query I\nSELECT count(*) FROM t;\n----\n1\n";
const FAIL: &str =
    "statement ok\nCREATE TABLE t (v int);\n\nquery I\nSELECT count(*) FROM t;\n----\n5\n";
/// The engine has no Kafka: a table with that connector stays outside the subset (if it ever is not, take
/// another construct that `tests/slt/errors/unsupported.slt` lists).
const UNSUPPORTED: &str = "statement ok\nCREATE TABLE t (v int);\n\n\
                           statement ok\nCREATE TABLE k (v int) WITH (connector = 'kafka');\n";

/// A corpus of three files in two folders (and a part that only `include` reaches).
fn corpus(test: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("epochlab-corpus-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for (name, body) in [
        ("ddl/pass.slt", PASS),
        ("ddl/part.slt.part", PART),
        ("ddl/fail.slt", FAIL),
        ("streaming/unsupported.slt", UNSUPPORTED),
    ] {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
    root
}

/// `epochlab corpus --root ROOT --jobs 2 --json ROOT/report.json EXTRA...`: the output and the JSON report.
fn run(root: &Path, extra: &[&str]) -> (Output, String, serde_json::Value) {
    let json = root.join("report.json");
    let mut args = vec![
        "corpus",
        "--root",
        root.to_str().unwrap(),
        "--jobs",
        "2",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(extra);
    let out = epochlab(&args);
    let stdout = text(&out.stdout);
    let report = std::fs::read(&json)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    (out, stdout, report)
}

#[test]
fn one_line_per_file_then_totals_blockers_and_json() {
    let root = corpus("lines");
    let (out, stdout, report) = run(&root, &[]);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        "ddl/fail.slt  failed at ddl/fail.slt:4: SELECT count(*) FROM t;: expected 5, actual 0"
    );
    assert_eq!(lines[1], "ddl/pass.slt  passed");
    assert!(
        lines[2]
            .starts_with("streaming/unsupported.slt  unsupported: CREATE TABLE with a connector"),
        "{stdout}"
    );
    assert!(
        lines[2].ends_with(" (at streaming/unsupported.slt:4)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("1/3 passed, 1 failed, 1 unsupported (without kills"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  ddl        1/2 passed, 1 failed, 0 unsupported"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  streaming  0/1 passed, 0 failed, 1 unsupported"),
        "{stdout}"
    );
    assert!(
        stdout.contains("     1  unsupported: CREATE TABLE with a connector"),
        "{stdout}"
    );
    assert!(stdout.contains("     1  wrong result"), "{stdout}");
    assert!(
        stdout.contains("newly passing (not in expected.txt"),
        "{stdout}"
    );
    assert!(stdout.contains(": ddl/pass.slt\n"), "{stdout}");
    assert_eq!(report["totals"]["passed"], 1);
    assert_eq!(report["totals"]["unsupported"], 1);
    assert_eq!(report["folders"]["ddl"]["failed"], 1);
    let construct = report["files"][2]["construct"].as_str().unwrap_or_default();
    assert!(
        construct.starts_with("CREATE TABLE with a connector"),
        "{report}"
    );
    assert_eq!(report["files"][0]["at"], "ddl/fail.slt:4");
    assert_eq!(report["newly_passing"][0], "ddl/pass.slt");
    assert_eq!(report["blockers"].as_array().map(Vec::len), Some(2));
}

#[test]
fn the_ratchet_names_regressions_and_is_updated() {
    let root = corpus("ratchet");
    let (out, stdout, _) = run(&root, &["--update-expected"]);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    // A run without kills knows nothing of kills.
    let expected = std::fs::read_to_string(root.join("expected.txt")).unwrap();
    assert_eq!(expected, "ddl/pass.slt only-without-kills\n");
    let (out, stdout, _) = run(&root, &[]);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains("newly passing"), "{stdout}");
    std::fs::write(
        root.join("expected.txt"),
        "# ours\nddl/fail.slt\nddl/pass.slt\n",
    )
    .unwrap();
    let (out, stdout, report) = run(&root, &[]);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("regressed (in expected.txt, not passing): ddl/fail.slt"),
        "{stdout}"
    );
    assert_eq!(report["regressed"][0], "ddl/fail.slt");
    // Under kills a listed file must pass too; the failing line names the seed; what the run without kills
    // showed is kept.
    std::fs::write(
        root.join("expected.txt"),
        "ddl/pass.slt only-without-kills\n",
    )
    .unwrap();
    let (out, stdout, _) = run(&root, &["--kill", "--seeds", "0..2", "--update-expected"]);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("ddl/fail.slt  failed (seed 0) at ddl/fail.slt:4"),
        "{stdout}"
    );
    let expected = std::fs::read_to_string(root.join("expected.txt")).unwrap();
    assert_eq!(expected, "ddl/pass.slt\n");
}

#[test]
fn an_include_that_matches_nothing_fails_its_file_only() {
    let root = corpus("include");
    std::fs::write(
        root.join("ddl/bad.slt"),
        "statement ok\nSELECT 1;\n\ninclude ./none/*.slt.part\n",
    )
    .unwrap();
    let (out, stdout, _) = run(&root, &[]);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(
            "ddl/bad.slt  failed at ddl/bad.slt:4: include ./none/*.slt.part: no file matches"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("1/4 passed"), "{stdout}");
}

#[test]
fn bad_input_is_exit_2_with_one_line() {
    let root = corpus("bad");
    let r = root.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["corpus", "--seeds", "0..2"], "--seeds needs --kill"),
        (vec!["corpus", "--jobs", "0"], "--jobs must be in 1..=256"),
        (
            vec!["corpus", "--kill", "--seeds", "2..1"],
            "--seeds takes A..B",
        ),
        (
            vec!["corpus", "--frobnicate"],
            "unknown flag `--frobnicate`",
        ),
        (vec!["corpus", "x.slt"], "corpus takes only flags"),
        (
            vec!["corpus", "--root", "/no/such/dir"],
            "/no/such/dir: cannot read",
        ),
        (
            vec!["corpus", "--root", "crates/cli/src"],
            "no .slt file under it",
        ),
    ];
    for (args, want) in cases {
        let out = epochlab(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    std::fs::write(root.join("expected.txt"), "ddl/gone.slt\n").unwrap();
    let out = epochlab(&["corpus", "--root", r]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("ddl/gone.slt is not a .slt file of the corpus"),
        "{stderr}"
    );
    std::fs::write(root.join("expected.txt"), "ddl/pass.slt sometimes\n").unwrap();
    let out = epochlab(&["corpus", "--root", r]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("expected.txt:1: `ddl/pass.slt sometimes`"),
        "{stderr}"
    );
}

/// A file no script of RisingWave's CI ran at f21fb9b7915 (no script's glob matches it and no file one matches
/// includes it, as `background_ddl/common/*`): its failure is labelled and counted apart, not among the failures
/// nor what blocks files. A file that only a matched file includes is not labelled.
#[test]
fn files_run_by_no_script_are_labelled_not_counted_as_failures() {
    let root = corpus("noscript");
    let drop_mv = "statement ok\nDROP MATERIALIZED VIEW m1;\n";
    for (rel, text) in [
        ("background_ddl/common/drop_mv.slt", drop_mv),
        ("background_ddl/common/included.slt", drop_mv),
        (
            "background_ddl/sim/basic.slt",
            "include ../common/included.slt\n",
        ),
    ] {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    let (out, stdout, report) = run(&root, &[]);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(
            "background_ddl/common/drop_mv.slt  run by no script at f21fb9b7915 (failed at \
             background_ddl/common/drop_mv.slt:1: "
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("1/6 passed, 3 failed, 1 unsupported, 1 not passing and run by no script"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("  1  unexpected error: catalog"),
        "{stdout}"
    );
    assert!(
        stdout.contains("background_ddl/common/included.slt  failed at "),
        "{stdout}"
    );
    assert_eq!(report["totals"]["run_by_no_script"], 1);
    assert_eq!(report["totals"]["failed"], 3);

    // The same root spelled from the working directory with a leading `./` (the `glob` crate drops it from the
    // paths it yields): the same files are found run by no script.
    let cwd = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let up = "../".repeat(cwd.components().count() - 1);
    let dotted = PathBuf::from(format!(
        "./{up}{}",
        root.strip_prefix("/").unwrap().display()
    ));
    // (Its report is written relative to the binary's working directory; the totals line says enough.)
    let (_, again, _) = run(&dotted, &[]);
    assert!(
        again.contains("1/6 passed, 3 failed, 1 unsupported, 1 not passing and run by no script"),
        "{again}"
    );
}
