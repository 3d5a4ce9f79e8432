//! Invariant checkers (reference §10.19), run as the simulation goes:
//! - (I1) committed epochs strictly increase, and (I4 full-collection) each was collected from every node it
//!   was sent to: no epoch is committed without a node it had to collect from (RisingWave #22384), from the
//!   event log, [`check_commits`];
//! - (I2) in the fixed modes, no table is unregistered while an actor that reads or writes it runs;
//! - (I3) after each recovery, the registered tables equal the catalog's (but for drops still queued for their
//!   barrier), and at the end of a run they equal it;
//! - (I5) persisted backfill rows equal the executor's committed copy, and positions only move forward: the
//!   executor checks both itself and fails with a typed error, which the scenario reports;
//! - (I5 meta-restart) after each start of a meta, what clients were told holds (`meta_witness.rs`);
//! - (I6 one-writer) no meta writes its store after a later one claimed it (`one_writer.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, Weak};

use epochlab_common::toggles::DropMode;
use epochlab_common::{ActorId, Clock, TableId, WorkerId};
use epochlab_storage::{Access, AccessKind, AccessObserver, HummockManager};

use crate::cluster::Cluster;
use crate::report::Violation;

/// One kind of access the detector saw: the first occurrence and how often it happened.
#[derive(Clone, Debug)]
pub struct ZombieAccess {
    pub access: Access,
    /// Virtual time of the first such access, µs since the origin.
    pub first_at_us: u64,
    pub last_at_us: u64,
    pub count: u64,
}

/// (actor, table, kind): one entry per kind of access.
type AccessKey = (u32, u32, AccessKind);

/// (I2 zombie-access) An independent detector, on in every mode: storage tells it of every read and flush by
/// an actor, and it keeps those to a table that meta has unregistered. It does not rely on the executor's
/// checks, so a run whose zombie wrote to an unregistered table is never reported as passing.
#[derive(Clone, Default)]
pub struct ZombieAccessDetector {
    seen: Arc<Mutex<BTreeMap<AccessKey, ZombieAccess>>>,
}

impl ZombieAccessDetector {
    /// The observer to install on every node's storage.
    pub fn observer(&self, hummock: Weak<HummockManager>, clock: Clock) -> AccessObserver {
        let seen = self.seen.clone();
        Arc::new(move |a: &Access| {
            let Some(hummock) = hummock.upgrade() else {
                return;
            };
            if hummock.is_registered(a.table) {
                return;
            }
            let now = clock.elapsed_us();
            let key = (a.accessor.actor.0, a.table.0, a.kind);
            let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
            let entry = seen.entry(key).or_insert(ZombieAccess {
                access: *a,
                first_at_us: now,
                last_at_us: now,
                count: 0,
            });
            entry.count += 1;
            entry.last_at_us = now;
        })
    }

    /// How many kinds of access (actor, table, read or write) have been seen.
    pub fn count(&self) -> usize {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Every kind of access seen, in order of first occurrence.
    pub fn accesses(&self) -> Vec<ZombieAccess> {
        let mut all: Vec<ZombieAccess> = self
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        all.sort_by_key(|z| (z.first_at_us, z.access.accessor.actor.0, z.access.table.0));
        all
    }

    /// The accesses as violations; `dropped(job)` says whether meta has dropped the job.
    pub fn violations(&self, dropped: impl Fn(TableId) -> bool) -> Vec<Violation> {
        self.accesses()
            .into_iter()
            .map(|z| {
                let a = z.access;
                // Out of the catalog: dropped, or a creating job that recovery cleaned.
                let whose = if dropped(a.accessor.job) {
                    "dropped or cleaned job"
                } else {
                    "job"
                };
                Violation {
                    invariant: "I2 zombie-access",
                    detail: format!(
                        "actor {} of {whose} {} on worker {} {} table {}, which is not registered, at epoch {} \
                         ({} time(s), first at {:.3} s)",
                        a.accessor.actor,
                        a.accessor.job,
                        a.worker,
                        match a.kind {
                            AccessKind::Read => "read",
                            AccessKind::Write => "wrote",
                        },
                        a.table,
                        a.epoch,
                        z.count,
                        z.first_at_us as f64 / 1e6
                    ),
                    actor: Some(a.accessor.actor.0),
                    table: Some(a.table.0),
                    epoch: Some(a.epoch.0),
                    at_us: Some(z.first_at_us),
                }
            })
            .collect()
    }
}

/// One unregister of tables, and how many running actors used them at that moment.
#[derive(Clone, Debug)]
pub struct Unregister {
    pub at_us: u64,
    pub tables: Vec<TableId>,
    pub running_users: usize,
    /// Why storage unregistered them (its event-log reason, e.g. `drop collected`).
    pub reason: String,
}

/// The invariants as metric label values, each counted from the start of a run.
pub const INVARIANT_LABELS: [&str; 9] = [
    "i1_commit_order",
    "i2_unregister_in_use",
    "i2_zombie_access",
    "i3_table_set",
    "i4_full_collection",
    "i5_meta_restart",
    "i6_one_writer",
    "i6_epochs",
    "oracle",
];

/// The label of an invariant name (`I2 zombie-access` is `i2_zombie_access`).
pub fn invariant_label(invariant: &str) -> &'static str {
    match invariant {
        "I1 commit-order" => "i1_commit_order",
        "I2 unregister-in-use" => "i2_unregister_in_use",
        "I2 zombie-access" => "i2_zombie_access",
        "I3 table-set" => "i3_table_set",
        "I4 full-collection" => "i4_full_collection",
        crate::meta_witness::INVARIANT => "i5_meta_restart",
        crate::one_writer::INVARIANT => "i6_one_writer",
        EPOCHS_INVARIANT => "i6_epochs",
        _ => "oracle",
    }
}

