//! Acceptance: bans and isolation cover every IRQ, through the real binary on fixture roots. An
//! mpt3sas HBA, a GPU, an unbound device and a non-PCI IRQ all leave the banned and isolated CPUs;
//! kernel-managed IRQs are never written; `guard = "placed"` keeps today's behaviour; cores-first
//! survives bans; a rule's `cpus` naming isolated CPUs needs `allow_isolated = true`.
//!
//! The machine: 2 nodes × 6 cores × 2 threads (siblings N / N+12): node 0 = 0-5,12-17, node 1 =
//! 6-11,18-23.

#[path = "common/acceptance.rs"]
mod acceptance;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use acceptance::fixture::{FixtureRoot, NamingScheme};
use acceptance::*;
use irqwise::cpuset::CpuSet;
use serde_json::Value;

const HBA: &str = "0000:03:00.0";
const GPU: &str = "0000:04:00.0";
const LOOSE_DEV: &str = "0000:05:00.0";
const NVME: &str = "0000:06:00.0";
const NIC: &str = "0000:81:00.0";
/// A non-PCI IRQ (an ACPI line).
const ACPI: u32 = 9;

fn machine() -> tempfile::TempDir {
    cpu_root(2, 6, 2, "6.12.0-1-amd64")
}

/// The machine: the HBA keeps `3,15`, the GPU `0-23`, an unbound device and IRQ 9 every
/// CPU; an NVMe with read-only managed masks; a NIC.
fn every_kind(root: &Path) -> BTreeMap<&'static str, Vec<u32>> {
    let mut f = FixtureRoot::at(root);
    f.msi_device(HBA, 0x010700, "mpt3sas", Some(0), &["mpt3sas0-msix0", "mpt3sas0-msix1"]);
    for &irq in &f.irqs_of(HBA).to_vec() {
        f.irq_affinity(irq, &cpus("3,15"));
    }
    f.msi_device(GPU, 0x030000, "amdgpu", Some(0), &["amdgpu"]);
    f.msi_device(LOOSE_DEV, 0x058000, "somedrv", Some(1), &["somedrv"]);
    fs::remove_file(root.join(format!("sys/devices/pci0000:05/{LOOSE_DEV}/driver"))).unwrap();
    f.nvme(NVME, "nvme0", Some(0), 4, true, true);
    f.nic(NIC, "ice", "eth0", Some(1), 8, NamingScheme::IceTxRx);
    write_file(root, &format!("proc/irq/{ACPI}/smp_affinity_list"), "0-23\n");
    write_file(root, &format!("proc/irq/{ACPI}/smp_affinity"), "ffffff\n");
    write_file(root, &format!("proc/irq/{ACPI}/node"), "0\n");
    write_file(root, &format!("sys/kernel/irq/{ACPI}/actions"), "acpi\n");
    let mut out = BTreeMap::new();
    for (name, bdf) in [("hba", HBA), ("gpu", GPU), ("unbound", LOOSE_DEV), ("nvme", NVME), ("nic", NIC)] {
        out.insert(name, f.irqs_of(bdf).to_vec());
    }
    out.insert("acpi", vec![ACPI]);
    out
}

fn mask(root: &Path, irq: u32) -> CpuSet {
    sysfs_list(root, &format!("proc/irq/{irq}/smp_affinity_list"))
}

#[test]
fn banned_and_isolated_cpus_are_removed_from_every_movable_irq() {
    let dir = machine();
    let root = dir.path();
    let by_kind = every_kind(root);
    write_file(root, "sys/devices/system/cpu/isolated", "20-21\n");
    let nvme_io: Vec<u32> = by_kind["nvme"][1..].to_vec();
    let nvme_before: Vec<CpuSet> = nvme_io.iter().map(|&i| mask(root, i)).collect();
    let cfg = config_with("[global]\nbanned_cpus = \"2-7\"\n");
    let plan = plan_json(root, cfg.path());
    let hba = &irqs(device(&plan, HBA))[0];
    assert_eq!(hba["action"], "set", "{hba}");
    assert!(hba["reason"].as_str().unwrap().starts_with("guard: banned CPUs 3 removed"), "{hba}");
    run_ok(root, cfg.path(), &["apply"]);
    let forbidden = cpus("2-7,20-21");
    for kind in ["hba", "gpu", "unbound", "acpi", "nic"] {
        for &irq in &by_kind[kind] {
            let m = mask(root, irq);
            assert!(!m.intersects(&forbidden), "{kind} irq {irq} still on {m}");
            assert!(!m.is_empty());
        }
    }
    assert_eq!(mask(root, by_kind["hba"][0]), cpus("15"), "the HBA keeps what was allowed of its mask");
    let after: Vec<CpuSet> = nvme_io.iter().map(|&i| mask(root, i)).collect();
    assert_eq!(after, nvme_before, "kernel-managed NVMe IRQs are never written");
    let again = plan_json(root, cfg.path());
    let sets = again["devices"].as_array().unwrap().iter().flat_map(irqs).filter(|p| p["action"] == "set").count();
    assert_eq!(sets, 0, "a second pass has nothing left to guard");
}

