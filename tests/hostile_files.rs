//! Hostile and quirky input: every file irqwise reads, as an attacker or an odd machine would
//! leave it. Each test runs the real binary under a harness deadline (`timeout`, so a regression
//! that hangs fails instead of hanging CI) and a 512 MB address-space limit (`ulimit -v`, so one
//! that allocates from a number in a file fails instead of eating the machine), and asserts the
//! exact outcome: the exit code, the warning or error naming the file, nothing written outside
//! the root, the rest of the plan unchanged.

#[path = "common/acceptance.rs"]
mod acceptance;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Output};

use acceptance::fixture::{FixtureRoot, NamingScheme};
use acceptance::*;
use serde_json::Value;

const NIC: &str = "0000:81:00.0";
const NVME: &str = "0000:82:00.0";
const CPU: &str = "sys/devices/system/cpu";
const NODE: &str = "sys/devices/system/node";

/// What one limited run of the binary did.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `irqwise --root ROOT --config CONFIG ARGS` under `timeout 60` and `ulimit -v 524288`: a hang
/// or a crash (a signal, an abort on a failed allocation) fails the test with what it printed.
fn run(root: &Path, config: &Path, args: &[&str]) -> Run {
    let bin = bin::BIN;
    let out: Output = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 524288; exec timeout 60 \"$@\"")
        .arg("sh")
        .arg(bin)
        .arg("--root")
        .arg(root)
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out.status.code().unwrap_or_else(|| panic!("irqwise {args:?} was killed by a signal:\n{stderr}"));
    assert_ne!(code, 124, "irqwise {args:?} did not finish within the deadline:\n{stderr}");
    assert!(!stderr.contains("memory allocation"), "irqwise {args:?} ran out of memory:\n{stderr}");
    assert!(code <= 2, "irqwise {args:?} exited {code} (a crash):\n{stdout}{stderr}");
    Run { code, stdout, stderr }
}

/// A 2-node, 32-CPU machine (6.1) with an 8-queue ice NIC on node 1 and a managed 4-queue NVMe
/// on node 0.
fn machine() -> tempfile::TempDir {
    let dir = two_node_root("6.1.0");
    FixtureRoot::at(dir.path()).nic(NIC, "ice", "eth0", Some(1), 8, NamingScheme::IceTxRx).nvme(
        NVME,
        "nvme0",
        Some(0),
        4,
        true,
        false,
    );
    dir
}

fn plan(root: &Path) -> (Value, String) {
    let cfg = empty_config();
    let r = run(root, cfg.path(), &["plan", "--json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    (serde_json::from_str(&r.stdout).unwrap(), r.stderr)
}

fn warnings(plan: &Value) -> Vec<String> {
    plan["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_string()).collect()
}

/// The warning that mentions every one of `needles`.
fn warning_with<'a>(all: &'a [String], needles: &[&str]) -> &'a String {
    all.iter()
        .find(|w| needles.iter().all(|n| w.contains(n)))
        .unwrap_or_else(|| panic!("no warning with {needles:?} in {all:#?}"))
}

/// Rewrites IRQ `irq`'s action name in both name sources.
fn rename_irq(root: &Path, irq: u32, name: &str) {
    fs::write(root.join(format!("sys/kernel/irq/{irq}/actions")), format!("{name}\n")).unwrap();
    let text = fs::read_to_string(root.join("proc/interrupts")).unwrap();
    let label = format!("{irq:>4}:");
    let out: Vec<String> = text
        .lines()
        .map(|l| match l.strip_prefix(&label) {
            Some(_) => format!("{}{name}", &l[..l.rfind("  ").unwrap() + 2]),
            None => l.to_string(),
        })
        .collect();
    fs::write(root.join("proc/interrupts"), out.join("\n") + "\n").unwrap();
}

fn device<'a>(plan: &'a Value, bdf: &str) -> &'a Value {
    acceptance::device(plan, bdf)
}

