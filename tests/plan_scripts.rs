//! `irqwise plan` in scripts, through the real binary on a fixture root: `--exit-code` is 4
//! exactly while a write is pending, `--changed` keeps only the rows with something to do or a
//! managed mismatch (table and JSON), and the JSON carries each IRQ's `hint` and the locality of
//! its current mask. Also `metrics_file` validation at `file:line:column`.

#[path = "common/acceptance.rs"]
mod acceptance;

use acceptance::fixture::{FixtureRoot, NamingScheme};
use acceptance::{config_with, empty_config, irqwise, two_node_root};
use serde_json::Value;

const NIC: &str = "0000:81:00.0";
const NVME: &str = "0000:01:00.0";

fn plan(root: &std::path::Path, config: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let out = irqwise(root, config).arg("plan").args(args).output().unwrap();
    (out.status.code(), String::from_utf8(out.stdout).unwrap())
}

/// Each IRQ of a `plan --json` output: its device, number and action.
fn rows(v: &Value) -> Vec<(String, u64, String)> {
    v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| {
            d["irqs"].as_array().unwrap().iter().map(move |p| {
                (
                    d["bdf"].as_str().unwrap().to_string(),
                    p["irq"].as_u64().unwrap(),
                    p["action"].as_str().unwrap().into(),
                )
            })
        })
        .collect()
}

#[test]
fn exit_code_and_changed_follow_pending_writes() {
    let dir = two_node_root("6.11.0");
    let root = dir.path();
    let mut fx = FixtureRoot::at(root);
    fx.nic(NIC, "ice", "eth0", Some(1), 4, NamingScheme::IceTxRx);
    fx.nvme(NVME, "nvme0", Some(0), 4, true, true);
    let config = empty_config();
    let cfg = config.path();

    // Everything on all CPUs: the NIC's 5 IRQs and the NVMe admin queue are to be written.
    let (code, json) = plan(root, cfg, &["--json", "--changed", "--exit-code"]);
    assert_eq!(code, Some(4), "changes pending");
    let changed: Value = serde_json::from_str(&json).unwrap();
    let full: Value = serde_json::from_str(&plan(root, cfg, &["--json"]).1).unwrap();
    let want: Vec<_> = rows(&full)
        .into_iter()
        .filter(|(bdf, irq, action)| {
            let mismatch = full["devices"].as_array().unwrap().iter().find(|d| d["bdf"] == bdf.as_str()).unwrap()
                ["irqs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["irq"] == *irq && p["mismatch"] == true);
            action == "set" || mismatch
        })
        .collect();
    assert_eq!(rows(&changed), want);
    assert!(rows(&changed).iter().filter(|r| r.2 == "set").count() == 6, "{:?}", rows(&changed));

    // The table keeps only those rows, and the counts of the whole plan.
    let (code, table) = plan(root, cfg, &["--changed"]);
    assert_eq!(code, Some(0), "without --exit-code pending changes are not an error");
    let irq_rows: Vec<&str> = table
        .lines()
        .filter(|l| {
            l.starts_with("  ") && l.split_whitespace().next().is_some_and(|t| t.chars().all(|c| c.is_ascii_digit()))
        })
        .collect();
    assert_eq!(irq_rows.len(), want.len(), "{table}");
    let total = rows(&full).len();
    assert!(table.contains(&format!("{total} IRQs on 2 devices: 6 to set")), "{table}");

    // JSON: hint and the locality of the current mask on every placement.
    for d in full["devices"].as_array().unwrap() {
        for p in d["irqs"].as_array().unwrap() {
            assert!(p.get("hint").is_some() && p.get("current_locality").is_some(), "{p}");
        }
    }
    let nic = full["devices"].as_array().unwrap().iter().find(|d| d["bdf"] == NIC).unwrap();
    // The NIC's queue IRQs sit on all 32 CPUs of a 2-node machine: remote from one desired CPU.
    assert!(nic["irqs"].as_array().unwrap().iter().all(|p| p["current_locality"] == "remote"), "{nic}");

    // After apply nothing is pending: exit 0, no rows.
    irqwise(root, cfg).arg("apply").assert().success();
    let (code, json) = plan(root, cfg, &["--json", "--changed", "--exit-code"]);
    assert_eq!(code, Some(0));
    let after: Value = serde_json::from_str(&json).unwrap();
    assert!(rows(&after).iter().all(|r| r.2 != "set"), "{after}");
    let full: Value = serde_json::from_str(&plan(root, cfg, &["--json"]).1).unwrap();
    let nic = full["devices"].as_array().unwrap().iter().find(|d| d["bdf"] == NIC).unwrap();
    assert!(nic["irqs"].as_array().unwrap().iter().all(|p| p["current_locality"] == "desired"), "{nic}");
}

#[test]
fn metrics_file_must_be_an_absolute_prom_path_or_empty() {
    let dir = two_node_root("6.11.0");
    for (value, ok) in [
        ("/var/lib/x/irqwise.prom", true),
        ("", true),
        ("irqwise.prom", false),
        ("/x/irqwise.txt", false),
        ("/x/.prom", false),
    ] {
        let config = config_with(&format!("[global]\nmetrics_file = {value:?}\n"));
        let out = irqwise(dir.path(), config.path()).arg("check-config").output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        if ok {
            assert_eq!(out.status.code(), Some(0), "{value:?}: {text}");
        } else {
            assert_eq!(out.status.code(), Some(2), "{value:?}: {text}");
            let at = format!(
                "{}:2:16: metrics_file = {value:?}; expected an absolute path",
                config.path().join("etc/irqwise/conf.d/50-test.toml").display()
            );
            assert!(text.contains(&at), "{value:?}: {text}");
        }
    }
}

#[test]
fn changed_leaves_out_the_kept_irqs_of_a_device_with_one_to_write() {
    let dir = two_node_root("6.11.0");
    let root = dir.path();
    let mut fx = FixtureRoot::at(root);
    fx.nic(NIC, "ice", "eth0", Some(1), 4, NamingScheme::IceTxRx);
    let config = empty_config();
    let cfg = config.path();
    let out = irqwise(root, cfg).arg("apply").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Someone moves one queue IRQ: only it is to be written again; the NIC's other IRQs are kept.
    let moved = fx.irqs_of(NIC)[2];
    fx.irq_affinity(moved, &irqwise::cpuset::CpuSet::parse_list("0-31").unwrap());
    let (code, json) = plan(root, cfg, &["--json", "--changed", "--exit-code"]);
    assert_eq!(code, Some(4));
    let changed: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(changed["devices"].as_array().unwrap().len(), 1, "{changed}");
    assert_eq!(rows(&changed), [(NIC.to_string(), u64::from(moved), "set".to_string())]);
}
