//! The daemon's counters and metrics file, in-process on a fixture root: counters keep counting
//! across a reload (SIGHUP), the metrics file follows `metrics_file` (also when a reload moves
//! it), the state file carries the same counters and `irqwise status` shows them with the last
//! changes. The exposition of a fixed state equals `tests/data/golden/metrics.prom` (which
//! `promtool check metrics` accepts; `IRQWISE_BLESS=1 cargo nextest run --test metrics
//! golden` records it again). The metrics text is unit-tested in `src/daemon/counters.rs`; the
//! real Prometheus tools read a running daemon's file in `tests/metrics_exporter.rs`.

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
    let out = bin::irqwise(root.path()).arg("status").output().unwrap();
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
    let json = bin::irqwise(root.path()).args(["status", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["counters"]["writes"]["written"], serde_json::json!(written));
    assert_eq!(v["recent_changes"].as_array().map(Vec::len), Some(10));
}

/// A state with every metric and label kind present: several devices of each class (one whose
/// name needs escaping), failures, drift, left IRQs, per-IRQ writes and a last pass.
fn golden_counters() -> irqwise::daemon::counters::Counters {
    use irqwise::daemon::counters::{Counters, DeviceCount, DeviceLabels, DeviceState, IrqWrites, LastPass};
    let labels = |device: &str, driver: &str, class: &str| DeviceLabels {
        device: device.into(),
        driver: driver.into(),
        class: class.into(),
    };
    let mut c = Counters::new(1_700_000_000);
    for (trigger, n) in [("start", 1), ("link", 3), ("reconcile", 12), ("reload", 1)] {
        c.passes.insert(trigger.into(), n);
    }
    c.pass_failures = 1;
    c.writes.insert("written".into(), 40);
    c.writes.insert("held".into(), 2);
    c.writes.insert("failed".into(), 1);
    c.write_failures.insert("novectors".into(), 1);
    c.xps_writes.insert("written".into(), 8);
    c.thread_writes.insert("written".into(), 4);
    c.napi_settings_writes.insert("unverified".into(), 1);
    c.left_by_owner.insert("tuned".into(), 2);
    c.left_by_owner.insert("unknown".into(), 1);
    c.napi_threads.insert("placed".into(), 4);
    c.queue_identity.insert("netlink".into(), 8);
    c.queue_identity.insert("name".into(), 16);
    c.queue_disagreements = 1;
    c.fought_irqs = 1;
    (c.load_moves, c.load_returns, c.away_from_home) = (5, 4, 1);
    (c.claims, c.claimed_cpus, c.claims_refused) = (2, 3, 1);
    c.writes_blocked.insert("permission".into(), 1);
    c.drift_corrections = vec![DeviceCount { labels: labels("eth0", "ice", "nic"), value: 3 }];
    c.reloads.insert("applied".into(), 1);
    c.last_pass = Some(LastPass { timestamp: 1_700_000_123.25, duration_seconds: 0.0125, ok: true, files_opened: 412 });
    let states = |irqs: &[(&str, u64)]| irqs.iter().map(|(s, n)| ((*s).to_string(), *n)).collect();
    c.devices = vec![
        DeviceState {
            labels: labels("eth0", "ice", "nic"),
            irqs: states(&[("placed", 8), ("kept", 0), ("managed", 0), ("skipped", 1), ("failed", 0)]),
            mismatched: 0,
            uncertain: 0,
        },
        DeviceState {
            labels: labels("nvme0", "nvme", "nvme"),
            irqs: states(&[("placed", 0), ("kept", 0), ("managed", 16), ("skipped", 1), ("failed", 0)]),
            mismatched: 2,
            uncertain: 1,
        },
        DeviceState {
            labels: labels("0000:3b:00.0", "megaraid_sas", "storage"),
            irqs: states(&[("placed", 0), ("kept", 0), ("managed", 8), ("skipped", 0), ("failed", 0)]),
            mismatched: 0,
            uncertain: 0,
        },
        DeviceState {
            labels: labels("we\"ird\\1", "virtio-pci", "other"),
            irqs: states(&[("placed", 1), ("kept", 1), ("managed", 0), ("skipped", 0), ("failed", 1)]),
            mismatched: 0,
            uncertain: 0,
        },
    ];
    c.irq_writes = vec![IrqWrites {
        irq: 120,
        name: Some("ice-eth0-TxRx-0".into()),
        labels: labels("eth0", "ice", "nic"),
        writes: 3,
    }];
    c
}

#[test]
fn the_exposition_of_a_fixed_state_is_the_golden_file_and_promtool_accepts_it() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden/metrics.prom");
    let got = golden_counters().render("1.2.3");
    if std::env::var_os("IRQWISE_BLESS").is_some() {
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "the exposition differs from {} at line {} (IRQWISE_BLESS=1 records it, for a change users may see):\n  got:  {}\n  want: {}",
            path.display(),
            line + 1,
            got.lines().nth(line).unwrap_or("(end)"),
            want.lines().nth(line).unwrap_or("(end)")
        );
    }
    // Every closed label's value in the file is one the table declares (and documents).
    for line in got.lines().filter(|l| !l.starts_with('#')) {
        let name = line.split(['{', ' ']).next().unwrap();
        let m = irqwise::daemon::metric_table::METRICS.iter().find(|m| m.name == name).unwrap();
        for l in m.labels.iter().filter(|l| !l.values.is_empty()) {
            let value = line.split(&format!("{}=\"", l.name)).nth(1).and_then(|v| v.split('"').next()).unwrap();
            assert!(l.values.iter().any(|(v, _)| *v == value), "{line}: {value} is not a declared value of {}", l.name);
        }
    }
    if !apt::ensure(&["promtool"], &["prometheus"]) {
        skip::skip(
            "the_exposition_of_a_fixed_state_is_the_golden_file_and_promtool_accepts_it",
            "promtool is missing and installing it needs root (CI runs as root)",
        );
        return;
    }
    let lint = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&path).unwrap())
        .output()
        .unwrap();
    assert!(
        lint.status.success(),
        "promtool check metrics {}:\n{}{}",
        path.display(),
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr)
    );
}
