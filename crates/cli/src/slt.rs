//! `epochlab slt FILES...`: sqllogictest files, each in a fresh simulated cluster, with RisingWave's simulation
//! runner's kill mode; and the files of `epochlab soak --slt GLOB`, run under each seed.

use std::path::{Path, PathBuf};

use epochlab_sim::{BugId, BugMode, Mode, Outcome, ReproHooks};
use epochlab_sql::{FileReport, KillRoles, RunnerEra, SltError, SltParams, run_file};
use epochlab_telemetry::{
    ExportRuntime, KeyValue, RunTracer, WallTimer, instance_id, run_layer_to,
};

use crate::args::{ArgError, Invocation};
use crate::soak::{RESULTS_VERSION, SeedRow};

pub const SLT_HELP: &str = "\
epochlab slt: run sqllogictest files against the simulated cluster, each file in a fresh cluster (3 compute
nodes, 256 vnodes, a barrier a second, parallelism 3 unless the file sets STREAMING_PARALLELISM), through the
`sqllogictest` runner, as RisingWave's simulation runs its e2e tests.

usage: epochlab slt [FLAGS] FILES...   (a FILE may be a glob, such as 'tests/slt/recovery/*.slt')

The SQL is what RisingWave's e2e corpus needs so far (README: `epochlab slt`): RisingWave's types, casts and
expressions; queries with joins, aggregates, subqueries, CTEs and set operations at the max committed epoch;
materialized views and sinks planned into fragments (project, filter, union, values, hop window, hash and simple
aggregation; streaming joins and top-N not yet); tables, views, indexes, sources, schemas, databases, users and
grants, DROP ... CASCADE, ALTER ... RENAME / OWNER TO / SET SCHEMA, SHOW, DESCRIBE, every session variable;
FLUSH, RECOVER, WAIT, SHOW JOBS. Anything else is `unsupported: <construct>`.

FLAGS (each at most once; `--flag VALUE` or `--flag=VALUE`)
  --seed N                  0..=2^64-1, default 0: the seed of every file's run
  --bug ID                  14910 (default) | 22384 | 16815 | 19138 | 15144 | reschedule-unpinned: the bug
                            whose toggle --mode sets
  --mode M                  buggy | fixed (default) | purge-before-reset (14910 only)
  --kill                    kill nodes of every role the engine has (the frontend, the 3 compute nodes, the
                            compactor) as RisingWave's simulation runner's --kill does: before every record
                            the parser returns (comments and blank lines too; not DML, FLUSH, ALTER or CREATE
                            TABLE AS), with probability --kill-rate, after U(0, 1 s), per role none, all or
                            each with p = 0.5, each down U(0, 1 s) (+20 s one time in ten), then 15 s; failed
                            records retried up to 5 times with backoff; files of RisingWave's KILL_IGNORE_FILES
                            are skipped. Meta is never killed (RisingWave's --kill killed meta nodes too, never
                            all; a meta that restarts from its store is not modelled yet)
  --kill-frontend           kill the frontend only (with the other --kill-ROLE flags: those roles): its
                            connections close, a statement in flight fails with `connection closed`, the
                            client reconnects and replays its SETs, the runner retries the record
  --kill-compute            kill compute nodes only (or with the other --kill-ROLE flags)
  --kill-compactor          kill the compactor only (or with the other --kill-ROLE flags): compaction stops
                            while it is down; tasks that fell due run when it is back
  --kill-rate F             0..=1, default 1.0; needs a kill flag
  --background-ddl-rate F   0..=1, default 0.0; needs a kill flag: before each CREATE MATERIALIZED VIEW the
                            runner sets BACKGROUND_DDL to true with this probability, else false (2024: also
                            at 0, overriding the file's own SET); one created in the background is
                            followed by WAIT
  --runner R                2024 (default) | latest: RisingWave's runner as at f21fb9b7915 (what the seed's CI
                            ran), or today's: no SET BACKGROUND_DDL at rate 0 (#20681) nor after the file set
                            it, backoff capped at 10 s, two more KILL_IGNORE_FILES; needs a kill flag
  --json                    one JSON object per file on stdout
  --event-log FILE          write each file's event log (with several files: FILE.N, N from 1)
  --log-file FILE           the runs' log lines (at RUST_LOG's levels, else INFO), with virtual time
  --otlp-endpoint URL       send each run's trace to this OTLP/gRPC collector (Jaeger's, say)
  -h, --help                this text

