//! RisingWave's recovery CI at f21fb9b7915 as data, and one (step, seed) of it run as the script ran it.
//!
//! `ci/scripts/deterministic-recovery-test.sh` runs five steps under `set -euo pipefail`; each step is
//! `seq $TEST_NUM | parallel MADSIM_TEST_SEED={} './risingwave_simulation --kill --kill-rate=${KILL_RATE}
//! [--background-ddl-rate=${BACKGROUND_DDL_RATE}] ${USE_ARRANGEMENT_BACKFILL:-} ./e2e_test/<glob>'`: one
//! simulation per seed, one cluster for every file of the glob, in the order the `glob` crate yields them,
//! a log per seed kept only when it fails. The workflows that call it set `TEST_NUM`, `KILL_RATE`,
//! `BACKGROUND_DDL_RATE` and `USE_ARRANGEMENT_BACKFILL` ([`PROFILES`]).

use std::path::{Path, PathBuf};

use epochlab_sim::config::Topology;
use epochlab_sim::{BugMode, ReproHooks, SimOutput};

use crate::runner::{RunnerEra, SltParams, StepReport, run_files};

/// The script every profile runs.
pub const SCRIPT: &str = "ci/scripts/deterministic-recovery-test.sh";

/// One step of the script: a glob under `e2e_test/`, run once per seed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CiStep {
    /// Its name as `--step` takes it.
    pub name: &'static str,
    /// Its log's stem: the script writes `$LOGDIR/<log>-<seed>.log`.
    pub log: &'static str,
    /// The glob the script passes, relative to `e2e_test/`.
    pub glob: &'static str,
    /// Whether the script passes `--background-ddl-rate` (the background-DDL and source steps run at the
    /// simulator's default, 0.0).
    pub background_ddl_rate: bool,
    /// What the step needs that epochlab does not have: the step is reported not run.
    pub needs: Option<&'static str>,
    /// The script's line that runs it.
    pub line: u32,
}

/// The script's steps, in its order.
pub const STEPS: [CiStep; 5] = [
    CiStep {
        name: "background-ddl",
        log: "recovery-background-ddl",
        glob: "background_ddl/sim/basic.slt",
        background_ddl_rate: false,
        needs: None,
        line: 45,
    },
    CiStep {
        name: "ddl",
        log: "recovery-ddl",
        glob: "ddl/**/*.slt",
        background_ddl_rate: true,
        needs: None,
        line: 53,
    },
    CiStep {
        name: "streaming",
        log: "recovery-streaming",
        glob: "streaming/**/*.slt",
        background_ddl_rate: true,
        needs: None,
        line: 61,
    },
    CiStep {
        name: "batch",
        log: "recovery-batch",
        glob: "batch/**/*.slt",
        background_ddl_rate: true,
        needs: None,
        line: 69,
    },
    CiStep {
        name: "source",
        log: "recovery-source",
        glob: "source/basic/kafka*.slt",
        background_ddl_rate: false,
        needs: Some("a Kafka source with split state (--kafka-datadir)"),
        line: 77,
    },
];

/// How a workflow calls the script.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CiProfile {
    /// Its name as `--profile` takes it.
    pub name: &'static str,
    /// The workflow and what it sets, as it reads.
    pub workflow: &'static str,
    /// `TEST_NUM`: the seeds are `seq $TEST_NUM`, 1..=TEST_NUM.
    pub test_num: u64,
    pub kill_rate: f64,
    pub background_ddl_rate: f64,
    /// `USE_ARRANGEMENT_BACKFILL=--use-arrangement-backfill`: no file of a step sees it
    /// ([`USE_ARRANGEMENT_BACKFILL`]), so this profile runs as its twin without it.
    pub use_arrangement_backfill: bool,
    /// The bound on the whole script (`timeout 55m` on main-cron; the step's 25 minutes on a PR).
    pub timeout_minutes: u64,
    /// Not run yet, and why.
    pub pending: Option<&'static str>,
}

/// The workflows' calls of the script at f21fb9b7915, and RisingWave's other recovery script.
pub const PROFILES: [CiProfile; 5] = [
    CiProfile {
        name: "pr",
        workflow: "ci/workflows/pull-request.yml:452: TEST_NUM=8 KILL_RATE=0.5 BACKGROUND_DDL_RATE=0.0",
        test_num: 8,
        kill_rate: 0.5,
        background_ddl_rate: 0.0,
        use_arrangement_backfill: false,
        timeout_minutes: 25,
        pending: None,
    },
    CiProfile {
        name: "main-cron",
        workflow: "ci/workflows/main-cron.yml:305: TEST_NUM=12 KILL_RATE=1.0 BACKGROUND_DDL_RATE=0.0",
        test_num: 12,
        kill_rate: 1.0,
        background_ddl_rate: 0.0,
        use_arrangement_backfill: false,
        timeout_minutes: 55,
        pending: None,
    },
    CiProfile {
        name: "main-cron-background-ddl",
        workflow: "ci/workflows/main-cron.yml:343: TEST_NUM=12 KILL_RATE=1.0 BACKGROUND_DDL_RATE=0.8",
        test_num: 12,
        kill_rate: 1.0,
        background_ddl_rate: 0.8,
        use_arrangement_backfill: false,
        timeout_minutes: 55,
        pending: None,
    },
    CiProfile {
        name: "main-cron-arrangement-backfill",
        workflow: "ci/workflows/main-cron.yml:324: TEST_NUM=12 KILL_RATE=1.0 BACKGROUND_DDL_RATE=0.8 \
                   USE_ARRANGEMENT_BACKFILL=--use-arrangement-backfill",
        test_num: 12,
        kill_rate: 1.0,
        background_ddl_rate: 0.8,
        use_arrangement_backfill: true,
        timeout_minutes: 55,
        pending: None,
    },
    CiProfile {
        name: "backfill-tests",
        workflow: "ci/scripts/run-backfill-tests.sh",
        test_num: 1,
        kill_rate: 0.0,
        background_ddl_rate: 0.0,
        use_arrangement_backfill: false,
        timeout_minutes: 0,
        pending: None,
    },
];

