//! The daemon's counters and metrics file, in-process on a fixture root: counters keep counting
//! across a reload (SIGHUP), the metrics file follows `metrics_file` (also when a reload moves
//! it), the state file carries the same counters and `irqwise status` shows them with the last
//! changes. The metrics text itself is unit-tested in `src/daemon/counters.rs`; the real
//! Prometheus tools read it in `tests/metrics_exporter.rs`.

#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

use std::path::Path;
use std::time::Duration;

use daemon_fixture::{nic_root, set_affinity, write_config, Running, PATIENCE};
use irqwise::cpuset::CpuSet;
use irqwise::events::Trigger;

/// The sample lines of a metrics file whose text starts with `prefix` (name and labels), with
/// their values.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// Waits until the file at `path` exists and `ready` holds for its text; the text.
async fn wait_for(path: &Path, ready: impl Fn(&str) -> bool) -> String {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if ready(&text) {
                return text;
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "{} never got there", path.display());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn counters_continue_across_a_reload_and_the_metrics_file_follows_metrics_file() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    std::fs::create_dir_all(root.path().join("m1")).unwrap();
    std::fs::create_dir_all(root.path().join("m2")).unwrap();
    write_config(cfg.path(), "[global]\nmetrics_file = \"/m1/irqwise.prom\"\n");
    let first_file = root.path().join("m1/irqwise.prom");
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    let n = irqs.len() as f64; // every IRQ of the NIC starts on all CPUs: all written
    let text = wait_for(&first_file, |t| value(t, "irqwise_passes_total{trigger=\"start\"}") == Some(1.0)).await;
    assert_eq!(value(&text, "irqwise_writes_total{result=\"written\"}"), Some(n), "{text}");

    // Two IRQs drift; the reload moves the metrics file and its pass restores them.
    let all = CpuSet::parse_list("0-15").unwrap();
    set_affinity(root.path(), irqs[2], &all);
    set_affinity(root.path(), irqs[5], &all);
    write_config(cfg.path(), "[global]\nmetrics_file = \"/m2/irqwise.prom\"\n");
    d.trigger(Trigger::Reload).await;
    let daemon = d.stop().await;

    let c = daemon.counters();
    assert_eq!((c.passes["start"], c.passes["reload"]), (1, 1));
    assert_eq!(c.writes["written"], irqs.len() as u64 + 2, "the reload did not reset the write counter");
    assert_eq!(c.drift_corrections.iter().map(|d| d.value).sum::<u64>(), 2);
    assert_eq!(c.reloads["applied"], 1);
    // The pass after the reload is within a second of the first: its write was held back, and
    // made before the daemon stopped, to the new path.
    let text = std::fs::read_to_string(root.path().join("m2/irqwise.prom")).unwrap();
    assert_eq!(value(&text, "irqwise_writes_total{result=\"written\"}"), Some(n + 2.0), "{text}");
    assert_eq!(value(&text, "irqwise_passes_total{trigger=\"start\"}"), Some(1.0));
    assert_eq!(value(&text, "irqwise_passes_total{trigger=\"reload\"}"), Some(1.0));
    assert_eq!(value(&text, "irqwise_config_reloads_total{result=\"applied\"}"), Some(1.0));
    let drift = "irqwise_drift_corrections_total{device=\"eth1\",driver=\"ixgbe\",class=\"nic\"}";
    assert_eq!(value(&text, drift), Some(2.0), "{text}");
    let state = "{device=\"eth1\",driver=\"ixgbe\",class=\"nic\",state=";
    assert_eq!(value(&text, &format!("irqwise_irqs{state}\"placed\"}}")), Some(n), "{text}");
    assert_eq!(value(&text, &format!("irqwise_irqs{state}\"kept\"}}")), Some(0.0), "{text}");
}

#[tokio::test]
async fn status_shows_the_counters_and_the_last_ten_changes() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    // Two more writes: 11 in all, of which status shows the last 10.
    set_affinity(root.path(), irqs[4], &CpuSet::parse_list("0-15").unwrap());
    set_affinity(root.path(), irqs[6], &CpuSet::parse_list("0-15").unwrap());
    d.trigger(Trigger::Reconcile).await;
    let daemon = d.stop().await;
    let out = assert_cmd::Command::cargo_bin("irqwise")
        .unwrap()
        .arg("--root")
        .arg(root.path())
        .arg("status")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let written = daemon.counters().writes["written"];
    assert_eq!(written, irqs.len() as u64 + 2);
    assert!(text.contains("passes by trigger (reconcile 1, start 1); 0 failed"), "{text}");
    assert!(text.contains(&format!("writes: {written} (written {written})")), "{text}");
    assert!(text.contains("drift corrections: 2 (eth1 2)"), "{text}");
    assert!(text.contains("last 10 change(s), newest first:"), "{text}");
    let changes: Vec<&str> = text.lines().filter(|l| l.contains(" s ago, pass ")).collect();
    assert_eq!(changes.len(), 10, "{text}");
    assert!(changes[0].contains(&format!("pass 2: irq {} eth1-TxRx-6 of eth1: 0-15 -> ", irqs[6])), "{text}");
    assert!(changes[1].contains(&format!("pass 2: irq {} eth1-TxRx-4 of eth1: 0-15 -> ", irqs[4])), "{text}");
    assert!(!text.contains(&format!("irq {} eth1-TxRx-0 ", irqs[0])), "the oldest change is dropped: {text}");
    // The JSON has the same counters.
    let json = assert_cmd::Command::cargo_bin("irqwise")
        .unwrap()
        .arg("--root")
        .arg(root.path())
        .args(["status", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["counters"]["writes"]["written"], serde_json::json!(written));
    assert_eq!(v["recent_changes"].as_array().map(Vec::len), Some(10));
}
