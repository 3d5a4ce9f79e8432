//! A workload plan: the cluster's settings and a list of timed steps, as data. A seed draws one
//! ([`super::generate`]); a file holds one (JSON, versioned); the runner plays one ([`super::run_plan`]).
//!
//! Jobs are named in the plan (`t1`, `mv3`, `sink4`); the runner maps names to the ids meta gives them. A step
//! whose job does not exist when its time comes (its create failed, or a shrink removed it) is skipped, so any
//! subset of a plan's steps is still a plan.

use serde::{Deserialize, Serialize};

/// The plan format's version: a file of another version is refused.
pub const PLAN_VERSION: u32 = 1;

/// Steps per plan, at most (a limit on every queue).
pub const MAX_STEPS: usize = 512;

/// A plan's virtual duration, at most.
pub const MAX_DURATION_MS: u64 = 3_600_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub version: u32,
    /// The seed of the run's RNG (network latencies, recovery's slow steps), and the seed that drew the plan.
    pub seed: u64,
    pub cluster: PlanCluster,
    /// In order of `at_ms`.
    pub steps: Vec<Step>,
}

/// The cluster the plan runs on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanCluster {
    pub compute_nodes: u32,
    /// Metas: several run on a lease (`Cluster::launch`). Absent from older plan files, which read as 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub meta_nodes: u32,
    pub vnodes: u32,
    pub barrier_interval_ms: u64,
    pub checkpoint_frequency: u32,
    /// RisingWave's debug-build check of backfill progress rows (see `StreamConfig::persist_check`).
    pub persist_check: bool,
    /// Jobs' state tables share RisingWave's static compaction groups (a table's and a view's own tables in
    /// group 3, backfill progress tables in group 2) instead of a group per job. Absent from older plan
    /// files, which read as a group per job.
    #[serde(default, skip_serializing_if = "is_false")]
    pub static_groups: bool,
    /// Backfill rate limits are kept by a flow-control executor after the backfill, as in RisingWave before PR
    /// #15948 (`epochlab_sim::config::with_flow_control`); absent, the backfill paces its own reads. Random
    /// plans never draw it: it replays a plan on the engine of 2024.
    #[serde(default, skip_serializing_if = "is_false")]
    pub flow_control: bool,
}

/// One action at a virtual time (ms after the cluster started).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub at_ms: u64,
    pub action: Action,
}

