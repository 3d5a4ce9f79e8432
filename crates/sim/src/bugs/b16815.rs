//! RisingWave #16815: the arrangement backfill marks each upstream chunk row by row (`mark_chunk_ref_by_vnode`):
//! a row is forwarded iff its vnode's snapshot has already passed it. Before the fix the vnode was computed by
//! hashing the row's **pk**, while the upstream table distributes rows by its **distribution key**. With a
//! distribution key that is a strict subset of the pk, the computed vnode is often not one the actor owns
//! ("Backfill progress for vnode VirtualNode(V) not found"), and when it is owned the row is judged by the wrong vnode's
//! position: updates are dropped or applied twice. Its toggle is [`BackfillVnode`]
//! (declared in the arrangement backfill, read by stream's `build.rs` for `mark_chunk_ref_by_vnode`); its directed
//! scenario is [`scenario`], after RisingWave's `e2e_test/backfill/sink/different_pk_and_dist_key.slt`.
//!
//! The scenario: a table with pk (a, b) distributed by a, loaded; a rate-limited view over it, created in the
//! background with two backfill actors, while DML keeps updating the table, so that upstream chunks reach the
//! backfill mid-snapshot. Buggy: the backfill fails with the vnode-not-found error (or the view differs from its
//! query: the oracle). Fixed: the view equals its query.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use epochlab_common::Toggles;
use epochlab_common::{DataType, Op, OwnedRow, TableId, row};
use epochlab_meta::{JobOptions, JobState};
use epochlab_stream::executor::backfill::arrangement_backfill::BackfillVnode;
use futures::future::LocalBoxFuture;

use super::record::{Evidence, Record, Symptom, SymptomKind};
use super::{BugId, BugInfo, Mode, Origin, ScenarioError, ScenarioRun, Setting};
use crate::config::cluster_config_for;
use crate::report::ReproReport;
use crate::repro::{ClusterHook, ReproParams};
use crate::runtime::SimContext;

pub const INFO: BugInfo = BugInfo {
    id: BugId::Rw16815,
    name: "16815",
    origin: Origin::RisingWave,
    mechanism: "arrangement backfill computes an upstream row's vnode from its pk, not the table's distribution \
                key: the vnode is not the actor's (`Backfill progress for vnode VirtualNode(..) not found, \
                backfill_state not initialized properly`) or the wrong one (rows dropped or doubled)",
    fix: "compute the vnode as the upstream table distributes rows (`compute_vnode_by_pk` through its \
          distribution)",
    links: &["https://github.com/risingwavelabs/risingwave/pull/16815"],
    modes: &[Mode::Buggy, Mode::Fixed],
    command: "cargo xtask repro --bug 16815",
    settings: &[Setting::Parallelism, Setting::PersistCheck],
    timeline: "the table, the view's backfill, its progress, the failure",
    record: &RECORD,
    toggles,
    scenario: start,
};

const RECORD: Record = Record {
    refs: "PR #16815 (2024-05-20, \"arrangement backfill should use dist key instead of pk to derive vnode\"); \
           found by e2e_test/backfill/sink/different_pk_and_dist_key.slt; no issue",
    symptom: Symptom {
        kind: SymptomKind::ActorError,
        text: "Backfill progress for vnode VirtualNode(196) not found, backfill_state not initialized properly \
               (`bail!` with `{:#?}`: the vnode spans three lines)",
        pattern: "Backfill progress for vnode VirtualNode(N) not found, backfill_state not initialized properly",
        epochlab_pattern: "",
        panic_file: "",
        evidence: Evidence::Text,
    },
    site: "stream: executor/backfill/utils.rs, `BackfillState::get_progress`, reached from \
           `mark_chunk_ref_by_vnode` with a vnode computed from the pk, in the arrangement backfill",
    differs: "a typed error whose vnode prints on one line; a dist key that is a prefix of the pk; a wrong vnode \
              that the actor owns shows as wrong results, caught by the view's write check or the oracle, which \
              RisingWave's CI had no equivalent of",
};

/// The engine's toggles of a run in `mode`: [`backfill_vnode`]'s, the others fixed.
fn toggles(mode: Mode) -> Toggles {
    Toggles::default().with(backfill_vnode(mode))
}

fn start(run: ScenarioRun) -> LocalBoxFuture<'static, ReproReport> {
    Box::pin(scenario(run.ctx, run.params, run.hook))
}

/// How the arrangement backfill derives an upstream row's vnode in `mode`.
pub(crate) fn backfill_vnode(mode: Mode) -> BackfillVnode {
    match mode {
        Mode::Buggy => BackfillVnode::Pk,
        _ => BackfillVnode::DistKey,
    }
}

/// Distinct values of `a` (the distribution key) and of `b` per `a`.
const KEYS_A: i64 = 32;
const KEYS_B: i64 = 4;
/// Snapshot rows per second per backfill actor: the backfill spans several barriers.
const RATE_LIMIT: u32 = 8;
/// Budgets of the phases (virtual time).
const UPDATE_ROUNDS: u32 = 100;
const CREATE_BUDGET: Duration = Duration::from_secs(60);

struct Setup {
    scene: super::Scene,
    table: TableId,
    view: TableId,
}

impl AsRef<super::Scene> for Setup {
    fn as_ref(&self) -> &super::Scene {
        &self.scene
    }
}