/// Violations found so far in a run, by invariant label (the zombie-access detector counts its own: see
/// [`ZombieAccessDetector::accesses`]). Metrics read it while the run goes.
#[derive(Clone, Default)]
pub struct ViolationCounts(Arc<Mutex<BTreeMap<&'static str, u64>>>);

impl ViolationCounts {
    fn add(&self, label: &'static str) {
        *self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(label)
            .or_default() += 1;
    }

    /// The count of `label` so far.
    pub fn get(&self, label: &str) -> u64 {
        let counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        counts.get(label).copied().unwrap_or(0)
    }
}

#[derive(Clone)]
pub struct Checkers {
    violations: Arc<Mutex<Vec<Violation>>>,
    counts: ViolationCounts,
    unregisters: Arc<Mutex<Vec<Unregister>>>,
}

impl Checkers {
    /// Hook the checkers into a cluster. In `Buggy` mode an early unregister is the bug itself, not a checker
    /// finding: I2 is checked only in the other modes.
    pub fn install(cluster: &Arc<Cluster>, mode: DropMode) -> Self {
        let this = Self {
            violations: Arc::default(),
            counts: cluster.violations.clone(),
            unregisters: Arc::default(),
        };
        let weak = Arc::downgrade(cluster);
        let me = this.clone();
        cluster
            .hummock
            .set_unregister_hook(Arc::new(move |tables: &[TableId], reason: &str| {
                let Some(cluster) = weak.upgrade() else {
                    return;
                };
                let mut users = Vec::new();
                for node in cluster.nodes() {
                    for t in tables {
                        let actors = node.active_tables().users_of(*t);
                        if !actors.is_empty() {
                            users.push((node.worker(), *t, actors));
                        }
                    }
                }
                let at_us = cluster.ctx.clock.elapsed_us();
                me.record_unregister(mode, at_us, tables, users, reason);
            }));
        let me = this.clone();
        cluster
            .watched_store()
            .report_to(Arc::new(move |v| me.violation(v)));
        let weak = Arc::downgrade(cluster);
        let me = this.clone();
        let exact = mode.settles_the_table_set();
        cluster.meta().set_recovery_hook(Arc::new(move || {
            if let Some(cluster) = weak.upgrade() {
                me.check_tables_after_recovery(&cluster, exact);
                // (I5) the first recovery of a restarted meta is its bootstrap.
                if let Some(witness) = cluster.take_meta_witness() {
                    for v in witness.check(&cluster) {
                        me.violation(v);
                    }
                }
            }
        }));
        this
    }

    /// (I2 unregister-in-use) in the modes that promise it; in `buggy` the early unregister is the bug
    /// itself, kept as an observation that explains the run.
    fn record_unregister(
        &self,
        mode: DropMode,
        at_us: u64,
        tables: &[TableId],
        users: Vec<(WorkerId, TableId, Vec<ActorId>)>,
        reason: &str,
    ) {
        if mode.claims_no_unregister_in_use() {
            for (worker, t, actors) in &users {
                let mut v = Violation::new(
                    "I2 unregister-in-use",
                    format!(
                        "table {t} unregistered while actors {actors:?} on worker {worker} still use it"
                    ),
                );
                v.table = Some(t.0);
                v.at_us = Some(at_us);
                v.actor = actors.first().map(|a| a.0);
                self.violation(v);
            }
        }
        let running = users.iter().map(|(_, _, a)| a.len()).sum();
        let mut all = self.unregisters.lock().unwrap_or_else(|e| e.into_inner());
        if all.len() < 1024 {
            all.push(Unregister {
                at_us,
                tables: tables.to_vec(),
                running_users: running,
                reason: reason.to_string(),
            });
        }
    }

    /// Every unregister seen, in order.
    pub fn unregisters(&self) -> Vec<Unregister> {
        self.unregisters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn violation(&self, v: Violation) {
        let mut all = self.violations.lock().unwrap_or_else(|e| e.into_inner());
        if !all.contains(&v) {
            self.counts.add(invariant_label(v.invariant));
            all.push(v);
        }
    }

    pub fn violations(&self) -> Vec<Violation> {
        self.violations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// (I3) right after a recovery: every table of the catalog is registered, and (where the drop mode
    /// settles the table set, `exact`) every registered table is the catalog's or a drop's still queued for
    /// its barrier (buffered at the end of the recovery, its job already out of the catalog). A table that
    /// is neither was left behind by a drop or cancel the recovery applied (RisingWave #15144).
    fn check_tables_after_recovery(&self, cluster: &Cluster, exact: bool) {
        let queued: BTreeSet<TableId> = exact
            .then(|| cluster.meta().scheduler().queued_drop_tables())
            .into_iter()
            .flatten()
            .collect();
        self.check_tables(cluster, "after recovery", exact.then_some(&queued));
    }

    /// (I3) every table of the catalog is registered; with `may_also` (at the end of a run: nothing), every
    /// registered table is the catalog's or one of those.
    fn check_tables(&self, cluster: &Cluster, when: &str, may_also: Option<&BTreeSet<TableId>>) {
        let registered = cluster.hummock.registered_tables();
        let catalog: BTreeSet<TableId> = cluster
            .meta()
            .catalog()
            .state_tables()
            .into_iter()
            .collect();
        let missing: Vec<TableId> = catalog.difference(&registered).copied().collect();
        let stale: Vec<TableId> = match may_also {
            Some(also) => registered
                .iter()
                .filter(|t| !catalog.contains(t) && !also.contains(t))
                .copied()
                .collect(),
            None => Vec::new(),
        };
        if missing.is_empty() && stale.is_empty() {
            return;
        }
        // One table named, the rest counted: the same failure has one signature however many tables.
        let mut parts = Vec::new();
        if let Some(t) = stale.first() {
            parts.push(format!(
                "table {t} is registered, but the catalog does not know it ({} such)",
                stale.len()
            ));
        }
        if let Some(t) = missing.first() {
            parts.push(format!(
                "table {t} of the catalog is not registered ({} such)",
                missing.len()
            ));
        }
        let mut v = Violation::new("I3 table-set", format!("{when}: {}", parts.join("; ")));
        v.table = stale.first().or(missing.first()).map(|t| t.0);
        v.at_us = Some(cluster.ctx.clock.elapsed_us());
        self.violation(v);
    }

    /// The checks at the end of a run.
    pub fn check_end(&self, cluster: &Cluster) {
        self.check_tables(cluster, "at the end", Some(&BTreeSet::new()));
        if let Err(e) = check_commits(&cluster.ctx.log.lines()) {
            self.violation(Violation::new(e.invariant(), e.to_string()));
        }
    }
}

/// (I6 epochs) Every epoch a meta issues is above every epoch issued before, by it or an earlier meta.
pub const EPOCHS_INVARIANT: &str = "I6 epochs";

/// Why an event log breaks I1, I4 or I6 ([`check_commits`]). Nodes are the worker ids as the log prints them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommitCheckError {
    /// (I1) A commit of an epoch not above the previous commit's.
    #[error("commit of {epoch} after {last}: {line}")]
    NotIncreasing { epoch: u64, last: u64, line: String },
    /// (I6 epochs) A barrier whose epoch is not above every epoch injected before it (by this meta or an
    /// earlier one).
    #[error("barrier of {curr} injected after {last}: {line}")]
    IssuedNotIncreasing { curr: u64, last: u64, line: String },
    /// (I6 one-writer) A barrier that does not follow the last one injected (its `prev` another epoch), other
    /// than a recovery's first: two barrier managers drive the nodes.
    #[error("barrier from {prev} injected while the last barrier was {last}: {line}")]
    BrokenChain { prev: u64, last: u64, line: String },
    /// A commit of an epoch that no `inject barrier` line injected.
    #[error("commit of an epoch never injected: {line}")]
    NeverInjected { epoch: u64, line: String },
    /// (I4) The epoch was committed before every node it was injected to had collected it.
    #[error(
        "epoch {epoch} committed without worker {missing} (collected from {collected:?}, injected to \
         {injected:?})",
        missing = missing.iter().cloned().collect::<Vec<_>>().join(", ")
    )]
    CommittedWithout {
        epoch: u64,
        missing: BTreeSet<String>,
        collected: BTreeSet<String>,
        injected: BTreeSet<String>,
    },
    /// (I4) Nodes collected the epoch that it was not injected to.
    #[error(
        "epoch {epoch} committed with collections from {collected:?}, injected to {injected:?}"
    )]
    CollectedFromOthers {
        epoch: u64,
        collected: BTreeSet<String>,
        injected: BTreeSet<String>,
    },
    /// A line of one of the three kinds without the field the check needs, or with one it cannot parse.
    #[error("{event} without a valid {field}: {line}")]
    Unparsable {
        event: &'static str,
        field: &'static str,
        line: String,
    },
}

