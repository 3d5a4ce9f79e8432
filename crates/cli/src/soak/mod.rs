//! `epochlab soak`: run many seeds on worker threads (each seed its own single-threaded simulation), keep one
//! result per seed, group the failures by signature, replay results files, and shrink failing plans.
//!
//! A seed runs a random workload plan (`--scenario random`, the default) or the directed #14910 scenario
//! (`--scenario 14910`, the repro's flags); `--plan FILE` runs one plan file.

mod plan_cmd;
mod spec;
mod traces;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use epochlab_sim::{ReproHooks, ReproParams};
use epochlab_telemetry::WallTimer;
use serde::{Deserialize, Serialize};

use crate::soak_metrics::{MetricsError, SoakObserver};
pub use spec::{RunSpec, Scenario};
use spec::{directed_campaign, random_campaign};

/// The results format's version (2: rows carry `bug`; 3: a random plan's replay names `--engine 2024` when it
/// ran on the engine of 2024, and no `--engine` means the latest engine; in rows of version 2 it meant 2024;
/// 4: a random plan's replay names its meta faults' rates and its metas, which rows of before issue 56's flip
/// left out when they were 0 and 1).
pub const RESULTS_VERSION: u32 = 4;

/// The meta flags of a random plan's replay, with what a row of version 3 or before meant by leaving one out.
const META_FLAGS_BEFORE_THE_FLIP: [(&str, &str); 4] = [
    ("--kill-meta-rate", "0"),
    ("--crash-meta-rate", "0"),
    ("--meta-outage-rate", "0"),
    ("--meta-nodes", "1"),
];

/// The command that replays `row` today: a random plan's row of version 2 ran on what is now the engine of
/// 2024, which its command did not name; one of version 3 or before ran without the meta faults and on the one
/// meta its command did not name.
fn replay_command(row: &SeedRow) -> String {
    let random = row
        .replay
        .starts_with("cargo xtask soak --scenario random ");
    let Some((head, seeds)) = row.replay.split_once(" --seeds ") else {
        return row.replay.clone();
    };
    if !random || row.version >= RESULTS_VERSION {
        return row.replay.clone();
    }
    let mut head = head.to_string();
    if row.version < 3 && !head.contains(" --engine ") {
        head.push_str(" --engine 2024");
    }
    for (flag, value) in META_FLAGS_BEFORE_THE_FLIP {
        if !head.contains(&format!(" {flag} ")) {
            head.push_str(&format!(" {flag} {value}"));
        }
    }
    format!("{head} --seeds {seeds}")
}

/// What a soak campaign runs.
#[derive(Clone, Debug)]
pub struct SoakArgs {
    /// Half-open: `start..end`.
    pub seeds: std::ops::Range<u64>,
    pub jobs: usize,
    /// `(k, n)`: take only the seeds with `seed % n == k`.
    pub shard: Option<(u64, u64)>,
    pub scenario: Scenario,
    /// The mode, and the directed scenario's settings; the seed is each run's own.
    pub params: ReproParams,
    /// `--mode` was given (a plan file's own mode yields to it).
    pub mode_given: bool,
    pub results: Option<PathBuf>,
    /// Wall-clock budget: no new seed starts after it.
    pub duration: Option<Duration>,
    pub json: bool,
    /// Rerun the seeds of this results file instead of a campaign.
    pub replay: Option<PathBuf>,
    /// Run this plan file instead of seeds.
    pub plan: Option<PathBuf>,
    /// Shrink the failing plan (the plan file's, or the first failing seed's).
    pub shrink: bool,
    /// Serve live metrics here (`--metrics-addr`), and for this long after the campaign (`--serve-for`).
    pub metrics_addr: Option<std::net::SocketAddr>,
    pub serve_for: Option<Duration>,
    /// Send the trace of every failing or stuck seed here (OTLP/gRPC).
    pub otlp_endpoint: Option<String>,
    /// Write the event log of the one run (`--plan`, or a range of one seed) here.
    pub event_log: Option<PathBuf>,
    /// The store meta keeps its rows in (`--meta-store`); `None`: the cluster's default.
    pub meta_store: Option<epochlab_meta::store::MetaBackend>,
    /// Write the `--plan` run's meta store here as an SQLite file (`--meta-store-out`).
    pub meta_store_out: Option<PathBuf>,
}

