//! Drawing a random plan from a seed. The draw uses an RNG of its own (not the run's), so the plan is fixed
//! before anything runs, and the same seed draws the same plan in every mode.
//!
//! The generator leans towards what finds recovery bugs, without naming any: jobs are often dropped while
//! they backfill, and a kill opportunity often follows a drop within a few barrier intervals (a kill while
//! the Stop barrier is in flight). Faults follow RisingWave's simulation: each kill opportunity happens with
//! the kill rate, and kills every node or each node with probability 0.5; restart delays are sometimes longer
//! than the heartbeat timeout.

use epochlab_common::SimRng;

use super::plan::{
    Action, GroupKey, JobSpec, PLAN_VERSION, Plan, PlanCluster, PlanRpc, Step, ViewJoin, ViewQuery,
};

/// What the generator may draw.
#[derive(Clone, Debug, PartialEq)]
pub struct GenParams {
    /// Virtual time the steps span.
    pub duration_ms: u64,
    /// Probability that a kill opportunity kills (RisingWave's `--kill-rate`).
    pub kill_rate: f64,
    /// Probability that a view or sink is created in the background (`--background-ddl-rate`).
    pub background_ddl_rate: f64,
    /// Probability of a meta kill at each of its opportunities, every 10 to 30 s (`--kill-meta-rate`). Drawn
    /// after every other step, so a rate of 0 leaves every seed's plan as it was.
    pub kill_meta_rate: f64,
    /// Probability of a crash point armed at each of its opportunities, every 10 to 30 s (`--crash-meta-rate`):
    /// meta dies there in the first DDL to reach it. Drawn after meta kills, so a rate of 0 leaves every
    /// seed's plan as it was.
    pub crash_meta_rate: f64,
    /// Probability of a meta outage at each of its opportunities, every 20 to 40 s (`--meta-outage-rate`):
    /// every meta and compute node killed at once (RisingWave's `kill_cn_and_meta_and_wait_recover`), or,
    /// with several metas, half the time the leader's keep-alives unanswered. Drawn after crash points, so a
    /// rate of 0 leaves every seed's plan as it was.
    pub meta_outage_rate: f64,
    /// The plans run on the engine of 2024: backfill rate limits kept by a flow-control executor
    /// (`PlanCluster::flow_control`, `--engine 2024`). Not a draw: every plan of a campaign has it or none.
    pub flow_control: bool,
    /// Metas (`PlanCluster::meta_nodes`, `--meta-nodes`): not a draw. With several, each meta kill names
    /// one of them, drawn uniformly (only then: one meta draws nothing more).
    pub meta_nodes: u32,
}

impl Default for GenParams {
    fn default() -> Self {
        Self {
            duration_ms: 60_000,
            kill_rate: 0.5,
            background_ddl_rate: 0.5,
            kill_meta_rate: 0.3,
            crash_meta_rate: 0.3,
            meta_outage_rate: 0.2,
            flow_control: false,
            meta_nodes: crate::config::DEFAULT_META_NODES,
        }
    }
}

/// Salt for the plan's RNG, so that it is not the run's stream.
const PLAN_SALT: u64 = 0x706c_616e_5f72_6e67;

struct Draw {
    rng: SimRng,
}

impl Draw {
    fn pick<T: Clone>(&self, items: &[T]) -> T {
        items[self.rng.range_u64(0..items.len() as u64) as usize].clone()
    }

    fn between(&self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            self.rng.range_u64(lo..hi)
        }
    }

    fn chance(&self, p: f64) -> bool {
        p > 0.0 && (p >= 1.0 || self.rng.bool(p))
    }
}

/// The plan of `seed`.
pub fn generate(seed: u64, g: &GenParams) -> Plan {
    let d = Draw {
        rng: SimRng::new(seed ^ PLAN_SALT),
    };
    let mut cluster = PlanCluster {
        compute_nodes: d.pick(&[1, 2, 3, 3, 3, 4]),
        meta_nodes: g.meta_nodes,
        vnodes: d.pick(&[16, 64, 256, 256]),
        barrier_interval_ms: d.pick(&[250, 500, 1000, 1000]),
        checkpoint_frequency: d.pick(&[1, 1, 2, 5, 10]),
        persist_check: d.chance(0.9),
        static_groups: false,
        flow_control: g.flow_control,
    };
    let mut steps = Vec::new();
    let tables = tables(&d, &cluster, g, &mut steps);
    jobs(&d, &cluster, g, &tables, &mut steps);
    faults(&d, &cluster, g, &mut steps);
    for _ in 0..d.between(0, 3) {
        let at_ms = d.between(1000, g.duration_ms.max(1001));
        steps.push(Step {
            at_ms,
            action: Action::Flush,
        });
    }
    distribute_some_by_a_pk_subset(&d, &mut steps);
    cancel_some_creating_jobs(&d, &mut cluster, g, &mut steps);
    reschedule_some_jobs(&d, &cluster, &mut steps);
    scale_in_some_no_shuffle_sinks(&d, &cluster, &tables, &mut steps);
    stateful_views(&d, &cluster, g, &mut steps);
    watermark_tables(&d, &cluster, g, &mut steps);
    temporal_joins(&d, &cluster, g, &mut steps);
    over_windows(&d, &cluster, g, &mut steps);
    meta_kills(&d, g, &mut steps);
    meta_crashes(&d, g, &mut steps);
    meta_outages(&d, g, &mut steps);
    steps.sort_by_key(|s| s.at_ms);
    Plan {
        version: PLAN_VERSION,
        seed,
        cluster,
        steps,
    }
}

fn parallelism(d: &Draw, c: &PlanCluster) -> u32 {
    d.between(1, u64::from(c.compute_nodes) * 2 + 1) as u32
}

/// Some tables get pk (k, s) distributed by k, a strict subset of the pk (RisingWave #16815's shape). Drawn
/// last, so that every other draw of a seed's plan is what it was before tables could take this shape.
fn distribute_some_by_a_pk_subset(d: &Draw, steps: &mut [Step]) {
    for step in steps {
        if let Action::CreateTable { pk_ks, .. } = &mut step.action {
            *pk_ks = d.chance(0.3);
        }
    }
}

