//! One pass: discover the machine, resolve each device's policy, plan, apply. The CLI's
//! `plan`/`apply` and the daemon share these functions, so a daemon pass and a one-shot `apply`
//! always agree; so do their configuration loading and kernel-version choice.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::choices::StrategyName;
use crate::config::GuardScope;
use crate::config::{self, Config, ConfigErrors, ConfigPaths, ConfigWarning, MachineShape};
use crate::cpuset::CpuSet;
use crate::devices::discover::net_queues::read_net_queues;
use crate::devices::{discover_devices, udev_properties, Device, DeviceClass, DevicesError};
use crate::kernel::{GroupRules, KernelVersion, KernelVersionError};
use crate::plan::guard::{guard, Forbidden, GuardInput};
use crate::plan::xps::{plan_xps, XpsPlan};
use crate::plan::{build_plan, locate_current, Plan, PlanContext};
use crate::policy::{resolve, unmatched_rules, DeviceFacts, Policy};
use crate::strategy::leave::PASSTHROUGH_DRIVERS;
use crate::sysfs::Root;
use crate::topology::isolation::Effect;
use crate::topology::{home_topology, memory_file, Isolation, Topology, TopologyError, TopologyMemory};

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
    /// The topology planned on: every CPU an isolation source isolates counts as `isolated`.
    pub topology: Topology,
    /// Every isolation source found, with where it came from.
    pub isolation: Isolation,
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
pub fn machine(root: &Root) -> Result<MachineShape, TopologyError> {
    let nodes = Topology::discover_node_ids(root)?.into_iter().collect();
    Ok(MachineShape { possible: possible_cpus(root)?, nodes: Some(nodes) })
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
    plan_with_topology(root, config, known_managed, topology, Some(&memory), warnings)
}

/// The CPUs device interrupts must avoid, by source: the global `banned_cpus`, every isolation
/// source the configuration applies (irqbalance's banned list when `banned_imported`, the others
/// with `respect_isolation`), each named by its kind and holding only the CPUs no earlier source
/// named, then any isolated or nohz_full CPU of `topo` none of them names.
pub fn forbidden_cpus(config: &Config, topo: &Topology, isolation: &Isolation, banned_imported: bool) -> Forbidden {
    let mut sources = vec![("banned".to_string(), config.global.banned_cpus.clone())];
    let mut named = config.global.banned_cpus.clone();
    for s in &isolation.sources {
        let applies = match s.effect() {
            Effect::Isolated => config.global.respect_isolation,
            Effect::Banned => banned_imported,
        };
        if applies {
            sources.push((s.kind.word().to_string(), s.cpus.difference(&named)));
            named.extend_with(&s.cpus);
        }
    }
    if config.global.respect_isolation {
        // A topology built in memory may isolate CPUs no source file names.
        sources.push(("isolated".into(), topo.isolated.difference(&named)));
        named.extend_with(&topo.isolated);
        sources.push(("nohz_full".into(), topo.nohz_full.difference(&named)));
    }
    sources.retain(|(_, s)| !s.is_empty());
    Forbidden { sources }
}

/// Devices the guard leaves alone: a rule's `guard = false`, and devices passed through to a
/// guest or user-space driver (their IRQs follow its CPUs) unless a rule chose a strategy.
fn guard_exempt(devices: &[Device], policies: &[Policy]) -> BTreeSet<String> {
    devices
        .iter()
        .zip(policies)
        .filter(|(d, p)| {
            let passthrough = d.driver.as_deref().is_some_and(|drv| PASSTHROUGH_DRIVERS.contains(&drv));
            p.guard_exempt || (passthrough && p.strategy.is_none())
        })
        .map(|(d, _)| d.bdf.clone())
        .collect()
}

/// Discovers the devices under `root` and plans them on `topology` (just discovered, or the
/// daemon's last good one), its discovery's `warnings` first among the plan's. `memory` is the
/// daemon's topology memory: the machine with every present CPU online is computed with it, and
/// kernel-managed IRQs are also predicted on the machine as first seen this boot (`None`: both
/// derived from `topology` alone).
pub fn plan_with_topology(
    root: &Root,
    config: &Config,
    known_managed: &BTreeSet<u32>,
    topology: Topology,
    memory: Option<&TopologyMemory>,
    warnings: Vec<String>,
) -> Result<PlannedPass, EngineError> {
    let discovery = discover_devices(root, &topology)?;
    Ok(plan_discovered(root, config, known_managed, topology, memory, warnings, discovery))
}

