//! `epochlab`: reproduce RisingWave #14910 on demand, from a seed, and show the fix hold.
//!
//! Bad input gets one line on stderr and exit status 2.

mod args;
mod repro;

use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some((cmd, rest)) = argv.split_first() else {
        eprintln!(
            "epochlab: no command given; usage: epochlab repro [FLAGS] (epochlab repro --help)"
        );
        return ExitCode::from(2);
    };
    match cmd.as_str() {
        "repro" => match args::ReproArgs::parse(rest) {
            Ok(args::Parsed::Run(a)) => match repro::run(&a) {
                Ok(code) => ExitCode::from(code),
                Err(e) => {
                    eprintln!("epochlab repro: {e}");
                    ExitCode::from(2)
                }
            },
            Ok(args::Parsed::Help) => {
                println!("{}", args::REPRO_HELP);
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("epochlab repro: {e}");
                ExitCode::from(2)
            }
        },
        "-h" | "--help" | "help" => {
            println!("usage: epochlab repro [FLAGS]\n\n{}", args::REPRO_HELP);
            ExitCode::SUCCESS
        }
        other => {
            eprintln!("epochlab: unknown command `{other}`; usage: epochlab repro [FLAGS]");
            ExitCode::from(2)
        }
    }
}
