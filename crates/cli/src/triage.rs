//! `epochlab triage FILE...`: which known bug is this log? Reads each file (plain text or gzip, any size, as a
//! stream), folds each log event's continuation lines into it (a panic's message under its `panicked at` line,
//! Debug's pretty-printed values), masks its numbers and looks for every catalogue entry's recorded symptom
//! ([`epochlab_sim::bugs::record`]). Exit 0 when a known bug matched, 1 when none did, 2 on bad input.

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use epochlab_sim::BugId;
use epochlab_sim::bugs::record::{Evidence, Symptom, fold_debug, mask};

mod lives;

use lives::{TableLives, Verdict};

/// Lines of one event at most (a panic's message and a pretty-printed value): the rest is not read into it.
const EVENT_LINES_MAX: usize = 64;
/// Bytes of a line read into its event.
const LINE_BYTES_MAX: usize = 16 << 10;
/// Events kept before the current one, for its context.
const CONTEXT_EVENTS: usize = 64;
/// Distinct panics and errors kept for the summary; more are counted only.
const GROUPS_MAX: usize = 1000;
/// Groups printed in the summary.
const GROUPS_SHOWN: usize = 20;
/// Characters of an event's text printed.
const TEXT_CHARS_MAX: usize = 400;

#[derive(Debug, thiserror::Error)]
pub enum TriageError {
    #[error("name the log files to triage: epochlab triage FILE... (epochlab triage --help)")]
    NoFiles,
    #[error("triage takes no flag but --help, not `{0}` (a file named so: ./{0})")]
    Flag(String),
    #[error("cannot open {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// One log event: its first line's number and its text (continuation lines joined with `\n`).
#[derive(Clone, Debug)]
struct Event {
    line: u64,
    text: String,
}

/// A catalogue entry's symptom found in a log.
#[derive(Debug)]
pub struct Match {
    pub bug: BugId,
    pub file: String,
    pub line: u64,
    /// What the matching event is in the log: `panic`, `error` or `line` (a line that quotes the symptom).
    pub kind: &'static str,
    pub text: String,
    pub context: Context,
    /// What the log shows beyond the text, for an entry that asks for it.
    pub evidence: Option<Verdict>,
    /// Later events with the same entry's symptom (a panic repeated, the same failure logged twice).
    pub more: u64,
}

/// What the log says around a match, from the events before it (the nearest first).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Context {
    pub actor: Option<String>,
    pub executor: Option<String>,
    pub epoch: Option<String>,
    pub table: Option<String>,
}

/// A catalogue entry's symptom text in a log without the evidence the entry asks for: not the bug.
#[derive(Debug)]
pub struct Miss {
    pub bug: BugId,
    pub file: String,
    pub line: u64,
    /// What the log shows instead.
    pub verdict: Verdict,
    /// Later events with the same entry's text and no evidence.
    pub more: u64,
}

/// Panics or errors of one masked text.
#[derive(Debug)]
struct Group {
    kind: &'static str,
    count: u64,
    file: String,
    line: u64,
    example: String,
}

/// What the scan of every file found.
#[derive(Debug, Default)]
pub struct Findings {
    pub matches: Vec<Match>,
    pub misses: Vec<Miss>,
    groups: BTreeMap<String, Group>,
    groups_dropped: u64,
    pub lines: u64,
}

pub fn run(files: &[PathBuf]) -> Result<u8, TriageError> {
    if files.is_empty() {
        return Err(TriageError::NoFiles);
    }
    if let Some(flag) = files
        .iter()
        .find(|p| p.to_string_lossy().starts_with('-') && *p != Path::new("-"))
    {
        return Err(TriageError::Flag(flag.display().to_string()));
    }
    // Every file is opened before any is read: a missing one is bad input, not half a report.
    let readers: Vec<(String, Box<dyn BufRead>)> = files
        .iter()
        .map(|p| open(p).map(|r| (p.display().to_string(), r)))
        .collect::<Result<_, _>>()?;
    let mut findings = Findings::default();
    for ((name, reader), path) in readers.into_iter().zip(files) {
        scan(&name, reader, &mut findings).map_err(|source| TriageError::Read {
            path: path.clone(),
            source,
        })?;
    }
    print(&findings, files.len());
    Ok(if findings.matches.is_empty() { 1 } else { 0 })
}

