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
    pub fn at(path: &std::path::Path, text: &str, offset: usize) -> Location {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
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
    #[error("{}: cannot list drop-in directory: {source}", .dir.display())]
    ListDir { dir: PathBuf, source: io::Error },
    /// TOML syntax, unknown keys, wrong value types and unknown names, as the TOML parser reports
    /// them (its message quotes the value or key and lists what is expected).
    #[error("{at}: {message}")]
    Schema { at: Location, message: String },
    #[error("{at}: {key}: {source}")]
    CpuList { at: Location, key: &'static str, source: CpuSetError },
    #[error(
        "{at}: {key} = {value:?} names CPU(s) {beyond} that this machine cannot have; expected CPUs within the possible set {possible}"
    )]
    CpusBeyondMachine { at: Location, key: &'static str, value: String, beyond: CpuSet, possible: CpuSet },
    #[error("{at}: {key} = {value:?} is not a valid duration; expected {expected}")]
    Duration { at: Location, key: &'static str, value: String, expected: &'static str },
    #[error("{at}: match.{key} = {value:?} is not a valid glob pattern: {source}")]
    Glob { at: Location, key: String, value: String, source: GlobError },
    #[error("{at}: strategy = \"pin\" without cpus; expected `cpus = \"...\"` in the same rule (the CPUs to pin to)")]
    PinWithoutCpus { at: Location },
    #[error(
        "{at}: cpus = {cpus:?} leaves no CPU once {excluded} (exclude_cpus and global banned_cpus) are removed; expected at least one allowed CPU"
    )]
    EmptyAllowedSet { at: Location, cpus: String, excluded: CpuSet },
    #[error(
        "{at}: banned_cpus = {value:?} bans every possible CPU ({possible}); expected at least one CPU left for device IRQs"
    )]
    EverythingBanned { at: Location, value: String, possible: CpuSet },
    #[error("{at}: admin_cpus = {value:?} contains {overlap}, which the same rule excludes; expected CPUs outside exclude_cpus")]
    AdminCpusExcluded { at: Location, value: String, overlap: CpuSet },
    #[error("{at}: queue_pattern = {value:?} {source}")]
    QueuePattern { at: Location, value: String, source: QueuePatternError },
    #[error(
        "{at}: metrics_file = {value:?}; expected an absolute path of a file ending in .prom (node_exporter's textfile collector reads only *.prom), or \"\" for no metrics"
    )]
    MetricsFile { at: Location, value: String },
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
            ConfigError::Schema { at, .. }
            | ConfigError::CpuList { at, .. }
            | ConfigError::CpusBeyondMachine { at, .. }
            | ConfigError::Duration { at, .. }
            | ConfigError::Glob { at, .. }
            | ConfigError::PinWithoutCpus { at }
            | ConfigError::EmptyAllowedSet { at, .. }
            | ConfigError::EverythingBanned { at, .. }
            | ConfigError::AdminCpusExcluded { at, .. }
            | ConfigError::ZeroQueuesPerCpu { at }
            | ConfigError::MetricsFile { at, .. }
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
    #[error("{at}: warning: this [[device]] rule sets nothing (no strategy, cpus, exclude_cpus, admin_cpus, node, order, queues_per_cpu or queue_pattern)")]
    RuleSetsNothing { at: Location },
    #[error("{at}: warning: {key} has no effect here: {why}")]
    SettingIgnored { at: Location, key: &'static str, why: &'static str },
}

impl ConfigWarning {
    pub fn location(&self) -> &Location {
        match self {
            ConfigWarning::RuleSetsNothing { at } | ConfigWarning::SettingIgnored { at, .. } => at,
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
