//! Acceptance: placement for the whole machine, through the real binary on fixture roots. Two
//! ports of one card share their node instead of stacking; an mlx5 spill avoids the CPUs the
//! other node's NICs need; `spill = "local"`; passthrough and unbound devices are left alone;
//! SAS/RAID HBAs are storage, their managed IRQs reported and never written; NVMe read queues
//! are predicted as their own IRQ set.
//!
//! The machine: 2 nodes × 6 cores × 2 threads (x86 numbering: siblings N / N+12), node 0 =
//! 0-5,12-17, node 1 = 6-11,18-23. Expectations come from the fixture's files and the kernel's
//! rules worked out on them (checked against the golden vectors), never from the planner or its
//! algorithms.

#[path = "common/acceptance.rs"]
mod acceptance;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use acceptance::fixture::{FixtureRoot, NamingScheme};
use acceptance::*;
use irqwise::cpuset::CpuSet;
use serde_json::Value;

const ENS5: &str = "0000:81:00.0";
const ENS6: &str = "0000:81:00.1";
const MLX5: &str = "0000:01:00.0";

fn machine() -> tempfile::TempDir {
    cpu_root(2, 6, 2, "6.1.0-28-amd64")
}

/// The single CPU of each queue unit of a device (rx i and tx i counted once).
fn queue_cpus(dev: &Value) -> BTreeMap<u64, u32> {
    queue_irqs(dev, None)
        .iter()
        .map(|p| {
            let s = set_of(&p["desired"]);
            assert_eq!(s.len(), 1, "one CPU per queue: {p}");
            (p["queue"].as_u64().unwrap(), s.first().unwrap())
        })
        .collect()
}

/// Queues per CPU over `devices`.
fn load(plan: &Value, devices: &[&str]) -> BTreeMap<u32, u32> {
    let mut load = BTreeMap::new();
    for bdf in devices {
        for cpu in queue_cpus(device(plan, bdf)).values() {
            *load.entry(*cpu).or_default() += 1;
        }
    }
    load
}

#[test]
fn two_ports_on_one_node_with_room_get_disjoint_cpus() {
    let dir = machine();
    let mut f = FixtureRoot::at(dir.path());
    f.nic(ENS5, "ice", "ens5", Some(1), 4, NamingScheme::IceTxRx);
    f.nic(ENS6, "ice", "ens6", Some(1), 4, NamingScheme::IceTxRx);
    let plan = plan_json(dir.path(), empty_config().path());
    let a: CpuSet = queue_cpus(device(&plan, ENS5)).into_values().collect();
    let b: CpuSet = queue_cpus(device(&plan, ENS6)).into_values().collect();
    let node1 = node_cpus(dir.path(), 1);
    assert_eq!((a.len(), b.len()), (4, 4), "{a} / {b}");
    assert!(!a.intersects(&b), "ens5 {a} and ens6 {b} share CPUs");
    assert!(a.union(&b).is_subset(&node1));
    let cores: std::collections::BTreeSet<String> =
        a.union(&b).iter().map(|c| core_of(dir.path(), c).to_list_string()).collect();
    assert_eq!(cores.len(), 6, "one thread of every core of node 1 before a sibling: {a} {b}");
}

