//! The reconcile pass, the safety net for lost events, reads what can change without an event
//! (every movable IRQ's mask) and a few cheap indicators of what would otherwise need one (the
//! CPU lists, the PCI bus and `proc/irq` listings; the isolation sources are read by every pass).
//! Each test changes the machine behind the daemon's back, no event, and checks that the next
//! reconcile catches it; the last one checks what a quiet reconcile costs in file opens.
//!
//! The daemon here runs in-process with no event source: what it learns, it learns by reading.

#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

use std::fs;
use std::path::Path;

use irqwise::config::{Config, ConfigPaths};
use irqwise::cpuset::CpuSet;
use irqwise::daemon::Daemon;
use irqwise::events::Batch;
use irqwise::sysfs::{files_opened, Root};

use daemon_fixture::{affinities, affinity, set_affinity, Hotplug, NIC};
use fixture::{FixtureRoot, NamingScheme};

/// The daemon on `root` after its first (full) pass and a quiet reconcile: the IRQs the first
/// pass wrote are read again by the pass after it, so only from then on does a reconcile learn
/// of a change by its own checks.
fn daemon(root: &Path) -> Daemon {
    let mut daemon = Daemon::new(Root::new(root), ConfigPaths::under(root.join("no-config")), Config::default());
    daemon.pass(vec!["start".into()]);
    daemon.handle(reconcile());
    assert_eq!(daemon.last_error(), None);
    daemon
}

fn reconcile() -> Batch {
    Batch { reconcile: true, triggers: 1, ..Batch::default() }
}

/// The CPUs the daemon's plan gives the IRQs of `bdf`, in vector order.
fn planned(daemon: &Daemon, bdf: &str) -> Vec<String> {
    let device = daemon.last_plan().devices.iter().find(|d| d.bdf == bdf).expect("the device is planned");
    device.irqs.iter().map(|p| p.desired.as_ref().map(CpuSet::to_list_string).unwrap_or_default()).collect()
}

#[test]
fn a_mask_moved_behind_the_daemon_is_put_back_by_the_next_reconcile() {
    let dir = tempfile::tempdir().unwrap();
    let irqs = daemon_fixture::nic_root(dir.path());
    let mut daemon = daemon(dir.path());
    let placed = affinities(dir.path(), &irqs);
    let all = CpuSet::parse_list("0-15").unwrap();
    set_affinity(dir.path(), irqs[2], &all);
    set_affinity(dir.path(), irqs[5], &CpuSet::single(0));
    daemon.handle(reconcile());
    assert_eq!(affinities(dir.path(), &irqs), placed, "both moved masks are back");
}

#[test]
fn a_cpu_offlined_without_an_event_is_seen_by_the_next_reconcile() {
    let dir = tempfile::tempdir().unwrap();
    let irqs = daemon_fixture::nic_root(dir.path());
    let mut daemon = daemon(dir.path());
    let on_5: Vec<u32> = irqs.iter().copied().filter(|&i| affinity(dir.path(), i) == CpuSet::single(5)).collect();
    assert_eq!(on_5.len(), 1, "one queue lives on CPU 5");
    // The kernel takes CPU 5 down (its IRQ falls back to every online CPU); the event is lost.
    Hotplug::new(dir.path()).offline(5, &irqs);
    daemon.handle(reconcile());
    let now = affinity(dir.path(), on_5[0]);
    assert!(now.len() == 1 && !now.contains(5), "irq {} is on one online CPU again: {now:?}", on_5[0]);
}