// 1. A number from an IRQ name sizes an allocation.
#[test]
fn a_huge_queue_index_in_an_irq_name_leaves_that_irq_alone() {
    for huge in ["4294967295", "100000000"] {
        let dir = machine();
        let (before, _) = plan(dir.path());
        let fx = FixtureRoot::at(dir.path());
        let _ = fx;
        let irq = before_irq(&before, NVME, 4);
        rename_irq(dir.path(), irq, &format!("nvme0q{huge}"));
        let (after, _) = plan(dir.path());
        let w = warnings(&after);
        warning_with(&w, &[NVME, &format!("irq {irq}"), "left alone"]);
        let p = irq_of(&after, NVME, irq);
        assert!(p["action"] == "skip" || p["action"] == "managed", "{p}");
        assert_eq!(device(&after, NIC)["irqs"], device(&before, NIC)["irqs"], "the NIC is planned as before");
        let cfg = empty_config();
        let applied = run(dir.path(), cfg.path(), &["apply"]);
        assert!(applied.code <= 1, "{}", applied.stderr);
    }
}

/// The IRQ number of vector `index` of `bdf` in a plan.
fn before_irq(plan: &Value, bdf: &str, index: usize) -> u32 {
    device(plan, bdf)["irqs"][index]["irq"].as_u64().unwrap() as u32
}

fn irq_of<'a>(plan: &'a Value, bdf: &str, irq: u32) -> &'a Value {
    device(plan, bdf)["irqs"].as_array().unwrap().iter().find(|p| p["irq"] == irq).unwrap()
}

// 2. apply writes through symlinks to files outside the root.
#[test]
fn apply_never_writes_through_a_symlink_out_of_the_root() {
    let dir = machine();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    fs::create_dir(outside.path().join("irqdir")).unwrap();
    fs::write(outside.path().join("irqdir/smp_affinity_list"), "precious\n").unwrap();
    fs::write(outside.path().join("irqdir/smp_affinity"), "precious\n").unwrap();
    let (before, _) = plan(dir.path());
    let (linked_file, linked_dir) = (before_irq(&before, NIC, 1), before_irq(&before, NIC, 2));
    let file = dir.path().join(format!("proc/irq/{linked_file}/smp_affinity_list"));
    fs::remove_file(&file).unwrap();
    symlink(&victim, &file).unwrap();
    let irqdir = dir.path().join(format!("proc/irq/{linked_dir}"));
    fs::remove_dir_all(&irqdir).unwrap();
    symlink(outside.path().join("irqdir"), &irqdir).unwrap();

    let cfg = empty_config();
    let r = run(dir.path(), cfg.path(), &["apply", "--json"]);
    assert_eq!(r.code, 1, "the refused writes are failures: {}", r.stdout);
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(fs::read_to_string(outside.path().join("irqdir/smp_affinity_list")).unwrap(), "precious\n");
    let report: Value = serde_json::from_str(&r.stdout).unwrap();
    let change = |irq: u32| report["changes"].as_array().unwrap().iter().find(|c| c["irq"] == irq).cloned();
    let c = change(linked_file).expect("the linked file was planned (its current mask is unreadable)");
    assert_eq!((c["result"].as_str(), c["class"].as_str()), (Some("failed"), Some("invalid")), "{c}");
    // The linked directory resolves to nothing inside the root: not requested, so not planned.
    assert!(change(linked_dir).is_none_or(|c| c["class"] == "invalid"), "{report:#}");
    let written = report["changes"].as_array().unwrap().iter().filter(|c| c["result"] == "written").count();
    assert!(written >= 7, "the other NIC vectors are still written: {report:#}");
}

