//! Folding one run's stats into the families: counters and histograms as deltas from the run's own cursors,
//! gauges set on the run's worker.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;

use epochlab_common::Epoch;
use epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS;
use epochlab_sim::checkers::INVARIANT_LABELS;
use epochlab_stream::executor::StatefulExecutorKind;
use prometheus::IntCounter;

use super::{Births, Families, RunSource};

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

/// What a run's monotone `total` grew by since the cursor `key`.
fn delta(cursors: &mut BTreeMap<String, u64>, key: String, total: u64) -> u64 {
    let last = cursors.insert(key, total).unwrap_or(0);
    total.saturating_sub(last)
}

/// Add to `counter` what a run's monotone `total` grew by since the cursor `key`.
fn add_delta(cursors: &mut BTreeMap<String, u64>, key: String, total: u64, counter: &IntCounter) {
    let d = delta(cursors, key, total);
    if d > 0 {
        counter.inc_by(d);
    }
}

/// One run, read once.
struct Pass<'a> {
    f: &'a Families,
    births: &'a mut Births,
    s: &'a RunSource,
    cursors: &'a mut BTreeMap<String, u64>,
    mode: &'a str,
    worker: &'a str,
}

/// Fold one run's growth into the counters and histograms (with the run's own cursors) and set the gauges of
/// its worker; the (table, vnode) series it set.
pub(super) fn run(
    f: &Families,
    births: &mut Births,
    worker: usize,
    s: &RunSource,
    cursors: &mut BTreeMap<String, u64>,
) -> BTreeSet<(String, String)> {
    let worker = worker.to_string();
    let mut pass = Pass {
        f,
        births,
        s,
        cursors,
        mode: s.mode.as_str(),
        worker: &worker,
    };
    pass.barriers();
    pass.storage();
    pass.compaction();
    pass.invariants();
    pass.executors();
    pass.backfill()
}

impl<'a> Pass<'a> {
    fn gauge_labels(&self) -> [&'a str; 2] {
        [self.mode, self.worker]
    }

    /// Epoch timestamps and lag, in-flight barriers, barrier latency, checkpoints and recoveries.
    fn barriers(&mut self) {
        let (f, mode, c) = (self.f, self.mode, &self.s.cluster);
        let labels = self.gauge_labels();
        let stats = c.barrier_stats();
        let injected = Epoch(stats.last_injected_epoch.load(Ordering::Relaxed));
        let committed = c.hummock.max_committed_epoch();
        let origin = self.s.wall_origin_ms;
        if !injected.is_invalid() {
            let ts = wall_seconds(injected, origin);
            f.epochs.injected_ts.with_label_values(&labels).set(ts);
        }
        if !committed.is_invalid() {
            let ts = wall_seconds(committed, origin);
            f.epochs.committed_ts.with_label_values(&labels).set(ts);
        }
        if !injected.is_invalid() && !committed.is_invalid() {
            let lag_ms = injected
                .physical_time()
                .saturating_sub(committed.physical_time());
            f.epochs
                .lag
                .with_label_values(&labels)
                .set(lag_ms as f64 / 1000.0);
        }
        let in_flight = stats.in_flight.load(Ordering::Relaxed) as i64;
        f.epochs.inflight.with_label_values(&labels).set(in_flight);
        let latency = f.epochs.latency.with_label_values(&[mode]);
        fold(self.cursors, "latency".into(), &stats.latencies, |us| {
            latency.observe(us as f64 / 1e6)
        });
        let recovery = f.epochs.recovery_duration.with_label_values(&[mode]);
        let durations = &stats.recovery_durations;
        fold(self.cursors, "recovery".into(), durations, |us| {
            recovery.observe(us as f64 / 1e6)
        });
        let checkpoints = stats.checkpoints.load(Ordering::Relaxed);
        let counter = f.epochs.checkpoints.with_label_values(&[mode]);
        add_delta(self.cursors, "checkpoints".into(), checkpoints, &counter);
        let recoveries = stats.recoveries.load(Ordering::Relaxed);
        let counter = f.epochs.recoveries.with_label_values(&[mode]);
        add_delta(self.cursors, "recoveries".into(), recoveries, &counter);
        let changes = c.meta_leader_changes();
        let counter = f.epochs.leader_changes.with_label_values(&[mode]);
        add_delta(self.cursors, "leader_changes".into(), changes, &counter);
        let leader = c.meta_leader().map_or(0, i64::from);
        f.epochs.meta_leader.with_label_values(&labels).set(leader);
    }

