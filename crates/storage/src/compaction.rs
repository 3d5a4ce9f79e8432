//! Compaction of each group's L0 (reference §4.2, RisingWave #15144). Every commit that brings data to a
//! compaction group adds an L0 sub-level to it. Once a group holds [`CompactionConfig::trigger_sub_levels`],
//! a compaction task runs: like RisingWave's compactor, it first resolves the catalog's info of every member
//! table of the group (through [`CompactionCatalog`], which meta provides), and a member the catalog does not
//! know fails the task ("inconsistency table info between catalog and hummock"). The sub-levels then stay,
//! and grow with every commit; at [`CompactionConfig::write_stop_sub_levels`] the group's writes stop
//! (RisingWave's write limit) until a task succeeds. A task succeeds as soon as every member resolves: its
//! data is already in the committed store, so a successful task only empties the group's L0.
//!
//! Tasks run where RisingWave schedules them: after a commit, for the groups it brought data to, and (standing
//! in for RisingWave's periodic schedule, which a stopped group needs, since nothing commits then) whenever
//! a group's members change by an unregister.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use epochlab_common::TableId;
use epochlab_common::catalog::TableDesc;

use crate::version::GroupId;

/// When compaction runs and when writes stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactionConfig {
    /// L0 sub-levels of a group that make a compaction task run (RisingWave's
    /// `level0_sub_level_compact_level_count`).
    pub trigger_sub_levels: u32,
    /// L0 sub-levels of a group at which its writes stop (RisingWave's
    /// `level0_stop_write_threshold_sub_level_number`). While compaction succeeds a group never holds more
    /// than `trigger_sub_levels`; only failing tasks let it grow this far.
    pub write_stop_sub_levels: u32,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            trigger_sub_levels: 4,
            write_stop_sub_levels: 64,
        }
    }
}

impl CompactionConfig {
    /// Whether the limits make sense: a task runs before writes stop.
    pub fn is_valid(&self) -> bool {
        self.trigger_sub_levels >= 1 && self.write_stop_sub_levels > self.trigger_sub_levels
    }
}

/// What a compaction task needs from the catalog (meta implements it; storage does not depend on meta).
pub trait CompactionCatalog: Send + Sync {
    /// The catalog's description of `table`; `None` when the catalog does not know it.
    fn table(&self, table: TableId) -> Option<Arc<TableDesc>>;
}

/// Why a compaction task failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompactionError {
    /// Member tables of the group that the catalog does not know (RisingWave's compactor: "Failed to find
    /// table ids ... it may caused by inconsistency table info between catalog and hummock manager").
    #[error(
        "compaction of group {group} failed: inconsistency table info between catalog and hummock: {}",
        table_list(tables)
    )]
    InconsistentTableInfo {
        group: GroupId,
        tables: Vec<TableId>,
    },
}

fn table_list(tables: &[TableId]) -> String {
    let ids: Vec<String> = tables.iter().map(|t| t.to_string()).collect();
    match ids.len() {
        1 => format!("table {}", ids[0]),
        _ => format!("tables {}", ids.join(", ")),
    }
}

impl CompactionError {
    /// The failure's reason as a metric label.
    pub fn reason(&self) -> &'static str {
        match self {
            CompactionError::InconsistentTableInfo { .. } => "inconsistent_table_info",
        }
    }

    pub const REASONS: [&'static str; 1] = ["inconsistent_table_info"];
}

/// One group's L0 and its compaction's state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupCompaction {
    /// Commits that brought data to the group since its last successful task.
    pub sub_levels: u32,
    /// Tasks failed in a row.
    pub failures: u64,
    /// The latest failure, and when the streak of failures began (µs of virtual time).
    pub last_error: Option<CompactionError>,
    pub failing_since_us: Option<u64>,
    /// Since when the group's writes are stopped (µs of virtual time).
    pub write_stopped_since_us: Option<u64>,
}

/// Counters of every group's compaction (exported as metrics by the telemetry crate).
#[derive(Debug, Default)]
pub struct CompactionStats {
    pub tasks: AtomicU64,
    pub succeeded: AtomicU64,
    /// Failed tasks, by [`CompactionError::reason`] (one reason so far).
    pub failed_inconsistent_table_info: AtomicU64,
    /// Times a group's writes stopped.
    pub write_stops: AtomicU64,
    /// The most L0 sub-levels any group held.
    pub max_sub_levels: AtomicU64,
}

