//! RisingWave's e2e corpus, vendored unmodified under `tests/slt/risingwave/` (see its README): which files it
//! has, how each runs (without kills, or under kills as RisingWave's recovery CI ran it), one run's verdict,
//! and the ratchet `expected.txt`, the files that pass. `epochlab corpus` runs it in parallel and prints the
//! verdicts; `crates/simulation/tests/corpus.rs` fails when a listed file stops passing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use epochlab_sim::{Outcome, ReproHooks, SimOutput};

use crate::runner::{FailureCause, FileReport, KillRoles, SltError, SltParams, run_file};
use crate::scripts;

/// The corpus, relative to the workspace root.
pub const ROOT: &str = "tests/slt/risingwave";

/// The ratchet's file name, in the corpus root.
pub const EXPECTED: &str = "expected.txt";

/// The background-DDL rates of RisingWave's recovery CI under kills (main-cron's two jobs:
/// `BACKGROUND_DDL_RATE=0.0` and `0.8`, both with `KILL_RATE=1.0`).
pub const BACKGROUND_DDL_RATES: [f64; 2] = [0.0, 0.8];

/// Why the corpus cannot be listed or its ratchet read: bad input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorpusError {
    #[error("{path}: cannot read: {why}")]
    Unreadable { path: String, why: String },
    #[error("{path}: no .slt file under it")]
    Empty { path: String },
    #[error("{path}:{line}: {why}")]
    Expected {
        path: String,
        line: usize,
        why: String,
    },
}

/// Every `.slt` file under `root` (not `.slt.part`, `.slt.bug`, ...), as a path relative to `root` with `/`
/// separators, sorted. Symbolic links to folders are not followed (RisingWave's only one holds `.slt.part`
/// files, reached through `include`).
pub fn files(root: &Path) -> Result<Vec<String>, CorpusError> {
    let mut out = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        let dir = if rel.as_os_str().is_empty() {
            root.to_path_buf()
        } else {
            root.join(&rel)
        };
        let unreadable = |e: std::io::Error| CorpusError::Unreadable {
            path: dir.display().to_string(),
            why: e.to_string(),
        };
        for entry in std::fs::read_dir(&dir).map_err(unreadable)? {
            let entry = entry.map_err(unreadable)?;
            let kind = entry.file_type().map_err(unreadable)?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let path = rel.join(name);
            if kind.is_dir() {
                dirs.push(path);
            } else if name.ends_with(".slt")
                && let Some(p) = path.to_str()
            {
                out.push(p.replace('\\', "/"));
            }
        }
    }
    if out.is_empty() {
        return Err(CorpusError::Empty {
            path: root.display().to_string(),
        });
    }
    out.sort();
    Ok(out)
}

/// Folders reported on a line of their own, outside the totals: `batch/`, vendored in issue 43 for the CI's
/// batch step, so that the totals over `ddl/`, `streaming/`, `background_ddl/` and `backfill/` (127 files) stay
/// comparable with the figures before it.
pub const APART: [&str; 1] = ["batch"];

/// A file's top-level folder (`ddl`, `streaming`, `background_ddl`, `backfill`), `.` at the root.
pub fn folder(rel: &str) -> &str {
    rel.split_once('/').map_or(".", |(top, _)| top)
}

/// The files of `files` (under `root`) that no script of RisingWave's CI at f21fb9b7915 ran: no script's glob
/// matches them and no file it matched includes them ([`scripts::reached`]), as `background_ddl/common/*` (the
/// backfill script names their folder and never uses it) and `background_ddl/sim.slt` (the recovery script runs
/// `sim/basic.slt` itself). They still run here, one by one; their failures are reported apart.
pub fn run_by_no_script(root: &Path, files: &[String]) -> BTreeSet<String> {
    let reached = scripts::reached(root);
    files
        .iter()
        .filter(|f| !reached.contains(*f))
        .cloned()
        .collect()
}

/// What a file's failure is labelled when no script ran it.
pub const RUN_BY_NO_SCRIPT: &str = "run by no script at f21fb9b7915";