/// A file as a stream of bytes, gunzipped when it starts with gzip's magic number.
fn open(path: &Path) -> Result<Box<dyn BufRead>, TriageError> {
    let open_err = |source| TriageError::Open {
        path: path.to_path_buf(),
        source,
    };
    let mut reader: Box<dyn BufRead> = if path == Path::new("-") {
        Box::new(BufReader::new(std::io::stdin()))
    } else {
        let file = File::open(path).map_err(open_err)?;
        if file.metadata().map_err(open_err)?.is_dir() {
            return Err(open_err(std::io::Error::other("it is a directory")));
        }
        Box::new(BufReader::with_capacity(1 << 16, file))
    };
    let gzip = reader
        .fill_buf()
        .map_err(open_err)?
        .starts_with(&[0x1f, 0x8b]);
    if gzip {
        let decoder = flate2::bufread::MultiGzDecoder::new(reader);
        reader = Box::new(BufReader::with_capacity(1 << 16, decoder));
    }
    Ok(reader)
}

/// Reads `reader` event by event into `findings`.
pub fn scan(name: &str, mut reader: impl BufRead, findings: &mut Findings) -> std::io::Result<()> {
    let mut context: VecDeque<Event> = VecDeque::with_capacity(CONTEXT_EVENTS + 1);
    let mut lives = TableLives::default();
    let mut current: Option<(Event, usize)> = None;
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        line_no += 1;
        let line = String::from_utf8_lossy(&buf);
        let line = clip(line.trim_end_matches(['\n', '\r']));
        if let Some((event, n)) = current.as_mut()
            && continues(&event.text, line)
        {
            if *n < EVENT_LINES_MAX {
                event.text.push('\n');
                event.text.push_str(line);
                *n += 1;
            }
            continue;
        }
        if let Some((event, _)) = current.take() {
            finish(name, event, &mut context, &mut lives, findings);
        }
        current = Some((
            Event {
                line: line_no,
                text: line.to_string(),
            },
            1,
        ));
    }
    if let Some((event, _)) = current.take() {
        finish(name, event, &mut context, &mut lives, findings);
    }
    findings.lines += line_no;
    Ok(())
}

/// A line's first [`LINE_BYTES_MAX`] bytes: a symptom is near a line's start, and a huge line must not make
/// the scan quadratic.
fn clip(line: &str) -> &str {
    if line.len() <= LINE_BYTES_MAX {
        return line;
    }
    let mut end = LINE_BYTES_MAX;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

/// Whether `line` belongs to the event so far: an indented line or one that closes a bracket (Debug's
/// pretty-printing), or, after a `panicked at ..:` line, its message up to the backtrace or the next event.
fn continues(event: &str, line: &str) -> bool {
    if line.trim().is_empty() {
        return false;
    }
    if starts_event(line) {
        return false;
    }
    if line.starts_with([' ', '\t', ')', ']', '}']) {
        return true;
    }
    let first = event.lines().next().unwrap_or("");
    let in_panic = first.contains("panicked at") && first.trim_end().ends_with(':');
    in_panic
        && !line.starts_with("stack backtrace:")
        && !line.starts_with("note:")
        && !line.starts_with('#')
        && !starts_with_timestamp(line)
}

/// A line that begins a log event whatever its indent: RisingWave's `2024-02-01T..` or epochlab's
/// right-aligned virtual time (`    18.273000s ..`).
fn starts_event(line: &str) -> bool {
    let t = line.trim_start();
    if starts_with_timestamp(t) {
        return true;
    }
    let secs = t.split_whitespace().next().unwrap_or("");
    secs.strip_suffix('s').is_some_and(|n| {
        n.contains('.') && !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '.')
    })
}

/// `2024-02-01T..`: a new log event.
fn starts_with_timestamp(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() >= 11 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[10] == b'T'
}

fn finish(
    name: &str,
    event: Event,
    context: &mut VecDeque<Event>,
    lives: &mut TableLives,
    findings: &mut Findings,
) {
    lives.observe(event.line, &event.text);
    let masked = mask(&event.text);
    let mut matched = false;
    for bug in BugId::ALL {
        let symptom = bug.record().symptom;
        if !symptom.shown_by(&masked) {
            continue;
        }
        matched = true;
        let evidence = match evidence(&symptom, &event.text, lives) {
            Ok(evidence) => evidence,
            Err(verdict) => {
                miss(bug, name, event.line, verdict, findings);
                continue;
            }
        };
        // One match per entry: the first event, and a count of the others.
        if let Some(m) = findings.matches.iter_mut().find(|m| m.bug == bug) {
            m.more += 1;
            continue;
        }
        findings.matches.push(Match {
            bug,
            file: name.to_string(),
            line: event.line,
            kind: event_kind(&event.text),
            text: shorten(&fold_debug(&event.text)),
            context: context_of(&event, context),
            evidence,
            more: 0,
        });
    }
    if !matched && let Some(kind) = problem_kind(&event.text) {
        group(name, kind, &event, &masked, findings);
    }
    context.push_back(event);
    if context.len() > CONTEXT_EVENTS {
        context.pop_front();
    }
}