/// One seed's result: a line of `--results`, and of `--json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedRow {
    pub version: u32,
    /// The campaign's settings, so that a results file resumes only the same campaign.
    pub campaign: String,
    pub seed: u64,
    /// The bug of the catalogue whose toggle the mode sets (`14910`, `22384`); rows of version 1 had none.
    #[serde(default = "bug_14910")]
    pub bug: String,
    pub mode: String,
    pub scenario: String,
    /// `passed`, `failed` or `stuck`.
    pub outcome: String,
    /// For a failure: `actor_failure`, `invariant` or `oracle`.
    pub kind: Option<String>,
    /// What failed, what is stuck, or (for a pass) why nothing could fail.
    pub detail: Option<String>,
    /// The kind and the error with numbers masked: equal signatures are the same failure.
    pub signature: Option<String>,
    pub digest: String,
    pub virtual_ms: u64,
    pub wall_ms: u64,
    pub replay: String,
}

fn bug_14910() -> String {
    "14910".into()
}

/// A soak's failures of one signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub count: u64,
    pub first_seed: u64,
    /// The first seed's error, unmasked.
    pub detail: Option<String>,
    pub replay: String,
}

impl Default for SoakArgs {
    /// What `epochlab soak` runs without flags.
    fn default() -> Self {
        Self {
            seeds: 0..100,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            shard: None,
            scenario: Scenario::Random(epochlab_sim::workload::GenParams::default()),
            params: ReproParams {
                mode: epochlab_sim::Mode::Fixed,
                ..ReproParams::default()
            },
            mode_given: false,
            results: None,
            duration: None,
            json: false,
            replay: None,
            plan: None,
            shrink: false,
            metrics_addr: None,
            serve_for: None,
            otlp_endpoint: None,
            event_log: None,
            meta_store: None,
            meta_store_out: None,
        }
    }
}

impl SoakArgs {
    /// The campaign key: the scenario and its settings, without the seed.
    pub fn campaign(&self) -> String {
        match &self.scenario {
            Scenario::Directed => directed_campaign(&self.params),
            Scenario::Random(g) => random_campaign(self.run(), g),
            Scenario::Slt(c) => c.key(),
        }
    }

    /// The run of one seed.
    pub fn spec(&self, seed: u64) -> RunSpec {
        match &self.scenario {
            Scenario::Directed => RunSpec::Directed(ReproParams {
                seed,
                ..self.params.clone()
            }),
            Scenario::Random(g) => RunSpec::Random {
                seed,
                run: self.run(),
                generate: g.clone(),
            },
            Scenario::Slt(c) => RunSpec::Slt {
                seed,
                campaign: c.clone(),
            },
        }
    }

    /// The campaign's bug and mode (the parser checked that the bug has the mode).
    pub fn run(&self) -> epochlab_sim::BugMode {
        epochlab_sim::BugMode::new(self.params.bug, self.params.mode)
            .expect("the soak's mode is one of its bug's")
    }
}

/// The seeds this process runs, lazily (a range may hold billions): the range, this shard's share, less
/// those already in the results file.
pub fn seeds_to_run<'a>(
    args: &'a SoakArgs,
    done: &'a BTreeSet<u64>,
) -> impl Iterator<Item = u64> + Send + 'a {
    args.seeds
        .clone()
        .filter(|s| args.shard.is_none_or(|(k, n)| s % n == k))
        .filter(|s| !done.contains(s))
}

/// How many seeds [`seeds_to_run`] yields, without walking the range.
fn count_to_run(args: &SoakArgs, done: &BTreeSet<u64>) -> u64 {
    let r = &args.seeds;
    let in_shard = |s: u64| args.shard.is_none_or(|(k, n)| s % n == k);
    let share = match args.shard {
        None => r.end - r.start,
        // Seeds below x with s % n == k: ceil((x - k) / n) for x > k.
        Some((k, n)) => {
            let below = |x: u64| if x > k { (x - k).div_ceil(n) } else { 0 };
            below(r.end) - below(r.start)
        }
    };
    let skipped = done.range(r.clone()).filter(|s| in_shard(**s)).count() as u64;
    share - skipped
}