/// RisingWave #15144's shape, drawn after every other draw (so every earlier draw of a seed's plan is what it
/// was before): static compaction groups in half the plans, and `CANCEL JOB`s of rate-limited background
/// jobs (they backfill for a while) that no earlier step drops, mostly soon after killed nodes are back,
/// while recovery may still run (so that it pre-applies the cancel): after the plan's kills, and after a
/// quick kill opportunity drawn for most of those jobs soon after their create; some at any time of their
/// backfill.
fn cancel_some_creating_jobs(d: &Draw, c: &mut PlanCluster, g: &GenParams, steps: &mut Vec<Step>) {
    c.static_groups = d.chance(0.5);
    let dropped_at = |name: &str| {
        steps
            .iter()
            .filter(|s| matches!(&s.action, Action::Drop { name: n } if n == name))
            .map(|s| s.at_ms)
            .min()
            .unwrap_or(u64::MAX)
    };
    let jobs: Vec<(u64, u64, String)> = steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::CreateMv { name, job } | Action::CreateSink { name, job, .. }
                if job.background && job.rate_limit.is_some() =>
            {
                Some((s.at_ms, dropped_at(name), name.clone()))
            }
            _ => None,
        })
        .collect();
    let interval = c.barrier_interval_ms;
    // (kill at, restart after) of the plan's kills, then of the kills drawn here.
    let mut kills: Vec<(u64, u64)> = steps
        .iter()
        .filter(|s| matches!(s.action, Action::Kill { .. }))
        .map(|s| (s.at_ms, s.action.lasts_ms()))
        .collect();
    let mut added = Vec::new();
    for (created_at, _, _) in &jobs {
        if d.chance(0.6) {
            let kill_at = created_at + d.between(interval, 4 * interval);
            if let Some(k) = quick_kill(d, c, g, kill_at) {
                kills.push((kill_at, k.action.lasts_ms()));
                added.push(k);
            }
        }
    }
    let mut cancelled = std::collections::BTreeSet::new();
    for (kill_at, restart) in kills {
        let at_ms = kill_at + restart + d.between(0, 2 * interval);
        let targets: Vec<&String> = jobs
            .iter()
            .filter(|(from, to, name)| *from < kill_at && at_ms < *to && !cancelled.contains(name))
            .map(|(_, _, name)| name)
            .collect();
        if targets.is_empty() || !d.chance(0.8) {
            continue;
        }
        let name = d.pick(&targets).clone();
        cancelled.insert(name.clone());
        added.push(Step {
            at_ms,
            action: Action::Cancel { name },
        });
    }
    for (created_at, dropped_at, name) in &jobs {
        let at_ms = created_at + d.between(interval, 20 * interval);
        if !cancelled.contains(name) && at_ms < *dropped_at && d.chance(0.2) {
            added.push(Step {
                at_ms,
                action: Action::Cancel { name: name.clone() },
            });
        }
    }
    steps.extend(added);
}

/// About half the views and sinks of two actors or more are rescheduled once (epochlab's reschedule-unpinned
/// shape), within ten barrier intervals of their creation, so often while they backfill. Drawn after every other
/// draw, so that the rest of a seed's plan is what it was before plans could reschedule.
fn reschedule_some_jobs(d: &Draw, c: &PlanCluster, steps: &mut Vec<Step>) {
    let interval = c.barrier_interval_ms;
    let jobs: Vec<(u64, String)> = steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::CreateMv { name, job } | Action::CreateSink { name, job, .. }
                if job.parallelism >= 2 =>
            {
                Some((s.at_ms, name.clone()))
            }
            _ => None,
        })
        .collect();
    for (at_ms, name) in jobs {
        if !d.chance(0.5) {
            continue;
        }
        steps.push(Step {
            at_ms: at_ms + d.between(interval, 10 * interval),
            action: Action::Reschedule {
                name,
                rotate: d.between(1, u64::from(c.vnodes)) as u32,
            },
        });
    }
}

/// RisingWave #19138's shape, drawn after every other draw (so every earlier draw of a seed's plan is what it
/// was before): some rate-limited background sinks take no-shuffle backfill (and lose their reschedule: a
/// no-shuffle job is not rescheduled on its own; a `SINK INTO TABLE` over a table with its distribution: the
/// table's parallelism, if it keeps up at it), and
/// for most of them a compute node is removed for good around the time their backfill should end (the
/// table's load over the rate of all its actors), before any drop or cancel of the sink: at most one node
/// per plan, never on a one-node cluster.
fn scale_in_some_no_shuffle_sinks(
    d: &Draw,
    c: &PlanCluster,
    tables: &[TableInfo],
    steps: &mut Vec<Step>,
) {
    let interval = c.barrier_interval_ms;
    let loads: std::collections::BTreeMap<String, u32> = steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::CreateTable { name, rows, .. } => Some((name.clone(), *rows)),
            _ => None,
        })
        .collect();
    let ends = |name: &str| {
        let ends = steps.iter().filter(|s| match &s.action {
            Action::Drop { name: n } | Action::Cancel { name: n } => n == name,
            _ => false,
        });
        ends.map(|s| s.at_ms).min().unwrap_or(u64::MAX)
    };
    let mut chosen: Vec<(usize, u32, u64)> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let Action::CreateSink { name, job, .. } = &step.action else {
            continue;
        };
        let Some(t) = tables.iter().find(|t| t.name == job.upstream) else {
            continue;
        };
        let fits = job.background
            && t.parallelism >= 2
            && job.rate_limit.is_some()
            && t.keeps_up(job.rate_limit, t.parallelism);
        if !fits || !d.chance(0.6) {
            continue;
        }
        // When its backfill should end: the load over the rate of all its actors.
        let rate = u64::from(job.rate_limit.unwrap_or(1).max(1) * t.parallelism);
        let load = u64::from(loads.get(&job.upstream).copied().unwrap_or(0));
        let end_ms = load * 1000 / rate;
        let at_ms = step.at_ms + interval + d.between(end_ms, end_ms * 18 / 10 + 1);
        chosen.push((i, t.parallelism, at_ms.min(ends(name).saturating_sub(1))));
    }
    let mut removal = None;
    let mut no_shuffle = std::collections::BTreeSet::new();
    for (i, parallelism, at_ms) in chosen {
        if let Action::CreateSink { name, job, .. } = &mut steps[i].action {
            job.no_shuffle = true;
            job.parallelism = parallelism;
            no_shuffle.insert(name.clone());
        }
        if c.compute_nodes >= 2 && removal.is_none() && at_ms > steps[i].at_ms && d.chance(0.9) {
            let node = d.between(1, u64::from(c.compute_nodes) + 1) as u32;
            removal = Some(Step {
                at_ms,
                action: Action::RemoveNode { node },
            });
        }
    }
    // A no-shuffle job is not rescheduled on its own (meta refuses it): its reschedule goes.
    steps.retain(
        |s| !matches!(&s.action, Action::Reschedule { name, .. } if no_shuffle.contains(name)),
    );
    steps.extend(removal);
}

