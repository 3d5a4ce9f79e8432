//! `epochlab triage` on logs as RisingWave printed them: the seed's own failure log (#14910), excerpts written
//! from each entry's record, a gzipped log, a log of no known bug, and bad input.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/triage")
        .join(name)
}

fn triage(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epochlab"))
        .arg("triage")
        .args(args)
        .output()
        .expect("epochlab runs")
}

/// The log of `repro --bug BUG --mode MODE --log-file`, written in `dir`; the run meets its mode's
/// expectation.
fn repro_log(dir: &std::path::Path, bug: &str, mode: &str) -> PathBuf {
    let log = dir.join(format!("{bug}-{mode}.log"));
    let run = Command::new(env!("CARGO_BIN_EXE_epochlab"))
        .args(["repro", "--bug", bug, "--mode", mode, "--log-file"])
        .arg(&log)
        .output()
        .expect("epochlab runs");
    assert_eq!(
        run.status.code(),
        Some(0),
        "{bug} {mode}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    log
}

fn on(name: &str) -> (Option<i32>, String) {
    let out = triage(&[fixture(name).as_os_str()]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn the_seed_failure_log_is_14910() {
    let (code, out) = on("seed-failure-log.md");
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.starts_with("RisingWave #14910 at ") && out.contains("seed-failure-log.md:50 (panic)"),
        "{out}"
    );
    assert!(out.contains("row [Some(Int16(0))] not found"), "{out}");
    assert!(out.contains("actor 176007,"), "{out}");
    assert!(out.contains("table 177014"), "{out}");
    assert!(
        out.contains("reproduce: cargo xtask repro --bug 14910"),
        "{out}"
    );
    assert_eq!(out.matches("RisingWave #").count(), 1, "{out}");
}

#[test]
fn the_16815_pr_error_chain_is_16815() {
    let (code, out) = on("16815-different-pk-and-dist-key.log");
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("RisingWave #16815 at "), "{out}");
    assert!(out.lines().next().unwrap().ends_with("(error)"), "{out}");
    assert!(out.contains("actor 38,"), "{out}");
    assert!(out.contains("epoch 6481195908136960"), "{out}");
}

#[test]
fn the_19138_scale_in_panic_is_19138() {
    let (code, out) = on("19138-scale-in.log");
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("RisingWave #19138 at "), "{out}");
    assert!(out.contains("no_shuffle_backfill.rs:607:13"), "{out}");
}

