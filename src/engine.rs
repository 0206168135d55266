//! One pass: discover the machine, resolve each device's policy, plan, apply. The CLI's
//! `plan`/`apply` and the daemon share these functions, so a daemon pass and a one-shot `apply`
//! always agree; so do their configuration loading and kernel-version choice.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::config::{self, Config, ConfigErrors, ConfigPaths, ConfigWarning, Machine};
use crate::cpuset::CpuSet;
use crate::devices::{discover_devices, udev_properties, Device, DevicesError};
use crate::kernel::{GroupRules, KernelVersion, KernelVersionError};
use crate::plan::{build_plan, Plan, PlanContext};
use crate::policy::{resolve, unmatched_rules, DeviceFacts};
use crate::sysfs::Root;
use crate::topology::{home_topology, memory_file, Topology, TopologyError, TopologyMemory};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error(transparent)]
    Devices(#[from] DevicesError),
    #[error(transparent)]
    Config(#[from] ConfigErrors),
}

/// The kernel release could not be turned into grouping rules.
#[derive(Debug, thiserror::Error)]
pub enum KernelRulesError {
    /// `--kernel X.Y` that is not a kernel version (a usage error).
    #[error("--kernel: {0}")]
    Explicit(KernelVersionError),
    /// The root's kernel release is not a kernel version.
    #[error("{}: {source}; pass --kernel X.Y to choose the rules", .path.display())]
    Release { path: PathBuf, source: KernelVersionError },
}

/// The kernel grouping rules when the release is unknown: those of current kernels.
pub const FALLBACK_KERNEL: KernelVersion = KernelVersion { major: 6, minor: 11 };

/// Where the kernel release is, relative to a root.
const OSRELEASE: &str = "proc/sys/kernel/osrelease";

/// Everything one planning pass saw and decided.
#[derive(Debug)]
pub struct PlannedPass {
    pub topology: Topology,
    pub devices: Vec<Device>,
    pub plan: Plan,
}

/// The machine's possible CPUs, which config CPU lists are validated against, as topology
/// discovery reads them: a root without `cpu/possible` (older kernels, trimmed dumps) gives the
/// `cpuN` directories.
pub fn possible_cpus(root: &Root) -> Result<CpuSet, TopologyError> {
    Topology::discover_possible(root)
}

/// What a configuration is validated against: `root`'s possible CPUs and node ids.
pub fn machine(root: &Root) -> Result<Machine, TopologyError> {
    let nodes = Topology::discover_node_ids(root)?.into_iter().collect();
    Ok(Machine { possible: possible_cpus(root)?, nodes: Some(nodes) })
}

/// Loads the configuration at `paths`, validated against `root`'s machine, with its warnings.
/// The one loader of the CLI, the daemon's start and its reloads: only errors refuse a
/// configuration.
pub fn load_config_with_warnings(
    root: &Root,
    paths: &ConfigPaths,
) -> Result<(Config, Vec<ConfigWarning>), EngineError> {
    let report = config::check(paths, &machine(root)?);
    match report.config {
        Some(config) => Ok((config, report.warnings)),
        None => Err(EngineError::Config(ConfigErrors(report.errors))),
    }
}

/// [`load_config_with_warnings`] without the warnings.
pub fn load_config(root: &Root, paths: &ConfigPaths) -> Result<Config, EngineError> {
    load_config_with_warnings(root, paths).map(|(c, _)| c)
}

/// The kernel version whose rules apply: `explicit` (`--kernel`), else the root's `osrelease`,
/// else [`FALLBACK_KERNEL`] (a capture without it). The one choice of `spread groups` and `plan`:
/// a malformed release is an error here, which `plan` turns into a warning and the fallback.
pub fn kernel_rules(root: &Root, topo: &Topology, explicit: Option<&str>) -> Result<KernelVersion, KernelRulesError> {
    if let Some(text) = explicit {
        return KernelVersion::parse(text).map_err(KernelRulesError::Explicit);
    }
    match &topo.kernel {
        Some(release) => KernelVersion::parse(release)
            .map_err(|source| KernelRulesError::Release { path: root.path(OSRELEASE), source }),
        None => Ok(FALLBACK_KERNEL),
    }
}

/// Grouping rules for a plan, and the warning when the release could not be read as a version.
fn plan_rules(root: &Root, topo: &Topology) -> (GroupRules, Option<String>) {
    match kernel_rules(root, topo, None) {
        Ok(v) => (GroupRules::for_kernel(v), None),
        Err(e) => {
            let release = topo.kernel.as_deref().unwrap_or_default();
            let warning = format!(
                "{}: {release:?} is not a kernel version (expected MAJOR.MINOR...); predicting with the grouping rules of {FALLBACK_KERNEL}",
                match &e {
                    KernelRulesError::Release { path, .. } => path.display().to_string(),
                    KernelRulesError::Explicit(_) => root.path(OSRELEASE).display().to_string(),
                }
            );
            (GroupRules::for_kernel(FALLBACK_KERNEL), Some(warning))
        }
    }
}

/// The grouping rules a plan uses for `topo` (its kernel release, else [`FALLBACK_KERNEL`]).
pub fn group_rules(topo: &Topology) -> GroupRules {
    plan_rules(&Root::default(), topo).0
}

/// Discovers topology and devices under `root` and plans them with `config`. Queue homes use the
/// running daemon's topology memory of this boot when there is one
/// ([`crate::topology::memory_file`]), so the plan is the daemon's while CPUs are offline.
pub fn plan_pass(root: &Root, config: &Config, known_managed: &BTreeSet<u32>) -> Result<PlannedPass, EngineError> {
    let (topology, warnings) = Topology::discover_with_warnings(root)?;
    let mut warnings: Vec<String> = warnings.iter().map(|w| w.to_string()).collect();
    let mut memory = match memory_file::load(root) {
        Ok(m) => m.unwrap_or_default(),
        Err(e) => {
            warnings.push(e.to_string());
            TopologyMemory::default()
        }
    };
    memory.remember(&topology);
    let home = home_topology(&topology, Some(&memory));
    plan_with_topology(root, config, known_managed, topology, Some(&home), warnings)
}

/// Discovers the devices under `root` and plans them on `topology` (just discovered, or the
/// daemon's last good one), its discovery's `warnings` first among the plan's. `home` is the
/// machine with every present CPU online as the daemon remembers it (`None`: derived from
/// `topology` alone).
pub fn plan_with_topology(
    root: &Root,
    config: &Config,
    known_managed: &BTreeSet<u32>,
    topology: Topology,
    home: Option<&Topology>,
    warnings: Vec<String>,
) -> Result<PlannedPass, EngineError> {
    let discovery = discover_devices(root, &topology)?;
    let facts: Vec<DeviceFacts> = discovery
        .devices
        .iter()
        .map(|d| DeviceFacts { properties: udev_properties(root, d), ..DeviceFacts::of(d) })
        .collect();
    let policies: Vec<_> = facts.iter().map(|f| resolve(config, f)).collect();
    let (group_rules, kernel_warning) = plan_rules(root, &topology);
    let ctx = PlanContext {
        topo: &topology,
        home,
        group_rules,
        respect_isolation: config.global.respect_isolation,
        known_managed,
    };
    let mut plan = build_plan(&ctx, &discovery.devices, &policies);
    plan.warnings.splice(0..0, warnings);
    plan.warnings.extend(kernel_warning);
    plan.warnings.extend(discovery.warnings.iter().map(|w| w.to_string()));
    plan.warnings.extend(unmatched_rules(config, &facts).into_iter().map(|r| format!("rule at {r} matches no device")));
    Ok(PlannedPass { topology, devices: discovery.devices, plan })
}
