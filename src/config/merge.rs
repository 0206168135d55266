//! Merging configuration files already read: each validated, `[global]` layered key by key,
//! rules appended, then the checks that need every file (a ban of every CPU, a rule left with no
//! CPU). Pure: `load.rs` reads the files.

use std::path::PathBuf;

use super::error::{ConfigError, ConfigWarning};
use super::keys::GlobalLayer;
use super::validate::{validate_file, FileLayer};
use super::{Config, MachineShape};

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
    if let Some(ban) = &global.banned_cpus {
        if !machine.possible.is_empty() && machine.possible.is_subset(&ban.set) {
            warnings.push(ConfigWarning::EverythingBanned {
                at: ban.at.clone(),
                value: ban.value.clone(),
                possible: machine.possible.clone(),
            });
            global.banned_cpus = None;
        }
    }
    let banned = global.banned_cpus.as_ref().map(|ban| ban.set.clone()).unwrap_or_default();
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
        global: global.finish(),
        rules: rules.into_iter().map(|p| p.rule).collect(),
        sources: sources.clone(),
    });
    CheckReport { config, errors, warnings, sources, masked: Vec::new() }
}
