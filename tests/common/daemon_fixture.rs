//! Daemon test helpers: a 2-node, 16-CPU root with an 8-queue NIC on node 1, CPU hotplug as the
//! kernel shows it in sysfs, and affinity reads. Include with
//! `#[path = "common/fixture.rs"] mod fixture;` and `#[path = "common/daemon_fixture.rs"] mod
//! daemon_fixture;` (this file uses the crate's `fixture` module).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use std::time::Duration;

use irqwise::config::load_config;
use irqwise::config::ConfigPaths;
use irqwise::cpuset::CpuSet;
use irqwise::daemon::Daemon;
use irqwise::events::Trigger;
use irqwise::sysfs::Root;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::fixture;

pub const NIC: &str = "0000:81:00.0";

/// `nodes` × 4 cores × 2 threads (2 nodes: CPUs 0-15, node 1 = 4-7,12-15) with an 8-queue
/// `ixgbe` NIC `eth1` on node 1 (`<if>-TxRx-N` names, then the misc vector), every IRQ on all
/// CPUs. Returns the NIC's IRQs in vector order.
pub fn nic_root(dir: &Path) -> Vec<u32> {
    fixture::write_cpu_topology(dir, 2, 4, 2);
    let mut root = fixture::FixtureRoot::at(dir);
    root.nic(NIC, "ixgbe", "eth1", Some(1), 8, fixture::NamingScheme::TxRx);
    root.irqs_of(NIC).to_vec()
}

pub fn affinity(dir: &Path, irq: u32) -> CpuSet {
    let text = fs::read_to_string(dir.join(format!("proc/irq/{irq}/smp_affinity_list"))).unwrap();
    CpuSet::parse_list(text.trim()).unwrap()
}

pub fn set_affinity(dir: &Path, irq: u32, cpus: &CpuSet) {
    fs::write(dir.join(format!("proc/irq/{irq}/smp_affinity_list")), format!("{}\n", cpus.to_list_string())).unwrap();
}

pub fn affinities(dir: &Path, irqs: &[u32]) -> BTreeMap<u32, CpuSet> {
    irqs.iter().map(|&i| (i, affinity(dir, i))).collect()
}

/// Every file under `cpu/` that a hotplug rewrites, with its original content.
pub struct Hotplug {
    dir: PathBuf,
    saved: BTreeMap<PathBuf, Option<String>>,
}

impl Hotplug {
    pub fn new(dir: &Path) -> Hotplug {
        Hotplug { dir: dir.to_path_buf(), saved: BTreeMap::new() }
    }

    fn save(&mut self, path: PathBuf) {
        let old = fs::read_to_string(&path).ok();
        self.saved.entry(path).or_insert(old);
    }

    /// Takes `cpu` offline as Linux shows it: the global `online` list and `cpuN/online` change,
    /// `cpuN/topology/` disappears, and the CPU leaves every other CPU's topology masks. Node
    /// cpulists keep it (the kernel's node masks hold possible CPUs). IRQs whose affinity was
    /// only `cpu` are reset to all online CPUs, as the kernel's migration does.
    pub fn offline(&mut self, cpu: u32, irqs: &[u32]) {
        let sys = self.dir.join("sys/devices/system/cpu");
        let online_path = sys.join("online");
        self.save(online_path.clone());
        let mut online = CpuSet::parse_list(fs::read_to_string(&online_path).unwrap().trim()).unwrap();
        online.remove(cpu);
        fs::write(&online_path, format!("{}\n", online.to_list_string())).unwrap();
        self.save(sys.join(format!("cpu{cpu}/online")));
        fs::write(sys.join(format!("cpu{cpu}/online")), "0\n").unwrap();
        let topo = sys.join(format!("cpu{cpu}/topology"));
        for e in fs::read_dir(&topo).unwrap().flatten() {
            self.save(e.path());
        }
        fs::remove_dir_all(&topo).unwrap();
        // Its cache directories go too, and it leaves the others' cache sharing lists.
        let caches = |c: u32| -> Vec<PathBuf> {
            let dir = sys.join(format!("cpu{c}/cache"));
            let entries: Vec<PathBuf> =
                fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
            entries.into_iter().filter(|p| p.is_dir()).collect()
        };
        for index in caches(cpu) {
            for e in fs::read_dir(&index).unwrap().flatten() {
                self.save(e.path());
            }
            fs::remove_dir_all(&index).unwrap();
        }
        for other in &online {
            let t = sys.join(format!("cpu{other}/topology"));
            let lists = fs::read_dir(&t).unwrap().flatten().map(|e| e.path());
            let shared = caches(other).into_iter().map(|i| i.join("shared_cpu_list")).filter(|p| p.exists());
            for path in lists.chain(shared).collect::<Vec<_>>() {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if !name.ends_with("_list") {
                    continue;
                }
                let mut mask = CpuSet::parse_list(fs::read_to_string(&path).unwrap().trim()).unwrap();
                if mask.remove(cpu) {
                    self.save(path.clone());
                    fs::write(&path, format!("{}\n", mask.to_list_string())).unwrap();
                }
            }
        }
        for &irq in irqs {
            if affinity(&self.dir, irq) == CpuSet::single(cpu) {
                set_affinity(&self.dir, irq, &online);
            }
        }
    }

