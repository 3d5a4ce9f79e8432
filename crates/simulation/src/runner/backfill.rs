//! RisingWave's other recovery script, `ci/scripts/run-backfill-tests.sh` at f21fb9b7915 (main-cron runs it
//! through `ci/scripts/backfill-test.sh -p ci-release`), as data and as runs: each of its functions in the
//! order of its `main`, each in a cluster of the shape it starts (`cargo make ci-start PROFILE`), each `psql -f`
//! of its `ci/scripts/sql/backfill/` files a session of its own that goes on after a failed statement (psql
//! does, and prints `ERROR:`), each call it puts in the background (`&`) a concurrent session, each `wait` a
//! join. The script checks nothing of what psql prints: a function fails when the cluster does (an actor
//! failing on its state, a checker firing, no checkpoint any more), as RisingWave's process crashing would.
//! A function that needs what epochlab lacks is not run, and says what it needs.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use epochlab_common::event;
use epochlab_sim::checkers::Checkers;
use epochlab_sim::config::{Topology, base_network};
use epochlab_sim::workload::watchdog;
use epochlab_sim::{BugMode, Outcome, ReproHooks, SimOutput, try_run_observed};

use super::{FileReport, SltParams, conclude, settle, start_cluster};
use crate::db::SimDb;
use epochlab_frontend::{Output, SqlError};

/// The script.
pub const SCRIPT: &str = "ci/scripts/run-backfill-tests.sh";

/// The vendored `ci/scripts/sql/backfill/` of f21fb9b7915, relative to the workspace root.
pub const SQL_ROOT: &str = "tests/risingwave-ci/scripts/sql/backfill";

/// One line of a function that talks to the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// `run_sql_file "$PARENT_PATH"/sql/backfill/FILE`: a psql session over the file.
    Psql(&'static str),
    /// The same, with `&`: it runs beside what follows, until a `wait`.
    PsqlBackground(&'static str),
    /// `wait`: every call in the background is done.
    Wait,
}

/// A cluster the script starts: RisingWave's risedev profile, as epochlab runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterShape {
    pub profile: &'static str,
    pub topology: Topology,
    /// `[system] barrier_interval_ms` of the profile's config file.
    pub barrier_interval_ms: u64,
}

/// `ci-backfill` (`src/config/ci-backfill.toml`): one compute node of risedev's default parallelism 4, a
/// barrier every 50 ms (its `stream_chunk_size = 10` is not modelled: epochlab's backfill reads chunks of its
/// own size).
const CI_BACKFILL: ClusterShape = ClusterShape {
    profile: "ci-backfill",
    topology: Topology {
        meta_nodes: 1,
        frontend_nodes: 1,
        compute_nodes: 1,
        compute_node_cores: 4,
        compactor_nodes: 1,
    },
    barrier_interval_ms: 50,
};

/// `ci-3cn-1fe` (`src/config/ci.toml`): three compute nodes of parallelism 4, a barrier every 250 ms.
const CI_3CN_1FE: ClusterShape = ClusterShape {
    profile: "ci-3cn-1fe",
    topology: Topology {
        meta_nodes: 1,
        frontend_nodes: 1,
        compute_nodes: 3,
        compute_node_cores: 4,
        compactor_nodes: 1,
    },
    barrier_interval_ms: 250,
};

/// `ci-1cn-1fe-kafka-with-recovery` (`src/config/ci-recovery.toml`), with Kafka.
const CI_1CN_1FE_KAFKA: ClusterShape = ClusterShape {
    profile: "ci-1cn-1fe-kafka-with-recovery",
    topology: Topology {
        meta_nodes: 1,
        frontend_nodes: 1,
        compute_nodes: 1,
        compute_node_cores: 4,
        compactor_nodes: 1,
    },
    barrier_interval_ms: 1000,
};

/// One function of the script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackfillFn {
    pub name: &'static str,
    /// The script's line that defines it.
    pub line: u32,
    pub cluster: ClusterShape,
    pub calls: &'static [Call],
    /// What it needs that epochlab does not have: reported not run.
    pub needs: Option<&'static str>,
}

/// What the performance functions need (`main` runs them only with `profile=ci-release`, which main-cron
/// sets): 4 to 8 million rows a table, a scale the simulation is not for.
const PERFORMANCE: &str = "4 to 8 million rows a table, which the simulation does not hold (RisingWave's \
                           backfill performance tests, run with profile=ci-release)";

