//! The daemon loop in-process against fixture roots, driven by injected triggers: hotplug moves
//! exactly what the re-plan says, coming back restores the placement, bursts coalesce, drift is
//! restored, an invalid reload keeps the old config, restore_on_exit puts the start masks back.

#[path = "common/bin.rs"]
mod bin;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use daemon_fixture::{affinities, affinity, nic_root, set_affinity, write_config, Hotplug, Running};
use irqwise::config::{load_config, load_config_with_warnings};
use irqwise::config::{Config, ConfigPaths};
use irqwise::cpuset::CpuSet;
use irqwise::events::{Trigger, UeventAction};
use irqwise::pass::plan_pass;
use irqwise::plan::Action;
use irqwise::sysfs::Root;

/// What a one-shot pass (`pass::plan_pass`), run against the root as it is now, wants on each IRQ.
fn planned(root: &Path, config: &Config) -> BTreeMap<u32, CpuSet> {
    let pass = plan_pass(&Root::new(root), config, &BTreeSet::new()).unwrap();
    pass.plan
        .devices
        .iter()
        .flat_map(|d| &d.irqs)
        .filter(|p| matches!(p.action, Action::Set | Action::Keep))
        .map(|p| (p.irq, p.desired.clone().unwrap()))
        .collect()
}

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

#[tokio::test]
async fn cpu_offline_moves_only_the_irqs_that_lived_on_it_and_online_restores_the_placement() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;

    let placed = affinities(root.path(), &irqs);
    assert_eq!(placed, planned(root.path(), &Config::default()), "initial pass applies the plan");
    let node1 = set("4-7,12-15");
    let queue0 = placed[&irqs[0]].clone();
    assert_eq!(queue0.len(), 1, "queue 0 on one CPU: {queue0}");
    assert!(queue0.is_subset(&node1), "queue 0 on node 1: {queue0}");
    let victim = queue0.first().unwrap();

    let mut hotplug = Hotplug::new(root.path());
    hotplug.offline(victim, &irqs);
    assert_ne!(affinity(root.path(), irqs[0]), queue0, "the kernel reset queue 0's IRQ");
    d.trigger(Trigger::Cpu { cpu: victim, action: UeventAction::Offline }).await;
    let now = affinities(root.path(), &irqs);
    assert!(now.values().all(|c| c.iter().any(|cpu| cpu != victim)), "every IRQ has an online CPU: {now:?}");
    let sibling = set("4-7,12-15").iter().find(|&c| c % 8 == victim % 8 && c != victim).unwrap();
    assert_eq!(now[&irqs[0]], CpuSet::single(sibling), "queue 0 moved to its home's sibling");
    for (irq, cpus) in &now {
        if placed[irq] != CpuSet::single(victim) {
            assert_eq!(cpus, &placed[irq], "irq {irq} did not live on CPU {victim} and did not move");
        }
    }

    hotplug.restore();
    d.trigger(Trigger::Cpu { cpu: victim, action: UeventAction::Online }).await;
    assert_eq!(affinities(root.path(), &irqs), placed, "back online: the original placement exactly");
    d.stop().await;
}

#[tokio::test]
async fn a_burst_of_1000_triggers_causes_a_handful_of_passes() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let before = d.count();
    for i in 0..1000u32 {
        let t = if i % 2 == 0 {
            Trigger::Cpu { cpu: i % 16, action: UeventAction::Online }
        } else {
            Trigger::Link { ifindex: 2, name: Some("eth1".into()), up: i % 4 == 1 }
        };
        d.tx.send(t).await.unwrap();
    }
    d.wait_passes(before + 1).await;
    let daemon = d.stop().await;
    let passes = *daemon.passes().borrow() - before;
    assert!((1..=5).contains(&passes), "{passes} passes for one burst");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.path().join("run/irqwise/state.json")).unwrap()).unwrap();
    assert_eq!(state["passes"], serde_json::json!(before + passes), "state file counts the same passes");
}

