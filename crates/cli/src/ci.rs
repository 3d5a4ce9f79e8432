//! `epochlab ci`: RisingWave's recovery CI (`ci/scripts/deterministic-recovery-test.sh` at f21fb9b7915) step for
//! step: each (step, seed) one simulation, one cluster for every file of the step, on worker threads; a line per
//! (step, seed), the totals per step, and the replay command of each failure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use epochlab_sim::config::Topology;
use epochlab_sim::{BugId, BugMode, Outcome, ReproHooks};
use epochlab_simulation::ci::{self, CiProfile, CiStep, NotRun};
use epochlab_simulation::corpus::panic_message;
use epochlab_simulation::{FileReport, StepReport};
use epochlab_telemetry::{WallTimer, run_layer_scoped};

mod backfill;
mod junit;
mod log;
mod ratchet;

use log::BoundedLog;

/// `epochlab ci`'s arguments.
#[derive(Clone, Debug)]
pub struct CiArgs {
    pub profile: &'static CiProfile,
    pub steps: Vec<&'static CiStep>,
    pub seeds: std::ops::Range<u64>,
    pub jobs: usize,
    pub shard: Option<(u64, u64)>,
    /// `--spare-meta`: no meta among the killed roles.
    pub spare_meta: bool,
    pub root: PathBuf,
    pub keep_going: bool,
    pub run: BugMode,
    /// `--junit FILE`.
    pub junit: Option<PathBuf>,
    /// `--log-dir DIR`: a log per failing (step, seed), as the script's `$LOGDIR`.
    pub log_dir: Option<PathBuf>,
    /// `--update-expected`: rewrite the ratchet's lines of the steps run.
    pub update_expected: bool,
    /// The cluster of every (step, seed).
    pub topology: Topology,
    /// The profile's `USE_ARRANGEMENT_BACKFILL`, or `--use-arrangement-backfill`: printed, reaching no
    /// file ([`epochlab_simulation::ci::USE_ARRANGEMENT_BACKFILL`]).
    pub use_arrangement_backfill: bool,
}

/// Why `epochlab ci` could not run: bad input.
#[derive(Debug, thiserror::Error)]
pub enum CiError {
    #[error("{root}: no step's files are there (is it a copy of RisingWave's e2e_test/?): {why}")]
    NoStepFiles { root: String, why: String },
    #[error("cannot write {path}: {why}")]
    Write { path: String, why: String },
    #[error("{path}: {why}")]
    Ratchet { path: String, why: String },
    #[error("{0}: not a directory")]
    NotADirectory(String),
    /// A file of the backfill-tests script that cannot be read or split into statements.
    #[error(transparent)]
    Backfill(epochlab_simulation::runner::backfill::BackfillError),
}

/// What the script's `RUST_LOG` turned to debug (`risingwave_meta::barrier::recovery`, `::manager::catalog`,
/// `::rpc::ddl_controller`, `::barrier::mod`, `risingwave_simulation`), in epochlab's modules; the rest at INFO.
/// `RUST_LOG` replaces it.
const LOG_SCOPE: &str = "info,epochlab_meta::recovery=debug,epochlab_recovery=debug,epochlab_meta::catalog=debug,\
                         epochlab_meta::meta=debug,epochlab_barrier::manager=debug,epochlab_simulation=debug";

/// What one (step, seed) gave.
#[derive(Debug)]
pub(crate) enum SeedResult {
    Ran {
        report: StepReport,
        digest: String,
        wall_ms: u64,
        /// The log kept (a failing (step, seed) under `--log-dir`), and the known bugs triage finds in it.
        log: Option<PathBuf>,
        triage: Vec<BugId>,
    },
    /// A panic escaped the simulation: a failure of this (step, seed), not of the run.
    Panicked(String),
}

impl SeedResult {
    fn passed(&self) -> bool {
        matches!(self, SeedResult::Ran { report, .. } if report.outcome() == Outcome::Passed)
    }
}

/// A step of the run: its files, or why it does not run.
pub(crate) struct StepRun {
    step: &'static CiStep,
    files: Result<Vec<PathBuf>, NotRun>,
}