EXIT STATUS: 0 every record of every file passed and the checkers found nothing, 1 a record failed (the file,
line, SQL, expected and actual, and the replay command are printed), an actor failed or a checker fired, or a
run got stuck; 2 bad input (a flag, a missing file, a malformed record), one line on stderr.";

/// `epochlab slt`'s arguments.
#[derive(Clone, Debug)]
pub struct SltArgs {
    pub files: Vec<PathBuf>,
    pub params: SltParams,
    pub json: bool,
    pub event_log: Option<PathBuf>,
    pub log_file: Option<PathBuf>,
    pub otlp_endpoint: Option<String>,
}

const FLAGS: [&str; 14] = [
    "--seed",
    "--bug",
    "--mode",
    "--kill",
    "--kill-frontend",
    "--kill-compute",
    "--kill-compactor",
    "--runner",
    "--kill-rate",
    "--background-ddl-rate",
    "--json",
    "--event-log",
    "--log-file",
    "--otlp-endpoint",
];

/// A probability flag's value.
pub fn probability(flag: &'static str, v: &str) -> Result<f64, ArgError> {
    let bad = || ArgError::NotAProbability {
        flag,
        value: v.to_string(),
    };
    let rate: f64 = v.parse().map_err(|_| bad())?;
    if (0.0..=1.0).contains(&rate) {
        Ok(rate)
    } else {
        Err(bad())
    }
}

/// A `--flag` or `--flag=value` argument of a hand-written parser: the flag among `flags` (each at most once:
/// `seen` remembers them) and its inline value.
pub fn named_flag<'a>(
    arg: &'a str,
    flags: &[&'static str],
    seen: &mut Vec<&'static str>,
) -> Result<(&'static str, Option<&'a str>), ArgError> {
    let (name, inline) = match arg.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (arg, None),
    };
    let flag = flags
        .iter()
        .find(|f| **f == name)
        .copied()
        .ok_or_else(|| ArgError::UnknownFlag(arg.to_string()))?;
    if seen.contains(&flag) {
        return Err(ArgError::Repeated(flag));
    }
    seen.push(flag);
    Ok((flag, inline))
}

/// The files a pattern names: itself when it has no glob characters, else its matches in order.
pub fn expand(pattern: &str) -> Result<Vec<PathBuf>, ArgError> {
    if !pattern.contains(['*', '?', '[']) {
        return Ok(vec![PathBuf::from(pattern)]);
    }
    let bad = |why: String| ArgError::SltFiles {
        pattern: pattern.to_string(),
        why,
    };
    let paths = glob::glob(pattern).map_err(|e| bad(e.to_string()))?;
    let mut files = Vec::new();
    for p in paths {
        files.push(p.map_err(|e| bad(e.to_string()))?);
    }
    if files.is_empty() {
        return Err(bad("no file matches".into()));
    }
    files.sort();
    Ok(files)
}

