//! Policy: which config rules apply to a device and what they decide for it.
//!
//! Pure. A device is described by [`DeviceFacts`] (what discovery knows about it); [`resolve`]
//! applies every matching rule in config order, later rules overriding earlier ones key by key.
//! Keys no rule sets stay `None`: the planner fills them with the device class's defaults.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::choices::{Balance, NapiProfile, NapiThreads, Spill, SpreadOrder, StrategyName};
use crate::config::{Config, Match, NapiRange, Rule, RuleRef};
use crate::cpuset::CpuSet;
use crate::devices::{Device, DeviceClass, QueuePattern};

/// What the rules can match a device on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceFacts {
    /// PCI address, `0000:81:00.0`.
    pub bdf: String,
    pub class: DeviceClass,
    /// Bound driver (`mlx5_core`, `nvme`), if any.
    pub driver: Option<String>,
    /// Network interface names (a NIC function may have several, e.g. representors).
    pub interfaces: Vec<String>,
    /// NVMe model and serial as sysfs shows them (surrounding spaces are ignored when matching).
    pub nvme_model: Option<String>,
    pub nvme_serial: Option<String>,
    /// udev properties, where udevd provides them.
    pub properties: BTreeMap<String, String>,
}

impl DeviceFacts {
    /// What discovery knows of `d`; no udev properties (the caller reads those).
    pub fn of(d: &Device) -> DeviceFacts {
        DeviceFacts {
            driver: d.driver.clone(),
            interfaces: d.interfaces.clone(),
            nvme_model: d.nvme.as_ref().and_then(|n| n.model.clone()),
            nvme_serial: d.nvme.as_ref().and_then(|n| n.serial.clone()),
            ..DeviceFacts::new(d.bdf.clone(), d.class)
        }
    }

    /// Facts with only an address and a class; the rest unknown.
    pub fn new(bdf: impl Into<String>, class: DeviceClass) -> DeviceFacts {
        DeviceFacts {
            bdf: bdf.into(),
            class,
            driver: None,
            interfaces: Vec::new(),
            nvme_model: None,
            nvme_serial: None,
            properties: BTreeMap::new(),
        }
    }
}

/// What the config decides for one device. `None` means "the class default".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Policy {
    pub strategy: Option<StrategyName>,
    /// Allowed CPUs (`None`: all usable CPUs).
    pub cpus: Option<CpuSet>,
    /// CPUs never to use: the global `banned_cpus` plus the last matching rule's `exclude_cpus`.
    pub exclude_cpus: CpuSet,
    /// CPUs for the device's non-queue vectors (NVMe admin queue, NIC misc vector).
    pub admin_cpus: Option<CpuSet>,
    /// NUMA node to treat the device as attached to.
    pub node: Option<u32>,
    pub order: Option<SpreadOrder>,
    pub queues_per_cpu: Option<u32>,
    /// Where NUMA-hop queues go beyond the node: the last matching rule's `spill`, else the
    /// global one.
    pub spill: Spill,
    /// What happens to the device's NAPI threads: the last matching rule's `napi_threads`, else
    /// the global one.
    pub napi_threads: NapiThreads,
    /// Load refinement: the last matching rule's `balance`, else the global one.
    pub balance: Balance,
    /// A rule's `guard = false`: the guard leaves this device's IRQs alone.
    pub guard_exempt: bool,
    /// Isolated and nohz_full CPUs named in `cpus` are used.
    pub allow_isolated: bool,
    /// The last matching rule's `queue_pattern`, and that rule: read before the driver table.
    pub queue_pattern: Option<(QueuePattern, RuleRef)>,
    /// The last matching rule's `xps` (`None`: the global setting).
    pub xps: Option<bool>,
    /// `[napi]` (covering every queue) and the matching rules' `[device.napi]` tables, in
    /// order; see [`Policy::napi_profile`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub napi: Vec<NapiRange>,
    /// Every rule that matched, in application order (what `plan` shows as "decided by").
    pub matched_rules: Vec<RuleRef>,
    /// Settings of the deciding rules this machine made void, by key, with the words plan
    /// reasons give for the fallback (a later rule setting the key drops the note).
    pub voided: Vec<(&'static str, String)>,
}

impl Policy {
    /// The CPUs the strategy may use: `cpus` (or `usable` when unset) minus `exclude_cpus`,
    /// within `usable`. May be empty; the planner reports that.
    pub fn allowed_cpus(&self, usable: &CpuSet) -> CpuSet {
        let base = self.cpus.as_ref().map_or_else(|| usable.clone(), |c| c.intersection(usable));
        base.difference(&self.exclude_cpus)
    }

