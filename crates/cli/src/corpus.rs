//! `epochlab corpus`: RisingWave's e2e corpus (`tests/slt/risingwave/`), every `.slt` file in a fresh simulated
//! cluster on worker threads, one line per file, the totals, what blocks the files, and the ratchet
//! `expected.txt` (see `epochlab_simulation::corpus`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use epochlab_simulation::KillRoles;
use epochlab_simulation::corpus::{self, CorpusError, EXPECTED, Expected, Verdict};
use epochlab_telemetry::WallTimer;

/// `epochlab corpus`'s arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct CorpusArgs {
    pub root: PathBuf,
    pub kill: bool,
    /// Kill only meta: a file listed as passing under kills must pass.
    pub kill_meta: bool,
    /// With `kill`: spare meta.
    pub spare_meta: bool,
    /// Meta nodes (several run on a lease).
    pub meta_nodes: u32,
    pub seeds: std::ops::Range<u64>,
    pub jobs: usize,
    pub json: PathBuf,
    pub update_expected: bool,
}

impl CorpusArgs {
    /// The roles the runs kill (none: no kills).
    pub fn roles(&self) -> KillRoles {
        let base = if self.kill {
            KillRoles::ALL
        } else {
            KillRoles::NONE
        };
        KillRoles {
            meta: (self.kill && !self.spare_meta) || self.kill_meta,
            ..base
        }
    }
}

/// Why `epochlab corpus` could not run: bad input.
#[derive(Debug, thiserror::Error)]
pub enum CorpusRunError {
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    #[error("{path}: {file} is not a .slt file of the corpus")]
    NotInCorpus { path: String, file: String },
    #[error("cannot write {path}: {why}")]
    Write { path: String, why: String },
}

/// A file's verdict over the seeds it ran under: the first seed's that did not pass, else passed.
#[derive(Clone, Debug)]
struct FileResult {
    rel: String,
    verdict: Verdict,
    /// Under kills with several seeds: the seed of `verdict` when it is not `passed`.
    seed: Option<u64>,
    /// Wall time of its runs, summed over the seeds.
    wall_ms: u64,
}

/// Run the corpus; the exit status (0: no listed file regressed, 1: one did).
pub fn run(a: &CorpusArgs) -> Result<u8, CorpusRunError> {
    let files = corpus::files(&a.root)?;
    let expected_path = a.root.join(EXPECTED);
    let expected = Expected::read(&expected_path)?;
    if let Some(file) = expected
        .files
        .keys()
        .find(|f| files.binary_search(f).is_err())
    {
        return Err(CorpusRunError::NotInCorpus {
            path: expected_path.display().to_string(),
            file: file.clone(),
        });
    }
    let seeds: Vec<u64> = if a.roles().any() {
        a.seeds.clone().collect()
    } else {
        vec![0]
    };
    eprintln!(
        "corpus: {} files x {} seed(s){}{}, {} jobs",
        files.len(),
        seeds.len(),
        match (a.kill, a.roles().meta) {
            (true, true) => " under kills, metas' too",
            (true, false) => " under kills, metas spared",
            (false, true) => " under meta kills",
            (false, false) => "",
        },
        match a.meta_nodes {
            1 => String::new(),
            n => format!(", {n} metas on a lease"),
        },
        a.jobs
    );
    let wall = WallTimer::start();
    let results = run_all(&a.root, &files, a.roles(), a.meta_nodes, &seeds, a.jobs);
    let wall_ms = wall.elapsed().as_millis() as u64;
    let no_script = corpus::run_by_no_script(&a.root, &files);
    let report = Report::new(a, &results, &expected, &no_script, wall_ms);
    report.print();
    write(&a.json, &report.json().to_string())?;
    outln!("wrote {}", a.json.display());
    if a.update_expected {
        let passing: Vec<&str> = results
            .iter()
            .filter(|r| r.verdict.passed())
            .map(|r| r.rel.as_str())
            .collect();
        let skipped: Vec<&str> = results
            .iter()
            .filter(|r| r.verdict == Verdict::Skipped)
            .map(|r| r.rel.as_str())
            .collect();
        let updated = expected.updated(a.kill, &passing, &skipped);
        write(&expected_path, &updated.render())?;
        outln!("updated {}", expected_path.display());
    }
    Ok(u8::from(!report.regressed.is_empty()))
}