impl CommitCheckError {
    /// The invariant the error breaks: I4 full-collection for a commit without every node, I6 for a barrier
    /// out of order or out of the chain, else I1.
    pub fn invariant(&self) -> &'static str {
        match self {
            CommitCheckError::CommittedWithout { .. }
            | CommitCheckError::CollectedFromOthers { .. } => "I4 full-collection",
            CommitCheckError::IssuedNotIncreasing { .. } => EPOCHS_INVARIANT,
            CommitCheckError::BrokenChain { .. } => crate::one_writer::INVARIANT,
            _ => "I1 commit-order",
        }
    }
}

/// (I1, I4, I6) on an event log: committed epochs strictly increase, and an epoch is committed only after every
/// node it was injected to has collected it; injected epochs strictly increase, and each barrier follows the
/// last one injected but a recovery's first (one barrier manager at a time). Returns the number of commits
/// checked.
pub fn check_commits(lines: &[String]) -> Result<usize, CommitCheckError> {
    use std::collections::BTreeMap;
    let mut injected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut collected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut last: u64 = 0;
    let mut last_issued: Option<u64> = None;
    let mut commits = 0;
    let unparsable =
        |event: &'static str, field: &'static str, line: &str| CommitCheckError::Unparsable {
            event,
            field,
            line: line.to_string(),
        };
    for line in lines {
        if line.contains(" inject barrier: ") {
            let prev = log_field(line, "prev").ok_or_else(|| unparsable("inject", "prev", line))?;
            check_issued(line, &prev, &mut last_issued)?;
            injected.insert(
                prev,
                nodes_of(&log_field(line, "nodes").unwrap_or_default()),
            );
        } else if line.contains(" collect barrier: ") {
            let prev =
                log_field(line, "prev").ok_or_else(|| unparsable("collect", "prev", line))?;
            collected
                .entry(prev)
                .or_default()
                .insert(log_field(line, "worker").unwrap_or_default());
        } else if line.contains(" commit epoch: ") {
            let e = log_field(line, "epoch").ok_or_else(|| unparsable("commit", "epoch", line))?;
            let n: u64 = e.parse().map_err(|_| unparsable("commit", "epoch", line))?;
            if n <= last {
                return Err(CommitCheckError::NotIncreasing {
                    epoch: n,
                    last,
                    line: line.clone(),
                });
            }
            last = n;
            let want = injected
                .get(&e)
                .ok_or_else(|| CommitCheckError::NeverInjected {
                    epoch: n,
                    line: line.clone(),
                })?;
            let got = collected.get(&e).cloned().unwrap_or_default();
            check_full_collection(n, want, got)?;
            commits += 1;
        }
    }
    Ok(commits)
}

