//! Test fixture builder: writes PCI devices and their IRQs into an existing root directory (a
//! tree written by a test with CPUs and nodes, or an extracted hwloc machine), the way Linux
//! shows them in sysfs and procfs.
//!
//! Layout written per device: `sys/devices/pciDDDD:BB/BDF/` (class, vendor, device, numa_node,
//! local_cpulist, irq, msi_irqs/N, driver link, net/IF/, nvme/nvmeX/{model,serial,nvmeXn1/mq/}),
//! the `sys/bus/pci/devices/BDF` link to it, `sys/block/nvmeXn1` link, one line per IRQ appended
//! to `proc/interrupts`, `proc/irq/N/{smp_affinity,smp_affinity_list,
//! effective_affinity_list,affinity_hint}`, and `sys/kernel/irq/N/{actions,chip_name,hwirq,name,
//! per_cpu_count,type,wakeup}` as a SPARSE_IRQ kernel has them (delete `sys/kernel/irq` for a
//! kernel without). Panics on I/O errors: it is test code.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use irqwise::cpuset::CpuSet;

/// How a NIC driver names its queue IRQs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamingScheme {
    /// ice: `ice-<bdf>:misc`, then `ice-<if>-TxRx-N`.
    IceTxRx,
    /// ixgbe, igc, bnxt: `<if>-TxRx-N`, then `<if>` (link/misc).
    TxRx,
    /// igb/e1000e split vectors: `<if>-rx-N` and `<if>-tx-N` per queue, then `<if>`.
    SplitRxTx,
    /// vmxnet3: `<if>-rxtx-N`, then `<if>-event-N`.
    Vmxnet3,
    /// mlx5: `mlx5_async0@pci:<bdf>`, then `mlx5_compN@pci:<bdf>`.
    Mlx5,
    /// ena: `ena-mgmnt@pci:<bdf>`, then `<if>-Tx-Rx-N`.
    Ena,
}

/// Writes devices into the root at `dir`. IRQ numbers are assigned upwards from 1 + the highest
/// IRQ already present in the root (at least 24).
pub struct FixtureRoot {
    dir: PathBuf,
    online: CpuSet,
    next_irq: u32,
    /// IRQs written per device, in vector order.
    pub irqs: BTreeMap<String, Vec<u32>>,
}

/// One vector to write: action name, initial affinity, hint, read-only mode.
struct Vector {
    name: String,
    affinity: CpuSet,
    hint: CpuSet,
    read_only: bool,
}

impl FixtureRoot {
    pub fn at(dir: impl AsRef<Path>) -> FixtureRoot {
        let dir = dir.as_ref().to_path_buf();
        let online = fs::read_to_string(dir.join("sys/devices/system/cpu/online"))
            .ok()
            .and_then(|t| CpuSet::parse_list(t.trim()).ok())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| CpuSet::single(0));
        let next_irq = highest_existing_irq(&dir).map_or(24, |m| (m + 1).max(24));
        FixtureRoot { dir, online, next_irq, irqs: BTreeMap::new() }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    pub fn online(&self) -> &CpuSet {
        &self.online
    }

    /// The IRQs written for `bdf`, in vector order.
    pub fn irqs_of(&self, bdf: &str) -> &[u32] {
        self.irqs.get(bdf).map_or(&[], |v| v.as_slice())
    }

    /// CPUs of node `n` from the root's `node/nodeN/cpulist`, else all online CPUs.
    pub fn node_cpus(&self, node: Option<u32>) -> CpuSet {
        node.and_then(|n| fs::read_to_string(self.path(&format!("sys/devices/system/node/node{n}/cpulist"))).ok())
            .and_then(|t| CpuSet::parse_list(t.trim()).ok())
            .unwrap_or_else(|| self.online.clone())
    }

