//! `--meta-store-out FILE` read back with Debian's `sqlite3` (installed by `cargo xtask setup`): the file a run
//! writes opens in the real tool, its jobs, fragments and actors agree with one another, and the same seed
//! writes the same database.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn epochlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epochlab"))
        .args(args)
        .output()
        .expect("epochlab runs")
}

/// `sqlite3 FILE SQL`'s standard output; the test fails on any error of sqlite3's.
fn sqlite3(file: &Path, sql: &str) -> String {
    let out = Command::new("sqlite3")
        .arg(file)
        .arg(sql)
        .output()
        .expect("Debian's sqlite3 is installed (`cargo xtask setup` installs it)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.is_empty(), "{sql}: {stderr}");
    String::from_utf8(out.stdout).expect("sqlite3 prints UTF-8")
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("epochlab-store-out-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `epochlab ARGS --meta-store-out DB`, which must pass or fail (exit 0 or 1), not refuse its input, and
/// name on stderr each file it wrote, each named after DB. The files named.
fn write_store(args: &[&str], db: &Path) -> Vec<PathBuf> {
    let mut all = args.to_vec();
    all.extend(["--meta-store-out", db.to_str().unwrap()]);
    let out = epochlab(&all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{all:?}: {stderr}"
    );
    let stem = db.display().to_string();
    let stem = stem.trim_end_matches(".db");
    let told: Vec<PathBuf> = stderr
        .lines()
        .filter_map(|l| l.split_once(": meta store written to ").map(|(_, p)| p))
        .map(PathBuf::from)
        .collect();
    assert!(!told.is_empty(), "{all:?}: no file named: {stderr}");
    for f in &told {
        assert!(
            f.display().to_string().starts_with(stem) && f.is_file(),
            "{all:?}: {} named: {stderr}",
            f.display()
        );
    }
    told
}

fn lines(s: &str) -> Vec<&str> {
    s.lines().collect()
}

#[test]
fn a_repro_runs_store_opens_in_sqlite3_with_its_jobs_and_fragments() {
    let dir = scratch("repro");
    let db = dir.join("store.db");
    write_store(&["repro", "--mode", "fixed"], &db);
    let tables = sqlite3(&db, ".tables");
    for t in [
        "streaming_job",
        "fragment",
        "actor",
        "worker",
        "object",
        "hummock_version_delta",
    ] {
        assert!(tables.split_whitespace().any(|x| x == t), "{t} in {tables}");
    }
    // Every job has a fragment with actors, every fragment a job; every actor is on a worker meta knows.
    let jobs = sqlite3(
        &db,
        "SELECT job_id, name, job_status, create_type FROM streaming_job ORDER BY job_id",
    );
    assert!(!jobs.is_empty(), "the run leaves its table");
    let orphans = sqlite3(
        &db,
        "SELECT fragment_id FROM fragment WHERE job_id NOT IN (SELECT job_id FROM streaming_job)
         UNION ALL SELECT job_id FROM streaming_job WHERE job_id NOT IN (SELECT job_id FROM fragment)
         UNION ALL SELECT actor_id FROM actor WHERE worker_id NOT IN (SELECT worker_id FROM worker)",
    );
    assert_eq!(orphans, "", "jobs, fragments and actors agree");
    let actors = sqlite3(
        &db,
        "SELECT count(*) FROM actor JOIN fragment USING (fragment_id) JOIN streaming_job USING (job_id)",
    );
    assert!(actors.trim().parse::<u32>().unwrap() > 0, "{actors}");
    // The max committed epoch is in the deltas.
    let mce = sqlite3(
        &db,
        "SELECT max(max_committed_epoch) FROM hummock_version_delta",
    );
    assert!(mce.trim().parse::<u64>().unwrap() > 0, "{mce}");
    // JSON columns read with sqlite3's own functions.
    let vnodes = sqlite3(
        &db,
        "SELECT json_extract(vnode_bitmap, '$.len') FROM actor LIMIT 1",
    );
    assert_eq!(vnodes.trim(), "256");
}

#[test]
fn the_same_seed_writes_the_same_database_and_each_run_has_its_file() {
    let dir = scratch("same");
    let run = |name: &str| {
        let db = dir.join(name);
        let told = write_store(&["repro", "--mode", "all"], &db);
        assert_eq!(told.len(), 3, "one file per mode: {told:?}");
        db
    };
    run("a.db");
    run("b.db");
    for mode in ["buggy", "fixed"] {
        let (a, b) = (
            dir.join(format!("a.{mode}.db")),
            dir.join(format!("b.{mode}.db")),
        );
        let dump = |f: &Path| sqlite3(f, ".dump");
        assert_eq!(
            lines(&dump(&a)),
            lines(&dump(&b)),
            "{mode}: same seed, same rows"
        );
        assert!(dump(&a).contains("INSERT INTO streaming_job"), "{mode}");
    }
    assert!(
        !dir.join("a.db").exists(),
        "several runs: one file each, none at the path itself"
    );
}

#[test]
fn a_plan_and_an_slt_file_write_their_stores() {
    let dir = scratch("plan");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let plan = root.join("tests/regressions/14910-drop-backfilling-mv-then-kill.json");
    let db = dir.join("plan.db");
    write_store(&["soak", "--plan", plan.to_str().unwrap()], &db);
    let workers = sqlite3(&db, "SELECT count(*) FROM worker WHERE status = 'running'");
    assert!(workers.trim().parse::<u32>().unwrap() > 0, "{workers}");

    let slt = dir.join("t.slt");
    std::fs::write(
        &slt,
        "statement ok\ncreate table t (v int);\n\nstatement ok\ncreate materialized view mv as select sum(v) from t;\n",
    )
    .unwrap();
    let db = dir.join("slt.db");
    write_store(&["slt", slt.to_str().unwrap()], &db);
    let objects = sqlite3(
        &db,
        "SELECT obj_type, name FROM object WHERE name IN ('t', 'mv') ORDER BY name",
    );
    assert_eq!(lines(&objects), ["materialized view|mv", "table|t"]);
    let jobs = sqlite3(
        &db,
        "SELECT name, job_status FROM streaming_job ORDER BY name",
    );
    assert_eq!(lines(&jobs), ["mv|CREATED", "t|CREATED"]);
    // The SQL catalog's relations are the jobs' (meta owns both), at the catalog's notification version.
    let names = sqlite3(
        &db,
        "SELECT name FROM streaming_job EXCEPT SELECT name FROM object WHERE obj_type <> 'connection'",
    );
    assert_eq!(names, "", "every job has its catalog entry");
    let version = sqlite3(
        &db,
        "SELECT version FROM catalog_version WHERE name = 'notification'",
    );
    assert!(version.trim().parse::<u64>().unwrap() >= 2, "{version}");
}

/// Either store meta writes to during the run gives the same file.
#[test]
fn the_memory_and_the_sqlite_store_write_the_same_file() {
    let dir = scratch("backends");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let plan = root.join("tests/regressions/14910-drop-backfilling-mv-then-kill.json");
    let dump = |store: &str| {
        let db = dir.join(format!("{store}.db"));
        let args = [
            "soak",
            "--plan",
            plan.to_str().unwrap(),
            "--meta-store",
            store,
        ];
        write_store(&args, &db);
        sqlite3(&db, ".dump")
    };
    let (memory, sqlite) = (dump("memory"), dump("sqlite"));
    assert!(sqlite.contains("INSERT INTO hummock_version_delta"));
    // The same rows; `.dump` lists a table's rows in the order they went in, which differs.
    let sorted = |s: &str| {
        let mut l: Vec<String> = s.lines().map(str::to_string).collect();
        l.sort();
        l
    };
    assert_eq!(sorted(&memory), sorted(&sqlite));
}

#[test]
fn a_store_file_that_cannot_be_written_is_one_line_and_exit_2() {
    for args in [
        &["repro", "--meta-store-out", "/nonexistent-dir/s.db"][..],
        &[
            "slt",
            "/dev/null",
            "--meta-store-out",
            "/nonexistent-dir/s.db",
        ][..],
        &["soak", "--meta-store-out", "s.db"][..],
        &["soak", "--seeds", "0..1", "--meta-store-out", "s.db"][..],
        &["soak", "--slt", "x.slt", "--meta-store", "memory"][..],
    ] {
        let out = epochlab(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        if args.iter().any(|a| a.starts_with("/nonexistent")) {
            assert!(stderr.contains("meta store"), "{args:?}: {stderr}");
        }
    }
}
