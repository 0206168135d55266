//! From two reads of the interrupt counts and a plan to a [`Landing`]: per device and IRQ, how
//! many interrupts fired, on which CPUs, and how near those CPUs are to where the plan puts the
//! IRQ. Pure: data in, data out.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::counts::{deltas, InterruptCounts};
use super::softirqs::NetRxCpu;
use crate::cpuset::CpuSet;
use crate::devices::{DeviceClass, QueueRole};
use crate::plan::{Action, Plan};
use crate::topology::locality::{node_of, Locality, Nearness};
use crate::topology::Topology;

/// Interrupts per locality class; `unknown` where the class could not be told (no desired set
/// and no node information).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct LocalityCounts {
    pub desired: u64,
    pub core: u64,
    pub cluster: u64,
    pub llc: u64,
    pub node: u64,
    pub remote: u64,
    pub unknown: u64,
}

impl LocalityCounts {
    /// Adds `n` interrupts to `class`.
    pub fn add(&mut self, class: Option<Locality>, n: u64) {
        let slot = match class {
            Some(Locality::Desired) => &mut self.desired,
            Some(Locality::Core) => &mut self.core,
            Some(Locality::Cluster) => &mut self.cluster,
            Some(Locality::Llc) => &mut self.llc,
            Some(Locality::Node) => &mut self.node,
            Some(Locality::Remote) => &mut self.remote,
            None => &mut self.unknown,
        };
        *slot += n;
    }

    /// Every class with its count, nearest first, `unknown` last.
    pub fn entries(&self) -> [(&'static str, u64); 7] {
        [
            ("desired", self.desired),
            ("core", self.core),
            ("cluster", self.cluster),
            ("llc", self.llc),
            ("node", self.node),
            ("remote", self.remote),
            ("unknown", self.unknown),
        ]
    }

    /// Adds every class of `other`.
    fn merge(&mut self, other: &LocalityCounts) {
        self.desired += other.desired;
        self.core += other.core;
        self.cluster += other.cluster;
        self.llc += other.llc;
        self.node += other.node;
        self.remote += other.remote;
        self.unknown += other.unknown;
    }
}

/// Interrupts of one IRQ on one CPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CpuLanding {
    pub cpu: u32,
    pub interrupts: u64,
    pub rate: f64,
    pub locality: Option<Locality>,
}

/// The NAPI thread of a queue IRQ's instance (threaded NAPI), where it may and did last run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ThreadLanding {
    pub pid: u32,
    /// `napi/IF-ID`.
    pub name: String,
    /// Its `Cpus_allowed_list`.
    pub allowed: Option<CpuSet>,
    /// The CPU it last ran on (at the second read where it was read again).
    pub last_cpu: Option<u32>,
}

/// One IRQ: where it should be, where the kernel delivers it now, where it fired.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct IrqLanding {
    pub irq: u32,
    pub name: Option<String>,
    pub role: QueueRole,
    pub queue: Option<u32>,
    /// The plan's action for it (`keep`, `set`, `managed`, `skip`).
    pub action: Action,
    /// Where the plan puts it (`None` for IRQs left alone).
    pub desired: Option<CpuSet>,
    /// `effective_affinity_list` at the second read, where the kernel shows it.
    pub effective: Option<CpuSet>,
    pub interrupts: u64,
    pub rate: f64,
    /// Every CPU it fired on, ascending.
    pub cpus: Vec<CpuLanding>,
    pub locality: LocalityCounts,
    /// Its NAPI thread, for a NIC running threaded NAPI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub napi_thread: Option<ThreadLanding>,
}

/// One device: its IRQs and their sums.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct DeviceLanding {
    pub bdf: String,
    pub name: Option<String>,
    pub driver: Option<String>,
    pub class: DeviceClass,
    /// The node placement starts from (the plan's).
    pub node: Option<u32>,
    pub interrupts: u64,
    pub rate: f64,
    /// Interrupts of the IRQs that have a desired set (the base of "on desired CPUs").
    pub with_desired: u64,
    /// Interrupts that fired on the device's node (`None` when its node is unknown).
    pub on_node: Option<u64>,
    pub locality: LocalityCounts,
    pub irqs: Vec<IrqLanding>,
}

