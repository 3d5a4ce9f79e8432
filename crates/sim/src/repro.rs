//! A directed run of a bug of the catalogue (`epochlab repro`): its [`ReproParams`], and [`run_repro`], which
//! starts the deterministic runtime, installs the run's log capture and tracing, and hands the run to the bug's
//! scenario (in `bugs/`).

use std::sync::Arc;
use std::time::Duration;

use epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS;
use epochlab_common::trace::{self, TracePer};
use epochlab_common::vspan;
use tracing_subscriber::layer::SubscriberExt;

use epochlab_common::Toggles;

use crate::bugs::{BugError, BugId, Mode, ScenarioRun};
use crate::capture::Capture;
use crate::cluster::Cluster;
use crate::report::{Outcome, ReproReport};
use crate::runtime::{RunError, SimOutput, TimeObserver, try_run_observed};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReproParams {
    /// The bug of the catalogue whose directed scenario runs. The settings below are #14910's; another bug's
    /// scenario reads those its catalogue row lists ([`crate::BugInfo::settings`]).
    pub bug: BugId,
    pub seed: u64,
    pub mode: Mode,
    pub rows: usize,
    pub vnodes: u32,
    pub parallelism: usize,
    pub compute_nodes: u32,
    /// Backfill snapshot rows per second per actor.
    pub rate_limit: u32,
    /// Simulated time the slow sink spends per chunk; above the barrier interval, barriers pile up.
    pub barrier_latency_ms: u64,
    pub barrier_interval_ms: u64,
    pub checkpoint_frequency: u32,
    /// The debug-build checks of RisingWave (`--persist-check on`): the backfill reads its progress row
    /// before each write, and the progress and view tables check every write against their contents. Off
    /// behaves as a release build: writes are blind, and only independent checkers can see a divergence.
    pub persist_check: bool,
    /// `repro --crash-meta-at POINT`: meta dies right after that commit of the first DDL to reach it and
    /// restarts from its store after U(0, 1 s) ([`Cluster::arm_meta_crash`]); the scenario's DDLs retry.
    pub crash_meta_at: Option<epochlab_meta::CrashPoint>,
    /// Metas of the cluster (`repro --meta-nodes N`): more than one run on a lease, and a crash point kills
    /// the leader's process. Every bug's scenario reads it.
    pub meta_nodes: u32,
}

impl Default for ReproParams {
    fn default() -> Self {
        Self {
            bug: BugId::Rw14910,
            seed: 1,
            mode: Mode::Buggy,
            rows: 10_000,
            vnodes: 256,
            parallelism: 2,
            compute_nodes: 3,
            rate_limit: 1,
            barrier_latency_ms: 100,
            barrier_interval_ms: 1000,
            checkpoint_frequency: 1,
            persist_check: true,
            crash_meta_at: None,
            meta_nodes: crate::config::DEFAULT_META_NODES,
        }
    }
}

impl ReproParams {
    /// The engine's toggles for this run's bug and mode, on the engine the directed scenarios were written on:
    /// a backfill's rate limit kept by a flow-control executor after it, as in RisingWave before PR #15948
    /// (#14910's own mechanism needs it: without it, barriers pass the backfill at once and the drop's Stop
    /// barrier is collected before the fault).
    pub fn toggles(&self) -> Result<Toggles, BugError> {
        Ok(self
            .bug
            .toggles(self.mode)?
            .with(epochlab_stream::task::build::BackfillRateLimit::FlowControl))
    }

    /// Why these parameters cannot produce the interleaving, if they cannot.
    pub fn impossible(&self) -> Option<String> {
        if let Err(e) = self.toggles() {
            return Some(e.to_string());
        }
        if self.rows == 0 {
            return Some("the table is empty: there is no backfill to persist".into());
        }
        None
    }
}

/// Called with the scenario's cluster once it has started (to observe it from outside, e.g. metrics).
pub type ClusterHook = Box<dyn FnOnce(Arc<Cluster>) + Send>;

/// A tracing layer for the run's subscriber (e.g. OpenTelemetry export).
pub type TracingLayer =
    Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

