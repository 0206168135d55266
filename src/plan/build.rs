//! Computing a [`Plan`]: class defaults, settings from config, then one strategy per device.
//!
//! Pure: everything comes in as data. Guarantees: no queue IRQ is ever given an empty set (when
//! a device has no usable CPU at all, its IRQs are skipped with that reason), and managed IRQs
//! are only predicted, never set.

use std::collections::BTreeSet;

use super::{Action, DevicePlan, Placement, Plan, StrategyName};
use crate::config::OrderName;
use crate::cpuset::CpuSet;
use crate::devices::{Device, DeviceClass, IrqVector, QueueRole};
use crate::policy::Policy;
use crate::strategy::cluster_group::{group_cpus_evenly, GroupRules};
use crate::strategy::numa_hop::{spread_order, SpreadOrder};
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

/// The class default strategy: NICs by NUMA hop, NVMe by kernel groups, others untouched.
pub fn default_strategy(class: DeviceClass) -> StrategyName {
    match class {
        DeviceClass::Nic => StrategyName::NumaHop,
        DeviceClass::Nvme => StrategyName::ClusterGroup,
        DeviceClass::Other => StrategyName::Leave,
    }
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

/// CPUs this device's IRQs may use: online, not banned or excluded, not isolated unless the
/// device's own `cpus` names them.
fn usable_cpus(ctx: &PlanContext, s: &Policy) -> CpuSet {
    let topo = ctx.topo;
    if s.cpus.is_none() && ctx.respect_isolation {
        s.allowed_cpus(&topo.housekeeping())
    } else {
        s.allowed_cpus(&topo.online)
    }
}

/// Whether the machine has node `n` (without NUMA information only node 0, standing for all).
fn node_exists(topo: &Topology, n: u32) -> bool {
    if topo.nodes.is_empty() {
        n == 0
    } else {
        topo.nodes.contains_key(&n)
    }
}

/// The node placement starts from, and a note for the reasons when it is not the one asked for.
struct StartNode {
    /// Invariant: `None` or a node the machine has.
    node: Option<u32>,
    note: Option<String>,
}

/// The rule's `node`, else the device's own. A node the machine does not have falls back to the
/// device's own node (if the machine has that), else to no node, and the note says so.
fn start_node(topo: &Topology, configured: Option<u32>, own: Option<u32>) -> StartNode {
    let (wanted, whose) = match configured {
        Some(n) => (n, "configured"),
        None => match own {
            Some(n) => (n, "the device's"),
            None => return StartNode { node: None, note: None },
        },
    };
    if node_exists(topo, wanted) {
        return StartNode { node: Some(wanted), note: None };
    }
    let node = own.filter(|&n| n != wanted && node_exists(topo, n));
    let instead = node.map_or("no node".to_string(), |n| format!("node {n}"));
    StartNode { node, note: Some(format!("{whose} node {wanted} does not exist on this machine, using {instead}")) }
}

/// The usable CPUs of `node` and their description; all usable CPUs when the node is unknown or
/// has none of them. Non-empty whenever `usable` is.
fn node_cpus(topo: &Topology, node: Option<u32>, usable: &CpuSet) -> (CpuSet, String) {
    let local = node.and_then(|n| topo.nodes.get(&n)).map(|n| &n.cpus & usable).unwrap_or_default();
    match node {
        Some(n) if !local.is_empty() => (local, format!("usable CPUs of node {n}")),
        _ => (usable.clone(), "all usable CPUs".to_string()),
    }
}

/// Where a device's non-queue IRQs (NVMe admin, NIC misc) go, with the words for the reason:
/// `admin_cpus` that are online and not excluded, else the usable CPUs of `node`. Non-empty
/// whenever `usable` is.
fn misc_target(topo: &Topology, s: &Policy, node: Option<u32>, usable: &CpuSet) -> (CpuSet, String) {
    let (local, what) = node_cpus(topo, node, usable);
    match &s.admin_cpus {
        None => (local, what),
        Some(admin) => {
            let left = &(admin & &topo.online) - &s.exclude_cpus;
            if left.is_empty() {
                (local, format!("admin_cpus {admin} has no online CPU outside the excluded ones, so {what}"))
            } else {
                (left, "the configured admin_cpus".to_string())
            }
        }
    }
}

/// What one device's strategy decided for its IRQs, before comparing with the current masks.
struct Decision {
    desired: Option<CpuSet>,
    managed: bool,
    reason: String,
    mismatch: Option<bool>,
}

/// One device's plan, and a warning when its node does not exist on this machine.
fn plan_device(ctx: &PlanContext, dev: &Device, s: &Policy) -> (DevicePlan, Option<String>) {
    let strategy = s.strategy.unwrap_or_else(|| default_strategy(dev.class));
    let StartNode { node, note } = start_node(ctx.topo, s.node, dev.node);
    let warning = note.as_ref().filter(|_| strategy != StrategyName::Leave).map(|n| format!("{}: {n}", dev.bdf));
    let usable = usable_cpus(ctx, s);
    let note = note.or_else(|| {
        let n = node?;
        let local = ctx.topo.nodes.get(&n).map(|d| &d.cpus & &usable).unwrap_or_default();
        local.is_empty().then(|| format!("node {n} has no usable CPU"))
    });
    let misc = misc_target(ctx.topo, s, node, &usable);
    let mut decisions: Vec<Decision> = match strategy {
        StrategyName::Leave => dev.vectors.iter().map(|_| leave("strategy leave: not touched")).collect(),
        _ if usable.is_empty() => dev.vectors.iter().map(|_| leave("no usable CPU for this device")).collect(),
        StrategyName::Pin => dev
            .vectors
            .iter()
            .map(|v| match (queue_index(v), &s.admin_cpus) {
                (None, Some(_)) => fixed(&misc.0, format!("{} IRQ: {}", role_word(v.role), misc.1)),
                _ => fixed(&usable, "pinned to the configured CPUs".into()),
            })
            .collect(),
        StrategyName::NumaHop => numa_hop(ctx, dev, s, node, &usable, &misc),
        StrategyName::ClusterGroup => cluster_group(ctx, dev, &usable, &misc),
    };
    if let Some(note) = &note {
        for d in decisions.iter_mut().filter(|d| d.desired.is_some()) {
            d.reason = format!("{} ({note})", d.reason);
        }
    }
    // Whatever the strategy, a kernel-managed queue IRQ can only be predicted, never moved.
    let decisions = match strategy {
        StrategyName::Leave => decisions,
        _ => {
            let grouping = queue_grouping(ctx, dev);
            dev.vectors
                .iter()
                .zip(decisions)
                .map(|(v, d)| match queue_index(v) {
                    Some(q) if !d.managed && is_predicted_managed(ctx, dev, v) => predict_managed(dev, v, q, &grouping),
                    _ => d,
                })
                .collect()
        }
    };
    let (fallback, _) = node_cpus(ctx.topo, node, &usable);
    let irqs = dev.vectors.iter().zip(decisions).map(|(v, d)| place(ctx, v, d, &fallback)).collect();
    let plan = DevicePlan {
        bdf: dev.bdf.clone(),
        class: dev.class,
        driver: dev.driver.clone(),
        name: dev.name.clone(),
        node,
        strategy,
        rules: s.matched_rules.iter().map(|r| r.to_string()).collect(),
        irqs,
    };
    (plan, warning)
}

fn leave(reason: &str) -> Decision {
    Decision { desired: None, managed: false, reason: reason.into(), mismatch: None }
}

fn fixed(set: &CpuSet, reason: String) -> Decision {
    Decision { desired: Some(set.clone()), managed: false, reason, mismatch: None }
}

/// Queue IRQs walk the NUMA-hop order from the node; misc IRQs get the node's usable CPUs.
fn numa_hop(
    ctx: &PlanContext,
    dev: &Device,
    s: &Policy,
    node: Option<u32>,
    usable: &CpuSet,
    misc: &(CpuSet, String),
) -> Vec<Decision> {
    let order_kind = match s.order {
        Some(OrderName::Kernel) => SpreadOrder::Kernel,
        Some(OrderName::CoresFirst) | None => SpreadOrder::CoresFirst,
    };
    let order: Vec<u32> =
        spread_order(ctx.topo, node, order_kind).into_iter().filter(|c| usable.contains(*c)).collect();
    // spread_order lists online CPUs only; `usable` may hold CPUs it skipped (never, but be safe).
    let order = if order.is_empty() { usable.iter().collect() } else { order };
    let per_cpu = s.queues_per_cpu.unwrap_or(1).max(1);
    let order_name = order_kind.as_str();
    let from = node.map_or("no node".to_string(), |n| format!("node {n}"));
    dev.vectors
        .iter()
        .map(|v| match (v.role, v.queue) {
            (QueueRole::Rx | QueueRole::Tx | QueueRole::RxTx | QueueRole::Io, Some(q)) => {
                // `order` is non-empty: `usable` is (the caller skips devices without usable CPUs).
                let slot = (q / per_cpu) as usize % order.len();
                let cpu = order[slot];
                fixed(&CpuSet::single(cpu), format!("queue {q}: CPU #{slot} in {order_name} order from {from}"))
            }
            _ => fixed(&misc.0, format!("{} IRQ: {}", role_word(v.role), misc.1)),
        })
        .collect()
}

fn role_word(r: QueueRole) -> &'static str {
    match r {
        QueueRole::Admin => "admin",
        _ => "misc",
    }
}