/// The stateful views plans may draw, each with whether plans draw it.
const VIEW_KINDS: [(ViewKind, bool); 3] = [
    (ViewKind::Agg, true),
    (ViewKind::Join, true),
    (ViewKind::TopN, true),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ViewKind {
    Agg,
    Join,
    TopN,
}

/// A relation a stateful view may read: its `BIGINT` columns, its width, whether its first column is unique
/// (a join's right side is joined on it, so a join has at most a row per left row), and when it is created.
#[derive(Clone)]
struct Shape {
    name: String,
    bigint: Vec<usize>,
    width: usize,
    unique_first: bool,
    at_ms: u64,
}

/// Stateful views (aggregations, joins, top-N) over the tables and over each other, drawn after every other
/// draw (so every earlier draw of a seed's plan is what it was before): none to three a plan, each over a
/// table or (half the time) an earlier view, created some barrier intervals after it; never dropped (a table
/// drop under one is refused).
fn stateful_views(d: &Draw, c: &PlanCluster, g: &GenParams, steps: &mut Vec<Step>) {
    let tables: Vec<Shape> = steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::CreateTable { name, .. } => Some(Shape {
                name: name.clone(),
                bigint: vec![0, 1],
                width: 3,
                unique_first: true,
                at_ms: s.at_ms,
            }),
            _ => None,
        })
        .collect();
    let mut views: Vec<Shape> = Vec::new();
    let last_ms = (g.duration_ms * 4 / 5).max(1001);
    let kinds: Vec<ViewKind> = VIEW_KINDS
        .iter()
        .filter(|(_, drawn)| *drawn)
        .map(|(k, _)| *k)
        .collect();
    for i in 1..=d.pick(&[0, 1, 1, 2, 2, 3]) {
        let kind = d.pick(&kinds);
        let over_view = !views.is_empty() && d.chance(0.5);
        let up = if over_view {
            d.pick(&views)
        } else {
            d.pick(&tables)
        };
        let (query, shape) = match kind {
            ViewKind::Agg => agg_query(d, &up),
            ViewKind::Join => {
                let rights: Vec<Shape> = tables
                    .iter()
                    .chain(&views)
                    .filter(|s| s.unique_first)
                    .cloned()
                    .collect();
                join_query(d, &up, &d.pick(&rights))
            }
            ViewKind::TopN => top_n_query(d, &up),
        };
        // Over tables at any time; over a view some barrier intervals after its create.
        let view_at = query
            .upstreams()
            .iter()
            .filter_map(|n| views.iter().find(|s| s.name == *n))
            .map(|s| s.at_ms)
            .max();
        let interval = c.barrier_interval_ms;
        let at_ms = match view_at {
            None => d.between(500, last_ms),
            Some(at) => at + d.between(2 * interval, 12 * interval),
        };
        let name = format!("v{i}");
        steps.push(Step {
            at_ms,
            action: Action::CreateView {
                name: name.clone(),
                parallelism: parallelism(d, c),
                background: d.chance(g.background_ddl_rate),
                query,
            },
        });
        views.extend(shape.map(|s| Shape { name, at_ms, ..s }));
    }
}

/// `count(*), sum, min, max` of a `BIGINT` column, grouped (mostly) by a `BIGINT` column or its remainder.
fn agg_query(d: &Draw, up: &Shape) -> (ViewQuery, Option<Shape>) {
    let group = d.chance(0.85).then(|| GroupKey {
        col: d.pick(&up.bigint),
        modulus: d.pick(&[None, Some(3), Some(10), Some(100)]),
    });
    let query = ViewQuery::Agg {
        upstream: up.name.clone(),
        group,
        arg: d.pick(&up.bigint),
        eowc: false,
    };
    // A simple aggregation has no stream key: nothing reads it.
    let shape = group.map(|_| Shape {
        name: String::new(),
        bigint: vec![0, 1, 3, 4],
        width: 5,
        unique_first: true,
        at_ms: 0,
    });
    (query, shape)
}

/// An inner or left join of `left`'s `BIGINT` column with `right`'s first column (unique).
fn join_query(d: &Draw, left: &Shape, right: &Shape) -> (ViewQuery, Option<Shape>) {
    let join = d.pick(&[ViewJoin::Inner, ViewJoin::LeftOuter]);
    let query = ViewQuery::Join {
        left: left.name.clone(),
        right: right.name.clone(),
        join,
        left_col: d.pick(&left.bigint),
        right_col: 0,
    };
    let mut bigint = left.bigint.clone();
    bigint.extend(right.bigint.iter().map(|c| c + left.width));
    let shape = Shape {
        name: String::new(),
        bigint,
        width: left.width + right.width,
        unique_first: left.unique_first,
        at_ms: 0,
    };
    (query, Some(shape))
}

/// The first rows by a `BIGINT` column, ascending or descending, some after an offset.
fn top_n_query(d: &Draw, up: &Shape) -> (ViewQuery, Option<Shape>) {
    let query = ViewQuery::TopN {
        upstream: up.name.clone(),
        col: d.pick(&up.bigint),
        desc: d.chance(0.5),
        limit: d.pick(&[1, 10, 100]),
        offset: d.pick(&[0, 0, 5]),
    };
    (query, Some(up.clone()))
}

/// A table of the plan, and what the jobs over it must keep up with.
struct TableInfo {
    name: String,
    parallelism: u32,
    /// The sum of its DML streams' rates: the most rows per second its jobs may see from upstream.
    dml_peak: u32,
    /// The most rows it may hold: the load and every insert.
    rows_max: u64,
}

impl TableInfo {
    /// Whether a job of `parallelism` actors at `rate_limit` rows/s each keeps up with the upstream's DML
    /// with room to spare. The rate limit (RisingWave's at #14910) holds upstream rows too: a job that
    /// cannot keep up lags without bound, which is overload, not a recovery bug.
    /// A barrier also waits behind the snapshot rows the backfill read in its epoch (all of them, when
    /// every vnode holds less than a chunk), so the whole table must pass the limit within a minute.
    fn keeps_up(&self, rate_limit: Option<u32>, parallelism: u32) -> bool {
        rate_limit.is_none_or(|r| {
            let per_s = u64::from(r * parallelism);
            per_s >= 2 * u64::from(self.dml_peak) && per_s * 60 >= self.rows_max
        })
    }

    /// The slowest sink (ms per chunk) that keeps up: each upstream actor sends a chunk per DML tick.
    fn sink_ms_max(&self) -> u64 {
        let chunks_per_s = u64::from(self.dml_peak.min(10 * self.parallelism));
        500 / chunks_per_s.max(1)
    }
}

