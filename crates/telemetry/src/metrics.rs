//! The metrics: names, units and labels per the project's conventions (`epochlab_` prefix, base units,
//! counters end in `_total`, bounded labels).
//!
//! A mode exports nothing until its first run starts (or, in a soak, until the campaign starts: the soak's own
//! series). From then on every series without a table, actor, vnode or signature label exists, counters at 0.
//! Counters with such a label are born at 0 as well: a new one is exported at 0 first, and the growth it
//! already had is added at the next refresh, so that `increase()` and `rate()` see every step, even the first
//! (Prometheus takes a counter's first sample as its start). Table, actor and vnode gauges appear when their
//! table or actor does.
//!
//! Runs are observed per worker (a soak's worker thread; `repro` has one, worker 0): each worker has at most
//! one current run. Counters and histograms are sums over every run a worker ever had: a run's growth is folded
//! in as deltas from its own cursors, at each scrape and once more when it ends ([`Metrics::end_run`]), after
//! which its cluster is released. Gauges carry a `worker` label and show that worker's current (or last) run
//! of the mode. So a soak of any number of seeds keeps at most `workers` clusters alive.
//!
//! The soak's own series (`epochlab_soak_*`) count finished seeds by outcome and failure signature, the seeds
//! in progress, and the virtual and wall time the seeds took; `repro` exports them at 0.

mod refresh;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use epochlab_sim::Cluster;
use epochlab_sim::checkers::INVARIANT_LABELS;
use epochlab_stream::executor::{FailureReason, StatefulExecutorKind};
use prometheus::proto::MetricFamily;
use prometheus::{
    CounterVec, Encoder, GaugeVec, HistogramOpts, HistogramVec, IntCounter, IntCounterVec,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

use crate::pace::WallStart;

/// Why storage rejects writes: a flush from a reset node's old generation, or rows of an unregistered table
/// dropped at commit.
const REJECT_REASONS: [&str; 2] = ["stale_generation", "unregistered_table"];

/// At most this many distinct failure signatures get a series of their own; the rest are counted under
/// [`OTHER_SIGNATURE`].
pub const MAX_SIGNATURES: usize = 64;

/// The signature label of failures beyond the first [`MAX_SIGNATURES`] distinct ones.
pub const OTHER_SIGNATURE: &str = "other";

/// One simulated run whose cluster the metrics read.
pub struct RunSource {
    pub mode: String,
    pub cluster: Arc<Cluster>,
    /// Wall-clock Unix milliseconds at which the run started: simulated times are shifted onto it.
    pub wall_origin_ms: u64,
}

impl RunSource {
    /// A run that started now.
    pub fn starting_now(mode: &str, cluster: Arc<Cluster>) -> Self {
        Self::started_at(mode, cluster, WallStart::now())
    }

    /// A run that started at `start` (the start its pacer and its timeline measure from).
    pub fn started_at(mode: &str, cluster: Arc<Cluster>, start: WallStart) -> Self {
        Self {
            mode: mode.to_string(),
            cluster,
            wall_origin_ms: start.unix_ms(),
        }
    }
}

/// How a soak's seed ended (`epochlab_soak_seeds_total`'s `outcome`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedOutcome {
    Passed,
    Failed,
    Stuck,
}

impl SeedOutcome {
    pub const ALL: [SeedOutcome; 3] =
        [SeedOutcome::Passed, SeedOutcome::Failed, SeedOutcome::Stuck];

    pub fn as_str(self) -> &'static str {
        match self {
            SeedOutcome::Passed => "passed",
            SeedOutcome::Failed => "failed",
            SeedOutcome::Stuck => "stuck",
        }
    }
}

impl std::str::FromStr for SeedOutcome {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        SeedOutcome::ALL
            .into_iter()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| format!("not a seed outcome: `{s}`"))
    }
}

/// A finished seed of a soak.
#[derive(Clone, Copy, Debug)]
pub struct FinishedSeed<'a> {
    pub mode: &'a str,
    pub outcome: SeedOutcome,
    /// The masked error of a failed or stuck seed.
    pub signature: Option<&'a str>,
    pub virtual_time: Duration,
    pub wall_time: Duration,
}

struct Families {
    epochs: EpochFamilies,
    backfill: BackfillFamilies,
    health: HealthFamilies,
    executors: ExecutorFamilies,
    soak: SoakFamilies,
}

/// The stateful executors' caches and state writes, per executor kind.
struct ExecutorFamilies {
    cache_lookups: IntCounterVec,
    cache_misses: IntCounterVec,
    cache_entries: IntGaugeVec,
    dirty_groups: IntGaugeVec,
    state_inserts: IntCounterVec,
    state_deletes: IntCounterVec,
}

/// Epochs, barriers, checkpoints and recoveries.
struct EpochFamilies {
    injected_ts: GaugeVec,
    committed_ts: GaugeVec,
    lag: GaugeVec,
    inflight: IntGaugeVec,
    latency: HistogramVec,
    checkpoints: IntCounterVec,
    recoveries: IntCounterVec,
    recovery_duration: HistogramVec,
    /// Meta: another meta became leader; and which leads (0 while none).
    leader_changes: IntCounterVec,
    meta_leader: IntGaugeVec,
}

/// Backfill progress per table, actor and vnode.
struct BackfillFamilies {
    vnode_persisted: GaugeVec,
    vnode_committed: IntGaugeVec,
    vnode_finished: IntGaugeVec,
    backfill_rows: IntCounterVec,
    state_missing: IntCounterVec,
}

