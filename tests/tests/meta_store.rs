//! The meta store (issue 44, stage S3): each of meta's managers commits its own rows as it changes them, so
//! that what loads from the store is what live meta has, after random workload plans (kills, background DDL,
//! scale-in) and after every directed bug scenario of the catalogue, in every mode: the SQL catalog and its
//! version, the jobs with their status and create type, the fragments with their states and actors, the
//! workers, the sequences, and the Hummock deltas, which replayed give the version meta serves. The same seed
//! writes the same rows; and a row the store lost is found.

use std::sync::{Arc, Mutex};

use epochlab_meta::MetaNode;
use epochlab_meta::store::{MetaBackend, MetaRows, StoreMismatch, StoreOp};
use epochlab_sim::workload::{GenParams, generate, run_plan};
use epochlab_sim::{
    BugId, BugMode, Cluster, Mode, Outcome, ReproHooks, ReproParams, run_repro_with,
};

/// Hooks that keep the run's cluster, to look at its meta once the run is over (the last leader, after any
/// meta kill); its store `backend`.
fn keep_meta_in(backend: MetaBackend) -> (ReproHooks, Arc<Mutex<Option<Arc<Cluster>>>>) {
    let slot = Arc::new(Mutex::new(None));
    let keep = slot.clone();
    let hooks = ReproHooks {
        on_cluster: Some(Box::new(move |cluster| {
            *keep.lock().unwrap() = Some(cluster);
        })),
        meta_store: Some(backend),
        ..Default::default()
    };
    (hooks, slot)
}

fn keep_meta() -> (ReproHooks, Arc<Mutex<Option<Arc<Cluster>>>>) {
    keep_meta_in(MetaBackend::default())
}

fn taken(slot: &Arc<Mutex<Option<Arc<Cluster>>>>) -> MetaNode {
    let cluster = slot.lock().unwrap().take();
    cluster.expect("the run started a cluster").meta()
}

/// The plan of `seed` at a corner of the generator's flags, run fixed; its meta.
fn plan_meta(seed: u64, kill_rate: f64, background_ddl_rate: f64) -> MetaNode {
    plan_meta_in(MetaBackend::default(), seed, kill_rate, background_ddl_rate)
}

fn plan_meta_in(
    backend: MetaBackend,
    seed: u64,
    kill_rate: f64,
    background_ddl_rate: f64,
) -> MetaNode {
    let g = GenParams {
        kill_rate,
        background_ddl_rate,
        ..Default::default()
    };
    let plan = generate(seed, &g);
    let (hooks, slot) = keep_meta_in(backend);
    let out = run_plan(&plan, BugMode::of_14910(Mode::Fixed), hooks);
    assert_eq!(
        out.value.outcome,
        Outcome::Passed,
        "seed {seed}: {:?}",
        out.value.error
    );
    taken(&slot)
}

#[test]
fn the_store_holds_what_live_meta_has_after_workload_plans() {
    let mut jobs = 0;
    for (seed, kill, bg) in [
        (11, 1.0, 1.0),
        (12, 1.0, 0.0),
        (13, 0.0, 1.0),
        (14, 0.0, 0.0),
        (15, 0.5, 0.5),
        (16, 1.0, 1.0),
    ] {
        let meta = plan_meta(seed, kill, bg);
        assert_eq!(meta.check_store(), Ok(()), "seed {seed}");
        assert_eq!(meta.store_error(), None);
        let rows = meta.store().load().unwrap();
        assert!(rows.hummock_deltas.len() > 1, "seed {seed}: deltas stored");
        assert!(rows.catalog.is_some());
        jobs += rows.jobs.len();
    }
    assert!(jobs > 0, "the plans left jobs in the store");
}

#[test]
fn the_store_holds_what_live_meta_has_after_every_bug_scenario() {
    for bug in BugId::ALL {
        for mode in Mode::ALL {
            if bug.check_mode(mode).is_err() {
                continue;
            }
            let (hooks, slot) = keep_meta();
            let params = ReproParams {
                bug,
                mode,
                ..Default::default()
            };
            run_repro_with(&params, hooks);
            let meta = taken(&slot);
            assert_eq!(meta.check_store(), Ok(()), "{} {mode}", bug.as_str());
        }
    }
}

#[test]
fn the_same_seed_writes_the_same_rows() {
    let rows = |seed| -> MetaRows { plan_meta(seed, 1.0, 1.0).store().load().unwrap() };
    let (a, b) = (rows(21), rows(21));
    assert_eq!(a, b);
    assert_ne!(a, rows(22), "another seed, other rows");
}

#[test]
fn a_row_the_store_lost_is_found() {
    let meta = plan_meta(17, 0.0, 0.0);
    let rows = meta.store().load().unwrap();
    let (&job, _) = rows.jobs.iter().next().expect("the plan left a job");
    let fragment = *rows.fragments.keys().next().unwrap();
    meta.store()
        .commit(
            meta.term(),
            vec![StoreOp::DeleteJob(job), StoreOp::DeleteFragment(fragment)],
        )
        .unwrap();
    let found = meta.check_store().unwrap_err();
    assert!(found.contains(&StoreMismatch::Jobs(vec![job])), "{found:?}");
    assert!(
        found.contains(&StoreMismatch::Fragments(vec![fragment])),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|m| matches!(m, StoreMismatch::Relations(_))),
        "{found:?}"
    );
}

/// The SQLite store (stage S5) holds what live meta has after the workload plans, and loads the very rows the
/// memory store loads for the same seed: every table's rows decode to what was written.
#[test]
fn sqlite_holds_what_memory_holds() {
    let mut jobs = 0;
    for (seed, kill, bg) in [
        (11, 1.0, 1.0),
        (12, 1.0, 0.0),
        (13, 0.0, 1.0),
        (14, 0.0, 0.0),
    ] {
        let sqlite = plan_meta_in(MetaBackend::Sqlite, seed, kill, bg);
        assert_eq!(sqlite.check_store(), Ok(()), "seed {seed}");
        assert_eq!(sqlite.store_error(), None);
        let memory = plan_meta_in(MetaBackend::Memory, seed, kill, bg);
        let (a, b) = (
            sqlite.store().load().unwrap(),
            memory.store().load().unwrap(),
        );
        assert_eq!(a, b, "seed {seed}: the stores hold other rows");
        jobs += a.jobs.len();
    }
    assert!(jobs > 0, "the plans left jobs in the store");
}

/// A commit of a meta whose term no longer leads is refused by the SQLite store, as by the memory store.
#[test]
fn sqlite_fences_an_older_term() {
    let store = MetaBackend::Sqlite.open().unwrap();
    let (t1, t2) = (store.claim().unwrap(), store.claim().unwrap());
    assert_eq!((t1, t2), (1, 2));
    let op = || {
        vec![StoreOp::PutSequence(
            epochlab_meta::store::Sequence::Table,
            7,
        )]
    };
    assert_eq!(
        store.commit(t1, op()),
        Err(epochlab_meta::store::MetaStoreError::Fenced {
            term: 1,
            current: 2
        })
    );
    store.commit(t2, op()).unwrap();
    let rows = store.load().unwrap();
    assert_eq!(rows.term, 2);
    assert_eq!(
        rows.sequences.get(&epochlab_meta::store::Sequence::Table),
        Some(&7)
    );
}
