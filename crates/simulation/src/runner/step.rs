//! A step: files run one after another in one cluster, as RisingWave's simulation runs the files of its glob
//! (`run_slt_task` in `src/tests/simulation/src/slt.rs` at f21fb9b7915): one cluster for the whole run, a new
//! session per file (a file's `SET`s do not reach the next), and the first failure ends the run. Objects,
//! epochs, recoveries, ids and background jobs still creating carry from file to file. [`run_file`] is a step
//! of one file.
//!
//! The seed's run ([`SeedRun`]) holds what lives as long as the cluster: the checkers, the engine, the kill
//! and background-DDL draws (one stream each for the whole step, as RisingWave's `thread_rng` and its
//! `ChaChaRng` are one per process). Each file gets a [`Play`]: a new sqllogictest runner and a report whose
//! epochs and recoveries are the counters' growth over the file. The run settles and the checkers judge once,
//! after the step's last file; what they find goes to the report of the file where the step ended.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use epochlab_common::{SimRng, event, trace, vspan};
use epochlab_frontend::frontend::Engine;
use epochlab_sim::checkers::Checkers;
use epochlab_sim::config::base_network;
use epochlab_sim::repro::install;
use epochlab_sim::runtime::RunError;
use epochlab_sim::workload::watchdog;
use epochlab_sim::{
    Cluster, ClusterHook, Outcome, ReproHooks, SimContext, SimOutput, try_run_observed,
};
use sqllogictest::{DefaultColumnType, Record};

use super::{
    FileReport, Play, SltError, SltParams, Stuck, conclude, new_runner, parse_file, start_cluster,
};
use crate::db::UnsupportedProbe;

/// What one seed of a step gave: each file it reached, in order, and the files after a stop.
#[derive(Clone, Debug)]
pub struct StepReport {
    /// The files the step reached, each with its report. A file that could not be read or parsed failed
    /// (kind `file`); a file of `KILL_IGNORE_FILES` under kills is `skipped`.
    pub files: Vec<FileReport>,
    /// The files after the first failure, not run (RisingWave's run ended there). Empty with `keep_going`.
    pub not_run: Vec<String>,
}

impl StepReport {
    /// The first file that did not pass.
    pub fn first_failure(&self) -> Option<&FileReport> {
        self.files.iter().find(|f| f.outcome != Outcome::Passed)
    }

    /// Passed when every file it reached passed.
    pub fn outcome(&self) -> Outcome {
        self.first_failure().map_or(Outcome::Passed, |f| f.outcome)
    }
}

/// A file of a step, read before the run starts.
struct StepFile {
    name: String,
    records: Result<Vec<Record<DefaultColumnType>>, SltError>,
}

impl StepFile {
    /// `path`, named by its place under `root` (a run's event log, and so its digest, is then the same
    /// however `root` is spelled).
    /// Without a root (empty, or `.`), a file is named as given, as [`run_file`] names it.
    fn read(root: &Path, path: &Path, p: &SltParams) -> Self {
        let rooted = root.components().any(|c| c != std::path::Component::CurDir);
        let name = rooted
            .then(|| crate::corpus::path_under(root, path))
            .flatten()
            .unwrap_or_else(|| path.display().to_string());
        Self {
            name,
            records: parse_file(path, p),
        }
    }

    /// Under kills, a file of the runner's `KILL_IGNORE_FILES` is not run.
    fn skipped(&self, p: &SltParams) -> bool {
        p.kill && p.runner.kill_ignored(Path::new(&self.name))
    }

    /// The virtual time its records may take: each (under kills every one, comments included) its retries'
    /// backoff (62 s) and a killer's 37 s; queries wait for backfills.
    fn time_limit(&self) -> Duration {
        let records = self.records.as_ref().map_or(0, Vec::len) as u64;
        Duration::from_secs(3600 + 120 * records)
    }
}