/// The whole report (`irqwise report --json`, where the CLI adds the top-level `schema`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Landing {
    /// The time between the two reads the counts come from.
    pub interval_seconds: f64,
    pub devices: Vec<DeviceLanding>,
    /// The CPUs that ran `NET_RX` softirqs in the interval, with their share.
    pub net_rx: Vec<NetRxCpu>,
    pub warnings: Vec<String>,
}

/// Interrupts per second, 0 for a zero interval.
fn per_second(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

/// Builds the report of every device of `plan` from the counts of two reads taken `elapsed`
/// apart and the effective affinities at the second. Guarantees: each IRQ's interrupts equal
/// the sum over its CPUs and over its locality classes; each device's equal the sum over its
/// IRQs; an IRQ missing from the counts has none.
pub(crate) fn build_landing(
    plan: &Plan,
    topo: &Topology,
    first: &InterruptCounts,
    second: &InterruptCounts,
    effective: &BTreeMap<u32, CpuSet>,
    elapsed: Duration,
) -> Landing {
    let seconds = elapsed.as_secs_f64();
    let (fired, skipped) = deltas(first, second);
    let mut warnings = Vec::new();
    if !skipped.is_empty() {
        let cpus: CpuSet = skipped.iter().copied().collect();
        warnings.push(format!(
            "CPU(s) {} came online or went offline between the two reads; their interrupts are not counted",
            cpus.to_list_string()
        ));
    }
    let empty = BTreeMap::new();
    let devices = plan
        .devices
        .iter()
        .map(|d| {
            let irqs: Vec<IrqLanding> = d
                .irqs
                .iter()
                .map(|p| {
                    let desired = if p.action == Action::Skip { None } else { p.desired.clone() };
                    let nearness = Nearness::new(topo, desired.as_ref(), d.node);
                    let mut locality = LocalityCounts::default();
                    let cpus: Vec<CpuLanding> = fired
                        .get(&p.irq)
                        .unwrap_or(&empty)
                        .iter()
                        .map(|(&cpu, &n)| {
                            let class = nearness.as_ref().map(|near| near.of_cpu(cpu));
                            locality.add(class, n);
                            CpuLanding { cpu, interrupts: n, rate: per_second(n, seconds), locality: class }
                        })
                        .collect();
                    let interrupts = cpus.iter().map(|c| c.interrupts).sum();
                    let napi_thread = d.napi_threads.iter().find(|t| t.irq == Some(p.irq)).map(|t| ThreadLanding {
                        pid: t.pid,
                        name: t.name.clone(),
                        allowed: t.current.clone(),
                        last_cpu: t.last_cpu,
                    });
                    IrqLanding {
                        irq: p.irq,
                        name: p.name.clone(),
                        role: p.role,
                        queue: p.queue,
                        action: p.action,
                        desired,
                        effective: effective.get(&p.irq).cloned(),
                        interrupts,
                        rate: per_second(interrupts, seconds),
                        cpus,
                        locality,
                        napi_thread,
                    }
                })
                .collect();
            let interrupts = irqs.iter().map(|i| i.interrupts).sum();
            let mut locality = LocalityCounts::default();
            for i in &irqs {
                locality.merge(&i.locality);
            }
            let with_desired = irqs.iter().filter(|i| i.desired.is_some()).map(|i| i.interrupts).sum();
            let on_node = d.node.map(|n| {
                irqs.iter()
                    .flat_map(|i| &i.cpus)
                    .filter(|c| node_of(topo, c.cpu) == Some(n))
                    .map(|c| c.interrupts)
                    .sum()
            });
            DeviceLanding {
                bdf: d.bdf.clone(),
                name: d.name.clone(),
                driver: d.driver.clone(),
                class: d.class,
                node: d.node,
                interrupts,
                rate: per_second(interrupts, seconds),
                with_desired,
                on_node,
                locality,
                irqs,
            }
        })
        .collect();
    Landing { interval_seconds: seconds, devices, net_rx: Vec::new(), warnings }
}