/// How `rel` runs under `seed`: without kills, the defaults of `epochlab slt` (fixed mode); under kills as
/// RisingWave's recovery CI ran its files (`ci/scripts/deterministic-recovery-test.sh` at f21fb9b7915 with
/// main-cron's settings): kill rate 1.0, every role, the 2024 runner, and the background-DDL rate of one of
/// main-cron's two jobs, 0.0 for an even seed and 0.8 for an odd one; except the files of `background_ddl/`,
/// which set `BACKGROUND_DDL` themselves and which the CI ran without `--background-ddl-rate` (at 0.0: the
/// runner refuses a file's own `SET BACKGROUND_DDL` above it).
pub fn params(rel: &str, kill: bool, seed: u64) -> SltParams {
    let roles = if kill {
        KillRoles::ALL
    } else {
        KillRoles::NONE
    };
    params_killing(rel, roles, seed)
}

/// [`params`] killing the nodes of `roles` (none: no kills).
pub fn params_killing(rel: &str, roles: KillRoles, seed: u64) -> SltParams {
    let kill = roles.any();
    let background_ddl_rate = match folder(rel) {
        _ if !kill => 0.0,
        "background_ddl" => 0.0,
        _ => BACKGROUND_DDL_RATES[(seed % 2) as usize],
    };
    SltParams {
        seed,
        kill,
        kill_roles: if kill { roles } else { KillRoles::ALL },
        kill_rate: 1.0,
        background_ddl_rate,
        ..SltParams::default()
    }
}

/// How one run of one file ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    /// Under kills, a file of RisingWave's `KILL_IGNORE_FILES`: not run (RisingWave's runner skips it too).
    Skipped,
    /// The first failure is a construct the front end refused: where, and the construct.
    Unsupported {
        at: String,
        construct: String,
    },
    /// Any other failure: where, what (one line), and what blocks the file (a few words, to count files by).
    Failed {
        at: String,
        detail: String,
        blocker: String,
    },
}

impl Verdict {
    /// Run `rel` (under `root`) once with `p`. A panic that escapes the run is this file's failure, not the
    /// caller's.
    pub fn run(root: &Path, rel: &str, p: &SltParams) -> Verdict {
        let path = root.join(rel);
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_file(&path, p, ReproHooks::default())
        }));
        match out {
            Ok(out) => Verdict::of(root, rel, out),
            Err(payload) => Verdict::Failed {
                at: rel.to_string(),
                detail: format!("panic: {}", panic_message(payload.as_ref())),
                blocker: "panic".into(),
            },
        }
    }

    /// The verdict on a run of `rel`; places are shown relative to `root`.
    pub fn of(root: &Path, rel: &str, out: Result<SimOutput<FileReport>, SltError>) -> Verdict {
        let out = match out {
            Ok(out) => out.value,
            Err(e) => return Verdict::bad_file(root, e),
        };
        if out.skipped {
            return Verdict::Skipped;
        }
        if out.outcome == Outcome::Passed {
            return Verdict::Passed;
        }
        let error = one_line(out.error.as_deref().unwrap_or(out.outcome.as_str()));
        match (&out.failure, out.outcome) {
            (Some(f), Outcome::Failed) if out.kind == Some("record") => {
                let at = format!("{}:{}", shown(root, &f.file), f.line);
                match &f.cause {
                    FailureCause::Unsupported(construct) => Verdict::Unsupported {
                        at,
                        construct: construct.clone(),
                    },
                    cause => Verdict::Failed {
                        detail: format!(
                            "{}: expected {}, actual {}",
                            clip(&one_line(&f.sql), 80),
                            clip(&one_line(&f.expected), 160),
                            clip(&one_line(&f.actual), 160)
                        ),
                        blocker: cause.blocker(),
                        at,
                    },
                }
            }
            (failure, outcome) => Verdict::Failed {
                at: failure.as_ref().map_or_else(
                    || rel.to_string(),
                    |f| format!("{}:{}", shown(root, &f.file), f.line),
                ),
                detail: clip(&error, 320),
                blocker: match outcome {
                    Outcome::Stuck => "stuck".into(),
                    _ => out.kind.unwrap_or("failed").replace('_', " "),
                },
            },
        }
    }

    /// A file that cannot run: a malformed record, an include that matches nothing, a system command.
    fn bad_file(root: &Path, e: SltError) -> Verdict {
        let at = |at: &str| shown(root, at);
        match e {
            SltError::Unsupported {
                at: place,
                construct,
            } => Verdict::Unsupported {
                at: at(&place),
                construct: construct.to_string(),
            },
            SltError::Include { at: place, pattern } => Verdict::Failed {
                at: at(&place),
                detail: format!("include {pattern}: no file matches"),
                blocker: "include matches nothing".into(),
            },
            SltError::Malformed { at: place, why } => Verdict::Failed {
                at: at(&place),
                detail: one_line(&why),
                blocker: "malformed record".into(),
            },
            SltError::Missing(ref path) | SltError::Unreadable { ref path, .. } => {
                Verdict::Failed {
                    at: at(path),
                    detail: e.to_string(),
                    blocker: "unreadable file".into(),
                }
            }
        }
    }

    pub fn passed(&self) -> bool {
        matches!(self, Verdict::Passed)
    }

    /// `passed`, `skipped`, `unsupported` or `failed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Passed => "passed",
            Verdict::Skipped => "skipped",
            Verdict::Unsupported { .. } => "unsupported",
            Verdict::Failed { .. } => "failed",
        }
    }

    /// What blocks the file (none when it passed or was skipped).
    pub fn blocker(&self) -> Option<String> {
        match self {
            Verdict::Passed | Verdict::Skipped => None,
            Verdict::Unsupported { construct, .. } => Some(format!("unsupported: {construct}")),
            Verdict::Failed { blocker, .. } => Some(blocker.clone()),
        }
    }
}

