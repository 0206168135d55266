//! The catalog of fixture machines the golden-output test plans: every hwloc dump with devices
//! injected, and synthetic machines with every kind of device and config the planner handles.
//! Each entry is a root and a config tree built fresh in temporary directories.
#![allow(dead_code)]

use std::fs;
use std::path::Path;

use super::fixture::{write_cpu_topology, FixtureRoot, NamingScheme};
use irqwise::cpuset::CpuSet;

/// One machine of the catalog: its name (the golden file's stem), root and config trees.
pub struct Entry {
    pub name: String,
    pub root: tempfile::TempDir,
    pub config: tempfile::TempDir,
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn cpu_root(nodes: u32, cores: u32, threads: u32, kernel: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_cpu_topology(dir.path(), nodes, cores, threads);
    write(dir.path(), "proc/sys/kernel/osrelease", &format!("{kernel}\n"));
    dir
}

fn config(text: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    if let Some(t) = text {
        write(dir.path(), "etc/irqwise/conf.d/50-test.toml", t);
    }
    dir
}

/// Every device kind: NICs of each naming scheme, virtio, managed and movable NVMe, an NVMe-class
/// device of another driver, an xHCI controller and an INTx device.
fn every_device(root: &Path, kernel_ro: bool) {
    FixtureRoot::at(root)
        .nic("0000:81:00.0", "ice", "eth0", Some(1), 8, NamingScheme::IceTxRx)
        .nic("0000:41:00.0", "mlx5_core", "ens1", Some(0), 12, NamingScheme::Mlx5)
        .nic("0000:42:00.0", "ixgbe", "eth2", Some(0), 4, NamingScheme::TxRx)
        .nic("0000:43:00.0", "igb", "eth3", Some(1), 4, NamingScheme::SplitRxTx)
        .nic("0000:44:00.0", "vmxnet3", "eth4", None, 6, NamingScheme::Vmxnet3)
        .nic("0000:45:00.0", "ena", "eth5", Some(1), 3, NamingScheme::Ena)
        .virtio_nic("0000:00:03.0", 0, "eth6", Some(0), 4)
        .nvme("0000:82:00.0", "nvme0", Some(0), 4, true, kernel_ro)
        .nvme("0000:83:00.0", "nvme1", Some(1), 7, true, kernel_ro)
        .msi_device("0000:84:00.0", 0x010802, "nvme_vendor", Some(1), &["nvme2q0", "nvme2q1", "nvme2q2", "nvme2q3"])
        .msi_device("0000:00:14.0", 0x0c0330, "xhci_hcd", Some(0), &["xhci_hcd"])
        .intx_device("0000:00:1f.0", 0x060100, "lpc_ich", None, "i801_smbus");
}

const RULES: &str = r#"
[global]
banned_cpus = "0"

[[device]]
match = { driver = "mlx5_core" }
node = 1
order = "kernel"

[[device]]
match = { interface = "eth2" }
strategy = "pin"
cpus = "4-7"
admin_cpus = "3"

[[device]]
match = { pci = "0000:43:*" }
queues_per_cpu = 2
exclude_cpus = "8-11"

[[device]]
match = { class = "nvme", nvme_serial = "FIX000083000*" }
admin_cpus = "2"

[[device]]
match = { driver = "nvme_vendor" }
strategy = "cluster-group"

[[device]]
match = { driver = "xhci_hcd" }
strategy = "numa-hop"

[[device]]
match = { driver = "nothing-matches-this" }
strategy = "leave"
"#;

/// A synthetic machine of the catalog: name, nodes, cores per node, threads per core, kernel
/// release, read-only managed masks, the drop-in.
type Shape = (&'static str, u32, u32, u32, &'static str, bool, Option<&'static str>);

/// Synthetic machines, each with every device kind, under a few configs and kernels.
fn synthetic() -> Vec<Entry> {
    let mut out = Vec::new();
    let cases: [Shape; 6] = [
        ("two-node-6.1-default", 2, 8, 2, "6.1.0-57-amd64", false, None),
        ("two-node-6.12-default", 2, 8, 2, "6.12.0-test", true, None),
        ("two-node-6.11-rules", 2, 8, 2, "6.11.0", false, Some(RULES)),
        ("four-node-7.0-default", 4, 4, 2, "7.0.0", true, None),
        ("one-node-nosmt-6.1-default", 1, 6, 1, "6.1.0", false, None),
        ("three-node-6.9-rules", 3, 4, 1, "6.9.0", false, Some(RULES)),
    ];
    for (name, nodes, cores, threads, kernel, ro, rules) in cases {
        let root = cpu_root(nodes, cores, threads, kernel);
        every_device(root.path(), ro);
        out.push(Entry { name: name.into(), root, config: config(rules) });
    }

    // Isolation, nohz_full and an offline CPU: 32 CPUs, CPU 9 offline, 10-11 isolated, 12 nohz.
    let root = cpu_root(2, 8, 2, "6.1.0");
    let cpu = root.path().join("sys/devices/system/cpu");
    write(root.path(), "sys/devices/system/cpu/online", "0-8,10-31\n");
    write(root.path(), "sys/devices/system/cpu/isolated", "10-11\n");
    write(root.path(), "sys/devices/system/cpu/nohz_full", "12\n");
    fs::write(cpu.join("cpu9/online"), "0\n").unwrap();
    fs::remove_dir_all(cpu.join("cpu9/topology")).unwrap();
    every_device(root.path(), false);
    out.push(Entry { name: "two-node-isolated-offline".into(), root, config: config(None) });

    // A machine without NUMA information and without sys/kernel/irq (names from proc/interrupts).
    let root = cpu_root(1, 4, 2, "5.15.0");
    fs::remove_dir_all(root.path().join("sys/devices/system/node")).unwrap();
    every_device(root.path(), false);
    fs::remove_dir_all(root.path().join("sys/kernel/irq")).unwrap();
    out.push(Entry { name: "no-numa-proc-interrupts".into(), root, config: config(None) });

    // Unreadable and vanished IRQ files, a malformed hint, a malformed osrelease.
    let root = cpu_root(2, 4, 2, "garbage");
    let mut f = FixtureRoot::at(root.path());
    f.nic("0000:81:00.0", "ice", "eth0", Some(1), 4, NamingScheme::IceTxRx);
    let irqs = f.irqs_of("0000:81:00.0").to_vec();
    fs::remove_dir_all(root.path().join(format!("proc/irq/{}", irqs[1]))).unwrap();
    write(root.path(), &format!("proc/irq/{}/smp_affinity_list", irqs[2]), "0-3,zz\n");
    write(root.path(), &format!("proc/irq/{}/affinity_hint", irqs[3]), "not-a-mask\n");
    out.push(Entry { name: "broken-files".into(), root, config: config(None) });
    out
}

/// The online CPUs of an hwloc dump: `cpu/online`, else the `cpuN` directories not offline.
fn dump_online(m: &Path) -> CpuSet {
    let cpu = m.join("sys/devices/system/cpu");
    if let Ok(t) = fs::read_to_string(cpu.join("online")) {
        return CpuSet::parse_list(t.trim()).unwrap();
    }
    fs::read_dir(&cpu)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse::<u32>().ok())
        .filter(|n| fs::read_to_string(cpu.join(format!("cpu{n}/online"))).map_or(true, |t| t.trim() != "0"))
        .collect()
}

/// Every hwloc machine with an 8-queue mlx5 NIC on its last node with online CPUs, a 6-queue ice
/// NIC on node 0, a virtio NIC and a managed 4-queue NVMe on node 0.
fn hwloc() -> Vec<Entry> {
    let all = super::fixture::extract_hwloc(None);
    let mut names: Vec<String> = fs::read_dir(all.path())
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let root = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", all.path().join(&name).display()))
            .arg(root.path())
            .status()
            .unwrap();
        assert!(ok.success());
        let m = root.path();
        let online = dump_online(m);
        let node = (0..64u32).rev().find(|n| {
            fs::read_to_string(m.join(format!("sys/devices/system/node/node{n}/cpulist")))
                .is_ok_and(|t| CpuSet::parse_list(t.trim()).unwrap().intersects(&online))
        });
        FixtureRoot::at(m)
            .nic("0000:81:00.0", "mlx5_core", "ens1", node, 8, NamingScheme::Mlx5)
            .nic("0000:41:00.0", "ice", "eth0", Some(0), 6, NamingScheme::IceTxRx)
            .virtio_nic("0000:00:03.0", 0, "eth6", None, 2)
            .nvme("0000:82:00.0", "nvme0", Some(0), 4, true, true);
        out.push(Entry { name: format!("hwloc-{name}"), root, config: config(None) });
    }
    out
}

/// The whole catalog, in a stable order.
pub fn entries() -> Vec<Entry> {
    let mut all = synthetic();
    all.extend(hwloc());
    all
}
