//! The commands: each reads what it needs through a [`Root`](crate::sysfs::Root) and returns
//! the text to print. `main.rs` turns their errors into messages and exit codes.

pub mod args;
mod daemon;
mod inspect;
mod migrate;
mod ops;
mod reload;
mod report;

pub use daemon::{run, status};
pub use inspect::{spread_groups, spread_numa, topology};
pub use migrate::import_irqbalance;
pub use ops::{apply, check_config, config_paths, plan, snapshot, Outcome, PlanView, EXIT_CHANGES_PENDING};
pub use reload::{reload, reload_recorded};
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
    /// More groups than any machine has CPUs: every group past the CPU count would be empty.
    #[error("--groups {0}: expected at most {max} groups (the most CPUs a machine can have)", max = crate::cpuset::MAX_CPUS)]
    TooManyGroups(usize),
    /// `--root DIR` that does not hold a sysfs CPU directory.
    #[error("--root {}: {} is not a directory; expected the root of a Linux system or of a snapshot (irqwise snapshot OUT)", .root.display(), .cpu_dir.display())]
    NotARoot { root: std::path::PathBuf, cpu_dir: std::path::PathBuf },
    /// `--config DIR` that is not a directory.
    #[error("--config {}: not a directory; expected a directory holding etc/irqwise/irqwise.toml and the conf.d directories", .0.display())]
    NotAConfigDir(std::path::PathBuf),
    #[error("{0}")]
    Failed(String),
    /// A combination of options that cannot work here.
    #[error("{0}")]
    Usage(String),
    /// The configuration is invalid: `reload` did not signal the daemon, or the daemon kept
    /// its previous configuration.
    #[error("{0}")]
    ConfigRejected(String),
}

/// Fails unless `root` holds `sys/devices/system/cpu`.
pub fn require_root(root: &crate::sysfs::Root) -> Result<(), CliError> {
    let rel = "sys/devices/system/cpu";
    if root.is_dir(rel) {
        return Ok(());
    }
    Err(CliError::NotARoot { root: root.base().to_path_buf(), cpu_dir: root.path(rel) })
}

/// Fails unless `dir` is a directory.
pub fn require_config_dir(dir: &std::path::Path) -> Result<(), CliError> {
    if dir.is_dir() {
        return Ok(());
    }
    Err(CliError::NotAConfigDir(dir.to_path_buf()))
}

impl CliError {
    /// 2 for usage and configuration errors, 1 for everything the system did.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::NoSuchNode { .. }
            | CliError::ZeroGroups(_)
            | CliError::TooManyGroups(_)
            | CliError::NotARoot { .. }
            | CliError::NotAConfigDir(_)
            | CliError::KernelRules(KernelRulesError::Explicit(_))
            | CliError::Usage(_)
            | CliError::Engine(EngineError::Config(_))
            | CliError::ConfigRejected(_) => 2,
            CliError::Topology(_) | CliError::Engine(_) | CliError::KernelRules(_) | CliError::Failed(_) => 1,
        }
    }
}

pub use crate::JSON_SCHEMA;

/// A JSON document with `"schema"` first and `value`'s own keys after it.
#[derive(serde::Serialize)]
struct Versioned<'a, T: serde::Serialize> {
    schema: u32,
    #[serde(flatten)]
    inner: &'a T,
}

/// `value` (a struct or object) as pretty JSON with the top-level `"schema": 1`, and a newline.
pub(crate) fn to_json_text(value: &impl serde::Serialize) -> String {
    let doc = Versioned { schema: JSON_SCHEMA, inner: value };
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
