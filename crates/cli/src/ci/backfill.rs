//! `epochlab ci --profile backfill-tests`: RisingWave's `ci/scripts/run-backfill-tests.sh` at f21fb9b7915, its
//! functions in the order of its `main` ([`epochlab_simulation::runner::backfill`]), each on each seed: a line
//! per (function, seed), the functions not run with what they need, the totals.

use std::path::Path;

use epochlab_sim::ReproHooks;
use epochlab_simulation::runner::backfill::{
    BackfillError, FUNCTIONS, FunctionReport, SCRIPT, SQL_ROOT, run_function,
};

use super::{CiArgs, CiError};

/// Run every function of the script on every seed; 1 when one failed or got stuck.
pub(super) fn run(a: &CiArgs) -> Result<u8, CiError> {
    let sql_root = Path::new(SQL_ROOT);
    eprintln!(
        "ci: profile backfill-tests ({SCRIPT}, as main-cron runs it with profile=ci-release), seeds {}..{}",
        a.seeds.start, a.seeds.end
    );
    outln!("{:<56} {:>6}  result", "function", "seed");
    let (mut ran, mut bad) = (0u32, 0u32);
    let mut not_run = Vec::new();
    for f in &FUNCTIONS {
        for seed in a.seeds.clone() {
            // run_function decides what runs: a function that needs what epochlab lacks says so once.
            let out = match run_function(sql_root, f, seed, a.run, ReproHooks::default()) {
                Ok(out) => out.value,
                Err(BackfillError::Needs { needs, .. }) => {
                    not_run.push(format!("{}: needs {needs}", f.name));
                    break;
                }
                Err(e) => return Err(CiError::Backfill(e)),
            };
            eprintln!("ci: {} seed {seed} done", f.name);
            ran += 1;
            if matches!(out.outcome(), "failed" | "stuck") {
                bad += 1;
            }
            outln!("{:<56} {seed:>6}  {}", f.name, describe(&out));
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
    Ok(u8::from(bad > 0))
}

/// A run in one line: its outcome, what psql printed of errors, and why it failed or is unsupported.
fn describe(r: &FunctionReport) -> String {
    let mut line = format!(
        "{} ({} statement(s), {} psql error(s))",
        r.outcome(),
        r.statements,
        r.psql_errors.len()
    );
    if let Some(error) = &r.report.error {
        line.push_str(&format!(": {error}"));
    } else if let Some(construct) = &r.unsupported {
        line.push_str(&format!(": unsupported: {construct}"));
    }
    line
}
