//! (I5 meta-restart, issue 44 stage S6) After every meta restart the checkers hold the restarted meta to what
//! clients were told before the kill, outside meta. Each check is shown to catch a store that lost or bent
//! something between the kill and the restart (the test writes the store as a damaged disk would), and a
//! clean restart to find nothing.

use std::sync::Arc;

use epochlab_common::Epoch;
use epochlab_common::toggles::DropMode;
use epochlab_frontend::Session;
use epochlab_meta::sql_catalog::{Catalog, CatalogParts};
use epochlab_meta::store::{MetaStoreError, SqliteStore, StoreOp};
use epochlab_sim::checkers::{Checkers, CommitCheckError, check_commits};
use epochlab_sim::{Cluster, ClusterConfig, Violation, run};
use epochlab_storage::VersionDelta;

/// How the test damages the store of a killed meta (`None`: not at all).
type Damage = fn(&Cluster);

/// Tables `t` and `u`, a view `m` over `t`; `u` dropped; meta killed, the store damaged, meta restarted.
/// The I5 violations of its bootstrap.
fn restart_with(damage: Option<Damage>) -> Vec<Violation> {
    run(7, move |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let checkers = Checkers::install(&cluster, DropMode::Fixed);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 1));
        s.execute(
            "CREATE TABLE t (k int PRIMARY KEY, v int); CREATE TABLE u (a int); \
             CREATE MATERIALIZED VIEW m AS SELECT v, count(*) AS c FROM t GROUP BY v; \
             INSERT INTO t SELECT x, x % 3 FROM generate_series(1, 20) AS g(x); DROP TABLE u; FLUSH",
        )
        .await
        .unwrap();
        assert!(cluster.kill_meta());
        if let Some(damage) = damage {
            damage(&cluster);
        }
        cluster.restart_meta().unwrap();
        cluster.wait_ready().await;
        checkers
            .violations()
            .into_iter()
            .filter(|v| v.invariant == epochlab_sim::meta_witness::INVARIANT)
            .collect()
    })
    .value
}

/// Commit `ops` to the killed meta's store as the next term would (the restart claims the one after).
fn write(cluster: &Cluster, ops: Vec<StoreOp>) {
    let store = cluster.meta().store().clone();
    let term = store.claim().unwrap();
    store.commit(term, ops).unwrap();
}

/// Store `parts` as the catalog at `version`.
fn put_catalog(cluster: &Cluster, version: u64, parts: CatalogParts) {
    let catalog = Arc::new(Catalog::from_parts(parts));
    write(cluster, vec![StoreOp::PutCatalog(version, catalog)]);
}

/// One of `found` says every one of `words`.
fn assert_caught(found: &[Violation], words: &[&str]) {
    let caught = found
        .iter()
        .any(|v| words.iter().all(|w| v.detail.contains(w)));
    let details: Vec<_> = found.iter().map(|v| v.detail.as_str()).collect();
    assert!(caught, "{words:?} not in: {}", details.join(" | "));
}