/// `path` relative to `root`, `/`-separated, when it lies under it; `.` and `..` resolved, so that a root
/// spelled `./x`, `x//` or `x` and an include's `./a` or `../b` give one name (the `glob` crate drops a leading
/// `./` from what it yields). `None` when `path` is not under `root`.
pub fn path_under(root: &Path, path: &Path) -> Option<String> {
    use std::path::Component;
    fn parts(p: &Path) -> Vec<Component<'_>> {
        p.components().filter(|c| *c != Component::CurDir).collect()
    }
    let (root, whole) = (parts(root), parts(path));
    let rest = whole.strip_prefix(root.as_slice())?;
    let mut out: Vec<&str> = Vec::new();
    for c in rest {
        match c {
            Component::ParentDir => {
                out.pop()?;
            }
            Component::Normal(s) => out.push(s.to_str()?),
            Component::RootDir => out.push(""),
            _ => return None,
        }
    }
    Some(out.join("/"))
}

/// `text` with the paths under `root` made relative to it (`ROOT/ddl/x.slt:3` reads `ddl/x.slt:3`) and `/./`
/// folded (an include's path joins its `./`). `epochlab corpus` and `ci` show places so.
pub fn shown(root: &Path, text: &str) -> String {
    // The root as given, and as the `glob` crate and `Path` spell it: `//` and inner `./` folded, a leading
    // `./` dropped.
    let given = root.join("").display().to_string();
    let folded: PathBuf = root.components().collect();
    let folded = folded.join("").display().to_string();
    let bare = folded.strip_prefix("./").unwrap_or(&folded).to_string();
    let mut out = text.replace("/./", "/");
    for prefix in [given, folded, bare] {
        if !["", "/", "./"].contains(&prefix.as_str()) {
            out = out.replace(&prefix, "");
        }
    }
    out
}

/// Text on one line: its lines joined with ` | `, blank ones dropped.
fn one_line(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join(" | ")
}

/// At most `max` characters, `...` at the end when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}

pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// In which runs a listed file passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passes {
    /// Without kills and under kills (a line with the path alone).
    Always,
    /// Under kills only (`only-with-kills`): RisingWave's CI runs it only with `--kill`, whose retries it needs.
    OnlyWithKills,
    /// Without kills only (`only-without-kills`): the comment above it says why kills break it.
    OnlyWithoutKills,
}

impl Passes {
    fn of(without_kills: bool, with_kills: bool) -> Option<Passes> {
        match (without_kills, with_kills) {
            (true, true) => Some(Passes::Always),
            (false, true) => Some(Passes::OnlyWithKills),
            (true, false) => Some(Passes::OnlyWithoutKills),
            (false, false) => None,
        }
    }

    pub fn with_kills(self) -> bool {
        self != Passes::OnlyWithoutKills
    }

