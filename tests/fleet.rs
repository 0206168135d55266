//! Operating irqwise as a fleet does: one configuration for machines of every size, honest exit
//! codes for scripts and monitoring, originals that survive restarts, a failure said once, a
//! state file that stays small. Each test runs the real binary (the daemon as a child process,
//! stopped with real signals) against fixture roots.

#[path = "common/acceptance.rs"]
mod acceptance;
#[path = "common/child_daemon.rs"]
mod child_daemon;

use std::fs;
use std::path::Path;

use acceptance::fixture::{FixtureRoot, NamingScheme};
use acceptance::*;
use child_daemon::Daemon;
use irqwise::cpuset::CpuSet;
use nix::sys::signal::Signal;
use serde_json::Value;

const NIC: &str = "0000:81:00.0";

fn affinity(root: &Path, irq: u32) -> CpuSet {
    sysfs_list(root, &format!("proc/irq/{irq}/smp_affinity_list"))
}

fn status(root: &Path) -> (i32, String) {
    let out = bin::irqwise(root).arg("status").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap(), text)
}

/// The shipped example of a 24-CPU storage node, as a fleet would roll it out.
const DROP_IN_24: &str = "[global]\nbanned_cpus = \"0\"\n\n[[device]]\nmatch = { driver = \"ixgbe\" }\ncpus = \"12-17\"\nadmin_cpus = \"18\"\n";

#[test]
fn a_two_cpu_machine_with_a_24_cpu_drop_in_starts_warns_once_and_places_by_the_fallback() {
    let root = cpu_root(1, 2, 1, "6.1.0");
    FixtureRoot::at(root.path()).nic(NIC, "ixgbe", "eth0", Some(0), 2, NamingScheme::TxRx);
    let cfg = config_with(DROP_IN_24);
    // check-config: usable, with warnings (exit 0), which --strict refuses.
    let out = irqwise(root.path(), cfg.path()).arg("check-config").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("cpus = \"12-17\"") && err.contains("its possible CPUs: 0-1"), "{err}");
    let strict = irqwise(root.path(), cfg.path()).args(["check-config", "--strict"]).output().unwrap();
    assert_eq!(strict.status.code(), Some(2));

    let log = tempfile::NamedTempFile::new().unwrap();
    let d = Daemon::start(root.path(), cfg.path(), log.path().to_path_buf());
    d.signal(Signal::SIGHUP);
    d.wait_passes(2);
    let text = d.stop();
    assert_eq!(text.matches("cpus = \"12-17\"").count(), 1, "warned once, not again on reload:\n{text}");
    let plan = plan_json(root.path(), cfg.path());
    let nic = device(&plan, NIC);
    for p in queue_irqs(nic, None) {
        assert_eq!(set_of(&p["desired"]), cpus("1"), "CPU 0 banned, cpus void: every usable CPU: {p}");
        let reason = p["reason"].as_str().unwrap();
        assert!(reason.contains("cpus \"12-17\" names no CPU of this machine"), "{reason}");
    }
}

#[test]
fn check_config_lists_every_error_of_every_file_in_file_order() {
    let root = cpu_root(1, 4, 1, "6.1.0");
    let cfg = tempfile::tempdir().unwrap();
    write_file(cfg.path(), "etc/irqwise/irqwise.toml", "[global]\nrespect_isolation = \"yes\"\n");
    write_file(
        cfg.path(),
        "etc/irqwise/conf.d/50-a.toml",
        "[[device]]\nmatch = { driver = \"x\" }\nqueues_per_cpu = 0\nbogus = 1\n",
    );
    let out = irqwise(root.path(), cfg.path()).arg("check-config").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 3, "{err}");
    assert!(errors[0].contains("irqwise.toml:2:21") && errors[0].contains("\"yes\""), "{err}");
    assert!(errors[1].contains("50-a.toml:3:18") && errors[1].contains("queues_per_cpu"), "{err}");
    assert!(errors[2].contains("50-a.toml:4:1") && errors[2].contains("bogus"), "{err}");
    let json = irqwise(root.path(), cfg.path()).args(["check-config", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!((v["schema"].as_u64(), v["ok"].as_bool()), (Some(2), Some(false)));
    assert_eq!(v["errors"].as_array().unwrap().len(), 3);
    assert_eq!(v["errors"][1]["line"], 3);
}

#[test]
fn a_mistyped_root_or_config_is_an_error_not_an_empty_success() {
    let root = cpu_root(1, 2, 1, "6.1.0");
    let cfg = empty_config();
    let out = bin::irqwise("/nonexistent").arg("plan").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/sys/devices/system/cpu is not a directory"));
    let out = bin::irqwise_with(root.path(), "/nonexistent").arg("check-config").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--config /nonexistent: not a directory"));
    let ok = irqwise(root.path(), cfg.path()).arg("plan").output().unwrap();
    assert_eq!(ok.status.code(), Some(0));
}

#[test]
fn status_exits_like_systemctl_status_with_a_live_and_a_killed_daemon() {
    let root = cpu_root(1, 4, 1, "6.1.0");
    FixtureRoot::at(root.path()).nic(NIC, "ixgbe", "eth0", Some(0), 2, NamingScheme::TxRx);
    let cfg = empty_config();
    let (code, text) = status(root.path());
    assert_eq!(code, 3, "no state file: not running: {text}");
    let log = tempfile::NamedTempFile::new().unwrap();
    let d = Daemon::start(root.path(), cfg.path(), log.path().to_path_buf());
    let (code, text) = status(root.path());
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("irqwise is running"), "{text}");
    d.kill();
    let (code, text) = status(root.path());
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("is not running") && !text.contains("is running"), "{text}");
    // World-readable, whatever the umask (the unit's is 0077).
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(root.path().join("run/irqwise/state.json")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644);
    // Unreadable: exit 1.
    fs::write(root.path().join("run/irqwise/state.json"), "{not json").unwrap();
    assert_eq!(status(root.path()).0, 1);
}

