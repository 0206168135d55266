//! `snapshot`: a copy of a fixture root holds exactly the files discovery reads, byte for byte and
//! mode for mode; a copy of the real host is usable as a root.

#[path = "common/bin.rs"]
mod bin;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use irqwise::snapshot::snapshot;
use irqwise::sysfs::Root;
use irqwise::topology::discover::read_topology;

/// A tree as `(files: rel → (content, mode), links: rel → target, dirs)`, symlinks not followed.
#[derive(Debug, Default, PartialEq, Eq)]
struct Tree {
    files: BTreeMap<String, (Vec<u8>, u32)>,
    links: BTreeMap<String, PathBuf>,
    dirs: BTreeSet<String>,
}

fn walk(base: &Path) -> Tree {
    fn go(base: &Path, rel: &str, tree: &mut Tree) {
        for entry in fs::read_dir(base.join(rel)).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let r = if rel.is_empty() { name } else { format!("{rel}/{name}") };
            let meta = fs::symlink_metadata(base.join(&r)).unwrap();
            if meta.file_type().is_symlink() {
                let target = fs::read_link(base.join(&r)).unwrap();
                tree.links.insert(r, target);
            } else if meta.is_dir() {
                tree.dirs.insert(r.clone());
                go(base, &r, tree);
            } else {
                tree.files.insert(r.clone(), (fs::read(base.join(&r)).unwrap(), meta.permissions().mode() & 0o7777));
            }
        }
    }
    let mut tree = Tree::default();
    go(base, "", &mut tree);
    tree
}

/// Builds a file under `root` with `content` and `mode`, creating parents.
fn put(root: &Path, rel: &str, content: &str, mode: u32) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, content).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
}

fn link(root: &Path, rel: &str, target: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    symlink(target, p).unwrap();
}

const CPU: &str = "sys/devices/system/cpu";
const NIC: &str = "sys/devices/pci0000:00/0000:00:03.0";
const SSD: &str = "sys/devices/pci0000:00/0000:00:04.0";

