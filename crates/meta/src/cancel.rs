//! RisingWave #15144's toggle, and where meta registers a job's state tables in storage.

use std::fmt;

use epochlab_storage::GroupId;

/// What recovery's pre-apply of a buffered `CANCEL JOB` does with the cancelled job's state tables (RisingWave's
/// `pre_apply_drop_cancel`; read only in meta's `Recovery::pre_apply_drops`). The job is out of the catalog
/// either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PreApplyCancel {
    /// Before RisingWave PR #15355 (which says this path "might cause" #15144): the job's fragments are
    /// dropped and its tables handed to nobody, so storage keeps them registered while the catalog no longer
    /// knows them. A compaction task whose input holds their data then fails (the compactor's `Failed to
    /// fetch filter key extractor tables [..]. [..] may be removed by meta-service.`) until meta restarts and
    /// purges.
    KeepRegistered,
    /// The fix: the tables go to recovery with the dropped jobs', which unregisters them.
    #[default]
    Unregister,
}

impl PreApplyCancel {
    pub fn as_str(self) -> &'static str {
        match self {
            PreApplyCancel::KeepRegistered => "keep-registered",
            PreApplyCancel::Unregister => "unregister",
        }
    }

    /// Whether the cancelled job's tables are handed to recovery for unregistering.
    pub fn hands_tables_to_recovery(self) -> bool {
        self == PreApplyCancel::Unregister
    }
}

impl fmt::Display for PreApplyCancel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which compaction group a job's state tables join.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GroupPlacement {
    /// A group of its own per job (epochlab's simplification), destroyed when the job's tables go.
    #[default]
    PerJob,
    /// RisingWave's static groups: a table's or view's own table in `MaterializedView` (3), internal tables
    /// (backfill progress) in `StateDefault` (2), shared by every job and never destroyed.
    Static,
}

/// RisingWave's `StaticCompactionGroupId::StateDefault`.
pub const STATE_DEFAULT_GROUP: GroupId = 2;
/// RisingWave's `StaticCompactionGroupId::MaterializedView`.
pub const MATERIALIZED_VIEW_GROUP: GroupId = 3;
