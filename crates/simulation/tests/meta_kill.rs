//! A meta that dies and comes back from its store (issue 44, stage S4, the quiescent kill first): the killed
//! meta is fenced and its tasks end; while it is down, DDL gets the error RisingWave's client saw and compute
//! nodes keep their actors; the restarted meta claims the store with the next term, loads what it holds, and
//! its bootstrap recovery resets every node at a new generation and injects a first barrier above every epoch
//! issued before. Every view keeps its rows, and goes on following its table.

use std::sync::Arc;
use std::time::Duration;

use epochlab_common::TableId;
use epochlab_common::toggles::DropMode;
use epochlab_frontend::catalog::CatalogError;
use epochlab_frontend::{Output, Session, SqlError};
use epochlab_sim::{Cluster, ClusterConfig, run};

async fn rows(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    match s.execute(sql).await.expect(sql) {
        Output::Rows { rows, .. } => rows,
        other => panic!("{sql}: {other:?}"),
    }
}

const VIEW: &str = "SELECT v, c, s FROM m ORDER BY v";
const REFERENCE: &str = "SELECT v, count(*), sum(k) FROM t GROUP BY v ORDER BY v";

/// A table of 50 rows and a view over it.
const SETUP: &str = "CREATE TABLE t (k int PRIMARY KEY, v int); \
     CREATE MATERIALIZED VIEW m AS SELECT v, count(*) AS c, sum(k) AS s FROM t GROUP BY v; \
     INSERT INTO t SELECT x, x % 3 FROM generate_series(1, 50) AS g(x); FLUSH";

#[test]
fn a_quiescent_meta_kill_keeps_every_view_and_moves_generation_and_epochs_on() {
    run(7, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute(SETUP).await.unwrap();
        let before = rows(&mut s, VIEW).await;
        assert_eq!(before, rows(&mut s, REFERENCE).await);
        let old = cluster.meta();
        let (generation, term, high_water) = (old.generation(), old.term(), old.epoch_high_water());
        let mce = cluster.hummock.max_committed_epoch();
        let version = s.catalog_version();

        assert!(cluster.kill_meta_node(1), "one meta: meta-1");
        assert!(!cluster.kill_meta(), "dead already");
        let refused = s.execute("CREATE TABLE u (a int)").await.unwrap_err();
        assert!(
            matches!(
                refused,
                SqlError::CatalogError(CatalogError::MetaUnavailable)
            ),
            "{refused:?}"
        );
        assert_eq!(
            rows(&mut s, "SHOW TABLES").await,
            [["t".to_string()]],
            "the cache answers"
        );
        // A request to meta fails at once, even one whose name is taken: the name check does not answer
        // for meta.
        for sql in ["CREATE TABLE t (k int)", "FLUSH", "DROP TABLE t"] {
            let refused = s.execute(sql).await.unwrap_err();
            assert!(
                matches!(
                    refused,
                    SqlError::CatalogError(CatalogError::MetaUnavailable)
                ),
                "{sql}: {refused:?}"
            );
        }
        assert_eq!(
            rows(&mut s, "SELECT count(*) FROM t").await,
            [["50".to_string()]]
        );
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert_eq!(
            cluster.hummock.max_committed_epoch(),
            mce,
            "no barrier while meta is down"
        );

        cluster.restart_meta().unwrap();
        // A DDL that reaches the new meta before its bootstrap is done is told so, as RisingWave's
        // `check_status_running` tells it.
        let early = s.execute("CREATE TABLE early (a int)").await.unwrap_err();
        assert!(
            early.to_string().contains("The cluster is bootstrapping"),
            "{early}"
        );
        cluster.wait_ready().await;
        let meta = cluster.meta();
        assert_eq!(meta.term(), term + 1);
        assert!(meta.generation() > generation, "a new generation");
        assert!(
            meta.epoch_high_water() > high_water,
            "the first barrier goes above every epoch issued before"
        );
        assert_eq!(rows(&mut s, VIEW).await, before, "the view kept its rows");
        s.execute("INSERT INTO t SELECT x, x % 4 FROM generate_series(51, 90) AS g(x); FLUSH")
            .await
            .unwrap();
        assert_eq!(
            rows(&mut s, VIEW).await,
            rows(&mut s, REFERENCE).await,
            "and follows t"
        );
        assert!(cluster.hummock.max_committed_epoch() > high_water);
        s.execute("CREATE TABLE u (a int)").await.unwrap();
        assert!(
            s.catalog_version() > version,
            "versions go on from the store's"
        );
        assert_eq!(meta.check_store(), Ok(()));
        cluster.shutdown();
    });
}

