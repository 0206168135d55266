//! IRQ names from `sys/kernel/irq/N/actions` (the fast path) give exactly the discovery that
//! `/proc/interrupts` gives, on fixture roots and on every hwloc machine with injected devices.
//!
//! Each root is discovered as written (a SPARSE_IRQ kernel: both sources) and from copies that
//! hide one source; the `Discovery` JSON (devices and warnings, root path normalised) must match.
//! The names themselves are checked against the kernel's formats by hand in one case.

#[path = "common/fixture.rs"]
mod fixture;

use std::fs;
use std::path::Path;
use std::process::Command;

use fixture::{extract_hwloc, node_topology, write_cpu_topology, FixtureRoot, NamingScheme};
use irqwise::devices::discover::{discover_devices, Discovery};
use irqwise::sysfs::Root;
use irqwise::topology::Topology;

/// Discovers `dir` with `topo` and returns the Discovery JSON with `dir` written as `ROOT`.
fn discovery_json(dir: &Path, topo: &Topology) -> (Discovery, String) {
    let d = discover_devices(&Root::new(dir), topo).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let json = serde_json::to_string_pretty(&d).unwrap().replace(&dir.display().to_string(), "ROOT");
    (d, json)
}

/// A copy of the root at `from` (links, modes and all) in a fresh temporary directory.
fn copy_root(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    let ok = Command::new("cp").arg("-a").arg(format!("{}/.", from.display())).arg(to.path()).status().unwrap();
    assert!(ok.success(), "cp -a {}", from.display());
    to
}

/// The same root as a kernel without SPARSE_IRQ shows it, without `sys/kernel/irq`: a fresh
/// directory of symlinks to everything else (cheaper than a copy of a whole machine).
fn without_sys_kernel_irq(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    // A copy, not links: reads resolve inside the root, so links out of it lead nowhere.
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", from.display()))
        .arg(to.path())
        .status()
        .unwrap();
    assert!(status.success());
    fs::remove_dir_all(to.path().join("sys/kernel/irq")).unwrap();
    to
}

/// Rewrites IRQ `irq`'s line of `proc/interrupts` so its action list is `names` (", "-joined,
/// as the kernel's show_interrupts() prints it) and its `actions` file (","-joined).
fn share_irq(fx: &FixtureRoot, irq: u32, names: &[&str]) {
    let path = fx.path("proc/interrupts");
    let text = fs::read_to_string(&path).unwrap();
    let label = format!("{irq:>4}:");
    let rewritten: Vec<String> = text
        .lines()
        .map(|line| match line.strip_prefix(&label) {
            Some(_) => {
                let cut = line.rfind("  ").unwrap() + 2;
                format!("{}{}", &line[..cut], names.join(", "))
            }
            None => line.to_string(),
        })
        .collect();
    fs::write(&path, rewritten.join("\n") + "\n").unwrap();
    fs::write(fx.path(&format!("sys/kernel/irq/{irq}/actions")), format!("{}\n", names.join(","))).unwrap();
}

