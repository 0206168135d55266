//! A hostile or odd machine as a whole: one thing seen twice, stale or foreign state, an empty or
//! impossible machine, unbounded inputs, a `/proc/interrupts` line laid out differently, and a
//! root that vanishes or has an odd layout. Each class with several inputs, through the real
//! binary (and the in-process daemon for the vanishing root).

#[path = "common/acceptance.rs"]
mod acceptance;
#[path = "common/child_daemon.rs"]
mod child_daemon;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use acceptance::fixture::{FixtureRoot, NamingScheme};
use acceptance::*;
use serde_json::Value;

const NIC: &str = "0000:81:00.0";
const NIC2: &str = "0000:83:00.0";
const NVME: &str = "0000:82:00.0";

fn machine() -> tempfile::TempDir {
    let dir = two_node_root("6.1.0");
    FixtureRoot::at(dir.path())
        .nic(NIC, "ice", "eth0", Some(1), 4, NamingScheme::IceTxRx)
        .nic(NIC2, "ixgbe", "eth1", Some(0), 4, NamingScheme::TxRx)
        .nvme(NVME, "nvme0", Some(0), 4, true, false);
    dir
}

fn run(root: &Path, cfg: &Path, args: &[&str]) -> Output {
    Command::new("timeout")
        .arg("60")
        .arg(bin::BIN)
        .arg("--root")
        .arg(root)
        .arg("--config")
        .arg(cfg)
        .args(args)
        .output()
        .unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("not JSON ({e}): {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })
}

fn warnings(plan: &Value) -> Vec<String> {
    plan["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_string()).collect()
}

fn irq_numbers(plan: &Value, bdf: &str) -> Vec<u64> {
    irqs(device(plan, bdf)).iter().map(|p| p["irq"].as_u64().unwrap()).collect()
}

fn dev_dir(root: &Path, bdf: &str) -> std::path::PathBuf {
    root.join(format!("sys/devices/pci{}/{bdf}", &bdf[..7]))
}

// 3. One thing seen twice.
#[test]
fn an_irq_two_devices_list_is_a_warning_and_written_by_neither() {
    let (dir, cfg) = (machine(), empty_config());
    let before = plan_json(dir.path(), cfg.path());
    for (taken, from) in [(0usize, NIC), (2, NIC)] {
        let irq = irq_numbers(&before, from)[taken];
        fs::write(dev_dir(dir.path(), NIC2).join(format!("msi_irqs/{irq}")), "msix\n").unwrap();
        let out = run(dir.path(), cfg.path(), &["plan", "--json"]);
        let plan = json(&out);
        let w = warnings(&plan);
        assert!(
            w.iter().any(|w| w.contains(&format!("IRQ {irq} is listed by 2 PCI devices ({NIC}, {NIC2})"))),
            "{w:?}"
        );
        let placements: Vec<&Value> =
            plan["devices"].as_array().unwrap().iter().flat_map(irqs).filter(|p| p["irq"] == irq).collect();
        assert!(!placements.is_empty());
        for p in placements {
            assert_eq!(p["action"], "skip", "{p}");
            assert!(p["reason"].as_str().unwrap().contains("an IRQ has one owner"), "{p}");
        }
    }
    let before_mask =
        fs::read_to_string(dir.path().join(format!("proc/irq/{}/smp_affinity_list", irq_numbers(&before, NIC)[0])))
            .unwrap();
    assert_eq!(run(dir.path(), cfg.path(), &["apply"]).status.code(), Some(0));
    let after_mask =
        fs::read_to_string(dir.path().join(format!("proc/irq/{}/smp_affinity_list", irq_numbers(&before, NIC)[0])))
            .unwrap();
    assert_eq!(before_mask, after_mask, "nothing writes an IRQ whose owner cannot be told");
}

#[test]
fn a_second_bus_entry_for_one_device_plans_it_once() {
    let (dir, cfg) = (machine(), empty_config());
    let bus = dir.path().join("sys/bus/pci/devices");
    // Two more names for the NIC: one sorting before it, one after.
    symlink(format!("../../../devices/pci0000:81/{NIC}"), bus.join("0000:80:00.0")).unwrap();
    symlink(format!("../../../devices/pci0000:81/{NIC}"), bus.join("0000:99:00.0")).unwrap();
    let plan = json(&run(dir.path(), cfg.path(), &["plan", "--json"]));
    let bdfs: Vec<&str> = plan["devices"].as_array().unwrap().iter().map(|d| d["bdf"].as_str().unwrap()).collect();
    assert_eq!(bdfs, [NIC, NVME, NIC2], "each device once, under its own name");
    let w = warnings(&plan);
    for alias in ["0000:80:00.0", "0000:99:00.0"] {
        assert!(w.iter().any(|w| w.contains(alias) && w.contains(&format!("the same device as {NIC}"))), "{w:?}");
    }
    let irqs_planned: Vec<u64> =
        plan["devices"].as_array().unwrap().iter().flat_map(irqs).map(|p| p["irq"].as_u64().unwrap()).collect();
    let mut unique = irqs_planned.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), irqs_planned.len(), "every IRQ planned once");
}