/// Make `layer` (if any) and `extra` the thread's subscriber for the run. Not `.with(Option<layer>)`: an
/// optional layer does not pass the subscriber on to the layers inside it (`on_register_dispatch`), which the
/// telemetry's log format needs to find trace ids.
pub fn install<L>(layer: Option<TracingLayer>, extra: L) -> tracing::subscriber::DefaultGuard
where
    L: tracing_subscriber::Layer<
            tracing_subscriber::layer::Layered<TracingLayer, tracing_subscriber::Registry>,
        > + tracing_subscriber::Layer<tracing_subscriber::Registry>
        + Send
        + Sync
        + 'static,
{
    match layer {
        Some(layer) => {
            tracing::subscriber::set_default(tracing_subscriber::registry().with(layer).with(extra))
        }
        None => tracing::subscriber::set_default(tracing_subscriber::registry().with(extra)),
    }
}

/// Ways to observe a run from outside.
#[derive(Default)]
pub struct ReproHooks {
    pub on_cluster: Option<ClusterHook>,
    pub tracing_layer: Option<TracingLayer>,
    /// One trace for the run (a root span `run`), or one per epoch.
    pub trace_per: TracePer,
    /// Told whenever the run's virtual time moves on (pacing, metrics sampling); see [`TimeObserver`].
    pub time_observers: Vec<Arc<dyn TimeObserver>>,
    /// The store meta keeps its rows in, where the run's cluster configuration does not decide
    /// (`--meta-store`); `None`: the configuration's.
    pub meta_store: Option<epochlab_meta::store::MetaBackend>,
    /// A test-only mutation laid over the run's toggles (random plans only): a check must catch it.
    pub mutation: Option<fn(epochlab_common::Toggles) -> epochlab_common::Toggles>,
}

/// Run the scenario on the deterministic runtime.
pub fn run_repro(params: &ReproParams) -> SimOutput<ReproReport> {
    run_repro_with(params, ReproHooks::default())
}

/// How much virtual time a repro run may take before it is reported `stuck` (a backstop: every phase of the
/// scenario has its own, tighter budget).
pub const REPRO_TIME_LIMIT: Duration = Duration::from_secs(3600);

/// Run the scenario with `hooks`.
pub fn run_repro_with(params: &ReproParams, hooks: ReproHooks) -> SimOutput<ReproReport> {
    let p = params.clone();
    // The capture must see the clock, which exists only inside the run: install it there, per thread,
    // with the caller's layer in the same subscriber.
    let observers = hooks.time_observers;
    let (origin, limit) = (DEFAULT_ORIGIN_UNIX_MS, REPRO_TIME_LIMIT);
    let out = try_run_observed(p.seed, origin, limit, observers, move |ctx| async move {
        let label = match p.bug {
            BugId::Rw14910 => format!("{} seed={}", p.mode.as_str(), p.seed),
            bug => format!("{bug} {} seed={}", p.mode.as_str(), p.seed),
        };
        epochlab_common::clock::label_current_run(label);
        let capture = Capture::new(ctx.clock.clone());
        let _guard = install(hooks.tracing_layer, capture.clone());
        let _trace = trace::enter_run(hooks.trace_per, ctx.clock.clone(), || {
            vspan!(
                parent: None,
                "run",
                ctx.clock,
                mode = p.mode.as_str(),
                bug = p.bug.as_str(),
                seed = p.seed as i64,
                scenario = p.bug.scenario_name().as_str(),
                rows = p.rows as i64,
                vnodes = p.vnodes as i64,
                parallelism = p.parallelism as i64,
                compute_nodes = p.compute_nodes as i64,
                meta_nodes = p.meta_nodes as i64,
                rate_limit = p.rate_limit as i64,
                barrier_latency_ms = p.barrier_latency_ms as i64,
                checkpoint_frequency = p.checkpoint_frequency as i64,
                persist_check = p.persist_check
            )
        });
        let scenario = p.bug.info().scenario;
        let hook = hooks.on_cluster;
        scenario(ScenarioRun {
            ctx,
            params: p,
            capture,
            hook,
        })
        .await
    });
    out.map(|value| match value {
        Ok(report) => report,
        Err(RunError::TimedOut(timed_out)) => {
            let mut report = ReproReport::new(params.clone());
            report.outcome = Outcome::Stuck;
            report.error = Some(format!(
                "the run exceeded its virtual time limit of {} s (a step without its own budget: please report \
                 it); last events: {}",
                timed_out.limit.as_secs(),
                timed_out.tail.join(" | ")
            ));
            report
        }
        Err(RunError::Panicked(p)) => ReproReport::new(params.clone()).panicked(p),
    })
}
