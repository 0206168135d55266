//! The fleet files shipped in packaging/: Prometheus recording and alerting rules (checked and
//! unit-tested by the real `promtool`, Debian package `prometheus`, installed here when missing
//! and root) and the Grafana dashboard, whose queries may use only series the daemon exports or
//! the rules record.

use std::collections::BTreeSet;
use std::process::Command;

#[path = "common/apt.rs"]
mod apt;
#[path = "common/bin.rs"]
mod bin;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;
#[path = "common/skip.rs"]
mod skip;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/packaging");

/// `promtool`, installed with apt-get when missing and root.
fn promtool() -> bool {
    apt::ensure(&["promtool"], &["prometheus"])
}

fn promtool_says(args: &[&str]) -> (bool, String) {
    let out = Command::new("promtool").args(args).current_dir(format!("{DIR}/prometheus")).output().unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn promtool_checks_the_rules_and_every_alert_fires_and_stays_silent_as_tested() {
    if !promtool() {
        skip::skip(
            "promtool_checks_the_rules_and_every_alert_fires_and_stays_silent_as_tested",
            "promtool is missing and installing it needs root (CI runs as root)",
        );
        return;
    }
    let (ok, text) = promtool_says(&["check", "rules", "irqwise-rules.yml"]);
    assert!(ok, "{text}");
    let (ok, text) = promtool_says(&["test", "rules", "irqwise-rules.test.yml"]);
    assert!(ok && text.contains("SUCCESS"), "{text}");
    // Each alert has a firing case and a silent one in the tests.
    let rules = std::fs::read_to_string(format!("{DIR}/prometheus/irqwise-rules.yml")).unwrap();
    let tests = std::fs::read_to_string(format!("{DIR}/prometheus/irqwise-rules.test.yml")).unwrap();
    let alerts: Vec<&str> = rules.lines().filter_map(|l| l.trim().strip_prefix("- alert: ")).collect();
    assert!(alerts.len() >= 6, "{alerts:?}");
    for a in alerts {
        let cases: Vec<&str> = tests.split("alertname: ").skip(1).filter(|c| c.starts_with(a)).collect();
        let silent = cases.iter().filter(|c| c.lines().nth(1).is_some_and(|l| l.contains("exp_alerts: []"))).count();
        assert!(silent >= 1 && cases.len() > silent, "{a}: {} cases, {silent} silent", cases.len());
    }
}

/// The `irqwise_*` series names a text mentions (recorded names, with a colon, apart).
fn names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("irqwise_") {
        let start = i + at;
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_' || bytes[end] == b':') {
            end += 1;
        }
        let before = start.checked_sub(1).map(|b| bytes[b]);
        if !before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':') {
            out.insert(text[start..end].to_string());
        }
        i = end.max(start + 1);
    }
    out
}

#[test]
fn the_rules_and_the_dashboard_use_only_series_the_daemon_exports_or_the_rules_record() {
    // What the metrics file of a real pass holds: a NIC and a managed NVMe drive.
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    daemon_fixture::nic_root(root.path());
    fixture::FixtureRoot::at(root.path()).nvme("0000:01:00.0", "nvme0", Some(0), 4, true, true);
    daemon_fixture::write_config(cfg.path(), "[global]\nmetrics_file = \"/metrics/irqwise.prom\"\n");
    let once =
        bin::irqwise_with(root.path(), cfg.path()).args(["--log-format", "text", "run", "--once"]).output().unwrap();
    assert_eq!(once.status.code(), Some(0), "{}", String::from_utf8_lossy(&once.stderr));
    let metrics = std::fs::read_to_string(root.path().join("metrics/irqwise.prom")).unwrap();
    let exported: BTreeSet<String> = metrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect();
    assert!(exported.contains("irqwise_irqs") && exported.contains("irqwise_fought_irqs"), "{exported:?}");
    let rules = std::fs::read_to_string(format!("{DIR}/prometheus/irqwise-rules.yml")).unwrap();
    let recorded: BTreeSet<String> =
        rules.lines().filter_map(|l| l.trim().strip_prefix("- record: ")).map(|r| r.trim().to_string()).collect();
    assert!(recorded.iter().all(|r| r.contains(':')), "{recorded:?}");
    let dashboard = std::fs::read_to_string(format!("{DIR}/grafana/irqwise-dashboard.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&dashboard).unwrap();
    let exprs: Vec<String> = doc["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter().map(|t| t["expr"].as_str().unwrap().to_string()))
        .collect();
    assert!(exprs.len() >= 10, "{exprs:?}");
    let variables = doc["templating"]["list"].as_array().unwrap();
    assert!(variables.iter().any(|v| v["type"] == "datasource"), "the data source is a variable");
    assert!(variables.iter().any(|v| v["name"] == "instance"), "a host selector");
    for (what, text) in [("rules", rules.clone()), ("dashboard", exprs.join("\n") + &dashboard)] {
        for name in names(&text) {
            // Counter samples carry their _total name; histograms none here.
            let known = exported.contains(&name) || recorded.contains(&name);
            assert!(known, "{what} uses {name}, which the metrics file does not have and no rule records");
        }
    }
    // And the rules record every name the dashboard uses of theirs.
    for r in names(&dashboard).iter().filter(|n| n.contains(':')) {
        assert!(recorded.contains(r), "{r}");
    }
}