/// Storage, actor failures and invariant violations.
struct HealthFamilies {
    registered_tables: IntGaugeVec,
    uncommitted_bytes: IntGaugeVec,
    compaction_tasks: IntCounterVec,
    compaction_failures: IntCounterVec,
    write_stops: IntCounterVec,
    write_stopped_groups: IntGaugeVec,
    l0_sub_levels: IntGaugeVec,
    rejected_writes: IntCounterVec,
    actor_failures: IntCounterVec,
    expr_errors: IntCounterVec,
    invariant_violations: IntCounterVec,
}

/// A soak's own series.
struct SoakFamilies {
    seeds: IntCounterVec,
    failures: IntCounterVec,
    in_progress: IntGaugeVec,
    virtual_time: CounterVec,
    wall_time: CounterVec,
}

pub struct Metrics {
    registry: Registry,
    f: Families,
    workers: usize,
    state: Mutex<State>,
}

/// A run being observed, with how much of each of its counters and sample logs has been folded in.
struct Live {
    source: RunSource,
    cursors: BTreeMap<String, u64>,
}

/// Counters with a table, actor or signature label: which series exist, and the growth of those born lately,
/// held back until a refresh has shown them at 0.
#[derive(Default)]
struct Births {
    born: BTreeSet<String>,
    /// Born since the last refresh ended: the next one shows them at 0.
    fresh: Vec<(IntCounter, u64)>,
    /// Shown at 0 by the last refresh: added at the start of the next one.
    shown: Vec<(IntCounter, u64)>,
}

impl Births {
    /// Add `delta` to the series `id` of `counter`: now, or once it has been shown at 0 if the series is new.
    fn add(&mut self, id: String, counter: IntCounter, delta: u64) {
        if self.born.insert(id) {
            self.fresh.push((counter, delta));
        } else if delta > 0 {
            counter.inc_by(delta);
        }
    }

    /// A refresh starts: add what the series it showed at 0 last time had grown by.
    fn settle(&mut self) {
        for (counter, delta) in self.shown.drain(..) {
            counter.inc_by(delta);
        }
    }

    /// A refresh ends: what it shows at 0 is added at the next one.
    fn seal(&mut self) {
        self.shown.append(&mut self.fresh);
    }
}

#[derive(Default)]
struct State {
    /// Each worker's current run.
    live: BTreeMap<usize, Live>,
    /// Per (mode, worker): the (table, vnode) series its latest run set, removed when its next run starts.
    vnode_series: BTreeMap<(String, usize), BTreeSet<(String, String)>>,
    /// Runs replaced without [`Metrics::end_run`]: dropped outside the simulation that replaced them.
    released: Vec<RunSource>,
    /// The signatures with a series of their own (at most [`MAX_SIGNATURES`]).
    signatures: BTreeSet<String>,
    births: Births,
}

fn latency_buckets() -> Vec<f64> {
    prometheus::exponential_buckets(0.001, 2.0, 18).expect("valid buckets")
}

/// Makes the families, each registered once.
struct Make<'a>(&'a Registry);

impl Make<'_> {
    fn register<C: prometheus::core::Collector + Clone + 'static>(&self, c: C) -> C {
        self.0.register(Box::new(c.clone())).expect("unique metric");
        c
    }

    fn gauge(&self, name: &str, help: &str, labels: &[&str]) -> GaugeVec {
        self.register(GaugeVec::new(Opts::new(name, help), labels).expect("valid gauge"))
    }

    fn igauge(&self, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
        self.register(IntGaugeVec::new(Opts::new(name, help), labels).expect("valid gauge"))
    }

    fn counter(&self, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
        self.register(IntCounterVec::new(Opts::new(name, help), labels).expect("valid counter"))
    }

    fn fcounter(&self, name: &str, help: &str, labels: &[&str]) -> CounterVec {
        self.register(CounterVec::new(Opts::new(name, help), labels).expect("valid counter"))
    }

    /// A histogram of seconds by mode.
    fn histogram(&self, name: &str, help: &str) -> HistogramVec {
        let opts = HistogramOpts::new(name, help).buckets(latency_buckets());
        self.register(HistogramVec::new(opts, &["mode"]).expect("valid histogram"))
    }
}

const MODE: &[&str] = &["mode"];
const MODE_WORKER: &[&str] = &["mode", "worker"];
const VNODE: &[&str] = &["mode", "worker", "table_id", "vnode"];
// Per executor kind, summed over its actors: every series exists from a run's start (each actor's own
// figures are on its `commit executor state` spans).
const EXECUTOR: &[&str] = &["mode", "executor"];
const EXECUTOR_GAUGE: &[&str] = &["mode", "worker", "executor"];

impl ExecutorFamilies {
    fn register(m: &Make<'_>) -> Self {
        Self {
            cache_lookups: m.counter(
                "epochlab_executor_cache_lookups_total",
                "Lookups of a stateful executor's cache (join keys, groups, top-N groups).",
                EXECUTOR,
            ),
            cache_misses: m.counter(
                "epochlab_executor_cache_misses_total",
                "Cache lookups that loaded the entry from the executor's state tables (every lookup after a recovery starts as one).",
                EXECUTOR,
            ),
            cache_entries: m.igauge(
                "epochlab_executor_cache_entries",
                "Entries in a stateful executor's cache now.",
                EXECUTOR_GAUGE,
            ),
            dirty_groups: m.igauge(
                "epochlab_agg_dirty_groups",
                "Groups an aggregation changed in the epoch its last barrier ended.",
                EXECUTOR_GAUGE,
            ),
            state_inserts: m.counter(
                "epochlab_executor_state_inserts_total",
                "Rows a stateful executor inserted into its state tables (an update counts once here and once in deletes).",
                EXECUTOR,
            ),
            state_deletes: m.counter(
                "epochlab_executor_state_deletes_total",
                "Rows a stateful executor deleted from its state tables.",
                EXECUTOR,
            ),
        }
    }
}