    /// A NIC with `queues` queues (split schemes get 2 vectors per queue) and its misc vector.
    pub fn nic(
        &mut self,
        bdf: &str,
        driver: &str,
        ifname: &str,
        node: Option<u32>,
        queues: u32,
        scheme: NamingScheme,
    ) -> &mut Self {
        let dev = self.pci_device(bdf, 0x020000, driver, node);
        fs::create_dir_all(dev.join("net").join(ifname)).unwrap();
        let mut names = Vec::new();
        let q = 0..queues;
        match scheme {
            NamingScheme::IceTxRx => {
                names.push(format!("ice-{bdf}:misc"));
                names.extend(q.map(|i| format!("ice-{ifname}-TxRx-{i}")));
            }
            NamingScheme::TxRx => {
                names.extend(q.map(|i| format!("{ifname}-TxRx-{i}")));
                names.push(ifname.to_string());
            }
            NamingScheme::SplitRxTx => {
                names.extend(q.clone().map(|i| format!("{ifname}-rx-{i}")));
                names.extend(q.map(|i| format!("{ifname}-tx-{i}")));
                names.push(ifname.to_string());
            }
            NamingScheme::Vmxnet3 => {
                names.extend(q.map(|i| format!("{ifname}-rxtx-{i}")));
                names.push(format!("{ifname}-event-{queues}"));
            }
            NamingScheme::Mlx5 => {
                names.push(format!("mlx5_async0@pci:{bdf}"));
                names.extend(q.map(|i| format!("mlx5_comp{i}@pci:{bdf}")));
            }
            NamingScheme::Ena => {
                names.push(format!("ena-mgmnt@pci:{bdf}"));
                names.extend(q.map(|i| format!("{ifname}-Tx-Rx-{i}")));
            }
        }
        let vectors = names.into_iter().map(|n| self.plain_vector(n)).collect();
        self.add_msi(bdf, &dev, vectors);
        self
    }

    /// A virtio-net device `virtioN` (driver virtio-pci, interface under the virtio child) with
    /// `pairs` queue pairs: `virtioN-config`, then `input.Q`/`output.Q` per pair. Like
    /// virtio_net, each pair's hint (and initial affinity) is one online CPU, pair i → i-th.
    pub fn virtio_nic(&mut self, bdf: &str, index: u32, ifname: &str, node: Option<u32>, pairs: u32) -> &mut Self {
        let dev = self.pci_device(bdf, 0x020000, "virtio-pci", node);
        let child = dev.join(format!("virtio{index}"));
        fs::create_dir_all(child.join("net").join(ifname)).unwrap();
        let _ = symlink("../../../../bus/virtio/drivers/virtio_net", child.join("driver"));
        let mut vectors = vec![self.plain_vector(format!("virtio{index}-config"))];
        let n = self.online.len();
        for q in 0..pairs {
            let cpu = self.online.nth(q as usize % n).unwrap();
            for dir in ["input", "output"] {
                vectors.push(Vector {
                    name: format!("virtio{index}-{dir}.{q}"),
                    affinity: CpuSet::single(cpu),
                    hint: CpuSet::single(cpu),
                    read_only: false,
                });
            }
        }
        self.add_msi(bdf, &dev, vectors);
        self
    }

