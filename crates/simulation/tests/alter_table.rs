//! `ALTER TABLE .. ADD / DROP COLUMN` end to end (issue 54, stage 2): the table takes the new column (older
//! rows read NULL in it), every view over it keeps its own columns and stays equal to its reference, a
//! dropped column's position is never reused; and a kill of a compute node or of meta during the `ADD`
//! leaves the old table or the new one, never a mix.

use std::sync::Arc;
use std::time::Duration;

use epochlab_common::{DataType, WorkerId};
use epochlab_frontend::{Output, Session};
use epochlab_sim::{Cluster, ClusterConfig, run};

async fn rows(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    match s
        .execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
    {
        Output::Rows { rows, .. } => rows,
        other => panic!("{sql}: {other:?}"),
    }
}

async fn ok(s: &mut Session, sql: &str) {
    s.execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

fn text(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|x| x.to_string()).collect())
        .collect()
}

/// The view `m` (an aggregation over `t`, a planned job) beside the same query over `t`.
const VIEW: &str = "SELECT v, c, s FROM m ORDER BY v";
const REFERENCE: &str = "SELECT v, count(*), sum(k) FROM t GROUP BY v ORDER BY v";

/// How many columns `SELECT *` gives of `t` (its row `k = 1`, there in every test), and its definition.
async fn columns(s: &mut Session) -> (usize, String) {
    let width = rows(s, "SELECT * FROM t WHERE k = 1").await[0].len();
    let definition = rows(s, "SHOW CREATE TABLE t").await[0][1].clone();
    (width, definition)
}

const OLD: &str = "CREATE TABLE t (k INT PRIMARY KEY, v INT)";
const NEW: &str = "CREATE TABLE t (k INT PRIMARY KEY, v INT, r REAL)";

async fn setup(s: &mut Session) {
    ok(
        s,
        "SET RW_IMPLICIT_FLUSH TO true; \
         CREATE TABLE t (k int PRIMARY KEY, v int); \
         CREATE MATERIALIZED VIEW copy AS SELECT * FROM t; \
         CREATE MATERIALIZED VIEW m AS SELECT v, count(*) AS c, sum(k) AS s FROM t GROUP BY v; \
         INSERT INTO t SELECT x, x % 3 FROM generate_series(1, 30) AS g(x)",
    )
    .await;
}