impl EpochFamilies {
    fn register(m: &Make<'_>) -> Self {
        Self {
            injected_ts: m.gauge(
                "epochlab_epoch_injected_timestamp_seconds",
                "Physical time of the last injected epoch (its curr), shifted onto the wall clock.",
                MODE_WORKER,
            ),
            committed_ts: m.gauge(
                "epochlab_epoch_committed_timestamp_seconds",
                "Physical time of the max committed epoch, shifted onto the wall clock.",
                MODE_WORKER,
            ),
            lag: m.gauge(
                "epochlab_epoch_lag_seconds",
                "Injected minus committed epoch, in seconds of simulated time.",
                MODE_WORKER,
            ),
            inflight: m.igauge(
                "epochlab_barrier_inflight",
                "Barriers injected and not yet completed.",
                MODE_WORKER,
            ),
            latency: m.histogram(
                "epochlab_barrier_latency_seconds",
                "Barrier latency from inject to fully collected, simulated seconds.",
            ),
            checkpoints: m.counter(
                "epochlab_checkpoints_total",
                "Checkpoint epochs committed.",
                MODE,
            ),
            recoveries: m.counter(
                "epochlab_recoveries_total",
                "Recoveries after a failure.",
                MODE,
            ),
            recovery_duration: m.histogram(
                "epochlab_recovery_duration_seconds",
                "Duration of a recovery, simulated seconds.",
            ),
            leader_changes: m.counter(
                "epochlab_meta_leader_changes_total",
                "Times another meta became leader (a leader restarted within its lease is no change).",
                MODE,
            ),
            meta_leader: m.igauge(
                "epochlab_meta_leader",
                "The meta node leading (meta-N: N), 0 while none leads.",
                MODE_WORKER,
            ),
        }
    }
}

impl BackfillFamilies {
    fn register(m: &Make<'_>) -> Self {
        Self {
            vnode_persisted: m.gauge(
                "epochlab_backfill_vnode_persisted_epoch_timestamp_seconds",
                "Epoch (physical time, shifted onto the wall clock) of the last backfill progress row written for a vnode.",
                VNODE,
            ),
            vnode_committed: m.igauge(
                "epochlab_backfill_vnode_committed",
                "1 when the vnode's last progress row is in committed storage of a registered table.",
                VNODE,
            ),
            vnode_finished: m.igauge(
                "epochlab_backfill_vnode_finished",
                "1 when the vnode's last progress row says its backfill finished.",
                VNODE,
            ),
            backfill_rows: m.counter(
                "epochlab_backfill_rows_total",
                "Snapshot rows a backfill actor has read.",
                &["mode", "table_id", "actor_id"],
            ),
            state_missing: m.counter(
                "epochlab_backfill_state_missing_total",
                "Backfill progress rows found missing from storage (`row [...] not found`).",
                &["mode", "table_id"],
            ),
        }
    }
}

impl HealthFamilies {
    fn register(m: &Make<'_>) -> Self {
        Self {
            registered_tables: m.igauge(
                "epochlab_storage_registered_tables",
                "Tables registered in the storage version.",
                MODE_WORKER,
            ),
            uncommitted_bytes: m.igauge(
                "epochlab_storage_uncommitted_bytes",
                "Bytes flushed on compute nodes and not yet synced.",
                MODE_WORKER,
            ),
            compaction_tasks: m.counter(
                "epochlab_compaction_tasks_total",
                "Compaction tasks run, one per compaction group whose L0 reached the trigger.",
                MODE,
            ),
            compaction_failures: m.counter(
                "epochlab_compaction_failures_total",
                "Compaction tasks that failed, by reason (`filter_key_extractor_not_found`: the task's input \
                 holds data of a table the catalog does not know, RisingWave #15144).",
                &["mode", "reason"],
            ),
            write_stops: m.counter(
                "epochlab_storage_write_stops_total",
                "Times a compaction group's writes stopped: its L0 reached the write-stop limit.",
                MODE,
            ),
            write_stopped_groups: m.igauge(
                "epochlab_storage_write_stopped_groups",
                "Compaction groups whose writes are stopped now (their nodes hold back syncs: barriers stall).",
                MODE_WORKER,
            ),
            l0_sub_levels: m.igauge(
                "epochlab_storage_max_l0_sub_levels",
                "The most L0 sub-levels of any compaction group now (commits since its last compaction).",
                MODE_WORKER,
            ),
            rejected_writes: m.counter(
                "epochlab_storage_rejected_writes_total",
                "Writes storage refused or dropped.",
                &["mode", "reason"],
            ),
            actor_failures: m.counter(
                "epochlab_actor_failures_total",
                "Actors that failed.",
                &["mode", "reason"],
            ),
            expr_errors: m.counter(
                "epochlab_expr_errors_total",
                "Expression errors of non-strict streaming evaluation (a NULL, or a row a filter drops).",
                &["mode", "executor", "error"],
            ),
            invariant_violations: m.counter(
                "epochlab_invariant_violations_total",
                "Invariant violations the checkers found (I1 commit order, I2 unregister in use, I2 zombie \
                 access by the detector, I3 table set, oracle).",
                &["mode", "invariant"],
            ),
        }
    }
}