/// One or two tables at the start, loaded; each quiet (at most a couple of rows per second) or busy (tens
/// to hundreds), with DML streams over the run; sometimes a table drop near the end.
fn tables(d: &Draw, c: &PlanCluster, g: &GenParams, steps: &mut Vec<Step>) -> Vec<TableInfo> {
    let mut tables = Vec::new();
    for i in 1..=d.between(1, 3) {
        let name = format!("t{i}");
        let parallelism = parallelism(d, c);
        let rows = d.pick(&[100, 1000, 3000, 10000]);
        steps.push(Step {
            at_ms: (i - 1) * 100,
            action: Action::CreateTable {
                name: name.clone(),
                parallelism,
                rows,
                pk_ks: false,
                rows_per_k: None,
                watermark_lag: None,
            },
        });
        let busy = d.chance(0.5);
        let (streams, rates) = if busy {
            (d.between(1, 4), &[20, 100, 300][..])
        } else {
            (d.between(0, 3), &[1, 2][..])
        };
        let mut dml_peak = 0;
        let mut rows_max = u64::from(rows);
        for _ in 0..streams {
            let rows_per_s = d.pick(rates);
            let duration_ms = d.between(2000, 20_000);
            dml_peak += rows_per_s;
            rows_max += u64::from(rows_per_s) * duration_ms / 1000;
            steps.push(Step {
                at_ms: d.between(1000, g.duration_ms.max(1001)),
                action: Action::Dml {
                    table: name.clone(),
                    rows_per_s,
                    duration_ms,
                    update_pct: d.between(0, 40) as u8,
                    delete_pct: d.between(0, 25) as u8,
                },
            });
        }
        if d.chance(0.1) {
            let at_ms = d.between(g.duration_ms * 9 / 10, g.duration_ms.max(1) + 1);
            steps.push(Step {
                at_ms,
                action: Action::Drop { name: name.clone() },
            });
        }
        tables.push(TableInfo {
            name,
            parallelism,
            dml_peak,
            rows_max,
        });
    }
    tables
}

/// A rate limit from `choices` that keeps up with the table (unlimited if none does).
fn rate_limit(d: &Draw, t: &TableInfo, parallelism: u32, choices: &[Option<u32>]) -> Option<u32> {
    let fitting: Vec<Option<u32>> = choices
        .iter()
        .copied()
        .filter(|r| t.keeps_up(*r, parallelism))
        .collect();
    if fitting.is_empty() {
        None
    } else {
        d.pick(&fitting)
    }
}

/// Views and sinks over the tables with arrangement backfill; many dropped while they backfill, some
/// throttled, and a kill opportunity shortly after some drops.
fn jobs(d: &Draw, c: &PlanCluster, g: &GenParams, tables: &[TableInfo], steps: &mut Vec<Step>) {
    let interval = c.barrier_interval_ms;
    for i in 1..=d.between(2, 7) {
        let at_ms = d.between(500, (g.duration_ms * 4 / 5).max(501));
        let table = &tables[d.between(0, tables.len() as u64) as usize];
        let parallelism = parallelism(d, c);
        let limits = [None, Some(1), Some(5), Some(50), Some(500)];
        let job = JobSpec {
            upstream: table.name.clone(),
            parallelism,
            rate_limit: rate_limit(d, table, parallelism, &limits),
            background: d.chance(g.background_ddl_rate),
            no_shuffle: false,
        };
        let (name, action) = if d.chance(0.5) {
            let name = format!("mv{i}");
            (name.clone(), Action::CreateMv { name, job })
        } else {
            let name = format!("sink{i}");
            let slow: Vec<u64> = [0, 10, 50, 100]
                .into_iter()
                .filter(|ms| *ms <= table.sink_ms_max())
                .collect();
            let action = Action::CreateSink {
                name: name.clone(),
                job,
                sink_ms_per_chunk: d.pick(&slow),
            };
            (name, action)
        };
        steps.push(Step { at_ms, action });
        if d.chance(0.3) {
            steps.push(Step {
                at_ms: at_ms + d.between(interval, 10 * interval),
                action: Action::Throttle {
                    name: name.clone(),
                    rate_limit: rate_limit(d, table, parallelism, &[None, Some(1), Some(100)]),
                },
            });
        }
        if !d.chance(0.6) {
            continue;
        }
        let drop_at = at_ms + d.between(interval, 20 * interval);
        steps.push(Step {
            at_ms: drop_at,
            action: Action::Drop { name },
        });
        if d.chance(0.5) {
            let kill_at = drop_at + d.between(0, 2 * interval);
            steps.extend(kill(d, c, g, kill_at));
        }
    }
}

/// A kill opportunity: with the kill rate, every node or each node with probability 0.5, restarted after
/// 0.2 to 5 s, or (one time in ten) after the heartbeat timeout.
fn kill(d: &Draw, c: &PlanCluster, g: &GenParams, at_ms: u64) -> Option<Step> {
    if !d.chance(g.kill_rate) {
        return None;
    }
    let all = d.chance(0.5);
    let nodes: Vec<u32> = (1..=c.compute_nodes)
        .filter(|_| all || d.chance(0.5))
        .collect();
    let restart_after_ms = if d.chance(0.1) {
        d.between(16_000, 40_000)
    } else {
        d.between(200, 5000)
    };
    (!nodes.is_empty()).then_some(Step {
        at_ms,
        action: Action::Kill {
            nodes,
            restart_after_ms,
        },
    })
}

/// A kill opportunity as [`kill`]'s, restarted within a second (recovery's attempts then back off briefly).
fn quick_kill(d: &Draw, c: &PlanCluster, g: &GenParams, at_ms: u64) -> Option<Step> {
    if !d.chance(g.kill_rate) {
        return None;
    }
    let all = d.chance(0.5);
    let nodes: Vec<u32> = (1..=c.compute_nodes)
        .filter(|_| all || d.chance(0.5))
        .collect();
    let restart_after_ms = d.between(200, 1000);
    (!nodes.is_empty()).then_some(Step {
        at_ms,
        action: Action::Kill {
            nodes,
            restart_after_ms,
        },
    })
}

/// In three plans in ten, a table `w1` with `WATERMARK FOR v AS v - lag` (append only), drawn after every other
/// step but meta kills, so that every earlier draw of a seed's plan is what it was before. It lives on two or more actors, is created empty
/// or with a few rows, and a slow insert stream starts soon after, whose first rows reach some of its actors
/// and not others; a kill opportunity follows within a few checkpoints (a restart while some vnodes have
/// stored a watermark and others none). Sometimes a busier stream later, and a view over it (its watermark
/// through the backfill).
fn watermark_tables(d: &Draw, c: &PlanCluster, g: &GenParams, steps: &mut Vec<Step>) {
    if !d.chance(0.3) {
        return;
    }
    let name = "w1".to_string();
    let created = d.between(0, g.duration_ms / 2);
    let table_parallelism = parallelism(d, c).max(2);
    steps.push(Step {
        at_ms: created,
        action: Action::CreateTable {
            name: name.clone(),
            parallelism: table_parallelism,
            rows: d.pick(&[0, 0, 1, 10, 100]),
            pk_ks: false,
            rows_per_k: None,
            watermark_lag: Some(d.pick(&[0, 100, 1000, 5000])),
        },
    });
    let inserts = |at_ms: u64, rows_per_s: u32, duration_ms: u64| Step {
        at_ms,
        action: Action::Dml {
            table: name.clone(),
            rows_per_s,
            duration_ms,
            update_pct: 0,
            delete_pct: 0,
        },
    };
    let first = created + d.between(500, 5000);
    steps.push(inserts(first, d.pick(&[1, 2, 5]), d.between(2000, 20_000)));
    let checkpoint_ms = c.barrier_interval_ms * u64::from(c.checkpoint_frequency);
    steps.extend(kill(
        d,
        c,
        g,
        first + d.between(0, 3 * checkpoint_ms + 1000),
    ));
    if d.chance(0.5) {
        let at_ms = first + d.between(5000, 30_000);
        steps.push(inserts(at_ms, d.pick(&[20, 100]), d.between(2000, 10_000)));
    }
    if d.chance(0.5) {
        let query = ViewQuery::Agg {
            upstream: name.clone(),
            group: Some(GroupKey {
                col: 1,
                modulus: None,
            }),
            arg: 0,
            eowc: true,
        };
        steps.push(Step {
            at_ms: created + d.between(1000, 20_000),
            action: Action::CreateView {
                name: "eowc_w1".into(),
                parallelism: parallelism(d, c),
                background: d.chance(g.background_ddl_rate),
                query,
            },
        });
    }
    if d.chance(0.5) {
        let job = JobSpec {
            upstream: name,
            parallelism: parallelism(d, c),
            rate_limit: None,
            background: d.chance(g.background_ddl_rate),
            no_shuffle: d.chance(0.3),
        };
        steps.push(Step {
            at_ms: created + d.between(1000, 20_000),
            action: Action::CreateMv {
                name: "mv_w1".into(),
                job,
            },
        });
    }
}

