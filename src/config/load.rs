//! Finding the config files (main file, then masked and ordered drop-ins) and reading them, and
//! loading the configuration for the machine under a root. The only I/O of the configuration:
//! merging the files read is [`super::merge`].

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};

use crate::sysfs::read_regular_file;

use super::error::{ConfigError, ConfigErrors, ConfigWarning, Location};
use super::merge::{parse_files, CheckReport, Masked, SourceFile};
use super::{Config, MachineShape};
use crate::sysfs::Root;
use crate::topology::discover::read_node_ids;
use crate::topology::discover::read_possible_cpus;
use crate::topology::discover::TopologyError;

/// Where the configuration lives. Drop-in directories are listed lowest precedence first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigPaths {
    /// The main file; absent means defaults.
    pub main: PathBuf,
    /// `usr/lib`, `run`, `etc` drop-in directories, in that order: a file in a later directory
    /// masks one of the same name in an earlier directory.
    pub dropin_dirs: Vec<PathBuf>,
}

impl ConfigPaths {
    /// The real locations: `/etc/irqwise/irqwise.toml` and the three `conf.d` directories.
    pub fn system() -> ConfigPaths {
        ConfigPaths::under("/")
    }

    /// The same layout under `dir` (`--config DIR`): `DIR/etc/irqwise/irqwise.toml`,
    /// `DIR/usr/lib/irqwise/conf.d`, `DIR/run/irqwise/conf.d`, `DIR/etc/irqwise/conf.d`.
    pub fn under(dir: impl AsRef<Path>) -> ConfigPaths {
        let dir = dir.as_ref();
        ConfigPaths {
            main: dir.join("etc/irqwise/irqwise.toml"),
            dropin_dirs: vec![
                dir.join("usr/lib/irqwise/conf.d"),
                dir.join("run/irqwise/conf.d"),
                dir.join("etc/irqwise/conf.d"),
            ],
        }
    }
}

/// Reads and validates the configuration; every error of every file on failure. `possible` is
/// the host's possible CPUs (`/sys/devices/system/cpu/possible`): CPU lists naming others are
/// errors.
pub fn load(paths: &ConfigPaths, machine: &MachineShape) -> Result<Config, Vec<ConfigError>> {
    let report = check(paths, machine);
    report.config.ok_or(report.errors)
}

