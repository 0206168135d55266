//! Real 7.x kernels, as `tests/vm` captured them (`tests/data/kernels/`): every kernel-managed
//! NVMe queue of each snapshot is predicted exactly with the rules of the kernel it came from, and
//! the arm64 snapshot with clusters, planned as a 6.18 kernel (the grouping rule before 7.0), is
//! not: the cluster-aware rule is what makes it exact. A regression in the version rule or in
//! the offline-CPU case fails here, without a VM.

#[path = "common/acceptance.rs"]
mod acceptance;

use std::path::Path;

use acceptance::*;

/// The snapshot `name` unpacked into a temporary directory.
fn unpacked(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let tar = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernels").join(name);
    let ok = std::process::Command::new("tar").arg("-xzf").arg(&tar).arg("-C").arg(dir.path()).status().unwrap();
    assert!(ok.success(), "tar -xzf {}", tar.display());
    dir
}

/// (managed NVMe I/O queues, of which mismatched) in `plan --json` of `root`.
fn managed_queues(root: &Path) -> (usize, usize) {
    let cfg = empty_config();
    let plan = plan_json(root, cfg.path());
    let mut total = 0;
    let mut wrong = 0;
    for dev in plan["devices"].as_array().unwrap().iter().filter(|d| d["class"] == "nvme") {
        for irq in irqs(dev).iter().filter(|i| i["action"] == "managed" && i["role"] == "io") {
            total += 1;
            wrong += usize::from(irq["mismatch"] == true);
        }
    }
    (total, wrong)
}

#[test]
fn each_72_snapshot_is_predicted_exactly_with_its_kernels_rules() {
    for (name, queues) in
        [("7.2-arm64-c3x4-1n.tar.gz", 32), ("7.2-amd64-nosmt.tar.gz", 24), ("7.2-amd64-maxcpus.tar.gz", 24)]
    {
        let root = unpacked(name);
        assert_eq!(managed_queues(root.path()), (queues, 0), "{name}");
    }
}

#[test]
fn the_clustered_arm64_snapshot_planned_with_the_rule_before_70_mispredicts() {
    let root = unpacked("7.2-arm64-c3x4-1n.tar.gz");
    write_file(root.path(), "proc/sys/kernel/osrelease", "6.18.15+deb13-arm64\n");
    let (total, wrong) = managed_queues(root.path());
    assert_eq!(total, 32);
    assert!(wrong >= 20, "the older rule groups 3 CPUs across clusters: {wrong} of {total} mispredicted");
}