impl SoakFamilies {
    fn register(m: &Make<'_>) -> Self {
        Self {
            seeds: m.counter(
                "epochlab_soak_seeds_total",
                "Seeds a soak has finished, by outcome (passed, failed or stuck).",
                &["mode", "outcome"],
            ),
            failures: m.counter(
                "epochlab_soak_failures_total",
                "Failed and stuck seeds by signature (the error with numbers masked); signatures beyond the \
                 first 64 count as `other`.",
                &["mode", "signature"],
            ),
            in_progress: m.igauge(
                "epochlab_soak_seeds_in_progress",
                "Seeds running now.",
                MODE,
            ),
            virtual_time: m.fcounter(
                "epochlab_soak_virtual_seconds_total",
                "Simulated time of the finished seeds; its rate is simulated seconds per wall-clock second.",
                MODE,
            ),
            wall_time: m.fcounter(
                "epochlab_soak_wall_seconds_total",
                "Wall-clock time the finished seeds took, summed over workers; rate(virtual) / rate(wall) is \
                 one worker's speed-up.",
                MODE,
            ),
        }
    }
}

impl Families {
    fn register(registry: &Registry) -> Self {
        let m = Make(registry);
        Self {
            epochs: EpochFamilies::register(&m),
            backfill: BackfillFamilies::register(&m),
            health: HealthFamilies::register(&m),
            executors: ExecutorFamilies::register(&m),
            soak: SoakFamilies::register(&m),
        }
    }

    /// The soak's series of `mode`, at 0.
    fn init_soak(&self, mode: &str) {
        for o in SeedOutcome::ALL {
            self.soak.seeds.with_label_values(&[mode, o.as_str()]);
        }
        self.soak
            .failures
            .with_label_values(&[mode, OTHER_SIGNATURE]);
        self.soak.in_progress.with_label_values(&[mode]);
        self.soak.virtual_time.with_label_values(&[mode]);
        self.soak.wall_time.with_label_values(&[mode]);
    }

