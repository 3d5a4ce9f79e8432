//! What the executors' recovery tests share: their cluster, and how a run is judged once its faults are over.

use std::fmt::Debug;

use epochlab_common::Toggles;
use epochlab_sim::{Cluster, ClusterConfig, RecoveryFinding};

/// The vnodes of the recovery tests' tables.
pub const VNODES: u32 = 64;

/// Three compute nodes, [`VNODES`] vnodes, a barrier every 100 ms and a checkpoint every other one, with
/// `toggles` (a test-only mutation, or none).
pub fn config(toggles: Toggles) -> ClusterConfig {
    epochlab_sim::config::three_nodes(2, toggles)
}

/// What a run found wrong, in the order it is checked.
#[derive(Debug)]
pub enum Finding {
    /// A state error, or recoveries the faults did not cause.
    Recovery(RecoveryFinding),
    /// The view's rows against the reference's (as `Debug`).
    View { got: String, expected: String },
}

/// The end of a run with one kill: no actor failed on its state, exactly one recovery, the view as the
/// reference says.
pub fn judge<T: PartialEq + Debug>(cluster: &Cluster, got: T, expected: T) -> Result<(), Finding> {
    cluster.check_recoveries(1).map_err(Finding::Recovery)?;
    if got != expected {
        let (got, expected) = (format!("{got:?}"), format!("{expected:?}"));
        return Err(Finding::View { got, expected });
    }
    Ok(())
}

/// A DML batch failed, `kills` kills into the run: only a recovery the kills did not cause (after a state
/// error, say) takes a table's actors away between them, so that is what it found.
pub fn dml_failed(cluster: &Cluster, kills: u64, error: impl std::fmt::Display) -> Finding {
    match cluster.check_recoveries(kills) {
        Err(found) => Finding::Recovery(found),
        Ok(()) => panic!("DML failed with no recovery: {error}"),
    }
}