/// In half the plans with `w1`, a temporal join view of it (append only) with a table `tr1` of its own (a
/// thousand keys or so, two or four rows each: pk (k, s), distributed by k), on `w1.k`, inner or left; then
/// inserts into `w1` and busy updates and deletes of `tr1` at once, so that left rows look up keys one of
/// whose rows goes in their epoch (the others stay: the lookup's entry is cached); in most of
/// those plans a slow sink over `w1`, whose back-pressure delays `w1`'s rows to the join behind `tr1`'s
/// barrier of the same epoch (RisingWave #22476's window). Drawn after every other draw but meta kills (which
/// draw nothing at rate 0), so every earlier draw of a seed's plan is what it was.
fn temporal_joins(d: &Draw, c: &PlanCluster, g: &GenParams, steps: &mut Vec<Step>) {
    let w1 = steps.iter().find_map(|s| match &s.action {
        Action::CreateTable {
            name,
            watermark_lag: Some(_),
            ..
        } => Some((name.clone(), s.at_ms)),
        _ => None,
    });
    let Some((left, left_at)) = w1 else {
        return;
    };
    if !d.chance(0.5) {
        return;
    }
    let right = "tr1".to_string();
    let right_at = left_at + d.between(0, 2000);
    steps.push(Step {
        at_ms: right_at,
        action: Action::CreateTable {
            name: right.clone(),
            parallelism: parallelism(d, c),
            rows: d.pick(&[2000, 4000]),
            pk_ks: true,
            rows_per_k: Some(d.pick(&[2, 4])),
            watermark_lag: None,
        },
    });
    let at_ms = right_at + d.between(500, 5000);
    let query = ViewQuery::TemporalJoin {
        left: left.clone(),
        right: right.clone(),
        join: d.pick(&[ViewJoin::Inner, ViewJoin::LeftOuter]),
        left_col: 0,
    };
    steps.push(Step {
        at_ms,
        action: Action::CreateView {
            name: "tj_w1".into(),
            parallelism: parallelism(d, c),
            background: false,
            query,
        },
    });
    let dml_at = at_ms + d.between(500, 3000);
    let duration_ms = d.between(3000, 15_000);
    let dml = |table: &str, update_pct: u8, delete_pct: u8| Step {
        at_ms: dml_at,
        action: Action::Dml {
            table: table.to_string(),
            rows_per_s: 100,
            duration_ms,
            update_pct,
            delete_pct,
        },
    };
    steps.push(dml(&left, 0, 0));
    steps.push(dml(&right, 40, 30));
    if d.chance(0.7) {
        let job = JobSpec {
            upstream: left,
            parallelism: parallelism(d, c),
            rate_limit: None,
            background: d.chance(g.background_ddl_rate),
            no_shuffle: false,
        };
        steps.push(Step {
            at_ms: at_ms + d.between(0, 500),
            action: Action::CreateSink {
                name: "sink_w1".into(),
                job,
                sink_ms_per_chunk: d.pick(&[100, 200]),
            },
        });
    }
}

/// In some plans an over window view `ow1` over one of the tables of 3,000 rows at most (not the
/// watermark table, whose views are its own): partitioned by `k`'s remainder, some dozens of rows a
/// partition at most (a touched partition is recomputed whole; `v` starts at 0 for every row: a partition by it would be one), or by
/// `k` itself; ordered by `v` (whose updates move a row within its partition; ties by the pk) or `k`;
/// with the table's own DML running through it. Drawn after every other draw but meta kills (which draw nothing at rate 0), so every earlier draw of a seed's plan is what it was.
fn over_windows(d: &Draw, c: &PlanCluster, g: &GenParams, steps: &mut Vec<Step>) {
    let tables: Vec<(String, u64)> = steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::CreateTable {
                name,
                rows,
                watermark_lag: None,
                ..
            } if *rows <= 3000 => Some((name.clone(), s.at_ms)),
            _ => None,
        })
        .collect();
    if tables.is_empty() || !d.chance(0.4) {
        return;
    }
    let (upstream, table_at) = d.pick(&tables);
    let last_ms = (g.duration_ms * 4 / 5).max(table_at + 1001);
    let query = ViewQuery::OverWindow {
        upstream,
        partition: GroupKey {
            col: 0,
            modulus: d.pick(&[None, Some(100), Some(1000)]),
        },
        order: d.pick(&[0, 1]),
        arg: d.pick(&[0, 1]),
    };
    steps.push(Step {
        at_ms: d.between(table_at + 500, last_ms),
        action: Action::CreateView {
            name: "ow1".into(),
            parallelism: parallelism(d, c),
            background: d.chance(g.background_ddl_rate),
            query,
        },
    });
}

/// Opportunities from U(`first`) ms on, every U(`gap`) ms until the plan ends, each taken with probability
/// `rate` (its own draws made by `take`, right after the draw that took it); none and no draw at rate 0.
fn opportunities(
    d: &Draw,
    g: &GenParams,
    rate: f64,
    (first, gap): ((u64, u64), (u64, u64)),
    mut take: impl FnMut(u64) -> Action,
    steps: &mut Vec<Step>,
) {
    if rate <= 0.0 {
        return;
    }
    let mut at_ms = d.between(first.0, first.1);
    while at_ms < g.duration_ms {
        if d.chance(rate) {
            let action = take(at_ms);
            steps.push(Step { at_ms, action });
        }
        at_ms += d.between(gap.0, gap.1);
    }
}

