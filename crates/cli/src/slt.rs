//! `epochlab slt FILES...`: sqllogictest files, each in a fresh simulated cluster, with RisingWave's simulation
//! runner's kill mode; and the files of `epochlab soak --slt GLOB`, run under each seed.

use std::path::{Path, PathBuf};

use epochlab_sim::{BugId, BugMode, Mode, Outcome, ReproHooks};
use epochlab_simulation::{FileReport, KillRoles, RunnerEra, SltError, SltParams, run_file};
use epochlab_telemetry::{
    ExportRuntime, KeyValue, RunTracer, WallTimer, instance_id, run_layer_to,
};

use crate::command::{CheckError, KillChoice};
use crate::soak::{RESULTS_VERSION, SeedRow};

/// `epochlab slt`'s arguments.
#[derive(Clone, Debug)]
pub struct SltArgs {
    pub files: Vec<PathBuf>,
    pub params: SltParams,
    pub json: bool,
    pub event_log: Option<PathBuf>,
    pub meta_store_out: Option<PathBuf>,
    pub log_file: Option<PathBuf>,
    pub otlp_endpoint: Option<String>,
    /// `--use-arrangement-backfill`: printed, reaching no file
    /// ([`epochlab_simulation::ci::USE_ARRANGEMENT_BACKFILL`]).
    pub use_arrangement_backfill: bool,
}

