//! The real systemd-journald, started in a private mount namespace (`unshare -m`, root only),
//! receives one entry per changed IRQ from `irqwise run --once --log-format journal`, with the
//! fields IRQ, IRQ_NAME, DEVICE, DRIVER, QUEUE, CPUS_OLD, CPUS_NEW, STRATEGY and REASON.
//!
//! Inside the namespace: tmpfs on /run/systemd (journald's sockets), the test's own directory
//! bound on /run/log (so the journal files outlive the namespace), tmpfs on /var/log/journal if
//! the host has one (never write the host's journal). journald runs against the host's
//! /etc/machine-id; it is SIGTERMed (and so syncs its files) before `journalctl -D` reads them.

#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use daemon_fixture::{nic_root, set_affinity, NIC};
use irqwise::config::Config;
use irqwise::cpuset::CpuSet;
use irqwise::engine::plan_pass;
use irqwise::plan::Action;
use irqwise::sysfs::Root;

const SCRIPT: &str = r#"
set -e
mount -t tmpfs tmpfs /run/systemd
mount --bind "$LOGDIR" /run/log
if [ -d /var/log/journal ]; then mount -t tmpfs tmpfs /var/log/journal; fi
mkdir -p /run/systemd/journal
/lib/systemd/systemd-journald &
JPID=$!
i=0
while [ ! -S /run/systemd/journal/socket ]; do
  i=$((i+1)); [ $i -lt 200 ] || { echo "journald did not create its socket" >&2; exit 97; }
  sleep 0.05
done
set +e
"$IRQWISE" run --once --log-format journal --root "$ROOT" --config "$CFG"
RC=$?
kill -TERM $JPID; wait $JPID
exit $RC
"#;

#[test]
fn two_changed_irqs_make_two_journal_entries_with_every_field() {
    if std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) != 0 {
        eprintln!("skipped: starting journald in a private mount namespace needs root (CI runs as root)");
        return;
    }
    let (root, cfg, logdir) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    let apply =
        Command::new(env!("CARGO_BIN_EXE_irqwise")).arg("--root").arg(root.path()).arg("apply").output().unwrap();
    assert!(apply.status.success(), "{}", String::from_utf8_lossy(&apply.stderr));
    // Someone else moves queues 2 and 5 to all CPUs: exactly these two need to change.
    let all = CpuSet::parse_list("0-15").unwrap();
    for q in [2, 5] {
        set_affinity(root.path(), irqs[q], &all);
    }
    let pass = plan_pass(&Root::new(root.path()), &Config::default(), &BTreeSet::new()).unwrap();
    let expected: BTreeMap<u32, _> = pass
        .plan
        .devices
        .iter()
        .flat_map(|d| d.irqs.iter())
        .filter(|p| p.action == Action::Set)
        .map(|p| (p.irq, p.clone()))
        .collect();
    assert_eq!(expected.keys().copied().collect::<Vec<_>>(), vec![irqs[2], irqs[5]]);

    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", SCRIPT])
        .env("LOGDIR", logdir.path())
        .env("IRQWISE", env!("CARGO_BIN_EXE_irqwise"))
        .env("ROOT", root.path())
        .env("CFG", cfg.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}\n{}", out.status, String::from_utf8_lossy(&out.stderr));

    let journal = Command::new("journalctl")
        .arg("-D")
        .arg(logdir.path().join("journal"))
        .args(["-o", "json", "--no-pager"])
        .output()
        .unwrap();
    assert!(journal.status.success(), "{}", String::from_utf8_lossy(&journal.stderr));
    let entries: Vec<serde_json::Value> =
        String::from_utf8_lossy(&journal.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let ours: Vec<&serde_json::Value> = entries.iter().filter(|e| e.get("IRQ").is_some()).collect();
    assert_eq!(ours.len(), 2, "entries with IRQ: {ours:#?}");
    for e in ours {
        let field = |k: &str| e.get(k).and_then(|v| v.as_str()).unwrap_or_else(|| panic!("no {k} in {e}")).to_string();
        let irq: u32 = field("IRQ").parse().unwrap();
        let p = &expected[&irq];
        let queue = irqs.iter().position(|&i| i == irq).unwrap();
        assert_eq!(field("IRQ_NAME"), format!("eth1-TxRx-{queue}"));
        assert_eq!(field("DEVICE"), NIC);
        assert_eq!(field("DRIVER"), "ixgbe");
        assert_eq!(field("QUEUE"), queue.to_string());
        assert_eq!(field("CPUS_OLD"), "0-15");
        assert_eq!(field("CPUS_NEW"), p.desired.as_ref().unwrap().to_list_string());
        assert_eq!(field("STRATEGY"), "numa-hop");
        assert_eq!(field("REASON"), p.reason);
        // tracing-journald maps tracing INFO to syslog priority 5 (notice), DEBUG to 6 (info).
        assert_eq!(field("PRIORITY"), "5", "tracing INFO");
    }
}
