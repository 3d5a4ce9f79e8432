//! The catalog's statements end to end on a session: databases, schemas, users and grants, drops with their
//! dependency errors, renames and moves, comments, `SHOW` / `DESCRIBE`, session variables, indexes and
//! sources.

use std::sync::Arc;

use epochlab_frontend::{Output, Session};
use epochlab_sim::{Cluster, ClusterConfig, run};

async fn ok(s: &mut Session, sql: &str) -> Output {
    s.execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

async fn err(s: &mut Session, sql: &str, want: &str) {
    let e = s.execute(sql).await.expect_err(sql).to_string();
    assert!(e.contains(want), "{sql}: {e}");
}

async fn rows(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    match ok(s, sql).await {
        Output::Rows { rows, .. } => rows,
        other => panic!("{sql}: {other:?}"),
    }
}

fn text(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|x| x.to_string()).collect())
        .collect()
}

#[test]
fn databases_schemas_users_and_grants() {
    run(1, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        ok(&mut s, "CREATE DATABASE d").await;
        err(&mut s, "CREATE DATABASE d", "database with name d exists").await;
        ok(&mut s, "CREATE DATABASE IF NOT EXISTS d").await;
        assert_eq!(
            rows(&mut s, "SHOW DATABASES").await,
            text(&[&["d"], &["dev"]])
        );
        err(&mut s, "DROP DATABASE dev", "currently open database").await;
        ok(&mut s, "DROP DATABASE d").await;
        ok(&mut s, "CREATE SCHEMA s").await;
        ok(&mut s, "CREATE TABLE s.t (v int)").await;
        err(
            &mut s,
            "DROP SCHEMA s",
            "cannot drop schema s because table t",
        )
        .await;
        err(&mut s, "DROP TABLE x.t", "schema not found: x").await;
        err(
            &mut s,
            "DROP TABLE a.b.c",
            "cross-database references are not implemented",
        )
        .await;
        ok(&mut s, "CREATE USER u WITH NOSUPERUSER PASSWORD 'p'").await;
        err(&mut s, "CREATE USER u", "user with name u exists").await;
        ok(
            &mut s,
            "GRANT ALL ON SCHEMA s TO u WITH GRANT OPTION GRANTED BY root",
        )
        .await;
        err(
            &mut s,
            "GRANT INSERT ON ALL SOURCES IN SCHEMA s TO u",
            "Invalid privilege type",
        )
        .await;
        err(
            &mut s,
            "GRANT ALL ON DATABASE dev TO nobody",
            "Grantee does not exist",
        )
        .await;
        ok(&mut s, "REVOKE GRANT OPTION FOR ALL ON SCHEMA s FROM u").await;
        ok(&mut s, "ALTER TABLE s.t OWNER TO u").await;
        err(&mut s, "DROP USER u", "some objects depend on it").await;
        ok(&mut s, "ALTER USER u RENAME TO w").await;
        let owner = rows(
            &mut s,
            "SELECT pg_roles.rolname FROM pg_class JOIN pg_roles ON pg_roles.oid = pg_class.relowner WHERE pg_class.relname = 't'",
        )
        .await;
        assert_eq!(owner, text(&[&["w"]]));
        ok(&mut s, "SET search_path TO s").await;
        assert_eq!(rows(&mut s, "SHOW search_path").await, text(&[&["s"]]));
        ok(&mut s, "INSERT INTO t VALUES (1)").await;
        ok(&mut s, "DROP TABLE t").await;
        ok(&mut s, "RESET search_path").await;
        ok(&mut s, "DROP SCHEMA s").await;
        ok(&mut s, "DROP USER w").await;
        err(&mut s, "SET no_such TO 1", "Unrecognized config entry").await;
    });
}