/// Parse `epochlab slt`'s arguments.
pub fn parse(argv: &[String]) -> Result<Invocation, ArgError> {
    let mut a = SltArgs {
        files: Vec::new(),
        params: SltParams::default(),
        json: false,
        event_log: None,
        log_file: None,
        otlp_endpoint: None,
    };
    let mut seen: Vec<&'static str> = Vec::new();
    let (mut bug, mut mode) = (BugId::Rw14910, Mode::Fixed);
    let (mut kill_rate, mut bg_rate, mut runner) = (None, None, None);
    let (mut all, mut roles) = (false, KillRoles::NONE);
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(Invocation::SltHelp);
        }
        if !arg.starts_with("--") {
            a.files.extend(expand(arg)?);
            continue;
        }
        let (flag, inline) = crate::slt::named_flag(arg, &FLAGS, &mut seen)?;
        let switch = flag == "--json" || flag.starts_with("--kill") && flag != "--kill-rate";
        let v = match (switch, inline) {
            (true, None) => "",
            (true, Some(_)) => return Err(ArgError::TakesNoValue(flag)),
            (false, Some(v)) => v,
            (false, None) => it.next().ok_or(ArgError::MissingValue(flag))?.as_str(),
        };
        if !switch && v.is_empty() {
            return Err(ArgError::MissingValue(flag));
        }
        match flag {
            "--seed" => {
                a.params.seed = v.parse().map_err(|_| ArgError::NotASeed(v.to_string()))?;
            }
            "--bug" => bug = v.parse().map_err(ArgError::NotABug)?,
            "--mode" => {
                mode = v.parse().map_err(|_| ArgError::NotASingleMode {
                    command: "slt",
                    value: v.to_string(),
                })?;
            }
            "--kill" => all = true,
            "--kill-frontend" => roles.frontend = true,
            "--kill-compute" => roles.compute = true,
            "--kill-compactor" => roles.compactor = true,
            "--runner" => runner = Some(v.parse().map_err(|_| ArgError::NotARunner(v.into()))?),
            "--kill-rate" => kill_rate = Some(probability(flag, v)?),
            "--background-ddl-rate" => bg_rate = Some(probability(flag, v)?),
            "--json" => a.json = true,
            "--event-log" => a.event_log = Some(PathBuf::from(v)),
            "--log-file" => a.log_file = Some(PathBuf::from(v)),
            "--otlp-endpoint" => a.otlp_endpoint = Some(v.to_string()),
            _ => unreachable!("every flag of FLAGS is handled"),
        }
    }
    a.params.run = BugMode::new(bug, mode).map_err(ArgError::NotAModeOfTheBug)?;
    a.params.kill_roles = if all { KillRoles::ALL } else { roles };
    a.params.kill = a.params.kill_roles.any();
    for (flag, given) in [
        ("--kill-rate", kill_rate.is_some()),
        ("--background-ddl-rate", bg_rate.is_some()),
        ("--runner", runner.is_some()),
    ] {
        if given && !a.params.kill {
            return Err(ArgError::Pointless {
                flag,
                reason: "needs --kill or a --kill-ROLE flag (RisingWave's runner reads it only when it kills)",
            });
        }
    }
    a.params.runner = runner.unwrap_or_default();
    a.params.kill_rate = kill_rate.unwrap_or(1.0);
    a.params.background_ddl_rate = bg_rate.unwrap_or(0.0);
    if a.files.is_empty() {
        return Err(ArgError::SltFiles {
            pattern: String::new(),
            why: "name the files to run: epochlab slt [FLAGS] FILES...".into(),
        });
    }
    Ok(Invocation::Slt(Box::new(a)))
}

/// The command that reruns one file of one seed.
pub fn replay(p: &SltParams, file: &Path) -> String {
    let mut cmd = format!(
        "cargo xtask slt --seed {} --bug {} --mode {}",
        p.seed,
        p.run.bug(),
        p.run.mode()
    );
    cmd.push_str(&kill_flags(p));
    cmd.push(' ');
    cmd.push_str(&file.display().to_string());
    cmd
}

/// The kill flags that give `p` (empty without kills), each with a leading space.
pub fn kill_flags(p: &SltParams) -> String {
    if !p.kill {
        return String::new();
    }
    let mut out = String::new();
    if p.kill_roles == KillRoles::ALL {
        out.push_str(" --kill");
    } else {
        for (on, flag) in [
            (p.kill_roles.frontend, " --kill-frontend"),
            (p.kill_roles.compute, " --kill-compute"),
            (p.kill_roles.compactor, " --kill-compactor"),
        ] {
            if on {
                out.push_str(flag);
            }
        }
    }
    out.push_str(&format!(
        " --kill-rate {} --background-ddl-rate {}",
        p.kill_rate, p.background_ddl_rate
    ));
    if p.runner != RunnerEra::default() {
        out.push_str(&format!(" --runner {}", p.runner.as_str()));
    }
    out
}

