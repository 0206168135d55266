//! Acceptance: every match key and every setting changes the plan of the real binary
//! (`--root FIXTURE --config DIR`) as `config/irqwise.toml` documents; `plan` names the deciding
//! rules and warns about rules matching nothing; the shipped config and examples pass
//! `check-config`, an invalid file fails it with exit 2 and `file:line:column`.

#[path = "common/acceptance.rs"]
mod acceptance;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use acceptance::fixture::{write_cpu_topology, FixtureRoot, NamingScheme};
use acceptance::*;
use irqwise::cpuset::CpuSet;
use serde_json::Value;

const NIC_A: &str = "0000:81:00.0"; // ice, eth0, node 1, 8 queues
const NIC_B: &str = "0000:41:00.0"; // mlx5_core, ens1, node 0, 4 queues
const NVME_A: &str = "0000:82:00.0"; // nvme driver, node 0, model "Fixture NVMe SSD"
const NVME_B: &str = "0000:83:00.0"; // nvme driver, node 1, model "Other Model 9000"
const NVME_C: &str = "0000:84:00.0"; // NVMe class, another driver: movable I/O IRQs
const OTHER: &str = "0000:00:14.0"; // xHCI, class other

/// The 2-node, 32-CPU machine (kernel 6.11: managed IRQs writable by mode) with every
/// kind of device the rules can match.
fn machine() -> tempfile::TempDir {
    let dir = two_node_root("6.11.0");
    add_devices(dir.path());
    dir
}

/// The devices of [`machine`], written into any root with at least 2 nodes.
fn add_devices(root: &Path) {
    FixtureRoot::at(root)
        .nic(NIC_A, "ice", "eth0", Some(1), 8, NamingScheme::IceTxRx)
        .nic(NIC_B, "mlx5_core", "ens1", Some(0), 4, NamingScheme::Mlx5)
        .nvme(NVME_A, "nvme0", Some(0), 4, true, false)
        .nvme(NVME_B, "nvme1", Some(1), 4, true, false)
        .msi_device(NVME_C, 0x010802, "nvme_vendor", Some(1), &["nvme2q0", "nvme2q1", "nvme2q2", "nvme2q3", "nvme2q4"])
        .msi_device(OTHER, 0x0c0330, "xhci_hcd", Some(0), &["xhci_hcd"]);
    fs::write(root.join(format!("sys/devices/pci0000:83/{NVME_B}/nvme/nvme1/model")), "Other Model 9000    \n")
        .unwrap();
}

/// The plan with `toml` as the only drop-in, and that drop-in's path.
fn plan_with(root: &Path, toml: &str) -> (Value, String) {
    let config = config_with(toml);
    let path = config.path().join("etc/irqwise/conf.d/50-test.toml").display().to_string();
    (plan_json(root, config.path()), path)
}

/// Asserts that `bdf` is planned exactly as without any config (rules aside).
fn unchanged(plan: &Value, baseline: &Value, bdf: &str) {
    assert_eq!(device(plan, bdf)["irqs"], device(baseline, bdf)["irqs"], "{bdf} must not change");
    assert_eq!(device(plan, bdf)["strategy"], device(baseline, bdf)["strategy"], "{bdf}");
}

fn changed(plan: &Value, baseline: &Value, bdf: &str) {
    assert_ne!(device(plan, bdf)["irqs"], device(baseline, bdf)["irqs"], "{bdf} must change");
}

fn single_cpus(dev: &Value) -> Vec<u32> {
    desired_per_queue(dev)
        .iter()
        .map(|s| {
            assert_eq!(s.len(), 1, "{s}");
            s.first().unwrap()
        })
        .collect()
}

fn role_desired(dev: &Value, role: &str) -> Vec<CpuSet> {
    irqs(dev).iter().filter(|p| p["role"] == role).map(|p| set_of(&p["desired"])).collect()
}

fn all_desired(dev: &Value) -> CpuSet {
    irqs(dev).iter().filter(|p| !p["desired"].is_null()).fold(CpuSet::new(), |acc, p| acc.union(&set_of(&p["desired"])))
}

fn distinct_cores(root: &Path, cpus: &[u32]) -> usize {
    cpus.iter().map(|&c| core_of(root, c).to_list_string()).collect::<BTreeSet<_>>().len()
}

