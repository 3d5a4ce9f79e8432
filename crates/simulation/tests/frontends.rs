//! Frontends as nodes of the cluster, as RisingWave's CI ran them (`ci-3cn-2fe-3meta`): several frontends behind
//! one round-robin address (`frontend:4566`, madsim's IPVS), each connection on the frontend the address gave
//! it. A kill closes that frontend's connections; the client reconnects through the address (to the next
//! frontend) and replays its `SET`s; a connection given a frontend that is down is refused; and a killed
//! frontend's statement writes nothing after the kill.

use std::sync::Arc;
use std::time::Duration;

use epochlab_frontend::{ConnectionError, Engine, Output, SqlError};
use epochlab_sim::config::Topology;
use epochlab_sim::{Cluster, ClusterConfig, run};
use epochlab_simulation::db::SimDb;
use sqllogictest::AsyncDB;

fn two_frontends(cluster: &Arc<Cluster>) -> Arc<Engine> {
    let topology = Topology {
        frontend_nodes: 2,
        ..Topology::SINGLE_CORE
    };
    epochlab_simulation::engine_of(cluster, topology)
}

async fn one_value(db: &mut SimDb, sql: &str) -> Result<String, SqlError> {
    match db.execute(sql).await? {
        Output::Rows { rows, .. } => Ok(rows[0][0].clone()),
        other => panic!("{sql}: {other:?}"),
    }
}

#[test]
fn connections_alternate_between_frontends_dead_or_alive() {
    run(1, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let engine = two_frontends(&cluster);
        let turns: Vec<usize> = (0..4).map(|_| engine.connect().unwrap().index).collect();
        assert_eq!(turns, [0, 1, 0, 1]);
        assert!(engine.kill_frontend(1));
        assert!(!engine.kill_frontend(1), "down already");
        assert_eq!(engine.connect().unwrap().index, 0);
        // The address does not skip a dead frontend: its turn is refused, the next one is not.
        assert_eq!(engine.connect(), Err(ConnectionError::Refused));
        assert_eq!(engine.connect().unwrap().index, 0);
        assert!(engine.kill_frontend(0));
        for _ in 0..3 {
            assert_eq!(engine.connect(), Err(ConnectionError::Refused));
        }
        engine.restart_frontend(1);
        let id = engine.connect().or_else(|_| engine.connect()).unwrap();
        assert_eq!(
            (id.index, id.generation),
            (1, 1),
            "a restarted frontend is a new life"
        );
        cluster.shutdown();
    });
}

#[test]
fn a_killed_frontends_session_reconnects_to_the_next_and_replays_its_sets() {
    run(2, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let engine = two_frontends(&cluster);
        let mut db = SimDb::new(engine.clone());
        db.run("SET STREAMING_PARALLELISM = 2").await.unwrap();
        db.run("CREATE TABLE t (v int)").await.unwrap();
        // `db` is on frontend 0; the address's next turn is frontend 1.
        assert!(engine.kill_frontend(0));
        assert_eq!(
            one_value(&mut db, "SHOW STREAMING_PARALLELISM")
                .await
                .unwrap(),
            "2",
            "reconnected to frontend 1 with its SET replayed"
        );
        assert!(engine.kill_frontend(1));
        let err = db.execute("SHOW STREAMING_PARALLELISM").await.unwrap_err();
        assert_eq!(err, SqlError::Connection(ConnectionError::Refused));
        engine.restart_frontend(1);
        // The refused try took frontend 0's turn: the address's next is frontend 1, up again.
        let mut reached = None;
        for _ in 0..2 {
            if let Ok(v) = one_value(&mut db, "SHOW STREAMING_PARALLELISM").await {
                reached = Some(v);
                break;
            }
        }
        assert_eq!(reached.as_deref(), Some("2"));
        cluster.shutdown();
    });
}

/// A large INSERT whose frontend is killed part way: the rows it had sent stay (the client was told
/// nothing), the rest are never written, whatever time passes.
#[test]
fn a_killed_frontends_statement_writes_nothing_after_the_kill() {
    const ROWS: u64 = 200_000;
    const KILL_AFTER_TURNS: usize = 8;
    run(3, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let engine = two_frontends(&cluster);
        let mut db = SimDb::new(engine.clone());
        db.run("CREATE TABLE t (v int)").await.unwrap();
        let killer = {
            let engine = engine.clone();
            tokio::spawn(async move {
                // The INSERT sends its chunks without virtual time passing: the kill comes between two of
                // them, a few turns of the scheduler after it started.
                for _ in 0..KILL_AFTER_TURNS {
                    tokio::task::yield_now().await;
                }
                assert!(engine.kill_frontend(0), "the INSERT's frontend");
            })
        };
        let insert = format!("INSERT INTO t SELECT * FROM generate_series(1, {ROWS})");
        let err = db.execute(&insert).await.unwrap_err();
        assert_eq!(err, SqlError::Connection(ConnectionError::Closed));
        killer.await.unwrap();
        let mut counts = Vec::new();
        for _ in 0..2 {
            tokio::time::sleep(Duration::from_secs(30)).await;
            db.run("FLUSH").await.unwrap();
            counts.push(one_value(&mut db, "SELECT count(*) FROM t").await.unwrap());
        }
        let written: u64 = counts[0].parse().unwrap();
        assert!(
            written < ROWS,
            "the kill cut the INSERT: {written} of {ROWS}"
        );
        assert_eq!(counts[0], counts[1], "nothing written after the kill");
        cluster.shutdown();
    });
}