/// The rows of a results file that belong to `campaign` (none when the file does not exist yet). A line that
/// is not a row is an error, but for a torn last line.
pub fn read_results(path: &std::path::Path, campaign: &str) -> Result<Vec<SeedRow>, SoakError> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let rows = read_all(path)?;
    Ok(rows
        .into_iter()
        .filter(|r| r.campaign == campaign && r.version == RESULTS_VERSION)
        .collect())
}

/// A campaign's tally: outcome counts and failures by signature. It grows with the signatures, not with the
/// seeds, so a long soak's memory stays flat.
#[derive(Debug, Default)]
pub struct Triage {
    counts: BTreeMap<String, u64>,
    seeds: u64,
    /// Failures and stuck runs by signature, in order of signature.
    pub groups: BTreeMap<String, Group>,
}

impl Triage {
    pub fn of<'a>(rows: impl IntoIterator<Item = &'a SeedRow>) -> Self {
        let mut t = Self::default();
        for r in rows {
            t.add(r);
        }
        t
    }

    pub fn add(&mut self, r: &SeedRow) {
        self.seeds += 1;
        *self.counts.entry(r.outcome.clone()).or_default() += 1;
        let Some(sig) = &r.signature else { return };
        let g = self.groups.entry(sig.clone()).or_insert(Group {
            count: 0,
            first_seed: r.seed,
            detail: r.detail.clone(),
            replay: r.replay.clone(),
        });
        g.count += 1;
        if r.seed < g.first_seed {
            g.first_seed = r.seed;
            g.detail = r.detail.clone();
            g.replay = r.replay.clone();
        }
    }

    /// Whether any seed failed or got stuck.
    pub fn failed(&self) -> bool {
        self.counts.keys().any(|o| o != "passed")
    }

    /// The lowest seed that failed or got stuck.
    pub fn first_failure(&self) -> Option<u64> {
        self.groups.values().map(|g| g.first_seed).min()
    }

    /// The outcome counts, then one line per signature with its count, first seed and replay command.
    pub fn text(&self) -> String {
        let noun = if self.seeds == 1 { "seed" } else { "seeds" };
        let mut text = format!("soak: {} {noun}: {:?}\n", self.seeds, self.counts);
        for (sig, g) in &self.groups {
            let detail = g.detail.as_deref().unwrap_or("");
            text.push_str(&format!(
                "{:>6}x  {sig}\n        first seed {}: {detail}\n        replay: {}\n",
                g.count, g.first_seed, g.replay
            ));
        }
        text
    }

    fn print(&self, to_stderr: bool) {
        if to_stderr {
            eprint!("{}", self.text());
        } else {
            out!("{}", self.text());
        }
    }
}

/// What every worker of a campaign shares.
struct Workers<'a> {
    jobs: usize,
    campaign: &'a str,
    /// Set: start no more runs.
    stop: &'a AtomicBool,
    /// Sees each run on its worker thread (`--metrics-addr`).
    observer: &'a SoakObserver,
    traces: Option<&'a traces::SoakTraces>,
    event_log: Option<&'a std::path::Path>,
    meta_store: Option<epochlab_meta::store::MetaBackend>,
}

