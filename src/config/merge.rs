//! Merging configuration files already read: each validated, `[global]` layered key by key,
//! rules appended, then the checks that need every file (a ban of every CPU, a rule left with no
//! CPU). Pure: `load.rs` reads the files.

use std::path::PathBuf;

use super::error::{ConfigError, ConfigWarning};
use super::validate::{validate_file, FileLayer, GlobalLayer};
use super::{BalanceKnobs, Config, Global, MachineShape};

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
        napi_threads: layer.napi_threads.unwrap_or(d.napi_threads),
        balance: layer.balance.unwrap_or(d.balance),
        balance_knobs: BalanceKnobs {
            interval: layer.balance_interval.unwrap_or(d.balance_knobs.interval),
            hold: layer.balance_hold.unwrap_or(d.balance_knobs.hold),
            moves_per_minute: layer.balance_moves_per_minute.unwrap_or(d.balance_knobs.moves_per_minute),
        },
        guard: layer.guard.unwrap_or(d.guard),
        napi: layer.napi,
        irqbalance_socket: layer.irqbalance_socket.unwrap_or(d.irqbalance_socket),
        kubelet_cpu_manager_state: match layer.kubelet_cpu_manager_state {
            Some(path) if path.as_os_str().is_empty() => None,
            Some(path) => Some(path),
            None => d.kubelet_cpu_manager_state,
        },
        nri: layer.nri.unwrap_or(d.nri),
        nri_socket: layer.nri_socket.unwrap_or(d.nri_socket),
        nri_exclusive_cpus: layer.nri_exclusive_cpus.unwrap_or(d.nri_exclusive_cpus),
    }
}
