//! A pass's whole plan from a [`Sample`]: isolation applied, each device's policy resolved, the
//! plan built, the guard run, current masks located, transmit steering planned.
//!
//! Pure: a function of the sample and of what earlier passes learned ([`PassMemory`]); the same
//! sample and memory always give the same plan. The command line and the daemon plan through it.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use super::grouping::fact_rules;
use super::guard::{guard, Forbidden, GuardInput};
use super::held_claims::hold_claims;
use super::napi_profile::plan_napi_settings;
use super::napi_threads::{identity_notice, kernel_queues, plan_napi_threads};
use super::nic_kernel::describe_nics;
use super::refine::{apply_moves, candidates, Candidate, Moved};
use super::xps_plan::{plan_xps, XpsPlan};
use super::{build_plan, locate_current, Action, Plan, PlanContext};
use crate::choices::{Balance, StrategyName};
use crate::config::{Config, GuardScope};
use crate::cpuset::CpuSet;
use crate::devices::{Device, DeviceClass};
use crate::kernel::boot_isolation::{as_the_kernel_applies, present_at_parse};
use crate::kernel::facts::{BtfState, Feature, KernelFacts, ModuleState};
use crate::policy::{resolve, unmatched_rules, DeviceFacts, Policy};
use crate::sample::Sample;
use crate::strategy::leave::PASSTHROUGH_DRIVERS;
use crate::topology::claims::RefusedClaim;
use crate::topology::isolation::{Effect, IsolationKind};
use crate::topology::{home_topology, Isolation, Topology, TopologyMemory};

/// What earlier passes learned that planning uses.
#[derive(Debug, Clone, Copy)]
pub struct PassMemory<'a> {
    /// Every CPU's masks as last seen online this boot, and the machine as first seen: queue
    /// homes and managed predictions stay put while CPUs come and go. `None`: both derived from
    /// the sample's topology alone.
    pub topology: Option<&'a TopologyMemory>,
    /// IRQs learned to be kernel-managed from failed writes (EIO/EPERM).
    pub known_managed: &'a BTreeSet<u32>,
}

/// Everything one planning pass decided, and the topology it planned on.
#[derive(Debug)]
pub struct PlannedPass {
    /// The topology planned on: every CPU an isolation source isolates counts as `isolated`.
    pub topology: Topology,
    pub plan: Plan,
    /// The CPUs device IRQs are kept off, by source (banned, isolated, nohz_full, ...).
    pub forbidden: Forbidden,
    /// The queue IRQs load refinement may move (devices with `balance = "load"`), at home.
    pub load_candidates: Vec<Candidate>,
    /// The live claims this pass does not hold (with them no CPU would be left), and why.
    pub refused_claims: Vec<RefusedClaim>,
    /// Where the running kernel applies the command line's isolation otherwise than it reads
    /// (`crate::kernel::boot_isolation`), in words; also among the plan's warnings.
    pub kernel_isolation: Vec<String>,
}

/// Plans `sample` with what earlier passes learned. The plan's warnings: the sample's topology
/// and isolation warnings, a void imported ban, the plan's own, the kernel release's, the
/// devices', and one per rule that matches no device.
pub fn plan_sample(sample: &Sample, memory: PassMemory) -> PlannedPass {
    plan_sample_refined(sample, memory, &BTreeMap::new())
}

