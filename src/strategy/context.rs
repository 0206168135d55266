//! [`DeviceContext`]: what every strategy sees of one device: the machine, the device, its
//! policy, the node placement starts from, the usable CPUs and where non-queue vectors go.

use std::cell::OnceCell;

use super::{queue_index, StrategyName};
use crate::cpuset::CpuSet;
use crate::devices::Device;
use crate::kernel::{group_cpus_evenly, GroupRules};
use crate::policy::Policy;
use crate::topology::Topology;

/// A CPU set and the words reasons use for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub cpus: CpuSet,
    pub why: String,
}

/// `group_cpus_evenly()` for the device's queue count (highest queue index + 1): what the kernel
/// gives managed queue vectors, and what `cluster-group` gives every queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueGrouping {
    pub queues: u32,
    pub groups: Vec<CpuSet>,
}

/// One device as the strategies see it. Invariants: `node` is `None` or a node the machine has;
/// `misc.cpus` and `node_cpus.cpus` are non-empty whenever `usable` is.
pub struct DeviceContext<'a> {
    pub topo: &'a Topology,
    pub device: &'a Device,
    pub policy: &'a Policy,
    /// The running kernel's `group_cpus_evenly()` rules.
    pub group_rules: GroupRules,
    /// The node placement starts from.
    pub node: Option<u32>,
    /// CPUs this device's IRQs may use.
    pub usable: CpuSet,
    /// The usable CPUs of `node` (all usable CPUs when it has none); also the ENOSPC fallback.
    pub node_cpus: Target,
    /// Where non-queue vectors (NVMe admin, NIC misc) go.
    pub misc: Target,
    grouping: OnceCell<QueueGrouping>,
}

/// What setting up a context found worth saying: a note for the reasons and a plan warning.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Setup {
    /// Appended to every placing reason (a node that does not exist or has no usable CPU).
    pub note: Option<String>,
    /// For the plan's warnings (a configured or own node the machine lacks).
    pub warning: Option<String>,
}

impl<'a> DeviceContext<'a> {
    /// The context of `device` under `policy` for strategy `name`.
    pub fn new(
        topo: &'a Topology,
        device: &'a Device,
        policy: &'a Policy,
        group_rules: GroupRules,
        respect_isolation: bool,
        name: StrategyName,
    ) -> (DeviceContext<'a>, Setup) {
        let (node, note) = start_node(topo, policy.node, device.node);
        let warning = note.as_ref().filter(|_| name != StrategyName::Leave).map(|n| format!("{}: {n}", device.bdf));
        let usable = usable_cpus(topo, policy, respect_isolation);
        let note = note.or_else(|| {
            let n = node?;
            let local = topo.nodes.get(&n).map(|d| &d.cpus & &usable).unwrap_or_default();
            local.is_empty().then(|| format!("node {n} has no usable CPU"))
        });
        let node_cpus = node_cpus(topo, node, &usable);
        let misc = misc_target(topo, policy, &node_cpus);
        let ctx = DeviceContext {
            topo,
            device,
            policy,
            group_rules,
            node,
            usable,
            node_cpus,
            misc,
            grouping: OnceCell::new(),
        };
        (ctx, Setup { note, warning })
    }

    /// What to write, widest last, when the kernel has no free vectors on `desired` (ENOSPC):
    /// the usable CPUs of the same core, cluster, last-level cache and node as `desired`, then
    /// every usable CPU. Guarantees each step strictly wider than `desired` and the step before.
    pub fn fallbacks(&self, desired: &CpuSet) -> Vec<crate::plan::Fallback> {
        let around = |mask: &dyn Fn(u32) -> CpuSet| -> CpuSet {
            desired.iter().fold(desired.clone(), |acc, c| acc.union(&mask(c))).intersection(&self.usable)
        };
        let llc = |c: u32| self.topo.cpus.get(&c).and_then(|cpu| cpu.llc.clone()).unwrap_or_default();
        let steps: [(&'static str, CpuSet); 5] = [
            ("same core", around(&|c| self.topo.sibling_mask(c))),
            ("same cluster", around(&|c| self.topo.cluster_mask(c))),
            ("same LLC", around(&llc)),
            ("the node", desired.union(&self.node_cpus.cpus).intersection(&self.usable)),
            ("every usable CPU", self.usable.clone()),
        ];
        let mut out: Vec<crate::plan::Fallback> = Vec::new();
        let mut widest = desired.clone();
        for (step, cpus) in steps {
            if widest.is_subset(&cpus) && cpus != widest {
                widest = cpus.clone();
                out.push(crate::plan::Fallback { cpus, step });
            }
        }
        out
    }

    /// The device's queue grouping, computed once per device.
    pub fn queue_grouping(&self) -> &QueueGrouping {
        self.grouping.get_or_init(|| {
            let queues = self.device.vectors.iter().filter_map(queue_index).max().map_or(0, |q| q + 1);
            QueueGrouping { queues, groups: group_cpus_evenly(self.topo, queues as usize, self.group_rules).groups }
        })
    }
}

/// CPUs a device's IRQs may use: online, not banned or excluded, not isolated unless the
/// device's own `cpus` names them.
fn usable_cpus(topo: &Topology, policy: &Policy, respect_isolation: bool) -> CpuSet {
    if policy.cpus.is_none() && respect_isolation {
        policy.allowed_cpus(&topo.housekeeping())
    } else {
        policy.allowed_cpus(&topo.online)
    }
}

/// The rule's `node`, else the device's own, and a note when it is not the one asked for. A node
/// the machine does not have falls back to the device's own node (if the machine has that),
/// else to no node. Guarantees the node returned is `None` or one the machine has.
fn start_node(topo: &Topology, configured: Option<u32>, own: Option<u32>) -> (Option<u32>, Option<String>) {
    let (wanted, whose) = match configured {
        Some(n) => (n, "configured"),
        None => match own {
            Some(n) => (n, "the device's"),
            None => return (None, None),
        },
    };
    if topo.has_node(wanted) {
        return (Some(wanted), None);
    }
    let node = own.filter(|&n| n != wanted && topo.has_node(n));
    let instead = node.map_or("no node".to_string(), |n| format!("node {n}"));
    (node, Some(format!("{whose} node {wanted} does not exist on this machine, using {instead}")))
}

/// The usable CPUs of `node`; all usable CPUs when the node is unknown or has none of them.
/// Non-empty whenever `usable` is.
fn node_cpus(topo: &Topology, node: Option<u32>, usable: &CpuSet) -> Target {
    let local = node.and_then(|n| topo.nodes.get(&n)).map(|n| &n.cpus & usable).unwrap_or_default();
    match node {
        Some(n) if !local.is_empty() => Target { cpus: local, why: format!("usable CPUs of node {n}") },
        _ => Target { cpus: usable.clone(), why: "all usable CPUs".to_string() },
    }
}

/// Where non-queue IRQs go: `admin_cpus` that are online and not excluded, else the node's
/// usable CPUs. Non-empty whenever `node_cpus` is.
fn misc_target(topo: &Topology, policy: &Policy, node_cpus: &Target) -> Target {
    match &policy.admin_cpus {
        None => node_cpus.clone(),
        Some(admin) => {
            let left = &(admin & &topo.online) - &policy.exclude_cpus;
            if left.is_empty() {
                Target {
                    cpus: node_cpus.cpus.clone(),
                    why: format!(
                        "admin_cpus {admin} has no online CPU outside the excluded ones, so {}",
                        node_cpus.why
                    ),
                }
            } else {
                Target { cpus: left, why: "the configured admin_cpus".to_string() }
            }
        }
    }
}
