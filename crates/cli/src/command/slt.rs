//! `epochlab slt`: its flags (the one definition, with their help) and the run configuration
//! ([`crate::slt::SltArgs`]) they become.

use std::path::PathBuf;

use clap::{ArgGroup, Args};
use epochlab_sim::{BugId, BugMode, Mode};
use epochlab_simulation::{RunnerEra, SltParams};

use super::values;
use super::{CheckError, kill_choice};
use crate::slt::SltArgs;

/// Run sqllogictest files against the simulated cluster, each file in a fresh cluster
///
/// Each file runs in a fresh cluster (RisingWave's CI's: 3 metas on a lease, 2 frontends, 3
/// compute nodes of 2 cores, 2 compactors; 256 vnodes, a barrier a second; parallelism 6 unless the file sets
/// STREAMING_PARALLELISM), through the `sqllogictest` runner,
/// as RisingWave's simulation runs its e2e tests. A FILE may be a glob, such as
/// 'tests/slt/recovery/*.slt'.
///
/// The SQL is what RisingWave's e2e corpus needs so far (README: `epochlab slt`): RisingWave's
/// types, casts and expressions; queries with joins, aggregates, subqueries, CTEs and set
/// operations at the max committed epoch; materialized views and sinks planned into fragments
/// (project, filter, union, values, hop window, project set, hash and simple aggregation, hash
/// joins, top-N, over windows, dynamic filters); tables, views, indexes, sources, schemas,
/// databases, users and grants,
/// DROP ... CASCADE, ALTER ... RENAME / OWNER TO / SET SCHEMA, SHOW, DESCRIBE, every session
/// variable; FLUSH, RECOVER, WAIT, SHOW JOBS. Anything else is `unsupported: <construct>`.
///
/// Each flag may be given at most once (`--flag VALUE` or `--flag=VALUE`).
#[derive(Args, Clone, Debug)]
#[command(verbatim_doc_comment, allow_negative_numbers = true, after_long_help = SLT_AFTER_HELP)]
#[command(group(ArgGroup::new("killed").multiple(true)
    .args(["kill", "kill_meta", "kill_frontend", "kill_compute", "kill_compactor"])))]
