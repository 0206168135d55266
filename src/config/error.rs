//! Configuration errors and warnings. Each names `file:line:column`, the offending value and what
//! was expected; `Display` starts with the location so editors can jump to it.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::cpuset::{CpuSet, CpuSetError};
use crate::devices::QueuePatternError;

use super::glob::GlobError;

/// A position in a config file; `line` and `column` count from 1, columns in characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl Location {
    /// The location of byte `offset` in `text` (clamped to the text, snapped back to a character).
    /// Scans the text: for many locations in one file use [`LineIndex`].
    pub fn at(path: &std::path::Path, text: &str, offset: usize) -> Location {
        LineIndex::new(text).locate(path, text, offset)
    }
}

/// Where each line of a text starts, computed once, so that finding a location costs a binary
/// search and the length of one line: validating a file is linear in its size however many
/// values it reports on.
#[derive(Debug, Clone)]
pub(crate) struct LineIndex {
    /// Byte offset of the start of each line, ascending; the first is 0.
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        LineIndex { starts }
    }

    /// The location of byte `offset` of `text` (the text this index was built from), clamped to
    /// the text and snapped back to a character boundary.
    pub(crate) fn locate(&self, path: &std::path::Path, text: &str, offset: usize) -> Location {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        let column = text[start..offset].chars().count() + 1;
        Location { path: path.to_owned(), line, column }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.path.display(), self.line, self.column)
    }
}

