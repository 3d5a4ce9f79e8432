//! Shrinking a failing plan: remove steps (halves, quarters, ... single steps) and shorten what remains
//! (fewer killed nodes, shorter restarts and delays, fewer rows, slower DML) while a run still fails with the
//! same signature. Candidates are tried in a fixed order, `jobs` at a time, and the first that keeps the
//! signature wins, so a shrink is as deterministic as a run.

use super::plan::{Action, Plan, ViewJoin, ViewQuery};
use super::runner::run_plan;
use crate::bugs::BugMode;
use crate::repro::ReproHooks;

/// What a shrink found.
#[derive(Clone, Debug)]
pub struct ShrinkOutcome {
    /// The smallest plan found that fails with `signature`.
    pub plan: Plan,
    pub signature: String,
    pub steps_before: usize,
    /// Plan runs it took (the first, of the original plan, included).
    pub runs: u32,
}

/// Shrink `plan`, which must fail in `mode`; `None` when it does not fail. At most `max_runs` runs.
/// `progress` hears each accepted step.
pub fn shrink(
    plan: &Plan,
    mode: BugMode,
    jobs: usize,
    max_runs: u32,
    mut progress: impl FnMut(&Plan),
) -> Option<ShrinkOutcome> {
    let signature = run_plan(plan, mode, ReproHooks::default())
        .value
        .signature()?;
    let mut best = plan.clone();
    let mut runs = 1u32;
    'outer: while runs < max_runs {
        let candidates = candidates(&best);
        for batch in candidates.chunks(jobs.max(1)) {
            if runs >= max_runs {
                break 'outer;
            }
            let batch = &batch[..batch.len().min((max_runs - runs) as usize)];
            runs += batch.len() as u32;
            let kept = first_keeping(batch, mode, &signature);
            if let Some(i) = kept {
                best = batch[i].clone();
                progress(&best);
                continue 'outer;
            }
        }
        break;
    }
    Some(ShrinkOutcome {
        plan: best,
        signature,
        steps_before: plan.steps.len(),
        runs,
    })
}

/// The index of the first candidate whose run fails with `signature`; the batch runs on its own threads.
fn first_keeping(batch: &[Plan], mode: BugMode, signature: &str) -> Option<usize> {
    let signatures: Vec<Option<String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = batch
            .iter()
            .map(|p| {
                scope.spawn(move || run_plan(p, mode, ReproHooks::default()).value.signature())
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(None))
            .collect()
    });
    signatures
        .iter()
        .position(|s| s.as_deref() == Some(signature))
}

/// Smaller plans, most reducing first: without a chunk of steps, then with one step simplified.
fn candidates(plan: &Plan) -> Vec<Plan> {
    let n = plan.steps.len();
    let mut out = Vec::new();
    let mut chunk = n.div_ceil(2).max(1);
    loop {
        for start in (0..n).step_by(chunk) {
            let mut p = plan.clone();
            p.steps.drain(start..(start + chunk).min(n));
            out.push(p);
        }
        if chunk == 1 {
            break;
        }
        chunk = chunk.div_ceil(2);
    }
    for i in 0..n {
        for action in simpler(&plan.steps[i].action) {
            let mut p = plan.clone();
            p.steps[i].action = action;
            out.push(p);
        }
    }
    out
}

/// Simpler versions of one step.
fn simpler(action: &Action) -> Vec<Action> {
    let mut out = Vec::new();
    match action {
        Action::Kill { .. } => out.extend(simpler_kill(action)),
        Action::KillMeta {
            restart_after_ms,
            node,
        } => out.extend(half(*restart_after_ms, 100).map(|r| Action::KillMeta {
            restart_after_ms: r,
            node: *node,
        })),
        Action::CreateTable {
            name,
            parallelism,
            rows,
            pk_ks,
            rows_per_k,
            watermark_lag,
        } => out.extend(half(u64::from(*rows), 1).map(|r| Action::CreateTable {
            name: name.clone(),
            parallelism: *parallelism,
            rows: r as u32,
            pk_ks: *pk_ks,
            rows_per_k: *rows_per_k,
            watermark_lag: *watermark_lag,
        })),
        Action::Dml { .. } => out.extend(simpler_dml(action)),
        Action::RpcDelay {
            rpc,
            min_ms,
            max_ms,
            duration_ms,
        } => out.extend(half(*duration_ms, 100).map(|d| Action::RpcDelay {
            rpc: *rpc,
            min_ms: *min_ms,
            max_ms: *max_ms,
            duration_ms: d,
        })),
        Action::CreateView { .. } => out.extend(simpler_view(action)),
        Action::KillComputeNodesAndMeta { restart_after_ms } => {
            out.extend(
                half(*restart_after_ms, 100).map(|r| Action::KillComputeNodesAndMeta {
                    restart_after_ms: r,
                }),
            );
        }
        Action::FailMetaKeepAlives { duration_ms } => out.extend(
            half(*duration_ms, 5_000).map(|d| Action::FailMetaKeepAlives { duration_ms: d }),
        ),
        // Nothing to shorten: each is kept or removed whole.
        Action::CreateMv { .. }
        | Action::CreateSink { .. }
        | Action::Drop { .. }
        | Action::Cancel { .. }
        | Action::Throttle { .. }
        | Action::Reschedule { .. }
        | Action::Flush
        | Action::RemoveNode { .. }
        | Action::CrashMeta { .. }
        | Action::RpcFail { .. } => {}
    }
    out
}