/// Reads and validates the configuration, keeping warnings and masking information.
pub fn check(paths: &ConfigPaths, machine: &MachineShape) -> CheckReport {
    let mut errors = Vec::new();
    let (dropins, masked) = find_dropins(&paths.dropin_dirs, &mut errors);
    let mut files = Vec::new();
    match read_config_file(&paths.main) {
        Ok(text) => files.push(SourceFile { path: paths.main.clone(), text }),
        Err(ConfigError::Read { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
        Err(e) => errors.push(e),
    }
    files.extend(read_all(&dropins, &mut errors));
    let mut report = parse_files(&files, machine);
    errors.append(&mut report.errors);
    report.errors = errors;
    if !report.errors.is_empty() {
        report.config = None;
    }
    report.masked = masked;
    report
}

/// Validates exactly these files, applied in the given order (`irqwise check-config FILE...`).
pub fn check_files(files: &[PathBuf], machine: &MachineShape) -> CheckReport {
    let mut errors = Vec::new();
    let sources = read_all(files, &mut errors);
    let mut report = parse_files(&sources, machine);
    errors.append(&mut report.errors);
    report.errors = errors;
    if !report.errors.is_empty() {
        report.config = None;
    }
    report
}

fn read_all(paths: &[PathBuf], errors: &mut Vec<ConfigError>) -> Vec<SourceFile> {
    let mut files = Vec::new();
    for path in paths {
        match read_config_file(path) {
            Ok(text) => files.push(SourceFile { path: path.clone(), text }),
            Err(e) => errors.push(e),
        }
    }
    files
}

/// The most bytes a config file may hold: generated fleet configs with tens of thousands of
/// rules stay far below it, and a link to an endless device stops here.
pub(crate) const CONFIG_FILE_LIMIT: u64 = 16 << 20;

/// A config file's text: a regular file (a FIFO is refused without blocking), at most
/// [`CONFIG_FILE_LIMIT`] bytes, valid UTF-8 (else the error names the line and column of the
/// first bad byte).
#[allow(clippy::result_large_err)] // read once per file; ConfigError is the module's one error type
fn read_config_file(path: &Path) -> Result<String, ConfigError> {
    let bytes = read_regular_file(path, CONFIG_FILE_LIMIT)
        .map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
    String::from_utf8(bytes).map_err(|e| {
        let good = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let text = std::str::from_utf8(&bytes[..good]).unwrap_or_default();
        ConfigError::NotUtf8 { at: Location::at(path, text, good), byte: bytes[good] }
    })
}

/// Whether a file of this name in a drop-in directory is read: `*.toml` (`.toml` alone is not;
/// a name starting with a dot is read like any other). The one rule of the loader and of
/// `run --watch-config`'s watch.
pub fn is_dropin_name(name: &OsStr) -> bool {
    Path::new(name).extension().is_some_and(|ext| ext == "toml")
}

/// The drop-ins that apply ([`is_dropin_name`], not a directory), in lexical order of file
/// name, and those masked. A missing directory contributes nothing.
fn find_dropins(dirs: &[PathBuf], errors: &mut Vec<ConfigError>) -> (Vec<PathBuf>, Vec<Masked>) {
    let mut by_name: BTreeMap<OsString, PathBuf> = BTreeMap::new();
    let mut masked = Vec::new();
    for dir in dirs {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => {
                errors.push(ConfigError::ListDir { dir: dir.clone(), source });
                continue;
            }
        };
        let mut names = Vec::new();
        for entry in entries {
            match entry {
                Ok(entry) => names.push(entry.file_name()),
                Err(source) => errors.push(ConfigError::ListDir { dir: dir.clone(), source }),
            }
        }
        for name in names {
            let path = dir.join(&name);
            if !is_dropin_name(&name) || path.is_dir() {
                continue;
            }
            if let Some(lower) = by_name.insert(name, path.clone()) {
                masked.push(Masked { path: lower, by: path });
            }
        }
    }
    (by_name.into_values().collect(), masked)
}

/// The configuration could not be loaded for a machine.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The machine's possible CPUs or nodes, which the configuration is validated against,
    /// cannot be read.
    #[error(transparent)]
    Machine(#[from] TopologyError),
    /// The configuration has errors.
    #[error(transparent)]
    Invalid(#[from] ConfigErrors),
}

/// What a configuration is validated against: `root`'s possible CPUs (the `possible` list, else
/// the `cpuN` directories, as topology discovery reads them) and node ids.
pub(crate) fn machine_shape(root: &Root) -> Result<MachineShape, TopologyError> {
    let nodes = read_node_ids(root)?.into_iter().collect();
    Ok(MachineShape { possible: read_possible_cpus(root)?, nodes: Some(nodes) })
}

/// Loads the configuration at `paths`, validated against `root`'s machine, with its warnings.
/// The one loader of the command line, the daemon's start and its reloads: only errors refuse
/// a configuration.
pub fn load_config_with_warnings(root: &Root, paths: &ConfigPaths) -> Result<(Config, Vec<ConfigWarning>), LoadError> {
    let report = check(paths, &machine_shape(root)?);
    match report.config {
        Some(config) => Ok((config, report.warnings)),
        None => Err(LoadError::Invalid(ConfigErrors(report.errors))),
    }
}

/// [`load_config_with_warnings`] without the warnings.
pub fn load_config(root: &Root, paths: &ConfigPaths) -> Result<Config, LoadError> {
    load_config_with_warnings(root, paths).map(|(c, _)| c)
}
