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
