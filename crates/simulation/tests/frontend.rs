//! The front end on statements outside the subset: a one-line error that names the construct, never a panic.

use std::sync::Arc;

use epochlab_frontend::{Output, Session};
use epochlab_sim::{Cluster, ClusterConfig, run};

const OUTSIDE: &[(&str, &str)] = &[
    (
        "CREATE MATERIALIZED VIEW w AS SELECT lag(k) OVER () FROM t",
        "Window function with empty PARTITION BY is not supported yet",
    ),
    (
        "CREATE MATERIALIZED VIEW m AS SELECT * FROM t a CROSS JOIN t b",
        "Not supported: streaming nested-loop join",
    ),
    (
        "SELECT * FROM t a JOIN t b USING (k) JOIN t c ON b.v = v",
        "Ambiguous column name: v",
    ),
    (
        // A WHERE's correlated subquery is a join; one in a select list is not planned.
        "SELECT (SELECT max(u.v) FROM t u WHERE u.k = t.k) FROM t",
        "unsupported: correlated subquery",
    ),
    (
        "SELECT k, v FROM t GROUP BY k",
        "must appear in the GROUP BY clause",
    ),
    ("SELECT * FROM t WHERE v SIMILAR TO 'a%'", "unsupported"),
    (
        "CREATE INDEX i ON t (nope)",
        "Item not found: Invalid column: nope",
    ),
    (
        "CREATE FUNCTION f() RETURNS int AS 'select 1' LANGUAGE sql",
        "unsupported: CREATE FUNCTION",
    ),
    (
        "CREATE MATERIALIZED VIEW x AS SELECT * FROM t EXCEPT SELECT * FROM t",
        "unsupported: streaming except",
    ),
    ("DROP INDEX i", "index not found: i"),
    (
        "ALTER TABLE t ALTER COLUMN v TYPE bigint",
        "unsupported: ALTER TABLE",
    ),
    (
        "ALTER TABLE t ADD COLUMN z int NOT NULL",
        "Feature is not yet implemented: column constraints \"NOT NULL\"",
    ),
    (
        "START TRANSACTION ISOLATION LEVEL SERIALIZABLE",
        "not yet implemented: ISOLATION LEVEL",
    ),
    ("EXPLAIN DROP TABLE t", "unsupported: EXPLAIN"),
    ("SHOW TABLES FROM nope", "schema not found: nope"),
    ("COPY t FROM STDIN", "unsupported"),
    (
        "UPDATE t SET k = k + 1",
        "update modifying the PK column is unsupported",
    ),
    (
        "INSERT INTO t VALUES (1, 'x') ON CONFLICT DO NOTHING",
        "unsupported",
    ),
    ("SELECT 1 / 0", "Division by zero"),
    (
        "CREATE MATERIALIZED VIEW m WITH (streaming_rate_limit = 1, streaming_rate_limit = 2) AS SELECT * FROM t",
        "Duplicated option: streaming_rate_limit",
    ),
    (
        "CREATE MATERIALIZED VIEW m WITH (foo = 1) AS SELECT * FROM t",
        "unexpected options in WITH clause: foo",
    ),
    ("SELEC 1", "sql parser error"),
    ("SELECT * FROM t WHERE", "sql parser error"),
    ("'", "sql parser error"),
    ("", "empty statement"),
    (";;", "empty statement"),
    (
        "INSERT INTO t VALUES (1, 'x', 3)",
        "INSERT has more expressions than target columns",
    ),
    ("INSERT INTO t VALUES (99999999999, 'x')", "out of range"),
    (
        "SELECT * FROM generate_series(1, 3, 0)",
        "step size cannot equal zero",
    ),
    ("CREATE SINK s FROM t", "sql parser error: Expected WITH"),
    (
        "CREATE SINK s FROM t WITH (connector = 'blackhole', connector = 'x')",
        "Duplicated option: connector",
    ),
    (
        "SET background_ddl = maybe",
        "Invalid value `maybe` for `background_ddl`",
    ),
    ("SET no_such = 1", "Unrecognized config entry `no_such`"),
    (
        "ALTER MATERIALIZED VIEW nope SET STREAMING_RATE_LIMIT = 1",
        "Catalog error",
    ),
];

