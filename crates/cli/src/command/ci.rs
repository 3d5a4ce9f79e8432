//! `epochlab ci`: its flags (the one definition, with their help) and the run configuration
//! ([`crate::ci::CiArgs`]) they become.

use std::path::PathBuf;

use clap::Args;
use clap::builder::PossibleValuesParser;
use epochlab_sim::{BugId, BugMode, Mode};
use epochlab_simulation::ci::{self, CiProfile, PROFILES, STEPS};

use super::CheckError;
use super::values;
use crate::ci::CiArgs;

/// Run RisingWave's recovery CI step for step: each (step, seed) one cluster for every file of the step
///
/// As ci/scripts/deterministic-recovery-test.sh at f21fb9b7915 runs it: five steps, each
/// `seq $TEST_NUM | parallel MADSIM_TEST_SEED={} ./risingwave_simulation --kill
/// --kill-rate=$KILL_RATE [--background-ddl-rate=$BACKGROUND_DDL_RATE] ./e2e_test/<glob>`:
///   background-ddl  background_ddl/sim/basic.slt (no --background-ddl-rate: 0.0)
///   ddl             ddl/**/*.slt
///   streaming       streaming/**/*.slt
///   batch           batch/**/*.slt
///   source          source/basic/kafka*.slt (needs a Kafka source: reported not run)
/// Per (step, seed), one simulated cluster runs every file of the glob in the `glob` crate's
/// order, a new session per file (a file's SETs do not carry over; its tables, users, schemas
/// and background jobs do), under RisingWave's kill runner of 2024; the first file that fails
/// ends the step-seed, as RisingWave's panic ended its process. The profiles are the
/// workflows' calls of the script:
///   pr                         pull-request.yml: TEST_NUM=8 KILL_RATE=0.5 BACKGROUND_DDL_RATE=0.0
///   main-cron                  main-cron.yml: TEST_NUM=12 KILL_RATE=1.0 BACKGROUND_DDL_RATE=0.0
///   main-cron-background-ddl   main-cron.yml: TEST_NUM=12 KILL_RATE=1.0 BACKGROUND_DDL_RATE=0.8
///   main-cron-arrangement-backfill  main-cron.yml: the same with
///                              USE_ARRANGEMENT_BACKFILL=--use-arrangement-backfill, which
///                              reached no file's session (see --use-arrangement-backfill)
///   backfill-tests             run-backfill-tests.sh: its functions in main's order, each in
///                              the cluster it starts; psql sessions go on after an error;
///                              takes --seeds, --junit, --log-dir, --bug, --mode
/// Prints a line per (step, seed): passed, or the failing file:line and its error; the totals
/// per step; and the command replaying each failing (step, seed). A step whose files are not
/// under --root, or that needs what epochlab lacks, is reported not run and fails nothing.
///
/// The cluster is RisingWave's ci-3cn-2fe-3meta by default: 3 metas on a lease, killed with
/// the other roles (drawn first, never all; --spare-meta spares them), 3 compute nodes of 2 cores
/// (parallelism 6), 2 compactors and 2 frontends behind one round-robin address, each with its
/// own cache of meta's catalog and its own meta client. Another --meta-nodes is a deviation
/// printed with each run.
///
/// Each flag may be given at most once (`--flag VALUE` or `--flag=VALUE`).
#[derive(Args, Clone, Debug)]
#[command(verbatim_doc_comment, allow_negative_numbers = true, after_long_help = CI_AFTER_HELP)]
pub struct CiCmd {
    /// The workflow's call of the script
    #[arg(long, value_name = "P", default_value = "pr",
          value_parser = PossibleValuesParser::new(PROFILES.map(|p| p.name)))]
    pub profile: String,
    /// One step of the script (default: every step, in the script's order)
    #[arg(long, value_name = "S", value_parser = PossibleValuesParser::new(STEPS.map(|s| s.name)))]
    pub step: Option<String>,
    /// The seeds A, A+1, ..., B-1 (default: the profile's `seq $TEST_NUM`, 1..TEST_NUM+1)
    #[arg(long, value_name = "A..B", allow_hyphen_values = true, value_parser = values::seed_range)]
    pub seeds: Option<std::ops::Range<u64>>,
    /// 1..=256 worker threads, each running one (step, seed) at a time (default: the machine's cores)
    #[arg(long, value_name = "N", value_parser = values::number::<usize>(values::JOBS))]
    pub jobs: Option<usize>,
    /// K/N: only the (step, seed) pairs whose place in the run (steps in order, then seeds) is K mod N
    #[arg(long, value_name = "K/N", value_parser = values::shard)]
    pub shard: Option<(u64, u64)>,
    /// A copy of RisingWave's e2e_test/ directory (holding ddl/, streaming/, ...)
    #[arg(long, value_name = "DIR", default_value = epochlab_simulation::corpus::ROOT,
          value_parser = values::path)]
    pub root: PathBuf,
    /// Go on after a failing file and report every file (a deviation: RisingWave's run ended at the
    /// first failure, and a failed file may leave objects behind for the next)
    #[arg(long)]
    pub keep_going: bool,
    /// The bug of the catalogue whose toggle --mode sets
    #[arg(long, value_name = "ID", default_value = "14910", value_parser = values::bug())]
    pub bug: BugId,
    /// The mode of every run
    #[arg(long, value_name = "M", default_value = "fixed", value_parser = values::mode())]
    pub mode: Mode,
    /// Write the run as JUnit XML: a testsuite per step, a testcase per (file, seed); the files after
    /// a stop, and steps not run, as skipped (backfill-tests: one suite, a testcase per (function,
    /// seed), the functions not run as skipped)
    #[arg(long, value_name = "FILE", value_parser = values::path)]
    pub junit: Option<PathBuf>,
    /// Keep a log per failing (step, seed), as the script's $LOGDIR/<step's log>-<seed>.log: the
    /// script's debug scope (meta's recovery, catalog, DDL and barrier manager; the runner) at DEBUG,
    /// the rest at INFO (RUST_LOG replaces it), ending with the failure; a passing seed's log is
    /// deleted; each kept log goes through `epochlab triage`, and the table names the bug it shows
    /// (backfill-tests: backfill-tests-<function>-<seed>.log per failing (function, seed))
    #[arg(long, value_name = "DIR", value_parser = values::path, verbatim_doc_comment)]
    pub log_dir: Option<PathBuf>,
    /// Rewrite ROOT/ci-expected.txt, the ratchet, with what this run's steps passed
    ///
    /// The ratchet: per profile and step, the files the step passes before it stops (with
    /// --keep-going, in all) on the worst seed of a run. Each run prints its steps beside it:
    /// `as its N`, `more than its N`, or `REGRESSED from N`.
    #[arg(long, verbatim_doc_comment)]
    pub update_expected: bool,
    /// The simulator's flag, which the main-cron-arrangement-backfill profile sets: at f21fb9b7915
    /// its `SET enable_arrangement_backfill = true` went only to sessions the slt runner does not
    /// open, so no file sees it; each backfills as streaming_enable_arrangement_backfill says
    /// (default false: no-shuffle backfill). Printed with the run.
    #[arg(long, verbatim_doc_comment)]
    pub use_arrangement_backfill: bool,
    /// Never kill a meta (RisingWave's runner at HEAD, one meta): the kill steps kill the other
    /// roles only. By default the metas are killed with them as at f21fb9b7915 (drawn first, never
    /// all, down U(0, 1 s), +20 s one time in ten). The ratchet is checked as for any run;
    /// --update-expected is refused (the ratchet is measured with meta kills).
    #[arg(long, verbatim_doc_comment, conflicts_with = "update_expected")]
    pub spare_meta: bool,
    #[command(flatten)]
    pub topology: super::topology::TopologyArgs,
}

