//! `EXPLAIN CREATE MATERIALIZED VIEW` shows RisingWave's fragment cut: a hash exchange on each join key, none
//! between a join and an aggregation grouped by the join key, a hash exchange on a group key the input is not
//! distributed by, and a singleton fragment (simple exchange) under a global aggregation.

use std::sync::Arc;

use epochlab_sim::{Cluster, ClusterConfig, run};
use epochlab_sql::{Engine, Output, Session};

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
        let mut s = Session::new(Engine::new(cluster.clone(), 2));
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
        s.execute(join_agg)
            .await
            .expect_err("no streaming join yet");
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
