//! The `epochlab` binary as a user runs it: exit statuses, one-line errors, and the JSON rows.

use std::ffi::OsString;
use std::process::{Command, Output};

use serde::Deserialize;

/// `epochlab repro --json`'s row, field for field: an added, renamed or missing field fails the test.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct RunRow {
    bug: String,
    mode: String,
    seed: u64,
    outcome: String,
    verdict: String,
    error: Option<String>,
    caught_by: Option<String>,
    kind: Option<String>,
    failing_vnode: Option<u32>,
    failing_actor: Option<u32>,
    epochs: u64,
    max_committed_epoch: u64,
    recoveries: u64,
    violations: Vec<ViolationRow>,
    notes: Vec<String>,
    persist_check: bool,
    crash_meta_at: Option<String>,
    meta_crashes: Vec<String>,
    meta_nodes: u32,
    meta_leader_changes: u64,
    virtual_ms: u64,
    wall_ms: u64,
    digest: String,
    replay: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ViolationRow {
    invariant: String,
    detail: String,
    actor: Option<u32>,
    table: Option<u32>,
    epoch: Option<u64>,
    at_us: Option<u64>,
}

/// `epochlab repro --check-determinism --json`'s row.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct DeterminismRow {
    mode: String,
    verdict: String,
    digests: Vec<String>,
    outcomes: Vec<String>,
    first_difference: Option<serde_json::Value>,
    crash: Option<String>,
    stderr_tail: Vec<String>,
    replay: String,
}

fn epochlab<I: Into<OsString>>(args: impl IntoIterator<Item = I>) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epochlab"))
        .args(args.into_iter().map(Into::into))
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .output()
        .expect("epochlab runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8 output")
}

fn rows<T: for<'de> Deserialize<'de>>(out: &Output) -> Vec<T> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("`{l}`: {e}")))
        .collect()
}