/// The files a step has finished, shared with the caller: a run that a panic or its time limit ends keeps
/// them.
#[derive(Default)]
struct Progress {
    done: Vec<FileReport>,
    current: Option<String>,
}

/// Run `path` alone: a step of one file.
pub fn run_file(
    path: &Path,
    p: &SltParams,
    hooks: ReproHooks,
) -> Result<SimOutput<FileReport>, SltError> {
    // Bad input (a missing or malformed file) is an error here, before any run.
    let file = StepFile {
        name: path.display().to_string(),
        records: Ok(parse_file(path, p)?),
    };
    let out = run_step(vec![file], p, false, hooks);
    Ok(out.map(|mut step| step.files.remove(0)))
}

/// Run `paths` in order in one cluster on the deterministic runtime: a new session per file, the first file
/// that does not pass ends the step (the rest are `not_run`) unless `keep_going`. A file under `root` is named
/// by its path relative to it in the reports and the event log.
pub fn run_files(
    root: &Path,
    paths: &[PathBuf],
    p: &SltParams,
    keep_going: bool,
    hooks: ReproHooks,
) -> SimOutput<StepReport> {
    let files = paths.iter().map(|f| StepFile::read(root, f, p)).collect();
    run_step(files, p, keep_going, hooks)
}

/// Run `files`, each read (or found bad) once, before the run.
fn run_step(
    files: Vec<StepFile>,
    p: &SltParams,
    keep_going: bool,
    hooks: ReproHooks,
) -> SimOutput<StepReport> {
    let limit = files.iter().map(StepFile::time_limit).sum();
    let names: Vec<String> = files.iter().map(|f| f.name.clone()).collect();
    // One file names the run; a step, its first file and how many follow (a log line carries the label).
    let label_file = match names.as_slice() {
        [one] => one.clone(),
        [first, rest @ ..] => format!("{first} (+{} files)", rest.len()),
        [] => String::new(),
    };
    let origin = epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS;
    let params = p.clone();
    let progress = Arc::new(Mutex::new(Progress::default()));
    let shared = progress.clone();
    let out = try_run_observed(
        p.seed,
        origin,
        limit,
        hooks.time_observers,
        move |ctx| async move {
            let label = format!("{} seed={} {label_file}", params.run.label(), ctx.seed);
            epochlab_common::clock::label_current_run(label);
            let _guard = install(
                hooks.tracing_layer,
                None::<tracing_subscriber::layer::Identity>,
            );
            let _trace = trace::enter_run(hooks.trace_per, ctx.clock.clone(), || {
                vspan!(
                    parent: None,
                    "run",
                    ctx.clock,
                    mode = params.run.mode().as_str(),
                    bug = params.run.bug().as_str(),
                    seed = ctx.seed as i64,
                    scenario = "slt",
                    file = label_file.as_str(),
                    kill = params.kill
                )
            });
            play_step(ctx, files, params, keep_going, hooks.on_cluster, shared).await
        },
    );
    out.map(|v| match v {
        Ok(step) => step,
        Err(e) => ended_early(e, &progress, &names),
    })
}

/// The step's report when a task's panic or the time limit ended the run: the files done, the one running
/// (stuck or panicked), the rest not run.
fn ended_early(e: RunError, progress: &Mutex<Progress>, names: &[String]) -> StepReport {
    let mut progress = progress.lock().unwrap_or_else(|e| e.into_inner());
    let mut files = std::mem::take(&mut progress.done);
    let current = progress
        .current
        .clone()
        .or_else(|| names.get(files.len()).cloned())
        .unwrap_or_default();
    files.push(FileReport::ended_early(&current, e));
    let not_run = names.iter().skip(files.len()).cloned().collect();
    StepReport { files, not_run }
}

/// Whether the step reaches a file it must run in a cluster (before a stop at a bad file).
fn reaches_a_run(files: &[StepFile], p: &SltParams, keep_going: bool) -> bool {
    for f in files {
        match &f.records {
            _ if f.skipped(p) => {}
            Ok(_) => return true,
            Err(_) if !keep_going => return false,
            Err(_) => {}
        }
    }
    false
}

