//! The kill runner against RisingWave's at f21fb9b7915 (`src/tests/simulation/src/slt.rs`, `cluster.rs`): one
//! test per difference that issue 21 lists, each able to fail if the difference came back.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use epochlab_frontend::{ConnectionError, Output, Session, SqlError};
use epochlab_sim::config::Topology;
use epochlab_sim::{Cluster, ClusterConfig, Outcome, ReproHooks, run};
use epochlab_simulation::db::SimDb;
use epochlab_simulation::runner::{KillTarget, plan_kills};
use epochlab_simulation::{KillRoles, RunnerEra, SltParams, run_file};
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};

fn temp(dir: &str, name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("epochlab-kill-runner-{}", std::process::id()))
        .join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn killing(seed: u64, roles: KillRoles, kill_rate: f64) -> SltParams {
    SltParams {
        seed,
        kill: true,
        kill_roles: roles,
        kill_rate,
        ..SltParams::default()
    }
}

const COMPUTE: KillRoles = KillRoles {
    meta: false,
    frontend: false,
    compute: true,
    compactor: false,
};

/// Difference 1: In 2024 a CREATE MATERIALIZED VIEW under kills is preceded by `SET BACKGROUND_DDL=<draw>` even at rate
/// 0 (so `false`), overriding the file's own `SET BACKGROUND_DDL=true`; today's runner leaves it.
#[test]
fn set_background_ddl_at_rate_0_overrides_the_files_setting_in_2024_only() {
    let f = temp(
        "bg",
        "override.slt",
        "statement ok\nSET BACKGROUND_DDL=true;\n\nstatement ok\nCREATE TABLE t (v int);\n\n\
         statement ok\nCREATE MATERIALIZED VIEW m AS SELECT * FROM t;\n\n\
         query T\nSHOW BACKGROUND_DDL;\n----\nfalse\n",
    );
    let r2024 = run_file(&f, &killing(1, COMPUTE, 0.0), ReproHooks::default())
        .unwrap()
        .value;
    assert_eq!(r2024.outcome, Outcome::Passed, "{:?}", r2024.error);
    let latest = SltParams {
        runner: RunnerEra::Latest,
        ..killing(1, COMPUTE, 0.0)
    };
    let r = run_file(&f, &latest, ReproHooks::default()).unwrap().value;
    assert_eq!(
        r.outcome,
        Outcome::Failed,
        "today's runner leaves the file's SET"
    );
    assert_eq!(r.failure.unwrap().line, 10);
}

/// Difference 1: The draws come from an rng of their own, seeded by the seed alone: the kill draws do not move them.
#[test]
fn background_ddl_draws_do_not_depend_on_the_kill_draws() {
    let mut text = String::from("statement ok\nCREATE TABLE t (v int);\n\n");
    for i in 0..10 {
        text.push_str(&format!(
            "statement ok\nCREATE MATERIALIZED VIEW m{i} AS SELECT * FROM t;\n\n"
        ));
    }
    let f = temp("draws", "draws.slt", &text);
    let draws = |kill_rate: f64| -> Vec<String> {
        let p = SltParams {
            background_ddl_rate: 0.5,
            ..killing(7, COMPUTE, kill_rate)
        };
        let out = run_file(&f, &p, ReproHooks::default()).unwrap();
        assert_eq!(out.value.outcome, Outcome::Passed, "{:?}", out.value.error);
        out.log
            .lines()
            .iter()
            .filter_map(|l| {
                l.split_once("runner: SET BACKGROUND_DDL=")
                    .map(|(_, v)| v.to_string())
            })
            .collect()
    };
    let calm = draws(0.0);
    assert_eq!(calm.len(), 10);
    assert!(calm.iter().any(|d| d.starts_with("true")), "{calm:?}");
    assert!(calm.iter().any(|d| d.starts_with("false")), "{calm:?}");
    assert_eq!(
        calm,
        draws(0.5),
        "the kill draws moved the background DDL draws"
    );
}