    /// Puts every saved file back (the CPU is online again, topology restored).
    pub fn restore(&mut self) {
        for (path, text) in std::mem::take(&mut self.saved) {
            if let Some(text) = text {
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(&path, text).unwrap();
            }
        }
    }
}

/// Process `pid` as `DIR/proc` shows it: its `comm`, its `cmdline` (words NUL-terminated) and
/// the `Uid:` line of its `status` (real, effective, saved, file system: all `uid`).
pub fn process(dir: &Path, pid: u32, uid: u32, comm: &str, cmdline: &[u8]) {
    let proc = dir.join(format!("proc/{pid}"));
    fs::create_dir_all(&proc).unwrap();
    fs::write(proc.join("comm"), format!("{comm}\n")).unwrap();
    fs::write(proc.join("cmdline"), cmdline).unwrap();
    fs::write(proc.join("status"), format!("Name:\t{comm}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")).unwrap();
}

/// Writes `DIR/etc/irqwise/irqwise.toml` with `text`.
pub fn write_config(cfg: &Path, text: &str) {
    let main = cfg.join("etc/irqwise/irqwise.toml");
    fs::create_dir_all(main.parent().unwrap()).unwrap();
    fs::write(main, text).unwrap();
}

/// How long a test waits for a pass or a stop before failing.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// An in-process daemon on a root, driven by injected triggers.
pub struct Running {
    pub tx: mpsc::Sender<Trigger>,
    passes: watch::Receiver<u64>,
    handle: JoinHandle<Daemon>,
}

impl Running {
    pub fn start(root: &Path, cfg: &Path) -> Running {
        let root = Root::new(root);
        let paths = ConfigPaths::under(cfg);
        let config = load_config(&root, &paths).unwrap();
        let mut daemon = Daemon::new(root, paths, config);
        let passes = daemon.passes();
        let (tx, rx) = mpsc::channel(2048);
        let handle = tokio::spawn(async move {
            daemon.run_with(rx).await;
            daemon
        });
        Running { tx, passes, handle }
    }

    pub async fn wait_passes(&mut self, n: u64) {
        tokio::time::timeout(PATIENCE, self.passes.wait_for(|&p| p >= n)).await.expect("pass timed out").unwrap();
    }

    pub fn count(&self) -> u64 {
        *self.passes.borrow()
    }

    /// Sends `trigger` and waits for the pass it causes.
    pub async fn trigger(&mut self, trigger: Trigger) {
        let next = self.count() + 1;
        self.tx.send(trigger).await.unwrap();
        self.wait_passes(next).await;
    }

    pub async fn stop(self) -> Daemon {
        self.tx.send(Trigger::Stop).await.unwrap();
        tokio::time::timeout(PATIENCE, self.handle).await.expect("stop timed out").unwrap()
    }
}