/// What a step does. DDL runs in a task of its own (a foreground create returns when its backfill ends), so
/// later steps keep their times.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// `CREATE TABLE name (k BIGINT PRIMARY KEY, v BIGINT, s VARCHAR)`, then `rows` inserted and flushed.
    /// With `pk_ks`, the pk is (k, s) and the table is distributed by k, a strict subset of its pk (the shape
    /// of RisingWave #16815); `s` is the same in every row, so k alone is still unique.
    CreateTable {
        name: String,
        parallelism: u32,
        rows: u32,
        #[serde(default, skip_serializing_if = "is_false")]
        pk_ks: bool,
        /// With `pk_ks`, several rows per `k`: the runner's n-th row is `(n / rows_per_k, v,
        /// 'payload_{n % rows_per_k}')`, so a lookup by `k` finds up to `rows_per_k` rows (RisingWave #22476's
        /// lookup table). Absent: one row per `k`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rows_per_k: Option<u32>,
        /// `WATERMARK FOR v AS v - watermark_lag`: an append-only table (its DML streams only insert) whose rows'
        /// `v` is the virtual milliseconds since the cluster started, a few of them late, so that the watermark
        /// filter drops some. Absent from older plan files, which read as a table without a watermark.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        watermark_lag: Option<i64>,
    },
    /// `CREATE MATERIALIZED VIEW name AS SELECT * FROM upstream`, with arrangement backfill.
    CreateMv { name: String, job: JobSpec },
    /// `CREATE MATERIALIZED VIEW name AS <query>`: a stateful view (aggregation, join, top-N) over tables or
    /// other views, built as a fragment graph with arrangement backfill; the oracle evaluates its query over
    /// its upstreams' committed rows.
    CreateView {
        name: String,
        parallelism: u32,
        background: bool,
        query: ViewQuery,
    },
    /// `CREATE SINK name AS SELECT * FROM upstream` into a collecting (exactly-once) target.
    CreateSink {
        name: String,
        job: JobSpec,
        /// Simulated time the sink spends per chunk (a slow sink back-pressures the backfill).
        sink_ms_per_chunk: u64,
    },
    /// `DROP` a table, view or sink.
    Drop { name: String },
    /// `CANCEL JOB`: a view or sink still being created (a background one) is dropped; refused once it
    /// is created. Accepted while recovery runs, which pre-applies it.
    Cancel { name: String },
    /// `ALTER ... SET BACKFILL_RATE_LIMIT`: `None` lifts the limit.
    Throttle {
        name: String,
        rate_limit: Option<u32>,
    },
    /// A stream of DML on a table: `rows_per_s` statements for `duration_ms`, each an insert of a new key,
    /// or (by percentage) an update or delete of a key the table is known to hold.
    Dml {
        table: String,
        rows_per_s: u32,
        duration_ms: u64,
        update_pct: u8,
        delete_pct: u8,
    },
    /// Reschedule a view or sink (RisingWave's `RescheduleFragment`, a Pause, an Update and a Resume): the
    /// owner of vnode `v` becomes the actor that owned `v + rotate` (modulo the vnode count), so each actor
    /// keeps as many vnodes.
    Reschedule { name: String, rotate: u32 },
    /// `FLUSH`.
    Flush,
    /// Remove a compute node (by worker id) for good, killed if it runs: the next recovery scales its actors in
    /// onto the other nodes' (RisingWave #19138's scale-down). Skipped if it would leave no node.
    RemoveNode { node: u32 },
    /// Kill compute nodes (by worker id) and start them again, empty, `restart_after_ms` later.
    Kill {
        nodes: Vec<u32>,
        restart_after_ms: u64,
    },
    /// Kill meta and start it again from its store `restart_after_ms` later (RisingWave's meta kill: down
    /// U(0, 1 s), plus 20 s one time in ten).
    KillMeta {
        restart_after_ms: u64,
        /// Which meta of several (1-based); absent with one meta.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<u32>,
    },
    /// Meta dies at `point` of the first DDL to reach it from now on, and restarts from its store after
    /// U(0, 1 s) (`Cluster::arm_meta_crash`).
    CrashMeta { point: epochlab_meta::CrashPoint },
    /// Kill every meta and every compute node, and start them again `restart_after_ms` later (RisingWave's
    /// `kill_cn_and_meta_and_wait_recover`: the cluster down but for its frontends and compactors).
    KillComputeNodesAndMeta { restart_after_ms: u64 },
    /// The leader's keep-alives go unanswered for `duration_ms` (madsim etcd's request timeout): past half
    /// its lease (5 s) it exits, and it is started again at the step's end. Several metas only.
    FailMetaKeepAlives { duration_ms: u64 },
    /// Calls of `rpc` take `min_ms..max_ms` for `duration_ms` (barrier latency spikes, slow resets).
    RpcDelay {
        rpc: PlanRpc,
        min_ms: u64,
        max_ms: u64,
        duration_ms: u64,
    },
    /// The next `count` calls of `rpc` (to `node`, or any node) fail.
    RpcFail {
        rpc: PlanRpc,
        node: Option<u32>,
        count: u32,
    },
}

/// A view's or sink's backfill settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    pub upstream: String,
    pub parallelism: u32,
    /// Backfill rows per second per actor; `None` is unlimited.
    pub rate_limit: Option<u32>,
    /// `SET BACKGROUND_DDL = true`: the create returns once the job's first barrier is collected.
    pub background: bool,
    /// No-shuffle backfill (RisingWave's `Backfill` scan): the job takes its upstream's distribution, one
    /// backfill actor per upstream actor (`parallelism` is then the upstream's). Absent from older plan files,
    /// which read as arrangement backfill.
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_shuffle: bool,
}

