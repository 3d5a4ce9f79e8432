//! `epochlab`: reproduce RisingWave recovery bugs (#14910, #22384) on demand, from a seed, and show each fix
//! hold.
//!
//! Bad input gets one line on stderr and exit status 2; see `epochlab repro --help` for the others.

mod args;
mod determinism;
mod expect;
mod human;
mod repro;
mod row;
mod soak;
mod soak_metrics;

use std::process::ExitCode;

use args::Invocation;

fn main() -> ExitCode {
    match args::parse_command(std::env::args_os().skip(1)) {
        Ok(Invocation::Help) => {
            println!(
                "usage: epochlab repro|soak|bugs [FLAGS]\n\n{}\n\n{}",
                args::REPRO_HELP,
                args::SOAK_HELP
            );
            ExitCode::SUCCESS
        }
        Ok(Invocation::Bugs) => {
            print!("{}", human::catalogue());
            ExitCode::SUCCESS
        }
        Ok(Invocation::SoakHelp) => {
            println!("{}", args::SOAK_HELP);
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
