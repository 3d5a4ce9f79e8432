//! Watermarks and emit-on-window-close: a table's `WATERMARK FOR` drops late rows (RisingWave's watermark
//! filter), keeps its watermark through a kill of every compute node, and an `EMIT ON WINDOW CLOSE` view
//! holds each row until the watermark passes it, its buffer kept through a kill too; an EOWC aggregation
//! or group top-N emits each window once, when it closes. The values are RisingWave's expected outputs
//! (`streaming/eowc/eowc_select.slt`, `eowc_group_agg.slt`, `eowc_group_top_n.slt`) or follow from its rule:
//! a row whose event time is below the watermark as it stood before the row's chunk is late.

use std::sync::Arc;

use epochlab_common::Toggles;
use epochlab_frontend::Session;
use epochlab_sim::{Cluster, ClusterConfig, SimContext};
use epochlab_stream::executor::watermark_filter::WatermarkPersist;

mod support;
use support::{ok, query, text};

fn config(toggles: Toggles) -> ClusterConfig {
    epochlab_sim::config::three_nodes(4, toggles)
}

async fn kill_all(cluster: &Cluster) {
    support::kill_all(cluster, 3).await;
}

const TABLE: &str = "CREATE TABLE t (ts TIMESTAMP, v INT, \
                     WATERMARK FOR ts AS ts - INTERVAL '5 minutes') APPEND ONLY";

/// Rows in three statements, a kill after the second when `kill`, then a late row and an on-time one:
/// what the table and a view over it hold.
async fn late_rows(ctx: SimContext, kill: bool, toggles: Toggles) -> Vec<Vec<String>> {
    let cluster = Arc::new(Cluster::start(&ctx, config(toggles)).await);
    let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
    // One actor: its watermark is the table's (each actor keeps its own, as in RisingWave).
    ok(&mut s, "SET streaming_parallelism = 1").await;
    ok(&mut s, TABLE).await;
    ok(&mut s, "SET streaming_parallelism = 0").await;
    ok(&mut s, "CREATE MATERIALIZED VIEW m AS SELECT ts, v FROM t").await;
    ok(&mut s, "INSERT INTO t VALUES ('2023-05-06 16:51:00', 1)").await;
    ok(&mut s, "FLUSH").await;
    // The watermark becomes 16:51:01; 16:51:00 was on time when it came.
    ok(&mut s, "INSERT INTO t VALUES ('2023-05-06 16:56:01', 2)").await;
    ok(&mut s, "FLUSH").await;
    if kill {
        kill_all(&cluster).await;
    }
    ok(
        &mut s,
        "INSERT INTO t VALUES ('2023-05-06 16:50:30', 3), ('2023-05-06 16:51:01', 4), (NULL, 5)",
    )
    .await;
    ok(&mut s, "FLUSH").await;
    let table = query(&mut s, "SELECT ts::varchar, v FROM t").await;
    let view = query(&mut s, "SELECT ts::varchar, v FROM m").await;
    assert_eq!(table, view, "the view holds the table's rows");
    cluster
        .check_recoveries(u64::from(kill))
        .expect("no state error, and only the kill's recovery");
    cluster.shutdown();
    table
}

fn on_time() -> Vec<Vec<String>> {
    text(&[
        &["2023-05-06 16:51:00", "1"],
        &["2023-05-06 16:51:01", "4"],
        &["2023-05-06 16:56:01", "2"],
    ])
}

#[test]
fn a_row_below_the_watermark_is_dropped() {
    for seed in 0..3 {
        let rows = epochlab_sim::run(seed, |ctx| late_rows(ctx, false, Toggles::default())).value;
        assert_eq!(rows, on_time(), "seed {seed}");
    }
}

#[test]
fn the_watermark_survives_a_kill_of_every_node() {
    for seed in 0..3 {
        let rows = epochlab_sim::run(seed, |ctx| late_rows(ctx, true, Toggles::default())).value;
        assert_eq!(rows, on_time(), "seed {seed}");
    }
}

/// The test can fail: a filter that never writes its watermark forgets it in the kill and keeps the late
/// row.
#[test]
fn a_watermark_never_persisted_is_caught() {
    let toggles = Toggles::default().with(WatermarkPersist::Never);
    let rows = epochlab_sim::run(0, move |ctx| late_rows(ctx, true, toggles)).value;
    assert_ne!(rows, on_time());
    assert!(rows.contains(&vec!["2023-05-06 16:50:30".to_string(), "3".to_string()]));
}

/// `streaming/eowc/eowc_select.slt`, with a kill between its two inserts when `kill`: what the view shows
/// after each.
async fn eowc_select(
    ctx: SimContext,
    kill: bool,
    toggles: Toggles,
) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let cluster = Arc::new(Cluster::start(&ctx, config(toggles)).await);
    let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
    ok(&mut s, "SET streaming_parallelism = 1").await;
    ok(&mut s, &TABLE.replace(" v INT", " foo INT")).await;
    ok(&mut s, "SET streaming_parallelism = 0").await;
    ok(
        &mut s,
        "CREATE MATERIALIZED VIEW mv AS SELECT ts, foo FROM t EMIT ON WINDOW CLOSE",
    )
    .await;
    ok(
        &mut s,
        "INSERT INTO t VALUES ('2023-05-06 16:51:00', 1), ('2023-05-06 16:56:00', 8), \
         ('2023-05-06 17:30:00', 3), ('2023-05-06 17:59:00', 4), ('2023-05-06 18:01:00', 6)",
    )
    .await;
    ok(&mut s, "FLUSH").await;
    let q = "SELECT ts::varchar, foo FROM mv";
    let first = query(&mut s, q).await;
    if kill {
        kill_all(&cluster).await;
    }
    ok(&mut s, "INSERT INTO t VALUES ('2023-05-06 18:10:00', 7)").await;
    ok(&mut s, "FLUSH").await;
    let second = query(&mut s, q).await;
    cluster
        .check_recoveries(u64::from(kill))
        .expect("no state error, and only the kill's recovery");
    cluster.shutdown();
    (first, second)
}