/// (I6) An `inject barrier` line: its `curr` above `last`, and its `prev` `last` unless it is a recovery's
/// first barrier (`kind=initial`); `last` becomes its `curr`.
fn check_issued(line: &str, prev: &str, last: &mut Option<u64>) -> Result<(), CommitCheckError> {
    let parsed = |field: &'static str, v: Option<String>| {
        v.and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| CommitCheckError::Unparsable {
                event: "inject",
                field,
                line: line.to_string(),
            })
    };
    let curr = parsed("curr", log_field(line, "curr"))?;
    let prev = parsed("prev", Some(prev.to_string()))?;
    if let Some(l) = *last {
        if curr <= l {
            let line = line.to_string();
            return Err(CommitCheckError::IssuedNotIncreasing {
                curr,
                last: l,
                line,
            });
        }
        let initial = log_field(line, "kind").is_some_and(|k| k == "initial");
        if !initial && prev != l {
            let line = line.to_string();
            return Err(CommitCheckError::BrokenChain {
                prev,
                last: l,
                line,
            });
        }
    }
    *last = Some(curr);
    Ok(())
}

/// The value of ` key=` in an event line: up to the next space, or a whole `[...]` list.
fn log_field(line: &str, key: &str) -> Option<String> {
    let start = line.find(&format!(" {key}="))? + key.len() + 2;
    let rest = &line[start..];
    let end = if rest.starts_with('[') {
        rest.find(']').map(|i| i + 1)
    } else {
        rest.find(' ')
    };
    Some(rest[..end.unwrap_or(rest.len())].to_string())
}

