//! Which of `e2e_test/`'s files RisingWave's CI ran at f21fb9b7915: every glob its scripts under `ci/scripts/`
//! pass to `sqllogictest` or `risingwave_simulation`, as data, and the files those globs reach (what they match,
//! and what a matched file `include`s). A file none of them reaches was run by no script: its failures are
//! nobody's regression, and `epochlab corpus` counts them apart.

use std::collections::BTreeSet;
use std::path::Path;

use crate::ci::{SCRIPT, STEPS};
use crate::runner::included_files;

/// One call of a script that runs files of `e2e_test/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScriptGlob {
    /// The script, under RisingWave's root.
    pub script: &'static str,
    /// Its first line passing this glob.
    pub line: u32,
    /// The glob, relative to `e2e_test/`.
    pub glob: &'static str,
}

const fn g(script: &'static str, line: u32, glob: &'static str) -> ScriptGlob {
    ScriptGlob { script, line, glob }
}

const RUN_E2E: &str = "ci/scripts/run-e2e-test.sh";
const PARALLEL: &str = "ci/scripts/e2e-test-parallel.sh";
const PARALLEL_IN_MEMORY: &str = "ci/scripts/e2e-test-parallel-in-memory.sh";
const PARALLEL_OPENDAL: &str = "ci/scripts/e2e-test-parallel-for-opendal.sh";
const DETERMINISTIC_E2E: &str = "ci/scripts/deterministic-e2e-test.sh";
const BACKFILL: &str = "ci/scripts/run-backfill-tests.sh";
const SINK: &str = "ci/scripts/e2e-sink-test.sh";
const SOURCE: &str = "ci/scripts/e2e-source-test.sh";
const KAFKA_SINK: &str = "ci/scripts/e2e-kafka-sink-test.sh";

/// The globs of every script but the recovery one (whose globs are [`STEPS`]'), one per (script, glob), read
/// off `git grep -n 'e2e_test/.*\.slt' f21fb9b7915 -- ci/`.
pub const OTHER_SCRIPT_GLOBS: &[ScriptGlob] = &[
    g(RUN_E2E, 68, "streaming/**/*.slt"),
    g(RUN_E2E, 76, "ddl/**/*.slt"),
    g(RUN_E2E, 77, "background_ddl/basic.slt"),
    g(RUN_E2E, 78, "visibility_mode/*.slt"),
    g(RUN_E2E, 79, "database/prepare.slt"),
    g(RUN_E2E, 80, "database/test.slt"),
    g(RUN_E2E, 83, "superset/*.slt"),
    g(RUN_E2E, 88, "udf/udf.slt"),
    g(RUN_E2E, 91, "udf/alter_function.slt"),
    g(RUN_E2E, 92, "udf/graceful_shutdown_python.slt"),
    g(RUN_E2E, 94, "udf/retry_python.slt"),
    g(RUN_E2E, 103, "udf/wasm_udf.slt"),
    g(RUN_E2E, 111, "generated/**/*.slt"),
    g(RUN_E2E, 119, "error_ui/simple/**/*.slt"),
    g(RUN_E2E, 120, "error_ui/extended/**/*.slt"),
    g(RUN_E2E, 128, "extended_mode/**/*.slt"),
    g(RUN_E2E, 157, "compaction/ingest_rows.slt"),
    g(PARALLEL, 34, "streaming/**/*.slt"),
    g(PARALLEL, 42, "ddl/**/*.slt"),
    g(PARALLEL, 43, "visibility_mode/*.slt"),
    g(PARALLEL, 51, "generated/**/*.slt"),
    g(PARALLEL_IN_MEMORY, 31, "streaming/**/*.slt"),
    g(PARALLEL_IN_MEMORY, 38, "ddl/**/*.slt"),
    g(PARALLEL_IN_MEMORY, 39, "batch/**/*.slt"),
    g(PARALLEL_OPENDAL, 34, "streaming/**/*.slt"),
    g(PARALLEL_OPENDAL, 44, "ddl/**/*.slt"),
    g(PARALLEL_OPENDAL, 45, "visibility_mode/*.slt"),
    g(DETERMINISTIC_E2E, 34, "ddl/**/*.slt"),
    g(DETERMINISTIC_E2E, 37, "streaming/**/*.slt"),
    g(DETERMINISTIC_E2E, 40, "batch/**/*.slt"),
    g(DETERMINISTIC_E2E, 43, "source/basic/kafka*.slt"),
    g(BACKFILL, 187, "backfill/sink/create_sink.slt"),
    g(BACKFILL, 204, "backfill/sink/validate_sink.slt"),
    g(BACKFILL, 211, "backfill/runtime/create_table.slt"),
    g(BACKFILL, 212, "backfill/runtime/insert_snapshot.slt"),
    g(BACKFILL, 213, "backfill/runtime/insert_upstream.slt"),
    g(
        BACKFILL,
        215,
        "backfill/runtime/create_arrangement_backfill_mv.slt",
    ),
    g(
        BACKFILL,
        219,
        "backfill/runtime/validate_rows_arrangement.slt",
    ),
    g(BACKFILL, 231, "backfill/runtime/create_no_shuffle_mv.slt"),
    g(
        BACKFILL,
        235,
        "backfill/runtime/validate_rows_no_shuffle.slt",
    ),
    g(BACKFILL, 272, "backfill/runtime/create_wide_table.slt"),
    g(BACKFILL, 273, "backfill/runtime/insert_wide_snapshot.slt"),
    g(SINK, 60, "sink/append_only_sink.slt"),
    g(SINK, 61, "sink/create_sink_as.slt"),
    g(SINK, 62, "sink/blackhole_sink.slt"),
    g(SINK, 63, "sink/remote/types.slt"),
    g(SINK, 64, "sink/sink_into_table/*.slt"),
    g(SINK, 69, "sink/remote/jdbc.load.slt"),
    g(SINK, 71, "sink/remote/jdbc.check.pg.slt"),
    g(SINK, 126, "source/nexmark_endless_mvs/*.slt"),
    g(SINK, 127, "source/nexmark_endless_sinks/*.slt"),
    g(SOURCE, 66, "source/cdc_inline/**/*.slt"),
    g(SOURCE, 69, "source/opendal/**/*.slt"),
    g(SOURCE, 72, "source/cdc/cdc.validate.mysql.slt"),
    g(SOURCE, 73, "source/cdc/cdc.validate.postgres.slt"),
    g(SOURCE, 77, "source/cdc/cdc.share_stream.slt"),
    g(SOURCE, 80, "source/cdc/cdc.load.slt"),
    g(SOURCE, 83, "source/cdc/cdc.check.slt"),
    g(SOURCE, 114, "source/cdc/cdc.check_new_rows.slt"),
    g(SOURCE, 117, "source/cdc/cdc_share_stream_drop.slt"),
    g(SOURCE, 132, "schema_registry/pb.slt"),
    g(SOURCE, 133, "schema_registry/alter_sr.slt"),
    g(SOURCE, 143, "source/basic/*.slt"),
    g(SOURCE, 144, "source/basic/old_row_format_syntax/*.slt"),
    g(SOURCE, 145, "source/basic/alter/kafka.slt"),
    g(SOURCE, 150, "source/basic/alter/kafka_after_new_data.slt"),
    g(SOURCE, 154, "source/basic/alter/kafka_after_new_data_2.slt"),
    g(SOURCE, 157, "ch_benchmark/batch/ch_benchmark.slt"),
    g(SOURCE, 158, "ch_benchmark/streaming/*.slt"),
    g(KAFKA_SINK, 12, "sink/kafka/create_sink.slt"),
    g(KAFKA_SINK, 140, "sink/kafka/drop_sink.slt"),
    g(KAFKA_SINK, 149, "sink/kafka/protobuf.slt"),
    g(KAFKA_SINK, 157, "sink/kafka/avro.slt"),
    g(
        "ci/scripts/e2e-clickhouse-sink-test.sh",
        37,
        "sink/clickhouse_sink.slt",
    ),
    g(
        "ci/scripts/e2e-deltalake-sink-rust-test.sh",
        56,
        "sink/deltalake_rust_sink.slt",
    ),
    g(
        "ci/scripts/e2e-elasticsearch-sink-test.sh",
        10,
        "sink/elasticsearch/elasticsearch_sink.slt",
    ),
    g(
        "ci/scripts/e2e-iceberg-sink-test.sh",
        55,
        "sink/iceberg_sink.slt",
    ),
    g(
        "ci/scripts/e2e-pulsar-sink-test.sh",
        42,
        "sink/pulsar_sink.slt",
    ),
];

