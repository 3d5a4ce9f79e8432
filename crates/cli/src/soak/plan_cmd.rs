//! `--plan FILE` (run one plan file) and `--shrink` (shrink a failing plan to the steps that matter and
//! write it as a plan file).

use epochlab_sim::workload::{Expected, PlanFile, PlanFileError, shrink};
use epochlab_sim::{Outcome, ReproHooks};

use super::{RunSpec, Scenario, SeedRow, SoakArgs, SoakError, Triage};

/// Plan runs a shrink may take, at most.
pub const SHRINK_MAX_RUNS: u32 = 400;

/// The run of `--plan FILE`: the file's plan, in `--mode` if given, else the file's mode, else `fixed`; and
/// what the file expects of it (an expectation holds only in the file's own mode).
pub fn spec_of_plan_file(args: &SoakArgs) -> Result<(RunSpec, Option<Expected>), PlanFileError> {
    let path = args.plan.as_ref().expect("called with --plan");
    let file = PlanFile::load(path)?;
    let own = file.mode().expect("load checked the mode");
    let given = args.mode_given.then_some(args.params.mode);
    let run = file.run(given).map_err(|source| PlanFileError::Bug {
        path: path.display().to_string(),
        source,
    })?;
    let expected = file.expect.filter(|_| own.is_none_or(|m| m == run.mode()));
    let spec = RunSpec::Plan {
        plan: Box::new(file.plan),
        run,
        path: path.display().to_string(),
    };
    Ok((spec, expected))
}

/// `--plan FILE`: run it once (or shrink it), print the verdict, and compare with the file's expectation.
pub fn run_plan_file(args: &SoakArgs) -> Result<u8, SoakError> {
    let (spec, expected) = spec_of_plan_file(args)?;
    if args.shrink {
        return shrink_spec(args, &spec);
    }
    let path = args.plan.as_ref().expect("called with --plan");
    let store_error = |out: &std::path::Path, detail: String| SoakError::WriteMetaStore {
        path: out.display().to_string(),
        detail,
    };
    if let Some(out) = &args.meta_store_out {
        std::fs::write(out, b"").map_err(|e| store_error(out, e.to_string()))?;
    }
    let store_out = crate::store_out::StoreOut::default();
    // One run: RUST_LOG shows its log lines.
    let hooks = ReproHooks {
        on_cluster: args.meta_store_out.as_ref().map(|_| store_out.hook(None)),
        tracing_layer: epochlab_telemetry::run_layer(None),
        meta_store: args.meta_store,
        ..Default::default()
    };
    let campaign = format!("plan={}", path.display());
    let row = spec.run(&campaign, hooks, args.event_log.as_deref());
    if let Some(out) = &args.meta_store_out {
        store_out
            .write(out, "soak")
            .map_err(|e| store_error(out, e.to_string()))?;
    }
    if args.json {
        outln!("{}", serde_json::to_string(&row).expect("a row serializes"));
    }
    let differs = print_verdict(&row, expected.as_ref(), args.json);
    Ok(u8::from(row.outcome != "passed" || differs))
}

/// Prints the run's verdict; whether its outcome differs from the file's expectation (false without one).
fn print_verdict(row: &SeedRow, expected: Option<&Expected>, to_stderr: bool) -> bool {
    let mut text = format!(
        "plan (seed {}, mode {}): {}",
        row.seed, row.mode, row.outcome
    );
    if let Some(sig) = &row.signature {
        text.push_str(&format!("\n  signature: {sig}"));
    }
    if let Some(detail) = &row.detail {
        text.push_str(&format!("\n  detail: {detail}"));
    }
    let mut differs = false;
    if let Some(e) = expected {
        let same = e.outcome == row.outcome && e.signature == row.signature;
        differs = !same;
        let verdict = if same {
            "as expected"
        } else {
            "DIFFERS from the expected"
        };
        match &e.signature {
            Some(sig) => text.push_str(&format!("\n  {verdict}: {} ({sig})", e.outcome)),
            None => text.push_str(&format!("\n  {verdict}: {}", e.outcome)),
        }
    }
    text.push_str(&format!("\n  replay: {}", row.replay));
    if to_stderr {
        eprintln!("{text}");
    } else {
        outln!("{text}");
    }
    differs
}

/// `--shrink` after a campaign: shrink the lowest failing seed.
pub fn shrink_first_failure(args: &SoakArgs, triage: &Triage) -> Result<u8, SoakError> {
    let Some(seed) = triage.first_failure() else {
        outln!("shrink: every seed passed: nothing to shrink");
        return Ok(0);
    };
    debug_assert!(matches!(args.scenario, Scenario::Random(_)));
    shrink_spec(args, &args.spec(seed))
}

/// Shrink one failing run's plan; print the smallest plan and, on the last line, the path of its file.
fn shrink_spec(args: &SoakArgs, spec: &RunSpec) -> Result<u8, SoakError> {
    let plan = spec.plan().expect("only plan runs shrink");
    let mode = match spec {
        RunSpec::Random { run, .. } | RunSpec::Plan { run, .. } => *run,
        RunSpec::Directed(_) | RunSpec::Slt { .. } => unreachable!("only plan runs shrink"),
    };
    eprintln!(
        "shrink: seed {} ({} steps, mode {}), at most {SHRINK_MAX_RUNS} runs on {} threads",
        plan.seed,
        plan.steps.len(),
        mode.label(),
        args.jobs
    );
    let mut steps = plan.steps.len();
    let found = shrink(&plan, mode, args.jobs, SHRINK_MAX_RUNS, |p| {
        if p.steps.len() < steps {
            steps = p.steps.len();
            eprintln!("shrink: {steps} steps fail the same way");
        }
    });
    let Some(found) = found else {
        outln!(
            "shrink: the plan passes in mode {}: nothing to shrink",
            mode.label()
        );
        return Ok(0);
    };
    let outcome = if found.signature.starts_with("stuck") {
        Outcome::Stuck
    } else {
        Outcome::Failed
    };
    let mut file = PlanFile::new(found.plan.clone(), mode);
    file.caught = Some(format!("shrunk from `{}`", spec.replay()));
    file.expect = Some(Expected {
        outcome: outcome.as_str().to_string(),
        signature: Some(found.signature.clone()),
    });
    let path = shrunk_path(spec);
    std::fs::write(&path, file.to_json() + "\n").map_err(|source| SoakError::WritePlan {
        path: path.display().to_string(),
        source,
    })?;
    outln!(
        "shrink: {} steps -> {} steps in {} runs, still `{}`",
        found.steps_before,
        found.plan.steps.len(),
        found.runs,
        found.signature
    );
    out!("{}", found.plan.describe());
    outln!("replay: cargo xtask soak --plan {}", path.display());
    outln!("{}", path.display());
    Ok(1)
}

/// Where a shrunk plan goes: beside its plan file, or `shrunk-seed<N>-<mode>.json` in the current directory.
fn shrunk_path(spec: &RunSpec) -> std::path::PathBuf {
    match spec {
        RunSpec::Plan { path, .. } => {
            let p = std::path::Path::new(path);
            let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("plan");
            p.with_file_name(format!("{stem}.shrunk.json"))
        }
        _ => std::path::PathBuf::from(format!(
            "shrunk-seed{}-{}.json",
            spec.seed(),
            spec.mode().as_str()
        )),
    }
}
