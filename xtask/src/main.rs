//! `cargo xtask <command>`: the project's automation, in Rust.
//!
//! - `repro [FLAGS]`: build `epochlab` (release) and run `epochlab repro FLAGS`; its exit status is passed on.
//! - `soak [FLAGS]`, `soak-report FILES...`, `bugs`, `slt [FLAGS] FILES...`, `corpus [FLAGS]`, `ci [FLAGS]`,
//!   `triage FILES...`: the same for `epochlab soak`, `epochlab soak-report`, `epochlab bugs` (the catalogue),
//!   `epochlab slt` (sqllogictest files), `epochlab corpus` (RisingWave's e2e corpus and its ratchet),
//!   `epochlab ci` (RisingWave's recovery CI, step for step) and `epochlab triage` (which known bug a log
//!   shows).
//! - `setup`: install what the tests need beyond a Rust toolchain ([`setup::NEEDS`]: Debian's packages with
//!   apt-get as root, PyPI tools into `target/tools/`), or stop with one line saying what to install.
//! - `test [ARGS]`: `setup`, then `cargo fmt --check` (and the catalogue's modules, as `fmt`), `cargo clippy --workspace --all-targets -- -D warnings`, then every test
//!   of the workspace (cargo-nextest when installed, else `cargo test`); ARGS go to the test runner.
//! - `fmt [--check]`: `cargo fmt --all`, and rustfmt on the bug catalogue's modules, which `cargo fmt` cannot reach (they
//!   are declared through a file `crates/sim/build.rs` writes); `test` checks both.
//! - `bench [ARGS]`: the benchmarks in release mode; each prints epochlab's numbers beside its baseline's.
//! - `screenshot [OUT.png]`: run the buggy repro with the embedded Jaeger and render the failing persist's trace in
//!   headless Chromium (`apt-get install chromium`) to a PNG (default `target/epochlab-failing-trace.png`).
//! - `protoc`: print the path of the vendored `protoc` (for `export PROTOC=$(cargo xtask protoc)`).
//!
//! Every cargo it runs gets `PROTOC` pointing at the vendored compiler, so a machine with only a Rust toolchain
//! can build everything.

use std::env;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

mod setup;

const USAGE: &str = "usage: cargo xtask <repro|soak|soak-report|bugs|slt|corpus|ci|triage|setup|test|fmt|bench|screenshot|protoc> [ARGS...]";

fn main() -> ExitCode {
    // Arguments are read as `OsString`s: `repro` passes them on as they are (epochlab reports one that is not
    // UTF-8 as bad input); the other commands need text.
    let mut args = env::args_os().skip(1);
    let Some(cmd) = args.next() else {
        eprintln!("xtask: no command given; {USAGE}");
        return ExitCode::from(2);
    };
    let Some(cmd) = cmd.to_str().map(str::to_string) else {
        eprintln!("xtask: argument 1 is not valid UTF-8; {USAGE}");
        return ExitCode::from(2);
    };
    let raw: Vec<OsString> = args.collect();
    if matches!(
        cmd.as_str(),
        "repro" | "soak" | "soak-report" | "bugs" | "slt" | "corpus" | "ci" | "triage"
    ) {
        return finish(epochlab_command(&cmd, &raw));
    }
    let rest: Vec<String> = match raw.into_iter().enumerate().map(utf8).collect() {
        Ok(rest) => rest,
        Err(n) => {
            eprintln!("xtask: argument {n} is not valid UTF-8");
            return ExitCode::from(2);
        }
    };
    let result = match cmd.as_str() {
        "screenshot" => screenshot(&rest),
        "setup" => match rest.first() {
            None => target_dir().and_then(|dir| setup::setup(&dir)),
            Some(other) => {
                eprintln!("xtask: setup takes no argument, not `{other}`");
                return ExitCode::from(2);
            }
        },
        "test" => test(&rest),
        "fmt" => match rest.iter().find(|a| *a != "--check") {
            None => fmt(!rest.is_empty()),
            Some(other) => {
                eprintln!("xtask: fmt takes only --check, not `{other}`");
                return ExitCode::from(2);
            }
        },
        "bench" => bench(&rest),
        "protoc" => protoc_path().map(|p| {
            println!("{}", p.display());
        }),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => {
            eprintln!("xtask: unknown command `{other}`; {USAGE}");
            return ExitCode::from(2);
        }
    };
    finish(result)
}

/// Argument `i + 2` (after the command) as text, or its position.
fn utf8((i, arg): (usize, OsString)) -> std::result::Result<String, usize> {
    arg.into_string().map_err(|_| i + 2)
}

fn finish(result: Result) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { code, message }) => {
            if !message.is_empty() {
                eprintln!("xtask: {message}");
            }
            ExitCode::from(code)
        }
    }
}