/// [`plan_sample`], with the queues load refinement moved away from home (`moved`, by IRQ) put
/// where they went, wherever that is still near their home and usable.
pub fn plan_sample_refined(sample: &Sample, memory: PassMemory, moved: &BTreeMap<u32, Moved>) -> PlannedPass {
    let own = sample.config.as_ref();
    let home = home_topology(&sample.topology, memory.topology);
    let first = memory.topology.and_then(|m| m.first_topology(&sample.topology));
    let mut warnings: Vec<String> = sample.warnings.topology.clone();
    warnings.extend(sample.warnings.isolation.iter().cloned());
    // The command line as the running kernel applies it, then the claims that hold, oldest
    // first; a refused one is no isolation source of this pass.
    let boot_present = present_at_parse(sample.topology.arch.as_deref(), &sample.topology.present);
    let (applied, kernel_isolation) = as_the_kernel_applies(&sample.isolation, &sample.kernel_facts, &boot_present);
    warnings.extend(kernel_isolation.iter().cloned());
    let (isolation, refused_claims) = hold_claims(&applied, own, &sample.topology);
    let isolation = isolation.as_ref();
    warnings.extend(refused_claims.iter().map(|r| format!("{}: the claim is refused", r.reason)));
    let (topology, merged, void_bans, bans) = with_isolation(sample.topology.clone(), own, isolation);
    warnings.extend(void_bans);
    let config = merged.as_ref();
    // The remembered machines are isolated the same way, so queue homes avoid the same CPUs.
    let home = isolate(home, isolation);
    let first = first.map(|f| isolate(f, isolation));
    let no_properties = std::collections::BTreeMap::new();
    let facts: Vec<DeviceFacts> = sample
        .devices
        .iter()
        .map(|d| DeviceFacts {
            properties: sample.udev.get(&d.bdf).unwrap_or(&no_properties).clone(),
            ..DeviceFacts::of(d)
        })
        .collect();
    let policies: Vec<_> = facts.iter().map(|f| resolve(config, f)).collect();
    let kernel_queues = kernel_queues(sample);
    let cluster_fact = sample.kernel_facts.feature(Feature::ClusterGrouping);
    let ctx = PlanContext {
        topo: &topology,
        home: Some(&home),
        first: first.as_ref(),
        group_rules: fact_rules(sample.group_rules, cluster_fact),
        group_fact: Some(cluster_fact),
        respect_isolation: config.global.respect_isolation,
        known_managed: memory.known_managed,
        kernel_queues: &kernel_queues,
    };
    let mut plan = build_plan(&ctx, &sample.devices, &policies);
    let forbidden = forbidden_cpus(own, &topology, isolation, bans);
    warnings.extend(claimed_nodes(sample, isolation, &topology, &forbidden, &policies));
    if !sample.devices.is_empty() && !topology.online.is_empty() && topology.online.is_subset(&forbidden.cpus()) {
        plan.warnings.push(format!(
            "every online CPU ({}) is kept free of device IRQs ({}): no device IRQ is placed, each stays where it is",
            topology.online,
            forbidden.describe(&topology.online)
        ));
    }
    if config.global.guard == GuardScope::All {
        let nodes = topology.nodes.iter().map(|(&id, n)| (id, n.cpus.clone())).collect();
        let exempt = guard_exempt(&sample.devices, &policies);
        // The configuration as written: the imported banned list is named by its own source.
        let allowed = topology.online.difference(&forbidden.cpus());
        let input = GuardInput {
            forbidden: forbidden.clone(),
            allowed,
            nodes: &nodes,
            exempt: &exempt,
            refused: memory.known_managed,
        };
        guard(&mut plan, &sample.loose, &input);
    }
    leave_shared_irqs(&mut plan, sample);
    // Load refinement works on the plan's homes; what it moved joins before anything follows.
    let load_candidates = load_candidates(&plan, sample, &policies, &topology, &forbidden);
    apply_moves(&mut plan, moved, &load_candidates);
    // Relative to the desired masks, so after the guard has changed them.
    locate_current(&mut plan, &topology);
    // Transmit steering and NAPI threads follow the IRQs as finally planned, the guard's
    // changes included.
    plan_transmit_steering(sample, config, &topology, &policies, &mut plan);
    plan_napi_threads(&mut plan, sample, &policies);
    describe_nics(&mut plan, sample);
    plan_napi_settings(&mut plan, sample, &policies);
    plan.notices.extend(identity_notice(sample));
    plan.notices.extend(isolation_notice(isolation));
    plan.notices.extend(version_only_notice(&sample.kernel_facts));
    plan.warnings.splice(0..0, warnings);
    plan.warnings.extend(sample.warnings.kernel.iter().cloned());
    plan.warnings.extend(sample.warnings.kernel_facts.iter().cloned());
    plan.warnings.extend(sample.warnings.devices.iter().cloned());
    plan.warnings.extend(unmatched_rules(config, &facts).into_iter().map(|r| format!("rule at {r} matches no device")));
    PlannedPass { topology, plan, forbidden, load_candidates, refused_claims, kernel_isolation }
}

