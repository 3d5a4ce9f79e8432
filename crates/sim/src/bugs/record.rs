//! What RisingWave's own record says of each catalogue entry: the issue and pull requests, the symptom exactly as
//! RisingWave logged, errored or panicked at the bug's commit, where in RisingWave it happened, and what epochlab
//! models differently. `epochlab bugs` prints it and `epochlab triage` matches logs against its [`Symptom`]s.
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
        match self {
            BugId::Rw14910 => &R14910,
            BugId::Rw22384 => &R22384,
            BugId::Rw16815 => &R16815,
            BugId::Rw19138 => &R19138,
            BugId::Rw15144 => &R15144,
            BugId::RescheduleUnpinned => &RESCHEDULE_UNPINNED,
        }
    }
}

const R14910: Record = Record {
    refs: "issue #14910 (2024-02-01; the recovery test's failure, reproduced in PR #14888); PR #15355 \
           (2024-03-07, recovery's pre-applied drops and cancels unregister) and PR #15852 (2024-03-26, \
           unregister after the Stop barrier is collected, purge in recovery); PR #15787 turned the panic into \
           an actor error",
    symptom: Symptom {
        kind: SymptomKind::Panic,
        text: "row [Some(Int16(0))] not found",
        pattern: "row [Some(Int16(N))] not found",
        epochlab_pattern: "",
        panic_file: "executor/backfill/utils.rs",
    },
    site: "stream: executor/backfill/utils.rs, `persist_state_per_vnode` (its debug-build read of the old progress \
           row), under the arrangement backfill's barrier; the cause in meta: `drop_streaming_jobs_impl` \
           unregistered the job's state tables from Hummock once the failed Stop returned, before recovery reset \
           the compute nodes",
    differs: "the old-row check runs in every build and fails the actor with a typed error (RisingWave's was \
              debug-only and panicked); one meta node, no etcd, and the CI run's kill timing is drawn, not \
              recorded",
};

const R22384: Record = Record {
    refs: "PR #22384 (2025-06-27, \"fix incorrectly marking worker node as barrier collected\"), with its test in \
           PR #22393 (2025-07-02, worker_crash_no_early_commit.rs); no issue",
    symptom: Symptom {
        kind: SymptomKind::Silent,
        text: "no log line: the epoch is committed without the crashed worker's data, and recovery resumes from \
               that epoch",
        pattern: "",
        epochlab_pattern: "",
        panic_file: "",
    },
    site: "meta: barrier/utils.rs, `is_valid_after_worker_err` (removed a failed worker from an epoch's nodes to \
           collect whatever it had to collect), walked in order over the in-flight epochs by \
           `DatabaseCheckpointControl::is_valid_after_worker_err`; the commit is `clear_on_err` finishing the \
           collected front barriers (barrier/worker.rs)",
    differs: "one database, no creating-job barrier control, and a synchronous commit; the lost data shows as an \
              I4 full-collection and oracle violation after recovery, where RisingWave's test only checks that \
              `commit_epoch` is never called",
};

const R16815: Record = Record {
    refs: "PR #16815 (2024-05-20, \"arrangement backfill should use dist key instead of pk to derive vnode\"); \
           found by e2e_test/backfill/sink/different_pk_and_dist_key.slt; no issue",
    symptom: Symptom {
        kind: SymptomKind::ActorError,
        text: "Backfill progress for vnode VirtualNode(196) not found, backfill_state not initialized properly \
               (`bail!` with `{:#?}`: the vnode spans three lines)",
        pattern: "Backfill progress for vnode VirtualNode(N) not found, backfill_state not initialized properly",
        epochlab_pattern: "",
        panic_file: "",
    },
    site: "stream: executor/backfill/utils.rs, `BackfillState::get_progress`, reached from \
           `mark_chunk_ref_by_vnode` with a vnode computed from the pk, in the arrangement backfill",
    differs: "a typed error whose vnode prints on one line; a dist key that is a prefix of the pk; a wrong vnode \
              that the actor owns shows as wrong results, caught by the view's write check or the oracle, which \
              RisingWave's CI had no equivalent of",
};