#[test]
fn bad_input_is_exit_2_with_one_line_on_stderr() {
    let cases: [&[&str]; 18] = [
        &[],
        &["repro", "--meta-nodes", "0"],
        &["repro", "--crash-meta-at", "drop-after-nothing"],
        &["repro", "--crash-meta-at", "create-after-catalog"],
        &[
            "repro",
            "--bug",
            "22384",
            "--crash-meta-at",
            "drop-after-stop",
        ],
        &["soak", "--serve-for", "5"],
        &["soak", "--metrics-addr", "localhost:9464"],
        &["sok"],
        &["repro", "--bogus"],
        &["repro", "--vnodes", "0"],
        &["repro", "--seed", "1", "--seed", "2"],
        &["repro", "--jaeger-addr", "127.0.0.1:1"],
        &[
            "repro",
            "--serve-for",
            "5",
            "--otlp-endpoint",
            "http://127.0.0.1:4317",
        ],
        &["repro", "--check-determinism", "--event-log", "x.log"],
        &["repro", "--pace", "0"],
        &["repro", "--pace", "off"],
        &["repro", "--metrics-interval-ms", "500"],
        &["repro", "--metrics-out", "/nonexistent-dir/run.om"],
    ];
    for args in cases {
        let out = epochlab(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("epochlab"), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[cfg(unix)]
#[test]
fn a_non_utf8_argument_is_exit_2() {
    use std::os::unix::ffi::OsStringExt;
    let bad = OsString::from_vec(vec![b'f', 0xff, b'f']);
    let out = epochlab([OsString::from("repro"), bad]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "epochlab: argument 2 is not valid UTF-8\n"
    );
}

#[test]
fn help_is_exit_0_and_names_every_outcome() {
    let out = epochlab(["repro", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    for word in [
        "failed",
        "passed",
        "not_reproducible",
        "stuck",
        "--persist-check <on|off>",
    ] {
        assert!(help.contains(word), "{word}");
    }
}

#[test]
fn fixed_passes_with_one_json_row() {
    let out = epochlab(["repro", "--mode", "fixed", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows: Vec<RunRow> = rows(&out);
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(
        (row.mode.as_str(), row.outcome.as_str()),
        ("fixed", "passed")
    );
    assert!(row.persist_check);
    assert_eq!(row.verdict, "met");
    assert!(!row.digest.is_empty());
    assert!(row.replay.contains("--persist-check on"), "{}", row.replay);
    assert_eq!(row.bug, "14910");
}

/// `--meta-nodes 1`: every bug's scenario on one meta meets its expectation, and the rows and the replay
/// keep the flag (3, the default, is left out); with three metas a crash point kills the leader, which restores
/// its lease (no leader change).
#[test]
fn every_bug_meets_its_expectation_on_one_meta_and_a_crash_keeps_the_leader() {
    let out = epochlab(["repro", "--bug", "all", "--meta-nodes", "1", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let all: Vec<RunRow> = rows(&out);
    assert_eq!(all.len(), 21);
    for row in &all {
        assert_eq!(row.verdict, "met", "{} {}", row.bug, row.mode);
        assert_eq!(row.meta_nodes, 1);
        assert!(row.replay.contains(" --meta-nodes 1"), "{}", row.replay);
    }
    let args = ["repro", "--mode", "fixed"];
    let crash = ["--crash-meta-at", "create-after-register", "--json"];
    let out = epochlab(args.into_iter().chain(crash));
    let crashed: Vec<RunRow> = rows(&out);
    let row = &crashed[0];
    assert_eq!(row.outcome, "passed");
    assert_eq!(row.meta_crashes, ["create-after-register: CREATE TABLE t"]);
    assert_eq!(row.meta_leader_changes, 0, "restored within its lease");
    let stdout = text(&epochlab(args).stdout);
    assert!(stdout.contains("; 3 metas on a lease"), "{stdout}");
}

/// `--crash-meta-at`: the row names the point and the DDL meta died in, the table's text says it, and the
/// replay keeps the flag.
#[test]
fn a_meta_crash_is_in_the_row_and_the_text() {
    let args = [
        "repro",
        "--mode",
        "fixed",
        "--crash-meta-at",
        "drop-after-fragments",
    ];
    let out = epochlab(args.into_iter().chain(["--json"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows: Vec<RunRow> = rows(&out);
    let row = &rows[0];
    assert_eq!(row.outcome, "passed");
    assert_eq!(row.crash_meta_at.as_deref(), Some("drop-after-fragments"));
    assert_eq!(
        row.meta_crashes,
        ["drop-after-fragments: DROP SINK sink_14910"]
    );
    assert!(
        row.replay.ends_with("--crash-meta-at drop-after-fragments"),
        "{}",
        row.replay
    );
    let out = epochlab(args);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("meta crashes at drop-after-fragments"),
        "{stdout}"
    );
    let line = "fixed: meta crashed at drop-after-fragments: DROP SINK sink_14910";
    assert!(stdout.contains(line), "{stdout}");
}

/// `--bug all`: every bug's buggy mode fails with its own symptom and its fix passes (exit 0); each row names
/// its bug and replays with `--bug`.
#[test]
fn every_bug_fails_with_its_own_symptom_and_its_fix_holds() {
    let out = epochlab(["repro", "--bug", "all", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows: Vec<RunRow> = rows(&out);
    let runs: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| (r.bug.as_str(), r.mode.as_str(), r.outcome.as_str()))
        .collect();
    assert_eq!(
        runs,
        [
            ("12990", "buggy", "failed"),
            ("12990", "fixed", "passed"),
            ("14910", "buggy", "failed"),
            ("14910", "fixed", "passed"),
            ("14910", "purge-before-reset", "failed"),
            ("15144", "buggy", "failed"),
            ("15144", "fixed", "passed"),
            ("16815", "buggy", "failed"),
            ("16815", "fixed", "passed"),
            ("19138", "buggy", "failed"),
            ("19138", "fixed", "passed"),
            ("22384", "buggy", "failed"),
            ("22384", "fixed", "passed"),
            ("22476", "buggy", "failed"),
            ("22476", "fixed", "passed"),
            ("5244", "buggy", "failed"),
            ("5244", "fixed", "passed"),
            ("8440", "buggy", "failed"),
            ("8440", "fixed", "passed"),
            ("reschedule-unpinned", "buggy", "failed"),
            ("reschedule-unpinned", "fixed", "passed"),
        ]
    );
    // Each bug's buggy row.
    let buggy = |bug: &str| {
        let row = rows.iter().find(|r| r.bug == bug && r.mode == "buggy");
        row.unwrap_or_else(|| panic!("no buggy row of {bug}"))
    };
    let error = |bug: &str| buggy(bug).error.clone().unwrap_or_default();
    assert!(
        error("14910").starts_with("row [Some(Int16(0))] not found"),
        "{}",
        error("14910")
    );
    assert!(error("22384").starts_with("epoch "), "{}", error("22384"));
    assert!(
        error("22384").contains(" committed without worker "),
        "{}",
        error("22384")
    );
    assert!(
        buggy("22384")
            .replay
            .ends_with("--bug 22384 --mode buggy --seed 1"),
        "{}",
        buggy("22384").replay
    );
    assert!(
        error("16815").starts_with("Backfill progress for vnode VirtualNode("),
        "{}",
        error("16815")
    );
    assert!(
        error("19138")
            .starts_with("All vnode partitions should have same state (no scale-in supported): "),
        "{}",
        error("19138")
    );
    assert!(
        error("19138").ends_with("(assertion `left == right` failed, left: true, right: false)"),
        "{}",
        error("19138")
    );
    assert!(
        error("22476").starts_with("key OwnedRow([Some(Int64(")
            && error("22476").ends_with("]) should be in the cache"),
        "{}",
        error("22476")
    );
    assert!(
        error("5244").starts_with("table ")
            && error("5244").contains(", but the table is at epoch "),
        "{}",
        error("5244")
    );
    assert_eq!(
        error("8440"),
        "Watermark for vnodes should be either all None or all Some()"
    );
    assert!(
        error("reschedule-unpinned").starts_with("backfill progress of vnode "),
        "{}",
        error("reschedule-unpinned")
    );
    assert!(
        error("reschedule-unpinned").ends_with("(by the backfill persist check)"),
        "{}",
        error("reschedule-unpinned")
    );
    assert!(
        buggy("reschedule-unpinned")
            .replay
            .ends_with("--bug reschedule-unpinned --mode buggy --seed 1"),
        "{}",
        buggy("reschedule-unpinned").replay
    );
    assert!(
        buggy("19138")
            .replay
            .ends_with("--bug 19138 --mode buggy --seed 1"),
        "{}",
        buggy("19138").replay
    );
    assert!(
        error("15144").starts_with("stalled: "),
        "{}",
        error("15144")
    );
    assert!(
        error("15144").contains("may be removed by meta-service."),
        "{}",
        error("15144")
    );
    assert!(
        error("12990")
            .ends_with(": recover mview progress should not fail: table_fragment not exist: id=2"),
        "{}",
        error("12990")
    );
    let catalogue = epochlab(["bugs"]);
    assert_eq!(catalogue.status.code(), Some(0));
    assert!(text(&catalogue.stdout).contains("22384\n  mechanism: "));
    assert!(text(&catalogue.stdout).contains("16815\n  mechanism: "));
    assert!(text(&catalogue.stdout).contains("19138\n  mechanism: "));
    assert!(text(&catalogue.stdout).contains("15144\n  mechanism: "));
    assert!(
        text(&catalogue.stdout).contains("reschedule-unpinned\n  mechanism: epochlab's own check")
    );
    let bad = epochlab(["repro", "--bug", "22384", "--mode", "purge-before-reset"]);
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(
        text(&bad.stderr).lines().count(),
        1,
        "{}",
        text(&bad.stderr)
    );
}

/// A run of another bug with its scenario's settings replays exactly: the replay command carries them.
#[test]
fn a_bug_run_with_its_settings_replays_from_its_replay_command() {
    let args = [
        "--bug",
        "16815",
        "--mode",
        "buggy",
        "--parallelism",
        "1",
        "--persist-check",
        "off",
    ];
    let out = epochlab([&["repro", "--json"][..], &args].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let first: Vec<RunRow> = rows(&out);
    let error = first[0].error.clone().unwrap_or_default();
    assert!(
        error.starts_with("view m differs from its query: "),
        "{error}"
    );
    let replay = first[0]
        .replay
        .strip_prefix("cargo xtask repro ")
        .expect("a repro command");
    assert!(
        replay.ends_with("--parallelism 1 --persist-check off"),
        "{replay}"
    );
    let again = epochlab(
        [
            &["repro", "--json"][..],
            &replay.split(' ').collect::<Vec<_>>(),
        ]
        .concat(),
    );
    let again: Vec<RunRow> = rows(&again);
    assert_eq!(again[0].digest, first[0].digest);
}

#[test]
fn a_table_of_one_row_is_an_outcome_not_a_panic() {
    let out = epochlab(["repro", "--rows", "1", "--mode", "buggy", "--json"]);
    assert_ne!(out.status.code(), Some(101), "{}", text(&out.stderr));
    let rows: Vec<RunRow> = rows(&out);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].mode, "buggy");
}

#[test]
fn check_determinism_honours_json() {
    let out = epochlab(["repro", "--check-determinism", "--mode", "fixed", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows: Vec<DeterminismRow> = rows(&out);
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row.verdict, "deterministic");
    assert_eq!(row.digests.len(), 2);
    assert_eq!(row.digests[0], row.digests[1]);
    assert_eq!(row.outcomes, ["passed", "passed"]);
}

/// A soak over a few seeds of the buggy scenario: one JSON line per seed, failures grouped by signature, and
/// a second run with the same results file resumes instead of repeating.
#[test]
fn a_soak_writes_one_line_per_seed_and_resumes() {
    let dir = std::env::temp_dir().join(format!("epochlab-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let results = dir.join("results.jsonl");
    let results_flag = results.to_str().unwrap();
    let args = [
        "soak",
        "--scenario",
        "14910",
        "--mode",
        "buggy",
        "--seeds",
        "1..9",
        "--jobs",
        "2",
    ];
    let out = epochlab(args.iter().copied().chain(["--results", results_flag]));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("not found (by the backfill persist check)"),
        "{stdout}"
    );
    let lines = std::fs::read_to_string(&results).unwrap();
    let seeds: Vec<u64> = lines
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seed"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(seeds.len(), 8);
    let again = epochlab(
        [
            "soak",
            "--scenario",
            "14910",
            "--mode",
            "buggy",
            "--seeds",
            "1..11",
            "--jobs",
            "2",
        ]
        .into_iter()
        .chain(["--results", results_flag]),
    );
    assert!(text(&again.stderr).contains("2 seeds to run (8 already in the results)"));
    assert_eq!(
        std::fs::read_to_string(&results).unwrap().lines().count(),
        10
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Shards K/N together run every seed once, and merging their results gives the triage of one unsharded run;
/// replaying a results file finds every seed the same.
#[test]
fn shards_merge_into_the_unsharded_campaign_and_replays_are_the_same() {
    let dir = std::env::temp_dir().join(format!("epochlab-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let base = [
        "soak", "--mode", "buggy", "--seeds", "20..32", "--jobs", "2",
    ];
    let whole = file("whole.jsonl");
    epochlab(base.iter().copied().chain(["--results", whole.as_str()]));
    let mut shards = Vec::new();
    for k in 0..3 {
        let shard = format!("{k}/3");
        let path = file(&format!("shard{k}.jsonl"));
        let args = ["--shard", shard.as_str(), "--results", path.as_str()];
        epochlab(base.iter().copied().chain(args));
        shards.push(path);
    }
    let seeds_of = |path: &str| -> Vec<u64> {
        let text = std::fs::read_to_string(path).unwrap();
        let rows = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap());
        rows.map(|r| r["seed"].as_u64().unwrap()).collect()
    };
    let mut all: Vec<u64> = shards.iter().flat_map(|s| seeds_of(s)).collect();
    all.sort_unstable();
    assert_eq!(all, (20..32).collect::<Vec<_>>(), "every seed exactly once");
    let merged = epochlab(
        ["soak-report".to_string()]
            .into_iter()
            .chain(shards.clone()),
    );
    let unsharded = epochlab(["soak-report", whole.as_str()]);
    assert_eq!(merged.status.code(), unsharded.status.code());
    assert_eq!(text(&merged.stdout), text(&unsharded.stdout));
    let replay = epochlab(["soak", "--replay", whole.as_str(), "--jobs", "2"]);
    assert_eq!(replay.status.code(), Some(0), "{}", text(&replay.stdout));
    assert!(text(&replay.stdout).ends_with("replayed 12: 12 same, 0 differ\n"));
    // A results file whose recorded digest is not what the seed gives: the replay says so.
    let tampered = file("tampered.jsonl");
    let first = std::fs::read_to_string(&whole).unwrap();
    let line = first.lines().next().unwrap();
    let mut row: serde_json::Value = serde_json::from_str(line).unwrap();
    row["digest"] = "0000000000000000".into();
    std::fs::write(&tampered, format!("{row}\n")).unwrap();
    let differs = epochlab(["soak", "--replay", tampered.as_str()]);
    assert_eq!(differs.status.code(), Some(1));
    assert!(
        text(&differs.stdout).contains("DIFFERS"),
        "{}",
        text(&differs.stdout)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--metrics-addr` on an address already in use: one line, exit 2, and no seed runs.
#[test]
fn a_metrics_port_in_use_is_exit_2_with_one_line() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    for command in ["soak", "repro"] {
        let out = epochlab([command, "--metrics-addr", addr.as_str()]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{command}: {stderr}");
        let want = format!("epochlab {command}: metrics: cannot listen on {addr}: ");
        assert!(stderr.starts_with(&want), "{command}: {stderr}");
        assert!(out.stdout.is_empty(), "{command}");
    }
}

/// Serving metrics does not change a seed's run: the same digests with and without `--metrics-addr`.
#[test]
fn a_soak_with_metrics_runs_the_same_seeds() {
    let base = [
        "soak", "--mode", "buggy", "--engine", "2024", "--seeds", "52..58", "--jobs", "2", "--json",
    ];
    let digests = |extra: &[&str]| -> std::collections::BTreeMap<u64, String> {
        let out = epochlab(base.iter().chain(extra));
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let rows: Vec<serde_json::Value> = rows(&out);
        rows.iter()
            .map(|r| (r["seed"].as_u64().unwrap(), r["digest"].to_string()))
            .collect()
    };
    let without = digests(&[]);
    assert_eq!(without.len(), 6);
    assert_eq!(without, digests(&["--metrics-addr", "127.0.0.1:0"]));
}

/// The acceptance path of random plans: a buggy campaign on the engine of 2024 (where #14910 lived) finds the
/// #14910 failure, its results replay the same, `--shrink` writes a smaller plan that `--plan` replays to the
/// same signature, and the fix passes it.
#[test]
fn a_buggy_random_campaign_finds_replays_and_shrinks_the_bug() {
    let dir = std::env::temp_dir().join(format!("epochlab-random-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let results = dir.join("r.jsonl");
    let results = results.to_str().unwrap();
    let campaign = [
        "soak", "--mode", "buggy", "--engine", "2024", "--seeds", "52..60", "--jobs", "2",
    ];
    let out = epochlab(campaign.iter().copied().chain(["--results", results]));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let triage = text(&out.stdout);
    assert!(
        triage.contains("first seed 56: I2 zombie-access"),
        "{triage}"
    );
    assert!(
        triage.contains(
            "replay: cargo xtask soak --scenario random --bug 14910 --mode buggy --kill-rate 0.5 \
             --background-ddl-rate 0.5 --engine 2024 --kill-meta-rate 0.3 --crash-meta-rate 0.3 \
             --meta-outage-rate 0.2 --meta-nodes 3 --seeds 56..57"
        ),
        "{triage}"
    );
    let replay = epochlab(["soak", "--replay", results, "--jobs", "2"]);
    assert!(
        text(&replay.stdout).ends_with("replayed 8: 8 same, 0 differ\n"),
        "{}",
        text(&replay.stdout)
    );
    let shrink = std::process::Command::new(env!("CARGO_BIN_EXE_epochlab"))
        .current_dir(&dir)
        .args([
            "soak", "--mode", "buggy", "--engine", "2024", "--seeds", "56..57", "--shrink",
            "--jobs", "2",
        ])
        .output()
        .unwrap();
    assert_eq!(shrink.status.code(), Some(1), "{}", text(&shrink.stderr));
    let stdout = text(&shrink.stdout);
    let path = dir.join(stdout.lines().last().unwrap());
    assert!(path.to_str().unwrap().ends_with(".json"), "{stdout}");
    let (before, after) = stdout
        .lines()
        .find_map(|l| l.strip_prefix("shrink: ")?.split_once(" steps -> "))
        .expect("the shrink says how many steps it removed");
    let after: usize = after.split_whitespace().next().unwrap().parse().unwrap();
    assert!(after < before.parse().unwrap(), "{stdout}");
    let plan = path.to_str().unwrap();
    let again = epochlab(["soak", "--plan", plan]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stdout).contains("as expected: failed"),
        "{}",
        text(&again.stdout)
    );
    let fixed = epochlab(["soak", "--plan", plan, "--mode", "fixed"]);
    assert_eq!(fixed.status.code(), Some(0), "{}", text(&fixed.stdout));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `soak --plan FILE` exits 1 when the plan's outcome differs from the file's expected one, even when the
/// plan passed; 0 when it passes as expected.
#[test]
fn a_plan_whose_outcome_differs_from_its_expectation_exits_1() {
    let dir = std::env::temp_dir().join(format!("epochlab-differs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let regression = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/regressions/create-over-dropped-upstream.json"
    );
    let as_expected = epochlab(["soak", "--plan", regression]);
    assert_eq!(as_expected.status.code(), Some(0));
    assert!(text(&as_expected.stdout).contains("as expected: passed"));
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(regression).unwrap()).unwrap();
    assert_eq!(file["mode"], "fixed");
    file["expect"] =
        serde_json::json!({"outcome": "failed", "signature": "a failure it never had"});
    let differing = dir.join("differing.json");
    std::fs::write(&differing, file.to_string()).unwrap();
    let out = epochlab(["soak", "--plan", differing.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("plan (seed 5040, mode fixed): passed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("DIFFERS from the expected: failed"),
        "{stdout}"
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bad inputs: one line on stderr, exit 2.
#[test]
fn bad_soak_input_is_one_line_and_exit_2() {
    let dir = std::env::temp_dir().join(format!("epochlab-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let malformed = dir.join("malformed.jsonl");
    std::fs::write(&malformed, "{\"seed\": 1}\nnot json\n").unwrap();
    let malformed = malformed.to_str().unwrap();
    let cases: [&[&str]; 7] = [
        &["soak", "--results", malformed],
        &["soak", "--seeds", "5..3"],
        &["soak", "--shard", "3/2"],
        &["soak", "--jobs", "0"],
        &["soak", "--plan", "missing.json"],
        &["soak", "--replay", malformed],
        &["soak-report", malformed],
    ];
    for args in cases {
        let out = epochlab(args.iter().copied());
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--otlp-endpoint`: the traces of the failing seeds (and only those) reach the collector, each named by its
/// seed and carrying the failing `persist backfill state` span.
#[test]
fn a_soak_sends_the_traces_of_its_failing_seeds() {
    use std::io::{Read, Write};
    let jaeger = epochlab_telemetry::EmbeddedJaeger::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let endpoint = jaeger.otlp_endpoint();
    let args = [
        "soak", "--mode", "buggy", "--engine", "2024", "--seeds", "100..102", "--jobs", "1",
        "--json",
    ];
    let out = epochlab(
        args.iter()
            .copied()
            .chain(["--otlp-endpoint", endpoint.as_str()]),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let all: Vec<serde_json::Value> = rows(&out);
    let failed: Vec<u64> = all
        .iter()
        .filter(|r| r["outcome"] != "passed")
        .map(|r| r["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(
        failed,
        vec![101],
        "seed 101 fails in buggy mode, 100 passes"
    );
    let addr = jaeger.ui_addr();
    let get = |path: &str| {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut body = String::new();
        s.read_to_string(&mut body).unwrap();
        body.split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default()
    };
    let traces: serde_json::Value =
        serde_json::from_str(&get("/api/traces?service=epochlab&limit=5000")).unwrap();
    let traces = traces["data"].as_array().cloned().unwrap_or_default();
    assert!(!traces.is_empty(), "no trace reached the collector");
    let body = serde_json::to_string(&traces).unwrap();
    assert!(
        body.contains("buggy-101"),
        "the traces name the failing seed"
    );
    assert!(!body.contains("buggy-100"), "a passing seed is not traced");
    assert!(
        body.contains("not found (by the backfill persist check)"),
        "the failing span is there"
    );
}

/// `--otlp-endpoint` that cannot deliver: one line on stderr and exit 1 (the run itself passed).
#[test]
fn undeliverable_traces_are_one_line_and_exit_1() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let out = epochlab([
        "repro",
        "--mode",
        "fixed",
        "--json",
        "--otlp-endpoint",
        endpoint.as_str(),
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "epochlab repro: traces not delivered to {endpoint}: "
        )),
        "{stderr}"
    );
}

/// The Kubernetes Job's pod command, as the kubelet expands it for completion index 3, is one `epochlab soak`
/// accepts: it runs shard 3/8 into its own results file (stopped after a second here).
#[test]
fn the_soak_jobs_pod_command_runs_its_shard() {
    let manifest = include_str!("../../../deploy/k8s/soak-job.yaml");
    let dir = std::env::temp_dir().join(format!("epochlab-k8s-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let results_dir = dir.to_str().unwrap();
    let mut lines = manifest.lines().skip_while(|l| l.trim() != "args:").skip(1);
    let mut args: Vec<String> = Vec::new();
    for line in lines.by_ref() {
        let Some(arg) = line.trim().strip_prefix("- ") else {
            break;
        };
        let arg = arg
            .replace("$(JOB_COMPLETION_INDEX)", "3")
            .replace("$(CPUS)", "2")
            .replace("/results", results_dir)
            .replace("0.0.0.0:9464", "127.0.0.1:0");
        args.push(arg);
    }
    assert_eq!(args.first().map(String::as_str), Some("soak"), "{args:?}");
    let shard = args.iter().position(|a| a == "--shard").expect("a --shard");
    assert_eq!(args[shard + 1], "3/8");
    let out = epochlab(args.iter().map(String::as_str).chain(["--duration", "1"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let results = std::fs::read_to_string(dir.join("shard-3.jsonl")).unwrap();
    let seeds: Vec<u64> = results
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seed"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert!(!seeds.is_empty());
    assert!(seeds.iter().all(|s| s % 8 == 3), "{seeds:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--log-file`: the run's log lines, on the run's virtual clock, with its mode and seed; the unregister is an
/// INFO line and the actor failure an ERROR line that carries the error.
#[test]
fn the_log_file_is_on_the_virtual_clock() {
    let path = std::env::temp_dir().join(format!("epochlab-log-{}.log", std::process::id()));
    let out = epochlab([
        "repro",
        "--mode",
        "buggy",
        "--json",
        "--log-file",
        path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let log = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let stamp = |l: &str| -> f64 {
        let t = l.split_whitespace().next().unwrap();
        t.strip_suffix('s').unwrap().parse().unwrap()
    };
    assert!(log.lines().all(|l| l.contains(" buggy seed=1 ")), "{log}");
    let unregister = log
        .lines()
        .find(|l| l.contains("INFO") && l.contains("unregister tables"))
        .expect("an unregister line");
    let failure = log
        .lines()
        .find(|l| l.contains("ERROR") && l.contains("not found (by the backfill persist check)"))
        .expect("the actor failure as an ERROR line");
    // Virtual seconds since the run started: the failure comes after the unregister, within the run.
    assert!(
        stamp(unregister) < stamp(failure),
        "{unregister}\n{failure}"
    );
    assert!(stamp(failure) < 600.0, "{failure}");
}

/// A soak row says how many times meta restarted in its run, only when it did (every other row is as it was):
/// one meta, whose every kill restarts it.
#[test]
fn a_soak_row_counts_the_meta_restarts_of_its_run() {
    let soak = |meta_rate: &str| {
        let out = epochlab([
            "soak",
            "--mode",
            "fixed",
            "--seeds",
            "0..3",
            "--kill-meta-rate",
            meta_rate,
            "--crash-meta-rate",
            "0",
            "--meta-outage-rate",
            "0",
            "--meta-nodes",
            "1",
            "--json",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        rows::<serde_json::Value>(&out)
            .into_iter()
            .map(|r| r["detail"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let without = soak("0");
    assert!(without.iter().all(|d| !d.contains("meta")), "{without:?}");
    let with = soak("1");
    assert!(
        with.iter()
            .all(|d| d.contains("; meta restarted ") && d.ends_with(" times")),
        "{with:?}"
    );
}
