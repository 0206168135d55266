//! `on_drift`: with "respect", a mask another owner set survives reconcile passes (and is placed
//! again after a reload); the kernel's CPU-offline fallback and a driver's reset to the default
//! mask are still placed again; with "restore" (the default) every drift is restored, until an
//! IRQ someone keeps rewriting is a fight: left to the other writer (named when irqwise knows
//! it) until a reload, while the kernel's own rewrites (a notified driver in a hotplug pass) are
//! never one. The fight rule itself (window, count, stale reads) is unit-tested in
//! `src/daemon/fights.rs`.

#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

use daemon_fixture::{affinity, nic_root, set_affinity, write_config, Hotplug, Running};
use irqwise::cpuset::CpuSet;
use irqwise::events::{Trigger, UeventAction};
use irqwise::plan::Action;

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

const RESPECT: &str = "[global]\non_drift = \"respect\"\n";

#[tokio::test]
async fn a_foreign_mask_survives_reconcile_passes_until_a_reload() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), RESPECT);
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let placed = affinity(root.path(), irqs[0]);
    assert_eq!(placed.len(), 1, "queue 0 placed: {placed}");

    // An operator (or tuned) moves queue 0 to the housekeeping CPUs 0-1.
    set_affinity(root.path(), irqs[0], &set("0-1"));
    for _ in 0..3 {
        d.trigger(Trigger::Reconcile).await;
        assert_eq!(affinity(root.path(), irqs[0]), set("0-1"), "the other owner's mask stays");
    }
    // They change it again: still theirs.
    set_affinity(root.path(), irqs[0], &set("2"));
    d.trigger(Trigger::Reconcile).await;
    assert_eq!(affinity(root.path(), irqs[0]), set("2"));

    // A reload starts afresh: irqwise places it again.
    d.trigger(Trigger::Reload).await;
    assert_eq!(affinity(root.path(), irqs[0]), placed, "placed again after the reload");
    d.trigger(Trigger::Reconcile).await;
    let daemon = d.stop().await;
    let p = daemon.last_plan().devices[0].irqs.iter().find(|p| p.irq == irqs[0]).unwrap();
    assert_eq!(p.action, Action::Keep);
}

#[tokio::test]
async fn the_kernels_offline_fallback_and_a_driver_reset_are_placed_again() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), RESPECT);
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let placed: Vec<CpuSet> = irqs.iter().map(|&i| affinity(root.path(), i)).collect();

    // CPU offline: the kernel moves queue 1's IRQ to every online CPU.
    let victim = placed[1].first().unwrap();
    let mut hotplug = Hotplug::new(root.path());
    hotplug.offline(victim, &irqs);
    assert!(affinity(root.path(), irqs[1]).len() > 1, "the kernel's fallback");
    d.trigger(Trigger::Cpu { cpu: victim, action: UeventAction::Offline }).await;
    let now = affinity(root.path(), irqs[1]);
    assert_eq!(now.len(), 1, "re-placed, not respected: {now}");
    assert!(!now.contains(victim));
    hotplug.restore();
    d.trigger(Trigger::Cpu { cpu: victim, action: UeventAction::Online }).await;
    assert_eq!(affinity(root.path(), irqs[1]), placed[1], "back on its CPU");

    // A driver reset: the IRQ is requested anew on every CPU (the default affinity).
    set_affinity(root.path(), irqs[2], &set("0-15"));
    d.trigger(Trigger::Reconcile).await;
    assert_eq!(affinity(root.path(), irqs[2]), placed[2], "a reset to the default mask is not another owner's");
    d.stop().await;
}

#[tokio::test]
async fn restore_is_the_default() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let placed = affinity(root.path(), irqs[0]);
    set_affinity(root.path(), irqs[0], &set("0-1"));
    d.trigger(Trigger::Reconcile).await;
    assert_eq!(affinity(root.path(), irqs[0]), placed);
    d.stop().await;
}