    /// Every series of `mode` and `worker` without a table, actor, vnode or signature label, counters at 0
    /// (timestamps appear with their first epoch: a 0 would read as 1970).
    fn init_run(&self, mode: &str, worker: usize) {
        let labels = [mode, &worker.to_string()];
        self.epochs.lag.with_label_values(&labels);
        self.epochs.inflight.with_label_values(&labels);
        self.health.registered_tables.with_label_values(&labels);
        self.health.uncommitted_bytes.with_label_values(&labels);
        self.health.write_stopped_groups.with_label_values(&labels);
        self.health.l0_sub_levels.with_label_values(&labels);
        self.health.compaction_tasks.with_label_values(&[mode]);
        self.health.write_stops.with_label_values(&[mode]);
        for r in epochlab_storage::CompactionError::REASONS {
            self.health
                .compaction_failures
                .with_label_values(&[mode, r]);
        }
        self.epochs.latency.with_label_values(&[mode]);
        self.epochs.checkpoints.with_label_values(&[mode]);
        self.epochs.recoveries.with_label_values(&[mode]);
        self.epochs.recovery_duration.with_label_values(&[mode]);
        self.epochs.leader_changes.with_label_values(&[mode]);
        self.epochs.meta_leader.with_label_values(&labels);
        for r in REJECT_REASONS {
            self.health.rejected_writes.with_label_values(&[mode, r]);
        }
        for r in FailureReason::ALL {
            self.health
                .actor_failures
                .with_label_values(&[mode, r.as_str()]);
        }
        for i in INVARIANT_LABELS {
            self.health
                .invariant_violations
                .with_label_values(&[mode, i]);
        }
        for k in StatefulExecutorKind::ALL {
            let e = &self.executors;
            let (kind, w) = ([mode, k.as_str()], [mode, labels[1], k.as_str()]);
            e.cache_lookups.with_label_values(&kind);
            e.cache_misses.with_label_values(&kind);
            e.state_inserts.with_label_values(&kind);
            e.state_deletes.with_label_values(&kind);
            e.cache_entries.with_label_values(&w);
            if k.is_agg() {
                e.dirty_groups.with_label_values(&w);
            }
        }
        self.init_soak(mode);
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Metrics for `repro`'s runs, on one worker: nothing until a run starts.
    pub fn new() -> Self {
        Self::with_workers(&[], 1)
    }

    /// Metrics for a soak of `soak_modes` on workers `0..workers` (its `--jobs`): the soak's series of those
    /// modes exist at 0 from now on; a mode's other series from its first seed's start.
    pub fn with_workers(soak_modes: &[&str], workers: usize) -> Self {
        let registry = Registry::new();
        let f = Families::register(&registry);
        for mode in soak_modes {
            f.init_soak(mode);
        }
        Self {
            registry,
            f,
            workers: workers.max(1),
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A run of `mode` on `worker` is about to start: the mode's series exist from now on (counters at 0), before
    /// the run has a cluster to read.
    pub fn prepare_run(&self, worker: usize, mode: &str) {
        self.f.init_run(mode, worker);
    }

    /// Read a run's cluster from now on, as worker 0's current run (see [`Metrics::start_run`]).
    pub fn add_run(&self, source: RunSource) {
        self.start_run(0, source);
    }

    /// Read `source`'s cluster from now on as `worker`'s current run, until [`Metrics::end_run`]; the mode's
    /// series exist from now on. A current run the worker still has is folded in and released first (and
    /// dropped later, outside the simulation that is starting: this is called from inside it). The table and
    /// vnode gauges that the worker's previous run of the same mode set are removed: they described a run that
    /// is gone.
    pub fn start_run(&self, worker: usize, source: RunSource) {
        assert!(
            worker < self.workers,
            "worker {worker} of {} (the worker label is bounded by --jobs)",
            self.workers
        );
        self.f.init_run(&source.mode, worker);
        let mut state = self.lock();
        let State {
            live,
            vnode_series,
            released,
            births,
            ..
        } = &mut *state;
        if let Some(mut old) = live.remove(&worker) {
            let series = refresh::run(&self.f, births, worker, &old.source, &mut old.cursors);
            vnode_series.insert((old.source.mode.clone(), worker), series);
            released.push(old.source);
        }
        let slot = (source.mode.clone(), worker);
        for (table, vnode) in vnode_series.remove(&slot).unwrap_or_default() {
            let labels = [slot.0.as_str(), &worker.to_string(), &table, &vnode];
            let _ = self.f.backfill.vnode_persisted.remove_label_values(&labels);
            let _ = self.f.backfill.vnode_committed.remove_label_values(&labels);
            let _ = self.f.backfill.vnode_finished.remove_label_values(&labels);
        }
        let cursors = BTreeMap::new();
        live.insert(worker, Live { source, cursors });
    }

    /// `worker`'s current run has finished: fold in its final values and release its cluster (dropped here, on
    /// the caller's thread). Its gauges keep their last values until the worker's next run of the mode.
    pub fn end_run(&self, worker: usize) {
        let (ended, released) = {
            let mut state = self.lock();
            let State {
                live,
                vnode_series,
                released,
                births,
                ..
            } = &mut *state;
            let ended = live.remove(&worker).map(|mut run| {
                let series = refresh::run(&self.f, births, worker, &run.source, &mut run.cursors);
                vnode_series.insert((run.source.mode.clone(), worker), series);
                run
            });
            (ended, std::mem::take(released))
        };
        drop(ended);
        drop(released);
    }

    /// Runs whose clusters are still held: at most one per worker.
    pub fn live_runs(&self) -> usize {
        let state = self.lock();
        state.live.len() + state.released.len()
    }

    /// A soak's seed of `mode` has started.
    pub fn seed_started(&self, mode: &str) {
        self.f.soak.in_progress.with_label_values(&[mode]).inc();
    }

    /// A soak's seed has finished (it had started with [`Metrics::seed_started`]).
    pub fn seed_finished(&self, seed: FinishedSeed<'_>) {
        let mode = seed.mode;
        self.f.soak.in_progress.with_label_values(&[mode]).dec();
        self.f
            .soak
            .seeds
            .with_label_values(&[mode, seed.outcome.as_str()])
            .inc();
        self.f
            .soak
            .virtual_time
            .with_label_values(&[mode])
            .inc_by(seed.virtual_time.as_secs_f64());
        self.f
            .soak
            .wall_time
            .with_label_values(&[mode])
            .inc_by(seed.wall_time.as_secs_f64());
        if let Some(signature) = seed.signature {
            let mut state = self.lock();
            let label = if state.signatures.contains(signature) {
                signature
            } else if state.signatures.len() < MAX_SIGNATURES {
                state.signatures.insert(signature.to_string());
                signature
            } else {
                OTHER_SIGNATURE
            };
            let counter = self.f.soak.failures.with_label_values(&[mode, label]);
            let id = format!("soak_failures/{mode}/{label}");
            if label == OTHER_SIGNATURE {
                // Exists at 0 from the campaign's start.
                state.births.born.insert(id.clone());
            }
            state.births.add(id, counter, 1);
        }
    }

    /// Pull every value from the runs' stats, then encode them in Prometheus' text format.
    pub fn render(&self) -> String {
        let released = self.refresh();
        drop(released);
        let mut buf = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        String::from_utf8(buf).unwrap_or_default()
    }

    /// Every series of `mode`, each current run folded in first: one sample of a run's timeline. Runs released
    /// meanwhile stay held until [`Metrics::end_run`] (this is called from inside a simulation).
    pub fn families_of(&self, mode: &str) -> Vec<MetricFamily> {
        let released = self.refresh();
        self.lock().released.extend(released);
        let mut families = self.registry.gather();
        for family in &mut families {
            let of_mode = |m: &prometheus::proto::Metric| {
                m.get_label()
                    .iter()
                    .any(|l| l.name() == "mode" && l.value() == mode)
            };
            let metrics: Vec<_> = family.take_metric().into_iter().filter(of_mode).collect();
            family.set_metric(metrics);
        }
        families.retain(|f| !f.get_metric().is_empty());
        families
    }

    /// Fold in every current run; hands back the released runs, to be dropped once the lock is let go.
    fn refresh(&self) -> Vec<RunSource> {
        let mut state = self.lock();
        let State {
            live,
            vnode_series,
            births,
            released,
            ..
        } = &mut *state;
        births.settle();
        for (&worker, run) in live.iter_mut() {
            let series = refresh::run(&self.f, births, worker, &run.source, &mut run.cursors);
            vnode_series.insert((run.source.mode.clone(), worker), series);
        }
        births.seal();
        std::mem::take(released)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Weak;

    use epochlab_sim::Mode;
    use epochlab_sim::workload::PlanReport;
    use epochlab_sim::{ReproHooks, ReproParams, ReproReport, run_repro_with};

    use super::*;

    /// The sum of the samples of `name` whose labels include each of `labels` (`key="value"`).
    fn sum(text: &str, name: &str, labels: &[&str]) -> f64 {
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
            .filter(|l| labels.iter().all(|want| l.contains(want)))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum()
    }

    /// One buggy run of `seed` observed as `worker`'s run, ended; its report and a handle on its cluster.
    fn run_on(metrics: &Arc<Metrics>, worker: usize, seed: u64) -> (ReproReport, Weak<Cluster>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let m = metrics.clone();
        let hooks = ReproHooks {
            on_cluster: Some(Box::new(move |cluster| {
                tx.send(Arc::downgrade(&cluster)).unwrap();
                m.start_run(worker, RunSource::starting_now("buggy", cluster));
            })),
            tracing_layer: None,
            ..Default::default()
        };
        let params = ReproParams {
            seed,
            mode: Mode::Buggy,
            ..Default::default()
        };
        let out = run_repro_with(&params, hooks);
        metrics.end_run(worker);
        let unobserved = epochlab_sim::run_repro(&params);
        assert_eq!(
            out.digest, unobserved.digest,
            "observing a run changes nothing"
        );
        assert_eq!(out.log.lines(), unobserved.log.lines());
        (out.value, rx.recv().unwrap())
    }

    /// Three metas: a leader down 20 s hands the lease over; the counter says one change, the gauge the new
    /// leader (both exist at 0 before the run reads its cluster).
    #[test]
    fn a_leader_change_is_counted_and_the_leader_shown() {
        let metrics = Arc::new(Metrics::with_workers(&["fixed"], 1));
        metrics.prepare_run(0, "fixed");
        let text = metrics.render();
        assert_eq!(sum(&text, "epochlab_meta_leader_changes_total", &[]), 0.0);
        assert!(
            text.contains("epochlab_meta_leader{mode=\"fixed\",worker=\"0\"} 0"),
            "{text}"
        );
        let m = metrics.clone();
        let (old, new) = epochlab_sim::run(5, |ctx| async move {
            let config = epochlab_sim::ClusterConfig {
                meta_nodes: 3,
                ..Default::default()
            };
            let cluster = Cluster::launch(&ctx, config).await.unwrap();
            m.start_run(0, RunSource::starting_now("fixed", cluster.clone()));
            let old = cluster.meta_leader().unwrap();
            cluster.kill_meta_node(old);
            tokio::time::sleep(std::time::Duration::from_secs(20)).await;
            cluster.restart_meta_node(old);
            cluster.wait_meta_ready().await;
            let new = cluster.meta_leader().unwrap();
            m.render();
            cluster.shutdown();
            (old, new)
        })
        .value;
        assert_ne!(old, new);
        let text = metrics.render();
        assert_eq!(sum(&text, "epochlab_meta_leader_changes_total", &[]), 1.0);
        let gauge = format!("epochlab_meta_leader{{mode=\"fixed\",worker=\"0\"}} {new}");
        assert!(text.contains(&gauge), "{text}");
        metrics.end_run(0);
    }

    #[test]
    fn runs_of_several_workers_are_summed_and_their_clusters_released() {
        let metrics = Arc::new(Metrics::with_workers(&["buggy"], 2));
        let runs: Vec<(ReproReport, Weak<Cluster>)> = std::thread::scope(|s| {
            let a = s.spawn(|| [run_on(&metrics, 0, 1), run_on(&metrics, 0, 2)]);
            let b = s.spawn(|| [run_on(&metrics, 1, 3)]);
            let mut runs = a.join().unwrap().to_vec();
            runs.extend(b.join().unwrap());
            runs
        });
        for (report, cluster) in &runs {
            assert_eq!(report.outcome, epochlab_sim::Outcome::Failed);
            assert!(
                cluster.upgrade().is_none(),
                "an ended run's cluster is released"
            );
        }
        assert_eq!(metrics.live_runs(), 0);
        // A table's counters are born at 0: the first scrape after the runs shows them at 0 if they were born
        // at the end of a run; the next one their counts.
        metrics.render();
        let text = metrics.render();
        let recoveries: u64 = runs.iter().map(|(r, _)| r.recoveries).sum();
        assert!(recoveries >= 3);
        let got = sum(&text, "epochlab_recoveries_total", &[r#"mode="buggy""#]);
        assert_eq!(got as u64, recoveries, "{text}");
        let missing = sum(&text, "epochlab_backfill_state_missing_total", &[]);
        assert!(missing >= 3.0, "every run found its row missing: {missing}");
        let checkpoints = sum(&text, "epochlab_checkpoints_total", &[]);
        let epochs: u64 = runs.iter().map(|(r, _)| r.epochs).sum();
        assert!(
            checkpoints > 0.0 && checkpoints <= epochs as f64,
            "{checkpoints}"
        );
        // Gauges: one series per worker (the worker's last run), vnode series too.
        for worker in ["0", "1"] {
            let w = format!("worker=\"{worker}\"");
            let lines = text
                .lines()
                .filter(|l| l.starts_with("epochlab_epoch_committed_timestamp_seconds{"))
                .filter(|l| l.contains(&w))
                .count();
            assert_eq!(lines, 1, "{text}");
            assert!(sum(&text, "epochlab_epoch_committed_timestamp_seconds", &[&w]) > 1e9);
            assert!(
                text.lines().any(|l| l
                    .starts_with("epochlab_backfill_vnode_persisted_epoch_timestamp_seconds{")
                    && l.contains(&w)),
                "{text}"
            );
        }
        assert!(!text.contains("worker=\"2\""));
    }

    #[test]
    fn a_run_replaced_without_end_is_folded_in_and_released() {
        let metrics = Arc::new(Metrics::new());
        let (tx, rx) = std::sync::mpsc::channel();
        let mut reports = Vec::new();
        for seed in [5, 6] {
            let m = metrics.clone();
            let tx = tx.clone();
            let hooks = ReproHooks {
                on_cluster: Some(Box::new(move |cluster| {
                    tx.send(Arc::downgrade(&cluster)).unwrap();
                    m.add_run(RunSource::starting_now("buggy", cluster));
                })),
                tracing_layer: None,
                ..Default::default()
            };
            let params = ReproParams {
                seed,
                mode: Mode::Buggy,
                ..Default::default()
            };
            reports.push(run_repro_with(&params, hooks).value);
        }
        let first: Weak<Cluster> = rx.recv().unwrap();
        let text = metrics.render();
        assert!(first.upgrade().is_none(), "released once replaced");
        assert!(
            rx.recv().unwrap().upgrade().is_some(),
            "the current run is read"
        );
        let recoveries: u64 = reports.iter().map(|r| r.recoveries).sum();
        let got = sum(&text, "epochlab_recoveries_total", &[]);
        assert_eq!(got as u64, recoveries);
    }

    #[test]
    fn a_mode_exports_nothing_before_its_run_and_every_instance_id_is_new() {
        let text = Metrics::new().render();
        assert!(
            !text.lines().any(|l| l.starts_with("epochlab_")),
            "no run has started: {text}"
        );
        assert_ne!(
            crate::instance_id("buggy", 1),
            crate::instance_id("buggy", 1)
        );
    }

    /// Run seed 21's random plan (on the engine of 2024, where #14910's window is) in `mode` as worker 0's
    /// run; what the metrics showed as the run started.
    fn run_plan_21(metrics: &Arc<Metrics>, mode: Mode) -> (PlanReport, String) {
        let g = epochlab_sim::workload::GenParams {
            flow_control: true,
            ..Default::default()
        };
        let plan = epochlab_sim::workload::generate(21, &g);
        let (tx, rx) = std::sync::mpsc::channel();
        let m = metrics.clone();
        let hooks = ReproHooks {
            on_cluster: Some(Box::new(move |cluster| {
                m.start_run(0, RunSource::starting_now(mode.as_str(), cluster));
                tx.send(m.render()).unwrap();
            })),
            ..Default::default()
        };
        let run = epochlab_sim::BugMode::of_14910(mode);
        let report = epochlab_sim::workload::run_plan(&plan, run, hooks).value;
        metrics.end_run(0);
        (report, rx.recv().unwrap())
    }

    #[test]
    fn invariant_violations_are_counted_per_mode_from_zero() {
        let metrics = Arc::new(Metrics::new());
        // Seed 21's random plan breaks I2 in purge-before-reset (RisingWave #15852's window); fixed holds.
        let (fixed, at_start) = run_plan_21(&metrics, Mode::Fixed);
        let mode = |m: &str| format!("mode=\"{m}\"");
        for invariant in INVARIANT_LABELS {
            let labels = [format!("invariant=\"{invariant}\""), mode("fixed")];
            let want = format!(
                "epochlab_invariant_violations_total{{{}}} 0",
                labels.join(",")
            );
            assert!(at_start.contains(&want), "{want}: {at_start}");
        }
        let purge = mode("purge-before-reset");
        assert!(!at_start.contains(&purge), "not started yet: {at_start}");
        let (purge_report, at_start) = run_plan_21(&metrics, Mode::PurgeBeforeReset);
        let zeros = sum(&at_start, "epochlab_invariant_violations_total", &[&purge]);
        assert_eq!(zeros, 0.0, "{at_start}");
        let text = metrics.render();
        let of = |m: &str| sum(&text, "epochlab_invariant_violations_total", &[&mode(m)]);
        assert!(fixed.violations.is_empty(), "{fixed:?}");
        assert_eq!(of("fixed"), 0.0, "the fix violates nothing: {text}");
        assert!(!purge_report.violations.is_empty(), "{purge_report:?}");
        assert!(of("purge-before-reset") >= 1.0, "{text}");
    }

    /// #15144's directed run in `mode`, observed as worker 0's run; what the metrics showed when it started
    /// and when it ended.
    fn run_15144(metrics: &Arc<Metrics>, mode: Mode) -> (String, String) {
        let (tx, rx) = std::sync::mpsc::channel();
        let m = metrics.clone();
        let hooks = ReproHooks {
            on_cluster: Some(Box::new(move |cluster| {
                m.start_run(0, RunSource::starting_now(mode.as_str(), cluster));
                tx.send(m.render()).unwrap();
            })),
            ..Default::default()
        };
        let params = ReproParams {
            bug: epochlab_sim::BugId::Rw15144,
            mode,
            ..Default::default()
        };
        run_repro_with(&params, hooks);
        let at_end = metrics.render();
        metrics.end_run(0);
        (rx.recv().unwrap(), at_end)
    }

    /// The compaction failures of #15144 are counted by reason from 0, with the write stop and the stopped
    /// group; the fix has neither.
    #[test]
    fn compaction_failures_and_write_stops_are_counted_from_zero() {
        let metrics = Arc::new(Metrics::new());
        let reason = "reason=\"filter_key_extractor_not_found\"";
        for (mode, failing) in [(Mode::Buggy, true), (Mode::Fixed, false)] {
            let (at_start, at_end) = run_15144(&metrics, mode);
            let m = format!("mode=\"{}\"", mode.as_str());
            let zero = format!("epochlab_compaction_failures_total{{{m},{reason}}} 0");
            assert!(at_start.contains(&zero), "{zero}: {at_start}");
            let failures = sum(&at_end, "epochlab_compaction_failures_total", &[&m]);
            let stops = sum(&at_end, "epochlab_storage_write_stops_total", &[&m]);
            let stopped = sum(&at_end, "epochlab_storage_write_stopped_groups", &[&m]);
            let tasks = sum(&at_end, "epochlab_compaction_tasks_total", &[&m]);
            assert!(tasks > 0.0, "{at_end}");
            if failing {
                assert!(
                    failures >= 60.0 && stops == 1.0 && stopped == 1.0,
                    "{at_end}"
                );
            } else {
                assert!(
                    failures == 0.0 && stops == 0.0 && stopped == 0.0,
                    "{at_end}"
                );
            }
        }
    }

    #[test]
    fn soak_series_exist_at_zero_and_signatures_are_bounded() {
        let metrics = Metrics::with_workers(&["fixed", "buggy"], 3);
        let text = metrics.render();
        for mode in ["fixed", "buggy"] {
            for outcome in ["passed", "failed", "stuck"] {
                let series =
                    format!("epochlab_soak_seeds_total{{mode=\"{mode}\",outcome=\"{outcome}\"}} 0");
                assert!(text.contains(&series), "{series}\n{text}");
            }
            for name in [
                format!("epochlab_soak_failures_total{{mode=\"{mode}\",signature=\"other\"}} 0"),
                format!("epochlab_soak_seeds_in_progress{{mode=\"{mode}\"}} 0"),
                format!("epochlab_soak_virtual_seconds_total{{mode=\"{mode}\"}} 0"),
                format!("epochlab_soak_wall_seconds_total{{mode=\"{mode}\"}} 0"),
            ] {
                assert!(text.contains(&name), "{name}\n{text}");
            }
        }
        assert!(
            !text.contains("epochlab_barrier_inflight"),
            "no seed ran: {text}"
        );
        let signatures: Vec<String> = (0..MAX_SIGNATURES + 6)
            .map(|i| format!("sig {i}"))
            .collect();
        for sig in signatures.iter().chain(&signatures[..2]) {
            metrics.seed_started("buggy");
            metrics.seed_finished(FinishedSeed {
                mode: "buggy",
                outcome: SeedOutcome::Failed,
                signature: Some(sig),
                virtual_time: Duration::from_millis(1500),
                wall_time: Duration::from_millis(20),
            });
        }
        metrics.seed_started("buggy");
        metrics.seed_started("buggy");
        metrics.seed_finished(FinishedSeed {
            mode: "buggy",
            outcome: SeedOutcome::Passed,
            signature: None,
            virtual_time: Duration::from_millis(500),
            wall_time: Duration::from_millis(20),
        });
        metrics.render(); // shows the signatures' series at 0
        let text = metrics.render();
        let failures = "epochlab_soak_failures_total";
        assert_eq!(sum(&text, failures, &[]), (MAX_SIGNATURES + 8) as f64);
        assert_eq!(sum(&text, failures, &["signature=\"other\""]), 6.0);
        assert_eq!(sum(&text, failures, &["signature=\"sig 0\""]), 2.0);
        let series = text.lines().filter(|l| l.starts_with(failures)).count();
        assert_eq!(
            series,
            MAX_SIGNATURES + 2,
            "64 signatures, and other per mode"
        );
        let seeds = "epochlab_soak_seeds_total";
        assert_eq!(sum(&text, seeds, &["outcome=\"failed\""]), 72.0);
        assert_eq!(sum(&text, seeds, &["outcome=\"passed\""]), 1.0);
        assert_eq!(
            sum(&text, "epochlab_soak_seeds_in_progress", &["buggy"]),
            1.0
        );
        let virtual_s = sum(&text, "epochlab_soak_virtual_seconds_total", &["buggy"]);
        assert!((virtual_s - (72.0 * 1.5 + 0.5)).abs() < 1e-6, "{virtual_s}");
        let wall_s = sum(&text, "epochlab_soak_wall_seconds_total", &["buggy"]);
        assert!((wall_s - 73.0 * 0.02).abs() < 1e-6, "{wall_s}");

        // A signature's series is born at 0: a scrape sees it at 0 before it sees it grow.
        let metrics = Metrics::with_workers(&["fixed"], 1);
        metrics.seed_started("fixed");
        metrics.seed_finished(FinishedSeed {
            mode: "fixed",
            outcome: SeedOutcome::Stuck,
            signature: Some("stuck: N barrier(s) in flight"),
            virtual_time: Duration::from_secs(180),
            wall_time: Duration::from_millis(20),
        });
        let new = [
            "mode=\"fixed\"",
            "signature=\"stuck: N barrier(s) in flight\"",
        ];
        let first = metrics.render();
        assert!(
            first.contains(&format!("{failures}{{{}}} 0", new.join(","))),
            "{first}"
        );
        assert_eq!(sum(&metrics.render(), failures, &new), 1.0);
    }
}
