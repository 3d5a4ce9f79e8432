//! `cargo xtask <command>`: the project's automation, in Rust.
//!
//! - `repro [FLAGS]`: build `epochlab` (release) and run `epochlab repro FLAGS`; its exit status is passed on.
//! - `test [ARGS]`: `cargo fmt --check`, `cargo clippy --workspace --all-targets -- -D warnings`, then every test
//!   of the workspace (cargo-nextest when installed, else `cargo test`); ARGS go to the test runner.
//! - `bench [ARGS]`: the benchmarks in release mode; each prints epochlab's numbers beside its baseline's.
//! - `protoc`: print the path of the vendored `protoc` (for `export PROTOC=$(cargo xtask protoc)`).
//!
//! Every cargo it runs gets `PROTOC` pointing at the vendored compiler, so a machine with only a Rust toolchain
//! can build everything.

use std::env;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask <repro|test|bench|protoc> [ARGS...]";

fn main() -> ExitCode {
    let mut args = env::args().skip(1);
    let Some(cmd) = args.next() else {
        eprintln!("xtask: no command given; {USAGE}");
        return ExitCode::from(2);
    };
    let rest: Vec<String> = args.collect();
    let result = match cmd.as_str() {
        "repro" => repro(&rest),
        "test" => test(&rest),
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

fn has_nextest() -> bool {
    let Ok(mut cmd) = cargo() else { return false };
    cmd.args(["nextest", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn test(args: &[String]) -> Result {
    let mut fmt = cargo()?;
    fmt.args(["fmt", "--all", "--", "--check"]);
    run("cargo fmt --check", fmt)?;

    let mut clippy = cargo()?;
    clippy.args([
        "clippy",
        "-q",
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
        tests.args([
            "nextest",
            "run",
            "--workspace",
            "--cargo-quiet",
            "--no-fail-fast",
        ]);
    } else {
        tests.args(["test", "-q", "--workspace", "--no-fail-fast"]);
    }
    tests.args(args);
    run("tests", tests)
}

fn bench(args: &[String]) -> Result {
    let mut cmd = cargo()?;
    cmd.args(["bench", "-q", "--workspace"]);
    cmd.args(args);
    run("cargo bench", cmd)
}

fn repro(args: &[String]) -> Result {
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
        "repro",
    ]);
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
