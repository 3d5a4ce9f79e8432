//! `epochlab`: reproduce RisingWave recovery bugs (#14910, #22384) on demand, from a seed, and show each fix
//! hold.
//!
//! Bad input gets one line on stderr and exit status 2; see `epochlab repro --help` for the others. The
//! command line is [`command`]'s.

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

mod ci;
mod command;
mod corpus;
mod determinism;
mod expect;
mod human;
mod repro;
mod row;
mod slt;
mod soak;
mod soak_metrics;
mod store_out;
mod triage;

use std::process::ExitCode;

use command::Invocation;

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
    let invocation = match command::parse(std::env::args_os().skip(1)) {
        Ok(invocation) => invocation,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match invocation {
        Invocation::Print(text) => {
            out!("{text}");
            ExitCode::SUCCESS
        }
        Invocation::Bugs => {
            out!("{}", human::catalogue());
            ExitCode::SUCCESS
        }
        Invocation::Completions(shell) => {
            out!("{}", command::completions(shell));
            ExitCode::SUCCESS
        }
        Invocation::Slt(a) => finish("slt", slt::run(&a)),
        Invocation::Corpus(a) => finish("corpus", corpus::run(&a)),
        Invocation::Ci(a) => finish("ci", ci::run(&a)),
        Invocation::Triage(files) => finish("triage", triage::run(&files)),
        Invocation::SoakReport(files) => finish("soak-report", soak::report(&files)),
        Invocation::Soak(a) => finish("soak", soak::run(&a)),
        Invocation::Repro(a) => match repro::run(&a) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("epochlab repro: {e}");
                ExitCode::from(e.exit_code())
            }
        },
    }
}

/// A command's exit status, or its error as one line on stderr and exit status 2.
fn finish<E: std::fmt::Display>(command: &str, result: Result<u8, E>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("epochlab {command}: {e}");
            ExitCode::from(2)
        }
    }
}