impl CompactionStats {
    pub(crate) fn failed(&self, e: &CompactionError) {
        match e {
            CompactionError::InconsistentTableInfo { .. } => self
                .failed_inconsistent_table_info
                .fetch_add(1, Ordering::Relaxed),
        };
    }

    /// Failed tasks of `reason` (one of [`CompactionError::REASONS`]).
    pub fn failures(&self, reason: &str) -> u64 {
        match reason {
            "inconsistent_table_info" => {
                self.failed_inconsistent_table_info.load(Ordering::Relaxed)
            }
            _ => 0,
        }
    }
}

/// Every group's compaction state.
#[derive(Debug, Default)]
pub(crate) struct Compaction {
    pub(crate) config: CompactionConfig,
    pub(crate) groups: BTreeMap<GroupId, GroupCompaction>,
}

impl Compaction {
    /// A commit brought data to `group`.
    pub(crate) fn add_sub_level(&mut self, group: GroupId, stats: &CompactionStats) {
        let g = self.groups.entry(group).or_default();
        g.sub_levels += 1;
        stats
            .max_sub_levels
            .fetch_max(u64::from(g.sub_levels), Ordering::Relaxed);
    }

    /// Whether a task should run for `group` now.
    pub(crate) fn due(&self, group: GroupId) -> bool {
        self.groups
            .get(&group)
            .is_some_and(|g| g.sub_levels >= self.config.trigger_sub_levels)
    }

    /// Record a task's result.
    pub(crate) fn finish(
        &mut self,
        group: GroupId,
        result: Result<(), CompactionError>,
        now_us: u64,
    ) {
        let g = self.groups.entry(group).or_default();
        match result {
            Ok(()) => {
                g.sub_levels = 0;
                g.failures = 0;
                g.last_error = None;
                g.failing_since_us = None;
            }
            Err(e) => {
                g.failures += 1;
                g.failing_since_us.get_or_insert(now_us);
                g.last_error = Some(e);
            }
        }
    }

    /// Groups whose writes must stop (`true`) or resume (`false`) now.
    pub(crate) fn write_limit_changes(&self) -> Vec<(GroupId, bool)> {
        let limit = self.config.write_stop_sub_levels;
        self.groups
            .iter()
            .filter_map(|(id, g)| {
                let over = g.sub_levels >= limit;
                (over != g.write_stopped_since_us.is_some()).then_some((*id, over))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_names_the_group_and_the_tables() {
        let one = CompactionError::InconsistentTableInfo {
            group: 3,
            tables: vec![TableId(4)],
        };
        assert_eq!(
            one.to_string(),
            "compaction of group 3 failed: inconsistency table info between catalog and hummock: table 4"
        );
        let two = CompactionError::InconsistentTableInfo {
            group: 2,
            tables: vec![TableId(4), TableId(5)],
        };
        assert!(two.to_string().ends_with(": tables 4, 5"), "{two}");
        assert_eq!(two.reason(), CompactionError::REASONS[0]);
    }

    #[test]
    fn sub_levels_grow_until_a_task_succeeds_and_writes_stop_at_the_limit() {
        let stats = CompactionStats::default();
        let mut c = Compaction {
            config: CompactionConfig {
                trigger_sub_levels: 2,
                write_stop_sub_levels: 3,
            },
            ..Compaction::default()
        };
        c.add_sub_level(7, &stats);
        assert!(!c.due(7));
        c.add_sub_level(7, &stats);
        assert!(c.due(7));
        let e = CompactionError::InconsistentTableInfo {
            group: 7,
            tables: vec![TableId(1)],
        };
        c.finish(7, Err(e.clone()), 10);
        c.add_sub_level(7, &stats);
        assert_eq!(c.write_limit_changes(), [(7, true)]);
        c.groups.get_mut(&7).unwrap().write_stopped_since_us = Some(11);
        assert!(c.write_limit_changes().is_empty());
        assert_eq!(c.groups[&7].last_error, Some(e));
        assert_eq!(c.groups[&7].failing_since_us, Some(10));
        c.finish(7, Ok(()), 12);
        assert_eq!(c.groups[&7].sub_levels, 0);
        assert_eq!(c.write_limit_changes(), [(7, false)]);
        assert_eq!(stats.max_sub_levels.load(Ordering::Relaxed), 3);
    }
}