/// The query of a stateful view. Columns are positions in the upstream's columns (a table's are `k, v, s`);
/// the columns a query computes on must be `BIGINT`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ViewQuery {
    /// `SELECT g, count(*), sum(x), min(x), max(x) FROM upstream GROUP BY g` with `g` the `group` key of
    /// each row and `x` column `arg`; without `group`, a simple aggregation (one row, no `g`). With `eowc`,
    /// `EMIT ON WINDOW CLOSE`: `g` is a column with a watermark (no modulus), each group emitted once, when
    /// the watermark passes it. Absent from older plan files, which read as emit-on-update.
    Agg {
        upstream: String,
        group: Option<GroupKey>,
        arg: usize,
        #[serde(default, skip_serializing_if = "is_false")]
        eowc: bool,
    },
    /// `SELECT * FROM left [LEFT] JOIN right ON left.left_col = right.right_col`.
    Join {
        left: String,
        right: String,
        join: ViewJoin,
        left_col: usize,
        right_col: usize,
    },
    /// `SELECT * FROM left [LEFT] JOIN right FOR SYSTEM_TIME AS OF PROCTIME() ON left.left_col = right.$0`: a
    /// temporal join (an append-only left, a right table whose pk and distribution start with its first
    /// column); each left row joins the right rows as they stood when it came.
    TemporalJoin {
        left: String,
        right: String,
        join: ViewJoin,
        left_col: usize,
    },
    /// `SELECT * FROM upstream ORDER BY col [DESC] LIMIT limit OFFSET offset` (ties broken by the upstream's
    /// primary key, ascending).
    TopN {
        upstream: String,
        col: usize,
        desc: bool,
        limit: u64,
        offset: u64,
    },
    /// `SELECT g, *, row_number() OVER (w), sum(x) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
    /// lag(x) OVER (w) FROM upstream` with `w` = `PARTITION BY g ORDER BY o`: `g` the `partition` key of each
    /// row, `o` column `order`, `x` column `arg`; rows of equal `o` in the order of the upstream's pk
    /// (ascending), as RisingWave's over window keeps a partition (its state table's pk).
    OverWindow {
        upstream: String,
        partition: GroupKey,
        order: usize,
        arg: usize,
    },
}

/// A group key: column `col`, or `col % modulus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupKey {
    pub col: usize,
    pub modulus: Option<i64>,
}

/// The joins a view draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViewJoin {
    Inner,
    LeftOuter,
}

impl ViewQuery {
    /// The relations the view reads, left first.
    pub fn upstreams(&self) -> Vec<&str> {
        match self {
            ViewQuery::Agg { upstream, .. }
            | ViewQuery::TopN { upstream, .. }
            | ViewQuery::OverWindow { upstream, .. } => vec![upstream],
            ViewQuery::Join { left, right, .. } | ViewQuery::TemporalJoin { left, right, .. } => {
                vec![left, right]
            }
        }
    }

    fn check(&self) -> Result<(), StepError> {
        match self {
            ViewQuery::Agg {
                group: Some(GroupKey {
                    modulus: Some(m), ..
                }),
                ..
            } if *m < 1 => Err(StepError::View),
            ViewQuery::OverWindow {
                partition: GroupKey {
                    modulus: Some(m), ..
                },
                ..
            } if *m < 1 => Err(StepError::View),
            ViewQuery::Agg {
                group, eowc: true, ..
            } if !group.is_some_and(|g| g.modulus.is_none()) => Err(StepError::View),
            ViewQuery::TopN { limit, offset, .. } if *limit == 0 || limit + offset > 100_000 => {
                Err(StepError::View)
            }
            _ => Ok(()),
        }
    }
}

