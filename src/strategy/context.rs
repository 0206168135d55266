//! [`DeviceContext`]: what every strategy sees of one device: the machine, the device, its
//! policy, the node placement starts from, the usable CPUs and where non-queue vectors go.

use std::cell::OnceCell;

use super::queue_index;
use crate::choices::StrategyName;
use crate::cpuset::hasher::WordHashMap;
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

/// A wider set to write when the kernel has no free vectors on the one wanted, and the words
/// for how much wider (`"same core"`, `"same cluster"`, `"same LLC"`, `"the node"`, `"every
/// usable CPU"`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Fallback {
    pub cpus: CpuSet,
    pub step: &'static str,
}

/// `group_cpus_evenly()` for the device's queue count (highest queue index + 1): what the kernel
/// gives managed queue vectors, and what `cluster-group` gives every queue. With several IRQ sets
/// (the nvme driver's read queues) each set is spread on its own and the groups follow each
/// other: queue i → `groups[i]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueGrouping {
    pub queues: u32,
    /// Set sizes, summing to `queues`; one set unless the driver splits its vectors.
    pub sets: Vec<u32>,
    pub groups: Vec<CpuSet>,
}

impl QueueGrouping {
    /// Which set queue `q` is in and its index there: `(set, index, set size)`.
    pub(crate) fn locate(&self, q: u32) -> (usize, u32, u32) {
        let mut first = 0;
        for (i, &size) in self.sets.iter().enumerate() {
            if q < first + size {
                return (i, q - first, size);
            }
            first += size;
        }
        (0, q, self.queues)
    }
}

/// The nvme driver's IRQ sets for `nrirqs` I/O vectors with its `write_queues` parameter
/// (`nvme_calc_irq_sets()`, drivers/nvme/host/pci.c): one set when `write_queues` is 0 or there
/// is one vector; else a default (write) set and a read set of `nrirqs - write_queues` vectors,
/// at least 1. Guarantees the sizes sum to `nrirqs` and none is 0 (for `nrirqs` > 0).
pub(crate) fn nvme_irq_sets(nrirqs: u32, write_queues: u32) -> Vec<u32> {
    let read = if nrirqs <= 1 || write_queues == 0 {
        0
    } else if write_queues >= nrirqs {
        1
    } else {
        nrirqs - write_queues
    };
    if read == 0 {
        vec![nrirqs]
    } else {
        vec![nrirqs - read, read]
    }
}

/// `group_cpus_evenly()` results of one plan by (topology, vector count, rules): a machine with
/// 32 NVMe drives of the same queue count computes one grouping. The topology is told apart by
/// its address, so the cache is valid only while the plan's topologies (now, home, first sight)
/// live and stay unchanged, which they do for the whole plan.
#[derive(Debug, Default)]
pub struct GroupingCache {
    groups: std::cell::RefCell<WordHashMap<(usize, usize, GroupRules), Groups>>,
    orders: std::cell::RefCell<WordHashMap<OrderKey, Blocks>>,
    /// `core_ranks(topo, within)` by (topology address, within): every node's order on one
    /// machine ranks the same CPUs.
    ranks: std::cell::RefCell<WordHashMap<(usize, CpuSet), Ranks>>,
    /// [`DeviceContext::fallbacks`] by (topology address, usable, node CPUs, desired): the NICs
    /// of one node share usable and node CPUs, and each CPU carries several of their queues.
    fallbacks: std::cell::RefCell<WordHashMap<FallbackKey, Fallbacks>>,
}

/// `map[key]`, made by `make` the first time (no borrow is held while `make` runs, so it may
/// use the other caches).
fn cached<K: Eq + std::hash::Hash, V: Clone>(
    map: &std::cell::RefCell<WordHashMap<K, V>>,
    key: K,
    make: impl FnOnce() -> V,
) -> V {
    if let Some(v) = map.borrow().get(&key) {
        return v.clone();
    }
    let v = make();
    map.borrow_mut().insert(key, v.clone());
    v
}