/// The evidence `symptom` asks for beyond its text, as the log shows it (`None` for the text alone); what the
/// log shows instead when it does not.
fn evidence(symptom: &Symptom, text: &str, lives: &TableLives) -> Result<Option<Verdict>, Verdict> {
    match symptom.evidence {
        Evidence::Text => Ok(None),
        Evidence::RemovedTablesOutliveRecovery => {
            match lives.verdict(&lives::removed_tables(text)) {
                outlived @ Verdict::Outlived { .. } => Ok(Some(outlived)),
                other => Err(other),
            }
        }
        Evidence::StopBarrierBefore => {
            let risingwaves = mask(text).contains(symptom.pattern);
            match risingwaves || lives.stop_barrier().is_some() {
                true => Ok(None),
                false => Err(Verdict::NoStopBarrier),
            }
        }
    }
}

/// One miss per entry and kind of verdict: the first event, and a count of the others.
fn miss(bug: BugId, name: &str, line: u64, verdict: Verdict, findings: &mut Findings) {
    let kind = std::mem::discriminant(&verdict);
    if let Some(m) = findings
        .misses
        .iter_mut()
        .find(|m| m.bug == bug && std::mem::discriminant(&m.verdict) == kind)
    {
        m.more += 1;
        return;
    }
    findings.misses.push(Miss {
        bug,
        file: name.to_string(),
        line,
        verdict,
        more: 0,
    });
}

/// What a matching event is: a `panic`, an `error` (an ERROR line, an error chain), or a `line` that quotes
/// the symptom.
fn event_kind(text: &str) -> &'static str {
    if text.contains("panicked at") {
        "panic"
    } else if text.contains(" ERROR ") || text.contains("rror:") {
        "error"
    } else {
        "line"
    }
}

/// `panic` or `error` for an event that is one.
fn problem_kind(text: &str) -> Option<&'static str> {
    let first = text.lines().next().unwrap_or("");
    if first.contains("panicked at") {
        Some("panic")
    } else if first.contains(" ERROR ") || first.starts_with("ERROR") || first.contains("Error:") {
        Some("error")
    } else {
        None
    }
}

fn group(name: &str, kind: &'static str, event: &Event, masked: &str, findings: &mut Findings) {
    // The masked text without the log's timestamp and level: the same error at two times is one group.
    let key = masked
        .find(char::is_alphabetic)
        .map_or(masked, |i| &masked[i..])
        .chars()
        .take(TEXT_CHARS_MAX)
        .collect::<String>();
    if let Some(g) = findings.groups.get_mut(&key) {
        g.count += 1;
        return;
    }
    if findings.groups.len() >= GROUPS_MAX {
        findings.groups_dropped += 1;
        return;
    }
    findings.groups.insert(
        key,
        Group {
            kind,
            count: 1,
            file: name.to_string(),
            line: event.line,
            example: shorten(&fold_debug(&event.text)),
        },
    );
}

fn shorten(text: &str) -> String {
    match text.char_indices().nth(TEXT_CHARS_MAX) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}

/// The actor, executor, epoch and table the log names nearest before (or in) `event`.
fn context_of(event: &Event, before: &VecDeque<Event>) -> Context {
    let mut ctx = Context::default();
    for e in std::iter::once(event).chain(before.iter().rev()) {
        let t = &e.text;
        ctx.actor = ctx.actor.take().or_else(|| {
            number_after(t, "actor_id=")
                .or_else(|| number_after(t, "actor="))
                .or_else(|| number_after(t, "Actor "))
        });
        ctx.table = ctx.table.take().or_else(|| number_after(t, "table_id="));
        ctx.epoch = ctx.epoch.take().or_else(|| epoch_of(t));
        ctx.executor = ctx.executor.take().or_else(|| executor_of(t));
    }
    ctx
}

/// The number right after `key` in `text`.
fn number_after(text: &str, key: &str) -> Option<String> {
    let at = text.find(key)? + key.len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (!digits.is_empty()).then_some(digits)
}