/// The functions in the order of the script's `main` at f21fb9b7915 (the last five with `ci-release`).
pub const FUNCTIONS: [BackfillFn; 9] = [
    BackfillFn {
        name: "test_snapshot_and_upstream_read",
        line: 106,
        cluster: CI_BACKFILL,
        calls: &[
            Call::Psql("basic/create_base_table.sql"),
            Call::Psql("basic/insert.sql"),
            Call::PsqlBackground("basic/insert.sql"),
            Call::PsqlBackground("basic/create_mv.sql"),
            Call::Wait,
            Call::Psql("basic/select.sql"),
        ],
        needs: None,
    },
    BackfillFn {
        name: "test_backfill_tombstone",
        line: 129,
        cluster: CI_1CN_1FE_KAFKA,
        calls: &[],
        needs: Some(
            "a datagen table that makes rows (2,000,000 a second; epochlab runs datagen sources, not a table's connector)",
        ),
    },
    BackfillFn {
        name: "test_replication_with_column_pruning",
        line: 161,
        cluster: CI_BACKFILL,
        calls: &[
            Call::Psql("replication_with_column_pruning/create_base_table.sql"),
            Call::Psql("replication_with_column_pruning/insert.sql"),
            Call::PsqlBackground("replication_with_column_pruning/create_mv.sql"),
            Call::PsqlBackground("replication_with_column_pruning/insert.sql"),
            Call::Wait,
            Call::Psql("replication_with_column_pruning/select.sql"),
            Call::Psql("replication_with_column_pruning/drop.sql"),
        ],
        needs: None,
    },
    BackfillFn {
        name: "test_sink_backfill_recovery",
        line: 182,
        cluster: CI_1CN_1FE_KAFKA,
        calls: &[],
        needs: Some(
            "restart_cluster (a meta that restarts from its store) and a Kafka sink read back by a Kafka table",
        ),
    },
    BackfillFn {
        name: "test_no_shuffle_backfill_snapshot_and_upstream_runtime",
        line: 224,
        cluster: CI_3CN_1FE,
        calls: &[],
        needs: Some(PERFORMANCE),
    },
    BackfillFn {
        name: "test_arrangement_backfill_snapshot_and_upstream_runtime",
        line: 208,
        cluster: CI_3CN_1FE,
        calls: &[],
        needs: Some(PERFORMANCE),
    },
    BackfillFn {
        name: "test_backfill_snapshot_runtime",
        line: 240,
        cluster: CI_3CN_1FE,
        calls: &[],
        needs: Some(PERFORMANCE),
    },
    BackfillFn {
        name: "test_backfill_snapshot_with_wider_rows",
        line: 269,
        cluster: CI_3CN_1FE,
        calls: &[],
        needs: Some(PERFORMANCE),
    },
    BackfillFn {
        name: "test_backfill_snapshot_with_limited_storage_throughput",
        line: 255,
        cluster: CI_3CN_1FE,
        calls: &[],
        needs: Some(
            "an object store whose requests are rate limited (MinIO's api-requests-max = 30), and millions of rows",
        ),
    },
];

/// A function by its name.
pub fn function(name: &str) -> Option<&'static BackfillFn> {
    FUNCTIONS.iter().find(|f| f.name == name)
}

/// What one run of a function gave.
#[derive(Clone, Debug)]
pub struct FunctionReport {
    /// Passed, failed (the cluster failed) or stuck; what failed, as a file's report says it.
    pub report: FileReport,
    /// What psql printed for each statement that failed: `psql:FILE: ERROR:  message` (psql went on).
    pub psql_errors: Vec<String>,
    /// Statements sent, in all sessions.
    pub statements: u32,
    /// The rows queries returned, as psql printed them: `FILE: v1 | v2`, in the order they came.
    pub rows: Vec<String>,
    /// The first statement epochlab refused as `unsupported`, with its file: then the function did not do
    /// what RisingWave's did, whatever the script would say.
    pub unsupported: Option<String>,
}

impl FunctionReport {
    /// `passed`, `failed`, `stuck`, or `unsupported` when it passed but a statement was refused as one.
    pub fn outcome(&self) -> &'static str {
        match (&self.unsupported, self.report.outcome) {
            (Some(_), Outcome::Passed) => "unsupported",
            (_, outcome) => outcome.as_str(),
        }
    }
}

/// Why a function could not run at all: bad input.
#[derive(Debug, thiserror::Error)]
pub enum BackfillError {
    #[error("{function} needs {needs}, which epochlab does not have")]
    Needs {
        function: &'static str,
        needs: &'static str,
    },
    #[error("cannot read {path}: {why}")]
    Unreadable { path: String, why: String },
    #[error("{path}: {why}")]
    Unparsable { path: String, why: String },
}

/// A file's statements, read before the run.
struct SqlFile {
    name: &'static str,
    statements: Vec<String>,
}

/// A call with its file read: what the run plays.
enum Step {
    Psql(SqlFile),
    PsqlBackground(SqlFile),
    Wait,
}

fn read(sql_root: &Path, name: &'static str) -> Result<SqlFile, BackfillError> {
    let path: PathBuf = sql_root.join(name);
    let text = std::fs::read_to_string(&path).map_err(|e| BackfillError::Unreadable {
        path: path.display().to_string(),
        why: e.to_string(),
    })?;
    let statements = epochlab_frontend::frontend::statement_texts(&text).map_err(|e| {
        BackfillError::Unparsable {
            path: path.display().to_string(),
            why: e.to_string(),
        }
    })?;
    Ok(SqlFile { name, statements })
}

/// The bound on one function's simulated time.
const TIME_LIMIT: Duration = Duration::from_secs(3600);