/// Every script's globs: the recovery script's steps, then [`OTHER_SCRIPT_GLOBS`].
pub fn globs() -> impl Iterator<Item = ScriptGlob> {
    STEPS
        .iter()
        .map(|s| g(SCRIPT, s.line, s.glob))
        .chain(OTHER_SCRIPT_GLOBS.iter().copied())
}

/// The files under `root` (a copy of `e2e_test/`) some script ran, relative to `root` with `/` separators:
/// what a glob of [`globs`] matches, and whatever such a file includes, however deep.
pub fn reached(root: &Path) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = Vec::new();
    for glob in globs() {
        let pattern = root.join(glob.glob);
        let Ok(matches) = glob::glob(&pattern.to_string_lossy()) else {
            continue;
        };
        todo.extend(matches.flatten());
    }
    while let Some(path) = todo.pop() {
        let Some(rel) = crate::corpus::path_under(root, &path) else {
            continue;
        };
        if seen.insert(rel) {
            todo.extend(included_files(&path));
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_reached_by_a_glob_or_an_include() {
        let d = std::env::temp_dir().join(format!("epochlab-scripts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let files = [
            ("ddl/a/x.slt", ""),
            (
                "background_ddl/sim/basic.slt",
                "include ../common/create_table.slt\n",
            ),
            ("background_ddl/common/create_table.slt", ""),
            ("background_ddl/common/drop_table.slt", ""),
            ("background_ddl/sim.slt", "include ./sim/basic.slt\n"),
            ("misc/y.slt", ""),
        ];
        for (f, text) in files {
            let path = d.join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let reached = reached(&d);
        let want: BTreeSet<String> = [
            "ddl/a/x.slt",
            "background_ddl/sim/basic.slt",
            "background_ddl/common/create_table.slt",
        ]
        .map(String::from)
        .into();
        assert_eq!(reached, want);
        let _ = std::fs::remove_dir_all(&d);
    }
}