    /// Registered tables, uncommitted bytes, rejected writes and actor failures.
    fn storage(&mut self) {
        let (f, mode, c) = (self.f, self.mode, &self.s.cluster);
        let labels = self.gauge_labels();
        let registered = c.hummock.registered_tables().len() as i64;
        f.health
            .registered_tables
            .with_label_values(&labels)
            .set(registered);
        let dropped = c.hummock.dropped_write_count();
        let counter = f
            .health
            .rejected_writes
            .with_label_values(&[mode, "unregistered_table"]);
        add_delta(self.cursors, "dropped_writes".into(), dropped, &counter);
        let mut uncommitted = 0;
        let stale = f
            .health
            .rejected_writes
            .with_label_values(&[mode, "stale_generation"]);
        for node in c.nodes() {
            // A restarted node has fresh stats: key its cursors by the stats' address as well.
            let id = format!("{}/{:p}", node.worker(), node.storage().stats());
            uncommitted += node.storage().uncommitted_bytes();
            let rejected = node
                .storage()
                .stats()
                .rejected_stale_writes
                .load(Ordering::Relaxed);
            add_delta(self.cursors, format!("{id}/rejected"), rejected, &stale);
            for (reason, n) in node.stats().failures_by_reason() {
                let reason = reason.as_str();
                let counter = f.health.actor_failures.with_label_values(&[mode, reason]);
                add_delta(self.cursors, format!("{id}/failures/{reason}"), n, &counter);
            }
            for ((executor, error), n) in node.stats().expr_errors.counts() {
                let executor = executor.as_str();
                let labels = [mode, executor, error];
                let counter = f.health.expr_errors.with_label_values(&labels);
                let key = format!("{id}/expr_errors/{executor}/{error}");
                add_delta(self.cursors, key, n, &counter);
            }
        }
        let uncommitted = uncommitted as i64;
        f.health
            .uncommitted_bytes
            .with_label_values(&labels)
            .set(uncommitted);
    }

    /// Compaction tasks and their failures, write stops, and the groups' L0 now.
    fn compaction(&mut self) {
        let (f, mode, c) = (self.f, self.mode, &self.s.cluster);
        let labels = self.gauge_labels();
        let stats = c.hummock.compaction_stats();
        let tasks = stats.tasks.load(Ordering::Relaxed);
        let counter = f.health.compaction_tasks.with_label_values(&[mode]);
        add_delta(self.cursors, "compaction_tasks".into(), tasks, &counter);
        for reason in epochlab_storage::CompactionError::REASONS {
            let counter = f
                .health
                .compaction_failures
                .with_label_values(&[mode, reason]);
            let n = stats.failures(reason);
            add_delta(
                self.cursors,
                format!("compaction_failures/{reason}"),
                n,
                &counter,
            );
        }
        let stops = stats.write_stops.load(Ordering::Relaxed);
        let counter = f.health.write_stops.with_label_values(&[mode]);
        add_delta(self.cursors, "write_stops".into(), stops, &counter);
        let groups = c.hummock.group_compaction();
        let stopped = groups
            .values()
            .filter(|g| g.write_stopped_since_us.is_some())
            .count();
        let max = groups.values().map(|g| g.sub_levels).max().unwrap_or(0);
        f.health
            .write_stopped_groups
            .with_label_values(&labels)
            .set(stopped as i64);
        f.health
            .l0_sub_levels
            .with_label_values(&labels)
            .set(i64::from(max));
    }

    /// The checkers' violations by invariant (the detector's accesses as `i2_zombie_access`).
    fn invariants(&mut self) {
        let c = &self.s.cluster;
        for label in INVARIANT_LABELS {
            let n = match label {
                "i2_zombie_access" => c.zombie.count() as u64,
                _ => c.violations.get(label),
            };
            let counter = self
                .f
                .health
                .invariant_violations
                .with_label_values(&[self.mode, label]);
            add_delta(self.cursors, format!("invariant/{label}"), n, &counter);
        }
    }