#[test]
fn a_killed_metas_writes_do_not_reach_the_store() {
    run(8, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute(
            "CREATE TABLE t (k int PRIMARY KEY); CREATE MATERIALIZED VIEW m AS SELECT k FROM t",
        )
        .await
        .unwrap();
        let old = cluster.meta();
        cluster.restart_meta().unwrap();
        cluster.wait_ready().await;
        // The old meta, fenced, changes its own catalog: nothing of it lands.
        old.catalog().relations.clear();
        assert_eq!(cluster.meta().check_store(), Ok(()));
        assert_eq!(cluster.meta().catalog().relations.len(), 2);
        assert_eq!(
            rows(&mut s, "SELECT count(*) FROM m").await,
            [["0".to_string()]]
        );
        cluster.shutdown();
    });
}

#[test]
fn a_20_s_meta_outage_expires_no_live_worker() {
    run(9, |ctx| async move {
        let config = ClusterConfig::default();
        let nodes = config.compute_nodes as usize;
        let cluster = Arc::new(Cluster::start(&ctx, config).await);
        assert!(cluster.kill_meta());
        tokio::time::sleep(Duration::from_secs(20)).await;
        cluster.restart_meta().unwrap();
        cluster.wait_ready().await;
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(cluster.meta().workers().len(), nodes);
        cluster.shutdown();
    });
}

/// A compute node that expired while down and starts again while meta is down registers with the next meta
/// (RisingWave's compute node retries its registration until a meta answers), which finds it alive: its
/// bootstrap rebuilds the actors there and the view answers. The heartbeat TTL is 15 s here (300 s by
/// default, as at f21fb9b7915) so that 20 s down expires the node.
#[test]
fn a_compute_node_started_while_meta_is_down_registers_with_the_next_meta() {
    run(14, |ctx| async move {
        let config = ClusterConfig {
            compute_nodes: 1,
            meta: epochlab_meta::MetaConfig {
                heartbeat_timeout: Duration::from_secs(15),
                ..Default::default()
            },
            ..ClusterConfig::default()
        };
        let cluster = Arc::new(Cluster::start(&ctx, config).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 1));
        s.execute(
            "CREATE TABLE t (k int PRIMARY KEY); CREATE MATERIALIZED VIEW m AS SELECT k FROM t; \
             INSERT INTO t SELECT x FROM generate_series(1, 10) AS g(x); FLUSH",
        )
        .await
        .unwrap();
        let w = epochlab_common::WorkerId(1);
        assert!(cluster.kill(w));
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert!(cluster.meta().workers().is_empty(), "expired");
        assert!(cluster.kill_meta());
        cluster.restart(w);
        assert!(cluster.node(w).is_none(), "waits for a meta");
        tokio::time::sleep(Duration::from_millis(500)).await;
        cluster.restart_meta().unwrap();
        cluster.wait_ready().await;
        assert!(cluster.node(w).is_some());
        assert_eq!(cluster.meta().workers().len(), 1);
        assert_eq!(
            rows(&mut s, "SELECT count(*) FROM m").await,
            [["10".to_string()]]
        );
        cluster.shutdown();
    });
}

/// A cluster with a table of 400 rows and a session that backfills at 10 rows a second an actor.
async fn slow_backfill(cluster: &Arc<Cluster>) -> Session {
    let mut s = Session::new(epochlab_simulation::engine(cluster, 2));
    s.execute(
        "CREATE TABLE t (k int PRIMARY KEY, v int); \
         INSERT INTO t SELECT x, x % 3 FROM generate_series(1, 400) AS g(x); FLUSH; \
         SET STREAMING_RATE_LIMIT = 10",
    )
    .await
    .unwrap();
    s
}

