//! `ALTER .. SET PARALLELISM` gives a job's fragments that many actors (`MetaNode::alter_parallelism`): the
//! hash-distributed fragments of the job change, a singleton stays one actor, a job reading by no-shuffle
//! follows its upstream actor for actor, and every view keeps equal to its query across the reschedule, with
//! DML before and after it.

use std::sync::Arc;

use epochlab_common::{ActorId, Op, OwnedRow, ScalarImpl};
use epochlab_frontend::Session;
use epochlab_meta::{JobOptions, StreamScanType};
use epochlab_sim::{Cluster, ClusterConfig};

mod support;
use support::{ok, query, text};

fn config() -> ClusterConfig {
    epochlab_sim::config::three_nodes(1, epochlab_common::Toggles::default())
}

/// Per fragment of relation `name`: its flags and actors, in fragment order.
async fn fragments(s: &mut Session, name: &str) -> Vec<Vec<String>> {
    let q = format!(
        "SELECT f.flags::varchar, f.parallelism FROM rw_fragments f JOIN rw_relations r \
         ON f.table_id = r.id WHERE r.name = '{name}'"
    );
    query(s, &q).await
}

#[test]
fn alter_set_parallelism_changes_the_actors_and_keeps_every_view() {
    epochlab_sim::run(3, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, config()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 6));
        ok(&mut s, "CREATE TABLE t (k INT PRIMARY KEY, v INT)").await;
        ok(
            &mut s,
            "INSERT INTO t SELECT g, g % 7 FROM generate_series(1, 500) g",
        )
        .await;
        ok(&mut s, "CREATE MATERIALIZED VIEW agg AS SELECT v, count(*) AS c, sum(k) AS s FROM t GROUP BY v").await;
        ok(
            &mut s,
            "CREATE MATERIALIZED VIEW total AS SELECT count(*) AS c FROM t",
        )
        .await;
        let expected = "SELECT v, count(*), sum(k) FROM t GROUP BY v";
        let view = "SELECT v, c, s FROM agg";
        assert_eq!(
            fragments(&mut s, "t").await,
            text(&[&["{DML}", "6"], &["{MVIEW}", "6"]])
        );

        for (sql, words) in [
            // 64 vnodes: an actor would own none.
            (
                "ALTER TABLE t SET PARALLELISM = 65",
                "the parallelism 65 is more than the 64 vnodes of fragment",
            ),
            (
                "ALTER TABLE t SET PARALLELISM = 'x'",
                "target parallelism must be a valid number or auto",
            ),
            (
                "ALTER TABLE t SET PARALLELISM = 4294967296",
                "target parallelism must be a valid number or auto: ",
            ),
            (
                "ALTER VIEW v SET PARALLELISM = 2",
                "expected RENAME or OWNER TO or SET SCHEMA after ALTER VIEW",
            ),
        ] {
            let err = s.execute(sql).await.expect_err(sql).to_string();
            assert!(err.contains(words), "{sql}: {err}");
        }
        ok(&mut s, "ALTER TABLE t SET PARALLELISM = 2").await;
        assert_eq!(
            fragments(&mut s, "t").await,
            text(&[&["{DML}", "2"], &["{MVIEW}", "2"]])
        );
        ok(&mut s, "UPDATE t SET v = v + 1 WHERE k % 3 = 0").await;
        ok(&mut s, "DELETE FROM t WHERE k > 450").await;
        ok(&mut s, "FLUSH").await;
        assert_eq!(query(&mut s, view).await, query(&mut s, expected).await);

        ok(&mut s, "ALTER MATERIALIZED VIEW agg SET PARALLELISM = 5").await;
        ok(&mut s, "ALTER MATERIALIZED VIEW total SET PARALLELISM = 4").await;
        // Its scan reads t by no-shuffle: it keeps t's 2 actors.
        let agg = fragments(&mut s, "agg").await;
        assert_eq!(agg, text(&[&["{MVIEW}", "5"], &["{STREAM_SCAN}", "2"]]));
        // A singleton and a no-shuffle scan: nothing of its own to change, and no recovery.
        let total = fragments(&mut s, "total").await;
        assert_eq!(total, text(&[&["{MVIEW}", "1"], &["{STREAM_SCAN}", "2"]]));
        ok(
            &mut s,
            "INSERT INTO t SELECT g, g % 5 FROM generate_series(1000, 1200) g",
        )
        .await;
        ok(&mut s, "FLUSH").await;
        assert_eq!(query(&mut s, view).await, query(&mut s, expected).await);
        assert_eq!(
            query(&mut s, "SELECT c FROM total").await,
            text(&[&["651"]])
        );

        ok(&mut s, "ALTER TABLE t SET PARALLELISM = auto").await;
        assert_eq!(
            fragments(&mut s, "t").await,
            text(&[&["{DML}", "6"], &["{MVIEW}", "6"]])
        );
        let q = "SELECT tf.parallelism FROM rw_table_fragments tf JOIN rw_relations r ON r.id = tf.table_id \
                 WHERE r.name IN ('t', 'agg') ORDER BY r.name";
        assert_eq!(query(&mut s, q).await, text(&[&["AUTO"], &["FIXED(5)"]]));
        cluster
            .check_recoveries(3)
            .expect("one recovery per reschedule");
        cluster.shutdown();
    });
}

