//! The table and the details that `epochlab repro` prints without `--json`.

use std::io::Write;

use epochlab_sim::{BugId, Outcome, ReproParams, ReproReport, Setting};

use crate::expect::Verdict;
use crate::repro::{Run, replay};

const ERROR_WIDTH: usize = 44;

/// `epochlab repro: RisingWave #14910, seed 1: 10000 rows, ...`: each bug run, with the settings its
/// scenario reads.
fn header(p: &ReproParams, runs: &[Run]) -> String {
    let mut bugs: Vec<BugId> = runs.iter().map(|r| r.report.params.bug).collect();
    bugs.dedup();
    let settings = |bug: BugId| {
        let read: Vec<String> = Setting::ALL
            .into_iter()
            .filter(|s| bug.reads(*s))
            .filter_map(|s| setting_text(p, s))
            .collect();
        match read.is_empty() {
            true => "its scenario's own settings".to_string(),
            false => read.join(", "),
        }
    };
    let metas = match p.meta_nodes {
        1 => String::new(),
        n => format!("; {n} metas on a lease"),
    };
    match bugs[..] {
        [bug] => format!(
            "epochlab repro: {}, seed {}: {}{metas}",
            bug.title(),
            p.seed,
            settings(bug)
        ),
        _ => {
            let each: Vec<String> = bugs
                .into_iter()
                .map(|b| format!("{}: {}", b.title(), settings(b)))
                .collect();
            format!(
                "epochlab repro: seed {}; {}{metas}",
                p.seed,
                each.join("; ")
            )
        }
    }
}

/// A setting as the header says it (`10000 rows`, `persist check on`); `None` for one left out.
fn setting_text(p: &ReproParams, s: Setting) -> Option<String> {
    let text = match s {
        Setting::Rows => format!("{} rows", p.rows),
        Setting::Vnodes => format!("{} vnodes", p.vnodes),
        Setting::Parallelism => format!("parallelism {}", p.parallelism),
        Setting::ComputeNodes => format!("{} compute nodes", p.compute_nodes),
        Setting::RateLimit => format!("rate limit {} row/s", p.rate_limit),
        Setting::BarrierLatency => format!("sink {} ms/chunk", p.barrier_latency_ms),
        Setting::CheckpointFrequency => {
            format!("checkpoint every {} barrier(s)", p.checkpoint_frequency)
        }
        Setting::PersistCheck => {
            format!(
                "persist check {}",
                if p.persist_check { "on" } else { "off" }
            )
        }
        Setting::CrashMetaAt => format!("meta crashes at {}", p.crash_meta_at?),
    };
    Some(text)
}

pub fn print(out: &mut impl Write, p: &ReproParams, pace: Option<f64>, runs: &[Run]) {
    let _ = writeln!(out, "{}\n", header(p, runs));
    if let Some(x) = pace {
        let _ = writeln!(
            out,
            "paced at {x}x wall clock (--pace): {x} s of simulated time per second of wall time\n"
        );
    }
    table(out, runs);
    for r in runs {
        details(out, &r.report);
    }
    let _ = writeln!(out, "\nreplay:");
    for r in runs {
        let _ = writeln!(
            out,
            "  {}    # digest {}",
            replay(&r.report.params),
            r.digest
        );
    }
}

/// Cut `s` to the error column's width.
fn clip(s: &str) -> String {
    let first = s.lines().next().unwrap_or("");
    if first.chars().count() > ERROR_WIDTH || first.len() < s.trim_end().len() {
        first.chars().take(ERROR_WIDTH - 3).collect::<String>() + "..."
    } else {
        first.to_string()
    }
}

fn table(out: &mut impl Write, runs: &[Run]) {
    let _ = writeln!(
        out,
        "{:<25} {:<29} {:<44} {:>6} {:>20} {:>10} {:>10} {:>8}",
        "mode",
        "outcome",
        "error",
        "epochs",
        "max committed epoch",
        "recoveries",
        "virtual",
        "wall"
    );
    for r in runs {
        let rep = &r.report;
        let error = rep.error.as_deref().map_or_else(|| "-".to_string(), clip);
        let outcome = format!("{}{}", rep.outcome.as_str(), Verdict::of(rep).mark());
        let _ = writeln!(
            out,
            "{:<25} {:<29} {:<44} {:>6} {:>20} {:>10} {:>8.1} s {:>5} ms",
            crate::repro::label(&rep.params),
            outcome,
            error,
            rep.epochs,
            rep.max_committed_epoch,
            rep.recoveries,
            r.virtual_ms as f64 / 1000.0,
            r.wall_ms
        );
    }
}

