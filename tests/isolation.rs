//! Isolation from every source, through the real binary against fixture roots: cgroup v2
//! isolated partitions, `isolcpus=` on the kernel command line and irqbalance's banned list
//! (both variables, both files) each keep device IRQs off their CPUs; `irqwise topology` names
//! every source; the running daemon re-places within its debounce window when the banned list
//! changes.

#[path = "common/bin.rs"]
mod bin;
#[path = "common/child_daemon.rs"]
mod child_daemon;
#[path = "common/fixture.rs"]
mod fixture;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use child_daemon::Daemon;
use fixture::{FixtureRoot, NamingScheme};
use irqwise::cpuset::CpuSet;
use serde_json::Value;

const NIC: &str = "0000:81:00.0";

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

/// 24 CPUs in 2 nodes (node 1 = 6-11,18-23) and an 8-queue ixgbe NIC on node 1: without
/// isolation its queue 0 goes to CPU 6 and queue 1 to CPU 7.
fn nic_root() -> (tempfile::TempDir, Vec<u32>) {
    let dir = tempfile::tempdir().unwrap();
    fixture::write_cpu_topology(dir.path(), 2, 6, 2);
    let mut r = FixtureRoot::at(dir.path());
    r.nic(NIC, "ixgbe", "eth1", Some(1), 8, NamingScheme::TxRx);
    let irqs = r.irqs_of(NIC).to_vec();
    (dir, irqs)
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn irqwise(root: &Path, cfg: &Path, args: &[&str]) -> (i32, String, String) {
    let r = bin::ran(bin::irqwise_with(root, cfg).args(args));
    (r.code.unwrap_or(-1), r.stdout, r.stderr)
}

/// `plan --json`: every placed IRQ's desired CPUs, and the plan's warnings.
fn desired(root: &Path, cfg: &Path) -> (Vec<(u32, CpuSet)>, Vec<String>) {
    let (code, out, err) = irqwise(root, cfg, &["plan", "--json"]);
    assert_eq!(code, 0, "{err}");
    let plan: Value = serde_json::from_str(&out).unwrap();
    let irqs = plan["devices"][0]["irqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let cpus = CpuSet::parse_list(p["desired"].as_str().unwrap()).unwrap();
            (p["irq"].as_u64().unwrap() as u32, cpus)
        })
        .collect();
    let warnings = plan["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_string()).collect();
    (irqs, warnings)
}

/// Asserts no IRQ of the NIC is planned on `avoid`.
fn avoids(root: &Path, cfg: &Path, avoid: &CpuSet, what: &str) {
    let (irqs, warnings) = desired(root, cfg);
    assert_eq!(irqs.len(), 9, "{what}");
    for (irq, cpus) in &irqs {
        assert!(
            !cpus.is_empty() && !cpus.intersects(avoid),
            "{what}: irq {irq} planned on {cpus}, which touches {avoid}"
        );
    }
    assert!(warnings.is_empty(), "{what}: {warnings:?}");
}

#[test]
fn without_isolation_queue_0_and_1_take_cpus_6_and_7() {
    let (root, irqs) = nic_root();
    let cfg = tempfile::tempdir().unwrap();
    let (planned, _) = desired(root.path(), cfg.path());
    assert_eq!(planned[0], (irqs[0], set("6")));
    assert_eq!(planned[1], (irqs[1], set("7")));
}

#[test]
fn every_source_keeps_device_irqs_off_its_cpus_and_topology_names_it() {
    // Each with when its CPUs are decided: at boot, or live (7.0 follows cgroup partitions at
    // run time while cpu/isolated keeps the boot's isolcpus=).
    let cases: [(&str, &str, &str, &str); 7] = [
        ("sys/fs/cgroup/cpuset.cpus.isolated", "6-7\n", "cgroup-partition", "live"),
        (
            "proc/cmdline",
            "BOOT_IMAGE=/vmlinuz root=/dev/vda1 isolcpus=managed_irq,domain,6-7 quiet\n",
            "cmdline-isolcpus",
            "boot",
        ),
        ("etc/sysconfig/irqbalance", "IRQBALANCE_BANNED_CPULIST=6-7\n", "irqbalance-banned", "live"),
        (
            "etc/sysconfig/irqbalance",
            "# written by CRI-O\nIRQBALANCE_BANNED_CPUS=\"00000000,000000c0\"\n",
            "irqbalance-banned",
            "live",
        ),
        ("etc/default/irqbalance", "export IRQBALANCE_BANNED_CPULIST='6-7'\n", "irqbalance-banned", "live"),
        ("etc/default/irqbalance", "IRQBALANCE_BANNED_CPUS=c0  # tuned\n", "irqbalance-banned", "live"),
        ("proc/cmdline", "ro irqaffinity=0-5,8-23\n", "cmdline-irqaffinity", "boot"),
    ];
    let cfg = tempfile::tempdir().unwrap();
    for (rel, text, kind, since) in cases {
        let (root, _) = nic_root();
        write(root.path(), rel, text);
        avoids(root.path(), cfg.path(), &set("6-7"), &format!("{rel}: {text:?}"));
        let (code, out, err) = irqwise(root.path(), cfg.path(), &["topology", "--json"]);
        assert_eq!(code, 0, "{err}");
        let topo: Value = serde_json::from_str(&out).unwrap();
        let sources = topo["isolation"]["sources"].as_array().unwrap();
        assert_eq!(sources.len(), 1, "{rel}: {sources:?}");
        assert_eq!(sources[0]["kind"], kind);
        assert_eq!(sources[0]["since"], since, "{rel}");
        assert_eq!(sources[0]["cpus"], serde_json::json!("6-7"));
        assert_eq!(sources[0]["applied"], true);
        assert!(sources[0]["path"].as_str().unwrap().ends_with(rel), "{sources:?}");
        assert_eq!(topo["isolation"]["avoid"], serde_json::json!("6-7"));
        let (_, table, _) = irqwise(root.path(), cfg.path(), &["topology"]);
        assert!(table.contains("isolation: device IRQs avoid CPUs 6-7"), "{table}");
        assert!(table.contains(&format!("{since} {}: ", root.path().join(rel).display())), "{table}");
    }
}

#[test]
fn the_settings_decide_which_sources_apply() {
    let (root, irqs) = nic_root();
    write(root.path(), "sys/fs/cgroup/cpuset.cpus.isolated", "6\n");
    write(root.path(), "etc/default/irqbalance", "IRQBALANCE_BANNED_CPULIST=7\n");
    let cfg = tempfile::tempdir().unwrap();
    write(
        cfg.path(),
        "etc/irqwise/irqwise.toml",
        "[global]\nrespect_isolation = false\nimport_irqbalance_banned = false\n",
    );
    let (planned, _) = desired(root.path(), cfg.path());
    assert_eq!((&planned[0], &planned[1]), (&(irqs[0], set("6")), &(irqs[1], set("7"))), "neither applies");
    let (_, table, _) = irqwise(root.path(), cfg.path(), &["topology"]);
    assert!(table.contains("isolation: no CPU is kept free of device IRQs"), "{table}");
    assert!(
        table.contains("not applied: respect_isolation = false")
            && table.contains("not applied: import_irqbalance_banned = false"),
        "{table}"
    );

    // A rule's own cpus may use an isolated CPU when it says so, never a banned one (like
    // banned_cpus); without allow_isolated the plan warns and leaves the isolated CPU out.
    let rule = "[[device]]\nmatch = { driver = \"ixgbe\" }\ncpus = \"6-11\"\n";
    write(cfg.path(), "etc/irqwise/irqwise.toml", rule);
    let (planned, warnings) = desired(root.path(), cfg.path());
    assert!(planned.iter().all(|(_, c)| !c.contains(6)), "cgroup-isolated CPU 6 left out: {planned:?}");
    assert!(warnings.iter().any(|w| w.contains("isolated CPUs 6")), "{warnings:?}");
    write(cfg.path(), "etc/irqwise/irqwise.toml", &format!("{rule}allow_isolated = true\n"));
    let (planned, _) = desired(root.path(), cfg.path());
    assert_eq!(planned[0], (irqs[0], set("6")), "explicit cpus with allow_isolated use the isolated CPU 6");
    assert!(planned.iter().all(|(_, c)| !c.contains(7)), "banned CPU 7 stays free: {planned:?}");
}

#[test]
fn a_malformed_or_everything_banning_file_is_a_warning_and_bans_nothing() {
    let cfg = tempfile::tempdir().unwrap();
    let (root, irqs) = nic_root();
    write(root.path(), "etc/sysconfig/irqbalance", "IRQBALANCE_BANNED_CPUS=zz\n");
    let (planned, warnings) = desired(root.path(), cfg.path());
    assert_eq!(planned[0], (irqs[0], set("6")));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("etc/sysconfig/irqbalance") && warnings[0].contains("zz"), "{warnings:?}");

    let (root, irqs) = nic_root();
    write(root.path(), "etc/default/irqbalance", "IRQBALANCE_BANNED_CPULIST=0-23\n");
    let (planned, warnings) = desired(root.path(), cfg.path());
    assert_eq!(planned[0], (irqs[0], set("6")));
    assert!(warnings.iter().any(|w| w.contains("bans every online CPU") && w.contains("not imported")), "{warnings:?}");
}