fn details(found: &[Violation]) -> String {
    found
        .iter()
        .map(|v| v.detail.as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

#[test]
fn a_clean_restart_breaks_nothing() {
    let found = restart_with(None);
    assert!(found.is_empty(), "{}", details(&found));
}

#[test]
fn a_lost_ddl_is_caught() {
    let found = restart_with(Some(|cluster| {
        let snap = cluster.meta().sql_catalog();
        let m = snap.catalog.relations().find(|r| r.name == "m").unwrap().id;
        let mut parts = snap.catalog.to_parts();
        parts.relations.retain(|(id, _)| *id != m);
        put_catalog(cluster, snap.version, parts);
    }));
    assert_caught(&found, &["materialized view m", "is gone"]);
}

#[test]
fn a_dropped_relation_that_comes_back_is_caught() {
    let found = restart_with(Some(|cluster| {
        let snap = cluster.meta().sql_catalog();
        let mut parts = snap.catalog.to_parts();
        let mut u = parts
            .relations
            .iter()
            .find(|(_, r)| r.name == "t")
            .unwrap()
            .1
            .clone();
        u.name = "u".into();
        // An id handed out before the kill that the catalog no longer has: u's.
        u.id = (1..parts.next_id)
            .find(|id| snap.catalog.relation(*id).is_none())
            .unwrap();
        u.table_id = None;
        parts.relations.push((u.id, u));
        put_catalog(cluster, snap.version, parts);
    }));
    assert_caught(&found, &["table u", "is back"]);
}

#[test]
fn a_catalog_version_that_goes_back_is_caught() {
    let found = restart_with(Some(|cluster| {
        let snap = cluster.meta().sql_catalog();
        write(
            cluster,
            vec![StoreOp::PutCatalog(snap.version - 1, snap.catalog.clone())],
        );
    }));
    assert_caught(&found, &["the catalog went back"]);
}

/// The whole cluster restarted with meta restored from a backup taken before the last checkpoints (the data
/// they committed stays in the object store; a node that kept its newer version would refuse the older one,
/// as RisingWave's does): the restarted meta's max committed epoch, live and stored, is below what was
/// committed.
#[test]
fn a_max_committed_epoch_that_goes_back_is_caught() {
    let found = run(7, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let checkers = Checkers::install(&cluster, DropMode::Fixed);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 1));
        s.execute("CREATE TABLE t (k int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 1); FLUSH")
            .await
            .unwrap();
        let backup = SqliteStore::of_rows(&cluster.meta().store().load().unwrap()).unwrap();
        s.execute("INSERT INTO t VALUES (2, 2); FLUSH")
            .await
            .unwrap();
        assert!(cluster.kill_meta());
        let workers = cluster.meta().workers();
        for &w in &workers {
            assert!(cluster.kill(w));
        }
        for &w in &workers {
            cluster.restart(w);
        }
        cluster.restart_meta_from(Arc::new(backup)).unwrap();
        cluster.wait_ready().await;
        checkers.violations()
    })
    .value;
    assert_caught(&found, &["the max committed epoch went back from"]);
    assert_caught(
        &found,
        &["the store's Hummock version has max committed epoch"],
    );
}

/// A stored delta that takes the max committed epoch back is a corrupt row: meta does not start from it, and
/// the error is the run's.
#[test]
fn a_store_whose_deltas_take_the_epoch_back_does_not_load() {
    let (restart, recorded) = run(7, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 1));
        s.execute("CREATE TABLE t (k int); INSERT INTO t VALUES (1); FLUSH")
            .await
            .unwrap();
        assert!(cluster.kill_meta());
        let rows = cluster.meta().store().load().unwrap();
        let last = rows.hummock_deltas.last().unwrap().id;
        let back = VersionDelta {
            id: last + 1,
            prev_id: last,
            max_committed_epoch: Epoch(1),
            group_changes: Vec::new(),
            table_watermarks: Default::default(),
        };
        write(&cluster, vec![StoreOp::PushHummockDelta(Arc::new(back))]);
        let restart = cluster.restart_meta();
        (restart, cluster.meta_store_error())
    })
    .value;
    assert_eq!(recorded.as_ref(), restart.as_ref().err());
    let Err(MetaStoreError::Corrupt { table, reason }) = restart else {
        panic!("{restart:?}");
    };
    assert_eq!(table, "hummock_version_delta");
    assert!(reason.contains("mce went back"), "{reason}");
}

#[test]
fn a_job_whose_fragments_are_lost_is_caught() {
    let found = restart_with(Some(|cluster| {
        let m = cluster.meta().relation_by_name("m").unwrap();
        write(cluster, vec![StoreOp::DeleteFragment(m.fragment_id)]);
    }));
    assert_caught(&found, &["job m", "has no fragments"]);
}

/// Meta alone restored from an older backup while the compute nodes keep their newer version: the nodes refuse
/// the older one, as RisingWave's `new_pin_version` does, and the run ends in their panic.
#[test]
#[should_panic(expected = "pinning a older version")]
fn a_node_refuses_the_older_version_of_a_meta_restored_alone() {
    run(7, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 1));
        s.execute("CREATE TABLE t (k int); INSERT INTO t VALUES (1); FLUSH")
            .await
            .unwrap();
        let backup = SqliteStore::of_rows(&cluster.meta().store().load().unwrap()).unwrap();
        s.execute("INSERT INTO t VALUES (2); FLUSH").await.unwrap();
        cluster.restart_meta_from(Arc::new(backup)).unwrap();
        cluster.wait_ready().await;
    });
}

