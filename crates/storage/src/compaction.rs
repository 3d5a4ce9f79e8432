//! Compaction of each group's L0 (reference §4.2). Every commit that brings data to a compaction group adds an
//! L0 sub-level to it, which records the tables whose data it holds. Once a group holds
//! [`CompactionConfig::trigger_sub_levels`], a compaction task runs over its L0 sub-levels. As RisingWave's
//! compactor does (`compact` in `compactor_runner.rs`), the task first narrows its table ids to those whose
//! data its input holds and that are still members of the group (`existing_table_ids`), then fetches each
//! one's filter key extractor from the catalog (through [`CompactionCatalog`], which meta provides). A table
//! the catalog no longer knows fails the task with RisingWave's logged line (`Failed to fetch filter key
//! extractor tables [..]. [..] may be removed by meta-service.`, the symptom of RisingWave #15144). So only a
//! task whose input holds data of such a table fails; its sub-levels then stay and grow with every commit,
//! and at [`CompactionConfig::write_stop_sub_levels`] the group's writes stop (RisingWave's write limit: the
//! stall of #16511 and #20010) until a task succeeds. A task succeeds as soon as every table of its input
//! resolves: its data is already in the committed store, so a successful task only empties the group's L0.
//!
//! epochlab's task reads the L0 sub-levels only: RisingWave's L0-to-base task also takes the base level's
//! files that overlap them, which may hold older data of such a table.
//!
//! Tasks run where RisingWave schedules them: after a commit, for the groups it brought data to, and (standing
//! in for RisingWave's periodic schedule, which a stopped group needs, since nothing commits then) whenever
//! a group's members change by an unregister.

use std::collections::{BTreeMap, BTreeSet};
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
    /// Tables of the task's input that the catalog no longer knows: RisingWave's compactor fetches a filter
    /// key extractor per table of the task and fails it with this line (its format, a set and a list of
    /// ids, in `compactor_runner.rs`; RisingWave's set is a `HashSet`, in no order, where this one is sorted).
    #[error(
        "Failed to fetch filter key extractor tables [{:?}. [{:?}] may be removed by meta-service. ",
        id_set(compact_tables),
        id_list(removed_tables)
    )]
    FilterKeyExtractorNotFound {
        group: GroupId,
        /// The task's table ids: those whose data its input holds, still members of the group.
        compact_tables: Vec<TableId>,
        /// Those of them the catalog does not know.
        removed_tables: Vec<TableId>,
    },
}

/// The task's table ids as RisingWave's compactor holds them: a set of `u32`.
fn id_set(tables: &[TableId]) -> BTreeSet<u32> {
    tables.iter().map(|t| t.0).collect()
}

/// The removed table ids as RisingWave's compactor holds them: a list of `u32`.
fn id_list(tables: &[TableId]) -> Vec<u32> {
    tables.iter().map(|t| t.0).collect()
}

impl CompactionError {
    /// The failure's reason as a metric label.
    pub fn reason(&self) -> &'static str {
        match self {
            CompactionError::FilterKeyExtractorNotFound { .. } => "filter_key_extractor_not_found",
        }
    }

    pub const REASONS: [&'static str; 1] = ["filter_key_extractor_not_found"];

    /// The group whose task failed.
    pub fn group(&self) -> GroupId {
        match self {
            CompactionError::FilterKeyExtractorNotFound { group, .. } => *group,
        }
    }
}

/// One group's L0 and its compaction's state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupCompaction {
    /// Commits that brought data to the group since its last successful task.
    pub sub_levels: u32,
    /// The tables whose data those sub-levels hold: what a task's input holds.
    pub l0_tables: BTreeSet<TableId>,
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
    pub failed_filter_key_extractor_not_found: AtomicU64,
    /// Times a group's writes stopped.
    pub write_stops: AtomicU64,
    /// The most L0 sub-levels any group held.
    pub max_sub_levels: AtomicU64,
}

impl CompactionStats {
    pub(crate) fn failed(&self, e: &CompactionError) {
        match e {
            CompactionError::FilterKeyExtractorNotFound { .. } => self
                .failed_filter_key_extractor_not_found
                .fetch_add(1, Ordering::Relaxed),
        };
    }

    /// Failed tasks of `reason` (one of [`CompactionError::REASONS`]).
    pub fn failures(&self, reason: &str) -> u64 {
        match reason {
            "filter_key_extractor_not_found" => self
                .failed_filter_key_extractor_not_found
                .load(Ordering::Relaxed),
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
    /// A commit brought data of `tables` to `group`.
    pub(crate) fn add_sub_level(
        &mut self,
        group: GroupId,
        tables: &BTreeSet<TableId>,
        stats: &CompactionStats,
    ) {
        assert!(!tables.is_empty(), "an L0 sub-level without data");
        let g = self.groups.entry(group).or_default();
        g.sub_levels += 1;
        g.l0_tables.extend(tables.iter().copied());
        stats
            .max_sub_levels
            .fetch_max(u64::from(g.sub_levels), Ordering::Relaxed);
    }

    /// The tables whose data a task of `group` would read now.
    pub(crate) fn input_tables(&self, group: GroupId) -> BTreeSet<TableId> {
        self.groups
            .get(&group)
            .map(|g| g.l0_tables.clone())
            .unwrap_or_default()
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
                g.l0_tables.clear();
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

    /// RisingWave's line: the task's table ids as a set, the removed ones as a list.
    #[test]
    fn the_error_is_the_compactors_line() {
        let one = CompactionError::FilterKeyExtractorNotFound {
            group: 3,
            compact_tables: vec![TableId(1), TableId(4)],
            removed_tables: vec![TableId(4)],
        };
        assert_eq!(
            one.to_string(),
            "Failed to fetch filter key extractor tables [{1, 4}. [[4]] may be removed by meta-service. "
        );
        assert_eq!(one.group(), 3);
        assert_eq!(one.reason(), CompactionError::REASONS[0]);
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
        let (t1, t2) = (BTreeSet::from([TableId(1)]), BTreeSet::from([TableId(2)]));
        c.add_sub_level(7, &t1, &stats);
        assert!(!c.due(7));
        c.add_sub_level(7, &t2, &stats);
        assert!(c.due(7));
        assert_eq!(c.input_tables(7), BTreeSet::from([TableId(1), TableId(2)]));
        let e = CompactionError::FilterKeyExtractorNotFound {
            group: 7,
            compact_tables: vec![TableId(1), TableId(2)],
            removed_tables: vec![TableId(1)],
        };
        c.finish(7, Err(e.clone()), 10);
        c.add_sub_level(7, &t2, &stats);
        assert_eq!(c.write_limit_changes(), [(7, true)]);
        c.groups.get_mut(&7).unwrap().write_stopped_since_us = Some(11);
        assert!(c.write_limit_changes().is_empty());
        assert_eq!(c.groups[&7].last_error, Some(e));
        assert_eq!(c.groups[&7].failing_since_us, Some(10));
        c.finish(7, Ok(()), 12);
        assert_eq!(c.groups[&7].sub_levels, 0);
        assert!(c.input_tables(7).is_empty());
        assert_eq!(c.write_limit_changes(), [(7, false)]);
        assert_eq!(stats.max_sub_levels.load(Ordering::Relaxed), 3);
    }
}