fn affinity(root: &Path, irq: u32) -> CpuSet {
    set(fs::read_to_string(root.join(format!("proc/irq/{irq}/smp_affinity_list"))).unwrap().trim())
}

#[test]
fn the_running_daemon_replaces_when_the_banned_list_or_the_partitions_change() {
    let (root, irqs) = nic_root();
    // Present from the start, as on a kernel with isolated partitions: watched itself.
    write(root.path(), "sys/fs/cgroup/cpuset.cpus.isolated", "\n");
    fs::create_dir_all(root.path().join("etc")).unwrap();
    let cfg = tempfile::tempdir().unwrap();
    // Only the file watch can cause the passes awaited below: no reconcile for a day.
    write(cfg.path(), "etc/irqwise/irqwise.toml", "[global]\nreconcile_interval = \"24h\"\ndebounce = \"50ms\"\n");
    let log = cfg.path().join("daemon.log");
    let d = Daemon::spawn(root.path(), cfg.path(), log);
    let state = d.wait(0, "first pass", || affinity(root.path(), irqs[0]) == set("6"));
    let first = state["passes"].as_u64().unwrap();

    // tuned writes the banned list (etc/default does not exist yet: its creation is seen too).
    write(root.path(), "etc/default/irqbalance", "IRQBALANCE_BANNED_CPULIST=6-7\n");
    let state =
        d.wait(first, "banned list", || irqs.iter().all(|&i| !affinity(root.path(), i).intersects(&set("6-7"))));
    assert!(state["triggers"].as_array().unwrap().iter().any(|t| t == "isolation"), "{state}");
    let second = state["passes"].as_u64().unwrap();

    // An isolated partition takes CPUs 8-9.
    write(root.path(), "sys/fs/cgroup/cpuset.cpus.isolated", "8-9\n");
    d.wait(second, "cgroup partition", || irqs.iter().all(|&i| !affinity(root.path(), i).intersects(&set("6-9"))));
}