const R19138: Record = Record {
    refs: "issue #19138 (2024-10-26, v2.0.2; closed as not a bug: rescaling a backfilling job was not supported); \
           the assertion came with PR #12767 (2023); issue #19142 tracked support, PR #23998 (2026-01-12) added it",
    symptom: Symptom {
        kind: SymptomKind::Panic,
        text: "panicked at src/stream/src/executor/backfill/no_shuffle_backfill.rs:607:13: assertion `left == right` \
               failed (left: true, right: false; the comment above it: All vnode partitions should have same \
               state (no scale-in supported))",
        pattern: "no_shuffle_backfill.rs:N:N: assertion `left == right` failed",
        epochlab_pattern: "All vnode partitions should have same state (no scale-in supported)",
        panic_file: "executor/backfill/no_shuffle_backfill.rs",
    },
    site: "stream: executor/backfill/no_shuffle_backfill.rs, `BackfillExecutor::recover_backfill_state` \
           (`assert_eq!` of each vnode's is_finished against the first's), after the compute nodes were scaled \
           in (6 to 2 cores) under a backfilling SINK INTO TABLE; v2.0.2's recovery skipped scaling only \
           background materialized views still creating, not sinks",
    differs: "a typed actor error carrying the comment and both sides, not a panic; the scale-in is a node \
              removed for good at recovery, not fewer cores; the job is a sink over a table, not a SINK \
              INTO TABLE with NOW(); the snapshot is read from a replicated copy of the upstream",
};

const RESCHEDULE_UNPINNED: Record = Record {
    refs: "none: epochlab's own check of an online reschedule; the wait it needs is RisingWave's \
           `wait_epoch_commit` after a Pause(ConfigChange) (PR #5517, 2022; removed by #20493, 2025)",
    symptom: Symptom {
        kind: SymptomKind::OwnCheck,
        text: "epochlab's backfill persist check: backfill progress of vnode V in storage .. differs from the \
               committed copy ..",
        pattern: "",
        epochlab_pattern: "",
        panic_file: "",
    },
    site: "epochlab meta: the post-collect of a Pause(ConfigChange) (`MetaInner::wait_for_config_change`)",
    differs: "RisingWave has no such bug on record: it did not support rescheduling a backfilling job until PR \
              #23998, and its online reschedule is not modelled beyond this ordering",
};

const R15144: Record = Record {
    refs: "issue #15144 (2024-02-20, titled \"inconsistency table info between catalog and hummock\"); PR #15355 \
           (recovery's `pre_apply_drop_cancel` never unregistered a cancelled job's tables; it \"might cause\" \
           #15144); the write-stop deadlock is #16511 and #20010 (a dropped-tables cache in the catalog)",
    symptom: Symptom {
        kind: SymptomKind::LoggedLine,
        text: "Failed to fetch filter key extractor tables [{1, 2}. [[2]] may be removed by meta-service. ",
        pattern: "Failed to fetch filter key extractor tables [{N}. [[N]] may be removed by meta-service.",
        epochlab_pattern: "",
        panic_file: "",
    },
    site: "storage: hummock/compactor/compactor_runner.rs, `compact` (an error log, then the task ends \
           `ExecuteFailed`): the task's table ids are those its input SSTs hold, filtered by the group's \
           `existing_table_ids`, then fetched from the filter key extractor manager; the cause in meta: \
           recovery's `pre_apply_drop_cancel`",
    differs: "a task reads the whole L0 but not the base level's overlapping files; the ids print sorted (a \
              HashSet in RisingWave); the catalog lookup is a call, not an RPC; the stall is #16511's write \
              stop, which the record ties to #16511 and #20010, not to #15144 itself",
};

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

    /// The README's catalogue says what the record says: each entry's row holds its texts as they are here.
    #[test]
    fn the_readme_table_is_the_record() {
        let readme = include_str!("../../../../README.md");
        for bug in BugId::ALL {
            let r = bug.record();
            let title = match bug {
                BugId::RescheduleUnpinned => bug.to_string(),
                _ => format!("#{bug}"),
            };
            let row = format!(
                "| {title} | {} | {} ({}) | {} | {} |",
                r.refs,
                r.symptom.text,
                r.symptom.kind.as_str(),
                r.site,
                r.differs
            );
            assert!(readme.contains(&row), "README.md lacks the row\n{row}");
        }
    }
}