/// Why `epochlab slt` could not run: bad input.
#[derive(Debug, thiserror::Error)]
pub enum SltRunError {
    #[error(transparent)]
    File(#[from] SltError),
    #[error("cannot write {path}: {why}")]
    Write { path: String, why: String },
    #[error("traces: {0}")]
    Traces(String),
}

/// Run every file; the exit status (0 passed, 1 a file failed or got stuck).
pub fn run(a: &SltArgs) -> Result<u8, SltRunError> {
    // Every file is read before any runs: a malformed one is bad input, not a failure halfway.
    for f in &a.files {
        epochlab_sql::runner::parse_file(f, &a.params)?;
    }
    let export = match &a.otlp_endpoint {
        Some(_) => Some(ExportRuntime::start().map_err(SltRunError::Traces)?),
        None => None,
    };
    let mut failed = false;
    for (i, file) in a.files.iter().enumerate() {
        let tracer = match (&a.otlp_endpoint, &export) {
            (Some(endpoint), Some(rt)) => {
                let mode = a.params.run.mode().as_str();
                let attributes = vec![
                    KeyValue::new("service.instance.id", instance_id(mode, a.params.seed)),
                    KeyValue::new("epochlab.seed", a.params.seed as i64),
                    KeyValue::new("epochlab.mode", mode),
                    KeyValue::new("epochlab.scenario", "slt"),
                    KeyValue::new("epochlab.file", file.display().to_string()),
                ];
                Some(RunTracer::start(endpoint, attributes, rt).map_err(SltRunError::Traces)?)
            }
            _ => None,
        };
        let log_file = match &a.log_file {
            Some(path) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| SltRunError::Write {
                        path: path.display().to_string(),
                        why: e.to_string(),
                    })?,
            ),
            None => None,
        };
        let hooks = ReproHooks {
            tracing_layer: run_layer_to(tracer.as_ref(), log_file),
            ..Default::default()
        };
        let wall = WallTimer::start();
        let out = run_file(file, &a.params, hooks)?;
        let wall_ms = wall.elapsed().as_millis() as u64;
        if let Some(t) = tracer
            && let Err(e) = t.finish()
        {
            eprintln!("epochlab slt: {}: traces: {e}", file.display());
        }
        if let Some(path) = &a.event_log {
            let path = if a.files.len() == 1 {
                path.clone()
            } else {
                PathBuf::from(format!("{}.{}", path.display(), i + 1))
            };
            crate::repro::write_event_log(&path, &out.log.lines()).map_err(|e| {
                SltRunError::Write {
                    path: path.display().to_string(),
                    why: e.to_string(),
                }
            })?;
        }
        let r = &out.value;
        failed |= r.outcome != Outcome::Passed;
        let virtual_ms = out.virtual_elapsed.as_millis() as u64;
        if a.json {
            let row = json_row(&a.params, file, r, &out.digest, virtual_ms, wall_ms);
            outln!("{row}");
        } else {
            print_report(&a.params, file, r, virtual_ms, wall_ms);
        }
    }
    Ok(u8::from(failed))
}

