//! Why a recovery attempt failed. Every error fails the attempt; recovery retries with backoff.

use std::collections::BTreeMap;
use std::fmt;

use epochlab_common::WorkerId;
use epochlab_rpc::{RpcError, RpcKind};
use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RecoveryError {
    /// Meta believes no compute node is alive: there is nowhere to run the actors.
    #[error("no compute node is alive")]
    NoWorkers,
    /// A request sent to every live node concurrently failed on some of them (the others were still
    /// served): the attempt fails, naming each node that did not acknowledge.
    #[error("{} not acknowledged by {}", rpc.as_str(), Failures(failures))]
    Unreachable {
        rpc: RpcKind,
        failures: BTreeMap<WorkerId, RpcError>,
    },
    /// One request to one node failed.
    #[error("rpc {} to worker {worker} failed: {source}", rpc.as_str())]
    Rpc {
        worker: WorkerId,
        rpc: RpcKind,
        #[source]
        source: RpcError,
    },
    /// A node answered with a response of the wrong kind.
    #[error("worker {worker} answered {} with an unexpected response", rpc.as_str())]
    UnexpectedResponse { worker: WorkerId, rpc: RpcKind },
}

impl RecoveryError {
    /// The nodes this error names as not having acknowledged a request.
    pub fn workers(&self) -> Vec<WorkerId> {
        match self {
            RecoveryError::Unreachable { failures, .. } => failures.keys().copied().collect(),
            RecoveryError::Rpc { worker, .. }
            | RecoveryError::UnexpectedResponse { worker, .. } => {
                vec![*worker]
            }
            RecoveryError::NoWorkers => Vec::new(),
        }
    }
}

struct Failures<'a>(&'a BTreeMap<WorkerId, RpcError>);

impl fmt::Display for Failures<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (w, e)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "worker {w} ({e})")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreachable_names_every_worker() {
        let e = RecoveryError::Unreachable {
            rpc: RpcKind::Reset,
            failures: BTreeMap::from([
                (WorkerId(2), RpcError::Unreachable(WorkerId(2))),
                (WorkerId(3), RpcError::Injected),
            ]),
        };
        assert_eq!(e.workers(), vec![WorkerId(2), WorkerId(3)]);
        assert_eq!(
            e.to_string(),
            "reset not acknowledged by worker 2 (worker 2 is unreachable), worker 3 (injected failure)"
        );
    }
}
