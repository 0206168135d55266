//! `irqwise diff A B`: two snapshots that differ by one offline CPU exit 1 and name the CPU (in
//! the topology group, before the plans it changes); a snapshot against itself exits 0; JSON has
//! the same differences; a root that is not one exits 2.

#[path = "common/bin.rs"]
mod bin;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

use std::path::Path;
use std::process::Output;

use daemon_fixture::{nic_root, Hotplug};

fn diff(a: &Path, b: &Path, json: bool) -> Output {
    let cfg = tempfile::tempdir().unwrap();
    let mut cmd = bin::irqwise_with(a, cfg.path());
    cmd.arg("diff").arg(a).arg(b);
    if json {
        cmd.arg("--json");
    }
    cmd.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Two snapshots of one machine: `a` as it is, `b` with CPU 5 offline.
fn two(a: &Path, b: &Path) -> Vec<u32> {
    let irqs = nic_root(a);
    nic_root(b);
    Hotplug::new(b).offline(5, &irqs);
    irqs
}

#[test]
fn a_snapshot_against_itself_is_the_same() {
    let a = tempfile::tempdir().unwrap();
    nic_root(a.path());
    let out = diff(a.path(), a.path(), false);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("same: nothing that decides placement differs"), "{}", text(&out.stdout));
    let out = diff(a.path(), Path::new("-"), true);
    assert_eq!(out.status.code(), Some(0), "`-` is --root");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((doc["schema"].as_u64(), doc["same"].as_bool()), (Some(2), Some(true)));
}

#[test]
fn one_offline_cpu_is_named_first_and_the_plans_it_changes_follow() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    two(a.path(), b.path());
    let out = diff(a.path(), b.path(), false);
    let t = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{t}{}", text(&out.stderr));
    assert!(t.contains("online CPUs (only in A: CPUs 5): A 0-15 | B 0-4,6-15"), "{t}");
    let topology = t.find("topology:").unwrap();
    let plan = t.find("plan:").expect("the NIC's queue on CPU 5 moves");
    assert!(topology < plan, "most decisive first:\n{t}");
    assert!(!t.contains("kernel:") && !t.contains("devices:"), "nothing else differs:\n{t}");

    let out = diff(a.path(), b.path(), true);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = doc["differences"].as_array().unwrap();
    assert_eq!(doc["same"], false);
    assert_eq!(d[0]["group"], "topology", "{doc}");
    assert!(d.iter().any(|x| x["what"].as_str().unwrap().contains("only in A: CPUs 5")), "{doc}");
    let plans = d.iter().filter(|x| x["group"] == "plan").count();
    assert!(plans >= 1, "{doc}");
}

#[test]
fn a_path_that_is_no_root_is_an_error() {
    let a = tempfile::tempdir().unwrap();
    nic_root(a.path());
    let empty = tempfile::tempdir().unwrap();
    let out = diff(a.path(), empty.path(), false);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("sys/devices/system/cpu"), "{}", text(&out.stderr));
}