/// A small machine laid out like a live kernel's sysfs (PCI and block devices behind symlinks),
/// with noise that discovery does not read and one unreadable file (`nohz_full` is a directory:
/// discovery warns and goes on, so the snapshot still holds everything else).
fn build_fixture(root: &Path) {
    for (f, c) in [("possible", "0-3"), ("present", "0-3"), ("online", "0-1"), ("offline", "2-3"), ("isolated", "")] {
        put(root, &format!("{CPU}/{f}"), &format!("{c}\n"), 0o444);
    }
    put(root, &format!("{CPU}/kernel_max"), "8191\n", 0o444);
    fs::create_dir_all(root.join(format!("{CPU}/nohz_full"))).unwrap();
    put(root, &format!("{CPU}/cpufreq/boost"), "1\n", 0o644);
    for cpu in 0..2 {
        let d = format!("{CPU}/cpu{cpu}");
        if cpu == 1 {
            put(root, &format!("{d}/online"), "1\n", 0o644);
        }
        put(root, &format!("{d}/topology/core_cpus_list"), "0-1\n", 0o444);
        put(root, &format!("{d}/topology/physical_package_id"), "0\n", 0o444);
        put(root, &format!("{d}/cache/index0/level"), "1\n", 0o444);
        put(root, &format!("{d}/cache/index0/type"), "Data\n", 0o444);
        put(root, &format!("{d}/cache/index0/shared_cpu_list"), &format!("{cpu}\n"), 0o444);
        put(root, &format!("{d}/cache/index0/id"), &format!("{cpu}\n"), 0o444);
        put(root, &format!("{d}/cache/index0/shared_cpu_map"), &format!("{:x}\n", 1 << cpu), 0o444);
        put(root, &format!("{d}/cache/index0/size"), "48K\n", 0o444);
        put(root, &format!("{d}/cpufreq/scaling_governor"), "performance\n", 0o644);
    }
    link(root, &format!("{CPU}/cpu0/node0"), "../../node/node0");
    fs::create_dir_all(root.join(format!("{CPU}/cpu1/node0"))).unwrap(); // hwloc dumps: a plain dir
    for (f, c) in [("possible", "0"), ("online", "0"), ("has_cpu", "0"), ("has_memory", "0")] {
        put(root, &format!("sys/devices/system/node/{f}"), &format!("{c}\n"), 0o444);
    }
    put(root, "sys/devices/system/node/node0/cpulist", "0-3\n", 0o444);
    put(root, "sys/devices/system/node/node0/distance", "10\n", 0o444);
    put(root, "sys/devices/system/node/node0/cpumap", "f\n", 0o444);
    put(root, "sys/devices/system/node/node0/meminfo", "Node 0 MemTotal: 1 kB\n", 0o444);

    for (dev, class, irq) in [(NIC, "0x020000", "11"), (SSD, "0x010802", "10")] {
        for (f, c) in [("class", class), ("vendor", "0x1af4"), ("device", "0x1041"), ("numa_node", "-1")] {
            put(root, &format!("{dev}/{f}"), &format!("{c}\n"), 0o444);
        }
        put(root, &format!("{dev}/local_cpulist"), "0-3\n", 0o444);
        put(root, &format!("{dev}/irq"), &format!("{irq}\n"), 0o444);
        put(root, &format!("{dev}/config"), "\u{1}\u{2}", 0o644);
        let bdf = Path::new(dev).file_name().unwrap().to_string_lossy().into_owned();
        link(root, &format!("sys/bus/pci/devices/{bdf}"), &format!("../../../devices/pci0000:00/{bdf}"));
    }
    put(root, &format!("{NIC}/msi_irqs/24"), "msix\n", 0o444);
    put(root, &format!("{NIC}/msi_irqs/25"), "msix\n", 0o444);
    link(root, &format!("{NIC}/driver"), "../../../bus/pci/drivers/virtio-pci");
    link(root, &format!("{NIC}/virtio0/driver"), "../../../../bus/virtio/drivers/virtio_net");
    put(root, &format!("{NIC}/virtio0/net/eth0/ifindex"), "2\n", 0o444);
    put(root, &format!("{NIC}/virtio0/net/eth0/operstate"), "up\n", 0o444);
    put(root, &format!("{NIC}/virtio0/net/eth0/mtu"), "1500\n", 0o644);
    put(root, &format!("{NIC}/virtio0/net/eth0/queues/rx-0/rps_cpus"), "0\n", 0o644);
    fs::create_dir_all(root.join(format!("{NIC}/virtio0/net/eth0/queues/tx-0"))).unwrap();
    for n in 26..=28 {
        put(root, &format!("{SSD}/msi_irqs/{n}"), "msix\n", 0o444);
    }
    link(root, &format!("{SSD}/driver"), "../../../bus/pci/drivers/nvme");
    put(root, &format!("{SSD}/net/ens4/ifindex"), "3\n", 0o444); // odd, but copied like any net dir
    put(root, &format!("{SSD}/net/ens4/operstate"), "down\n", 0o444);
    put(root, &format!("{SSD}/nvme/nvme0/model"), "QEMU NVMe Ctrl\n", 0o444);
    put(root, &format!("{SSD}/nvme/nvme0/serial"), "deadbeef\n", 0o444);
    put(root, &format!("{SSD}/nvme/nvme0/firmware_rev"), "1.0\n", 0o444);
    let ns = format!("{SSD}/nvme/nvme0/nvme0n1");
    put(root, &format!("{ns}/mq/0/cpu_list"), "0, 1\n", 0o444);
    put(root, &format!("{ns}/mq/0/nr_tags"), "1023\n", 0o444);
    put(root, &format!("{ns}/mq/1/cpu_list"), "2, 3\n", 0o444);
    for (q, cpu) in [(0, 0), (0, 1), (1, 2), (1, 3)] {
        fs::create_dir_all(root.join(format!("{ns}/mq/{q}/cpu{cpu}"))).unwrap();
    }
    link(root, "sys/block/nvme0n1", "../devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1");
    put(root, "sys/block/sda/size", "1\n", 0o444);

    put(root, "proc/interrupts", "           CPU0\n 24:  1  PCI-MSIX-0000:00:03.0 0-edge virtio0-input.0\n", 0o444);
    put(root, "proc/irq/default_smp_affinity", "f\n", 0o644);
    for (irq, managed) in [(24, false), (27, true)] {
        let rw = if managed { 0o444 } else { 0o644 };
        put(root, &format!("proc/irq/{irq}/smp_affinity"), "1\n", rw);
        put(root, &format!("proc/irq/{irq}/smp_affinity_list"), "0\n", rw);
        put(root, &format!("proc/irq/{irq}/effective_affinity"), "1\n", 0o444);
        put(root, &format!("proc/irq/{irq}/effective_affinity_list"), "0\n", 0o444);
        put(root, &format!("proc/irq/{irq}/affinity_hint"), "0\n", 0o444);
        put(root, &format!("proc/irq/{irq}/node"), "0\n", 0o444);
        put(root, &format!("proc/irq/{irq}/spurious"), "count 0\n", 0o444);
        put(root, &format!("sys/kernel/irq/{irq}/actions"), "virtio0-input.0\n", 0o444);
        put(root, &format!("sys/kernel/irq/{irq}/chip_name"), "PCI-MSIX-0000:00:03.0\n", 0o444);
        put(root, &format!("sys/kernel/irq/{irq}/type"), "edge\n", 0o444);
        put(root, &format!("sys/kernel/irq/{irq}/hwirq"), "1\n", 0o444);
    }
    put(root, "proc/sys/kernel/osrelease", "6.12.0-test\n", 0o444);
    put(root, "proc/sys/kernel/arch", "x86_64\n", 0o444);
    put(root, "proc/sys/kernel/hostname", "fixture\n", 0o644);
    put(root, "proc/cmdline", "root=/dev/vda1 isolcpus=3\n", 0o444);
    put(root, "proc/cpuinfo", "processor : 0\n", 0o444);
}