struct Failure {
    code: u8,
    message: String,
}

type Result<T = ()> = std::result::Result<T, Failure>;

fn protoc_path() -> Result<PathBuf> {
    protoc_bin_vendored::protoc_bin_path().map_err(|e| Failure {
        code: 1,
        message: format!("no vendored protoc for this platform: {e}"),
    })
}

/// `cargo` as the one that runs us (same toolchain), in the workspace root, with PROTOC set.
fn cargo() -> Result<Command> {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_root());
    cmd.env("PROTOC", protoc_path()?);
    Ok(cmd)
}

/// Cargo's target directory, as cargo itself resolves it (`CARGO_TARGET_DIR`, `build.target-dir`, or
/// `target/` in the workspace): `cargo metadata`'s `target_directory`.
fn target_dir() -> Result<PathBuf> {
    let mut metadata = cargo()?;
    metadata.args(["metadata", "--no-deps", "--format-version", "1"]);
    let failed = |detail: String| Failure {
        code: 1,
        message: format!("cargo metadata: {detail}"),
    };
    let out = metadata.output().map_err(|e| failed(e.to_string()))?;
    if !out.status.success() {
        return Err(failed(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // A JSON string without escapes in any path this project builds in; one with a quote or a backslash is
    // refused rather than misread.
    let key = "\"target_directory\":\"";
    let start = text
        .find(key)
        .ok_or_else(|| failed("no target_directory".into()))?
        + key.len();
    let value = &text[start..];
    let end = value
        .find('"')
        .ok_or_else(|| failed("no target_directory".into()))?;
    if value[..end].contains('\\') {
        return Err(failed(format!(
            "a target directory with an escape: {}",
            &value[..end]
        )));
    }
    Ok(PathBuf::from(&value[..end]))
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace root")
        .to_path_buf()
}

/// Run `cmd`; a non-zero exit becomes a failure with the same code (so `cargo xtask test` fails as cargo did).
fn run(step: &str, mut cmd: Command) -> Result {
    let status = cmd.status().map_err(|e| Failure {
        code: 1,
        message: format!("{step}: cannot start: {e}"),
    })?;
    if status.success() {
        return Ok(());
    }
    Err(Failure {
        code: status.code().map_or(1, |c| c.clamp(1, 255) as u8),
        message: format!("{step} failed"),
    })
}

/// `cargo fmt --all`, then rustfmt on the bug catalogue's modules by name: `crates/sim/build.rs` declares them
/// in a file of its own (through `include!`), where `cargo fmt`, which follows `mod` items, does not look.
/// With `check`, nothing is rewritten and a difference fails.
fn fmt(check: bool) -> Result {
    let mut fmt = cargo()?;
    fmt.args(["fmt", "--all"]);
    if check {
        fmt.args(["--", "--check"]);
    }
    run("cargo fmt", fmt)?;
    let bugs = workspace_root().join("crates/sim/src/bugs");
    let mut modules: Vec<PathBuf> = std::fs::read_dir(&bugs)
        .map_err(|e| Failure {
            code: 1,
            message: format!("cannot list {}: {e}", bugs.display()),
        })?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "rs") && !p.ends_with("mod.rs"))
        .collect();
    modules.sort();
    let mut rustfmt = Command::new(env::var_os("RUSTFMT").unwrap_or_else(|| "rustfmt".into()));
    rustfmt.current_dir(workspace_root());
    rustfmt
        .args(["--edition", "2024"])
        .args(check.then_some("--check"))
        .args(&modules);
    run("rustfmt (the bug catalogue's modules)", rustfmt)
}

fn has_nextest() -> bool {
    let Ok(mut cmd) = cargo() else { return false };
    cmd.args(["nextest", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn test(args: &[String]) -> Result {
    // Before anything is built: a machine that lacks a tool learns it in seconds, not after the build.
    setup::setup(&target_dir()?)?;
    fmt(true)?;

    let mut clippy = cargo()?;
    // Not quiet: on a fresh machine this step compiles the workspace (minutes), and cargo's progress shows it.
    clippy.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]);
    run("cargo clippy", clippy)?;

    let runner = env::var("EPOCHLAB_TEST_RUNNER").unwrap_or_default();
    let use_nextest = match runner.as_str() {
        "nextest" => true,
        "cargo" => false,
        "" => has_nextest(),
        other => {
            return Err(Failure {
                code: 2,
                message: format!(
                    "EPOCHLAB_TEST_RUNNER must be `nextest` or `cargo`, not `{other}`"
                ),
            });
        }
    };
    let mut tests = cargo()?;
    if use_nextest {
        tests.args(["nextest", "run", "--workspace", "--no-fail-fast"]);
    } else {
        tests.args(["test", "--workspace", "--no-fail-fast"]);
    }
    tests.args(args);
    run("tests", tests)
}

fn bench(args: &[String]) -> Result {
    let mut cmd = cargo()?;
    cmd.args(["bench", "-q"]);
    // `-p X` benches X only; otherwise every crate's benchmarks.
    let picks_package = args
        .iter()
        .any(|a| a == "-p" || a == "--package" || a.starts_with("--package="));
    if !picks_package {
        cmd.arg("--workspace");
    }
    cmd.args(args);
    run("cargo bench", cmd)
}

/// `cargo run` of the `epochlab` binary (release), arguments to follow. It is built first in a step of its
/// own, with cargo's progress on stderr (a fresh machine compiles for minutes); the run itself is quiet.
fn epochlab() -> Result<Command> {
    let mut build = cargo()?;
    build.args([
        "build",
        "--release",
        "-p",
        "epochlab-cli",
        "--bin",
        "epochlab",
    ]);
    run("cargo build", build)?;
    let mut cmd = cargo()?;
    cmd.args([
        "run",
        "-q",
        "--release",
        "-p",
        "epochlab-cli",
        "--bin",
        "epochlab",
        "--",
    ]);
    Ok(cmd)
}

/// Run `epochlab SUBCOMMAND ARGS` (built in release); its exit status is passed on.
fn epochlab_command(subcommand: &str, args: &[OsString]) -> Result {
    let mut cmd = epochlab()?;
    cmd.arg(subcommand);
    cmd.args(args);
    let status = cmd.status().map_err(|e| Failure {
        code: 1,
        message: format!("cannot start cargo: {e}"),
    })?;
    match status.code() {
        Some(0) => Ok(()),
        // epochlab's own exit status (1, 2, 3) says what happened; it has printed why.
        Some(code) => Err(Failure {
            code: code.clamp(1, 255) as u8,
            message: String::new(),
        }),
        None => Err(Failure {
            code: 1,
            message: "epochlab was killed".into(),
        }),
    }
}

/// Render the trace of the buggy run's failing persist, as the Jaeger UI shows it, to a PNG with headless
/// Chromium. The run has a rate limit of 10 rows/s, so the drop comes after 5 epochs instead of 30 and the
/// unregister, the kill and the red persist fit, with the epochs before them, in one tall window.
fn screenshot(args: &[String]) -> Result {
    let out = args
        .first()
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/epochlab-failing-trace.png"));
    let chromium = find_chromium()?;
    let (mut child, url) = serve_failing_trace("127.0.0.1:16686")?;
    let result = match url {
        Some(url) => render_page(chromium, &url, &out),
        None => Err(Failure {
            code: 1,
            message: "the repro printed no failing trace".into(),
        }),
    };
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// The first Chromium on PATH that runs.
fn find_chromium() -> Result<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .ok_or_else(|| Failure {
            code: 1,
            message: "no chromium on PATH (apt-get install chromium)".into(),
        })
}

/// Start the buggy repro serving its traces at Jaeger's `addr`; it and the URL of the failing persist's trace
/// (`None` if it printed none). The caller kills the repro when done with the trace.
fn serve_failing_trace(addr: &str) -> Result<(std::process::Child, Option<String>)> {
    use std::io::BufRead;
    let mut repro = epochlab()?;
    repro.args([
        "repro",
        "--mode",
        "buggy",
        "--jaeger",
        "--jaeger-addr",
        addr,
        "--rate-limit",
        "10",
        "--serve-for",
        "60",
    ]);
    repro
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = repro.spawn().map_err(|e| Failure {
        code: 1,
        message: format!("cannot start the repro: {e}"),
    })?;
    let stderr = child.stderr.take().expect("piped");
    let mut lines = std::io::BufReader::new(stderr).lines();
    let url = lines
        .by_ref()
        .map_while(std::result::Result::ok)
        .find_map(|l| {
            l.strip_prefix("the failing persist's trace: ")
                .map(str::to_string)
        });
    // Keep reading what the repro prints: a closed pipe would make its next line fail.
    std::thread::spawn(move || lines.for_each(drop));
    Ok((child, url))
}

/// Screenshot `url` with headless `chromium` (a throwaway profile) to `out`.
fn render_page(chromium: &str, url: &str, out: &std::path::Path) -> Result {
    let profile = std::env::temp_dir().join(format!("epochlab-chromium-{}", std::process::id()));
    let status = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
        ])
        .args([
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--virtual-time-budget=5000", "--window-size=1600,3600"])
        .arg(format!("--screenshot={}", out.display()))
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    let _ = std::fs::remove_dir_all(&profile);
    match status {
        Ok(s) if s.success() && out.is_file() => {
            println!("{} (trace {url})", out.display());
            Ok(())
        }
        _ => Err(Failure {
            code: 1,
            message: format!("chromium could not render {url}"),
        }),
    }
}
