//! Backfill (reference §5): a job created over a table that already has rows reads the table's snapshot while
//! it forwards the table's new changes, and persists its progress per vnode. Arrangement backfill (per-vnode
//! positions, any upstream distribution) and no-shuffle backfill (one position, the upstream's distribution).

pub mod arrangement_backfill;
pub mod no_shuffle_backfill;
pub mod snapshot;
pub mod state;
pub mod stats;

pub use arrangement_backfill::{ArrangementBackfillExecutor, BackfillArgs};
pub use no_shuffle_backfill::{NoShuffleBackfillExecutor, NoShuffleBackfillState};
pub use state::{BackfillProgressPerVnode, BackfillState};
pub use stats::{BackfillActorStats, BackfillRegistry};
