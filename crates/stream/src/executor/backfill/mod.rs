//! Backfill (reference §5): a job created over a table that already has rows reads the table's snapshot while
//! it forwards the table's new changes, and persists its progress per vnode. Arrangement backfill (per-vnode
//! positions, any upstream distribution) and no-shuffle backfill (one position, the upstream's distribution).

pub mod arrangement_backfill;
pub mod no_shuffle_backfill;
pub mod output;
pub mod snapshot;
pub mod state;
pub mod stats;

pub use arrangement_backfill::{ArrangementBackfillExecutor, BackfillArgs};
pub use no_shuffle_backfill::{NoShuffleBackfillExecutor, NoShuffleBackfillState};
pub use state::{BackfillProgressPerVnode, BackfillState};
pub use stats::{BackfillActorStats, BackfillRegistry};

use epochlab_barrier::Barrier;
use epochlab_state_table::StateTable;

use super::StreamExecutorResult;

/// Commit a backfill's replicated copy of its upstream table at `barrier`, then, when the barrier gives the
/// table a new schema (`ALTER TABLE .. ADD COLUMN`), take it: the upstream's chunks after the barrier have
/// the new columns.
fn commit_upstream(table: &mut StateTable, barrier: &Barrier) -> StreamExecutorResult<()> {
    table.commit(barrier.epoch)?;
    if let Some(desc) = barrier.as_update_table_desc(table.table_id()) {
        table.update_desc(desc)?;
    }
    Ok(())
}
