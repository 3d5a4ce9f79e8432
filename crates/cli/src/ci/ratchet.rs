//! The per-step ratchet, `ROOT/ci-expected.txt`: for a profile and a step, how many files the step passes
//! before it stops (`stop`), or with `--keep-going` how many it passes in all (`keep-going`), on the worst seed
//! of a run. A step that passes fewer has regressed; `--update-expected` writes what the run showed.

use std::collections::BTreeMap;
use std::path::Path;

use epochlab_sim::Outcome;

use super::{CiError, SeedResult};

/// The ratchet's file, in the root beside the steps' folders.
pub(super) const FILE: &str = "ci-expected.txt";

const HEADER: &str = "\
# The ratchet of `epochlab ci`: per profile and step, the files a step passes before it stops (`stop`), or with
# --keep-going the files it passes in all (`keep-going`), on the worst seed of the run that wrote it.
# `epochlab ci --update-expected` rewrites the lines of the steps it ran; these comment lines are kept.
";

/// (profile, step, stop|keep-going) -> files.
type Key = (String, String, &'static str);

/// The ratchet as read: its lines, and the comment lines at its top.
pub(super) struct Ratchet {
    counts: BTreeMap<Key, usize>,
    header: String,
}

impl Ratchet {
    /// The ratchet under `root`; empty when there is none.
    pub(super) fn read(root: &Path) -> Result<Self, CiError> {
        let path = root.join(FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(bad(&path, e.to_string())),
        };
        let mut counts = BTreeMap::new();
        let mut header = String::new();
        for (i, line) in text.lines().enumerate() {
            if line.starts_with('#') || line.trim().is_empty() {
                if counts.is_empty() {
                    header.push_str(line);
                    header.push('\n');
                }
                continue;
            }
            let at = || format!("{}:{}", path.display(), i + 1);
            let [profile, step, mode, n] = line.split_whitespace().collect::<Vec<_>>()[..] else {
                return Err(bad(
                    &path,
                    format!("{}: not `PROFILE STEP stop|keep-going N`", at()),
                ));
            };
            let mode = match mode {
                "stop" => "stop",
                "keep-going" => "keep-going",
                other => {
                    return Err(bad(
                        &path,
                        format!("{}: `{other}` is not stop or keep-going", at()),
                    ));
                }
            };
            let n = n
                .parse()
                .map_err(|_| bad(&path, format!("{}: `{n}` is not a count", at())))?;
            counts.insert((profile.to_string(), step.to_string(), mode), n);
        }
        if header.is_empty() {
            header = HEADER.to_string();
        }
        Ok(Self { counts, header })
    }

    pub(super) fn expected(&self, key: &Key) -> Option<usize> {
        self.counts.get(key).copied()
    }

    /// Bad input: a line of `profile` for `step` that counts more files than the step has.
    pub(super) fn check(
        &self,
        root: &Path,
        profile: &str,
        step: &str,
        files: usize,
    ) -> Result<(), CiError> {
        for mode in ["stop", "keep-going"] {
            let key = (profile.to_string(), step.to_string(), mode);
            if let Some(n) = self.expected(&key).filter(|n| *n > files) {
                return Err(bad(
                    &root.join(FILE),
                    format!("`{profile} {step} {mode} {n}`: more files than the step's {files}"),
                ));
            }
        }
        Ok(())
    }

    /// The ratchet with `runs`' counts in place of the lines they cover.
    pub(super) fn updated(mut self, runs: &BTreeMap<Key, usize>) -> Self {
        for (k, n) in runs {
            self.counts.insert(k.clone(), *n);
        }
        self
    }

    pub(super) fn write(&self, root: &Path) -> Result<(), CiError> {
        let mut text = self.header.clone();
        for ((profile, step, mode), n) in &self.counts {
            text.push_str(&format!("{profile} {step} {mode} {n}\n"));
        }
        let path = root.join(FILE);
        std::fs::write(&path, text).map_err(|e| CiError::Write {
            path: path.display().to_string(),
            why: e.to_string(),
        })
    }
}

fn bad(path: &Path, why: String) -> CiError {
    CiError::Ratchet {
        path: path.display().to_string(),
        why,
    }
}

/// Files a (step, seed) passed: before its first failure (`stop`), or in all (`keep-going`). `None` for a
/// panic.
pub(super) fn passed(r: &SeedResult, keep_going: bool) -> Option<usize> {
    let SeedResult::Ran { report, .. } = r else {
        return None;
    };
    let ok = |f: &&epochlab_simulation::FileReport| f.outcome == Outcome::Passed && !f.skipped;
    Some(if keep_going {
        report.files.iter().filter(ok).count()
    } else {
        report
            .files
            .iter()
            .take_while(|f| f.outcome == Outcome::Passed)
            .filter(ok)
            .count()
    })
}