#[test]
fn a_device_appearing_without_an_event_is_placed_by_the_next_reconcile() {
    let dir = tempfile::tempdir().unwrap();
    daemon_fixture::nic_root(dir.path());
    let mut daemon = daemon(dir.path());
    let mut root = FixtureRoot::at(dir.path());
    root.nic("0000:21:00.0", "ice", "eth2", Some(0), 4, NamingScheme::IceTxRx);
    let new = root.irqs_of("0000:21:00.0").to_vec();
    let node0 = root.node_cpus(Some(0));
    assert!(new.iter().all(|&i| affinity(dir.path(), i).len() == 16), "written on every CPU");
    daemon.handle(reconcile());
    assert_eq!(planned(&daemon, "0000:21:00.0").len(), new.len(), "the new device is planned");
    let queues = &new[1..]; // the misc vector first, then one IRQ per queue
    for &irq in queues {
        let now = affinity(dir.path(), irq);
        assert!(now.len() == 1 && now.is_subset(&node0), "irq {irq} is placed on one CPU of node 0: {now:?}");
    }
}

#[test]
fn an_irq_requested_without_an_event_is_placed_by_the_next_reconcile() {
    let dir = tempfile::tempdir().unwrap();
    let irqs = daemon_fixture::nic_root(dir.path());
    // The last queue's vector is allocated but not requested yet (no `proc/irq/N`).
    let last = irqs[irqs.len() - 2];
    let (shown, hidden) = (dir.path().join(format!("proc/irq/{last}")), dir.path().join("hidden-irq"));
    fs::rename(&shown, &hidden).unwrap();
    let mut daemon = daemon(dir.path());
    let before = planned(&daemon, NIC).len();
    // The driver requests it (link up, say); the event is lost.
    fs::rename(&hidden, &shown).unwrap();
    daemon.handle(reconcile());
    assert_eq!(planned(&daemon, NIC).len(), before + 1, "the requested IRQ is planned");
    assert_eq!(affinity(dir.path(), last).len(), 1, "and placed on one CPU");
}

#[test]
fn cpus_isolated_without_an_inotify_event_are_left_by_the_next_reconcile() {
    let dir = tempfile::tempdir().unwrap();
    let irqs = daemon_fixture::nic_root(dir.path());
    let mut daemon = daemon(dir.path());
    let on = |cpu: u32| irqs.iter().filter(|&&i| affinity(dir.path(), i).contains(cpu)).count();
    assert!(on(4) > 0 && on(5) > 0, "queues live on CPUs 4 and 5");
    // An isolated cpuset partition made (the daemon watches this file with inotify; the event
    // is lost here).
    fs::create_dir_all(dir.path().join("sys/fs/cgroup")).unwrap();
    fs::write(dir.path().join("sys/fs/cgroup/cpuset.cpus.isolated"), "4-5\n").unwrap();
    daemon.handle(reconcile());
    assert_eq!((on(4), on(5)), (0, 0), "nothing is left on the isolated CPUs");
}

/// A reconcile on a quiet machine opens what can drift and the indicators, not the machine: on
/// this 16-CPU root with a 9-vector NIC (where a full pass opens 176 files, and a reconcile did
/// too), a quarter of a full pass at most, and one file per IRQ plus what every pass reads (the
/// isolation sources, the interface, the CPU, bus and IRQ listings).
#[test]
fn a_quiet_reconcile_opens_a_fraction_of_a_full_pass() {
    let dir = tempfile::tempdir().unwrap();
    let irqs = daemon_fixture::nic_root(dir.path());
    let mut daemon =
        Daemon::new(Root::new(dir.path()), ConfigPaths::under(dir.path().join("no-config")), Config::default());
    let opens = |daemon: &mut Daemon, batch: Option<Batch>| {
        let before = files_opened();
        match batch {
            Some(b) => daemon.handle(b),
            None => daemon.pass(vec!["start".into()]),
        }
        files_opened() - before
    };
    let first = opens(&mut daemon, None);
    // A second full pass, with nothing to write, is the fair comparison.
    let full = opens(&mut daemon, Some(Batch { overflow: true, triggers: 1, ..Batch::default() }));
    let quiet = opens(&mut daemon, Some(reconcile()));
    assert!(first >= full && full > 0, "first {first}, full {full}");
    assert!(quiet * 4 <= full, "a quiet reconcile opened {quiet} files, a full pass {full}");
    assert!(quiet <= irqs.len() as u64 + 25, "a quiet reconcile opened {quiet} files for {} IRQs", irqs.len());
}
