//! Discovery and planning on a synthetic 1024-CPU machine (8 nodes × 64 cores × 2 threads,
//! 4-core clusters, kernel 7.0) with 64 NICs × 64 queues and 32 NVMe controllers × 128 I/O queues
//! (managed, read-only masks): 8288 device IRQs plus the 16 legacy IO-APIC lines.
//!
//! The root is written once, outside the timed part, as a current x86 kernel shows it: the
//! topology, the PCI devices, `proc/irq/N/*`, `sys/kernel/irq/N/{actions,chip_name,hwirq,name,
//! per_cpu_count,type,wakeup}` and one `proc/interrupts` of 1024 count columns (~93 MB).
//!
//! - `plan_pass_discover_and_plan`: `pass::plan_pass`, what the daemon runs on every event burst
//!   (topology + devices + udev properties + config + plan);
//! - `discover_topology`, `discover_devices_from_sys_kernel_irq`: the two discovery halves alone;
//! - `discover_devices_from_proc_interrupts`: device discovery on the same machine without
//!   `sys/kernel/irq` (kernels without SPARSE_IRQ, partial captures): names from `proc/interrupts`;
//! - `plan_only`: planning of already discovered data;
//! - `plan_a_read_sample`: everything `plan_pass` does after reading: isolation applied, policies,
//!   the plan, the guard, transmit steering (`plan::from_sample::plan_sample`);
//! - `daemon_pass_after_one_cpu_event`: the daemon's whole pass (read, plan, write, state file)
//!   after one CPU went offline or came back, on a copy of the machine it placed: it re-reads the
//!   CPU lists, that CPU's package and the masks of the IRQs on it;
//! - `daemon_pass_reconcile`: the same daemon's pass on the reconcile timer, which re-reads
//!   everything.
//!
//! What a full read costs is system calls: ~8300 IRQs × 4 files (`sys/kernel/irq/N/actions` and
//! three `proc/irq/N` lists, the mode of `smp_affinity_list` from the same `fstat`; 3 for the
//! 4096 kernel-managed NVMe IRQs, whose `affinity_hint` is not read) and the CPUs' files, each
//! topology group's read once (`strace -c` of `irqwise plan` on the same layout: 35,121
//! `openat2`), each `openat2`, `fstat` (none under a real sysfs/procfs), `read` and `close`, on up to
//! `sysfs::MAX_READERS` threads. A pass after one CPU event reads the CPU lists, one CPU's
//! directory and the files of the few dozen IRQs on that CPU; the rest of it is planning and
//! the state file. The fixture is written under `TMPDIR` (`/tmp` by default, a disk here, where
//! ext4 starts the write-back of the replaced state file and of each rewritten affinity file
//! inside the pass; `TMPDIR=/dev/shm` puts it in memory, as `/run`, sysfs and procfs are). docs/measurements.md has the figures.

#[path = "../tests/common/big_machine.rs"]
mod big_machine;
#[path = "../tests/common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "../tests/common/fixture.rs"]
mod fixture;
#[path = "../tests/common/sysfs_tree.rs"]
mod sysfs_tree;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::sync::LazyLock;

use irqwise::config::{Config, ConfigPaths};
use irqwise::cpuset::CpuSet;
use irqwise::daemon::Daemon;
use irqwise::devices::discover::discover_devices;
use irqwise::devices::Device;
use irqwise::events::Batch;
use irqwise::pass::plan_pass;
use irqwise::plan::from_sample::{plan_sample, PassMemory};
use irqwise::plan::{build_plan, PlanContext};
use irqwise::sample::kernel_release::group_rules;
use irqwise::sample::reader::read_sample;
use irqwise::sysfs::Root;
use irqwise::topology::discover::read_topology;
use irqwise::topology::{Topology, TopologyMemory};

fn main() {
    // Writing the 8288-IRQ root takes most of a minute in a debug build: measure only under
    // `cargo bench`, not when `cargo test --all-targets`/nextest starts the bench target.
    if std::env::args().any(|a| a == "--bench") {
        divan::main();
    }
}