fn write(path: &Path, text: &str) -> Result<(), CorpusRunError> {
    let err = |e: std::io::Error| CorpusRunError::Write {
        path: path.display().to_string(),
        why: e.to_string(),
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    std::fs::write(path, text).map_err(err)
}

/// Every (file, seed) on `jobs` threads, each run in its own simulation; the files' results in `files`' order.
fn run_all(
    root: &Path,
    files: &[String],
    roles: KillRoles,
    meta_nodes: u32,
    seeds: &[u64],
    jobs: usize,
) -> Vec<FileResult> {
    let units: Vec<(usize, u64)> = (0..files.len())
        .flat_map(|i| seeds.iter().map(move |&s| (i, s)))
        .collect();
    let next = Mutex::new(units.into_iter());
    let verdicts: Mutex<BTreeMap<(usize, u64), (Verdict, u64)>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for worker in 0..jobs.max(1) {
            let (next, verdicts) = (&next, &verdicts);
            let spawned = std::thread::Builder::new()
                .name(format!("corpus-{worker}"))
                // A simulation's futures nest deeply in a debug build.
                .stack_size(64 << 20)
                .spawn_scoped(scope, move || {
                    loop {
                        let unit = next.lock().unwrap_or_else(|e| e.into_inner()).next();
                        let Some((i, seed)) = unit else { return };
                        let wall = WallTimer::start();
                        let mut params = corpus::params_killing(&files[i], roles, seed);
                        params.topology.meta_nodes = meta_nodes;
                        let v = Verdict::run(root, &files[i], &params);
                        let ms = wall.elapsed().as_millis() as u64;
                        verdicts
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert((i, seed), (v, ms));
                    }
                });
            if let Err(e) = spawned {
                eprintln!("corpus: cannot start worker {worker}: {e}");
            }
        }
    });
    let mut verdicts = verdicts.into_inner().unwrap_or_else(|e| e.into_inner());
    files
        .iter()
        .enumerate()
        .map(|(i, rel)| {
            let runs = seeds
                .iter()
                .map(|&seed| {
                    let run = verdicts.remove(&(i, seed)).unwrap_or_else(|| {
                        let v = Verdict::Failed {
                            at: rel.clone(),
                            detail: "not run (no worker thread)".into(),
                            blocker: "not run".into(),
                        };
                        (v, 0)
                    });
                    (seed, run)
                })
                .collect();
            FileResult::of(rel, runs)
        })
        .collect()
}

impl FileResult {
    /// A file's result from its runs, in seed order: the first seed's verdict that is not `passed`.
    fn of(rel: &str, runs: Vec<(u64, (Verdict, u64))>) -> FileResult {
        let several = runs.len() > 1;
        let wall_ms = runs.iter().map(|(_, (_, ms))| ms).sum();
        let first = runs.into_iter().find(|(_, (v, _))| !v.passed());
        let (verdict, seed) = match first {
            Some((seed, (v, _))) => (v, several.then_some(seed)),
            None => (Verdict::Passed, None),
        };
        FileResult {
            rel: rel.to_string(),
            verdict,
            seed,
            wall_ms,
        }
    }
}

/// Counts of verdicts.
#[derive(Clone, Copy, Debug, Default)]
struct Totals {
    files: usize,
    passed: usize,
    failed: usize,
    unsupported: usize,
    skipped: usize,
    /// Files no script ran at f21fb9b7915 that did not pass (counted apart from `failed` and `unsupported`).
    no_script: usize,
}

