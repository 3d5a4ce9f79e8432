//! The per-step ratchet, `ROOT/ci-expected.txt`: for a profile and a step, how many files the step passes
//! before it stops (`stop`), or with `--keep-going` how many it passes in all (`keep-going`), on the worst seed
//! of a run. A step that passes fewer has regressed; `--update-expected` writes what the run showed.

use std::collections::BTreeMap;
use std::path::Path;

use epochlab_sim::Outcome;
use epochlab_simulation::ci;

use super::{CiError, SeedResult};

/// The ratchet's file, in the root beside the steps' folders.
pub(super) const FILE: &str = "ci-expected.txt";

const HEADER: &str = "\
# The ratchet of `epochlab ci`: per profile and step, the files a step passes before it stops (`stop`), or with
# --keep-going the files it passes in all (`keep-going`), on the worst seed of the run that wrote it.
# `epochlab ci --update-expected` rewrites the lines of the steps it ran; these comment lines are kept.
";

/// (profile, step, stop|keep-going) -> files.
pub(super) type Key = (String, String, &'static str);

/// The ratchet as read: its lines, and the comment lines at its top.
pub(super) struct Ratchet {
    counts: BTreeMap<Key, usize>,
    header: String,
}

impl Ratchet {
    /// The ratchet under `root`; empty when there is none. Each line names a profile and a step that exist,
    /// once; a file over [`MAX_BYTES`] is refused unread.
    pub(super) fn read(root: &Path) -> Result<Self, CiError> {
        let path = root.join(FILE);
        let text = match read_bounded(&path) {
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
            let (key, n) =
                parse_line(line).map_err(|why| bad(&path, format!("line {}: {why}", i + 1)))?;
            if counts.insert(key, n).is_some() {
                return Err(bad(
                    &path,
                    format!("line {}: a second line for `{}`", i + 1, shorten(line)),
                ));
            }
        }
        if header.is_empty() {
            header = HEADER.to_string();
        }
        Ok(Self { counts, header })
    }

    pub(super) fn expected(&self, key: &Key) -> Option<usize> {
        self.counts.get(key).copied()
    }

    /// Bad input: a line that counts more files than its step has under `root` (none, when it has no file
    /// there), whichever steps this run runs.
    pub(super) fn check(&self, root: &Path) -> Result<(), CiError> {
        for ((profile, step, mode), n) in &self.counts {
            let files = ci::step(step)
                .and_then(|s| ci::step_files(root, s).ok())
                .map_or(0, |f| f.len());
            if *n > files {
                return Err(bad(
                    &root.join(FILE),
                    format!(
                        "`{profile} {step} {mode} {n}`: more files than the step's {files} under the root"
                    ),
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

/// The most a ratchet file may hold (it has a line per profile, step and mode: a few hundred bytes).
const MAX_BYTES: u64 = 1 << 20;

fn read_bounded(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_BYTES {
        return Err(std::io::Error::other(format!(
            "more than {} KiB: not a ratchet",
            MAX_BYTES >> 10
        )));
    }
    Ok(text)
}

/// `PROFILE STEP stop|keep-going N`, naming a profile and a step of the script.
fn parse_line(line: &str) -> Result<(Key, usize), String> {
    let [profile, step, mode, n] = line.split_whitespace().collect::<Vec<_>>()[..] else {
        return Err(format!(
            "`{}` is not `PROFILE STEP stop|keep-going N`",
            shorten(line)
        ));
    };
    if ci::profile(profile).is_none() {
        return Err(format!("`{}` is not a profile", shorten(profile)));
    }
    if ci::step(step).is_none() {
        return Err(format!("`{}` is not a step", shorten(step)));
    }
    let mode = match mode {
        "stop" => "stop",
        "keep-going" => "keep-going",
        other => return Err(format!("`{}` is not stop or keep-going", shorten(other))),
    };
    let n = n
        .parse()
        .map_err(|_| format!("`{}` is not a count", shorten(n)))?;
    Ok(((profile.to_string(), step.to_string(), mode), n))
}

/// A piece of bad input, short enough for a one-line error.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
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
