//! RisingWave #14910: arrangement backfill fails recovery with `row [Some(Int16(0))] not found`, because meta
//! unregistered a dropped job's state tables before the job's actors had stopped. Its toggle is
//! [`DropMode`] (`MetaConfig::drop_mode`, decided in meta and recovery); its directed scenario is
//! [`crate::scenario`].

use epochlab_meta::DropMode;

use super::{BugId, BugInfo, Mode, Setting};

pub const INFO: BugInfo = BugInfo {
    id: BugId::Rw14910,
    mechanism: "DROP ignores its failed Stop barrier and unregisters the job's tables at once; a zombie actor \
                of the dropped job then reads its committed progress row as missing",
    fix: "unregister after the Stop barrier is collected, or in recovery after every node is reset",
    links: &[
        "https://github.com/risingwavelabs/risingwave/issues/14910",
        "https://github.com/risingwavelabs/risingwave/pull/15852",
    ],
    modes: &[Mode::Buggy, Mode::Fixed, Mode::PurgeBeforeReset],
    command: "cargo xtask repro --bug 14910",
    settings: &Setting::ALL,
};

/// The drop mode of a run in `mode`.
pub(crate) fn drop_mode(mode: Mode) -> DropMode {
    match mode {
        Mode::Buggy => DropMode::Buggy,
        Mode::Fixed => DropMode::Fixed,
        Mode::PurgeBeforeReset => DropMode::PurgeBeforeReset,
    }
}