impl std::fmt::Display for ViewQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ViewQuery::Agg {
                upstream,
                group,
                arg,
                eowc,
            } => {
                let eowc = if *eowc { " emit on window close" } else { "" };
                let x = format!("${arg}");
                let calls = format!("count(*), sum({x}), min({x}), max({x})");
                match group {
                    None => write!(f, "select {calls} from {upstream}"),
                    Some(g) => {
                        let g = match g.modulus {
                            Some(m) => format!("${} % {m}", g.col),
                            None => format!("${}", g.col),
                        };
                        write!(f, "select {g}, {calls} from {upstream} group by {g}{eowc}")
                    }
                }
            }
            ViewQuery::Join {
                left,
                right,
                join,
                left_col,
                right_col,
            } => {
                let join = match join {
                    ViewJoin::Inner => "join",
                    ViewJoin::LeftOuter => "left join",
                };
                write!(
                    f,
                    "select * from {left} {join} {right} on {left}.${left_col} = {right}.${right_col}"
                )
            }
            ViewQuery::TemporalJoin {
                left,
                right,
                join,
                left_col,
            } => {
                let join = match join {
                    ViewJoin::Inner => "join",
                    ViewJoin::LeftOuter => "left join",
                };
                write!(
                    f,
                    "select * from {left} {join} {right} for system_time as of proctime() on {left}.${left_col} = {right}.$0"
                )
            }
            ViewQuery::TopN {
                upstream,
                col,
                desc,
                limit,
                offset,
            } => write!(
                f,
                "select * from {upstream} order by ${col}{} limit {limit} offset {offset}",
                if *desc { " desc" } else { "" }
            ),
            ViewQuery::OverWindow {
                upstream,
                partition,
                order,
                arg,
            } => {
                let g = match partition.modulus {
                    Some(m) => format!("${} % {m}", partition.col),
                    None => format!("${}", partition.col),
                };
                let (x, w) = (
                    format!("${arg}"),
                    format!("partition by {g} order by ${order}"),
                );
                write!(
                    f,
                    "select {g}, *, row_number() over ({w}), sum({x}) over ({w} rows between unbounded \
                     preceding and current row), lag({x}) over ({w}) from {upstream}"
                )
            }
        }
    }
}

/// The requests a plan can delay or fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanRpc {
    InjectBarrier,
    BarrierComplete,
    BuildActors,
    DropActors,
    Reset,
    WaitEpochCommit,
}

/// The request's name, as a step shows it (`inject_barrier`: its [`epochlab_rpc::RpcKind`]'s).
impl std::fmt::Display for PlanRpc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind().as_str())
    }
}

impl PlanRpc {
    pub fn kind(self) -> epochlab_rpc::RpcKind {
        use epochlab_rpc::RpcKind;
        match self {
            PlanRpc::InjectBarrier => RpcKind::InjectBarrier,
            PlanRpc::BarrierComplete => RpcKind::BarrierComplete,
            PlanRpc::BuildActors => RpcKind::BuildActors,
            PlanRpc::DropActors => RpcKind::DropActors,
            PlanRpc::Reset => RpcKind::Reset,
            PlanRpc::WaitEpochCommit => RpcKind::WaitEpochCommit,
        }
    }
}

/// Why a plan cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("plan version {found}, but this epochlab reads version {PLAN_VERSION}")]
    Version { found: u32 },
    #[error("the plan has {0} steps; at most {MAX_STEPS}")]
    TooManySteps(usize),
    #[error("step {index}: {reason}")]
    Step { index: usize, reason: StepError },
    #[error("cluster: {0}")]
    Cluster(&'static str),
}

/// Why one step of a plan cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    #[error("steps must be in order of at_ms")]
    OutOfOrder,
    #[error("at_ms beyond the longest plan (one hour)")]
    TooLate,
    #[error(
        "a table needs parallelism 1..=64, at most 1000000 rows, a watermark lag of 0..=3600000 ms and \
         rows_per_k 2..=1000 only with pk_ks"
    )]
    Table,
    #[error("a job needs parallelism 1..=64")]
    JobParallelism,
    #[error(
        "a view's group modulus must be positive, its limit 1.. and limit + offset at most 100000"
    )]
    View,
    #[error("sink_ms_per_chunk at most 60000")]
    SinkDelay,
    #[error("dml needs 1..=100000 rows/s, at most an hour, update+delete at most 100%")]
    Dml,
    #[error("kill names nodes 1..={nodes} and restarts within an hour")]
    Kill { nodes: u32 },
    #[error(
        "kill meta names a meta 1..={meta_nodes} (none with one meta) and restarts within an hour"
    )]
    KillMeta { meta_nodes: u32 },
    #[error("kill compute nodes and meta restarts within an hour")]
    KillComputeNodesAndMeta,
    #[error("fail meta keep-alives needs several metas and lasts at most an hour")]
    FailMetaKeepAlives,
    #[error("rpc delay needs min_ms <= max_ms <= 60000 and lasts at most an hour")]
    RpcDelay,
    #[error("rpc fail names a node 1..={nodes} and at most 1000 calls")]
    RpcFail { nodes: u32 },
}