/// Difference 2: A CREATE of a name whose job is still being created is RisingWave's meta's `table is in creating
/// procedure: <id>` (not the frontend's `Catalog error: ... exists`), with or without IF NOT EXISTS.
#[test]
fn a_duplicate_create_of_a_creating_view_is_in_creating_procedure() {
    run(1, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        for sql in [
            "CREATE TABLE t (v int)",
            "INSERT INTO t SELECT * FROM generate_series(1, 400)",
            "FLUSH",
            "SET BACKGROUND_DDL = true; SET STREAMING_RATE_LIMIT = 10",
            "CREATE MATERIALIZED VIEW m AS SELECT * FROM t",
        ] {
            s.execute(sql).await.unwrap();
        }
        for sql in [
            "CREATE MATERIALIZED VIEW m AS SELECT * FROM t",
            "CREATE MATERIALIZED VIEW IF NOT EXISTS m AS SELECT * FROM t",
            "CREATE TABLE m (v int)",
        ] {
            let err = s.execute(sql).await.unwrap_err();
            assert!(
                matches!(err, SqlError::InCreatingProcedure { .. }),
                "{sql}: {err}"
            );
            let text = err.to_string();
            assert!(
                text.starts_with("table is in creating procedure: "),
                "{text}"
            );
            assert!(!text.contains("Catalog error"), "{text}");
        }
        s.execute("WAIT").await.unwrap();
        let err = s
            .execute("CREATE MATERIALIZED VIEW m AS SELECT * FROM t")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("Catalog error") && err.contains("exists"),
            "{err}"
        );
        s.execute("CREATE MATERIALIZED VIEW IF NOT EXISTS m AS SELECT * FROM t")
            .await
            .unwrap();
        cluster.shutdown();
    });
}

/// Difference 2: The runner on `table is in creating procedure`: a background CREATE MATERIALIZED VIEW whose frontend
/// died with it in flight is retried, meets the job meta still runs, WAITs and checks the view.
#[test]
fn a_retried_background_create_in_creating_procedure_waits_for_the_view() {
    let f = temp(
        "creating",
        "creating.slt",
        "statement ok\nCREATE TABLE t (v int);\n\n\
         statement ok\nINSERT INTO t SELECT * FROM generate_series(1, 3000);\n\n\
         statement ok\nFLUSH;\n\n\
         statement ok\nSET STREAMING_RATE_LIMIT = 100;\n\n\
         statement ok\nCREATE MATERIALIZED VIEW m AS SELECT * FROM t;\n\n\
         query I\nSELECT count(*) FROM m;\n----\n3000\n",
    );
    let frontend = KillRoles {
        meta: false,
        frontend: true,
        compute: false,
        compactor: false,
    };
    let mut waited = Vec::new();
    for seed in 0..12 {
        let p = SltParams {
            background_ddl_rate: 1.0,
            ..killing(seed, frontend, 1.0)
        };
        let out = run_file(&f, &p, ReproHooks::default()).unwrap();
        let r = &out.value;
        assert_eq!(r.outcome, Outcome::Passed, "seed {seed}: {:?}", r.error);
        if out
            .log
            .lines()
            .iter()
            .any(|l| l.contains("m is in creating procedure: WAIT and check it"))
        {
            waited.push(seed);
        }
    }
    assert!(
        !waited.is_empty(),
        "no seed met `table is in creating procedure`"
    );
}

/// Difference 3: Every record the parser returns (comments and blank lines too) draws its killer, but DML.
#[test]
fn every_record_draws_a_killer_but_dml() {
    let text = "# a comment\n# on two lines\n\nstatement ok\nCREATE TABLE t (v int);\n\n\
                # another\nstatement ok\nINSERT INTO t VALUES (1);\n\nstatement ok\nFLUSH;\n\n\
                query I\nSELECT count(*) FROM t;\n----\n1\n\n# the end\n";
    let f = temp("every", "every.slt", text);
    let records = sqllogictest::parse_file::<DefaultColumnType>(&f).unwrap();
    let r = run_file(&f, &killing(3, COMPUTE, 1.0), ReproHooks::default())
        .unwrap()
        .value;
    assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.error);
    assert_eq!(r.records, 4, "statements and queries");
    assert!(records.len() > 6, "{records:?}");
    // Not the INSERT. `FLUSH;` draws one: RisingWave's `extract_sql_command` reads the first word with its
    // semicolon (`flush;`), which is not `flush`.
    assert_eq!(r.killers as usize, records.len() - 1, "{records:?}");
}

