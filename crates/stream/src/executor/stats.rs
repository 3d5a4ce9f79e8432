//! The counters of stateful executors (RisingWave's streaming metrics that matter for recovery: cache lookups
//! and misses, entries cached, an aggregation's dirty groups, state-table writes), per actor and per the
//! executor's first internal table. The node's [`ExecutorStats`] is the registry; each executor holds an
//! [`ExecutorStatsHandle`] whose updates are relaxed atomic adds. Telemetry reads [`ExecutorStats::snapshot`]
//! into `epochlab_executor_*` series; the span of each stateful executor's barrier reads the same counters.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use epochlab_common::{ActorId, TableId};

/// Which stateful executor (the `executor` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum StatefulExecutorKind {
    HashAgg,
    SimpleAgg,
    HashJoin,
    TopN,
    GroupTopN,
    DynamicFilter,
}

impl StatefulExecutorKind {
    pub const ALL: [StatefulExecutorKind; 6] = [
        Self::HashAgg,
        Self::SimpleAgg,
        Self::HashJoin,
        Self::TopN,
        Self::GroupTopN,
        Self::DynamicFilter,
    ];

    /// Whether it is an aggregation (it has dirty groups).
    pub fn is_agg(self) -> bool {
        matches!(self, Self::HashAgg | Self::SimpleAgg)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::HashAgg => "hash_agg",
            Self::SimpleAgg => "simple_agg",
            Self::HashJoin => "hash_join",
            Self::TopN => "top_n",
            Self::GroupTopN => "group_top_n",
            Self::DynamicFilter => "dynamic_filter",
        }
    }
}

/// One executor's counters.
#[derive(Debug, Default)]
struct Cells {
    cache_lookups: AtomicU64,
    cache_misses: AtomicU64,
    cache_entries: AtomicU64,
    dirty_groups: AtomicU64,
    state_inserts: AtomicU64,
    state_deletes: AtomicU64,
}

/// A copy of one executor's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExecutorCounters {
    pub cache_lookups: u64,
    pub cache_misses: u64,
    /// Gauge: join keys, groups or top-N groups in the cache now.
    pub cache_entries: u64,
    /// Gauge: an aggregation's groups changed since its last barrier, as of that barrier.
    pub dirty_groups: u64,
    pub state_inserts: u64,
    pub state_deletes: u64,
}

impl Cells {
    fn load(&self) -> ExecutorCounters {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ExecutorCounters {
            cache_lookups: l(&self.cache_lookups),
            cache_misses: l(&self.cache_misses),
            cache_entries: l(&self.cache_entries),
            dirty_groups: l(&self.dirty_groups),
            state_inserts: l(&self.state_inserts),
            state_deletes: l(&self.state_deletes),
        }
    }
}

/// The key of one executor: its actor and its first internal table.
pub type ExecutorKey = (ActorId, TableId);

/// A node's stateful executors' counters. An actor rebuilt on the node (after a reschedule) continues its
/// counters; a restarted node starts a new registry.
#[derive(Clone, Debug, Default)]
pub struct ExecutorStats {
    inner: Arc<Mutex<Registry>>,
}

type Registry = BTreeMap<ExecutorKey, (StatefulExecutorKind, Arc<Cells>)>;

impl ExecutorStats {
    /// The handle of the executor of `actor` whose first internal table is `table`.
    pub fn handle(
        &self,
        actor: ActorId,
        table: TableId,
        kind: StatefulExecutorKind,
    ) -> ExecutorStatsHandle {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let cells = g
            .entry((actor, table))
            .or_insert_with(|| (kind, Arc::default()))
            .1
            .clone();
        ExecutorStatsHandle { cells }
    }

    /// Every executor's counters now, in key order.
    pub fn snapshot(&self) -> Vec<(ExecutorKey, StatefulExecutorKind, ExecutorCounters)> {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.iter()
            .map(|(k, (kind, cells))| (*k, *kind, cells.load()))
            .collect()
    }
}

/// What a stateful executor updates; cheap to clone. Dropping the last handle (the executor stopped) sets
/// its gauges to 0.
#[derive(Clone, Debug)]
pub struct ExecutorStatsHandle {
    cells: Arc<Cells>,
}

impl ExecutorStatsHandle {
    /// A handle counted nowhere (tests, benchmarks).
    pub fn detached() -> Self {
        Self {
            cells: Arc::default(),
        }
    }

    /// A lookup of the executor's cache: `hit` when the entry was cached, else it was loaded from the state
    /// table.
    pub fn cache_lookup(&self, hit: bool) {
        self.cells.cache_lookups.fetch_add(1, Ordering::Relaxed);
        if !hit {
            self.cells.cache_misses.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn set_cache_entries(&self, n: usize) {
        self.cells.cache_entries.store(n as u64, Ordering::Relaxed);
    }

    pub fn set_dirty_groups(&self, n: usize) {
        self.cells.dirty_groups.store(n as u64, Ordering::Relaxed);
    }

    /// Rows the executor wrote into its state tables (an update is a delete and an insert).
    pub fn state_rows_written(&self, inserts: u64, deletes: u64) {
        self.cells
            .state_inserts
            .fetch_add(inserts, Ordering::Relaxed);
        self.cells
            .state_deletes
            .fetch_add(deletes, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn counters(&self) -> ExecutorCounters {
        self.cells.load()
    }
}

impl Drop for ExecutorStatsHandle {
    fn drop(&mut self) {
        // The registry holds one reference; this was the executor's last handle.
        if Arc::strong_count(&self.cells) == 2 {
            self.cells.cache_entries.store(0, Ordering::Relaxed);
            self.cells.dirty_groups.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_of_one_executor_share_counters_and_gauges_drop_to_zero() {
        let stats = ExecutorStats::default();
        let h = stats.handle(ActorId(1), TableId(7), StatefulExecutorKind::HashJoin);
        h.cache_lookup(true);
        h.cache_lookup(false);
        h.set_cache_entries(3);
        h.state_rows_written(2, 1);
        let again = stats.handle(ActorId(1), TableId(7), StatefulExecutorKind::HashJoin);
        again.cache_lookup(false);
        let snap = stats.snapshot();
        assert_eq!(snap.len(), 1);
        let (_, kind, c) = snap[0];
        assert_eq!(kind, StatefulExecutorKind::HashJoin);
        assert_eq!(
            (c.cache_lookups, c.cache_misses, c.cache_entries),
            (3, 2, 3)
        );
        assert_eq!((c.state_inserts, c.state_deletes), (2, 1));
        drop(again);
        assert_eq!(
            stats.snapshot()[0].2.cache_entries,
            3,
            "one handle still lives"
        );
        drop(h);
        let c = stats.snapshot()[0].2;
        assert_eq!((c.cache_entries, c.cache_lookups), (0, 3));
    }
}