#[test]
fn a_background_view_resumes_after_a_meta_restart_and_is_created_once() {
    run(10, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = slow_backfill(&cluster).await;
        s.execute("SET BACKGROUND_DDL = true; CREATE MATERIALIZED VIEW m AS SELECT k, v FROM t")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(rows(&mut s, "SHOW JOBS").await.len(), 1, "still creating");
        cluster.restart_meta().unwrap();
        cluster.wait_ready().await;
        assert_eq!(rows(&mut s, "SHOW JOBS").await.len(), 1, "resumed");
        s.execute("WAIT").await.unwrap();
        assert_eq!(
            rows(&mut s, "SELECT count(*), sum(k) FROM m").await,
            [["400".to_string(), "80200".to_string()]]
        );
        let named_m =
            |c: &epochlab_meta::Catalog| c.relations.values().filter(|r| r.name == "m").count();
        assert_eq!(named_m(&cluster.meta().catalog()), 1, "created once");
        assert_eq!(
            rows(&mut s, "SHOW MATERIALIZED VIEWS").await,
            [["m".to_string()]]
        );
        assert_eq!(cluster.meta().check_store(), Ok(()));
        cluster.shutdown();
    });
}

#[test]
fn a_foreground_create_cut_off_by_a_meta_kill_fails_and_a_retry_succeeds() {
    run(11, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = slow_backfill(&cluster).await;
        let create = "CREATE MATERIALIZED VIEW m AS SELECT k, v FROM t";
        let mut creating = Session::new(s.engine().clone());
        creating
            .execute("SET STREAMING_RATE_LIMIT = 10")
            .await
            .unwrap();
        let ddl = tokio::spawn(async move { creating.execute(create).await });
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!ddl.is_finished(), "the backfill takes 20 s");
        assert!(cluster.kill_meta());
        let failed = ddl.await.unwrap().unwrap_err();
        tokio::time::sleep(Duration::from_millis(300)).await;
        cluster.restart_meta().unwrap();
        cluster.wait_ready().await;
        assert!(
            cluster.meta().relation_by_name("m").is_none(),
            "the dirty job is cleaned ({failed})"
        );
        assert!(
            rows(&mut s, "SHOW MATERIALIZED VIEWS").await.is_empty(),
            "and its entry"
        );
        s.execute(create).await.unwrap();
        assert_eq!(
            rows(&mut s, "SELECT count(*), sum(k) FROM m").await,
            [["400".to_string(), "80200".to_string()]]
        );
        assert_eq!(cluster.meta().check_store(), Ok(()));
        cluster.shutdown();
    });
}

/// A create whose Add barrier is in flight when meta dies fails, and the killed meta cleans nothing up (its
/// DDL dies with it, as RisingWave's DDL controller does with meta's process): the job's tables stay
/// registered for the restarted meta's bootstrap to clean, and no Hummock delta is made while no meta can
/// store it (the store's deltas would skip one, and a restarted meta's store would not load).
#[test]
fn a_killed_meta_cleans_up_nothing_of_a_create_it_cut_off() {
    let out = run(13, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute("CREATE TABLE t (k int PRIMARY KEY, v int); FLUSH")
            .await
            .unwrap();
        let mut creating = Session::new(s.engine().clone());
        let ddl = tokio::spawn(async move {
            creating
                .execute("CREATE MATERIALIZED VIEW m AS SELECT k, v FROM t")
                .await
        });
        // Until its job's tables are registered: its Add barrier is on the way.
        let before = cluster.hummock.registered_tables();
        while cluster.hummock.registered_tables() == before {
            tokio::time::sleep(Duration::from_micros(100)).await;
        }
        let tables = cluster.hummock.registered_tables();
        assert!(cluster.kill_meta());
        assert!(ddl.await.unwrap().is_err());
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            cluster.hummock.registered_tables(),
            tables,
            "nothing unregistered"
        );
        cluster.restart_meta().unwrap();
        cluster.wait_ready().await;
        assert_eq!(
            cluster.hummock.registered_tables(),
            before,
            "the bootstrap cleaned it"
        );
        assert_eq!(cluster.meta().check_store(), Ok(()));
        cluster.shutdown();
    });
    let lines = out.log.lines();
    let killed = lines.iter().position(|l| l.contains("kill meta")).unwrap();
    let restarted = killed
        + lines[killed..]
            .iter()
            .position(|l| l.contains("recovery: start reason=bootstrap"))
            .unwrap();
    assert!(
        !lines[killed..restarted]
            .iter()
            .any(|l| l.contains("unregister tables")),
        "{:?}",
        &lines[killed..restarted]
    );
}