/// Run the profile's steps; the exit status (0: every (step, seed) that ran passed, 1: one did not).
pub fn run(a: &CiArgs) -> Result<u8, CiError> {
    if a.profile.name == "backfill-tests" {
        return backfill::run(a);
    }
    if a.root.exists() && !a.root.is_dir() {
        return Err(CiError::NotADirectory(a.root.display().to_string()));
    }
    let mut steps: Vec<StepRun> = a
        .steps
        .iter()
        .map(|&step| StepRun {
            step,
            files: ci::step_files(&a.root, step),
        })
        .collect();
    no_files_at_all(a, &steps)?;
    if let Some(dir) = &a.log_dir {
        writable_dir(dir)?;
    }
    if let Some(path) = &a.junit {
        writable_file(path)?;
    }
    let expected = ratchet::Ratchet::read(&a.root)?;
    expected.check(&a.root)?;
    let units = units(a, &steps);
    eprintln!(
        "ci: profile {} ({}), seeds {}..{}, {} step-seed(s){}, {} jobs",
        a.profile.name,
        a.profile.workflow,
        a.seeds.start,
        a.seeds.end,
        units.len(),
        a.shard
            .map(|(k, n)| format!(" (shard {k}/{n})"))
            .unwrap_or_default(),
        a.jobs
    );
    let t = a.topology;
    let metas = match t.meta_nodes {
        3 => "3 metas on a lease as in RisingWave's ci-3cn-2fe-3meta,".to_string(),
        1 => "deviation: RisingWave's ci-3cn-2fe-3meta has 3 metas, here 1 meta".to_string(),
        n => format!("deviation: RisingWave's ci-3cn-2fe-3meta has 3 metas, here {n} on a lease,"),
    };
    eprintln!(
        "ci: cluster: {} frontend(s) behind one round-robin address, {} compute node(s) of {} core(s) \
         (parallelism {}), {} compactor(s); {metas} {}",
        t.frontend_nodes,
        t.compute_nodes,
        t.compute_node_cores,
        t.parallelism(),
        t.compactor_nodes,
        match (a.spare_meta, t.meta_nodes) {
            (false, 1) => "killed with the other roles, restarting from its store",
            (false, _) => "killed with the other roles (drawn first), never all at once",
            (true, 1) => "never killed (--spare-meta)",
            (true, _) => "never killed (--spare-meta)",
        }
    );
    if a.use_arrangement_backfill {
        eprintln!("ci: {}", epochlab_simulation::ci::USE_ARRANGEMENT_BACKFILL);
    }
    if a.keep_going {
        eprintln!(
            "ci: deviation: --keep-going runs every file after a failure (RisingWave's run ended there; a \
             failed file may leave objects behind)"
        );
    }
    let (results, units) = run_steps(a, &mut steps, units);
    print(a, &steps, &units, &results);
    if a.use_arrangement_backfill {
        // On stdout too, beside the table it explains: this run is its twin's without the flag.
        outln!(
            "\nnote: {}",
            epochlab_simulation::ci::USE_ARRANGEMENT_BACKFILL
        );
    }
    if units.is_empty() {
        outln!("\n{}", nothing_ran(a, &steps));
    }
    let counts = step_counts(a, &steps, &units, &results);
    print_ratchet(a, &expected, &counts);
    if a.update_expected {
        expected.updated(&counts).write(&a.root)?;
        outln!("updated {}", a.root.join(ratchet::FILE).display());
    }
    if let Some(path) = &a.junit {
        let runs: Vec<_> = units
            .iter()
            .map(|&(i, seed)| {
                (
                    i,
                    seed,
                    results.get(&(i, seed)),
                    replay(a, steps[i].step, seed),
                )
            })
            .collect();
        let title = format!("epochlab ci --profile {}", a.profile.name);
        let xml = junit::document(&title, &a.root, &steps, &runs);
        std::fs::write(path, xml).map_err(|e| CiError::Write {
            path: path.display().to_string(),
            why: e.to_string(),
        })?;
        outln!("wrote {}", path.display());
    }
    let failed = results.values().any(|r| !r.passed());
    Ok(u8::from(failed))
}