impl Totals {
    fn add(&mut self, no_script: bool, v: &Verdict) {
        self.files += 1;
        match v {
            Verdict::Passed => self.passed += 1,
            _ if no_script => self.no_script += 1,
            Verdict::Failed { .. } => self.failed += 1,
            Verdict::Unsupported { .. } => self.unsupported += 1,
            Verdict::Skipped => self.skipped += 1,
        }
    }

    fn text(&self) -> String {
        let mut t = format!(
            "{}/{} passed, {} failed, {} unsupported",
            self.passed, self.files, self.failed, self.unsupported
        );
        if self.skipped > 0 {
            t.push_str(&format!(", {} skipped", self.skipped));
        }
        if self.no_script > 0 {
            t.push_str(&format!(
                ", {} not passing and {}",
                self.no_script,
                corpus::RUN_BY_NO_SCRIPT
            ));
        }
        t
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "files": self.files, "passed": self.passed, "failed": self.failed,
            "unsupported": self.unsupported, "skipped": self.skipped, "run_by_no_script": self.no_script,
        })
    }
}

/// What a run of the corpus found.
struct Report<'a> {
    args: &'a CorpusArgs,
    results: &'a [FileResult],
    /// The files no script ran at f21fb9b7915 ([`corpus::run_by_no_script`]).
    no_script: &'a BTreeSet<String>,
    /// The files outside [`corpus::APART`]'s folders.
    totals: Totals,
    /// The files of [`corpus::APART`]'s folders.
    apart: Totals,
    folders: BTreeMap<String, Totals>,
    /// What blocks files, with how many files it is the first failure of; most first.
    blockers: Vec<(String, usize)>,
    regressed: Vec<String>,
    newly_passing: Vec<String>,
    wall_ms: u64,
}

impl<'a> Report<'a> {
    fn new(
        args: &'a CorpusArgs,
        results: &'a [FileResult],
        expected: &Expected,
        no_script: &'a BTreeSet<String>,
        wall_ms: u64,
    ) -> Self {
        let mut totals = Totals::default();
        let mut apart = Totals::default();
        let mut folders: BTreeMap<String, Totals> = BTreeMap::new();
        let mut blockers: BTreeMap<String, usize> = BTreeMap::new();
        let (mut regressed, mut newly_passing) = (Vec::new(), Vec::new());
        for r in results {
            let unscripted = no_script.contains(&r.rel);
            let set_apart = corpus::APART.contains(&corpus::folder(&r.rel));
            if set_apart {
                apart.add(unscripted, &r.verdict);
            } else {
                totals.add(unscripted, &r.verdict);
            }
            folders
                .entry(corpus::folder(&r.rel).to_string())
                .or_default()
                .add(unscripted, &r.verdict);
            if let Some(b) = r.verdict.blocker().filter(|_| !unscripted && !set_apart) {
                *blockers.entry(b).or_default() += 1;
            }
            // A run that kills only meta runs RisingWave's kill runner as --kill does: the files listed as
            // passing under kills must pass.
            let listed = expected.expects(&r.rel, args.roles().any());
            match &r.verdict {
                Verdict::Skipped => {}
                v if listed && !v.passed() => regressed.push(r.rel.clone()),
                v if !listed && v.passed() => newly_passing.push(r.rel.clone()),
                _ => {}
            }
        }
        let mut blockers: Vec<(String, usize)> = blockers.into_iter().collect();
        blockers.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Report {
            args,
            results,
            no_script,
            totals,
            apart,
            folders,
            blockers,
            regressed,
            newly_passing,
            wall_ms,
        }
    }

