//! Meta nodes `meta-1..N` on a lease (issue 56, stage 3; `meta-failover.md` §1.1, §2.1), for a cluster of
//! more than one meta (`ClusterConfig::meta_nodes`; one meta runs as before, without a lease service).
//!
//! The cluster's lease service is a [`SimEtcd`] that is never killed; each meta is a process running its
//! [`MetaElection`]. The one whose election names it leader runs the leader services: a [`MetaNode`]
//! opened from the shared store, in the cluster's slot, whose bootstrap recovers the cluster. A leader killed
//! and started again within its 10 s lease restores its leadership (a new process: a new `MetaNode`); one
//! down longer loses its key, and the follower with the oldest key leads. A leader whose keep-alives go
//! unanswered for half the lease exits (RisingWave's `start` returns when the election ends) and stays down
//! until restarted. While no meta leads, the slot holds the last leader's killed node: every call fails as
//! meta unavailable. An elected meta starts its leader services [`LEADER_SERVICES_START`] later; frontends
//! find the leader through their `MetaClient`s, which the cluster serves as [`MetaMembers`].
//!
//! [`MetaNode`]: epochlab_meta::MetaNode

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use epochlab_common::{SimRng, event};
use epochlab_meta::{
    LostLeadership, META_ELECTION_KEY, META_LEADER_LEASE_SECS, MetaElection, SimEtcd,
};
use epochlab_rpc::{MetaClient, MetaMembers, MetaServing};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{Cluster, lock};

/// The metas of a cluster of several.
pub(super) struct LeasedMetas {
    pub(super) etcd: Arc<SimEtcd>,
    /// Each meta's process while it runs (`procs[0]` is meta-1).
    procs: Mutex<Vec<Option<JoinHandle<()>>>>,
    /// The meta whose leader services are in the cluster's slot, while one leads.
    leader: Mutex<Option<u32>>,
    /// The meta that led last (a leader that comes back is no change).
    last_leader: Mutex<u32>,
    /// The seeded order the metas started in: the first campaigned first and leads the new cluster.
    order: Vec<u32>,
    leader_changes: AtomicU64,
    ticks: Mutex<Option<JoinHandle<()>>>,
}

/// How long an elected meta takes to start its leader services, drawn per election won (RisingWave's
/// `start_service_as_election_leader` loads every manager from the store first). Until they run, it answers
/// leader-only calls as a follower does: #7578's log has a DROP refused 3 ms after "restoring leader from
/// lease". An assumption: no figure was measured.
pub const LEADER_SERVICES_START: std::ops::Range<Duration> =
    Duration::from_millis(10)..Duration::from_millis(100);

/// A meta's name, which is its id in the election (RisingWave: `meta-i`'s advertise address).
pub fn meta_name(i: u32) -> String {
    format!("meta-{i}")
}

impl LeasedMetas {
    /// `n` metas in a seeded order, the first of which campaigns now and leads the new cluster (in madsim the
    /// three campaign at the same instant and the first served wins: any of them).
    pub(super) fn elect_first(n: u32, rng: &SimRng) -> Self {
        let mut order: Vec<u32> = (1..=n).collect();
        for k in (1..order.len()).rev() {
            let j = rng.range_u64(0..k as u64 + 1) as usize;
            order.swap(k, j);
        }
        let etcd = Arc::new(SimEtcd::default());
        let lease = etcd.grant(META_LEADER_LEASE_SECS);
        let first = meta_name(order[0]);
        let campaign = etcd.campaign(META_ELECTION_KEY, lease, &first);
        campaign.expect("a lease granted this instant lives");
        Self {
            etcd,
            procs: Mutex::new((0..n).map(|_| None).collect()),
            leader: Mutex::new(Some(order[0])),
            last_leader: Mutex::new(order[0]),
            order,
            leader_changes: AtomicU64::new(0),
            ticks: Mutex::new(None),
        }
    }

