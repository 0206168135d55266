//! The commands: each reads what it needs through a [`Root`](crate::sysfs::Root) and returns
//! the text to print. `main.rs` turns their errors into messages and exit codes.

pub mod args;
mod daemon;
mod inspect;
mod ops;
mod report;

pub use daemon::{run, status};
pub use inspect::{spread_groups, spread_numa, topology};
pub use ops::{apply, check_config, config_paths, plan, snapshot, Outcome, PlanView, EXIT_CHANGES_PENDING};
pub use report::{report, ReportRequest};

use crate::engine::{EngineError, KernelRulesError};
use crate::topology::TopologyError;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    KernelRules(#[from] KernelRulesError),
    #[error("--node {node}: no such NUMA node (known nodes: {known}; -1 means no node)")]
    NoSuchNode { node: i64, known: String },
    #[error("--groups {0}: expected at least 1 group")]
    ZeroGroups(usize),
    #[error("{0}")]
    Failed(String),
    /// A combination of options that cannot work here.
    #[error("{0}")]
    Usage(String),
}

impl CliError {
    /// 2 for usage and configuration errors, 1 for everything the system did.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::NoSuchNode { .. }
            | CliError::ZeroGroups(_)
            | CliError::KernelRules(KernelRulesError::Explicit(_))
            | CliError::Usage(_)
            | CliError::Engine(EngineError::Config(_)) => 2,
            CliError::Topology(_) | CliError::Engine(_) | CliError::KernelRules(_) | CliError::Failed(_) => 1,
        }
    }
}

pub(crate) fn to_json_text(value: &impl serde::Serialize) -> String {
    let mut s = serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