const NODES: u32 = 8;
const NICS: u32 = 64;
const NIC_QUEUES: u32 = 64;
const NVMES: u32 = 32;
const NVME_QUEUES: u32 = 128;

struct Machine {
    dir: tempfile::TempDir,
    /// The same machine without `sys/kernel/irq`.
    partial: tempfile::TempDir,
}

static MACHINE: LazyLock<Machine> = LazyLock::new(write_machine);

/// Writes the whole root (see `big_machine`) and the same root without `sys/kernel/irq`.
fn write_machine() -> Machine {
    let dir = tempfile::tempdir().expect("tempdir");
    let shape = big_machine::BigMachine {
        nodes: NODES,
        cores_per_node: 64,
        cores_per_cluster: 4,
        nics: NICS,
        nic_queues: NIC_QUEUES,
        nvmes: NVMES,
        nvme_queues: NVME_QUEUES,
        interrupts: true,
    };
    shape.write(dir.path());
    let partial = write_root_without_sys_kernel_irq(dir.path());
    settle();
    Machine { dir, partial }
}

/// Writes back what the fixture's writing left dirty, so that no measured pass shares the disk
/// and the CPUs with the write-back of a tree just written (it made the first passes measured
/// after `placed_daemon` slower than the later ones).
fn settle() {
    let status = std::process::Command::new("sync").status().expect("sync");
    assert!(status.success(), "sync: {status}");
}