#[test]
fn the_guard_names_each_source_when_it_clears_a_left_alone_irq() {
    let (root, _) = nic_root();
    let mut r = FixtureRoot::at(root.path());
    r.msi_device("0000:02:00.0", 0x0c0330, "xhci_hcd", Some(0), &["xhci_hcd"]);
    let usb = r.irqs_of("0000:02:00.0")[0];
    write(root.path(), "sys/fs/cgroup/cpuset.cpus.isolated", "6-7\n");
    write(root.path(), "etc/sysconfig/irqbalance", "IRQBALANCE_BANNED_CPUS=00000300\n");
    let cfg = tempfile::tempdir().unwrap();
    let (code, out, err) = irqwise(root.path(), cfg.path(), &["plan", "--json"]);
    assert_eq!(code, 0, "{err}");
    let plan: Value = serde_json::from_str(&out).unwrap();
    let p = plan["devices"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| d["irqs"].as_array().unwrap())
        .find(|p| p["irq"] == usb)
        .unwrap()
        .clone();
    let desired = CpuSet::parse_list(p["desired"].as_str().unwrap()).unwrap();
    assert_eq!(desired, set("0-5,10-23"), "{p}");
    let reason = p["reason"].as_str().unwrap();
    assert!(reason.contains("cgroup-isolated CPUs 6-7") && reason.contains("irqbalance-banned CPUs 8-9"), "{reason}");
}

