//! `epochlab slt` and `epochlab soak --slt` as a user runs them: exit statuses, what a failing record prints,
//! one-line errors for bad input.

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

fn temp(name: &str, body: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("epochlab-slt-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn passing_files_exit_0() {
    let out = epochlab(&[
        "slt",
        "tests/slt/basic.slt",
        "tests/slt/risingwave/ddl/throttle.slt",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert_eq!(stdout.matches("  passed  ").count(), 2, "{stdout}");
}

#[test]
fn a_failing_record_prints_file_line_sql_expected_actual_and_replay() {
    let f = temp(
        "fails.slt",
        "statement ok\nCREATE TABLE t (v int);\n\nquery I\nSELECT count(*) FROM t;\n----\n1\n",
    );
    let out = epochlab(&["slt", "--seed", "4", f.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("fails.slt:4: SELECT count(*) FROM t;"),
        "{stdout}"
    );
    assert!(
        stdout.contains("expected: 1") && stdout.contains("actual:   0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("replay: cargo xtask slt --seed 4 --bug 14910 --mode fixed "),
        "{stdout}"
    );
    let out = epochlab(&["slt", "--json", f.to_str().unwrap()]);
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON row");
    assert_eq!(row["outcome"], "failed");
    assert_eq!(row["failure"]["line"], 4);
}

#[test]
fn bad_input_is_exit_2_with_one_line() {
    let malformed = temp(
        "malformed.slt",
        "statement ok\nSELECT 1;\n\nstatement nope\nSELECT 2;\n",
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["slt", "no/such.slt"], "no/such.slt: no such file"),
        (
            vec!["slt", malformed.to_str().unwrap()],
            "malformed.slt:4: parse error",
        ),
        (vec!["slt"], "name the FILES..."),
        (
            vec!["slt", "--kill-rate", "0.5", "x.slt"],
            "--kill-rate needs --kill",
        ),
        (
            vec!["slt", "--kill", "--kill-rate", "2", "x.slt"],
            "--kill-rate",
        ),
        (vec!["slt", "--frobnicate", "x.slt"], "unknown flag"),
        (
            vec!["slt", "--mode", "all", "x.slt"],
            "--mode takes buggy, fixed or purge-before-reset, not `all`",
        ),
        (
            vec!["slt", "tests/slt/nothing-here-*.slt"],
            "no file matches",
        ),
        (vec!["soak", "--kill"], "--kill needs --slt"),
        (
            vec!["slt", "--kill", "--runner", "2023", "x.slt"],
            "--runner takes 2024 or latest, not `2023`",
        ),
        (
            vec!["slt", "--runner", "latest", "x.slt"],
            "--runner needs --kill, --kill-meta, --kill-frontend, --kill-compute or --kill-compactor",
        ),
        (
            vec!["slt", "--kill-frontend=yes", "x.slt"],
            "--kill-frontend takes no value",
        ),
        (
            vec!["slt", "--kill-meta=yes", "x.slt"],
            "--kill-meta takes no value",
        ),
        (
            vec!["soak", "--kill-compactor"],
            "--kill-compactor needs --slt",
        ),
        (
            vec!["soak", "--slt", "tests/slt/*.slt", "--scenario", "14910"],
            "--slt",
        ),
    ];
    for (args, want) in cases {
        let out = epochlab(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

#[test]
fn soak_over_files_finds_14910_in_buggy_and_replays_it() {
    let out = epochlab(&[
        "soak",
        "--slt",
        "tests/slt/recovery/drop_sink_*.slt",
        "--kill",
        "--mode",
        "buggy",
        "--seeds",
        "0..3",
        "--jobs",
        "2",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("row [Some(Int16(N))] not found"),
        "{stdout}"
    );
    let replay = stdout
        .lines()
        .find_map(|l| l.split("replay this file: ").nth(1))
        .expect("a replay command of the file");
    let words: Vec<&str> = replay.split_whitespace().collect();
    assert_eq!(&words[..3], &["cargo", "xtask", "slt"]);
    let out = epochlab(&words[2..]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("not found (by the backfill persist check)"));
}

#[test]
fn help_names_the_roles_killed_metas_first() {
    let out = epochlab(&["slt", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    for want in [
        "--kill-frontend",
        "--kill-compute",
        "--kill-compactor",
        "--runner <R>",
        "--kill-meta",
        "The roles: the metas (drawn first)",
        "only meta-1 dies",
        "KILL_IGNORE_FILES",
    ] {
        assert!(help.contains(want), "{want}: {help}");
    }
}

#[test]
fn a_kill_ignore_file_is_skipped_under_kill_and_the_json_says_so() {
    let dir = std::env::temp_dir().join(format!(
        "epochlab-slt-cli-{}/transaction",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("tolerance.slt");
    std::fs::write(&f, "query I\nSELECT 1;\n----\n2\n").unwrap();
    let out = epochlab(&["slt", "--kill", "--json", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON row");
    assert_eq!(row["skipped"], true);
    assert_eq!(row["runner"], "2024");
    assert_eq!(row["kill_roles"]["meta"], true, "--kill kills metas too");
    let out = epochlab(&["slt", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "runs without kills");
}

/// The trace of an `slt` run over a grouped view: each aggregation actor's `commit executor state` span sits
/// under its `actor barrier` span of the epoch, with the executor, its table and what it did.
#[test]
fn a_traced_run_has_executor_spans_under_their_actor_barriers() {
    use std::io::{Read, Write};
    let f = temp(
        "agg_trace.slt",
        "statement ok\nCREATE TABLE t (k int, v int);\n\n\
         statement ok\nCREATE MATERIALIZED VIEW m AS SELECT k, sum(v) AS s FROM t GROUP BY k;\n\n\
         statement ok\nINSERT INTO t VALUES (1, 10), (2, 20), (1, 5);\n\n\
         statement ok\nFLUSH;\n\n\
         query II rowsort\nSELECT * FROM m;\n----\n1 15\n2 20\n",
    );
    let jaeger = epochlab_telemetry::EmbeddedJaeger::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let endpoint = jaeger.otlp_endpoint();
    let out = epochlab(&["slt", f.to_str().unwrap(), "--otlp-endpoint", &endpoint]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let addr = jaeger.ui_addr();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /api/traces?service=epochlab&limit=5000 HTTP/1.0\r\nHost: {addr}\r\n\r\n"
    )
    .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    let body = body.split_once("\r\n\r\n").unwrap().1;
    let json: serde_json::Value = serde_json::from_str(body).unwrap();
    let spans: Vec<&serde_json::Value> = json["data"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["spans"].as_array().unwrap())
        .collect();
    let tag = |s: &serde_json::Value, k: &str| {
        s["tags"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["key"] == k)
            .map(|t| t["value"].to_string().trim_matches('"').to_string())
    };
    let commits: Vec<&&serde_json::Value> = spans
        .iter()
        .filter(|s| s["operationName"] == "commit executor state")
        .collect();
    assert!(
        !commits.is_empty(),
        "no executor span in {} spans",
        spans.len()
    );
    for c in &commits {
        assert_eq!(tag(c, "executor").as_deref(), Some("hash_agg"), "{c}");
        let parent_id = &c["references"][0]["spanID"];
        let parent = spans
            .iter()
            .find(|s| &s["spanID"] == parent_id)
            .unwrap_or_else(|| panic!("the parent of {c}"));
        assert_eq!(parent["operationName"], "actor barrier", "{parent}");
        assert_eq!(tag(c, "actor_id"), tag(parent, "actor_id"));
    }
    let rows: i64 = commits
        .iter()
        .filter_map(|c| tag(c, "rows_out")?.parse::<i64>().ok())
        .sum();
    assert_eq!(rows, 2, "two groups emitted once each");
}

/// `--crash-meta-at`: the point meta died at and the statement, or that no DDL reached it; a bad point is
/// one line, exit 2.
#[test]
fn slt_says_where_meta_crashed_or_that_it_never_did() {
    let dir = std::env::temp_dir().join(format!("epochlab-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("no_drop.slt");
    std::fs::write(
        &f,
        "statement ok\nCREATE TABLE t (k int);\n\nstatement ok\nINSERT INTO t VALUES (1);\n\n\
         query I\nSELECT count(*) FROM t;\n----\n1\n",
    )
    .unwrap();
    let file = f.to_str().unwrap();
    let out = epochlab(&["slt", "--crash-meta-at", "create-after-register", file]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("meta crashed at create-after-register: ")
            && said.contains("CREATE TABLE t (k int);"),
        "{said}"
    );
    let out = epochlab(&["slt", "--crash-meta-at", "drop-after-stop", "--json", file]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON row");
    assert_eq!(row["crash_meta_at"], "drop-after-stop");
    assert_eq!(row["meta_crashes"], serde_json::json!([]));
    assert_eq!(row["meta_nodes"], 3);
    // --meta-nodes 0 is refused as repro, soak and corpus refuse it: one line, exit 2.
    let out = epochlab(&["slt", "--meta-nodes", "0", file]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--meta-nodes must be in 1..=16, not 0"),
        "{}",
        text(&out.stderr)
    );
    let out = epochlab(&["slt", "--crash-meta-at", "drop-after-stop", file]);
    assert!(text(&out.stdout).contains("meta never crashed: no DDL reached drop-after-stop"));
    let out = epochlab(&["slt", "--crash-meta-at", "nowhere", file]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--crash-meta-at takes one of create-after-catalog"),
        "{err}"
    );
}