#[test]
fn two_ports_that_outnumber_the_node_differ_by_at_most_one_queue_per_cpu() {
    let dir = machine();
    let mut f = FixtureRoot::at(dir.path());
    f.nic(ENS5, "ice", "ens5", Some(1), 8, NamingScheme::IceTxRx);
    f.nic(ENS6, "ice", "ens6", Some(1), 8, NamingScheme::IceTxRx);
    let plan = plan_json(dir.path(), empty_config().path());
    let load = load(&plan, &[ENS5, ENS6]);
    let node1 = node_cpus(dir.path(), 1);
    let counts: Vec<u32> = node1.iter().map(|c| load.get(&c).copied().unwrap_or(0)).collect();
    assert!(load.keys().all(|&c| node1.contains(c)), "all on node 1: {load:?}");
    assert_eq!(counts.iter().sum::<u32>(), 16);
    assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1, "per-CPU queues on node 1: {counts:?}");
    // Each reason counts the queues on its CPU, as the plan shows them.
    for bdf in [ENS5, ENS6] {
        for p in queue_irqs(device(&plan, bdf), None) {
            let cpu = set_of(&p["desired"]).first().unwrap();
            let there = match load[&cpu] {
                1 => "1 queue there)".to_string(),
                n => format!("{n} queues there)"),
            };
            assert!(p["reason"].as_str().unwrap().ends_with(&there), "CPU {cpu} holds {}: {p}", load[&cpu]);
        }
    }
}

#[test]
fn an_mlx5_spill_takes_node_1_cpus_its_nics_leave_free() {
    let dir = machine();
    let mut f = FixtureRoot::at(dir.path());
    f.nic(MLX5, "mlx5_core", "ens1", Some(0), 16, NamingScheme::Mlx5);
    f.nic(ENS5, "ice", "ens5", Some(1), 4, NamingScheme::IceTxRx);
    f.nic(ENS6, "ice", "ens6", Some(1), 4, NamingScheme::IceTxRx);
    let plan = plan_json(dir.path(), empty_config().path());
    let mlx5 = queue_cpus(device(&plan, MLX5));
    let node0 = node_cpus(dir.path(), 0);
    let spilled: CpuSet = mlx5.values().copied().filter(|&c| !node0.contains(c)).collect();
    assert_eq!(spilled.len(), 4, "16 queues on 12 CPUs of node 0: 4 spill to node 1 ({mlx5:?})");
    let nics: CpuSet =
        [ENS5, ENS6].iter().flat_map(|b| queue_cpus(device(&plan, b)).into_values().collect::<Vec<_>>()).collect();
    assert!(!spilled.intersects(&nics), "the spill {spilled} stacks on node 1's NICs {nics}");

    let local = config_with("[global]\nspill = \"local\"\n");
    let plan = plan_json(dir.path(), local.path());
    let mlx5 = queue_cpus(device(&plan, MLX5));
    assert!(mlx5.values().all(|&c| node0.contains(c)), "spill = local keeps every queue on node 0: {mlx5:?}");
    let load = load(&plan, &[MLX5]);
    let counts: Vec<u32> = node0.iter().map(|c| load.get(&c).copied().unwrap_or(0)).collect();
    assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1, "{counts:?}");
    let per_device = config_with(&format!("[[device]]\nmatch.pci = \"{MLX5}\"\nspill = \"local\"\n"));
    let plan = plan_json(dir.path(), per_device.path());
    assert!(queue_cpus(device(&plan, MLX5)).values().all(|&c| node0.contains(c)), "per-device spill");
}

/// Every IRQ mask of the root, as written.
fn masks(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in fs::read_dir(root.join("proc/irq")).unwrap().flatten() {
        if let Ok(t) = fs::read_to_string(e.path().join("smp_affinity_list")) {
            out.insert(e.file_name().to_string_lossy().into_owned(), t);
        }
    }
    out
}