#[test]
fn a_gzipped_log_reads_as_its_text() {
    let text = std::fs::read(fixture("seed-failure-log.md")).unwrap();
    let dir = std::env::temp_dir().join(format!("epochlab-triage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ci-log.txt.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&text).unwrap();
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
    let out = triage(&[path.as_os_str()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("ci-log.txt.gz:50 (panic)"), "{stdout}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_log_of_no_known_bug_exits_1_and_lists_what_it_found() {
    let (code, out) = on("no-known-bug.log");
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.starts_with("no known bug's symptom in 8 lines of 1 file(s)"),
        "{out}"
    );
    assert!(
        out.contains("found 1 panic(s) and 2 error(s) in 2 group(s)"),
        "{out}"
    );
    assert!(out.contains("error x2 first at "), "{out}");
    assert!(
        out.contains("called `Option::unwrap()` on a `None` value"),
        "{out}"
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for args in [
        vec![],
        vec!["/nonexistent/log.txt"],
        vec!["/"],
        vec!["--bogus"],
    ] {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        let out = triage(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("epochlab triage: "), "{err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn the_15144_compactor_line_is_15144() {
    let (code, out) = on("15144-compactor.log");
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("RisingWave #15144 at "), "{out}");
    assert!(out.contains("15144-compactor.log:3 (error)"), "{out}");
    // The log shows the recovery and no table's life: the record's shape, named as the evidence.
    assert!(
        out.contains(
            "  evidence:  the log never shows table 1021 leaving the catalog, and a compaction task still \
             holds it after the recovery that completed at line 1"
        ),
        "{out}"
    );
    // Without the recovery before it, the log cannot tell.
    let dir = std::env::temp_dir().join(format!("epochlab-triage-norec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(fixture("15144-compactor.log")).unwrap();
    let without = dir.join("without-recovery.log");
    std::fs::write(
        &without,
        text.lines().skip(1).collect::<Vec<_>>().join("\n"),
    )
    .unwrap();
    let out = triage(&[without.as_os_str()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with("unconfirmed: RisingWave #15144: its line at "),
        "{stdout}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// An excerpt of a kept fixed-mode log of `epochlab ci --profile main-cron` (streaming, seed 1; the lines of
/// barriers, persists and version deltas left out): `DROP SINK` of a backfilling sink removes its tables from
/// the catalog at once, and compaction fails on them until the drop's Stop barrier commits and unregisters
/// them. #15144's line, logged in that harmless window after an earlier recovery completed, is not the bug.
#[test]
fn the_15144_line_in_a_fixed_drops_window_is_not_15144() {
    let (code, out) = on("15144-fixed-drop-window.log");
    assert_eq!(code, Some(1), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("RisingWave #")), "{out}");
    assert!(
        out.starts_with("not RisingWave #15144: its line at "),
        "{out}"
    );
    assert!(
        out.contains(
            "15144-fixed-drop-window.log:11, and 5 later event(s) like it, but table 458 left the catalog \
             at line 10 and no recovery has both reset the nodes and completed since"
        ),
        "{out}"
    );
    assert!(
        out.contains("no known bug in 82 lines of 1 file(s)"),
        "{out}"
    );
}

/// A live fixed run of RisingWave's `streaming/rate_limit/snapshot_amplification.slt`, whose `DROP SINK` of a
/// backfilling sink leaves compaction failing on the sink's tables until the Stop barrier commits: its log
/// holds #15144's line, and triage says it is not the bug.
#[test]
fn a_fixed_runs_drop_window_in_a_live_log_is_not_15144() {
    let dir = std::env::temp_dir().join(format!("epochlab-triage-window-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("run.log");
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/slt/risingwave/streaming/rate_limit/snapshot_amplification.slt"
    );
    let run = Command::new(env!("CARGO_BIN_EXE_epochlab"))
        .args(["slt", "--mode", "fixed", "--seed", "1", "--log-file"])
        .arg(&log)
        .arg(file)
        .output()
        .expect("epochlab runs");
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("Failed to fetch filter key extractor tables"),
        "the run shows #15144's line"
    );
    let out = triage(&[log.as_os_str()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with("not RisingWave #15144: its line at "),
        "{stdout}"
    );
    assert!(stdout.contains("a drop's window"), "{stdout}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// epochlab's own log of each directed fixed run names no bug: #15144's fixed run cancels the same job
/// during recovery, whose tables recovery unregisters, so its compaction never fails on them.
#[test]
fn each_fixed_runs_own_log_names_no_bug() {
    let dir = std::env::temp_dir().join(format!("epochlab-triage-fixed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for bug in [
        "12990",
        "14910",
        "16815",
        "19138",
        "15144",
        "22384",
        "22476",
        "5244",
        "8440",
        "reschedule-unpinned",
    ] {
        let log = repro_log(&dir, bug, "fixed");
        let out = triage(&[log.as_os_str()]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{bug}: {stdout}");
        assert!(
            !stdout.lines().any(|l| l.starts_with("RisingWave #")),
            "{bug}: {stdout}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// epochlab's own log of each directed buggy run (`repro --log-file`) names its entry: the symptom epochlab
/// prints is the recorded one (or, for #19138, epochlab's form of it), and its events are read one by one.
#[test]
fn each_buggy_runs_own_log_names_its_bug() {
    let dir = std::env::temp_dir().join(format!("epochlab-triage-own-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for bug in [
        "14910", "16815", "19138", "15144", "8440", "22476", "5244", "12990",
    ] {
        let log = repro_log(&dir, bug, "buggy");
        let out = triage(&[log.as_os_str()]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{bug}: {stdout}");
        let first = stdout.lines().next().unwrap_or("");
        assert!(
            first.starts_with(&format!("RisingWave #{bug} at ")),
            "{bug}: {stdout}"
        );
        // One match per entry, the later events counted; an event is one line of epochlab's log.
        let heads = stdout.lines().filter(|l| l.starts_with("RisingWave #"));
        assert_eq!(heads.count(), 1, "{bug}: {stdout}");
        let line = stdout.lines().nth(1).unwrap_or("");
        assert!(line.len() < 400, "{bug}: {line}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}
