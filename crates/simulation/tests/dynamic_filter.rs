//! Dynamic and temporal filters through the SQL front end and recovery: materialized views of
//! `t1, (SELECT max(v2) FROM t2) WHERE v1 > max` (and a computed key with `<=` against `min`, and
//! `WHERE v1 >= (SELECT avg(v2) FROM t2)`), and of
//! `ts > now() - interval`, over DML throughout, a compute node killed mid-stream (after a checkpoint, or
//! between checkpoints so that the uncommitted epochs are lost), each view compared with the batch
//! engine's answer to its query over the tables (the reference: a scalar subquery evaluated at bind, and
//! the batch `now()`). Each run must end with no actor failed on its state and exactly the one recovery the
//! kill caused; every view must have had rows, and rows must have left a view while staying in its table
//! (the filter's threshold moved past them).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use epochlab_common::WorkerId;
use epochlab_frontend::{Output, Session};
use epochlab_sim::{Cluster, ClusterConfig, SimContext, run};

#[derive(Clone, Copy, Debug)]
enum Kill {
    AfterCheckpoint,
    BetweenCheckpoints,
}

async fn rows(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    match s
        .execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
    {
        Output::Rows { rows, .. } => rows,
        Output::Done(_) => panic!("{sql}: no rows"),
    }
}

