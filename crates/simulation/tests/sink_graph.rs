//! A sink over any query (RisingWave's `gen_sink_plan`): beyond one table's rows, the query's stream
//! plan goes under a `Sink` keyed by its stream key, is cut into a fragment graph, and meta builds it as
//! it builds a materialized view's, with the sink at the root of the root fragment. RisingWave's
//! `streaming/rate_limit/snapshot_amplification.slt` sinks a three-way self-join.

use std::sync::Arc;

use epochlab_common::plan::StreamNode;
use epochlab_frontend::{Output, Session};
use epochlab_meta::{JobState, Relation, RelationKind};
use epochlab_sim::{Cluster, ClusterConfig, run};

async fn rows(s: &mut Session, sql: &str) -> Vec<String> {
    let Output::Rows { rows, .. } = s.execute(sql).await.expect(sql) else {
        panic!("{sql}: no rows")
    };
    rows.into_iter().map(|r| r.join(" ")).collect()
}

fn relation(cluster: &Cluster, name: &str) -> Relation {
    cluster
        .meta()
        .relation_by_name(name)
        .unwrap_or_else(|| panic!("{name} is not in meta's catalog"))
}

/// The SQL runner's cluster: sinks as RisingWave's at f21fb9b7915, created at their first barrier.
fn config() -> ClusterConfig {
    let mut c = ClusterConfig::default();
    c.meta.sink_decoupled_from_backfill = true;
    c
}

const QUERY: &str =
    "SELECT x.i1 AS i1 FROM t x JOIN t s1 ON x.i1 = s1.i1 JOIN t s2 ON x.i1 = s2.i1";

#[test]
fn a_sink_over_a_join_is_a_fragment_graph_with_the_sink_at_its_root() {
    run(5, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, config()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
        s.execute(
            "CREATE TABLE t (i1 int); INSERT INTO t SELECT 1 FROM generate_series(1, 20); FLUSH",
        )
        .await
        .unwrap();
        let plan = rows(&mut s, &format!("EXPLAIN {QUERY}")).await;
        assert!(plan.iter().any(|l| l.contains("HashJoin")), "{plan:#?}");

        let create = format!("CREATE SINK sink AS {QUERY} WITH (connector = 'blackhole')");
        s.execute(&create).await.unwrap();
        let sink = relation(&cluster, "sink");
        assert_eq!(sink.kind, RelationKind::Sink);
        assert_eq!(sink.state, JobState::Created);
        let graph = sink
            .graph
            .as_ref()
            .expect("a sink over a join is a graph job");
        let StreamNode::Sink { sink: desc, input } = &graph.root_node else {
            panic!(
                "the root fragment's root is the sink: {:?}",
                graph.root_node
            )
        };
        assert_eq!(desc.sink_id, sink.id);
        assert_eq!(sink.sink.as_ref(), Some(desc));
        let below = input.walk();
        assert!(
            below
                .iter()
                .chain(
                    graph
                        .fragments
                        .iter()
                        .flat_map(|f| f.node.walk())
                        .collect::<Vec<_>>()
                        .iter()
                )
                .all(|n| !matches!(n, StreamNode::Sink { .. })),
            "one Sink in the graph"
        );
        let joins = std::iter::once(&graph.root_node)
            .chain(graph.fragments.iter().map(|f| &f.node))
            .flat_map(|n| n.walk())
            .filter(|n| matches!(n, StreamNode::HashJoin { .. }))
            .count();
        assert_eq!(joins, 2, "two hash joins");
        assert_eq!(
            sink.progress_tables().len(),
            3,
            "three scans, one progress table each"
        );
        assert!(
            !sink.state_tables().contains(&sink.id),
            "a sink has no table of its own"
        );
        let registered = cluster.meta().hummock().registered_tables();
        for t in sink.state_tables() {
            assert!(registered.contains(&t), "state table {t} registered");
        }

        let listed = rows(&mut s, "SHOW SINKS").await;
        assert_eq!(listed, ["sink"]);
        let err = s.execute("DROP TABLE t").await.unwrap_err().to_string();
        assert!(err.contains("depend on it"), "the sink depends on t: {err}");

        s.execute("DROP SINK sink").await.unwrap();
        assert!(cluster.meta().relation_by_name("sink").is_none());
        let registered = cluster.meta().hummock().registered_tables();
        for t in sink.state_tables() {
            assert!(!registered.contains(&t), "state table {t} unregistered");
        }
        s.execute("DROP TABLE t").await.unwrap();
    });
}

