//! Crash points (issue 56, stage 2): meta dies right after one commit of a CREATE or a DROP and restarts
//! from its store; the job's fate is the one RisingWave's next leader gives it (`meta-failover.md` §2.4,
//! §3.3): a CREATE cut off before its fragments were created leaves nothing; one cut off after, a created
//! job its catalog row is linked to; a DROP cut off after its catalog commit leaves nothing. The checkers'
//! I3 (registered tables equal the catalog's after every recovery) and I5 (what clients were told survives
//! the restart) hold throughout.

use std::sync::Arc;
use std::time::Duration;

use epochlab_common::toggles::DropMode;
use epochlab_frontend::Session;
use epochlab_meta::{CrashPoint, JobState};
use epochlab_sim::checkers::Checkers;
use epochlab_sim::{Cluster, ClusterConfig, run};

/// What is left of `mv` once the restarted meta is ready.
#[derive(Debug, PartialEq)]
enum Fate {
    /// No row, no job.
    Gone,
    /// Its row linked to its created job, with its 100 rows.
    Created,
}

fn expected(point: CrashPoint) -> Fate {
    match point {
        CrashPoint::CreateAfterFragmentsCreated => Fate::Created,
        _ => Fate::Gone,
    }
}

fn is_drop(point: CrashPoint) -> bool {
    point >= CrashPoint::DropAfterCatalog
}

/// A table of 100 rows; for a DROP point, `mv` over it; then the crash armed, and the CREATE or DROP of
/// `mv`, which meta's death answers with an error.
async fn crash_at(cluster: &Arc<Cluster>, point: CrashPoint) -> Session {
    let mut s = Session::new(epochlab_simulation::engine(cluster, 2));
    s.execute(
        "CREATE TABLE t (k int PRIMARY KEY); \
         INSERT INTO t SELECT x FROM generate_series(1, 100) AS g(x); FLUSH",
    )
    .await
    .unwrap();
    let create = "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t";
    if is_drop(point) {
        s.execute(create).await.unwrap();
    }
    cluster.arm_meta_crash(point);
    let ddl = if is_drop(point) {
        "DROP MATERIALIZED VIEW mv"
    } else {
        create
    };
    let err = s.execute(ddl).await.unwrap_err();
    assert!(err.to_string().contains("unavailable"), "{point}: {err}");
    assert_eq!(cluster.meta_crashes(), [point]);
    s
}

async fn fate(cluster: &Arc<Cluster>, s: &mut Session) -> Fate {
    let row = cluster.meta().sql_catalog().catalog;
    let row = row.relations().find(|r| r.name == "mv").cloned();
    let job = cluster.meta().relation_by_name("mv");
    match (row, job) {
        (None, None) => Fate::Gone,
        (Some(row), Some(job)) => {
            assert_eq!(row.table_id, Some(job.id));
            assert_eq!(job.state, JobState::Created);
            let out = s.execute("SELECT count(*) FROM mv").await.unwrap();
            assert_eq!(format!("{out:?}").matches("100").count(), 1, "{out:?}");
            Fate::Created
        }
        (row, job) => panic!("half a job: row {row:?}, job {:?}", job.map(|j| j.id)),
    }
}

#[test]
fn each_crash_point_leaves_the_job_as_risingwaves_next_leader_does() {
    for (i, point) in CrashPoint::ALL.into_iter().enumerate() {
        run(30 + i as u64, move |ctx| async move {
            let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
            let checkers = Checkers::install(&cluster, DropMode::Fixed);
            let mut s = crash_at(&cluster, point).await;
            tokio::time::sleep(Duration::from_secs(1)).await;
            cluster.wait_ready().await;
            assert!(!cluster.meta().is_killed(), "{point}: restarted");
            assert_eq!(fate(&cluster, &mut s).await, expected(point), "{point}");
            // The client's retry, as the kill runner's: a CREATE creates it (or finds it), a DROP finds it
            // gone.
            let retry = match is_drop(point) {
                true => "DROP MATERIALIZED VIEW IF EXISTS mv",
                false => "CREATE MATERIALIZED VIEW IF NOT EXISTS mv AS SELECT * FROM t",
            };
            s.execute(retry).await.unwrap();
            let after = if is_drop(point) {
                Fate::Gone
            } else {
                Fate::Created
            };
            assert_eq!(
                fate(&cluster, &mut s).await,
                after,
                "{point}: after the retry"
            );
            s.execute("FLUSH").await.unwrap();
            checkers.check_end(&cluster);
            assert_eq!(checkers.violations(), [], "{point}");
            let registered = cluster.hummock.registered_tables();
            let listed: std::collections::BTreeSet<_> = cluster
                .meta()
                .catalog()
                .state_tables()
                .into_iter()
                .collect();
            assert_eq!(registered, listed, "{point}: no table left registered");
        });
    }
}

/// epochlab's own files with meta dying at each point: each passes (the runner retries the statement meta's
/// death failed, as under kills), says where meta crashed and during which statement, and the checkers
/// (I3, I5 among them) find nothing.
#[test]
fn own_files_pass_with_meta_crashing_at_each_point() {
    let suite = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/slt");
    for file in ["basic.slt", "recovery/drop_mv_during_backfill.slt"] {
        for point in CrashPoint::ALL {
            let p = epochlab_simulation::SltParams {
                seed: 5,
                crash_meta_at: Some(point),
                ..Default::default()
            };
            let r = epochlab_simulation::run_file(&suite.join(file), &p, Default::default())
                .unwrap_or_else(|e| panic!("{e}"))
                .value;
            let what = format!("{file} {point}: {:?} {:?}", r.error, r.violations);
            assert_eq!(r.outcome, epochlab_sim::Outcome::Passed, "{what}");
            assert_eq!(r.meta_crashes.len(), 1, "{what}");
            let said = format!("meta crashed at {point}: ");
            assert!(r.meta_crashes[0].starts_with(&said), "{:?}", r.meta_crashes);
            assert!(
                r.retries >= 1,
                "{what}: the statement meta's death failed is retried"
            );
        }
    }
}