/// Meta kill opportunities every 10 to 30 s, each taken with the meta kill rate; none drawn at rate 0.
fn meta_kills(d: &Draw, g: &GenParams, steps: &mut Vec<Step>) {
    let times = ((3000, 15_000), (10_000, 30_000));
    let kill = |_| {
        let mut restart_after_ms = d.between(0, 1000);
        if d.chance(0.1) {
            restart_after_ms += 20_000;
        }
        let node = (g.meta_nodes > 1).then(|| d.between(1, u64::from(g.meta_nodes) + 1) as u32);
        Action::KillMeta {
            restart_after_ms,
            node,
        }
    };
    opportunities(d, g, g.kill_meta_rate, times, kill, steps);
}

/// Crash point opportunities every 10 to 30 s, each taken with the crash rate, its point one the job API
/// reaches; none drawn at rate 0.
fn meta_crashes(d: &Draw, g: &GenParams, steps: &mut Vec<Step>) {
    let points: Vec<epochlab_meta::CrashPoint> = epochlab_meta::CrashPoint::ALL
        .into_iter()
        .filter(|p| p.reached_by_job_api())
        .collect();
    let times = ((3000, 15_000), (10_000, 30_000));
    let crash = |_| Action::CrashMeta {
        point: points[d.between(0, points.len() as u64) as usize],
    };
    opportunities(d, g, g.crash_meta_rate, times, crash, steps);
}

/// Meta outage opportunities every 20 to 40 s, each taken with the outage rate: the whole cluster but its
/// frontends down for U(0, 2 s), plus 20 s one time in ten; or, with several metas, half the time, the
/// leader's keep-alives unanswered for 6 to 15 s (it exits) or, one time in four, 1 to 4 s (it stays).
/// None drawn at rate 0.
fn meta_outages(d: &Draw, g: &GenParams, steps: &mut Vec<Step>) {
    let times = ((5000, 20_000), (20_000, 40_000));
    let outage = |_| {
        if g.meta_nodes > 1 && d.chance(0.5) {
            let duration_ms = match d.chance(0.25) {
                true => d.between(1000, 4000),
                false => d.between(6000, 15_000),
            };
            return Action::FailMetaKeepAlives { duration_ms };
        }
        let mut restart_after_ms = d.between(0, 2000);
        if d.chance(0.1) {
            restart_after_ms += 20_000;
        }
        Action::KillComputeNodesAndMeta { restart_after_ms }
    };
    opportunities(d, g, g.meta_outage_rate, times, outage, steps);
}

