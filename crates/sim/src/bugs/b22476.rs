//! RisingWave #22476: a temporal join looked its right table up at the barrier's current epoch, not the previous
//! one (#22935 read `prev`). A lookup made after the table's writers had sealed the running epoch, while the
//! join still took left rows of that epoch (its left input's barrier not yet in), saw that epoch's changes;
//! the same changes came to its cache again from the right input at the next barrier, and a delete found its
//! row already gone from the entry: `key OwnedRow(..) should be in the cache` (a panic in `JoinEntry::remove`).
//! Its toggle is [`TemporalJoinReadEpoch`] (declared beside the temporal join, read by stream's `build.rs`);
//! its directed scenario is [`scenario`].
//!
//! The scenario: a lookup table `version` (k, s, v) with two rows per key (pk (k, s), distributed by k) and a
//! left table `stream` (id, k), a left outer temporal join of `stream.k` with `version.k` whose left lags;
//! then, every millisecond, one row of a key deleted and 2 ms later a left row with the key inserted, each
//! key once (every lookup misses the cache, and finds the key's other row, so its entry is kept). The left
//! row, late, is read in the delete's epoch after the table sealed it. Buggy: the join fails at the next
//! barrier, the delete finding no row in the entry. Fixed: each left row joins its key's rows as of the
//! previous epoch: the row never deleted, and the deleted one if the lookup came first (the oracle).

use std::time::Duration;

use epochlab_common::plan::ConflictBehavior;
use epochlab_common::{DataType, Op, OwnedRow, TableId, Toggles, event, row};
use epochlab_meta::{JobOptions, RelationKind};
use epochlab_stream::executor::temporal_join::TemporalJoinReadEpoch;
use futures::future::LocalBoxFuture;

use super::record::{Evidence, Record, Symptom, SymptomKind};
use super::{BugId, BugInfo, Mode, Origin, ScenarioError, ScenarioRun, Setting};
use crate::config::cluster_config_for;
use crate::report::ReproReport;
use crate::repro::{ClusterHook, ReproParams};
use crate::runtime::SimContext;
use crate::workload::{ViewJoin, ViewUpstream as Upstream, temporal_join_graph};

pub const INFO: BugInfo = BugInfo {
    id: BugId::Rw22476,
    name: "22476",
    origin: Origin::RisingWave,
    mechanism: "a temporal join reads its right table at the barrier's current epoch: a lookup made after the \
                table sealed the running epoch sees changes that reach the join's cache again at the next \
                barrier, and a delete finds its row gone (`key OwnedRow(..) should be in the cache`)",
    fix: "look the right table up at the barrier's previous epoch (#22935)",
    links: &[
        "https://github.com/risingwavelabs/risingwave/issues/22476",
        "https://github.com/risingwavelabs/risingwave/pull/22935",
    ],
    modes: &[Mode::Buggy, Mode::Fixed],
    command: "cargo xtask repro --bug 22476",
    settings: &[Setting::Parallelism, Setting::Rows],
    timeline: "the tables, the view, the deletes and the left rows, the join's failure",
    record: &RECORD,
    toggles,
    scenario: start,
};

const RECORD: Record = Record {
    refs: "issue #22476 (2025-07-02, v2.2.3: \"key ownedRow([some(Utf8(\"xxxxx\")) should be in the cache\" after \
           a meta and compute node restart, sometimes), fixed by #22935 \"fix temporal join prev epoch\" \
           (9188afcefbe, 2025-08-20), which also made a double insert panic",
    symptom: Symptom {
        kind: SymptomKind::Panic,
        text: "key OwnedRow([Some(Utf8(\"xxxxx\"))]) should be in the cache",
        pattern: "should be in the cache",
        epochlab_pattern: "",
        panic_file: "executor/temporal_join.rs",
        evidence: Evidence::Text,
    },
    site: "stream: executor/temporal_join.rs, `JoinEntry::remove` (bc6b8c70b05:97), under the barrier that \
           applies the right input's changes to the lookup cache; the cause at the barrier before, where the \
           executor set its read epoch to `barrier.epoch.curr`",
    differs: "an actor error with RisingWave's text, not a panic; the append-only temporal join of f21fb9b7915 \
              (no memo table), whose read epoch was `curr` too; a lookup sees the running epoch once the \
              table's writer sealed it (its barrier arrived) or spilled it, as a NoWait read of Hummock does",
};

/// The engine's toggles of a run in `mode`: [`read_epoch`]'s, the others fixed.
fn toggles(mode: Mode) -> Toggles {
    Toggles::default().with(read_epoch(mode))
}