/// Where the running kernel shows nothing of itself (no readable BTF, no NIC driver's module
/// read), the one sentence saying that its behaviour is taken from its version: the rules irqwise
/// had before it probed anything. Nothing for a sample built in memory (nothing probed).
fn version_only_notice(facts: &KernelFacts) -> Option<String> {
    if matches!(facts.btf, BtfState::Read { .. } | BtfState::NotProbed) {
        return None;
    }
    let module_read =
        facts.drivers.values().flat_map(|d| &d.modules).any(|m| matches!(m.state, ModuleState::Read { .. }));
    if module_read {
        return None;
    }
    let version = facts.version.as_deref().unwrap_or("unknown");
    Some(format!(
        "the kernel has no readable BTF and no NIC driver module irqwise could read: what it does is taken from its version ({version}), as the version rules say"
    ))
}

/// The queue IRQs of the devices with `balance = "load"` that refinement may move, each with the
/// CPUs near its home it may use: its policy's allowed CPUs, online, not forbidden.
fn load_candidates(
    plan: &Plan,
    sample: &Sample,
    policies: &[Policy],
    topology: &Topology,
    forbidden: &Forbidden,
) -> Vec<Candidate> {
    let enabled: BTreeSet<String> = sample
        .devices
        .iter()
        .zip(policies)
        .filter(|(_, p)| p.balance == Balance::Load)
        .map(|(d, _)| d.bdf.clone())
        .collect();
    if enabled.is_empty() {
        return Vec::new();
    }
    let open = topology.online.difference(&forbidden.cpus());
    let usable: BTreeMap<String, CpuSet> = sample
        .devices
        .iter()
        .zip(policies)
        .filter(|(d, _)| enabled.contains(&d.bdf))
        .map(|(d, p)| (d.bdf.clone(), p.allowed_cpus(&open)))
        .collect();
    let llc = |c: u32| topology.cpus.get(&c).and_then(|cpu| cpu.llc.clone()).unwrap_or_default();
    let node = |c: u32| {
        let n = topology.cpus.get(&c).and_then(|cpu| cpu.node);
        n.and_then(|n| topology.nodes.get(&n)).map(|n| n.cpus.clone()).unwrap_or_default()
    };
    candidates(plan, &enabled, &usable, &llc, &node)
}

/// How a claim names its CPUs among the forbidden ones: `web's claimed` (CPUs 4-5).
fn claim_source_word(owner: &str) -> String {
    format!("{owner}{CLAIM_WORD}")
}

const CLAIM_WORD: &str = "'s claimed";

/// Whether a forbidden source lasts as long as a workload, not a boot (what `advise boot`
/// leaves out): a runtime claim, or the CPUs the kubelet gave a pod.
pub(crate) fn is_workload_source_word(word: &str) -> bool {
    word.ends_with(CLAIM_WORD) || word == IsolationKind::KubeletExclusive.word()
}

