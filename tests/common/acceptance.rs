//! Helpers shared by the acceptance tests (plan, apply_cli, config_plan, snapshot_plan): fixture
//! roots, running the real `irqwise` binary, and reading its JSON plan. Facts about a fixture's
//! topology are read straight from the sysfs files the fixture wrote, never through irqwise.
#![allow(dead_code)]

use std::fs;
use std::path::Path;

use assert_cmd::Command;
use irqwise::cpuset::CpuSet;
use serde_json::Value;

#[path = "bin.rs"]
pub mod bin;
#[path = "fixture.rs"]
pub mod fixture;

pub fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

/// A root with `write_cpu_topology(nodes, cores, threads)` and `osrelease` = `kernel`.
pub fn cpu_root(nodes: u32, cores: u32, threads: u32, kernel: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fixture::write_cpu_topology(dir.path(), nodes, cores, threads);
    write_file(dir.path(), "proc/sys/kernel/osrelease", &format!("{kernel}\n"));
    dir
}

/// The machine: 2 nodes, 8 cores per node, 2 threads (siblings N / N+16), 32 CPUs.
pub fn two_node_root(kernel: &str) -> tempfile::TempDir {
    cpu_root(2, 8, 2, kernel)
}

/// Writes `text` at `root/rel`, creating directories.
pub fn write_file(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A sysfs CPU list file of the root, read directly.
pub fn sysfs_list(root: &Path, rel: &str) -> CpuSet {
    let text = fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    cpus(text.trim())
}

/// `cpuN/topology/core_cpus_list` as the fixture wrote it.
pub fn core_of(root: &Path, cpu: u32) -> CpuSet {
    sysfs_list(root, &format!("sys/devices/system/cpu/cpu{cpu}/topology/core_cpus_list"))
}

/// `node/nodeN/cpulist` as the fixture wrote it.
pub fn node_cpus(root: &Path, node: u32) -> CpuSet {
    sysfs_list(root, &format!("sys/devices/system/node/node{node}/cpulist"))
}

/// An empty config tree, so the binary never reads the host's /etc/irqwise.
pub fn empty_config() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A config tree whose only file is the drop-in `etc/irqwise/conf.d/50-test.toml`.
pub fn config_with(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "etc/irqwise/conf.d/50-test.toml", text);
    dir
}

/// 2 nodes × 4 cores × 2 threads (6.12, read-only managed masks), an ice NIC, an mlx5 NIC, a
/// virtio NIC, a managed NVMe and an NVMe of another driver: the fuzz roots' template.
pub fn five_device_machine() -> tempfile::TempDir {
    use fixture::{FixtureRoot, NamingScheme};
    let dir = cpu_root(2, 4, 2, "6.12.0");
    FixtureRoot::at(dir.path())
        .nic("0000:81:00.0", "ice", "eth0", Some(1), 4, NamingScheme::IceTxRx)
        .nic("0000:41:00.0", "mlx5_core", "ens1", Some(0), 6, NamingScheme::Mlx5)
        .virtio_nic("0000:00:03.0", 0, "eth1", None, 2)
        .nvme("0000:82:00.0", "nvme0", Some(0), 3, true, true)
        .msi_device("0000:83:00.0", 0x010802, "nvme_vendor", Some(1), &["nvme1q0", "nvme1q1", "nvme1q2"]);
    dir
}

/// The real binary with `--root root --config config` ([`bin::irqwise_with`], with
/// `assert_cmd`'s assertions).
pub fn irqwise(root: &Path, config: &Path) -> Command {
    Command::from_std(bin::irqwise_with(root, config))
}

/// Runs the binary, asserting success; returns stdout.
pub fn run_ok(root: &Path, config: &Path, args: &[&str]) -> String {
    let out = irqwise(root, config).args(args).output().expect("run irqwise");
    assert!(
        out.status.success(),
        "irqwise {args:?} exited {:?}: {}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `irqwise plan --json` of the real binary.
pub fn plan_json(root: &Path, config: &Path) -> Value {
    let text = run_ok(root, config, &["plan", "--json"]);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad plan JSON: {e}\n{text}"))
}

/// The plan's device with this PCI address.
pub fn device<'a>(plan: &'a Value, bdf: &str) -> &'a Value {
    plan["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .find(|d| d["bdf"] == bdf)
        .unwrap_or_else(|| panic!("no device {bdf} in {plan:#}"))
}

pub fn irqs(dev: &Value) -> &[Value] {
    dev["irqs"].as_array().expect("irqs")
}

/// Queue IRQs (role not admin/misc) of a device, in queue order; `role` filters when given.
pub fn queue_irqs<'a>(dev: &'a Value, role: Option<&str>) -> Vec<&'a Value> {
    let mut q: Vec<&Value> =
        irqs(dev).iter().filter(|p| !p["queue"].is_null() && role.is_none_or(|r| p["role"] == r)).collect();
    q.sort_by_key(|p| p["queue"].as_u64());
    q
}

/// A JSON CPU array (or null) as a set.
pub fn set_of(v: &Value) -> CpuSet {
    CpuSet::parse_list(v.as_str().unwrap_or_else(|| panic!("not a CPU list: {v}")))
        .unwrap_or_else(|e| panic!("not a CPU list: {v}: {e}"))
}

/// The desired set of each queue IRQ, in queue order.
pub fn desired_per_queue(dev: &Value) -> Vec<CpuSet> {
    queue_irqs(dev, None).iter().map(|p| set_of(&p["desired"])).collect()
}

/// Extracts the hwloc dumps into a fresh temporary directory (one directory per machine).
pub fn extract_hwloc() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let tar = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hwloc/hwloc-linux-sysfs.tar.bz2");
    let ok = std::process::Command::new("tar").arg("-xjf").arg(&tar).arg("-C").arg(dir.path()).status().unwrap();
    assert!(ok.success(), "tar -xjf {}", tar.display());
    dir
}
