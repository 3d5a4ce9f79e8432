//! A frontend's client of meta among three metas on a lease (issue 56, stage 3; `meta-failover.md` §1.6):
//! a leader-only call to a follower, or to a restored leader that has not started its leader services, gets
//! Unimplemented (`service not found: <path>`) and is not retried; the error's refresh, or the 5 s monitor,
//! moves the client to the leader; the frontend's catalog follows the new leader's snapshot.

use std::sync::Arc;
use std::time::Duration;

use epochlab_frontend::catalog::CatalogError;
use epochlab_frontend::{Engine, Output, Session, SqlError};
use epochlab_sim::config::Topology;
use epochlab_sim::{Cluster, ClusterConfig, run};

/// Three metas and an engine of one frontend node; a session on that node, a table of 10 rows.
async fn three_metas(ctx: &epochlab_sim::SimContext) -> (Arc<Cluster>, Arc<Engine>, Session) {
    let config = ClusterConfig {
        meta_nodes: 3,
        ..ClusterConfig::default()
    };
    let cluster = Cluster::launch(ctx, config).await.unwrap();
    let engine = epochlab_simulation::engine_of(&cluster, Topology::SINGLE_CORE);
    let on = engine.connect().unwrap();
    let mut s = Session::new(engine.clone()).on_frontend(on);
    s.execute("CREATE TABLE t (k int PRIMARY KEY); INSERT INTO t SELECT x FROM generate_series(1, 10) AS g(x); FLUSH")
        .await
        .unwrap();
    (cluster, engine, s)
}

/// Kill the leader and wait, a millisecond at a time, until another meta serves as leader: which.
async fn move_the_leader(cluster: &Cluster) -> (u32, u32) {
    let old = cluster.meta_leader().unwrap();
    assert!(cluster.kill_meta_node(old));
    loop {
        tokio::time::sleep(Duration::from_millis(1)).await;
        if let Some(new) = cluster.meta_leader() {
            assert_ne!(new, old);
            return (old, new);
        }
    }
}

fn service_not_found(e: &SqlError) -> Option<&str> {
    match e {
        SqlError::CatalogError(CatalogError::MetaServiceNotFound(path)) => Some(path),
        _ => None,
    }
}

/// #7578's shape, with the fix's runner: a leader restarted within its lease restores its leadership but
/// answers as a follower until its leader services start; the DROP it refuses did nothing, and the next one
/// (no retry by the client) drops the table.
#[test]
fn a_drop_sent_to_a_restored_leader_not_yet_serving_is_refused_and_does_nothing() {
    run(31, |ctx| async move {
        let (cluster, engine, mut s) = three_metas(&ctx).await;
        let leader = cluster.meta_leader().unwrap();
        assert!(cluster.kill_meta_node(leader));
        tokio::time::sleep(Duration::from_millis(300)).await;
        cluster.restart_meta_node(leader);
        tokio::time::sleep(Duration::from_millis(1)).await;
        let err = s.execute("DROP TABLE t").await.unwrap_err();
        assert_eq!(
            service_not_found(&err),
            Some("/ddl_service.DdlService/DropTable"),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "gRPC request to meta service failed: Operation is not implemented or not supported: \
             service not found: /ddl_service.DdlService/DropTable"
        );
        assert!(cluster.meta().relation_by_name("t").is_some());
        assert_eq!(engine.frontend_meta_client(0).unwrap().current(), leader);
        cluster.wait_meta_ready().await;
        assert_eq!(cluster.meta_leader(), Some(leader), "restored");
        s.execute("DROP TABLE t").await.unwrap();
        assert!(cluster.meta().relation_by_name("t").is_none());
        let log = ctx.log.lines();
        assert!(!log.iter().any(|l| l.contains("discover meta leader")));
        cluster.shutdown();
    });
}

/// A leader down for good: the client's 5 s monitor moves it to the new leader without a failed call, and the
/// frontend's catalog, rebuilt from the new leader's snapshot, lists what the new leader created.
#[test]
fn the_client_reaches_a_new_leader_within_5_s_and_the_catalog_follows_it() {
    run(32, |ctx| async move {
        let (cluster, engine, mut s) = three_metas(&ctx).await;
        let (old, new) = move_the_leader(&cluster).await;
        let client = engine.frontend_meta_client(0).unwrap();
        let serving = tokio::time::Instant::now();
        while client.current() != new {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let found = serving.elapsed();
        assert!(found <= Duration::from_secs(5), "{found:?}");
        cluster.wait_meta_ready().await;
        s.execute("CREATE TABLE u (k int PRIMARY KEY)")
            .await
            .unwrap();
        let cache = engine.frontend_catalog(0).unwrap();
        assert!(cache.catalog().def("u").is_some(), "the new leader's table");
        assert!(cache.catalog().def("t").is_some(), "the old leader's table");
        assert_eq!(
            cache.version(),
            cluster.meta().subscribe_catalog().borrow().version
        );
        let log = ctx.log.lines();
        let found = format!(" discover meta leader: client=frontend-1 node=meta-{new}");
        assert!(log.iter().any(|l| l.ends_with(&found)), "{found}");
        assert_ne!(old, new);
        cluster.shutdown();
    });
}

/// A client left pointing at the old leader, which came back as a follower: the DDL gets Unimplemented,
/// whose forced refresh moves the client, and the statement sent again succeeds.
#[test]
fn a_ddl_sent_to_a_follower_fails_once_and_the_refresh_finds_the_leader() {
    run(33, |ctx| async move {
        let (cluster, engine, mut s) = three_metas(&ctx).await;
        let (old, new) = move_the_leader(&cluster).await;
        cluster.restart_meta_node(old);
        let client = engine.frontend_meta_client(0).unwrap();
        assert_eq!(client.current(), old, "no refresh since the leader moved");
        cluster.wait_meta_ready().await;
        let err = s.execute("CREATE TABLE u (k int)").await.unwrap_err();
        assert_eq!(
            service_not_found(&err),
            Some("/ddl_service.DdlService/CreateTable"),
            "{err}"
        );
        assert_eq!(client.current(), new, "the error's refresh");
        s.execute("CREATE TABLE u (k int)").await.unwrap();
        match s.execute("SELECT count(*) FROM t").await.unwrap() {
            Output::Rows { rows, .. } => assert_eq!(rows, [["10".to_string()]]),
            other => panic!("{other:?}"),
        }
        cluster.shutdown();
    });
}
