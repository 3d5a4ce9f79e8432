//! A streaming job's CREATE as one request meta runs whole (issue 56, stage 1): the files of `tests/slt/`
//! pass with and without kills, meta's among them;
//! a client that goes away does not end its DDL (RisingWave's DDL runs in a task of meta's); a killed meta
//! ends the DDL, and the next meta's bootstrap leaves no half-made job.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use epochlab_frontend::catalog::CatalogError;
use epochlab_frontend::{Output, Session, SqlError};
use epochlab_meta::JobState;
use epochlab_sim::{Cluster, ClusterConfig, Outcome, ReproHooks, run};
use epochlab_simulation::{KillRoles, SltParams, run_file};

fn own_files() -> Vec<PathBuf> {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/slt");
    let mut files: Vec<PathBuf> = ["*.slt", "recovery/*.slt"]
        .iter()
        .flat_map(|p| glob::glob(&format!("{}/{p}", suite.display())).unwrap())
        .map(Result::unwrap)
        .collect();
    files.sort();
    assert!(files.len() >= 8, "{files:?}");
    files
}

fn passes(f: &Path, p: &SltParams) {
    let r = run_file(f, p, ReproHooks::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .value;
    assert_eq!(
        r.outcome,
        Outcome::Passed,
        "{} {p:?}: {:?} {:?}",
        f.display(),
        r.error,
        r.failure.map(|x| x.to_string())
    );
}

#[test]
fn epochlabs_own_files_pass_with_and_without_kills_of_every_role_and_meta() {
    for f in own_files() {
        let quiet = SltParams::default();
        passes(&f, &quiet);
        // Every role killed, meta too: a DDL in flight dies with its meta.
        let killing = SltParams {
            seed: 3,
            kill: true,
            kill_roles: KillRoles {
                meta: true,
                ..KillRoles::ALL
            },
            ..quiet
        };
        passes(&f, &killing);
    }
}

async fn rows(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    match s.execute(sql).await.expect(sql) {
        Output::Rows { rows, .. } => rows,
        other => panic!("{sql}: {other:?}"),
    }
}

fn config() -> ClusterConfig {
    ClusterConfig::default()
}

/// A table of 2,000 rows and a session whose views backfill 100 rows a second per actor.
async fn slow_backfill(cluster: &Arc<Cluster>) -> Session {
    let mut s = Session::new(epochlab_simulation::engine(cluster, 2));
    s.execute(
        "CREATE TABLE t (k int PRIMARY KEY, v int); \
         INSERT INTO t SELECT x, x % 7 FROM generate_series(1, 2000) AS g(x); FLUSH; \
         SET STREAMING_RATE_LIMIT = 100",
    )
    .await
    .unwrap();
    s
}

#[test]
fn a_create_whose_client_goes_away_is_created_all_the_same() {
    run(11, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, config()).await);
        let mut s = slow_backfill(&cluster).await;
        let client = tokio::spawn(async move {
            let _ = s
                .execute("CREATE MATERIALIZED VIEW m AS SELECT * FROM t")
                .await;
        });
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!client.is_finished(), "the backfill takes a while");
        client.abort();
        let _ = client.await;
        // The job goes on in meta and ends created, its catalog row linked to it.
        let mut waited = Duration::ZERO;
        let job = loop {
            let meta = cluster.meta();
            if let Some(r) = meta.relation_by_name("m")
                && r.state == JobState::Created
            {
                break r.id;
            }
            assert!(waited < Duration::from_secs(60), "m is not created");
            tokio::time::sleep(Duration::from_millis(500)).await;
            waited += Duration::from_millis(500);
        };
        let row = cluster.meta().sql_catalog().catalog.clone();
        let row = row.relations().find(|r| r.name == "m").expect("listed");
        assert_eq!(row.table_id, Some(job));
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        assert_eq!(
            rows(&mut s, "SELECT count(*), sum(k) FROM m").await,
            [["2000".to_string(), "2001000".to_string()]]
        );
        cluster.check_recoveries(0).unwrap();
    });
}

