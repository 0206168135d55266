//! Passes that re-read only what an event can change plan exactly what a full pass plans.
//!
//! Random sequences of machine changes (CPUs going offline and coming back, devices removed and
//! returning, links going down and up, masks edited by another owner) are made to a fixture root,
//! each followed by the batch its kernel event makes: the CPUs, the device path or the link it
//! names (a foreign edit makes none: it is followed by an event of the edited IRQ's device, or
//! by the reconcile timer). After every pass the daemon's plan equals the plan of a full pass
//! (`pass::plan_pass`) on the same root just before it, and the writes it made are exactly
//! that plan's writes.

#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;
#[path = "common/sysfs_tree.rs"]
mod sysfs_tree;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use irqwise::config::{Config, ConfigPaths};
use irqwise::cpuset::CpuSet;
use irqwise::daemon::Daemon;
use irqwise::events::{Batch, LinkState};
use irqwise::pass::plan_pass;
use irqwise::sysfs::Root;
use irqwise::topology::discover::{read_topology_keeping, read_topology_with_warnings, reread_topology};
use proptest::prelude::*;

use daemon_fixture::{affinity, set_affinity, Hotplug};
use fixture::{FixtureRoot, NamingScheme};

/// A device of the fixture: its PCI address, interface (NICs) and IRQs in vector order.
struct Dev {
    bdf: &'static str,
    ifname: Option<&'static str>,
    irqs: Vec<u32>,
}

/// The fixture root and what is currently removed from it.
struct Machine {
    dir: tempfile::TempDir,
    devices: Vec<Dev>,
    hotplug: Hotplug,
    offline: BTreeSet<u32>,
    removed: BTreeSet<usize>,
    link_down: BTreeSet<usize>,
}

/// 2 nodes × 4 cores × 2 threads, two NICs (one per node) and one NVMe controller whose I/O
/// queues are kernel-managed.
fn machine() -> Machine {
    let dir = tempfile::tempdir().unwrap();
    fixture::write_cpu_topology(dir.path(), 2, 4, 2);
    let mut fx = FixtureRoot::at(dir.path());
    fx.nic("0000:81:00.0", "ixgbe", "eth1", Some(1), 8, NamingScheme::TxRx)
        .nic("0000:21:00.0", "ice", "eth2", Some(0), 4, NamingScheme::IceTxRx)
        .nvme("0000:41:00.0", "nvme0", Some(0), 4, true, false);
    let devices = vec![
        Dev { bdf: "0000:81:00.0", ifname: Some("eth1"), irqs: fx.irqs_of("0000:81:00.0").to_vec() },
        Dev { bdf: "0000:21:00.0", ifname: Some("eth2"), irqs: fx.irqs_of("0000:21:00.0").to_vec() },
        Dev { bdf: "0000:41:00.0", ifname: None, irqs: fx.irqs_of("0000:41:00.0").to_vec() },
    ];
    let hotplug = Hotplug::new(dir.path());
    Machine { dir, devices, hotplug, offline: BTreeSet::new(), removed: BTreeSet::new(), link_down: BTreeSet::new() }
}

/// One change to the machine; the indices are taken modulo what they index.
#[derive(Debug, Clone)]
enum Change {
    Offline(u32),
    OnlineAll,
    Remove(usize),
    Return(usize),
    LinkDown(usize),
    LinkUp(usize),
    /// Another owner writes the CPUs of `mask` (bits of CPUs 0-15, at least one online) to an
    /// IRQ; `event` picks what comes next: 0 a device event, 1 a link event, 2 the reconcile timer.
    Foreign {
        irq: usize,
        mask: u16,
        event: u8,
    },
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (1u32..16).prop_map(Change::Offline),
        Just(Change::OnlineAll),
        (0usize..3).prop_map(Change::Remove),
        (0usize..3).prop_map(Change::Return),
        (0usize..2).prop_map(Change::LinkDown),
        (0usize..2).prop_map(Change::LinkUp),
        (any::<usize>(), 1u16.., 0u8..3).prop_map(|(irq, mask, event)| Change::Foreign { irq, mask, event }),
    ]
}