/// The CPUs device interrupts must avoid, by source: the global `banned_cpus`, every isolation
/// source the configuration applies (irqbalance's banned list and the claims as `bans` says,
/// the others with `respect_isolation`), each named by its kind (a claim by its owner) and
/// holding only the CPUs no earlier source named, then any isolated or nohz_full CPU of `topo`
/// none of them names.
pub(crate) fn forbidden_cpus(config: &Config, topo: &Topology, isolation: &Isolation, bans: Bans) -> Forbidden {
    let mut sources = vec![("banned".to_string(), config.global.banned_cpus.clone())];
    let mut named = config.global.banned_cpus.clone();
    for s in &isolation.sources {
        let applies = match s.effect() {
            Effect::Isolated => config.global.respect_isolation,
            Effect::Banned => bans.irqbalance,
            Effect::Claimed => bans.claims,
        };
        if applies {
            let word = match s.claim_owner() {
                Some(owner) => claim_source_word(owner),
                None => s.kind.word().to_string(),
            };
            sources.push((word, s.cpus.difference(&named)));
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

/// Which isolation is the boot's and which is live, when any source keeps CPUs free:
/// `isolation: since boot: isolcpus CPUs 2-3; live: cgroup-isolated CPUs 6-7 (a live isolation
/// moves no kernel-managed IRQ: only isolcpus=managed_irq at boot does)`. Since 7.0 a cgroup
/// partition changes the kernel's own housekeeping at run time, which `cpu/isolated` does not
/// show; the plan says which is which.
fn isolation_notice(isolation: &crate::topology::Isolation) -> Option<String> {
    let words = |since: &str| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in isolation.sources.iter().filter(|s| s.kind.since() == since) {
            let word = s.claim_owner().map_or_else(|| s.kind.word().to_string(), |o| format!("{o}'s claimed"));
            let part = format!("{word} CPUs {}", s.cpus);
            if !out.contains(&part) {
                out.push(part);
            }
        }
        out
    };
    let (boot, live) = (words("boot"), words("live"));
    if boot.is_empty() && live.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    if !boot.is_empty() {
        parts.push(format!("since boot: {}", boot.join(", ")));
    }
    if !live.is_empty() {
        parts.push(format!(
            "live: {} (a live isolation moves no kernel-managed IRQ: only isolcpus=managed_irq at boot does)",
            live.join(", ")
        ));
    }
    Some(format!("isolation: {}", parts.join("; ")))
}

/// Leaves every IRQ more than one device lists as it is, in each device's plan (after the guard:
/// nothing writes an IRQ whose owner cannot be told).
fn leave_shared_irqs(plan: &mut Plan, sample: &Sample) {
    if sample.shared_irqs.is_empty() {
        return;
    }
    for p in plan.devices.iter_mut().flat_map(|d| d.irqs.iter_mut()) {
        let Some(owners) = sample.shared_irqs.get(&p.irq) else { continue };
        if p.action != Action::Managed {
            p.action = Action::Skip;
            p.desired.clone_from(&p.current);
            p.fallbacks.clear();
            p.reason = format!("listed by {}: an IRQ has one owner, left alone", owners.join(" and "));
        }
    }
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

/// Plans the transmit steering of every NIC placed by NUMA hop (`plan.devices[i]` is
/// `sample.devices[i]`, decided by `policies[i]`): from its one interface's tx queues, or left
/// alone with the reason (`xps = false`, no interface, several interfaces, no readable queues).
fn plan_transmit_steering(sample: &Sample, config: &Config, topology: &Topology, policies: &[Policy], plan: &mut Plan) {
    for ((dp, dev), policy) in plan.devices.iter_mut().zip(&sample.devices).zip(policies) {
        if dp.class != DeviceClass::Nic || dp.strategy != StrategyName::NumaHop {
            continue;
        }
        let name = dev.interfaces.first().map(String::as_str);
        let xps = if policy.xps.unwrap_or(config.global.xps) {
            match dev.interfaces.as_slice() {
                [] => XpsPlan::skip(None, "the device has no network interface"),
                [_] => match sample.tx_queues.get(&dev.bdf) {
                    Some(Ok(queues)) => plan_xps(topology, dp, queues.as_ref()),
                    Some(Err(e)) => XpsPlan::skip(name, e.clone()),
                    None => XpsPlan::skip(name, "its transmit queues were not read"),
                },
                many => XpsPlan::skip(
                    None,
                    format!(
                        "several network interfaces ({}): their tx queues cannot be tied to this function's IRQs",
                        many.join(", ")
                    ),
                ),
            }
        } else {
            XpsPlan::skip(name, "xps = false")
        };
        dp.xps = Some(xps);
    }
}

/// `topo` with every CPU an isolation source isolates counted as the kernel would: `nohz_full=`
/// CPUs as `nohz_full`, the others as `isolated`, within the possible CPUs.
fn isolate(mut topo: Topology, isolation: &Isolation) -> Topology {
    for s in isolation.sources.iter().filter(|s| s.effect() == Effect::Isolated) {
        let cpus = s.cpus.intersection(&topo.possible);
        match s.kind {
            IsolationKind::NohzFull | IsolationKind::CmdlineNohzFull => topo.nohz_full.extend_with(&cpus),
            _ => topo.isolated.extend_with(&cpus),
        }
    }
    topo
}

/// Which bans the isolation sources added to the configuration's `banned_cpus`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Bans {
    /// irqbalance's banned list (`import_irqbalance_banned`, and it leaves an online CPU).
    pub irqbalance: bool,
    /// The runtime claims that hold (any).
    pub claims: bool,
}

/// What the isolation sources change for planning: every CPU a source isolates joins the
/// topology's `isolated` (so `respect_isolation` keeps it free as it keeps `isolcpus` CPUs); the
/// claims (those that hold) join `banned_cpus`, then with `import_irqbalance_banned` the banned
/// list does, unless with it every online CPU would be banned: then it is void, and a warning
/// says so.
pub(crate) fn with_isolation<'c>(
    topology: Topology,
    config: &'c Config,
    isolation: &Isolation,
) -> (Topology, Cow<'c, Config>, Vec<String>, Bans) {
    let topology = isolate(topology, isolation);
    let mut all = config.global.banned_cpus.clone();
    let mut warnings = Vec::new();
    let mut bans = Bans::default();
    let bans_every_online = |set: &CpuSet| !topology.online.is_empty() && topology.online.is_subset(set);
    let named = |effect: Effect| -> Vec<String> {
        let sources = isolation.sources.iter().filter(|s| s.effect() == effect);
        sources.map(|s| format!("{} in {}", s.setting, s.path)).collect()
    };
    // The claims here are the ones that hold ([`hold_claims`]): beside banned_cpus they leave
    // an online CPU.
    let claimed = isolation.cpus_with(Effect::Claimed);
    if !claimed.is_empty() {
        all.extend_with(&claimed);
        bans.claims = true;
    }
    let banned = isolation.banned();
    if config.global.import_irqbalance_banned && !banned.is_subset(&all) {
        let with = all.union(&banned);
        if bans_every_online(&with) {
            warnings.push(format!(
                "irqbalance's banned list ({}) bans every online CPU ({}): it is not imported",
                named(Effect::Banned).join(", "),
                topology.online
            ));
        } else {
            all = with;
            bans.irqbalance = true;
        }
    }
    if all == config.global.banned_cpus {
        return (topology, Cow::Borrowed(config), warnings, bans);
    }
    let mut config = config.clone();
    config.global.banned_cpus = all;
    (topology, Cow::Owned(config), warnings, bans)
}

/// A warning per placed device whose node keeps usable CPUs only among claimed ones: its IRQs
/// spill by its policy, and the warning names the claims that took the node.
fn claimed_nodes(
    sample: &Sample,
    isolation: &Isolation,
    topology: &Topology,
    forbidden: &Forbidden,
    policies: &[Policy],
) -> Vec<String> {
    let claims: Vec<&crate::topology::isolation::IsolationSource> =
        isolation.sources.iter().filter(|s| s.effect() == Effect::Claimed).collect();
    if claims.is_empty() {
        return Vec::new();
    }
    let claimed = claims.iter().fold(CpuSet::new(), |acc, s| acc.union(&s.cpus));
    let others = forbidden.cpus().difference(&claimed);
    let mut out = Vec::new();
    for (device, policy) in sample.devices.iter().zip(policies) {
        if policy.strategy == Some(StrategyName::Leave) || device.vectors.is_empty() {
            continue;
        }
        let Some(node) = policy.node.or(device.node) else { continue };
        let Some(cpus) = topology.nodes.get(&node).map(|n| n.cpus.intersection(&topology.online)) else { continue };
        let left = cpus.difference(&others);
        if left.is_empty() || !left.is_subset(&claimed) {
            continue;
        }
        let owners: Vec<String> = claims
            .iter()
            .filter(|s| s.cpus.intersects(&left))
            .map(|s| format!("{} (CPUs {})", s.claim_owner().unwrap_or("?"), s.cpus))
            .collect();
        out.push(format!(
            "{}: every usable CPU of its node {node} ({left}) is claimed by {}: its IRQs spill by its policy (spill = {})",
            device.bdf,
            owners.join(", "),
            policy.spill.as_str()
        ));
    }
    out
}
