//! `--check-determinism`: run each mode twice in child processes and compare their digests and event logs.
//!
//! A child that ends with status 0, 1 or 3 ran (its outcome is the run's business, not the check's) and must
//! have written one JSON row. Any other status, a signal, or no parseable row is a crash.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use epochlab_sim::ReproParams;

use crate::command::ReproArgs;
use crate::repro::{flags, print_json};
use crate::row::{Determinism, DeterminismRow, Difference, RunRow, first_difference};

/// How many lines of a crashed child's stderr to show.
const STDERR_TAIL: usize = 10;

/// The check could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum DeterminismError {
    #[error("cannot find my own executable: {0}")]
    CurrentExe(#[source] std::io::Error),
    #[error("cannot create {}: {source}", path.display())]
    TempDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot run a child: {0}")]
    Spawn(#[source] std::io::Error),
}

/// How a child that did not run to a JSON row ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrashKind {
    /// An exit status other than 0, 1 and 3.
    Status(i32),
    /// Killed by a signal.
    Signal(i32),
    /// Exited with 0, 1 or 3 but wrote no row with a digest.
    NoRow { status: i32, why: String },
}

impl fmt::Display for CrashKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CrashKind::Status(c) => write!(f, "child exited with status {c}"),
            CrashKind::Signal(s) => write!(f, "child exited with signal {s}"),
            CrashKind::NoRow { status, why } => {
                write!(
                    f,
                    "child exited with status {status} but wrote no JSON row ({why})"
                )
            }
        }
    }
}

/// A crashed child: how it ended and the end of its stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crash {
    pub kind: CrashKind,
    pub stderr_tail: Vec<String>,
}

fn signal_of(status: ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        std::os::unix::process::ExitStatusExt::signal(&status)
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}

/// The last lines of `stderr`, after a panic's first two lines (where and what) when they come earlier.
fn tail(stderr: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(STDERR_TAIL);
    let panic = lines[..from]
        .iter()
        .rposition(|l| l.starts_with("thread '") && l.contains(" panicked at "));
    let mut out: Vec<String> = Vec::new();
    if let Some(p) = panic {
        let head = &lines[p..(p + 2).min(from)];
        out.extend(head.iter().map(|l| l.to_string()));
        if p + head.len() < from {
            out.push("...".into());
        }
    }
    out.extend(lines[from..].iter().map(|l| l.to_string()));
    out
}

/// A child's row, or how it crashed.
pub fn classify(status: ExitStatus, stdout: &[u8], stderr: &[u8]) -> Result<RunRow, Crash> {
    let crash = |kind| Crash {
        kind,
        stderr_tail: tail(stderr),
    };
    let code = match status.code() {
        Some(c @ (0 | 1 | 3)) => c,
        Some(c) => return Err(crash(CrashKind::Status(c))),
        None => return Err(crash(CrashKind::Signal(signal_of(status).unwrap_or(-1)))),
    };
    let no_row = |why: String| crash(CrashKind::NoRow { status: code, why });
    let text = String::from_utf8_lossy(stdout);
    let row: RunRow = serde_json::from_str(text.trim()).map_err(|e| no_row(e.to_string()))?;
    if row.digest.is_empty() {
        return Err(no_row("its digest is empty".into()));
    }
    Ok(row)
}