fn away(dir: &Path, what: &str) -> PathBuf {
    let p = dir.join("away");
    fs::create_dir_all(&p).unwrap();
    p.join(what.replace('/', "_"))
}

impl Machine {
    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn online(&self) -> CpuSet {
        let text = fs::read_to_string(self.root().join("sys/devices/system/cpu/online")).unwrap();
        CpuSet::parse_list(text.trim()).unwrap()
    }

    /// The IRQs that have a `proc/irq/N` now.
    fn present_irqs(&self) -> Vec<u32> {
        let mut irqs: Vec<u32> = self.devices.iter().flat_map(|d| d.irqs.iter().copied()).collect();
        irqs.retain(|i| self.root().join(format!("proc/irq/{i}")).exists());
        irqs
    }

    /// The queue IRQs a NIC's driver frees at link down (all but its misc vector).
    fn queue_irqs(&self, nic: usize) -> Vec<u32> {
        let d = &self.devices[nic];
        let irqs = &d.irqs;
        if d.bdf == "0000:21:00.0" {
            irqs[1..].to_vec() // ice: misc first
        } else {
            irqs[..irqs.len() - 1].to_vec() // ixgbe: misc last
        }
    }

    /// free_irq(): `proc/irq/N` goes away.
    fn free(&self, irqs: &[u32]) {
        for irq in irqs {
            let from = self.root().join(format!("proc/irq/{irq}"));
            if from.exists() {
                fs::rename(&from, away(self.root(), &format!("irq{irq}"))).unwrap();
            }
        }
    }

    /// request_irq(): `proc/irq/N` is back, on every online CPU.
    fn request(&self, irqs: &[u32]) {
        let online = self.online();
        for irq in irqs {
            let to = self.root().join(format!("proc/irq/{irq}"));
            let from = away(self.root(), &format!("irq{irq}"));
            if from.exists() {
                fs::rename(&from, &to).unwrap();
                set_affinity(self.root(), *irq, &online);
            }
        }
    }

    /// The device's directory and its bus link, moved away or back.
    fn move_device(&self, dev: usize, out: bool) {
        let bdf = self.devices[dev].bdf;
        let host = format!("pci{}", &bdf[..7]);
        for rel in [format!("sys/devices/{host}/{bdf}"), format!("sys/bus/pci/devices/{bdf}")] {
            let (a, b) = (self.root().join(&rel), away(self.root(), &rel));
            let (from, to) = if out { (a, b) } else { (b, a) };
            fs::rename(from, to).unwrap();
        }
    }

    /// Makes `change` and returns the batch its event makes (what the daemon would receive).
    fn make(&mut self, change: &Change) -> Batch {
        let device = |dev: usize, devices: &[Dev]| device_event(devices[dev].bdf);
        let link = |nic: usize, up: bool, devices: &[Dev]| {
            let mut b = Batch { triggers: 1, ..Batch::default() };
            b.links.insert(2 + nic as u32, LinkState { name: devices[nic].ifname.map(String::from), up });
            b
        };
        match *change {
            Change::Offline(cpu) => {
                if !self.offline.contains(&cpu) {
                    self.hotplug.offline(cpu, &self.present_irqs());
                    self.offline.insert(cpu);
                }
                cpu_event(&[cpu])
            }
            Change::OnlineAll => {
                self.hotplug.restore();
                let back: Vec<u32> = std::mem::take(&mut self.offline).into_iter().collect();
                cpu_event(&back)
            }
            Change::Remove(dev) => {
                if self.removed.insert(dev) {
                    self.free(&self.devices[dev].irqs);
                    self.move_device(dev, true);
                }
                device(dev, &self.devices)
            }
            Change::Return(dev) => {
                if self.removed.remove(&dev) {
                    self.move_device(dev, false);
                    let mut irqs = self.devices[dev].irqs.clone();
                    if self.link_down.contains(&dev) {
                        let down = self.queue_irqs(dev);
                        irqs.retain(|i| !down.contains(i));
                    }
                    self.request(&irqs);
                }
                device(dev, &self.devices)
            }
            Change::LinkDown(nic) => {
                if !self.removed.contains(&nic) && self.link_down.insert(nic) {
                    self.free(&self.queue_irqs(nic));
                }
                link(nic, false, &self.devices)
            }
            Change::LinkUp(nic) => {
                if !self.removed.contains(&nic) && self.link_down.remove(&nic) {
                    self.request(&self.queue_irqs(nic));
                }
                link(nic, true, &self.devices)
            }
            Change::Foreign { irq, mask, event } => {
                let present = self.present_irqs();
                let online = self.online();
                let mut cpus: CpuSet = (0..16).filter(|c| mask & (1 << c) != 0).collect();
                cpus = cpus.intersection(&online);
                if cpus.is_empty() {
                    cpus = online.clone();
                }
                let Some(&irq) = present.get(irq % present.len().max(1)) else {
                    return Batch { reconcile: true, triggers: 1, ..Batch::default() };
                };
                set_affinity(self.root(), irq, &cpus);
                assert_eq!(affinity(self.root(), irq), cpus);
                let owner = self.devices.iter().position(|d| d.irqs.contains(&irq)).unwrap();
                match (event, self.devices[owner].ifname) {
                    (0, _) | (1, None) => device(owner, &self.devices),
                    (1, Some(_)) => link(owner, !self.link_down.contains(&owner), &self.devices),
                    _ => Batch { reconcile: true, triggers: 1, ..Batch::default() },
                }
            }
        }
    }
}