#[test]
fn match_pci_glob_and_strategy_leave() {
    let dir = machine();
    let baseline = plan_json(dir.path(), empty_config().path());
    let (plan, path) = plan_with(dir.path(), "[[device]]\nmatch = { pci = \"0000:8[1-2]:*\" }\nstrategy = \"leave\"\n");
    for bdf in [NIC_A, NVME_A] {
        let dev = device(&plan, bdf);
        assert_eq!(dev["strategy"], "leave");
        assert_eq!(dev["rules"], serde_json::json!([format!("{path}:1")]));
        assert!(!irqs(dev).is_empty(), "{dev}");
        assert!(irqs(dev).iter().all(|p| p["action"] == "skip" && p["desired"].is_null()), "{dev}");
    }
    for bdf in [NIC_B, NVME_B, NVME_C, OTHER] {
        unchanged(&plan, &baseline, bdf);
        assert_eq!(device(&plan, bdf)["rules"], serde_json::json!([]));
    }
}

#[test]
fn match_driver_and_allowed_cpus() {
    let dir = machine();
    let baseline = plan_json(dir.path(), empty_config().path());
    let (plan, _) = plan_with(dir.path(), "[[device]]\nmatch = { driver = \"mlx5_core\" }\ncpus = \"2-3\"\n");
    let nic = device(&plan, NIC_B);
    // Queue i → the i-th allowed CPU, wrapping: 2, 3, 2, 3; the async vector on both.
    assert_eq!(single_cpus(nic), [2, 3, 2, 3]);
    assert_eq!(role_desired(nic, "misc"), [cpus("2-3")]);
    for bdf in [NIC_A, NVME_A, NVME_B, NVME_C, OTHER] {
        unchanged(&plan, &baseline, bdf);
    }
}

#[test]
fn match_interface_glob_and_node_override() {
    let dir = machine();
    let root = dir.path();
    let baseline = plan_json(root, empty_config().path());
    let (plan, _) = plan_with(root, "[[device]]\nmatch = { interface = \"eth*\" }\nnode = 0\n");
    let nic = device(&plan, NIC_A);
    assert_eq!(nic["node"], 0);
    let chosen = single_cpus(nic);
    let node0 = node_cpus(root, 0);
    assert!(chosen.iter().all(|&c| node0.contains(c)), "{chosen:?}");
    assert_eq!(distinct_cores(root, &chosen), 8);
    assert_eq!(role_desired(nic, "misc"), [node0]);
    for bdf in [NIC_B, NVME_A, NVME_B, NVME_C, OTHER] {
        unchanged(&plan, &baseline, bdf);
    }
}

#[test]
fn match_class_and_strategy_pin() {
    let dir = machine();
    let baseline = plan_json(dir.path(), empty_config().path());
    let (plan, _) =
        plan_with(dir.path(), "[[device]]\nmatch = { class = \"other\" }\nstrategy = \"pin\"\ncpus = \"3\"\n");
    let usb = device(&plan, OTHER);
    assert_eq!(device(&baseline, OTHER)["strategy"], "leave", "class default for other devices");
    assert_eq!(usb["strategy"], "pin");
    assert_eq!(role_desired(usb, "misc"), [cpus("3")]);
    assert_eq!(irqs(usb)[0]["action"], "set");
    for bdf in [NIC_A, NIC_B, NVME_A, NVME_B, NVME_C] {
        unchanged(&plan, &baseline, bdf);
    }
    // pin on a NIC: every IRQ on the set, queues and misc alike.
    let (plan, _) =
        plan_with(dir.path(), "[[device]]\nmatch = { class = \"nic\" }\nstrategy = \"pin\"\ncpus = \"4-5\"\n");
    for bdf in [NIC_A, NIC_B] {
        assert!(!irqs(device(&plan, bdf)).is_empty(), "{bdf}");
        assert!(irqs(device(&plan, bdf)).iter().all(|p| set_of(&p["desired"]) == cpus("4-5")));
    }
}

#[test]
fn match_nvme_model_and_serial_with_admin_cpus() {
    let dir = machine();
    let baseline = plan_json(dir.path(), empty_config().path());
    let (plan, _) =
        plan_with(dir.path(), "[[device]]\nmatch = { nvme_model = \"Other Model*\" }\nadmin_cpus = \"5\"\n");
    assert_eq!(role_desired(device(&plan, NVME_B), "admin"), [cpus("5")]);
    assert_eq!(role_desired(device(&baseline, NVME_B), "admin"), [node_cpus(dir.path(), 1)]);
    for bdf in [NIC_A, NIC_B, NVME_A, NVME_C, OTHER] {
        unchanged(&plan, &baseline, bdf);
    }
    // The fixture's serial of 0000:82:00.0 is "FIX00008200.0" (padded with spaces).
    let (plan, _) =
        plan_with(dir.path(), "[[device]]\nmatch = { nvme_serial = \"FIX00008200.0\" }\nadmin_cpus = \"6\"\n");
    assert_eq!(role_desired(device(&plan, NVME_A), "admin"), [cpus("6")]);
    // The I/O queues stay kernel-managed predictions.
    assert_eq!(irqs(device(&plan, NVME_A))[1..], irqs(device(&baseline, NVME_A))[1..]);
    for bdf in [NIC_A, NIC_B, NVME_B, NVME_C, OTHER] {
        unchanged(&plan, &baseline, bdf);
    }
}