/// The epoch a temporal join's lookups read at in `mode`.
pub(crate) fn read_epoch(mode: Mode) -> TemporalJoinReadEpoch {
    match mode {
        Mode::Buggy => TemporalJoinReadEpoch::Curr,
        _ => TemporalJoinReadEpoch::Prev,
    }
}

fn start(run: ScenarioRun) -> LocalBoxFuture<'static, ReproReport> {
    Box::pin(scenario(run.ctx, run.params, run.hook))
}

/// The keys the scenario deletes and looks up, at most (`--rows`, capped).
const MAX_KEYS: usize = 20_000;
/// One key's delete (and a left row) per tick.
const TICK: Duration = Duration::from_millis(1);
/// Ticks between a key's delete and its left row.
const LAG: i64 = 2;
/// Left rows per second per actor the view's scan lets through (its rate limit), below the rate they come.
const LEFT_RATE: u32 = 200;
/// Virtual time the view's creation may take.
const CREATE_BUDGET: Duration = Duration::from_secs(60);

struct Setup {
    scene: super::Scene,
    version: TableId,
    stream: TableId,
    view: TableId,
    keys: usize,
}

impl AsRef<super::Scene> for Setup {
    fn as_ref(&self) -> &super::Scene {
        &self.scene
    }
}

/// The directed scenario of #22476.
pub(crate) async fn scenario(
    ctx: SimContext,
    p: ReproParams,
    hook: Option<ClusterHook>,
) -> ReproReport {
    let keys = p.rows.clamp(1, MAX_KEYS);
    let setup = async |t| setup(&ctx, t, &p, hook, keys).await;
    super::directed(
        &ctx,
        &p,
        format!(" keys={keys}"),
        setup,
        deletes_and_lookups,
        |s, looked_up, report| verdict(s, &p, looked_up, report),
    )
    .await
}

/// The lookup table's row `(k, s)`: two per key, so that a lookup after one's delete still finds the other
/// and keeps the key's entry (RisingWave caches only an entry with rows).
fn version_row(k: i64, s: i64) -> OwnedRow {
    row![k, s, k * 10 + s]
}

fn stream_row(id: i64) -> OwnedRow {
    row![id, id]
}

/// Three nodes; `version` (k, s, v) with pk (k, s), distributed by k, two rows per key; `stream` (id, k) with
/// pk id, empty; the view
/// `SELECT * FROM stream LEFT JOIN version FOR SYSTEM_TIME AS OF PROCTIME() ON stream.k = version.k`.
async fn setup(
    ctx: &SimContext,
    t: Toggles,
    p: &ReproParams,
    hook: Option<ClusterHook>,
    keys: usize,
) -> Result<Setup, ScenarioError> {
    let mut config = cluster_config_for(t, 16, 1000, 1, p.persist_check);
    config.meta_nodes = p.meta_nodes;
    let (cluster, checkers) = super::start_cluster(ctx, config, t, hook).await;
    let meta = &cluster.meta();
    let table = async |name: &str, types: usize, pk: Vec<usize>| {
        let conflict = ConflictBehavior::NoCheck;
        let types = vec![DataType::Int64; types];
        let created = meta
            .create_table_with_conflict(name, types, pk, vec![0], p.parallelism, conflict, None)
            .await;
        created.map_err(ScenarioError::ddl("create table"))
    };
    let version = table("version", 3, vec![0, 1]).await?;
    let stream = table("stream", 2, vec![0]).await?;
    let rows = (1..=keys as i64)
        .flat_map(|k| {
            [
                (Op::Insert, version_row(k, 0)),
                (Op::Insert, version_row(k, 1)),
            ]
        })
        .collect();
    cluster.dml(version, rows).await?;
    meta.flush().await.map_err(ScenarioError::ddl("flush"))?;
    let (version_desc, stream_desc) = (
        cluster.meta().relation(version).map(|r| r.desc),
        cluster.meta().relation(stream).map(|r| r.desc),
    );
    let (Some(version_desc), Some(stream_desc)) = (version_desc, stream_desc) else {
        return Err(ScenarioError::NotShown(
            "the tables are not in the catalog".into(),
        ));
    };
    let left = Upstream {
        name: "stream",
        desc: &stream_desc,
    };
    let right = Upstream {
        name: "version",
        desc: &version_desc,
    };
    let (graph, view) = temporal_join_graph(&left, &right, ViewJoin::LeftOuter, 1)
        .map_err(|e| ScenarioError::NotShown(e.to_string()))?;
    let kind = RelationKind::MaterializedView;
    // The left input lags: its rows of an epoch reach the join after the table's barrier of that epoch.
    let options = JobOptions {
        rate_limit: Some(LEFT_RATE),
        ..JobOptions::parallelism(p.parallelism)
    };
    let created = meta.create_streaming_job("tj", kind, graph, vec![view], options);
    let view = created.await.map_err(ScenarioError::ddl("create view"))?;
    super::await_created(&cluster, view, CREATE_BUDGET).await?;
    Ok(Setup {
        scene: super::Scene {
            ctx: ctx.clone(),
            cluster,
            checkers,
        },
        version,
        stream,
        view,
        keys,
    })
}

