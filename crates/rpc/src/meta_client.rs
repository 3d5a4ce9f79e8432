//! A node's client of meta (RisingWave's `rpc_client/src/meta_client.rs`, `meta-failover.md` §1.6): the
//! metas' list, the one it sends leader-only calls to, and member refreshes that move it to the leader.
//!
//! - A leader-only call reaches the meta the client points at. A meta whose process is down refuses it
//!   (Unavailable); one that runs without the leader services (a follower, or a leader still starting
//!   them) answers Unimplemented, `service not found: <path>`, as madsim's tonic does for a service the
//!   server does not run.
//! - Such an error forces a member refresh before the call returns it, and the call is not retried: its
//!   caller sees the error (RisingWave's `refresh_client_if_needed`).
//! - With several metas a monitor refreshes every 5 s (`META_MEMBER_REFRESH_PERIOD`). A refresh asks the
//!   metas in turn for their members; the first one up answers with the leader the election names, and the
//!   client moves to it. It moves only to a meta whose process runs: RisingWave's client retries the
//!   connection for up to the lease, which here is the next refresh.
//!
//! One meta needs no discovery: the client always points at it (a restarted meta keeps its address).

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use epochlab_common::{EventLog, event};
use thiserror::Error;
use tokio::task::JoinHandle;

/// How often a client of several metas refreshes its members, errors or not.
pub const META_MEMBER_REFRESH_PERIOD: Duration = Duration::from_secs(5);

/// How a meta answers a call now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaServing {
    /// Its process is down.
    Down,
    /// Its process runs with only the member and health services (a follower, or a leader that has not
    /// started its leader services yet).
    Members,
    /// The leader, serving every call.
    Leader,
}

/// The metas as their clients find them (the simulated cluster).
pub trait MetaMembers: Send + Sync {
    /// The metas are `meta-1..=meta_count()`.
    fn meta_count(&self) -> u32;

    /// How meta `i` answers a call now.
    fn serving(&self, i: u32) -> MetaServing;

    /// The leader a `members` call answers with: the one the election names (its key may outlive its
    /// process), or `None` while no key leads.
    fn elected(&self) -> Option<u32>;
}

/// A leader-only call that failed (RisingWave's client gets a gRPC status).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum MetaRpcError {
    /// The meta is down (`Unavailable`).
    #[error("meta is unavailable")]
    Unavailable,
    /// The meta runs without the service (`Unimplemented`): the call's path.
    #[error("service not found: {0}")]
    Unimplemented(String),
}

/// One node's client of meta.
pub struct MetaClient {
    inner: Arc<Inner>,
    monitor: Option<JoinHandle<()>>,
}

struct Inner {
    /// The node it is a client of (`frontend-1`), for the log.
    node: String,
    members: Arc<dyn MetaMembers>,
    /// The meta it sends leader-only calls to.
    current: Mutex<u32>,
    log: EventLog,
}

impl MetaClient {
    /// Node `node`'s client, pointed at the leader as a starting client finds it (RisingWave's forces a
    /// refresh before it returns); with several metas, its monitor refreshes every 5 s.
    pub fn new(node: String, members: Arc<dyn MetaMembers>, log: EventLog) -> Self {
        let several = members.meta_count() > 1;
        let inner = Arc::new(Inner {
            node,
            members,
            current: Mutex::new(1),
            log,
        });
        inner.refresh();
        let monitor = several.then(|| tokio::spawn(monitor(Arc::downgrade(&inner))));
        Self { inner, monitor }
    }

    /// The meta the client sends leader-only calls to (1-based).
    pub fn current(&self) -> u32 {
        *lock(&self.inner.current)
    }

    /// A leader-only call to `path` (`/ddl_service.DdlService/DropTable`): `Ok` when it reaches a leader
    /// serving it. An error forces a member refresh first, and is the caller's: no retry.
    pub fn call(&self, path: &str) -> Result<(), MetaRpcError> {
        let result = match self.inner.members.serving(self.current()) {
            MetaServing::Leader => Ok(()),
            MetaServing::Members => Err(MetaRpcError::Unimplemented(path.to_string())),
            MetaServing::Down => Err(MetaRpcError::Unavailable),
        };
        if result.is_err() {
            self.inner.refresh();
        }
        result
    }
}

impl Drop for MetaClient {
    fn drop(&mut self) {
        if let Some(m) = self.monitor.take() {
            m.abort();
        }
    }
}