/// Where the kubelet keeps its CPU manager's checkpoint, below the fixture root.
const KUBELET_STATE: &str = "var/lib/kubelet/cpu_manager_state";

/// The configuration that makes the checkpoint a source.
const KUBELET_CONFIG: &str = "[global]\nkubelet_cpu_manager_state = \"/var/lib/kubelet/cpu_manager_state\"\n";

/// FNV-1a, 32 bits (Go's hash/fnv New32a).
fn fnv32a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

/// The kubelet's v2 checkpoint of the static policy, with the checksum the kubelet writes:
/// FNV-1a (32 bits) of go-spew's `%#v` dump of the checkpoint struct with its checksum 0, keys
/// sorted (pkg/kubelet/checkpointmanager/checksum, k8s.io/utils/dump.ForHash).
fn kubelet_checkpoint(default: &str, entries: &[(&str, &str, &str)]) -> String {
    let mut pods: BTreeMap<&str, BTreeMap<&str, &str>> = BTreeMap::new();
    for (pod, container, cpus) in entries {
        pods.entry(pod).or_default().insert(container, cpus);
    }
    let join = |items: Vec<String>, sep: &str| items.join(sep);
    let spew_pods = pods
        .iter()
        .map(|(uid, c)| format!("{uid}:map[{}]", join(c.iter().map(|(n, cpus)| format!("{n}:{cpus}")).collect(), " ")));
    let spew = format!(
        "(*state.CPUManagerCheckpoint){{PolicyName:(string)static DefaultCPUSet:(string){default} Entries:(map[string]map[string]string)map[{}] Checksum:(checksum.Checksum)0}}",
        join(spew_pods.collect(), " ")
    );
    let json_pods = pods.iter().map(|(uid, c)| {
        format!("\"{uid}\":{{{}}}", join(c.iter().map(|(n, cpus)| format!("\"{n}\":\"{cpus}\"")).collect(), ","))
    });
    format!(
        "{{\"policyName\":\"static\",\"defaultCpuSet\":\"{default}\",\"entries\":{{{}}},\"checksum\":{}}}",
        join(json_pods.collect(), ","),
        fnv32a(&spew)
    )
}

#[test]
fn the_test_checkpoint_has_the_checksum_a_real_kubelet_writes() {
    // A kubelet's file, as published (policy static, one guaranteed pod on CPUs 1 and 13).
    let real = r#"{"policyName":"static","defaultCpuSet":"0,2-12,14-23","entries":{"235148fe-393f-47a8-a17d-bd55bc1a836b":{"cgroup1-0":"1,13"}},"checksum":1552716370}"#;
    let ours = kubelet_checkpoint("0,2-12,14-23", &[("235148fe-393f-47a8-a17d-bd55bc1a836b", "cgroup1-0", "1,13")]);
    assert_eq!(ours, real);
}

/// Writes the checkpoint as the kubelet does: a temporary file in the same directory, renamed.
fn write_checkpoint(root: &Path, text: &str) {
    let tmp = root.join("var/lib/kubelet/.cpu_manager_state.tmp");
    fs::create_dir_all(tmp.parent().unwrap()).unwrap();
    fs::write(&tmp, text).unwrap();
    fs::rename(&tmp, root.join(KUBELET_STATE)).unwrap();
}

