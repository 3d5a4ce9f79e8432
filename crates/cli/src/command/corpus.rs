//! `epochlab corpus`: its flags (the one definition, with their help) and the run configuration
//! ([`crate::corpus::CorpusArgs`]) they become.

use std::path::PathBuf;

use clap::{ArgGroup, Args};

use super::values;
use crate::corpus::CorpusArgs;

/// Run RisingWave's e2e corpus, every .slt file in a fresh simulated cluster, with the ratchet
///
/// The corpus: its ddl, streaming, background_ddl and backfill test files at f21fb9b7915,
/// vendored unmodified under tests/slt/risingwave/. Every .slt file under the root runs in a
/// fresh simulated cluster (fixed mode, as `epochlab slt` runs a file), on worker threads.
/// Prints one line per file, sorted by path: `passed`, `failed at FILE:LINE: ...` (the SQL,
/// expected and actual), `unsupported: <construct>` (the front end refused a construct of the
/// file), or under kills `skipped` (RisingWave's KILL_IGNORE_FILES); then the totals, per
/// top-level folder, and the constructs that block the most files (each file counted once, by
/// its first failure). Writes the same as JSON.
///
/// The ratchet ROOT/expected.txt lists the files that pass (a path a line, `only-with-kills` or
/// `only-without-kills` after it when it passes in one kind of run only; `#` comments). A listed
/// file that does not pass is `regressed` (exit 1); a passing file that is not listed is `newly
/// passing` (exit 0).
///
/// Each flag may be given at most once (`--flag VALUE` or `--flag=VALUE`).
#[derive(Args, Clone, Debug)]
#[command(verbatim_doc_comment, allow_negative_numbers = true, after_long_help = CORPUS_AFTER_HELP)]
#[command(group(ArgGroup::new("killed").multiple(true).args(["kill", "kill_meta"])))]
pub struct CorpusCmd {
    /// Run each file under kills as RisingWave's recovery CI does
    ///
    /// As ci/scripts/deterministic-recovery-test.sh and main-cron's jobs: kill rate 1.0, every
    /// role (the metas drawn first, never all), background-DDL rate 0.0 on even seeds and 0.8 on
    /// odd ones (0.0 for background_ddl/, which sets it itself), once per seed of --seeds; a file
    /// passes when it passes under every seed, and its line names the first seed that failed.
    #[arg(long, verbatim_doc_comment)]
    pub kill: bool,
    /// Kill metas only, down U(0, 1 s), +20 s one time in ten (--kill kills them already)
    ///
    /// A killed leader restarts from the store, or a follower takes its lease. The kill runner
    /// runs as under --kill (its SETs, retries and skipped files), so the ratchet's check is that
    /// every file listed as passing under kills passes (--update-expected is refused: the ratchet
    /// has no line for meta kills alone).
    #[arg(long, verbatim_doc_comment, conflicts_with_all = ["update_expected", "spare_meta"])]
    pub kill_meta: bool,
    /// With --kill: never kill a meta (RisingWave's runner at HEAD); --update-expected is refused
    #[arg(long, requires = "kill", conflicts_with = "update_expected")]
    pub spare_meta: bool,
    /// 1..=16, default 3: meta nodes; several run on a lease, one leading (RisingWave's CI: 3)
    ///
    /// The ratchet is measured on 3: given at all, its check is that every file listed as passing
    /// passes (--update-expected is refused).
    #[arg(long, value_name = "N", verbatim_doc_comment, conflicts_with = "update_expected",
          value_parser = values::number::<u32>(values::META_NODES))]
    pub meta_nodes: Option<u32>,
    /// With --kill or --kill-meta: the seeds A, A+1, ..., B-1 (without kills each file runs once, with seed 0)
    #[arg(long, value_name = "A..B", default_value = "0..1", requires = "killed",
          allow_hyphen_values = true, value_parser = values::seed_range)]
    pub seeds: std::ops::Range<u64>,
    /// 1..=256 worker threads (default: the machine's cores)
    #[arg(long, value_name = "N", value_parser = values::number::<usize>(values::JOBS))]
    pub jobs: Option<usize>,
    /// The corpus
    #[arg(long, value_name = "DIR", default_value = epochlab_simulation::corpus::ROOT,
          value_parser = values::path)]
    pub root: PathBuf,
    /// Where to write the JSON report
    #[arg(long, value_name = "FILE", default_value = "target/corpus.json", value_parser = values::path)]
    pub json: PathBuf,
    /// Rewrite ROOT/expected.txt with the files that pass (what the other kind of run showed is kept)
    #[arg(long)]
    pub update_expected: bool,
}

const CORPUS_AFTER_HELP: &str = "EXIT STATUS: 0 no listed file regressed, 1 a listed file did not pass, 2 bad input (one line on stderr).";

impl CorpusCmd {
    pub fn into_args(self) -> CorpusArgs {
        CorpusArgs {
            root: self.root,
            kill: self.kill,
            kill_meta: self.kill_meta,
            spare_meta: self.spare_meta,
            meta_nodes: self
                .meta_nodes
                .unwrap_or(epochlab_sim::config::DEFAULT_META_NODES),
            seeds: self.seeds,
            jobs: self
                .jobs
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
            json: self.json,
            update_expected: self.update_expected,
        }
    }
}