fn json_row(
    p: &SltParams,
    file: &Path,
    r: &FileReport,
    digest: &str,
    virtual_ms: u64,
    wall_ms: u64,
) -> String {
    let failure = r.failure.as_ref().map(|f| {
        serde_json::json!({
            "file": f.file, "line": f.line, "sql": f.sql, "expected": f.expected, "actual": f.actual,
        })
    });
    let violations: Vec<serde_json::Value> = r
        .violations
        .iter()
        .map(|v| serde_json::json!({"invariant": v.invariant, "detail": v.detail}))
        .collect();
    serde_json::json!({
        "file": file.display().to_string(),
        "seed": p.seed,
        "bug": p.run.bug().as_str(),
        "mode": p.run.mode().as_str(),
        "kill": p.kill,
        "kill_roles": {
            "frontend": p.kill && p.kill_roles.frontend,
            "compute": p.kill && p.kill_roles.compute,
            "compactor": p.kill && p.kill_roles.compactor,
            "meta": false,
        },
        "runner": p.runner.as_str(),
        "skipped": r.skipped,
        "kill_rate": p.kill_rate,
        "background_ddl_rate": p.background_ddl_rate,
        "outcome": r.outcome.as_str(),
        "kind": r.kind,
        "error": r.error,
        "failure": failure,
        "signature": r.signature(),
        "records": r.records,
        "killers": r.killers,
        "kills": r.kills,
        "retries": r.retries,
        "recoveries": r.recoveries,
        "epochs": r.epochs,
        "violations": violations,
        "notes": r.notes,
        "digest": digest,
        "virtual_ms": virtual_ms,
        "wall_ms": wall_ms,
        "replay": replay(p, file),
    })
    .to_string()
}

fn print_report(p: &SltParams, file: &Path, r: &FileReport, virtual_ms: u64, wall_ms: u64) {
    outln!(
        "{}  {}  records={} killers={} kills={} retries={} recoveries={} virtual={:.1}s wall={:.2}s",
        file.display(),
        if r.skipped {
            "passed (skipped: in KILL_IGNORE_FILES)"
        } else {
            r.outcome.as_str()
        },
        r.records,
        r.killers,
        r.kills,
        r.retries,
        r.recoveries,
        virtual_ms as f64 / 1000.0,
        wall_ms as f64 / 1000.0
    );
    if r.outcome != Outcome::Passed {
        if let Some(f) = &r.failure {
            outln!("  record {f}");
        }
        if let Some(e) = r.error.as_ref().filter(|_| r.kind != Some("record")) {
            outln!("  {}: {e}", r.kind.unwrap_or(r.outcome.as_str()));
        }
        for v in r.violations.iter().take(5) {
            outln!("  violation {v}");
        }
        outln!("  replay: {}", replay(p, file));
    }
    for n in &r.notes {
        outln!("  note: {n}");
    }
}

/// `epochlab soak --slt GLOB`: the files, and how each seed runs them.
#[derive(Clone, Debug, PartialEq)]
pub struct SltCampaign {
    /// As given (a glob or a file).
    pub pattern: String,
    pub files: Vec<PathBuf>,
    /// The settings of every run; the seed is each run's own.
    pub params: SltParams,
}

impl SltCampaign {
    /// The campaign key: the pattern and the settings, without the seed.
    pub fn key(&self) -> String {
        let p = &self.params;
        let mut key = format!(
            "scenario=slt --slt {} --bug {} --mode {} --kill {} --kill-rate {} --background-ddl-rate {}",
            self.pattern,
            p.run.bug(),
            p.run.mode(),
            p.kill,
            p.kill_rate,
            p.background_ddl_rate
        );
        // Kept as before for the default roles and runner, so that older results files still resume.
        if p.kill && (p.kill_roles != KillRoles::ALL || p.runner != RunnerEra::default()) {
            key.push_str(&kill_flags(p));
        }
        key
    }

    /// The soak command that replays one seed (every file).
    pub fn replay(&self, seed: u64) -> String {
        let p = &self.params;
        let mut cmd = format!(
            "cargo xtask soak --slt {} --bug {} --mode {}",
            shell_word(&self.pattern),
            p.run.bug(),
            p.run.mode()
        );
        cmd.push_str(&kill_flags(p));
        cmd.push_str(&format!(" --seeds {seed}..{}", seed + 1));
        cmd
    }