fn check_eowc_select(kill: bool) {
    for seed in 0..3 {
        let toggles = Toggles::default();
        let (first, second) =
            epochlab_sim::run(seed, move |ctx| eowc_select(ctx, kill, toggles)).value;
        let mut expected = vec![
            ["2023-05-06 16:51:00", "1"],
            ["2023-05-06 16:56:00", "8"],
            ["2023-05-06 17:30:00", "3"],
        ];
        let rows = |e: &[[&str; 2]]| -> Vec<Vec<String>> {
            e.iter()
                .map(|r| r.iter().map(|c| c.to_string()).collect())
                .collect()
        };
        assert_eq!(
            first,
            rows(&expected),
            "seed {seed}, kill {kill}: below 17:56"
        );
        expected.push(["2023-05-06 17:59:00", "4"]);
        expected.push(["2023-05-06 18:01:00", "6"]);
        assert_eq!(
            second,
            rows(&expected),
            "seed {seed}, kill {kill}: below 18:05"
        );
    }
}

#[test]
fn emit_on_window_close_holds_rows_until_the_watermark_passes() {
    check_eowc_select(false);
}

#[test]
fn the_eowc_buffer_survives_a_kill_of_every_node() {
    check_eowc_select(true);
}

/// The test can fail: a sort that never writes its buffer loses the rows waiting in it (17:59 and 18:01)
/// in the kill.
#[test]
fn an_eowc_buffer_never_written_is_caught() {
    use epochlab_stream::executor::sort::SortBufferWrites;
    let toggles = Toggles::default().with(SortBufferWrites::Skipped);
    let (_, second) = epochlab_sim::run(0, move |ctx| eowc_select(ctx, true, toggles)).value;
    assert!(
        !second.iter().any(|r| r[0] == "2023-05-06 17:59:00"),
        "{second:?}"
    );
}

/// `streaming/eowc/eowc_group_agg.slt` (`query` an aggregation) or `eowc_group_top_n.slt` (a group
/// top-N, under RisingWave's EOWC sort), with a kill between its first two inserts when `kill`, and a third
/// insert that closes no window: what the view shows after each insert.
async fn eowc_windows(
    ctx: SimContext,
    query_sql: &'static str,
    kill: bool,
) -> Vec<Vec<Vec<String>>> {
    let cluster = Arc::new(Cluster::start(&ctx, config(Toggles::default())).await);
    let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
    ok(&mut s, "SET streaming_parallelism = 1").await;
    ok(&mut s, &TABLE.replace(" v INT", " foo INT")).await;
    ok(&mut s, "SET streaming_parallelism = 0").await;
    let view = format!("CREATE MATERIALIZED VIEW mv AS {query_sql} EMIT ON WINDOW CLOSE");
    ok(&mut s, &view).await;
    let inserts = [
        "('2023-05-06 16:51:00', 1), ('2023-05-06 16:56:00', 8), ('2023-05-06 17:30:00', 3), \
         ('2023-05-06 17:59:00', 4), ('2023-05-06 18:01:00', 6)",
        "('2023-05-06 18:10:00', 7)",
        "('2023-05-06 18:20:00', 9)",
    ];
    let mut seen = Vec::new();
    for (i, rows) in inserts.iter().enumerate() {
        ok(&mut s, &format!("INSERT INTO t VALUES {rows}")).await;
        ok(&mut s, "FLUSH").await;
        seen.push(query(&mut s, "SELECT window_start::varchar, m FROM mv").await);
        if kill && i == 0 {
            kill_all(&cluster).await;
        }
    }
    cluster
        .check_recoveries(u64::from(kill))
        .expect("no state error, and only the kill's recovery");
    cluster.shutdown();
    seen
}

fn check_windows(query_sql: &'static str, first: [&str; 2], second: [&str; 2]) {
    let one = text(&[&first]);
    let both = text(&[&first, &second]);
    for kill in [false, true] {
        for seed in 0..3 {
            let seen = epochlab_sim::run(seed, move |ctx| eowc_windows(ctx, query_sql, kill)).value;
            let expected = vec![one.clone(), both.clone(), both.clone()];
            assert_eq!(seen, expected, "{query_sql}: seed {seed}, kill {kill}");
        }
    }
}

#[test]
fn an_eowc_aggregation_emits_each_window_once_when_it_closes() {
    let agg = "SELECT window_start, max(foo) AS m FROM tumble(t, ts, INTERVAL '1 hour') \
               GROUP BY window_start";
    check_windows(
        agg,
        ["2023-05-06 16:00:00", "8"],
        ["2023-05-06 17:00:00", "4"],
    );
}

#[test]
fn an_eowc_group_top_n_emits_each_window_once_when_it_closes() {
    let top_1 = "SELECT window_start, foo AS m FROM (SELECT *, row_number() OVER \
                 (PARTITION BY window_start ORDER BY foo) AS rownum \
                 FROM tumble(t, ts, INTERVAL '1 hour')) WHERE rownum <= 1";
    check_windows(
        top_1,
        ["2023-05-06 16:00:00", "1"],
        ["2023-05-06 17:00:00", "3"],
    );
}
