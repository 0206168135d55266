//! Acceptance: `irqwise snapshot OUT` of the machine the test runs on, then
//! `irqwise --root OUT plan --json` plans exactly what `irqwise plan --json` plans on `/`.

#[path = "common/acceptance.rs"]
mod acceptance;

use acceptance::fixture;
use acceptance::*;
use serde_json::Value;

#[path = "common/catalog.rs"]
mod catalog;

/// The parts of a plan that must survive the copy: per device its identity, node, strategy and
/// rules; per IRQ its identity, role, managed flag, current and desired sets and action.
fn essence(plan: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for d in plan["devices"].as_array().unwrap() {
        let bdf = d["bdf"].as_str().unwrap().to_string();
        for key in ["class", "driver", "name", "node", "strategy", "rules"] {
            out.push((format!("{bdf} {key}"), d[key].clone()));
        }
        for p in irqs(d) {
            let irq = &p["irq"];
            for key in ["name", "role", "queue", "queue_source", "managed", "current", "desired", "action", "mismatch"]
            {
                out.push((format!("{bdf} irq {irq} {key}"), p[key].clone()));
            }
        }
    }
    out
}

#[test]
fn plan_on_a_snapshot_of_this_machine_equals_the_live_plan() {
    let out = tempfile::tempdir().unwrap();
    let snap = out.path().join("snap");
    let config = empty_config();
    let text = run_ok(std::path::Path::new("/"), config.path(), &["snapshot", snap.to_str().unwrap()]);
    assert!(text.contains("use it with: irqwise --root"), "{text}");
    let copied = plan_json(&snap, config.path());
    let live = plan_json(std::path::Path::new("/"), config.path());
    assert_eq!(copied["kernel"], live["kernel"]);
    let (c, l) = (essence(&copied), essence(&live));
    // A live affinity may move between the two reads (irqbalance, a driver): then its current
    // set and so its action may differ, never the device, the desired set or anything else.
    let moved: Vec<&String> =
        c.iter().zip(&l).filter(|(a, b)| a.0.ends_with(" current") && a != b).map(|(a, _)| &a.0).collect();
    assert_eq!(c.len(), l.len(), "same devices and IRQs");
    for (a, b) in c.iter().zip(&l) {
        let irq_of = |k: &str| k.rsplit_once(' ').map(|(p, _)| format!("{p} current"));
        if a.0.ends_with(" action") && moved.contains(&&irq_of(&a.0).unwrap()) {
            continue;
        }
        if a.0.ends_with(" current") && moved.contains(&&a.0) {
            continue;
        }
        assert_eq!(a, b);
    }
    assert!(moved.len() * 2 <= c.len().max(1), "most IRQs did not move: {moved:?}");
    eprintln!("{} plan facts compared, {} devices", c.len(), live["devices"].as_array().unwrap().len());
}

mod catalog_tests {
    use std::fs;
    use std::path::Path;

    use super::acceptance::*;
    use super::{catalog, fixture};

    /// The plan JSON of `root` with the root's path replaced, so two roots compare.
    fn plan_text(root: &Path, config: &Path) -> String {
        let text = run_ok(root, config, &["plan", "--json"]);
        text.replace(&root.display().to_string(), "ROOT")
    }

    /// Every catalog machine (hwloc dumps with devices, synthetic machines with every device
    /// kind, broken files): the plan on its snapshot is the plan on the machine, byte for byte.
    #[test]
    fn plan_on_a_snapshot_of_every_catalog_machine_equals_the_original() {
        let mut checked = 0;
        for entry in catalog::entries() {
            let out = tempfile::tempdir().unwrap();
            let snap = out.path().join("snap");
            run_ok(entry.root.path(), entry.config.path(), &["snapshot", snap.to_str().unwrap()]);
            let original = plan_text(entry.root.path(), entry.config.path());
            let copied = plan_text(&snap, entry.config.path());
            assert_eq!(copied, original, "{}: the snapshot plans differently", entry.name);
            checked += 1;
        }
        assert!(checked >= 30);
    }

    /// A rule on a udev property (udevd's database and `sys/class/net`) decides the same on the
    /// snapshot as on the machine.
    #[test]
    fn a_udev_property_rule_matches_on_the_snapshot_too() {
        let root = two_node_root("6.11.0");
        let r = root.path();
        fixture::FixtureRoot::at(r).nic("0000:81:00.0", "ice", "eth0", Some(1), 4, fixture::NamingScheme::IceTxRx);
        let netdir = r.join("sys/devices/pci0000:81/0000:81:00.0/net/eth0");
        fs::write(netdir.join("ifindex"), "7\n").unwrap();
        fs::create_dir_all(r.join("sys/class/net")).unwrap();
        std::os::unix::fs::symlink("../../devices/pci0000:81/0000:81:00.0/net/eth0", r.join("sys/class/net/eth0"))
            .unwrap();
        write_file(r, "run/udev/data/n7", "I:123\nE:ID_NET_DRIVER=ice\nE:ID_NET_NAME_PATH=enp129s0\n");
        let config = config_with("[[device]]\nmatch.property.ID_NET_DRIVER = \"ice\"\nnode = 0\n");
        let original = plan_json(r, config.path());
        assert_eq!(device(&original, "0000:81:00.0")["node"], 0, "the rule matched on the machine");

        let out = tempfile::tempdir().unwrap();
        let snap = out.path().join("snap");
        run_ok(r, config.path(), &["snapshot", snap.to_str().unwrap()]);
        assert!(snap.join("run/udev/data/n7").is_file(), "udevd's entry is copied");
        assert!(snap.join("sys/class/net/eth0/ifindex").is_file(), "the interface's index is copied");
        assert_eq!(plan_text(&snap, config.path()), plan_text(r, config.path()));
    }
}
