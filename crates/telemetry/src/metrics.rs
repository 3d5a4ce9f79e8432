//! The metrics: names, units and labels per the project's conventions (`epochlab_` prefix, base units,
//! counters end in `_total`, bounded labels). Every series without a table or actor label exists from the
//! start, for each mode that will run; table, actor and vnode series appear when their table or actor does
//! and stay until the process exits.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use epochlab_common::Epoch;
use epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS;
use epochlab_sim::Cluster;
use epochlab_stream::executor::FailureReason;
use prometheus::{
    Encoder, GaugeVec, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

/// Why storage rejects writes: a flush from a reset node's old generation, or rows of an unregistered table
/// dropped at commit.
const REJECT_REASONS: [&str; 2] = ["stale_generation", "unregistered_table"];

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
}

pub struct Metrics {
    registry: Registry,
    f: Families,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    sources: Vec<RunSource>,
    /// Per sample log or per-node counter: how much has been folded in already.
    cursors: BTreeMap<String, u64>,
}

fn latency_buckets() -> Vec<f64> {
    prometheus::exponential_buckets(0.001, 2.0, 18).expect("valid buckets")
}

fn set_counter(c: &IntCounter, total: u64) {
    let cur = c.get();
    if total > cur {
        c.inc_by(total - cur);
    }
}

impl Metrics {
    /// Metrics for runs of the given modes, every unlabelled series present at 0.
    pub fn new(modes: &[&str]) -> Self {
        let registry = Registry::new();
        let gauge = |name: &str, help: &str, labels: &[&str]| {
            let g = GaugeVec::new(Opts::new(name, help), labels).expect("valid gauge");
            registry
                .register(Box::new(g.clone()))
                .expect("unique metric");
            g
        };
        let igauge = |name: &str, help: &str, labels: &[&str]| {
            let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid gauge");
            registry
                .register(Box::new(g.clone()))
                .expect("unique metric");
            g
        };
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid counter");
            registry
                .register(Box::new(c.clone()))
                .expect("unique metric");
            c
        };
        let histogram = |name: &str, help: &str| {
            let h = HistogramVec::new(
                HistogramOpts::new(name, help).buckets(latency_buckets()),
                &["mode"],
            )
            .expect("valid histogram");
            registry
                .register(Box::new(h.clone()))
                .expect("unique metric");
            h
        };
        let f = Families {
            injected_ts: gauge(
                "epochlab_epoch_injected_timestamp_seconds",
                "Physical time of the last injected epoch (its curr), shifted onto the wall clock.",
                &["mode"],
            ),
            committed_ts: gauge(
                "epochlab_epoch_committed_timestamp_seconds",
                "Physical time of the max committed epoch, shifted onto the wall clock.",
                &["mode"],
            ),
            lag: gauge(
                "epochlab_epoch_lag_seconds",
                "Injected minus committed epoch, in seconds of simulated time.",
                &["mode"],
            ),
            inflight: igauge(
                "epochlab_barrier_inflight",
                "Barriers injected and not yet completed.",
                &["mode"],
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
                &["mode", "table_id", "vnode"],
            ),
            vnode_committed: igauge(
                "epochlab_backfill_vnode_committed",
                "1 when the vnode's last progress row is in committed storage of a registered table.",
                &["mode", "table_id", "vnode"],
            ),
            vnode_finished: igauge(
                "epochlab_backfill_vnode_finished",
                "1 when the vnode's last progress row says its backfill finished.",
                &["mode", "table_id", "vnode"],
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
                &["mode"],
            ),
            uncommitted_bytes: igauge(
                "epochlab_storage_uncommitted_bytes",
                "Bytes flushed on compute nodes and not yet synced.",
                &["mode"],
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
        };
        for mode in modes {
            f.injected_ts.with_label_values(&[mode]);
            f.committed_ts.with_label_values(&[mode]);
            f.lag.with_label_values(&[mode]);
            f.inflight.with_label_values(&[mode]);
            f.latency.with_label_values(&[mode]);
            f.sync.with_label_values(&[mode]);
            f.checkpoints.with_label_values(&[mode]);
            f.recoveries.with_label_values(&[mode]);
            f.recovery_duration.with_label_values(&[mode]);
            f.registered_tables.with_label_values(&[mode]);
            f.uncommitted_bytes.with_label_values(&[mode]);
            for r in REJECT_REASONS {
                f.rejected_writes.with_label_values(&[mode, r]);
            }
            for r in FailureReason::ALL {
                f.actor_failures.with_label_values(&[mode, r.as_str()]);
            }
        }
        Self {
            registry,
            f,
            state: Mutex::default(),
        }
    }

