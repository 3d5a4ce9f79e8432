//! What the tests need beyond a Rust toolchain, in one list ([`NEEDS`]), and the step that installs what is
//! missing: `cargo xtask setup`, which `cargo xtask test` runs first (and so does `.ci/run`, through it).
//!
//! Debian's packages are installed with `apt-get` when this runs as root on a machine that has it; otherwise the
//! step stops before anything is built, with one line naming each missing package and the command that
//! installs it. Python tools from PyPI go into a venv of their own under the target directory
//! (`target/tools/NAME`), which needs no root. A test whose tool is missing fails, naming this step: a
//! missing tool is a set-up failure, never a skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{Failure, Result};

/// A tool the tests run, how to tell it is here, and where it comes from.
pub struct Need {
    /// The name a user knows it by.
    pub name: &'static str,
    /// Which tests run it.
    pub why: &'static str,
    pub probe: Probe,
    pub source: Source,
}

/// How to tell that a tool is here.
pub enum Probe {
    /// Each program is on `PATH`.
    Programs(&'static [&'static str]),
    /// The interpreter imports the module.
    PythonModule {
        python: &'static str,
        module: &'static str,
    },
    /// The venv's program runs and prints this version.
    Venv { program: &'static str },
}

/// Where a tool comes from.
pub enum Source {
    /// A Debian package.
    Apt(&'static str),
    /// A PyPI package at a pinned version, in a venv of its own (`target/tools/NAME`), made by Debian's
    /// python3 (its venv module is the Debian package `python3-venv`).
    Pip {
        package: &'static str,
        version: &'static str,
    },
}

/// The Debian package that lets Debian's python3 make a venv.
const VENV_PACKAGE: &str = "python3-venv";

/// Everything the tests need beyond a Rust toolchain (the vendored `protoc` aside, which every cargo the
/// xtask runs gets).
pub const NEEDS: &[Need] = &[
    Need {
        name: "prometheus",
        why: "the metrics tests scrape runs with a real Prometheus 2.42 and load timelines with promtool",
        probe: Probe::Programs(&["prometheus", "promtool"]),
        source: Source::Apt("prometheus"),
    },
    Need {
        name: "python3-junitparser",
        why: "the JUnit reader that reads back `epochlab ci --junit`, with Debian's /usr/bin/python3",
        probe: Probe::PythonModule {
            python: "/usr/bin/python3",
            module: "junitparser",
        },
        source: Source::Apt("python3-junitparser"),
    },
    Need {
        name: "sqlite3",
        why: "opens the meta store files of `--meta-store-out`",
        probe: Probe::Programs(&["sqlite3"]),
        source: Source::Apt("sqlite3"),
    },
    Need {
        name: "kubernetes-validate",
        why: "checks deploy/k8s/soak-job.yaml against the Kubernetes API schemas, offline",
        probe: Probe::Venv {
            program: "kubernetes-validate",
        },
        source: Source::Pip {
            package: "kubernetes-validate",
            version: "1.37.0",
        },
    },
];

/// The venv a PyPI tool lives in: `tools/NAME` under the target directory.
pub fn venv(target_dir: &Path, package: &str) -> PathBuf {
    target_dir.join("tools").join(package)
}

impl Need {
    /// Whether the tool is here.
    fn present(&self, target_dir: &Path) -> bool {
        match (&self.probe, &self.source) {
            (Probe::Programs(programs), _) => programs.iter().all(|p| on_path(p)),
            (Probe::PythonModule { python, module }, _) => {
                quiet(Command::new(python).args(["-c", &format!("import {module}")]))
            }
            (Probe::Venv { program }, Source::Pip { package, version }) => {
                let bin = venv(target_dir, package).join("bin").join(program);
                Command::new(bin).arg("--version").output().is_ok_and(|o| {
                    o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == *version
                })
            }
            (Probe::Venv { .. }, Source::Apt(_)) => false,
        }
    }

    /// The Debian packages installing it takes: its own, or what its venv needs.
    fn apt_packages(&self) -> Vec<&'static str> {
        match self.source {
            Source::Apt(package) => vec![package],
            Source::Pip { .. } if !venv_works() => vec![VENV_PACKAGE],
            Source::Pip { .. } => Vec::new(),
        }
    }
}