#[test]
fn passthrough_and_unbound_devices_are_left_alone() {
    let dir = machine();
    let root = dir.path();
    let mut f = FixtureRoot::at(root);
    let pinned = cpus("7");
    let cases = [
        ("0000:82:00.1", "vfio-pci", "vfio-msix[0](0000:82:00.1)"),
        ("0000:82:00.2", "uio_pci_generic", "uio_pci_generic"),
        ("0000:82:00.3", "igb_uio", "igb_uio"),
        ("0000:82:00.4", "pci-stub", "pci-stub"),
        ("0000:82:00.5", "ice", "ice-unbound-TxRx-0"),
    ];
    for (bdf, driver, name) in cases {
        f.msi_device(bdf, 0x020000, driver, Some(1), &[name]);
        let irq = f.irqs_of(bdf)[0];
        f.irq_affinity(irq, &pinned);
    }
    fs::remove_file(root.join("sys/devices/pci0000:82/0000:82:00.5/driver")).unwrap();
    let plan = plan_json(root, empty_config().path());
    for (bdf, driver, _) in cases {
        let dev = device(&plan, bdf);
        assert_eq!(dev["strategy"], "leave", "{bdf} ({driver})");
        let p = &irqs(dev)[0];
        assert_eq!(p["action"], "skip", "{p}");
        let reason = p["reason"].as_str().unwrap();
        let says = if bdf.ends_with(".5") { "no driver".to_string() } else { format!("bound to {driver}") };
        assert!(reason.contains(&says), "{bdf}: {reason}");
    }
    let before = masks(root);
    run_ok(root, empty_config().path(), &["apply"]);
    assert_eq!(masks(root), before, "nothing written");
    // A rule may still take one over.
    let rule = config_with("[[device]]\nmatch.pci = \"0000:82:00.1\"\nstrategy = \"numa-hop\"\n");
    let plan = plan_json(root, rule.path());
    assert_eq!(device(&plan, "0000:82:00.1")["strategy"], "numa-hop");
}

/// The kernel's 6 groups on [`machine`] (2 nodes of 6 two-thread cores, no clusters), from the
/// fixture's own files: group_cpus_evenly(6) gives each node 3 groups of 4 CPUs, its cores two by
/// two in order of their first CPU, node 1's groups first (the kernel's heapsort of two equal
/// nodes puts the second first, as golden vector t02's two equal sockets show).
fn kernel_groups_of_six(root: &Path) -> Vec<CpuSet> {
    let mut groups = Vec::new();
    for node in [1, 0] {
        let mut cores: Vec<CpuSet> = node_cpus(root, node).iter().map(|c| core_of(root, c)).collect();
        cores.sort_by_key(CpuSet::first);
        cores.dedup();
        assert_eq!(cores.len(), 6);
        groups.extend(cores.chunks(2).map(|two| two[0].union(&two[1])));
    }
    groups
}

/// Makes IRQ `irq`'s mask files read-only, as kernels ≥ 6.12 show a managed IRQ.
fn read_only(root: &Path, irq: u32) {
    use std::os::unix::fs::PermissionsExt;
    for f in ["smp_affinity", "smp_affinity_list"] {
        fs::set_permissions(root.join(format!("proc/irq/{irq}/{f}")), fs::Permissions::from_mode(0o444)).unwrap();
    }
}