impl Inner {
    /// Ask the metas in turn for their members; the first up answers, and the client moves to the leader it
    /// names if that meta runs. `false` when no meta answered.
    fn refresh(&self) -> bool {
        let m = &self.members;
        if !(1..=m.meta_count()).any(|i| m.serving(i) != MetaServing::Down) {
            return false;
        }
        let Some(leader) = m.elected() else {
            return true;
        };
        let mut current = lock(&self.current);
        if leader != *current && m.serving(leader) != MetaServing::Down {
            *current = leader;
            let node = &self.node;
            event!(
                self.log,
                "discover meta leader",
                "client={node} node=meta-{leader}"
            );
        }
        true
    }
}

/// The periodic refresh of a client of several metas, while the client lives.
async fn monitor(inner: Weak<Inner>) {
    let start = tokio::time::Instant::now() + META_MEMBER_REFRESH_PERIOD;
    let mut ticks = tokio::time::interval_at(start, META_MEMBER_REFRESH_PERIOD);
    loop {
        ticks.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        inner.refresh();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use epochlab_common::Clock;

    /// Three metas whose states a test sets.
    struct Metas {
        serving: Mutex<[MetaServing; 3]>,
        elected: Mutex<Option<u32>>,
    }

    impl MetaMembers for Metas {
        fn meta_count(&self) -> u32 {
            3
        }
        fn serving(&self, i: u32) -> MetaServing {
            lock(&self.serving)[i as usize - 1]
        }
        fn elected(&self) -> Option<u32> {
            *lock(&self.elected)
        }
    }

    impl Metas {
        fn led_by(leader: u32) -> Arc<Self> {
            let metas = Arc::new(Self {
                serving: Mutex::new([MetaServing::Members; 3]),
                elected: Mutex::new(None),
            });
            metas.set_leader(leader);
            metas
        }

        fn set_leader(&self, leader: u32) {
            let mut s = lock(&self.serving);
            for (k, s) in s.iter_mut().enumerate() {
                if *s == MetaServing::Leader {
                    *s = MetaServing::Members;
                }
                if k as u32 + 1 == leader {
                    *s = MetaServing::Leader;
                }
            }
            *lock(&self.elected) = Some(leader);
        }
    }

    const DROP_TABLE: &str = "/ddl_service.DdlService/DropTable";

    fn client(metas: &Arc<Metas>) -> MetaClient {
        let log = EventLog::new(Clock::manual(0));
        MetaClient::new("frontend-1".into(), metas.clone(), log)
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_client_points_at_the_leader() {
        let metas = Metas::led_by(2);
        let c = client(&metas);
        assert_eq!(c.current(), 2);
        assert_eq!(c.call(DROP_TABLE), Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_follower_answers_unimplemented_and_the_next_call_reaches_the_leader() {
        let metas = Metas::led_by(1);
        let c = client(&metas);
        metas.set_leader(3);
        let failed = c.call(DROP_TABLE);
        assert_eq!(failed, Err(MetaRpcError::Unimplemented(DROP_TABLE.into())));
        assert_eq!(
            failed.unwrap_err().to_string(),
            "service not found: /ddl_service.DdlService/DropTable"
        );
        assert_eq!(c.current(), 3, "the error forced a refresh");
        assert_eq!(c.call(DROP_TABLE), Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn the_monitor_finds_a_new_leader_within_five_seconds() {
        let metas = Metas::led_by(1);
        let c = client(&metas);
        tokio::time::sleep(Duration::from_millis(1200)).await;
        metas.set_leader(2);
        tokio::time::sleep(Duration::from_millis(3700)).await;
        assert_eq!(c.current(), 1, "no refresh before the first 5 s tick");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(c.current(), 2);
        assert_eq!(c.call(DROP_TABLE), Ok(()), "no call failed on the way");
    }

    #[tokio::test(start_paused = true)]
    async fn a_dead_meta_is_unavailable_and_a_named_leader_that_is_down_is_not_taken() {
        let metas = Metas::led_by(1);
        let c = client(&metas);
        lock(&metas.serving)[0] = MetaServing::Down;
        assert_eq!(c.call(DROP_TABLE), Err(MetaRpcError::Unavailable));
        assert_eq!(c.current(), 1, "its key still names meta-1, which is down");
        metas.set_leader(2);
        assert_eq!(c.call(DROP_TABLE), Err(MetaRpcError::Unavailable));
        assert_eq!(c.call(DROP_TABLE), Ok(()), "the failure's refresh moved it");
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_client_stops_refreshing() {
        let metas = Metas::led_by(1);
        let c = client(&metas);
        let weak = Arc::downgrade(&c.inner);
        drop(c);
        tokio::time::sleep(META_MEMBER_REFRESH_PERIOD * 2).await;
        assert!(weak.upgrade().is_none());
    }
}