    /// Every file under `seed`, one after the other, each in its fresh cluster: one row. The first file that
    /// fails (or gets stuck) is the row's detail, with the command that replays that file alone.
    pub fn run_seed(
        &self,
        campaign: &str,
        seed: u64,
        hooks: ReproHooks,
        event_log: Option<&Path>,
    ) -> SeedRow {
        let wall = WallTimer::start();
        let p = SltParams {
            seed,
            ..self.params.clone()
        };
        let mut hooks = Some(hooks);
        let (mut digests, mut virtual_ms) = (Vec::new(), 0u64);
        let mut verdict: Option<(String, Option<String>, String, Option<String>)> = None;
        let (mut recoveries, mut kills) = (0u64, 0u32);
        for file in &self.files {
            // The metrics hook (one cluster at a time) goes to the first file's run.
            let h = hooks.take().unwrap_or_default();
            let out = match run_file(file, &p, h) {
                Ok(out) => out,
                Err(e) => {
                    verdict = Some(("failed".into(), Some("record".into()), e.to_string(), None));
                    break;
                }
            };
            if let Some(path) = event_log {
                let _ = crate::repro::write_event_log(path, &out.log.lines());
            }
            digests.push(out.digest.clone());
            virtual_ms += out.virtual_elapsed.as_millis() as u64;
            let r = out.value;
            recoveries += r.recoveries;
            kills += r.kills;
            if r.outcome != Outcome::Passed && verdict.is_none() {
                let at = match &r.failure {
                    Some(f) => format!("{}:{}", f.file, f.line),
                    None => file.display().to_string(),
                };
                let error = r.error.as_deref().unwrap_or("");
                // A record's error starts with its place already.
                let error = match error.strip_prefix(&at) {
                    Some(rest) => rest.trim_start_matches(": ").to_string(),
                    None => error.to_string(),
                };
                let detail = format!("{at}: {error}; replay this file: {}", replay(&p, file));
                verdict = Some((
                    r.outcome.as_str().into(),
                    r.kind.map(str::to_string),
                    detail,
                    r.signature(),
                ));
            }
        }
        let (outcome, kind, detail, signature) = verdict.unwrap_or_else(|| {
            (
                "passed".into(),
                None,
                format!(
                    "{} files, {kills} nodes killed, {recoveries} recoveries",
                    self.files.len()
                ),
                None,
            )
        });
        SeedRow {
            version: RESULTS_VERSION,
            campaign: campaign.to_string(),
            seed,
            bug: p.run.bug().as_str().to_string(),
            mode: p.run.mode().as_str().to_string(),
            scenario: "slt".into(),
            outcome,
            kind,
            detail: Some(detail),
            signature,
            digest: combine(&digests),
            virtual_ms,
            wall_ms: wall.elapsed().as_millis() as u64,
            replay: self.replay(seed),
        }
    }
}

/// `soak --slt GLOB [--kill] [--kill-rate F] [--background-ddl-rate F]`: the campaign's scenario.
pub fn soak_scenario(
    values: &std::collections::BTreeMap<&'static str, String>,
    bug: BugId,
    mode: Mode,
) -> Result<crate::soak::Scenario, ArgError> {
    // A replay command (`soak --replay`) splits at spaces without a shell: its pattern keeps its quotes.
    let pattern = values.get("--slt").cloned().unwrap_or_default();
    let pattern = pattern.trim_matches('\'').to_string();
    let files = expand(&pattern)?;
    let roles = if values.contains_key("--kill") {
        KillRoles::ALL
    } else {
        KillRoles {
            frontend: values.contains_key("--kill-frontend"),
            compute: values.contains_key("--kill-compute"),
            compactor: values.contains_key("--kill-compactor"),
        }
    };
    let kill = roles.any();
    let runner = match values.get("--runner") {
        Some(_) if !kill => {
            return Err(ArgError::Pointless {
                flag: "--runner",
                reason: "with --slt needs --kill or a --kill-ROLE flag",
            });
        }
        Some(v) => v.parse().map_err(|_| ArgError::NotARunner(v.clone()))?,
        None => RunnerEra::default(),
    };
    let rate = |flag: &'static str, default: f64| -> Result<f64, ArgError> {
        match values.get(flag) {
            Some(_) if !kill => Err(ArgError::Pointless {
                flag,
                reason: "with --slt needs --kill (RisingWave's runner reads it only when it kills)",
            }),
            Some(v) => probability(flag, v),
            None => Ok(default),
        }
    };
    let params = SltParams {
        run: BugMode::new(bug, mode).map_err(ArgError::NotAModeOfTheBug)?,
        kill,
        kill_roles: roles,
        runner,
        kill_rate: rate("--kill-rate", 1.0)?,
        background_ddl_rate: rate("--background-ddl-rate", 0.0)?,
        ..SltParams::default()
    };
    // Every file is read before any seed runs: a missing or malformed one is bad input, as for `slt`.
    for f in &files {
        epochlab_sql::runner::parse_file(f, &params).map_err(|e| ArgError::SltFiles {
            pattern: pattern.clone(),
            why: e.to_string(),
        })?;
    }
    Ok(crate::soak::Scenario::Slt(Box::new(SltCampaign {
        pattern,
        files,
        params,
    })))
}