/// Three metas (issue 56, stage 5): the leader killed for good, the store damaged by `damage` (if any) before
/// a follower takes the lease; the I5 violations of the new leader's bootstrap, and the leader changes.
fn leader_change_with(damage: Option<Damage>) -> (Vec<Violation>, u64) {
    run(8, move |ctx| async move {
        let config = ClusterConfig {
            meta_nodes: 3,
            ..ClusterConfig::default()
        };
        let cluster = Cluster::launch(&ctx, config).await.unwrap();
        let checkers = Checkers::install(&cluster, DropMode::Fixed);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 1));
        s.execute(
            "CREATE TABLE t (k int PRIMARY KEY, v int); \
             CREATE MATERIALIZED VIEW m AS SELECT v, count(*) AS c FROM t GROUP BY v; \
             INSERT INTO t SELECT x, x % 3 FROM generate_series(1, 20) AS g(x); FLUSH",
        )
        .await
        .unwrap();
        let leader = cluster.meta_leader().unwrap();
        assert!(cluster.kill_meta_node(leader));
        if let Some(damage) = damage {
            damage(&cluster);
        }
        while cluster.meta_leader().is_none_or(|l| l == leader) {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        cluster.wait_meta_ready().await;
        let found = checkers
            .violations()
            .into_iter()
            .filter(|v| v.invariant == epochlab_sim::meta_witness::INVARIANT)
            .collect();
        (found, cluster.meta_leader_changes())
    })
    .value
}

#[test]
fn a_clean_leader_change_breaks_nothing() {
    let (found, changes) = leader_change_with(None);
    assert_eq!(changes, 1);
    assert!(found.is_empty(), "{}", details(&found));
}

#[test]
fn a_ddl_lost_before_a_leader_change_is_caught() {
    let (found, changes) = leader_change_with(Some(|cluster| {
        let snap = cluster.meta().sql_catalog();
        let m = snap.catalog.relations().find(|r| r.name == "m").unwrap().id;
        let mut parts = snap.catalog.to_parts();
        parts.relations.retain(|(id, _)| *id != m);
        put_catalog(cluster, snap.version, parts);
    }));
    assert_eq!(changes, 1);
    assert_caught(&found, &["materialized view m", "is gone"]);
}

/// (I6) A meta killed and restarted: the killed one writes nothing more, and its barriers end where the new
/// meta's start (its first barrier above every earlier one, each later one following the last); killed
/// without its fence (a test-only mutation: its barrier manager goes on, and each barrier commits its epoch
/// mark under the old term), both checks find it. (Two barrier managers then drive the nodes, and one soon
/// panics: a reset at a generation it has seen. What the checks found is kept outside the run.) The store's
/// violations, and the event log's check.
fn one_writer_after(kill: fn(&Cluster)) -> (Vec<Violation>, Result<usize, CommitCheckError>) {
    let kept: Arc<std::sync::Mutex<Option<(Checkers, epochlab_common::EventLog)>>> = Arc::default();
    let keep = kept.clone();
    let run_it = std::panic::AssertUnwindSafe(move || {
        run(9, move |ctx| async move {
            let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
            let checkers = Checkers::install(&cluster, DropMode::Fixed);
            *keep.lock().unwrap() = Some((checkers, ctx.log.clone()));
            let mut s = Session::new(epochlab_simulation::engine(&cluster, 1));
            s.execute("CREATE TABLE t (k int PRIMARY KEY); INSERT INTO t VALUES (1); FLUSH")
                .await
                .unwrap();
            kill(&cluster);
            cluster.restart_meta().unwrap();
            cluster.wait_ready().await;
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        })
    });
    let _ = std::panic::catch_unwind(run_it);
    let (checkers, log) = kept
        .lock()
        .unwrap()
        .take()
        .expect("the run installed its checkers");
    let found = checkers
        .violations()
        .into_iter()
        .filter(|v| v.invariant == epochlab_sim::one_writer::INVARIANT)
        .collect();
    (found, check_commits(&log.lines()))
}

#[test]
fn a_killed_meta_writes_nothing_more() {
    let (found, log) = one_writer_after(|cluster| assert!(cluster.kill_meta()));
    assert!(found.is_empty(), "{}", details(&found));
    assert!(log.is_ok(), "{log:?}");
}

#[test]
fn a_meta_killed_without_its_fence_is_caught_writing() {
    let (found, log) = one_writer_after(|cluster| cluster.meta().kill_without_fence());
    assert_caught(
        &found,
        &["a meta of term 1 wrote", "after term 2 claimed the store"],
    );
    let err = log.unwrap_err();
    assert!(err.invariant().starts_with("I6 "), "{err}");
}