/// The batch of CPU events naming `cpus`.
fn cpu_event(cpus: &[u32]) -> Batch {
    Batch { cpus_changed: true, cpus: cpus.iter().copied().collect(), triggers: cpus.len().max(1), ..Batch::default() }
}

/// The batch of a uevent about PCI device `bdf`.
fn device_event(bdf: &str) -> Batch {
    let devpath = format!("/devices/pci{}/{bdf}", &bdf[..7]);
    Batch { devices_changed: true, devpaths: [devpath].into(), triggers: 1, ..Batch::default() }
}

/// The daemon on `m`'s root after its first pass.
fn daemon(m: &Machine) -> Daemon {
    let root = Root::new(m.root());
    let mut daemon = Daemon::new(root, ConfigPaths::under(m.root().join("no-config")), Config::default());
    daemon.pass(vec!["start".into()]);
    assert_eq!(daemon.last_error(), None);
    daemon
}

/// Each IRQ the plan writes, with the mask it asks for.
fn planned_writes(plan: &irqwise::plan::Plan) -> BTreeMap<u32, Option<CpuSet>> {
    plan.writes().map(|(_, p)| (p.irq, p.desired.clone())).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_pass_plans_and_writes_what_a_full_pass_on_the_same_root_would(
        changes in prop::collection::vec(change(), 1..14)
    ) {
        let mut m = machine();
        let mut daemon = daemon(&m);
        let root = Root::new(m.root());
        for change in &changes {
            let batch = m.make(change);
            let full = plan_pass(&root, daemon.config(), &BTreeSet::new()).unwrap().plan;
            daemon.handle(batch);
            prop_assert_eq!(daemon.last_error(), None);
            prop_assert_eq!(daemon.last_plan(), &full, "after {:?}", change);
            let written: BTreeMap<u32, Option<CpuSet>> =
                daemon.last_report().changes.iter().map(|c| (c.irq, c.wanted.clone())).collect();
            prop_assert_eq!(written, planned_writes(&full), "after {:?}", change);
        }
    }
}

