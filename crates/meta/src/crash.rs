//! Crash points (issue 56, stage 2): meta dies right after one of the separate commits of a CREATE or a
//! DROP of a streaming job, in RisingWave's order at f21fb9b7915 (`meta-failover.md` §2.4), so that the
//! next meta's bootstrap meets the store as that commit left it. Meta only names the points and calls the
//! hook a harness installed ([`MetaNode::set_crash_hook`]); the harness decides whether meta dies there
//! (the first DDL to reach its armed point), kills it and restarts it from its store.

use std::sync::Arc;

use crate::meta::{MetaInner, MetaNode, lock};

/// A commit of a CREATE or a DROP after which meta may die.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum CrashPoint {
    /// The catalog row (Creating) is committed; no job yet.
    CreateAfterCatalog,
    /// The job and its fragments (`Initial`) are committed.
    CreateAfterFragments,
    /// The job's state tables are registered in Hummock.
    CreateAfterRegister,
    /// The first barrier's epoch is committed; the fragments are still `Initial`.
    CreateAfterFirstCommit,
    /// The fragments are `Created`; the catalog row is not linked to its job yet.
    CreateAfterFragmentsCreated,
    /// The catalog rows are deleted; the job is still there.
    DropAfterCatalog,
    /// The job and its fragments are deleted; its actors still run.
    DropAfterFragments,
    /// The Stop barrier is collected; the job's tables are still registered.
    DropAfterStop,
}

impl CrashPoint {
    /// Every point, in the order a CREATE then a DROP reaches them.
    pub const ALL: [CrashPoint; 8] = [
        CrashPoint::CreateAfterCatalog,
        CrashPoint::CreateAfterFragments,
        CrashPoint::CreateAfterRegister,
        CrashPoint::CreateAfterFirstCommit,
        CrashPoint::CreateAfterFragmentsCreated,
        CrashPoint::DropAfterCatalog,
        CrashPoint::DropAfterFragments,
        CrashPoint::DropAfterStop,
    ];

    /// Whether a job made through meta's job API (the random plans') reaches it: the catalog rows are
    /// written by the DDL of SQL only.
    pub fn reached_by_job_api(self) -> bool {
        !matches!(
            self,
            CrashPoint::CreateAfterCatalog | CrashPoint::DropAfterCatalog
        )
    }

    /// The point's name on the command line and in the event log.
    pub fn as_str(self) -> &'static str {
        match self {
            CrashPoint::CreateAfterCatalog => "create-after-catalog",
            CrashPoint::CreateAfterFragments => "create-after-fragments",
            CrashPoint::CreateAfterRegister => "create-after-register",
            CrashPoint::CreateAfterFirstCommit => "create-after-first-commit",
            CrashPoint::CreateAfterFragmentsCreated => "create-after-fragments-created",
            CrashPoint::DropAfterCatalog => "drop-after-catalog",
            CrashPoint::DropAfterFragments => "drop-after-fragments",
            CrashPoint::DropAfterStop => "drop-after-stop",
        }
    }
}

impl std::fmt::Display for CrashPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no crash point.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown crash point {0:?} (one of: {points})", points = CrashPoint::ALL.map(CrashPoint::as_str).join(", "))]
pub struct UnknownCrashPoint(pub String);

impl std::str::FromStr for CrashPoint {
    type Err = UnknownCrashPoint;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CrashPoint::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownCrashPoint(s.to_string()))
    }
}

/// A harness's hook, called at each crash point meta reaches: `true` when meta died there (the hook has
/// killed it), and the DDL goes no further.
pub type CrashHook = Arc<dyn Fn(CrashPoint) -> bool + Send + Sync>;

impl MetaInner {
    /// Meta reached `point`: whether it died there (see [`CrashHook`]). Called with no lock of meta's held.
    pub(crate) fn crash_point(&self, point: CrashPoint) -> bool {
        let hook = lock(&self.crash_hook).clone();
        hook.is_some_and(|h| h(point))
    }
}

impl MetaNode {
    /// Call `hook` at each crash point (a restarted meta keeps the harness's, as it keeps the checkers').
    pub fn set_crash_hook(&self, hook: CrashHook) {
        *lock(&self.inner.crash_hook) = Some(hook);
    }

    /// The hook [`MetaNode::set_crash_hook`] installed.
    pub fn crash_hook(&self) -> Option<CrashHook> {
        lock(&self.inner.crash_hook).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_point_reads_back_from_its_name_and_an_unknown_one_lists_them() {
        for p in CrashPoint::ALL {
            assert_eq!(p.as_str().parse::<CrashPoint>(), Ok(p));
        }
        let e = "create-after-nothing".parse::<CrashPoint>().unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with(
            "unknown crash point \"create-after-nothing\" (one of: create-after-catalog, "
        ));
        assert!(text.ends_with("drop-after-stop)"), "{text}");
        assert!(!text.contains('\n'));
    }
}