#[tokio::test]
async fn transmit_steering_follows_an_irq_left_to_another_owner() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    let queues = fixture::FixtureRoot::at(root.path()).tx_queues(daemon_fixture::NIC, "eth1", 8, &CpuSet::new());
    let xps = |q: u32| {
        let text = std::fs::read_to_string(queues.join(format!("tx-{q}/xps_cpus"))).unwrap();
        CpuSet::parse_mask(text.trim()).unwrap()
    };
    write_config(cfg.path(), RESPECT);
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let placed = affinity(root.path(), irqs[0]);
    assert!(placed.is_subset(&xps(0)), "tx-0 sends from its IRQ's CPU {placed}: {}", xps(0));

    // Queue 0's IRQ moved to CPU 0 by another owner and left there: tx-0 now sends from CPU 0.
    set_affinity(root.path(), irqs[0], &set("0"));
    d.trigger(Trigger::Reconcile).await;
    assert_eq!(affinity(root.path(), irqs[0]), set("0"));
    assert!(xps(0).contains(0) && !xps(0).intersects(&placed), "tx-0 follows its IRQ to CPU 0: {}", xps(0));
    d.stop().await;
}

/// A driver that writes its own spread as the masks (virtio_net on `ethtool -L` and CPU
/// hotplug): its rewrite is placed again without counting as someone else's drift, while the
/// same rewrite of another driver's IRQ is drift; every write is counted per IRQ.
#[tokio::test]
async fn a_driver_that_writes_its_own_spread_is_placed_again_and_not_counted_as_drift() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fixture::write_cpu_topology(root.path(), 2, 4, 2);
    let mut fx = fixture::FixtureRoot::at(root.path());
    fx.virtio_nic("0000:82:00.0", 0, "eth2", Some(1), 4);
    fx.nic("0000:81:00.0", "ixgbe", "eth1", Some(1), 4, fixture::NamingScheme::TxRx);
    let virtio: Vec<u32> = fx.irqs_of("0000:82:00.0")[1..].to_vec();
    let ixgbe: Vec<u32> = fx.irqs_of("0000:81:00.0").to_vec();
    let hints: Vec<CpuSet> = virtio
        .iter()
        .map(|i| {
            let text = std::fs::read_to_string(root.path().join(format!("proc/irq/{i}/affinity_hint"))).unwrap();
            CpuSet::parse_mask(text.trim()).unwrap()
        })
        .collect();
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let placed: Vec<CpuSet> = virtio.iter().map(|&i| affinity(root.path(), i)).collect();
    assert!(placed.iter().zip(&hints).any(|(p, h)| p != h), "irqwise's placement differs from the driver's spread");

    // `ethtool -L` back to 4 queues: virtio_net writes its spread (its hints) over every mask.
    for (&irq, hint) in virtio.iter().zip(&hints) {
        set_affinity(root.path(), irq, hint);
    }
    // ... and every CPU over a queue it dropped for a moment (`ethtool -L` to 1).
    set_affinity(root.path(), virtio[2], &set("0-15"));
    // And someone writes one ixgbe queue to the same kind of mask.
    set_affinity(root.path(), ixgbe[0], &hints[0]);
    d.trigger(Trigger::Reconcile).await;
    for (&irq, want) in virtio.iter().zip(&placed) {
        assert_eq!(&affinity(root.path(), irq), want, "irq {irq} placed again");
    }
    let daemon = d.stop().await;
    let drift: Vec<(String, u64)> =
        daemon.counters().drift_corrections.iter().map(|c| (c.labels.driver.clone(), c.value)).collect();
    assert_eq!(drift, [("ixgbe".to_string(), 1)], "only the ixgbe IRQ was someone else's drift");
    let rewritten = placed.iter().zip(&hints).enumerate().filter(|(i, (p, h))| *i == 2 || p != h).count() as u64;
    let writes: u64 = daemon.counters().irq_writes.iter().filter(|w| virtio.contains(&w.irq)).map(|w| w.writes).sum();
    let first: u64 = virtio.len() as u64; // every virtio IRQ written once at start (its hint is not irqwise's place)
    assert!(writes >= rewritten && writes <= first + rewritten, "{writes} writes for {rewritten} rewritten IRQs");
    let resets = daemon.last_plan().devices.iter().find(|d| d.bdf == "0000:82:00.0").and_then(|d| d.resets).unwrap();
    assert_eq!(resets.mask.as_str(), "driver-spreads");
}