/// `curr N, prev N` of an `EpochPair`, or an `epoch=N`.
fn epoch_of(text: &str) -> Option<String> {
    let curr = number_after(&fold_debug(text), "curr: ");
    let prev = number_after(&fold_debug(text), "prev: ");
    match (curr, prev) {
        (Some(c), Some(p)) => Some(format!("curr {c}, prev {p}")),
        (Some(c), None) => Some(format!("curr {c}")),
        _ => number_after(text, "epoch=")
            .or_else(|| number_after(text, "epoch: "))
            .or_else(|| number_after(text, "epoch [")),
    }
}

/// The executor's module (`risingwave_stream::executor::backfill::arrangement_backfill`) or source file
/// (`src/stream/src/executor/backfill/utils.rs`) the event names.
fn executor_of(text: &str) -> Option<String> {
    let token = |start: usize| -> String {
        text[start..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | ':' | '/' | '.'))
            .collect::<String>()
            .trim_end_matches([':', '.'])
            .to_string()
    };
    if let Some(i) = text.find("risingwave_stream::executor::") {
        return Some(token(i));
    }
    text.find("src/stream/src/executor/").map(token)
}

fn print(findings: &Findings, files: usize) {
    for m in &findings.matches {
        let info = m.bug.info();
        let more = match m.more {
            0 => String::new(),
            n => format!(", and {n} later event(s) with its symptom"),
        };
        outln!(
            "{} at {}:{} ({}{more})",
            m.bug.title(),
            m.file,
            m.line,
            m.kind
        );
        outln!("  line:      {}", m.text);
        let c = &m.context;
        let none = || "-".to_string();
        outln!(
            "  context:   actor {}, executor {}, epoch {}, table {}",
            c.actor.clone().unwrap_or_else(none),
            c.executor.clone().unwrap_or_else(none),
            c.epoch.clone().unwrap_or_else(none),
            c.table.clone().unwrap_or_else(none)
        );
        if let Some(evidence) = &m.evidence {
            outln!("  evidence:  {evidence}");
        }
        outln!("  bug:       {}", info.mechanism);
        outln!("  reproduce: {}", info.command);
    }
    // An entry's text without its evidence, unless the entry matched elsewhere.
    for m in &findings.misses {
        if findings.matches.iter().any(|hit| hit.bug == m.bug) {
            continue;
        }
        let more = match m.more {
            0 => String::new(),
            n => format!(", and {n} later event(s) like it"),
        };
        let head = match m.verdict {
            Verdict::Window { .. } | Verdict::NoStopBarrier => "not ",
            _ => "unconfirmed: ",
        };
        outln!(
            "{head}{}: its line at {}:{}{more}, but {}",
            m.bug.title(),
            m.file,
            m.line,
            m.verdict
        );
    }
    if findings.matches.is_empty() {
        let what = if findings.misses.is_empty() {
            "no known bug's symptom"
        } else {
            "no known bug"
        };
        outln!("{what} in {} lines of {files} file(s)", findings.lines);
        print_groups(findings);
    } else {
        outln!(
            "{} match(es) of known bugs in {} lines of {files} file(s)",
            findings.matches.len(),
            findings.lines
        );
    }
}

