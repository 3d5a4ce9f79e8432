//! Plan files: a plan, the mode it runs in, and (for `tests/regressions/`) what it caught and the outcome
//! and signature a run must give. A bare plan (`{"version": .., "seed": .., "cluster": .., "steps": ..}`)
//! is a plan file too.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::plan::{PLAN_VERSION, Plan, PlanError};
use crate::bugs::{BugError, BugId, BugMode, Mode};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    pub version: u32,
    /// What the plan caught, in one line (a regression's reason to exist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caught: Option<String>,
    /// The bug of the catalogue whose toggle the mode sets (`14910` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bug: Option<String>,
    /// `buggy`, `fixed` or `purge-before-reset` (one of the bug's modes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expected>,
    pub plan: Plan,
}

/// What a run of the plan must give.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    /// `passed`, `failed` or `stuck`.
    pub outcome: String,
    pub signature: Option<String>,
}

/// Why a plan file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PlanFileError {
    #[error("cannot read the plan file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a plan file: {detail}")]
    Parse { path: String, detail: String },
    #[error("{path}: {source}")]
    Invalid { path: String, source: PlanError },
    #[error("{path}: {source}")]
    Bug { path: String, source: BugError },
}

impl PlanFile {
    pub fn new(plan: Plan, run: BugMode) -> Self {
        Self {
            version: PLAN_VERSION,
            caught: None,
            bug: Some(run.bug().as_str().to_string()),
            mode: Some(run.mode().as_str().to_string()),
            expect: None,
            plan,
        }
    }

    /// Read and check a plan file (or a bare plan).
    pub fn load(path: &Path) -> Result<Self, PlanFileError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| PlanFileError::Read {
            path: shown.clone(),
            source,
        })?;
        let file = match serde_json::from_str::<PlanFile>(&text) {
            Ok(f) => f,
            Err(wrapped) => match serde_json::from_str::<Plan>(&text) {
                Ok(plan) => PlanFile {
                    version: plan.version,
                    caught: None,
                    bug: None,
                    mode: None,
                    expect: None,
                    plan,
                },
                Err(_) => {
                    return Err(PlanFileError::Parse {
                        path: shown,
                        detail: wrapped.to_string(),
                    });
                }
            },
        };
        if file.version != PLAN_VERSION {
            let source = PlanError::Version {
                found: file.version,
            };
            return Err(PlanFileError::Invalid {
                path: shown,
                source,
            });
        }
        file.plan
            .validate()
            .map_err(|source| PlanFileError::Invalid {
                path: shown.clone(),
                source,
            })?;
        file.run(None).map_err(|source| PlanFileError::Bug {
            path: shown,
            source,
        })?;
        Ok(file)
    }

    /// The file's bug (`14910` unless it names another).
    pub fn bug(&self) -> Result<BugId, BugError> {
        self.bug.as_deref().map_or(Ok(BugId::Rw14910), str::parse)
    }

    /// The file's mode, if it names one.
    pub fn mode(&self) -> Result<Option<Mode>, BugError> {
        self.mode.as_deref().map(str::parse).transpose()
    }

    /// What a run of the file is of: its bug, in `mode` if given, else in the file's mode, else `fixed`.
    pub fn run(&self, mode: Option<Mode>) -> Result<BugMode, BugError> {
        let mode = match mode {
            Some(m) => m,
            None => self.mode()?.unwrap_or(Mode::Fixed),
        };
        BugMode::new(self.bug()?, mode)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a plan file serializes")
    }
}