/// The topology is kept while only devices and links change: a CPU offlining that no event
/// reported is not seen by a device or link event's pass, and is by the next CPU event's.
#[test]
fn device_and_link_events_plan_on_the_kept_topology_and_cpu_events_read_it_again() {
    let mut m = machine();
    let mut daemon = daemon(&m);
    let root = Root::new(m.root());
    m.hotplug.offline(5, &m.present_irqs());
    let full = || plan_pass(&root, &Config::default(), &BTreeSet::new()).unwrap().plan;
    let on_5 = |plan: &irqwise::plan::Plan| {
        plan.devices.iter().flat_map(|d| &d.irqs).any(|p| p.desired == Some(CpuSet::single(5)))
    };
    assert!(on_5(daemon.last_plan()) && !on_5(&full()), "a queue lives on CPU 5 until it goes offline");
    let mut link = Batch { triggers: 1, ..Batch::default() };
    link.links.insert(2, LinkState { name: Some("eth1".into()), up: true });
    for batch in [link, device_event("0000:41:00.0")] {
        let full = full();
        daemon.handle(batch.clone());
        assert_ne!(daemon.last_plan(), &full, "{batch:?} re-read the topology");
    }
    let full = full();
    daemon.handle(cpu_event(&[5]));
    assert_eq!(daemon.last_plan(), &full, "a CPU event did not re-read the topology");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// After each CPU going offline (or all coming back), re-reading only the CPUs the events
    /// name and their neighbours gives the topology and warnings a full discovery gives.
    #[test]
    fn a_rediscovered_topology_equals_a_full_discovery(
        steps in prop::collection::vec(prop::option::of(0u32..16), 1..12)
    ) {
        // 2 nodes x 4 cores x 2 threads, clusters of 2 cores, caches: every mask level the
        // kernel edits on hotplug.
        let dir = tempfile::tempdir().unwrap();
        let topo = irqwise::topology::synthetic::SyntheticMachine { cores_per_cluster: 2, ..irqwise::topology::synthetic::SyntheticMachine::new(2, 4, 2) }.build();
        sysfs_tree::write_topology(dir.path(), &topo);
        let root = Root::new(dir.path());
        let mut hotplug = Hotplug::new(dir.path());
        let (mut topology, _, mut reads) = read_topology_keeping(&root).unwrap();
        let mut offline = BTreeSet::new();
        for step in steps {
            let named: CpuSet = match step {
                Some(cpu) if cpu != 0 && offline.insert(cpu) => {
                    hotplug.offline(cpu, &[]);
                    CpuSet::single(cpu)
                }
                Some(cpu) => CpuSet::single(cpu),
                None => {
                    hotplug.restore();
                    std::mem::take(&mut offline).into_iter().collect()
                }
            };
            let (again, again_warnings, next) = reread_topology(&root, &topology, reads, &named).unwrap();
            let (full, full_warnings) = read_topology_with_warnings(&root).unwrap();
            prop_assert_eq!(&again, &full, "after {:?}", step);
            prop_assert_eq!(again_warnings, full_warnings);
            reads = next;
            topology = again;
        }
    }
}

/// A CPU that goes offline and comes back within one batch (a hotplug storm): the kernel's
/// fallback moved the IRQ that lived on it, and the CPU is back when the pass reads the masks.
/// The pass puts the IRQ back without calling it drift; an edit by someone else still is.
#[test]
fn the_kernels_fallback_during_a_hotplug_storm_is_placed_again_not_called_drift() {
    let mut m = machine();
    let mut daemon = daemon(&m);
    // A queue on a CPU other than 0 (which cannot go offline).
    let queue = daemon.last_plan().devices.iter().flat_map(|d| &d.irqs).find(|p| {
        p.queue.is_some() && !p.managed && p.desired.as_ref().is_some_and(|d| d.len() == 1 && !d.contains(0))
    });
    let (irq, cpu) = queue.map(|p| (p.irq, p.desired.as_ref().unwrap().first().unwrap())).unwrap();
    m.hotplug.offline(cpu, &m.present_irqs());
    assert_ne!(affinity(m.root(), irq), CpuSet::single(cpu), "the kernel's fallback moved it");
    m.hotplug.restore();
    daemon.handle(cpu_event(&[cpu]));
    assert_eq!(affinity(m.root(), irq), CpuSet::single(cpu), "placed again");
    let drift = |d: &Daemon| d.counters().drift_corrections.iter().map(|c| c.value).sum::<u64>();
    assert_eq!(drift(&daemon), 0, "the kernel's fallback counted as drift");

    let other = m.present_irqs().into_iter().find(|&i| i != irq && affinity(m.root(), i).len() == 1).unwrap();
    set_affinity(m.root(), other, &CpuSet::parse_list("0-15").unwrap());
    daemon.handle(Batch { reconcile: true, triggers: 1, ..Batch::default() });
    assert_eq!(drift(&daemon), 1, "someone else's edit is drift");
}