/// The files discovery reads in that fixture, listed by hand from what each reader reads: the
/// global CPU lists (`nohz_full` is skipped: unreadable; no CPU's own `online`, as the global
/// list decides), the possible nodes, each CPU's topology and last-level cache files (each CPU
/// its own: the fixture's CPUs share no core or cache), the node's `cpulist` and
/// `distance` (not `cpumap`: `cpulist` is there), each device's identity files and IRQ entries,
/// the NVMe identity and the blk-mq map of the first namespace with one (from its `cpuN`
/// entries, so not `cpu_list`), each IRQ's files and its action names, the kernel release, and
/// the two files kept for diagnosis.
fn expected_files() -> BTreeSet<String> {
    let mut f: Vec<String> =
        ["possible", "present", "online", "isolated"].iter().map(|n| format!("{CPU}/{n}")).collect();
    for cpu in 0..2 {
        let d = format!("{CPU}/cpu{cpu}");
        f.push(format!("{d}/topology/core_cpus_list"));
        f.extend(["level", "type", "shared_cpu_list"].map(|n| format!("{d}/cache/index0/{n}")));
    }
    f.extend(
        ["possible", "has_memory", "node0/cpulist", "node0/distance"].map(|n| format!("sys/devices/system/node/{n}")),
    );
    let nic = "sys/bus/pci/devices/0000:00:03.0";
    let ssd = "sys/bus/pci/devices/0000:00:04.0";
    for dev in [nic, ssd] {
        f.extend(["class", "vendor", "device", "numa_node", "local_cpulist"].map(|n| format!("{dev}/{n}")));
    }
    f.extend(["msi_irqs/24", "msi_irqs/25"].map(|n| format!("{nic}/{n}")));
    f.extend(
        ["msi_irqs/26", "msi_irqs/27", "msi_irqs/28", "nvme/nvme0/model", "nvme/nvme0/serial"]
            .map(|n| format!("{ssd}/{n}")),
    );
    f.extend(["proc/interrupts", "proc/cmdline"].map(String::from));
    for irq in [24, 27] {
        f.push(format!("proc/irq/{irq}/smp_affinity_list"));
        f.push(format!("sys/kernel/irq/{irq}/actions"));
    }
    // 27 is kernel-managed (its mask read-only): its hint is not read.
    f.push("proc/irq/24/affinity_hint".into());
    f.extend(["proc/sys/kernel/osrelease", "proc/sys/kernel/arch"].map(String::from));
    f.into_iter().collect()
}