#[test]
fn drops_renames_comments_and_describe() {
    run(2, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        ok(&mut s, "SET rw_implicit_flush TO true").await;
        ok(&mut s, "CREATE TABLE t (v1 int, v2 int)").await;
        ok(&mut s, "CREATE VIEW v AS SELECT v1 FROM t").await;
        ok(&mut s, "CREATE MATERIALIZED VIEW m AS SELECT * FROM v").await;
        ok(&mut s, "CREATE INDEX i ON t (v1)").await;
        err(
            &mut s,
            "DROP TABLE t",
            "Fail to delete table `t` because 2 other relation(s) depend on it",
        )
        .await;
        err(
            &mut s,
            "DROP MATERIALIZED VIEW t",
            "Use `DROP TABLE` to drop a table.",
        )
        .await;
        err(&mut s, "DROP SINK t", "sink not found: t").await;
        err(
            &mut s,
            "INSERT INTO m VALUES (1)",
            "cannot change materialized view",
        )
        .await;
        ok(&mut s, "ALTER TABLE t RENAME TO t2").await;
        assert_eq!(
            rows(&mut s, "SHOW CREATE VIEW v").await,
            text(&[&["public.v", "CREATE VIEW v AS SELECT v1 FROM t2 AS t"]])
        );
        ok(&mut s, "INSERT INTO t2 VALUES (1, 2)").await;
        assert_eq!(rows(&mut s, "SELECT * FROM v").await, text(&[&["1"]]));
        ok(&mut s, "COMMENT ON TABLE t2 IS 'numbers'").await;
        ok(&mut s, "COMMENT ON COLUMN t2.v1 IS 'first'").await;
        let described = rows(&mut s, "DESCRIBE t2").await;
        assert_eq!(described[0], ["v1", "integer", "false", "first"]);
        assert_eq!(described[2], ["_row_id", "serial", "true", "NULL"]);
        assert_eq!(
            described.last().unwrap(),
            &["table description", "t2", "NULL", "numbers"]
        );
        assert_eq!(
            rows(&mut s, "SHOW INDEXES FROM t2").await,
            text(&[&["i", "t2", "v1 ASC", "v2", "v1"]])
        );
        ok(&mut s, "DROP VIEW v CASCADE").await;
        assert!(rows(&mut s, "SHOW MATERIALIZED VIEWS").await.is_empty());
        ok(&mut s, "DROP TABLE t2").await;
        assert!(rows(&mut s, "SHOW TABLES").await.is_empty());
        assert!(
            rows(&mut s, "SELECT name FROM rw_catalog.rw_indexes")
                .await
                .is_empty()
        );
    });
}

#[test]
fn sources_and_tables_with_connectors() {
    run(3, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        let with = "WITH (connector = 'datagen', datagen.split.num = '1')";
        ok(
            &mut s,
            &format!("CREATE SOURCE src (v int) {with} FORMAT PLAIN ENCODE JSON"),
        )
        .await;
        err(
            &mut s,
            &format!("CREATE TABLE bad (v int) {with} FORMAT DEBEZIUM ENCODE JSON"),
            "connector datagen does not support format Debezium",
        )
        .await;
        ok(
            &mut s,
            &format!("CREATE TABLE tc (v int) {with} FORMAT PLAIN ENCODE JSON"),
        )
        .await;
        err(
            &mut s,
            "CREATE TABLE src (v int)",
            "source with name src exists",
        )
        .await;
        err(&mut s, "ALTER SOURCE tc RENAME TO x", "ALTER TABLE").await;
        assert_eq!(
            rows(&mut s, "SHOW CREATE TABLE tc").await,
            text(&[&[
                "public.tc",
                "CREATE TABLE tc (v INT) WITH (connector = 'datagen', datagen.split.num = '1') FORMAT PLAIN ENCODE JSON"
            ]])
        );
        ok(&mut s, "CREATE MATERIALIZED VIEW m AS SELECT * FROM src").await;
        // The source runs: 10 random values a second by default, each in [0, 32767].
        ok(&mut s, "FLUSH").await;
        let made = rows(&mut s, "SELECT v FROM m").await;
        assert!(!made.is_empty(), "a datagen source makes rows");
        let in_range =
            |r: &Vec<String>| r[0].parse::<i32>().is_ok_and(|v| (0..=32767).contains(&v));
        assert!(made.iter().all(in_range), "{made:?}");
        err(&mut s, "DROP SOURCE src", "other relation(s) depend on it").await;
        ok(&mut s, "DROP SOURCE src CASCADE").await;
        assert!(rows(&mut s, "SHOW SOURCES").await.is_empty());
        ok(&mut s, "DROP TABLE tc").await;
    });
}

