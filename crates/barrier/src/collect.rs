//! Which nodes an in-flight epoch still waits for (RisingWave's `node_to_collect`), and what a worker's error
//! does to it: the place of RisingWave #22384 (fixed by PR #22384, tested by #22393).

use std::collections::BTreeMap;

use epochlab_common::WorkerId;

/// Per in-flight epoch: each node it was sent to and has not collected from yet, with whether that node had
/// nothing to collect (no actor of the epoch on it; RisingWave's `is_empty` flag).
pub(crate) type NodeToCollect = BTreeMap<WorkerId, bool>;

/// What a worker's error does to an epoch's [`NodeToCollect`] (RisingWave's `is_valid_after_worker_err`).
/// The one toggle of RisingWave #22384, read only by [`is_valid_after_worker_err`].
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

/// Whether an epoch can still complete after `worker`'s error; updates its nodes to collect by `rule`.
pub(crate) fn is_valid_after_worker_err(
    node_to_collect: &mut NodeToCollect,
    worker: WorkerId,
    rule: OnWorkerErr,
) -> bool {
    match rule {
        OnWorkerErr::RemoveAlways => node_to_collect.remove(&worker).unwrap_or(true),
        OnWorkerErr::RemoveIfNothingToCollect => {
            if node_to_collect.get(&worker) == Some(&true) {
                node_to_collect.remove(&worker);
            }
            !node_to_collect.contains_key(&worker)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(entries: &[(u32, bool)]) -> NodeToCollect {
        entries.iter().map(|&(w, e)| (WorkerId(w), e)).collect()
    }

    /// Both rules fail the epoch of a worker with actors; only the buggy one also forgets to wait for it,
    /// which leaves an epoch with nothing left to collect.
    #[test]
    fn the_buggy_rule_forgets_a_worker_with_actors() {
        for rule in [
            OnWorkerErr::RemoveAlways,
            OnWorkerErr::RemoveIfNothingToCollect,
        ] {
            let mut n = nodes(&[(2, false)]);
            assert!(!is_valid_after_worker_err(&mut n, WorkerId(2), rule));
            assert_eq!(n.is_empty(), rule == OnWorkerErr::RemoveAlways, "{rule:?}");
            let mut idle = nodes(&[(1, false), (3, true)]);
            assert!(is_valid_after_worker_err(&mut idle, WorkerId(3), rule));
            assert!(is_valid_after_worker_err(&mut idle, WorkerId(4), rule));
            assert_eq!(idle, nodes(&[(1, false)]), "{rule:?}");
        }
    }
}
