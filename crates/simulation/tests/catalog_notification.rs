//! Meta owns the SQL catalog (RisingWave's `CatalogManager` and `NotificationManager`): every DDL reaches meta
//! as a request, each committed change takes the next notification version, and each frontend answers from a
//! cache fed by those notifications, at meta's version once its own DDL returns. A killed frontend drops its
//! cache; restarted, it rebuilds it from meta's snapshot. A front end started anew over the same meta sees
//! the same catalog, and the hidden row ids it gives new rows are ones no row had.

use std::sync::Arc;

use epochlab_frontend::{Engine, Output, Session};
use epochlab_sim::config::Topology;
use epochlab_sim::{Cluster, ClusterConfig, run};

fn two_frontends(cluster: &Arc<Cluster>) -> Arc<Engine> {
    let topology = Topology {
        frontend_nodes: 2,
        ..Topology::SINGLE_CORE
    };
    epochlab_simulation::engine_of(cluster, topology)
}

/// A session on frontend `index` (connections go round robin, so this takes the address's turns until it
/// is `index`'s).
fn session_on(engine: &Arc<Engine>, index: usize) -> Session {
    let id = (0..engine.frontend_nodes())
        .find_map(|_| engine.connect().ok().filter(|id| id.index == index))
        .expect("the frontend is up");
    Session::new(engine.clone()).on_frontend(id)
}

async fn rows(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    match s.execute(sql).await.expect(sql) {
        Output::Rows { rows, .. } => rows,
        other => panic!("{sql}: {other:?}"),
    }
}

const DDL: [&str; 16] = [
    "CREATE TABLE t (v int, w int)",
    "CREATE MATERIALIZED VIEW mv AS SELECT v FROM t WHERE v > 1",
    "CREATE VIEW w AS SELECT v FROM t",
    "CREATE INDEX i ON t(w)",
    "CREATE SCHEMA s",
    "CREATE USER u",
    "GRANT SELECT ON t TO u",
    "COMMENT ON TABLE t IS 'the table'",
    "ALTER MATERIALIZED VIEW mv RENAME TO mv2",
    "CREATE SINK sk FROM t WITH (connector = 'blackhole')",
    "CREATE DATABASE d",
    "DROP SINK sk",
    "DROP VIEW w",
    "DROP MATERIALIZED VIEW mv2",
    "DROP INDEX i",
    "DROP TABLE t",
];

#[test]
fn every_frontends_cache_is_at_metas_version_after_each_ddl() {
    run(3, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let engine = two_frontends(&cluster);
        let mut s = session_on(&engine, 0);
        let mut last = cluster.meta().sql_catalog().version;
        assert_eq!(last, 0, "the first catalog is version 0");
        for sql in DDL {
            s.execute(sql).await.expect(sql);
            let meta = cluster.meta().sql_catalog();
            assert!(meta.version > last, "{sql} committed a change");
            assert_eq!(s.catalog_version(), meta.version, "{sql}");
            for index in 0..2 {
                let cache = engine.frontend_catalog(index).expect("both are up");
                assert_eq!(cache.version(), meta.version, "{sql}: frontend {index}");
                assert_eq!(*cache.catalog(), *meta.catalog, "{sql}: frontend {index}");
            }
            last = meta.version;
        }
        for refused in [
            "CREATE SCHEMA s",
            "DROP TABLE nothing",
            "CREATE USER u",
            "GRANT SELECT ON nothing TO u",
        ] {
            assert!(s.execute(refused).await.is_err(), "{refused}");
            let meta = cluster.meta().sql_catalog();
            assert_eq!(meta.version, last, "{refused} committed nothing");
            assert_eq!(s.catalog_version(), last);
        }
        cluster.shutdown();
    });
}

const LISTINGS: [&str; 6] = [
    "SHOW TABLES",
    "SHOW MATERIALIZED VIEWS",
    "SHOW SCHEMAS",
    "SHOW DATABASES",
    "SELECT name, schema_id, owner FROM rw_catalog.rw_tables ORDER BY name",
    "SELECT name, definition FROM rw_catalog.rw_materialized_views ORDER BY name",
];

#[test]
fn a_restarted_frontend_rebuilds_its_cache_from_metas_snapshot() {
    run(4, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let engine = two_frontends(&cluster);
        let mut s0 = session_on(&engine, 0);
        s0.execute("CREATE TABLE t (v int); CREATE MATERIALIZED VIEW m1 AS SELECT v FROM t")
            .await
            .unwrap();
        assert!(engine.kill_frontend(1));
        assert!(
            engine.frontend_catalog(1).is_none(),
            "a killed frontend has no cache"
        );
        s0.execute(
            "CREATE TABLE t2 (k int PRIMARY KEY); CREATE MATERIALIZED VIEW m2 AS SELECT k FROM t2; \
             CREATE SCHEMA s; CREATE DATABASE d; DROP MATERIALIZED VIEW m1",
        )
        .await
        .unwrap();
        engine.restart_frontend(1);
        let meta = cluster.meta().sql_catalog();
        let cache = engine.frontend_catalog(1).expect("restarted");
        assert_eq!(cache.version(), meta.version);
        assert_eq!(*cache.catalog(), *meta.catalog);
        let mut s1 = session_on(&engine, 1);
        for sql in LISTINGS {
            let (on0, on1) = (rows(&mut s0, sql).await, rows(&mut s1, sql).await);
            assert!(!on1.is_empty(), "{sql}");
            assert_eq!(on0, on1, "{sql}");
        }
        assert_eq!(
            rows(&mut s1, "SHOW MATERIALIZED VIEWS").await,
            [["m2".to_string()]]
        );
        cluster.shutdown();
    });
}

#[test]
fn a_front_end_started_anew_sees_metas_catalog_and_reuses_no_row_id() {
    run(5, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut first = Session::new(epochlab_simulation::engine(&cluster, 2));
        first
            .execute("CREATE TABLE t (v int); INSERT INTO t VALUES (1), (2), (3); FLUSH")
            .await
            .unwrap();
        let mut again = Session::new(epochlab_simulation::engine(&cluster, 2));
        again
            .execute("INSERT INTO t VALUES (4), (5); FLUSH")
            .await
            .unwrap();
        let ids = rows(&mut again, "SELECT _row_id FROM t").await;
        let mut distinct = ids.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(ids.len(), 5, "{ids:?}");
        assert_eq!(distinct.len(), 5, "{ids:?}");
        assert_eq!(
            rows(&mut again, "SELECT count(*) FROM t").await,
            [["5".to_string()]]
        );
        cluster.shutdown();
    });
}
