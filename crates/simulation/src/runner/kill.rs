//! The killer of a file run under `kill`: which roles it may kill ([`KillRoles`]), the kills a record's killer
//! draws ([`plan_kills`], RisingWave's `kill_node` schedule: none, every or each node of a role, each after
//! U(0, 1 s), restarted U(0, 1 s) later or, one time in ten, past the heartbeat timeout), and one kill played
//! against the engine ([`kill_and_restart`]).

use std::sync::Arc;
use std::time::Duration;

use epochlab_common::{SimRng, WorkerId, event};
use epochlab_sim::Cluster;
use epochlab_sim::config::Topology;

use epochlab_frontend::frontend::Engine;

/// The roles of the nodes a killer may kill. RisingWave's `--kill` also killed meta nodes (never all of
/// them); here meta is killed only when asked (`--kill-meta`), never by `--kill`, until the corpus passes
/// with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KillRoles {
    /// The metas: each killed one is fenced and its tasks end; one restarts from its store and recovers the
    /// cluster (with several, the one that leads once its restart or a follower wins the lease). Never all.
    pub meta: bool,
    /// The frontend (one): its connections close, the statements in flight fail with `connection closed`.
    pub frontend: bool,
    /// The compute nodes: their actors stop, recovery follows.
    pub compute: bool,
    /// The compactors: compaction stops while every one is down.
    pub compactor: bool,
}

impl KillRoles {
    /// Every role the engine has (`--kill`).
    pub const ALL: Self = Self {
        meta: true,
        frontend: true,
        compute: true,
        compactor: true,
    };
    pub const NONE: Self = Self {
        meta: false,
        frontend: false,
        compute: false,
        compactor: false,
    };

    pub fn any(self) -> bool {
        self.meta || self.frontend || self.compute || self.compactor
    }
}

/// A node of the cluster that a killer may kill (RisingWave's node names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillTarget {
    Meta(u32),
    Frontend(u32),
    Compute(WorkerId),
    Compactor(u32),
}

impl std::fmt::Display for KillTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KillTarget::Meta(i) => write!(f, "meta-{i}"),
            KillTarget::Frontend(i) => write!(f, "frontend-{i}"),
            KillTarget::Compute(w) => write!(f, "compute-{w}"),
            KillTarget::Compactor(i) => write!(f, "compactor-{i}"),
        }
    }
}

/// One node's kill: after `kill_after`, down for `down`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedKill {
    pub target: KillTarget,
    pub kill_after: Duration,
    pub down: Duration,
}

/// The nodes to kill, as RisingWave's `Cluster::kill_node` and `kill_nodes` (`cluster.rs` at f21fb9b7915):
/// for each role in its order (meta, only when asked; frontend, compute, compactor), a draw of 0..3: 0 kills
/// none, 1 every node of the role, 2 each with p = 0.5; then per node U(0, 1 s) before its kill and U(0, 1 s)
/// down, plus 20 s (`restart_delay_secs`) one time in ten.
pub fn plan_kills(rng: &SimRng, roles: KillRoles, topology: Topology) -> Vec<PlannedKill> {
    let mut targets = Vec::new();
    let role = |on: bool, count: u32, target: &dyn Fn(u32) -> KillTarget| -> Vec<KillTarget> {
        if !on {
            return Vec::new();
        }
        let draw = rng.range_u64(0..3);
        (1..=count)
            .filter(|_| match draw {
                0 => false,
                1 => true,
                _ => rng.bool(0.5),
            })
            .map(target)
            .collect()
    };
    let t = topology;
    // Drawn first, as RisingWave draws metas first, but only when on: the other roles' draws do not move.
    // Never every meta: when all were drawn, only the first dies.
    let mut metas = role(roles.meta, t.meta_nodes, &KillTarget::Meta);
    if metas.len() as u32 == t.meta_nodes {
        metas.truncate(1);
    }
    targets.extend(metas);
    targets.extend(role(
        roles.frontend,
        t.frontend_nodes,
        &KillTarget::Frontend,
    ));
    targets.extend(role(roles.compute, t.compute_nodes, &|i| {
        KillTarget::Compute(WorkerId(i))
    }));
    targets.extend(role(
        roles.compactor,
        t.compactor_nodes,
        &KillTarget::Compactor,
    ));
    targets
        .into_iter()
        .map(|target| {
            let kill_after = rng.duration(Duration::ZERO..Duration::from_secs(1));
            let mut down = rng.duration(Duration::ZERO..Duration::from_secs(1));
            if rng.bool(0.1) {
                down += Duration::from_secs(20);
            }
            PlannedKill {
                target,
                kill_after,
                down,
            }
        })
        .collect()
}

/// The engine's index of frontend `i` (the kill plan numbers them from 1, as RisingWave's node names).
fn frontend_index(i: u32) -> usize {
    i.saturating_sub(1) as usize
}

/// Kill one node after its delay and restart it after its downtime; 1 when it was killed (it was up).
pub(super) async fn kill_and_restart(
    cluster: Arc<Cluster>,
    engine: Arc<Engine>,
    k: PlannedKill,
) -> u32 {
    tokio::time::sleep(k.kill_after).await;
    let killed = match k.target {
        KillTarget::Meta(i) if cluster.meta_node_count() > 1 => cluster.kill_meta_node(i),
        KillTarget::Meta(_) => cluster.kill_meta(),
        KillTarget::Frontend(i) => engine.kill_frontend(frontend_index(i)),
        KillTarget::Compute(w) => cluster.kill(w),
        KillTarget::Compactor(i) => cluster.kill_compactor(i),
    };
    if !killed {
        return 0;
    }
    let down = k.down;
    match k.target {
        KillTarget::Compute(w) => event!(
            cluster.ctx.log,
            "kill node",
            "workers=[{w}] restart_after={down:?}"
        ),
        other => event!(
            cluster.ctx.log,
            "kill node",
            "node={other} restart_after={down:?}"
        ),
    }
    tokio::time::sleep(down).await;
    match k.target {
        KillTarget::Meta(i) if cluster.meta_node_count() > 1 => cluster.restart_meta_node(i),
        KillTarget::Meta(_) => {
            if let Err(e) = cluster.restart_meta() {
                event!(cluster.ctx.log, "restart node", "node=meta-1 failed: {e}");
                return 1;
            }
        }
        KillTarget::Frontend(i) => engine.restart_frontend(frontend_index(i)),
        KillTarget::Compute(w) => cluster.restart(w),
        KillTarget::Compactor(i) => cluster.restart_compactor(i),
    }
    match k.target {
        KillTarget::Compute(w) => event!(cluster.ctx.log, "restart node", "worker={w}"),
        other => event!(cluster.ctx.log, "restart node", "node={other}"),
    }
    1
}