/// Half of `v`, at least `min`; `None` when `v` is `min` or less already.
fn half(v: u64, min: u64) -> Option<u64> {
    (v > min).then(|| (v / 2).max(min))
}

/// A kill of each node fewer (of the first 8), then one restarting twice as soon.
fn simpler_kill(action: &Action) -> Vec<Action> {
    let Action::Kill {
        nodes,
        restart_after_ms,
    } = action
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for i in 0..nodes.len().min(8) {
        if nodes.len() > 1 {
            let mut fewer = nodes.clone();
            fewer.remove(i);
            out.push(Action::Kill {
                nodes: fewer,
                restart_after_ms: *restart_after_ms,
            });
        }
    }
    out.extend(half(*restart_after_ms, 100).map(|r| Action::Kill {
        nodes: nodes.clone(),
        restart_after_ms: r,
    }));
    out
}

/// A view of parallelism 1, in the foreground, then over a simpler query.
fn simpler_view(action: &Action) -> Vec<Action> {
    let Action::CreateView {
        name,
        parallelism,
        background,
        query,
    } = action
    else {
        return Vec::new();
    };
    let with = |parallelism: u32, background: bool, query: ViewQuery| Action::CreateView {
        name: name.clone(),
        parallelism,
        background,
        query,
    };
    let mut out = Vec::new();
    if *parallelism > 1 {
        out.push(with(1, *background, query.clone()));
    }
    if *background {
        out.push(with(*parallelism, false, query.clone()));
    }
    out.extend(simpler_query(query).map(|q| with(*parallelism, *background, q)));
    out
}

/// A simpler query of the same upstreams: an inner join for a left one (temporal or not), a top-N of fewer
/// rows.
fn simpler_query(query: &ViewQuery) -> Option<ViewQuery> {
    match query {
        ViewQuery::Join {
            left,
            right,
            join: ViewJoin::LeftOuter,
            left_col,
            right_col,
        } => Some(ViewQuery::Join {
            left: left.clone(),
            right: right.clone(),
            join: ViewJoin::Inner,
            left_col: *left_col,
            right_col: *right_col,
        }),
        ViewQuery::TopN {
            upstream,
            col,
            desc,
            limit,
            offset,
        } if *limit > 1 || *offset > 0 => Some(ViewQuery::TopN {
            upstream: upstream.clone(),
            col: *col,
            desc: *desc,
            limit: (*limit / 2).max(1),
            offset: *offset / 2,
        }),
        ViewQuery::TemporalJoin {
            left,
            right,
            join: ViewJoin::LeftOuter,
            left_col,
        } => Some(ViewQuery::TemporalJoin {
            left: left.clone(),
            right: right.clone(),
            join: ViewJoin::Inner,
            left_col: *left_col,
        }),
        ViewQuery::Agg { .. }
        | ViewQuery::Join { .. }
        | ViewQuery::TemporalJoin { .. }
        | ViewQuery::TopN { .. }
        | ViewQuery::OverWindow { .. } => None,
    }
}

fn simpler_dml(action: &Action) -> Vec<Action> {
    let Action::Dml {
        table,
        rows_per_s,
        duration_ms,
        update_pct,
        delete_pct,
    } = action
    else {
        return Vec::new();
    };
    let with = |rows_per_s: u32, duration_ms: u64, update_pct: u8, delete_pct: u8| Action::Dml {
        table: table.clone(),
        rows_per_s,
        duration_ms,
        update_pct,
        delete_pct,
    };
    let mut out = Vec::new();
    if *duration_ms > 200 {
        out.push(with(*rows_per_s, duration_ms / 2, *update_pct, *delete_pct));
    }
    if *rows_per_s > 1 {
        out.push(with(rows_per_s / 2, *duration_ms, *update_pct, *delete_pct));
    }
    if *update_pct + *delete_pct > 0 {
        out.push(with(*rows_per_s, *duration_ms, 0, 0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{GenParams, generate};

    #[test]
    fn candidates_are_smaller_valid_plans() {
        let plan = generate(3, &GenParams::default());
        for c in candidates(&plan) {
            c.validate().unwrap();
            assert!(c.steps.len() <= plan.steps.len());
            assert_ne!(c, plan);
        }
    }
}