fn print_groups(findings: &Findings) {
    let count = |kind| {
        findings
            .groups
            .values()
            .filter(|g| g.kind == kind)
            .map(|g| g.count)
            .sum::<u64>()
    };
    outln!(
        "found {} panic(s) and {} error(s) in {} group(s){}",
        count("panic"),
        count("error"),
        findings.groups.len(),
        match findings.groups_dropped {
            0 => String::new(),
            n => format!(" (and {n} more of other texts, not grouped)"),
        }
    );
    let mut groups: Vec<&Group> = findings.groups.values().collect();
    groups.sort_by(|a, b| b.count.cmp(&a.count).then(a.line.cmp(&b.line)));
    for g in groups.into_iter().take(GROUPS_SHOWN) {
        outln!(
            "  {} x{} first at {}:{}: {}",
            g.kind,
            g.count,
            g.file,
            g.line,
            g.example
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(log: &str) -> Findings {
        let mut f = Findings::default();
        scan("log", log.as_bytes(), &mut f).unwrap();
        f
    }

    #[test]
    fn a_pretty_printed_panic_names_14910_with_its_context() {
        let log = "\
2024-02-01T15:29:59.243730Z TRACE risingwave_stream::executor::backfill::arrangement_backfill: Persisting state on barrier at epoch EpochPair {
    curr: 3066966743908352,
    prev: 3066966724575232,
}, actor_id=176007, table_id=177014
thread '<unnamed>' panicked at /risingwave/src/stream/src/executor/backfill/utils.rs:767:25:
row [
    Some(
        Int16(
            0,
        ),
    ),
] not found
stack backtrace:
   0: rust_begin_unwind
";
        let f = findings(log);
        assert_eq!(f.matches.len(), 1, "{f:?}");
        let m = &f.matches[0];
        assert_eq!((m.bug, m.line), (BugId::Rw14910, 5));
        assert!(
            m.text.ends_with("row [Some(Int16(0))] not found"),
            "{}",
            m.text
        );
        assert_eq!(m.context.actor.as_deref(), Some("176007"));
        assert_eq!(m.context.table.as_deref(), Some("177014"));
        assert_eq!(
            m.context.epoch.as_deref(),
            Some("curr 3066966743908352, prev 3066966724575232")
        );
        assert_eq!(
            m.context.executor.as_deref(),
            Some("src/stream/src/executor/backfill/utils.rs:767:25")
        );
    }

    /// epochlab's form of #5244's symptom (a state table refusing an epoch) names the entry only after a reset
    /// that stopped the actors with a barrier; RisingWave's text, which names the Stop, alone.
    #[test]
    fn an_epoch_refused_is_5244_only_after_a_stop_barrier() {
        let refused = "     6.100000s 5244 buggy seed=1 ERROR epochlab_stream: actor failed actor_id=2 \
                       error=table 1: commit of EpochPair { curr: 30, prev: 20 }, but the table is at epoch 10\n";
        let stop = "     6.000000s 5244 buggy seed=1  INFO epochlab::event: recovery step: stop actors by barrier \
                    prev=20 curr=30 actors=6\n";
        let f = findings(refused);
        assert!(f.matches.is_empty(), "{f:?}");
        assert_eq!(f.misses.len(), 1);
        assert_eq!(f.misses[0].verdict, Verdict::NoStopBarrier);
        let f = findings(&format!("{stop}{refused}"));
        assert_eq!(f.matches.len(), 1, "{f:?}");
        assert_eq!(f.matches[0].bug, BugId::Rw5244);
        let risingwave = "thread '<unnamed>' panicked at 'actor failed: Stream error: Failed to align barrier: \
                          expected Barrier { epoch: Epoch { curr: 2, prev: 1 }, mutation: None, checkpoint: true, \
                          passed_actors: [] } but got Barrier { epoch: Epoch { curr: 4, prev: 3 }, mutation: \
                          Some(Stop({1, 2})), checkpoint: true, passed_actors: [] }', src/stream/src/task/x.rs:1:1\n";
        let f = findings(risingwave);
        assert_eq!(f.matches.len(), 1, "{f:?}");
        assert_eq!(f.matches[0].bug, BugId::Rw5244);
    }

    #[test]
    fn an_unknown_panic_and_errors_are_grouped_and_match_nothing() {
        let log = "\
thread 'main' panicked at src/lib.rs:1:1:
something else broke at 42
2024-02-01T00:00:00Z ERROR risingwave_meta: failed to connect to 10.0.0.1
2024-02-01T00:00:01Z ERROR risingwave_meta: failed to connect to 10.0.0.2
";
        let f = findings(log);
        assert!(f.matches.is_empty());
        assert_eq!(f.groups.len(), 2, "{:?}", f.groups);
        let errors = f.groups.values().find(|g| g.kind == "error").unwrap();
        assert_eq!((errors.count, errors.line), (2, 3));
    }

    #[test]
    fn the_same_text_panicked_elsewhere_is_not_the_entry() {
        let f = findings(
            "thread 'a' panicked at src/stream/src/executor/mview/materialize.rs:300:13:\nrow [Some(Int16(0))] not found\n",
        );
        assert!(f.matches.is_empty(), "{f:?}");
        let f = findings(
            "thread 'a' panicked at src/stream/src/executor/backfill/utils.rs:767:25:\nrow [Some(Int16(0))] not found\n",
        );
        assert_eq!(f.matches.len(), 1, "{f:?}");
    }

    #[test]
    fn a_numbered_line_is_not_a_symptom_of_another_number() {
        // `Int16(0)` is a name and a number: a log of `Int32` is not #14910's.
        let f = findings("thread 'a' panicked at x.rs:1:1:\nrow [Some(Int32(0))] not found\n");
        assert!(f.matches.is_empty());
    }
}