#[tokio::test]
async fn an_irq_left_to_a_named_peer_is_listed_as_its_own() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), RESPECT);
    // CRI-O runs on this node (its process, as /proc shows it).
    daemon_fixture::process(root.path(), 4242, 0, "crio", b"/usr/bin/crio\0");
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    set_affinity(root.path(), irqs[0], &set("0-1"));
    d.trigger(Trigger::Reconcile).await;
    assert_eq!(affinity(root.path(), irqs[0]), set("0-1"), "left to its writer");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.path().join("run/irqwise/state.json")).unwrap()).unwrap();
    let left = state["left_to_others"].as_array().expect("left_to_others in the state");
    assert_eq!(left.len(), 1, "{state}");
    assert_eq!((left[0]["irq"].as_u64(), left[0]["owner"].as_str()), (Some(u64::from(irqs[0])), Some("crio")));
    assert_eq!(left[0]["mask"], "0-1");
    assert_eq!(state["counters"]["left_by_owner"]["crio"], 1);
    let daemon = d.stop().await;
    let p = daemon.last_plan().devices[0].irqs.iter().find(|p| p.irq == irqs[0]).unwrap();
    assert_eq!(p.action, Action::Skip);
    assert!(p.reason.contains("mask set by crio"), "{}", p.reason);
}

#[tokio::test]
async fn an_irq_someone_keeps_rewriting_is_restored_three_times_then_left_until_a_reload() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let placed = daemon_fixture::affinities(root.path(), &irqs);
    let theirs = set("0-3");
    assert_ne!(placed[&irqs[3]], theirs);
    // Another writer puts it back on 0-3 before every pass (the loop: every 0.3 s, with
    // a pass every second).
    let mut restores = 0;
    for _ in 0..8 {
        set_affinity(root.path(), irqs[3], &theirs);
        d.trigger(Trigger::Reconcile).await;
        if affinity(root.path(), irqs[3]) == placed[&irqs[3]] {
            restores += 1;
        }
    }
    assert_eq!(restores, 3, "three restores, then the IRQ is left to the other writer");
    assert_eq!(affinity(root.path(), irqs[3]), theirs);
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.path().join("run/irqwise/state.json")).unwrap()).unwrap();
    assert_eq!(state["counters"]["fought_irqs"], 1, "status counts it");
    let in_plan = state["plan"]["devices"][0]["irqs"].as_array().unwrap().iter().find(|i| i["irq"] == irqs[3]).cloned();
    assert_eq!(in_plan.map(|i| i["action"].clone()), Some(serde_json::json!("skip")), "left alone in the plan");
    // Only that IRQ: another one moved once is restored as always.
    set_affinity(root.path(), irqs[5], &set("0"));
    d.trigger(Trigger::Reconcile).await;
    assert_eq!(affinity(root.path(), irqs[5]), placed[&irqs[5]]);
    // A reload places it again.
    d.trigger(Trigger::Reload).await;
    assert_eq!(daemon_fixture::affinities(root.path(), &irqs), placed);
    let daemon = d.stop().await;
    assert_eq!(daemon.counters().fought_irqs, 0, "nothing fought over after the reload");
}

#[tokio::test]
async fn a_fight_with_a_named_peer_names_it() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    // intel-lpmd runs and keeps moving queue 0 to CPUs 0-1 (on_drift = "restore", the default).
    daemon_fixture::process(root.path(), 5150, 0, "intel_lpmd", b"/usr/sbin/intel_lpmd\0--systemd\0");
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let placed = affinity(root.path(), irqs[0]);
    for _ in 0..3 {
        set_affinity(root.path(), irqs[0], &set("0-1"));
        d.trigger(Trigger::Reconcile).await;
        assert_eq!(affinity(root.path(), irqs[0]), placed, "restored");
    }
    set_affinity(root.path(), irqs[0], &set("0-1"));
    d.trigger(Trigger::Reconcile).await;
    assert_eq!(affinity(root.path(), irqs[0]), set("0-1"), "after 3 restores: left to it");
    let daemon = d.stop().await;
    let p = daemon.last_plan().devices[0].irqs.iter().find(|p| p.irq == irqs[0]).unwrap();
    assert_eq!(p.action, Action::Skip);
    assert!(p.reason.starts_with("intel_lpmd keeps writing it"), "{}", p.reason);
}

