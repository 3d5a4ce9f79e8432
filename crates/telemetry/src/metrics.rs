//! The metrics: names, units and labels per the project's conventions (`epochlab_` prefix, base units,
//! counters end in `_total`, bounded labels). Every series without a table, actor, vnode or signature label
//! exists from the start, for each mode that will run (and each worker); table, actor and vnode series appear
//! when their table or actor does.
//!
//! Runs are observed per worker (a soak's worker thread; `repro` has one, worker 0): each worker has at most
//! one current run. Counters and histograms are sums over every run a worker ever had: a run's growth is folded
//! in as deltas from its own cursors, at each scrape and once more when it ends ([`Metrics::end_run`]), after
//! which its cluster is released. Gauges carry a `worker` label and show that worker's current (or last) run
//! of the mode. So a soak of any number of seeds keeps at most `workers` clusters alive.
//!
//! The soak's own series (`epochlab_soak_*`) count finished seeds by outcome and failure signature, the seeds
//! in progress, and the virtual and wall time the seeds took; `repro` exports them at 0.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use epochlab_common::Epoch;
use epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS;
use epochlab_sim::Cluster;
use epochlab_sim::checkers::INVARIANT_LABELS;
use epochlab_stream::executor::FailureReason;
use prometheus::{
    CounterVec, Encoder, GaugeVec, HistogramOpts, HistogramVec, IntCounter, IntCounterVec,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

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
        let wall_origin_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Self {
            mode: mode.to_string(),
            cluster,
            wall_origin_ms,
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
    injected_ts: GaugeVec,
    committed_ts: GaugeVec,
    lag: GaugeVec,
    inflight: IntGaugeVec,
    latency: HistogramVec,
    sync: HistogramVec,
    checkpoints: IntCounterVec,
    recoveries: IntCounterVec,
    recovery_duration: HistogramVec,
    vnode_persisted: GaugeVec,
    vnode_committed: IntGaugeVec,
    vnode_finished: IntGaugeVec,
    backfill_rows: IntCounterVec,
    state_missing: IntCounterVec,
    registered_tables: IntGaugeVec,
    uncommitted_bytes: IntGaugeVec,
    rejected_writes: IntCounterVec,
    actor_failures: IntCounterVec,
    invariant_violations: IntCounterVec,
    soak_seeds: IntCounterVec,
    soak_failures: IntCounterVec,
    soak_in_progress: IntGaugeVec,
    soak_virtual: CounterVec,
    soak_wall: CounterVec,
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
}

fn latency_buckets() -> Vec<f64> {
    prometheus::exponential_buckets(0.001, 2.0, 18).expect("valid buckets")
}

impl Metrics {
    /// Metrics for runs of the given modes on one worker (`repro`), every unlabelled series present at 0.
    pub fn new(modes: &[&str]) -> Self {
        Self::with_workers(modes, 1)
    }

    /// Metrics for runs of the given modes on workers `0..workers` (a soak's `--jobs`), every series without a
    /// table, actor, vnode or signature label present at 0.
    pub fn with_workers(modes: &[&str], workers: usize) -> Self {
        let registry = Registry::new();
        let register = |c: Box<dyn prometheus::core::Collector>| {
            registry.register(c).expect("unique metric");
        };
        let gauge = |name: &str, help: &str, labels: &[&str]| {
            let g = GaugeVec::new(Opts::new(name, help), labels).expect("valid gauge");
            register(Box::new(g.clone()));
            g
        };
        let igauge = |name: &str, help: &str, labels: &[&str]| {
            let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid gauge");
            register(Box::new(g.clone()));
            g
        };
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid counter");
            register(Box::new(c.clone()));
            c
        };
        let fcounter = |name: &str, help: &str, labels: &[&str]| {
            let c = CounterVec::new(Opts::new(name, help), labels).expect("valid counter");
            register(Box::new(c.clone()));
            c
        };
        let histogram = |name: &str, help: &str| {
            let h = HistogramVec::new(
                HistogramOpts::new(name, help).buckets(latency_buckets()),
                &["mode"],
            )
            .expect("valid histogram");
            register(Box::new(h.clone()));
            h
        };
        let f = Families {
            injected_ts: gauge(
                "epochlab_epoch_injected_timestamp_seconds",
                "Physical time of the last injected epoch (its curr), shifted onto the wall clock.",
                &["mode", "worker"],
            ),
            committed_ts: gauge(
                "epochlab_epoch_committed_timestamp_seconds",
                "Physical time of the max committed epoch, shifted onto the wall clock.",
                &["mode", "worker"],
            ),
            lag: gauge(
                "epochlab_epoch_lag_seconds",
                "Injected minus committed epoch, in seconds of simulated time.",
                &["mode", "worker"],
            ),
            inflight: igauge(
                "epochlab_barrier_inflight",
                "Barriers injected and not yet completed.",
                &["mode", "worker"],
            ),
            latency: histogram(
                "epochlab_barrier_latency_seconds",
                "Barrier latency from inject to fully collected, simulated seconds.",
            ),
            sync: histogram(
                "epochlab_barrier_sync_duration_seconds",
                "Duration of a compute node's sync (upload) of a checkpoint epoch, simulated seconds.",
            ),
            checkpoints: counter(
                "epochlab_checkpoints_total",
                "Checkpoint epochs committed.",
                &["mode"],
            ),
            recoveries: counter(
                "epochlab_recoveries_total",
                "Recoveries after a failure.",
                &["mode"],
            ),
            recovery_duration: histogram(
                "epochlab_recovery_duration_seconds",
                "Duration of a recovery, simulated seconds.",
            ),
            vnode_persisted: gauge(
                "epochlab_backfill_vnode_persisted_epoch_timestamp_seconds",
                "Epoch (physical time, shifted onto the wall clock) of the last backfill progress row written for a vnode.",
                &["mode", "worker", "table_id", "vnode"],
            ),
            vnode_committed: igauge(
                "epochlab_backfill_vnode_committed",
                "1 when the vnode's last progress row is in committed storage of a registered table.",
                &["mode", "worker", "table_id", "vnode"],
            ),
            vnode_finished: igauge(
                "epochlab_backfill_vnode_finished",
                "1 when the vnode's last progress row says its backfill finished.",
                &["mode", "worker", "table_id", "vnode"],
            ),
            backfill_rows: counter(
                "epochlab_backfill_rows_total",
                "Snapshot rows a backfill actor has read.",
                &["mode", "table_id", "actor_id"],
            ),
            state_missing: counter(
                "epochlab_backfill_state_missing_total",
                "Backfill progress rows found missing from storage (`row [...] not found`).",
                &["mode", "table_id"],
            ),
            registered_tables: igauge(
                "epochlab_storage_registered_tables",
                "Tables registered in the storage version.",
                &["mode", "worker"],
            ),
            uncommitted_bytes: igauge(
                "epochlab_storage_uncommitted_bytes",
                "Bytes flushed on compute nodes and not yet synced.",
                &["mode", "worker"],
            ),
            rejected_writes: counter(
                "epochlab_storage_rejected_writes_total",
                "Writes storage refused or dropped.",
                &["mode", "reason"],
            ),
            actor_failures: counter(
                "epochlab_actor_failures_total",
                "Actors that failed.",
                &["mode", "reason"],
            ),
            invariant_violations: counter(
                "epochlab_invariant_violations_total",
                "Invariant violations the checkers found (I1 commit order, I2 unregister in use, I2 zombie \
                 access by the detector, I3 table set, oracle).",
                &["mode", "invariant"],
            ),
            soak_seeds: counter(
                "epochlab_soak_seeds_total",
                "Seeds a soak has finished, by outcome (passed, failed or stuck).",
                &["mode", "outcome"],
            ),
            soak_failures: counter(
                "epochlab_soak_failures_total",
                "Failed and stuck seeds by signature (the error with numbers masked); signatures beyond the \
                 first 64 count as `other`.",
                &["mode", "signature"],
            ),
            soak_in_progress: igauge(
                "epochlab_soak_seeds_in_progress",
                "Seeds running now.",
                &["mode"],
            ),
            soak_virtual: fcounter(
                "epochlab_soak_virtual_seconds_total",
                "Simulated time of the finished seeds; its rate is simulated seconds per wall-clock second.",
                &["mode"],
            ),
            soak_wall: fcounter(
                "epochlab_soak_wall_seconds_total",
                "Wall-clock time the finished seeds took, summed over workers; rate(virtual) / rate(wall) is \
                 one worker's speed-up.",
                &["mode"],
            ),
        };
        for mode in modes {
            for worker in 0..workers.max(1) {
                // Timestamps appear with their run: a 0 would read as 1970.
                let labels = [*mode, &worker.to_string()];
                f.lag.with_label_values(&labels);
                f.inflight.with_label_values(&labels);
                f.registered_tables.with_label_values(&labels);
                f.uncommitted_bytes.with_label_values(&labels);
            }
            f.latency.with_label_values(&[mode]);
            f.sync.with_label_values(&[mode]);
            f.checkpoints.with_label_values(&[mode]);
            f.recoveries.with_label_values(&[mode]);
            f.recovery_duration.with_label_values(&[mode]);
            for r in REJECT_REASONS {
                f.rejected_writes.with_label_values(&[mode, r]);
            }
            for r in FailureReason::ALL {
                f.actor_failures.with_label_values(&[mode, r.as_str()]);
            }
            for i in INVARIANT_LABELS {
                f.invariant_violations.with_label_values(&[mode, i]);
            }
            for o in SeedOutcome::ALL {
                f.soak_seeds.with_label_values(&[mode, o.as_str()]);
            }
            f.soak_failures.with_label_values(&[mode, OTHER_SIGNATURE]);
            f.soak_in_progress.with_label_values(&[mode]);
            f.soak_virtual.with_label_values(&[mode]);
            f.soak_wall.with_label_values(&[mode]);
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

    /// Read a run's cluster from now on, as worker 0's current run (see [`Metrics::start_run`]).
    pub fn add_run(&self, source: RunSource) {
        self.start_run(0, source);
    }

    /// Read `source`'s cluster from now on as `worker`'s current run, until [`Metrics::end_run`]. A current run
    /// the worker still has is folded in and released first (and dropped later, outside the simulation that
    /// is starting: this is called from inside it). The table and vnode gauges that the worker's previous run
    /// of the same mode set are removed: they described a run that is gone.
    pub fn start_run(&self, worker: usize, source: RunSource) {
        assert!(
            worker < self.workers,
            "worker {worker} of {} (the worker label is bounded by --jobs)",
            self.workers
        );
        let mut state = self.lock();
        if let Some(mut old) = state.live.remove(&worker) {
            let series = refresh_run(&self.f, worker, &old.source, &mut old.cursors);
            state
                .vnode_series
                .insert((old.source.mode.clone(), worker), series);
            state.released.push(old.source);
        }
        let slot = (source.mode.clone(), worker);
        for (table, vnode) in state.vnode_series.remove(&slot).unwrap_or_default() {
            let labels = [slot.0.as_str(), &worker.to_string(), &table, &vnode];
            let _ = self.f.vnode_persisted.remove_label_values(&labels);
            let _ = self.f.vnode_committed.remove_label_values(&labels);
            let _ = self.f.vnode_finished.remove_label_values(&labels);
        }
        state.live.insert(
            worker,
            Live {
                source,
                cursors: BTreeMap::new(),
            },
        );
    }

    /// `worker`'s current run has finished: fold in its final values and release its cluster (dropped here, on
    /// the caller's thread). Its gauges keep their last values until the worker's next run of the mode.
    pub fn end_run(&self, worker: usize) {
        let (ended, released) = {
            let mut state = self.lock();
            let ended = state.live.remove(&worker).map(|mut run| {
                let series = refresh_run(&self.f, worker, &run.source, &mut run.cursors);
                let slot = (run.source.mode.clone(), worker);
                state.vnode_series.insert(slot, series);
                run
            });
            (ended, std::mem::take(&mut state.released))
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
        self.f.soak_in_progress.with_label_values(&[mode]).inc();
    }

    /// A soak's seed has finished (it had started with [`Metrics::seed_started`]).
    pub fn seed_finished(&self, seed: FinishedSeed<'_>) {
        let mode = seed.mode;
        self.f.soak_in_progress.with_label_values(&[mode]).dec();
        self.f
            .soak_seeds
            .with_label_values(&[mode, seed.outcome.as_str()])
            .inc();
        self.f
            .soak_virtual
            .with_label_values(&[mode])
            .inc_by(seed.virtual_time.as_secs_f64());
        self.f
            .soak_wall
            .with_label_values(&[mode])
            .inc_by(seed.wall_time.as_secs_f64());
        if let Some(signature) = seed.signature {
            let label = {
                let mut state = self.lock();
                if state.signatures.contains(signature) {
                    signature
                } else if state.signatures.len() < MAX_SIGNATURES {
                    state.signatures.insert(signature.to_string());
                    signature
                } else {
                    OTHER_SIGNATURE
                }
            };
            self.f.soak_failures.with_label_values(&[mode, label]).inc();
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

    /// Fold in every current run; hands back the released runs, to be dropped once the lock is let go.
    fn refresh(&self) -> Vec<RunSource> {
        let mut state = self.lock();
        let State {
            live, vnode_series, ..
        } = &mut *state;
        for (&worker, run) in live.iter_mut() {
            let series = refresh_run(&self.f, worker, &run.source, &mut run.cursors);
            vnode_series.insert((run.source.mode.clone(), worker), series);
        }
        std::mem::take(&mut state.released)
    }
}

/// Seconds since the Unix epoch of `epoch`'s physical time, shifted onto the run's wall-clock start.
fn wall_seconds(epoch: Epoch, wall_origin_ms: u64) -> f64 {
    let sim_ms = epoch
        .as_unix_millis()
        .saturating_sub(DEFAULT_ORIGIN_UNIX_MS);
    (wall_origin_ms + sim_ms) as f64 / 1000.0
}

/// Fold the samples recorded since the cursor `key` into `observe`.
fn fold(
    cursors: &mut BTreeMap<String, u64>,
    key: String,
    samples: &epochlab_common::samples::Samples,
    mut observe: impl FnMut(u64),
) {
    let cursor = cursors.get(&key).copied().unwrap_or(0);
    let (next, new) = samples.since(cursor);
    for v in new {
        observe(v);
    }
    cursors.insert(key, next);
}

/// Add to `counter` what a run's monotone `total` grew by since the cursor `key`.
fn add_delta(cursors: &mut BTreeMap<String, u64>, key: String, total: u64, counter: &IntCounter) {
    let last = cursors.insert(key, total).unwrap_or(0);
    if total > last {
        counter.inc_by(total - last);
    }
}

/// Fold one run's growth into the counters and histograms (with the run's own cursors) and set the gauges of
/// its worker; the (table, vnode) series it set.
fn refresh_run(
    f: &Families,
    worker: usize,
    s: &RunSource,
    cursors: &mut BTreeMap<String, u64>,
) -> BTreeSet<(String, String)> {
    let mode = s.mode.as_str();
    let worker = worker.to_string();
    let gauge_labels = [mode, worker.as_str()];
    let c = &s.cluster;
    let stats = c.barrier_stats();
    let injected = Epoch(stats.last_injected_epoch.load(Ordering::Relaxed));
    let committed = c.hummock.max_committed_epoch();
    if !injected.is_invalid() {
        f.injected_ts
            .with_label_values(&gauge_labels)
            .set(wall_seconds(injected, s.wall_origin_ms));
    }
    if !committed.is_invalid() {
        f.committed_ts
            .with_label_values(&gauge_labels)
            .set(wall_seconds(committed, s.wall_origin_ms));
    }
    if !injected.is_invalid() && !committed.is_invalid() {
        let lag_ms = injected
            .physical_time()
            .saturating_sub(committed.physical_time());
        f.lag
            .with_label_values(&gauge_labels)
            .set(lag_ms as f64 / 1000.0);
    }
    f.inflight
        .with_label_values(&gauge_labels)
        .set(stats.in_flight.load(Ordering::Relaxed) as i64);
    let latency = f.latency.with_label_values(&[mode]);
    fold(cursors, "latency".into(), &stats.latencies, |us| {
        latency.observe(us as f64 / 1e6)
    });
    let recovery = f.recovery_duration.with_label_values(&[mode]);
    fold(
        cursors,
        "recovery".into(),
        &stats.recovery_durations,
        |us| recovery.observe(us as f64 / 1e6),
    );
    add_delta(
        cursors,
        "checkpoints".into(),
        stats.checkpoints.load(Ordering::Relaxed),
        &f.checkpoints.with_label_values(&[mode]),
    );
    add_delta(
        cursors,
        "recoveries".into(),
        stats.recoveries.load(Ordering::Relaxed),
        &f.recoveries.with_label_values(&[mode]),
    );

    let registered = c.hummock.registered_tables();
    f.registered_tables
        .with_label_values(&gauge_labels)
        .set(registered.len() as i64);
    add_delta(
        cursors,
        "dropped_writes".into(),
        c.hummock.dropped_write_count(),
        &f.rejected_writes
            .with_label_values(&[mode, "unregistered_table"]),
    );
    let mut uncommitted = 0;
    let sync = f.sync.with_label_values(&[mode]);
    for node in c.nodes() {
        // A restarted node has fresh stats: key its cursors by the stats' address as well.
        let id = format!("{}/{:p}", node.worker(), node.storage().stats());
        uncommitted += node.storage().uncommitted_bytes();
        fold(
            cursors,
            format!("{id}/sync"),
            &node.storage().stats().sync_durations,
            |us| sync.observe(us as f64 / 1e6),
        );
        add_delta(
            cursors,
            format!("{id}/rejected"),
            node.storage()
                .stats()
                .rejected_stale_writes
                .load(Ordering::Relaxed),
            &f.rejected_writes
                .with_label_values(&[mode, "stale_generation"]),
        );
        for (reason, n) in node.stats().failures_by_reason() {
            let reason = reason.as_str();
            add_delta(
                cursors,
                format!("{id}/failures/{reason}"),
                n,
                &f.actor_failures.with_label_values(&[mode, reason]),
            );
        }
    }
    f.uncommitted_bytes
        .with_label_values(&gauge_labels)
        .set(uncommitted as i64);
    for label in INVARIANT_LABELS {
        let n = match label {
            "i2_zombie_access" => c.zombie.count() as u64,
            _ => c.violations.get(label),
        };
        let counter = f.invariant_violations.with_label_values(&[mode, label]);
        add_delta(cursors, format!("invariant/{label}"), n, &counter);
    }

    let mut missing: BTreeMap<String, u64> = BTreeMap::new();
    let mut series = BTreeSet::new();
    for ((table, actor), st) in c.backfill.all() {
        let table_label = table.to_string();
        let actor_label = actor.to_string();
        add_delta(
            cursors,
            format!("backfill_rows/{table_label}/{actor_label}"),
            st.snapshot_rows.load(Ordering::Relaxed),
            &f.backfill_rows
                .with_label_values(&[mode, &table_label, &actor_label]),
        );
        *missing.entry(table_label.clone()).or_default() +=
            st.state_missing.load(Ordering::Relaxed);
        for (vnode, (epoch, finished)) in st.persisted() {
            let vnode = vnode.to_string();
            let labels = [mode, worker.as_str(), table_label.as_str(), &vnode];
            f.vnode_persisted
                .with_label_values(&labels)
                .set(wall_seconds(epoch, s.wall_origin_ms));
            let is_committed = epoch <= committed && registered.contains(&table);
            f.vnode_committed
                .with_label_values(&labels)
                .set(i64::from(is_committed));
            f.vnode_finished
                .with_label_values(&labels)
                .set(i64::from(finished));
            series.insert((table_label.clone(), vnode));
        }
    }
    for (table, n) in missing {
        add_delta(
            cursors,
            format!("state_missing/{table}"),
            n,
            &f.state_missing.with_label_values(&[mode, &table]),
        );
    }
    series
}

#[cfg(test)]
mod tests {
    use std::sync::Weak;

    use epochlab_meta::DropMode;
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
            time_observers: Vec::new(),
        };
        let params = ReproParams {
            seed,
            mode: DropMode::Buggy,
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
        let metrics = Arc::new(Metrics::new(&["buggy"]));
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
                time_observers: Vec::new(),
            };
            let params = ReproParams {
                seed,
                mode: DropMode::Buggy,
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
    fn no_timestamp_before_its_run_and_every_instance_id_is_new() {
        let text = Metrics::new(&["buggy", "fixed"]).render();
        assert!(
            !text.contains("_timestamp_seconds{"),
            "a 0 timestamp reads as 1970: {text}"
        );
        assert_ne!(
            crate::instance_id("buggy", 1),
            crate::instance_id("buggy", 1)
        );
    }

    #[test]
    fn invariant_violations_are_counted_per_mode_from_zero() {
        let modes = ["fixed", "purge-before-reset"];
        let metrics = Arc::new(Metrics::new(&modes));
        let text = metrics.render();
        for mode in modes {
            for invariant in INVARIANT_LABELS {
                let labels = [
                    format!("mode=\"{mode}\""),
                    format!("invariant=\"{invariant}\""),
                ];
                let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
                assert_eq!(
                    sum(&text, "epochlab_invariant_violations_total", &labels),
                    0.0,
                    "{text}"
                );
            }
        }
        // Seed 39's random plan breaks I2 in purge-before-reset (RisingWave #15852's window); fixed holds.
        let plan = epochlab_sim::workload::generate(39, &Default::default());
        let mut reports = Vec::new();
        for mode in [DropMode::Fixed, DropMode::PurgeBeforeReset] {
            let m = metrics.clone();
            let hooks = ReproHooks {
                on_cluster: Some(Box::new(move |cluster| {
                    m.start_run(0, RunSource::starting_now(mode.as_str(), cluster));
                })),
                tracing_layer: None,
                time_observers: Vec::new(),
            };
            reports.push(epochlab_sim::workload::run_plan(&plan, mode, hooks).value);
            metrics.end_run(0);
        }
        let text = metrics.render();
        let of = |mode: &str| {
            let label = format!("mode=\"{mode}\"");
            sum(
                &text,
                "epochlab_invariant_violations_total",
                &[label.as_str()],
            )
        };
        assert_eq!(of("fixed"), 0.0, "the fix violates nothing: {text}");
        let purge = reports[1].violations.len();
        assert!(purge > 0, "{:?}", reports[1]);
        assert!(of("purge-before-reset") >= 1.0, "{text}");
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
                format!("epochlab_barrier_inflight{{mode=\"{mode}\",worker=\"2\"}} 0"),
            ] {
                assert!(text.contains(&name), "{name}\n{text}");
            }
        }
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
    }
}