/// Kill opportunities every 5 to 15 s, and now and then a barrier latency spike, a slow reset or a failed
/// injection.
fn faults(d: &Draw, c: &PlanCluster, g: &GenParams, steps: &mut Vec<Step>) {
    let mut at_ms = d.between(3000, 15_000);
    while at_ms < g.duration_ms {
        steps.extend(kill(d, c, g, at_ms));
        at_ms += d.between(5000, 15_000);
    }
    let span = g.duration_ms.max(1001);
    if d.chance(0.3) {
        steps.push(Step {
            at_ms: d.between(1000, span),
            action: Action::RpcDelay {
                rpc: PlanRpc::BarrierComplete,
                min_ms: 200,
                max_ms: d.between(500, 3000),
                duration_ms: d.between(2000, 8000),
            },
        });
    }
    if d.chance(0.1) {
        steps.push(Step {
            at_ms: d.between(1000, span),
            action: Action::RpcDelay {
                rpc: PlanRpc::Reset,
                min_ms: 100,
                max_ms: d.between(200, 2000),
                duration_ms: d.between(5000, 20_000),
            },
        });
    }
    if d.chance(0.2) {
        let node = d
            .chance(0.5)
            .then(|| d.between(1, u64::from(c.compute_nodes) + 1) as u32);
        steps.push(Step {
            at_ms: d.between(1000, span),
            action: Action::RpcFail {
                rpc: PlanRpc::InjectBarrier,
                node,
                count: 1,
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_draws_one_valid_plan() {
        for seed in 0..200 {
            let plan = generate(seed, &GenParams::default());
            plan.validate()
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert_eq!(plan, generate(seed, &GenParams::default()));
        }
        assert_ne!(
            generate(1, &GenParams::default()),
            generate(2, &GenParams::default())
        );
    }

    /// Some plans have #19138's shape: a no-shuffle sink (over a table of two actors or more) and a node
    /// removed for good after its create; at most one removal per plan, never on a one-node cluster.
    #[test]
    fn some_plans_scale_in_a_no_shuffle_sink() {
        let (mut shaped, mut removals) = (0, 0);
        for seed in 0..200 {
            let plan = generate(seed, &GenParams::default());
            let sink_at = plan.steps.iter().find_map(|s| match &s.action {
                Action::CreateSink { job, .. } if job.no_shuffle => Some(s.at_ms),
                _ => None,
            });
            let removed: Vec<u64> = plan
                .steps
                .iter()
                .filter(|s| matches!(s.action, Action::RemoveNode { .. }))
                .map(|s| s.at_ms)
                .collect();
            assert!(removed.len() <= 1, "seed {seed}");
            if !removed.is_empty() {
                removals += 1;
                assert!(plan.cluster.compute_nodes >= 2, "seed {seed}");
                assert!(sink_at.is_some_and(|at| at < removed[0]), "seed {seed}");
            }
            shaped += usize::from(sink_at.is_some());
        }
        eprintln!("{shaped} plans of 200 with a no-shuffle sink, {removals} with a node removed");
        assert!(removals >= 10 && shaped > removals, "{shaped} {removals}");
    }

    /// Most plans create stateful views, some over earlier views (created after them); each reads only
    /// `BIGINT` columns of what it reads; a plan file of an older epochlab (no views) reads as it did.
    #[test]
    fn some_plans_create_stateful_views_some_over_views() {
        let (mut plans, mut views, mut over_views) = (0, 0, 0);
        for seed in 0..200 {
            let plan = generate(seed, &GenParams::default());
            let mut created = std::collections::BTreeMap::new();
            for s in &plan.steps {
                let Action::CreateView { name, query, .. } = &s.action else {
                    continue;
                };
                views += 1;
                for up in query.upstreams() {
                    if let Some(at) = created.get(up) {
                        over_views += 1;
                        assert!(*at < s.at_ms, "seed {seed}: {name} over {up}");
                    } else {
                        assert!(up.starts_with('t') || up == "w1", "seed {seed}: {up}");
                    }
                }
                created.insert(name.clone(), s.at_ms);
            }
            plans += usize::from(!created.is_empty());
        }
        assert!(plans > 100 && plans < 200, "{plans} of 200 plans");
        assert!(
            over_views > 20 && over_views < views,
            "{over_views} of {views}"
        );
        let old = r#"{"op": "create_mv", "name": "mv1", "job": {"upstream": "t1", "parallelism": 1,
            "rate_limit": null, "background": false}}"#;
        assert!(matches!(
            serde_json::from_str::<Action>(old).unwrap(),
            Action::CreateMv { .. }
        ));
    }

    #[test]
    fn no_kill_rate_no_kills() {
        let g = GenParams {
            kill_rate: 0.0,
            ..GenParams::default()
        };
        for seed in 0..100 {
            let plan = generate(seed, &g);
            assert!(
                !plan
                    .steps
                    .iter()
                    .any(|s| matches!(s.action, Action::Kill { .. }))
            );
        }
    }

    /// The default mix without its meta faults, on one meta: the plans of before issue 56's flip.
    fn without_meta_faults() -> GenParams {
        GenParams {
            kill_meta_rate: 0.0,
            crash_meta_rate: 0.0,
            meta_outage_rate: 0.0,
            meta_nodes: 1,
            ..GenParams::default()
        }
    }

    /// The default mix has every meta fault, on three metas.
    #[test]
    fn the_default_mix_has_meta_faults_on_three_metas() {
        let g = GenParams::default();
        assert_eq!(g.meta_nodes, 3);
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 0..50 {
            for s in generate(seed, &g).steps {
                match s.action {
                    Action::KillMeta { .. } => kinds.insert("kill"),
                    Action::CrashMeta { .. } => kinds.insert("crash"),
                    Action::KillComputeNodesAndMeta { .. } => kinds.insert("outage"),
                    Action::FailMetaKeepAlives { .. } => kinds.insert("keep-alive"),
                    _ => false,
                };
            }
        }
        assert_eq!(kinds.len(), 4, "{kinds:?}");
    }

    /// Meta kills are drawn after every other step: with them, each seed's plan is the plan without them,
    /// plus its meta kills; without them, none.
    #[test]
    fn meta_kills_leave_the_rest_of_the_plan_as_it_was() {
        let g = without_meta_faults();
        let with = GenParams {
            kill_meta_rate: 1.0,
            ..without_meta_faults()
        };
        let is_meta_kill = |s: &Step| matches!(s.action, Action::KillMeta { .. });
        let mut kills = 0;
        for seed in 0..100 {
            let (a, mut b) = (generate(seed, &g), generate(seed, &with));
            assert!(!a.steps.iter().any(is_meta_kill));
            kills += b.steps.iter().filter(|s| is_meta_kill(s)).count();
            b.steps.retain(|s| !is_meta_kill(s));
            assert_eq!(a, b, "seed {seed}");
        }
        assert!(kills >= 100, "{kills} meta kills in 100 plans at rate 1");
    }

    /// Several metas: every plan has them, each meta kill names one (every one of them in some plan), the plan
    /// validates, and its file keeps the count; one meta's plan file has no `meta_nodes` and kills none by name.
    #[test]
    fn meta_kills_over_several_metas_name_one_each() {
        let three = GenParams {
            kill_meta_rate: 1.0,
            meta_nodes: 3,
            ..without_meta_faults()
        };
        let mut named = std::collections::BTreeSet::new();
        for seed in 0..50 {
            let plan = generate(seed, &three);
            plan.validate().unwrap();
            assert_eq!(plan.cluster.meta_nodes, 3);
            for s in &plan.steps {
                if let Action::KillMeta { node, .. } = s.action {
                    named.insert(node.expect("named"));
                }
            }
            let json = serde_json::to_string(&plan).unwrap();
            assert!(json.contains("\"meta_nodes\":3"), "{json}");
        }
        assert_eq!(named.into_iter().collect::<Vec<_>>(), [1, 2, 3]);
        let one = generate(
            7,
            &GenParams {
                kill_meta_rate: 1.0,
                ..without_meta_faults()
            },
        );
        let json = serde_json::to_string(&one).unwrap();
        assert!(
            !json.contains("meta_nodes") && !json.contains("\"node\""),
            "{json}"
        );
        let mut bad = one.clone();
        bad.cluster.meta_nodes = 2;
        assert!(bad.validate().is_err(), "a kill naming no meta of two");
    }

    /// Crash points are drawn after meta kills: with them, each seed's plan is the plan without them, plus
    /// its crash steps, each at a point the job API reaches; every point of those is drawn.
    #[test]
    fn crash_points_leave_the_rest_of_the_plan_as_it_was() {
        let g = without_meta_faults();
        let with = GenParams {
            crash_meta_rate: 1.0,
            ..without_meta_faults()
        };
        let mut points = std::collections::BTreeSet::new();
        for seed in 0..100 {
            let (a, mut b) = (generate(seed, &g), generate(seed, &with));
            b.validate().unwrap();
            for s in &b.steps {
                if let Action::CrashMeta { point } = s.action {
                    assert!(point.reached_by_job_api(), "{point}");
                    points.insert(point);
                }
            }
            b.steps
                .retain(|s| !matches!(s.action, Action::CrashMeta { .. }));
            assert_eq!(a, b, "seed {seed}");
        }
        assert_eq!(points.len(), 6, "{points:?}");
    }

    /// Meta outages are drawn after crash points: with them, each seed's plan is the plan without them, plus
    /// its outage steps; one meta draws whole-cluster outages only, three draw keep-alive timeouts too.
    #[test]
    fn meta_outages_leave_the_rest_of_the_plan_as_it_was() {
        let is_outage = |a: &Action| {
            matches!(
                a,
                Action::KillComputeNodesAndMeta { .. } | Action::FailMetaKeepAlives { .. }
            )
        };
        for meta_nodes in [1, 3] {
            let g = GenParams {
                meta_nodes,
                ..without_meta_faults()
            };
            let with = GenParams {
                meta_outage_rate: 1.0,
                ..g.clone()
            };
            let (mut whole, mut keep_alives) = (0, 0);
            for seed in 0..100 {
                let (a, mut b) = (generate(seed, &g), generate(seed, &with));
                b.validate().unwrap();
                for s in &b.steps {
                    match s.action {
                        Action::KillComputeNodesAndMeta { .. } => whole += 1,
                        Action::FailMetaKeepAlives { .. } => keep_alives += 1,
                        _ => {}
                    }
                }
                b.steps.retain(|s| !is_outage(&s.action));
                assert_eq!(a, b, "seed {seed}");
            }
            assert!(whole > 50, "{meta_nodes} metas: {whole}");
            assert_eq!(keep_alives > 50, meta_nodes == 3, "{keep_alives}");
        }
    }

    /// Some plans draw an over window view, over a table created before it; its plan validates.
    #[test]
    fn some_plans_draw_an_over_window_view_over_a_table() {
        let mut drawn = 0;
        for seed in 0..200 {
            let plan = generate(seed, &GenParams::default());
            plan.validate().unwrap();
            let created = |name: &str, before: u64| {
                plan.steps.iter().any(|s| {
                    matches!(&s.action, Action::CreateTable { name: n, .. } if n == name)
                        && s.at_ms < before
                })
            };
            for s in &plan.steps {
                if let Action::CreateView {
                    query: ViewQuery::OverWindow { upstream, .. },
                    ..
                } = &s.action
                {
                    assert!(created(upstream, s.at_ms), "seed {seed}");
                    drawn += 1;
                }
            }
        }
        assert!((30..=90).contains(&drawn), "{drawn} of 200");
    }

    /// About three plans in ten have the watermark table: on two actors or more, its DML inserts only, an
    /// emit-on-window-close view over it in some; a plan file without `watermark_lag` reads as no watermark.
    #[test]
    fn some_plans_have_a_table_with_a_watermark_and_only_insert_into_it() {
        let (mut tables, mut eowc) = (0, 0);
        for seed in 0..200 {
            for s in generate(seed, &GenParams::default()).steps {
                match s.action {
                    Action::CreateTable {
                        watermark_lag: Some(_),
                        parallelism,
                        name,
                        ..
                    } => {
                        assert!(parallelism >= 2 && name == "w1", "seed {seed}");
                        tables += 1;
                    }
                    Action::Dml {
                        table,
                        update_pct,
                        delete_pct,
                        ..
                    } if table == "w1" => assert_eq!((update_pct, delete_pct), (0, 0)),
                    Action::CreateView { query, .. } if query.upstreams() == ["w1"] => {
                        assert!(matches!(query, ViewQuery::Agg { eowc: true, .. }));
                        eowc += 1;
                    }
                    Action::CreateView {
                        query: ViewQuery::TemporalJoin { left, right, .. },
                        ..
                    } => {
                        assert_eq!(
                            (left.as_str(), right.as_str()),
                            ("w1", "tr1"),
                            "seed {seed}"
                        );
                    }
                    _ => {}
                }
            }
        }
        assert!((30..=90).contains(&tables), "{tables} of 200 plans");
        assert!(eowc > 10 && eowc < tables, "{eowc} of {tables}");
        let old = r#"{"op": "create_table", "name": "t1", "parallelism": 1, "rows": 5}"#;
        let parsed = serde_json::from_str::<Action>(old).unwrap();
        assert!(matches!(
            parsed,
            Action::CreateTable {
                watermark_lag: None,
                ..
            }
        ));
    }

    #[test]
    fn a_plan_round_trips_through_json() {
        let plan = generate(7, &GenParams::default());
        let text = serde_json::to_string_pretty(&plan).unwrap();
        assert_eq!(serde_json::from_str::<Plan>(&text).unwrap(), plan);
    }

    /// About one table in three is distributed by a strict subset of its pk; a plan file without the field
    /// reads as pk (k), and a pk (k) table writes none.
    #[test]
    fn some_tables_are_distributed_by_a_strict_subset_of_the_pk() {
        let (mut subset, mut whole) = (0, 0);
        for seed in 0..200 {
            for step in generate(seed, &GenParams::default()).steps {
                if let Action::CreateTable { pk_ks, .. } = step.action {
                    if pk_ks { subset += 1 } else { whole += 1 }
                }
            }
        }
        assert!(
            subset > 0 && whole > subset,
            "{subset} of {}",
            subset + whole
        );
        let old = r#"{"op": "create_table", "name": "t1", "parallelism": 2, "rows": 10}"#;
        let action: Action = serde_json::from_str(old).unwrap();
        assert!(matches!(action, Action::CreateTable { pk_ks: false, .. }));
        assert!(!serde_json::to_string(&action).unwrap().contains("pk_ks"));
        let table = |json: &str| {
            let steps = vec![Step {
                at_ms: 0,
                action: serde_json::from_str(json).unwrap(),
            }];
            let plan = Plan {
                steps,
                ..generate(0, &GenParams::default())
            };
            plan.validate()
        };
        let several = r#"{"op": "create_table", "name": "t", "parallelism": 2, "rows": 10, "pk_ks": true, "rows_per_k": 4}"#;
        assert_eq!(table(several), Ok(()));
        let without_ks =
            r#"{"op": "create_table", "name": "t", "parallelism": 2, "rows": 10, "rows_per_k": 4}"#;
        assert!(table(without_ks).is_err());
    }

    /// About half the plans use static compaction groups, and some cancel background jobs, a good part of
    /// them right after a kill; a plan file without the field reads as a group per job, and writes none.
    #[test]
    fn some_plans_share_static_groups_and_cancel_creating_jobs() {
        let (mut static_groups, mut cancels, mut after_kill) = (0, 0, 0);
        for seed in 0..200 {
            let plan = generate(seed, &GenParams::default());
            static_groups += usize::from(plan.cluster.static_groups);
            let kills: Vec<u64> = plan
                .steps
                .iter()
                .filter(|s| matches!(s.action, Action::Kill { .. }))
                .map(|s| s.at_ms + s.action.lasts_ms())
                .collect();
            for s in &plan.steps {
                if matches!(s.action, Action::Cancel { .. }) {
                    cancels += 1;
                    let soon = |back: &u64| s.at_ms >= *back && s.at_ms - back <= 2000;
                    after_kill += usize::from(kills.iter().any(soon));
                }
            }
        }
        assert!((60..140).contains(&static_groups), "{static_groups} of 200");
        assert!(
            cancels >= 50 && after_kill * 2 >= cancels,
            "{after_kill} of {cancels}"
        );
        let old = r#"{"compute_nodes": 1, "vnodes": 16, "barrier_interval_ms": 100,
            "checkpoint_frequency": 1, "persist_check": true}"#;
        let cluster: PlanCluster = serde_json::from_str(old).unwrap();
        assert!(!cluster.static_groups);
        assert!(
            !serde_json::to_string(&cluster)
                .unwrap()
                .contains("static_groups")
        );
    }

    /// About half the jobs of two actors or more are rescheduled, each soon after its creation.
    #[test]
    fn some_jobs_are_rescheduled_soon_after_their_creation() {
        let (mut rescheduled, mut jobs) = (0, 0);
        for seed in 0..200 {
            let plan = generate(seed, &GenParams::default());
            for step in &plan.steps {
                match &step.action {
                    Action::CreateMv { job, .. } | Action::CreateSink { job, .. }
                        if job.parallelism >= 2 =>
                    {
                        jobs += 1
                    }
                    Action::Reschedule { name, rotate } => {
                        rescheduled += 1;
                        assert!(*rotate >= 1 && *rotate < plan.cluster.vnodes);
                        let created = plan.steps.iter().find(|s| match &s.action {
                            Action::CreateMv { name: n, .. }
                            | Action::CreateSink { name: n, .. } => n == name,
                            _ => false,
                        });
                        let created = created.expect("a rescheduled job is created").at_ms;
                        let interval = plan.cluster.barrier_interval_ms;
                        assert!(step.at_ms >= created + interval);
                        assert!(step.at_ms < created + 10 * interval);
                    }
                    _ => {}
                }
            }
        }
        assert!(
            rescheduled > jobs / 4 && rescheduled < jobs * 3 / 4,
            "{rescheduled} of {jobs}"
        );
    }
}
