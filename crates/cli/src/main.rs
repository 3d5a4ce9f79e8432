//! `epochlab`: reproduce RisingWave recovery bugs (#14910, #22384) on demand, from a seed, and show each fix
//! hold.
//!
//! Bad input gets one line on stderr and exit status 2; see `epochlab repro --help` for the others.

/// `print!` to standard output; a reader that has gone away (`epochlab soak --help | head`) ends the process
/// quietly, as other Unix tools do, instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::write_stdout(format_args!($($arg)*))
    };
}

/// `println!` to standard output, as [`out!`].
macro_rules! outln {
    () => {
        out!("\n")
    };
    ($($arg:tt)*) => {
        $crate::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

mod args;
mod corpus;
mod determinism;
mod expect;
mod human;
mod repro;
mod row;
mod slt;
mod soak;
mod soak_metrics;
mod triage;

use std::process::ExitCode;

use args::Invocation;

/// Set once standard output's reader has gone away: later output is dropped.
static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Writes to standard output. Once the reader has gone away (`| head`) the rest of the output is dropped and
/// the command ends with its own exit status, so a pipe does not hide a failure; any other error is one line
/// on stderr and status 1.
fn write_stdout(text: std::fmt::Arguments<'_>) {
    use std::io::Write;
    use std::sync::atomic::Ordering;
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    match out.write_fmt(text).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed)
        }
        Err(e) => {
            eprintln!("epochlab: cannot write to standard output: {e}");
            std::process::exit(1)
        }
    }
}

fn main() -> ExitCode {
    match args::parse_command(std::env::args_os().skip(1)) {
        Ok(Invocation::Help) => {
            outln!(
                "usage: epochlab repro|soak|soak-report|slt|corpus|bugs|triage [FLAGS]\n\n{}\n\n{}\n\n{}\n\n{}\n\n{}",
                args::REPRO_HELP,
                args::SOAK_HELP,
                slt::SLT_HELP,
                corpus::CORPUS_HELP,
                triage::TRIAGE_HELP
            );
            ExitCode::SUCCESS
        }
        Ok(Invocation::Bugs) => {
            out!("{}", human::catalogue());
            ExitCode::SUCCESS
        }
        Ok(Invocation::SltHelp) => {
            outln!("{}", slt::SLT_HELP);
            ExitCode::SUCCESS
        }
        Ok(Invocation::Slt(a)) => match slt::run(&a) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("epochlab slt: {e}");
                ExitCode::from(2)
            }
        },
        Ok(Invocation::CorpusHelp) => {
            outln!("{}", corpus::CORPUS_HELP);
            ExitCode::SUCCESS
        }
        Ok(Invocation::Corpus(a)) => match corpus::run(&a) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("epochlab corpus: {e}");
                ExitCode::from(2)
            }
        },
        Ok(Invocation::TriageHelp) => {
            outln!("{}", triage::TRIAGE_HELP);
            ExitCode::SUCCESS
        }
        Ok(Invocation::Triage(files)) => match triage::run(&files) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("epochlab triage: {e}");
                ExitCode::from(2)
            }
        },
        Ok(Invocation::SoakHelp) => {
            outln!("{}", args::SOAK_HELP);
            ExitCode::SUCCESS
        }
        Ok(Invocation::SoakReport(files)) => match soak::report(&files) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("epochlab soak-report: {e}");
                ExitCode::from(2)
            }
        },
        Ok(Invocation::Soak(a)) => match soak::run(&a) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("epochlab soak: {e}");
                ExitCode::from(2)
            }
        },
        Ok(Invocation::Repro(a)) => match repro::run(&a) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("epochlab repro: {e}");
                ExitCode::from(e.exit_code())
            }
        },
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}