    /// An NVMe controller `ctrl` with an admin queue and `io_queues` I/O queues, namespace
    /// `<ctrl>n1` whose blk-mq map splits the online CPUs into contiguous runs (written both as
    /// `cpu_list` "a, b, c" and as `cpuN` entries). With `managed`, each I/O IRQ's affinity is
    /// its queue's CPUs, and with `kernel_ro_mode` too its `smp_affinity(_list)` are mode 0444.
    pub fn nvme(
        &mut self,
        bdf: &str,
        ctrl: &str,
        node: Option<u32>,
        io_queues: u32,
        managed: bool,
        kernel_ro_mode: bool,
    ) -> &mut Self {
        let dev = self.pci_device(bdf, 0x010802, "nvme", node);
        let cdir = dev.join("nvme").join(ctrl);
        fs::create_dir_all(&cdir).unwrap();
        fs::write(cdir.join("model"), "Fixture NVMe SSD                        \n").unwrap();
        fs::write(cdir.join("serial"), format!("FIX{bdf}      \n").replace(':', "")).unwrap();
        let ns = format!("{ctrl}n1");
        let map = self.blk_mq_map(io_queues);
        for (i, cpus) in map.iter().enumerate() {
            let q = cdir.join(&ns).join("mq").join(i.to_string());
            fs::create_dir_all(&q).unwrap();
            let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
            fs::write(q.join("cpu_list"), format!("{}\n", list.join(", "))).unwrap();
            for c in cpus {
                fs::create_dir_all(q.join(format!("cpu{c}"))).unwrap();
            }
        }
        fs::create_dir_all(self.path("sys/block")).unwrap();
        let rel = dev.strip_prefix(self.path("sys")).unwrap();
        let _ = symlink(Path::new("..").join(rel).join("nvme").join(ctrl).join(&ns), self.path("sys/block").join(&ns));
        let mut vectors = vec![self.plain_vector(format!("{ctrl}q0"))];
        for (i, cpus) in map.into_iter().enumerate() {
            let mut v = self.plain_vector(format!("{ctrl}q{}", i + 1));
            if managed {
                v.affinity = cpus;
                v.read_only = kernel_ro_mode;
            }
            vectors.push(v);
        }
        self.add_msi(bdf, &dev, vectors);
        self
    }

    /// A device of any PCI `class` with MSI vectors named `names`.
    pub fn msi_device(&mut self, bdf: &str, class: u32, driver: &str, node: Option<u32>, names: &[&str]) -> &mut Self {
        let dev = self.pci_device(bdf, class, driver, node);
        let vectors = names.iter().map(|n| self.plain_vector(n.to_string())).collect();
        self.add_msi(bdf, &dev, vectors);
        self
    }

    /// Gives device `bdf` (already written) the network interface `ifname` (`net/<ifname>/`).
    pub fn net_interface(&mut self, bdf: &str, ifname: &str) -> &mut Self {
        let host = format!("pci{}", &bdf[..bdf.len().min(7)]);
        fs::create_dir_all(self.path("sys/devices").join(host).join(bdf).join("net").join(ifname)).unwrap();
        self
    }

    /// Gives interface `ifname` of device `bdf` (already written) `queues` transmit and receive
    /// queues, as sysfs shows them: `net/IF/queues/tx-N/{xps_cpus,traffic_class}` (`xps_cpus`
    /// holds `xps` as the kernel prints it, `traffic_class` "0", as without traffic classes) and
    /// `rx-N/`. Returns the `queues` directory.
    pub fn tx_queues(&mut self, bdf: &str, ifname: &str, queues: u32, xps: &CpuSet) -> PathBuf {
        let host = format!("pci{}", &bdf[..bdf.len().min(7)]);
        let dir = self.path("sys/devices").join(host).join(bdf).join("net").join(ifname).join("queues");
        for q in 0..queues {
            let tx = dir.join(format!("tx-{q}"));
            fs::create_dir_all(&tx).unwrap();
            fs::write(tx.join("xps_cpus"), format!("{}\n", kernel_mask(xps, self.online.last().unwrap_or(0)))).unwrap();
            fs::write(tx.join("traffic_class"), "0\n").unwrap();
            fs::create_dir_all(dir.join(format!("rx-{q}"))).unwrap();
        }
        dir
    }

    /// A device of any PCI `class` with one legacy INTx interrupt (no `msi_irqs/`).
    pub fn intx_device(&mut self, bdf: &str, class: u32, driver: &str, node: Option<u32>, name: &str) -> &mut Self {
        let dev = self.pci_device(bdf, class, driver, node);
        let irq = self.take_irq();
        fs::write(dev.join("irq"), format!("{irq}\n")).unwrap();
        let v = self.plain_vector(name.to_string());
        self.write_irq(irq, bdf, 0, &v, "IO-APIC", "fasteoi");
        self.irqs.entry(bdf.to_string()).or_default().push(irq);
        self
    }