    /// Read a run's cluster from now on (while it runs and after).
    pub fn add_run(&self, source: RunSource) {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .sources
            .push(source);
    }

    /// Pull every value from the runs' stats, then encode them in Prometheus' text format.
    pub fn render(&self) -> String {
        self.refresh();
        let mut buf = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        String::from_utf8(buf).unwrap_or_default()
    }

    fn refresh(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let State { sources, cursors } = &mut *state;
        for s in sources.iter() {
            refresh_run(&self.f, s, cursors);
        }
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

/// Add to `counter` what a source's monotone `total` grew by since the cursor `key`.
fn add_delta(cursors: &mut BTreeMap<String, u64>, key: String, total: u64, counter: &IntCounter) {
    let last = cursors.insert(key, total).unwrap_or(0);
    if total > last {
        counter.inc_by(total - last);
    }
}

fn refresh_run(f: &Families, s: &RunSource, cursors: &mut BTreeMap<String, u64>) {
    let mode = s.mode.as_str();
    let c = &s.cluster;
    let stats = c.barrier_stats();
    let injected = Epoch(stats.last_injected_epoch.load(Ordering::Relaxed));
    let committed = c.hummock.max_committed_epoch();
    if !injected.is_invalid() {
        f.injected_ts
            .with_label_values(&[mode])
            .set(wall_seconds(injected, s.wall_origin_ms));
    }
    if !committed.is_invalid() {
        f.committed_ts
            .with_label_values(&[mode])
            .set(wall_seconds(committed, s.wall_origin_ms));
    }
    if !injected.is_invalid() && !committed.is_invalid() {
        let lag_ms = injected
            .physical_time()
            .saturating_sub(committed.physical_time());
        f.lag.with_label_values(&[mode]).set(lag_ms as f64 / 1000.0);
    }
    f.inflight
        .with_label_values(&[mode])
        .set(stats.in_flight.load(Ordering::Relaxed) as i64);
    let latency = f.latency.with_label_values(&[mode]);
    fold(cursors, format!("{mode}/latency"), &stats.latencies, |us| {
        latency.observe(us as f64 / 1e6)
    });
    let recovery = f.recovery_duration.with_label_values(&[mode]);
    fold(
        cursors,
        format!("{mode}/recovery"),
        &stats.recovery_durations,
        |us| recovery.observe(us as f64 / 1e6),
    );
    set_counter(
        &f.checkpoints.with_label_values(&[mode]),
        stats.checkpoints.load(Ordering::Relaxed),
    );
    set_counter(
        &f.recoveries.with_label_values(&[mode]),
        stats.recoveries.load(Ordering::Relaxed),
    );

    let registered = c.hummock.registered_tables();
    f.registered_tables
        .with_label_values(&[mode])
        .set(registered.len() as i64);
    set_counter(
        &f.rejected_writes
            .with_label_values(&[mode, "unregistered_table"]),
        c.hummock.dropped_write_count(),
    );
    let mut uncommitted = 0;
    let sync = f.sync.with_label_values(&[mode]);
    for node in c.nodes() {
        // A restarted node has fresh stats: key its cursors by the stats' address as well.
        let id = format!("{mode}/{}/{:p}", node.worker(), node.storage().stats());
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
        .with_label_values(&[mode])
        .set(uncommitted as i64);

    let mut missing: BTreeMap<String, u64> = BTreeMap::new();
    for ((table, actor), st) in c.backfill.all() {
        let table_label = table.to_string();
        set_counter(
            &f.backfill_rows
                .with_label_values(&[mode, &table_label, &actor.to_string()]),
            st.snapshot_rows.load(Ordering::Relaxed),
        );
        *missing.entry(table_label.clone()).or_default() +=
            st.state_missing.load(Ordering::Relaxed);
        for (vnode, (epoch, finished)) in st.persisted() {
            let labels = [mode, table_label.as_str(), &vnode.to_string()];
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
        }
    }
    for (table, n) in missing {
        set_counter(&f.state_missing.with_label_values(&[mode, &table]), n);
    }
}
