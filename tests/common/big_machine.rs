//! Writes a large synthetic machine as a current x86 kernel shows it, for benchmarks and the
//! scale measurements: the topology, PCI NICs (`ice`) and NVMe controllers spread over the nodes
//! round robin, the 16 legacy IO-APIC lines, each IRQ's `proc/irq/N/*` and
//! `sys/kernel/irq/N/{actions,chip_name,hwirq,name,per_cpu_count,type,wakeup}`, and optionally
//! one `proc/interrupts` (a count column per CPU: ~93 MB at 1,024 CPUs and 8,288 IRQs).
//!
//! Include with `#[path = "../tests/common/big_machine.rs"] mod big_machine;` (next to
//! `sysfs_tree`).
#![allow(dead_code)]

use std::fmt::Write as _;
use std::fs;
use std::io::{BufWriter, Write};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use irqwise::cpuset::CpuSet;
use irqwise::topology::synthetic::SyntheticMachine;
use irqwise::topology::Topology;

use crate::sysfs_tree;

/// The shape of the machine and its devices.
#[derive(Debug, Clone, Copy)]
pub struct BigMachine {
    pub nodes: u32,
    pub cores_per_node: u32,
    pub cores_per_cluster: u32,
    pub nics: u32,
    pub nic_queues: u32,
    pub nvmes: u32,
    pub nvme_queues: u32,
    /// Whether to write `proc/interrupts` (only discovery without `sys/kernel/irq` and `report`
    /// read it; at 8,192 CPUs it would be hundreds of MB).
    pub interrupts: bool,
}

impl BigMachine {
    /// Writes the root under `root` (standing for `/`) and returns its topology.
    pub fn write(&self, root: &Path) -> Topology {
        let shape = SyntheticMachine {
            cores_per_cluster: self.cores_per_cluster,
            ..SyntheticMachine::new(self.nodes, self.cores_per_node, 2)
        };
        let mut topo = shape.build();
        topo.kernel = Some("7.0.0".into());
        sysfs_tree::write_topology(root, &topo);
        let all = topo.online.clone();
        let mut irqs = IrqWriter::new(root, &all, self.interrupts);
        for irq in 0..16 {
            let name = LEGACY.iter().find(|(n, _)| *n == irq).map_or("", |(_, name)| name);
            irqs.write(irq, "IO-APIC", irq, "edge", name, false);
        }
        let mut irq = 24;
        for i in 0..self.nics {
            let bdf = bdf(0x10 + i);
            let ifname = format!("eth{i}");
            let dev = pci_device(root, &bdf, 0x020000, "ice", i % self.nodes, &topo);
            fs::create_dir_all(dev.join("net").join(&ifname)).expect("net");
            // ice: the misc vector `ice-<bdf>:misc`, then `ice-<if>-TxRx-N` (ice_vsi_req_irq_msix).
            let mut names = vec![format!("ice-{bdf}:misc")];
            names.extend((0..self.nic_queues).map(|q| format!("ice-{ifname}-TxRx-{q}")));
            for (hw, name) in names.iter().enumerate() {
                fs::write(dev.join(format!("msi_irqs/{irq}")), "msix\n").expect("msi");
                irqs.write(irq, &format!("IR-PCI-MSIX-{bdf}"), hw as u32, "edge", name, false);
                irq += 1;
            }
        }
        for j in 0..self.nvmes {
            let bdf = bdf(0x80 + j);
            let dev = pci_device(root, &bdf, 0x010802, "nvme", j % self.nodes, &topo);
            let ctrl = dev.join(format!("nvme/nvme{j}"));
            fs::create_dir_all(&ctrl).expect("nvme");
            fs::write(ctrl.join("model"), "Bench NVMe\n").expect("model");
            fs::write(ctrl.join("serial"), format!("BENCH{j}\n")).expect("serial");
            for q in 0..=self.nvme_queues {
                fs::write(dev.join(format!("msi_irqs/{irq}")), "msix\n").expect("msi");
                irqs.write(irq, &format!("IR-PCI-MSIX-{bdf}"), q, "edge", &format!("nvme{j}q{q}"), q > 0);
                irq += 1;
            }
        }
        irqs.finish();
        topo
    }
}

/// PCI address `0000:BB:DD.0`: bus `n`'s low byte, device its next bits (unique below 8,192).
fn bdf(n: u32) -> String {
    format!("0000:{:02x}:{:02x}.0", n & 0xff, (n >> 8) & 0x1f)
}

