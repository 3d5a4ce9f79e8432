//! What one log shows of tables leaving the catalog and of recoveries, read event by event: the evidence
//! [`Evidence::RemovedTablesOutliveRecovery`](epochlab_sim::bugs::record::Evidence) asks for.
//!
//! The lines it reads, epochlab's and RisingWave's:
//! - a table leaves the catalog: epochlab's `ddl: drop KIND NAME id=N tables=[TableId(..), ..]`, `ddl: cancel
//!   ..` and recovery's `clean dirty jobs tables=[..]` (RisingWave logs none with its tables' ids);
//! - a recovery resets the nodes: epochlab's `recovery step: reset nodes` (RisingWave's is not at info level);
//! - a recovery completes: epochlab's `recovery: done attempt=N` and RisingWave's `recovery success`;
//! - a table is registered with Hummock, or unregistered: epochlab's `register tables: tables=[..]` and
//!   `unregister tables: tables=[..]` (RisingWave logs neither at info level);
//! - a kept log's cut (`ci --log-dir`'s `[epochlab ci: N bytes of this log left out here; ..]`), after which
//!   a table's leaving may be missing.
//!
//! A table whose leaving the log does not show counts as outliving a recovery only in a log that shows
//! neither its registration nor a cut: RisingWave's own, which name no table at a drop. Where the log shows
//! its registration (epochlab's), a leaving it does not show (a failed create's, say) leaves the line
//! unconfirmed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Markers of the lines read, as each log prints them.
const LEAVES: [&str; 3] = [
    ": ddl: drop ",
    ": ddl: cancel ",
    "clean dirty jobs tables=[",
];
const RESET: [&str; 1] = ["recovery step: reset nodes"];
const RECOVERED: [&str; 2] = ["recovery: done attempt=", "recovery success"];
const REGISTERED: &str = "register tables: tables=[";
const UNREGISTERED: &str = "unregister tables: tables=[";
const CUT: &str = "bytes of this log left out here";
/// A reset that stops actors with a barrier (#5244's buggy reset).
const STOP_BARRIER: &str = "stop actors by barrier";

/// Where a table stands since the log showed it leaving the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// No recovery has reset the nodes since.
    Left,
    /// A recovery reset the nodes after it left: a fixed recovery's pre-applied drops and purge unregister it
    /// by then.
    Reset,
    /// That recovery completed, at this line.
    Outlived { recovered: u64 },
}

/// The tables one log shows leaving the catalog, and its recoveries.
#[derive(Debug, Default)]
pub struct TableLives {
    /// Each table's line of leaving and its stage since.
    left: BTreeMap<u32, (u64, Stage)>,
    /// The tables the log shows registered, and not unregistered since.
    registered: BTreeSet<u32>,
    /// Tables the log shows unregistered: no compaction task names them after.
    unregistered: BTreeSet<u32>,
    /// The line of the last completed recovery.
    recovered: Option<u64>,
    /// The line of the log's first cut, if any.
    cut: Option<u64>,
    /// The line of the first reset that stopped actors with a barrier, if any.
    stop_barrier: Option<u64>,
}

/// What the log shows of the removed tables a line names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `table` outlived a recovery: it left the catalog at line `left` (`None`: the log shows neither its
    /// leaving nor its registration) before a recovery that completed at line `recovered`, and a compaction
    /// task still holds it.
    Outlived {
        table: u32,
        left: Option<u64>,
        recovered: u64,
    },
    /// `table` left the catalog at line `left` (the latest of the tables named) and no recovery has both
    /// reset the nodes and completed since: a drop's window, which ends when its Stop barrier commits.
    Window { table: u32, left: u64 },
    /// The log cannot tell.
    Unconfirmed { table: u32, why: Unknown },
    /// No reset stopped actors with a barrier before the line: an epoch refused for another reason.
    NoStopBarrier,
}

/// Why a log cannot tell whether a table outlived a recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unknown {
    /// It completed no recovery before the line.
    NoRecovery,
    /// It shows the table registered but not its leaving the catalog.
    LeavingNotLogged,
    /// A part of it was cut out (at this line), where the leaving may have been.
    Cut(u64),
    /// It names no table as removed.
    NoTables,
}