/// `pattern` as one shell word: quoted when it has glob characters or spaces.
fn shell_word(pattern: &str) -> String {
    if pattern.contains(['*', '?', '[', ' ']) {
        format!("'{pattern}'")
    } else {
        pattern.to_string()
    }
}

/// One digest for several runs (FNV-1a over theirs, in order).
fn combine(digests: &[String]) -> String {
    if let [one] = digests {
        return one.clone();
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for d in digests {
        for b in d.bytes().chain([b'\n']) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Result<Invocation, ArgError> {
        parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn kill_defaults_follow_risingwave() {
        let Ok(Invocation::Slt(a)) = args(&["--kill", "x.slt"]) else {
            panic!("parses")
        };
        assert!(a.params.kill);
        assert_eq!(a.params.kill_rate, 1.0);
        assert_eq!(a.params.background_ddl_rate, 0.0);
        assert!(matches!(
            args(&["--kill-rate", "0.5", "x.slt"]),
            Err(ArgError::Pointless { .. })
        ));
        assert!(matches!(
            args(&["--seed", "1"]),
            Err(ArgError::SltFiles { .. })
        ));
        assert!(matches!(
            args(&["--mode", "purge-before-reset", "--bug", "22384", "x.slt"]),
            Err(ArgError::NotAModeOfTheBug(_))
        ));
        assert!(matches!(
            args(&["--kill", "--kill", "x.slt"]),
            Err(ArgError::Repeated("--kill"))
        ));
    }

    #[test]
    fn role_flags_and_the_runner_parse_and_replay() {
        let Ok(Invocation::Slt(a)) = args(&["--kill-frontend", "--kill-compactor", "x.slt"]) else {
            panic!("parses")
        };
        assert!(a.params.kill);
        assert_eq!(
            a.params.kill_roles,
            KillRoles {
                frontend: true,
                compute: false,
                compactor: true
            }
        );
        assert_eq!(a.params.runner, RunnerEra::R2024);
        assert!(replay(&a.params, Path::new("x.slt")).contains(
            "--kill-frontend --kill-compactor --kill-rate 1 --background-ddl-rate 0 x.slt"
        ));
        let Ok(Invocation::Slt(a)) =
            args(&["--kill", "--kill-compute", "--runner=latest", "x.slt"])
        else {
            panic!("parses")
        };
        assert_eq!(a.params.kill_roles, KillRoles::ALL);
        assert!(replay(&a.params, Path::new("x.slt")).ends_with("--runner latest x.slt"));
        assert!(matches!(
            args(&["--kill", "--runner", "2025", "x.slt"]),
            Err(ArgError::NotARunner(_))
        ));
    }

    #[test]
    fn a_replay_names_the_file_and_the_kill_settings() {
        let p = SltParams {
            seed: 7,
            kill: true,
            ..SltParams::default()
        };
        assert_eq!(
            replay(&p, Path::new("tests/slt/a.slt")),
            "cargo xtask slt --seed 7 --bug 14910 --mode fixed --kill --kill-rate 1 --background-ddl-rate 0 tests/slt/a.slt"
        );
    }
}
