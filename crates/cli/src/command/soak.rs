//! `epochlab soak`: its flags (the one definition, with their help) and the campaign ([`SoakArgs`]) they
//! become after the checks that depend on values (the scenario, the catalogue's modes, one run).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Args};
use epochlab_sim::workload::GenParams;
use epochlab_sim::{BugId, BugMode, Mode, ReproParams};

use super::repro::ScenarioFlags;
use super::values;
use super::{CheckError, kill_choice};
use crate::soak::{Scenario, SoakArgs};

/// Run many seeds on worker threads and group the failures by signature
///
/// Each seed is its own deterministic simulation; a soak keeps one result per seed and groups the
/// failures by signature (the error with ids, epochs and values masked).
///
/// Each seed draws a random workload plan (tables, DML streams of inserts, updates and deletes, views and
/// sinks with arrangement backfill, foreground and background, drops and cancels while they backfill,
/// throttles, reschedules; a compaction group per job or RisingWave's static groups) on three metas, with
/// faults (node kills and restarts, failed and delayed RPCs, meta kills, crash points, whole-cluster outages,
/// a leader's keep-alives timing out), runs it, lets the cluster settle and checks: actor state errors, the
/// invariants (commit order, tables unregistered while in use or touched after, registered tables, what a
/// restarted meta or a new leader was told, one writer of the store and of the barriers), an
/// oracle (every view and sink equals its table; every table holds what its DML left), and stalls (no epoch
/// committed for 180 s, as when a compaction group's writes stop). `--scenario 14910` runs the directed
/// scenario of `epochlab repro` instead; `--slt GLOB` runs sqllogictest files.
///
/// Each flag may be given at most once (`--flag VALUE` or `--flag=VALUE`); a flag that would do nothing in
/// the combination given is refused.
#[derive(Args, Clone, Debug)]
#[command(verbatim_doc_comment, allow_negative_numbers = true, after_long_help = SOAK_AFTER_HELP)]
#[command(group(ArgGroup::new("killed").multiple(true)
    .args(["kill", "kill_meta", "kill_frontend", "kill_compute", "kill_compactor"])))]