#[test]
fn strategy_numa_hop_and_cluster_group_override_the_class_defaults() {
    let dir = machine();
    let root = dir.path();
    let baseline = plan_json(root, empty_config().path());
    // The movable NVMe: numa-hop gives one CPU per I/O queue, cores of node 1 first.
    let (plan, _) = plan_with(root, "[[device]]\nmatch = { driver = \"nvme_vendor\" }\nstrategy = \"numa-hop\"\n");
    let nvme = device(&plan, NVME_C);
    let chosen = single_cpus(nvme);
    assert_eq!(chosen.len(), 4);
    assert!(chosen.iter().all(|&c| node_cpus(root, 1).contains(c)));
    assert_eq!(distinct_cores(root, &chosen), 4);
    changed(&plan, &baseline, NVME_C);
    // A NIC under cluster-group: queue i → group i of the kernel's 8 groups. On 2 nodes of 8
    // two-thread cores without clusters, group_cpus_evenly(8) gives each node 4 groups of 4
    // CPUs: its cores two by two in order of their first CPU, node 1's groups first (the
    // kernel's heapsort of two equal nodes puts the second first: golden vector t02, two equal
    // sockets, 4 and 8 groups); read here from the fixture's own files.
    let (plan, _) = plan_with(root, "[[device]]\nmatch = { driver = \"ice\" }\nstrategy = \"cluster-group\"\n");
    let mut groups = Vec::new();
    for node in [1, 0] {
        let mut cores: Vec<CpuSet> = node_cpus(root, node).iter().map(|c| core_of(root, c)).collect();
        cores.sort_by_key(CpuSet::first);
        cores.dedup();
        assert_eq!(cores.len(), 8);
        groups.extend(cores.chunks(2).map(|two| two[0].union(&two[1])));
    }
    assert_eq!(desired_per_queue(device(&plan, NIC_A)), groups);
}

#[test]
fn nvme_driver_io_queues_stay_managed_under_any_strategy() {
    let dir = machine();
    let baseline = plan_json(dir.path(), empty_config().path());
    for strategy in ["numa-hop", "pin"] {
        let toml = format!("[[device]]\nmatch = {{ driver = \"nvme\" }}\nstrategy = \"{strategy}\"\ncpus = \"0-3\"\n");
        let (plan, _) = plan_with(dir.path(), &toml);
        for bdf in [NVME_A, NVME_B] {
            let io: Vec<&Value> = queue_irqs(device(&plan, bdf), Some("io"));
            let base: Vec<&Value> = queue_irqs(device(&baseline, bdf), Some("io"));
            assert_eq!(io.len(), 4);
            for (p, b) in io.iter().zip(&base) {
                assert_eq!(p["action"], "managed", "{strategy}: the nvme driver's I/O IRQs cannot be moved: {p}");
                assert_eq!(p["desired"], b["desired"], "{strategy}: still the kernel's prediction");
            }
            // The admin queue is an ordinary IRQ and follows the strategy.
            assert!(role_desired(device(&plan, bdf), "admin")[0].is_subset(&cpus("0-3")));
        }
    }
}

#[test]
fn pin_honours_admin_cpus_for_non_queue_irqs() {
    let dir = machine();
    let (plan, _) = plan_with(
        dir.path(),
        "[[device]]\nmatch = { driver = \"nvme_vendor\" }\nstrategy = \"pin\"\ncpus = \"2-3\"\nadmin_cpus = \"0\"\n",
    );
    let nvme = device(&plan, NVME_C);
    assert_eq!(role_desired(nvme, "admin"), [cpus("0")]);
    assert!(!role_desired(nvme, "io").is_empty());
    assert!(role_desired(nvme, "io").iter().all(|s| *s == cpus("2-3")));
}