/// A 16-CPU machine with an ixgbe NIC of 4 queues on node 1, every queue on CPU 0 (the
/// machine's own placement, before any irqwise).
fn nic_on_cpu0() -> (tempfile::TempDir, Vec<u32>) {
    let root = cpu_root(2, 4, 2, "6.1.0");
    let mut fx = FixtureRoot::at(root.path());
    fx.nic(NIC, "ixgbe", "eth0", Some(1), 4, NamingScheme::TxRx);
    let irqs = fx.irqs_of(NIC).to_vec();
    for &irq in &irqs {
        fx.irq_affinity(irq, &cpus("0"));
    }
    (root, irqs)
}

#[test]
fn originals_are_restored_after_a_daemon_restart_in_between() {
    let (root, irqs) = nic_on_cpu0();
    let cfg = config_with("[global]\nrestore_on_exit = true\n");
    let log = tempfile::NamedTempFile::new().unwrap();
    let a = Daemon::start(root.path(), cfg.path(), log.path().to_path_buf());
    let placed: Vec<CpuSet> = irqs.iter().map(|&i| affinity(root.path(), i)).collect();
    assert!(placed.iter().any(|s| *s != cpus("0")), "the first daemon placed the queues");
    a.kill(); // a crash, or an upgrade that kills: nothing restored
    let b = Daemon::start(root.path(), cfg.path(), log.path().to_path_buf());
    let text = b.stop();
    for &irq in &irqs {
        assert_eq!(affinity(root.path(), irq), cpus("0"), "irq {irq} back to the machine's own mask:\n{text}");
    }
    assert!(!root.path().join("run/irqwise/originals.json").exists(), "the record is done with");
}

#[test]
fn an_original_whose_cpu_list_cannot_be_read_is_said_at_start_and_counted_at_stop() {
    let (root, irqs) = nic_on_cpu0();
    let cfg = config_with("[global]\nrestore_on_exit = true\n");
    let log = tempfile::NamedTempFile::new().unwrap();
    let a = Daemon::start(root.path(), cfg.path(), log.path().to_path_buf());
    a.kill();
    // The record of the first daemon, one entry's CPU list damaged (the file still JSON).
    let file = root.path().join("run/irqwise/originals.json");
    let mut doc: Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    let entries = doc["irqs"].as_array_mut().unwrap();
    let total = entries.len();
    assert!(total >= 2, "{doc}");
    let bad = entries[0]["irq"].as_u64().unwrap();
    entries[0]["cpus"] = Value::from("0-3,zz");
    fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let b = Daemon::start(root.path(), cfg.path(), log.path().to_path_buf());
    let text = b.stop();
    let said = text.lines().find(|l| l.contains(&format!("irq {bad}")) && l.contains("\"0-3,zz\""));
    assert!(said.is_some_and(|l| l.contains(&file.display().to_string())), "the entry said at start:\n{text}");
    assert!(
        text.contains(&format!("restored {} of {total} IRQs", total - 1)) && text.contains("1 unreadable"),
        "counted honestly at stop:\n{text}"
    );
    for &irq in irqs.iter().filter(|&&i| u64::from(i) != bad) {
        assert_eq!(affinity(root.path(), irq), cpus("0"), "irq {irq} restored");
    }
}

