//! `balance = "load"` against the real `irqwise run` on a fixture root whose `/proc/interrupts`
//! counts the test drives: two queues that share a CPU (`queues_per_cpu = 2`) made hot are split
//! within a few samples, onto a CPU of the NIC's node; the move is logged with its rates, shown by
//! `status` and by `plan` (which plans what the daemon planned); once the load stops, the queue
//! returns home. Without `balance`, the same load moves nothing.

#[path = "common/bin.rs"]
mod bin;
#[path = "common/child_daemon.rs"]
mod child_daemon;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use child_daemon::Daemon;
use daemon_fixture::{affinity, nic_root, write_config};
use irqwise::cpuset::CpuSet;

const NODE1: &str = "4-7,12-15";

fn config(balance: &str) -> String {
    format!(
        "[global]\nreconcile_interval = \"1h\"\nbalance = \"{balance}\"\nbalance_interval = \"1s\"\n\
         balance_hold = \"0s\"\nbalance_moves_per_minute = 10\n\n\
         [[device]]\nmatch = {{ driver = \"ixgbe\" }}\nqueues_per_cpu = 2\n"
    )
}

/// Adds `by` to the first CPU column of each IRQ's line in `ROOT/proc/interrupts`.
fn bump(root: &Path, by: &[(u32, u64)]) {
    let path = root.join("proc/interrupts");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let irq = line.split_once(':').and_then(|(l, _)| l.trim().parse::<u32>().ok());
        match irq.and_then(|i| by.iter().find(|(j, _)| *j == i)) {
            Some((_, add)) => {
                let (label, rest) = line.split_once(':').unwrap();
                let first = rest.split_whitespace().next().unwrap();
                let at = rest.find(first).unwrap();
                let n: u64 = first.parse().unwrap();
                let new = format!("{:>width$}", n + add, width = at + first.len());
                out.push_str(&format!("{label}:{new}{}\n", &rest[at + first.len()..]));
            }
            None => out.push_str(&format!("{line}\n")),
        }
    }
    let tmp = root.join("proc/.interrupts.tmp");
    std::fs::write(&tmp, out).unwrap();
    std::fs::rename(tmp, path).unwrap();
}

/// A thread adding `per_second` interrupts to each IRQ every 100 ms until dropped.
struct Load(Arc<AtomicBool>, Option<std::thread::JoinHandle<()>>);

impl Load {
    fn start(root: &Path, per_second: Vec<(u32, u64)>) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let (root, flag) = (root.to_path_buf(), stop.clone());
        let handle = std::thread::spawn(move || {
            let tenth: Vec<(u32, u64)> = per_second.iter().map(|(i, r)| (*i, r / 10)).collect();
            while !flag.load(Ordering::Relaxed) {
                bump(&root, &tenth);
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Load(stop, Some(handle))
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        if let Some(h) = self.1.take() {
            let _ = h.join();
        }
    }
}

struct Setup {
    root: tempfile::TempDir,
    cfg: tempfile::TempDir,
    irqs: Vec<u32>,
    daemon: Daemon,
}

fn start(balance: &str) -> Setup {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), &config(balance));
    let log: PathBuf = root.path().join("daemon.log");
    let daemon = Daemon::start(root.path(), cfg.path(), log);
    Setup { root, cfg, irqs, daemon }
}

fn single(set: &CpuSet) -> u32 {
    assert_eq!(set.len(), 1, "{set}");
    set.first().unwrap()
}

#[test]
fn two_hot_queues_on_one_cpu_are_split_near_the_device_and_return_home_when_idle() {
    let s = start("load");
    let root = s.root.path();
    let (q0, q1) = (s.irqs[0], s.irqs[1]);
    let home = single(&affinity(root, q0));
    assert_eq!(single(&affinity(root, q1)), home, "queues_per_cpu = 2 puts queues 0 and 1 together");

    let passes = s.daemon.passes();
    let load = Load::start(root, vec![(q0, 40_000), (q1, 30_000)]);
    let state = s.daemon.wait(passes, "queue 1 moved by load", || affinity(root, q1) != affinity(root, q0));
    let to = single(&affinity(root, q1));
    assert!(CpuSet::parse_list(NODE1).unwrap().contains(to), "moved to CPU {to}, outside the NIC's node {NODE1}");
    assert_eq!(single(&affinity(root, q0)), home, "the hottest stays");
    assert_eq!(state["away_from_home"][0]["irq"], q1, "{state}");
    assert_eq!(state["away_from_home"][0]["home"], home, "{state}");
    assert_eq!(state["counters"]["load_moves"], 1, "{state}");
    let log = s.daemon.log_text();
    let line = log.lines().find(|l| l.contains(&format!("irq {q1} of"))).unwrap_or_else(|| panic!("{log}"));
    assert!(line.contains(&format!("home {home}, moved to {to} by load:")) && line.contains("k/s on CPU"), "{line}");

    // `status` lists it; `plan` plans what the daemon planned (nothing to write).
    let out = bin::irqwise(root).arg("status").output().unwrap();
    let status = String::from_utf8_lossy(&out.stdout);
    assert!(status.contains(&format!("away from home by load: irq {q1}")), "{status}");
    let out = bin::irqwise_with(root, s.cfg.path()).args(["plan", "--exit-code"]).output().unwrap();
    let plan = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "plan agrees with the daemon: {plan}");
    assert!(plan.contains(&format!("home {home}, moved to {to}")), "{plan}");

    drop(load);
    let passes = s.daemon.passes();
    let state = s.daemon.wait(passes, "queue 1 back home", || affinity(root, q1) == affinity(root, q0));
    assert!(state["away_from_home"].as_array().is_some_and(Vec::is_empty), "{state}");
    assert_eq!(state["counters"]["load_returns"], 1, "{state}");
}

#[test]
fn without_balance_the_same_load_moves_nothing() {
    let s = start("off");
    let root = s.root.path();
    let (q0, q1) = (s.irqs[0], s.irqs[1]);
    let before = (affinity(root, q0), affinity(root, q1));
    let load = Load::start(root, vec![(q0, 40_000), (q1, 30_000)]);
    std::thread::sleep(Duration::from_secs(5));
    drop(load);
    assert_eq!((affinity(root, q0), affinity(root, q1)), before);
    assert_eq!(s.daemon.passes(), 1, "no pass at all: nothing samples");
}
