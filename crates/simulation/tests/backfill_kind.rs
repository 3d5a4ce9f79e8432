//! RisingWave's session variable `streaming_enable_arrangement_backfill` (default false at f21fb9b7915) picks the
//! backfill executor of a new view or sink: no-shuffle backfill (`Backfill`: the upstream's actors, vnodes and
//! workers, one upstream actor each) unless the session turns it on (`ArrangementBackfill`: the job's own
//! parallelism behind a hash exchange). The variable has no other name: the simulator's
//! `SET enable_arrangement_backfill = true` is refused, as RisingWave refused it.

use std::sync::Arc;

use epochlab_frontend::{Output, Session};
use epochlab_meta::{Relation, StreamScanType};
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

/// Each actor's (worker, vnodes), in actor order.
fn placement(r: &Relation) -> Vec<(u32, Vec<usize>)> {
    r.actors
        .iter()
        .map(|a| (a.worker.0, a.vnodes.iter_ones().collect()))
        .collect()
}

#[test]
fn the_session_variable_picks_the_backfill_executor() {
    run(3, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 3));
        s.execute("CREATE TABLE t (k int, v int); INSERT INTO t SELECT generate_series, generate_series FROM generate_series(1, 50); FLUSH")
            .await
            .unwrap();
        let show = rows(&mut s, "SHOW streaming_enable_arrangement_backfill").await;
        assert_eq!(show, ["false"], "RisingWave's default at f21fb9b7915");

        let plan = rows(
            &mut s,
            "EXPLAIN CREATE MATERIALIZED VIEW mv1 AS SELECT * FROM t",
        )
        .await;
        assert!(
            plan.iter()
                .any(|l| l.contains("stream_scan_type: Backfill,")),
            "{plan:#?}"
        );
        s.execute("SET STREAMING_PARALLELISM = 2; CREATE MATERIALIZED VIEW mv1 AS SELECT * FROM t")
            .await
            .unwrap();
        let (table, mv1) = (relation(&cluster, "t"), relation(&cluster, "mv1"));
        assert_eq!(mv1.scan_type, StreamScanType::Backfill);
        assert_eq!(
            placement(&mv1),
            placement(&table),
            "no-shuffle backfill takes its upstream's actors, whatever STREAMING_PARALLELISM says"
        );

        s.execute("SET streaming_enable_arrangement_backfill = true")
            .await
            .unwrap();
        // An index's plan follows the session too (RisingWave's `gen_index_plan`).
        let index = rows(&mut s, "EXPLAIN CREATE INDEX i ON t(v)").await;
        assert!(
            index
                .iter()
                .any(|l| l.contains("stream_scan_type: ArrangementBackfill,")),
            "{index:#?}"
        );
        let plan = rows(
            &mut s,
            "EXPLAIN CREATE MATERIALIZED VIEW mv2 AS SELECT * FROM t",
        )
        .await;
        assert!(
            plan.iter()
                .any(|l| l.contains("stream_scan_type: ArrangementBackfill,")),
            "{plan:#?}"
        );
        s.execute("CREATE MATERIALIZED VIEW mv2 AS SELECT * FROM t; CREATE SINK s2 AS SELECT * FROM t WITH (connector = 'blackhole')")
            .await
            .unwrap();
        let mv2 = relation(&cluster, "mv2");
        assert_eq!(mv2.scan_type, StreamScanType::ArrangementBackfill);
        assert_eq!(mv2.actors.len(), 2, "its own parallelism");
        assert_eq!(
            relation(&cluster, "s2").scan_type,
            StreamScanType::ArrangementBackfill
        );

        for mv in ["mv1", "mv2"] {
            let n = rows(&mut s, &format!("SELECT count(*), sum(v) FROM {mv}")).await;
            assert_eq!(n, ["50 1275"], "{mv} backfilled every row");
        }

        let err = s
            .execute("SET enable_arrangement_backfill = true")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("Unrecognized config entry `enable_arrangement_backfill`"),
            "{err}"
        );
        cluster.shutdown();
    });
}
