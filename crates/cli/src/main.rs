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
mod determinism;
mod expect;
mod human;
mod repro;
mod row;
mod slt;
mod soak;
mod soak_metrics;

use std::process::ExitCode;

use args::Invocation;

/// Writes to standard output; a closed pipe exits with status 0 (everything a results file keeps is
/// already written by then), any other error with one line on stderr and status 1.
fn write_stdout(text: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_fmt(text).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
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
                "usage: epochlab repro|soak|slt|bugs [FLAGS]\n\n{}\n\n{}\n\n{}",
                args::REPRO_HELP,
                args::SOAK_HELP,
                slt::SLT_HELP
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
