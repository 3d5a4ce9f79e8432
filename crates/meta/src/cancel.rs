//! Where meta registers a job's state tables in storage (RisingWave #15144's toggle, `PreApplyCancel`, is
//! declared and read in `recovery.rs`).

use epochlab_storage::GroupId;

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