/// The legacy lines a PC has handlers on; the other IO-APIC pins show no action.
const LEGACY: [(u32, &str); 6] =
    [(0, "timer"), (1, "i8042"), (8, "rtc0"), (9, "acpi"), (12, "i8042"), (14, "ata_piix")];

/// Writes each IRQ's `proc/irq/N/`, `sys/kernel/irq/N/` and `proc/interrupts` line.
struct IrqWriter<'a> {
    root: &'a Path,
    cpus: &'a CpuSet,
    /// `proc/interrupts`, when written.
    interrupts: Option<BufWriter<fs::File>>,
    /// The per-CPU count columns of one line: every count is 0.
    zeros: String,
    /// `sys/kernel/irq/N/per_cpu_count`: one 0 per possible CPU.
    per_cpu_count: String,
}

impl<'a> IrqWriter<'a> {
    fn new(root: &'a Path, cpus: &'a CpuSet, with_interrupts: bool) -> IrqWriter<'a> {
        let interrupts = with_interrupts.then(|| {
            let mut interrupts =
                BufWriter::new(fs::File::create(mkparent(root, "proc/interrupts")).expect("interrupts"));
            let mut header = String::from("     ");
            for c in cpus {
                let _ = write!(header, "{:>11}", format!("CPU{c}"));
            }
            writeln!(interrupts, "{header}").expect("write");
            interrupts
        });
        let zeros = "          0".repeat(cpus.len());
        let per_cpu_count = vec!["0"; cpus.len()].join(",");
        IrqWriter { root, cpus, interrupts, zeros, per_cpu_count }
    }

    fn write(&mut self, irq: u32, chip: &str, hwirq: u32, trigger: &str, action: &str, read_only: bool) {
        let Self { root, cpus, .. } = *self;
        if let Some(interrupts) = &mut self.interrupts {
            writeln!(interrupts, "{irq:>4}:{}  {chip} {hwirq:>3}-{trigger:<8}  {action}", self.zeros).expect("write");
        }
        let d = root.join(format!("proc/irq/{irq}"));
        fs::create_dir_all(&d).expect("irq dir");
        fs::write(d.join("smp_affinity"), format!("{}\n", cpus.to_mask_string())).expect("mask");
        fs::write(d.join("smp_affinity_list"), format!("{}\n", cpus.to_list_string())).expect("list");
        fs::write(d.join("effective_affinity"), "1\n").expect("effective");
        fs::write(d.join("effective_affinity_list"), "0\n").expect("effective");
        fs::write(d.join("affinity_hint"), "0\n").expect("hint");
        fs::write(d.join("node"), "0\n").expect("node");
        if read_only {
            for f in ["smp_affinity", "smp_affinity_list"] {
                fs::set_permissions(d.join(f), fs::Permissions::from_mode(0o444)).expect("chmod");
            }
        }
        let k = root.join(format!("sys/kernel/irq/{irq}"));
        fs::create_dir_all(&k).expect("sys/kernel/irq dir");
        // The kernel's actions_show(): names joined by ",", a newline only after some name.
        let actions = if action.is_empty() { String::new() } else { format!("{action}\n") };
        for (file, text) in [
            ("actions", actions),
            ("chip_name", format!("{chip}\n")),
            ("hwirq", format!("{hwirq}\n")),
            ("name", format!("{trigger}\n")),
            ("per_cpu_count", format!("{}\n", self.per_cpu_count)),
            ("type", format!("{trigger}\n")),
            ("wakeup", "disabled\n".to_string()),
        ] {
            fs::write(k.join(file), text).expect("sys/kernel/irq file");
        }
    }

    /// The architecture lines after the numbered ones, then flush.
    fn finish(self) {
        let Some(mut interrupts) = self.interrupts else { return };
        for (label, what) in [
            ("NMI", "Non-maskable interrupts"),
            ("LOC", "Local timer interrupts"),
            ("RES", "Rescheduling interrupts"),
            ("CAL", "Function call interrupts"),
            ("TLB", "TLB shootdowns"),
        ] {
            writeln!(interrupts, "{label}:{}   {what}", self.zeros).expect("write");
        }
        writeln!(interrupts, "ERR:          0\nMIS:          0").expect("write");
        interrupts.flush().expect("flush");
    }
}

fn mkparent(root: &Path, rel: &str) -> PathBuf {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    p
}

fn pci_device(root: &Path, bdf: &str, class: u32, driver: &str, node: u32, topo: &Topology) -> PathBuf {
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