    /// Abort the lease service and every process (the cluster's shutdown).
    pub(super) fn shutdown(&self) {
        if let Some(t) = lock(&self.ticks).take() {
            t.abort();
        }
        for p in lock(&self.procs).iter_mut() {
            if let Some(p) = p.take() {
                p.abort();
            }
        }
    }
}

impl Cluster {
    fn metas(&self) -> &LeasedMetas {
        self.meta_nodes
            .as_ref()
            .expect("only a cluster of several metas runs meta processes")
    }

    /// Start the lease service's ticks and every meta's process, in the order they were drawn.
    pub(super) fn start_meta_nodes(self: &Arc<Self>) {
        let Some(m) = &self.meta_nodes else {
            return;
        };
        *lock(&m.ticks) = Some(tokio::spawn(m.etcd.clone().run_ticks()));
        for &i in &m.order {
            self.spawn_meta_process(i);
        }
    }

    fn spawn_meta_process(self: &Arc<Self>, i: u32) {
        let m = self.metas();
        let task = tokio::spawn(meta_process(Arc::downgrade(self), i, m.etcd.clone()));
        lock(&m.procs)[i as usize - 1] = Some(task);
    }

    /// Meta `i`'s election names it leader: it starts the leader services from the store (the cluster's
    /// first leader has them already).
    fn lead(&self, i: u32) {
        let m = self.metas();
        let mut leader = lock(&m.leader);
        if *leader == Some(i) && !self.meta().is_killed() {
            return;
        }
        *leader = Some(i);
        drop(leader);
        let restored = std::mem::replace(&mut *lock(&m.last_leader), i) == i;
        if !restored {
            m.leader_changes.fetch_add(1, Ordering::Relaxed);
        }
        event!(
            self.ctx.log,
            "lead meta",
            "node={} restored={restored}",
            meta_name(i)
        );
        if let Err(e) = self.restart_meta() {
            let node = meta_name(i);
            event!(self.ctx.log, "restart node", "node={node} failed: {e}");
        }
    }

    /// How long meta `i`, just elected, takes to start its leader services (`None`: it serves already, as
    /// the cluster's first leader does).
    fn leader_services_start(&self, i: u32) -> Option<Duration> {
        if *lock(&self.metas().leader) == Some(i) && !self.meta().is_killed() {
            return None;
        }
        Some(self.ctx.rng.duration(LEADER_SERVICES_START))
    }

    /// Meta `i`'s process ended: if it led, its leader services end with it.
    fn end_services_of(&self, i: u32) {
        let mut leader = lock(&self.metas().leader);
        if *leader == Some(i) {
            *leader = None;
            drop(leader);
            self.kill_meta();
        }
    }

    /// Meta `i` lost its leadership and exits: its leader services end with it.
    fn step_down(&self, i: u32, lost: LostLeadership) {
        let m = self.metas();
        lock(&m.procs)[i as usize - 1] = None;
        let node = meta_name(i);
        event!(
            self.ctx.log,
            "meta exits",
            "node={node} reason={}",
            lost.as_str()
        );
        self.end_services_of(i);
    }

    /// Kill meta `i` (1-based): its process ends, its lease lives on until it runs out, and if it led, its
    /// leader services end. `false` when it was down or is no meta of the cluster. A cluster of one meta kills
    /// it as [`Cluster::kill_meta`] does.
    pub fn kill_meta_node(&self, i: u32) -> bool {
        let Some(m) = &self.meta_nodes else {
            return i == 1 && self.kill_meta();
        };
        let slot = i.checked_sub(1).map(|k| k as usize);
        let task = slot.and_then(|k| lock(&m.procs).get_mut(k)?.take());
        let Some(task) = task else {
            return false;
        };
        task.abort();
        self.end_services_of(i);
        true
    }

