//! `EXPLAIN CREATE MATERIALIZED VIEW` shows RisingWave's fragment cut: a hash exchange on each join key, none
//! between a join and an aggregation grouped by the join key, a hash exchange on a group key the input is not
//! distributed by, and a singleton fragment (simple exchange) under a global aggregation.

use std::sync::Arc;

use epochlab_frontend::{Output, Session};
use epochlab_sim::{Cluster, ClusterConfig, run};

/// The lines of an `EXPLAIN`'s output.
async fn explain(s: &mut Session, sql: &str) -> Vec<String> {
    let Output::Rows { rows, .. } = s.execute(sql).await.expect(sql) else {
        panic!("{sql}: no rows")
    };
    rows.into_iter().map(|r| r.join(" ")).collect()
}

/// The fragments of an `EXPLAIN (DISTSQL)`: each fragment's lines, keyed by its header.
fn fragments(lines: &[String]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for l in lines {
        if l.starts_with("Fragment ") {
            out.push((l.clone(), Vec::new()));
        } else if let Some((_, body)) = out.last_mut()
            && !l.trim().is_empty()
        {
            body.push(l.clone());
        }
    }
    out
}

fn count(lines: &[String], needle: &str) -> usize {
    lines.iter().filter(|l| l.contains(needle)).count()
}

#[test]
fn explain_shows_the_fragment_cut_of_a_join_and_a_group_by() {
    run(1, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute("CREATE TABLE t1 (a int, b int); CREATE TABLE t2 (a int, c int)")
            .await
            .unwrap();
        let join_agg = "CREATE MATERIALIZED VIEW mv AS SELECT t1.a, count(*) AS n, sum(c) AS s \
                        FROM t1 JOIN t2 ON t1.a = t2.a GROUP BY t1.a";
        let tree = explain(&mut s, &format!("EXPLAIN {join_agg}")).await;
        assert!(tree[0].starts_with("StreamMaterialize"), "{tree:#?}");
        assert!(
            tree[1].contains("StreamHashAgg { group_key: [t1.a]"),
            "{tree:#?}"
        );
        assert_eq!(count(&tree, "StreamExchange { dist: HashShard(t1.a) }"), 1);
        assert_eq!(count(&tree, "StreamExchange { dist: HashShard(t2.a) }"), 1);
        assert_eq!(
            count(&tree, "StreamExchange"),
            2,
            "no exchange above the join"
        );
        let dist = explain(&mut s, &format!("EXPLAIN (DISTSQL) {join_agg}")).await;
        let f = fragments(&dist);
        assert_eq!(f.len(), 3, "{dist:#?}");
        let root = &f[0].1;
        assert!(root[0].starts_with("StreamMaterialize"));
        assert_eq!(count(root, "StreamHashJoin"), 1);
        assert_eq!(count(root, "StreamExchange HashShard"), 2);
        for (_, body) in &f[1..] {
            assert!(body[0].starts_with("StreamTableScan"), "{body:#?}");
        }
        // EXPLAIN creates nothing: the name is still free.
        s.execute("CREATE TABLE mv (x int)")
            .await
            .expect("EXPLAIN created no mv");
        let by_b =
            "EXPLAIN CREATE MATERIALIZED VIEW m2 AS SELECT b, count(*) AS n FROM t1 GROUP BY b";
        let tree = explain(&mut s, by_b).await;
        assert_eq!(
            count(&tree, "StreamExchange { dist: HashShard(t1.b) }"),
            1,
            "{tree:#?}"
        );
        let global = "EXPLAIN CREATE MATERIALIZED VIEW m3 AS SELECT sum(a) AS s FROM t1";
        let tree = explain(&mut s, global).await;
        assert!(tree[1].contains("StreamSimpleAgg"), "{tree:#?}");
        assert_eq!(
            count(&tree, "StreamExchange { dist: Single }"),
            1,
            "{tree:#?}"
        );
        cluster.shutdown();
    });
}

