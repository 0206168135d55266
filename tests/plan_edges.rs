//! Planner edge cases, on an in-memory machine (no filesystem): a `node` override naming a node
//! that does not exist or has no usable CPU, `admin_cpus` (used, all offline), `queues_per_cpu`
//! above the queue count, an NVMe controller with no I/O queue, offline CPUs in a `pin` list (kept
//! while one is online),
//! isolated CPUs named in `cpus` (used only with `allow_isolated`), and a device left without any
//! usable CPU.
//!
//! The machine: `SyntheticMachine::new(2, 2, 2)`, x86 numbering (siblings N / N+4): node 0 holds
//! cores {0,4} and {1,5}, node 1 cores {2,6} and {3,7}. Cores-first order from node 1 is
//! therefore 2, 3, 6, 7, then node 0's 0, 1, 4, 5 (hand-derived from the spec, not from the code).

#[path = "common/memory_devices.rs"]
mod memory_devices;

use std::collections::BTreeSet;

use irqwise::choices::StrategyName;
use irqwise::cpuset::CpuSet;
use irqwise::devices::{Device, DeviceClass, IrqVector, NvmeInfo, QueueRole};
use irqwise::plan::{build_plan, Action, DevicePlan, Placement, PlanContext};
use irqwise::policy::Policy;
use irqwise::sample::kernel_release::group_rules;
use irqwise::topology::synthetic::SyntheticMachine;
use irqwise::topology::Topology;

fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

fn machine() -> Topology {
    SyntheticMachine::new(2, 2, 2).build()
}

fn vector(irq: u32, role: QueueRole, queue: Option<u32>) -> IrqVector {
    memory_devices::vector(irq, role, queue, &cpus("0-7"))
}

/// A NIC on `node` with one misc vector (IRQ 100) and `queues` rx queues (IRQs 101..).
fn nic(node: Option<u32>, queues: u32) -> Device {
    let mut vectors = vec![vector(100, QueueRole::Misc, None)];
    vectors.extend((0..queues).map(|q| vector(101 + q, QueueRole::Rx, Some(q))));
    memory_devices::nic("0000:81:00.0", node, Some("eth0"), vectors)
}

fn plan_one(topo: &Topology, dev: Device, policy: Policy) -> (DevicePlan, Vec<String>) {
    let known = BTreeSet::new();
    let ctx = PlanContext {
        topo,
        home: None,
        first: None,
        group_rules: group_rules(topo),
        group_fact: None,
        respect_isolation: true,
        known_managed: &known,
        kernel_queues: &std::collections::BTreeMap::new(),
    };
    let plan = build_plan(&ctx, &[dev], &[policy]);
    (plan.devices[0].clone(), plan.warnings)
}

fn irq(d: &DevicePlan, irq: u32) -> &Placement {
    d.irqs.iter().find(|p| p.irq == irq).unwrap()
}

#[test]
fn node_override_naming_a_missing_node_falls_back_to_the_devices_node_and_says_so() {
    let policy = Policy { node: Some(7), ..Policy::default() };
    let (d, warnings) = plan_one(&machine(), nic(Some(1), 2), policy);
    // The device's own node 1: queue 0 on CPU 2, queue 1 on CPU 3, misc on node 1's CPUs.
    assert_eq!(irq(&d, 101).desired, Some(cpus("2")));
    assert_eq!(irq(&d, 102).desired, Some(cpus("3")));
    assert_eq!(irq(&d, 100).desired, Some(cpus("2-3,6-7")));
    assert_eq!(d.node, Some(1), "the node placement really started from");
    for p in &d.irqs {
        assert!(p.reason.contains("node 7") && p.reason.contains("does not exist"), "{}", p.reason);
    }
    assert!(warnings.iter().any(|w| w.contains("0000:81:00.0") && w.contains("node 7")), "{warnings:?}");
}

#[test]
fn node_override_without_numa_information_other_than_zero_is_ignored() {
    let mut topo = machine();
    topo.nodes.clear();
    for c in topo.cpus.values_mut() {
        c.node = None;
    }
    let (d, _) = plan_one(&topo, nic(None, 1), Policy { node: Some(1), ..Policy::default() });
    assert_eq!(irq(&d, 101).desired, Some(cpus("0")), "plain online order: CPU 0 first");
    assert_eq!(d.node, None);
    assert!(irq(&d, 101).reason.contains("node 1") && irq(&d, 101).reason.contains("does not exist"));
}

#[test]
fn node_whose_cpus_are_all_excluded_spreads_over_all_usable_cpus_and_says_so() {
    // Node 0's CPUs excluded: the NIC is sent to node 0, which has no usable CPU left.
    let policy = Policy { node: Some(0), exclude_cpus: cpus("0-1,4-5"), ..Policy::default() };
    let (d, _) = plan_one(&machine(), nic(Some(1), 1), policy);
    assert_eq!(irq(&d, 100).desired, Some(cpus("2-3,6-7")));
    assert!(irq(&d, 100).reason.contains("node 0 has no usable CPU"), "{}", irq(&d, 100).reason);
    assert_eq!(irq(&d, 101).desired, Some(cpus("2")), "next hop's first core");
    assert!(irq(&d, 101).reason.contains("node 0 has no usable CPU"), "{}", irq(&d, 101).reason);
}