#[tokio::test]
async fn drift_of_a_placed_irq_is_restored_by_reconcile() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let placed = affinities(root.path(), &irqs);
    set_affinity(root.path(), irqs[3], &set("0-15"));
    set_affinity(root.path(), irqs[5], &set("0"));
    d.trigger(Trigger::Reconcile).await;
    assert_eq!(affinities(root.path(), &irqs), placed);
    d.stop().await;
}

#[tokio::test]
async fn reload_applies_a_valid_config_and_keeps_the_old_one_when_invalid() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), "[global]\nbanned_cpus = \"4\"\n");
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    assert!(affinities(root.path(), &irqs).values().all(|c| !c.contains(4)));

    write_config(cfg.path(), "[global]\nbanned_cpus = \"5\"\n");
    d.trigger(Trigger::Reload).await;
    let now = affinities(root.path(), &irqs);
    assert!(now.values().all(|c| !c.contains(5)), "{now:?}");
    let banned5 = load_config(&Root::new(root.path()), &ConfigPaths::under(cfg.path())).unwrap();
    assert_eq!(now, planned(root.path(), &banned5));

    write_config(cfg.path(), "[global]\nbanned_cpus = \"5\"\nno_such_key = 1\n");
    d.trigger(Trigger::Reload).await;
    assert_eq!(affinities(root.path(), &irqs), now, "invalid config: placement unchanged");
    let daemon = d.stop().await;
    assert_eq!(daemon.config().global.banned_cpus, set("5"), "the previous config is kept");
}

#[tokio::test]
async fn restore_on_exit_puts_back_the_masks_found_at_start() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), "[global]\nrestore_on_exit = true\n");
    let start = affinities(root.path(), &irqs);
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    assert_ne!(affinities(root.path(), &irqs), start, "the pass moved IRQs");
    d.stop().await;
    assert_eq!(affinities(root.path(), &irqs), start);
}

#[tokio::test]
async fn a_failing_pass_keeps_the_daemon_and_the_placement() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let placed = affinities(root.path(), &irqs);
    let state = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(root.path().join("run/irqwise/state.json")).unwrap()).unwrap()
    };
    // The PCI bus cannot be listed: the pass fails, the placement stays.
    let bus = root.path().join("sys/bus/pci/devices");
    let away = root.path().join("sys/bus/pci/devices.away");
    std::fs::rename(&bus, &away).unwrap();
    std::fs::write(&bus, "not a directory\n").unwrap();
    d.trigger(Trigger::Reconcile).await;
    assert_eq!(affinities(root.path(), &irqs), placed);
    assert!(state()["error"].as_str().is_some_and(|e| e.contains("cannot list PCI devices")), "{}", state()["error"]);
    std::fs::remove_file(&bus).unwrap();
    std::fs::rename(&away, &bus).unwrap();
    set_affinity(root.path(), irqs[0], &set("0-15"));
    d.trigger(Trigger::Reconcile).await;
    assert_eq!(affinities(root.path(), &irqs), placed, "recovered on the next pass");
    assert!(state()["error"].is_null());

    // The CPU topology cannot be read at all: the last one read is planned on, drift restored.
    let cpu = root.path().join("sys/devices/system/cpu");
    let cpu_away = root.path().join("sys/devices/system/cpu.away");
    std::fs::rename(&cpu, &cpu_away).unwrap();
    set_affinity(root.path(), irqs[1], &set("0-15"));
    d.trigger(Trigger::Reconcile).await;
    assert_eq!(affinities(root.path(), &irqs), placed, "planned on the last good topology");
    let warnings = state()["plan"]["warnings"].to_string();
    assert!(warnings.contains("planning with the last one read"), "{warnings}");
    std::fs::rename(&cpu_away, &cpu).unwrap();
    d.stop().await;
}

