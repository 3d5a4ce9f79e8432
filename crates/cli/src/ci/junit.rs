//! `epochlab ci --junit FILE`: the run as JUnit XML, the format CI systems read (Jenkins, GitLab, Buildkite's
//! test analytics): one `testsuite` per step, one `testcase` per (file, seed); a failing or stuck file is a
//! `failure` (its message the one-line error, its text the record, expected and actual, and the replay
//! command); a file after a stop, a file of `KILL_IGNORE_FILES` and a step that does not run are `skipped`.

use std::fmt::Write as _;
use std::path::Path;

use epochlab_sim::Outcome;
use epochlab_simulation::FileReport;

use super::{SeedResult, StepRun, relative};

/// One test case.
pub(super) struct Case {
    pub(super) name: String,
    pub(super) outcome: CaseOutcome,
}

pub(super) enum CaseOutcome {
    Passed,
    Failed {
        kind: String,
        message: String,
        text: String,
    },
    Skipped(String),
}

/// The JUnit document of a run.
pub(super) fn document(
    title: &str,
    root: &Path,
    steps: &[StepRun],
    runs: &[(usize, u64, Option<&SeedResult>, String)],
) -> String {
    let suites: Vec<(&str, Vec<Case>)> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let cases = step_cases(root, s, runs.iter().filter(|r| r.0 == i));
            (s.step.name, cases)
        })
        .collect();
    suites_document(title, &suites)
}

/// A document of named suites of cases (a suite a step, or the backfill-tests script's one).
pub(super) fn suites_document(title: &str, suites: &[(&str, Vec<Case>)]) -> String {
    let mut xml = String::new();
    let (mut tests, mut failures, mut skipped) = (0, 0, 0);
    for (name, cases) in suites {
        let f = cases
            .iter()
            .filter(|c| matches!(c.outcome, CaseOutcome::Failed { .. }))
            .count();
        let k = cases
            .iter()
            .filter(|c| matches!(c.outcome, CaseOutcome::Skipped(_)))
            .count();
        (tests, failures, skipped) = (tests + cases.len(), failures + f, skipped + k);
        let _ = writeln!(
            xml,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{f}\" errors=\"0\" skipped=\"{k}\">",
            escape(name),
            cases.len()
        );
        for c in cases {
            xml.push_str(&case_xml(name, c));
        }
        xml.push_str("  </testsuite>\n");
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"{}\" tests=\"{tests}\" \
         failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">\n{xml}</testsuites>\n",
        escape(title)
    )
}

/// A step's cases: each (file, seed) of each seed it ran, or one skipped case when it did not run.
fn step_cases<'a>(
    root: &Path,
    s: &StepRun,
    runs: impl Iterator<Item = &'a (usize, u64, Option<&'a SeedResult>, String)>,
) -> Vec<Case> {
    let files = match &s.files {
        Err(why) => {
            return vec![Case {
                name: format!("{} (not run)", s.step.name),
                outcome: CaseOutcome::Skipped(format!("not run: {why}")),
            }];
        }
        Ok(files) => files,
    };
    let mut cases = Vec::new();
    for (_, seed, result, replay) in runs {
        let named = |file: &str| format!("{} (seed {seed})", relative(root, file));
        match result {
            Some(SeedResult::Ran { report, .. }) => {
                for f in &report.files {
                    cases.push(Case {
                        name: named(&f.file),
                        outcome: file_outcome(root, f, replay),
                    });
                }
                let first = report.first_failure().map(|f| relative(root, &f.file));
                for f in &report.not_run {
                    let after = first.clone().unwrap_or_default();
                    cases.push(Case {
                        name: named(f),
                        outcome: CaseOutcome::Skipped(format!(
                            "not run: the step stopped at {after}"
                        )),
                    });
                }
            }
            Some(SeedResult::Panicked(why)) => cases.push(Case {
                name: format!("{} (seed {seed})", s.step.name),
                outcome: CaseOutcome::Failed {
                    kind: "panic".into(),
                    message: format!("panic: {why}"),
                    text: format!("panic: {why}\nreplay: {replay}"),
                },
            }),
            None => {
                for f in files {
                    cases.push(Case {
                        name: named(&f.display().to_string()),
                        outcome: CaseOutcome::Skipped("not run (no worker thread)".into()),
                    });
                }
            }
        }
    }
    cases
}

fn file_outcome(root: &Path, f: &FileReport, replay: &str) -> CaseOutcome {
    if f.skipped {
        return CaseOutcome::Skipped(
            "in KILL_IGNORE_FILES (not run under kills, as in RisingWave)".into(),
        );
    }
    if f.outcome == Outcome::Passed {
        return CaseOutcome::Passed;
    }
    let message = super::failure(root, f);
    let mut text = message.clone();
    if let Some(record) = &f.failure {
        let _ = write!(text, "\n{}", relative(root, &record.to_string()));
    }
    let _ = write!(text, "\nreplay: {replay}");
    CaseOutcome::Failed {
        kind: f.kind.unwrap_or(f.outcome.as_str()).to_string(),
        message,
        text,
    }
}

fn case_xml(step: &str, c: &Case) -> String {
    let open = format!(
        "    <testcase classname=\"{}\" name=\"{}\"",
        escape(step),
        escape(&c.name)
    );
    match &c.outcome {
        CaseOutcome::Passed => format!("{open}/>\n"),
        CaseOutcome::Skipped(why) => {
            format!(
                "{open}>\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                escape(why)
            )
        }
        CaseOutcome::Failed {
            kind,
            message,
            text,
        } => format!(
            "{open}>\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n",
            escape(kind),
            escape(message),
            escape(text).replace("&#10;", "\n")
        ),
    }
}

/// Text as XML 1.0 character data or an attribute value: the five markup characters escaped, and the
/// characters XML 1.0 does not allow (most control characters) replaced.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => out.push(' '),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn markup_and_control_characters_are_escaped() {
        assert_eq!(
            escape("a<b & \"c\"\n\u{1}"),
            "a&lt;b &amp; &quot;c&quot;&#10;\u{fffd}"
        );
    }
}