    /// A file's line.
    fn line(&self, r: &FileResult) -> String {
        let seed = r.seed.map(|s| format!(" (seed {s})")).unwrap_or_default();
        let what = match &r.verdict {
            Verdict::Passed => "passed".to_string(),
            Verdict::Skipped => "skipped (in RisingWave's KILL_IGNORE_FILES)".to_string(),
            Verdict::Unsupported { at, construct } => {
                format!("unsupported{seed}: {construct} (at {at})")
            }
            Verdict::Failed { at, detail, .. } => format!("failed{seed} at {at}: {detail}"),
        };
        if self.no_script.contains(&r.rel) && !r.verdict.passed() {
            return format!("{}  {} ({what})", r.rel, corpus::RUN_BY_NO_SCRIPT);
        }
        format!("{}  {what}", r.rel)
    }

    fn print(&self) {
        for r in self.results {
            outln!("{}", self.line(r));
        }
        let run = if self.args.roles().any() {
            format!(
                "under kills, seeds {}..{}",
                self.args.seeds.start, self.args.seeds.end
            )
        } else {
            "without kills".to_string()
        };
        outln!(
            "\n{} ({run}, {:.1} s)",
            self.totals.text(),
            self.wall_ms as f64 / 1000.0
        );
        if self.apart.files > 0 {
            outln!(
                "{}: {} (apart from the totals above, which stay comparable: vendored in issue 43)",
                corpus::APART.join(", "),
                self.apart.text()
            );
        }
        let width = self.folders.keys().map(String::len).max().unwrap_or(0);
        for (folder, t) in &self.folders {
            outln!("  {folder:<width$}  {}", t.text());
        }
        if !self.blockers.is_empty() {
            outln!("\nblocking (files whose first failure it is):");
            for (blocker, n) in self.blockers.iter().take(20) {
                outln!("  {n:>4}  {blocker}");
            }
            if self.blockers.len() > 20 {
                outln!("  ... {} more in the JSON", self.blockers.len() - 20);
            }
        }
        outln!();
        if !self.newly_passing.is_empty() {
            outln!(
                "newly passing (not in {EXPECTED}; --update-expected adds them): {}",
                self.newly_passing.join(", ")
            );
        }
        if !self.regressed.is_empty() {
            outln!(
                "regressed (in {EXPECTED}, not passing): {}",
                self.regressed.join(", ")
            );
        }
    }

    fn json(&self) -> serde_json::Value {
        let files: Vec<serde_json::Value> = self.results.iter().map(file_json).collect();
        let folders: serde_json::Map<String, serde_json::Value> = self
            .folders
            .iter()
            .map(|(f, t)| (f.clone(), t.json()))
            .collect();
        let blockers: Vec<serde_json::Value> = self
            .blockers
            .iter()
            .map(|(b, n)| serde_json::json!({"blocker": b, "files": n}))
            .collect();
        serde_json::json!({
            "root": self.args.root.display().to_string(),
            "kill": self.args.kill,
            "kill_meta": self.args.roles().meta,
            "meta_nodes": self.args.meta_nodes,
            "seeds": if self.args.roles().any() {
                serde_json::json!([self.args.seeds.start, self.args.seeds.end])
            } else {
                serde_json::json!([0, 1])
            },
            "jobs": self.args.jobs,
            "wall_ms": self.wall_ms,
            "totals": self.totals.json(),
            "apart": self.apart.json(),
            "folders": folders,
            "blockers": blockers,
            "regressed": self.regressed,
            "newly_passing": self.newly_passing,
            "files": files,
        })
    }
}

fn file_json(r: &FileResult) -> serde_json::Value {
    let (at, detail, construct) = match &r.verdict {
        Verdict::Passed | Verdict::Skipped => (None, None, None),
        Verdict::Unsupported { at, construct } => (Some(at), None, Some(construct)),
        Verdict::Failed { at, detail, .. } => (Some(at), Some(detail), None),
    };
    serde_json::json!({
        "file": r.rel,
        "folder": corpus::folder(&r.rel),
        "verdict": r.verdict.as_str(),
        "seed": r.seed,
        "at": at,
        "detail": detail,
        "construct": construct,
        "blocker": r.verdict.blocker(),
        "wall_ms": r.wall_ms,
    })
}