impl Plan {
    /// Check what the runner relies on: version, limits, times in order, sane settings.
    pub fn validate(&self) -> Result<(), PlanError> {
        if self.version != PLAN_VERSION {
            return Err(PlanError::Version {
                found: self.version,
            });
        }
        if self.steps.len() > MAX_STEPS {
            return Err(PlanError::TooManySteps(self.steps.len()));
        }
        let c = &self.cluster;
        let cluster_error = if !(1..=16).contains(&c.compute_nodes) {
            Some("compute_nodes must be 1..=16")
        } else if !(1..=16).contains(&c.meta_nodes) {
            Some("meta_nodes must be 1..=16")
        } else if epochlab_common::VnodeCount::new(c.vnodes).is_none() {
            Some("vnodes must be 1..=32768")
        } else if !(10..=60_000).contains(&c.barrier_interval_ms) {
            Some("barrier_interval_ms must be 10..=60000")
        } else if !(1..=1000).contains(&c.checkpoint_frequency) {
            Some("checkpoint_frequency must be 1..=1000")
        } else {
            None
        };
        if let Some(e) = cluster_error {
            return Err(PlanError::Cluster(e));
        }
        let mut last = 0;
        for (index, step) in self.steps.iter().enumerate() {
            let bad = |reason: StepError| PlanError::Step { index, reason };
            if step.at_ms < last {
                return Err(bad(StepError::OutOfOrder));
            }
            if step.at_ms > MAX_DURATION_MS {
                return Err(bad(StepError::TooLate));
            }
            last = step.at_ms;
            step.action
                .check(c.compute_nodes, c.meta_nodes)
                .map_err(bad)?;
        }
        Ok(())
    }

    /// The plan as a readable list, one step a line.
    pub fn describe(&self) -> String {
        let c = &self.cluster;
        let mut out = format!(
            "plan (seed {}): {} nodes, {} vnodes, barrier every {} ms, checkpoint every {}, persist check {}{}\n",
            self.seed,
            c.compute_nodes,
            c.vnodes,
            c.barrier_interval_ms,
            c.checkpoint_frequency,
            if c.persist_check { "on" } else { "off" },
            if c.static_groups {
                ", static compaction groups"
            } else {
                ""
            }
        );
        for (i, s) in self.steps.iter().enumerate() {
            out.push_str(&format!(
                "{:>3}. {:>8.3} s  {}\n",
                i + 1,
                s.at_ms as f64 / 1000.0,
                s.action
            ));
        }
        out
    }

    /// When the last step starts, or ends for steps that last (DML streams, delays).
    pub fn end_ms(&self) -> u64 {
        self.steps
            .iter()
            .map(|s| s.at_ms + s.action.lasts_ms())
            .max()
            .unwrap_or(0)
    }
}

