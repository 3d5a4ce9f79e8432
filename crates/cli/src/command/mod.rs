//! The command line of `epochlab`: one clap definition per command ([`Cli`]), with the conflicts and
//! requirements declared on the flags; the few checks that depend on values (the catalogue's modes and
//! settings, a scenario's flags) in each command's `into_args`; and bad input as one line (exit status 2).

pub mod ci;
pub mod corpus;
pub mod error;
mod kill;
pub mod repro;
pub mod slt;
pub mod soak;
pub mod topology;
pub mod values;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use epochlab_sim::{BugError, BugId};

pub use error::CliError;
pub use kill::KillChoice;
pub(crate) use kill::kill_choice;
pub use repro::ReproArgs;

/// Reproduce RisingWave recovery bugs on demand, from a seed, and show each fix hold.
///
/// Each command's --help tells its flags; bad input gets one line on stderr and exit status 2.
#[derive(Parser, Debug)]
#[command(
    name = "epochlab",
    version,
    propagate_version = true,
    subcommand_required = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    Repro(repro::ReproCmd),
    Soak(soak::SoakCmd),
    /// Merge results files (e.g. the shards of a campaign)
    ///
    /// One row per campaign and seed, and each campaign's counts and failure signatures; exit 0
    /// when every seed passed, 1 otherwise, 2 when a file cannot be read or holds a line that is
    /// not a results row.
    #[command(verbatim_doc_comment)]
    SoakReport {
        /// The results files to merge
        #[arg(value_name = "FILES", required = true, value_parser = values::path)]
        files: Vec<PathBuf>,
    },
    Slt(slt::SltCmd),
    Corpus(corpus::CorpusCmd),
    Ci(ci::CiCmd),
    /// The catalogue: each bug with its mechanism, fix, links, modes, settings and command
    Bugs,
    /// Which known bug is this log?
    ///
    /// Reads each FILE (plain text or gzip, any size, as a stream; `-` is standard input) and
    /// looks for the recorded symptom of every entry of `epochlab bugs` (the panic message, the
    /// actor's error, the logged line), with ids, epochs and numbers masked and Debug's
    /// pretty-printing folded, so a panic printed over many lines matches. A text that is also
    /// logged harmlessly needs more from the log: #15144's compactor line counts only when a
    /// table it names left the catalog before a recovery that completed before the line (or,
    /// in a log that shows neither the table's registration nor its leaving, as RisingWave's,
    /// after a recovery); in a drop's window, before its Stop barrier commits, it prints `not
    /// RisingWave #15144: ..`, and where the log cannot tell, `unconfirmed: ..`. Each file is
    /// read on its own.
    ///
    /// Per match it prints the bug, the file and line, the matching text, the context the log
    /// gives before it (the actor, the executor, the epoch, the table) and the command that
    /// reproduces the bug. Without a match it says so and lists the panics and errors it found,
    /// grouped by their masked text.
    ///
    /// Exit status: 0 a known bug matched, 1 none did, 2 bad input (no file, a file that cannot
    /// be read).
    #[command(verbatim_doc_comment)]
    Triage {
        /// The logs (`-`: standard input)
        #[arg(value_name = "FILES", required = true, value_parser = values::path)]
        files: Vec<PathBuf>,
    },
    /// Print the shell completion script of epochlab
    ///
    /// bash: `source <(epochlab completions bash)`; zsh: write it as `_epochlab` into a directory
    /// of $fpath; fish: `epochlab completions fish > ~/.config/fish/completions/epochlab.fish`.
    #[command(verbatim_doc_comment)]
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
}

/// `--meta-store`: which store meta keeps its rows in.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaStoreArg {
    /// Rows as Rust values in memory.
    Memory,
    /// An SQLite database in memory (RisingWave's SQL backend).
    Sqlite,
}

impl MetaStoreArg {
    pub fn backend(self) -> epochlab_meta::store::MetaBackend {
        match self {
            MetaStoreArg::Memory => epochlab_meta::store::MetaBackend::Memory,
            MetaStoreArg::Sqlite => epochlab_meta::store::MetaBackend::Sqlite,
        }
    }
}