/// `text` after `prefix`, its further lines indented.
fn block(out: &mut impl Write, prefix: &str, text: &str) {
    let mut lines = text.lines();
    let _ = writeln!(out, "{prefix}{}", lines.next().unwrap_or(""));
    for l in lines {
        let _ = writeln!(out, "  {l}");
    }
}

/// Below the table: a failure's error, check, timeline and original log lines; a not_reproducible or stuck
/// run's reason in full; every note and violation.
fn details(out: &mut impl Write, rep: &ReproReport) {
    let mode = &crate::repro::label(&rep.params);
    let error = rep.error.as_deref().unwrap_or("");
    match rep.outcome {
        Outcome::Passed => {}
        Outcome::Failed => failure(out, rep),
        Outcome::NotReproducible | Outcome::Stuck => {
            let _ = writeln!(out);
            block(out, &format!("{mode}: {}: ", rep.outcome.as_str()), error);
        }
    }
    for c in &rep.meta_crashes {
        let _ = writeln!(out, "{mode}: meta crashed at {}: {}", c.point, c.ddl);
    }
    if let (Some(point), []) = (rep.params.crash_meta_at, &rep.meta_crashes[..]) {
        let _ = writeln!(out, "{mode}: meta never crashed: no DDL reached {point}");
    }
    if rep.meta_leader_changes > 0 {
        let n = rep.meta_leader_changes;
        let _ = writeln!(out, "{mode}: meta's leader changed {n} time(s)");
    }
    for note in &rep.notes {
        block(out, &format!("{mode}: note: "), note);
    }
    for v in &rep.violations {
        let _ = writeln!(out, "{mode}: invariant violation: {v}");
    }
}

fn failure(out: &mut impl Write, rep: &ReproReport) {
    let mode = &crate::repro::label(&rep.params);
    let error = rep.error.as_deref().unwrap_or("failed");
    let _ = writeln!(out);
    block(out, &format!("{mode}: "), error);
    if let Some(check) = &rep.caught_by {
        let _ = writeln!(out, "{mode}: caught by {check}");
    }
    if !rep.timeline.is_empty() {
        let _ = writeln!(
            out,
            "{mode}: timeline (virtual seconds): {}",
            rep.params.bug.info().timeline
        );
        for l in &rep.timeline {
            let _ = writeln!(out, "  {l}");
        }
    }
    if !rep.original_lines.is_empty() {
        let _ = writeln!(
            out,
            "{mode}: the failing actor's log, the lines of the original failure log"
        );
        for l in &rep.original_lines {
            let _ = writeln!(out, "  {l}");
        }
        let _ = writeln!(out, "  {error}");
    }
}

/// `epochlab bugs`: each bug of the catalogue, with its mechanism, fix, links, modes and command.
pub fn catalogue() -> String {
    let mut out = String::new();
    for bug in epochlab_sim::BugId::ALL {
        let info = bug.info();
        out.push_str(&format!(
            "{bug}\n  mechanism: {}\n  fix:       {}\n  links:     {}\n  modes:     {}\n  settings:  {}\n  command:   {}\n",
            info.mechanism,
            info.fix,
            info.links.join(" "),
            epochlab_sim::bugs::mode_list(bug),
            crate::command::repro::settings_of(bug),
            info.command
        ));
        out.push_str(&record(bug));
    }
    out
}

/// The "record" part of a catalogue entry: what RisingWave's own history says, and how epochlab differs.
fn record(bug: epochlab_sim::BugId) -> String {
    let r = bug.record();
    format!(
        "  record:\n    refs:      {}\n    symptom:   {} ({})\n    where:     {}\n    differs:   {}\n",
        r.refs,
        r.symptom.text,
        r.symptom.kind.as_str(),
        r.site,
        r.differs
    )
}