/// Difference 4: `KILL_IGNORE_FILES`: under kills such a file is not run (matched by whole path components, as
/// `Path::ends_with`); the latest list has the cursor files too.
#[test]
fn kill_ignore_files_are_not_run_under_kills() {
    let failing = "query I\nSELECT 1;\n----\n2\n";
    let now = temp("ignore/transaction", "now.slt", failing);
    let r = run_file(&now, &killing(1, COMPUTE, 1.0), ReproHooks::default())
        .unwrap()
        .value;
    assert!(r.skipped && r.outcome == Outcome::Passed, "{:?}", r.error);
    let r = run_file(&now, &SltParams::default(), ReproHooks::default())
        .unwrap()
        .value;
    assert!(!r.skipped && r.outcome == Outcome::Failed);
    let cursor = temp("ignore/transaction", "cursor.slt", failing);
    let r = run_file(&cursor, &killing(1, COMPUTE, 1.0), ReproHooks::default())
        .unwrap()
        .value;
    assert!(
        !r.skipped && r.outcome == Outcome::Failed,
        "not in 2024's list"
    );
    let latest = SltParams {
        runner: RunnerEra::Latest,
        ..killing(1, COMPUTE, 1.0)
    };
    let r = run_file(&cursor, &latest, ReproHooks::default())
        .unwrap()
        .value;
    assert!(r.skipped, "in today's list");
    let era = RunnerEra::R2024;
    assert!(era.kill_ignored(Path::new("e2e_test/tpch/tpch_snapshot.slt")));
    assert!(!era.kill_ignored(Path::new("e2e_test/my_tpch_snapshot.slt")));
    assert!(!era.kill_ignored(Path::new("e2e_test/batch/now.slt")));
}

/// On RisingWave's CI cluster with its 2 frontends: each role of two nodes loses none, both, or one (each with
/// p = 0.5), frontends and compactors alike, and either node may be the one.
#[test]
fn two_frontends_and_two_compactors_are_drawn_as_risingwave_draws_them() {
    let rng = epochlab_common::SimRng::new(12);
    let topology = Topology {
        frontend_nodes: 2,
        ..Topology::RISINGWAVE_CI
    };
    for (name, is_role) in [
        (
            "frontend",
            (|t: &KillTarget| matches!(t, KillTarget::Frontend(_))) as fn(&KillTarget) -> bool,
        ),
        ("compactor", |t: &KillTarget| {
            matches!(t, KillTarget::Compactor(_))
        }),
    ] {
        let mut by_count = [0u32; 3];
        let mut nodes = std::collections::BTreeSet::new();
        let rng = rng.clone();
        for _ in 0..600 {
            let plan = plan_kills(&rng, KillRoles::ALL, topology);
            let killed: Vec<String> = plan
                .iter()
                .filter(|k| is_role(&k.target))
                .map(|k| k.target.to_string())
                .collect();
            by_count[killed.len()] += 1;
            nodes.extend(killed);
        }
        // P(none) = P(both) = 1/3 + 1/3 * 1/4 = 5/12 (250 of 600), P(one) = 1/3 * 1/2 = 1/6 (100).
        assert!((200..300).contains(&by_count[0]), "{name}: {by_count:?}");
        assert!((200..300).contains(&by_count[2]), "{name}: {by_count:?}");
        assert!((60..140).contains(&by_count[1]), "{name}: {by_count:?}");
        assert_eq!(nodes.len(), 2, "{name}: {nodes:?}");
    }
}