// 4. Stale or foreign state.
#[test]
fn status_believes_a_state_file_only_of_a_running_irqwise() {
    let (dir, cfg) = (machine(), empty_config());
    assert_eq!(run(dir.path(), cfg.path(), &["--log-format", "text", "run", "--once"]).status.code(), Some(0));
    let path = dir.path().join("run/irqwise/state.json");
    let state: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert!(state["process"]["start"].as_u64().is_some(), "the state names its process: {}", state["process"]);
    // pid 1 (init), this test's own process, and a live process started as something else.
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    for pid in [1, std::process::id(), sleeper.id()] {
        let mut forged = state.clone();
        forged["pid"] = pid.into();
        fs::write(&path, forged.to_string()).unwrap();
        let out = run(dir.path(), cfg.path(), &["status"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "pid {pid}: {stderr}");
        assert!(stderr.contains(&format!("process {pid} named in")) && stderr.contains("not the daemon"), "{stderr}");
        // A file of an older version, naming no process: the pid must at least run irqwise.
        let mut old = forged.clone();
        old.as_object_mut().unwrap().remove("process");
        fs::write(&path, old.to_string()).unwrap();
        assert_eq!(run(dir.path(), cfg.path(), &["status"]).status.code(), Some(3), "pid {pid}, no process");
    }
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

/// The daemon never reads its state file, only replaces it: a file of another version or none
/// that `status` would refuse does not stop it.
#[test]
fn the_daemon_replaces_a_state_file_status_refuses() {
    let (dir, cfg) = (machine(), empty_config());
    let path = dir.path().join("run/irqwise/state.json");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    for foreign in ["{half", r#"{"schema": 99, "pid": "x", "plan": {"devices": 3}}"#] {
        fs::write(&path, foreign).unwrap();
        let out = run(dir.path(), cfg.path(), &["status"]);
        assert_eq!(out.status.code(), Some(1), "{foreign}: {}", String::from_utf8_lossy(&out.stderr));
        let out = run(dir.path(), cfg.path(), &["--log-format", "text", "run", "--once"]);
        assert_eq!(out.status.code(), Some(0), "{foreign}: {}", String::from_utf8_lossy(&out.stderr));
        let state: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(state["passes"], 1, "{foreign}: replaced by the daemon's own");
    }
}

// 5. An empty or impossible machine is said.
#[test]
fn a_proc_irq_that_cannot_be_listed_is_said() {
    let cfg = empty_config();
    // A file, a link to a file inside the root, a FIFO: each of the wrong type.
    for make in [
        |p: &Path| fs::write(p, "not a directory\n").unwrap(),
        |p: &Path| symlink("interrupts", p).unwrap(),
        |p: &Path| nix::unistd::mkfifo(p, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap(),
    ] {
        let dir = machine();
        let proc_irq = dir.path().join("proc/irq");
        let kept = dir.path().join("proc/irq.kept");
        fs::rename(&proc_irq, &kept).unwrap();
        make(&proc_irq);
        let plan = json(&run(dir.path(), cfg.path(), &["plan", "--json"]));
        let w = warnings(&plan);
        assert!(w.iter().any(|w| w.contains("proc/irq: cannot be listed") && w.contains("none is placed")), "{w:?}");
    }
}

#[test]
fn every_cpu_kept_free_and_a_kernel_rejected_isolcpus_are_said() {
    let cfg = empty_config();
    // Every online CPU isolated (as the kernel shows it), or banned by irqbalance's list.
    for (rel, text) in [
        ("sys/devices/system/cpu/isolated", "0-31\n"),
        ("sys/devices/system/cpu/nohz_full", "0-31\n"),
        ("etc/default/irqbalance", "IRQBALANCE_BANNED_CPULIST=0-30\n"),
    ] {
        let dir = machine();
        write_file(dir.path(), rel, text);
        if rel.starts_with("etc") {
            write_file(dir.path(), "sys/devices/system/cpu/isolated", "31\n");
        }
        let plan = json(&run(dir.path(), cfg.path(), &["plan", "--json"]));
        let w = warnings(&plan);
        assert!(w.iter().any(|w| w.contains("every online CPU (0-31) is kept free of device IRQs")), "{rel}: {w:?}");
    }
    // isolcpus= naming a CPU the machine does not have: the kernel ignores the whole list.
    for cmdline in ["isolcpus=0-1000", "isolcpus=managed_irq,2-3,64", "nohz_full=1-32"] {
        let dir = machine();
        write_file(dir.path(), "proc/cmdline", &format!("BOOT_IMAGE=/vmlinuz {cmdline} quiet\n"));
        let plan = json(&run(dir.path(), cfg.path(), &["plan", "--json"]));
        let w = warnings(&plan);
        assert!(
            w.iter().any(|w| w.contains("beyond the last possible CPU 31") && w.contains("incorrect CPU range")),
            "{cmdline}: {w:?}"
        );
        assert!(!w.iter().any(|w| w.contains("every online CPU")), "{cmdline}: nothing isolated by it: {w:?}");
        assert!(irqs(device(&plan, NIC2)).iter().any(|p| p["action"] != "skip"), "{cmdline}: the NIC is placed");
    }
}

// 6. Unbounded inputs.
#[test]
fn import_irqbalance_refuses_endless_and_blocking_files_at_once() {
    let (dir, cfg) = (machine(), empty_config());
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let big = dir.path().join("big");
    fs::write(&big, "IRQBALANCE_BANNED_CPULIST=1\n".repeat(80_000)).unwrap();
    for file in [Path::new("/dev/zero"), Path::new("/dev/urandom"), &fifo, &big, dir.path()] {
        let began = Instant::now();
        let out = run(dir.path(), cfg.path(), &["import-irqbalance", file.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", file.display());
        assert!(
            stderr.contains(&file.display().to_string()) && stderr.contains("expected irqbalance's environment file"),
            "{stderr}"
        );
        assert!(began.elapsed() < Duration::from_secs(30), "{} blocked", file.display());
    }
}

// 9. A line laid out differently is read or said.
#[test]
fn a_single_spaced_proc_interrupts_line_keeps_its_irq() {
    let (dir, cfg) = (machine(), empty_config());
    let before = plan_json(dir.path(), cfg.path());
    let queue_irq = irq_numbers(&before, NIC2)[1];
    // Names from /proc/interrupts only (a kernel without SPARSE_IRQ), one line re-spaced.
    fs::remove_dir_all(dir.path().join("sys/kernel/irq")).unwrap();
    let text = fs::read_to_string(dir.path().join("proc/interrupts")).unwrap();
    let label = format!("{queue_irq:>4}:");
    let respaced: Vec<String> = text
        .lines()
        .map(|l| if l.starts_with(&label) { l.split_whitespace().collect::<Vec<_>>().join(" ") } else { l.to_string() })
        .collect();
    fs::write(dir.path().join("proc/interrupts"), respaced.join("\n") + "\n").unwrap();
    let plan = json(&run(dir.path(), cfg.path(), &["plan", "--json"]));
    let p = irqs(device(&plan, NIC2)).iter().find(|p| p["irq"] == queue_irq).cloned().unwrap();
    let b = irqs(device(&before, NIC2)).iter().find(|p| p["irq"] == queue_irq).cloned().unwrap();
    assert_eq!(
        (&p["name"], &p["role"], &p["queue"], &p["desired"]),
        (&b["name"], &b["role"], &b["queue"], &b["desired"])
    );
    let w = warnings(&plan);
    assert!(w.iter().any(|w| w.contains("proc/interrupts line") && w.contains("no two spaces")), "{w:?}");
}

// 10. A vanished root or an odd layout.
#[test]
fn a_node_directory_that_is_a_file_is_a_warning_and_the_rest_planned() {
    let cfg = empty_config();
    for make in [
        |p: &Path| fs::write(p, "x\n").unwrap(),
        |p: &Path| symlink("cpu/online", p).unwrap(),
        |p: &Path| nix::unistd::mkfifo(p, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap(),
    ] {
        let dir = machine();
        let node = dir.path().join("sys/devices/system/node");
        fs::remove_dir_all(&node).unwrap();
        make(&node);
        let out = run(dir.path(), cfg.path(), &["plan", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let plan = json(&out);
        let w = warnings(&plan);
        assert!(
            w.iter().any(|w| w.contains("system/node: cannot be listed") && w.contains("no NUMA information")),
            "{w:?}"
        );
        assert!(irqs(device(&plan, NIC2)).iter().any(|p| p["action"] == "set"), "the devices are still placed");
    }
}

#[tokio::test]
async fn a_root_whose_sys_or_proc_vanishes_makes_the_daemon_degraded_and_says_so() {
    for top in ["sys", "proc"] {
        let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        daemon_fixture::nic_root(root.path());
        let mut d = daemon_fixture::Running::start(root.path(), cfg.path());
        d.wait_passes(1).await;
        let state = || -> Value {
            serde_json::from_str(&fs::read_to_string(root.path().join("run/irqwise/state.json")).unwrap()).unwrap()
        };
        assert!(state()["degraded"].is_null(), "{}", state());
        let away = root.path().join(format!("{top}.away"));
        fs::rename(root.path().join(top), &away).unwrap();
        d.trigger(irqwise::events::Trigger::Reconcile).await;
        let s = state();
        let degraded = s["degraded"].as_str().unwrap_or_default();
        assert!(degraded.contains(&format!("{top}: gone since the last read")), "{top}: {s}");
        fs::rename(&away, root.path().join(top)).unwrap();
        d.trigger(irqwise::events::Trigger::Reconcile).await;
        assert!(state()["degraded"].is_null(), "{top}: back to health: {}", state());
        d.stop().await;
    }
}

/// A daemon on a fixture root (`daemon_fixture::nic_root`) that leaves a moved IRQ to its
/// writer and looks for drift every second, so each move makes it name who moved it (the peer
/// scan of `ROOT/proc`).
const RESPECT_EVERY_SECOND: &str = "[global]\non_drift = \"respect\"\nreconcile_interval = \"1s\"\n";

/// Waits (60 s at most) until `d`'s state file satisfies `done`; kills the daemon and fails
/// naming `what` otherwise (a daemon stuck in a read must not hang the test).
fn await_state(d: child_daemon::Daemon, what: &str, done: impl Fn(&Value) -> bool) -> child_daemon::Daemon {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if done(&d.state()) {
            return d;
        }
        if Instant::now() > deadline {
            let log = d.log_text();
            d.kill();
            panic!("{what}: not within 60 s (the daemon was killed); log:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Moves the NIC's first IRQ to CPUs 0-1 behind the daemon's back and waits until it is left
/// to its writer (the pass that did so scanned the processes).
fn drift_and_wait(d: child_daemon::Daemon, root: &Path, irq: u32) -> child_daemon::Daemon {
    daemon_fixture::set_affinity(root, irq, &cpus("0-1"));
    await_state(d, "the moved IRQ left to its writer", |s| {
        s["left_to_others"].as_array().is_some_and(|l| l.iter().any(|o| o["irq"].as_u64() == Some(u64::from(irq))))
    })
}

/// The largest resident size of process `pid` so far, in bytes (`VmHWM` of its status).
fn peak_resident(pid: i32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).unwrap().trim().trim_end_matches("kB").trim();
    kib.parse::<u64>().unwrap() * 1024
}

#[test]
fn other_processes_long_command_lines_cost_the_daemon_a_bounded_read_each() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = daemon_fixture::nic_root(root.path());
    daemon_fixture::write_config(cfg.path(), RESPECT_EVERY_SECOND);
    // Forty sleeping processes of a user, sharing one 5 MiB command line (one file, linked):
    // kept whole, they alone would pass the chart's 128 MiB memory limit.
    let mut argv = b"sleep\0".to_vec();
    argv.extend(std::iter::repeat_n(b'x', 5 << 20));
    argv.push(0);
    daemon_fixture::process(root.path(), 1000, 1000, "sleep", &argv);
    let shared = root.path().join("proc/1000/cmdline");
    for pid in 1001..1040 {
        daemon_fixture::process(root.path(), pid, 1000, "sleep", b"");
        let own = root.path().join(format!("proc/{pid}/cmdline"));
        fs::remove_file(&own).unwrap();
        fs::hard_link(&shared, own).unwrap();
    }
    let d = child_daemon::Daemon::spawn(root.path(), cfg.path(), root.path().join("daemon.log"));
    let d = await_state(d, "the first pass", |s| s["passes"].as_u64() >= Some(1));
    let d = drift_and_wait(d, root.path(), irqs[0]);
    let peak = peak_resident(d.pid().as_raw());
    assert!(peak < 128 << 20, "the daemon peaked at {} MiB; log:\n{}", peak >> 20, d.log_text());
    d.stop();
}

/// A FIFO at `path`.
fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
}

#[test]
fn a_fifo_or_an_endless_file_as_a_processs_name_or_command_line_is_refused_without_blocking() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = daemon_fixture::nic_root(root.path());
    daemon_fixture::write_config(cfg.path(), RESPECT_EVERY_SECOND);
    let proc = |pid: u32, file: &str| root.path().join(format!("proc/{pid}/{file}"));
    // Root's processes (they may be peers), each with one file that never ends or never opens.
    for pid in [2000, 2001, 2002, 2003] {
        daemon_fixture::process(root.path(), pid, 0, "tuned", b"/usr/sbin/tuned\0-l\0");
    }
    for (pid, file) in [(2000, "comm"), (2001, "cmdline")] {
        fs::remove_file(proc(pid, file)).unwrap();
        mkfifo(&proc(pid, file));
    }
    for (pid, file) in [(2002, "comm"), (2003, "cmdline")] {
        fs::remove_file(proc(pid, file)).unwrap();
        symlink("/dev/zero", proc(pid, file)).unwrap();
    }
    // The link's target inside the root: the device itself where this test may make one.
    fs::create_dir_all(root.path().join("dev")).unwrap();
    let dev_zero = nix::sys::stat::makedev(1, 5);
    let _ = nix::sys::stat::mknod(
        &root.path().join("dev/zero"),
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        dev_zero,
    );
    let d = child_daemon::Daemon::spawn(root.path(), cfg.path(), root.path().join("daemon.log"));
    let d = await_state(d, "the first pass", |s| s["passes"].as_u64() >= Some(1));
    let d = drift_and_wait(d, root.path(), irqs[0]);
    let peak = peak_resident(d.pid().as_raw());
    assert!(peak < 128 << 20, "the daemon peaked at {} MiB", peak >> 20);
    // Stops on SIGTERM (within the helper's 30 s).
    let log = d.stop();
    assert!(log.contains("moved from"), "{log}");
}

#[test]
fn other_processes_names_are_escaped_and_only_roots_processes_are_peers() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = daemon_fixture::nic_root(root.path());
    daemon_fixture::write_config(cfg.path(), &format!("{RESPECT_EVERY_SECOND}irqbalance_socket = true\n"));
    // A user's processes named like peers: they cannot write /proc/irq.
    daemon_fixture::process(root.path(), 3000, 1000, "irqbalance", b"irqbalance\0--foreground\0");
    daemon_fixture::process(root.path(), 3001, 1000, "tuned", b"/usr/sbin/tuned\0");
    // Root's script, whose name holds a line of its own.
    let script = b"bash\0/opt/set_irq_affinity.sh\nirq 99 of 0000:00:00.0: FORGED\0eth1\0";
    daemon_fixture::process(root.path(), 3002, 0, "bash", script);
    let d = child_daemon::Daemon::spawn(root.path(), cfg.path(), root.path().join("daemon.log"));
    let d = await_state(d, "the first pass", |s| s["passes"].as_u64() >= Some(1));
    let socket = root.path().join(format!("run/irqbalance/irqbalance{}.sock", d.pid()));
    assert!(socket.exists(), "a user's process named irqbalance does not keep irqwise from opening its socket");
    let d = drift_and_wait(d, root.path(), irqs[0]);
    let owner = d.state()["left_to_others"][0]["owner"].as_str().unwrap_or_default().to_string();
    let log = d.stop();
    assert!(!log.contains("irqbalance (pid 3000)"), "a user's process is not irqbalance:\n{log}");
    assert!(owner.starts_with("set_irq_affinity.sh") && !owner.contains('\n'), "{owner:?}");
    assert!(!owner.contains("tuned"), "a user's process named tuned is no peer: {owner:?}");
    let said: Vec<&str> = log.lines().filter(|l| l.contains("FORGED")).collect();
    assert!(!said.is_empty() && said.iter().all(|l| l.contains("moved from")), "no line of its own:\n{log}");
}
