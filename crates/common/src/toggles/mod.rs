//! Every bug toggle of the engine, in one struct, [`Toggles`], carried whole into each engine crate's config
//! (`MetaConfig::toggles`, `StreamConfig::toggles`, and from meta into the barrier manager). Each field is one
//! RisingWave bug's seam, read in exactly one place, in the crate where RisingWave had the bug; nothing in the
//! engine knows which bug a run is of. The default is every bug fixed.
//!
//! A new bug's toggle is a field here (and its enum, `#[default]` on the fixed variant) and its one read site in
//! the engine: no config copies it field by field. The catalogue (`epochlab-sim`'s `bugs` module) sets it.

mod drop_mode;

use std::fmt;

pub use drop_mode::{DropMode, ParseDropModeError};

/// Every toggle of the engine, each where RisingWave had its bug. The default is every bug fixed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Toggles {
    /// #14910: when meta unregisters a dropped job's tables (read by meta and recovery, [`DropMode`]'s
    /// methods).
    pub drop_mode: DropMode,
    /// #22384: what a worker's error does to the nodes an epoch still waits for.
    pub on_worker_err: OnWorkerErr,
    /// #16815: how the arrangement backfill derives an upstream row's vnode when it marks upstream chunks.
    pub backfill_vnode: BackfillVnode,
    /// #19138: which backfilling jobs recovery's scale-in reschedules.
    pub reschedule_backfilling: RescheduleBackfilling,
    /// epochlab's reschedule-unpinned check: what an online reschedule's Pause waits for before its Update goes
    /// out.
    pub config_change_wait: ConfigChangeWait,
    /// #15144: what recovery's pre-apply of a buffered cancel does with the job's state tables.
    pub pre_apply_cancel: PreApplyCancel,
}

/// RisingWave #22384: what a worker's error does to an epoch's nodes to collect (RisingWave's
/// `is_valid_after_worker_err`). Read only by the barrier crate's `collect::is_valid_after_worker_err`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnWorkerErr {
    /// Before the fix: the worker's entry is removed whatever it had to collect. An epoch whose only missing
    /// node was the failed one then looks fully collected and is committed without that node's data.
    RemoveAlways,
    /// RisingWave's fix: only the entry of a worker that had nothing to collect is removed; an epoch that
    /// waited for the worker's actors stays uncollected, and the error drives recovery.
    #[default]
    RemoveIfNothingToCollect,
}

/// RisingWave #16815: how the arrangement backfill computes the vnode of an upstream row when it marks upstream
/// chunks. Read only by the stream crate's `build.rs`, for the arrangement backfill's `mark_chunk_ref_by_vnode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackfillVnode {
    /// Before the fix: hash the row's whole pk, whatever the table is distributed by.
    Pk,
    /// The fix: the table's distribution key, as the table distributes its rows.
    #[default]
    DistKey,
}

/// RisingWave #19138: which jobs recovery's scale-in reschedules while they are still being created. Read only
/// by meta's `MetaInner::scale_in` (`scale.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RescheduleBackfilling {
    /// RisingWave v2.0.2 (#19138): recovery scales in unless a materialized view is being created in the
    /// background (`list_background_creating_jobs` listed materialized views only); otherwise every job is
    /// scaled, a `SINK INTO TABLE` still backfilling through no-shuffle backfill included.
    MviewsListed,
    /// RisingWave since PR #23998: every job is scaled except a background job whose backfill cannot be
    /// rescheduled (`collect_unreschedulable_backfill_jobs`, `StreamScanType::is_reschedulable`: no-shuffle
    /// backfill), with the jobs of its no-shuffle group; their actors on removed nodes move whole.
    #[default]
    ReschedulableOnly,
}

/// epochlab's reschedule-unpinned check: what the post-collect of a configuration change's Pause waits for
/// before the change's barrier may go out. Read only by meta's `MetaInner::wait_for_config_change`
/// (`reschedule.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConfigChangeWait {
    /// Before the fix: nothing beyond meta's own commit. The Update reaches an actor before its node has pinned
    /// the version that commits the Pause's epoch: the new owner of a vnode reads its progress (and the
    /// upstream snapshot) without the old owner's last writes.
    None,
    /// RisingWave's `wait_epoch_commit` for `PausedReason::ConfigChange`: every node with actors has pinned a
    /// version whose max committed epoch is at least the Pause's.
    #[default]
    EpochCommit,
}

/// RisingWave #15144: what recovery's pre-apply of a buffered `CANCEL JOB` does with the cancelled job's state
/// tables (RisingWave's `pre_apply_drop_cancel`; read only in meta's `Recovery::pre_apply_drops`). The job is out of the catalog
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
