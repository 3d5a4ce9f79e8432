//! `epochlab ci --profile backfill-tests`: RisingWave's `ci/scripts/run-backfill-tests.sh` at f21fb9b7915, its
//! functions in the order of its `main` ([`epochlab_simulation::runner::backfill`]), each on each seed: a line
//! per (function, seed), the functions not run with what they need, the totals. `--log-dir` keeps the log of
//! each (function, seed) that failed or got stuck, triaged; `--junit` writes one suite, a case per (function,
//! seed) and one per function not run.

use std::path::{Path, PathBuf};

use epochlab_sim::{BugId, ReproHooks};
use epochlab_simulation::runner::backfill::{
    BackfillError, BackfillFn, FUNCTIONS, FunctionReport, SCRIPT, SQL_ROOT, run_function,
};
use epochlab_telemetry::run_layer_scoped;

use super::junit::{Case, CaseOutcome};
use super::log::{self, BoundedLog};
use super::{CiArgs, CiError};

/// Run every function of the script on every seed; 1 when one failed or got stuck.
pub(super) fn run(a: &CiArgs) -> Result<u8, CiError> {
    let sql_root = Path::new(SQL_ROOT);
    if let Some(dir) = &a.log_dir {
        super::writable_dir(dir)?;
    }
    if let Some(path) = &a.junit {
        super::writable_file(path)?;
    }
    eprintln!(
        "ci: profile backfill-tests ({SCRIPT}, as main-cron runs it with profile=ci-release), seeds {}..{}",
        a.seeds.start, a.seeds.end
    );
    outln!("{:<56} {:>6}  result", "function", "seed");
    let (mut ran, mut bad) = (0u32, 0u32);
    let mut not_run = Vec::new();
    let mut cases = Vec::new();
    for f in &FUNCTIONS {
        for seed in a.seeds.clone() {
            // run_function decides what runs: a function that needs what epochlab lacks says so once.
            let run = match run_logged(a, sql_root, f, seed) {
                Ok(run) => run,
                Err(BackfillError::Needs { needs, .. }) => {
                    not_run.push(format!("{}: needs {needs}", f.name));
                    cases.push(Case {
                        name: format!("{} (not run)", f.name),
                        outcome: CaseOutcome::Skipped(format!("not run: needs {needs}")),
                    });
                    break;
                }
                Err(e) => return Err(CiError::Backfill(e)),
            };
            eprintln!("ci: {} seed {seed} done", f.name);
            ran += 1;
            bad += u32::from(run.failed());
            outln!("{:<56} {seed:>6}  {}", f.name, run.line());
            cases.push(run.case(f, seed, a));
        }
    }
    outln!();
    outln!(
        "{ran} run(s), {} failed or stuck; {} of {} function(s) not run:",
        bad,
        not_run.len(),
        FUNCTIONS.len()
    );
    for line in &not_run {
        outln!("  {line}");
    }
    if let Some(path) = &a.junit {
        let xml = super::junit::suites_document(
            "epochlab ci --profile backfill-tests",
            &[("backfill-tests", cases)],
        );
        std::fs::write(path, xml).map_err(|e| CiError::Write {
            path: path.display().to_string(),
            why: e.to_string(),
        })?;
        outln!("wrote {}", path.display());
    }
    Ok(u8::from(bad > 0))
}

/// One (function, seed) that ran: its report, and its kept log with the bugs triage found in it.
struct FunctionRun {
    report: FunctionReport,
    log: Option<PathBuf>,
    triage: Vec<BugId>,
}

impl FunctionRun {
    fn failed(&self) -> bool {
        matches!(self.report.outcome(), "failed" | "stuck")
    }

    /// The run in one line: its outcome, what psql printed of errors, why it failed or is unsupported,
    /// and its kept log.
    fn line(&self) -> String {
        let r = &self.report;
        let mut line = format!(
            "{} ({} statement(s), {} psql error(s))",
            r.outcome(),
            r.statements,
            r.psql_errors.len()
        );
        line.push_str(&why(r).map(|w| format!(": {w}")).unwrap_or_default());
        if let Some(log) = &self.log {
            line.push_str(&format!("; log {}", log.display()));
            if !self.triage.is_empty() {
                let bugs: Vec<String> = self.triage.iter().map(|b| format!("#{b}")).collect();
                line.push_str(&format!(" (triage: {})", bugs.join(", ")));
            }
        }
        line
    }

    /// The JUnit case: a failure when it failed or got stuck, skipped when a statement was unsupported.
    fn case(&self, f: &BackfillFn, seed: u64, a: &CiArgs) -> Case {
        let r = &self.report;
        let outcome = match r.outcome() {
            "passed" => CaseOutcome::Passed,
            "unsupported" => CaseOutcome::Skipped(why(r).unwrap_or_default()),
            kind => {
                let message = why(r).unwrap_or_else(|| kind.to_string());
                let mut text = message.clone();
                for e in &r.psql_errors {
                    text.push_str(&format!("\n{e}"));
                }
                text.push_str(&format!(
                    "\nreplay: cargo xtask ci --profile backfill-tests --seeds {seed}..{} --bug {} --mode {}",
                    seed + 1,
                    a.run.bug().as_str(),
                    a.run.mode().as_str()
                ));
                CaseOutcome::Failed {
                    kind: kind.to_string(),
                    message,
                    text,
                }
            }
        };
        Case {
            name: format!("{} (seed {seed})", f.name),
            outcome,
        }
    }
}

/// Why a run failed (the cluster's error) or is unsupported (the statement refused).
fn why(r: &FunctionReport) -> Option<String> {
    match (&r.report.error, &r.unsupported) {
        (Some(error), _) => Some(error.clone()),
        (None, Some(construct)) => Some(format!("unsupported: {construct}")),
        (None, None) => None,
    }
}

/// Run one (function, seed), its log written to `--log-dir` and kept only when it failed or got stuck.
fn run_logged(
    a: &CiArgs,
    sql_root: &Path,
    f: &BackfillFn,
    seed: u64,
) -> Result<FunctionRun, BackfillError> {
    let path = a
        .log_dir
        .as_ref()
        .map(|d| d.join(format!("backfill-tests-{}-{seed}.log", f.name)));
    let log_file = path
        .as_ref()
        .and_then(|p| BoundedLog::create(p, log::HEAD, log::TAIL).ok());
    let hooks = ReproHooks {
        tracing_layer: run_layer_scoped(None, log_file.clone(), super::LOG_SCOPE),
        ..Default::default()
    };
    let out = run_function(sql_root, f, seed, a.run, hooks);
    let report = match out {
        Ok(out) => out.value,
        Err(e) => {
            if let Some(p) = &path {
                let _ = std::fs::remove_file(p);
            }
            return Err(e);
        }
    };
    let mut run = FunctionRun {
        report,
        log: None,
        triage: Vec::new(),
    };
    if let Some(p) = path {
        if run.failed() {
            super::finish(&p, log_file.as_ref());
            let text = run.line();
            super::append(
                &p,
                &format!("epochlab ci: {} seed {seed}: {text}\n", f.name),
            );
            run.triage = super::triage(&p);
            run.log = Some(p);
        } else {
            let _ = std::fs::remove_file(&p);
        }
    }
    Ok(run)
}