/// `EXPLAIN CREATE MATERIALIZED VIEW m AS <q>`'s lines, or the error.
async fn explain_mv(s: &mut Session, q: &str) -> Result<Vec<String>, String> {
    let sql = format!("EXPLAIN CREATE MATERIALIZED VIEW m AS {q}");
    match s.execute(&sql).await {
        Ok(Output::Rows { rows, .. }) => Ok(rows.into_iter().map(|r| r.join(" ")).collect()),
        Ok(other) => Err(format!("{other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

#[test]
fn explain_shows_hash_joins_as_risingwave_plans_them() {
    run(1, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute(
            "CREATE TABLE t1 (v1 int, v2 int); CREATE TABLE t2 (v3 int, v4 int); \
             CREATE TABLE t3 (v5 int, v6 int primary key)",
        )
        .await
        .unwrap();
        // A comma join with WHERE equalities: the equalities become the joins' keys.
        let q = "select * from t1, t2, t3 where t1.v1 = t2.v3 and t1.v1 = t3.v5";
        let tree = explain_mv(&mut s, q).await.unwrap();
        assert_eq!(
            count(
                &tree,
                "StreamHashJoin { type: Inner, predicate: t1.v1 = t2.v3,"
            ),
            1,
            "{tree:#?}"
        );
        assert_eq!(
            count(
                &tree,
                "StreamHashJoin { type: Inner, predicate: t1.v1 = t3.v5,"
            ),
            1,
            "{tree:#?}"
        );
        assert_eq!(count(&tree, "StreamFilter"), 0, "{tree:#?}");
        // The join's output is hashed by t1.v1 already: no exchange between the two joins.
        assert_eq!(count(&tree, "StreamExchange"), 3, "{tree:#?}");
        // An inner join's other conjuncts are a filter above it; a conjunct over one side filters that side.
        let q = "select * from t1 join t2 on t1.v1 = t2.v3 and t1.v2 > t2.v4 where t1.v2 > 3";
        let tree = explain_mv(&mut s, q).await.unwrap();
        let at = |needle: &str| {
            tree.iter()
                .position(|l| l.contains(needle))
                .unwrap_or(usize::MAX)
        };
        assert!(
            at("StreamFilter { predicate: (t1.v2 > t2.v4) }")
                < at("StreamHashJoin { type: Inner, predicate: t1.v1 = t2.v3,"),
            "{tree:#?}"
        );
        assert!(
            at("StreamExchange { dist: HashShard(t1.v1) }")
                < at("StreamFilter { predicate: (t1.v2 > 3"),
            "{tree:#?}"
        );
        // An outer join keeps them in its predicate.
        let q = "select * from t1 left join t2 on t1.v1 = t2.v3 and t1.v2 > t2.v4";
        let tree = explain_mv(&mut s, q).await.unwrap();
        assert_eq!(
            count(
                &tree,
                "StreamHashJoin { type: LeftOuter, predicate: t1.v1 = t2.v3 AND (t1.v2 > t2.v4),"
            ),
            1,
            "{tree:#?}"
        );
        assert_eq!(count(&tree, "StreamFilter"), 0, "{tree:#?}");
        // A WHERE comparing the padded side's column makes an outer join inner (RisingWave's
        // simplify_outer), and then moves into that side.
        let q = "select * from t1 left join t2 on t1.v1 = t2.v3 where t2.v4 > 1";
        let tree = explain_mv(&mut s, q).await.unwrap();
        assert_eq!(
            count(
                &tree,
                "StreamHashJoin { type: Inner, predicate: t1.v1 = t2.v3,"
            ),
            1,
            "{tree:#?}"
        );
        let at = |needle: &str| {
            tree.iter()
                .position(|l| l.contains(needle))
                .unwrap_or(usize::MAX)
        };
        assert!(
            at("StreamExchange { dist: HashShard(t2.v3) }")
                < at("StreamFilter { predicate: (t2.v4 > 1"),
            "{tree:#?}"
        );
        // A full outer join's rows are hashed by no column: the view's pk needs an exchange.
        let q = "select * from t1 full join t2 on t1.v1 is not distinct from t2.v3";
        let tree = explain_mv(&mut s, q).await.unwrap();
        assert_eq!(
            count(&tree, "predicate: t1.v1 IS NOT DISTINCT FROM t2.v3"),
            1,
            "{tree:#?}"
        );
        assert!(
            tree[1].contains("StreamExchange { dist: HashShard(t1._row_id, t2._row_id, v1, v3) }"),
            "{tree:#?}"
        );
        // A table's own distribution is not the join's: its scan is shuffled too.
        let q = "select * from t1 right join t3 on t1.v1 = t3.v6";
        let tree = explain_mv(&mut s, q).await.unwrap();
        assert_eq!(
            count(&tree, "StreamExchange { dist: HashShard(t3.v6) }"),
            1,
            "{tree:#?}"
        );
        // NATURAL joins on the shared visible columns; CROSS has no key: a nested-loop join.
        let q = "select * from t1 natural join (select v3 as v1, v4 as v2 from t2) x";
        let tree = explain_mv(&mut s, q).await.unwrap();
        assert_eq!(
            count(&tree, "predicate: t1.v1 = t2.v3 AND t1.v2 = t2.v4"),
            1,
            "{tree:#?}"
        );
        for q in [
            "select * from t1 cross join t2",
            "select * from t1, t2 where t1.v1 > t2.v3",
        ] {
            let err = explain_mv(&mut s, q).await.expect_err(q);
            assert!(err.contains("streaming nested-loop join"), "{q}: {err}");
        }
        cluster.shutdown();
    });
}

/// An over window emitting on window close is RisingWave's `StreamEowcOverWindow` over an `StreamEowcSort` on
/// its order column, behind the exchange by its partition key.
#[test]
fn explain_shows_an_eowc_over_window_over_its_sort() {
    run(1, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute(
            "CREATE TABLE w (ts TIMESTAMP, g INT, v INT, \
             WATERMARK FOR ts AS ts - INTERVAL '1 minute') APPEND ONLY",
        )
        .await
        .unwrap();
        let q = "SELECT ts, lead(v) OVER (PARTITION BY g ORDER BY ts) FROM w EMIT ON WINDOW CLOSE";
        let tree = explain_mv(&mut s, q).await.unwrap();
        let at = |needle: &str| tree.iter().position(|l| l.contains(needle));
        let window = at("StreamEowcOverWindow { window_functions: [lead] }");
        let sort = at("StreamEowcSort");
        let exchange = at("StreamExchange { dist: HashShard(w.g) }");
        assert!(
            window.is_some() && window < sort && sort < exchange,
            "{tree:#?}"
        );
        cluster.shutdown();
    });
}