#[test]
fn the_kubelets_exclusive_cpus_keep_device_irqs_off_in_plan_apply_and_topology_names_the_file() {
    let (root, irqs) = nic_root();
    // Two guaranteed pods: CPUs 6-7 and 18 are theirs alone; the shared pool is not kept free.
    let state = kubelet_checkpoint("0-5,8-17,19-23", &[("6f1c", "web", "6-7"), ("9a2e", "db", "18")]);
    write_checkpoint(root.path(), &state);
    // Not configured: the file changes nothing.
    let cfg = tempfile::tempdir().unwrap();
    let (planned, warnings) = desired(root.path(), cfg.path());
    assert_eq!((&planned[0], &planned[1]), (&(irqs[0], set("6")), &(irqs[1], set("7"))), "{warnings:?}");
    let (_, table, _) = irqwise(root.path(), cfg.path(), &["topology"]);
    assert!(table.contains("isolation: no CPU is kept free of device IRQs"), "{table}");

    write(cfg.path(), "etc/irqwise/irqwise.toml", KUBELET_CONFIG);
    avoids(root.path(), cfg.path(), &set("6-7,18"), "the kubelet's exclusive CPUs");
    let (code, out, err) = irqwise(root.path(), cfg.path(), &["topology", "--json"]);
    assert_eq!(code, 0, "{err}");
    let topo: Value = serde_json::from_str(&out).unwrap();
    let sources = topo["isolation"]["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 1, "{sources:?}");
    assert_eq!(sources[0]["cpus"], serde_json::json!("6-7,18"));
    assert_eq!(sources[0]["since"], "live");
    assert_eq!(sources[0]["applied"], true);
    assert!(sources[0]["path"].as_str().unwrap().ends_with(KUBELET_STATE), "{sources:?}");
    let setting = sources[0]["setting"].as_str().unwrap();
    assert!(setting.contains("6f1c") && setting.contains("web") && setting.contains("9a2e"), "{setting}");
    let (_, table, _) = irqwise(root.path(), cfg.path(), &["topology"]);
    assert!(table.contains("isolation: device IRQs avoid CPUs 6-7,18"), "{table}");
    assert!(table.contains(&format!("live {}: ", root.path().join(KUBELET_STATE).display())), "{table}");

    let (code, _, err) = irqwise(root.path(), cfg.path(), &["apply"]);
    assert_eq!(code, 0, "{err}");
    for &irq in &irqs {
        let cpus = affinity(root.path(), irq);
        assert!(!cpus.is_empty() && !cpus.intersects(&set("6-7,18")), "irq {irq} applied on {cpus}");
    }
}

#[test]
fn a_damaged_checkpoint_keeps_nothing_free_in_a_command_and_says_what_is_wrong() {
    let good = kubelet_checkpoint("0-5,8-23", &[("6f1c", "web", "6-7")]);
    let cut = &good[..good.len() / 2];
    let beyond = kubelet_checkpoint("0-5,8-23", &[("6f1c", "web", "6-7,99")]);
    let forged = good.replace("\"6-7\"", "\"6-8\"");
    // A policy the kubelet does not have, with no checksum (0: none, which the kubelet accepts).
    let policy = good.replace("\"static\"", "\"dynamic\"");
    let policy = format!("{}0}}", &policy[..=policy.rfind(':').unwrap()]);
    let overlap = kubelet_checkpoint("0-5,8-23", &[("6f1c", "web", "6-7"), ("9a2e", "db", "7")]);
    let cases: [(&str, &str); 5] =
        [(cut, "half-written"), (&beyond, "99"), (&forged, "checksum"), (&policy, "dynamic"), (&overlap, "9a2e")];
    let cfg = tempfile::tempdir().unwrap();
    write(cfg.path(), "etc/irqwise/irqwise.toml", KUBELET_CONFIG);
    for (text, named) in cases {
        let (root, irqs) = nic_root();
        write_checkpoint(root.path(), text);
        let (planned, warnings) = desired(root.path(), cfg.path());
        assert_eq!(planned[0], (irqs[0], set("6")), "{text}: nothing kept free; {warnings:?}");
        assert_eq!(warnings.len(), 1, "{text}: {warnings:?}");
        assert!(warnings[0].contains(KUBELET_STATE) && warnings[0].contains(named), "{text}: {warnings:?}");
    }
    // Configured but absent (the kubelet has not written it): said, nothing kept free.
    let (root, irqs) = nic_root();
    let (planned, warnings) = desired(root.path(), cfg.path());
    assert_eq!(planned[0], (irqs[0], set("6")));
    assert!(warnings.iter().any(|w| w.contains(KUBELET_STATE)), "{warnings:?}");
}

#[test]
fn the_daemon_follows_the_checkpoint_and_keeps_the_last_good_reading_through_damage() {
    let (root, irqs) = nic_root();
    write_checkpoint(root.path(), &kubelet_checkpoint("0-5,8-23", &[("6f1c", "web", "6-7")]));
    let cfg = tempfile::tempdir().unwrap();
    // Only the file watch can cause the passes awaited below: no reconcile for a day.
    write(
        cfg.path(),
        "etc/irqwise/irqwise.toml",
        &format!("{KUBELET_CONFIG}reconcile_interval = \"24h\"\ndebounce = \"50ms\"\n"),
    );
    let log = cfg.path().join("daemon.log");
    let d = Daemon::spawn(root.path(), cfg.path(), log);
    let off = |cpus: &str| irqs.iter().all(|&i| !affinity(root.path(), i).intersects(&set(cpus)));
    let state = d.wait(0, "first pass", || off("6-7"));
    let first = state["passes"].as_u64().unwrap();

    // A second pod gets CPU 8: the rename is seen, the NIC's IRQs leave it.
    let two = kubelet_checkpoint("0-5,9-23", &[("6f1c", "web", "6-7"), ("9a2e", "db", "8")]);
    write_checkpoint(root.path(), &two);
    let state = d.wait(first, "a new exclusive CPU", || off("6-8"));
    assert!(state["triggers"].as_array().unwrap().iter().any(|t| t == "isolation"), "{state}");
    let second = state["passes"].as_u64().unwrap();

    // Half-written, then damaged again by the same cut: the last good reading holds, said once.
    write_checkpoint(root.path(), &two[..two.len() / 2]);
    let state = d.wait(second, "the damaged file's pass", || true);
    let third = state["passes"].as_u64().unwrap();
    write_checkpoint(root.path(), &two[..two.len() / 2]);
    d.wait(third, "the damaged file's second pass", || true);
    assert!(off("6-8"), "the last good reading is kept");
    let log = d.log_text();
    let said: Vec<&str> = log.lines().filter(|l| l.contains(KUBELET_STATE)).collect();
    assert_eq!(said.len(), 1, "{log}");
    let warnings = d.state()["plan"]["warnings"].to_string();
    assert!(warnings.contains(KUBELET_STATE), "{warnings}");

    // Good again: the pod on 6-7 is gone, CPU 8 stays; 6 takes queue 0 again.
    write_checkpoint(root.path(), &kubelet_checkpoint("0-7,9-23", &[("9a2e", "db", "8")]));
    d.wait(third + 1, "good again", || off("8") && affinity(root.path(), irqs[0]) == set("6"));
}

/// `topology` shows the command line's isolation as the running kernel applies it: from 6.19 a
/// `nohz_full=` that with `isolcpus=domain` would leave no present CPU is ignored (not a
/// source, its CPUs free for IRQs, and said); `isolcpus=io_queue` on a kernel without it is
/// said to be domain isolation only.
#[test]
fn topology_and_plan_read_the_isolation_the_kernel_applies() {
    let (root, _) = nic_root();
    let cfg = tempfile::tempdir().unwrap();
    write(root.path(), "proc/sys/kernel/osrelease", "6.19.1\n");
    write(root.path(), "proc/cmdline", "root=/dev/sda1 isolcpus=domain,0-11 nohz_full=12-23\n");
    let (code, out, err) = irqwise(root.path(), cfg.path(), &["topology", "--json"]);
    assert_eq!(code, 0, "{err}");
    let topo: Value = serde_json::from_str(&out).unwrap();
    let settings: Vec<&str> =
        topo["isolation"]["sources"].as_array().unwrap().iter().filter_map(|s| s["setting"].as_str()).collect();
    assert_eq!(settings, ["isolcpus=domain,0-11"], "{out}");
    let warned = topo["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .any(|w| w.starts_with("nohz_full=12-23: ignored by the kernel") && w.contains("isolcpus=domain,0-11"));
    assert!(warned, "{out}");
    let (planned, _) = desired(root.path(), cfg.path());
    assert!(planned.iter().all(|(_, cpus)| cpus.is_subset(&set("12-23"))), "on the nohz_full CPUs: {planned:?}");

    write(root.path(), "proc/sys/kernel/osrelease", "7.2.13-amd64\n");
    write(root.path(), "proc/cmdline", "root=/dev/sda1 isolcpus=io_queue,6-7\n");
    let (_, table, _) = irqwise(root.path(), cfg.path(), &["topology"]);
    assert!(
        table.contains("warning: isolcpus=io_queue,6-7: this kernel has no isolcpus=io_queue (no HK_TYPE_IO_QUEUE, by its version)"),
        "{table}"
    );
    assert!(table.contains("CPUs 6-7 get domain isolation only"), "{table}");
}
