//! What one soak run is (a seed of the directed scenario, a seed's random plan, or a plan file), how it
//! runs, how it becomes a results row, and the command that replays it.

use std::path::Path;

use epochlab_sim::workload::{FailureKind, GenParams, Plan, PlanReport, generate, run_plan};
use epochlab_sim::{
    BugId, BugMode, Mode, Outcome, ReproHooks, ReproParams, ReproReport, run_repro_with,
};
use epochlab_telemetry::WallTimer;

use super::{RESULTS_VERSION, SeedRow};
use crate::repro::{flags, replay};

/// Which scenario a campaign's seeds run.
#[derive(Clone, Debug, PartialEq)]
pub enum Scenario {
    /// Each seed draws a random workload plan.
    Random(GenParams),
    /// The #14910 scenario of `epochlab repro`, with its settings.
    Directed,
    /// Sqllogictest files (`--slt GLOB`), each in a fresh cluster, under each seed.
    Slt(Box<crate::slt::SltCampaign>),
}

/// One run.
#[derive(Clone, Debug)]
pub enum RunSpec {
    Directed(ReproParams),
    Random {
        seed: u64,
        run: BugMode,
        generate: GenParams,
    },
    Plan {
        plan: Box<Plan>,
        run: BugMode,
        path: String,
    },
    /// Every file of an `--slt` campaign under one seed.
    Slt {
        seed: u64,
        campaign: Box<crate::slt::SltCampaign>,
    },
}

impl RunSpec {
    pub fn seed(&self) -> u64 {
        match self {
            RunSpec::Directed(p) => p.seed,
            RunSpec::Random { seed, .. } => *seed,
            RunSpec::Plan { plan, .. } => plan.seed,
            RunSpec::Slt { seed, .. } => *seed,
        }
    }

    pub fn mode(&self) -> Mode {
        match self {
            RunSpec::Directed(p) => p.mode,
            RunSpec::Random { run, .. } | RunSpec::Plan { run, .. } => run.mode(),
            RunSpec::Slt { campaign, .. } => campaign.params.run.mode(),
        }
    }

    pub fn bug(&self) -> BugId {
        match self {
            RunSpec::Directed(p) => p.bug,
            RunSpec::Random { run, .. } | RunSpec::Plan { run, .. } => run.bug(),
            RunSpec::Slt { campaign, .. } => campaign.params.run.bug(),
        }
    }

    pub fn scenario(&self) -> &'static str {
        match self {
            RunSpec::Directed(_) => "14910",
            RunSpec::Random { .. } => "random",
            RunSpec::Plan { .. } => "plan",
            RunSpec::Slt { .. } => "slt",
        }
    }

    /// The command that replays this run exactly.
    pub fn replay(&self) -> String {
        match self {
            RunSpec::Directed(p) => replay(p),
            RunSpec::Random {
                seed,
                run,
                generate,
            } => format!(
                "cargo xtask soak --scenario random --bug {} --mode {} --kill-rate {} --background-ddl-rate {}{} --seeds {seed}..{}",
                run.bug(),
                run.mode(),
                generate.kill_rate,
                generate.background_ddl_rate,
                engine_flag(generate),
                seed + 1
            ),
            RunSpec::Plan { run, path, .. } => {
                format!("cargo xtask soak --mode {} --plan {path}", run.mode())
            }
            RunSpec::Slt { seed, campaign } => campaign.replay(*seed),
        }
    }

    /// The plan this run plays, if it plays one.
    pub fn plan(&self) -> Option<Plan> {
        match self {
            RunSpec::Directed(_) | RunSpec::Slt { .. } => None,
            RunSpec::Random {
                seed, generate: g, ..
            } => Some(generate(*seed, g)),
            RunSpec::Plan { plan, .. } => Some((**plan).clone()),
        }
    }

    /// Run it; with `event_log`, write the run's event log there.
    pub fn run(&self, campaign: &str, hooks: ReproHooks, event_log: Option<&Path>) -> SeedRow {
        let wall = WallTimer::start();
        match (self, self.plan()) {
            (RunSpec::Slt { seed, campaign: c }, _) => {
                c.run_seed(campaign, *seed, hooks, event_log)
            }
            (RunSpec::Directed(p), _) => {
                let out = run_repro_with(p, hooks);
                if let Some(path) = event_log {
                    write_log(path, out.log.lines());
                }
                let (digest, virtual_ms) = (out.digest, out.virtual_elapsed.as_millis() as u64);
                let wall_ms = wall.elapsed().as_millis() as u64;
                row_of_repro(campaign, &out.value, digest, virtual_ms, wall_ms)
            }
            (_, plan) => {
                let plan = plan.expect("a random or plan run plays a plan");
                let run = match self {
                    RunSpec::Random { run, .. } | RunSpec::Plan { run, .. } => *run,
                    RunSpec::Directed(_) | RunSpec::Slt { .. } => {
                        unreachable!("a directed or slt run plays no plan")
                    }
                };
                let out = run_plan(&plan, run, hooks);
                if let Some(path) = event_log {
                    write_log(path, out.log.lines());
                }
                let mut row = self.row_of_plan(campaign, &out.value);
                row.digest = out.digest;
                row.virtual_ms = out.virtual_elapsed.as_millis() as u64;
                row.wall_ms = wall.elapsed().as_millis() as u64;
                row
            }
        }
    }

    fn row_of_plan(&self, campaign: &str, r: &PlanReport) -> SeedRow {
        let mut detail = match r.outcome {
            Outcome::Passed => Some(format!(
                "{} steps ({} skipped), {} recoveries",
                r.steps, r.steps_skipped, r.recoveries
            )),
            _ => r.error.clone(),
        };
        // Only runs with meta kills say so: every other row stays as it was.
        if r.meta_restarts > 0
            && let Some(d) = &mut detail
        {
            d.push_str(&format!("; meta restarted {} times", r.meta_restarts));
            let at: Vec<&str> = r.meta_crashes.iter().map(|p| p.as_str()).collect();
            if !at.is_empty() {
                d.push_str(&format!(" (crashed at {})", at.join(", ")));
            }
            if r.meta_leader_changes > 0 {
                d.push_str(&format!(
                    ", the leader changed {} times",
                    r.meta_leader_changes
                ));
            }
        }
        SeedRow {
            version: RESULTS_VERSION,
            campaign: campaign.to_string(),
            seed: self.seed(),
            bug: self.bug().as_str().to_string(),
            mode: self.mode().as_str().to_string(),
            scenario: self.scenario().into(),
            outcome: r.outcome.as_str().into(),
            kind: r.kind.map(|k| k.as_str().to_string()),
            detail,
            signature: r.signature(),
            digest: String::new(),
            virtual_ms: 0,
            wall_ms: 0,
            replay: self.replay(),
        }
    }
}