#[test]
fn an_append_only_sink_needs_an_append_only_query_or_force() {
    run(6, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, config()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
        s.execute("CREATE TABLE t (k int, v int); CREATE TABLE a (k int, v int) APPEND ONLY")
            .await
            .unwrap();
        // RisingWave's e2e_test/sink/append_only_sink.slt matches these errors by their first words.
        let cannot = Some("The sink cannot be append-only");
        let force = Some("Cannot force the sink to be append-only");
        for (sql, err) in [
            (
                "CREATE SINK s1 AS SELECT t.k FROM t JOIN a ON t.k = a.k WITH (connector = 'blackhole', type = 'append-only')",
                cannot,
            ),
            (
                "CREATE SINK s2 AS SELECT t.k FROM t JOIN a ON t.k = a.k WITH (connector = 'blackhole', type = 'append-only', force_append_only = 'true')",
                None,
            ),
            (
                "CREATE SINK s3 AS SELECT x.k FROM a x JOIN a y ON x.k = y.k WITH (connector = 'blackhole', type = 'append-only')",
                None,
            ),
            (
                "CREATE SINK s4 FROM t WITH (connector = 'blackhole', type = 'append-only')",
                cannot,
            ),
            (
                "CREATE SINK s5 FROM a WITH (connector = 'blackhole', type = 'append-only')",
                None,
            ),
            (
                "CREATE SINK s6 FROM t WITH (connector = 'blackhole', force_append_only = 'true')",
                force,
            ),
            (
                "CREATE SINK s7 FROM t WITH (connector = 'blackhole', type = 'sideways')",
                Some("sideways"),
            ),
            (
                "CREATE SINK s9 FROM t WITH (connector = 'blackhole', type = 'debezium')",
                None,
            ),
            (
                "CREATE SINK s8 FROM a WITH (connector = 'blackhole', type = 'append-only', force_append_only = 'maybe')",
                Some("`force_append_only` must be true or false"),
            ),
        ] {
            match (s.execute(sql).await, err) {
                (Ok(_), None) => {}
                (Err(e), Some(want)) => assert!(e.to_string().contains(want), "{sql}: {e}"),
                (got, want) => panic!("{sql}: {got:?}, wanted {want:?}"),
            }
        }
        let plan = rows(&mut s, "SHOW SINKS").await;
        assert_eq!(plan, ["s2", "s3", "s5", "s9"]);
    });
}

/// RisingWave's progress tracker returns a sink's tracking job at once: the sink is created at its first
/// barrier while its rate-limited backfill goes on (`snapshot_amplification.slt` relies on it).
#[test]
fn a_sink_is_created_before_its_backfill_ends() {
    run(7, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, config()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
        s.execute(
            "CREATE TABLE t (i1 int); INSERT INTO t SELECT 1 FROM generate_series(1, 1000); FLUSH",
        )
        .await
        .unwrap();
        s.execute("SET STREAMING_RATE_LIMIT = 1").await.unwrap();
        let start = tokio::time::Instant::now();
        s.execute(&format!(
            "CREATE SINK sink AS {QUERY} WITH (connector = 'blackhole')"
        ))
        .await
        .unwrap();
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "{:?}",
            start.elapsed()
        );
        let sink = relation(&cluster, "sink");
        assert_eq!(sink.state, JobState::Created);
        s.execute("FLUSH").await.unwrap();
        s.execute("DROP SINK sink").await.unwrap();
        assert!(cluster.meta().relation_by_name("sink").is_none());
    });
}

/// `EXPLAIN CREATE SINK` plans the sink whatever its connector (RisingWave's `batch/explain.slt` explains
/// a Kafka sink); RisingWave explains no logical view.
#[test]
fn explain_create_sink_shows_the_sink_plan() {
    run(8, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, config()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
        s.execute("CREATE TABLE t (v int) APPEND ONLY; CREATE TABLE u (k int PRIMARY KEY, v int)")
            .await
            .unwrap();
        let plan = rows(
            &mut s,
            "EXPLAIN CREATE SINK sink_t FROM t WITH (connector = 'kafka', type = 'append-only')",
        )
        .await;
        assert!(
            plan[0]
                .starts_with("StreamSink { type: append-only, columns: [v, t._row_id(hidden)] }"),
            "{plan:#?}"
        );
        assert!(
            plan.iter()
                .any(|l| l.contains("StreamTableScan { table: t")),
            "{plan:#?}"
        );
        let plan = rows(
            &mut s,
            "EXPLAIN CREATE SINK s AS SELECT u.v FROM u JOIN t ON u.k = t.v WITH (connector = 'blackhole')",
        )
        .await;
        assert!(
            plan[0].starts_with("StreamSink { type: upsert, columns: [v, "),
            "{plan:#?}"
        );
        assert!(plan[0].contains(", pk: ["), "{plan:#?}");
        assert!(
            plan.iter().any(|l| l.contains("StreamHashJoin")),
            "{plan:#?}"
        );
        assert!(
            cluster.meta().relation_by_name("sink_t").is_none(),
            "EXPLAIN creates nothing"
        );
        let err = s
            .execute("EXPLAIN CREATE VIEW v AS SELECT 1")
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("Not supported: EXPLAIN CREATE VIEW"),
            "{err}"
        );
        let err = s
            .execute(
                "EXPLAIN CREATE SINK s FROM t WITH (connector = 'blackhole', type = 'sideways')",
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("sideways"), "{err}");
    });
}
