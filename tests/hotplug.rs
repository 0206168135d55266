//! Hotplug moves only what it displaces: on a fixture with two NIC ports and an mlx5 that spills,
//! plus an NVMe controller, each CPU in turn goes offline as the kernel shows it (sysfs lists and
//! masks, IRQs that lived only on it reset to every online CPU) and comes back. The planner plans
//! with the daemon's topology memory; the IRQs it writes must be exactly those that lived on the
//! CPU, and its return must restore the plan from before, exactly.

#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use daemon_fixture::{affinity, set_affinity, Hotplug};
use fixture::{FixtureRoot, NamingScheme};
use irqwise::config::Config;
use irqwise::cpuset::CpuSet;
use irqwise::plan::from_sample::{plan_sample, PassMemory};
use irqwise::plan::{Action, Plan};
use irqwise::sample::reader::read_sample;
use irqwise::sysfs::Root;
use irqwise::topology::TopologyMemory;

/// Plans the root as the daemon does: read a sample, remember its topology, plan on the home
/// machine.
fn plan(root: &Path, memory: &mut TopologyMemory) -> Plan {
    let sample = read_sample(&Root::new(root), Arc::new(Config::default())).unwrap();
    memory.remember(&sample.topology);
    plan_sample(&sample, PassMemory { topology: Some(memory), known_managed: &BTreeSet::new() }).plan
}

/// Writes every `set` placement, as the applier would; returns the IRQs written.
fn apply(root: &Path, plan: &Plan) -> BTreeSet<u32> {
    plan.writes()
        .map(|(_, p)| {
            set_affinity(root, p.irq, p.desired.as_ref().unwrap());
            p.irq
        })
        .collect()
}

/// Every IRQ's desired set (placements that have one).
fn desired(plan: &Plan) -> BTreeMap<u32, CpuSet> {
    plan.devices.iter().flat_map(|d| &d.irqs).filter_map(|p| Some((p.irq, p.desired.clone()?))).collect()
}

#[test]
fn each_cpu_offline_writes_only_the_irqs_that_lived_on_it_and_online_restores_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fixture::write_cpu_topology(root, 2, 6, 2);
    let mut f = FixtureRoot::at(root);
    f.nic("0000:01:00.0", "mlx5_core", "ens1", Some(0), 16, NamingScheme::Mlx5);
    f.nic("0000:81:00.0", "ice", "ens5", Some(1), 8, NamingScheme::IceTxRx);
    f.nic("0000:81:00.1", "ice", "ens6", Some(1), 8, NamingScheme::IceTxRx);
    f.nvme("0000:82:00.0", "nvme0", Some(1), 8, true, false);
    let irqs: Vec<u32> = f.irqs.values().flatten().copied().collect();

    let mut memory = TopologyMemory::default();
    apply(root, &plan(root, &mut memory));
    let placed = plan(root, &mut memory);
    assert_eq!(placed.summary().set, 0, "placed: nothing more to write");
    let before = desired(&placed);

    for cpu in 0..24 {
        let mut hotplug = Hotplug::new(root);
        hotplug.offline(cpu, &irqs);
        let online = (0..24).filter(|&c| c != cpu).collect::<CpuSet>();
        let lived_there: BTreeSet<u32> = before
            .iter()
            .filter(|(irq, want)| !want.intersects(&online) && placed_irq_action(&placed, **irq) != Action::Managed)
            .map(|(irq, _)| *irq)
            .collect();
        let down = plan(root, &mut memory);
        let written = apply(root, &down);
        assert_eq!(written, lived_there, "CPU {cpu} offline: written vs the IRQs that lived only on it");
        for irq in &written {
            assert!(!affinity(root, *irq).contains(cpu), "irq {irq} moved off CPU {cpu}");
        }

        hotplug.restore();
        let up = plan(root, &mut memory);
        assert_eq!(desired(&up), before, "CPU {cpu} back: the plan from before, exactly");
        assert_eq!(apply(root, &up), written, "CPU {cpu} back: the same IRQs go home");
    }
}

/// The action of `irq` in `plan`.
fn placed_irq_action(plan: &Plan, irq: u32) -> Action {
    plan.devices.iter().flat_map(|d| &d.irqs).find(|p| p.irq == irq).map(|p| p.action).unwrap()
}

#[test]
fn plan_beside_the_daemon_uses_its_topology_memory_while_a_cpu_is_offline() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fixture::write_cpu_topology(root, 2, 2, 2);
    let mut f = FixtureRoot::at(root);
    f.nic("0000:81:00.0", "ice", "ens5", Some(1), 4, NamingScheme::IceTxRx);
    let irqs: Vec<u32> = f.irqs.values().flatten().copied().collect();
    let mut memory = TopologyMemory::default();
    apply(root, &plan(root, &mut memory));
    // CPU 2 (node 1's first core) goes offline: without memory its sibling 6 looks like a core
    // of its own, and the homes of the node would be computed differently.
    let mut hotplug = Hotplug::new(root);
    hotplug.offline(2, &irqs);
    let daemon = desired(&plan(root, &mut memory));
    let alone =
        desired(&irqwise::pass::plan_pass(&Root::new(root), &Config::default(), &BTreeSet::new()).unwrap().plan);
    assert_ne!(alone, daemon, "without the daemon's memory the one-shot plan differs");
    let path = root.join(irqwise::topology::memory_file::MEMORY_FILE);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, irqwise::topology::memory_file::encode(&Root::new(root), &memory)).unwrap();
    let beside =
        desired(&irqwise::pass::plan_pass(&Root::new(root), &Config::default(), &BTreeSet::new()).unwrap().plan);
    assert_eq!(beside, daemon, "irqwise plan beside the daemon shows the daemon's plan");
}