/// What the simulator's `--use-arrangement-backfill` did at f21fb9b7915, which `ci` and `slt` print when it is
/// given: `main.rs` puts `SET enable_arrangement_backfill = true;` in the cluster's `per_session_queries`,
/// which only `Cluster::start_session` runs (the integration tests' sessions); `slt.rs` opens each file's
/// session with `RisingWave::connect`, so no file's session ran it. (Had one run it, it would have been
/// refused: the variable is `streaming_enable_arrangement_backfill`, with no other name.) Each file backfills
/// as that variable says: no-shuffle backfill, its default, unless the file sets it.
pub const USE_ARRANGEMENT_BACKFILL: &str = "--use-arrangement-backfill: as at f21fb9b7915, its `SET \
     enable_arrangement_backfill = true` goes to sessions of Cluster::start_session, which the slt runner does not \
     open (src/tests/simulation/src/slt.rs connects its own): no file sees it, and each backfills as \
     streaming_enable_arrangement_backfill says (default false: no-shuffle backfill)";

/// A profile by its name.
pub fn profile(name: &str) -> Option<&'static CiProfile> {
    PROFILES.iter().find(|p| p.name == name)
}

/// A step by its name.
pub fn step(name: &str) -> Option<&'static CiStep> {
    STEPS.iter().find(|s| s.name == name)
}

/// Why a step cannot run at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotRun {
    #[error("needs {0}, which epochlab does not have")]
    Needs(&'static str),
    #[error("no file under {root} matches {glob}")]
    NoFiles { root: String, glob: String },
    #[error("cannot read {root}/{glob}: {why}")]
    Unreadable {
        root: String,
        glob: String,
        why: String,
    },
    /// The script runs under `set -euo pipefail`: a step with a failing seed ends the run.
    #[error("step {0} failed before it, which ended the script (set -e; --keep-going runs it)")]
    AfterFailure(&'static str),
}

/// The step's files under `root` (a copy of RisingWave's `e2e_test/`), in the order RisingWave's runner
/// met them: the `glob` crate's (each folder's entries sorted by name, files and folders mixed, a folder's
/// files before the next entry), which is not a sort of the whole paths as strings.
pub fn step_files(root: &Path, step: &CiStep) -> Result<Vec<PathBuf>, NotRun> {
    if let Some(what) = step.needs {
        return Err(NotRun::Needs(what));
    }
    let shown = root.display().to_string();
    let unreadable = |why: String| NotRun::Unreadable {
        root: shown.clone(),
        glob: step.glob.to_string(),
        why,
    };
    let pattern = root.join(step.glob);
    let matches = glob::glob(&pattern.to_string_lossy()).map_err(|e| unreadable(e.to_string()))?;
    let files = matches
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unreadable(e.to_string()))?;
    if files.is_empty() {
        return Err(NotRun::NoFiles {
            root: shown,
            glob: step.glob.to_string(),
        });
    }
    Ok(files)
}

/// A seed's parameters for a step under a profile on a cluster of `topology`: RisingWave's kill runner (the
/// 2024 one) at the profile's kill rate, every role, and its background-DDL rate where the script passes it.
pub fn step_params(
    profile: &CiProfile,
    step: &CiStep,
    seed: u64,
    run: BugMode,
    topology: Topology,
) -> SltParams {
    SltParams {
        seed,
        run,
        kill: true,
        runner: RunnerEra::R2024,
        kill_rate: profile.kill_rate,
        background_ddl_rate: if step.background_ddl_rate {
            profile.background_ddl_rate
        } else {
            0.0
        },
        topology,
        ..SltParams::default()
    }
}

/// One (step, seed) with `p` ([`step_params`]): the step's files (under `root`) in one cluster, the first
/// failure ending it unless `keep_going`.
pub fn run_step(
    root: &Path,
    files: &[PathBuf],
    p: &SltParams,
    keep_going: bool,
    hooks: ReproHooks,
) -> SimOutput<StepReport> {
    run_files(root, files, p, keep_going, hooks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_order_is_per_folder_not_per_string() {
        let d = std::env::temp_dir().join(format!("epochlab-ci-glob-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for f in ["ddl/a/x.slt", "ddl/a-b.slt", "ddl/b.slt", "ddl/a.slt"] {
            let path = d.join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        let files = step_files(&d, step("ddl").unwrap()).unwrap();
        let rel: Vec<String> = files
            .iter()
            .map(|f| f.strip_prefix(&d).unwrap().display().to_string())
            .collect();
        // A plain string sort would put `ddl/a-b.slt` before `ddl/a/x.slt` ('-' < '/').
        assert_eq!(
            rel,
            ["ddl/a/x.slt", "ddl/a-b.slt", "ddl/a.slt", "ddl/b.slt"]
        );
        let mut sorted = rel.clone();
        sorted.sort();
        assert_ne!(sorted, rel);
    }

    #[test]
    fn steps_and_profiles_are_found_by_name() {
        assert!(step("source").unwrap().needs.is_some());
        assert_eq!(profile("pr").unwrap().test_num, 8);
        assert!(profile("nightly").is_none());
        let missing = step_files(Path::new("/nonexistent"), step("batch").unwrap());
        assert!(matches!(missing, Err(NotRun::NoFiles { .. })));
    }
}
