//! Leader election over a lease service (issue 56, stage 3), as RisingWave's metas ran it at f21fb9b7915 on
//! madsim's etcd simulator (`meta-failover.md` §1.5, §2.1).
//!
//! [`SimEtcd`] is the service: leases granted with a TTL in seconds, a tick every second that counts each
//! lease down and deletes the keys of one that ran out, keep-alive setting a lease back to its granted TTL,
//! and an election whose leader is the key under its name with the lowest create revision. A campaign writes
//! `name/<lease as 16 hex digits>` unless that key is there already. Everything is ordered (no hash map), it
//! has no clock of its own (whoever runs [`SimEtcd::run_ticks`] gives it time), and it draws nothing.
//!
//! [`MetaElection`] is one meta's client (`EtcdElectionClient::run_once`): a meta that finds its own id
//! leading restores that leadership with the lease it had; otherwise it is granted a new lease, campaigns and
//! waits as a follower until its key is the lowest. It keeps its lease alive every second; a keep-alive that
//! has not been answered for half the TTL, or another leader observed, ends its leadership, and with it the
//! meta process (`start` returns as soon as the election ends).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// The name metas campaign under (RisingWave's `META_ELECTION_KEY`).
pub const META_ELECTION_KEY: &str = "__meta_election_";

/// The lease TTL of the simulation's metas (`ci-sim.toml`'s `meta_leader_lease_secs`).
pub const META_LEADER_LEASE_SECS: i64 = 10;

/// A lease's id, as etcd numbers them (from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LeaseId(pub i64);

/// What the service refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EtcdError {
    /// The lease ran out (or was never granted): its keys are gone.
    #[error("etcdserver: requested lease not found")]
    LeaseNotFound,
    /// The service did not answer (a fault: [`SimEtcd::fail_keep_alives`]).
    #[error("etcdserver: request timed out")]
    Unavailable,
}

/// A key of the election: who wrote it, under which lease, at which revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderKey {
    pub key: String,
    pub value: String,
    pub lease: LeaseId,
    pub create_revision: u64,
}

struct Lease {
    granted_ttl: i64,
    ttl: i64,
}

#[derive(Default)]
struct State {
    revision: u64,
    next_lease: i64,
    leases: BTreeMap<LeaseId, Lease>,
    keys: BTreeMap<String, LeaderKey>,
    /// Keep-alives of these leases go unanswered until then.
    unanswered: BTreeMap<LeaseId, Instant>,
}

/// The simulated etcd of RisingWave's simulation cluster: one per cluster, never killed.
pub struct SimEtcd {
    state: Mutex<State>,
    /// The revision after each change of a key: what campaigners and observers wait on.
    changes: watch::Sender<u64>,
}

impl Default for SimEtcd {
    fn default() -> Self {
        Self {
            state: Mutex::new(State::default()),
            changes: watch::Sender::new(0),
        }
    }
}

impl SimEtcd {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new lease of `ttl` seconds.
    pub fn grant(&self, ttl: i64) -> LeaseId {
        let mut s = self.state();
        s.next_lease += 1;
        let id = LeaseId(s.next_lease);
        s.leases.insert(
            id,
            Lease {
                granted_ttl: ttl,
                ttl,
            },
        );
        id
    }

    /// Set `lease` back to its granted TTL; the TTL it has now.
    pub fn keep_alive(&self, lease: LeaseId) -> Result<i64, EtcdError> {
        let mut s = self.state();
        if s.unanswered
            .get(&lease)
            .is_some_and(|until| Instant::now() < *until)
        {
            return Err(EtcdError::Unavailable);
        }
        let l = s.leases.get_mut(&lease).ok_or(EtcdError::LeaseNotFound)?;
        l.ttl = l.granted_ttl;
        Ok(l.ttl)
    }

    /// The seconds `lease` has left, if it lives.
    pub fn time_to_live(&self, lease: LeaseId) -> Option<i64> {
        self.state().leases.get(&lease).map(|l| l.ttl)
    }