#[test]
fn exclude_cpus_and_global_banned_cpus() {
    let dir = machine();
    let root = dir.path();
    let baseline = plan_json(root, empty_config().path());
    let (plan, _) = plan_with(root, "[[device]]\nmatch = { driver = \"ice\" }\nexclude_cpus = \"8-11\"\n");
    let nic = device(&plan, NIC_A);
    let chosen = single_cpus(nic);
    assert!(chosen.iter().all(|&c| !(8..=11).contains(&c) && node_cpus(root, 1).contains(c)), "{chosen:?}");
    assert_eq!(distinct_cores(root, &chosen), 8, "still one per core: the cores' other threads are used");
    assert_eq!(role_desired(nic, "misc"), [node_cpus(root, 1).difference(&cpus("8-11"))]);
    for bdf in [NIC_B, NVME_A, NVME_B, NVME_C, OTHER] {
        unchanged(&plan, &baseline, bdf);
    }
    // banned_cpus: no movable IRQ of any device lands there.
    let (plan, _) = plan_with(root, "[global]\nbanned_cpus = \"0-1,8-9\"\n");
    let banned = cpus("0-1,8-9");
    for bdf in [NIC_A, NIC_B, NVME_C] {
        let dev = device(&plan, bdf);
        assert!(!all_desired(dev).intersects(&banned), "{bdf}: {}", all_desired(dev));
        changed(&plan, &baseline, bdf);
    }
    for bdf in [NVME_A, NVME_B] {
        assert!(!role_desired(device(&plan, bdf), "admin")[0].intersects(&banned));
    }
}

#[test]
fn respect_isolation_false_lets_device_irqs_onto_isolated_cpus() {
    let dir = machine();
    let root = dir.path();
    write_file(root, "sys/devices/system/cpu/isolated", "8-11\n");
    let isolated = cpus("8-11");
    let default = plan_json(root, empty_config().path());
    assert!(!all_desired(device(&default, NIC_A)).intersects(&isolated));
    let (plan, _) = plan_with(root, "[global]\nrespect_isolation = false\n");
    let chosen = single_cpus(device(&plan, NIC_A));
    assert!(isolated.iter().all(|c| chosen.contains(&c)), "node 1's first cores again: {chosen:?}");
}

/// One node of 4 cores × 2 threads whose siblings are adjacent (0-1, 2-3, ...), so the kernel's
/// ascending order and cores-first order differ.
fn adjacent_siblings_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_cpu_topology(root, 1, 8, 1);
    for cpu in 0..8u32 {
        let pair = format!("{}-{}\n", cpu & !1, cpu | 1);
        for f in ["core_cpus_list", "thread_siblings_list", "cluster_cpus_list"] {
            write_file(root, &format!("sys/devices/system/cpu/cpu{cpu}/topology/{f}"), &pair);
        }
    }
    write_file(root, "proc/sys/kernel/osrelease", "6.11.0\n");
    FixtureRoot::at(root).nic(NIC_A, "ice", "eth0", Some(0), 4, NamingScheme::IceTxRx);
    dir
}

#[test]
fn order_kernel_versus_cores_first() {
    let dir = adjacent_siblings_root();
    let root = dir.path();
    let default = single_cpus(device(&plan_json(root, empty_config().path()), NIC_A));
    assert_eq!(distinct_cores(root, &default), 4, "cores-first by default: {default:?}");
    let (plan, _) = plan_with(root, "[[device]]\nmatch = { class = \"nic\" }\norder = \"kernel\"\n");
    let kernel = single_cpus(device(&plan, NIC_A));
    assert_eq!(kernel, [0, 1, 2, 3], "cpumask_local_spread(i, 0) on one node is the i-th CPU");
    let (plan, _) = plan_with(root, "[[device]]\nmatch = { class = \"nic\" }\norder = \"cores-first\"\n");
    assert_eq!(single_cpus(device(&plan, NIC_A)), default);
}

#[test]
fn queues_per_cpu_spreads_over_fewer_cpus() {
    let dir = machine();
    let root = dir.path();
    let (plan, _) = plan_with(root, "[[device]]\nmatch = { driver = \"ice\" }\nqueues_per_cpu = 2\n");
    let chosen = single_cpus(device(&plan, NIC_A));
    for pair in chosen.chunks(2) {
        assert_eq!(pair[0], pair[1], "queues 2k and 2k+1 share a CPU: {chosen:?}");
    }
    let used: Vec<u32> = chosen.iter().step_by(2).copied().collect();
    assert_eq!(distinct_cores(root, &used), 4);
    assert!(used.iter().all(|&c| node_cpus(root, 1).contains(c)));
}

