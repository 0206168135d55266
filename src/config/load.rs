//! Finding the config files (main file, then masked and ordered drop-ins), reading them, and
//! merging what each contributes.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use crate::sysfs::read_regular_file;

use super::error::{ConfigError, ConfigWarning, Location};
use super::validate::{validate_file, FileLayer, GlobalLayer};
use super::{Config, Global, MachineShape};

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

/// A drop-in hidden by one of the same name in a higher-precedence directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Masked {
    pub path: PathBuf,
    pub by: PathBuf,
}

/// The outcome of `irqwise check-config`.
#[derive(Debug)]
pub struct CheckReport {
    /// The merged configuration; `None` when there is any error.
    pub config: Option<Config>,
    /// Every error in every file, in file order.
    pub errors: Vec<ConfigError>,
    pub warnings: Vec<ConfigWarning>,
    /// Files read, in the order they apply.
    pub sources: Vec<PathBuf>,
    pub masked: Vec<Masked>,
}

impl CheckReport {
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }
}

/// A file's path and its text, as handed to [`parse_files`].
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub path: PathBuf,
    pub text: String,
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
pub const CONFIG_FILE_LIMIT: u64 = 16 << 20;

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

/// The `*.toml` drop-ins that apply, in lexical order of file name, and those masked. A missing
/// directory contributes nothing.
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
            if Path::new(&name).extension().is_none_or(|ext| ext != "toml") || path.is_dir() {
                continue;
            }
            if let Some(lower) = by_name.insert(name, path.clone()) {
                masked.push(Masked { path: lower, by: path });
            }
        }
    }
    (by_name.into_values().collect(), masked)
}

/// Validates and merges already-read files, in the given order. Pure.
pub fn parse_files(files: &[SourceFile], machine: &MachineShape) -> CheckReport {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut global = GlobalLayer::default();
    let mut rules = Vec::new();
    for file in files {
        let (layer, mut errs, mut warns): (FileLayer, _, _) = validate_file(&file.path, &file.text, machine);
        errors.append(&mut errs);
        warnings.append(&mut warns);
        global.overlay(layer.global);
        rules.extend(layer.rules);
    }

    // Banning every CPU this machine has would leave devices nothing: on this machine the ban
    // is void (other machines of a fleet may have more CPUs).
    if let Some((set, at, value)) = &global.banned_cpus {
        if !machine.possible.is_empty() && machine.possible.is_subset(set) {
            warnings.push(ConfigWarning::EverythingBanned {
                at: at.clone(),
                value: value.clone(),
                possible: machine.possible.clone(),
            });
            global.banned_cpus = None;
        }
    }
    let banned = global.banned_cpus.as_ref().map(|(set, _, _)| set.clone()).unwrap_or_default();
    for parsed in &rules {
        let (Some(cpus), Some((at, value))) = (&parsed.raw_cpus, &parsed.cpus_at) else { continue };
        let excluded = parsed.raw_exclude.as_ref().map_or(banned.clone(), |e| e.union(&banned));
        if cpus.is_subset(&excluded) {
            errors.push(ConfigError::EmptyAllowedSet { at: at.clone(), cpus: value.clone(), excluded });
        }
    }
    warnings.sort_by(|a, b| a.location().cmp(b.location()));

    let sources: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
    let config = errors.is_empty().then(|| Config {
        global: finish_global(global),
        rules: rules.into_iter().map(|p| p.rule).collect(),
        sources: sources.clone(),
    });
    CheckReport { config, errors, warnings, sources, masked: Vec::new() }
}

/// Fills unset `[global]` keys with their defaults.
fn finish_global(layer: GlobalLayer) -> Global {
    let d = Global::default();
    Global {
        banned_cpus: layer.banned_cpus.map_or(d.banned_cpus, |(set, _, _)| set),
        respect_isolation: layer.respect_isolation.unwrap_or(d.respect_isolation),
        reconcile_interval: layer.reconcile_interval.unwrap_or(d.reconcile_interval),
        debounce: layer.debounce.unwrap_or(d.debounce),
        restore_on_exit: layer.restore_on_exit.unwrap_or(d.restore_on_exit),
        log_format: layer.log_format.unwrap_or(d.log_format),
        xps: layer.xps.unwrap_or(d.xps),
        import_irqbalance_banned: layer.import_irqbalance_banned.unwrap_or(d.import_irqbalance_banned),
        on_drift: layer.on_drift.unwrap_or(d.on_drift),
        metrics_file: layer.metrics_file.unwrap_or(d.metrics_file),
        spill: layer.spill.unwrap_or(d.spill),
        guard: layer.guard.unwrap_or(d.guard),
    }
}