/// A no-shuffle view has no parallelism of its own: the table's reschedule gives it the table's actors' workers
/// and vnodes, one to one, and it keeps equal to the table.
#[test]
fn a_no_shuffle_view_follows_its_table() {
    epochlab_sim::run(5, |ctx| async move {
        let cluster = Cluster::start(&ctx, config()).await;
        let meta = cluster.meta();
        let types = vec![epochlab_common::DataType::Int64; 2];
        let t = meta.create_table("t", types, vec![0], 3).await.unwrap();
        let row = |k: i64| {
            OwnedRow::new(vec![
                Some(ScalarImpl::Int64(k)),
                Some(ScalarImpl::Int64(k * 2)),
            ])
        };
        let rows = (0..300).map(|k| (Op::Insert, row(k))).collect();
        cluster.dml(t, rows).await.unwrap();
        let options = JobOptions {
            scan_type: StreamScanType::Backfill,
            ..JobOptions::parallelism(3)
        };
        let mv = meta
            .create_materialized_view("mv", t, options)
            .await
            .unwrap();
        let old: Vec<ActorId> = meta
            .relation(mv)
            .unwrap()
            .actors
            .iter()
            .map(|a| a.actor_id)
            .collect();
        meta.alter_parallelism(t, 2).await.unwrap();
        let (table, view) = (meta.relation(t).unwrap(), meta.relation(mv).unwrap());
        assert_eq!(view.actors.len(), 2);
        for (a, b) in table.actors.iter().zip(&view.actors) {
            assert_eq!((a.worker, &a.vnodes), (b.worker, &b.vnodes));
            assert!(!old.contains(&b.actor_id), "new actors");
        }
        // The view alone has no parallelism to change: nothing moves.
        meta.alter_parallelism(mv, 3).await.unwrap();
        assert_eq!(meta.relation(mv).unwrap().actors, view.actors);
        let rows = (300..400).map(|k| (Op::Insert, row(k))).collect();
        cluster.dml(t, rows).await.unwrap();
        meta.flush().await.unwrap();
        assert_eq!(cluster.committed_rows(mv), cluster.committed_rows(t));
        assert_eq!(cluster.committed_rows(t).len(), 400);
        cluster.check_recoveries(1).expect("one reschedule");
        cluster.shutdown();
    });
}

/// A job still being created is refused, even one whose change would move nothing (a no-shuffle view).
#[test]
fn a_view_being_created_is_refused() {
    epochlab_sim::run(6, |ctx| async move {
        let cluster = Cluster::start(&ctx, config()).await;
        let meta = cluster.meta();
        let types = vec![epochlab_common::DataType::Int64; 2];
        let t = meta.create_table("t", types, vec![0], 3).await.unwrap();
        let row = |k: i64| OwnedRow::new(vec![Some(ScalarImpl::Int64(k)); 2]);
        let rows = (0..300).map(|k| (Op::Insert, row(k))).collect();
        cluster.dml(t, rows).await.unwrap();
        let options = JobOptions {
            scan_type: StreamScanType::Backfill,
            rate_limit: Some(1),
            background: true,
            ..JobOptions::parallelism(3)
        };
        let mv = meta
            .create_materialized_view("mv", t, options)
            .await
            .unwrap();
        let err = meta.alter_parallelism(mv, 2).await.unwrap_err();
        assert!(err.to_string().contains("mv: it is being created"), "{err}");
        cluster.check_recoveries(0).expect("no reschedule");
        cluster.shutdown();
    });
}