async fn exec(s: &mut Session, sql: &str) {
    s.execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// What the views held at one comparison: each one's ids, and `t1`'s.
struct Snapshot {
    views: Vec<BTreeSet<String>>,
    t1: BTreeSet<String>,
}

impl Snapshot {
    /// Rows that were in a view at `before` and are not now, though still in `t1`: they left its filter.
    fn left_since(&self, before: &Snapshot) -> usize {
        let pairs = before.views.iter().zip(&self.views);
        pairs
            .map(|(b, n)| b.difference(n).filter(|id| self.t1.contains(*id)).count())
            .sum()
    }
}

/// Each view against its query in the batch engine; what they held.
async fn compare(s: &mut Session, when: &str) -> Snapshot {
    let pairs = [
        (
            "SELECT v1, id FROM mv_gt ORDER BY id",
            "SELECT v1, id FROM t1 WHERE v1 > (SELECT max(v2) FROM t2) ORDER BY id",
        ),
        (
            "SELECT v1, id FROM mv_sub ORDER BY id",
            "SELECT v1, id FROM t1 WHERE v1 >= (SELECT avg(v2) FROM t2) ORDER BY id",
        ),
        (
            "SELECT id FROM mv_le ORDER BY id",
            "SELECT id FROM t1 WHERE v1 + 1 <= (SELECT min(v2) FROM t2) ORDER BY id",
        ),
    ];
    let mut views = Vec::new();
    for (view, reference) in pairs {
        let got = rows(s, view).await;
        let want = rows(s, reference).await;
        assert_eq!(got, want, "{when}: {view}");
        views.push(got.into_iter().filter_map(|r| r.last().cloned()).collect());
    }
    let t1 = rows(s, "SELECT id FROM t1").await;
    let t1 = t1.into_iter().map(|r| r[0].clone()).collect();
    Snapshot { views, t1 }
}

/// Some DML over both tables: inserts, deletes and updates of `t1`, the right side's values moving.
async fn dml(s: &mut Session, ctx: &SimContext, step: u64) {
    let r = |n: u64| ctx.rng.range_u64(0..n);
    let mut values = Vec::new();
    for i in 0..6 {
        values.push(format!("({}, {})", r(100), step * 10 + i));
    }
    exec(s, &format!("INSERT INTO t1 VALUES {}", values.join(", "))).await;
    if step > 2 {
        let id = r(step * 10);
        exec(s, &format!("DELETE FROM t1 WHERE id = {id}")).await;
        let id = r(step * 10);
        exec(s, &format!("UPDATE t1 SET v1 = {} WHERE id = {id}", r(100))).await;
    }
    // `t2`'s values in 20..80 while `t1`'s are in 0..100: each view's threshold leaves it rows.
    exec(
        s,
        &format!("INSERT INTO t2 VALUES ({}, {step})", 20 + r(60)),
    )
    .await;
    if step % 3 == 2 {
        exec(s, &format!("DELETE FROM t2 WHERE id = {}", r(step))).await;
    }
}

async fn scenario(ctx: SimContext, kill: Kill) {
    let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
    let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
    exec(&mut s, "CREATE TABLE t1 (v1 int, id int PRIMARY KEY)").await;
    exec(&mut s, "CREATE TABLE t2 (v2 int, id int PRIMARY KEY)").await;
    exec(
        &mut s,
        "CREATE MATERIALIZED VIEW mv_gt AS WITH m AS (SELECT max(v2) mx FROM t2) \
         SELECT v1, id FROM t1, m WHERE v1 > mx",
    )
    .await;
    exec(
        &mut s,
        "CREATE MATERIALIZED VIEW mv_le AS SELECT id FROM t1, (SELECT min(v2) mn FROM t2) m \
         WHERE v1 + 1 <= mn",
    )
    .await;
    // A scalar subquery in WHERE; `avg` is a decimal, so the key is `v1` cast.
    exec(
        &mut s,
        "CREATE MATERIALIZED VIEW mv_sub AS SELECT v1, id FROM t1 WHERE v1 >= (SELECT avg(v2) FROM t2)",
    )
    .await;
    let mut snapshots = Vec::new();
    for step in 0..24 {
        dml(&mut s, &ctx, step).await;
        if step == 12 {
            match kill {
                Kill::AfterCheckpoint => exec(&mut s, "FLUSH").await,
                Kill::BetweenCheckpoints => {
                    tokio::time::sleep(Duration::from_millis(ctx.rng.range_u64(30..170))).await
                }
            }
            assert!(cluster.kill(WorkerId(2)));
            tokio::time::sleep(Duration::from_secs(1)).await;
            cluster.restart(WorkerId(2));
            cluster.wait_ready().await;
            exec(&mut s, "FLUSH").await;
            snapshots.push(compare(&mut s, "after the recovery").await);
        }
        tokio::time::sleep(Duration::from_millis(ctx.rng.range_u64(20..400))).await;
        if step % 3 == 2 {
            exec(&mut s, "FLUSH").await;
            snapshots.push(compare(&mut s, &format!("step {step}")).await);
        }
    }
    exec(&mut s, "FLUSH").await;
    snapshots.push(compare(&mut s, "the end").await);
    if let Err(found) = cluster.check_recoveries(1) {
        panic!("{kill:?}: {found}");
    }
    for v in 0..snapshots[0].views.len() {
        assert!(
            snapshots.iter().any(|x| !x.views[v].is_empty()),
            "view {v} never had rows"
        );
    }
    let left: usize = snapshots.windows(2).map(|w| w[1].left_since(&w[0])).sum();
    assert!(left > 0, "no row left a view while staying in t1");
    cluster.shutdown();
}

#[test]
fn dynamic_filters_survive_a_kill_after_a_checkpoint() {
    for seed in [1, 2] {
        run(seed, move |ctx| scenario(ctx, Kill::AfterCheckpoint));
    }
}

#[test]
fn dynamic_filters_survive_a_kill_between_checkpoints() {
    for seed in [3, 4] {
        run(seed, move |ctx| scenario(ctx, Kill::BetweenCheckpoints));
    }
}

/// `ts > now() - interval '10 seconds'`: rows leave the view as virtual time passes, also across a kill.
/// Rows are written 2.5 s off the window's edge in time steps of 5 s, so the batch `now()` of the
/// reference and the view's barrier time (up to a barrier interval apart) agree on every row.
#[test]
fn a_temporal_filter_follows_the_clock_through_a_kill() {
    run(5, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        exec(
            &mut s,
            "CREATE TABLE t3 (ts timestamptz, id int PRIMARY KEY)",
        )
        .await;
        exec(
            &mut s,
            "CREATE MATERIALIZED VIEW tmv AS SELECT id FROM t3 WHERE ts > now() - interval '10 seconds'",
        )
        .await;
        let mut seen_some = false;
        for step in 0..8u64 {
            // One row 5 s old, one 5 s ahead, one far ahead.
            exec(
                &mut s,
                &format!(
                    "INSERT INTO t3 VALUES (now() - interval '5 seconds', {}), \
                     (now() + interval '5 seconds', {}), (now() + interval '1 hour', {})",
                    step * 3,
                    step * 3 + 1,
                    step * 3 + 2
                ),
            )
            .await;
            if step == 4 {
                exec(&mut s, "FLUSH").await;
                assert!(cluster.kill(WorkerId(2)));
                tokio::time::sleep(Duration::from_secs(1)).await;
                cluster.restart(WorkerId(2));
                cluster.wait_ready().await;
            }
            tokio::time::sleep(Duration::from_secs(10)).await;
            exec(&mut s, "FLUSH").await;
            let got = rows(&mut s, "SELECT id FROM tmv ORDER BY id").await;
            let want = rows(
                &mut s,
                "SELECT id FROM t3 WHERE ts > now() - interval '10 seconds' ORDER BY id",
            )
            .await;
            assert_eq!(got, want, "step {step}");
            let all = rows(&mut s, "SELECT count(*) FROM t3").await;
            seen_some |= got.len() < all[0][0].parse::<usize>().unwrap() && !got.is_empty();
        }
        assert!(seen_some, "rows left the view and others stayed");
        if let Err(found) = cluster.check_recoveries(1) {
            panic!("{found}");
        }
        cluster.shutdown();
    });
}

