//! A table as RisingWave's two fragments: its DML entry in a fragment of its own, hash-exchanged on the
//! table's distribution key to the fragment that generates row ids and materializes. `rw_fragments` lists both; rows inserted without a row id spread over every materializing
//! actor (a row whose row id is NULL is hashed whole); updates, deletes, a kill, and `ALTER TABLE .. ADD
//! COLUMN` keep the table and a view over it equal to what was written.

use std::sync::Arc;
use std::time::Duration;

use epochlab_common::{OwnedRow, VirtualNode, WorkerId};
use epochlab_frontend::Session;
use epochlab_meta::Relation;
use epochlab_sim::{Cluster, ClusterConfig, SimContext};

mod support;
use support::{ok, query, text};

fn config() -> ClusterConfig {
    epochlab_sim::config::three_nodes(4, epochlab_common::Toggles::default())
}

fn relation(cluster: &Cluster, name: &str) -> Relation {
    let meta = cluster.meta();
    let catalog = meta.catalog();
    let rel = catalog.relations.values().find(|r| r.name == name);
    rel.expect("the table is in meta's catalog").clone()
}

/// How many of `rel`'s materializing actors own a committed row of it.
fn actors_with_rows(cluster: &Cluster, rel: &Relation) -> usize {
    let mapping = rel.mapping();
    let key = rel.desc.dist_key_indices();
    let mut owners: Vec<_> = cluster
        .committed_rows(rel.id)
        .iter()
        .map(|r: &OwnedRow| mapping.owner(VirtualNode::compute_row(r, &key, rel.desc.vnode_count)))
        .collect();
    owners.sort();
    owners.dedup();
    owners.len()
}

struct Seen {
    fragments: Vec<Vec<String>>,
    spread: usize,
    table: Vec<Vec<String>>,
    view: Vec<Vec<String>>,
    keyed: Vec<Vec<String>>,
    widened: Vec<Vec<String>>,
}

async fn scenario(ctx: SimContext, kill: bool) -> Seen {
    let cluster = Arc::new(Cluster::start(&ctx, config()).await);
    let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
    ok(&mut s, "CREATE TABLE t (v INT)").await;
    ok(&mut s, "CREATE TABLE p (k INT PRIMARY KEY, v INT)").await;
    ok(&mut s, "CREATE MATERIALIZED VIEW mv AS SELECT v FROM t").await;
    ok(
        &mut s,
        "INSERT INTO t SELECT * FROM generate_series(1, 300)",
    )
    .await;
    ok(
        &mut s,
        "INSERT INTO p SELECT g, g FROM generate_series(1, 50) g",
    )
    .await;
    ok(&mut s, "FLUSH").await;
    if kill {
        assert!(cluster.kill(WorkerId(2)));
        tokio::time::sleep(Duration::from_millis(500)).await;
        cluster.restart(WorkerId(2));
        cluster.wait_ready().await;
    }
    ok(&mut s, "UPDATE t SET v = v + 1000 WHERE v <= 100").await;
    ok(&mut s, "DELETE FROM t WHERE v > 200 AND v < 1000").await;
    ok(&mut s, "UPDATE p SET v = -k WHERE k > 40").await;
    ok(&mut s, "INSERT INTO p VALUES (7, 70)").await;
    ok(&mut s, "FLUSH").await;
    let q = "SELECT r.name, f.flags::varchar, f.parallelism FROM rw_fragments f \
             JOIN rw_tables r ON f.table_id = r.id WHERE r.name = 't'";
    let fragments = query(&mut s, q).await;
    let spread = actors_with_rows(&cluster, &relation(&cluster, "t"));
    let sums = "SELECT count(*), sum(v), min(v), max(v) FROM ";
    let table = query(&mut s, &format!("{sums} t")).await;
    let view = query(&mut s, &format!("{sums} mv")).await;
    let keyed = query(&mut s, "SELECT count(*), sum(v), sum(k) FROM p").await;
    ok(&mut s, "ALTER TABLE t ADD COLUMN w INT").await;
    ok(&mut s, "INSERT INTO t VALUES (5000, 1), (5001, 2)").await;
    ok(&mut s, "FLUSH").await;
    let widened = query(&mut s, "SELECT count(*), count(w), sum(w) FROM t").await;
    cluster
        .check_recoveries(u64::from(kill))
        .expect("only the kill's recovery");
    cluster.shutdown();
    Seen {
        fragments,
        spread,
        table,
        view,
        keyed,
        widened,
    }
}

fn check(seed: u64, kill: bool) {
    let seen = epochlab_sim::run(seed, move |ctx| scenario(ctx, kill)).value;
    assert_eq!(
        seen.fragments,
        text(&[&["t", "{DML}", "3"], &["t", "{MVIEW}", "3"]]),
        "seed {seed}: a DML fragment and a materializing one, three actors each"
    );
    assert_eq!(
        seen.spread, 3,
        "seed {seed}: rows on every materializing actor"
    );
    // 1..=100 moved to 1001..=1100, 201..=300 deleted: 101..=200 and 1001..=1100 remain.
    let sum: i64 = (101..=200).chain(1001..=1100).sum();
    let expected = text(&[&["200", &sum.to_string(), "101", "1100"]]);
    assert_eq!(seen.table, expected, "seed {seed}, kill {kill}: the table");
    assert_eq!(seen.view, expected, "seed {seed}, kill {kill}: the view");
    // k 1..=50; v = k except 7 → 70 and 41..=50 → -k.
    let v: i64 = (1..=40).sum::<i64>() - 7 + 70 - (41..=50).sum::<i64>();
    let keyed = text(&[&["50", &v.to_string(), &(1..=50).sum::<i64>().to_string()]]);
    assert_eq!(
        seen.keyed, keyed,
        "seed {seed}, kill {kill}: the keyed table"
    );
    assert_eq!(seen.widened, text(&[&["202", "2", "3"]]));
}

#[test]
fn a_table_is_a_dml_fragment_and_a_materializing_one() {
    for seed in 0..3 {
        check(seed, false);
    }
}

#[test]
fn a_kill_keeps_both_fragments_of_a_table_whole() {
    for seed in 0..3 {
        check(seed, true);
    }
}

/// Rows of a table with a generated row id (`serial`, as a source's and the random plans' tables have) reach
/// the DML fragment with NULL row ids: the exchange hashes each whole, so every materializing actor gets rows
/// and generates their ids; hashed by their NULL key alone they would all go to one actor.
fn null_row_ids_spread() -> usize {
    use epochlab_common::{DataType, Op, ScalarImpl};
    epochlab_sim::run(0, move |ctx| async move {
        let cluster = Cluster::start(&ctx, config()).await;
        let types = vec![DataType::Int64, DataType::Serial];
        let meta = cluster.meta();
        let t = meta
            .create_table_with_row_id("r", types, 1, 3)
            .await
            .unwrap();
        let rows = (0..300)
            .map(|v| {
                (
                    Op::Insert,
                    OwnedRow::new(vec![Some(ScalarImpl::Int64(v)), None]),
                )
            })
            .collect();
        cluster.dml(t, rows).await.unwrap();
        meta.flush().await.unwrap();
        assert_eq!(cluster.committed_rows(t).len(), 300);
        let spread = actors_with_rows(&cluster, &relation(&cluster, "r"));
        cluster.shutdown();
        spread
    })
    .value
}

#[test]
fn rows_without_a_row_id_spread_over_the_materializing_actors() {
    assert_eq!(null_row_ids_spread(), 3);
}