async fn play_step(
    ctx: SimContext,
    files: Vec<StepFile>,
    p: SltParams,
    keep_going: bool,
    hook: Option<ClusterHook>,
    progress: Arc<Mutex<Progress>>,
) -> StepReport {
    let mut step = StepState {
        params: p.clone(),
        progress,
        play: None,
        mark: Counters::default(),
        last: None,
        settled: false,
        not_run: Vec::new(),
    };
    if !reaches_a_run(&files, &p, keep_going) {
        // Without a cluster there is nothing to settle: nothing is stuck.
        let _nothing_settles = step.files(None, files, &ctx, keep_going).await;
        return step.report();
    }
    let run = SeedRun::start(&ctx, &p, hook).await;
    let stalled = tokio::select! {
        biased;
        stuck = watchdog(&run.cluster) => Some(stuck),
        settled = step.files(Some(&run), files, &ctx, keep_going) => settled.err().map(|Stuck(r)| r),
    };
    step.end(&run, stalled);
    let report = step.report();
    event!(ctx.log, "slt", "outcome={}", report.outcome().as_str());
    run.cluster.shutdown();
    report
}

/// One seed's cluster and what lives as long as it.
pub(super) struct SeedRun {
    pub(super) cluster: Arc<Cluster>,
    checkers: Checkers,
    engine: Arc<Engine>,
    probe: UnsupportedProbe,
    /// The kill draws (RisingWave's `thread_rng`).
    rng: SimRng,
    /// The `SET BACKGROUND_DDL` draws: a stream of their own, seeded by the seed alone (RisingWave's
    /// `ChaChaRng::seed_from_u64(seed)`), so that kill draws never shift them.
    ddl_rng: SimRng,
    params: SltParams,
}

impl SeedRun {
    async fn start(ctx: &SimContext, p: &SltParams, hook: Option<ClusterHook>) -> Self {
        let cluster = start_cluster(ctx, p, hook).await;
        let checkers = Checkers::install(
            &cluster,
            p.run.toggles().get::<epochlab_common::toggles::DropMode>(),
        );
        base_network(&cluster);
        let engine = crate::cluster::engine_of(&cluster, p.topology);
        Self {
            cluster,
            checkers,
            engine,
            probe: UnsupportedProbe::default(),
            rng: SimRng::new(p.seed ^ 0x736c_745f_6b69_6c6c),
            ddl_rng: SimRng::new(p.seed),
            params: p.clone(),
        }
    }

    /// A file's play: a new session (runner) over the seed's cluster, engine and draws.
    fn play(&self, file: &str) -> Play {
        Play {
            cluster: self.cluster.clone(),
            engine: self.engine.clone(),
            runner: new_runner(&self.engine, &self.probe, self.params.retries_records()),
            rng: self.rng.clone(),
            ddl_rng: self.ddl_rng.clone(),
            params: self.params.clone(),
            report: FileReport::new(file),
            probe: self.probe.clone(),
            background_ddl: false,
            file_background_ddl: false,
        }
    }

    fn counters(&self) -> Counters {
        let stats = self.cluster.barrier_stats();
        Counters {
            epochs: stats.injected.load(Ordering::Relaxed),
            recoveries: stats.recoveries.load(Ordering::Relaxed),
            leader_changes: self.cluster.meta_leader_changes(),
            notes: self.engine.notes().len(),
        }
    }
}

/// What grows over a run: a file's report has the growth over the file.
#[derive(Clone, Copy, Default)]
struct Counters {
    epochs: u64,
    recoveries: u64,
    leader_changes: u64,
    notes: usize,
}