fn failed(s: &Setup) -> bool {
    s.scene.cluster.failures.first_state_error().is_some()
}

/// Every millisecond a key's `version` row deleted and the left row of the key deleted two ticks before
/// inserted (so that some delete precedes a barrier's arrival at `version`'s writer and its left row follows
/// it), until every key is done or the join failed; then a checkpoint. Returns how many left rows were
/// inserted.
async fn deletes_and_lookups(s: &Setup) -> Result<usize, ScenarioError> {
    event!(
        s.scene.ctx.log,
        "scenario",
        "each ms delete a key of version, and insert a left row with the key deleted {LAG} ms before"
    );
    let cluster = &s.scene.cluster;
    let keys = s.keys as i64;
    let mut inserted = 0;
    for tick in 1..=keys + LAG {
        if failed(s) {
            break;
        }
        if tick <= keys {
            let delete = vec![(Op::Delete, version_row(tick, 0))];
            cluster.dml(s.version, delete).await?;
        }
        if tick > LAG {
            let insert = vec![(Op::Insert, stream_row(tick - LAG))];
            cluster.dml(s.stream, insert).await?;
            inserted += 1;
        }
        tokio::time::sleep(TICK).await;
    }
    // A failed join fails the flush's barrier too: its error is the finding.
    let flushed = cluster.meta().flush().await;
    if !failed(s) {
        flushed.map_err(ScenarioError::ddl("flush after the left rows"))?;
    }
    Ok(inserted)
}

fn verdict(s: &Setup, p: &ReproParams, inserted: usize, report: ReproReport) -> ReproReport {
    let mut report = super::counted(report, &s.scene.cluster);
    let failure = s.scene.cluster.failures.first_state_error();
    if failure.is_none() {
        s.scene.checkers.check_end(&s.scene.cluster);
    }
    report.violations = s.scene.checkers.violations();
    report.timeline = timeline(&s.scene.ctx.log.lines());
    if super::failed(&mut report, failure) {
        return report;
    }
    if let Some(finding) = oracle(s, inserted) {
        report.outcome = crate::report::Outcome::Failed;
        report.error = Some(finding);
        report.caught_by = Some("the oracle".into());
        return report;
    }
    if p.mode == Mode::Buggy {
        return report.not_reproducible(format!(
            "no left row of the {inserted} was looked up after `version` sealed the epoch of its key's delete"
        ));
    }
    report.notes.push(format!(
        "each of the {inserted} left rows joined its key's rows as of the previous epoch"
    ));
    report
}

/// What the view shows wrong, if anything: for each left row it must hold its key's row `(k, 1)` (never
/// deleted) and maybe `(k, 0)` (if the lookup came before the delete's epoch ended), nothing else.
fn oracle(s: &Setup, inserted: usize) -> Option<String> {
    let rows = s.scene.cluster.committed_rows(s.view);
    let mut per_left: std::collections::BTreeMap<i64, Vec<i64>> = std::collections::BTreeMap::new();
    for r in &rows {
        let right = OwnedRow::new(r.datums().get(2..).unwrap_or_default().to_vec());
        let ids = int(r.datum_at(0)).zip(int(right.datum_at(1)));
        let fits =
            ids.filter(|&(id, s)| r.datum_at(1) == r.datum_at(0) && right == version_row(id, s));
        let Some((id, s_val)) = fits else {
            return Some(format!(
                "view row {r:?} is no left row joined with its key's row"
            ));
        };
        per_left.entry(id).or_default().push(s_val);
    }
    if per_left.len() != inserted {
        let held = per_left.len();
        return Some(format!(
            "the view holds {held} left rows of the {inserted} inserted"
        ));
    }
    let (id, ss) = per_left.iter().find(|(_, ss)| !ss.contains(&1))?;
    Some(format!(
        "left row {id} joined the rows s={ss:?} of its key, not the row s=1 that was never deleted"
    ))
}

fn int(d: &epochlab_common::Datum) -> Option<i64> {
    d.as_ref().and_then(epochlab_common::ScalarImpl::as_int64)
}

/// The story: the DDL, the scenario's steps and the join's failure.
fn timeline(lines: &[String]) -> Vec<String> {
    super::state_failure_timeline(lines, " ddl: create table version")
}