#[test]
fn admin_cpus_decide_the_misc_vector_and_the_reason_says_so() {
    let policy = Policy { admin_cpus: Some(cpus("5")), ..Policy::default() };
    let (d, _) = plan_one(&machine(), nic(Some(1), 1), policy);
    assert_eq!(irq(&d, 100).desired, Some(cpus("5")));
    assert!(irq(&d, 100).reason.contains("admin_cpus"), "{}", irq(&d, 100).reason);
    assert_eq!(irq(&d, 101).desired, Some(cpus("2")), "queues are not affected");
}

#[test]
fn admin_cpus_all_offline_fall_back_to_the_nodes_cpus_and_say_so() {
    let mut topo = machine();
    topo.online.remove(5);
    let policy = Policy {
        strategy: Some(StrategyName::Pin),
        cpus: Some(cpus("2-3")),
        admin_cpus: Some(cpus("5")),
        ..Policy::default()
    };
    let (d, _) = plan_one(&topo, nic(Some(1), 1), policy);
    assert_eq!(irq(&d, 100).desired, Some(cpus("2-3")));
    let reason = &irq(&d, 100).reason;
    assert!(reason.contains("admin_cpus") && reason.contains("no online CPU"), "{reason}");
}

#[test]
fn offline_cpus_in_a_pin_list_stay_while_one_is_online_so_hotplug_does_not_rewrite_it() {
    let mut topo = machine();
    topo.online.remove(3);
    let policy = Policy { strategy: Some(StrategyName::Pin), cpus: Some(cpus("2-3")), ..Policy::default() };
    let (d, _) = plan_one(&topo, nic(Some(1), 2), policy.clone());
    for p in &d.irqs {
        assert_eq!(p.desired, Some(cpus("2-3")), "irq {}: the kernel accepts a mask with one online CPU", p.irq);
    }
    topo.online.remove(2);
    let (d, _) = plan_one(&topo, nic(Some(1), 2), policy);
    assert!(d.irqs.iter().all(|p| p.desired.is_none()), "no CPU of the list online: left alone");
}

#[test]
fn a_device_with_no_usable_cpu_is_skipped_with_that_reason() {
    let mut topo = machine();
    topo.online.remove_all(&cpus("6-7"));
    let policy = Policy { cpus: Some(cpus("6-7")), ..Policy::default() };
    let (d, _) = plan_one(&topo, nic(Some(1), 2), policy);
    for p in &d.irqs {
        assert_eq!((p.action, p.desired.clone()), (Action::Skip, None), "irq {}", p.irq);
        assert!(p.reason.contains("no usable CPU"), "{}", p.reason);
    }
}

#[test]
fn queues_per_cpu_above_the_queue_count_puts_every_queue_on_the_first_cpu() {
    let policy = Policy { queues_per_cpu: Some(8), ..Policy::default() };
    let (d, _) = plan_one(&machine(), nic(Some(1), 3), policy);
    for q in 0..3 {
        assert_eq!(irq(&d, 101 + q).desired, Some(cpus("2")), "queue {q}");
    }
}

#[test]
fn rx_and_tx_of_the_same_queue_share_a_cpu() {
    let mut dev = nic(Some(1), 2);
    dev.vectors.extend([vector(201, QueueRole::Tx, Some(0)), vector(202, QueueRole::Tx, Some(1))]);
    let (d, _) = plan_one(&machine(), dev, Policy::default());
    assert_eq!(irq(&d, 101).desired, irq(&d, 201).desired);
    assert_eq!(irq(&d, 102).desired, irq(&d, 202).desired);
    assert_ne!(irq(&d, 101).desired, irq(&d, 102).desired);
}

#[test]
fn isolated_cpus_are_used_only_when_a_rule_allows_them() {
    let mut topo = machine();
    topo.isolated = cpus("2-3");
    let (d, _) = plan_one(&topo, nic(Some(1), 2), Policy::default());
    assert_eq!(irq(&d, 101).desired, Some(cpus("6")), "cores-first from node 1 without 2 and 3: 6, 7");
    assert_eq!(irq(&d, 102).desired, Some(cpus("7")));
    let named = Policy { cpus: Some(cpus("2-3")), ..Policy::default() };
    let (d, warnings) = plan_one(&topo, nic(Some(1), 2), named.clone());
    assert!(d.irqs.iter().all(|p| p.desired.is_none()), "naming them is not enough: nothing usable");
    assert!(warnings.iter().any(|w| w.contains("isolated CPUs 2-3")), "{warnings:?}");
    let (d, _) = plan_one(&topo, nic(Some(1), 2), Policy { allow_isolated: true, ..named });
    assert_eq!(irq(&d, 101).desired, Some(cpus("2")));
    assert_eq!(irq(&d, 102).desired, Some(cpus("3")));
}

#[test]
fn nvme_without_io_queues_places_its_admin_queue_on_its_node() {
    let mut dev = nic(Some(0), 0);
    dev.class = DeviceClass::Nvme;
    dev.pci_class = 0x010802;
    dev.driver = Some("nvme".into());
    dev.vectors = vec![vector(100, QueueRole::Admin, None)];
    dev.nvme = Some(NvmeInfo {
        controller: "nvme0".into(),
        model: None,
        serial: None,
        namespace: None,
        blk_mq: Vec::new(),
        write_queues: None,
    });
    let (d, _) = plan_one(&machine(), dev, Policy::default());
    assert_eq!(d.strategy, StrategyName::ClusterGroup);
    assert_eq!(irq(&d, 100).desired, Some(cpus("0-1,4-5")));
    assert_eq!(irq(&d, 100).action, Action::Set);
}