    /// Sets an IRQ's current (and effective) affinity, as a successful write would.
    pub fn irq_affinity(&mut self, irq: u32, cpus: &CpuSet) -> &mut Self {
        let dir = self.path(&format!("proc/irq/{irq}"));
        fs::write(dir.join("smp_affinity"), format!("{}\n", cpus.to_mask_string())).unwrap();
        fs::write(dir.join("smp_affinity_list"), format!("{}\n", cpus.to_list_string())).unwrap();
        let first = cpus.first().map(CpuSet::single).unwrap_or_default();
        fs::write(dir.join("effective_affinity_list"), format!("{}\n", first.to_list_string())).unwrap();
        self
    }

    /// `sys/devices/pciDDDD:BB/BDF` with its identity files and the bus link to it.
    fn pci_device(&mut self, bdf: &str, class: u32, driver: &str, node: Option<u32>) -> PathBuf {
        let host = format!("pci{}", &bdf[..bdf.len().min(7)]);
        let dev = self.path("sys/devices").join(&host).join(bdf);
        fs::create_dir_all(&dev).unwrap();
        fs::write(dev.join("class"), format!("{class:#08x}\n")).unwrap();
        fs::write(dev.join("vendor"), "0x8086\n").unwrap();
        fs::write(dev.join("device"), "0x1593\n").unwrap();
        let numa = node.map_or("-1".to_string(), |n| n.to_string());
        fs::write(dev.join("numa_node"), format!("{numa}\n")).unwrap();
        fs::write(dev.join("local_cpulist"), format!("{}\n", self.node_cpus(node).to_list_string())).unwrap();
        fs::write(dev.join("irq"), "0\n").unwrap();
        let _ = symlink(format!("../../../bus/pci/drivers/{driver}"), dev.join("driver"));
        let bus = self.path("sys/bus/pci/devices");
        fs::create_dir_all(&bus).unwrap();
        let _ = symlink(format!("../../../devices/{host}/{bdf}"), bus.join(bdf));
        dev
    }

    /// A vector starting on all online CPUs, no hint, writable.
    fn plain_vector(&self, name: String) -> Vector {
        Vector { name, affinity: self.online.clone(), hint: CpuSet::new(), read_only: false }
    }

    fn take_irq(&mut self) -> u32 {
        let irq = self.next_irq;
        self.next_irq += 1;
        irq
    }

    fn add_msi(&mut self, bdf: &str, dev: &Path, vectors: Vec<Vector>) {
        fs::create_dir_all(dev.join("msi_irqs")).unwrap();
        for (hw, v) in vectors.iter().enumerate() {
            let irq = self.take_irq();
            fs::write(dev.join("msi_irqs").join(irq.to_string()), "msix\n").unwrap();
            self.write_irq(irq, bdf, hw, v, &format!("IR-PCI-MSIX-{bdf}"), "edge");
            self.irqs.entry(bdf.to_string()).or_default().push(irq);
        }
    }