impl TableLives {
    /// Reads one event (its first line's number and its text).
    pub fn observe(&mut self, line: u64, text: &str) {
        if text.contains(STOP_BARRIER) {
            self.stop_barrier.get_or_insert(line);
        }
        if LEAVES.iter().any(|m| text.contains(m)) {
            for table in table_ids(text) {
                self.left.entry(table).or_insert((line, Stage::Left));
            }
        } else if RESET.iter().any(|m| text.contains(m)) {
            for (_, stage) in self.left.values_mut() {
                if *stage == Stage::Left {
                    *stage = Stage::Reset;
                }
            }
        } else if RECOVERED.iter().any(|m| text.contains(m)) {
            for (_, stage) in self.left.values_mut() {
                if *stage == Stage::Reset {
                    *stage = Stage::Outlived { recovered: line };
                }
            }
            self.recovered = Some(line);
        } else if text.contains(UNREGISTERED) {
            for table in table_ids(text) {
                self.registered.remove(&table);
                self.unregistered.insert(table);
            }
        } else if text.contains(REGISTERED) {
            self.registered.extend(table_ids(text));
        } else if text.contains(CUT) {
            self.cut.get_or_insert(line);
        }
    }

    /// What the log so far shows of `removed`, the tables a line names as removed: the first that outlived a
    /// recovery, else the window of the latest to leave, else why it cannot tell.
    /// The line of the first reset that stopped actors with a barrier, if the log shows one.
    pub fn stop_barrier(&self) -> Option<u64> {
        self.stop_barrier
    }

    pub fn verdict(&self, removed: &[u32]) -> Verdict {
        let mut window: Option<(u32, u64)> = None;
        let mut unconfirmed = None;
        for &table in removed {
            match self.left.get(&table) {
                Some(&(left, Stage::Outlived { recovered })) => {
                    return Verdict::Outlived {
                        table,
                        left: Some(left),
                        recovered,
                    };
                }
                Some(&(left, _)) => {
                    if window.is_none_or(|(_, l)| left > l) {
                        window = Some((table, left));
                    }
                }
                None => match self.unknown(table) {
                    Ok(recovered) => {
                        return Verdict::Outlived {
                            table,
                            left: None,
                            recovered,
                        };
                    }
                    Err(why) => {
                        unconfirmed.get_or_insert(Verdict::Unconfirmed { table, why });
                    }
                },
            }
        }
        match (window, unconfirmed) {
            (Some((table, left)), _) => Verdict::Window { table, left },
            (None, Some(v)) => v,
            (None, None) => Verdict::Unconfirmed {
                table: 0,
                why: Unknown::NoTables,
            },
        }
    }

    /// For a table whose leaving the log does not show: the recovery it outlived, as the record reads
    /// RisingWave's logs, or why the log cannot tell.
    fn unknown(&self, table: u32) -> Result<u64, Unknown> {
        if self.registered.contains(&table) || self.unregistered.contains(&table) {
            return Err(Unknown::LeavingNotLogged);
        }
        if let Some(cut) = self.cut {
            return Err(Unknown::Cut(cut));
        }
        self.recovered.ok_or(Unknown::NoRecovery)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Outlived {
                table,
                left: Some(left),
                recovered,
            } => write!(
                f,
                "table {table} left the catalog at line {left}, before the recovery that completed at line \
                 {recovered}, and a compaction task still holds it"
            ),
            Verdict::Outlived {
                table,
                left: None,
                recovered,
            } => write!(
                f,
                "the log never shows table {table} leaving the catalog, and a compaction task still holds it \
                 after the recovery that completed at line {recovered}"
            ),
            Verdict::NoStopBarrier => write!(
                f,
                "no reset stopped the actors with a barrier before it: an epoch refused for another reason"
            ),
            Verdict::Window { table, left } => write!(
                f,
                "table {table} left the catalog at line {left} and no recovery has both reset the nodes and \
                 completed since: a drop's window, which ends when its Stop barrier commits"
            ),
            Verdict::Unconfirmed { table, why } => match why {
                Unknown::NoRecovery => write!(
                    f,
                    "the log shows neither table {table} leaving the catalog nor a recovery completed before \
                     the line"
                ),
                Unknown::LeavingNotLogged => write!(
                    f,
                    "the log shows table {table} registered but not when it left the catalog"
                ),
                Unknown::Cut(line) => write!(
                    f,
                    "the log does not show table {table} leaving the catalog, and a part of it was cut out at \
                     line {line}"
                ),
                Unknown::NoTables => write!(f, "the line names no removed table"),
            },
        }
    }
}

/// The ids of `tables=[TableId(1), TableId(2)]` in `text`.
fn table_ids(text: &str) -> Vec<u32> {
    let Some(at) = text.find("tables=[") else {
        return Vec::new();
    };
    let list = &text[at + "tables=[".len()..];
    let list = &list[..list.find(']').unwrap_or(list.len())];
    list.split("TableId(")
        .filter_map(|s| s.split(')').next()?.trim().parse().ok())
        .collect()
}

