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