#[test]
fn later_rules_override_key_by_key_and_plan_names_every_deciding_rule() {
    let dir = machine();
    let root = dir.path();
    let toml = "[[device]]\nmatch = { class = \"nic\" }\ncpus = \"16-19\"\nqueues_per_cpu = 2\n\n\
                [[device]]\nmatch = { driver = \"ice\" }\ncpus = \"20-23\"\n\n\
                [[device]]\nmatch = { driver = \"no-such-driver\" }\nstrategy = \"leave\"\n";
    let (plan, path) = plan_with(root, toml);
    let nic = device(&plan, NIC_A);
    assert_eq!(nic["rules"], serde_json::json!([format!("{path}:1"), format!("{path}:6")]));
    // cpus from the second rule, queues_per_cpu kept from the first.
    assert_eq!(single_cpus(nic), [20, 20, 21, 21, 22, 22, 23, 23]);
    assert_eq!(device(&plan, NIC_B)["rules"], serde_json::json!([format!("{path}:1")]));
    let warnings: Vec<&str> = plan["warnings"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(warnings.contains(&format!("rule at {path}:10 matches no device").as_str()), "{warnings:?}");
    // The table says the same.
    let config = config_with(toml);
    let path = config.path().join("etc/irqwise/conf.d/50-test.toml").display().to_string();
    let table = run_ok(root, config.path(), &["plan"]);
    let header = table.lines().find(|l| l.starts_with(NIC_A)).unwrap();
    assert!(header.ends_with(&format!("rules {path}:1, {path}:6")), "{header}");
    assert!(table.contains(&format!("warning: rule at {path}:10 matches no device")), "{table}");
}

/// A 64-CPU, 2-node root (16 cores × 2 threads per node) for config validation.
fn root_64() -> tempfile::TempDir {
    cpu_root(2, 16, 2, "6.11.0")
}

fn shipped(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

#[test]
fn shipped_config_and_examples_pass_check_config() {
    let root = root_64();
    let examples: Vec<_> = fs::read_dir(shipped("config/conf.d"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".toml.example"))
        .collect();
    assert_eq!(examples.len(), 3, "{examples:?}");
    // Each file alone, and all of them installed as the main file plus drop-ins.
    let tree = tempfile::tempdir().unwrap();
    write_file(tree.path(), "etc/irqwise/irqwise.toml", &fs::read_to_string(shipped("config/irqwise.toml")).unwrap());
    for file in std::iter::once(shipped("config/irqwise.toml")).chain(examples.iter().cloned()) {
        let out = irqwise(root.path(), empty_config().path()).arg("check-config").arg(&file).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}: {text}", file.display());
        assert!(text.starts_with("ok: 1 file(s)"), "{text}");
        let name = file.file_name().unwrap().to_string_lossy().replace(".example", "");
        if name != "irqwise.toml" {
            write_file(tree.path(), &format!("etc/irqwise/conf.d/{name}"), &fs::read_to_string(&file).unwrap());
        }
    }
    let text = run_ok(root.path(), tree.path(), &["check-config"]);
    assert!(text.starts_with("ok: 4 file(s)"), "{text}");
    // And they plan the 64-CPU machine with devices as their comments say.
    add_devices(root.path());
    let plan = plan_json(root.path(), tree.path());
    let banned = cpus("2-7");
    for bdf in [NIC_A, NIC_B, NVME_C] {
        assert!(!all_desired(device(&plan, bdf)).intersects(&banned), "50-latency bans 2-7: {bdf}");
    }
    let mlx5 = device(&plan, NIC_B);
    assert_eq!(mlx5["node"], 1, "50-storage-mlx5 puts the mlx5 NIC on node 1");
    assert!(all_desired(mlx5).is_subset(&node_cpus(root.path(), 1)), "{}", all_desired(mlx5));
    assert_eq!(role_desired(device(&plan, NVME_A), "admin"), [cpus("0")], "50-nvme-admin-pin");
}

#[test]
fn invalid_config_is_exit_2_with_file_line_column() {
    let root = root_64();
    let config = config_with("[[device]]\nmatch = { class = \"nic\" }\ncpus = \"0-9x\"\n");
    let path = config.path().join("etc/irqwise/conf.d/50-test.toml").display().to_string();
    let out = irqwise(root.path(), config.path()).arg("check-config").output().unwrap();
    let (text, errors) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(errors.contains(&format!("error: {path}:3:9")) && errors.contains("0-9x"), "{errors}");
    assert!(text.contains("invalid (1 error(s))"), "{text}");
    // plan refuses the same config with exit 2 and the same location.
    let out = irqwise(root.path(), config.path()).args(["plan", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("{path}:3:9")));
}