#[test]
fn a_meta_killed_during_a_create_ends_it_and_its_bootstrap_leaves_no_half_made_job() {
    run(12, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, config()).await);
        let mut s = slow_backfill(&cluster).await;
        let client = tokio::spawn(async move {
            let out = s
                .execute("CREATE MATERIALIZED VIEW m AS SELECT * FROM t")
                .await;
            (s, out)
        });
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(cluster.meta().relation_by_name("m").is_some(), "creating");
        assert!(cluster.kill_meta());
        let (_, out) = client.await.unwrap();
        assert!(
            matches!(
                out,
                Err(SqlError::CatalogError(CatalogError::MetaUnavailable))
            ),
            "{out:?}"
        );
        cluster.restart_meta().unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
        // A foreground job is cleaned at the bootstrap, its catalog row with it: the CREATE runs again.
        assert!(cluster.meta().relation_by_name("m").is_none());
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        assert!(rows(&mut s, "SHOW MATERIALIZED VIEWS").await.is_empty());
        s.execute("CREATE MATERIALIZED VIEW m AS SELECT * FROM t")
            .await
            .unwrap();
        assert_eq!(
            rows(&mut s, "SELECT count(*) FROM m").await,
            [["2000".to_string()]]
        );
    });
}

#[test]
fn a_drop_cut_off_after_its_catalog_rows_leaves_a_job_the_next_bootstrap_drops_with_its_tables() {
    run(13, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, config()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute(
            "CREATE TABLE t (k int PRIMARY KEY, v int); \
             INSERT INTO t SELECT x, x FROM generate_series(1, 100) AS g(x); FLUSH; \
             CREATE MATERIALIZED VIEW m AS SELECT v, count(*) AS c FROM t GROUP BY v; \
             CREATE MATERIALIZED VIEW kept AS SELECT * FROM t",
        )
        .await
        .unwrap();
        let m = cluster.meta().relation_by_name("m").expect("created");
        let tables = m.state_tables();
        // The DROP's first commit, the catalog rows, and no more: meta dies before the job's.
        let meta = cluster.meta();
        let id = meta
            .sql_catalog()
            .catalog
            .relations()
            .find(|r| r.name == "m")
            .unwrap()
            .id;
        meta.catalog_write(|c| c.drop_relation(id, false)).unwrap();
        assert!(cluster.kill_meta());
        cluster.restart_meta().unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
        let meta = cluster.meta();
        assert!(meta.relation_by_name("m").is_none(), "the job goes");
        for t in &tables {
            assert!(!cluster.hummock.is_registered(*t), "table {t} unregistered");
        }
        assert!(
            meta.relation_by_name("kept").is_some(),
            "a job with its row stays"
        );
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        assert_eq!(
            rows(&mut s, "SELECT count(*) FROM kept").await,
            [["100".to_string()]]
        );
        s.execute("CREATE MATERIALIZED VIEW m AS SELECT 1 AS one FROM t LIMIT 1")
            .await
            .unwrap();
    });
}

#[test]
fn a_create_while_meta_bootstraps_is_refused_before_its_catalog_row() {
    run(14, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, config()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
            .await
            .unwrap();
        assert!(cluster.kill_meta());
        cluster.restart_meta().unwrap();
        let version = cluster.meta().sql_catalog().version;
        for sql in [
            "CREATE TABLE early (a int)",
            "CREATE MATERIALIZED VIEW m AS SELECT * FROM t",
        ] {
            let refused = s.execute(sql).await.unwrap_err();
            assert!(
                refused.to_string().contains("The cluster is bootstrapping"),
                "{sql}: {refused}"
            );
        }
        assert_eq!(
            cluster.meta().sql_catalog().version,
            version,
            "refused at its start: no catalog row came and went"
        );
        // A drop is let through (recovery pre-applies it).
        s.execute("DROP TABLE t").await.unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
        s.execute("CREATE TABLE early (a int)").await.unwrap();
    });
}

#[test]
fn a_create_index_is_listed_as_the_index_by_its_one_request() {
    run(15, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, config()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute(
            "CREATE TABLE t (k int PRIMARY KEY, v int); \
             INSERT INTO t SELECT x, x % 5 FROM generate_series(1, 50) AS g(x); FLUSH",
        )
        .await
        .unwrap();
        let before = cluster.meta().sql_catalog().version;
        s.execute("CREATE INDEX i ON t (v)").await.unwrap();
        let after = cluster.meta().sql_catalog();
        // Two commits: the row (listed as the index from the start), then its link to the job.
        assert_eq!(after.version, before + 2);
        let i = after.catalog.relations().find(|r| r.name == "i").unwrap();
        assert_eq!(i.kind, epochlab_frontend::catalog::RelationKind::Index);
        assert!(i.table_id.is_some());
        assert_eq!(
            rows(&mut s, "SELECT count(*) FROM t WHERE v = 3").await,
            [["10".to_string()]]
        );
        s.execute("DROP INDEX i").await.unwrap();
        assert!(cluster.meta().relation_by_name("i").is_none());
    });
}

