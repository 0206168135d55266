//! The commands, one file each, named after the command (`check-config` in `check_config.rs`):
//! each reads what it needs through a [`Root`](crate::sysfs::Root) and returns an [`Outcome`],
//! the text to print and the exit code. `main.rs` turns their errors into messages and exit
//! codes.

mod advise;
mod apply;
pub mod args;
mod check_config;
mod claim;
mod claims;
mod diff;
mod import_irqbalance;
pub mod output;
mod plan;
mod reload;
mod report;
mod run;
mod snapshot;
mod spread;
mod status;
mod topology;

pub use advise::advise;
pub use apply::apply;
pub use check_config::check_config;
pub use claim::{claim, release};
pub use claims::claims;
pub use diff::diff_roots;
pub use import_irqbalance::import_irqbalance;
pub use plan::{plan, PlanView};
pub use reload::reload;
pub use report::{report, ReportRequest};
pub use run::run;
pub use snapshot::snapshot;
pub use spread::{spread_groups, spread_numa};
pub use status::status;
pub use topology::topology;

use std::path::Path;

use crate::config::{ConfigPaths, LoadError};
use crate::sample::kernel_release::KernelRulesError;
use crate::sample::reader::ReadError;
use crate::topology::discover::TopologyError;

/// Text to print on stdout, problems to print on stderr, and the exit code they go with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub text: String,
    pub stderr: String,
    pub exit: u8,
}

impl Outcome {
    /// `text` on stdout, exit 0.
    pub fn ok(text: String) -> Outcome {
        Outcome { text, ..Outcome::default() }
    }

    /// `text` on stdout, exit `exit`.
    pub(crate) fn with_exit(text: String, exit: u8) -> Outcome {
        Outcome { text, exit, ..Outcome::default() }
    }
}

/// When a wait of `timeout` from now ends; `None` when it never does (a timeout past what
/// `Instant` can count, `--timeout 18446744073709551615`, waits as long as it takes).
pub(crate) fn deadline_after(timeout: std::time::Duration) -> Option<std::time::Instant> {
    std::time::Instant::now().checked_add(timeout)
}

/// Whether the wait that ends at `deadline` is over.
pub(crate) fn is_past(deadline: Option<std::time::Instant>) -> bool {
    deadline.is_some_and(|d| std::time::Instant::now() >= d)
}

/// The queues the running daemon's load refinement keeps away from home (none without a
/// running daemon), so a command plans what the daemon planned.
pub(crate) fn daemon_moves(root: &crate::sysfs::Root) -> std::collections::BTreeMap<u32, crate::plan::refine::Moved> {
    claim::running_daemon(root)
        .map(|s| s.away_from_home.into_owned().into_iter().map(|m| (m.irq, m)).collect())
        .unwrap_or_default()
}

/// `--config DIR` or the system's directories.
pub fn config_paths(config_dir: Option<&Path>) -> ConfigPaths {
    config_dir.map_or_else(ConfigPaths::system, ConfigPaths::under)
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error(transparent)]
    Config(#[from] LoadError),
    #[error(transparent)]
    Read(#[from] ReadError),
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
    /// Another daemon holds the root's instance lock.
    #[error("{0}")]
    AlreadyRunning(String),
    /// The configuration is invalid: `reload` did not signal the daemon, or the daemon kept
    /// its previous configuration.
    #[error("{0}")]
    ConfigRejected(String),
}

/// Exit code of `run` when another daemon holds the root's instance lock.
pub const EXIT_ALREADY_RUNNING: u8 = 5;

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
    /// 2 for usage and configuration errors, [`EXIT_ALREADY_RUNNING`] when another daemon runs on
    /// the root, 1 for everything the system did.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::AlreadyRunning(_) => EXIT_ALREADY_RUNNING,
            CliError::NoSuchNode { .. }
            | CliError::ZeroGroups(_)
            | CliError::TooManyGroups(_)
            | CliError::NotARoot { .. }
            | CliError::NotAConfigDir(_)
            | CliError::KernelRules(KernelRulesError::Explicit(_))
            | CliError::Usage(_)
            | CliError::Config(LoadError::Invalid(_))
            | CliError::ConfigRejected(_) => 2,
            CliError::Topology(_)
            | CliError::Config(LoadError::Machine(_))
            | CliError::Read(_)
            | CliError::KernelRules(_)
            | CliError::Failed(_) => 1,
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

/// `value` (a struct or object) as pretty JSON with the top-level `"schema": 2`, and a newline:
/// the one JSON writer of every `--json` command. Guarantees valid JSON whatever bytes the
/// machine's names hold, with no control character but its newlines (DEL and C1 characters are
/// `\u` escapes), so the terminal-safe escaping of every output leaves it as it is.
pub(crate) fn to_json_text(value: &impl serde::Serialize) -> String {
    let doc = Versioned { schema: JSON_SCHEMA, inner: value };
    let text = serde_json::to_string_pretty(&doc)
        .unwrap_or_else(|e| serde_json::json!({ "schema": JSON_SCHEMA, "error": e.to_string() }).to_string());
    let mut s = crate::text::json_escaped_controls(&text).into_owned();
    s.push('\n');
    s
}