/// The temporary directory of the children's event logs, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn create() -> Result<Self, DeterminismError> {
        let path =
            std::env::temp_dir().join(format!("epochlab-determinism-{}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(|source| DeterminismError::TempDir {
            path: path.clone(),
            source,
        })?;
        Ok(Self(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Run each mode twice; print one line (or JSON object) per mode; 0 when every mode was deterministic.
pub fn check(args: &ReproArgs) -> Result<u8, DeterminismError> {
    let exe = std::env::current_exe().map_err(DeterminismError::CurrentExe)?;
    let dir = TempDir::create()?;
    let mut ok = true;
    for run in args.runs() {
        let params = args.params_of(run);
        let row = check_mode(&exe, &dir.0, &params)?;
        ok &= row.verdict == Determinism::Deterministic;
        let mut text = Vec::new();
        if args.json {
            print_json(&mut text, &row);
        } else {
            print_human(&mut text, &row);
        }
        out!("{}", String::from_utf8_lossy(&text));
    }
    Ok(if ok { 0 } else { 1 })
}

/// One child run: its row and event log, or its crash. Children run without backtraces, so that the tail of a
/// panicking child's stderr is its message (the run's replay command shows the rest).
fn child(
    exe: &Path,
    log: &Path,
    params: &ReproParams,
) -> Result<Result<(RunRow, String), Crash>, DeterminismError> {
    let out = Command::new(exe)
        .args(["repro", "--json"])
        .args(flags(params))
        .arg("--event-log")
        .arg(log)
        .env("RUST_BACKTRACE", "0")
        .output()
        .map_err(DeterminismError::Spawn)?;
    Ok(classify(out.status, &out.stdout, &out.stderr)
        .map(|row| (row, std::fs::read_to_string(log).unwrap_or_default())))
}

fn check_mode(
    exe: &Path,
    dir: &Path,
    params: &ReproParams,
) -> Result<DeterminismRow, DeterminismError> {
    let mode = crate::repro::label(params);
    let mut row = DeterminismRow {
        mode: mode.clone(),
        verdict: Determinism::Deterministic,
        digests: Vec::new(),
        outcomes: Vec::new(),
        first_difference: None,
        crash: None,
        stderr_tail: Vec::new(),
        replay: format!(
            "cargo xtask repro --check-determinism {}",
            flags(params).join(" ")
        ),
    };
    let mut logs = Vec::new();
    for i in 1..=2 {
        match child(exe, &log_path(dir, &mode, i), params)? {
            Ok((run, log)) => {
                row.digests.push(run.digest);
                row.outcomes.push(run.outcome);
                logs.push(log);
            }
            Err(crash) => {
                row.verdict = Determinism::Crashed;
                row.crash = Some(crash.kind.to_string());
                row.stderr_tail = crash.stderr_tail;
                return Ok(row);
            }
        }
    }
    if row.digests[0] != row.digests[1] {
        row.verdict = Determinism::NotDeterministic;
        row.first_difference = first_difference(&logs[0], &logs[1]);
    }
    Ok(row)
}

fn log_path(dir: &Path, label: &str, i: usize) -> PathBuf {
    dir.join(format!("{}-{i}.log", label.replace(' ', "-")))
}

fn print_human(out: &mut impl Write, row: &DeterminismRow) {
    let mode = &row.mode;
    match (row.verdict, &row.crash, row.digests.as_slice()) {
        (Determinism::Crashed, crash, _) => {
            let crash = crash.as_deref().unwrap_or("child crashed");
            let _ = writeln!(out, "{mode:<19} CRASHED: {crash}; stderr tail:");
            for l in &row.stderr_tail {
                let _ = writeln!(out, "  {l}");
            }
            let _ = writeln!(out, "  replay: {}", row.replay);
        }
        (Determinism::Deterministic, _, [d, ..]) => {
            let _ = writeln!(
                out,
                "{mode:<19} deterministic: digest {d} in both processes"
            );
        }
        (Determinism::NotDeterministic, _, [a, b, ..]) => {
            let _ = writeln!(out, "{mode:<19} NOT deterministic: digests {a} and {b}");
            print_difference(out, row.first_difference.as_ref());
        }
        // `check_mode` fills both digests unless a child crashed.
        (_, _, digests) => {
            let _ = writeln!(out, "{mode:<19} incomplete: {} digest(s)", digests.len());
        }
    }
}

fn print_difference(out: &mut impl Write, d: Option<&Difference>) {
    let Some(d) = d else {
        let _ = writeln!(
            out,
            "  the event logs are the same: only the digests differ"
        );
        return;
    };
    let end = "(end of the log)";
    let _ = writeln!(out, "  first difference at event {}:", d.event);
    let _ = writeln!(out, "  1: {}", d.first.as_deref().unwrap_or(end));
    let _ = writeln!(out, "  2: {}", d.second.as_deref().unwrap_or(end));
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    fn row_json() -> String {
        serde_json::to_string(&RunRow {
            bug: "14910".into(),
            mode: "buggy".into(),
            seed: 1,
            outcome: "not_reproducible".into(),
            verdict: "met".into(),
            error: Some("why".into()),
            caught_by: None,
            kind: None,
            failing_vnode: None,
            failing_actor: None,
            epochs: 3,
            max_committed_epoch: 4,
            recoveries: 0,
            violations: Vec::new(),
            notes: Vec::new(),
            persist_check: true,
            crash_meta_at: None,
            meta_crashes: Vec::new(),
            meta_nodes: 1,
            meta_leader_changes: 0,
            virtual_ms: 5,
            wall_ms: 6,
            digest: "abc".into(),
            replay: "cargo xtask repro".into(),
        })
        .expect("serializes")
    }

    /// `from_raw` takes a wait status: the exit code in the second byte, a signal in the low bits.
    fn exited(code: i32) -> ExitStatus {
        ExitStatus::from_raw(code << 8)
    }

    #[test]
    fn a_run_that_exits_0_1_or_3_with_a_row_is_not_a_crash() {
        for code in [0, 1, 3] {
            let row = classify(exited(code), row_json().as_bytes(), b"").expect("a row");
            assert_eq!(row.digest, "abc");
        }
    }

    #[test]
    fn a_panic_is_a_crash_with_the_end_of_stderr() {
        let stderr: String = (1..=15).map(|i| format!("line {i}\n")).collect();
        let crash = classify(exited(101), b"", stderr.as_bytes()).expect_err("a crash");
        assert_eq!(crash.kind, CrashKind::Status(101));
        assert_eq!(crash.kind.to_string(), "child exited with status 101");
        assert_eq!(crash.stderr_tail.len(), STDERR_TAIL);
        assert_eq!(
            crash.stderr_tail.last().map(String::as_str),
            Some("line 15")
        );
    }

    #[test]
    fn the_tail_keeps_the_panic_message() {
        let mut stderr = String::from("thread 'main' (7) panicked at src/x.rs:1:2:\nthe message\n");
        stderr.extend((1..=15).map(|i| format!("event {i}\n")));
        let crash = classify(exited(101), b"", stderr.as_bytes()).expect_err("a crash");
        let tail = crash.stderr_tail;
        let head = [
            "thread 'main' (7) panicked at src/x.rs:1:2:",
            "the message",
            "...",
        ];
        assert_eq!(tail[..3], head);
        assert_eq!(tail.len(), 3 + STDERR_TAIL);
        assert_eq!(tail.last().map(String::as_str), Some("event 15"));
    }

    #[test]
    fn a_signal_or_bad_input_is_a_crash() {
        let crash = classify(ExitStatus::from_raw(9), b"", b"").expect_err("a crash");
        assert_eq!(crash.kind, CrashKind::Signal(9));
        let crash = classify(exited(2), row_json().as_bytes(), b"").expect_err("a crash");
        assert_eq!(crash.kind, CrashKind::Status(2));
    }

    #[test]
    fn no_parseable_row_or_no_digest_is_a_crash() {
        for stdout in [
            String::new(),
            "{\"mode\":".into(),
            row_json().replace("abc", ""),
        ] {
            let crash = classify(exited(0), stdout.as_bytes(), b"").expect_err("a crash");
            assert!(
                matches!(crash.kind, CrashKind::NoRow { status: 0, .. }),
                "{crash:?}"
            );
        }
    }

    #[test]
    fn a_crash_is_printed_with_its_stderr_and_never_as_empty_digests() {
        let row = DeterminismRow {
            mode: "buggy".into(),
            verdict: Determinism::Crashed,
            digests: Vec::new(),
            outcomes: Vec::new(),
            first_difference: None,
            crash: Some(CrashKind::Status(101).to_string()),
            stderr_tail: vec!["thread 'main' panicked".into()],
            replay: "cargo xtask repro --check-determinism".into(),
        };
        let mut out = Vec::new();
        print_human(&mut out, &row);
        let text = String::from_utf8(out).expect("utf-8");
        assert!(text.starts_with(
            "buggy               CRASHED: child exited with status 101; stderr tail:\n"
        ));
        assert!(text.contains("\n  thread 'main' panicked\n  replay: cargo xtask repro"));
        assert!(!text.contains("digests"));
    }
}