#[test]
fn an_index_being_built_is_a_view_of_its_table_until_its_job_is_linked() {
    run(16, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, config()).await);
        let mut s = slow_backfill(&cluster).await;
        let client = tokio::spawn(async move { s.execute("CREATE INDEX i ON t (v)").await });
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!client.is_finished(), "the backfill takes a while");
        let catalog = cluster.meta().sql_catalog().catalog;
        let i = catalog.relations().find(|r| r.name == "i").unwrap();
        assert_eq!(
            i.kind,
            epochlab_frontend::catalog::RelationKind::MaterializedView,
            "a view's row, its job pending: a drop finds it"
        );
        // Its table cannot go from under it (no catalog-only index the drop would take along).
        let mut other = Session::new(epochlab_simulation::engine(&cluster, 2));
        assert!(other.execute("DROP TABLE t").await.is_err());
        client.await.unwrap().unwrap();
        let catalog = cluster.meta().sql_catalog().catalog;
        let i = catalog.relations().find(|r| r.name == "i").unwrap();
        assert_eq!(i.kind, epochlab_frontend::catalog::RelationKind::Index);
        other.execute("DROP TABLE t").await.unwrap();
        assert!(cluster.meta().relation_by_name("i").is_none());
        assert!(cluster.meta().relation_by_name("t").is_none());
    });
}

#[test]
fn a_create_source_is_one_request_its_connector_running_or_not() {
    run(17, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, config()).await);
        let engine = epochlab_simulation::engine(&cluster, 2);
        engine
            .run_connectors
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let mut s = Session::new(engine);
        let before = cluster.meta().sql_catalog().version;
        s.execute(
            "CREATE SOURCE src (v INT) WITH (connector = 'datagen', fields.v.kind = 'sequence', \
             fields.v.start = '1', fields.v.end = '30', datagen.rows.per.second = '100')",
        )
        .await
        .unwrap();
        s.execute(
            "CREATE SOURCE k (v INT) WITH (connector = 'kafka', topic = 't', \
             properties.bootstrap.server = 'x:9092') FORMAT PLAIN ENCODE JSON",
        )
        .await
        .unwrap();
        // Two commits each: the row, then its link to the job.
        assert_eq!(cluster.meta().sql_catalog().version, before + 4);
        s.execute("CREATE MATERIALIZED VIEW mv AS SELECT v FROM src")
            .await
            .unwrap();
        s.execute("CREATE MATERIALIZED VIEW mk AS SELECT v FROM k")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(2)).await;
        s.execute("FLUSH").await.unwrap();
        assert_eq!(
            rows(&mut s, "SELECT count(*), sum(v) FROM mv").await,
            [["30".to_string(), "465".to_string()]]
        );
        assert_eq!(
            rows(&mut s, "SELECT count(*) FROM mk").await,
            [["0".to_string()]]
        );
        s.execute("CREATE SOURCE IF NOT EXISTS k (v INT) WITH (connector = 'datagen')")
            .await
            .unwrap();
        for there in ["src", "k", "mv", "mk"] {
            assert!(cluster.meta().relation_by_name(there).is_some(), "{there}");
        }
        s.execute("DROP SOURCE src CASCADE").await.unwrap();
        s.execute("DROP SOURCE k CASCADE").await.unwrap();
        for gone in ["src", "k", "mv", "mk"] {
            assert!(cluster.meta().relation_by_name(gone).is_none(), "{gone}");
        }
    });
}