/// The directed scenario of #16815.
pub(crate) async fn scenario(
    ctx: SimContext,
    p: ReproParams,
    hook: Option<ClusterHook>,
) -> ReproReport {
    let setup = async |t| setup(&ctx, t, &p, hook).await;
    super::directed(
        &ctx,
        &p,
        String::new(),
        setup,
        update_while_backfilling,
        |s, (), report| verdict(s, &p, report),
    )
    .await
}

fn table_row(a: i64, b: i64, v: i64) -> OwnedRow {
    row![a, b, v]
}

/// One node; table t (a, b, v) with pk (a, b) distributed by a, loaded; view m over it created in the
/// background, rate-limited, on `--parallelism` actors (two by default). With one actor every vnode is its
/// own, so the buggy vnode never goes missing and a row is judged by the wrong vnode's position instead:
/// the view's state-table check (`--persist-check on`) or the oracle (`off`) sees the wrong result.
async fn setup(
    ctx: &SimContext,
    t: Toggles,
    p: &ReproParams,
    hook: Option<ClusterHook>,
) -> Result<Setup, ScenarioError> {
    let mut config = cluster_config_for(t, 16, 1000, 1, p.persist_check);
    config.meta_nodes = p.meta_nodes;
    let (cluster, checkers) = super::start_cluster(ctx, config, t, hook).await;
    let meta = &cluster.meta();
    let types = vec![DataType::Int64, DataType::Int64, DataType::Int64];
    let table = meta
        .create_table_distributed("t", types, vec![0, 1], vec![0], 2)
        .await;
    let table = table.map_err(ScenarioError::ddl("create table"))?;
    let rows = (0..KEYS_A)
        .flat_map(|a| (0..KEYS_B).map(move |b| (Op::Insert, table_row(a, b, 0))))
        .collect();
    cluster.dml(table, rows).await?;
    meta.flush().await.map_err(ScenarioError::ddl("flush"))?;
    let job = JobOptions {
        parallelism: p.parallelism,
        rate_limit: Some(RATE_LIMIT),
        background: true,
        scan_type: epochlab_meta::StreamScanType::ArrangementBackfill,
    };
    let view = meta.create_materialized_view("m", table, job).await;
    let view = view.map_err(ScenarioError::ddl("create view"))?;
    Ok(Setup {
        scene: super::Scene {
            ctx: ctx.clone(),
            cluster,
            checkers,
        },
        table,
        view,
    })
}

fn creating(s: &Setup) -> bool {
    s.scene
        .cluster
        .meta()
        .relation(s.view)
        .is_some_and(|r| r.state == JobState::Creating)
}

fn failed(s: &Setup) -> bool {
    s.scene.cluster.failures.first_state_error().is_some()
}

/// Update random rows every 100 ms while the backfill runs, then wait for the view to be created (or for the
/// backfill to fail) and for a checkpoint after it.
async fn update_while_backfilling(s: &Setup) -> Result<(), ScenarioError> {
    let rng = &s.scene.ctx.rng;
    // The value each row holds: an update deletes that version and inserts the next.
    let mut model: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for round in 1..=UPDATE_ROUNDS as i64 {
        if !creating(s) || failed(s) {
            break;
        }
        let mut rows = Vec::new();
        let mut keys = BTreeSet::new();
        for _ in 0..3 {
            keys.insert((
                rng.range_u64(0..KEYS_A as u64) as i64,
                rng.range_u64(0..KEYS_B as u64) as i64,
            ));
        }
        for (a, b) in keys {
            let old = model.insert((a, b), round).unwrap_or(0);
            rows.push((Op::UpdateDelete, table_row(a, b, old)));
            rows.push((Op::UpdateInsert, table_row(a, b, round)));
        }
        s.scene.cluster.dml(s.table, rows).await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    super::await_created(&s.scene.cluster, s.view, CREATE_BUDGET).await
}

fn verdict(s: &Setup, p: &ReproParams, report: ReproReport) -> ReproReport {
    let mut report = super::counted(report, &s.scene.cluster);
    let failure = s.scene.cluster.failures.first_state_error();
    if failure.is_none() {
        // A failed backfill leaves the view unfinished: the oracle judges only a created view.
        s.scene.checkers.check_end(&s.scene.cluster);
        super::check_view(&s.scene.cluster, &s.scene.checkers, s.table, s.view);
    }
    report.violations = s.scene.checkers.violations();
    report.timeline = timeline(&s.scene.ctx.log.lines());
    if super::failed(&mut report, failure) {
        return report;
    }
    if p.mode == Mode::Buggy {
        return report.not_reproducible(
            "every upstream row's pk vnode happened to judge it as its distribution-key vnode would".into(),
        );
    } else {
        report.notes.push(
            "every upstream row was judged by its distribution-key vnode; view m equals its query"
                .into(),
        );
    }
    report
}

/// The story of the backfill: from the table's creation, the DDL, the backfill's persists and the failure.
fn timeline(lines: &[String]) -> Vec<String> {
    let from = lines
        .iter()
        .position(|l| l.contains(" ddl: create table t "))
        .unwrap_or(0);
    let keep = [
        " scenario: ",
        " ddl: ",
        " persist backfill state: ",
        " actor failure: ",
    ];
    let mut out: Vec<String> = lines[from..]
        .iter()
        .filter(|l| keep.iter().any(|k| l.contains(k)))
        .cloned()
        .collect();
    if let Some(i) = out.iter().position(|l| l.contains(" actor failure: ")) {
        out.truncate(i + 1);
    }
    let from = out.len().saturating_sub(40);
    out.split_off(from)
}
