//! A `/proc/irq` that cannot be written at all (read-only, as under `ProtectKernelTunables=` or
//! in a container) is one diagnosis naming the cause and the fix, not one failure per IRQ: for
//! `apply` (its own exit status) and for the daemon (one warning, its status and metrics).
//!
//! Real read-only mounts: each command runs in a private mount namespace (`unshare -m`, root
//! only, as in CI) where the fixture root's `proc/irq` is bind-mounted read-only, so every write
//! fails with the kernel's own EROFS.

#[path = "common/bin.rs"]
mod bin;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

use std::path::Path;
use std::process::{Command, Output};

use daemon_fixture::nic_root;

/// Runs irqwise with `args` on `root`, whose `proc/irq` is read-only for it.
fn read_only_irqwise(root: &Path, cfg: &Path, args: &[&str]) -> Output {
    const SCRIPT: &str = r#"mount --bind "$ROOT/proc/irq" "$ROOT/proc/irq" &&
mount -o remount,bind,ro "$ROOT/proc/irq" &&
exec "$IRQWISE" --root "$ROOT" --config "$CFG" "$@""#;
    Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", SCRIPT, "sh"])
        .args(args)
        .env("IRQWISE", bin::BIN)
        .env("ROOT", root)
        .env("CFG", cfg)
        .output()
        .unwrap()
}

#[test]
fn apply_on_a_read_only_proc_irq_says_the_cause_once_and_exits_6() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    let out = read_only_irqwise(root.path(), cfg.path(), &["apply"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(6), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let diagnoses: Vec<&str> = text.lines().filter(|l| l.starts_with("nothing written: all ")).collect();
    assert_eq!(diagnoses.len(), 1, "{text}");
    assert!(diagnoses[0].contains("read-only (EROFS)") && diagnoses[0].contains("ProtectKernelTunables"), "{text}");
    assert!(!text.contains("FAILED"), "no line per IRQ:\n{text}");
    assert!(text.lines().last().is_some_and(|l| l.starts_with("0 written")), "{text}");

    let out = read_only_irqwise(root.path(), cfg.path(), &["apply", "--json"]);
    assert_eq!(out.status.code(), Some(6));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let failed = json["summary"]["failed"].as_u64().unwrap();
    assert!(failed > 0, "{json}");
    assert_eq!(json["writes_blocked"]["class"], "readonly");
    assert_eq!(json["writes_blocked"]["failed"].as_u64(), Some(failed));
}

#[test]
fn the_daemon_on_a_read_only_proc_irq_says_it_once_in_its_log_status_and_metrics() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    std::fs::create_dir_all(cfg.path().join("etc/irqwise")).unwrap();
    std::fs::write(cfg.path().join("etc/irqwise/irqwise.toml"), "[global]\nmetrics_file = \"/metrics/irqwise.prom\"\n")
        .unwrap();
    std::fs::create_dir_all(root.path().join("metrics")).unwrap();
    let out = read_only_irqwise(root.path(), cfg.path(), &["--log-format", "text", "run", "--once"]);
    let log = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = log.lines().filter(|l| l.contains("WARN")).collect();
    assert_eq!(warnings.len(), 1, "one warning, not one per IRQ:\n{log}");
    assert!(warnings[0].contains("nothing written: all ") && warnings[0].contains("read-only (EROFS)"), "{log}");
    let state = std::fs::read_to_string(root.path().join("run/irqwise/state.json")).unwrap();
    assert!(state.contains("degraded: all ") && state.contains("/proc/irq is read-only"), "{state}");
    let metrics = std::fs::read_to_string(root.path().join("metrics/irqwise.prom")).unwrap();
    assert!(metrics.contains("irqwise_writes_blocked{class=\"readonly\"} 1"), "{metrics}");
    assert!(metrics.contains("irqwise_writes_blocked{class=\"permission\"} 0"), "{metrics}");
    assert!(metrics.contains("irqwise_write_failures_total{class=\"readonly\"} "), "{metrics}");
}

#[test]
fn a_start_with_nothing_to_write_probes_and_still_says_it() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    // Everything placed first, while /proc/irq is writable: the next pass has nothing to write.
    let out = bin::irqwise_with(root.path(), cfg.path()).arg("apply").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let out = read_only_irqwise(root.path(), cfg.path(), &["--log-format", "text", "run", "--once"]);
    let log = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = log.lines().filter(|l| l.contains("WARN")).collect();
    assert_eq!(warnings.len(), 1, "{log}");
    assert!(warnings[0].contains("IRQ affinities cannot be written: /proc/irq is read-only (EROFS)"), "{log}");
    let state = std::fs::read_to_string(root.path().join("run/irqwise/state.json")).unwrap();
    assert!(state.contains("degraded: IRQ affinities cannot be written: /proc/irq is read-only"), "{state}");
}