#[test]
fn a_drop_of_a_row_whose_job_is_not_built_yet_takes_the_job_at_its_link() {
    run(18, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, config()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute("CREATE TABLE t (k int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 1); FLUSH")
            .await
            .unwrap();
        let t = cluster.meta().relation_by_name("t").unwrap().id;
        // The CREATE's meta task commits its row, then waits for the reschedule lock the ALTER holds
        // through its recovery.
        let create = tokio::spawn(async move {
            s.execute("CREATE MATERIALIZED VIEW mv AS SELECT * FROM t")
                .await
        });
        let meta = cluster.meta();
        let alter = tokio::spawn(async move { meta.alter_parallelism(t, 3).await });
        tokio::time::sleep(Duration::from_millis(1)).await;
        let listed = cluster.meta().sql_catalog().catalog;
        let row = listed
            .relations()
            .find(|r| r.name == "mv")
            .expect("its row");
        assert_eq!(row.table_id, None);
        assert!(
            cluster.meta().relation_by_name("mv").is_none(),
            "no job yet"
        );
        let mut other = Session::new(epochlab_simulation::engine(&cluster, 2));
        other.execute("DROP MATERIALIZED VIEW mv").await.unwrap();
        alter.await.unwrap().unwrap();
        let err = create.await.unwrap().unwrap_err();
        assert!(err.to_string().contains("was dropped"), "{err}");
        assert!(
            cluster.meta().relation_by_name("mv").is_none(),
            "its job went"
        );
        let listed = cluster.meta().sql_catalog().catalog;
        assert!(listed.relations().all(|r| r.name != "mv"));
    });
}

#[test]
fn a_drop_takes_readers_without_rows_along_and_is_refused_before_its_commit_by_one_with_a_row() {
    run(19, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, config()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute(
            "CREATE TABLE t (k int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 1); FLUSH; \
             CREATE MATERIALIZED VIEW mv AS SELECT * FROM t; \
             CREATE MATERIALIZED VIEW mv2 AS SELECT * FROM t",
        )
        .await
        .unwrap();
        // A job over mv without a catalog row (a DROP a meta kill cut off after its commit): it goes first.
        let meta = cluster.meta();
        let options = epochlab_meta::JobOptions::parallelism(2);
        let mv = meta.relation_by_name("mv").unwrap().id;
        let under = meta
            .create_materialized_view("under", mv, options.clone())
            .await;
        let under = under.unwrap();
        s.execute("DROP MATERIALIZED VIEW mv").await.unwrap();
        assert!(cluster.meta().relation(under).is_none(), "taken along");
        assert!(cluster.meta().relation(mv).is_none());
        // A job over mv2 whose row does not name mv2 (a dependency the rows do not show): refused first.
        let mv2 = meta.relation_by_name("mv2").unwrap().id;
        let reader = meta.create_materialized_view("reader", mv2, options).await;
        let reader = reader.unwrap();
        let row = epochlab_meta::sql_catalog::RelationCatalog {
            name: "reader".into(),
            schema: "public".into(),
            database: "dev".into(),
            kind: epochlab_frontend::catalog::RelationKind::MaterializedView,
            table_id: Some(reader),
            owner: "root".into(),
            ..Default::default()
        };
        meta.catalog_write(|c| c.create_relation(row)).unwrap();
        let before = cluster.meta().sql_catalog().version;
        let err = s.execute("DROP MATERIALIZED VIEW mv2").await.unwrap_err();
        assert!(err.to_string().contains("other jobs depend on it"), "{err}");
        let after = cluster.meta().sql_catalog();
        assert_eq!(after.version, before, "nothing committed");
        assert!(after.catalog.relations().any(|r| r.name == "mv2"));
        assert!(cluster.meta().relation(mv2).is_some());
    });
}

#[test]
fn a_drop_database_takes_its_jobs_in_one_request() {
    run(20, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, config()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute("CREATE DATABASE d").await.unwrap();
        let mut in_d = Session::new(epochlab_simulation::engine(&cluster, 2));
        in_d.database = "d".into();
        in_d.execute(
            "CREATE TABLE t (k int PRIMARY KEY); INSERT INTO t VALUES (1); FLUSH; \
             CREATE MATERIALIZED VIEW mv AS SELECT * FROM t; \
             CREATE MATERIALIZED VIEW mv2 AS SELECT count(*) FROM mv",
        )
        .await
        .unwrap();
        let jobs = cluster.meta().catalog().relations.len();
        assert!(jobs >= 3, "{jobs}");
        s.execute("DROP DATABASE d").await.unwrap();
        assert_eq!(cluster.meta().catalog().relations.len(), jobs - 3);
        let listed = cluster.meta().sql_catalog().catalog;
        assert!(listed.relations().all(|r| r.database != "d"));
        cluster.check_recoveries(0).unwrap();
    });
}