/// One shared grouping.
type Groups = std::rc::Rc<Vec<CpuSet>>;
/// One shared set of cores-first thread ranks, by CPU id.
type Ranks = std::rc::Rc<Vec<u32>>;
/// One shared NUMA-hop order, block per hop.
type Blocks = std::rc::Rc<Vec<Vec<u32>>>;
/// A NUMA-hop order's inputs: the topology's address, the node, the order, the CPUs within.
type OrderKey = (usize, Option<u32>, crate::choices::SpreadOrder, CpuSet);
/// One shared fallback chain.
type Fallbacks = std::rc::Rc<Vec<Fallback>>;
/// A fallback chain's inputs: the topology's address, usable CPUs, node CPUs, desired CPUs.
type FallbackKey = (usize, CpuSet, CpuSet, CpuSet);

impl GroupingCache {
    /// `spread_blocks_within(topo, node, order, within)`, computed once per (topology, node,
    /// order, within): the NICs of one node share one order.
    pub(crate) fn order_blocks(
        &self,
        topo: &Topology,
        node: Option<u32>,
        order: crate::choices::SpreadOrder,
        within: &CpuSet,
    ) -> Blocks {
        let at = std::ptr::from_ref(topo) as usize;
        cached(&self.orders, (at, node, order, within.clone()), || {
            let ranks = if order == crate::choices::SpreadOrder::CoresFirst {
                cached(&self.ranks, (at, within.clone()), || Ranks::new(crate::kernel::core_ranks(topo, within)))
            } else {
                Ranks::default()
            };
            Blocks::new(crate::kernel::spread_blocks_ranked(topo, node, order, within, &ranks))
        })
    }

    /// `group_cpus_evenly(topo, n, rules).groups`, computed once per (topology, n, rules).
    pub fn groups(&self, topo: &Topology, n: usize, rules: GroupRules) -> Groups {
        let key = (std::ptr::from_ref(topo) as usize, n, rules);
        cached(&self.groups, key, || Groups::new(group_cpus_evenly(topo, n, rules).groups))
    }
}

/// The machine as planning sees it: now, and at home (every present CPU online).
#[derive(Debug, Clone, Copy)]
pub struct Machine<'a> {
    pub now: &'a Topology,
    /// [`crate::topology::home_topology`] of `now`: what homes and stable masks are computed on.
    pub home: &'a Topology,
    /// The machine as first seen this boot, when it spreads differently from now
    /// ([`crate::topology::TopologyMemory::first_topology`]).
    pub first: Option<&'a Topology>,
    /// The running kernel's `group_cpus_evenly()` rules.
    pub group_rules: GroupRules,
    /// Keep isolated and nohz_full CPUs free of device IRQs.
    pub respect_isolation: bool,
    /// Groupings computed for `now` during this plan.
    pub groupings: &'a GroupingCache,
}

/// One device as the strategies see it. Invariants: `node` is `None` or a node the machine has;
/// `usable ⊆ home_usable`; `misc.cpus` and `node_cpus.cpus` hold a CPU of `usable` whenever
/// `usable` is non-empty (they may hold offline CPUs of `home_usable`: a mask that keeps its
/// offline CPUs does not change when they come and go).
pub struct DeviceContext<'a> {
    pub topo: &'a Topology,
    /// The machine with every present CPU online.
    pub home: &'a Topology,
    /// The machine as first seen this boot, when it spreads differently from now.
    pub first: Option<&'a Topology>,
    pub device: &'a Device,
    pub policy: &'a Policy,
    /// The running kernel's `group_cpus_evenly()` rules.
    pub group_rules: GroupRules,
    /// The node placement starts from.
    pub node: Option<u32>,
    /// CPUs this device's IRQs may use now.
    pub usable: CpuSet,
    /// CPUs this device's IRQs may use with every present CPU online.
    pub home_usable: CpuSet,
    /// The CPUs of `node` it may use (all of `home_usable` when none of them is usable now);
    /// also the ENOSPC fallback.
    pub node_cpus: Target,
    /// Where non-queue vectors (NVMe admin, NIC misc) go.
    pub misc: Target,
    /// NUMA-hop: the machine-wide allocator's result for this device's queues.
    pub queues: Option<QueueAllocation>,
    groupings: &'a GroupingCache,
    grouping: OnceCell<QueueGrouping>,
}