    /// `proc/irq/N/*` and the `proc/interrupts` line (header first if the file is new).
    fn write_irq(&mut self, irq: u32, _bdf: &str, hwirq: usize, v: &Vector, chip: &str, trigger: &str) {
        let dir = self.path(&format!("proc/irq/{irq}"));
        fs::create_dir_all(&dir).unwrap();
        self.irq_affinity(irq, &v.affinity);
        fs::write(dir.join("affinity_hint"), format!("{}\n", v.hint.to_mask_string())).unwrap();
        let mode = if v.read_only { 0o444 } else { 0o644 };
        for f in ["smp_affinity", "smp_affinity_list"] {
            fs::set_permissions(dir.join(f), fs::Permissions::from_mode(mode)).unwrap();
        }
        let path = self.path("proc/interrupts");
        let fresh = fs::metadata(&path).map_or(true, |m| m.len() == 0);
        let mut f = fs::OpenOptions::new().create(true).append(true).open(&path).unwrap();
        let mut text = String::new();
        if fresh {
            text.push_str("     ");
            for c in &self.online {
                text.push_str(&format!("{:>11}", format!("CPU{c}")));
            }
            text.push('\n');
        }
        text.push_str(&format!("{irq:>4}:"));
        for _ in &self.online {
            text.push_str(&format!("{:>11}", 0));
        }
        text.push_str(&format!("  {chip} {hwirq:>3}-{trigger:<8}  {}\n", v.name));
        f.write_all(text.as_bytes()).unwrap();
        self.write_sys_kernel_irq(irq, hwirq, v, chip, trigger);
    }

    /// `sys/kernel/irq/N/*` as the kernel's irq_sysfs attributes show it: `actions` is the action
    /// names joined by `,` with a newline only after some name.
    fn write_sys_kernel_irq(&self, irq: u32, hwirq: usize, v: &Vector, chip: &str, trigger: &str) {
        let dir = self.path(&format!("sys/kernel/irq/{irq}"));
        fs::create_dir_all(&dir).unwrap();
        let actions = if v.name.is_empty() { String::new() } else { format!("{}\n", v.name) };
        let counts = vec!["0"; self.online.len()].join(",");
        for (file, text) in [
            ("actions", actions),
            ("chip_name", format!("{chip}\n")),
            ("hwirq", format!("{hwirq}\n")),
            ("name", format!("{trigger}\n")),
            ("per_cpu_count", format!("{counts}\n")),
            ("type", if trigger == "edge" { "edge\n" } else { "level\n" }.to_string()),
            ("wakeup", "disabled\n".to_string()),
        ] {
            fs::write(dir.join(file), text).unwrap();
        }
    }

    /// Hardware queue i → a contiguous run of the online CPUs (every queue gets at least one).
    fn blk_mq_map(&self, queues: u32) -> Vec<CpuSet> {
        let cpus: Vec<u32> = self.online.iter().collect();
        let (n, q) = (cpus.len(), queues.max(1) as usize);
        (0..q)
            .map(|i| {
                let (lo, hi) = (i * n / q, ((i + 1) * n / q).max(i * n / q + 1));
                cpus[lo.min(n - 1)..hi.min(n)].iter().copied().collect()
            })
            .collect()
    }
}