/// The flags of the recovery script's steps, which backfill-tests (functions, not steps, each in the
/// cluster its risedev profile starts) does not take: a topology, --jobs or --root given is refused.
fn backfill_tests_alone(cmd: &CiCmd) -> Result<(), CheckError> {
    let (t, ci_topology) = (&cmd.topology, epochlab_sim::config::Topology::RISINGWAVE_CI);
    let given = [
        ("--step", cmd.step.is_some()),
        ("--shard", cmd.shard.is_some()),
        ("--keep-going", cmd.keep_going),
        ("--update-expected", cmd.update_expected),
        ("--use-arrangement-backfill", cmd.use_arrangement_backfill),
        ("--spare-meta", cmd.spare_meta),
        ("--jobs", cmd.jobs.is_some()),
        (
            "--root",
            cmd.root != std::path::Path::new(epochlab_simulation::corpus::ROOT),
        ),
        (
            "--frontend-nodes",
            t.frontend_nodes != ci_topology.frontend_nodes,
        ),
        (
            "--compute-nodes",
            t.compute_nodes != ci_topology.compute_nodes,
        ),
        (
            "--compute-node-cores",
            t.compute_node_cores != ci_topology.compute_node_cores,
        ),
        (
            "--compactor-nodes",
            t.compactor_nodes != ci_topology.compactor_nodes,
        ),
    ];
    match given.into_iter().find(|(_, on)| *on) {
        Some((flag, _)) => Err(CheckError::Exclusive {
            a: "--profile backfill-tests",
            b: flag,
            reason: "the script's functions each run whole, one after another, in the cluster their risedev \
                     profile starts; that flag is for the recovery script's steps",
        }),
        None => Ok(()),
    }
}