/// The ids of the removed tables RisingWave's compactor line names, its second list:
/// `Failed to fetch filter key extractor tables [{1, 2}. [[2]] may be removed by meta-service.`
pub fn removed_tables(text: &str) -> Vec<u32> {
    let Some(end) = text.find("]] may be removed") else {
        return Vec::new();
    };
    let Some(start) = text[..end].rfind("[[") else {
        return Vec::new();
    };
    text[start + 2..end]
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAILS: &str = "ERROR epochlab_storage::manager: commit epoch: Failed to fetch filter key extractor \
                         tables [{1, 2, 3}. [[2, 3]] may be removed by meta-service.  group=3";

    fn lives(lines: &[&str]) -> TableLives {
        let mut l = TableLives::default();
        for (i, text) in lines.iter().enumerate() {
            l.observe(i as u64 + 1, text);
        }
        l
    }

    #[test]
    fn a_drop_with_no_recovery_since_is_its_window() {
        let l =
            lives(&["drop streaming job: ddl: drop sink s id=1 tables=[TableId(2), TableId(3)]"]);
        assert_eq!(
            l.verdict(&removed_tables(FAILS)),
            Verdict::Window { table: 2, left: 1 }
        );
        // A recovery that completed before the drop does not count.
        let l = lives(&[
            "recovery: recovery step: reset nodes generation=2",
            "recovery: recovery: done attempt=1 initial_barrier_curr=5",
            "drop streaming job: ddl: drop sink s id=1 tables=[TableId(2), TableId(3)]",
        ]);
        assert_eq!(l.verdict(&[2, 3]), Verdict::Window { table: 2, left: 3 });
        // Nor one whose reset came before the drop.
        let l = lives(&[
            "recovery: recovery step: reset nodes generation=2",
            "cancel streaming job: ddl: cancel materialized view m id=1 tables=[TableId(2)]",
            "recovery: recovery: done attempt=1 initial_barrier_curr=5",
        ]);
        assert_eq!(l.verdict(&[2]), Verdict::Window { table: 2, left: 2 });
    }

    #[test]
    fn a_table_that_left_before_a_completed_recovery_outlived_it() {
        let l = lives(&[
            "cancel streaming job: ddl: cancel materialized view m id=1 tables=[TableId(2), TableId(3)]",
            "recovery: recovery step: reset nodes generation=4",
            "recovery: recovery: done attempt=2 initial_barrier_curr=5",
        ]);
        assert_eq!(
            l.verdict(&removed_tables(FAILS)),
            Verdict::Outlived {
                table: 2,
                left: Some(1),
                recovered: 3
            }
        );
    }

    #[test]
    fn unknown_tables_outlive_a_recovery_completed_before_the_line() {
        assert_eq!(
            lives(&[]).verdict(&[7]),
            Verdict::Unconfirmed {
                table: 7,
                why: Unknown::NoRecovery
            }
        );
        let l = lives(&["INFO risingwave_meta::barrier::recovery: recovery success prev_epoch=1"]);
        assert_eq!(
            l.verdict(&[7]),
            Verdict::Outlived {
                table: 7,
                left: None,
                recovered: 1
            }
        );
    }

    /// In a log that shows the table registered, or was cut, a leaving it does not show is not taken as
    /// outliving the recovery.
    #[test]
    fn a_leaving_the_log_could_have_shown_is_not_assumed() {
        let recovered = "recovery: recovery: done attempt=1 initial_barrier_curr=5";
        let l = lives(&[
            "epoch: register tables: tables=[TableId(7)] group=3",
            recovered,
        ]);
        assert_eq!(
            l.verdict(&[7]),
            Verdict::Unconfirmed {
                table: 7,
                why: Unknown::LeavingNotLogged
            }
        );
        let l = lives(&[
            "[epochlab ci: 10 bytes of this log left out here; a log keeps its first 8 MiB and its last 8 MiB]",
            recovered,
        ]);
        assert_eq!(
            l.verdict(&[7]),
            Verdict::Unconfirmed {
                table: 7,
                why: Unknown::Cut(1)
            }
        );
        // One table that outlived it is enough.
        let l = lives(&[
            "epoch: register tables: tables=[TableId(7), TableId(8)] group=3",
            "cancel streaming job: ddl: cancel materialized view m id=1 tables=[TableId(8)]",
            "recovery step: recovery step: reset nodes generation=2",
            recovered,
        ]);
        assert!(matches!(
            l.verdict(&[7, 8]),
            Verdict::Outlived { table: 8, .. }
        ));
    }

    #[test]
    fn the_lists_are_read() {
        assert_eq!(removed_tables(FAILS), vec![2, 3]);
        assert_eq!(removed_tables("no list"), Vec::<u32>::new());
        assert_eq!(
            table_ids("ddl: drop table t id=5 tables=[TableId(5), TableId(12)] x=[1]"),
            vec![5, 12]
        );
    }
}