/// Three metas, drawn as RisingWave's `Cluster::kill_node` draws them (`meta-failover.md` §1.2): none,
/// all or each with p = 0.5, and never all three (then only meta-1 dies): none 3/8, only meta-1 5/12, only
/// meta-2 or meta-3 and each pair 1/24.
#[test]
fn three_metas_are_drawn_as_risingwave_draws_them_and_never_all() {
    let rng = epochlab_common::SimRng::new(13);
    let topology = Topology {
        meta_nodes: 3,
        ..Topology::RISINGWAVE_CI
    };
    let roles = KillRoles {
        meta: true,
        ..KillRoles::NONE
    };
    let mut by_set = std::collections::BTreeMap::<Vec<String>, u32>::new();
    for _ in 0..2400 {
        let set = plan_kills(&rng, roles, topology);
        let set = set.iter().map(|k| k.target.to_string()).collect();
        *by_set.entry(set).or_default() += 1;
    }
    let count = |set: &[&str]| {
        let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
        by_set.get(&set).copied().unwrap_or(0)
    };
    assert!((800..1000).contains(&count(&[])), "{by_set:?}");
    assert!((900..1100).contains(&count(&["meta-1"])), "{by_set:?}");
    for set in [
        &["meta-2"][..],
        &["meta-3"],
        &["meta-1", "meta-2"],
        &["meta-1", "meta-3"],
        &["meta-2", "meta-3"],
    ] {
        assert!((60..150).contains(&count(set)), "{set:?}: {by_set:?}");
    }
    assert_eq!(count(&["meta-1", "meta-2", "meta-3"]), 0);
    assert_eq!(by_set.len(), 7, "{by_set:?}");
}

/// Difference 5: The kill draw per role, as `Cluster::kill_node`: none, all, or each with p = 0.5; never meta.
#[test]
fn each_role_is_killed_none_all_or_each_with_half_a_chance() {
    let rng = epochlab_common::SimRng::new(11);
    let (mut none, mut all, mut some) = (0, 0, 0);
    let (mut frontends, mut compactors) = (0, 0);
    for _ in 0..600 {
        let plan = plan_kills(&rng, KillRoles::ALL, Topology::SINGLE_CORE);
        let computes = plan
            .iter()
            .filter(|k| matches!(k.target, KillTarget::Compute(_)))
            .count();
        match computes {
            0 => none += 1,
            3 => all += 1,
            _ => some += 1,
        }
        frontends += plan
            .iter()
            .filter(|k| matches!(k.target, KillTarget::Frontend(_)))
            .count();
        compactors += plan
            .iter()
            .filter(|k| matches!(k.target, KillTarget::Compactor(_)))
            .count();
        for k in &plan {
            assert!(k.kill_after < Duration::from_secs(1));
            assert!(k.down < Duration::from_secs(21));
        }
    }
    // P(none) = 1/3 + 1/3 * 1/8, P(all) = 1/3 + 1/3 * 1/8, P(some) = 1/3 * 6/8.
    assert!((200..300).contains(&none), "{none} {all} {some}");
    assert!((200..300).contains(&all), "{none} {all} {some}");
    assert!((100..200).contains(&some), "{none} {all} {some}");
    // One node of the role: killed with p = 1/3 + 1/3 * 1/2.
    assert!((250..350).contains(&frontends), "{frontends}");
    assert!((250..350).contains(&compactors), "{compactors}");
    let only = KillRoles {
        meta: false,
        frontend: false,
        compute: false,
        compactor: true,
    };
    for _ in 0..50 {
        assert!(
            plan_kills(&rng, only, Topology::SINGLE_CORE)
                .iter()
                .all(|k| matches!(k.target, KillTarget::Compactor(1)))
        );
    }
}

async fn rows(db: &mut SimDb, sql: &str) -> Result<Vec<Vec<String>>, SqlError> {
    match db.run(sql).await? {
        DBOutput::Rows { rows, .. } => Ok(rows),
        DBOutput::StatementComplete(_) => Ok(Vec::new()),
        _ => unreachable!(),
    }
}