impl Workers<'_> {
    /// Run each run that `runs` yields on `jobs` threads; each finished run goes to `on_row` on the calling
    /// thread, in the order they finish.
    fn run(&self, runs: impl Iterator<Item = RunSpec> + Send, mut on_row: impl FnMut(SeedRow)) {
        let next = std::sync::Mutex::new(runs);
        let (tx, rx) = mpsc::channel::<SeedRow>();
        std::thread::scope(|scope| {
            for worker in 0..self.jobs.max(1) {
                let tx = tx.clone();
                let next = &next;
                scope.spawn(move || {
                    while !self.stop.load(Ordering::Relaxed) {
                        let spec = next.lock().unwrap_or_else(|e| e.into_inner()).next();
                        let Some(spec) = spec else {
                            return;
                        };
                        if tx.send(self.run_one(worker, &spec)).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(tx);
            for row in rx {
                on_row(row);
            }
        });
    }

    fn run_one(&self, worker: usize, spec: &RunSpec) -> SeedRow {
        let on_cluster = self.observer.seed_started(worker, spec.mode().as_str());
        let hooks = ReproHooks {
            on_cluster,
            meta_store: self.meta_store,
            ..Default::default()
        };
        let row = spec.run(self.campaign, hooks, self.event_log);
        self.observer.seed_finished(worker, &row);
        if let Some(t) = self.traces {
            t.trace_failure(spec, self.campaign, &row);
        }
        row
    }
}

/// Why a soak could not run.
#[derive(Debug, thiserror::Error)]
pub enum SoakError {
    #[error("cannot read the results file {path}: {source}")]
    ReadResults {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: not a results line of version {RESULTS_VERSION}: {detail}")]
    BadRow {
        path: String,
        line: usize,
        detail: String,
    },
    #[error("cannot write the results file {path}: {source}")]
    WriteResults {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: cannot replay `{command}`: {source}")]
    Unreplayable {
        path: String,
        line: usize,
        command: String,
        source: ReplayError,
    },
    #[error(transparent)]
    PlanFile(#[from] epochlab_sim::workload::PlanFileError),
    #[error("cannot write the plan file {path}: {source}")]
    WritePlan {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Metrics(#[from] MetricsError),
    #[error("traces: {0}")]
    Traces(String),
    #[error("cannot write the meta store to {path}: {detail}")]
    WriteMetaStore { path: String, detail: String },
}

/// Run the campaign (or, with `--replay`, rerun a results file's seeds; with `--plan`, one plan); the exit
/// status: 0 every seed passed (every replay was the same), 1 otherwise.
pub fn run(args: &SoakArgs) -> Result<u8, SoakError> {
    let observer = SoakObserver::start(args)?;
    let code = campaign_or_replay(args, &observer)?;
    observer.finish();
    Ok(code)
}

fn campaign_or_replay(args: &SoakArgs, observer: &SoakObserver) -> Result<u8, SoakError> {
    if let Some(path) = &args.replay {
        return replay_file(path, args.jobs, observer);
    }
    if args.plan.is_some() {
        return plan_cmd::run_plan_file(args);
    }
    let triage = campaign(args, observer)?;
    triage.print(args.json);
    if args.shrink {
        return plan_cmd::shrink_first_failure(args, &triage);
    }
    Ok(u8::from(triage.failed()))
}

/// Run the campaign's seeds (less those already in the results file); the tally of the whole campaign.
fn campaign(args: &SoakArgs, observer: &SoakObserver) -> Result<Triage, SoakError> {
    let campaign = args.campaign();
    let before: Vec<SeedRow> = match &args.results {
        Some(path) => read_results(path, &campaign)?,
        None => Vec::new(),
    };
    let done: BTreeSet<u64> = before.iter().map(|r| r.seed).collect();
    let mut triage = Triage::of(&before);
    drop(before);
    let to_run = count_to_run(args, &done);
    let mut sink = match &args.results {
        Some(path) => Some(open_append(path)?),
        None => None,
    };
    eprintln!(
        "soak: {to_run} seeds to run ({} already in the results), {} jobs, {campaign}",
        done.len(),
        args.jobs,
    );
    let stop = AtomicBool::new(false);
    let wall = WallTimer::start();
    let mut progress = Progress::new(to_run);
    let mut ran = 0u64;
    let mut write_error = None;
    let runs = seeds_to_run(args, &done).map(|seed| args.spec(seed));
    let traces =
        traces::SoakTraces::start(args.otlp_endpoint.as_deref()).map_err(SoakError::Traces)?;
    let workers = Workers {
        jobs: args.jobs,
        campaign: &campaign,
        stop: &stop,
        observer,
        traces: traces.as_ref(),
        event_log: args.event_log.as_deref(),
        meta_store: args.meta_store,
    };
    workers.run(runs, |row| {
        let line = serde_json::to_string(&row).expect("a row serializes");
        if let Some(sink) = sink.as_mut()
            && let Err(e) = append_line(sink, &line)
        {
            write_error.get_or_insert(e);
            stop.store(true, Ordering::Relaxed);
        }
        if args.json {
            outln!("{line}");
        }
        progress.record(&row, wall.elapsed());
        if args.duration.is_some_and(|d| wall.elapsed() >= d) {
            stop.store(true, Ordering::Relaxed);
        }
        triage.add(&row);
        ran += 1;
    });
    progress.finish();
    match write_error {
        Some(e) => Err(e),
        None => {
            if ran < to_run {
                report_stopped(args, ran, to_run);
            }
            Ok(triage)
        }
    }
}

/// Append one row's line to the results file, flushed (a crash loses no row it had written).
fn append_line((path, file): &mut (String, std::fs::File), line: &str) -> Result<(), SoakError> {
    file.write_all(format!("{line}\n").as_bytes())
        .and_then(|()| file.flush())
        .map_err(|source| SoakError::WriteResults {
            path: path.clone(),
            source,
        })
}

/// A campaign `--duration` stopped before its last seed: how to go on.
fn report_stopped(args: &SoakArgs, ran: u64, to_run: u64) {
    let resume = match &args.results {
        Some(_) => "run the same command again to continue",
        None => "give --results FILE to be able to continue",
    };
    eprintln!("soak: stopped after {ran} of {to_run} seeds (--duration); {resume}");
}

/// Open the results file for appending. A last line without its newline (a write cut short by a crash) is
/// cut off first, so the next row starts a line of its own; its seed runs again.
fn open_append(path: &std::path::Path) -> Result<(String, std::fs::File), SoakError> {
    let shown = path.display().to_string();
    let error = |source| SoakError::WriteResults {
        path: shown.clone(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)
        .map_err(error)?;
    if !ends_torn(&mut file).map_err(error)? {
        return Ok((shown, file));
    }
    // Rare: read the whole file only to find where its last complete line ends.
    let text = std::fs::read(path).map_err(error)?;
    let keep = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    file.set_len(keep as u64).map_err(error)?;
    eprintln!(
        "soak: {shown}: cut off a torn last line ({} bytes, a write that a crash cut short)",
        text.len() - keep
    );
    Ok((shown, file))
}

/// Whether a non-empty file's last byte is not a newline (only that byte is read).
fn ends_torn(file: &mut std::fs::File) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    if file.metadata()?.len() == 0 {
        return Ok(false);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8];
    file.read_exact(&mut last)?;
    Ok(last[0] != b'\n')
}

/// Progress on stderr: a bar on a terminal (seeds done, failures, seeds/s, virtual/wall ratio), else a
/// plain line every two seconds of wall time.
struct Progress {
    done: u64,
    failed: u64,
    virtual_ms: u64,
    last_print: Duration,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new(total: u64) -> Self {
        use std::io::IsTerminal;
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(total);
            let style = indicatif::ProgressStyle::with_template(
                "soak [{elapsed_precise}] {bar:30} {pos}/{len} seeds, {msg}",
            )
            .expect("a valid template");
            bar.set_style(style);
            bar
        });
        Self {
            done: 0,
            failed: 0,
            virtual_ms: 0,
            last_print: Duration::ZERO,
            bar,
        }
    }

    fn record(&mut self, row: &SeedRow, elapsed: Duration) {
        self.done += 1;
        self.failed += u64::from(row.outcome != "passed");
        self.virtual_ms += row.virtual_ms;
        let secs = elapsed.as_secs_f64().max(1e-3);
        let status = format!(
            "{} failed or stuck, {:.1} seeds/s, {:.0}x virtual/wall",
            self.failed,
            self.done as f64 / secs,
            self.virtual_ms as f64 / 1000.0 / secs
        );
        match &self.bar {
            Some(bar) => {
                bar.set_position(self.done);
                bar.set_message(status);
            }
            None if elapsed >= self.last_print + Duration::from_secs(2) => {
                self.last_print = elapsed;
                eprintln!("soak: {} seeds done, {status}", self.done);
            }
            None => {}
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish();
        }
    }
}

/// Every row of a results file, whatever its campaign; a line that is not a row is an error.
pub fn read_all(path: &std::path::Path) -> Result<Vec<SeedRow>, SoakError> {
    let text = std::fs::read_to_string(path).map_err(|source| SoakError::ReadResults {
        path: path.display().to_string(),
        source,
    })?;
    let mut rows = Vec::new();
    let torn = !text.is_empty() && !text.ends_with('\n');
    let last = text.lines().count();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let parsed = serde_json::from_str::<SeedRow>(line);
        if parsed.is_err() && torn && i + 1 == last {
            eprintln!(
                "soak: {}:{}: skipped a torn last line (a write that a crash cut short)",
                path.display(),
                i + 1
            );
            continue;
        }
        let row: SeedRow = parsed.map_err(|e| SoakError::BadRow {
            path: path.display().to_string(),
            line: i + 1,
            detail: e.to_string(),
        })?;
        if row.version > RESULTS_VERSION {
            return Err(SoakError::BadRow {
                path: path.display().to_string(),
                line: i + 1,
                detail: format!("version {} is newer than this build's", row.version),
            });
        }
        rows.push(row);
    }
    Ok(rows)
}

/// `epochlab soak-report FILES...`: the rows of every file (shards of campaigns), one per campaign and seed,
/// and each campaign's triage. Exit 0 when every seed passed, 1 otherwise.
pub fn report(files: &[PathBuf]) -> Result<u8, SoakError> {
    let mut campaigns: BTreeMap<String, BTreeMap<u64, SeedRow>> = BTreeMap::new();
    for path in files {
        for row in read_all(path)? {
            let seeds = campaigns.entry(row.campaign.clone()).or_default();
            seeds.entry(row.seed).or_insert(row);
        }
    }
    if campaigns.is_empty() {
        outln!("soak-report: no results rows in {} file(s)", files.len());
    }
    let mut failed = false;
    for (campaign, seeds) in &campaigns {
        let triage = Triage::of(seeds.values());
        failed |= triage.failed();
        outln!("campaign {campaign}");
        out!("{}", triage.text());
    }
    Ok(u8::from(failed))
}

/// `--replay FILE`: rerun every seed of a results file and compare outcome and digest.
fn replay_file(
    path: &std::path::Path,
    jobs: usize,
    observer: &SoakObserver,
) -> Result<u8, SoakError> {
    let rows = read_all(path)?;
    let commands: Vec<String> = rows.iter().map(replay_command).collect();
    let mut runs = Vec::with_capacity(rows.len());
    for (i, command) in commands.iter().enumerate() {
        let spec = spec_of_replay(command).map_err(|source| SoakError::Unreplayable {
            path: path.display().to_string(),
            line: i + 1,
            command: command.clone(),
            source,
        })?;
        runs.push(spec);
    }
    // Each run is known by its command as this build writes it (a rewritten older row's flags may come in
    // another order).
    let keys: Vec<String> = runs.iter().map(RunSpec::replay).collect();
    let before: BTreeMap<&str, &SeedRow> = keys.iter().map(String::as_str).zip(&rows).collect();
    let (mut same, mut differ) = (0u64, 0u64);
    let stop = AtomicBool::new(false);
    let workers = Workers {
        jobs,
        campaign: "replay",
        stop: &stop,
        observer,
        traces: None,
        event_log: None,
        meta_store: None,
    };
    workers.run(runs.into_iter(), |now| {
        // A run is always one of the rows' (its key is its spec's): `-` only if that ever failed.
        let (outcome, digest) = before
            .get(now.replay.as_str())
            .map_or(("-", "-"), |w| (w.outcome.as_str(), w.digest.as_str()));
        if outcome == now.outcome && digest == now.digest {
            same += 1;
            outln!("seed {}: same", now.seed);
        } else {
            differ += 1;
            outln!(
                "seed {}: DIFFERS (outcome {outcome} -> {}, digest {digest} -> {})",
                now.seed,
                now.outcome,
                now.digest
            );
        }
    });
    outln!("replayed {}: {same} same, {differ} differ", same + differ);
    Ok(u8::from(differ > 0))
}

/// Why a results row's replay command names no single run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("neither `cargo xtask repro` nor `cargo xtask soak`")]
    NotXtask,
    #[error(transparent)]
    Flags(#[from] crate::command::CliError),
    #[error("not one run of one mode")]
    NotOneRepro,
    #[error("not one seed or one plan")]
    NotOneSoakRun,
    #[error(transparent)]
    Plan(#[from] epochlab_sim::workload::PlanFileError),
}

/// The run of a replay command (`cargo xtask repro ...` or `cargo xtask soak ...` of one seed or plan).
fn spec_of_replay(command: &str) -> Result<RunSpec, ReplayError> {
    use crate::command::Invocation;
    let words: Vec<&str> = command.split_whitespace().collect();
    let [cargo, xtask, cmd, ..] = words.as_slice() else {
        return Err(ReplayError::NotXtask);
    };
    if (*cargo, *xtask) != ("cargo", "xtask") || !matches!(*cmd, "repro" | "soak") {
        return Err(ReplayError::NotXtask);
    }
    let argv = words[2..].iter().map(std::ffi::OsString::from);
    match crate::command::parse(argv)? {
        Invocation::Repro(a) if a.modes.len() == 1 => Ok(RunSpec::Directed(ReproParams {
            mode: a.modes[0],
            ..a.params
        })),
        Invocation::Repro(_) => Err(ReplayError::NotOneRepro),
        Invocation::Soak(a) if a.plan.is_some() => {
            Ok(plan_cmd::spec_of_plan_file(&a).map(|(spec, _)| spec)?)
        }
        Invocation::Soak(a) if a.seeds.end - a.seeds.start == 1 => Ok(a.spec(a.seeds.start)),
        _ => Err(ReplayError::NotOneSoakRun),
    }
}

#[cfg(test)]
mod tests {
    use epochlab_sim::Mode;

    use super::*;

    fn args() -> SoakArgs {
        SoakArgs {
            seeds: 10..40,
            jobs: 1,
            ..SoakArgs::default()
        }
    }

    #[test]
    fn shards_cover_every_seed_once_and_skip_those_done() {
        let mut args = args();
        let mut union = Vec::new();
        for k in 0..4 {
            args.shard = Some((k, 4));
            union.extend(seeds_to_run(&args, &BTreeSet::new()));
            assert_eq!(
                count_to_run(&args, &BTreeSet::new()),
                seeds_to_run(&args, &BTreeSet::new()).count() as u64
            );
        }
        union.sort_unstable();
        assert_eq!(union, (10..40).collect::<Vec<_>>());
        args.shard = None;
        let done: BTreeSet<u64> = [10, 11, 39].into();
        assert_eq!(seeds_to_run(&args, &done).count(), 27);
        assert_eq!(count_to_run(&args, &done), 27);
        args.shard = Some((1, 3));
        let want = seeds_to_run(&args, &done).count() as u64;
        assert_eq!(count_to_run(&args, &done), want);
    }

    #[test]
    fn the_campaign_key_leaves_out_the_seed() {
        let mut a = args();
        a.scenario = Scenario::Directed;
        let key = a.campaign();
        assert!(!key.contains("--seed"), "{key}");
        let mut other = a.clone();
        other.params.rows = 5;
        assert_ne!(key, other.campaign());
        let random = args().campaign();
        assert!(
            random.starts_with("scenario=random --bug 14910 --mode"),
            "{random}"
        );
        let mut buggy = args();
        buggy.params.mode = Mode::Buggy;
        assert_ne!(random, buggy.campaign());
        let mut other_bug = buggy.clone();
        other_bug.params.bug = epochlab_sim::BugId::Rw22384;
        assert_ne!(buggy.campaign(), other_bug.campaign());
    }

    #[test]
    fn triage_groups_by_signature_with_the_first_seed() {
        let row = |seed, sig: Option<&str>| SeedRow {
            version: RESULTS_VERSION,
            campaign: "c".into(),
            seed,
            bug: "14910".into(),
            mode: "buggy".into(),
            scenario: "14910".into(),
            outcome: if sig.is_some() { "failed" } else { "passed" }.into(),
            kind: None,
            detail: None,
            signature: sig.map(str::to_string),
            digest: String::new(),
            virtual_ms: 0,
            wall_ms: 0,
            replay: format!("replay {seed}"),
        };
        let rows = [
            row(5, Some("a")),
            row(3, Some("a")),
            row(4, None),
            row(9, Some("b")),
        ];
        let groups = Triage::of(&rows).groups;
        assert_eq!(groups.len(), 2);
        assert_eq!(groups["a"].count, 2);
        assert_eq!(groups["a"].first_seed, 3);
        assert_eq!(groups["a"].replay, "replay 3");
    }

    #[test]
    fn a_replay_command_gives_back_its_run() {
        let p = ReproParams {
            seed: 77,
            rows: 123,
            mode: Mode::Fixed,
            persist_check: false,
            ..Default::default()
        };
        let spec = RunSpec::Directed(p.clone());
        match spec_of_replay(&spec.replay()) {
            Ok(RunSpec::Directed(q)) => assert_eq!(q, p),
            other => panic!("{other:?}"),
        }
        let mut random = args();
        random.params.mode = Mode::Buggy;
        let spec = random.spec(17);
        let back = spec_of_replay(&spec.replay()).expect("a random seed replays");
        assert_eq!(back.replay(), spec.replay());
        assert_eq!((back.seed(), back.mode()), (17, Mode::Buggy));
        assert!(spec_of_replay("cargo xtask repro --mode all").is_err());
        assert!(spec_of_replay("rm -rf /").is_err());
        assert!(spec_of_replay("cargo xtask soak --seeds 1..5").is_err());
    }

    /// A row of version 3 whose meta flags come in another order than this build writes them replays as the
    /// same run, and a row of a newer version than this build's is bad input (not a panic).
    #[test]
    fn an_older_row_with_its_flags_in_another_order_replays_the_same() {
        let mut random = args();
        random.params.mode = Mode::Fixed;
        let mut row = random.spec(17).run("c", ReproHooks::default(), None);
        let canonical =
            " --kill-meta-rate 0.3 --crash-meta-rate 0.3 --meta-outage-rate 0.2 --meta-nodes 3";
        let reordered =
            " --meta-nodes 3 --meta-outage-rate 0.2 --crash-meta-rate 0.3 --kill-meta-rate 0.3";
        assert!(row.replay.contains(canonical), "{}", row.replay);
        row.replay = row.replay.replace(canonical, reordered);
        row.version = 3;
        let dir =
            std::env::temp_dir().join(format!("epochlab-replay-order-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("r.jsonl");
        std::fs::write(&file, serde_json::to_string(&row).unwrap() + "\n").unwrap();
        let observer = SoakObserver::off();
        assert_eq!(replay_file(&file, 1, &observer).unwrap(), 0, "the same run");
        row.version = RESULTS_VERSION + 1;
        std::fs::write(&file, serde_json::to_string(&row).unwrap() + "\n").unwrap();
        assert!(matches!(
            replay_file(&file, 1, &observer),
            Err(SoakError::BadRow { .. })
        ));
    }

    /// A random plan's row of version 2 ran on the engine of 2024 without naming it: its replay does.
    #[test]
    fn a_random_row_of_version_2_replays_on_the_engine_of_2024() {
        let mut random = args();
        random.params.mode = Mode::Buggy;
        let mut row = random.spec(17).run("c", ReproHooks::default(), None);
        assert!(!row.replay.contains("--engine"), "{}", row.replay);
        assert_eq!(replay_command(&row), row.replay);
        let meta_flags =
            " --kill-meta-rate 0.3 --crash-meta-rate 0.3 --meta-outage-rate 0.2 --meta-nodes 3";
        assert!(row.replay.contains(meta_flags), "{}", row.replay);
        row.replay = row.replay.replace(meta_flags, "");
        row.version = 2;
        let old = replay_command(&row);
        let tail = " --engine 2024 --kill-meta-rate 0 --crash-meta-rate 0 --meta-outage-rate 0 --meta-nodes 1 \
                    --seeds 17..18";
        assert!(old.ends_with(tail), "{old}");
        let back = spec_of_replay(&old).expect("it replays");
        assert_eq!(back.replay(), old);
        let plan = back.plan().expect("a random plan");
        assert!(plan.cluster.flow_control);
        assert_eq!(plan.cluster.meta_nodes, 1);
        row.version = 3;
        let before_the_flip = replay_command(&row);
        assert!(before_the_flip.ends_with(" --meta-outage-rate 0 --meta-nodes 1 --seeds 17..18"));
        assert!(!before_the_flip.contains("--engine"), "{before_the_flip}");
    }
}
