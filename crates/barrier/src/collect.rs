//! Which nodes an in-flight epoch still waits for (RisingWave's `node_to_collect`), and what a worker's error
//! does to it (RisingWave's `barrier/utils.rs`): the place of RisingWave #22384 (fixed by PR #22384, tested by
//! #22393). The barrier manager asks the in-flight epochs in order and stops at the first that is not valid.

use std::collections::BTreeMap;

use epochlab_common::WorkerId;
use epochlab_common::toggle;

toggle! {
    /// RisingWave #22384: what a worker's error does to an epoch's nodes to collect (RisingWave's
    /// `is_valid_after_worker_err`). Read only by the barrier manager's `on_worker_err`, for
    /// [`is_valid_after_worker_err`].
    pub enum OnWorkerErr {
        /// Before the fix: the worker's entry is removed whatever it had to collect. An epoch whose only missing
        /// node was the failed one then looks fully collected and is committed without that node's data.
        RemoveAlways,
        /// RisingWave's fix: only the entry of a worker that had nothing to collect is removed; an epoch that
        /// waited for the worker's actors stays uncollected, and the error drives recovery.
        #[default]
        RemoveIfNothingToCollect,
    }
}

/// Per in-flight epoch: each node it was sent to and has not collected from yet, with whether that node had
/// nothing to collect (no actor of the epoch on it; RisingWave's `is_empty` flag).
pub(crate) type NodeToCollect = BTreeMap<WorkerId, bool>;

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

/// Ask the in-flight epochs, in epoch order, whether each is still valid after `worker`'s error, and stop at
/// the first that is not (RisingWave's `DatabaseCheckpointControl::is_valid_after_worker_err`): the epochs
/// after it are not asked, so their nodes to collect stay as they were. Returns the index of that epoch.
pub(crate) fn first_invalid_after_worker_err<'a>(
    epochs: impl IntoIterator<Item = &'a mut NodeToCollect>,
    worker: WorkerId,
    rule: OnWorkerErr,
) -> Option<usize> {
    epochs
        .into_iter()
        .position(|n| !is_valid_after_worker_err(n, worker, rule))
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

    /// The walk stops at the first epoch the worker's loss makes invalid: under the buggy rule that epoch
    /// loses the worker (and looks collected when it waited for no one else), the idle epoch before it loses
    /// it under both rules, and the epoch after it is not asked.
    #[test]
    fn the_walk_stops_at_the_first_invalid_epoch() {
        for rule in [
            OnWorkerErr::RemoveAlways,
            OnWorkerErr::RemoveIfNothingToCollect,
        ] {
            let mut epochs = [
                nodes(&[(1, false), (2, true)]),
                nodes(&[(2, false)]),
                nodes(&[(1, false), (2, false)]),
            ];
            let at = first_invalid_after_worker_err(epochs.iter_mut(), WorkerId(2), rule);
            assert_eq!(at, Some(1), "{rule:?}");
            assert_eq!(epochs[0], nodes(&[(1, false)]), "{rule:?}");
            assert_eq!(
                epochs[1].is_empty(),
                rule == OnWorkerErr::RemoveAlways,
                "{rule:?}"
            );
            assert_eq!(epochs[2], nodes(&[(1, false), (2, false)]), "{rule:?}");
            let mut idle = [nodes(&[(1, false), (3, true)])];
            assert_eq!(
                first_invalid_after_worker_err(idle.iter_mut(), WorkerId(3), rule),
                None
            );
        }
    }
}