#[test]
fn added_and_dropped_columns_keep_every_view() {
    run(21, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        setup(&mut s).await;
        // Jobs whose scan feeds a stateful executor directly (no projection above it): their actors were
        // built before the ADD and see the table's wider rows after its barrier.
        ok(
            &mut s,
            "CREATE TABLE u (k int PRIMARY KEY, w int); \
             INSERT INTO u SELECT x, x * 10 FROM generate_series(25, 35) AS g(x); \
             CREATE MATERIALIZED VIEW top AS SELECT * FROM t ORDER BY k DESC LIMIT 3; \
             CREATE MATERIALIZED VIEW j AS SELECT * FROM t JOIN u ON t.k = u.k",
        )
        .await;
        ok(&mut s, "ALTER TABLE t ADD COLUMN r real").await;
        assert_eq!(columns(&mut s).await, (3, NEW.to_string()));
        ok(&mut s, "INSERT INTO t VALUES (31, 1, 3.5)").await;
        ok(&mut s, "UPDATE t SET r = 1.5 WHERE k = 1").await;
        ok(&mut s, "DELETE FROM t WHERE k = 2").await;
        assert_eq!(
            rows(
                &mut s,
                "SELECT k, r FROM t WHERE k IN (1, 3, 31) ORDER BY k"
            )
            .await,
            text(&[&["1", "1.5"], &["3", "NULL"], &["31", "3.5"]])
        );
        // The view over every column kept the two it was created with; the planned one follows the table.
        assert_eq!(
            rows(&mut s, "SELECT * FROM copy WHERE k IN (1, 31) ORDER BY k").await,
            text(&[&["1", "1"], &["31", "1"]])
        );
        assert_eq!(rows(&mut s, VIEW).await, rows(&mut s, REFERENCE).await);
        assert_eq!(
            rows(&mut s, "SELECT * FROM top ORDER BY k DESC").await,
            text(&[&["31", "1"], &["30", "0"], &["29", "2"]])
        );
        assert_eq!(
            rows(&mut s, "SELECT * FROM j ORDER BY 1").await,
            rows(
                &mut s,
                "SELECT t.k, t.v, u.k, u.w FROM t JOIN u ON t.k = u.k ORDER BY 1"
            )
            .await
        );
        // A view reading `r` holds it; once it is gone `r` drops, and a new `r` is a new column.
        ok(
            &mut s,
            "CREATE MATERIALIZED VIEW reads_r AS SELECT k, r FROM t",
        )
        .await;
        let refused = s.execute("ALTER TABLE t DROP COLUMN r").await.unwrap_err();
        assert!(
            refused.to_string().contains("being referenced"),
            "{refused}"
        );
        ok(&mut s, "DROP MATERIALIZED VIEW reads_r").await;
        ok(&mut s, "DROP MATERIALIZED VIEW copy").await;
        ok(&mut s, "ALTER TABLE t DROP COLUMN r").await;
        ok(&mut s, "INSERT INTO t VALUES (32, 2)").await;
        assert_eq!(
            rows(&mut s, "SELECT * FROM top ORDER BY k DESC").await,
            text(&[&["32", "2"], &["31", "1"], &["30", "0"]])
        );
        assert_eq!(columns(&mut s).await, (2, OLD.to_string()));
        ok(&mut s, "ALTER TABLE t ADD COLUMN r varchar").await;
        assert_eq!(
            rows(&mut s, "SELECT k, r FROM t WHERE k IN (1, 31) ORDER BY k").await,
            text(&[&["1", "NULL"], &["31", "NULL"]])
        );
        assert_eq!(
            rows(&mut s, "SHOW CREATE TABLE t").await[0][1],
            "CREATE TABLE t (k INT PRIMARY KEY, v INT, r CHARACTER VARYING)"
        );
        assert_eq!(rows(&mut s, VIEW).await, rows(&mut s, REFERENCE).await);
        cluster.shutdown();
    });
}

/// A `FLUSH` that succeeds: the barrier after a restarted node may fail once more (it starts the recovery
/// that rebuilds the node's actors), as a statement of RisingWave's recovery tests may, which they retry.
async fn settle(s: &mut Session) {
    for _ in 0..20 {
        if s.execute("FLUSH").await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    panic!("no FLUSH succeeded in 20 tries");
}

/// What a kill hits during `ALTER TABLE t ADD COLUMN r`.
#[derive(Clone, Copy, Debug)]
enum Victim {
    Compute,
    Meta,
}

/// The `ADD` with a kill `delay` after it starts, then the victim back: the table has its two columns or
/// three (three when the statement succeeded), its rows read as such, both views equal their reference,
/// and a retried `ADD` gives the table `r`.
async fn add_under_kill(cluster: &Arc<Cluster>, victim: Victim, delay: Duration) {
    let mut s = Session::new(epochlab_simulation::engine(cluster, 2));
    setup(&mut s).await;
    let kill = async {
        tokio::time::sleep(delay).await;
        match victim {
            Victim::Compute => assert!(cluster.kill(WorkerId(1))),
            Victim::Meta => assert!(cluster.kill_meta()),
        }
    };
    let (altered, ()) = tokio::join!(s.execute("ALTER TABLE t ADD COLUMN r real"), kill);
    tokio::time::sleep(Duration::from_millis(300)).await;
    match victim {
        Victim::Compute => cluster.restart(WorkerId(1)),
        Victim::Meta => cluster.restart_meta().unwrap(),
    }
    cluster.wait_ready().await;
    let mut s = Session::new(epochlab_simulation::engine(cluster, 2));
    ok(&mut s, "SET RW_IMPLICIT_FLUSH TO true").await;
    settle(&mut s).await;
    let now = columns(&mut s).await;
    let what = format!("{victim:?} killed {delay:?} into the ADD ({altered:?})");
    match now.0 {
        2 => {
            assert!(
                altered.is_err(),
                "{what}: the ADD succeeded, the table has {now:?}"
            );
            assert_eq!(now.1, OLD, "{what}");
        }
        _ => assert_eq!(now, (3, NEW.to_string()), "{what}"),
    }
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM t").await,
        text(&[&["30"]]),
        "{what}"
    );
    assert_eq!(
        rows(&mut s, VIEW).await,
        rows(&mut s, REFERENCE).await,
        "{what}"
    );
    if now.0 == 2 {
        ok(&mut s, "ALTER TABLE t ADD COLUMN r real").await;
    }
    ok(&mut s, "INSERT INTO t VALUES (31, 1, 2.5)").await;
    assert_eq!(
        rows(
            &mut s,
            "SELECT k, v, r FROM t WHERE k IN (30, 31) ORDER BY k"
        )
        .await,
        text(&[&["30", "0", "NULL"], &["31", "1", "2.5"]]),
        "{what}"
    );
    assert_eq!(
        rows(&mut s, VIEW).await,
        rows(&mut s, REFERENCE).await,
        "{what}"
    );
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM copy").await,
        text(&[&["31"]]),
        "{what}"
    );
}

