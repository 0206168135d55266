//! A topology file the kernel refuses to read (an errno: for a moment while a CPU comes or goes,
//! a sibling's topology files can fail to read) is reported only when a second read in a row, with
//! no CPU event between the two, refuses it too. The daemon reads everything again at a recheck
//! pass soon after, so a race costs one extra pass and no warning.
//!
//! The refusal here is `ELOOP` (a symlink to itself), the one errno a root-owned fixture can make
//! a read return; the VM storm (`tests/vm/guest/scenarios/57-storm.sh`) meets the real one.

#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;
#[path = "common/sysfs_tree.rs"]
mod sysfs_tree;

use std::fs;
use std::path::{Path, PathBuf};

use irqwise::config::{Config, ConfigPaths};
use irqwise::daemon::Daemon;
use irqwise::events::Batch;
use irqwise::pass::plan_pass;
use irqwise::sysfs::Root;

use fixture::{FixtureRoot, NamingScheme};

const REFUSED: &str = "sys/devices/system/cpu/cpu5/topology/core_cpus_list";

/// 2 nodes × 4 cores × 2 threads and one NIC per node.
fn machine() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fixture::write_cpu_topology(dir.path(), 2, 4, 2);
    FixtureRoot::at(dir.path()).nic("0000:81:00.0", "ixgbe", "eth1", Some(1), 8, NamingScheme::TxRx).nic(
        "0000:21:00.0",
        "ice",
        "eth2",
        Some(0),
        4,
        NamingScheme::IceTxRx,
    );
    dir
}

fn daemon(root: &Path) -> Daemon {
    let mut daemon = Daemon::new(Root::new(root), ConfigPaths::under(root.join("no-config")), Config::default());
    daemon.pass(vec!["start".into()]);
    assert_eq!(daemon.last_error(), None);
    assert!(daemon.recheck_due().is_none(), "a clean read schedules no recheck");
    daemon
}

/// Makes `REFUSED` a symlink to itself (reads fail with ELOOP); returns its content to restore.
fn refuse(root: &Path) -> String {
    let path = root.join(REFUSED);
    let content = fs::read_to_string(&path).unwrap();
    fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("core_cpus_list", &path).unwrap();
    assert!(fs::read_to_string(&path).is_err(), "the fixture refuses the read");
    content
}

fn allow(root: &Path, content: &str) {
    let path: PathBuf = root.join(REFUSED);
    fs::remove_file(&path).unwrap();
    fs::write(&path, content).unwrap();
}

/// The machine, its daemon after a first clean pass, and a pass after lost events (it reads
/// everything) that met the refusal and held it back; the refused file's content, to restore.
fn held_refusal() -> (tempfile::TempDir, Daemon, String) {
    let dir = machine();
    let mut daemon = daemon(dir.path());
    let content = refuse(dir.path());
    daemon.handle(Batch { overflow: true, triggers: 1, ..Batch::default() });
    assert!(!reported(&daemon), "held at the first read: {:?}", daemon.last_plan().warnings);
    assert!(daemon.recheck_due().is_some(), "a recheck is scheduled");
    (dir, daemon, content)
}

fn reported(daemon: &Daemon) -> bool {
    daemon.last_plan().warnings.iter().any(|w| w.contains("cpu5/topology/core_cpus_list"))
}

fn reconcile() -> Batch {
    Batch { reconcile: true, triggers: 1, ..Batch::default() }
}

fn cpu_event(cpu: u32) -> Batch {
    Batch { cpus_changed: true, cpus: [cpu].into_iter().collect(), triggers: 1, ..Batch::default() }
}

#[test]
fn a_refusal_is_reported_when_the_recheck_gives_it_again() {
    let (_dir, mut daemon, _) = held_refusal();
    daemon.pass(vec!["recheck".into()]);
    assert!(reported(&daemon), "the second read confirms it: {:?}", daemon.last_plan().warnings);
    assert!(daemon.recheck_due().is_none(), "a confirmed refusal schedules no more rechecks");
    // Still refused at the next pass (a reconcile: the topology it keeps holds the warning):
    // still reported, no recheck.
    daemon.handle(reconcile());
    assert!(reported(&daemon) && daemon.recheck_due().is_none());
}

#[test]
fn a_refusal_gone_by_the_recheck_is_never_reported_and_the_recheck_plans_on_a_full_read() {
    let (dir, mut daemon, content) = held_refusal();
    allow(dir.path(), &content);
    let full = plan_pass(&Root::new(dir.path()), &Config::default(), &std::collections::BTreeSet::new()).unwrap();
    // An event that reads only one device: everything is read again while the recheck is due.
    daemon.handle(Batch {
        devices_changed: true,
        devpaths: ["/devices/pci0000:21/0000:21:00.0".into()].into(),
        triggers: 1,
        ..Batch::default()
    });
    assert!(!reported(&daemon), "{:?}", daemon.last_plan().warnings);
    assert!(daemon.recheck_due().is_none(), "the full read had no refusal: nothing to recheck");
    assert_eq!(daemon.last_plan().devices, full.plan.devices, "the pass planned on what a full pass reads");
}

#[test]
fn a_cpu_event_between_two_refusals_explains_them() {
    let (_dir, mut daemon, _) = held_refusal();
    daemon.handle(cpu_event(4));
    assert!(!reported(&daemon), "a CPU came or went between the reads: {:?}", daemon.last_plan().warnings);
    assert!(daemon.recheck_due().is_some(), "the refusal is read again later");
    daemon.pass(vec!["recheck".into()]);
    assert!(reported(&daemon), "no CPU event since: it is real");
}

/// The loop runs the recheck by itself: no event follows the refused read, and a second pass,
/// `recheck`, reads again and reports what is still refused.
#[tokio::test]
async fn the_loop_runs_the_recheck_without_any_event() {
    let (dir, cfg) = (machine(), tempfile::tempdir().unwrap());
    refuse(dir.path());
    let mut running = daemon_fixture::Running::start(dir.path(), cfg.path());
    running.wait_passes(2).await;
    let state: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.path().join("run/irqwise/state.json")).unwrap()).unwrap();
    assert_eq!(state["triggers"], serde_json::json!(["recheck"]), "{}", state["triggers"]);
    let daemon = running.stop().await;
    assert!(reported(&daemon), "{:?}", daemon.last_plan().warnings);
}