/// The queue index of a queue IRQ (`io`, `rx`, `tx`, `rxtx`); `None` for admin and misc IRQs.
fn queue_index(v: &IrqVector) -> Option<u32> {
    match v.role {
        QueueRole::Io | QueueRole::Rx | QueueRole::Tx | QueueRole::RxTx => v.queue,
        QueueRole::Admin | QueueRole::Misc => None,
    }
}

/// `group_cpus_evenly()` for the device's queue count (highest queue index + 1): what the kernel
/// gives managed queue vectors, and what `cluster-group` gives every queue.
struct QueueGrouping {
    queues: u32,
    groups: Vec<CpuSet>,
}

fn queue_grouping(ctx: &PlanContext, dev: &Device) -> QueueGrouping {
    let queues = dev.vectors.iter().filter_map(queue_index).max().map_or(0, |q| q + 1);
    QueueGrouping { queues, groups: group_cpus_evenly(ctx.topo, queues as usize, ctx.group_rules).groups }
}

/// Queue i (of any queue role: NVMe I/O, NIC rx/tx/rxtx) gets group i of
/// `group_cpus_evenly(queues)`, within the usable CPUs; managed IRQs are predicted.
fn cluster_group(ctx: &PlanContext, dev: &Device, usable: &CpuSet, misc: &(CpuSet, String)) -> Vec<Decision> {
    let grouping = queue_grouping(ctx, dev);
    let nqueues = grouping.queues;
    dev.vectors
        .iter()
        .map(|v| match queue_index(v) {
            Some(q) => {
                if is_predicted_managed(ctx, dev, v) {
                    return predict_managed(dev, v, q, &grouping);
                }
                let group = grouping.groups.get(q as usize).cloned().unwrap_or_default();
                let inside = &group & usable;
                if inside.is_empty() {
                    fixed(&misc.0, format!("queue {q}: group {q} ({group}) has no usable CPU, using {}", misc.1))
                } else {
                    fixed(&inside, format!("queue {q}: group {q} of {nqueues} (kernel grouping)"))
                }
            }
            None => fixed(&misc.0, format!("{} IRQ: {}", role_word(v.role), misc.1)),
        })
        .collect()
}