    /// What the NAPI instance serving queue `queue` gets: every table covering it, a later one
    /// winning key by key. Empty when nothing is configured for it.
    pub fn napi_profile(&self, queue: Option<u32>) -> NapiProfile {
        self.napi.iter().filter(|r| r.covers(queue)).fold(NapiProfile::default(), |p, r| p.overlay(&r.profile))
    }
}

/// Whether `pattern` matches `value`, an absent value never matching.
fn glob_matches(pattern: Option<&crate::config::Glob>, value: Option<&str>) -> bool {
    match pattern {
        None => true,
        Some(g) => value.is_some_and(|v| g.matches(v)),
    }
}

/// Whether every key of `m` matches `facts` (an empty match matches nothing; validation forbids it).
pub fn matches(m: &Match, facts: &DeviceFacts) -> bool {
    !m.is_empty()
        && glob_matches(m.pci.as_ref(), Some(&facts.bdf))
        && glob_matches(m.driver.as_ref(), facts.driver.as_deref())
        && m.interface.as_ref().is_none_or(|g| facts.interfaces.iter().any(|i| g.matches(i)))
        && m.class.is_none_or(|c| c == facts.class)
        && glob_matches(m.nvme_model.as_ref(), facts.nvme_model.as_deref().map(str::trim))
        && glob_matches(m.nvme_serial.as_ref(), facts.nvme_serial.as_deref().map(str::trim))
        && m.property.iter().all(|(k, g)| facts.properties.get(k).is_some_and(|v| g.matches(v)))
}

/// Applies every rule of `config` that matches `facts`, in order, each set key overriding the
/// same key of earlier rules. Global `banned_cpus` always joins `exclude_cpus`.
pub fn resolve(config: &Config, facts: &DeviceFacts) -> Policy {
    let mut policy = Policy::default();
    if !config.global.napi.is_empty() {
        policy.napi.push(NapiRange { queues: None, profile: config.global.napi });
    }
    let mut exclude: Option<&CpuSet> = None;
    let mut spill = None;
    let mut napi_threads = None;
    let mut balance = None;
    let (mut guard, mut allow_isolated) = (None, None);
    for rule in config.rules.iter().filter(|r| matches(&r.matcher, facts)) {
        let s = &rule.settings;
        overwrite(&mut policy.strategy, s.strategy);
        overwrite(&mut policy.cpus, s.cpus.clone());
        overwrite(&mut policy.admin_cpus, s.admin_cpus.clone());
        overwrite(&mut policy.node, s.node);
        overwrite(&mut policy.order, s.order);
        overwrite(&mut policy.queues_per_cpu, s.queues_per_cpu);
        spill = s.spill.or(spill);
        napi_threads = s.napi_threads.or(napi_threads);
        balance = s.balance.or(balance);
        guard = s.guard.or(guard);
        allow_isolated = s.allow_isolated.or(allow_isolated);
        overwrite(&mut policy.queue_pattern, s.queue_pattern.clone().map(|p| (p, rule.source.clone())));
        overwrite(&mut policy.xps, s.xps);
        policy.napi.extend(s.napi.iter().cloned());
        if s.exclude_cpus.is_some() {
            exclude = s.exclude_cpus.as_ref();
        }
        for (key, set) in [("cpus", s.cpus.is_some()), ("admin_cpus", s.admin_cpus.is_some())] {
            if set {
                policy.voided.retain(|(k, _)| *k != key);
            }
        }
        for (key, note) in &s.voided {
            policy.voided.retain(|(k, _)| k != key);
            policy.voided.push((key, note.clone()));
        }
        policy.matched_rules.push(rule.source.clone());
    }
    policy.spill = spill.unwrap_or(config.global.spill);
    policy.napi_threads = napi_threads.unwrap_or(config.global.napi_threads);
    policy.balance = balance.unwrap_or(config.global.balance);
    policy.guard_exempt = guard == Some(false);
    policy.allow_isolated = allow_isolated.unwrap_or(false);
    policy.exclude_cpus =
        exclude.map_or_else(|| config.global.banned_cpus.clone(), |e| e.union(&config.global.banned_cpus));
    policy
}

/// `slot = value` when `value` is set.
fn overwrite<T>(slot: &mut Option<T>, value: Option<T>) {
    if value.is_some() {
        *slot = value;
    }
}

/// Rules that match none of `devices`, for the "rule matches no device" warning.
pub fn unmatched_rules(config: &Config, devices: &[DeviceFacts]) -> Vec<RuleRef> {
    config
        .rules
        .iter()
        .filter(|r: &&Rule| !devices.iter().any(|d| matches(&r.matcher, d)))
        .map(|r| r.source.clone())
        .collect()
}
