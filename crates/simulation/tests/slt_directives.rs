//! The sqllogictest directives RisingWave's files use, as the runner handles them: `include` with globs
//! relative to the including file, `skipif`/`onlyif`, `halt`, `sleep` (virtual), `statement count N`,
//! `query error <regex>`, `connection`, `control`; what it refuses (`system`, `control substitution on`, an
//! include that matches nothing, a malformed record) with the file and line; a bare `statement error` that
//! only an `unsupported` construct met; and a record that never ends, bounded by the virtual-time limit.

use std::path::{Path, PathBuf};
use std::time::Duration;

use epochlab_sim::{Outcome, ReproHooks, SimOutput};
use epochlab_simulation::{FailureCause, FileReport, SltError, SltParams, run_file};

/// A fresh folder for one test's files.
fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("epochlab-directives-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("parts")).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn run(path: &Path) -> Result<SimOutput<FileReport>, SltError> {
    run_file(path, &SltParams::default(), ReproHooks::default())
}

fn explain(r: &FileReport) -> String {
    format!(
        "{} {:?} {}",
        r.outcome.as_str(),
        r.error,
        r.failure
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default()
    )
}

const MAIN: &str = "\
statement ok
CREATE TABLE t (v int);

statement count 2
INSERT INTO t VALUES (1), (2);

statement ok
FLUSH;

skipif in-memory
query I
SELECT count(*) FROM t;
----
2

onlyif kill
query I
SELECT count(*) FROM t;
----
99

connection other
statement ok
INSERT INTO t VALUES (3);

statement ok
FLUSH;

statement error table or source not found
SELECT * FROM nothing_here;

query error not found: nothing_\\w+
SELECT * FROM nothing_there;

control sortmode rowsort

query I
SELECT v FROM t;
----
1
2
3

sleep 10s

include parts/*.slt.part

halt

query I
SELECT count(*) FROM t;
----
99
";

#[test]
fn the_directives_risingwave_uses_run() {
    let d = dir("all");
    write(
        &d,
        "parts/a.slt.part",
        "statement ok\nINSERT INTO t VALUES (4);\n",
    );
    write(
        &d,
        "parts/b.slt.part",
        "statement ok\nFLUSH;\n\nquery I\nSELECT count(*) FROM t;\n----\n4\n",
    );
    let out = run(&write(&d, "main.slt", MAIN)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.value.outcome,
        Outcome::Passed,
        "{}",
        explain(&out.value)
    );
    assert!(out.virtual_elapsed >= Duration::from_secs(10));
}

#[test]
fn a_failure_in_an_included_file_names_that_file_and_line() {
    let d = dir("included");
    write(
        &d,
        "parts/p.slt.part",
        "statement ok\nCREATE TABLE t (v int);\n\nstatement count 3\nINSERT INTO t VALUES (1);\n",
    );
    let out = run(&write(&d, "main.slt", "include ./parts/p.slt.part\n")).unwrap();
    let f = out.value.failure.expect("a record failed");
    assert!(f.file.ends_with("p.slt.part"), "{f}");
    assert_eq!((f.line, f.cause), (4, FailureCause::WrongCount));
}

#[test]
fn refused_files_name_the_file_and_line() {
    let d = dir("refused");
    let cases = [
        (
            "include.slt",
            "statement ok\nSELECT 1;\n\ninclude ./nothing/*.slt.part\n",
            "include.slt:4: include ./nothing/*.slt.part: no file matches",
        ),
        (
            "system.slt",
            "system ok\necho hi\n",
            "system.slt:1: unsupported: system command",
        ),
        (
            "subst.slt",
            "control substitution on\n",
            "subst.slt: unsupported: control substitution",
        ),
        (
            "malformed.slt",
            "statement ok\nSELECT 1;\n\nstatement nope\nSELECT 2;\n",
            "malformed.slt:4: parse error",
        ),
    ];
    for (name, text, want) in cases {
        let err = run(&write(&d, name, text)).err().expect("refused");
        assert!(err.to_string().contains(want), "{name}: {err}");
    }
    let err = run(&write(&d, "i.slt", "include ./none.slt.part\n")).err();
    assert!(matches!(err, Some(SltError::Include { .. })), "{err:?}");
    // A file that includes itself, and an included file that is not text: refused, not a crash.
    let err = run(&write(
        &d,
        "self.slt",
        "statement ok\nSELECT 1;\n\ninclude ./self.slt\n",
    ))
    .err();
    let err = err.expect("refused").to_string();
    assert!(
        err.contains("self.slt:4: include ./self.slt: includes nested deeper"),
        "{err}"
    );
    std::fs::write(d.join("parts/binary.slt.part"), [0xff, 0xfe, 0x00]).unwrap();
    let err = run(&write(
        &d,
        "binary.slt",
        "include ./parts/binary.slt.part\n",
    ))
    .err();
    let err = err.expect("refused").to_string();
    assert!(err.contains("binary.slt.part: cannot read"), "{err}");
}

#[test]
fn a_bare_statement_error_is_not_met_by_an_unsupported_construct() {
    let d = dir("bare");
    let text = "statement ok\nCREATE TABLE t (v int);\n\nstatement error\nCREATE AGGREGATE a (int) (sfunc = f, stype = int);\n";
    let r = run(&write(&d, "bare.slt", text)).unwrap().value;
    assert_eq!(r.outcome, Outcome::Failed);
    let f = r.failure.expect("the record failed");
    assert_eq!(f.line, 4);
    assert_eq!(
        f.cause,
        FailureCause::Unsupported("CREATE AGGREGATE".into())
    );
    // An expected error that names the construct is met by it.
    let text = "statement ok\nCREATE TABLE t (v int);\n\nstatement error unsupported: CREATE AGGREGATE\nCREATE AGGREGATE a (int) (sfunc = f, stype = int);\n";
    let r = run(&write(&d, "named.slt", text)).unwrap().value;
    assert_eq!(r.outcome, Outcome::Passed, "{}", explain(&r));
    // A bare `statement error` met by another error passes.
    let text = "statement error\nDROP TABLE nothing;\n";
    let r = run(&write(&d, "other.slt", text)).unwrap().value;
    assert_eq!(r.outcome, Outcome::Passed, "{}", explain(&r));
}

#[test]
fn a_record_that_never_ends_is_bounded_by_virtual_time() {
    let d = dir("hang");
    let text = "statement ok\nCREATE TABLE t (v int);\n\nsleep 100h\n\nstatement ok\nFLUSH;\n";
    let out = run(&write(&d, "hang.slt", text)).unwrap();
    assert_eq!(out.value.outcome, Outcome::Stuck, "{}", explain(&out.value));
    assert!(out.virtual_elapsed < Duration::from_secs(2 * 3600));
    let error = out.value.error.unwrap_or_default();
    assert!(error.contains("virtual time limit"), "{error}");
}