/// The nodes of a `[1, 2]` list field.
fn nodes_of(s: &str) -> BTreeSet<String> {
    s.trim_matches(|c| c == '[' || c == ']')
        .split(", ")
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// (I4) The nodes that collected `epoch` are exactly those it was injected to.
fn check_full_collection(
    epoch: u64,
    injected: &BTreeSet<String>,
    collected: BTreeSet<String>,
) -> Result<(), CommitCheckError> {
    let missing: BTreeSet<String> = injected.difference(&collected).cloned().collect();
    if !missing.is_empty() {
        return Err(CommitCheckError::CommittedWithout {
            epoch,
            missing,
            collected,
            injected: injected.clone(),
        });
    }
    if &collected != injected {
        return Err(CommitCheckError::CollectedFromOthers {
            epoch,
            collected,
            injected: injected.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    /// (I6) Injected epochs strictly increase, and a barrier follows the last one but a recovery's first.
    #[test]
    fn barriers_follow_each_other_in_one_chain() {
        let initial = "  1.2 inject barrier: prev=10 curr=40 kind=initial mutation=add nodes=[1]";
        assert_eq!(check_commits(&log(&[INJECT_10, INJECT_20, initial])), Ok(0));
        let again = "  1.2 inject barrier: prev=30 curr=30 kind=checkpoint nodes=[1]";
        let err = check_commits(&log(&[INJECT_10, INJECT_20, again])).unwrap_err();
        assert_eq!(err.invariant(), EPOCHS_INVARIANT, "{err}");
        let other = "  1.2 inject barrier: prev=20 curr=35 kind=checkpoint nodes=[1]";
        let err = check_commits(&log(&[INJECT_10, INJECT_20, other])).unwrap_err();
        assert_eq!(err.invariant(), crate::one_writer::INVARIANT, "{err}");
    }

    const INJECT_10: &str = "  1.0 inject barrier: prev=10 curr=20 kind=checkpoint nodes=[1, 2]";
    const INJECT_20: &str = "  1.1 inject barrier: prev=20 curr=30 kind=checkpoint nodes=[1]";
    const COLLECT_10_1: &str = "  1.2 collect barrier: prev=10 worker=1";
    const COLLECT_10_2: &str = "  1.3 collect barrier: prev=10 worker=2";
    const COLLECT_20_1: &str = "  1.4 collect barrier: prev=20 worker=1";
    const COMMIT_10: &str = "  1.5 commit epoch: epoch=10 workers=[1, 2] version=2";
    const COMMIT_20: &str = "  1.6 commit epoch: epoch=20 workers=[1] version=3";

    #[test]
    fn commits_in_order_from_every_node() {
        let lines = log(&[
            INJECT_10,
            INJECT_20,
            COLLECT_10_1,
            COLLECT_10_2,
            COLLECT_20_1,
            COMMIT_10,
            COMMIT_20,
        ]);
        assert_eq!(check_commits(&lines), Ok(2));
    }

    #[test]
    fn each_case_is_its_own_error() {
        let lines = log(&[
            INJECT_10,
            INJECT_20,
            COLLECT_10_1,
            COLLECT_10_2,
            COLLECT_20_1,
            COMMIT_20,
            COMMIT_10,
        ]);
        assert_eq!(
            check_commits(&lines),
            Err(CommitCheckError::NotIncreasing {
                epoch: 10,
                last: 20,
                line: COMMIT_10.to_string(),
            })
        );
        assert_eq!(
            check_commits(&log(&[COMMIT_10])),
            Err(CommitCheckError::NeverInjected {
                epoch: 10,
                line: COMMIT_10.to_string(),
            })
        );
        let err = check_commits(&log(&[INJECT_10, COLLECT_10_2, COMMIT_10])).unwrap_err();
        assert_eq!(
            err,
            CommitCheckError::CommittedWithout {
                epoch: 10,
                missing: BTreeSet::from(["1".to_string()]),
                collected: BTreeSet::from(["2".to_string()]),
                injected: BTreeSet::from(["1".to_string(), "2".to_string()]),
            }
        );
        assert_eq!(
            err.to_string(),
            r#"epoch 10 committed without worker 1 (collected from {"2"}, injected to {"1", "2"})"#
        );
        assert_eq!(err.invariant(), "I4 full-collection");
        let err = check_commits(&log(&[INJECT_20, COLLECT_10_2, COMMIT_20]));
        assert!(matches!(
            err,
            Err(CommitCheckError::CommittedWithout { .. })
        ));
        let extra = "  1.3 collect barrier: prev=20 worker=2";
        let err = check_commits(&log(&[INJECT_20, COLLECT_20_1, extra, COMMIT_20])).unwrap_err();
        assert!(matches!(err, CommitCheckError::CollectedFromOthers { .. }));
        let bad = "  1.7 commit epoch: epoch=x10 workers=[1]";
        assert_eq!(
            check_commits(&log(&[bad])),
            Err(CommitCheckError::Unparsable {
                event: "commit",
                field: "epoch",
                line: bad.to_string(),
            })
        );
    }
}

#[cfg(test)]
mod detector_tests {
    use epochlab_common::{ActorId, Epoch, WorkerId};
    use epochlab_storage::{Accessor, CommittedStore};

    use super::*;

    fn access(table: TableId, kind: AccessKind) -> Access {
        Access {
            worker: WorkerId(3),
            table,
            accessor: Accessor {
                actor: ActorId(7),
                job: TableId(2),
            },
            kind,
            epoch: Epoch(42 << 16),
            generation: 1,
        }
    }

    /// Accesses to registered tables are fine; after the unregister, each kind of access is kept once, with
    /// its count, and becomes an I2 violation naming the actor, the table and the epoch.
    #[test]
    fn the_detector_keeps_accesses_to_unregistered_tables() {
        let hummock = Arc::new(HummockManager::new(CommittedStore::default(), None));
        let t = TableId(3);
        hummock.register_tables(&[t]);
        let detector = ZombieAccessDetector::default();
        let clock = Clock::virtual_from(0);
        let observe = detector.observer(Arc::downgrade(&hummock), clock);
        observe(&access(t, AccessKind::Read));
        assert!(detector.accesses().is_empty());
        hummock.unregister_tables(&[t], "test");
        observe(&access(t, AccessKind::Read));
        observe(&access(t, AccessKind::Read));
        observe(&access(t, AccessKind::Write));
        let seen = detector.accesses();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].count, 2);
        let v = detector.violations(|job| job == TableId(2));
        assert_eq!(v[0].invariant, "I2 zombie-access");
        assert_eq!(
            (v[0].actor, v[0].table, v[0].epoch),
            (Some(7), Some(3), Some(42 << 16))
        );
        assert!(
            v[0].detail.contains("of dropped or cleaned job 2"),
            "{}",
            v[0].detail
        );
    }
}