/// A shell `epochlab completions` writes a script for.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// A check after parsing that clap cannot declare: it depends on a value (`--bug all`, `--scenario 14910`),
/// the catalogue, or the files named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// A flag that would do nothing without another.
    #[error("{flag} {reason}")]
    Pointless {
        flag: &'static str,
        reason: &'static str,
    },
    #[error("{a} and {b} exclude each other: {reason}")]
    Exclusive {
        a: &'static str,
        b: &'static str,
        reason: &'static str,
    },
    /// A mode that a selected bug does not have.
    #[error("--mode: {0}")]
    NotAModeOfTheBug(BugError),
    /// A scenario setting that a selected bug's directed scenario does not read.
    #[error(
        "{flag} is not a setting of bug {bug}'s scenario (it reads {reads})",
        reads = repro::settings_of(*bug)
    )]
    NotASettingOf { flag: &'static str, bug: BugId },
    /// `slt FILES...` or `soak --slt GLOB` named no file (or a bad pattern, or a file that cannot be read).
    #[error("{}{why}", if pattern.is_empty() { String::new() } else { format!("`{pattern}`: ") })]
    SltFiles { pattern: String, why: String },
    /// A crash point no DDL of a directed scenario reaches.
    #[error(
        "--crash-meta-at {0}: the scenario makes its jobs through meta's job API, which writes no catalog \
         row: none of its DDLs reaches this point"
    )]
    CrashPointNotReached(epochlab_meta::CrashPoint),
    /// A value that is listed but does not run yet.
    #[error("{what} is listed but not run yet: {why}")]
    NotYet { what: String, why: &'static str },
    /// A cluster that cannot run.
    #[error(transparent)]
    Topology(#[from] epochlab_sim::config::TopologyError),
}

/// What the command line asks for, checked.
#[derive(Debug)]
pub enum Invocation {
    /// `--help`, `--version`: the text to print (exit status 0).
    Print(String),
    Repro(Box<ReproArgs>),
    Soak(Box<crate::soak::SoakArgs>),
    /// `epochlab soak-report FILES...`.
    SoakReport(Vec<PathBuf>),
    /// `epochlab bugs`: the catalogue.
    Bugs,
    /// `epochlab slt FILES...`: sqllogictest files against the simulated cluster.
    Slt(Box<crate::slt::SltArgs>),
    /// `epochlab corpus`: RisingWave's e2e corpus, with the ratchet.
    Corpus(Box<crate::corpus::CorpusArgs>),
    /// `epochlab ci`: RisingWave's recovery CI, step for step.
    Ci(Box<crate::ci::CiArgs>),
    /// `epochlab triage FILE...`: which known bug a log shows.
    Triage(Vec<PathBuf>),
    /// `epochlab completions SHELL`: the script.
    Completions(Shell),
}

/// The arguments after the program's name, checked as text first: `argument N` counts from 1 after the
/// program's name.
fn utf8(argv: impl IntoIterator<Item = OsString>) -> Result<Vec<String>, CliError> {
    argv.into_iter()
        .enumerate()
        .map(|(i, a)| {
            a.into_string().map_err(|_| CliError {
                command: None,
                what: format!("argument {} is not valid UTF-8", i + 1),
            })
        })
        .collect()
}

/// Parse the arguments after the program's name.
pub fn parse(argv: impl IntoIterator<Item = OsString>) -> Result<Invocation, CliError> {
    let args = utf8(argv)?;
    let argv: Vec<OsString> = std::iter::once("epochlab".to_string())
        .chain(args)
        .map(OsString::from)
        .collect();
    let top = Cli::command();
    let matches = match top.clone().try_get_matches_from(&argv) {
        Ok(m) => m,
        Err(e) => return clap_error(e, &top, &argv),
    };
    let name = matches.subcommand_name().unwrap_or_default().to_string();
    let cli = Cli::from_arg_matches(&matches).map_err(|e| error::one_line(&e, &top, None, &argv));
    let checked = |e: CheckError| CliError::new(&name, e);
    Ok(match cli?.command {
        Command::Repro(c) => Invocation::Repro(Box::new(c.into_args().map_err(checked)?)),
        Command::Soak(c) => Invocation::Soak(Box::new(c.into_args().map_err(checked)?)),
        Command::SoakReport { files } => Invocation::SoakReport(files),
        Command::Slt(c) => Invocation::Slt(Box::new(c.into_args().map_err(checked)?)),
        Command::Corpus(c) => Invocation::Corpus(Box::new(c.into_args())),
        Command::Ci(c) => Invocation::Ci(Box::new(c.into_args().map_err(checked)?)),
        Command::Bugs => Invocation::Bugs,
        Command::Triage { files } => Invocation::Triage(files),
        Command::Completions { shell } => Invocation::Completions(shell),
    })
}

/// `--help` and `--version` as the text to print; any other error as one line.
fn clap_error(
    e: clap::Error,
    top: &clap::Command,
    argv: &[OsString],
) -> Result<Invocation, CliError> {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        return Ok(Invocation::Print(e.render().to_string()));
    }
    let command = argv
        .get(1)
        .and_then(|a| a.to_str())
        .filter(|c| top.find_subcommand(c).is_some());
    Err(error::one_line(&e, top, command, argv))
}

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> String {
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "epochlab", &mut out);
    String::from_utf8(out).expect("a completion script is text")
}

#[cfg(test)]
mod tests;