pub struct SoakCmd {
    /// Half-open range of seeds
    #[arg(long, value_name = "A..B", default_value = "0..100", allow_hyphen_values = true,
          value_parser = values::seed_range)]
    pub seeds: std::ops::Range<u64>,
    /// 1..=256 worker threads, default the number of cores
    #[arg(long, value_name = "N", value_parser = values::number::<usize>(values::JOBS))]
    pub jobs: Option<usize>,
    /// The bug of the catalogue (`epochlab bugs`) whose toggle --mode sets
    ///
    /// Every other bug's toggle stays fixed; not with --plan (a plan file names its bug) or
    /// --replay.
    #[arg(long, value_name = "ID", verbatim_doc_comment, value_parser = values::bug())]
    pub bug: Option<BugId>,
    /// The mode of every seed, default fixed
    #[arg(long, value_name = "M", value_parser = values::mode())]
    pub mode: Option<Mode>,
    /// random (default): a random plan per seed; 14910: the directed scenario
    #[arg(long, value_name = "S", value_enum)]
    pub scenario: Option<ScenarioArg>,
    /// Random plans: the engine they run on, latest (default) or 2024
    ///
    /// Where a backfill's rate limit holds the rows it read. latest: the backfill waits for its
    /// limiter before each snapshot read, and a barrier never waits behind rows already read
    /// (RisingWave since PR #15948). 2024: a flow-control executor after the backfill paces them,
    /// and a barrier waits behind every row read before it (RisingWave at f21fb9b7915, the engine
    /// of #14910, whose random plans find it there far more often). Not with --slt (its --runner
    /// picks the engine), --plan (a plan file's cluster says `"flow_control": true` for 2024) or
    /// --replay (each row's replay says it); the directed scenario always runs the engine of 2024.
    #[arg(long, value_name = "E", verbatim_doc_comment, value_enum,
          conflicts_with_all = ["slt", "plan", "replay"])]
    pub engine: Option<EngineArg>,
    /// 0..=1, random plans: the chance that a kill opportunity kills, default 0.5
    ///
    /// A kill opportunity comes every 5 to 15 s, and after some drops; it kills every node or
    /// each node with probability 0.5. With --slt (and a kill flag), the runner's kill rate,
    /// default 1.0.
    #[arg(long, value_name = "F", verbatim_doc_comment, value_parser = values::probability)]
    pub kill_rate: Option<f64>,
    /// 0..=1, random plans: the chance that a view or sink is created in the background, default 0.5
    ///
    /// With --slt (and a kill flag), the runner's rate, default 0.0.
    #[arg(long, value_name = "F", verbatim_doc_comment, value_parser = values::probability)]
    pub background_ddl_rate: Option<f64>,
    /// 0..=1, random plans: the chance of a meta kill at each opportunity, default 0.3 (0: none)
    ///
    /// An opportunity every 10 to 30 s; a meta (of several: one drawn uniformly) is down
    /// U(0, 1 s), plus 20 s one time in ten, and restarts from its store. Drawn after every other step: the rest of each seed's plan is the
    /// plan of the same seed without it.
    #[arg(long, value_name = "F", verbatim_doc_comment, value_parser = values::probability,
          conflicts_with = "slt")]
    pub kill_meta_rate: Option<f64>,
    /// 0..=1, random plans: the chance of a crash point armed at each opportunity, default 0.3
    ///
    /// An opportunity every 10 to 30 s arms one of the points a job made through meta's job API
    /// reaches (create-after-fragments, -register, -first-commit, -fragments-created,
    /// drop-after-fragments, -stop; `epochlab slt --help` says what each leaves); meta dies
    /// there in the first DDL to reach it and restarts from its store after U(0, 1 s); an armed
    /// point no DDL reached yet is replaced by the next. A seed's detail names the points meta
    /// crashed at. Drawn after meta kills: the rest of each seed's plan is as without it.
    #[arg(long, value_name = "F", verbatim_doc_comment, value_parser = values::probability,
          conflicts_with = "slt")]
    pub crash_meta_rate: Option<f64>,
    /// 0..=1, random plans: the chance of a meta outage at each opportunity, default 0.2
    ///
    /// An opportunity every 20 to 40 s kills every meta and every compute node at once and starts
    /// them again after U(0, 2 s), plus 20 s one time in ten (RisingWave's
    /// kill_cn_and_meta_and_wait_recover); with several metas, half the time the leader's
    /// keep-alives go unanswered instead, for 6 to 15 s (past 5 s it exits, and is started again at
    /// the end) or, one time in four, 1 to 4 s (it keeps its lease). Drawn after crash points: the
    /// rest of each seed's plan is as without it.
    #[arg(long, value_name = "F", verbatim_doc_comment, value_parser = values::probability,
          conflicts_with = "slt")]
    pub meta_outage_rate: Option<f64>,
    /// 1..=16, random plans: meta nodes, default 3; several run on a 10 s lease, one leading
    ///
    /// Each meta kill of a plan names one of them, drawn uniformly; a leader down for 20 s loses
    /// the lease to a follower. Not a draw: every plan of the campaign has them.
    #[arg(long, value_name = "N", verbatim_doc_comment, conflicts_with = "slt",
          value_parser = values::number::<u32>(values::META_NODES))]
    pub meta_nodes: Option<u32>,
    /// Run sqllogictest files (`epochlab slt --help`) instead of random plans
    ///
    /// Every file matching GLOB (quote it: 'tests/slt/recovery/*.slt'), each in a fresh cluster,
    /// under each seed; a seed fails when a file does, its detail naming the file, the record and
    /// the `cargo xtask slt` command that replays that file alone.
    #[arg(long, value_name = "GLOB", verbatim_doc_comment, value_parser = values::text,
          conflicts_with_all = ["scenario", "plan", "shrink", "replay"])]
    pub slt: Option<String>,
    /// With --slt: kill nodes of every role the engine has, as RisingWave's simulation runner does
    ///
    /// Metas (drawn first, never all), frontends, compute nodes, compactors. Then --kill-rate defaults to 1.0 and
    /// --background-ddl-rate to 0.0. See `epochlab slt --help`.
    #[arg(long, verbatim_doc_comment, requires = "slt")]
    pub kill: bool,
    /// With --slt: kill meta too (with --kill), or only (or with the other --kill-ROLE flags)
    ///
    /// It restarts from its store; see `epochlab slt --help`.
    #[arg(long, verbatim_doc_comment, requires = "slt")]
    pub kill_meta: bool,
    /// With --slt: kill the frontend (with the other --kill-ROLE flags: those roles)
    #[arg(long, requires = "slt")]
    pub kill_frontend: bool,
    /// With --slt: kill compute nodes (or with the other --kill-ROLE flags)
    #[arg(long, requires = "slt")]
    pub kill_compute: bool,
    /// With --slt: kill the compactor (or with the other --kill-ROLE flags)
    #[arg(long, requires = "slt")]
    pub kill_compactor: bool,
    /// With --slt and a kill flag: RisingWave's runner of 2024 (default) or today's
    ///
    /// See `epochlab slt --help`.
    #[arg(long, value_name = "R", verbatim_doc_comment, requires = "slt", requires = "killed",
          value_parser = values::runner())]
    pub runner: Option<epochlab_simulation::RunnerEra>,
    /// Run one plan file (as written by --shrink, or from tests/regressions/)
    ///
    /// In its own mode unless --mode is given; compares with the file's expected outcome if it
    /// has one (a differing outcome prints DIFFERS and exits 1). It runs one plan, not a campaign.
    #[arg(long, value_name = "FILE", verbatim_doc_comment, value_parser = values::path,
          conflicts_with_all = [
              "seeds", "shard", "scenario", "replay", "results", "kill_rate", "background_ddl_rate", "bug",
              "kill_meta_rate", "crash_meta_rate", "meta_outage_rate", "meta_nodes",
          ])]
    pub plan: Option<PathBuf>,
    /// Shrink the plan of --plan FILE, or of the lowest failing seed of the campaign
    ///
    /// Removes and shortens steps while a run fails with the same signature; prints the smallest
    /// plan, writes it to a plan file (shrunk-seed<N>-<mode>.json here, or <name>.shrunk.json
    /// beside --plan's file) and prints that path on the last line.
    #[arg(long, verbatim_doc_comment)]
    pub shrink: bool,
    /// Run only the seeds with seed % N == K (several processes split one campaign)
    #[arg(long, value_name = "K/N", value_parser = values::shard)]
    pub shard: Option<(u64, u64)>,
    /// Append one JSON line per seed to FILE
    ///
    /// Seeds of the same campaign already in FILE are skipped, so an interrupted campaign resumes.
    #[arg(long, value_name = "FILE", verbatim_doc_comment, value_parser = values::path)]
    pub results: Option<PathBuf>,
    /// 1..=2592000: start no seed after this much wall time
    #[arg(long, value_name = "SECS", value_parser = values::number::<u64>(values::DURATION))]
    pub duration: Option<u64>,
    /// Print each seed's JSON line on stdout (the triage goes to stderr)
    #[arg(long)]
    pub json: bool,
    /// Rerun every seed of a results file (with its own settings, in --jobs threads)
    ///
    /// Prints `seed N: same` or `seed N: DIFFERS (outcome ..., digest ...)`, then
    /// `replayed N: S same, D differ`; exit 0 when D is 0, else 1. Each row is rerun with that
    /// row's own settings, so the campaign's flags are refused with it.
    #[arg(long, value_name = "FILE", verbatim_doc_comment, value_parser = values::path,
          conflicts_with_all = [
              "bug", "shrink", "seeds", "shard", "results", "mode", "scenario", "kill_rate",
              "background_ddl_rate", "kill_meta_rate", "crash_meta_rate", "meta_outage_rate",
              "meta_nodes",
          ])]
    pub replay: Option<PathBuf>,
    /// Serve Prometheus metrics at http://HOST:PORT/metrics while the seeds run; off by default
    ///
    /// Port 0 takes a free port; the address is printed on stderr. The series:
    ///   epochlab_soak_seeds_total{mode,outcome}
    ///   epochlab_soak_failures_total{mode,signature} (64 signatures, then `other`)
    ///   epochlab_soak_seeds_in_progress{mode}
    ///   epochlab_soak_virtual_seconds_total{mode} (its rate: simulated s per wall s)
    ///   epochlab_soak_wall_seconds_total{mode} (wall time of the seeds, all workers)
    /// and repro's engine metrics: counters and histograms summed over the seeds, gauges
    /// per worker (label `worker`, 0..jobs-1) showing the worker's current seed.
    #[arg(long, value_name = "HOST:PORT", verbatim_doc_comment, value_parser = values::metrics_addr)]
    pub metrics_addr: Option<SocketAddr>,
    /// 0..=86400; needs --metrics-addr: keep serving this long after the campaign ends
    ///
    /// Default: not at all.
    #[arg(long, value_name = "SECS", verbatim_doc_comment, requires = "metrics_addr",
          value_parser = values::number::<u64>(values::SERVE_FOR))]
    pub serve_for: Option<u64>,
    /// Write the event log of the one run (--plan FILE, or --seeds N..N+1)
    ///
    /// Every step, barrier, commit, unregister, recovery step and persist, with virtual time.
    #[arg(long, value_name = "FILE", verbatim_doc_comment, value_parser = values::path,
          conflicts_with_all = ["replay", "shrink"])]
    pub event_log: Option<PathBuf>,
    /// The store meta keeps its rows in (random plans and --plan files)
    ///
    /// Default: sqlite. Neither moves a seed's event log: memory is only faster. --meta-store-out
    /// writes either as an SQLite file.
    #[arg(
        long,
        value_name = "STORE",
        verbatim_doc_comment,
        value_enum,
        conflicts_with = "slt"
    )]
    pub meta_store: Option<super::MetaStoreArg>,
    /// Write the --plan run's meta store, as it was when the run ended, as an SQLite file
    #[arg(long, value_name = "FILE", verbatim_doc_comment, value_parser = values::path,
          requires = "plan", conflicts_with = "shrink")]
    pub meta_store_out: Option<PathBuf>,
    /// Send the trace of every seed that fails or gets stuck to this OTLP/gRPC collector
    ///
    /// E.g. http://127.0.0.1:4317, Jaeger's: the worker reruns the seed (it replays exactly) with
    /// the exporter, so passing seeds cost nothing; each trace's resource names the seed, mode,
    /// scenario and signature.
    #[arg(long, value_name = "URL", verbatim_doc_comment, value_parser = values::url)]
    pub otlp_endpoint: Option<String>,
    /// With --scenario 14910: its settings, as for `epochlab repro` (see its --help).
    #[command(
        flatten,
        next_help_heading = "The directed scenario's settings (with --scenario 14910)"
    )]
    pub directed: ScenarioFlags,
}