#[test]
fn fixture_snapshot_holds_exactly_what_discovery_reads() {
    let src = tempfile::tempdir().unwrap();
    build_fixture(src.path());
    let out = tempfile::tempdir().unwrap();
    let report = snapshot(&Root::new(src.path()), out.path()).unwrap();
    let tree = walk(out.path());

    assert_eq!(tree.files.keys().cloned().collect::<BTreeSet<_>>(), expected_files());
    for (rel, (content, mode)) in &tree.files {
        let from = src.path().join(rel); // follows the fixture's device symlinks
        assert_eq!(content, &fs::read(&from).unwrap(), "content of {rel}");
        assert_eq!(*mode, fs::metadata(&from).unwrap().permissions().mode() & 0o7777, "mode of {rel}");
    }
    assert_eq!(tree.files["proc/irq/27/smp_affinity_list"].1, 0o444, "managed stays read-only");
    assert_eq!(tree.files["proc/irq/24/smp_affinity_list"].1, 0o644);

    // cpu0 and cpu1 are online and in node0's cpulist: their directories are not listed, so
    // neither cpu0's node0 link nor cpu1's hwloc-style node0 directory is read (the snapshot's
    // global and node lists give a replay the same answer).
    let links: BTreeMap<String, PathBuf> = [
        ("sys/bus/pci/devices/0000:00:03.0/driver".into(), "../../../bus/pci/drivers/virtio-pci"),
        ("sys/bus/pci/devices/0000:00:04.0/driver".into(), "../../../bus/pci/drivers/nvme"),
    ]
    .into_iter()
    .map(|(k, v)| (k, PathBuf::from(v)))
    .collect();
    assert_eq!(tree.links, links, "only link targets discovery reads stay symlinks");
    for dir in [
        "sys/bus/pci/devices/0000:00:03.0",
        "sys/block/nvme0n1",
        "sys/block/nvme0n1/mq/0/cpu1",
        "sys/block/nvme0n1/mq/1/cpu3",
        "sys/bus/pci/devices/0000:00:03.0/virtio0/net/eth0",
        "sys/bus/pci/devices/0000:00:04.0/net/ens4",
    ] {
        assert!(tree.dirs.contains(dir), "{dir} is a plain directory in the snapshot");
    }
    assert!(!tree.dirs.iter().any(|d| d.contains("cpufreq") || d.starts_with("sys/block/sda")), "{:?}", tree.dirs);
    assert!(!tree.dirs.contains(&format!("{CPU}/cpu1/node0")), "an unlisted CPU's entries are not copied");

    assert_eq!(report.files_copied, expected_files().len());
    assert_eq!(report.links_created, links.len());
    let skipped: Vec<_> = report.skipped.iter().map(|s| s.path.clone()).collect();
    assert_eq!(skipped, vec![src.path().join(format!("{CPU}/nohz_full"))], "the unreadable file is counted");

    // The snapshot is itself a root: snapshotting it again gives the same tree.
    let again = tempfile::tempdir().unwrap();
    snapshot(&Root::new(out.path()), again.path()).unwrap();
    assert_eq!(walk(again.path()), tree);
}

#[test]
fn host_snapshot_copies_affinities_with_their_modes() {
    let out = tempfile::tempdir().unwrap();
    let report = snapshot(&Root::new("/"), &out.path().join("snap")).unwrap();
    let snap = out.path().join("snap");
    assert!(report.files_copied > 0);
    for f in ["possible", "online", "present"] {
        let rel = format!("{CPU}/{f}");
        assert_eq!(fs::read(snap.join(&rel)).unwrap(), fs::read(Path::new("/").join(&rel)).unwrap(), "{rel}");
    }
    let mut checked = 0;
    // The IRQs of PCI devices (MSI), the ones discovery reads.
    let msi: Vec<String> = fs::read_dir("/sys/bus/pci/devices")
        .unwrap()
        .flatten()
        .flat_map(|d| fs::read_dir(d.path().join("msi_irqs")).into_iter().flatten().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for name in msi {
        let rel = format!("proc/irq/{name}/smp_affinity_list");
        let Ok(host) = fs::metadata(Path::new("/").join(&rel)) else { continue };
        let copy = fs::metadata(snap.join(&rel)).unwrap();
        assert_eq!(copy.permissions().mode() & 0o777, host.permissions().mode() & 0o777, "{rel}");
        checked += 1;
    }
    assert!(checked > 0, "the host has IRQs");
    for entry in fs::read_dir("/sys/bus/pci/devices").unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let rel = format!("sys/bus/pci/devices/{name}");
        let meta = fs::symlink_metadata(snap.join(&rel)).unwrap();
        assert!(meta.is_dir(), "{rel} resolved into a plain directory");
        assert_eq!(fs::read(snap.join(format!("{rel}/class"))).unwrap(), fs::read(format!("/{rel}/class")).unwrap());
    }
}