#[test]
fn guard_placed_and_a_rule_exemption_keep_todays_behaviour() {
    let dir = machine();
    let root = dir.path();
    let by_kind = every_kind(root);
    let cfg = config_with("[global]\nbanned_cpus = \"2-7\"\nguard = \"placed\"\n");
    run_ok(root, cfg.path(), &["apply"]);
    assert_eq!(mask(root, by_kind["hba"][0]), cpus("3,15"));
    assert_eq!(mask(root, by_kind["gpu"][0]), cpus("0-23"));
    assert_eq!(mask(root, ACPI), cpus("0-23"));
    let cfg =
        config_with(&format!("[global]\nbanned_cpus = \"2-7\"\n\n[[device]]\nmatch.pci = \"{GPU}\"\nguard = false\n"));
    run_ok(root, cfg.path(), &["apply"]);
    assert_eq!(mask(root, by_kind["gpu"][0]), cpus("0-23"), "exempted by its rule");
    assert_eq!(mask(root, by_kind["hba"][0]), cpus("15"));
}

#[test]
fn passthrough_irqs_follow_the_guest_not_the_guard() {
    let dir = machine();
    let root = dir.path();
    let mut f = FixtureRoot::at(root);
    f.msi_device("0000:82:00.1", 0x020000, "vfio-pci", Some(1), &["vfio-msix[0](0000:82:00.1)"]);
    let irq = f.irqs_of("0000:82:00.1")[0];
    f.irq_affinity(irq, &cpus("4"));
    let cfg = config_with("[global]\nbanned_cpus = \"2-7\"\n");
    run_ok(root, cfg.path(), &["apply"]);
    assert_eq!(mask(root, irq), cpus("4"), "a VM's vCPU pinning is not undone");
}

/// The single CPU of each queue IRQ of the NIC, by queue.
fn queue_cpus(plan: &Value) -> Vec<u32> {
    desired_per_queue(device(plan, NIC)).iter().map(|s| s.first().unwrap()).collect()
}

#[test]
fn cores_first_survives_bans() {
    let dir = machine();
    let root = dir.path();
    FixtureRoot::at(root).nic(NIC, "ice", "eth0", Some(1), 8, NamingScheme::IceTxRx);
    let cfg = config_with("[global]\nbanned_cpus = \"10-11\"\n");
    let plan = plan_json(root, cfg.path());
    let first6 = &queue_cpus(&plan)[..6];
    let cores: BTreeSet<String> = first6.iter().map(|&c| core_of(root, c).to_list_string()).collect();
    assert_eq!(cores.len(), 6, "the first 6 queues on 6 distinct cores: {first6:?}");
    assert!(first6.iter().all(|c| !cpus("10-11").contains(*c)));
}

#[test]
fn a_rules_cpus_use_isolated_cpus_only_when_it_says_so() {
    let dir = machine();
    let root = dir.path();
    FixtureRoot::at(root).nic(NIC, "ice", "eth0", Some(1), 8, NamingScheme::IceTxRx);
    write_file(root, "sys/devices/system/cpu/isolated", "8-9\n");
    write_file(root, "sys/devices/system/cpu/nohz_full", "10-11\n");
    let rule = format!("[[device]]\nmatch.pci = \"{NIC}\"\ncpus = \"6-11,18-23\"\n");
    let plan = plan_json(root, config_with(&rule).path());
    assert!(queue_cpus(&plan).iter().all(|c| !cpus("8-11").contains(*c)), "{:?}", queue_cpus(&plan));
    let warnings = plan["warnings"].to_string();
    assert!(warnings.contains("isolated CPUs 8-9") && warnings.contains("nohz_full CPUs 10-11"), "{warnings}");
    let plan = plan_json(root, config_with(&format!("{rule}allow_isolated = true\n")).path());
    assert!(queue_cpus(&plan).iter().any(|c| cpus("8-11").contains(*c)), "allowed on purpose: {:?}", queue_cpus(&plan));
    assert!(!plan["warnings"].to_string().contains("isolated CPUs"));
}