/// Difference 5: A killed frontend: the statement in flight fails with `connection closed` (what it sent to meta goes
/// on), a connect while it is down is refused, and after its restart the client reconnects and replays
/// its `SET`s.
#[test]
fn a_killed_frontend_closes_the_statement_in_flight_and_the_client_reconnects() {
    run(2, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let engine = epochlab_simulation::engine(&cluster, 2);
        let mut db = SimDb::new(engine.clone());
        for sql in [
            "CREATE TABLE t (v int)",
            "INSERT INTO t SELECT * FROM generate_series(1, 400)",
            "FLUSH",
            "SET STREAMING_RATE_LIMIT = 10",
            "SET BACKGROUND_DDL = false",
        ] {
            db.run(sql).await.unwrap();
        }
        let killer = {
            let engine = engine.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(2)).await;
                assert!(engine.kill_frontend(0));
            })
        };
        let err = db
            .execute("CREATE MATERIALIZED VIEW m AS SELECT * FROM t")
            .await
            .unwrap_err();
        assert_eq!(err, SqlError::Connection(ConnectionError::Closed));
        killer.await.unwrap();
        let err = db.execute("SHOW JOBS").await.unwrap_err();
        assert_eq!(err, SqlError::Connection(ConnectionError::Refused));
        engine.restart_frontend(0);
        // The replayed SETs: BACKGROUND_DDL false, and the rate limit (a second view is as slow).
        assert_eq!(
            rows(&mut db, "SHOW BACKGROUND_DDL").await.unwrap(),
            vec![vec!["false".to_string()]]
        );
        // Meta went on with the view the killed frontend had sent.
        let jobs = rows(&mut db, "SHOW JOBS").await.unwrap();
        assert_eq!(jobs.len(), 1, "{jobs:?}");
        db.run("WAIT").await.unwrap();
        assert_eq!(
            rows(&mut db, "SELECT count(*) FROM m").await.unwrap(),
            vec![vec!["400".to_string()]]
        );
        let mut fresh = Session::new(engine.clone());
        let Output::Rows { rows, .. } = fresh.execute("SHOW BACKGROUND_DDL").await.unwrap() else {
            panic!("rows")
        };
        assert_eq!(rows, vec![vec!["false".to_string()]]);
        cluster.shutdown();
    });
}

/// Difference 5: A killed compactor: no compaction task runs while it is down (L0 grows past the trigger); the tasks
/// that fell due run when it is back.
#[test]
fn a_killed_compactor_stops_compaction_until_it_is_back() {
    run(3, |ctx| async move {
        let cluster = Arc::new(Cluster::start(&ctx, ClusterConfig::default()).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute("CREATE TABLE t (v int)").await.unwrap();
        let trigger = epochlab_storage::CompactionConfig::default().trigger_sub_levels;
        assert!(cluster.kill_compactor(1));
        assert!(!cluster.kill_compactor(1), "down already");
        assert!(!cluster.kill_compactor(2), "no second compactor");
        for i in 0..(trigger * 3) {
            s.execute(&format!("INSERT INTO t VALUES ({i})"))
                .await
                .unwrap();
            s.execute("FLUSH").await.unwrap();
        }
        let tasks = cluster
            .hummock
            .compaction_stats()
            .tasks
            .load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            max_l0(&cluster) > trigger,
            "L0 grows while the compactor is down"
        );
        cluster.restart_compactor(1);
        assert!(max_l0(&cluster) < trigger, "the due task ran at restart");
        assert!(
            cluster
                .hummock
                .compaction_stats()
                .tasks
                .load(std::sync::atomic::Ordering::Relaxed)
                > tasks
        );
        cluster.shutdown();
    });
}

/// RisingWave's CI cluster has 2 compactors: the killer draws them as any role (none, both, or each with p = 0.5),
/// and each is killed alone.
#[test]
fn two_compactors_are_drawn_none_both_or_each() {
    let rng = epochlab_common::SimRng::new(12);
    let only = KillRoles {
        meta: false,
        frontend: false,
        compute: false,
        compactor: true,
    };
    let mut by_count = [0; 3];
    let mut by_node = [0; 3];
    for _ in 0..600 {
        let plan = plan_kills(&rng, only, Topology::RISINGWAVE_CI);
        by_count[plan.len()] += 1;
        for k in &plan {
            let KillTarget::Compactor(i) = k.target else {
                panic!("only compactors: {k:?}")
            };
            by_node[i as usize] += 1;
        }
    }
    // P(none) = P(both) = 1/3 + 1/3 * 1/4 = 5/12 (250 of 600), P(one) = 1/3 * 1/2 = 1/6 (100).
    assert!((200..300).contains(&by_count[0]), "{by_count:?}");
    assert!((200..300).contains(&by_count[2]), "{by_count:?}");
    assert!((60..140).contains(&by_count[1]), "{by_count:?}");
    assert_eq!(by_node[0], 0, "compactors are 1-based");
    assert!(by_node[1] > 250 && by_node[2] > 250, "{by_node:?}");
}