/// [`plan_with_topology`] on devices already discovered (the daemon's, re-read only where
/// events asked): isolation, udev properties, policies, the plan, the guard, transmit steering.
pub fn plan_discovered(
    root: &Root,
    config: &Config,
    known_managed: &BTreeSet<u32>,
    topology: Topology,
    memory: Option<&TopologyMemory>,
    warnings: Vec<String>,
    discovery: crate::devices::Discovery,
) -> PlannedPass {
    let home = home_topology(&topology, memory);
    let first = memory.and_then(|m| m.first_topology(&topology));
    let (isolation, isolation_warnings) = Isolation::discover(root, &topology);
    let mut warnings = warnings;
    warnings.extend(isolation_warnings.iter().map(|w| w.to_string()));
    let own = config;
    let (topology, merged, void_ban) = with_isolation(topology, config, &isolation);
    warnings.extend(void_ban);
    let banned_imported = matches!(merged, Cow::Owned(_));
    let config = merged.as_ref();
    // The remembered machines are isolated the same way, so queue homes avoid the same CPUs.
    let home = isolate(home, &isolation);
    let first = first.map(|f| isolate(f, &isolation));
    let facts: Vec<DeviceFacts> = discovery
        .devices
        .iter()
        .map(|d| DeviceFacts { properties: udev_properties(root, d), ..DeviceFacts::of(d) })
        .collect();
    let policies: Vec<_> = facts.iter().map(|f| resolve(config, f)).collect();
    let (group_rules, kernel_warning) = plan_rules(root, &topology);
    let ctx = PlanContext {
        topo: &topology,
        home: Some(&home),
        first: first.as_ref(),
        group_rules,
        respect_isolation: config.global.respect_isolation,
        known_managed,
    };
    let mut plan = build_plan(&ctx, &discovery.devices, &policies);
    if config.global.guard == GuardScope::All {
        let nodes = topology.nodes.iter().map(|(&id, n)| (id, n.cpus.clone())).collect();
        let exempt = guard_exempt(&discovery.devices, &policies);
        // The configuration as written: the imported banned list is named by its own source.
        let forbidden = forbidden_cpus(own, &topology, &isolation, banned_imported);
        let allowed = topology.online.difference(&forbidden.cpus());
        let input = GuardInput { forbidden, allowed, nodes: &nodes, exempt: &exempt, refused: known_managed };
        guard(&mut plan, &discovery.loose, &input);
    }
    // Relative to the desired masks, so after the guard has changed them.
    locate_current(&mut plan, &topology);
    // Transmit steering follows the IRQs as finally planned, the guard's changes included.
    plan_transmit_steering(root, config, &topology, &discovery.devices, &policies, &mut plan);
    plan.warnings.splice(0..0, warnings);
    plan.warnings.extend(kernel_warning);
    plan.warnings.extend(discovery.warnings.iter().map(|w| w.to_string()));
    plan.warnings.extend(unmatched_rules(config, &facts).into_iter().map(|r| format!("rule at {r} matches no device")));
    PlannedPass { topology, isolation, devices: discovery.devices, plan }
}

/// Plans the transmit steering of every NIC placed by NUMA hop (`plan.devices[i]` is
/// `devices[i]`, decided by `policies[i]`): from its one interface's tx queues, or left alone
/// with the reason (`xps = false`, no interface, several interfaces, no readable queues).
fn plan_transmit_steering(
    root: &Root,
    config: &Config,
    topology: &Topology,
    devices: &[Device],
    policies: &[Policy],
    plan: &mut Plan,
) {
    for ((dp, dev), policy) in plan.devices.iter_mut().zip(devices).zip(policies) {
        if dp.class != DeviceClass::Nic || dp.strategy != StrategyName::NumaHop {
            continue;
        }
        let name = dev.interfaces.first().map(String::as_str);
        let xps = if !policy.xps.unwrap_or(config.global.xps) {
            XpsPlan::skip(name, "xps = false")
        } else {
            match dev.interfaces.as_slice() {
                [] => XpsPlan::skip(None, "the device has no network interface"),
                [one] => match read_net_queues(root, &dev.bdf, one) {
                    Ok(queues) => plan_xps(topology, dp, queues.as_ref()),
                    Err(e) => XpsPlan::skip(name, e),
                },
                many => XpsPlan::skip(
                    None,
                    format!(
                        "several network interfaces ({}): their tx queues cannot be tied to this function's IRQs",
                        many.join(", ")
                    ),
                ),
            }
        };
        dp.xps = Some(xps);
    }
}

/// `topo` with every CPU an isolation source isolates counted as the kernel would: `nohz_full=`
/// CPUs as `nohz_full`, the others as `isolated`, within the possible CPUs.
fn isolate(mut topo: Topology, isolation: &Isolation) -> Topology {
    use crate::topology::isolation::IsolationKind;
    for s in isolation.sources.iter().filter(|s| s.effect() == Effect::Isolated) {
        let cpus = s.cpus.intersection(&topo.possible);
        match s.kind {
            IsolationKind::NohzFull | IsolationKind::CmdlineNohzFull => topo.nohz_full.extend_with(&cpus),
            _ => topo.isolated.extend_with(&cpus),
        }
    }
    topo
}

/// What the isolation sources change for planning: every CPU a source isolates joins the
/// topology's `isolated` (so `respect_isolation` keeps it free as it keeps `isolcpus` CPUs), and
/// with `import_irqbalance_banned` the banned list joins `banned_cpus`, unless with them every
/// online CPU would be banned: then the imported list is void, and the warning says so.
pub fn with_isolation<'c>(
    topology: Topology,
    config: &'c Config,
    isolation: &Isolation,
) -> (Topology, Cow<'c, Config>, Option<String>) {
    let topology = isolate(topology, isolation);
    let banned = isolation.banned();
    if !config.global.import_irqbalance_banned || banned.is_subset(&config.global.banned_cpus) {
        return (topology, Cow::Borrowed(config), None);
    }
    let all = banned.union(&config.global.banned_cpus);
    if !topology.online.is_empty() && topology.online.is_subset(&all) {
        let from: Vec<String> = isolation
            .sources
            .iter()
            .filter(|s| s.effect() == Effect::Banned)
            .map(|s| format!("{} in {}", s.setting, s.path))
            .collect();
        let warning = format!(
            "irqbalance's banned list ({}) bans every online CPU ({}): it is not imported",
            from.join(", "),
            topology.online
        );
        return (topology, Cow::Borrowed(config), Some(warning));
    }
    let mut config = config.clone();
    config.global.banned_cpus = all;
    (topology, Cow::Owned(config), None)
}