/// A driver that writes its own XPS maps (ixgbe imports `netif_set_xps_queue`) rewrites them on
/// a reset while its IRQs keep their masks: the link event's pass reads `xps_cpus` again and
/// steers the queues back, and nothing of it counts as drift.
#[tokio::test]
async fn an_xps_writers_reset_is_steered_again_without_drift() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    let queues = fixture::FixtureRoot::at(root.path()).tx_queues(daemon_fixture::NIC, "eth1", 8, &CpuSet::new());
    let xps: Vec<_> = (0..8).map(|q| queues.join(format!("tx-{q}/xps_cpus"))).collect();
    let read = |q: usize| CpuSet::parse_mask(std::fs::read_to_string(&xps[q]).unwrap().trim()).unwrap();
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let steered: Vec<CpuSet> = (0..8).map(read).collect();
    let placed = daemon_fixture::affinities(root.path(), &irqs);

    // The reset: ixgbe writes queue i's map to CPU i (as at probe); the masks stay.
    for (q, file) in xps.iter().enumerate() {
        std::fs::write(file, format!("{}\n", fixture::kernel_mask(&CpuSet::single(q as u32), 15))).unwrap();
    }
    d.trigger(Trigger::Link { ifindex: 2, name: Some("eth1".into()), up: true }).await;
    assert_eq!((0..8).map(read).collect::<Vec<_>>(), steered, "steered again after the reset");
    assert_eq!(daemon_fixture::affinities(root.path(), &irqs), placed);
    let daemon = d.stop().await;
    assert!(daemon.counters().drift_corrections.iter().all(|c| c.value == 0), "no drift");
    let resets = daemon.last_plan().devices.iter().find(|d| d.bdf == daemon_fixture::NIC).and_then(|d| d.resets);
    assert_eq!(resets.and_then(|r| r.xps_rewritten), Some(true), "ixgbe writes its XPS maps");
}

/// From 7.0 a CPU hotplug that breaks an IRQ's mask notifies its driver, and bnxt_en (which
/// registers an affinity notifier) may write its IRQs: a write seen in a pass that follows a
/// CPU event is restored but never counted towards a fight, however often it comes.
#[tokio::test]
async fn a_notified_drivers_write_in_a_hotplug_pass_is_no_fight() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fixture::write_cpu_topology(root.path(), 2, 4, 2);
    let mut fx = fixture::FixtureRoot::at(root.path());
    fx.nic(daemon_fixture::NIC, "bnxt_en", "eth1", Some(1), 8, fixture::NamingScheme::TxRx);
    let irqs = fx.irqs_of(daemon_fixture::NIC).to_vec();
    std::fs::create_dir_all(root.path().join("proc/sys/kernel")).unwrap();
    std::fs::write(root.path().join("proc/sys/kernel/osrelease"), "7.2.13-amd64\n").unwrap();
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let placed = affinity(root.path(), irqs[1]);
    let cpu = (2..16).find(|c| !placed.contains(*c)).unwrap();
    for round in 0..5 {
        // The driver, told of CPU `cpu`'s hotplug, writes queue 1 elsewhere.
        set_affinity(root.path(), irqs[1], &set("0-1"));
        d.trigger(Trigger::Cpu { cpu, action: UeventAction::Online }).await;
        assert_eq!(affinity(root.path(), irqs[1]), placed, "restored in round {round}");
    }
    let daemon = d.stop().await;
    assert_eq!(daemon.counters().fought_irqs, 0, "no fight with the kernel's notified driver");
    let resets = daemon.last_plan().devices.iter().find(|d| d.bdf == daemon_fixture::NIC).and_then(|d| d.resets);
    assert_eq!(resets.and_then(|r| r.hotplug_writes), Some(true));
}
