//! Window functions in a streaming job (RisingWave's `OverWindowExecutor`): each row's values follow the
//! changes of its partition (an update that moves a row within its partition, a delete, an insert), with
//! calls of different partitions or orders chained; a kill of every node leaves the partitions in the state
//! table, from which the executor reloads them (a test-only mutation that skips its writes must be caught);
//! a change of parallelism moves partitions with their vnodes.

use std::sync::Arc;

use epochlab_common::Toggles;
use epochlab_frontend::Session;
use epochlab_sim::{Cluster, SimContext};

mod support;
use support::{ok, query, text};

const VIEW: &str = "CREATE MATERIALIZED VIEW w AS SELECT p, o, v, \
    row_number() OVER (PARTITION BY p ORDER BY o) AS rn, \
    sum(v) OVER (PARTITION BY p ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running, \
    lag(v) OVER (PARTITION BY p ORDER BY o) AS prev, \
    count(*) OVER (PARTITION BY o) AS same_o \
    FROM t";

/// The view after its rows changed, with a kill of every node before the changes when `kill`.
async fn windows(
    ctx: SimContext,
    kill: bool,
    toggles: Toggles,
) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let config = epochlab_sim::config::three_nodes(4, toggles);
    let cluster = Arc::new(Cluster::start(&ctx, config).await);
    let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
    ok(&mut s, "SET RW_IMPLICIT_FLUSH TO true").await;
    ok(&mut s, "CREATE TABLE t (p INT, o INT, v INT)").await;
    ok(&mut s, VIEW).await;
    ok(
        &mut s,
        "INSERT INTO t VALUES (1, 1, 10), (1, 2, 20), (1, 3, 30), (2, 1, 5)",
    )
    .await;
    if kill {
        support::kill_all(&cluster, 3).await;
    }
    // The row of v 30 moves to the front of its partition; every row after it changes.
    ok(&mut s, "UPDATE t SET o = 0 WHERE v = 30").await;
    ok(&mut s, "DELETE FROM t WHERE v = 20").await;
    ok(&mut s, "INSERT INTO t VALUES (2, 2, 7)").await;
    let rows = query(&mut s, "SELECT p, o, v, rn, running, prev, same_o FROM w").await;
    let batch = query(&mut s, &VIEW.replace("CREATE MATERIALIZED VIEW w AS ", "")).await;
    cluster
        .check_recoveries(u64::from(kill))
        .expect("no state error, and only the kill's recovery");
    cluster.shutdown();
    (rows, batch)
}

fn expected() -> Vec<Vec<String>> {
    text(&[
        &["1", "0", "30", "1", "30", "NULL", "1"],
        &["1", "1", "10", "2", "40", "30", "2"],
        &["2", "1", "5", "1", "5", "NULL", "2"],
        &["2", "2", "7", "2", "12", "5", "1"],
    ])
}

#[test]
fn each_row_follows_the_changes_of_its_partition() {
    for seed in 0..3 {
        let rows = epochlab_sim::run(seed, |ctx| windows(ctx, false, Toggles::default())).value;
        let (rows, batch) = rows;
        assert_eq!(rows, expected(), "seed {seed}");
        assert_eq!(batch, expected(), "seed {seed}: the same query in batch");
    }
}

#[test]
fn partitions_reload_from_the_state_table_after_a_kill() {
    for seed in 0..3 {
        let rows = epochlab_sim::run(seed, |ctx| windows(ctx, true, Toggles::default())).value;
        let (rows, batch) = rows;
        assert_eq!(rows, expected(), "seed {seed}");
        assert_eq!(batch, expected(), "seed {seed}: the same query in batch");
    }
}

const RESCALED: &str = "CREATE MATERIALIZED VIEW w AS SELECT p, o, v, \
    sum(v) OVER (PARTITION BY p ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running \
    FROM t";

/// The view and the same query in batch after its actors went from three to one, three and one again (each
/// an offline reschedule: a recovery), with every partition changed between.
async fn rescaled(ctx: SimContext, toggles: Toggles) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let config = epochlab_sim::config::three_nodes(4, toggles);
    let cluster = Arc::new(Cluster::start(&ctx, config).await);
    let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
    ok(&mut s, "SET RW_IMPLICIT_FLUSH TO true").await;
    ok(&mut s, "CREATE TABLE t (p INT, o INT, v INT)").await;
    ok(&mut s, RESCALED).await;
    let rows = "SELECT p, o, p * 10 + o FROM generate_series(1, 30) p, generate_series(1, 3) o";
    ok(&mut s, &format!("INSERT INTO t {rows}")).await;
    for parallelism in [1, 3, 1] {
        let alter = format!("ALTER MATERIALIZED VIEW w SET PARALLELISM = {parallelism}");
        ok(&mut s, &alter).await;
        ok(&mut s, "UPDATE t SET v = v + 1000").await;
    }
    // Only the first row of each partition: a cached partition's later rows are as they were cached.
    ok(&mut s, "UPDATE t SET v = v + 1 WHERE o = 1").await;
    let view = query(&mut s, "SELECT p, o, v, running FROM w").await;
    let batch = query(
        &mut s,
        &RESCALED.replace("CREATE MATERIALIZED VIEW w AS ", ""),
    )
    .await;
    cluster
        .check_recoveries(3)
        .expect("no state error, and a recovery per reschedule");
    cluster.shutdown();
    (view, batch)
}

#[test]
fn partitions_follow_their_vnodes_when_the_parallelism_changes() {
    for seed in 0..2 {
        let (view, batch) = epochlab_sim::run(seed, |ctx| rescaled(ctx, Toggles::default())).value;
        assert_eq!(view.len(), 90, "seed {seed}");
        assert_eq!(view, batch, "seed {seed}");
    }
}