/// Bad input: a root where no step that could run finds a file.
fn no_files_at_all(a: &CiArgs, steps: &[StepRun]) -> Result<(), CiError> {
    let runnable: Vec<&StepRun> = steps.iter().filter(|s| s.step.needs.is_none()).collect();
    // One step asked for by name is reported not run when its files are missing.
    if steps.len() == 1 || runnable.is_empty() || runnable.iter().any(|s| s.files.is_ok()) {
        return Ok(());
    }
    let why = runnable
        .iter()
        .filter_map(|s| {
            s.files
                .as_ref()
                .err()
                .map(|e| format!("{}: {e}", s.step.name))
        })
        .collect::<Vec<_>>()
        .join("; ");
    Err(CiError::NoStepFiles {
        root: a.root.display().to_string(),
        why,
    })
}

/// Per step run: the files it passed before its stop (or in all, with `--keep-going`) on its worst seed.
fn step_counts(
    a: &CiArgs,
    steps: &[StepRun],
    units: &[(usize, u64)],
    results: &BTreeMap<(usize, u64), SeedResult>,
) -> BTreeMap<ratchet::Key, usize> {
    let mode = if a.keep_going { "keep-going" } else { "stop" };
    let mut counts = BTreeMap::new();
    for (i, s) in steps.iter().enumerate() {
        let worst = units
            .iter()
            .filter(|(j, _)| *j == i)
            .map(|u| {
                results
                    .get(u)
                    .and_then(|r| ratchet::passed(r, a.keep_going))
            })
            .collect::<Option<Vec<usize>>>()
            .and_then(|n| n.into_iter().min());
        if let Some(n) = worst {
            let key = (a.profile.name.to_string(), s.step.name.to_string(), mode);
            counts.insert(key, n);
        }
    }
    counts
}

/// Each step's count beside its ratchet.
fn print_ratchet(a: &CiArgs, expected: &ratchet::Ratchet, counts: &BTreeMap<ratchet::Key, usize>) {
    if counts.is_empty() {
        return;
    }
    outln!();
    outln!("ratchet ({}):", a.root.join(ratchet::FILE).display());
    for (key, n) in counts {
        let what = if key.2 == "stop" {
            "before its stop"
        } else {
            "in all (--keep-going)"
        };
        let verdict = match expected.expected(key) {
            None => "no line yet (--update-expected adds it)".to_string(),
            Some(e) if *n < e => format!("REGRESSED from {e}"),
            Some(e) if *n > e => format!("more than its {e} (--update-expected raises it)"),
            Some(e) => format!("as its {e}"),
        };
        outln!(
            "  {:<16} {n} file(s) passed {what} on its worst seed: {verdict}",
            key.1
        );
    }
}

/// Why no (step, seed) ran: every step asked for is not run, or the shard holds none of the pairs.
fn nothing_ran(a: &CiArgs, steps: &[StepRun]) -> String {
    match a.shard {
        Some((k, n)) if steps.iter().any(|s| s.files.is_ok()) => format!(
            "nothing ran: shard {k}/{n} holds none of the {} (step, seed) pair(s)",
            units(
                &CiArgs {
                    shard: None,
                    ..a.clone()
                },
                steps
            )
            .len()
        ),
        _ => "nothing ran: no step asked for can run here (each says why above)".to_string(),
    }
}

/// `--log-dir`: made if missing, and a file can be written in it.
/// The JUnit file, written at the end: a path that cannot take it is bad input before any run. Its folder
/// is made if missing, as `--log-dir`'s.
fn writable_file(path: &Path) -> Result<(), CiError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| CiError::Write {
            path: dir.display().to_string(),
            why: e.to_string(),
        })?;
    }
    std::fs::write(path, b"").map_err(|e| CiError::Write {
        path: path.display().to_string(),
        why: e.to_string(),
    })
}

