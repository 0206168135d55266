//! The commands: each reads what it needs through a [`Root`](crate::sysfs::Root) and returns
//! the text to print. `main.rs` turns their errors into messages and exit codes.

pub mod args;
mod inspect;
mod ops;

pub use inspect::{kernel_version, spread_groups, spread_numa, topology};
pub use ops::{apply, check_config, config_paths, plan, snapshot, Outcome};

use crate::config::ConfigError;
use crate::engine::EngineError;
use crate::strategy::KernelVersionError;
use crate::topology::TopologyError;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// `--kernel X.Y` that is not a kernel version.
    #[error("--kernel: {0}")]
    KernelVersion(#[from] KernelVersionError),
    /// The root's kernel release is not a kernel version.
    #[error("{}: {source}; pass --kernel X.Y to choose the rules", .path.display())]
    OsRelease { path: std::path::PathBuf, source: KernelVersionError },
    #[error("invalid configuration:\n{}", .0.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n"))]
    Config(Vec<ConfigError>),
    #[error("--node {node}: no such NUMA node (known nodes: {known}; -1 means no node)")]
    NoSuchNode { node: i64, known: String },
    #[error("--groups {0}: expected at least 1 group")]
    ZeroGroups(usize),
    #[error("no kernel version: {root}/proc/sys/kernel/osrelease is absent and so is the running kernel's; pass --kernel X.Y")]
    UnknownKernel { root: String },
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    /// 2 for usage and configuration errors, 1 for everything the system did.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::NoSuchNode { .. }
            | CliError::ZeroGroups(_)
            | CliError::KernelVersion(_)
            | CliError::UnknownKernel { .. }
            | CliError::Config(_) => 2,
            CliError::Topology(_) | CliError::Engine(_) | CliError::OsRelease { .. } | CliError::Failed(_) => 1,
        }
    }
}

pub(crate) fn to_json_text(value: &impl serde::Serialize) -> String {
    let mut s = serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