#[test]
fn a_kill_during_an_added_column_leaves_the_old_table_or_the_new_one() {
    for (seed, victim) in [(31, Victim::Compute), (32, Victim::Meta)] {
        // Every 250 µs through the statement's barrier (it takes about 3 ms), then later.
        let delays = (0..16).map(|i| i * 250).chain([10_000, 100_000]);
        for delay_us in delays {
            run(seed + delay_us, move |ctx| async move {
                let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
                add_under_kill(&cluster, victim, Duration::from_micros(delay_us)).await;
                cluster.shutdown();
            });
        }
    }
}

/// The crash point between meta's commit of the wider desc and the front end's catalog write: the table reads
/// as before (its SQL catalog is the old one; DML of its old columns goes in), and the retried `ADD` appends
/// after the position meta already added, which stays unnamed.
#[test]
fn a_meta_kill_between_the_replace_and_the_catalog_write_leaves_the_old_table() {
    run(41, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        setup(&mut s).await;
        let meta = cluster.meta();
        let rel = meta.relation_by_name("t").expect("t");
        meta.replace_table(rel.id, &[DataType::Float32])
            .await
            .unwrap();
        assert!(cluster.kill_meta());
        cluster.restart_meta().unwrap();
        cluster.wait_ready().await;
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        ok(&mut s, "SET RW_IMPLICIT_FLUSH TO true").await;
        settle(&mut s).await;
        assert_eq!(columns(&mut s).await, (2, OLD.to_string()));
        assert_eq!(
            cluster
                .meta()
                .relation(rel.id)
                .unwrap()
                .desc
                .column_types
                .len(),
            3
        );
        ok(&mut s, "INSERT INTO t VALUES (31, 1)").await;
        ok(&mut s, "ALTER TABLE t ADD COLUMN r real").await;
        assert_eq!(
            cluster
                .meta()
                .relation(rel.id)
                .unwrap()
                .desc
                .column_types
                .len(),
            4
        );
        ok(&mut s, "INSERT INTO t VALUES (32, 2, 0.5)").await;
        assert_eq!(
            rows(&mut s, "SELECT * FROM t WHERE k > 30 ORDER BY k").await,
            text(&[&["31", "1", "NULL"], &["32", "2", "0.5"]])
        );
        assert_eq!(rows(&mut s, VIEW).await, rows(&mut s, REFERENCE).await);
        assert_eq!(
            rows(&mut s, "SELECT count(*) FROM copy").await,
            text(&[&["32"]])
        );
        cluster.shutdown();
    });
}
