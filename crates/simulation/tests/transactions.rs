//! Read-only transactions through SQL: a transaction's reads stay at the epoch its first read pinned while
//! another session writes and flushes many epochs (so committed storage merges its runs), its `now()` is
//! that epoch's time, every write inside it is refused, and `COMMIT` lets the session see the latest epoch.

use std::sync::Arc;

use epochlab_frontend::{Output, Session};
use epochlab_sim::{Cluster, ClusterConfig, run};

fn rows(out: Output) -> Vec<Vec<String>> {
    match out {
        Output::Rows { mut rows, .. } => {
            rows.sort();
            rows
        }
        Output::Done(_) => panic!("a query returns rows"),
    }
}

async fn one(s: &mut Session, sql: &str) -> String {
    rows(s.execute(sql).await.expect(sql))[0][0].clone()
}

#[test]
fn a_read_only_transaction_reads_its_snapshot() {
    run(7, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let engine = epochlab_simulation::engine(&cluster, 2);
        let (mut reader, mut writer) = (Session::new(engine.clone()), Session::new(engine));
        for sql in [
            "CREATE TABLE t (k INT PRIMARY KEY, v INT)",
            "INSERT INTO t SELECT i, 0 FROM generate_series(1, 50) i",
            "FLUSH",
        ] {
            writer.execute(sql).await.expect(sql);
        }
        reader.execute("START TRANSACTION READ ONLY").await.unwrap();
        let sum = "SELECT sum(v)::varchar || ' ' || count(*)::varchar FROM t";
        assert_eq!(one(&mut reader, sum).await, "0 50");
        let now = one(&mut reader, "SELECT now()::varchar").await;
        for round in 1..=30 {
            let sql = format!("UPDATE t SET v = {round}");
            writer.execute(&sql).await.expect(&sql);
            writer
                .execute(&format!("INSERT INTO t VALUES ({}, 1)", 100 + round))
                .await
                .unwrap();
            writer.execute("FLUSH").await.unwrap();
        }
        assert_eq!(one(&mut writer, sum).await, "2371 80");
        assert_eq!(
            one(&mut reader, sum).await,
            "0 50",
            "the snapshot holds across merges"
        );
        assert_eq!(one(&mut reader, "SELECT now()::varchar").await, now);
        for write in [
            "INSERT INTO t VALUES (0, 0)",
            "DELETE FROM t",
            "CREATE TABLE u (v INT)",
            "DROP TABLE t",
            "ALTER TABLE t ADD COLUMN w INT",
            "CREATE USER someone",
        ] {
            let err = reader.execute(write).await.expect_err(write).to_string();
            assert_eq!(
                err,
                "Permission denied: cannot execute in a read-only transaction"
            );
        }
        reader
            .execute("CREATE TABLE IF NOT EXISTS t (k INT)")
            .await
            .unwrap();
        reader.execute("COMMIT").await.unwrap();
        assert_eq!(one(&mut reader, sum).await, "2371 80");
        assert_ne!(one(&mut reader, "SELECT now()::varchar").await, now);
        assert!(
            cluster.hummock.committed_store().pinned().is_empty(),
            "COMMIT unpins"
        );
        cluster.shutdown();
    });
}

#[test]
fn a_closed_session_unpins_its_snapshot() {
    run(8, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let engine = epochlab_simulation::engine(&cluster, 2);
        let mut s = Session::new(engine);
        s.execute("CREATE TABLE t (v INT)").await.unwrap();
        s.execute("BEGIN READ ONLY").await.unwrap();
        s.execute("SELECT * FROM t").await.unwrap();
        assert_eq!(cluster.hummock.committed_store().pinned().len(), 1);
        drop(s);
        assert!(cluster.hummock.committed_store().pinned().is_empty());
        cluster.shutdown();
    });
}