#[test]
fn fixture_root_names_agree_between_sys_kernel_irq_and_proc_interrupts() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(write_cpu_topology(dir.path(), 2, 8, 2), 32);
    let mut fx = FixtureRoot::at(dir.path());
    let schemes = [
        ("0000:01:00.0", "ice", NamingScheme::IceTxRx),
        ("0000:02:00.0", "ixgbe", NamingScheme::TxRx),
        ("0000:03:00.0", "igb", NamingScheme::SplitRxTx),
        ("0000:04:00.0", "vmxnet3", NamingScheme::Vmxnet3),
        ("0000:05:00.0", "mlx5_core", NamingScheme::Mlx5),
        ("0000:06:00.0", "ena", NamingScheme::Ena),
    ];
    for (i, (bdf, driver, scheme)) in schemes.iter().enumerate() {
        fx.nic(bdf, driver, &format!("eth{i}"), Some(i as u32 % 2), 4, *scheme);
    }
    fx.virtio_nic("0000:00:03.0", 1, "eth7", None, 3)
        .nvme("0000:81:00.0", "nvme0", Some(1), 4, true, true)
        .nvme("0000:82:00.0", "nvme1", Some(0), 2, true, false)
        .intx_device("0000:00:19.0", 0x020000, "e1000e", Some(0), "eth9")
        .msi_device("0000:00:17.0", 0x010601, "ahci", Some(0), &["ahci[0000:00:17.0]"])
        .msi_device("0000:00:1f.0", 0x0c0500, "i801_smbus", Some(0), &[""]);
    // A shared INTx line, a vector whose driver has not requested it (no proc/irq/N) and a
    // hot-removed device (a warning naming its path).
    let intx = fx.irqs_of("0000:00:19.0")[0];
    share_irq(&fx, intx, &["ehci_hcd:usb1", "eth9"]);
    let unrequested = fx.irqs_of("0000:01:00.0")[2];
    fs::remove_dir_all(fx.path(&format!("proc/irq/{unrequested}"))).unwrap();
    fx.nic("0000:07:00.0", "ice", "eth8", Some(1), 2, NamingScheme::IceTxRx);
    fs::remove_dir_all(fx.path("sys/devices/pci0000:07/0000:07:00.0")).unwrap();
    let topo = node_topology(&Root::new(dir.path()));

    let (fast, fast_json) = discovery_json(dir.path(), &topo);
    // Hand-derived from the kernel's formats: the shared line's two actions, ", "-joined.
    let e1000e = fast.devices.iter().find(|d| d.bdf == "0000:00:19.0").unwrap();
    assert_eq!(e1000e.vectors[0].name.as_deref(), Some("ehci_hcd:usb1, eth9"));
    // An IRQ without an action has no handler: nothing to place, so the device has no vector.
    assert!(fast.devices.iter().all(|d| d.bdf != "0000:00:1f.0"), "a device whose IRQ has no handler is left out");
    let ice = fast.devices.iter().find(|d| d.bdf == "0000:01:00.0").unwrap();
    assert_eq!(ice.vectors[1].name.as_deref(), Some("ice-eth0-TxRx-0"));
    assert!(ice.vectors.iter().all(|v| v.irq != unrequested));
    assert_eq!(fast.warnings.len(), 1, "{:?}", fast.warnings);

    // No sys/kernel/irq: names from proc/interrupts.
    let proc_only = without_sys_kernel_irq(dir.path());
    let (_, proc_json) = discovery_json(proc_only.path(), &topo);
    assert_eq!(fast_json, proc_json, "sys/kernel/irq vs proc/interrupts");

    // sys/kernel/irq names every IRQ: proc/interrupts is not read at all (a garbled one would
    // be a warning, and its names would not match).
    let garbled = copy_root(dir.path());
    fs::write(garbled.path().join("proc/interrupts"), "garbage\n 24: x y z\n").unwrap();
    let (_, garbled_json) = discovery_json(garbled.path(), &topo);
    assert_eq!(fast_json, garbled_json, "proc/interrupts must not be needed");

    // A partial capture: one IRQ without sys/kernel/irq/N takes its name from proc/interrupts.
    let partial = copy_root(dir.path());
    let nvme_io = fx.irqs_of("0000:81:00.0")[1];
    fs::remove_dir_all(partial.path().join(format!("sys/kernel/irq/{nvme_io}"))).unwrap();
    fs::remove_dir_all(partial.path().join(format!("sys/kernel/irq/{intx}"))).unwrap();
    let (_, partial_json) = discovery_json(partial.path(), &topo);
    assert_eq!(fast_json, partial_json, "per-IRQ fallback to proc/interrupts");
}

#[test]
fn hwloc_machines_names_agree_between_sys_kernel_irq_and_proc_interrupts() {
    let all = extract_hwloc(None);
    let mut machines = 0;
    for entry in fs::read_dir(all.path()).unwrap().flatten().filter(|e| e.path().is_dir()) {
        let m = entry.path();
        let topo = node_topology(&Root::new(&m));
        let node = topo.nodes.values().rev().find(|n| !n.cpus.is_empty()).map(|n| n.id);
        let mut fx = FixtureRoot::at(&m);
        fx.nic("0000:e1:00.0", "mlx5_core", "ens1", node, 8, NamingScheme::Mlx5)
            .nic("0000:e3:00.0", "ice", "ens3", Some(0), 4, NamingScheme::IceTxRx)
            .nvme("0000:e2:00.0", "nvme0", Some(0), 4, true, true);
        let (fast, fast_json) = discovery_json(&m, &topo);
        let nic = fast.devices.iter().find(|d| d.bdf == "0000:e1:00.0").unwrap();
        assert_eq!(nic.vectors[0].name, Some("mlx5_async0@pci:0000:e1:00.0".into()), "{}", m.display());
        let proc_only = without_sys_kernel_irq(&m);
        let (_, proc_json) = discovery_json(proc_only.path(), &topo);
        assert_eq!(fast_json, proc_json, "{}", m.display());
        machines += 1;
    }
    assert_eq!(machines, 23);
}

/// A NIC whose driver freed its IRQs at link down (vmxnet3, ice, ...): the IRQs stay allocated,
/// `proc/irq/N` stays, but the actions are empty. Nothing to place, and no warning about names.
#[test]
fn freed_irqs_of_a_link_down_nic_are_not_vectors_and_raise_no_warning() {
    let dir = tempfile::tempdir().unwrap();
    write_cpu_topology(dir.path(), 2, 2, 1);
    let mut fx = FixtureRoot::at(dir.path());
    fx.nic("0000:03:00.0", "vmxnet3", "eth0", Some(1), 4, NamingScheme::Vmxnet3);
    let irqs = fx.irqs_of("0000:03:00.0").to_vec();
    for &irq in &irqs {
        share_irq(&fx, irq, &[]);
    }
    let topo = node_topology(&Root::new(dir.path()));
    let (found, _) = discovery_json(dir.path(), &topo);
    assert!(found.devices.is_empty(), "{:?}", found.devices);
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
}