#[test]
fn storage_hbas_report_managed_irqs_never_write_them_and_claim_no_false_match() {
    let dir = machine();
    let root = dir.path();
    let mut f = FixtureRoot::at(root);
    // megaraid_sas: one pre-vector (msix0, not managed), 6 managed reply queues on the kernel's
    // groups, except msix3 which someone else's kernel put elsewhere.
    let megasas: Vec<String> = (0..7).map(|i| format!("megasas0-msix{i}")).collect();
    let names: Vec<&str> = megasas.iter().map(String::as_str).collect();
    f.msi_device("0000:03:00.0", 0x010400, "megaraid_sas", Some(0), &names);
    let groups = kernel_groups_of_six(root);
    let mega = f.irqs_of("0000:03:00.0").to_vec();
    for (i, &irq) in mega.iter().enumerate().skip(1) {
        let mask = if i == 3 { cpus("0") } else { groups[i - 1].clone() };
        f.irq_affinity(irq, &mask);
        read_only(root, irq);
    }
    // mpt3sas with writable masks (a kernel before 6.12): nothing says which are managed.
    let mpt: Vec<String> = (0..4).map(|i| format!("mpt3sas0-msix{i}")).collect();
    let names: Vec<&str> = mpt.iter().map(String::as_str).collect();
    f.msi_device("0000:04:00.0", 0x010700, "mpt3sas", Some(1), &names);
    // smartpqi: names carry no index, so nothing is predicted.
    f.msi_device("0000:05:00.0", 0x010700, "smartpqi", Some(1), &["smartpqi", "smartpqi"]);
    for &irq in &f.irqs_of("0000:05:00.0").to_vec() {
        read_only(root, irq);
    }

    let plan = plan_json(root, empty_config().path());
    let mega_plan = device(&plan, "0000:03:00.0");
    assert_eq!(mega_plan["class"], "storage");
    let ps = irqs(mega_plan);
    assert_eq!(ps[0]["action"], "skip", "the pre-vector is left alone: {}", ps[0]);
    for (i, p) in ps.iter().enumerate().skip(1) {
        assert_eq!(p["action"], "managed", "{p}");
        assert_eq!(set_of(&p["desired"]), groups[i - 1], "msix{i} predicted as group {}", i - 1);
        assert_eq!(p["mismatch"], i == 3, "{p}");
    }
    for p in irqs(device(&plan, "0000:04:00.0")) {
        assert_eq!(p["action"], "skip", "{p}");
        assert!(p["reason"].as_str().unwrap().contains("storage"), "{p}");
    }
    for p in irqs(device(&plan, "0000:05:00.0")) {
        assert_eq!(p["action"], "managed", "{p}");
        assert!(p.get("mismatch").is_none_or(Value::is_null), "never claimed to match: {p}");
        assert!(p["reason"].as_str().unwrap().contains("chosen by the driver"), "{p}");
    }
    let before = masks(root);
    run_ok(root, empty_config().path(), &["apply"]);
    assert_eq!(masks(root), before, "no storage IRQ written (root could have: the mode is only a hint)");
}

#[test]
fn nvme_read_queues_are_predicted_as_their_own_irq_set() {
    // 1 node × 4 cores × 2 threads: siblings N / N+4. With write_queues = 2 and 4 I/O vectors,
    // nvme_calc_irq_sets() makes a default set of 2 and a read set of 2; group_cpus_evenly(2)
    // keeps siblings together: {0,1,4,5} and {2,3,6,7} for each set (worked out by hand).
    let dir = cpu_root(1, 4, 2, "6.1.0-28-amd64");
    let root = dir.path();
    let mut f = FixtureRoot::at(root);
    f.nvme("0000:02:00.0", "nvme0", Some(0), 4, true, true);
    let io = f.irqs_of("0000:02:00.0")[1..].to_vec();
    let want = [cpus("0-1,4-5"), cpus("2-3,6-7"), cpus("0-1,4-5"), cpus("2-3,6-7")];
    let mq = "sys/devices/pci0000:02/0000:02:00.0/nvme/nvme0/nvme0n1/mq";
    for (i, (&irq, set)) in io.iter().zip(&want).enumerate() {
        f.irq_affinity(irq, set);
        read_only(root, irq);
        let q = root.join(format!("{mq}/{i}"));
        fs::remove_dir_all(&q).unwrap();
        fs::create_dir_all(&q).unwrap();
        let list: Vec<String> = set.iter().map(|c| c.to_string()).collect();
        fs::write(q.join("cpu_list"), format!("{}\n", list.join(", "))).unwrap();
    }
    write_file(root, "sys/module/nvme/parameters/write_queues", "2\n");
    let plan = plan_json(root, empty_config().path());
    let queues = queue_irqs(device(&plan, "0000:02:00.0"), None);
    assert_eq!(queues.len(), 4, "the four I/O queues are in the plan");
    for p in queues {
        assert_eq!((p["action"].as_str(), &p["mismatch"]), (Some("managed"), &Value::Bool(false)), "{p}");
    }
    // The same device without write_queues is one set of 4: every queue now disagrees.
    write_file(root, "sys/module/nvme/parameters/write_queues", "0\n");
    let plan = plan_json(root, empty_config().path());
    let queues = queue_irqs(device(&plan, "0000:02:00.0"), None);
    assert_eq!(queues.len(), 4);
    assert!(queues.iter().all(|p| p["mismatch"] == true));
}

