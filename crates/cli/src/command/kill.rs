//! The kill choice `slt` and `soak --slt` share: [`KillChoice`], and [`kill_choice!`] that reads it from either
//! command's flags.

use epochlab_simulation::{KillRoles, RunnerEra, SltParams};

use super::CheckError;

/// Which nodes a sqllogictest run kills, with which runner and rates, as given (`slt`, `soak --slt`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KillChoice {
    /// `--kill`: every role, meta among them.
    pub all: bool,
    pub meta: bool,
    pub frontend: bool,
    pub compute: bool,
    pub compactor: bool,
    pub runner: Option<RunnerEra>,
    pub kill_rate: Option<f64>,
    pub background_ddl_rate: Option<f64>,
}

impl KillChoice {
    /// `params` with these kills; a rate or runner without a kill does nothing and is refused.
    pub fn apply(&self, params: SltParams) -> Result<SltParams, CheckError> {
        let roles = match self.all {
            true => KillRoles::ALL,
            false => KillRoles {
                meta: self.meta,
                frontend: self.frontend,
                compute: self.compute,
                compactor: self.compactor,
            },
        };
        let kill = roles.any();
        let given = [
            ("--kill-rate", self.kill_rate.is_some()),
            ("--background-ddl-rate", self.background_ddl_rate.is_some()),
            ("--runner", self.runner.is_some()),
        ];
        if let Some((flag, _)) = given.into_iter().find(|(_, g)| *g && !kill) {
            return Err(CheckError::Pointless {
                flag,
                reason: "needs --kill or a --kill-ROLE flag (RisingWave's runner reads it only when it kills)",
            });
        }
        Ok(SltParams {
            kill,
            kill_roles: roles,
            runner: self.runner.unwrap_or_default(),
            kill_rate: self.kill_rate.unwrap_or(1.0),
            background_ddl_rate: self.background_ddl_rate.unwrap_or(0.0),
            ..params
        })
    }
}

/// The [`KillChoice`] of a parsed `slt` or `soak` command: both name the kill flags alike (`kill`,
/// `kill_meta`, `kill_frontend`, `kill_compute`, `kill_compactor`, `runner`, `kill_rate`, `background_ddl_rate`).
macro_rules! kill_choice {
    ($cmd:expr) => {
        $crate::command::KillChoice {
            all: $cmd.kill,
            meta: $cmd.kill_meta,
            frontend: $cmd.kill_frontend,
            compute: $cmd.kill_compute,
            compactor: $cmd.kill_compactor,
            runner: $cmd.runner,
            kill_rate: $cmd.kill_rate,
            background_ddl_rate: $cmd.background_ddl_rate,
        }
    };
}
pub(crate) use kill_choice;
