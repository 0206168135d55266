//! Computing a [`Plan`]: per device, the strategy its policy names, then the managed-IRQ step,
//! then a comparison with the current masks.
//!
//! Pure: everything comes in as data. Guarantees: no queue IRQ is ever given an empty set (when
//! a device has no usable CPU at all, its IRQs are skipped with that reason), and managed IRQs
//! are only predicted, never set.

use std::collections::BTreeSet;

use super::{Action, DevicePlan, Placement, Plan};
use crate::cpuset::CpuSet;
use crate::devices::{Device, IrqVector};
use crate::kernel::GroupRules;
use crate::policy::Policy;
use crate::strategy::{decide, Decision, DeviceContext, StrategyName};
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
/// A device whose node (configured or its own) does not exist on this machine adds a warning.
pub fn build_plan(ctx: &PlanContext, devices: &[Device], policies: &[Policy]) -> Plan {
    let default = Policy::default();
    let mut warnings = Vec::new();
    let devices = devices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let (plan, warning) = plan_device(ctx, d, policies.get(i).unwrap_or(&default));
            warnings.extend(warning);
            plan
        })
        .collect();
    Plan { kernel: ctx.topo.kernel.clone(), devices, warnings }
}

/// One device's plan, and a warning when its node does not exist on this machine: dispatch to
/// its strategy, then compare each decision with the current mask.
fn plan_device(ctx: &PlanContext, dev: &Device, policy: &Policy) -> (DevicePlan, Option<String>) {
    let strategy = policy.strategy.unwrap_or_else(|| StrategyName::default_for(dev.class));
    let (dctx, setup) = DeviceContext::new(ctx.topo, dev, policy, ctx.group_rules, ctx.respect_isolation, strategy);
    let decisions = decide(strategy, &dctx, setup.note.as_deref(), ctx.known_managed);
    let irqs = dev.vectors.iter().zip(decisions).map(|(v, d)| place(ctx, v, d, &dctx.node_cpus.cpus)).collect();
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
    (plan, setup.warning)
}

/// Compares a decision with the IRQ's current mask.
/// `fallback` is written instead when the desired CPUs have no free vectors (ENOSPC).
fn place(ctx: &PlanContext, v: &IrqVector, d: Decision, fallback: &CpuSet) -> Placement {
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
    Placement {
        irq: v.irq,
        name: v.name.clone(),
        role: v.role,
        queue: v.queue,
        managed,
        current: v.current.clone(),
        desired: if managed && !d.managed { v.current.clone() } else { d.desired },
        action,
        reason,
        fallback: (action == Action::Set && !fallback.is_empty()).then(|| fallback.clone()),
        mismatch: d.mismatch,
    }
}