/// `ts > now() - interval '10 seconds'` cleans its left table by `now()`'s watermark, lazily (every 300
/// epochs: 30 s at 100 ms barriers): the rows that left the window leave the table too. A later delete or
/// update of a cleaned row is not written (RisingWave #17816), so it is no delete of a missing row.
#[test]
fn a_temporal_filter_cleans_its_left_table_and_skips_changes_of_cleaned_rows() {
    run(3, |ctx| async move {
        let config = epochlab_sim::config::three_nodes(1, epochlab_common::Toggles::default());
        let cluster = Arc::new(Cluster::start(&ctx, config).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        exec(
            &mut s,
            "CREATE TABLE t4 (ts timestamptz, id int PRIMARY KEY)",
        )
        .await;
        let view = "SELECT id FROM t4 WHERE ts > now() - interval '10 seconds'";
        exec(&mut s, &format!("CREATE MATERIALIZED VIEW tmv4 AS {view}")).await;
        let now_rows: Vec<String> = (1..=100).map(|i| format!("(now(), {i})")).collect();
        let values = now_rows.join(", ");
        exec(
            &mut s,
            &format!("INSERT INTO t4 VALUES {values}, (now() + interval '1 hour', 1000)"),
        )
        .await;
        exec(&mut s, "FLUSH").await;
        let left_rows = |cluster: &Cluster| -> usize {
            let rel = cluster.meta().relation_by_name("tmv4").expect("created");
            let tables = rel.internal_tables();
            tables
                .iter()
                .map(|t| cluster.committed_rows(t.table_id).len())
                .max()
                .unwrap_or(0)
        };
        assert_eq!(left_rows(&cluster), 101, "every row is in the left table");
        tokio::time::sleep(Duration::from_secs(45)).await;
        exec(&mut s, "FLUSH").await;
        assert_eq!(
            left_rows(&cluster),
            1,
            "the rows below the watermark are cleaned"
        );
        exec(&mut s, "DELETE FROM t4 WHERE id <= 50").await;
        exec(
            &mut s,
            "UPDATE t4 SET ts = ts - interval '1 second' WHERE id = 60",
        )
        .await;
        exec(&mut s, "FLUSH").await;
        let want = vec![vec!["1000".to_string()]];
        assert_eq!(rows(&mut s, "SELECT id FROM tmv4").await, want);
        assert_eq!(rows(&mut s, view).await, want);
        if let Err(found) = cluster.check_recoveries(0) {
            panic!("{found}");
        }
        cluster.shutdown();
    });
}

/// `UPDATE .. RETURNING` gives the updated rows' new values (temporal_filter.slt's statement), and
/// `now()` in DML is the simulation's clock.
#[test]
fn update_returning_gives_the_new_rows() {
    run(6, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        exec(&mut s, "CREATE TABLE u (v int, id int PRIMARY KEY)").await;
        exec(&mut s, "INSERT INTO u VALUES (1, 1), (2, 2), (3, 3)").await;
        let got = rows(
            &mut s,
            "UPDATE u SET v = v * 10 WHERE id >= 2 RETURNING v, id",
        )
        .await;
        let mut got = got;
        got.sort();
        assert_eq!(
            got,
            vec![
                vec!["20".to_string(), "2".into()],
                vec!["30".into(), "3".into()]
            ]
        );
        exec(&mut s, "FLUSH").await;
        let all = rows(&mut s, "SELECT v FROM u ORDER BY id").await;
        assert_eq!(
            all,
            vec![vec!["1".to_string()], vec!["20".into()], vec!["30".into()]]
        );
        exec(&mut s, "CREATE TABLE w (ts timestamptz)").await;
        exec(&mut s, "INSERT INTO w VALUES (now())").await;
        exec(&mut s, "FLUSH").await;
        let q = "SELECT ts >= '2024-02-01 00:00:00+00:00'::timestamptz AND ts <= now() FROM w";
        assert_eq!(rows(&mut s, q).await, vec![vec!["t".to_string()]]);
        cluster.shutdown();
    });
}