/// `--scenario`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScenarioArg {
    /// A random plan per seed.
    Random,
    /// The directed scenario of `epochlab repro` (#14910's).
    #[value(name = "14910")]
    Directed,
}

/// `--engine`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineArg {
    /// The backfill paces its own snapshot reads (RisingWave since PR #15948).
    Latest,
    /// A flow-control executor after the backfill (RisingWave at f21fb9b7915).
    #[value(name = "2024")]
    R2024,
}

const SOAK_AFTER_HELP: &str = "\
OUTCOMES per seed: passed (a directed run that could not set up the bug counts as passed, with its reason as
the detail), failed (kind actor_failure, invariant, oracle, panic, or meta_store: a commit to meta's store
or a restarted meta's load of it failed), stuck (no epoch committed for 180 virtual
seconds, or settling did not finish: the detail names the barriers in flight and the actors each node waits
for). Each line of --results and --json: seed, mode, scenario, outcome, kind, detail, signature, digest,
virtual_ms, wall_ms and replay (the command that reruns that seed alone).

EXIT STATUS
  0 every seed passed (--replay: every seed the same)
  1 a seed failed or got stuck (--replay: a seed differs; --shrink: the shrunk plan fails; --plan: the plan
    failed, or its outcome differs from the file's expected one, even when it passed)
  2 bad input (a flag, a results or plan file that cannot be read or written, or a --metrics-addr that cannot
    be listened on, such as a port in use)

`epochlab soak-report FILES...` merges results files (e.g. the shards of a campaign).";

impl SoakCmd {
    /// The campaign, after the checks that depend on values.
    pub fn into_args(self) -> Result<SoakArgs, CheckError> {
        let d = SoakArgs::default();
        let bug = self.bug.unwrap_or_default();
        let mode = self.mode.unwrap_or(d.params.mode);
        self.check(bug, mode)?;
        let scenario = match (&self.slt, self.scenario) {
            (Some(pattern), _) => {
                crate::slt::soak_scenario(pattern, &kill_choice!(self), bug, mode)?
            }
            (None, Some(ScenarioArg::Directed)) => Scenario::Directed,
            (None, _) => {
                let g = GenParams::default();
                Scenario::Random(GenParams {
                    kill_rate: self.kill_rate.unwrap_or(g.kill_rate),
                    background_ddl_rate: self.background_ddl_rate.unwrap_or(g.background_ddl_rate),
                    kill_meta_rate: self.kill_meta_rate.unwrap_or(g.kill_meta_rate),
                    crash_meta_rate: self.crash_meta_rate.unwrap_or(g.crash_meta_rate),
                    meta_outage_rate: self.meta_outage_rate.unwrap_or(g.meta_outage_rate),
                    meta_nodes: self.meta_nodes.unwrap_or(g.meta_nodes),
                    flow_control: self.engine == Some(EngineArg::R2024),
                    ..g
                })
            }
        };
        let params = self.directed.apply(ReproParams {
            bug,
            mode,
            ..ReproParams::default()
        });
        Ok(SoakArgs {
            seeds: self.seeds,
            jobs: self.jobs.unwrap_or(d.jobs),
            shard: self.shard,
            scenario,
            params,
            mode_given: self.mode.is_some(),
            results: self.results,
            duration: self.duration.map(Duration::from_secs),
            json: self.json,
            replay: self.replay,
            plan: self.plan,
            shrink: self.shrink,
            metrics_addr: self.metrics_addr,
            serve_for: self.serve_for.map(Duration::from_secs),
            otlp_endpoint: self.otlp_endpoint,
            event_log: self.event_log,
            meta_store: self.meta_store.map(super::MetaStoreArg::backend),
            meta_store_out: self.meta_store_out,
        })
    }

    /// What clap cannot declare: one run for --event-log, the bug's modes, and the flags of one scenario.
    fn check(&self, bug: BugId, mode: Mode) -> Result<(), CheckError> {
        let one_run = self.plan.is_some() || self.seeds.end - self.seeds.start == 1;
        if self.event_log.is_some() && !one_run {
            return Err(CheckError::Pointless {
                flag: "--event-log",
                reason: "writes the event log of one run: give --plan FILE or --seeds N..N+1",
            });
        }
        if self.meta_store_out.is_some() && self.plan.is_none() {
            return Err(CheckError::Pointless {
                flag: "--meta-store-out",
                reason: "writes the meta store of one plan's run: give --plan FILE",
            });
        }
        if self.plan.is_none() {
            BugMode::new(bug, mode).map_err(CheckError::NotAModeOfTheBug)?;
        }
        if self.scenario == Some(ScenarioArg::Directed) {
            self.directed.check()?;
            if bug != BugId::Rw14910 {
                return Err(CheckError::Exclusive {
                    a: "--bug",
                    b: "--scenario 14910",
                    reason: "the directed scenario of a soak is #14910's; other bugs soak random plans",
                });
            }
            if self.engine.is_some() {
                return Err(CheckError::Exclusive {
                    a: "--engine",
                    b: "--scenario 14910",
                    reason: "picks the engine of random plans; the directed scenario always runs the \
                             engine of 2024",
                });
            }
            // The rates draw random plans; a plan file holds its steps already.
            let drawn = "draws random plans (--scenario random)";
            let random_only = [
                (self.kill_rate.is_some(), "--kill-rate", drawn),
                (
                    self.background_ddl_rate.is_some(),
                    "--background-ddl-rate",
                    drawn,
                ),
                (self.kill_meta_rate.is_some(), "--kill-meta-rate", drawn),
                (self.crash_meta_rate.is_some(), "--crash-meta-rate", drawn),
                (self.meta_outage_rate.is_some(), "--meta-outage-rate", drawn),
                (self.meta_nodes.is_some(), "--meta-nodes", drawn),
                (
                    self.shrink,
                    "--shrink",
                    "applies to random plans (--scenario random or --plan)",
                ),
            ];
            if let Some((_, flag, reason)) = random_only.into_iter().find(|(given, ..)| *given) {
                return Err(CheckError::Exclusive {
                    a: flag,
                    b: "--scenario 14910",
                    reason,
                });
            }
        } else if let Some((flag, _)) = self.directed.given().first() {
            return Err(CheckError::Pointless {
                flag,
                reason: "sets the directed scenario: it needs --scenario 14910",
            });
        }
        Ok(())
    }
}