impl Action {
    /// Whether the step's numbers are in range: each action's own limits (one arm per action, no catch-all: a
    /// new action says here what it accepts).
    fn check(&self, nodes: u32, meta_nodes: u32) -> Result<(), StepError> {
        let parallelism_ok = |p: u32| (1..=64).contains(&p);
        let node_ok = |n: u32| n != 0 && n <= nodes;
        let fail_if = |bad: bool, e: StepError| if bad { Err(e) } else { Ok(()) };
        match self {
            Action::CreateTable {
                parallelism,
                rows,
                watermark_lag,
                pk_ks,
                rows_per_k,
                ..
            } => fail_if(
                !parallelism_ok(*parallelism)
                    || *rows > 1_000_000
                    || watermark_lag.is_some_and(|l| !(0..=MAX_DURATION_MS as i64).contains(&l))
                    || rows_per_k.is_some_and(|n| !*pk_ks || !(2..=1000).contains(&n)),
                StepError::Table,
            ),
            Action::CreateMv { job, .. } => {
                fail_if(!parallelism_ok(job.parallelism), StepError::JobParallelism)
            }
            Action::CreateView {
                parallelism, query, ..
            } => {
                fail_if(!parallelism_ok(*parallelism), StepError::JobParallelism)?;
                query.check()
            }
            Action::CreateSink {
                job,
                sink_ms_per_chunk,
                ..
            } => {
                fail_if(!parallelism_ok(job.parallelism), StepError::JobParallelism)?;
                fail_if(*sink_ms_per_chunk > 60_000, StepError::SinkDelay)
            }
            Action::Dml {
                rows_per_s,
                duration_ms,
                update_pct,
                delete_pct,
                ..
            } => fail_if(
                *rows_per_s == 0
                    || *rows_per_s > 100_000
                    || *duration_ms > MAX_DURATION_MS
                    || u32::from(*update_pct) + u32::from(*delete_pct) > 100,
                StepError::Dml,
            ),
            Action::Kill {
                nodes: victims,
                restart_after_ms,
            } => fail_if(
                !victims.iter().all(|n| node_ok(*n)) || *restart_after_ms > MAX_DURATION_MS,
                StepError::Kill { nodes },
            ),
            Action::RpcDelay {
                min_ms,
                max_ms,
                duration_ms,
                ..
            } => fail_if(
                min_ms > max_ms || *max_ms > 60_000 || *duration_ms > MAX_DURATION_MS,
                StepError::RpcDelay,
            ),
            Action::RemoveNode { node } => fail_if(!node_ok(*node), StepError::Kill { nodes }),
            Action::KillMeta {
                restart_after_ms,
                node,
            } => fail_if(
                *restart_after_ms > MAX_DURATION_MS
                    || node.is_some_and(|n| n == 0 || n > meta_nodes)
                    || (node.is_none() && meta_nodes > 1),
                StepError::KillMeta { meta_nodes },
            ),
            Action::RpcFail { node, count, .. } => fail_if(
                node.is_some_and(|n| !node_ok(n)) || *count > 1000,
                StepError::RpcFail { nodes },
            ),
            Action::KillComputeNodesAndMeta { restart_after_ms } => fail_if(
                *restart_after_ms > MAX_DURATION_MS,
                StepError::KillComputeNodesAndMeta,
            ),
            Action::FailMetaKeepAlives { duration_ms } => fail_if(
                *duration_ms > MAX_DURATION_MS || meta_nodes < 2,
                StepError::FailMetaKeepAlives,
            ),
            // Names only: the plan's own checks (names known, created before use) cover them.
            Action::CrashMeta { .. }
            | Action::Drop { .. }
            | Action::Cancel { .. }
            | Action::Throttle { .. }
            | Action::Reschedule { .. }
            | Action::Flush => Ok(()),
        }
    }

    /// How long the step's effect lasts after it starts.
    pub fn lasts_ms(&self) -> u64 {
        match self {
            Action::Dml { duration_ms, .. } | Action::RpcDelay { duration_ms, .. } => *duration_ms,
            Action::Kill {
                restart_after_ms, ..
            }
            | Action::KillMeta {
                restart_after_ms, ..
            }
            | Action::KillComputeNodesAndMeta { restart_after_ms } => *restart_after_ms,
            Action::FailMetaKeepAlives { duration_ms } => *duration_ms,
            // Done once started (a DDL's own wait is not the step's effect).
            Action::CrashMeta { .. }
            | Action::CreateTable { .. }
            | Action::CreateMv { .. }
            | Action::CreateView { .. }
            | Action::CreateSink { .. }
            | Action::Drop { .. }
            | Action::Cancel { .. }
            | Action::Throttle { .. }
            | Action::Reschedule { .. }
            | Action::Flush
            | Action::RemoveNode { .. }
            | Action::RpcFail { .. } => 0,
        }
    }
}

/// A backfill rate limit as a step shows it.
fn rate_limit_text(limit: &Option<u32>) -> String {
    match limit {
        Some(l) => format!("{l} rows/s"),
        None => "unlimited".into(),
    }
}

/// A `pk_ks` table's key, as a step shows it.
const PK_KS_TEXT: &str = ", pk (k, s) distributed by k";