    /// Leave the keep-alives of `lease` unanswered for `d` (an etcd that times out for one client).
    pub fn fail_keep_alives(&self, lease: LeaseId, d: Duration) {
        let until = Instant::now() + d;
        self.state().unanswered.insert(lease, until);
    }

    /// One second passes: every lease counts down, and one at zero goes with its keys.
    pub fn tick(&self) {
        let mut s = self.state();
        for l in s.leases.values_mut() {
            l.ttl -= 1;
        }
        let expired: Vec<LeaseId> = s
            .leases
            .iter()
            .filter(|(_, l)| l.ttl <= 0)
            .map(|(id, _)| *id)
            .collect();
        for id in &expired {
            s.leases.remove(id);
        }
        let before = s.keys.len();
        s.keys.retain(|_, k| !expired.contains(&k.lease));
        if s.keys.len() != before {
            s.revision += 1;
            let revision = s.revision;
            drop(s);
            self.changes.send_replace(revision);
        }
    }

    /// Tick every second, for ever (the service's own task).
    pub async fn run_ticks(self: Arc<Self>) {
        let mut next = Instant::now();
        loop {
            next += Duration::from_secs(1);
            tokio::time::sleep_until(next).await;
            self.tick();
        }
    }

    /// Write `name/<lease>` with `value` under `lease`, unless it is there; the key.
    pub fn campaign(&self, name: &str, lease: LeaseId, value: &str) -> Result<String, EtcdError> {
        let mut s = self.state();
        if !s.leases.contains_key(&lease) {
            return Err(EtcdError::LeaseNotFound);
        }
        let key = format!("{name}/{:016x}", lease.0);
        if !s.keys.contains_key(&key) {
            s.revision += 1;
            let create_revision = s.revision;
            let entry = LeaderKey {
                key: key.clone(),
                value: value.to_string(),
                lease,
                create_revision,
            };
            s.keys.insert(key.clone(), entry);
            drop(s);
            self.changes.send_replace(create_revision);
        }
        Ok(key)
    }

    /// The leader of `name`: its key with the lowest create revision.
    pub fn leader(&self, name: &str) -> Option<LeaderKey> {
        let prefix = format!("{name}/");
        let s = self.state();
        let keys = s.keys.values().filter(|k| k.key.starts_with(&prefix));
        keys.min_by_key(|k| k.create_revision).cloned()
    }

    /// Wait on changes of keys.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

/// Why a leader stopped leading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LostLeadership {
    /// No keep-alive was answered for half the lease.
    KeepAlive,
    /// The election names another leader.
    Observed,
}

impl LostLeadership {
    pub fn as_str(self) -> &'static str {
        match self {
            LostLeadership::KeepAlive => "keep-alive timed out",
            LostLeadership::Observed => "another leader observed",
        }
    }
}

/// Keeps one lease alive every second and fails once no answer came for half its TTL.
struct KeepAlive {
    lease: LeaseId,
    next: Instant,
    last_answer: Instant,
    patience: Duration,
}

impl KeepAlive {
    fn new(lease: LeaseId, ttl: i64) -> Self {
        let now = Instant::now();
        Self {
            lease,
            next: now,
            last_answer: now,
            patience: Duration::from_secs(ttl.max(0) as u64) / 2,
        }
    }

