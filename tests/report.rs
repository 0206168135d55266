//! `irqwise report` end to end on a fixture root: the real binary reads `ROOT/proc/interrupts`,
//! the test rewrites it between the two reads (the hidden `--between-samples` command), and the
//! rates, the CPUs interrupts fired on and their locality classes come out exactly.
//!
//! The machine: the daemon tests' 2-node, 16-CPU root (CPU c's SMT sibling is c ± 8, node 1 =
//! 4-7,12-15) with the 8-queue ixgbe NIC `eth1` on node 1, and a USB controller (class
//! `other`, left alone: no desired CPUs) on node 1. Desired sets come from the plan.

#[path = "common/bin.rs"]
mod bin;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use daemon_fixture::{nic_root, NIC};
use fixture::FixtureRoot;
use irqwise::config::Config;
use irqwise::cpuset::CpuSet;
use irqwise::pass::plan_pass;
use irqwise::sysfs::Root;
use serde_json::Value;

const USB: &str = "0000:80:14.0";

/// `/proc/interrupts` of the root with `counts[irq][cpu]` in place of the numbers (0 elsewhere),
/// in the kernel's layout.
fn interrupts_text(root: &Path, counts: &BTreeMap<u32, BTreeMap<u32, u64>>) -> String {
    let text = std::fs::read_to_string(root.join("proc/interrupts")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let cpus: Vec<u32> = header.split_whitespace().map(|t| t.trim_start_matches("CPU").parse().unwrap()).collect();
    let mut out = format!("{header}\n");
    for line in lines {
        let (label, rest) = line.split_once(':').unwrap();
        let irq: u32 = label.trim().parse().unwrap();
        let tail = rest.split_whitespace().skip(cpus.len()).collect::<Vec<_>>().join(" ");
        out.push_str(&format!("{label}:"));
        for cpu in &cpus {
            let n = counts.get(&irq).and_then(|c| c.get(cpu)).copied().unwrap_or(0);
            out.push_str(&format!("{n:>11}"));
        }
        out.push_str(&format!("  {tail}\n"));
    }
    out
}

fn report(root: &Path, cfg: &Path, between: &str, json: bool) -> String {
    let mut cmd = bin::irqwise_with(root, cfg);
    cmd.args(["report", "--interval", "2s"]);
    cmd.args(["--between-samples", between]);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn two_reads_give_exact_rates_cpus_and_locality_classes() {
    let (dir, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = dir.path();
    let nic = nic_root(root);
    let mut fx = FixtureRoot::at(root);
    fx.msi_device(USB, 0x0c0330, "xhci_hcd", Some(1), &["xhci_hcd"]);
    let usb = fx.irqs_of(USB)[0];
    let plan = plan_pass(&Root::new(root), &Config::default(), &BTreeSet::new()).unwrap().plan;
    let desired = |irq: u32| plan.find_irq(irq).unwrap().1.desired.clone().unwrap();
    let one = |irq: u32| {
        let d = desired(irq);
        assert_eq!(d.len(), 1, "a queue IRQ gets one CPU: {d}");
        d.first().unwrap()
    };
    let sibling = |cpu: u32| if cpu < 8 { cpu + 8 } else { cpu - 8 };
    let (q0, q1, q2) = (one(nic[0]), one(nic[1]), one(nic[2]));
    let misc = nic[8];
    assert_eq!(desired(misc), CpuSet::parse_list("4-7,12-15").unwrap(), "the misc IRQ: node 1's CPUs");
    // A node-1 CPU that is neither q2 nor its sibling, and a node-0 CPU.
    let other_node1 = [4, 5, 6, 7].into_iter().find(|c| *c != q2 && *c != sibling(q2)).unwrap();

    let before: BTreeMap<u32, BTreeMap<u32, u64>> =
        BTreeMap::from([(nic[0], BTreeMap::from([(q0, 1_000_000)])), (usb, BTreeMap::from([(5, 7)]))]);
    let after: BTreeMap<u32, BTreeMap<u32, u64>> = BTreeMap::from([
        (nic[0], BTreeMap::from([(q0, 1_002_000)])),               // 2000 on its CPU
        (nic[1], BTreeMap::from([(q1, 100), (sibling(q1), 300)])), // 100 desired, 300 core
        (nic[2], BTreeMap::from([(q2, 20), (other_node1, 40), (0, 20)])), // desired, node, remote
        (misc, BTreeMap::from([(0, 10), (12, 6)])),                // remote, desired
        (usb, BTreeMap::from([(5, 15), (1, 4)])),                  // no desired: node, remote
    ]);
    std::fs::write(root.join("proc/interrupts"), interrupts_text(root, &before)).unwrap();
    let second = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(second.path(), interrupts_text(root, &after)).unwrap();
    let between = format!("cp '{}' '{}'", second.path().display(), root.join("proc/interrupts").display());

    let json: Value = serde_json::from_str(&report(root, cfg.path(), &between, true)).unwrap();
    assert_eq!(json["schema"], 2);
    assert_eq!(json["interval_seconds"], 2.0);
    let dev = |bdf: &str| json["devices"].as_array().unwrap().iter().find(|d| d["bdf"] == bdf).unwrap().clone();
    let eth1 = dev(NIC);
    let irq = |irq: u32| eth1["irqs"].as_array().unwrap().iter().find(|i| i["irq"] == irq).unwrap().clone();
    let cpus = |i: &Value| -> Vec<(u64, u64, String)> {
        i["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (c["cpu"].as_u64().unwrap(), c["interrupts"].as_u64().unwrap(), c["locality"].as_str().unwrap().into())
            })
            .collect()
    };

    let i0 = irq(nic[0]);
    assert_eq!((i0["interrupts"].as_u64(), i0["rate"].as_f64()), (Some(2000), Some(1000.0)));
    assert_eq!(cpus(&i0), vec![(u64::from(q0), 2000, "desired".into())]);
    let i1 = irq(nic[1]);
    assert_eq!(i1["rate"], 200.0);
    let mut want1 = vec![(u64::from(q1), 100, "desired".to_string()), (u64::from(sibling(q1)), 300, "core".into())];
    want1.sort();
    assert_eq!(cpus(&i1), want1);
    assert_eq!((i1["locality"]["desired"].as_u64(), i1["locality"]["core"].as_u64()), (Some(100), Some(300)));
    let i2 = irq(nic[2]);
    assert_eq!(i2["rate"], 40.0);
    let l2 = &i2["locality"];
    assert_eq!(
        [&l2["desired"], &l2["core"], &l2["node"], &l2["remote"]].map(|v| v.as_u64().unwrap()),
        [20, 0, 40, 20],
        "{i2}"
    );
    let m = irq(misc);
    assert_eq!(cpus(&m), vec![(0, 10, "remote".into()), (12, 6, "desired".into())]);
    assert_eq!(irq(nic[3])["interrupts"], 0, "an IRQ that did not fire");
    // The device: sums of its IRQs; "on desired" over IRQs that have a desired set (all of them).
    assert_eq!(eth1["interrupts"], 2000 + 400 + 80 + 16);
    assert_eq!(eth1["rate"], 1248.0);
    assert_eq!(eth1["with_desired"], 2496);
    assert_eq!(eth1["locality"]["desired"], 2000 + 100 + 20 + 6);
    assert_eq!(eth1["on_node"], 2496 - 20 - 10, "all but the node-0 interrupts");

    // Left alone: no desired CPUs, so only the device's node counts.
    let u = dev(USB);
    let ui = &u["irqs"][0];
    assert_eq!(ui["desired"], Value::Null);
    assert_eq!(cpus(ui), vec![(1, 4, "remote".into()), (5, 8, "node".into())]);
    assert_eq!((u["with_desired"].as_u64(), u["on_node"].as_u64()), (Some(0), Some(8)));

    // The table says the same, one summary line per device.
    std::fs::write(root.join("proc/interrupts"), interrupts_text(root, &before)).unwrap();
    let text = report(root, cfg.path(), &between, false);
    assert!(text.starts_with("interrupts over 2.0 s\n"), "{text}");
    assert!(text.contains("eth1 (0000:81:00.0, ixgbe): 1,248 irq/s, 85% on desired CPUs, 98% on node 1\n"), "{text}");
    assert!(text.contains("0000:80:14.0 (xhci_hcd): 6.0 irq/s, 66% on node 1\n"), "{text}");
    let row = text.lines().find(|l| l.split_whitespace().next() == Some(nic[1].to_string().as_str())).unwrap();
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cols[1..5], &["eth1-TxRx-1", "rxtx", "1", "200"], "{row}");
    assert!(row.ends_with("desired 25%, core 75%"), "{row}");
}

#[test]
fn a_root_without_proc_interrupts_is_an_error_naming_the_file() {
    let (dir, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(dir.path());
    std::fs::remove_file(dir.path().join("proc/interrupts")).unwrap();
    let out = bin::irqwise_with(dir.path(), cfg.path()).args(["report", "--interval", "100ms"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}/proc/interrupts: missing", dir.path().display())), "{err}");
}

#[test]
fn watch_needs_a_terminal_and_intervals_must_be_bounded_durations() {
    let (dir, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(dir.path());
    let run = |args: &[&str]| bin::irqwise_with(dir.path(), cfg.path()).arg("report").args(args).output().unwrap();
    let out = run(&["--watch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a terminal"));
    // Zero, no unit, fractions, and more than an hour (years are a typo, not a measurement).
    for bad in ["0s", "5", "1.5s", "61m", "2h", "87600h", "99999999999999999h"] {
        let out = run(&["--interval", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("expected a duration from \"1ms\" to \"1h\""), "{bad}");
    }
}

/// `proc/PID/{comm,status,stat}` of a NAPI thread allowed on `allowed`, last on `cpu`.
fn napi_thread(root: &Path, pid: u32, comm: &str, allowed: &str, cpu: u32) {
    let dir = root.join(format!("proc/{pid}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("comm"), format!("{comm}\n")).unwrap();
    std::fs::write(dir.join("status"), format!("Name:\t{comm}\nCpus_allowed_list:\t{allowed}\n")).unwrap();
    // Field 39 (processor) is the 37th after the name's closing parenthesis; field 9 (flags)
    // says a kernel thread (PF_KTHREAD).
    let fields: Vec<String> = (3..=52)
        .map(|i| match i {
            39 => cpu.to_string(),
            9 => 0x0020_0040.to_string(),
            _ => "0".into(),
        })
        .collect();
    std::fs::write(dir.join("stat"), format!("{pid} ({comm}) {}\n", fields.join(" "))).unwrap();
}

#[test]
fn napi_threads_and_net_rx_softirqs_show_where_the_queues_work_ran() {
    let (dir, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = dir.path();
    fixture::write_cpu_topology(root, 2, 4, 2);
    let mut fx = FixtureRoot::at(root);
    fx.nic("0000:81:00.0", "vmxnet3", "eth0", Some(1), 2, fixture::NamingScheme::Vmxnet3);
    let irqs = fx.irqs_of("0000:81:00.0").to_vec();
    std::fs::create_dir_all(root.join("sys/class/net/eth0")).unwrap();
    std::fs::write(root.join("sys/class/net/eth0/ifindex"), "3\n").unwrap();
    std::fs::write(root.join("sys/class/net/eth0/threaded"), "1\n").unwrap();
    std::fs::create_dir_all(root.join("proc/2/task/2")).unwrap();
    std::fs::write(root.join("proc/2/task/2/children"), "501 500 77 ").unwrap();
    // Queue 1's thread has the higher NAPI id; a kworker is not a NAPI thread.
    napi_thread(root, 500, "napi/eth0-8193", "0-15", 0);
    napi_thread(root, 501, "napi/eth0-8194", "0-15", 1);
    napi_thread(root, 77, "kworker/1:0", "1", 1);
    let softirqs = |net_rx: [u64; 4]| {
        let cpus: Vec<String> = (0..16).map(|c| format!("CPU{c}")).collect();
        let row: Vec<String> = (0..16).map(|c| if c < 4 { net_rx[c].to_string() } else { "0".into() }).collect();
        format!("    {}\n      NET_TX: {}\n      NET_RX: {}\n", cpus.join(" "), row.join(" "), row.join(" "))
    };
    std::fs::write(root.join("proc/softirqs"), softirqs([10, 10, 10, 10])).unwrap();
    // Between the reads: queue 0's thread ran on CPU 5, and NET_RX ran 30 times on CPU 0 and 10 on CPU 3.
    let later = tempfile::tempdir().unwrap();
    std::fs::write(later.path().join("softirqs"), softirqs([40, 10, 10, 20])).unwrap();
    napi_thread(later.path(), 500, "napi/eth0-8193", "5", 5);
    let between = format!(
        "cp '{l}/softirqs' '{r}/proc/softirqs' && cp '{l}/proc/500/stat' '{l}/proc/500/status' '{r}/proc/500/'",
        l = later.path().display(),
        r = root.display()
    );
    let json: Value = serde_json::from_str(&report(root, cfg.path(), &between, true)).unwrap();
    let dev = &json["devices"][0];
    let irq = |n: u32| dev["irqs"].as_array().unwrap().iter().find(|i| i["irq"] == n).unwrap().clone();
    let t0 = &irq(irqs[0])["napi_thread"];
    assert_eq!((t0["pid"].as_u64(), t0["name"].as_str()), (Some(500), Some("napi/eth0-8193")), "{dev}");
    assert_eq!(
        (t0["last_cpu"].as_u64(), &t0["allowed"]),
        (Some(5), &serde_json::json!("5")),
        "read again at the second read"
    );
    assert_eq!(irq(irqs[1])["napi_thread"]["pid"], 501);
    assert!(irq(irqs[2]).get("napi_thread").is_none(), "the event IRQ has no thread");
    let shares: Vec<(u64, u64, f64)> = json["net_rx"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["cpu"].as_u64().unwrap(), c["softirqs"].as_u64().unwrap(), c["share_percent"].as_f64().unwrap()))
        .collect();
    assert_eq!(shares, vec![(0, 30, 75.0), (3, 10, 25.0)]);

    napi_thread(root, 500, "napi/eth0-8193", "0-15", 0);
    std::fs::write(root.join("proc/softirqs"), softirqs([10, 10, 10, 10])).unwrap();
    let text = report(root, cfg.path(), &between, false);
    let line = format!("  rxtx 0 (irq {}): thread napi/eth0-8193 (pid 500) last ran on CPU 5, allowed 5\n", irqs[0]);
    assert!(text.contains(&line), "{text}");
    assert!(text.contains("NET_RX softirqs by CPU: 0 75%, 3 25%\n"), "{text}");
}

#[test]
fn a_malformed_proc_softirqs_is_a_warning_naming_it_and_the_report_goes_on() {
    let (dir, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(dir.path());
    std::fs::write(dir.path().join("proc/softirqs"), "    CPU0 CPU1\n      NET_RX: 5 many\n").unwrap();
    let text = report(dir.path(), cfg.path(), "true", false);
    let want = format!("{}/proc/softirqs: NET_RX count \"many\" of column 1 is not a number", dir.path().display());
    assert!(text.contains(&want), "{text}");
    assert!(!text.contains("NET_RX softirqs by CPU"), "{text}");
}