pub struct SltCmd {
    /// The files to run (a FILE may be a glob: quote it)
    #[arg(value_name = "FILES", required = true, value_parser = values::text)]
    pub files: Vec<String>,
    /// 0..=2^64-1: the seed of every file's run
    #[arg(long, value_name = "N", default_value_t = SltParams::default().seed,
          value_parser = values::number::<u64>(values::SEED))]
    pub seed: u64,
    /// The bug of the catalogue whose toggle --mode sets
    #[arg(long, value_name = "ID", default_value = "14910", value_parser = values::bug())]
    pub bug: BugId,
    /// The mode of every file's run
    #[arg(long, value_name = "M", default_value = "fixed", value_parser = values::mode())]
    pub mode: Mode,
    /// Kill nodes of every role the engine has, as RisingWave's simulation runner's --kill does
    ///
    /// The roles: the metas (drawn first), the frontends, the compute nodes, the compactors.
    /// Before every record the parser returns (comments and blank lines too; not DML, FLUSH,
    /// ALTER or CREATE TABLE AS), with probability --kill-rate, after U(0, 1 s), per role none,
    /// all or each with p = 0.5 (all the metas drawn: only meta-1 dies, as RisingWave's runner
    /// never kills them all), each down U(0, 1 s) (+20 s one time in ten), then 15 s; failed
    /// records retried up to 5 times with backoff; files of RisingWave's KILL_IGNORE_FILES are
    /// skipped. To spare meta, name the other roles (--kill-frontend --kill-compute
    /// --kill-compactor).
    #[arg(long, verbatim_doc_comment)]
    pub kill: bool,
    /// Kill metas only (or with the other --kill-ROLE flags; --kill kills them already)
    ///
    /// A killed meta is fenced and its tasks end; compute nodes keep running their actors. It restarts
    /// from its store (ids, workers, catalog, fragments) and its bootstrap recovery rebuilds every
    /// actor; DDL while it is down fails as RisingWave's client saw. Down U(0, 1 s), +20 s one
    /// time in ten, as every role.
    #[arg(long, verbatim_doc_comment)]
    pub kill_meta: bool,
    /// Kill frontends only (with the other --kill-ROLE flags: those roles)
    ///
    /// Its connections close, a statement in flight fails with `connection closed`, the client
    /// reconnects and replays its SETs, the runner retries the record.
    #[arg(long, verbatim_doc_comment)]
    pub kill_frontend: bool,
    /// Kill compute nodes only (or with the other --kill-ROLE flags)
    #[arg(long)]
    pub kill_compute: bool,
    /// Kill compactors only (or with the other --kill-ROLE flags)
    ///
    /// Compaction stops while it is down; tasks that fell due run when it is back.
    #[arg(long, verbatim_doc_comment)]
    pub kill_compactor: bool,
    /// 0..=1, default 1.0; needs a kill flag
    #[arg(long, value_name = "F", requires = "killed", value_parser = values::probability)]
    pub kill_rate: Option<f64>,
    /// 0..=1, default 0.0; needs a kill flag: the chance of BACKGROUND_DDL per CREATE MATERIALIZED VIEW
    ///
    /// Before each CREATE MATERIALIZED VIEW the runner sets BACKGROUND_DDL to true with this
    /// probability, else false (2024: also at 0, overriding the file's own SET); one created in
    /// the background is followed by WAIT.
    #[arg(long, value_name = "F", verbatim_doc_comment, requires = "killed",
          value_parser = values::probability)]
    pub background_ddl_rate: Option<f64>,
    /// 2024 (default) or latest: RisingWave's runner; needs a kill flag
    ///
    /// 2024: as at f21fb9b7915 (what the seed's CI ran); latest: today's: no SET BACKGROUND_DDL
    /// at rate 0 (#20681) nor after the file set it, backoff capped at 10 s, two more
    /// KILL_IGNORE_FILES.
    #[arg(long, value_name = "R", verbatim_doc_comment, requires = "killed",
          value_parser = values::runner())]
    pub runner: Option<RunnerEra>,
    /// One JSON object per file on stdout
    #[arg(long)]
    pub json: bool,
    /// Write each file's event log (with several files: FILE.N, N from 1)
    #[arg(long, value_name = "FILE", value_parser = values::path)]
    pub event_log: Option<PathBuf>,
    /// Write each file's meta store, as it was when the file's run ended, as an SQLite file
    /// (with several files: FILE.N, N from 1)
    #[arg(long, value_name = "FILE", verbatim_doc_comment, value_parser = values::path)]
    pub meta_store_out: Option<PathBuf>,
    /// The runs' log lines (at RUST_LOG's levels, else INFO), with virtual time
    #[arg(long, value_name = "FILE", value_parser = values::path)]
    pub log_file: Option<PathBuf>,
    /// Send each run's trace to this OTLP/gRPC collector (Jaeger's, say)
    #[arg(long, value_name = "URL", value_parser = values::text)]
    pub otlp_endpoint: Option<String>,
    /// The simulator's flag: at f21fb9b7915 its `SET enable_arrangement_backfill = true` went only
    /// to sessions the slt runner does not open, so no file sees it; each backfills as
    /// streaming_enable_arrangement_backfill says (default false: no-shuffle backfill). Printed.
    #[arg(long, verbatim_doc_comment)]
    pub use_arrangement_backfill: bool,
    /// Meta dies right after this commit of the first DDL to reach it, and restarts from its
    /// store after U(0, 1 s); records are retried as under --kill (nodes die only with a kill
    /// flag). A file no DDL of which reaches POINT says `meta never crashed`. POINT, in the
    /// order a CREATE then a DROP reaches them (RisingWave's commits at f21fb9b7915):
    ///   create-after-catalog            the catalog row is committed; no job yet
    ///   create-after-fragments          the job and its fragments (Initial) are committed
    ///   create-after-register           its state tables are registered in Hummock
    ///   create-after-first-commit       its first barrier's epoch is committed
    ///   create-after-fragments-created  its fragments are Created; the row is not linked yet
    ///   drop-after-catalog              the catalog rows are deleted; the job is still there
    ///   drop-after-fragments            the job and its fragments are deleted
    ///   drop-after-stop                 the Stop barrier is collected; tables still registered
    #[arg(long, value_name = "POINT", verbatim_doc_comment, value_parser = values::crash_point)]
    pub crash_meta_at: Option<epochlab_meta::CrashPoint>,
    #[command(flatten)]
    pub topology: super::topology::TopologyArgs,
}

const SLT_AFTER_HELP: &str = "\
EXIT STATUS: 0 every record of every file passed and the checkers found nothing, 1 a record failed (the file,
line, SQL, expected and actual, and the replay command are printed), an actor failed or a checker fired, or a
run got stuck; 2 bad input (a flag, a missing file, a malformed record), one line on stderr.";

impl SltCmd {
    /// The run configuration: the files (globs expanded) and the settings.
    pub fn into_args(self) -> Result<SltArgs, CheckError> {
        let params = kill_choice!(self).apply(SltParams {
            seed: self.seed,
            run: BugMode::new(self.bug, self.mode).map_err(CheckError::NotAModeOfTheBug)?,
            topology: self.topology.topology()?,
            crash_meta_at: self.crash_meta_at,
            ..SltParams::default()
        })?;
        let mut files = Vec::new();
        for pattern in &self.files {
            files.extend(crate::slt::expand(pattern)?);
        }
        Ok(SltArgs {
            files,
            params,
            json: self.json,
            event_log: self.event_log,
            meta_store_out: self.meta_store_out,
            log_file: self.log_file,
            otlp_endpoint: self.otlp_endpoint,
            use_arrangement_backfill: self.use_arrangement_backfill,
        })
    }
}