/// RisingWave creates a view in the background only when every leaf of its plan is a table scan that
/// backfills (`plan_has_backfill_leaf_nodes`): a view over constant rows is created in the foreground, so a
/// meta restart finds it created (a rebuilt `Values` would report no progress, and the job would never end).
#[test]
fn a_view_over_values_is_created_in_the_foreground_and_survives_a_meta_restart() {
    run(12, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute(
            "SET BACKGROUND_DDL = true; CREATE VIEW v AS SELECT 1 AS x; \
             CREATE MATERIALIZED VIEW m AS SELECT * FROM v",
        )
        .await
        .unwrap();
        assert!(
            rows(&mut s, "SHOW JOBS").await.is_empty(),
            "created when it returned"
        );
        assert_eq!(rows(&mut s, "SELECT x FROM m").await, [["1".to_string()]]);
        cluster.restart_meta().unwrap();
        cluster.wait_ready().await;
        assert!(rows(&mut s, "SHOW JOBS").await.is_empty());
        assert_eq!(rows(&mut s, "SELECT x FROM m").await, [["1".to_string()]]);
        cluster.shutdown();
    });
}

/// A table left registered with no catalog entry (as a drop a failure cut off leaves one) is purged by the
/// restarted meta: at leader start, before its bootstrap resets a node, in `buggy` (RisingWave at
/// f21fb9b7915); in `fixed`, by the bootstrap recovery once every node acknowledged its reset (#15852 moved
/// the purge into recovery, before the reset: `purge-before-reset`).
/// Returns the restart's lines from the kill on.
fn purge_after_meta_restart(mode: DropMode) -> Vec<String> {
    let orphan = TableId(4242);
    let out = run(7, move |ctx| async move {
        let mut config = ClusterConfig::default();
        config.meta.toggles = config.meta.toggles.with(mode);
        let cluster = Arc::new(Cluster::start(&ctx, config).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 1));
        s.execute("CREATE TABLE t (k int); INSERT INTO t VALUES (1); FLUSH")
            .await
            .unwrap();
        let kept = cluster.hummock.registered_tables();
        cluster.hummock.register_tables(&[orphan]);
        assert!(cluster.kill_meta());
        cluster.restart_meta().unwrap();
        cluster.wait_ready().await;
        assert_eq!(cluster.hummock.registered_tables(), kept, "{mode}");
        assert_eq!(cluster.meta().check_store(), Ok(()), "{mode}");
        cluster.shutdown();
    });
    let lines = out.log.lines();
    let killed = lines.iter().position(|l| l.contains("kill meta")).unwrap();
    lines[killed..].to_vec()
}

fn first(lines: &[String], words: &str) -> usize {
    lines
        .iter()
        .position(|l| l.contains(words))
        .unwrap_or_else(|| panic!("no {words:?} in {lines:#?}"))
}

#[test]
fn the_restarted_metas_purge_is_at_leader_start_in_buggy_and_after_the_reset_in_fixed() {
    let buggy = purge_after_meta_restart(DropMode::Buggy);
    let purge = first(&buggy, "leader start: purge tables=[TableId(4242)]");
    assert!(purge < first(&buggy, "recovery: start reason=bootstrap"));
    assert!(purge > first(&buggy, "load hummock version"));

    let fixed = purge_after_meta_restart(DropMode::Fixed);
    assert!(!fixed.iter().any(|l| l.contains("leader start")));
    let purge = first(&fixed, "purge tables=[TableId(4242)]");
    assert!(purge > first(&fixed, "reset node"), "{fixed:#?}");
}

/// Three metas on a lease (issue 56, stage 3): a table and a view of 50 rows, the leader known.
async fn three_metas(ctx: &epochlab_sim::SimContext) -> (Arc<Cluster>, Session, u32) {
    let config = ClusterConfig {
        meta_nodes: 3,
        ..ClusterConfig::default()
    };
    let cluster = Cluster::launch(ctx, config).await.unwrap();
    let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
    s.execute(SETUP).await.unwrap();
    let leader = cluster.meta_leader().expect("a new cluster has a leader");
    (cluster, s, leader)
}