/// Run function `f` on seed `seed`: its cluster, its calls, then the cluster settles and the checkers judge.
pub fn run_function(
    sql_root: &Path,
    f: &BackfillFn,
    seed: u64,
    run: BugMode,
    hooks: ReproHooks,
) -> Result<SimOutput<FunctionReport>, BackfillError> {
    if let Some(needs) = f.needs {
        return Err(BackfillError::Needs {
            function: f.name,
            needs,
        });
    }
    let steps = f
        .calls
        .iter()
        .map(|call| {
            Ok(match *call {
                Call::Psql(name) => Step::Psql(read(sql_root, name)?),
                Call::PsqlBackground(name) => Step::PsqlBackground(read(sql_root, name)?),
                Call::Wait => Step::Wait,
            })
        })
        .collect::<Result<Vec<_>, BackfillError>>()?;
    let p = SltParams {
        seed,
        run,
        topology: f.cluster.topology,
        barrier_interval_ms: f.cluster.barrier_interval_ms,
        ..SltParams::default()
    };
    let f = *f;
    let out = try_run_observed(
        seed,
        epochlab_common::clock::DEFAULT_ORIGIN_UNIX_MS,
        TIME_LIMIT,
        hooks.time_observers,
        move |ctx| async move { play(ctx, f, steps, p, hooks.on_cluster).await },
    );
    Ok(out.map(|v| match v {
        Ok(report) => report,
        Err(e) => FunctionReport {
            report: FileReport::ended_early(f.name, e),
            psql_errors: Vec::new(),
            statements: 0,
            rows: Vec::new(),
            unsupported: None,
        },
    }))
}

/// What the sessions of one function share: the psql errors, the statements sent.
#[derive(Default)]
struct Printed {
    errors: Vec<String>,
    statements: u32,
    rows: Vec<String>,
    unsupported: Option<String>,
}

/// Rows printed at most per function (bounded, as everything else).
const MAX_ROWS: usize = 1000;

async fn play(
    ctx: epochlab_sim::SimContext,
    f: BackfillFn,
    steps: Vec<Step>,
    p: SltParams,
    hook: Option<epochlab_sim::ClusterHook>,
) -> FunctionReport {
    event!(
        ctx.log,
        "backfill-tests",
        "function {} on {}",
        f.name,
        f.cluster.profile
    );
    let cluster = start_cluster(&ctx, &p, hook).await;
    let checkers = Checkers::install(
        &cluster,
        p.run.toggles().get::<epochlab_common::toggles::DropMode>(),
    );
    base_network(&cluster);
    let engine = crate::cluster::engine_of(&cluster, p.topology);
    let printed = Arc::new(Mutex::new(Printed::default()));
    let calls = async {
        let mut background = Vec::new();
        for step in steps {
            match step {
                Step::Psql(file) => {
                    psql(SimDb::psql(engine.clone()), file, printed.clone()).await;
                }
                Step::PsqlBackground(file) => {
                    let session = psql(SimDb::psql(engine.clone()), file, printed.clone());
                    background.push(tokio::spawn(session));
                }
                Step::Wait => {
                    for task in background.drain(..) {
                        // Nothing aborts a session: an error here is its panic, which ends the run.
                        if let Err(e) = task.await
                            && e.is_panic()
                        {
                            std::panic::resume_unwind(e.into_panic());
                        }
                    }
                }
            }
        }
        settle(&cluster).await.map_err(|s| s.0)
    };
    let stalled = tokio::select! {
        biased;
        stuck = watchdog(&cluster) => Some(stuck),
        settled = calls => settled.err(),
    };
    let mut report = FileReport::new(f.name);
    let settled = stalled.is_none();
    conclude(&mut report, stalled, settled, &cluster, &checkers);
    event!(
        ctx.log,
        "backfill-tests",
        "outcome={}",
        report.outcome.as_str()
    );
    cluster.shutdown();
    let printed = std::mem::take(&mut *printed.lock().unwrap_or_else(|e| e.into_inner()));
    FunctionReport {
        report,
        psql_errors: printed.errors,
        statements: printed.statements,
        rows: printed.rows,
        unsupported: printed.unsupported,
    }
}

/// `psql -f FILE`: each statement in turn on one connection; a failed one is printed and psql goes on.
async fn psql(mut db: SimDb, file: SqlFile, printed: Arc<Mutex<Printed>>) {
    for sql in &file.statements {
        let out = db.execute(sql).await;
        let mut printed = printed.lock().unwrap_or_else(|e| e.into_inner());
        printed.statements += 1;
        match out {
            Err(e) => {
                if let SqlError::Unsupported(construct) = &e {
                    printed
                        .unsupported
                        .get_or_insert_with(|| format!("{construct} (in {})", file.name));
                }
                printed
                    .errors
                    .push(format!("psql:{}: ERROR:  {e}", file.name));
            }
            Ok(Output::Rows { rows, .. }) => {
                for row in rows {
                    if printed.rows.len() < MAX_ROWS {
                        printed
                            .rows
                            .push(format!("{}: {}", file.name, row.join(" | ")));
                    }
                }
            }
            Ok(Output::Done(_)) => {}
        }
    }
}