/// A second root with the first's `sys/bus`, `sys/devices` and `proc` (hard-linked copies:
/// reads never follow a symlink out of the root) but without `sys/kernel/irq`: what a kernel
/// without SPARSE_IRQ (or a partial capture) shows.
fn write_root_without_sys_kernel_irq(full: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::create_dir_all(dir.path().join("sys")).expect("sys");
    for rel in ["sys/bus", "sys/devices", "proc"] {
        let status = std::process::Command::new("cp")
            .arg("-a")
            .arg("--link")
            .arg(full.join(rel))
            .arg(dir.path().join(rel))
            .status()
            .expect("cp");
        assert!(status.success(), "cp -a --link {rel}: {status}");
    }
    dir
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

#[divan::bench(sample_count = 10, sample_size = 1)]
fn plan_a_read_sample(bencher: divan::Bencher) {
    let root = Root::new(MACHINE.dir.path());
    let config = Config::default();
    let known = BTreeSet::new();
    let sample = read_sample(&root, std::sync::Arc::new(config.clone())).expect("sample");
    let mut memory = TopologyMemory::default();
    memory.remember(&sample.topology);
    let full = plan_pass(&root, &config, &known).expect("plan_pass").plan;
    let pass = || plan_sample(&sample, PassMemory { topology: Some(&memory), known_managed: &known });
    assert_eq!(pass().plan, full, "planning a sample read before plans what a full pass plans");
    bencher.bench(pass);
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn discover_topology(bencher: divan::Bencher) {
    let root = Root::new(MACHINE.dir.path());
    bencher.bench(|| read_topology(&root).expect("topology"));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn discover_devices_from_sys_kernel_irq(bencher: divan::Bencher) {
    let (topo, devices) = &*DISCOVERED;
    let root = Root::new(MACHINE.dir.path());
    assert_eq!(&discover_devices(&root, topo).expect("devices").devices, devices);
    bencher.bench(|| discover_devices(&root, topo).expect("devices"));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn discover_devices_from_proc_interrupts(bencher: divan::Bencher) {
    let (topo, devices) = &*DISCOVERED;
    let root = Root::new(MACHINE.partial.path());
    assert_eq!(&discover_devices(&root, topo).expect("devices").devices, devices);
    bencher.bench(|| discover_devices(&root, topo).expect("devices"));
}

static DISCOVERED: LazyLock<(Topology, Vec<Device>)> = LazyLock::new(|| {
    let root = Root::new(MACHINE.dir.path());
    let topo = read_topology(&root).expect("topology");
    let devices = discover_devices(&root, &topo).expect("devices").devices;
    (topo, devices)
});

#[divan::bench(sample_count = 10, sample_size = 1)]
fn plan_only(bencher: divan::Bencher) {
    let (topo, devices) = &*DISCOVERED;
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
    bencher.bench(|| build_plan(&ctx, devices, &[]));
}

/// A copy of the machine that a daemon may write to, placed by a first pass.
fn placed_daemon() -> (tempfile::TempDir, Daemon) {
    let dir = tempfile::tempdir().expect("tempdir");
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", MACHINE.dir.path().display()))
        .arg(dir.path())
        .status()
        .expect("cp");
    assert!(status.success(), "cp -a: {status}");
    let root = Root::new(dir.path());
    let mut daemon = Daemon::new(root, ConfigPaths::under(dir.path().join("no-config")), Config::default());
    daemon.pass(vec!["start".into()]);
    assert_eq!(daemon.last_error(), None);
    assert!(daemon.last_report().summary.failed == 0, "the first pass placed every IRQ");
    // As the kernel would show it after that: managed masks are the kernel's groups (the
    // prediction), every effective mask one CPU of the mask.
    for p in daemon.last_plan().devices.iter().flat_map(|d| &d.irqs) {
        let dir = dir.path().join(format!("proc/irq/{}", p.irq));
        if p.managed {
            let mask = p.desired.clone().expect("a managed prediction");
            fs::write(dir.join("smp_affinity_list"), format!("{}\n", mask.to_list_string())).expect("mask");
            fs::write(dir.join("smp_affinity"), format!("{}\n", mask.to_mask_string())).expect("mask");
        }
        let mask =
            CpuSet::parse_list(fs::read_to_string(dir.join("smp_affinity_list")).expect("mask").trim()).expect("list");
        fs::write(dir.join("effective_affinity_list"), format!("{}\n", mask.first().expect("a CPU")))
            .expect("effective");
    }
    daemon.pass(vec!["reconcile".into()]);
    settle();
    (dir, daemon)
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn daemon_pass_after_one_cpu_event(bencher: divan::Bencher) {
    let (dir, daemon) = placed_daemon();
    // A CPU holding a NIC queue, so the pass has a queue to move (and back).
    let queue = daemon.last_plan().devices.iter().flat_map(|d| &d.irqs).find(|p| p.queue.is_some() && !p.managed);
    let cpu =
        queue.and_then(|p| p.desired.as_ref()).and_then(irqwise::cpuset::CpuSet::first).expect("a placed NIC queue");
    let irqs: Vec<u32> = daemon.last_plan().devices.iter().flat_map(|d| d.irqs.iter().map(|p| p.irq)).collect();
    let daemon = RefCell::new(daemon);
    let hotplug = RefCell::new(daemon_fixture::Hotplug::new(dir.path()));
    let offline = std::cell::Cell::new(false);
    bencher
        .with_inputs(|| {
            if offline.replace(!offline.get()) {
                hotplug.borrow_mut().restore();
            } else {
                hotplug.borrow_mut().offline(cpu, &irqs);
            }
            Batch { cpus_changed: true, cpus: CpuSet::single(cpu), triggers: 1, ..Batch::default() }
        })
        .bench_local_values(|batch| daemon.borrow_mut().handle(batch));
    let daemon = daemon.into_inner();
    assert_eq!(daemon.last_error(), None);
    assert!(daemon.last_report().summary.failed == 0);
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn daemon_pass_reconcile(bencher: divan::Bencher) {
    let (_dir, daemon) = placed_daemon();
    let daemon = RefCell::new(daemon);
    bencher
        .with_inputs(|| Batch { reconcile: true, triggers: 1, ..Batch::default() })
        .bench_local_values(|batch| daemon.borrow_mut().handle(batch));
}
