//! Computing a [`Plan`]: per device, the strategy its policy names, then the managed-IRQ step,
//! then a comparison with the current masks.
//!
//! Pure: everything comes in as data. Guarantees: no queue IRQ is ever given an empty set (when
//! a device has no usable CPU at all, its IRQs are skipped with that reason), and managed IRQs
//! are only predicted, never set.

use std::collections::BTreeSet;

use super::{Action, DevicePlan, Placement, Plan};
use crate::config::RuleRef;
use crate::cpuset::CpuSet;
use crate::devices::{Device, DeviceClass, IrqVector, QueuePattern, Recognition};
use crate::kernel::GroupRules;
use crate::policy::Policy;
use crate::strategy::{decide, Decision, DeviceContext, StrategyName};
use crate::topology::locality::classify_mask;
use crate::topology::Topology;

/// Machine-wide inputs of planning.
#[derive(Debug, Clone)]
pub struct PlanContext<'a> {
    pub topo: &'a Topology,
    /// The running kernel's `group_cpus_evenly()` rules (for managed-IRQ prediction and cluster-group).
    pub group_rules: GroupRules,
    /// Keep isolated and nohz_full CPUs free of device IRQs.
    pub respect_isolation: bool,
    /// IRQs learned to be kernel-managed from failed writes (EIO/EPERM).
    pub known_managed: &'a BTreeSet<u32>,
}

/// Plans every device; `policies[i]` belongs to `devices[i]` (missing entries = class defaults).
/// A device whose node (configured or its own) does not exist on this machine adds a warning, and
/// so does a NIC with IRQs left alone because their names were not recognised (one per device).
pub fn build_plan(ctx: &PlanContext, devices: &[Device], policies: &[Policy]) -> Plan {
    let default = Policy::default();
    let mut warnings = Vec::new();
    let devices = devices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let (plan, device_warnings) = plan_device(ctx, d, policies.get(i).unwrap_or(&default));
            warnings.extend(device_warnings);
            plan
        })
        .collect();
    Plan { kernel: ctx.topo.kernel.clone(), devices, warnings }
}

/// One device's plan, and its warnings (its node does not exist on this machine; IRQs left alone
/// for unrecognised names): read the names with the rule's `queue_pattern` if it has one,
/// dispatch to its strategy, then compare each decision with the current mask.
fn plan_device(ctx: &PlanContext, dev: &Device, policy: &Policy) -> (DevicePlan, Vec<String>) {
    let taught = policy.queue_pattern.as_ref().map(|(pattern, rule)| with_rule_pattern(dev, pattern, rule));
    let dev = taught.as_ref().unwrap_or(dev);
    let strategy = policy.strategy.unwrap_or_else(|| StrategyName::default_for(dev.class));
    let (dctx, setup) = DeviceContext::new(ctx.topo, dev, policy, ctx.group_rules, ctx.respect_isolation, strategy);
    let decisions = decide(strategy, &dctx, setup.note.as_deref(), ctx.known_managed);
    let irqs =
        dev.vectors.iter().zip(decisions).map(|(v, d)| place(ctx, v, d, &dctx.node_cpus.cpus, dctx.node)).collect();
    let plan = DevicePlan {
        bdf: dev.bdf.clone(),
        class: dev.class,
        driver: dev.driver.clone(),
        name: dev.name.clone(),
        node: dctx.node,
        strategy,
        rules: policy.matched_rules.iter().map(|r| r.to_string()).collect(),
        irqs,
    };
    let warnings = setup.warning.into_iter().chain(unrecognised_warning(dev, &plan)).collect();
    (plan, warnings)
}

/// `dev` with every vector whose name matches the rule's `queue_pattern` read by it; the others
/// keep what the driver table made of them.
fn with_rule_pattern(dev: &Device, pattern: &QueuePattern, rule: &RuleRef) -> Device {
    let mut dev = dev.clone();
    for v in &mut dev.vectors {
        let names = v.name.as_deref().unwrap_or_default();
        if let Some((role, queue)) = names.split(", ").find_map(|n| pattern.recognise(n)) {
            let by = Recognition::Rule { rule: rule.to_string(), pattern: pattern.to_string() };
            (v.role, v.queue, v.recognised) = (role, Some(queue), by);
        }
    }
    dev
}

/// The one warning for a device some of whose IRQs are left alone because their names were not
/// recognised, naming the first such IRQ and how to teach irqwise the names.
fn unrecognised_warning(dev: &Device, plan: &DevicePlan) -> Option<String> {
    let left: Vec<&Placement> = plan
        .irqs
        .iter()
        .zip(&dev.vectors)
        .filter(|(p, v)| p.action == Action::Skip && dev.class == DeviceClass::Nic && !v.recognised.is_recognised())
        .map(|(p, _)| p)
        .collect();
    let first = left.first()?;
    let driver = dev.driver.as_deref().unwrap_or("(none)");
    Some(format!(
        "{} ({driver}): {} of {} IRQs left alone because irqwise does not recognise their names for driver {driver} (e.g. irq {} {:?}); a [[device]] rule with queue_pattern can teach it",
        dev.bdf,
        left.len(),
        dev.vectors.len(),
        first.irq,
        first.name.as_deref().unwrap_or("")
    ))
}

/// Compares a decision with the IRQ's current mask.
/// `fallback` is written instead when the desired CPUs have no free vectors (ENOSPC); `node` is
/// the device's node placement starts from (for the current mask's locality).
fn place(ctx: &PlanContext, v: &IrqVector, d: Decision, fallback: &CpuSet, node: Option<u32>) -> Placement {
    let managed = d.managed || v.managed || ctx.known_managed.contains(&v.irq);
    // An unreadable current mask is still written: the target is known, and the writer
    // classifies whatever is wrong with the file (gone, not writable, ...) instead of the IRQ
    // being silently skipped with a success exit.
    let action = match (&d.desired, &v.current) {
        _ if managed => Action::Managed,
        (None, _) => Action::Skip,
        (Some(want), Some(have)) if want == have => Action::Keep,
        (Some(_), _) => Action::Set,
    };
    let reason = match (action, &v.current) {
        (Action::Set, None) => format!("{}; current affinity unreadable", d.reason),
        (Action::Managed, _) if !d.managed => "kernel-managed: cannot be moved".to_string(),
        _ => d.reason,
    };
    let desired = if managed && !d.managed { v.current.clone() } else { d.desired };
    let current_locality = v.current.as_ref().and_then(|c| classify_mask(ctx.topo, c, desired.as_ref(), node));
    Placement {
        irq: v.irq,
        name: v.name.clone(),
        role: v.role,
        queue: v.queue,
        recognised: v.recognised.clone(),
        managed,
        current: v.current.clone(),
        current_locality,
        desired,
        hint: v.hint.clone(),
        action,
        reason,
        fallback: (action == Action::Set && !fallback.is_empty()).then(|| fallback.clone()),
        mismatch: d.mismatch,
    }
}