#[test]
fn only_the_vectors_the_kernel_manages_are_predicted_not_their_writable_neighbours() {
    // A virtio device of class "other mass storage" (not an HBA) with four request queues, the
    // first two read-only (kernel-managed, as kernels >= 6.12 show them), the last two writable,
    // placed by a rule: only the first two are the kernel's to place.
    let dir = machine();
    let root = dir.path();
    let mut f = FixtureRoot::at(root);
    f.msi_device(
        "0000:06:00.0",
        0x018000,
        "virtio-pci",
        Some(0),
        &["virtio2-req.0", "virtio2-req.1", "virtio2-req.2", "virtio2-req.3"],
    );
    let irqs_of = f.irqs_of("0000:06:00.0").to_vec();
    assert_eq!(irqs_of.len(), 4);
    for &irq in &irqs_of[..2] {
        read_only(root, irq);
    }
    let rule = config_with("[[device]]\nmatch.pci = \"0000:06:00.0\"\nstrategy = \"cluster-group\"\n");
    let plan = plan_json(root, rule.path());
    let dev = device(&plan, "0000:06:00.0");
    assert_eq!((&dev["class"], &dev["strategy"]), (&Value::from("other"), &Value::from("cluster-group")), "{dev}");
    let ps = queue_irqs(dev, None);
    assert_eq!(ps.len(), 4, "{dev}");
    for (i, p) in ps.iter().enumerate() {
        let managed = p["action"] == "managed";
        assert_eq!(managed, i < 2, "request queue {i}: {p}");
        assert_eq!(p["reason"].as_str().unwrap_or("").contains("expected group"), i < 2, "{p}");
        assert_eq!(p["action"] == "set", i >= 2, "the rule places the writable ones: {p}");
    }
}

#[test]
fn a_placement_to_write_carries_its_enospc_fallbacks_wider_each_step() {
    // ens5's queue 0 on node 1 (6-11,18-23; siblings N, N+12; no clusters or LLC files beyond
    // the node): its fallbacks widen from its core to every usable CPU.
    let dir = machine();
    let mut f = FixtureRoot::at(dir.path());
    f.nic(ENS5, "ice", "ens5", Some(1), 4, NamingScheme::IceTxRx);
    let plan = plan_json(dir.path(), empty_config().path());
    let ps = queue_irqs(device(&plan, ENS5), None);
    assert_eq!(ps.len(), 4);
    for p in ps {
        assert_eq!(p["action"], "set", "{p}");
        let want = set_of(&p["desired"]);
        let cpu = want.first().unwrap();
        let steps: Vec<(String, CpuSet)> = p["fallbacks"]
            .as_array()
            .unwrap_or_else(|| panic!("no fallbacks: {p}"))
            .iter()
            .map(|f| (f["step"].as_str().unwrap().to_string(), set_of(&f["cpus"])))
            .collect();
        assert_eq!(
            steps.first().map(|s| (s.0.as_str(), s.1.clone())),
            Some(("same core", core_of(dir.path(), cpu))),
            "{p}"
        );
        assert_eq!(steps.last().map(|s| s.1.clone()), Some(cpus("0-23")), "the last is every usable CPU: {p}");
        for pair in steps.windows(2) {
            assert!(pair[0].1.is_subset(&pair[1].1) && pair[0].1 != pair[1].1, "each wider: {p}");
        }
    }
    // Applied, nothing is left to write, and a kept IRQ carries none.
    run_ok(dir.path(), empty_config().path(), &["apply"]);
    let plan = plan_json(dir.path(), empty_config().path());
    for p in queue_irqs(device(&plan, ENS5), None) {
        assert_eq!(p["action"], "keep", "{p}");
        assert!(p.get("fallbacks").is_none(), "{p}");
    }
}