/// Milliseconds as seconds, for a step's text.
fn seconds(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// How a DDL waits, as a step shows it.
fn foreground_or_background(background: bool) -> &'static str {
    if background {
        "background"
    } else {
        "foreground"
    }
}

/// A job's upstream and options, as a step shows them (`over t0 (parallelism 2, backfill unlimited, ...)`).
impl std::fmt::Display for JobSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "over {} (parallelism {}, {}backfill {}, {})",
            self.upstream,
            self.parallelism,
            if self.no_shuffle { "no-shuffle " } else { "" },
            rate_limit_text(&self.rate_limit),
            foreground_or_background(self.background)
        )
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::CreateTable {
                name,
                parallelism,
                rows,
                pk_ks,
                rows_per_k,
                watermark_lag,
            } => write!(
                f,
                "create table {name} (parallelism {parallelism}{}{}{}), load {rows} rows",
                if *pk_ks { PK_KS_TEXT } else { "" },
                match rows_per_k {
                    Some(n) => format!(", {n} rows per k"),
                    None => String::new(),
                },
                match watermark_lag {
                    Some(lag) => format!(", append only, watermark for v as v - {lag}"),
                    None => String::new(),
                }
            ),
            Action::CreateMv { name, job } => write!(f, "create mv {name} {job}"),
            Action::CreateView {
                name,
                parallelism,
                background,
                query,
            } => write!(
                f,
                "create mv {name} as {query} (parallelism {parallelism}, {})",
                foreground_or_background(*background)
            ),
            Action::CreateSink {
                name,
                job,
                sink_ms_per_chunk,
            } => write!(
                f,
                "create sink {name} {job}, {sink_ms_per_chunk} ms per chunk"
            ),
            Action::Drop { name } => write!(f, "drop {name}"),
            Action::Cancel { name } => write!(f, "cancel {name}"),
            Action::Throttle { name, rate_limit } => {
                write!(f, "throttle {name} to {}", rate_limit_text(rate_limit))
            }
            Action::Dml {
                table,
                rows_per_s,
                duration_ms,
                update_pct,
                delete_pct,
            } => write!(
                f,
                "dml on {table}: {rows_per_s} rows/s for {:.1} s ({update_pct}% updates, {delete_pct}% deletes)",
                seconds(*duration_ms)
            ),
            Action::Reschedule { name, rotate } => {
                write!(f, "reschedule {name}: vnode owners rotated by {rotate}")
            }
            Action::Flush => write!(f, "flush"),
            Action::RemoveNode { node } => write!(f, "remove node {node} for good"),
            Action::KillMeta {
                restart_after_ms,
                node,
            } => write!(
                f,
                "kill {}, restart after {:.3} s",
                node.map_or("meta".to_string(), crate::cluster::meta_name),
                seconds(*restart_after_ms)
            ),
            Action::CrashMeta { point } => write!(f, "crash meta at {point}"),
            Action::KillComputeNodesAndMeta { restart_after_ms } => write!(
                f,
                "kill every compute node and meta, restart after {:.3} s",
                seconds(*restart_after_ms)
            ),
            Action::FailMetaKeepAlives { duration_ms } => write!(
                f,
                "fail the meta leader's keep-alives for {:.1} s",
                seconds(*duration_ms)
            ),
            Action::Kill {
                nodes,
                restart_after_ms,
            } => write!(
                f,
                "kill nodes {nodes:?}, restart after {:.3} s",
                seconds(*restart_after_ms)
            ),
            Action::RpcDelay {
                rpc,
                min_ms,
                max_ms,
                duration_ms,
            } => write!(
                f,
                "delay {rpc} by {min_ms}..{max_ms} ms for {:.1} s",
                seconds(*duration_ms)
            ),
            Action::RpcFail { rpc, node, count } => match node {
                Some(n) => write!(f, "fail the next {count} {rpc} to node {n}"),
                None => write!(f, "fail the next {count} {rpc}"),
            },
        }
    }
}

/// serde's `skip_serializing_if` for flags whose default (false) older plan files leave out.
fn is_false(b: &bool) -> bool {
    !*b
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}
