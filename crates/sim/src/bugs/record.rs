//! What RisingWave's own record says of each catalogue entry: the issue and pull requests, the symptom exactly as
//! RisingWave logged, errored or panicked at the bug's commit, where in RisingWave it happened, and what epochlab
//! models differently (each entry's `RECORD` is in its module). `epochlab bugs` prints it and `epochlab triage` matches logs against its [`Symptom`]s.
//!
//! Every text here is checked against the thread or the source it cites; where the record does not say a thing
//! (which CI run, which path), the text says so rather than guess.

use super::BugId;

/// How a symptom shows in RisingWave's log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymptomKind {
    /// A Rust panic (`thread '..' panicked at FILE:LINE:COL:` and the message, often over several lines).
    Panic,
    /// An actor's error, reported in the failed barrier's error chain (`Actor N exited unexpectedly: ..`).
    ActorError,
    /// A line a component logs (a warning or an error) and goes on.
    LoggedLine,
    /// Nothing in the log: the bug shows only as data (a committed epoch without a worker's writes).
    Silent,
    /// No RisingWave record at all: an entry that is epochlab's own check.
    OwnCheck,
}

impl SymptomKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SymptomKind::Panic => "panic",
            SymptomKind::ActorError => "actor error",
            SymptomKind::LoggedLine => "logged line",
            SymptomKind::Silent => "silent",
            SymptomKind::OwnCheck => "none: epochlab's own check",
        }
    }
}

/// A symptom in a log: the text as RisingWave printed it, and its masked pattern.
#[derive(Clone, Copy, Debug)]
pub struct Symptom {
    pub kind: SymptomKind,
    /// As RisingWave printed it at the bug's commit, with one example's ids.
    pub text: &'static str,
    /// The same text masked as triage masks a log line: every run of digits is `N`, a list `N, N, ..` is one
    /// `N`, Debug's pretty-printing folded (`VirtualNode(\n 196,\n)` is `VirtualNode(N)`). Empty for
    /// [`SymptomKind::Silent`] and [`SymptomKind::OwnCheck`]; a part of the masked text when the text has
    /// more than a log line shows (the panic's location, a note).
    pub pattern: &'static str,
    /// The pattern of epochlab's own message for it, where that differs from RisingWave's (empty where
    /// epochlab prints RisingWave's text), so that triage names the entry in epochlab's logs too.
    pub epochlab_pattern: &'static str,
    /// For a panic, the source file it came from (`executor/backfill/utils.rs`): a panic with the same text
    /// at another place is not this entry's. Empty where the symptom is not a panic.
    pub panic_file: &'static str,
    /// What, beyond the text, a log must show for the text to be this entry's.
    pub evidence: Evidence,
}

/// What a log must show, beyond a symptom's text, for the text to be the entry's: some texts are logged in a
/// harmless window too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// The text alone: nothing else logs it.
    Text,
    /// The tables the line names as removed (the compactor's second list) outlived a recovery. RisingWave
    /// removes a dropped job from the catalog at once and unregisters its tables from Hummock when the
    /// drop's Stop barrier commits, so a compaction task may fail on them in that window, harmlessly. A fixed
    /// recovery unregisters every table the catalog has forgotten by its reset (the pre-applied drops and
    /// cancels, then the purge), so a table that left the catalog before a recovery's reset and fails a task
    /// after that recovery completed is still registered with no job to unregister it: #15144's
    /// inconsistency between catalog and Hummock, which the record shows after `recovery success`. A table
    /// whose leaving the log does not show counts as outliving any recovery completed before the line.
    RemovedTablesOutliveRecovery,
    /// epochlab's form of #5244's symptom (a state table refusing an epoch: `but the table is at epoch N`)
    /// counts only after the log shows a reset's Stop barrier (`stop actors by barrier`, the buggy reset's
    /// line); any epoch refused for another reason is not the entry's. RisingWave's text, which names the
    /// Stop, counts alone.
    StopBarrierBefore,
}

impl Symptom {
    /// Whether a log event (masked) shows this symptom: one of its patterns, and for a panic event its file.
    pub fn shown_by(&self, masked: &str) -> bool {
        if !self.patterns().any(|p| masked.contains(p)) {
            return false;
        }
        match masked.find("panicked at ") {
            Some(at) if !self.panic_file.is_empty() => {
                let location = masked[at..].split_whitespace().nth(2).unwrap_or("");
                location.contains(self.panic_file)
            }
            _ => true,
        }
    }

    /// The masked patterns a log event is matched against: RisingWave's, and epochlab's where it differs.
    pub fn patterns(&self) -> impl Iterator<Item = &'static str> {
        [self.pattern, self.epochlab_pattern]
            .into_iter()
            .filter(|p| !p.is_empty())
    }
}