/// A leader killed and started again within 1 s restores its leadership (a new process: the store's next
/// term); killed for 20 s, its key runs out after the 10 s lease and a follower leads, and the old leader
/// comes back as a follower. The view keeps its rows and follows its table, and the checkers (I5 after each
/// start of leader services among them) stay clean.
#[test]
fn three_metas_a_fast_restart_keeps_the_leader_and_a_20_s_outage_moves_it() {
    run(21, |ctx| async move {
        let (cluster, mut s, leader) = three_metas(&ctx).await;
        let checkers = epochlab_sim::checkers::Checkers::install(&cluster, DropMode::Fixed);
        let before = rows(&mut s, VIEW).await;
        let term = cluster.meta().term();
        assert!(cluster.kill_meta_node(leader));
        assert!(!cluster.kill_meta_node(leader), "dead already");
        tokio::time::sleep(Duration::from_millis(800)).await;
        cluster.restart_meta_node(leader);
        cluster.wait_meta_ready().await;
        assert_eq!(cluster.meta_leader(), Some(leader), "restored");
        assert_eq!(cluster.meta_leader_changes(), 0);
        assert_eq!(cluster.meta().term(), term + 1);
        assert_eq!(rows(&mut s, VIEW).await, before);

        assert!(cluster.kill_meta_node(leader));
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert_eq!(
            cluster.meta_leader(),
            None,
            "its key outlives it by the lease"
        );
        tokio::time::sleep(Duration::from_secs(11)).await;
        cluster.restart_meta_node(leader);
        cluster.wait_meta_ready().await;
        let new = cluster.meta_leader().unwrap();
        assert_ne!(new, leader);
        assert_eq!(cluster.meta_leader_changes(), 1);
        assert_eq!(cluster.meta().term(), term + 2);
        assert_eq!(rows(&mut s, VIEW).await, before, "the view kept its rows");
        s.execute("INSERT INTO t SELECT x, x % 4 FROM generate_series(51, 90) AS g(x); FLUSH")
            .await
            .unwrap();
        assert_eq!(rows(&mut s, VIEW).await, rows(&mut s, REFERENCE).await);
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(cluster.meta_leader(), Some(new), "the old leader follows");
        let log = ctx.log.lines();
        let lead = format!(" lead meta: node=meta-{new} restored=false");
        assert!(log.iter().any(|l| l.ends_with(&lead)), "{lead}");
        checkers.check_end(&cluster);
        assert_eq!(checkers.violations(), []);
        cluster.shutdown();
    });
}

/// A live leader whose keep-alives go unanswered for half its lease exits with its leader services; its key
/// runs out with the lease and a follower leads; the old leader stays down until restarted.
#[test]
fn three_metas_a_leader_whose_keep_alives_time_out_exits() {
    run(22, |ctx| async move {
        let (cluster, mut s, leader) = three_metas(&ctx).await;
        let etcd = cluster.etcd().unwrap().clone();
        let key = etcd.leader(epochlab_meta::META_ELECTION_KEY).unwrap();
        assert_eq!(key.value, epochlab_sim::cluster::meta_name(leader));
        etcd.fail_keep_alives(key.lease, Duration::from_secs(60));
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert_eq!(cluster.meta_leader(), None);
        assert!(
            cluster.meta().is_killed(),
            "its leader services ended with it"
        );
        cluster.wait_meta_ready().await;
        let new = cluster.meta_leader().unwrap();
        assert_ne!(new, leader);
        assert!(!cluster.kill_meta_node(leader), "it exited");
        assert_eq!(
            rows(&mut s, "SELECT count(*) FROM t").await,
            [["50".to_string()]]
        );
        let log = ctx.log.lines();
        let exit = format!(" meta exits: node=meta-{leader} reason=keep-alive timed out");
        assert!(log.iter().any(|l| l.ends_with(&exit)), "{exit}");
        cluster.shutdown();
    });
}

/// A crash point with three metas kills the leader's process, whose restart within the lease restores it:
/// the DROP it cut off leaves nothing, as with one meta.
#[test]
fn three_metas_a_crash_point_restarts_the_leader() {
    run(23, |ctx| async move {
        let (cluster, mut s, leader) = three_metas(&ctx).await;
        assert!(
            !cluster.kill_meta_node(0) && !cluster.kill_meta_node(4),
            "no such meta"
        );
        cluster.arm_meta_crash(epochlab_meta::CrashPoint::DropAfterFragments);
        let err = s.execute("DROP MATERIALIZED VIEW m").await.unwrap_err();
        assert!(err.to_string().contains("unavailable"), "{err}");
        assert_eq!(cluster.meta_leader(), None);
        cluster.wait_meta_ready().await;
        assert_eq!(cluster.meta_leader(), Some(leader));
        assert_eq!(cluster.meta_leader_changes(), 0);
        assert!(cluster.meta().relation_by_name("m").is_none());
        assert_eq!(
            rows(&mut s, "SELECT count(*) FROM t").await,
            [["50".to_string()]]
        );
        cluster.shutdown();
    });
}