/// An index key's order as RisingWave's `DESCRIBE` and `SHOW CREATE INDEX` give it (values from its
/// `describe.rs` test), and `SELECT * EXCEPT (..)` with its binder's errors (`select_except.slt.part`).
#[test]
fn index_key_orders_and_select_except() {
    run(1, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        ok(&mut s, "CREATE TABLE t (v1 int, v2 int, v3 int, v4 int)").await;
        ok(
            &mut s,
            "CREATE INDEX idx1 ON t (v1 DESC, v2, v3) INCLUDE (v4)",
        )
        .await;
        ok(&mut s, "CREATE INDEX idx2 ON t (v2 ASC NULLS FIRST)").await;
        let described = rows(&mut s, "DESCRIBE t").await;
        let index = |name: &str| {
            let row = described.iter().find(|r| r[0] == name).expect(name);
            row[1].clone()
        };
        assert_eq!(
            index("idx1"),
            "index(v1 DESC, v2 ASC, v3 ASC) include(v4) distributed by(v1)"
        );
        assert!(
            index("idx2").starts_with("index(v2 ASC NULLS FIRST) include("),
            "{}",
            index("idx2")
        );
        let created = rows(&mut s, "SHOW CREATE INDEX idx1").await;
        assert_eq!(created[0][1], "CREATE INDEX idx1 ON t(v1 DESC, v2, v3)");
        err(
            &mut s,
            "CREATE INDEX idx3 ON t (v1 NULLS)",
            "sql parser error",
        )
        .await;

        ok(&mut s, "INSERT INTO t VALUES (1, 2, NULL, 4)").await;
        ok(&mut s, "FLUSH").await;
        assert_eq!(
            rows(&mut s, "SELECT * EXCEPT (v1, v4) FROM t").await,
            text(&[&["2", "NULL"]])
        );
        assert_eq!(
            rows(
                &mut s,
                "SELECT t.* EXCEPT (v1), * EXCEPT (v2, v3, v4) FROM t"
            )
            .await,
            text(&[&["2", "NULL", "4", "1"]])
        );
        err(
            &mut s,
            "SELECT * EXCEPT (v1, v1) FROM t",
            "Duplicate entry in except list",
        )
        .await;
        err(&mut s, "SELECT * EXCEPT (v5) FROM t", "v5").await;
        err(
            &mut s,
            "SELECT * EXCEPT (v1) FROM t a, t b",
            "Ambiguous column name",
        )
        .await;
    });
}

/// `rw_fragments` lists meta's fragments of each job under the relation's id: a table's one fragment (its
/// DML entry and materialize; RisingWave's table has two, README Limits), a view with a global aggregation
/// in two (the backfill's, hash-distributed, and the singleton aggregation reading it), each with its
/// actors' count, its state tables and its upstream fragments.
#[test]
fn rw_fragments_lists_metas_fragments() {
    run(4, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        ok(&mut s, "CREATE TABLE t (v int)").await;
        ok(
            &mut s,
            "CREATE MATERIALIZED VIEW m AS SELECT count(*) AS c FROM t",
        )
        .await;
        let q = "SELECT r.name, f.distribution_type, f.flags::varchar, f.parallelism, \
                 cardinality(f.upstream_fragment_ids), cardinality(f.state_table_ids) \
                 FROM rw_fragments f JOIN rw_relations r ON f.table_id = r.id ORDER BY f.fragment_id";
        assert_eq!(
            rows(&mut s, q).await,
            text(&[
                &["t", "HASH", "{MVIEW}", "2", "1", "1"],
                &["t", "HASH", "{DML}", "2", "0", "0"],
                &["m", "HASH", "{STREAM_SCAN}", "2", "1", "1"],
                &["m", "SINGLE", "{MVIEW}", "1", "1", "2"],
            ])
        );
    });
}