    /// Start meta `i` again (a new process, with empty memory), unless it runs or is no meta of the cluster.
    /// A cluster of one meta restarts it from its store.
    pub fn restart_meta_node(self: &Arc<Self>, i: u32) {
        let Some(m) = &self.meta_nodes else {
            if i == 1
                && self.meta().is_killed()
                && let Err(e) = self.restart_meta()
            {
                event!(self.ctx.log, "restart node", "node=meta-1 failed: {e}");
            }
            return;
        };
        let slot = i.checked_sub(1).map(|k| k as usize);
        let down = slot.is_some_and(|k| lock(&m.procs).get(k).is_some_and(Option::is_none));
        if down {
            self.spawn_meta_process(i);
        }
    }

    /// How many metas the cluster has.
    pub fn meta_node_count(&self) -> u32 {
        self.meta_nodes.as_ref().map_or(1, |m| m.order.len() as u32)
    }

    /// The meta leading now (1-based); a cluster of one meta: 1 while it lives.
    pub fn meta_leader(&self) -> Option<u32> {
        match &self.meta_nodes {
            Some(m) => *lock(&m.leader),
            None => (!self.meta().is_killed()).then_some(1),
        }
    }

    /// How many times another meta became leader.
    pub fn meta_leader_changes(&self) -> u64 {
        self.meta_nodes
            .as_ref()
            .map_or(0, |m| m.leader_changes.load(Ordering::Relaxed))
    }

    /// The lease service of a cluster of several metas (to inject its faults).
    pub fn etcd(&self) -> Option<&Arc<SimEtcd>> {
        self.meta_nodes.as_ref().map(|m| &m.etcd)
    }
}

impl Cluster {
    /// Node `node`'s client of meta (a frontend's, made at its start).
    pub fn meta_client(self: &Arc<Self>, node: String) -> MetaClient {
        MetaClient::new(node, self.clone(), self.ctx.log.clone())
    }
}

impl MetaMembers for Cluster {
    fn meta_count(&self) -> u32 {
        self.meta_node_count()
    }

    fn serving(&self, i: u32) -> MetaServing {
        let Some(m) = &self.meta_nodes else {
            return match self.meta().is_killed() {
                true => MetaServing::Down,
                false => MetaServing::Leader,
            };
        };
        let slot = i.checked_sub(1).map(|k| k as usize);
        let up = slot.is_some_and(|k| lock(&m.procs).get(k).is_some_and(Option::is_some));
        if !up {
            return MetaServing::Down;
        }
        match *lock(&m.leader) == Some(i) && !self.meta().is_killed() {
            true => MetaServing::Leader,
            false => MetaServing::Members,
        }
    }

    fn elected(&self) -> Option<u32> {
        let Some(m) = &self.meta_nodes else {
            return Some(1);
        };
        let key = m.etcd.leader(META_ELECTION_KEY)?;
        key.value.strip_prefix("meta-")?.parse().ok()
    }
}

/// Meta `i`'s process: its election, and the leader services once it leads (started after
/// [`LEADER_SERVICES_START`]); it ends when it loses the leadership.
async fn meta_process(cluster: Weak<Cluster>, i: u32, etcd: Arc<SimEtcd>) {
    let election = MetaElection {
        etcd,
        id: meta_name(i),
        lease_ttl: META_LEADER_LEASE_SECS,
    };
    let (is_leader, mut leads) = watch::channel(false);
    let serve = async {
        if leads.wait_for(|l| *l).await.is_ok() {
            let start = cluster.upgrade().and_then(|c| c.leader_services_start(i));
            if let Some(start) = start {
                tokio::time::sleep(start).await;
            }
            if let Some(c) = cluster.upgrade() {
                c.lead(i);
            }
        }
        std::future::pending::<()>().await
    };
    let lost = tokio::select! {
        biased;
        lost = election.run(&is_leader) => lost,
        () = serve => return,
    };
    if let Some(c) = cluster.upgrade() {
        c.step_down(i, lost);
    }
}
