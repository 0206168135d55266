//! Planning is a pure function of a sample: a sample built in memory plans without any root, and
//! a sample read from a root plans the same after the root is gone.
//!
//! The in-memory machine: `SyntheticMachine::new(2, 2, 2)`, x86 numbering (siblings N / N+4):
//! node 0 holds cores {0,4} and {1,5}, node 1 cores {2,6} and {3,7}. Cores-first order from node
//! 1 is therefore 2, 3, 6, 7, then node 0's 0, 1, 4, 5 (hand-derived from the spec, not from the
//! code).

#[path = "common/fixture.rs"]
mod fixture;
#[path = "common/memory_devices.rs"]
mod memory_devices;

use std::collections::BTreeSet;
use std::sync::Arc;

use fixture::{FixtureRoot, NamingScheme};
use irqwise::config::Config;
use irqwise::cpuset::CpuSet;
use irqwise::devices::{Device, IrqVector, LooseIrq, QueueRole};
use irqwise::pass::plan_pass;
use irqwise::plan::from_sample::{plan_sample, PassMemory};
use irqwise::plan::{Action, Plan};
use irqwise::sample::reader::read_sample;
use irqwise::sample::Sample;
use irqwise::sysfs::Root;
use irqwise::topology::synthetic::SyntheticMachine;
use irqwise::topology::TopologyMemory;

fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

fn vector(irq: u32, role: QueueRole, queue: Option<u32>) -> IrqVector {
    memory_devices::vector(irq, role, queue, &cpus("0-7"))
}

/// A NIC on node 1 with one misc vector (IRQ 100) and rx queues 0 and 1 (IRQs 101, 102).
fn nic() -> Device {
    let vectors = vec![
        vector(100, QueueRole::Misc, None),
        vector(101, QueueRole::Rx, Some(0)),
        vector(102, QueueRole::Rx, Some(1)),
    ];
    memory_devices::nic("0000:81:00.0", Some(1), Some("eth0"), vectors)
}

fn desired(plan: &Plan, irq: u32) -> Option<CpuSet> {
    plan.find_irq(irq).and_then(|(_, p)| p.desired.clone())
}

#[test]
fn a_sample_built_in_memory_plans_without_any_root() {
    let mut config = Config::default();
    config.global.banned_cpus = cpus("0");
    let topology = SyntheticMachine::new(2, 2, 2).build();
    let mut sample = Sample::in_memory(config, topology, vec![nic()]);
    // A legacy line of no device, on every CPU: the guard takes the banned CPU out of its mask.
    sample.loose.push(LooseIrq { vector: vector(9, QueueRole::Misc, None), node: None });
    let known = BTreeSet::new();
    let planned = plan_sample(&sample, PassMemory { topology: None, known_managed: &known });
    let plan = &planned.plan;
    assert_eq!(plan.summary().irqs, 4, "three NIC vectors and the loose line: {plan:?}");
    assert_eq!(desired(plan, 101), Some(cpus("2")), "queue 0 on node 1's first core");
    assert_eq!(desired(plan, 102), Some(cpus("3")), "queue 1 on its second core");
    assert_eq!(desired(plan, 100), Some(cpus("2-3,6-7")), "misc on node 1's CPUs");
    assert_eq!(desired(plan, 9), Some(cpus("1-7")), "the loose line off the banned CPU");
    assert!(plan.writes().all(|(_, p)| p.action == Action::Set));
    assert_eq!(plan.writes().count(), 4);
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
}

#[test]
fn a_sample_read_from_a_root_plans_the_same_after_the_root_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    fixture::write_cpu_topology(dir.path(), 2, 4, 2);
    FixtureRoot::at(dir.path()).nic("0000:81:00.0", "ixgbe", "eth1", Some(1), 8, NamingScheme::TxRx).nvme(
        "0000:41:00.0",
        "nvme0",
        Some(0),
        4,
        true,
        false,
    );
    let root = Root::new(dir.path());
    let config = Config::default();
    let known = BTreeSet::new();
    let full = plan_pass(&root, &config, &known).unwrap().plan;
    let sample = read_sample(&root, Arc::new(config)).unwrap();
    drop(dir);
    assert!(!root.base().exists(), "the root is gone");
    let mut memory = TopologyMemory::default();
    memory.remember(&sample.topology);
    let planned = plan_sample(&sample, PassMemory { topology: Some(&memory), known_managed: &known });
    assert_eq!(planned.plan.devices.len(), 2);
    assert!(planned.plan.summary().irqs >= 14, "{:?}", planned.plan.summary());
    assert_eq!(planned.plan, full, "the sample holds everything the plan needs");
}

#[test]
fn shared_irqs_are_those_two_devices_list_each_with_its_owners_in_device_order() {
    let v = |irq| vector(irq, QueueRole::RxTx, Some(0));
    let devices = vec![
        memory_devices::nic("0000:01:00.0", Some(0), None, vec![v(30), v(31), v(40)]),
        // IRQ 50 twice in one device: one owner, not shared.
        memory_devices::nic("0000:02:00.0", Some(0), None, vec![v(50), v(50), v(31)]),
        memory_devices::nic("0000:03:00.0", Some(0), None, vec![v(40), v(31), v(60)]),
    ];
    let shared = irqwise::sample::shared_irqs(&devices);
    let expected: Vec<(u32, Vec<&str>)> =
        vec![(31, vec!["0000:01:00.0", "0000:02:00.0", "0000:03:00.0"]), (40, vec!["0000:01:00.0", "0000:03:00.0"])];
    let got: Vec<(u32, Vec<&str>)> =
        shared.iter().map(|(irq, owners)| (*irq, owners.iter().map(String::as_str).collect())).collect();
    assert_eq!(got, expected);
}
