//! Observation of every access to a local state store, for checkers that are independent of the executors
//! (the zombie-access detector). Storage only reports who touched which table at which epoch; what counts as
//! a violation is the observer's business.

use std::sync::Arc;

use epochlab_common::{ActorId, Epoch, TableId, WorkerId};

/// The actor a local store belongs to, and its streaming job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accessor {
    pub actor: ActorId,
    pub job: TableId,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AccessKind {
    /// A point read or an iterator.
    Read,
    /// A flush of the mem-table (the writes of an epoch).
    Write,
}

impl AccessKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Access {
    pub worker: WorkerId,
    pub table: TableId,
    pub accessor: Accessor,
    pub kind: AccessKind,
    pub epoch: Epoch,
    /// The node's recovery generation the store was created in.
    pub generation: u64,
}

/// Called on every access by a store that knows its actor. Runs inline: keep it cheap.
pub type AccessObserver = Arc<dyn Fn(&Access) + Send + Sync>;
