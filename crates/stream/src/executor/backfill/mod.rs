//! Arrangement backfill (reference §5): a job created over a table that already has rows reads the table's
//! snapshot per vnode while it forwards the table's new changes, and persists its progress per vnode.

mod arrangement_backfill;
mod snapshot;
mod state;
mod stats;

pub use arrangement_backfill::{ArrangementBackfillExecutor, BackfillArgs};
pub use state::{BackfillProgressPerVnode, BackfillState};
pub use stats::{BackfillActorStats, BackfillRegistry};