const CI_AFTER_HELP: &str = "\
EXIT STATUS: 0 every (step, seed) (or backfill-tests' (function, seed)) that ran passed, 1 one failed or got
stuck, 2 bad input (a flag, a flag the profile does not take, a root without any step's files, a log directory
or JUnit file that cannot be written), one line on stderr.";

impl CiCmd {
    /// The run configuration, checked.
    pub fn into_args(self) -> Result<CiArgs, CheckError> {
        let profile: &'static CiProfile =
            ci::profile(&self.profile).expect("clap admits only the profiles' names");
        if let Some(why) = profile.pending {
            return Err(CheckError::NotYet {
                what: format!("--profile {}", profile.name),
                why,
            });
        }
        if profile.name == "backfill-tests" {
            backfill_tests_alone(&self)?;
        }
        if self.update_expected && self.shard.is_some() {
            return Err(CheckError::Exclusive {
                a: "--update-expected",
                b: "--shard",
                reason: "a shard sees part of the run; update the ratchet from a whole run",
            });
        }
        if self.update_expected
            && self.topology.meta_nodes != epochlab_sim::config::DEFAULT_META_NODES
        {
            return Err(CheckError::Exclusive {
                a: "--update-expected",
                b: "--meta-nodes",
                reason: "the ratchet is measured on 3 metas, killed with the other roles",
            });
        }
        let steps = match &self.step {
            Some(name) => vec![ci::step(name).expect("clap admits only the steps' names")],
            None => STEPS.iter().collect(),
        };
        Ok(CiArgs {
            profile,
            steps,
            seeds: self.seeds.unwrap_or(1..profile.test_num + 1),
            jobs: self
                .jobs
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
            shard: self.shard,
            spare_meta: self.spare_meta,
            root: self.root,
            keep_going: self.keep_going,
            run: BugMode::new(self.bug, self.mode).map_err(CheckError::NotAModeOfTheBug)?,
            junit: self.junit,
            log_dir: self.log_dir,
            update_expected: self.update_expected,
            topology: self.topology.topology()?,
            use_arrangement_backfill: self.use_arrangement_backfill
                || profile.use_arrangement_backfill,
        })
    }
}