#[test]
fn host_snapshot_discovers_the_same_topology() {
    let out = tempfile::tempdir().unwrap();
    snapshot(&Root::new("/"), out.path()).unwrap();
    let host = read_topology(&Root::new("/")).unwrap();
    let copy = read_topology(&Root::new(out.path())).unwrap();
    assert_eq!(copy, host);
}

#[test]
fn host_snapshot_keeps_the_kernels_netdev_answers() {
    use irqwise::devices::discover::netdev_netlink::{read_captured_netdev, read_netdev};
    use irqwise::devices::napi::NetdevView;
    let out = tempfile::tempdir().unwrap();
    let report = snapshot(&Root::new("/"), out.path()).unwrap();
    let kept = read_captured_netdev(&Root::new(out.path()));
    match read_netdev() {
        NetdevView::Reported(live) => {
            assert_eq!(report.netdev_not_kept, None);
            assert_eq!(kept, NetdevView::Reported(live), "a plan of the snapshot sees what the kernel said");
        }
        NetdevView::Unavailable(why) => {
            assert!(report.netdev_not_kept.is_some(), "the report says why: {why}");
            assert_eq!(kept, NetdevView::NotThisMachine);
        }
        NetdevView::NotThisMachine => unreachable!("/ is this machine"),
    }
}

#[test]
fn a_snapshot_of_a_snapshot_keeps_the_netdev_answers_and_diff_sees_them() {
    use irqwise::devices::discover::netdev_netlink::{read_captured_netdev, CAPTURED_NAPI_GET, CAPTURED_QUEUE_GET};
    use irqwise::devices::napi::NetdevView;
    let hex = |text: &str| -> Vec<u8> {
        let t: String = text.split_whitespace().collect();
        (0..t.len()).step_by(2).map(|i| u8::from_str_radix(&t[i..i + 2], 16).unwrap()).collect()
    };
    let src = tempfile::tempdir().unwrap();
    build_fixture(src.path());
    fs::create_dir_all(src.path().join("irqwise-snapshot")).unwrap();
    let napi = hex(include_str!("data/netlink/napi-get-6.18-virtio.hex"));
    let queue = hex(include_str!("data/netlink/queue-get-6.18-virtio.hex"));
    fs::write(src.path().join(CAPTURED_NAPI_GET), &napi).unwrap();
    fs::write(src.path().join(CAPTURED_QUEUE_GET), &queue).unwrap();
    let out = tempfile::tempdir().unwrap();
    let report = snapshot(&Root::new(src.path()), out.path()).unwrap();
    assert_eq!(report.netdev_not_kept, None);
    assert_eq!(fs::read(out.path().join(CAPTURED_NAPI_GET)).unwrap(), napi);
    assert_eq!(fs::read(out.path().join(CAPTURED_QUEUE_GET)).unwrap(), queue);
    let kept = read_captured_netdev(&Root::new(out.path()));
    assert!(matches!(kept, NetdevView::Reported(_)), "{kept:?}");
    assert_eq!(kept, read_captured_netdev(&Root::new(src.path())));
    // Without them, diff names the difference.
    fs::remove_file(out.path().join(CAPTURED_NAPI_GET)).unwrap();
    fs::remove_file(out.path().join(CAPTURED_QUEUE_GET)).unwrap();
    let cfg = tempfile::tempdir().unwrap();
    let diff = std::process::Command::new(bin::BIN)
        .arg("--config")
        .arg(cfg.path())
        .args(["diff", src.path().to_str().unwrap(), out.path().to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&diff.stdout);
    assert_eq!(diff.status.code(), Some(1), "{text}{}", String::from_utf8_lossy(&diff.stderr));
    assert!(text.contains("netdev netlink answers"), "{text}");
}