/// The test can fail: an over window that never writes its state table reloads its partitions empty after
/// the kill.
#[test]
fn a_partition_never_written_is_caught() {
    use epochlab_stream::executor::over_window::OverWindowStateWrites;
    let toggles = Toggles::default().with(OverWindowStateWrites::Skipped);
    let (rows, batch) = epochlab_sim::run(0, move |ctx| windows(ctx, true, toggles)).value;
    assert_eq!(batch, expected());
    assert_ne!(rows, expected());
}

/// `streaming/eowc/eowc_over_window.slt`'s table and views, with a kill of every node between its two
/// inserts when `kill`: each view after the second.
async fn eowc_windows(ctx: SimContext, kill: bool, toggles: Toggles) -> Vec<Vec<Vec<String>>> {
    let config = epochlab_sim::config::three_nodes(4, toggles);
    let cluster = Arc::new(Cluster::start(&ctx, config).await);
    let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
    ok(&mut s, "SET RW_IMPLICIT_FLUSH TO true").await;
    // As the file: one watermark filter, so that each insert's watermark is the table's at once (an idle
    // actor takes the others' at a checkpoint after).
    ok(&mut s, "SET STREAMING_PARALLELISM = 1").await;
    ok(
        &mut s,
        "CREATE TABLE t (tm TIMESTAMP, foo INT, bar INT, \
         WATERMARK FOR tm AS tm - INTERVAL '5 minutes') APPEND ONLY",
    )
    .await;
    ok(&mut s, "SET STREAMING_PARALLELISM = 0").await;
    let over = "OVER (PARTITION BY bar ORDER BY tm";
    let views = [
        format!(
            "SELECT tm, foo, bar, lag(foo, 2) {over}), \
             max(foo) {over} ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
             sum(foo) {over} ROWS 2 PRECEDING EXCLUDE CURRENT ROW) FROM t"
        ),
        format!("SELECT tm, foo, bar, lead(foo, 1) {over}), lead(foo, 3) {over}) FROM t"),
        format!("SELECT *, row_number() {over}) AS rn FROM t"),
    ];
    for (i, v) in views.iter().enumerate() {
        let sql = format!("CREATE MATERIALIZED VIEW mv{i} AS {v} EMIT ON WINDOW CLOSE");
        ok(&mut s, &sql).await;
    }
    ok(
        &mut s,
        "INSERT INTO t VALUES ('2023-05-06 16:51:00', 1, 100), ('2023-05-06 16:56:00', 8, 100), \
         ('2023-05-06 17:30:00', 3, 200), ('2023-05-06 17:35:00', 5, 100), \
         ('2023-05-06 17:59:00', 4, 100), ('2023-05-06 18:01:00', 6, 200)",
    )
    .await;
    if kill {
        support::kill_all(&cluster, 3).await;
    }
    ok(
        &mut s,
        "INSERT INTO t VALUES ('2023-05-06 18:10:00', 7, 100), ('2023-05-06 18:11:00', 9, 200)",
    )
    .await;
    let mut out = Vec::new();
    for i in 0..views.len() {
        out.push(query(&mut s, &format!("SELECT * FROM mv{i}")).await);
    }
    cluster
        .check_recoveries(u64::from(kill))
        .expect("no state error, and only the kill's recovery");
    cluster.shutdown();
    out
}

/// The file's expected rows after its second insert.
fn eowc_expected() -> Vec<Vec<Vec<String>>> {
    vec![
        text(&[
            &["2023-05-06 16:51:00", "1", "100", "NULL", "8", "NULL"],
            &["2023-05-06 16:56:00", "8", "100", "NULL", "8", "1"],
            &["2023-05-06 17:30:00", "3", "200", "NULL", "6", "NULL"],
            &["2023-05-06 17:35:00", "5", "100", "1", "8", "9"],
        ]),
        text(&[&["2023-05-06 16:51:00", "1", "100", "8", "4"]]),
        text(&[
            &["2023-05-06 16:51:00", "1", "100", "1"],
            &["2023-05-06 16:56:00", "8", "100", "2"],
            &["2023-05-06 17:30:00", "3", "200", "1"],
            &["2023-05-06 17:35:00", "5", "100", "3"],
            &["2023-05-06 17:59:00", "4", "100", "4"],
            &["2023-05-06 18:01:00", "6", "200", "2"],
        ]),
    ]
}

#[test]
fn an_eowc_over_window_emits_each_row_once_its_window_closes() {
    for seed in 0..2 {
        let views =
            epochlab_sim::run(seed, |ctx| eowc_windows(ctx, false, Toggles::default())).value;
        assert_eq!(views, eowc_expected(), "seed {seed}");
    }
}

#[test]
fn the_eowc_over_windows_rows_survive_a_kill_of_every_node() {
    for seed in 0..3 {
        let views =
            epochlab_sim::run(seed, |ctx| eowc_windows(ctx, true, Toggles::default())).value;
        assert_eq!(views, eowc_expected(), "seed {seed}");
    }
}

/// The test can fail: an EOWC over window that never writes its rows forgets those still waiting for
/// their windows in the kill.
#[test]
fn an_eowc_partition_never_written_is_caught() {
    use epochlab_stream::executor::over_window::OverWindowStateWrites;
    let toggles = Toggles::default().with(OverWindowStateWrites::Skipped);
    let views = epochlab_sim::run(0, move |ctx| eowc_windows(ctx, true, toggles)).value;
    assert_ne!(views, eowc_expected());
}