/// The record of one catalogue entry.
#[derive(Clone, Copy, Debug)]
pub struct Record {
    /// The issue, the pull requests and what each did, with dates.
    pub refs: &'static str,
    pub symptom: Symptom,
    /// The component, file and function where the symptom came from.
    pub site: &'static str,
    /// What epochlab models differently from RisingWave (there is always something).
    pub differs: &'static str,
}

impl BugId {
    /// What RisingWave's record says of this entry.
    pub fn record(self) -> &'static Record {
        self.info().record
    }
}

impl BugId {
    /// Whether `panic` is this entry's recorded symptom (a panic of the text, from the file, RisingWave's
    /// record shows: #12990's meta panic), rather than an engine defect.
    pub fn is_own_panic(self, panic: &crate::panic::TaskPanic) -> bool {
        let symptom = self.record().symptom;
        let line = format!("panicked at {}: {}", panic.location, panic.message);
        symptom.kind == SymptomKind::Panic && symptom.shown_by(&mask(&line))
    }
}

/// A log line as triage compares it: Debug's pretty-printing folded (whitespace after `(`/`[` and before
/// `)`/`]` dropped, a comma before a closing bracket dropped, runs of whitespace one space), every run of
/// digits standing alone `N`, and a list of masked numbers one `N`.
pub fn mask(text: &str) -> String {
    let folded = fold_debug(text);
    let mut digits = String::with_capacity(folded.len());
    // Digits inside a name (`Int16`, `b14910`) are kept; a number standing alone is masked.
    let (mut in_number, mut in_name) = (false, false);
    for c in folded.chars() {
        if c.is_ascii_digit() && !in_name {
            if !in_number {
                digits.push('N');
            }
            in_number = true;
            continue;
        }
        in_name = (c.is_alphanumeric() || c == '_') && !in_number || in_name && c.is_ascii_digit();
        in_number = false;
        digits.push(c);
    }
    let mut out = digits;
    while out.contains("N, N") {
        out = out.replace("N, N", "N");
    }
    out
}

/// Debug's `{:#?}` layout folded to `{:?}`'s: `row [\n    Some(\n  Int16(\n 0,\n ),\n ),\n] not found` is
/// `row [Some(Int16(0))] not found`.
pub fn fold_debug(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = String::with_capacity(text.len());
    for w in words {
        let glue = out.ends_with(['(', '[']) || w.starts_with([')', ']']);
        if !out.is_empty() && !glue {
            out.push(' ');
        }
        out.push_str(w);
    }
    while let Some(i) = out.find(",)").or_else(|| out.find(",]")) {
        out.remove(i);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A symptom's pattern is a part of its text, masked: what triage sees in a log line
    /// that printed it.
    #[test]
    fn every_pattern_is_its_text_masked() {
        for bug in BugId::ALL {
            let s = bug.record().symptom;
            match s.kind {
                SymptomKind::Silent | SymptomKind::OwnCheck => {
                    assert!(s.pattern.is_empty(), "{bug}")
                }
                _ => assert!(mask(s.text).contains(s.pattern), "{bug}: {}", mask(s.text)),
            }
        }
    }

    /// The README's record table is written from the records: this test renders it from each entry's `RECORD`
    /// and, when README.md's copy differs (a new bug, an edited record), rewrites it there and fails, so that the
    /// change is seen and committed (as rust-analyzer's generated docs are kept).
    #[test]
    fn the_readme_table_is_the_record() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
        let readme = std::fs::read_to_string(path).expect("README.md is readable");
        let (begin, end) = (README_TABLE_BEGIN, README_TABLE_END);
        let start = readme
            .find(begin)
            .expect("README.md has the record table's begin marker")
            + begin.len();
        let stop = start
            + readme[start..]
                .find(end)
                .expect("README.md has the record table's end marker");
        let table = readme_table();
        if readme[start..stop] != table {
            let written = format!("{}{table}{}", &readme[..start], &readme[stop..]);
            std::fs::write(path, written).expect("README.md is writable");
            panic!(
                "README.md's record table differed from the records: rewritten from them; review and commit it"
            );
        }
    }

    const README_TABLE_BEGIN: &str = "<!-- the record table: written from each entry's RECORD by the test \
                                      the_readme_table_is_the_record; edit the RECORD, not the table -->\n";
    const README_TABLE_END: &str = "<!-- end of the record table -->";

    /// The table, one row per catalogue entry.
    fn readme_table() -> String {
        let mut table = String::from(
            "| entry | record | symptom as RisingWave printed it (kind) | where | what epochlab models differently |\n\
             |---|---|---|---|---|\n",
        );
        for bug in BugId::ALL {
            let r = bug.record();
            let title = match bug.info().origin {
                crate::bugs::Origin::Epochlab => bug.to_string(),
                crate::bugs::Origin::RisingWave => format!("#{bug}"),
            };
            let (kind, site) = (r.symptom.kind.as_str(), r.site);
            let (refs, text, differs) = (r.refs, r.symptom.text, r.differs);
            table += &format!("| {title} | {refs} | {text} ({kind}) | {site} | {differs} |\n");
        }
        table
    }
}