    /// The next keep-alive; `Err` when the lease is gone or went unanswered too long.
    /// Cancel-safe: a tick dropped before its keep-alive is sent leaves the schedule as it was.
    async fn tick(&mut self, etcd: &SimEtcd) -> Result<(), EtcdError> {
        tokio::time::sleep_until(self.next + Duration::from_secs(1)).await;
        self.next += Duration::from_secs(1);
        match etcd.keep_alive(self.lease) {
            Ok(_) => {
                self.last_answer = Instant::now();
                Ok(())
            }
            Err(EtcdError::Unavailable) if self.last_answer.elapsed() < self.patience => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// One meta's part in the election.
pub struct MetaElection {
    pub etcd: Arc<SimEtcd>,
    /// The meta's id, which is the key's value (RisingWave: its advertise address).
    pub id: String,
    pub lease_ttl: i64,
}

impl MetaElection {
    /// Campaign until leading (telling `is_leader`), then lead until leadership is lost: why. A follower
    /// whose own lease is lost campaigns again with a new one.
    pub async fn run(&self, is_leader: &watch::Sender<bool>) -> LostLeadership {
        loop {
            if let Ok(lost) = self.run_once(is_leader).await {
                is_leader.send_replace(false);
                return lost;
            }
        }
    }

    /// The lease to campaign with: the leader's, when the leader is this meta (a restart within its lease
    /// restores leadership), or a new one; whether it was restored.
    fn lease(&self) -> (LeaseId, bool) {
        let led = self
            .etcd
            .leader(META_ELECTION_KEY)
            .filter(|k| k.value == self.id);
        match led {
            Some(k) if self.etcd.keep_alive(k.lease).is_ok_and(|ttl| ttl > 0) => (k.lease, true),
            _ => (self.etcd.grant(self.lease_ttl), false),
        }
    }

    async fn run_once(&self, is_leader: &watch::Sender<bool>) -> Result<LostLeadership, EtcdError> {
        let (lease, restored) = self.lease();
        let mut keep_alive = KeepAlive::new(lease, self.lease_ttl);
        if !restored {
            is_leader.send_replace(false);
        }
        let mut changes = self.etcd.subscribe();
        let key = self.etcd.campaign(META_ELECTION_KEY, lease, &self.id)?;
        while !self.leads(&key) {
            tokio::select! {
                biased;
                r = keep_alive.tick(&self.etcd) => r?,
                _ = changes.changed() => {}
            }
        }
        is_leader.send_replace(true);
        loop {
            tokio::select! {
                biased;
                r = keep_alive.tick(&self.etcd) => {
                    if r.is_err() {
                        return Ok(LostLeadership::KeepAlive);
                    }
                }
                _ = changes.changed() => {
                    if !self.leads(&key) {
                        return Ok(LostLeadership::Observed);
                    }
                }
            }
        }
    }

    fn leads(&self, key: &str) -> bool {
        self.etcd
            .leader(META_ELECTION_KEY)
            .is_some_and(|k| k.key == key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Meta `id` running its election on `etcd` in a task, and whether it leads.
    struct Meta {
        task: tokio::task::JoinHandle<LostLeadership>,
        is_leader: watch::Receiver<bool>,
    }

    fn start(etcd: &Arc<SimEtcd>, id: &str) -> Meta {
        let (tx, is_leader) = watch::channel(false);
        let election = MetaElection {
            etcd: etcd.clone(),
            id: id.to_string(),
            lease_ttl: META_LEADER_LEASE_SECS,
        };
        let task = tokio::spawn(async move { election.run(&tx).await });
        Meta { task, is_leader }
    }

    fn leader(etcd: &SimEtcd) -> Option<String> {
        etcd.leader(META_ELECTION_KEY).map(|k| k.value)
    }

    async fn cluster() -> (Arc<SimEtcd>, Vec<Meta>) {
        let etcd = Arc::new(SimEtcd::default());
        tokio::spawn(etcd.clone().run_ticks());
        let metas = ["meta-1", "meta-2", "meta-3"]
            .map(|id| start(&etcd, id))
            .into();
        tokio::time::sleep(Duration::from_millis(10)).await;
        (etcd, metas)
    }

    async fn after(d: Duration) {
        tokio::time::sleep(d).await;
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_campaign_leads_and_the_others_follow() {
        let (etcd, metas) = cluster().await;
        assert_eq!(leader(&etcd).as_deref(), Some("meta-1"));
        let leading: Vec<bool> = metas.iter().map(|m| *m.is_leader.borrow()).collect();
        assert_eq!(leading, [true, false, false]);
        after(Duration::from_secs(60)).await;
        assert_eq!(
            leader(&etcd).as_deref(),
            Some("meta-1"),
            "keep-alives hold the lease"
        );
    }

    /// A leader killed and started again within its lease finds its own key and leads again at once, with
    /// the lease it had; down for 20 s, its key runs out after the lease's 10 s and the follower with the
    /// oldest key leads; the old leader comes back as a follower.
    #[tokio::test(start_paused = true)]
    async fn a_fast_restart_keeps_the_leader_and_a_long_outage_moves_it() {
        let (etcd, mut metas) = cluster().await;
        let lease = etcd.leader(META_ELECTION_KEY).unwrap().lease;
        metas[0].task.abort();
        after(Duration::from_millis(800)).await;
        metas[0] = start(&etcd, "meta-1");
        after(Duration::from_millis(10)).await;
        assert!(*metas[0].is_leader.borrow(), "restored");
        assert_eq!(etcd.leader(META_ELECTION_KEY).unwrap().lease, lease);
        metas[0].task.abort();
        after(Duration::from_secs(9)).await;
        assert_eq!(
            leader(&etcd).as_deref(),
            Some("meta-1"),
            "its key outlives it by the lease"
        );
        after(Duration::from_secs(2)).await;
        assert_eq!(leader(&etcd).as_deref(), Some("meta-2"));
        assert!(*metas[1].is_leader.borrow());
        after(Duration::from_secs(9)).await;
        metas[0] = start(&etcd, "meta-1");
        after(Duration::from_secs(30)).await;
        assert_eq!(leader(&etcd).as_deref(), Some("meta-2"));
        let leading: Vec<bool> = metas.iter().map(|m| *m.is_leader.borrow()).collect();
        assert_eq!(leading, [false, true, false]);
    }

    /// A live leader whose keep-alives go unanswered for half its lease stops leading (and its process
    /// ends); its key runs out with the lease, and the next follower leads.
    #[tokio::test(start_paused = true)]
    async fn a_leader_whose_keep_alives_time_out_loses_the_lease() {
        let (etcd, metas) = cluster().await;
        let lease = etcd.leader(META_ELECTION_KEY).unwrap().lease;
        etcd.fail_keep_alives(lease, Duration::from_secs(30));
        after(Duration::from_secs(4)).await;
        assert!(!metas[0].task.is_finished(), "within half the lease");
        after(Duration::from_secs(2)).await;
        assert!(metas[0].task.is_finished());
        assert!(!*metas[0].is_leader.borrow());
        assert_eq!(
            leader(&etcd).as_deref(),
            Some("meta-1"),
            "the key outlives the leadership"
        );
        after(Duration::from_secs(5)).await;
        assert_eq!(leader(&etcd).as_deref(), Some("meta-2"));
        assert!(*metas[1].is_leader.borrow());
        let Meta { task, .. } = metas.into_iter().next().unwrap();
        assert_eq!(task.await.unwrap(), LostLeadership::KeepAlive);
    }

    #[test]
    fn a_lease_counts_down_by_ticks_and_takes_its_keys() {
        let etcd = SimEtcd::default();
        let a = etcd.grant(2);
        let b = etcd.grant(10);
        etcd.campaign("e", a, "x").unwrap();
        let kb = etcd.campaign("e", b, "y").unwrap();
        assert_eq!(etcd.campaign("e", b, "y").unwrap(), kb, "no second key");
        assert_eq!(etcd.leader("e").unwrap().value, "x");
        etcd.tick();
        assert_eq!(etcd.time_to_live(a), Some(1));
        etcd.tick();
        assert_eq!(etcd.time_to_live(a), None);
        assert_eq!(etcd.keep_alive(a), Err(EtcdError::LeaseNotFound));
        assert_eq!(etcd.leader("e").unwrap().value, "y");
        assert_eq!(etcd.keep_alive(b), Ok(10));
        assert_eq!(etcd.campaign("e", a, "x"), Err(EtcdError::LeaseNotFound));
    }
}
