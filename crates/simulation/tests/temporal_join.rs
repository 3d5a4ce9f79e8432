//! Temporal joins (`FOR SYSTEM_TIME AS OF PROCTIME()`, RisingWave's `TemporalJoinExecutor`): a left row joins
//! the lookup table as it stood when the row came; a change of the table changes no row already joined and
//! emits nothing; the cache a kill empties is rebuilt from the table. RisingWave's refusals in its words.

use std::sync::Arc;

use epochlab_common::Toggles;
use epochlab_common::plan::StreamNode;
use epochlab_frontend::Session;
use epochlab_sim::{Cluster, SimContext};

mod support;
use support::{ok, query, text};

const VIEW: &str = "CREATE MATERIALIZED VIEW v AS SELECT id1, a1, id2, a2 FROM stream \
                    LEFT JOIN version FOR SYSTEM_TIME AS OF PROCTIME() ON id1 = id2";

/// Left rows before and after changes of the table, with a kill of every node before the last ones when
/// `kill`: what the view holds.
async fn joined(ctx: SimContext, kill: bool) -> Vec<Vec<String>> {
    let config = epochlab_sim::config::three_nodes(4, Toggles::default());
    let cluster = Arc::new(Cluster::start(&ctx, config).await);
    let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
    ok(&mut s, "SET RW_IMPLICIT_FLUSH TO true").await;
    ok(&mut s, "CREATE TABLE stream (id1 INT, a1 INT) APPEND ONLY").await;
    ok(
        &mut s,
        "CREATE TABLE version (id2 INT, a2 INT, PRIMARY KEY (id2))",
    )
    .await;
    ok(&mut s, VIEW).await;
    ok(&mut s, "INSERT INTO version VALUES (1, 10), (2, 20)").await;
    ok(&mut s, "INSERT INTO stream VALUES (1, 1), (2, 2), (3, 3)").await;
    // Changes of the table: the rows joined before keep what they joined with.
    ok(&mut s, "UPDATE version SET a2 = 11 WHERE id2 = 1").await;
    ok(&mut s, "DELETE FROM version WHERE id2 = 2").await;
    ok(&mut s, "INSERT INTO version VALUES (3, 30)").await;
    if kill {
        support::kill_all(&cluster, 3).await;
    }
    ok(&mut s, "INSERT INTO stream VALUES (1, 4), (2, 5), (3, 6)").await;
    let rows = query(&mut s, "SELECT id1, a1, id2, a2 FROM v").await;
    cluster
        .check_recoveries(u64::from(kill))
        .expect("no state error, and only the kill's recovery");
    cluster.shutdown();
    rows
}

fn expected() -> Vec<Vec<String>> {
    text(&[
        &["1", "1", "1", "10"],
        &["1", "4", "1", "11"],
        &["2", "2", "2", "20"],
        &["2", "5", "NULL", "NULL"],
        &["3", "3", "NULL", "NULL"],
        &["3", "6", "3", "30"],
    ])
}

#[test]
fn a_left_row_joins_the_table_as_it_stood_when_it_came() {
    for seed in 0..3 {
        let rows = epochlab_sim::run(seed, |ctx| joined(ctx, false)).value;
        assert_eq!(rows, expected(), "seed {seed}");
    }
}

#[test]
fn a_kill_of_every_node_empties_the_cache_and_the_lookups_read_the_table() {
    for seed in 0..3 {
        let rows = epochlab_sim::run(seed, |ctx| joined(ctx, true)).value;
        assert_eq!(rows, expected(), "seed {seed}");
    }
}

/// What `sql` answers after the two tables, as text.
async fn refusal(ctx: SimContext, sql: &'static str) -> String {
    let config = epochlab_sim::config::three_nodes(4, Toggles::default());
    let cluster = Arc::new(Cluster::start(&ctx, config).await);
    let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
    ok(&mut s, "CREATE TABLE s (k INT, v INT)").await;
    ok(&mut s, "CREATE TABLE a (k INT, v INT) APPEND ONLY").await;
    ok(&mut s, "CREATE TABLE t (k INT, v INT, PRIMARY KEY (k))").await;
    let out = s.execute(sql).await.expect_err(sql).to_string();
    cluster.shutdown();
    out
}

#[test]
fn risingwave_refuses_what_it_refuses_in_its_words() {
    let cases = [
        (
            "CREATE MATERIALIZED VIEW m AS SELECT * FROM s JOIN t FOR SYSTEM_TIME AS OF PROCTIME() ON s.k = t.k",
            "Not supported: Temporal join requires an append-only left input",
        ),
        (
            "CREATE MATERIALIZED VIEW m AS SELECT * FROM a JOIN t FOR SYSTEM_TIME AS OF PROCTIME() ON a.v = t.v",
            "Not supported: Temporal join requires the lookup table's primary key contained exactly in the equivalence condition",
        ),
        (
            "CREATE MATERIALIZED VIEW m AS SELECT * FROM a JOIN t FOR SYSTEM_TIME AS OF NOW() ON a.k = t.k",
            "unsupported: time travel (FOR SYSTEM_TIME AS OF NOW())",
        ),
        (
            "CREATE MATERIALIZED VIEW m AS SELECT * FROM a RIGHT JOIN t FOR SYSTEM_TIME AS OF PROCTIME() ON a.k = t.k",
            "Not supported: exist dangling temporal scan",
        ),
        (
            "CREATE MATERIALIZED VIEW m AS SELECT * FROM t FOR SYSTEM_TIME AS OF PROCTIME()",
            "Not supported: exist dangling temporal scan",
        ),
    ];
    for (sql, want) in cases {
        let got = epochlab_sim::run(0, move |ctx| refusal(ctx, sql)).value;
        assert_eq!(got, want, "{sql}");
    }
}