    pub fn without_kills(self) -> bool {
        self != Passes::OnlyWithKills
    }

    /// Whether the file passes in a run with (`kill`) or without kills.
    pub fn in_run(self, kill: bool) -> bool {
        if kill {
            self.with_kills()
        } else {
            self.without_kills()
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Passes::Always => "",
            Passes::OnlyWithKills => " only-with-kills",
            Passes::OnlyWithoutKills => " only-without-kills",
        }
    }
}

/// `expected.txt`: one file (relative to the corpus root) a line, sorted, with `only-with-kills` or
/// `only-without-kills` after it when it passes in one kind of run only; `#` starts a comment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expected {
    /// The comment lines at the top, kept when the file is rewritten.
    pub header: Vec<String>,
    pub files: BTreeMap<String, Passes>,
}

impl Expected {
    /// The ratchet at `path`; none listed when there is no such file.
    pub fn read(path: &Path) -> Result<Expected, CorpusError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Expected::parse(&path.display().to_string(), &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Expected::default()),
            Err(e) => Err(CorpusError::Unreadable {
                path: path.display().to_string(),
                why: e.to_string(),
            }),
        }
    }

    pub fn parse(path: &str, text: &str) -> Result<Expected, CorpusError> {
        let mut out = Expected::default();
        let mut in_header = true;
        for (i, raw) in text.lines().enumerate() {
            let bad = |why: String| CorpusError::Expected {
                path: path.to_string(),
                line: i + 1,
                why,
            };
            if in_header && raw.trim_start().starts_with('#') {
                out.header.push(raw.to_string());
                continue;
            }
            in_header = false;
            let line = raw.split_once('#').map_or(raw, |(l, _)| l).trim();
            if line.is_empty() {
                continue;
            }
            let passes = match line.split_whitespace().collect::<Vec<_>>().as_slice() {
                [_] => Passes::Always,
                [_, "only-with-kills"] => Passes::OnlyWithKills,
                [_, "only-without-kills"] => Passes::OnlyWithoutKills,
                _ => {
                    return Err(bad(format!(
                        "`{line}`: expected a path, then nothing, only-with-kills or only-without-kills"
                    )));
                }
            };
            let file = line.split_whitespace().next().unwrap_or_default();
            if out.files.insert(file.to_string(), passes).is_some() {
                return Err(bad(format!("{file} is listed twice")));
            }
        }
        Ok(out)
    }

    /// The files expected to pass in a run with (`kill`) or without kills.
    pub fn expects(&self, rel: &str, kill: bool) -> bool {
        self.files.get(rel).is_some_and(|p| p.in_run(kill))
    }

    /// The list after a run with (`kill`) or without kills whose passing files are `passing` and whose
    /// skipped files are `skipped` (their entry is kept); what the other kind of run showed is kept.
    pub fn updated(&self, kill: bool, passing: &[&str], skipped: &[&str]) -> Expected {
        let mut out = Expected {
            header: self.header.clone(),
            files: BTreeMap::new(),
        };
        let mut names: Vec<&str> = self.files.keys().map(String::as_str).collect();
        names.extend(passing);
        for rel in names {
            let old = self.files.get(rel);
            let now = if skipped.contains(&rel) {
                old.is_some_and(|p| p.in_run(kill))
            } else {
                passing.contains(&rel)
            };
            let other = old.is_some_and(|p| p.in_run(!kill));
            let passes = if kill {
                Passes::of(other, now)
            } else {
                Passes::of(now, other)
            };
            if let Some(passes) = passes {
                out.files.insert(rel.to_string(), passes);
            }
        }
        out
    }

    pub fn render(&self) -> String {
        let mut text = String::new();
        for h in &self.header {
            text.push_str(h);
            text.push('\n');
        }
        if !self.header.is_empty() {
            text.push('\n');
        }
        for (rel, passes) in &self.files {
            text.push_str(rel);
            text.push_str(passes.tag());
            text.push('\n');
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_shown_under_the_root_however_it_is_spelled() {
        let place = "tests/slt/risingwave/ddl/./table/x.slt.part:5: error";
        for root in [
            "tests/slt/risingwave",
            "./tests/slt/risingwave/",
            "tests//slt/./risingwave",
            "tests/slt/risingwave//",
        ] {
            assert_eq!(
                shown(Path::new(root), place),
                "ddl/table/x.slt.part:5: error",
                "{root}"
            );
        }
        for root in [
            "tests/slt/risingwave",
            "./tests/slt/risingwave/",
            "tests//slt/./risingwave",
        ] {
            let under = |p: &str| path_under(Path::new(root), Path::new(p));
            assert_eq!(
                under("tests/slt/risingwave/streaming/./nexmark/../tpch/q1.slt.part").as_deref(),
                Some("streaming/tpch/q1.slt.part"),
                "{root}"
            );
            assert_eq!(under("tests/slt/other/a.slt"), None, "{root}");
            assert_eq!(under("tests/slt/risingwave/../a.slt"), None, "{root}");
        }
        // A root of `.` leaves other text alone.
        assert_eq!(
            shown(Path::new("."), "include ./a.slt.part"),
            "include ./a.slt.part"
        );
    }

    #[test]
    fn the_ratchet_parses_renders_and_updates() {
        let text =
            "# head\n# more\n\nb.slt only-with-kills\na.slt # why\nc.slt only-without-kills\n";
        let e = Expected::parse("x", text).unwrap();
        assert_eq!(e.header, vec!["# head", "# more"]);
        assert_eq!(e.files.len(), 3);
        assert!(e.expects("a.slt", true) && e.expects("a.slt", false));
        assert!(e.expects("b.slt", true) && !e.expects("b.slt", false));
        assert!(!e.expects("c.slt", true) && e.expects("c.slt", false));
        assert_eq!(
            e.render(),
            "# head\n# more\n\na.slt\nb.slt only-with-kills\nc.slt only-without-kills\n"
        );
        // Without kills: a.slt stops passing, d.slt starts; b.slt's and c.slt's kill results are kept.
        let u = e.updated(false, &["c.slt", "d.slt"], &[]);
        assert_eq!(u.files["a.slt"], Passes::OnlyWithKills);
        assert_eq!(u.files["b.slt"], Passes::OnlyWithKills);
        assert_eq!(u.files["c.slt"], Passes::OnlyWithoutKills);
        assert_eq!(u.files["d.slt"], Passes::OnlyWithoutKills);
        // Under kills with b.slt skipped: its entry stays; c.slt now passes under kills too.
        let u = e.updated(true, &["c.slt"], &["b.slt"]);
        assert_eq!(u.files.get("a.slt"), Some(&Passes::OnlyWithoutKills));
        assert_eq!(u.files["b.slt"], Passes::OnlyWithKills);
        assert_eq!(u.files["c.slt"], Passes::Always);
        for bad in ["a.slt always\n", "a.slt\na.slt\n", "a b c\n"] {
            assert!(matches!(
                Expected::parse("x", bad),
                Err(CorpusError::Expected { .. })
            ));
        }
    }

    #[test]
    fn kill_runs_follow_risingwaves_ci() {
        let p = params("ddl/a.slt", false, 3);
        assert!(!p.kill && p.seed == 3 && p.background_ddl_rate == 0.0);
        let even = params("streaming/a.slt", true, 2);
        let odd = params("streaming/a.slt", true, 5);
        assert!(even.kill && even.kill_rate == 1.0 && even.background_ddl_rate == 0.0);
        assert_eq!(odd.background_ddl_rate, 0.8);
        assert_eq!(
            params("background_ddl/sim/basic.slt", true, 5).background_ddl_rate,
            0.0
        );
        assert_eq!(folder("ddl/x/y.slt"), "ddl");
        assert_eq!(folder("top.slt"), ".");
    }

    #[test]
    fn places_are_shown_under_the_root_on_one_line() {
        let root = Path::new("tests/slt/risingwave");
        assert_eq!(
            shown(root, "tests/slt/risingwave/ddl/a.slt:3"),
            "ddl/a.slt:3"
        );
        assert_eq!(shown(root, "elsewhere/a.slt:3"), "elsewhere/a.slt:3");
        assert_eq!(one_line("a\n\n b \nc"), "a | b | c");
        assert_eq!(clip("abcdef", 3), "abc...");
        assert_eq!(clip("abc", 3), "abc");
    }
}