#[test]
fn a_write_that_fails_on_every_pass_is_one_warning_and_a_count() {
    let root = cpu_root(1, 4, 1, "6.1.0");
    let mut fx = FixtureRoot::at(root.path());
    fx.nic(NIC, "ixgbe", "eth0", Some(0), 2, NamingScheme::TxRx);
    let broken = fx.irqs_of(NIC)[0];
    let file = root.path().join(format!("proc/irq/{broken}/smp_affinity_list"));
    fs::remove_file(&file).unwrap();
    fs::create_dir(&file).unwrap(); // every write fails: not a regular file
    let cfg = empty_config();
    let log = tempfile::NamedTempFile::new().unwrap();
    let d = Daemon::start(root.path(), cfg.path(), log.path().to_path_buf());
    for n in 2..=10 {
        d.signal(Signal::SIGHUP);
        d.wait_passes(n);
    }
    let text = d.stop();
    let state: Value =
        serde_json::from_str(&fs::read_to_string(root.path().join("run/irqwise/state.json")).unwrap()).unwrap();
    let warnings = text.lines().filter(|l| l.contains("WARN") && l.contains(&format!("irq {broken}"))).count();
    assert_eq!(warnings, 1, "one warning for ten or more failing passes:\n{text}");
    // Every pass failed the same write: the count is the passes so far (at least the ten
    // waited for; a backoff retry of the degraded daemon may add one on a loaded machine).
    let passes = state["passes"].as_u64().unwrap();
    assert!(passes >= 10, "{state}");
    let r = &state["repeated"][0];
    assert_eq!(
        (r["irq"].as_u64(), r["outcome"].as_str(), r["count"].as_u64()),
        (Some(u64::from(broken)), Some("invalid"), Some(passes))
    );
    let (_, status_text) = status(root.path());
    assert!(status_text.contains(&format!("invalid in each of the last {passes} passes")), "{status_text}");
}

/// A 1024-CPU machine (8 nodes × 64 cores × 2 threads) with 62 NICs × 64 queues and a misc
/// vector each (4,030 IRQs): only what discovery reads (no `/proc/interrupts`).
fn big_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    acceptance::fixture::write_cpu_topology(dir.path(), 8, 64, 2);
    write_file(dir.path(), "proc/sys/kernel/osrelease", "6.12.0\n");
    let all = format!("{}\n", CpuSet::first_n(1024).to_list_string());
    let mut irq = 100u32;
    for n in 0..62u32 {
        let bdf = format!("0000:{:02x}:00.0", 0x10 + n);
        let dev = dir.path().join(format!("sys/devices/pci0000:00/{bdf}"));
        fs::create_dir_all(dev.join("msi_irqs")).unwrap();
        fs::create_dir_all(dev.join(format!("net/eth{n}"))).unwrap();
        for (f, v) in
            [("class", "0x020000"), ("vendor", "0x8086"), ("device", "0x1563"), ("numa_node", &(n % 8).to_string())]
        {
            fs::write(dev.join(f), format!("{v}\n")).unwrap();
        }
        std::os::unix::fs::symlink("../../../bus/pci/drivers/ixgbe", dev.join("driver")).unwrap();
        fs::create_dir_all(dir.path().join("sys/bus/pci/devices")).unwrap();
        std::os::unix::fs::symlink(
            format!("../../../devices/pci0000:00/{bdf}"),
            dir.path().join(format!("sys/bus/pci/devices/{bdf}")),
        )
        .unwrap();
        let names = (0..64).map(|q| format!("eth{n}-TxRx-{q}")).chain([format!("eth{n}")]);
        for name in names {
            fs::write(dev.join(format!("msi_irqs/{irq}")), "msix\n").unwrap();
            let p = dir.path().join(format!("proc/irq/{irq}"));
            fs::create_dir_all(&p).unwrap();
            fs::write(p.join("smp_affinity_list"), &all).unwrap();
            fs::write(p.join("smp_affinity"), "ffff\n").unwrap();
            let k = dir.path().join(format!("sys/kernel/irq/{irq}"));
            fs::create_dir_all(&k).unwrap();
            fs::write(k.join("actions"), format!("{name}\n")).unwrap();
            irq += 1;
        }
    }
    dir
}

#[test]
fn the_state_file_of_4000_irqs_on_1024_cpus_stays_under_a_megabyte() {
    let root = big_root();
    let cfg = empty_config();
    let out =
        bin::irqwise_with(root.path(), cfg.path()).args(["--log-format", "text", "run", "--once"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let state = root.path().join("run/irqwise/state.json");
    let size = fs::metadata(&state).unwrap().len();
    let v: Value = serde_json::from_slice(&fs::read(&state).unwrap()).unwrap();
    let irqs: usize =
        v["plan"]["devices"].as_array().unwrap().iter().map(|d| d["irqs"].as_array().unwrap().len()).sum();
    assert_eq!(irqs, 62 * 65);
    assert!(size < 1 << 20, "state.json is {size} bytes for {irqs} IRQs");
    eprintln!("state.json: {size} bytes for {irqs} IRQs on 1024 CPUs");
}