/// What the machine-wide allocator gave one device: per queue unit (`queue / queues_per_cpu`
/// in ascending order of the units the device has), its assignment, and each CPU's queue count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueAllocation {
    /// Unit key (`queue / queues_per_cpu`) → its assignment.
    pub units: std::collections::BTreeMap<u32, super::allocator::Assignment>,
    /// Queue count of every CPU that carries one, over all devices: one map every device of
    /// the allocation shares (a machine's NICs would otherwise copy it each).
    pub load: std::rc::Rc<std::collections::BTreeMap<u32, u32>>,
    /// The order's name and where it starts, for reasons: `cores-first order from node 1`.
    pub order_words: String,
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
        machine: &Machine<'a>,
        device: &'a Device,
        policy: &'a Policy,
        name: StrategyName,
    ) -> (DeviceContext<'a>, Setup) {
        let topo = machine.now;
        let (node, note) = start_node(topo, policy.node, device.node);
        let placing = name != StrategyName::Leave;
        let warning = note.as_ref().filter(|_| placing).map(|n| format!("{}: {n}", device.bdf));
        let isolated = isolated_in_cpus(topo, policy, machine.respect_isolation, &device.bdf).filter(|_| placing);
        let warning = match (warning, isolated) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        let usable = usable_cpus(topo, policy, machine.respect_isolation);
        let home_usable = usable_cpus(machine.home, policy, machine.respect_isolation).union(&usable);
        let note = note.or_else(|| {
            let n = node?;
            let local = topo.nodes.get(&n).map(|d| &d.cpus & &usable).unwrap_or_default();
            local.is_empty().then(|| format!("node {n} has no usable CPU"))
        });
        let node_cpus = node_cpus(topo, node, &usable, &home_usable);
        let misc = misc_target(machine.home, policy, &node_cpus, &topo.online);
        let ctx = DeviceContext {
            topo,
            home: machine.home,
            first: machine.first,
            device,
            policy,
            group_rules: machine.group_rules,
            node,
            usable,
            home_usable,
            node_cpus,
            misc,
            queues: None,
            groupings: machine.groupings,
            grouping: OnceCell::new(),
        };
        (ctx, Setup { note, warning })
    }

    /// `set` as written: within the CPUs the device may use at home, when that keeps one it may
    /// use now (a mask that keeps its offline CPUs is stable across hotplug); else its CPUs
    /// usable now. Empty when `set` has no usable CPU.
    pub fn stable(&self, set: &CpuSet) -> CpuSet {
        let home = set.intersection(&self.home_usable);
        if home.intersects(&self.usable) {
            home
        } else {
            set.intersection(&self.usable)
        }
    }

    /// What to write, widest last, when the kernel has no free vectors on `desired` (ENOSPC):
    /// the usable CPUs of the same core, cluster, last-level cache and node as `desired`, then
    /// every usable CPU. Guarantees each step strictly wider than `desired` and the step before.
    pub fn fallbacks(&self, desired: &CpuSet) -> Vec<Fallback> {
        let key =
            (std::ptr::from_ref(self.topo) as usize, self.usable.clone(), self.node_cpus.cpus.clone(), desired.clone());
        let chain = cached(&self.groupings.fallbacks, key, || Fallbacks::new(self.fallbacks_computed(desired)));
        chain.as_ref().clone()
    }

    /// [`DeviceContext::fallbacks`], computed.
    fn fallbacks_computed(&self, desired: &CpuSet) -> Vec<Fallback> {
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
        let mut out: Vec<Fallback> = Vec::new();
        let mut widest = desired.clone();
        for (step, cpus) in steps {
            if widest.is_subset(&cpus) && cpus != widest {
                widest = cpus.clone();
                out.push(Fallback { cpus, step });
            }
        }
        out
    }

    /// The plan's grouping cache.
    pub(crate) fn groupings(&self) -> &GroupingCache {
        self.groupings
    }

    /// The device's queue grouping on the machine now, computed once per device.
    pub(crate) fn queue_grouping(&self) -> &QueueGrouping {
        self.grouping.get_or_init(|| self.queue_grouping_on(self.topo))
    }

    /// The device's queue grouping as `group_cpus_evenly()` computes it on `topo`.
    pub(crate) fn queue_grouping_on(&self, topo: &Topology) -> QueueGrouping {
        let queues = self.device.vectors.iter().filter_map(queue_index).max().map_or(0, |q| q + 1);
        let write_queues = self.device.nvme.as_ref().and_then(|n| n.write_queues).unwrap_or(0);
        let sets = if self.device.driver.as_deref() == Some("nvme") {
            nvme_irq_sets(queues, write_queues)
        } else {
            vec![queues]
        };
        let groups = sets
            .iter()
            .flat_map(|&n| self.groupings.groups(topo, n as usize, self.group_rules).as_ref().clone())
            .collect();
        QueueGrouping { queues, sets, groups }
    }
}