/// With two compactors, compaction goes on while one is up and stops only when both are down.
#[test]
fn compaction_goes_on_while_one_of_two_compactors_is_up() {
    run(4, |ctx| async move {
        let config = ClusterConfig {
            compactor_nodes: 2,
            ..ClusterConfig::default()
        };
        let cluster = Arc::new(Cluster::start(&ctx, config).await);
        let mut s = Session::new(epochlab_simulation::engine(&cluster, 2));
        s.execute("CREATE TABLE t (v int)").await.unwrap();
        let trigger = epochlab_storage::CompactionConfig::default().trigger_sub_levels;
        let fill = async |s: &mut Session, from: u32| {
            for i in from..from + trigger * 3 {
                s.execute(&format!("INSERT INTO t VALUES ({i})"))
                    .await
                    .unwrap();
                s.execute("FLUSH").await.unwrap();
            }
        };
        assert!(cluster.kill_compactor(2));
        assert_eq!(cluster.compactors_up(), 1);
        fill(&mut s, 0).await;
        assert!(max_l0(&cluster) <= trigger, "compactor-1 still compacts");
        assert!(cluster.kill_compactor(1));
        fill(&mut s, 1000).await;
        assert!(max_l0(&cluster) > trigger, "L0 grows with both down");
        cluster.restart_compactor(2);
        assert!(
            max_l0(&cluster) < trigger,
            "the due task ran when one came back"
        );
        cluster.shutdown();
    });
}

/// At RisingWave's CI topology (3 compute nodes of 2 cores) a job that sets no parallelism has 6 actors, 2 on
/// each worker.
#[test]
fn six_actors_two_per_worker_at_risingwave_s_ci_topology() {
    let file = temp(
        "topology",
        "t.slt",
        "statement ok\nCREATE TABLE t (v int);\n",
    );
    let seen: Arc<std::sync::Mutex<Option<Arc<Cluster>>>> = Arc::default();
    let keep = seen.clone();
    let hooks = ReproHooks {
        on_cluster: Some(Box::new(move |c: Arc<Cluster>| {
            *keep.lock().unwrap() = Some(c);
        })),
        ..ReproHooks::default()
    };
    let p = SltParams {
        topology: Topology::RISINGWAVE_CI,
        ..SltParams::default()
    };
    let out = run_file(&file, &p, hooks).unwrap();
    assert_eq!(out.value.outcome, Outcome::Passed, "{:?}", out.value.error);
    let cluster = seen
        .lock()
        .unwrap()
        .take()
        .expect("the hook saw the cluster");
    let t = cluster.meta().relation_by_name("t").expect("table t");
    let mut per_worker = std::collections::BTreeMap::new();
    for a in &t.actors {
        *per_worker.entry(a.worker.0).or_insert(0) += 1;
    }
    assert_eq!(t.actors.len(), 6);
    assert_eq!(
        per_worker.into_iter().collect::<Vec<_>>(),
        [(1, 2), (2, 2), (3, 2)]
    );
    assert_eq!(Topology::SINGLE_CORE.parallelism(), 3);
}

/// The most L0 sub-levels of any compaction group.
fn max_l0(c: &Cluster) -> u32 {
    c.hummock
        .group_compaction()
        .values()
        .map(|g| g.sub_levels)
        .max()
        .unwrap_or(0)
}