/// Kernel-managed as far as we know: read-only mode, a failed write remembered, or the nvme
/// driver's I/O queues (it always allocates them with PCI_IRQ_AFFINITY).
fn is_managed(ctx: &PlanContext, dev: &Device, v: &IrqVector) -> bool {
    v.managed
        || ctx.known_managed.contains(&v.irq)
        || (dev.class == DeviceClass::Nvme && dev.driver.as_deref() == Some("nvme") && v.role == QueueRole::Io)
}

/// A managed I/O queue IRQ whose placement the kernel computes with `group_cpus_evenly()`, queue
/// i → group i (NVMe). Other managed IRQs (a NIC queue with a read-only mask) are reported with
/// their current mask: their vector-to-group mapping depends on the driver.
fn is_predicted_managed(ctx: &PlanContext, dev: &Device, v: &IrqVector) -> bool {
    v.role == QueueRole::Io && is_managed(ctx, dev, v)
}

fn predict_managed(dev: &Device, v: &IrqVector, q: u32, grouping: &QueueGrouping) -> Decision {
    let (group, nqueues) = (grouping.groups.get(q as usize).cloned().unwrap_or_default(), grouping.queues);
    let actual = v.current.as_ref();
    let blk_mq = dev.nvme.as_ref().and_then(|n| n.blk_mq.get(q as usize));
    let mut mismatch = actual.is_some_and(|a| *a != group);
    let mut reason = format!("kernel-managed: expected group {q} of {nqueues} = {group}");
    if let Some(a) = actual.filter(|a| **a != group) {
        reason.push_str(&format!("; kernel shows {a}"));
    }
    if let Some(m) = blk_mq.filter(|m| **m != group) {
        mismatch = true;
        reason.push_str(&format!("; blk-mq maps {m}"));
    }
    Decision { desired: Some(group), managed: true, reason, mismatch: Some(mismatch) }
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