/// A condition on the lookup table alone, which the optimizer pushes down onto its scan, joins the temporal
/// join's condition (RisingWave's `predicate_pull_up`): the join stays a temporal join, not a hash join.
#[test]
fn a_filter_on_the_lookup_table_stays_in_the_temporal_join() {
    let plan = epochlab_sim::run(0, |ctx| async move {
        let config = epochlab_sim::config::three_nodes(4, Toggles::default());
        let cluster = Arc::new(Cluster::start(&ctx, config).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
        ok(&mut s, "CREATE TABLE a (k INT, v INT) APPEND ONLY").await;
        ok(&mut s, "CREATE TABLE t (k INT, v INT, PRIMARY KEY (k))").await;
        let sql = "EXPLAIN CREATE MATERIALIZED VIEW m AS SELECT * FROM a \
                   JOIN t FOR SYSTEM_TIME AS OF PROCTIME() ON a.k = t.k AND t.v > 0 WHERE t.v < 10";
        let rows = query(&mut s, sql).await;
        cluster.shutdown();
        rows.concat().join("\n")
    })
    .value;
    assert!(plan.contains("StreamTemporalJoin"), "{plan}");
    assert!(!plan.contains("StreamHashJoin"), "{plan}");
    assert!(
        plan.contains("t.v > 0") || plan.contains("(t.v > 0"),
        "{plan}"
    );
}

/// RisingWave's `temporal_join_with_index.slt` in short: a key that is not the table's pk looks up an index
/// on it (keyed by the key, then the table's pk, hashed by the key), a changed row of the index is joined as
/// it stands now; one node killed for good, its actors moved: each temporal join actor stays on the node of
/// the index's actor of the same vnodes (no-shuffle partners move together), whose writes it reads.
#[test]
fn a_temporal_join_looks_an_index_up_and_stays_beside_it_when_actors_move() {
    for (seed, parallelism) in [(0, 3), (1, 5), (2, 12)] {
        let (rows, apart, joined) = epochlab_sim::run(seed, move |ctx| async move {
            let config = epochlab_sim::config::three_nodes(4, Toggles::default());
            let cluster = Arc::new(Cluster::start(&ctx, config).await);
            let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
            ok(&mut s, "SET RW_IMPLICIT_FLUSH TO true").await;
            ok(&mut s, &format!("SET STREAMING_PARALLELISM = {parallelism}")).await;
            ok(&mut s, "CREATE TABLE stream (id1 INT, a1 INT, b1 INT) APPEND ONLY").await;
            let version = "CREATE TABLE version (id2 INT, a2 INT, b2 INT, PRIMARY KEY (id2))";
            ok(&mut s, version).await;
            ok(&mut s, "CREATE INDEX idx ON version (a2)").await;
            let view = "CREATE MATERIALIZED VIEW v AS SELECT id1, a1, id2, a2 FROM stream LEFT JOIN \
                        version FOR SYSTEM_TIME AS OF PROCTIME() ON b1 = b2 AND a1 = a2";
            ok(&mut s, view).await;
            ok(&mut s, "INSERT INTO version VALUES (2, 22, 222), (8, 22, 222)").await;
            ok(&mut s, "INSERT INTO stream VALUES (2, 22, 222)").await;
            assert!(cluster.kill(epochlab_common::WorkerId(1)));
            // Recovery starts at the next barrier and moves the actors once the node's heartbeat expires.
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            cluster.wait_ready().await;
            ok(&mut s, "UPDATE version SET b2 = 333 WHERE id2 = 2").await;
            ok(&mut s, "INSERT INTO stream VALUES (2, 22, 222)").await;
            let rows = query(&mut s, "SELECT id1, a1, id2, a2 FROM v").await;
            let rel = |name: &str| cluster.meta().relation_by_name(name).expect(name);
            let (idx, v) = (rel("idx"), rel("v"));
            let writers: Vec<_> = idx.actors.iter().map(|a| (a.worker, a.vnodes.clone())).collect();
            let graph = v.graph.as_ref().expect("a planned view");
            let fragments = graph.fragments.iter().map(|f| (&f.node, &f.actors));
            let joins = std::iter::once((&graph.root_node, &v.actors))
                .chain(fragments)
                .filter(|(node, _)| node.walk().iter().any(|n| matches!(n, StreamNode::TemporalJoin { .. })));
            let join_actors: Vec<_> = joins.flat_map(|(_, actors)| actors.iter()).collect();
            let apart: Vec<_> = join_actors
                .iter()
                .filter(|a| !writers.contains(&(a.worker, a.vnodes.clone())))
                .map(|a| a.actor_id)
                .collect();
            cluster.shutdown();
            (rows, apart, join_actors.len())
        })
        .value;
        let want = text(&[
            &["2", "22", "2", "22"],
            &["2", "22", "8", "22"],
            &["2", "22", "8", "22"],
        ]);
        assert_eq!(rows, want, "seed {seed}");
        assert!(
            apart.is_empty(),
            "seed {seed}: actors {apart:?} apart from the index's writers"
        );
        assert!(joined > 0, "seed {seed}: no temporal join actor found");
    }
}