fn writable_dir(dir: &Path) -> Result<(), CiError> {
    if dir.exists() && !dir.is_dir() {
        return Err(CiError::NotADirectory(dir.display().to_string()));
    }
    let err = |e: std::io::Error| CiError::Write {
        path: dir.display().to_string(),
        why: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(err)?;
    let probe = dir.join(format!(".epochlab-ci-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(err)?;
    std::fs::remove_file(&probe).map_err(err)
}

/// The (step, seed) pairs to run: the steps with files, in order, each with every seed; with `--shard K/N`,
/// the pairs whose place is K mod N.
fn units(a: &CiArgs, steps: &[StepRun]) -> Vec<(usize, u64)> {
    let all = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.files.is_ok())
        .flat_map(|(i, _)| a.seeds.clone().map(move |seed| (i, seed)));
    all.enumerate()
        .filter(|(place, _)| a.shard.is_none_or(|(k, n)| *place as u64 % n == k))
        .map(|(_, unit)| unit)
        .collect()
}

/// A (step, seed): the step's place in the run, and the seed.
type Unit = (usize, u64);

/// Each unit's result.
type Results = BTreeMap<Unit, SeedResult>;

/// The steps in the script's order, each step's units on `jobs` threads; as under the script's `set -e`, a step
/// with a failing seed ends the run (unless `--keep-going`): the later steps are not run. The results, and the
/// units that ran.
fn run_steps(a: &CiArgs, steps: &mut [StepRun], units: Vec<(usize, u64)>) -> (Results, Vec<Unit>) {
    let mut results = BTreeMap::new();
    let mut failed_step = None;
    for i in 0..steps.len() {
        if let Some(name) = failed_step {
            if steps[i].files.is_ok() {
                steps[i].files = Err(NotRun::AfterFailure(name));
            }
            continue;
        }
        let mine: Vec<(usize, u64)> = units.iter().copied().filter(|u| u.0 == i).collect();
        let ran = run_all(a, steps, &mine);
        if !a.keep_going && ran.values().any(|r| !r.passed()) {
            failed_step = Some(steps[i].step.name);
        }
        results.extend(ran);
    }
    let ran = units
        .into_iter()
        .filter(|u| steps[u.0].files.is_ok())
        .collect();
    (results, ran)
}

/// Every unit on `jobs` threads, each its own simulation.
fn run_all(
    a: &CiArgs,
    steps: &[StepRun],
    units: &[(usize, u64)],
) -> BTreeMap<(usize, u64), SeedResult> {
    let next = Mutex::new(units.iter().copied());
    let results: Mutex<BTreeMap<(usize, u64), SeedResult>> = Mutex::new(BTreeMap::new());
    let total = units.len();
    std::thread::scope(|scope| {
        for worker in 0..a.jobs.max(1).min(total.max(1)) {
            let (next, results) = (&next, &results);
            let spawned = std::thread::Builder::new()
                .name(format!("ci-{worker}"))
                // A simulation's futures nest deeply in a debug build.
                .stack_size(64 << 20)
                .spawn_scoped(scope, move || {
                    loop {
                        let unit = lock(next).next();
                        let Some((i, seed)) = unit else { return };
                        let result = run_one(a, &steps[i], seed);
                        let mut results = lock(results);
                        results.insert((i, seed), result);
                        let failed = results.values().filter(|r| !r.passed()).count();
                        eprintln!(
                            "ci: {}/{total} step-seeds done, {failed} failed ({} seed {seed})",
                            results.len(),
                            steps[i].step.name
                        );
                    }
                });
            if let Err(e) = spawned {
                eprintln!("ci: cannot start worker {worker}: {e}");
            }
        }
    });
    results.into_inner().unwrap_or_else(|e| e.into_inner())
}

fn run_one(a: &CiArgs, s: &StepRun, seed: u64) -> SeedResult {
    let files = s.files.as_ref().expect("units have files");
    let log = a
        .log_dir
        .as_ref()
        .map(|d| d.join(format!("{}-{seed}.log", s.step.log)));
    let log_file = log
        .as_ref()
        .and_then(|p| BoundedLog::create(p, log::HEAD, log::TAIL).ok());
    let hooks = ReproHooks {
        tracing_layer: run_layer_scoped(None, log_file.clone(), LOG_SCOPE),
        ..Default::default()
    };
    let wall = WallTimer::start();
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut p = ci::step_params(a.profile, s.step, seed, a.run, a.topology);
        if a.spare_meta {
            p.kill_roles.meta = false;
        }
        ci::run_step(&a.root, files, &p, a.keep_going, hooks)
    }));
    let out = match out {
        Ok(out) => out,
        Err(payload) => {
            let why = panic_message(payload.as_ref());
            if let Some(path) = &log {
                finish(path, log_file.as_ref());
                append(path, &format!("panic: {why}\n"));
            }
            return SeedResult::Panicked(why);
        }
    };
    let passed = out.value.outcome() == Outcome::Passed;
    let (log, triage) = match log {
        Some(path) if passed => {
            let _ = std::fs::remove_file(&path);
            (None, Vec::new())
        }
        Some(path) => {
            finish(&path, log_file.as_ref());
            append(&path, &failure_text(&a.root, &out.value));
            let triage = triage(&path);
            (Some(path), triage)
        }
        None => (None, Vec::new()),
    };
    SeedResult::Ran {
        report: out.value,
        digest: out.digest,
        wall_ms: wall.elapsed().as_millis() as u64,
        log,
        triage,
    }
}

