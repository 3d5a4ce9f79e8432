//! RisingWave's `ci/scripts/run-backfill-tests.sh` at f21fb9b7915: the functions that run pass in fixed mode on
//! seeds 1..4; psql goes on after a failed statement and the error is printed, not failed; background calls
//! run beside the rest; a function that needs what epochlab lacks names it.

use std::path::{Path, PathBuf};

use epochlab_sim::config::Topology;
use epochlab_sim::{BugMode, Mode, Outcome, ReproHooks};
use epochlab_simulation::runner::backfill::{
    BackfillError, BackfillFn, Call, ClusterShape, FUNCTIONS, SQL_ROOT, run_function,
};

fn sql_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(SQL_ROOT)
}

fn fixed() -> BugMode {
    BugMode::of_14910(Mode::Fixed)
}

#[test]
fn every_function_that_runs_passes_in_fixed_mode() {
    let runs: Vec<&BackfillFn> = FUNCTIONS.iter().filter(|f| f.needs.is_none()).collect();
    assert_eq!(
        runs.iter().map(|f| f.name).collect::<Vec<_>>(),
        [
            "test_snapshot_and_upstream_read",
            "test_replication_with_column_pruning"
        ]
    );
    for f in runs {
        for seed in 1..4 {
            let out = run_function(&sql_root(), f, seed, fixed(), ReproHooks::default())
                .expect("its files are vendored");
            let r = out.value;
            assert_eq!(
                r.report.outcome,
                Outcome::Passed,
                "{} seed {seed}: {:?} {:?}",
                f.name,
                r.report.error,
                r.psql_errors
            );
            assert!(r.statements >= 6, "{}: {}", f.name, r.statements);
            assert_eq!(r.outcome(), "passed", "{}: {:?}", f.name, r.psql_errors);
            assert!(r.psql_errors.is_empty(), "{}: {:?}", f.name, r.psql_errors);
            assert_eq!(r.rows.len(), 10, "{}: its select.sql reads 10 rows", f.name);
        }
    }
}

#[test]
fn what_a_function_lacks_is_named_and_nothing_runs() {
    for f in FUNCTIONS.iter().filter(|f| f.needs.is_some()) {
        let Err(err) = run_function(&sql_root(), f, 1, fixed(), ReproHooks::default()) else {
            panic!("{} ran", f.name)
        };
        assert!(
            matches!(err, BackfillError::Needs { function, .. } if function == f.name),
            "{err}"
        );
    }
}

/// A psql session over a file with a failing statement: psql prints the error and runs the rest; a background
/// session inserts while the foreground one creates a view over the table; the view ends with every row.
#[test]
fn psql_goes_on_after_an_error_and_background_sessions_run_beside() {
    let dir = std::env::temp_dir().join(format!("epochlab-backfill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = [
        (
            "setup.sql",
            "CREATE TABLE t (v int);\nSELECT * FROM no_such_table;\n\
             INSERT INTO t SELECT * FROM generate_series(1, 3000);\nFLUSH;",
        ),
        (
            "more.sql",
            "INSERT INTO t SELECT * FROM generate_series(3001, 6000);\nFLUSH;",
        ),
        (
            "view.sql",
            "SET BACKFILL_RATE_LIMIT = 500;\nCREATE MATERIALIZED VIEW m AS SELECT * FROM t;",
        ),
        ("check.sql", "SELECT count(*) FROM m;"),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let f = BackfillFn {
        name: "test_ours",
        line: 0,
        cluster: ClusterShape {
            profile: "ours",
            topology: Topology::SINGLE_CORE,
            barrier_interval_ms: 100,
        },
        calls: &[
            Call::Psql("setup.sql"),
            Call::PsqlBackground("view.sql"),
            Call::PsqlBackground("more.sql"),
            Call::Wait,
            Call::Psql("check.sql"),
        ],
        needs: None,
    };
    let out = run_function(&dir, &f, 7, fixed(), ReproHooks::default())
        .unwrap()
        .value;
    assert_eq!(
        out.report.outcome,
        Outcome::Passed,
        "{:?}",
        out.report.error
    );
    assert_eq!(out.statements, 9);
    assert_eq!(out.psql_errors.len(), 1, "{:?}", out.psql_errors);
    assert!(
        out.psql_errors[0].starts_with("psql:setup.sql: ERROR:"),
        "{:?}",
        out.psql_errors
    );
    assert_eq!(
        out.rows,
        ["check.sql: 6000"],
        "the view has both sessions' rows"
    );
    let missing = BackfillFn {
        calls: &[Call::Psql("nope.sql")],
        ..f
    };
    let Err(err) = run_function(&dir, &missing, 7, fixed(), ReproHooks::default()) else {
        panic!("a missing file ran")
    };
    assert!(matches!(err, BackfillError::Unreadable { .. }), "{err}");
}
