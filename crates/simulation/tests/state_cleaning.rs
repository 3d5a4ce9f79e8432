//! State cleaning by watermark (RisingWave's table watermarks): an emit-on-window-close aggregation and an EOWC
//! sort fed many rows under a moving watermark end with state rows only for what the watermark has not
//! passed, with and without a kill of every node between two cleanings; what they emitted is what the rows
//! say, each window once.

use std::sync::Arc;

use epochlab_common::Toggles;
use epochlab_frontend::Session;
use epochlab_sim::{Cluster, SimContext};

mod support;
use support::{ok, query};

/// Rows per insert, and inserts.
const BATCH: i64 = 50_000;
const BATCHES: i64 = 4;
/// The watermark's lag: the windows at or above the largest `ts` minus it stay open.
const LAG: i64 = 10;

/// The view's rows, and the committed rows of each of its internal state tables.
async fn fed(ctx: SimContext, view: &'static str, kill: bool) -> (i64, Vec<usize>) {
    let cluster = Arc::new(
        Cluster::start(
            &ctx,
            epochlab_sim::config::three_nodes(2, Toggles::default()),
        )
        .await,
    );
    let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
    // One actor for the table: its watermark is the largest `ts` less the lag.
    ok(&mut s, "SET streaming_parallelism = 1").await;
    let table =
        format!("CREATE TABLE t (ts BIGINT, v BIGINT, WATERMARK FOR ts AS ts - {LAG}) APPEND ONLY");
    ok(&mut s, &table).await;
    ok(&mut s, "SET streaming_parallelism = 0").await;
    ok(
        &mut s,
        &format!("CREATE MATERIALIZED VIEW mv AS {view} EMIT ON WINDOW CLOSE"),
    )
    .await;
    for b in 0..BATCHES {
        let (lo, hi) = (b * BATCH, (b + 1) * BATCH - 1);
        let insert = format!("INSERT INTO t SELECT x, x % 7 FROM generate_series({lo}, {hi}) AS x");
        ok(&mut s, &insert).await;
        ok(&mut s, "FLUSH").await;
        if kill && b == 1 {
            support::kill_all(&cluster, 3).await;
        }
    }
    ok(&mut s, "FLUSH").await;
    let rows = query(&mut s, "SELECT count(*) FROM mv").await;
    let emitted: i64 = rows[0][0].parse().unwrap();
    let rel = cluster.meta().relation_by_name("mv").expect("created");
    let state = rel
        .internal_tables()
        .iter()
        .map(|t| cluster.committed_rows(t.table_id).len())
        .collect();
    cluster
        .check_recoveries(u64::from(kill))
        .expect("no state error, and only the kill's recovery");
    cluster.shutdown();
    (emitted, state)
}

/// What `view`'s state tables hold at the end: the same with and without the kill.
fn check(view: &'static str) -> Vec<usize> {
    let states: Vec<Vec<usize>> = [false, true]
        .into_iter()
        .map(|kill| {
            let (emitted, state) = epochlab_sim::run(1, move |ctx| fed(ctx, view, kill)).value;
            // The watermark is the largest `ts` less the lag: every `ts` below it is out.
            assert_eq!(emitted, BATCH * BATCHES - 1 - LAG, "{view}: kill {kill}");
            state
        })
        .collect();
    assert_eq!(states[0], states[1], "{view}: with and without the kill");
    states[0].clone()
}

#[test]
fn an_eowc_aggregation_keeps_state_only_for_open_windows() {
    let state = check("SELECT ts, count(*) AS c, sum(v) AS s, max(v) AS m FROM t GROUP BY ts");
    // The result table holds the open windows (ts from the watermark up); the materialized input of max
    // is cleaned lazily, every few hundred epochs: at most what came since its last cleaning.
    assert_eq!(state[0], LAG as usize + 1, "{state:?}");
}

#[test]
fn an_eowc_sort_keeps_only_the_rows_above_the_watermark() {
    let state = check("SELECT ts, v FROM t");
    assert_eq!(state, vec![LAG as usize + 1]);
}

/// A join on a watermark column of both sides (RisingWave's `HashJoinExecutor::handle_watermark`) passes the
/// minimum of the two watermarks, so an emit-on-window-close aggregation over it may close windows, and cleans
/// each side's rows below the other side's watermark (lazily: every 300 epochs, 30 s at 100 ms barriers).
#[test]
fn a_join_on_watermark_columns_passes_their_minimum_and_cleans_both_sides() {
    let (windows, before, after) = epochlab_sim::run(4, |ctx| async move {
        let config = epochlab_sim::config::three_nodes(1, Toggles::default());
        let cluster = Arc::new(Cluster::start(&ctx, config).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
        ok(&mut s, "SET streaming_parallelism = 1").await;
        for t in ["a", "b"] {
            let sql = format!(
                "CREATE TABLE {t} (ts BIGINT, x BIGINT, WATERMARK FOR ts AS ts - 1) APPEND ONLY"
            );
            ok(&mut s, &sql).await;
        }
        ok(&mut s, "SET streaming_parallelism = 0").await;
        let join = "SELECT a.ts, a.x AS ax, b.x AS bx FROM a JOIN b ON a.ts = b.ts";
        ok(&mut s, &format!("CREATE MATERIALIZED VIEW j AS {join}")).await;
        ok(
            &mut s,
            "CREATE MATERIALIZED VIEW e AS SELECT a.ts, count(*) AS n FROM a JOIN b ON a.ts = b.ts \
             GROUP BY a.ts EMIT ON WINDOW CLOSE",
        )
        .await;
        // a's watermark becomes 8 (its largest ts 9, less 1), b's 4: the join's is 4.
        let rows = |n: i64| {
            (0..n)
                .map(|i| format!("({i}, {i})"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        ok(&mut s, &format!("INSERT INTO a VALUES {}", rows(10))).await;
        ok(&mut s, &format!("INSERT INTO b VALUES {}", rows(6))).await;
        ok(&mut s, "FLUSH").await;
        let windows = query(&mut s, "SELECT ts, n FROM e").await;
        let sides = |cluster: &Cluster| -> Vec<usize> {
            let rel = cluster.meta().relation_by_name("j").expect("created");
            let tables = rel.internal_tables();
            tables
                .iter()
                .map(|t| cluster.committed_rows(t.table_id).len())
                .collect()
        };
        let before = sides(&cluster);
        // Past the cleaning period, new rows raise both watermarks to 99.
        tokio::time::sleep(std::time::Duration::from_secs(45)).await;
        ok(&mut s, "INSERT INTO a VALUES (100, 100)").await;
        ok(&mut s, "INSERT INTO b VALUES (100, 100)").await;
        ok(&mut s, "FLUSH").await;
        let after = sides(&cluster);
        cluster
            .check_recoveries(0)
            .expect("no state error, no recovery");
        cluster.shutdown();
        (windows, before, after)
    })
    .value;
    let closed: Vec<Vec<String>> = (0..4).map(|i| vec![i.to_string(), "1".into()]).collect();
    assert_eq!(windows, closed, "the windows below the join's watermark 4");
    assert_eq!(before, vec![10, 6], "every row of each side is kept");
    assert_eq!(
        after,
        vec![1, 1],
        "each side keeps the row at the watermark only"
    );
}