    /// The stateful executors of every node, summed per kind: cache lookups and misses and state writes
    /// (counters), cache entries and dirty groups (gauges of the run's worker).
    fn executors(&mut self) {
        let (f, mode, c) = (self.f, self.mode, self.s.cluster.clone());
        let mut gauges: BTreeMap<StatefulExecutorKind, (u64, u64)> = BTreeMap::new();
        for node in c.nodes() {
            // A restarted node has fresh stats: key its cursors by the stats' address as well.
            let id = format!("{}/{:p}", node.worker(), node.stats());
            for ((actor, table), kind, n) in node.stats().executors.snapshot() {
                let fx = &f.executors;
                let labels = [mode, kind.as_str()];
                let counters = [
                    ("lookups", n.cache_lookups, &fx.cache_lookups),
                    ("misses", n.cache_misses, &fx.cache_misses),
                    ("inserts", n.state_inserts, &fx.state_inserts),
                    ("deletes", n.state_deletes, &fx.state_deletes),
                ];
                for (what, total, family) in counters {
                    let key = format!("{id}/executor/{what}/{table}/{actor}");
                    add_delta(self.cursors, key, total, &family.with_label_values(&labels));
                }
                let g = gauges.entry(kind).or_default();
                g.0 += n.cache_entries;
                g.1 += n.dirty_groups;
            }
        }
        for kind in StatefulExecutorKind::ALL {
            let (entries, dirty) = gauges.get(&kind).copied().unwrap_or_default();
            let labels = [mode, self.worker, kind.as_str()];
            let fx = &f.executors;
            fx.cache_entries
                .with_label_values(&labels)
                .set(entries as i64);
            if kind.is_agg() {
                fx.dirty_groups.with_label_values(&labels).set(dirty as i64);
            }
        }
    }

    /// A counter with a table or actor label: born at 0 (see [`Births`]).
    fn born_delta(&mut self, key: String, total: u64, counter: IntCounter) {
        let d = delta(self.cursors, key.clone(), total);
        self.births.add(format!("{}/{key}", self.mode), counter, d);
    }

    /// Backfill rows and missing state per table and actor, and the per-vnode gauges; the (table, vnode)
    /// series set.
    fn backfill(&mut self) -> BTreeSet<(String, String)> {
        let (f, mode, c) = (self.f, self.mode, self.s.cluster.clone());
        let committed = c.hummock.max_committed_epoch();
        let registered = c.hummock.registered_tables();
        let mut missing: BTreeMap<String, u64> = BTreeMap::new();
        let mut series = BTreeSet::new();
        for ((table, actor), st) in c.backfill.all() {
            let table_label = table.to_string();
            let actor_label = actor.to_string();
            let rows = st.snapshot_rows.load(Ordering::Relaxed);
            let counter =
                f.backfill
                    .backfill_rows
                    .with_label_values(&[mode, &table_label, &actor_label]);
            self.born_delta(
                format!("backfill_rows/{table_label}/{actor_label}"),
                rows,
                counter,
            );
            *missing.entry(table_label.clone()).or_default() +=
                st.state_missing.load(Ordering::Relaxed);
            for (vnode, (epoch, finished)) in st.persisted() {
                let vnode = vnode.to_string();
                let labels = [mode, self.worker, table_label.as_str(), &vnode];
                let ts = wall_seconds(epoch, self.s.wall_origin_ms);
                f.backfill
                    .vnode_persisted
                    .with_label_values(&labels)
                    .set(ts);
                let is_committed = epoch <= committed && registered.contains(&table);
                let is_committed = i64::from(is_committed);
                f.backfill
                    .vnode_committed
                    .with_label_values(&labels)
                    .set(is_committed);
                let finished = i64::from(finished);
                f.backfill
                    .vnode_finished
                    .with_label_values(&labels)
                    .set(finished);
                series.insert((table_label.clone(), vnode));
            }
        }
        for (table, n) in missing {
            let counter = f.backfill.state_missing.with_label_values(&[mode, &table]);
            self.born_delta(format!("state_missing/{table}"), n, counter);
        }
        series
    }
}