/// Write a run's event log (one line per event, with virtual time) to `path`.
fn write_log(path: &Path, lines: Vec<String>) {
    match crate::repro::write_event_log(path, &lines) {
        Ok(()) => eprintln!("soak: event log written to {}", path.display()),
        Err(e) => eprintln!(
            "soak: cannot write the event log to {}: {e}",
            path.display()
        ),
    }
}

/// The campaign key of the directed scenario with these settings: every repro flag but the seed.
pub fn directed_campaign(p: &ReproParams) -> String {
    let all = flags(p);
    let pairs = all.chunks(2).filter(|kv| kv[0] != "--seed");
    let parts: Vec<String> = pairs.map(|kv| kv.join(" ")).collect();
    format!("scenario={} {}", p.bug, parts.join(" "))
}

/// The campaign key of random plans with these settings.
pub fn random_campaign(run: BugMode, g: &GenParams) -> String {
    format!(
        "scenario=random --bug {} --mode {} --kill-rate {} --background-ddl-rate {}{}",
        run.bug(),
        run.mode(),
        g.kill_rate,
        g.background_ddl_rate,
        engine_flag(g)
    )
}

/// ` --engine 2024` for plans on the engine of 2024, nothing for the default engine; then the meta faults'
/// rates and the metas, always (a key or replay of a campaign stays the same whatever the defaults become;
/// keys written before issue 56's flip, which left out the zero rates and one meta, name other plans and do
/// not resume).
fn engine_flag(g: &GenParams) -> String {
    let mut flags = String::new();
    if g.flow_control {
        flags.push_str(" --engine 2024");
    }
    flags.push_str(&format!(
        " --kill-meta-rate {} --crash-meta-rate {} --meta-outage-rate {} --meta-nodes {}",
        g.kill_meta_rate, g.crash_meta_rate, g.meta_outage_rate, g.meta_nodes
    ));
    flags
}

/// A finished directed run as a soak row. A run that could not set up the bug counts as passed: nothing
/// failed (the reason is kept as its detail).
pub fn row_of_repro(
    campaign: &str,
    r: &ReproReport,
    digest: String,
    virtual_ms: u64,
    wall_ms: u64,
) -> SeedRow {
    let error = r.error.as_deref().unwrap_or("");
    let (outcome, kind, signature) = match r.outcome {
        Outcome::Failed => {
            let kind = FailureKind::of_repro(r);
            let sig = epochlab_sim::workload::failure_signature(kind, error);
            ("failed", Some(kind.as_str().to_string()), Some(sig))
        }
        Outcome::Stuck => {
            let sig = epochlab_sim::workload::stuck_signature(error);
            ("stuck", None, Some(sig))
        }
        Outcome::Passed | Outcome::NotReproducible => ("passed", None, None),
    };
    SeedRow {
        version: RESULTS_VERSION,
        campaign: campaign.to_string(),
        seed: r.params.seed,
        bug: r.params.bug.as_str().to_string(),
        mode: r.params.mode.as_str().to_string(),
        scenario: r.params.bug.as_str().into(),
        outcome: outcome.into(),
        kind,
        detail: r.error.clone(),
        signature,
        digest,
        virtual_ms,
        wall_ms,
        replay: replay(&r.params),
    }
}