/// `cargo xtask setup`: install what [`NEEDS`] lists and is missing; fail, before anything is built, when that
/// cannot be done here.
pub fn setup(target_dir: &Path) -> Result {
    let missing: Vec<&Need> = NEEDS.iter().filter(|n| !n.present(target_dir)).collect();
    if missing.is_empty() {
        let all: Vec<&Need> = NEEDS.iter().collect();
        eprintln!("setup: nothing to install ({} present)", names(&all));
        return Ok(());
    }
    let mut apt: Vec<&str> = missing.iter().flat_map(|n| n.apt_packages()).collect();
    apt.dedup();
    if !apt.is_empty() && (!is_root() || !on_path("apt-get")) {
        return Err(cannot_install(&apt, &missing));
    }
    for need in &missing {
        eprintln!("setup: {} is missing ({})", need.name, need.why);
    }
    if !apt.is_empty() {
        install_apt(&apt)?;
    }
    for need in &missing {
        if let Source::Pip { package, version } = need.source {
            install_pip(target_dir, package, version)?;
        }
    }
    let still: Vec<&str> = NEEDS
        .iter()
        .filter(|n| !n.present(target_dir))
        .map(|n| n.name)
        .collect();
    if still.is_empty() {
        eprintln!("setup: installed {}", names(&missing));
        return Ok(());
    }
    Err(Failure {
        code: 1,
        message: format!(
            "setup: still missing after installing: {}",
            still.join(", ")
        ),
    })
}

fn names(needs: &[&Need]) -> String {
    needs.iter().map(|n| n.name).collect::<Vec<_>>().join(", ")
}

/// The one line that says what to install where this step cannot: not root, or no apt-get.
fn cannot_install(apt: &[&str], missing: &[&Need]) -> Failure {
    let list = apt.join(" ");
    let pip: Vec<&str> = missing
        .iter()
        .filter(|n| matches!(n.source, Source::Pip { .. }))
        .map(|n| n.name)
        .collect();
    let then = match pip.as_slice() {
        [] => "then this command again".to_string(),
        tools => format!(
            "then this command again, which installs {} from PyPI itself",
            tools.join(", ")
        ),
    };
    let how = if on_path("apt-get") {
        format!("as root: `apt-get update && apt-get install -y --no-install-recommends {list}`")
    } else {
        format!(
            "Debian's packages {list} (no apt-get here: your system's packages of the same tools)"
        )
    };
    Failure {
        code: 1,
        message: format!(
            "setup: the tests need {}: install {how}, {then}",
            names(missing)
        ),
    }
}

/// `apt-get update`, then `apt-get install` of `packages` (as root).
fn install_apt(packages: &[&str]) -> Result {
    eprintln!(
        "setup: installing Debian's {} (apt-get, as root), which the tests need",
        packages.join(" ")
    );
    let apt = |args: &[&str]| {
        let mut cmd = Command::new("apt-get");
        cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        cmd
    };
    crate::run("apt-get update", apt(&["update", "-qq"]))?;
    let mut install = apt(&["install", "-y", "-qq", "--no-install-recommends"]);
    install.args(packages);
    crate::run("apt-get install", install)
}

/// A venv at `target/tools/PACKAGE` with `PACKAGE==VERSION` from PyPI.
fn install_pip(target_dir: &Path, package: &str, version: &str) -> Result {
    let dir = venv(target_dir, package);
    eprintln!(
        "setup: installing {package} {version} from PyPI into {}",
        dir.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
    let mut make = Command::new("/usr/bin/python3");
    make.args(["-m", "venv"]).arg(&dir);
    crate::run("python3 -m venv", make)?;
    let mut pip = Command::new(dir.join("bin/pip"));
    pip.args(["install", "-q", "--disable-pip-version-check"])
        .arg(format!("{package}=={version}"));
    crate::run("pip install", pip)
}

/// Whether Debian's python3 can make a venv with pip in it (Debian's `python3-venv`).
fn venv_works() -> bool {
    quiet(Command::new("/usr/bin/python3").args(["-c", "import ensurepip, venv"]))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
}

/// Runs `cmd` with its output discarded; whether it succeeded.
fn quiet(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README's "Getting started" says what the first `cargo xtask test` installs: every tool of the list.
    #[test]
    fn the_readme_names_every_need() {
        let readme = std::fs::read_to_string(crate::workspace_root().join("README.md")).unwrap();
        let start = readme.find("## Getting started").unwrap();
        let end = start + readme[start..].find("\n## Reproduce").unwrap();
        let section = &readme[start..end];
        for need in NEEDS {
            let source = match need.source {
                Source::Apt(package) => package,
                Source::Pip { package, .. } => package,
            };
            assert!(
                section.contains(source),
                "README's Getting started does not name {source}"
            );
        }
    }

    /// `.ci/run` keeps no list of its own: it runs the README's test command, which sets up.
    #[test]
    fn ci_runs_the_readmes_test_command_and_keeps_no_list() {
        let ci = std::fs::read_to_string(crate::workspace_root().join(".ci/run")).unwrap();
        assert!(ci.contains("cargo xtask test"));
        assert!(!ci.contains("apt-get") && !ci.contains("pip "), "{ci}");
    }
}