/// The files a pattern names: itself when it has no glob characters, else its matches in order.
pub fn expand(pattern: &str) -> Result<Vec<PathBuf>, CheckError> {
    if !pattern.contains(['*', '?', '[']) {
        return Ok(vec![PathBuf::from(pattern)]);
    }
    let bad = |why: String| CheckError::SltFiles {
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

/// The command that reruns one file of one seed.
pub fn replay(p: &SltParams, file: &Path) -> String {
    let mut cmd = format!(
        "cargo xtask slt --seed {} --bug {} --mode {}",
        p.seed,
        p.run.bug(),
        p.run.mode()
    );
    cmd.push_str(&kill_flags(p));
    if let Some(point) = p.crash_meta_at {
        cmd.push_str(&format!(" --crash-meta-at {point}"));
    }
    cmd.push_str(&crate::command::topology::flags(p.topology));
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
            (p.kill_roles.meta, " --kill-meta"),
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
    #[error("cannot write the meta store to {path}: {why}")]
    MetaStoreOut { path: String, why: String },
    #[error("traces: {0}")]
    Traces(String),
}

/// Run every file; the exit status (0 passed, 1 a file failed or got stuck).
pub fn run(a: &SltArgs) -> Result<u8, SltRunError> {
    // Every file is read before any runs: a malformed one is bad input, not a failure halfway.
    for f in &a.files {
        epochlab_simulation::runner::parse_file(f, &a.params)?;
    }
    if a.use_arrangement_backfill {
        eprintln!(
            "epochlab slt: {}",
            epochlab_simulation::ci::USE_ARRANGEMENT_BACKFILL
        );
    }
    let export = match &a.otlp_endpoint {
        Some(_) => Some(ExportRuntime::start().map_err(SltRunError::Traces)?),
        None => None,
    };
    let file_of = |path: &PathBuf, i: usize| match a.files.len() {
        1 => path.clone(),
        _ => PathBuf::from(format!("{}.{}", path.display(), i + 1)),
    };
    if let Some(path) = &a.meta_store_out {
        for i in 0..a.files.len() {
            let path = file_of(path, i);
            std::fs::write(&path, b"").map_err(|e| SltRunError::MetaStoreOut {
                path: path.display().to_string(),
                why: e.to_string(),
            })?;
        }
    }
    let mut failed = false;
    for (i, file) in a.files.iter().enumerate() {
        let tracer = match (&a.otlp_endpoint, &export) {
            (Some(endpoint), Some(rt)) => Some(file_tracer(a, file, endpoint, rt)?),
            _ => None,
        };
        let log_file = match &a.log_file {
            Some(path) => Some(open_log_file(path)?),
            None => None,
        };
        let store_out = crate::store_out::StoreOut::default();
        let hooks = ReproHooks {
            tracing_layer: run_layer_to(tracer.as_ref(), log_file),
            on_cluster: a.meta_store_out.as_ref().map(|_| store_out.hook(None)),
            ..Default::default()
        };
        let wall = WallTimer::start();
        let out = run_file(file, &a.params, hooks)?;
        if let Some(path) = &a.meta_store_out {
            let path = file_of(path, i);
            store_out
                .write(&path, "slt")
                .map_err(|e| SltRunError::MetaStoreOut {
                    path: path.display().to_string(),
                    why: e.to_string(),
                })?;
        }
        let wall_ms = wall.elapsed().as_millis() as u64;
        if let Some(t) = tracer
            && let Err(e) = t.finish()
        {
            eprintln!("epochlab slt: {}: traces: {e}", file.display());
        }
        if let Some(path) = &a.event_log {
            let path = file_of(path, i);
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

/// The exporter of one file's trace, its resource naming the run.
fn file_tracer(
    a: &SltArgs,
    file: &Path,
    endpoint: &str,
    rt: &ExportRuntime,
) -> Result<RunTracer, SltRunError> {
    let mode = a.params.run.mode().as_str();
    let attributes = vec![
        KeyValue::new("service.instance.id", instance_id(mode, a.params.seed)),
        KeyValue::new("epochlab.seed", a.params.seed as i64),
        KeyValue::new("epochlab.mode", mode),
        KeyValue::new("epochlab.scenario", "slt"),
        KeyValue::new("epochlab.file", file.display().to_string()),
    ];
    RunTracer::start(endpoint, attributes, rt).map_err(SltRunError::Traces)
}

/// `--log-file`, opened for appending (each file's run adds its lines).
fn open_log_file(path: &Path) -> Result<std::fs::File, SltRunError> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| SltRunError::Write {
            path: path.display().to_string(),
            why: e.to_string(),
        })
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
            "meta": p.kill && p.kill_roles.meta,
        },
        "crash_meta_at": p.crash_meta_at.map(|c| c.as_str()),
        "meta_nodes": p.topology.meta_nodes,
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
        "meta_leader_changes": r.meta_leader_changes,
        "epochs": r.epochs,
        "violations": violations,
        "notes": r.notes,
        "meta_crashes": r.meta_crashes,
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
    for crash in &r.meta_crashes {
        outln!("  {crash}");
    }
    if r.meta_leader_changes > 0 {
        outln!("  meta's leader changed {} time(s)", r.meta_leader_changes);
    }
    if let Some(point) = p.crash_meta_at.filter(|_| r.meta_crashes.is_empty()) {
        outln!("  meta never crashed: no DDL reached {point}");
    }
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
        // Since issue 56's flip (--kill kills metas, three of them): older keys name other runs.
        key.push_str(&format!(" --meta-nodes {}", p.topology.meta_nodes));
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
        let mut verdict: Option<Verdict> = None;
        let (mut recoveries, mut kills) = (0u64, 0u32);
        for file in &self.files {
            // The metrics hook (one cluster at a time) goes to the first file's run.
            let h = hooks.take().unwrap_or_default();
            let out = match run_file(file, &p, h) {
                Ok(out) => out,
                Err(e) => {
                    verdict = Some(Verdict::bad_record(&e));
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
                verdict = Some(Verdict::of_failed_file(&p, file, &r));
            }
        }
        let Verdict {
            outcome,
            kind,
            detail,
            signature,
        } = verdict.unwrap_or_else(|| Verdict::passed(self.files.len(), kills, recoveries));
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

/// A seed's row as its files' runs decide it: the first file that fails, or every file passed.
struct Verdict {
    outcome: String,
    kind: Option<String>,
    detail: String,
    signature: Option<String>,
}

impl Verdict {
    /// Every one of `files` passed.
    fn passed(files: usize, kills: u32, recoveries: u64) -> Self {
        Verdict {
            outcome: "passed".into(),
            kind: None,
            detail: format!("{files} files, {kills} nodes killed, {recoveries} recoveries"),
            signature: None,
        }
    }

    /// A file could not run: a record the runner cannot read.
    fn bad_record(e: &SltError) -> Self {
        Verdict {
            outcome: "failed".into(),
            kind: Some("record".into()),
            detail: e.to_string(),
            signature: None,
        }
    }

    /// The seed failed at `file` (report `r`): where, why, and the command that replays that file alone.
    fn of_failed_file(p: &SltParams, file: &Path, r: &FileReport) -> Self {
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
        Verdict {
            outcome: r.outcome.as_str().into(),
            kind: r.kind.map(str::to_string),
            detail: format!("{at}: {error}; replay this file: {}", replay(p, file)),
            signature: r.signature(),
        }
    }
}

/// `soak --slt GLOB [--kill] [--kill-rate F] [--background-ddl-rate F]`: the campaign's scenario.
pub fn soak_scenario(
    pattern: &str,
    kills: &KillChoice,
    bug: BugId,
    mode: Mode,
) -> Result<crate::soak::Scenario, CheckError> {
    // A replay command (`soak --replay`) splits at spaces without a shell: its pattern keeps its quotes.
    let pattern = pattern.trim_matches('\'').to_string();
    let files = expand(&pattern)?;
    let defaults = SltParams::default();
    let params = kills.apply(SltParams {
        run: BugMode::new(bug, mode).map_err(CheckError::NotAModeOfTheBug)?,
        topology: epochlab_sim::config::Topology {
            meta_nodes: epochlab_sim::config::DEFAULT_META_NODES,
            ..defaults.topology
        },
        ..defaults
    })?;
    // Every file is read before any seed runs: a missing or malformed one is bad input, as for `slt`.
    for f in &files {
        epochlab_simulation::runner::parse_file(f, &params).map_err(|e| CheckError::SltFiles {
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
    use epochlab_sim::config::Topology;

    #[test]
    fn a_replay_names_the_file_and_the_kill_settings() {
        let p = SltParams {
            seed: 7,
            kill: true,
            topology: Topology::RISINGWAVE_CI,
            ..SltParams::default()
        };
        assert_eq!(
            replay(&p, Path::new("tests/slt/a.slt")),
            "cargo xtask slt --seed 7 --bug 14910 --mode fixed --kill --kill-rate 1 --background-ddl-rate 0 tests/slt/a.slt"
        );
        // A cluster other than `slt`'s default (RisingWave's CI) is in the replay: `soak --slt` and `corpus` run
        // epochlab's single-core cluster, with three metas.
        let single = SltParams {
            topology: Topology {
                meta_nodes: 3,
                ..Topology::SINGLE_CORE
            },
            ..p.clone()
        };
        assert!(replay(&single, Path::new("tests/slt/a.slt")).ends_with(
            " --background-ddl-rate 0 --frontend-nodes 1 --compute-node-cores 1 --compactor-nodes 1 tests/slt/a.slt"
        ));
        let one_meta = SltParams {
            topology: Topology {
                meta_nodes: 1,
                ..Topology::RISINGWAVE_CI
            },
            ..p
        };
        let replayed = replay(&one_meta, Path::new("a.slt"));
        assert!(replayed.ends_with(" --meta-nodes 1 a.slt"), "{replayed}");
    }
}