/// CPUs a device's IRQs may use: online, not banned or excluded, not isolated or nohz_full
/// unless the rule says `allow_isolated = true`.
fn usable_cpus(topo: &Topology, policy: &Policy, respect_isolation: bool) -> CpuSet {
    if respect_isolation && !policy.allow_isolated {
        policy.allowed_cpus(&topo.housekeeping())
    } else {
        policy.allowed_cpus(&topo.online)
    }
}

/// The warning for a rule's `cpus` naming isolated or nohz_full CPUs, which are left out unless
/// the rule allows them; `None` when it names none (or allows them, or isolation is not
/// respected).
fn isolated_in_cpus(topo: &Topology, policy: &Policy, respect_isolation: bool, bdf: &str) -> Option<String> {
    let cpus = policy.cpus.as_ref().filter(|_| respect_isolation && !policy.allow_isolated)?;
    let isolated = cpus.intersection(&topo.isolated);
    let nohz = cpus.intersection(&topo.nohz_full).difference(&isolated);
    if isolated.is_empty() && nohz.is_empty() {
        return None;
    }
    let mut named = Vec::new();
    if !isolated.is_empty() {
        named.push(format!("isolated CPUs {isolated}"));
    }
    if !nohz.is_empty() {
        named.push(format!("nohz_full CPUs {nohz}"));
    }
    Some(format!(
        "{bdf}: the rule's cpus {cpus} include {}: left out (allow_isolated = true in the rule uses them)",
        named.join(" and ")
    ))
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

/// The CPUs of `node` the device may use at home, when one of them is usable now; else every
/// CPU it may use at home (`all usable CPUs`). Holds a CPU of `usable` whenever `usable` is
/// non-empty.
fn node_cpus(topo: &Topology, node: Option<u32>, usable: &CpuSet, home_usable: &CpuSet) -> Target {
    let local = node.and_then(|n| topo.nodes.get(&n)).map(|n| &n.cpus & home_usable).unwrap_or_default();
    match node {
        Some(n) if local.intersects(usable) => Target { cpus: local, why: format!("usable CPUs of node {n}") },
        _ => Target { cpus: home_usable.clone(), why: "all usable CPUs".to_string() },
    }
}

/// Where non-queue IRQs go: `admin_cpus` that are present and not excluded, when one of them is
/// online (`admin_cpus` may name isolated CPUs on purpose); else the node's CPUs.
fn misc_target(home: &Topology, policy: &Policy, node_cpus: &Target, online: &CpuSet) -> Target {
    match &policy.admin_cpus {
        None => node_cpus.clone(),
        Some(admin) => {
            let left = &(admin & &home.online) - &policy.exclude_cpus;
            if left.intersects(online) {
                Target { cpus: left, why: "the configured admin_cpus".to_string() }
            } else {
                Target {
                    cpus: node_cpus.cpus.clone(),
                    why: format!(
                        "admin_cpus {admin} has no online CPU outside the excluded ones, so {}",
                        node_cpus.why
                    ),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{Device, DeviceClass};
    use crate::kernel::KernelVersion;
    use crate::topology::synthetic::SyntheticMachine;

    #[test]
    fn nvme_irq_sets_follow_nvme_calc_irq_sets() {
        // drivers/nvme/host/pci.c: no read set without write_queues or with one vector; else
        // nrirqs - write_queues read vectors, at least 1, the rest the default (write) set.
        assert_eq!(nvme_irq_sets(8, 0), [8]);
        assert_eq!(nvme_irq_sets(1, 4), [1]);
        assert_eq!(nvme_irq_sets(8, 2), [2, 6]);
        assert_eq!(nvme_irq_sets(8, 8), [7, 1]);
        assert_eq!(nvme_irq_sets(8, 10), [7, 1]);
    }

    #[test]
    fn a_queue_is_located_in_its_set_by_the_sets_before_it() {
        let grouping = QueueGrouping { queues: 8, sets: vec![2, 6], groups: Vec::new() };
        let located: Vec<_> = [0, 1, 2, 7].map(|q| grouping.locate(q)).into();
        assert_eq!(located, [(0, 0, 2), (0, 1, 2), (1, 0, 6), (1, 5, 6)]);
        // Beyond the sets (a queue index the driver did not announce): the whole as one set.
        assert_eq!(grouping.locate(9), (0, 9, 8));
    }

    #[test]
    fn a_grouping_is_computed_once_per_vector_count_and_rules() {
        let topo = SyntheticMachine::new(2, 4, 2).build();
        let rules = GroupRules::for_kernel(KernelVersion { major: 6, minor: 11 });
        let cache = GroupingCache::default();
        let a = cache.groups(&topo, 4, rules);
        assert!(std::rc::Rc::ptr_eq(&a, &cache.groups(&topo, 4, rules)), "the second drive reuses the first's");
        assert_eq!(*a, group_cpus_evenly(&topo, 4, rules).groups);
        assert!(!std::rc::Rc::ptr_eq(&a, &cache.groups(&topo, 5, rules)));
    }

    #[test]
    fn enospc_fallbacks_widen_core_cluster_llc_node_then_everything() {
        // 2 nodes × 8 cores × 2 threads, 4-core clusters: CPU 9's core is 9,25; its cluster
        // 8-11,24-27; its LLC and node 8-15,24-31.
        let topo = SyntheticMachine { cores_per_cluster: 4, ..SyntheticMachine::new(2, 8, 2) }.build();
        let dev = Device {
            bdf: "0000:01:00.0".into(),
            class: DeviceClass::Nic,
            pci_class: 0x020000,
            vendor: None,
            device: None,
            driver: None,
            name: None,
            interfaces: vec![],
            node: Some(1),
            local_cpus: None,
            vectors: vec![],
            nvme: None,
        };
        let policy = Policy::default();
        let group_rules = GroupRules::for_kernel(KernelVersion { major: 6, minor: 11 });
        let groupings = GroupingCache::default();
        let machine = Machine {
            now: &topo,
            home: &topo,
            first: None,
            group_rules,
            respect_isolation: true,
            groupings: &groupings,
        };
        let (ctx, _) = DeviceContext::new(&machine, &dev, &policy, StrategyName::NumaHop);
        let steps: Vec<(&str, String)> =
            ctx.fallbacks(&CpuSet::single(9)).into_iter().map(|f| (f.step, f.cpus.to_list_string())).collect();
        assert_eq!(
            steps,
            [
                ("same core", "9,25".to_string()),
                ("same cluster", "8-11,24-27".to_string()),
                ("same LLC", "8-15,24-31".to_string()),
                ("every usable CPU", "0-31".to_string()),
            ],
            "the node is the LLC here, so that step adds nothing and is skipped"
        );
    }
}