#[tokio::test]
async fn status_shows_the_last_pass_and_json_is_the_state_file() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    let status = |args: &[&str]| bin::irqwise(root.path()).arg("status").args(args).output().unwrap();
    let missing = status(&[]);
    assert_eq!(missing.status.code(), Some(3), "not running, like systemctl status");
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.contains("irqwise is not running (no ") && err.contains("run/irqwise/state.json)"), "{err}");

    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let placed = affinities(root.path(), &irqs);
    let text = status(&[]);
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!("irqwise is running (pid {})", std::process::id())), "{text}");
    assert!(text.contains("because of: start"), "{text}");
    assert!(text.contains("9 IRQs on 1 devices: 9 placed, 0 kernel-managed, 0 failed"), "{text}");
    assert!(text.contains(&format!("irq {:>5} eth1-TxRx-0", irqs[0])), "{text}");
    let line = text.lines().find(|l| l.contains("eth1-TxRx-0")).unwrap();
    assert!(line.ends_with(&placed[&irqs[0]].to_list_string()), "{line}");

    let json = status(&["--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["summary"]["written"], serde_json::json!(9));
    assert_eq!(v["triggers"], serde_json::json!(["start"]));
    d.stop().await;
}

#[test]
fn the_daemon_validates_the_config_against_the_same_possible_cpus_as_the_cli() {
    // A root without cpu/possible (older kernels, trimmed dumps): topology discovery takes the
    // cpuN directories, and `plan`/`check-config` accept the config; so must the daemon.
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    std::fs::remove_file(root.path().join("sys/devices/system/cpu/possible")).unwrap();
    write_config(cfg.path(), "[global]\nbanned_cpus = \"4\"\n");
    let config = load_config(&Root::new(root.path()), &ConfigPaths::under(cfg.path())).unwrap();
    assert_eq!(config.global.banned_cpus, set("4"));
    write_config(cfg.path(), "[global]\nbanned_cpus = \"16\"\n");
    let (config, warnings) =
        load_config_with_warnings(&Root::new(root.path()), &ConfigPaths::under(cfg.path())).unwrap();
    assert!(config.global.banned_cpus.is_empty());
    let w = warnings.iter().map(std::string::ToString::to_string).collect::<Vec<_>>().join("\n");
    assert!(w.contains("0-15"), "CPU 16 is beyond the 16 cpuN directories: {w}");
}

/// The state file the daemon under test wrote.
fn state(root: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(root.join("run/irqwise/state.json")).unwrap()).unwrap()
}

#[tokio::test]
async fn every_write_failing_is_degraded_said_by_status_and_retried_until_it_works() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    // Every mask file a directory: every write fails (as under ProtectKernelTunables=yes).
    for irq in &irqs {
        let f = root.path().join(format!("proc/irq/{irq}/smp_affinity_list"));
        std::fs::remove_file(&f).unwrap();
        std::fs::create_dir(&f).unwrap();
    }
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let s = state(root.path());
    let degraded = s["degraded"].as_str().unwrap_or_default();
    assert!(degraded.contains("writes of the last pass failed"), "{s}");
    assert!(s["status"].as_str().unwrap().starts_with("degraded: "), "{}", s["status"]);
    let out = bin::irqwise(root.path()).arg("status").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "status exits 1 while degraded: {}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("degraded: "));

    // Repaired: no event comes, the retry finds it.
    for irq in &irqs {
        let f = root.path().join(format!("proc/irq/{irq}/smp_affinity_list"));
        std::fs::remove_dir(&f).unwrap();
        std::fs::write(&f, "0-15\n").unwrap();
    }
    d.wait_passes(2).await;
    let s = state(root.path());
    assert_eq!(s["triggers"], serde_json::json!(["retry"]));
    assert!(s.get("degraded").is_none_or(serde_json::Value::is_null), "{s}");
    assert!(affinities(root.path(), &irqs).values().all(|c| c.len() == 1 || c.len() == 8), "placed");
    d.stop().await;
}

#[tokio::test]
async fn reload_puts_debounce_reconcile_interval_and_log_format_into_force() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    write_config(cfg.path(), "[global]\ndebounce = \"2s\"\nreconcile_interval = \"5m\"\nlog_format = \"json\"\n");
    d.trigger(Trigger::Reload).await;
    let daemon = d.stop().await;
    let (debounce, reconcile) = daemon.windows();
    assert_eq!((debounce, reconcile), (std::time::Duration::from_secs(2), std::time::Duration::from_secs(300)));
}
