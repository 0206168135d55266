//! Discover + plan for a synthetic 1024-CPU machine (8 nodes × 64 cores × 2 threads, 4-core
//! clusters, kernel 7.0) with 64 NICs × 64 queues and 32 NVMe controllers × 128 I/O queues
//! (managed, read-only masks): 8288 IRQs. The root is written once, outside the timed part.
//! `plan_pass` times discovery and planning; `plan_only` times planning of discovered data.

#[path = "../tests/common/sysfs_tree.rs"]
mod sysfs_tree;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::io::{BufWriter, Write};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::sync::LazyLock;

use irqwise::config::Config;
use irqwise::cpuset::CpuSet;
use irqwise::devices::{discover_devices, Device};
use irqwise::engine::{group_rules, plan_pass};
use irqwise::plan::{build_plan, PlanContext};
use irqwise::sysfs::Root;
use irqwise::topology::synthetic::SyntheticMachine;
use irqwise::topology::Topology;

fn main() {
    divan::main();
}

const NODES: u32 = 8;
const NICS: u32 = 64;
const NIC_QUEUES: u32 = 64;
const NVMES: u32 = 32;
const NVME_QUEUES: u32 = 128;

struct Machine {
    dir: tempfile::TempDir,
}

static MACHINE: LazyLock<Machine> = LazyLock::new(write_machine);

/// Writes the whole root: topology, PCI devices, `proc/irq/N/*` and one `proc/interrupts`.
fn write_machine() -> Machine {
    let mut topo = SyntheticMachine { cores_per_cluster: 4, ..SyntheticMachine::new(NODES, 64, 2) }.build();
    topo.kernel = Some("7.0.0".into());
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    sysfs_tree::write_topology(root, &topo);
    let ncpus = topo.online.len();
    let all = topo.online.clone();
    // proc/interrupts: the per-CPU count columns are the same zeros on every line.
    let zeros = "          0".repeat(ncpus);
    let mut interrupts = BufWriter::new(fs::File::create(mkparent(root, "proc/interrupts")).expect("interrupts"));
    let mut header = String::from("     ");
    for c in all.iter() {
        let _ = write!(header, "{:>11}", format!("CPU{c}"));
    }
    writeln!(interrupts, "{header}").expect("write");
    let mut irq = 24;
    for i in 0..NICS {
        let bdf = format!("0000:{:02x}:00.0", 0x10 + i);
        let ifname = format!("eth{i}");
        let node = i % NODES;
        let dev = pci_device(root, &bdf, 0x020000, "ice", node, &topo);
        fs::create_dir_all(dev.join("net").join(&ifname)).expect("net");
        let mut names: Vec<String> = (0..NIC_QUEUES).map(|q| format!("{ifname}-TxRx-{q}")).collect();
        names.push(ifname.clone());
        for (hw, name) in names.iter().enumerate() {
            write_irq(root, &dev, irq, &all, false);
            writeln!(interrupts, "{irq:>4}:{zeros}  IR-PCI-MSIX-{bdf} {hw:>3}-edge      {name}").expect("write");
            irq += 1;
        }
    }
    for j in 0..NVMES {
        let bdf = format!("0000:{:02x}:00.0", 0x80 + j);
        let dev = pci_device(root, &bdf, 0x010802, "nvme", j % NODES, &topo);
        let ctrl = dev.join(format!("nvme/nvme{j}"));
        fs::create_dir_all(&ctrl).expect("nvme");
        fs::write(ctrl.join("model"), "Bench NVMe\n").expect("model");
        fs::write(ctrl.join("serial"), format!("BENCH{j}\n")).expect("serial");
        for q in 0..=NVME_QUEUES {
            write_irq(root, &dev, irq, &all, q > 0);
            writeln!(interrupts, "{irq:>4}:{zeros}  IR-PCI-MSIX-{bdf} {q:>3}-edge      nvme{j}q{q}").expect("write");
            irq += 1;
        }
    }
    interrupts.flush().expect("flush");
    Machine { dir }
}

fn mkparent(root: &Path, rel: &str) -> std::path::PathBuf {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    p
}

fn pci_device(root: &Path, bdf: &str, class: u32, driver: &str, node: u32, topo: &Topology) -> std::path::PathBuf {
    let host = format!("pci{}", &bdf[..7]);
    let dev = root.join("sys/devices").join(&host).join(bdf);
    fs::create_dir_all(dev.join("msi_irqs")).expect("dev");
    fs::write(dev.join("class"), format!("{class:#08x}\n")).expect("class");
    fs::write(dev.join("numa_node"), format!("{node}\n")).expect("numa_node");
    fs::write(dev.join("local_cpulist"), format!("{}\n", topo.nodes[&node].cpus.to_list_string())).expect("local");
    fs::write(dev.join("irq"), "0\n").expect("irq");
    let _ = symlink(format!("../../../bus/pci/drivers/{driver}"), dev.join("driver"));
    let bus = root.join("sys/bus/pci/devices");
    fs::create_dir_all(&bus).expect("bus");
    let _ = symlink(format!("../../../devices/{host}/{bdf}"), bus.join(bdf));
    dev
}

fn write_irq(root: &Path, dev: &Path, irq: u32, cpus: &CpuSet, read_only: bool) {
    fs::write(dev.join(format!("msi_irqs/{irq}")), "msix\n").expect("msi");
    let d = root.join(format!("proc/irq/{irq}"));
    fs::create_dir_all(&d).expect("irq dir");
    fs::write(d.join("smp_affinity"), format!("{}\n", cpus.to_mask_string())).expect("mask");
    fs::write(d.join("smp_affinity_list"), format!("{}\n", cpus.to_list_string())).expect("list");
    fs::write(d.join("effective_affinity_list"), "0\n").expect("effective");
    fs::write(d.join("affinity_hint"), "0\n").expect("hint");
    if read_only {
        for f in ["smp_affinity", "smp_affinity_list"] {
            fs::set_permissions(d.join(f), fs::Permissions::from_mode(0o444)).expect("chmod");
        }
    }
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn plan_pass_discover_and_plan(bencher: divan::Bencher) {
    let root = Root::new(MACHINE.dir.path());
    let config = Config::default();
    let known = BTreeSet::new();
    let pass = plan_pass(&root, &config, &known).expect("plan_pass");
    assert_eq!(pass.plan.summary().irqs as u32, NICS * (NIC_QUEUES + 1) + NVMES * (NVME_QUEUES + 1));
    assert!(pass.plan.warnings.is_empty(), "{:?}", &pass.plan.warnings[..pass.plan.warnings.len().min(3)]);
    bencher.bench(|| plan_pass(&root, &config, &known).expect("plan_pass"));
}

static DISCOVERED: LazyLock<(Topology, Vec<Device>)> = LazyLock::new(|| {
    let root = Root::new(MACHINE.dir.path());
    let topo = Topology::discover(&root).expect("topology");
    let devices = discover_devices(&root, &topo).expect("devices").devices;
    (topo, devices)
});

#[divan::bench(sample_count = 10, sample_size = 1)]
fn plan_only(bencher: divan::Bencher) {
    let (topo, devices) = &*DISCOVERED;
    let known = BTreeSet::new();
    let ctx = PlanContext { topo, group_rules: group_rules(topo), respect_isolation: true, known_managed: &known };
    bencher.bench(|| build_plan(&ctx, devices, &[]));
}