/// A step as it goes: the files done (in `progress`), the file playing, the files not run.
struct StepState {
    params: SltParams,
    progress: Arc<Mutex<Progress>>,
    play: Option<Play>,
    /// The counters when the last file played ended (zero at the cluster's start): where the next file's
    /// growth counts from.
    mark: Counters,
    /// The last file played: its place among the files done and where its growth counts from.
    last: Option<(usize, Counters)>,
    /// Every file passed and the run settled: the checkers' end check may run.
    settled: bool,
    not_run: Vec<String>,
}

impl StepState {
    /// Each file in turn; then, when every file passed, the run settles.
    async fn files(
        &mut self,
        run: Option<&SeedRun>,
        files: Vec<StepFile>,
        ctx: &SimContext,
        keep_going: bool,
    ) -> Result<(), Stuck> {
        let mut files = files.into_iter();
        while let Some(f) = files.next() {
            let report = self.file(run, f, ctx).await;
            let failed = report.outcome != Outcome::Passed;
            self.done(report);
            if failed && !keep_going {
                self.not_run = files.map(|f| f.name).collect();
                return Ok(());
            }
        }
        match run {
            Some(run) if self.all_passed() => {
                super::settle(&run.cluster).await?;
                self.settled = true;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    async fn file(&mut self, run: Option<&SeedRun>, f: StepFile, ctx: &SimContext) -> FileReport {
        let name = f.name.clone();
        lock(&self.progress).current = Some(name.clone());
        // Each log line names the file running, not the step's first.
        let label = format!("{} seed={} {name}", self.params.run.label(), ctx.seed);
        epochlab_common::clock::label_current_run(label);
        if f.skipped(&self.params) {
            event!(ctx.log, "slt", "file={name} skipped: in KILL_IGNORE_FILES");
            return FileReport::skipped(&name);
        }
        let records = match f.records {
            Err(e) => return FileReport::bad(&name, &e),
            Ok(records) => records,
        };
        let run = run.expect("a step that reaches a file to run has a cluster (reaches_a_run)");
        event!(
            ctx.log,
            "slt",
            "file={name} records={} kill={}",
            records.len(),
            run.params.kill
        );
        let play = self.play.insert(run.play(&name));
        play.records(records).await;
        self.played(run)
    }

    /// The playing file's report, counted; the file is the last played.
    fn played(&mut self, run: &SeedRun) -> FileReport {
        let mut play = self.play.take().expect("a file is playing");
        let name = play.report.file.clone();
        let mut report = std::mem::replace(&mut play.report, FileReport::new(&name));
        counted(&mut report, run, self.mark);
        self.last = Some((lock(&self.progress).done.len(), self.mark));
        self.mark = run.counters();
        report
    }

    fn done(&mut self, report: FileReport) {
        let mut progress = lock(&self.progress);
        progress.done.push(report);
        progress.current = None;
    }

    fn all_passed(&self) -> bool {
        lock(&self.progress)
            .done
            .iter()
            .all(|r| r.outcome == Outcome::Passed)
    }

    /// After the files: the file playing when the run stalled is done; the last file played gets the
    /// checkers' verdict (or the stall), and counts what the settling added.
    fn end(&mut self, run: &SeedRun, stalled: Option<String>) {
        if self.play.is_some() {
            let report = self.played(run);
            self.done(report);
        }
        let Some((i, start)) = self.last else {
            return;
        };
        let mut progress = lock(&self.progress);
        let last = &mut progress.done[i];
        conclude(last, stalled, self.settled, &run.cluster, &run.checkers);
        counted(last, run, start);
    }

    fn report(self) -> StepReport {
        let mut progress = lock(&self.progress);
        StepReport {
            files: std::mem::take(&mut progress.done),
            not_run: self.not_run,
        }
    }
}

/// A file's report with the counters' growth over it, and the engine's notes since it started.
fn counted(report: &mut FileReport, run: &SeedRun, start: Counters) {
    let now = run.counters();
    report.epochs = now.epochs - start.epochs;
    report.recoveries = now.recoveries - start.recoveries;
    report.meta_leader_changes = now.leader_changes - start.leader_changes;
    report.notes = run.engine.notes().split_off(start.notes);
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