// 3. Real machines refused outright.
#[test]
fn a_node_cpulist_with_a_trailing_nul_after_the_newline_reads() {
    let dir = tempfile::tempdir().unwrap();
    acceptance::fixture::write_cpu_topology(dir.path(), 1, 16, 2);
    fs::write(dir.path().join(NODE).join("node0/cpulist"), "0-31\n\0").unwrap();
    let cfg = empty_config();
    let r = run(dir.path(), cfg.path(), &["topology", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let topo: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(set_of(&topo["nodes"][0]["cpus"]), cpus("0-31"), "the 32 CPUs of node 0 are on node 0");
    assert!(topo["warnings"].as_array().unwrap().is_empty(), "{}", topo["warnings"]);
}

#[test]
fn node_0_offline_with_a_distance_row_per_possible_node_reads() {
    let dir = tempfile::tempdir().unwrap();
    acceptance::fixture::write_cpu_topology(dir.path(), 2, 2, 1);
    let node = dir.path().join(NODE);
    fs::remove_dir_all(node.join("node0")).unwrap();
    fs::write(node.join("online"), "1\n").unwrap();
    fs::write(node.join("possible"), "0-1\n").unwrap();
    fs::write(node.join("node1/distance"), "21 10\n").unwrap();
    for cpu in 0..2 {
        let _ = fs::remove_dir_all(dir.path().join(CPU).join(format!("cpu{cpu}/node0")));
    }
    let cfg = empty_config();
    let r = run(dir.path(), cfg.path(), &["topology", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let topo: Value = serde_json::from_str(&r.stdout).unwrap();
    let nodes = topo["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1, "{topo:#}");
    assert_eq!((nodes[0]["node"].as_u64(), set_of(&nodes[0]["cpus"])), (Some(1), cpus("2-3")));
    assert_eq!(nodes[0]["distance"], serde_json::json!([10]), "its own entry of the row, by node id");
    let r = run(dir.path(), cfg.path(), &["plan"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

// 4. A huge NUMA node id sizes an allocation.
#[test]
fn a_huge_node_directory_is_ignored() {
    for id in ["4294967295", "100000000", "1024"] {
        let dir = machine();
        let (before, _) = plan(dir.path());
        fs::create_dir_all(dir.path().join(NODE).join(format!("node{id}"))).unwrap();
        fs::write(dir.path().join(NODE).join(format!("node{id}/cpulist")), "0\n").unwrap();
        let (after, _) = plan(dir.path());
        warning_with(&warnings(&after), &[&format!("node{id}"), "1024"]);
        assert_eq!(after["devices"], before["devices"], "node{id}: the plan is unchanged");
    }
}

#[test]
fn a_huge_numa_node_of_a_device_is_ignored() {
    let dir = machine();
    let (before, _) = plan(dir.path());
    fs::write(dir.path().join(format!("sys/bus/pci/devices/{NIC}/numa_node")), "4294967295\n").unwrap();
    let (after, _) = plan(dir.path());
    warning_with(&warnings(&after), &[NIC, "numa_node", "4294967295"]);
    assert_eq!(device(&after, NIC)["node"], 1, "from local_cpulist");
    assert_eq!(device(&after, NIC)["irqs"], device(&before, NIC)["irqs"]);
}

// 5. FIFOs hang forever.
fn mkfifo(path: &Path) {
    let _ = fs::remove_file(path);
    let ok = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(ok.success());
}

#[test]
fn a_fifo_in_place_of_cpu_online_is_refused_without_blocking() {
    let dir = machine();
    mkfifo(&dir.path().join(CPU).join("online"));
    let (p, _) = plan(dir.path());
    warning_with(&warnings(&p), &["cpu/online", "FIFO"]);
}

#[test]
fn a_fifo_in_place_of_an_affinity_file_is_refused_without_blocking() {
    let dir = machine();
    let (before, _) = plan(dir.path());
    let irq = before_irq(&before, NIC, 1);
    mkfifo(&dir.path().join(format!("proc/irq/{irq}/smp_affinity_list")));
    let (p, _) = plan(dir.path());
    warning_with(&warnings(&p), &[&format!("proc/irq/{irq}/smp_affinity_list"), "FIFO"]);
    let cfg = empty_config();
    let r = run(dir.path(), cfg.path(), &["apply", "--json"]);
    assert_eq!(r.code, 1);
    let report: Value = serde_json::from_str(&r.stdout).unwrap();
    let c = report["changes"].as_array().unwrap().iter().find(|c| c["irq"] == irq).unwrap();
    assert_eq!(c["class"], "invalid", "{c}");
    assert!(c["error"].as_str().unwrap().contains("FIFO"), "{c}");
}

#[test]
fn a_fifo_config_drop_in_is_an_error_not_a_hang() {
    let dir = machine();
    let cfg = tempfile::tempdir().unwrap();
    fs::create_dir_all(cfg.path().join("etc/irqwise/conf.d")).unwrap();
    let fifo = cfg.path().join("etc/irqwise/conf.d/50-fifo.toml");
    mkfifo(&fifo);
    let r = run(dir.path(), cfg.path(), &["check-config"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!((r.stdout.clone() + &r.stderr).contains("50-fifo.toml") && (r.stdout + &r.stderr).contains("FIFO"));
}

// 6. Unbounded reads.
#[test]
fn oversized_files_are_refused_by_size() {
    let dir = machine();
    let (before, _) = plan(dir.path());
    // A 3 MiB PCI class and NVMe model, a 600 MB (sparse) /proc/interrupts with no
    // sys/kernel/irq: each refused before it is read into memory.
    fs::write(dir.path().join(format!("sys/bus/pci/devices/{NIC}/class")), "0".repeat(3 << 20)).unwrap();
    let model = dir.path().join(format!("sys/devices/pci0000:82/{NVME}/nvme/nvme0/model"));
    fs::write(&model, "M".repeat(3 << 20)).unwrap();
    fs::remove_dir_all(dir.path().join("sys/kernel/irq")).unwrap();
    let f = fs::OpenOptions::new().write(true).open(dir.path().join("proc/interrupts")).unwrap();
    f.set_len(600 << 20).unwrap();
    let (after, _) = plan(dir.path());
    let w = warnings(&after);
    warning_with(&w, &[NIC, "class", "longer than"]);
    warning_with(&w, &["nvme0/model", "longer than"]);
    warning_with(&w, &["proc/interrupts", "longer than"]);
    assert!(after["devices"].as_array().unwrap().iter().all(|d| d["bdf"] != NIC), "the NIC without a class is out");
    assert_eq!(device(&after, NVME)["node"], device(&before, NVME)["node"]);
}

#[test]
fn an_oversized_config_file_and_state_file_are_refused_by_size() {
    let dir = machine();
    let cfg = tempfile::tempdir().unwrap();
    let big = cfg.path().join("etc/irqwise/conf.d/50-big.toml");
    fs::create_dir_all(big.parent().unwrap()).unwrap();
    fs::OpenOptions::new().create(true).truncate(true).write(true).open(&big).unwrap().set_len(1 << 30).unwrap();
    let r = run(dir.path(), cfg.path(), &["check-config"]);
    assert_eq!(r.code, 2);
    assert!((r.stdout.clone() + &r.stderr).contains("longer than"), "{}{}", r.stdout, r.stderr);
    let state = dir.path().join("run/irqwise/state.json");
    fs::create_dir_all(state.parent().unwrap()).unwrap();
    fs::OpenOptions::new().create(true).truncate(true).write(true).open(&state).unwrap().set_len(1 << 30).unwrap();
    let empty = empty_config();
    let r = run(dir.path(), empty.path(), &["status"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("state.json") && r.stderr.contains("longer than"), "{}", r.stderr);
}

// 7. Quadratic config validation.
#[test]
fn twenty_thousand_rules_validate_within_the_deadline() {
    let dir = machine();
    let mut text = String::from("[global]\nbanned_cpus = \"0\"\n");
    for i in 0..20_000u32 {
        text.push_str(&format!(
            "[[device]]\nmatch = {{ pci = \"0000:{:02x}:{:02x}.{}\" }}\nstrategy = \"leave\"\n\n",
            i / 2048,
            (i / 8) % 256,
            i % 8
        ));
    }
    text.push_str("[[device]]\nmatch = { pci = \"*\" }\nqueues_per_cpu = 0\n");
    let cfg = config_with(&text);
    let r = run(dir.path(), cfg.path(), &["check-config"]);
    assert_eq!(r.code, 2);
    assert!((r.stdout + &r.stderr).contains(":80005:18: queues_per_cpu = 0"), "the one error, located");
}

// 8. spread groups sizes an allocation from the command line.
#[test]
fn a_huge_group_count_is_a_usage_error() {
    let dir = machine();
    let cfg = empty_config();
    for n in ["4294967295", "100000000", "8193"] {
        let r = run(dir.path(), cfg.path(), &["spread", "groups", "--groups", n]);
        assert_eq!(r.code, 2, "{n}: {}", r.stderr);
        assert!(r.stderr.contains(&format!("--groups {n}")) && r.stderr.contains("8192"), "{}", r.stderr);
    }
    let r = run(dir.path(), cfg.path(), &["spread", "groups", "--groups", "8192"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

// 9. Control characters reach the terminal.
#[test]
fn control_characters_in_names_are_escaped_in_every_output() {
    let dir = machine();
    let (before, _) = plan(dir.path());
    let irq = before_irq(&before, NIC, 0);
    rename_irq(dir.path(), irq, "ice-\x1b]0;owned\x07-misc\x01");
    let ifdir = dir.path().join(format!("sys/devices/pci0000:81/{NIC}/net"));
    fs::rename(ifdir.join("eth0"), ifdir.join("eth\x1b[2J0")).unwrap();
    let cfg = empty_config();
    for args in [&["plan"][..], &["apply", "--dry-run"][..], &["apply"][..]] {
        let r = run(dir.path(), cfg.path(), args);
        for (what, text) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
            assert!(
                !text.contains('\x1b') && !text.contains('\x07') && !text.contains('\x01'),
                "{args:?} {what}: {text:?}"
            );
        }
        if args == ["plan"] {
            assert!(r.stdout.contains("\\x1b]0;owned\\x07") && r.stdout.contains("eth\\x1b[2J0"), "{}", r.stdout);
        }
    }
    let r = run(dir.path(), cfg.path(), &["plan", "--json"]);
    assert!(!r.stdout.contains('\x1b'), "JSON escapes them itself");
}

// 10. Inconsistent sysfs accepted silently.
#[test]
fn contradictory_topology_files_are_warnings_naming_both() {
    let dir = machine();
    let node = dir.path().join(NODE);
    fs::write(node.join("node0/cpulist"), "0-7,16-23,8\n").unwrap(); // CPU 8 is node 1's too
    fs::remove_file(node.join("node1/distance")).unwrap();
    fs::write(dir.path().join(CPU).join("cpu5/topology/core_cpus_list"), "21\n").unwrap();
    let (p, _) = plan(dir.path());
    let w = warnings(&p);
    warning_with(&w, &["node0/cpulist", "node1/cpulist", "CPUs 8", "lowest node"]);
    warning_with(&w, &["node1/distance", "missing", "default"]);
    warning_with(&w, &["cpu5/topology/core_cpus_list", "does not hold CPU 5"]);
}

#[test]
fn an_empty_proc_interrupts_leaves_nic_vectors_alone_instead_of_widening_them() {
    let dir = machine();
    fs::remove_dir_all(dir.path().join("sys/kernel/irq")).unwrap();
    fs::write(dir.path().join("proc/interrupts"), "").unwrap();
    let (p, _) = plan(dir.path());
    warning_with(&warnings(&p), &["proc/interrupts", "names no IRQ"]);
    for irq in device(&p, NIC)["irqs"].as_array().unwrap() {
        assert_eq!(irq["action"], "skip", "never widened to the node: {irq}");
    }
}

#[test]
fn a_duplicated_irq_line_is_a_warning_and_the_first_line_wins() {
    let dir = machine();
    let (before, _) = plan(dir.path());
    fs::remove_dir_all(dir.path().join("sys/kernel/irq")).unwrap();
    let irq = before_irq(&before, NIC, 3);
    let text = fs::read_to_string(dir.path().join("proc/interrupts")).unwrap();
    let line = text.lines().find(|l| l.starts_with(&format!("{irq:>4}:"))).unwrap().replace("TxRx-2", "TxRx-9");
    fs::write(dir.path().join("proc/interrupts"), format!("{text}{line}\n")).unwrap();
    let (p, _) = plan(dir.path());
    warning_with(&warnings(&p), &["proc/interrupts", "listed twice"]);
    assert_eq!(device(&p, NIC)["irqs"], device(&before, NIC)["irqs"]);
}

#[test]
fn an_empty_online_list_is_a_warning_and_each_cpu_decides() {
    let dir = machine();
    let (before, _) = plan(dir.path());
    fs::write(dir.path().join(CPU).join("online"), "\n").unwrap();
    let (p, _) = plan(dir.path());
    warning_with(&warnings(&p), &["cpu/online", "empty"]);
    assert_eq!(p["devices"], before["devices"], "every cpuN/online says 1");
}

// 11. reconcile_interval = "1ms" is accepted.
#[test]
fn durations_out_of_range_are_config_errors() {
    let dir = machine();
    for (text, needle) in [
        ("[global]\nreconcile_interval = \"1ms\"\n", "50-test.toml:2:22: reconcile_interval = \"1ms\""),
        ("[global]\ndebounce = \"1h\"\n", "50-test.toml:2:12: debounce = \"1h\""),
    ] {
        let cfg = config_with(text);
        let r = run(dir.path(), cfg.path(), &["check-config"]);
        assert_eq!(r.code, 2);
        assert!((r.stdout + &r.stderr).contains(needle), "{needle}");
    }
}

#[test]
fn non_utf8_config_names_line_and_column_and_huge_integers_the_real_limit() {
    let dir = machine();
    let cfg = tempfile::tempdir().unwrap();
    let f = cfg.path().join("etc/irqwise/conf.d/50-test.toml");
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    fs::write(&f, b"[global]\nbanned_cpus = \"0\xff\"\n").unwrap();
    let r = run(dir.path(), cfg.path(), &["check-config"]);
    assert_eq!(r.code, 2);
    assert!((r.stdout + &r.stderr).contains("50-test.toml:2:17: byte 0xff is not UTF-8"));
    for (text, needle) in [
        ("[[device]]\nmatch = { pci = \"*\" }\nnode = 99999999999\n", "at most 4294967295"),
        ("[[device]]\nmatch = { pci = \"*\" }\nnode = 5000\n", "node id from 0 to 1023"),
    ] {
        let cfg = config_with(text);
        let r = run(dir.path(), cfg.path(), &["check-config"]);
        assert_eq!(r.code, 2);
        assert!((r.stdout + &r.stderr).contains(needle), "{needle}");
    }
}

// 12. snapshot follows symlinks out of the source.
#[test]
fn snapshot_never_copies_what_a_link_out_of_the_source_points_to() {
    let dir = machine();
    let vendor = dir.path().join(format!("sys/devices/pci0000:81/{NIC}/vendor"));
    fs::remove_file(&vendor).unwrap();
    symlink("/etc/passwd", &vendor).unwrap();
    let out = tempfile::tempdir().unwrap();
    let snap = out.path().join("snap");
    let cfg = empty_config();
    let r = run(dir.path(), cfg.path(), &["snapshot", snap.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let passwd = fs::read("/etc/passwd").unwrap();
    let copied = fs::read(snap.join(format!("sys/bus/pci/devices/{NIC}/vendor")));
    assert!(copied.map_or(true, |c| c != passwd), "the host's /etc/passwd was copied");
    let (original, _) = plan(dir.path());
    let (copy, _) = plan(&snap);
    assert_eq!(copy["devices"], original["devices"]);
}

// 13. Crash leftovers.
#[test]
fn a_crashed_runs_temporary_state_file_is_removed_and_the_state_is_world_readable() {
    let dir = machine();
    let run_dir = dir.path().join("run/irqwise");
    fs::create_dir_all(&run_dir).unwrap();
    fs::write(run_dir.join(".state.json.4194305"), "{half").unwrap();
    let cfg = empty_config();
    let r = run(dir.path(), cfg.path(), &["--log-format", "text", "run", "--once"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut names: Vec<String> =
        fs::read_dir(&run_dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    // The instance lock stays (removing it on exit would race with the next daemon's open).
    assert_eq!(names, ["lock", "originals.json", "state.json", "topology.json"], "no temporary file left");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(fs::metadata(run_dir.join("state.json")).unwrap().permissions().mode() & 0o777, 0o644);
}