/// Everything that makes a configuration unusable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: cannot read config file: {source}", .path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{at}: byte {byte:#04x} is not UTF-8; expected a UTF-8 text file")]
    NotUtf8 { at: Location, byte: u8 },
    #[error("{}: cannot list drop-in directory: {source}", .dir.display())]
    ListDir { dir: PathBuf, source: io::Error },
    /// TOML syntax, unknown keys, wrong value types and unknown names, as the TOML parser reports
    /// them (its message quotes the value or key and lists what is expected).
    #[error("{at}: {message}")]
    Schema { at: Location, message: String },
    #[error("{at}: {key}: {source}")]
    CpuList { at: Location, key: &'static str, source: CpuSetError },
    #[error("{at}: {key} = {value:?} is not a valid duration; expected {expected}")]
    Duration { at: Location, key: &'static str, value: String, expected: String },
    #[error("{at}: match.{key} = {value:?} is not a valid glob pattern: {source}")]
    Glob { at: Location, key: String, value: String, source: GlobError },
    #[error("{at}: strategy = \"pin\" without cpus; expected `cpus = \"...\"` in the same rule (the CPUs to pin to)")]
    PinWithoutCpus { at: Location },
    #[error(
        "{at}: cpus = {cpus:?} leaves no CPU once {excluded} (exclude_cpus and global banned_cpus) are removed; expected at least one allowed CPU"
    )]
    EmptyAllowedSet { at: Location, cpus: String, excluded: CpuSet },
    #[error("{at}: admin_cpus = {value:?} contains {overlap}, which the same rule excludes; expected CPUs outside exclude_cpus")]
    AdminCpusExcluded { at: Location, value: String, overlap: CpuSet },
    #[error("{at}: queue_pattern = {value:?} {source}")]
    QueuePattern { at: Location, value: String, source: QueuePatternError },
    #[error(
        "{at}: {key} = {value:?}; expected an absolute path without . or .. components, of a file ending in .prom (node_exporter's textfile collector reads only *.prom), or \"\" for no metrics"
    )]
    MetricsFile { at: Location, key: &'static str, value: String },
    #[error(
        "{at}: {key} = {value:?}; expected an absolute path of a file without . or .. components (the kubelet's is /var/lib/kubelet/cpu_manager_state), or \"\" for none"
    )]
    KubeletState { at: Location, key: &'static str, value: String },
    #[error("{at}: {key} = {value:?}; expected an absolute path without . or .. components (the runtime's NRI socket, below --root)")]
    NriSocket { at: Location, key: &'static str, value: String },
    #[error("{at}: node = {node}: no kernel has a node {node}; expected a node id from 0 to {}", max - 1)]
    NodeBeyondKernel { at: Location, node: u32, max: u32 },
    #[error("{at}: {key} = {value}: expected {expected}")]
    OutOfRange { at: Location, key: &'static str, value: String, expected: String },
    #[error("{at}: queues_per_cpu = 0; expected an integer of at least 1")]
    ZeroQueuesPerCpu { at: Location },
    #[error(
        "{at}: this [[device]] rule has {what} match table; expected at least one of pci, driver, interface, class, nvme_model, nvme_serial, property.<KEY> (write pci = \"*\" to match every device)"
    )]
    EmptyMatch { at: Location, what: &'static str },
}

impl ConfigError {
    /// Where in which file the problem is, when it is inside a file.
    pub fn location(&self) -> Option<&Location> {
        match self {
            ConfigError::Read { .. } | ConfigError::ListDir { .. } => None,
            ConfigError::NotUtf8 { at, .. }
            | ConfigError::Schema { at, .. }
            | ConfigError::CpuList { at, .. }
            | ConfigError::Duration { at, .. }
            | ConfigError::Glob { at, .. }
            | ConfigError::PinWithoutCpus { at }
            | ConfigError::EmptyAllowedSet { at, .. }
            | ConfigError::AdminCpusExcluded { at, .. }
            | ConfigError::ZeroQueuesPerCpu { at }
            | ConfigError::OutOfRange { at, .. }
            | ConfigError::MetricsFile { at, .. }
            | ConfigError::KubeletState { at, .. }
            | ConfigError::NriSocket { at, .. }
            | ConfigError::NodeBeyondKernel { at, .. }
            | ConfigError::QueuePattern { at, .. }
            | ConfigError::EmptyMatch { at, .. } => Some(at),
        }
    }
}

/// Every error of a configuration that cannot be used, in file order. The one error type the
/// CLI and the daemon report a rejected configuration with.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration:\n{}", .0.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n"))]
pub struct ConfigErrors(pub Vec<ConfigError>);

/// Things that are legal but probably not what the author meant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigWarning {
    #[error("{at}: warning: this [[device]] rule sets nothing (no strategy, cpus, exclude_cpus, admin_cpus, node, order, queues_per_cpu, queue_pattern, spill, guard or allow_isolated)")]
    RuleSetsNothing { at: Location },
    #[error("{at}: warning: {key} has no effect here: {why}")]
    SettingIgnored { at: Location, key: &'static str, why: &'static str },
    /// A CPU list naming CPUs this machine cannot have: cut to the machine (`instead` says what
    /// is left, or the fallback when nothing is).
    #[error("{at}: warning: {key} = {value:?} names CPU(s) {beyond} this machine does not have (its possible CPUs: {possible}); {instead}")]
    CpusBeyondMachine {
        at: Location,
        key: &'static str,
        value: String,
        beyond: CpuSet,
        possible: CpuSet,
        instead: String,
    },
    /// `banned_cpus` bans every CPU this machine has: void here.
    #[error("{at}: warning: banned_cpus = {value:?} bans every CPU of this machine ({possible}); the ban is ignored on this machine")]
    EverythingBanned { at: Location, value: String, possible: CpuSet },
    /// A node id this machine does not have: the device's own node is used.
    #[error("{at}: warning: node = {node}: this machine has no node {node} (its nodes: {nodes}); devices the rule matches keep their own node")]
    NodeNotOnMachine { at: Location, node: u32, nodes: String },
}

impl ConfigWarning {
    pub fn location(&self) -> &Location {
        match self {
            ConfigWarning::RuleSetsNothing { at }
            | ConfigWarning::SettingIgnored { at, .. }
            | ConfigWarning::CpusBeyondMachine { at, .. }
            | ConfigWarning::EverythingBanned { at, .. }
            | ConfigWarning::NodeNotOnMachine { at, .. } => at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn location_counts_lines_and_characters_from_one() {
        let text = "a = 1\n# é ü\nb = \"x\"\n";
        let p = Path::new("f.toml");
        let at = |off| {
            let l = Location::at(p, text, off);
            (l.line, l.column)
        };
        assert_eq!(at(0), (1, 1));
        assert_eq!(at(4), (1, 5));
        assert_eq!(at(6), (2, 1));
        // "# é ü": 'ü' starts at byte 6+5 = 11 and is the 5th character of the line.
        assert_eq!(at(11), (2, 5));
        // Inside a multi-byte character: snapped back to its start.
        assert_eq!(at(12), (2, 5));
        assert_eq!(at(text.find('b').unwrap()), (3, 1));
        assert_eq!(at(10_000), (4, 1));
        assert_eq!(Location::at(p, text, 4).to_string(), "f.toml:1:5");
    }
}