#[test]
fn statements_outside_the_subset_are_one_line_errors() {
    run(1, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute("CREATE TABLE t (k int PRIMARY KEY, v varchar)")
            .await
            .unwrap();
        for (sql, want) in OUTSIDE {
            let err = s.execute(sql).await.expect_err(sql).to_string();
            assert!(err.contains(want), "{sql}: {err}");
            assert!(!err.contains('\n'), "{sql}: not one line: {err}");
        }
        // Inside the subset, for contrast.
        s.execute("INSERT INTO t VALUES (1, 'a'), (2, NULL)")
            .await
            .unwrap();
        s.execute("FLUSH").await.unwrap();
        let out = s
            .execute("SELECT v, k FROM t WHERE v IS NULL OR k IN (1) ORDER BY k DESC LIMIT 5")
            .await
            .unwrap();
        let Output::Rows { rows, numeric } = out else {
            panic!("rows")
        };
        assert_eq!(numeric, vec![false, true]);
        assert_eq!(
            rows,
            vec![
                vec!["NULL".to_string(), "2".into()],
                vec!["a".into(), "1".into()]
            ]
        );
        let out = s
            .execute("SELECT * FROM generate_series(1, 5) LIMIT 2 OFFSET 1")
            .await
            .unwrap();
        assert_eq!(
            out,
            Output::Rows {
                numeric: vec![true],
                rows: vec![vec!["2".into()], vec!["3".into()]]
            }
        );
        // A background view under a rate limit: one row of SHOW JOBS and of rw_ddl_progress until WAIT.
        s.execute("INSERT INTO t SELECT *, 1, 2 FROM generate_series(3, 400)")
            .await
            .expect_err("three columns");
        s.execute("SET BACKGROUND_DDL = true; SET STREAMING_RATE_LIMIT = 10")
            .await
            .unwrap();
        s.execute("CREATE MATERIALIZED VIEW bg AS SELECT k FROM t")
            .await
            .unwrap();
        let Output::Rows { rows, .. } = s.execute("SHOW JOBS").await.unwrap() else {
            panic!("rows")
        };
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0][1], "CREATE MATERIALIZED VIEW bg AS SELECT k FROM t");
        assert!(rows[0][2].ends_with('%'), "{rows:?}");
        let err = s.execute("SELECT * FROM bg").await.unwrap_err().to_string();
        assert!(err.contains("still being created"), "{err}");
        s.execute("WAIT").await.unwrap();
        let out = s
            .execute("SELECT count(*) FROM rw_catalog.rw_ddl_progress")
            .await
            .unwrap();
        assert_eq!(
            out,
            Output::Rows {
                numeric: vec![true],
                rows: vec![vec!["0".into()]]
            }
        );
        let out = s.execute("SELECT count(*) FROM bg").await.unwrap();
        assert_eq!(
            out,
            Output::Rows {
                numeric: vec![true],
                rows: vec![vec!["2".into()]]
            }
        );
        cluster.shutdown();
    });
}

/// `now()` in a query is the simulation's clock when the query starts: after the fixed origin
/// (2024-02-01T00:00:00Z), one value within a query, and moving with virtual time between queries.
#[test]
fn now_in_a_query_is_the_simulation_clock() {
    run(1, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        let one = |out: Output| match out {
            Output::Rows { rows, .. } => rows[0][0].clone(),
            Output::Done(_) => panic!("rows"),
        };
        let q = "SELECT now() >= '2024-02-01 00:00:00+00:00'::timestamptz AND now() = now()";
        assert_eq!(one(s.execute(q).await.expect(q)), "t");
        let first = one(s.execute("SELECT now()").await.unwrap());
        assert!(first.starts_with("2024-02-01 "), "{first}");
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        let later = one(s.execute("SELECT now()").await.unwrap());
        assert!(later > first, "{first} then {later}");
        cluster.shutdown();
    });
}

#[test]
fn a_materialized_view_keeps_the_zone_of_the_session_that_created_it() {
    run(1, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        for q in [
            "SET RW_IMPLICIT_FLUSH TO true",
            "SET TimeZone = 'Asia/Tokyo'",
            "CREATE TABLE t (ts timestamp)",
            "CREATE MATERIALIZED VIEW m AS SELECT ts::timestamptz AS tz, ts::timestamptz::varchar AS text FROM t",
            "SET TimeZone = 'UTC'",
            "INSERT INTO t VALUES ('2024-01-01 09:00:00')",
        ] {
            s.execute(q).await.expect(q);
        }
        let rows = |out: Output| match out {
            Output::Rows { rows, .. } => rows,
            Output::Done(_) => panic!("rows"),
        };
        // 09:00 read in Tokyo, where the view was created, is 00:00 UTC; its text kept Tokyo's offset.
        let q = "SELECT tz, text FROM m";
        assert_eq!(
            rows(s.execute(q).await.expect(q)),
            vec![vec![
                "2024-01-01 00:00:00+00:00".to_string(),
                "2024-01-01 09:00:00+09:00".to_string()
            ]]
        );
        // A timestamptz column is shown in the reading session's zone.
        s.execute("SET TimeZone = 'America/New_York'")
            .await
            .unwrap();
        let q = "SELECT tz FROM m";
        assert_eq!(
            rows(s.execute(q).await.expect(q)),
            vec![vec!["2023-12-31 19:00:00-05:00".to_string()]]
        );
        let err = s
            .execute("SET TimeZone = 'Mars/Olympus'")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("Mars/Olympus"), "{err}");
        cluster.shutdown();
    });
}