/// A mask as the kernel prints a cpumask (`%*pb`): every 32-bit group of a machine whose last
/// CPU is `last`, zero-padded, comma-separated.
pub fn kernel_mask(set: &CpuSet, last: u32) -> String {
    let groups = last / 32 + 1;
    (0..groups)
        .rev()
        .map(|g| {
            let word: u32 = (0..32).filter(|b| set.contains(g * 32 + b)).fold(0, |w, b| w | 1 << b);
            format!("{word:08x}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The highest IRQ number already in the root (`proc/irq/*`, `msi_irqs/*`, `irq` files).
fn highest_existing_irq(dir: &Path) -> Option<u32> {
    let mut max = None;
    let mut see = |n: u32| max = Some(max.map_or(n, |m: u32| m.max(n)));
    if let Ok(rd) = fs::read_dir(dir.join("proc/irq")) {
        rd.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).for_each(&mut see);
    }
    if let Ok(rd) = fs::read_dir(dir.join("sys/bus/pci/devices")) {
        for dev in rd.flatten().map(|e| e.path()) {
            if let Some(n) = fs::read_to_string(dev.join("irq")).ok().and_then(|t| t.trim().parse().ok()) {
                see(n);
            }
            if let Ok(msi) = fs::read_dir(dev.join("msi_irqs")) {
                msi.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).for_each(&mut see);
            }
        }
    }
    max
}

/// Writes a minimal CPU topology: `nodes` × `cores` × `threads` CPUs, numbered like x86 Linux
/// (all first threads node by node, then all second threads), with SMT siblings, packages = nodes,
/// node cpulists and a 10/20 distance matrix. Returns the CPU count.
pub fn write_cpu_topology(dir: &Path, nodes: u32, cores: u32, threads: u32) -> u32 {
    let per_thread = nodes * cores;
    let total = per_thread * threads;
    let sys = dir.join("sys/devices/system");
    let all = format!("0-{}\n", total - 1);
    fs::create_dir_all(sys.join("cpu")).unwrap();
    for f in ["online", "possible", "present"] {
        fs::write(sys.join("cpu").join(f), &all).unwrap();
    }
    let node_cpus = |n: u32| -> CpuSet {
        (0..threads).flat_map(|t| (0..cores).map(move |c| t * per_thread + n * cores + c)).collect()
    };
    for cpu in 0..total {
        let (node, core) = ((cpu % per_thread) / cores, cpu % per_thread);
        let siblings: CpuSet = (0..threads).map(|t| t * per_thread + core).collect();
        let topo = sys.join(format!("cpu/cpu{cpu}/topology"));
        fs::create_dir_all(&topo).unwrap();
        let package = node_cpus(node).to_list_string();
        for (f, v) in [
            ("core_cpus_list", siblings.to_list_string()),
            ("thread_siblings_list", siblings.to_list_string()),
            ("cluster_cpus_list", siblings.to_list_string()),
            ("package_cpus_list", package.clone()),
            ("core_siblings_list", package.clone()),
            ("die_cpus_list", package),
            ("physical_package_id", node.to_string()),
            ("core_id", (core % cores).to_string()),
        ] {
            fs::write(topo.join(f), format!("{v}\n")).unwrap();
        }
        fs::write(sys.join(format!("cpu/cpu{cpu}/online")), "1\n").unwrap();
    }
    for n in 0..nodes {
        let nd = sys.join(format!("node/node{n}"));
        fs::create_dir_all(&nd).unwrap();
        fs::write(nd.join("cpulist"), format!("{}\n", node_cpus(n).to_list_string())).unwrap();
        let dist: Vec<&str> = (0..nodes).map(|m| if m == n { "10" } else { "20" }).collect();
        fs::write(nd.join("distance"), format!("{}\n", dist.join(" "))).unwrap();
    }
    let node_list = format!("0-{}\n", nodes - 1);
    for f in ["online", "possible", "has_cpu"] {
        fs::write(sys.join("node").join(f), &node_list).unwrap();
    }
    total
}

/// Nodes and their CPUs from `node/nodeN/cpulist`, independent of topology discovery (device
/// discovery only needs nodes, to narrow `local_cpulist`).
pub fn node_topology(root: &irqwise::sysfs::Root) -> irqwise::topology::Topology {
    let mut topo = irqwise::topology::Topology::default();
    for name in root.list_dir_optional("sys/devices/system/node").unwrap() {
        let Some(id) = name.strip_prefix("node").and_then(|n| n.parse::<u32>().ok()) else { continue };
        let cpus =
            root.read_cpulist_optional(format!("sys/devices/system/node/{name}/cpulist")).unwrap().unwrap_or_default();
        topo.nodes.insert(id, irqwise::topology::NumaNode { id, cpus, distance: Vec::new() });
    }
    topo
}

/// Extracts the hwloc dumps (only `machine` when given) into a fresh temporary directory, one
/// directory per machine.
pub fn extract_hwloc(machine: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let tar = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hwloc/hwloc-linux-sysfs.tar.bz2");
    let mut cmd = std::process::Command::new("tar");
    cmd.arg("-xjf").arg(&tar).arg("-C").arg(dir.path());
    if let Some(m) = machine {
        cmd.arg(format!("./{m}"));
    }
    assert!(cmd.status().unwrap().success(), "tar -xjf {}", tar.display());
    dir
}
