//! Bad input as one line: clap's errors (several lines, with the usage) and the checks of [`super`] after
//! parsing, each rendered as `epochlab COMMAND: what is wrong`.

use std::ffi::OsString;

use clap::error::{ContextKind, ContextValue, ErrorKind};

use super::values::ValueError;

/// Bad input: displayed as the one line to print (exit status 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("epochlab{}: {what}", command.as_deref().map(|c| format!(" {c}")).unwrap_or_default())]
pub struct CliError {
    /// The command it is about (`repro`), or none for the top level.
    pub command: Option<String>,
    pub what: String,
}

impl CliError {
    pub fn new(command: &str, what: impl ToString) -> Self {
        Self {
            command: Some(command.to_string()),
            what: what.to_string(),
        }
    }
}

/// The flag of a clap context such as `--vnodes <N>`: `--vnodes`; a positional argument's name (`<SHELL>`:
/// `SHELL`).
fn flag_of(arg: &str) -> String {
    let first = arg.split_whitespace().next().unwrap_or(arg);
    first
        .trim_end_matches("...")
        .trim_matches(['<', '>'])
        .to_string()
}

/// The flags a context names (`<--metrics-addr <HOST:PORT>|--jaeger>`), as `--metrics-addr or --jaeger`; a
/// positional argument (`<FILES>...`) as its name.
fn names(value: &ContextValue) -> String {
    let text = match value {
        ContextValue::String(s) => s.clone(),
        ContextValue::Strings(v) => v.join(" "),
        other => other.to_string(),
    };
    let flags: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--"))
        .collect();
    match flags.as_slice() {
        [] => text.replace(['<', '>'], ""),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

fn context(e: &clap::Error, kind: ContextKind) -> String {
    match e.get(kind) {
        Some(ContextValue::String(s)) => s.clone(),
        Some(ContextValue::Strings(v)) => v.join(", "),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// The top-level usage, with the commands from clap's own list.
pub fn usage(cmd: &clap::Command) -> String {
    let names: Vec<&str> = cmd
        .get_subcommands()
        .map(|s| s.get_name())
        .filter(|n| *n != "help")
        .collect();
    format!("usage: epochlab {} [FLAGS]", names.join("|"))
}

/// One line for a clap error of `command` (`None`: the top level). `argv` (the program's name first) is the
/// command line that failed: a missing flag is reported as needed by the flag that requires it.
pub fn one_line(
    e: &clap::Error,
    top: &clap::Command,
    command: Option<&str>,
    argv: &[OsString],
) -> CliError {
    let arg = context(e, ContextKind::InvalidArg);
    let flag = flag_of(&arg);
    let value = context(e, ContextKind::InvalidValue);
    let what = match e.kind() {
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            format!("no command given; {} (epochlab --help)", usage(top))
        }
        ErrorKind::InvalidSubcommand => format!(
            "unknown command `{}`; {}",
            context(e, ContextKind::InvalidSubcommand),
            usage(top)
        ),
        ErrorKind::UnknownArgument => unknown(e, top, command, &arg),
        ErrorKind::ValueValidation => format!("{flag} {}", rejected_value(e, &value)),
        ErrorKind::InvalidValue if value.is_empty() => format!("{flag} needs a value"),
        ErrorKind::InvalidValue => format!("{flag} takes {}, not `{value}`", valid_values(e)),
        ErrorKind::TooManyValues | ErrorKind::WrongNumberOfValues => {
            format!("{flag} takes no value")
        }
        ErrorKind::ArgumentConflict => conflict(e, &flag),
        ErrorKind::MissingRequiredArgument => missing_required(e, top, command, argv),
        _ => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or_default();
            first.trim_start_matches("error: ").to_string()
        }
    };
    CliError {
        command: command.map(str::to_string),
        what,
    }
}

/// Why a value parser refused `value`: its [`ValueError`], else that the flag does not take it.
fn rejected_value(e: &clap::Error, value: &str) -> String {
    std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<ValueError>())
        .map(ToString::to_string)
        .unwrap_or_else(|| format!("does not take `{value}`"))
}

/// The values a flag takes (`a, b or c`), from clap's context.
fn valid_values(e: &clap::Error) -> String {
    match e.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(v)) => match v.as_slice() {
            [init @ .., last] => format!("{} or {last}", init.join(", ")),
            [] => String::new(),
        },
        _ => String::new(),
    }
}

/// `flag` given twice, or with a flag it excludes.
fn conflict(e: &clap::Error, flag: &str) -> String {
    let prior = context(e, ContextKind::PriorArg);
    match flag_of(&prior) == flag {
        true => format!("{flag} is given twice: give each flag at most once"),
        false => format!(
            "{flag} and {} exclude each other (see --help)",
            names(e.get(ContextKind::PriorArg).unwrap_or(&ContextValue::None))
        ),
    }
}

/// A required argument missing: named with the flag that requires it, if one does.
fn missing_required(
    e: &clap::Error,
    top: &clap::Command,
    command: Option<&str>,
    argv: &[OsString],
) -> String {
    let missing = names(
        e.get(ContextKind::InvalidArg)
            .unwrap_or(&ContextValue::None),
    );
    match command.and_then(|c| requirer(top, c, argv)) {
        Some(by) => format!("{by} needs {missing} (see --help)"),
        None => format!("name the {missing} (see --help)"),
    }
}

fn unknown(e: &clap::Error, top: &clap::Command, command: Option<&str>, arg: &str) -> String {
    let suggestion = match e.get(ContextKind::SuggestedArg) {
        Some(ContextValue::String(s)) => format!("; did you mean `{}`?", flag_of(s)),
        _ => String::new(),
    };
    if arg.starts_with('-') {
        return format!("unknown flag `{arg}`{suggestion} (see --help)");
    }
    let sub = command.and_then(|c| top.find_subcommand(c));
    let takes_flags = sub.is_some_and(|s| s.get_arguments().any(|a| a.get_long().is_some()));
    let name = command.unwrap_or("epochlab");
    match takes_flags {
        true => format!("unexpected argument `{arg}`: {name} takes only flags (see --help)"),
        false => format!("unexpected argument `{arg}`: {name} takes no argument"),
    }
}

/// The flag of `command` whose declared requirement is missing from `argv`: the one that alone (every other
/// flag's requirements dropped) still fails the parse for a missing argument. `None` when the missing
/// argument is required by itself (a command's files).
fn requirer(top: &clap::Command, command: &str, argv: &[OsString]) -> Option<String> {
    let fails = |keep: Option<&clap::Id>| {
        let trial = top.clone().mut_subcommand(command, |s| {
            s.mut_args(|a| match Some(a.get_id()) == keep {
                true => a,
                false => a.requires(clap::builder::Resettable::<clap::Id>::Reset),
            })
        });
        matches!(trial.try_get_matches_from(argv),
            Err(e) if e.kind() == ErrorKind::MissingRequiredArgument)
    };
    if fails(None) {
        return None;
    }
    let sub = top.find_subcommand(command)?;
    sub.get_arguments()
        .find(|a| fails(Some(a.get_id())))
        .and_then(|a| a.get_long().map(|l| format!("--{l}")))
}