/// `--kill-meta` on one meta: it is drawn as any role (none, it, or it with p = 0.5: killed one time in two),
/// and alone; `--kill` draws the metas first, before the other roles, and never kills all three.
#[test]
fn meta_is_drawn_first_and_never_all() {
    let rng = epochlab_common::SimRng::new(13);
    let only = KillRoles {
        meta: true,
        ..KillRoles::NONE
    };
    let one_meta = Topology {
        meta_nodes: 1,
        ..Topology::RISINGWAVE_CI
    };
    let mut killed = 0;
    for _ in 0..600 {
        let plan = plan_kills(&rng, only, one_meta);
        assert!(plan.len() <= 1, "{plan:?}");
        if let Some(k) = plan.first() {
            assert_eq!(k.target, KillTarget::Meta(1));
            assert_eq!(k.target.to_string(), "meta-1");
            killed += 1;
        }
    }
    assert!((240..360).contains(&killed), "{killed}");
    let rng = epochlab_common::SimRng::new(14);
    let mut with_meta = 0;
    for _ in 0..200 {
        let all = plan_kills(&rng, KillRoles::ALL, Topology::RISINGWAVE_CI);
        let metas = all
            .iter()
            .take_while(|k| matches!(k.target, KillTarget::Meta(_)))
            .count();
        let anywhere = all
            .iter()
            .filter(|k| matches!(k.target, KillTarget::Meta(_)));
        assert_eq!(anywhere.count(), metas, "metas first: {all:?}");
        assert!(metas < 3, "never all three");
        with_meta += usize::from(metas > 0);
    }
    assert!(
        (100..150).contains(&with_meta),
        "5/8 of rounds: {with_meta}"
    );
}

/// A file of epochlab's own recovery set passes while meta is killed and restarted from its store under it,
/// and meta was killed.
#[test]
fn a_recovery_file_passes_under_meta_kills() {
    let f = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/slt/recovery/counts_after_recovery.slt");
    let only = KillRoles {
        meta: true,
        ..KillRoles::NONE
    };
    let mut kills = 0;
    for seed in 1..4 {
        let r = run_file(&f, &killing(seed, only, 1.0), ReproHooks::default())
            .unwrap()
            .value;
        assert_eq!(r.outcome, Outcome::Passed, "seed {seed}: {:?}", r.error);
        kills += r.kills;
    }
    assert!(kills > 0, "meta was killed");
}

/// `--meta-nodes 3 --kill-meta`: a file of tables, views and rows, its records with a killer each, runs
/// through meta kills drawn over three metas (a 20 s outage of the leader moves the lease) and passes at every
/// seed; some seeds kill metas, and some leader's outage hands the lease over.
#[test]
fn a_file_passes_with_three_metas_under_meta_kills() {
    let f = temp(
        "metas",
        "three.slt",
        "statement ok\nCREATE TABLE t (k int PRIMARY KEY, v int);\n\n\
         statement ok\nINSERT INTO t SELECT x, x % 5 FROM generate_series(1, 100) AS g(x);\n\n\
         statement ok\nFLUSH;\n\n\
         statement ok\nCREATE MATERIALIZED VIEW m AS SELECT v, count(*) AS c FROM t GROUP BY v;\n\n\
         query II\nSELECT v, c FROM m ORDER BY v;\n----\n0 20\n1 20\n2 20\n3 20\n4 20\n\n\
         statement ok\nCREATE MATERIALIZED VIEW n AS SELECT sum(c) AS s FROM m;\n\n\
         query I\nSELECT s FROM n;\n----\n100\n\n\
         statement ok\nDROP MATERIALIZED VIEW n;\n\n\
         statement ok\nDROP MATERIALIZED VIEW m;\n\n\
         statement ok\nDROP TABLE t;\n",
    );
    let roles = KillRoles {
        meta: true,
        ..KillRoles::NONE
    };
    let (mut kills, mut moved) = (0, 0);
    for seed in 0..12 {
        let p = SltParams {
            topology: Topology {
                meta_nodes: 3,
                ..Topology::SINGLE_CORE
            },
            ..killing(seed, roles, 1.0)
        };
        let out = run_file(&f, &p, ReproHooks::default()).unwrap();
        let r = &out.value;
        assert_eq!(r.outcome, Outcome::Passed, "seed {seed}: {:?}", r.error);
        kills += r.kills;
        let lines = out.log.lines();
        let changes = lines
            .iter()
            .filter(|l| l.contains(" restored=false"))
            .count();
        assert_eq!(r.meta_leader_changes, changes as u64, "seed {seed}");
        moved += changes;
    }
    assert!(kills > 0, "no meta was killed");
    assert!(moved > 0, "no outage moved the lease");
}