/// What failed, in full, as the log's last lines (RisingWave's log ended with the panic).
fn failure_text(root: &Path, report: &StepReport) -> String {
    let mut text = String::new();
    for f in report.files.iter().filter(|f| f.outcome != Outcome::Passed) {
        text.push_str(&format!("epochlab ci: {}\n", failure(root, f)));
        if let Some(full) = f.error.as_deref().filter(|e| e.contains('\n')) {
            text.push_str(full);
            text.push('\n');
        }
        if let Some(record) = &f.failure {
            text.push_str(&relative(root, &format!("{record}\n")));
        }
    }
    text
}

/// Write the kept tail of a failing (step, seed)'s log.
fn finish(path: &Path, log: Option<&log::SharedLog>) {
    if let Some(Err(e)) = log.map(|l| lock(&l.0).finish()) {
        eprintln!("ci: cannot write {}: {e}", path.display());
    }
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path);
    if let Err(e) = file.and_then(|mut f| f.write_all(text.as_bytes())) {
        eprintln!("ci: cannot write {}: {e}", path.display());
    }
}

/// The known bugs `epochlab triage` finds in a kept log.
fn triage(path: &Path) -> Vec<BugId> {
    let mut findings = crate::triage::Findings::default();
    let read = std::fs::File::open(path).and_then(|f| {
        crate::triage::scan(
            &path.display().to_string(),
            std::io::BufReader::new(f),
            &mut findings,
        )
    });
    if let Err(e) = read {
        eprintln!("ci: cannot triage {}: {e}", path.display());
    }
    let mut bugs: Vec<BugId> = findings.matches.iter().map(|m| m.bug).collect();
    bugs.sort();
    bugs.dedup();
    bugs
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The table, the totals, the replay lines.
fn print(
    a: &CiArgs,
    steps: &[StepRun],
    units: &[(usize, u64)],
    results: &BTreeMap<(usize, u64), SeedResult>,
) {
    outln!("{:<16} {:>6}  result", "step", "seed");
    for &(i, seed) in units {
        let line = results.get(&(i, seed)).map_or_else(
            || "not run (no worker thread)".into(),
            |r| describe(&a.root, r),
        );
        outln!("{:<16} {seed:>6}  {line}", steps[i].step.name);
        if let Some(SeedResult::Ran { report, .. }) = results.get(&(i, seed)) {
            for f in report
                .files
                .iter()
                .filter(|f| f.outcome != Outcome::Passed)
                .skip(1)
            {
                outln!("{:<25}also {}", "", failure(&a.root, f));
            }
        }
    }
    outln!();
    for (i, s) in steps.iter().enumerate() {
        let total = match &s.files {
            Err(why) => format!("not run: {why}"),
            Ok(files) => {
                let ran: Vec<&SeedResult> = units
                    .iter()
                    .filter(|(j, _)| *j == i)
                    .filter_map(|u| results.get(u))
                    .collect();
                let passed = ran.iter().filter(|r| r.passed()).count();
                if ran.is_empty() {
                    outln!(
                        "{:<16} none of its seeds in this shard, {} file(s) (script line {})",
                        s.step.name,
                        files.len(),
                        s.step.line
                    );
                    continue;
                }
                format!(
                    "{passed} of {} seed(s) passed, {} file(s) (script line {})",
                    ran.len(),
                    files.len(),
                    s.step.line
                )
            }
        };
        outln!("{:<16} {total}", s.step.name);
    }
    let failing: Vec<&(usize, u64)> = units
        .iter()
        .filter(|u| results.get(u).is_some_and(|r| !r.passed()))
        .collect();
    if !failing.is_empty() {
        outln!();
        outln!("replay:");
        for &&(i, seed) in &failing {
            outln!("  {}", replay(a, steps[i].step, seed));
        }
    }
}

/// One (step, seed)'s result in one line.
fn describe(root: &Path, r: &SeedResult) -> String {
    let report = match r {
        SeedResult::Panicked(why) => return format!("failed: panic: {why}"),
        SeedResult::Ran { report, .. } => report,
    };
    let passed = report
        .files
        .iter()
        .filter(|f| f.outcome == Outcome::Passed && !f.skipped)
        .count();
    let skipped = report.files.iter().filter(|f| f.skipped).count();
    let mut counts = format!(
        "{passed} of {} file(s) passed",
        report.files.len() + report.not_run.len()
    );
    if skipped > 0 {
        counts.push_str(&format!(", {skipped} skipped (KILL_IGNORE_FILES)"));
    }
    if !report.not_run.is_empty() {
        counts.push_str(&format!(", {} not run", report.not_run.len()));
    }
    let wall = match r {
        SeedResult::Ran {
            wall_ms,
            digest,
            log,
            triage,
            ..
        } => {
            let mut wall = format!("{:.1} s, digest {digest}", *wall_ms as f64 / 1000.0);
            if let Some(log) = log {
                wall.push_str(&format!(", log {}", log.display()));
            }
            match triage.as_slice() {
                [] if log.is_some() => wall.push_str(", triage: no known bug"),
                [] => {}
                bugs => {
                    let names: Vec<String> = bugs.iter().map(|b| b.to_string()).collect();
                    wall.push_str(&format!(", triage: {}", names.join(", ")));
                }
            }
            wall
        }
        SeedResult::Panicked(_) => String::new(),
    };
    match report.first_failure() {
        None => format!("passed ({counts}; {wall})"),
        Some(f) => format!("{} ({counts}; {wall})", failure(root, f)),
    }
}

/// A file's failure in one line: `failed at FILE:LINE: error`, `failed at PART:LINE (included by FILE): error`,
/// or `failed in FILE: error` (`stuck`); paths relative to the root.
pub(crate) fn failure(root: &Path, f: &FileReport) -> String {
    let error = f
        .error
        .as_deref()
        .unwrap_or("")
        .lines()
        .next()
        .unwrap_or("");
    let file = relative(root, &f.file);
    let what = match f.outcome {
        Outcome::Stuck => "stuck",
        _ => "failed",
    };
    let error = relative(root, error);
    // A record's error starts with its place (`FILE:LINE: ...`), an included part's when the record is in one.
    if error.starts_with(&format!("{file}:")) {
        return format!("{what} at {error}");
    }
    match error.split_once(": ") {
        Some((place, rest)) if is_place(place) => {
            format!("{what} at {place} (included by {file}): {rest}")
        }
        _ => format!("{what} in {file}: {error}"),
    }
}

/// Whether `s` is `PATH:LINE`.
fn is_place(s: &str) -> bool {
    s.rsplit_once(':').is_some_and(|(path, line)| {
        !path.is_empty() && !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit())
    })
}

/// `text` with the root's paths made relative to it ([`epochlab_simulation::corpus::shown`]).
pub(crate) fn relative(root: &Path, text: &str) -> String {
    epochlab_simulation::corpus::shown(root, text)
}

/// The command that runs one (step, seed) again.
pub(crate) fn replay(a: &CiArgs, step: &CiStep, seed: u64) -> String {
    let mut cmd = format!(
        "cargo xtask ci --profile {} --step {} --seeds {seed}..{} --bug {} --mode {}",
        a.profile.name,
        step.name,
        seed + 1,
        a.run.bug().as_str(),
        a.run.mode().as_str()
    );
    if a.root != Path::new(epochlab_simulation::corpus::ROOT) {
        cmd.push_str(&format!(" --root {}", a.root.display()));
    }
    if a.keep_going {
        cmd.push_str(" --keep-going");
    }
    if a.spare_meta {
        cmd.push_str(" --spare-meta");
    }
    cmd.push_str(&crate::command::topology::flags(a.topology));
    cmd
}
