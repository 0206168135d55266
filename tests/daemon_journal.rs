//! The real systemd-journald, started in a private mount namespace (`unshare -m`, root only),
//! receives one entry per changed IRQ from `irqwise run --once --log-format journal`, with the
//! fields IRQ, IRQ_NAME, DEVICE, DRIVER, QUEUE, CPUS_OLD, CPUS_NEW, STRATEGY and REASON.
//!
//! Inside the namespace: tmpfs on /run/systemd (journald's sockets), the test's own directory
//! bound on /run/log (so the journal files outlive the namespace), tmpfs on /var/log/journal if
//! the host has one (never write the host's journal). journald runs against the host's
//! /etc/machine-id; it is SIGTERMed (and so syncs its files) before `journalctl -D` reads them.

#[path = "common/bin.rs"]
mod bin;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;
#[path = "common/skip.rs"]
mod skip;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use daemon_fixture::{nic_root, set_affinity, NIC};
use irqwise::config::Config;
use irqwise::cpuset::CpuSet;
use irqwise::pass::plan_pass;
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
        skip::skip(
            "two_changed_irqs_make_two_journal_entries_with_every_field",
            "starting journald in a private mount namespace needs root (CI runs as root)",
        );
        return;
    }
    let (root, cfg, logdir) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    let apply = bin::irqwise(root.path()).arg("apply").output().unwrap();
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
        .env("IRQWISE", bin::BIN)
        .env("ROOT", root.path())
        .env("CFG", cfg.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}\n{}", out.status, String::from_utf8_lossy(&out.stderr));

    let entries = journal_entries(&logdir.path().join("journal"));
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

/// The running daemon in the namespace, with a catalog database built from the shipped
/// `irqwise.catalog` (bound over /usr/lib/systemd/catalog, database on a tmpfs): a first pass, a
/// drift then SIGHUP, an invalid configuration then SIGHUP, SIGTERM; then `journalctl -x`
/// explains an entry from the catalog.
const SCRIPT_KINDS: &str = r#"
set -e
mount -t tmpfs tmpfs /run/systemd
mount --bind "$LOGDIR" /run/log
if [ -d /var/log/journal ]; then mount -t tmpfs tmpfs /var/log/journal; fi
mkdir -p "$LOGDIR/catalog"
cp "$CATALOG" "$LOGDIR/catalog/irqwise.catalog"
mount --bind "$LOGDIR/catalog" /usr/lib/systemd/catalog
mkdir -p /var/lib/systemd/catalog
mount -t tmpfs tmpfs /var/lib/systemd/catalog
journalctl --update-catalog
mkdir -p /run/systemd/journal
/lib/systemd/systemd-journald &
JPID=$!
DPID=
# Whatever happens, nothing started here outlives the script (it would hold the test's pipes).
trap 'kill $DPID $JPID 2>/dev/null || :' EXIT
i=0
while [ ! -S /run/systemd/journal/socket ]; do
  i=$((i+1)); [ $i -lt 200 ] || { echo "journald did not create its socket" >&2; exit 97; }
  sleep 0.05
done
# passes N: wait until the daemon's state file counts N passes.
passes() {
  i=0
  while :; do
    # The top-level "passes" is a number (the counters' "passes" is an object).
    n=$("$IRQWISE" --root "$ROOT" status --json 2>/dev/null | sed -n 's/.*"passes": *\([0-9][0-9]*\)[,}].*/\1/p' | head -n 1)
    [ "${n:-0}" -ge "$1" ] && return 0
    i=$((i+1)); [ $i -lt 400 ] || { echo "the daemon never reached pass $1" >&2; exit 96; }
    sleep 0.05
  done
}
"$IRQWISE" run --log-format journal --root "$ROOT" --config "$CFG" &
DPID=$!
passes 1
echo 0-15 > "$ROOT/proc/irq/$DRIFT_IRQ/smp_affinity_list"
kill -HUP $DPID
passes 2
printf '[global]\nbanned_cpus = "nope"\n' > "$CFG/etc/irqwise/irqwise.toml"
kill -HUP $DPID
passes 3
kill -TERM $DPID
wait $DPID || echo "irqwise exited with $?" >&2
kill -TERM $JPID; wait $JPID
trap - EXIT
journalctl -D "$LOGDIR/journal" -x --no-pager MESSAGE_ID="$EXPLAIN" > "$LOGDIR/explained.txt"
"#;

#[test]
fn every_kind_of_entry_has_its_message_id_and_the_fields_of_its_irq() {
    use irqwise::daemon::catalog;
    if std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) != 0 {
        skip::skip(
            "every_kind_of_entry_has_its_message_id_and_the_fields_of_its_irq",
            "starting journald in a private mount namespace needs root (CI runs as root)",
        );
        return;
    }
    let (root, cfg, logdir) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    let mut fx = fixture::FixtureRoot::at(root.path());
    const BROKEN_NIC: &str = "0000:82:00.0";
    const NVME: &str = "0000:01:00.0";
    fx.nic(BROKEN_NIC, "igb", "eth2", Some(0), 2, fixture::NamingScheme::TxRx);
    fx.nvme(NVME, "nvme0", Some(0), 4, true, true);
    let broken = fx.irqs_of(BROKEN_NIC)[1];
    // Queue 1 of eth2 cannot be written: irqwise never writes through a symlink.
    let dir = root.path().join(format!("proc/irq/{broken}"));
    std::fs::rename(dir.join("smp_affinity_list"), dir.join("real")).unwrap();
    std::os::unix::fs::symlink("real", dir.join("smp_affinity_list")).unwrap();
    daemon_fixture::write_config(cfg.path(), "");
    let pass = plan_pass(&Root::new(root.path()), &Config::default(), &BTreeSet::new()).unwrap();
    let nvme = pass.plan.devices.iter().find(|d| d.bdf == NVME).unwrap();
    assert!(
        nvme.irqs.iter().any(|p| p.mismatch == Some(true)),
        "the fixture's managed IRQs differ from the prediction"
    );
    let drift = irqs[3];

    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", SCRIPT_KINDS])
        .env("LOGDIR", logdir.path())
        .env("IRQWISE", bin::BIN)
        .env("ROOT", root.path())
        .env("CFG", cfg.path())
        .env("CATALOG", concat!(env!("CARGO_MANIFEST_DIR"), "/systemd/irqwise.catalog"))
        .env("DRIFT_IRQ", drift.to_string())
        .env("EXPLAIN", catalog::DRIFT_RESTORED)
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}\n{}", out.status, String::from_utf8_lossy(&out.stderr));

    let entries = journal_entries(&logdir.path().join("journal"));
    let field = |e: &serde_json::Value, k: &str| e.get(k).and_then(|v| v.as_str()).map(String::from);
    let of_kind = |id: &str| -> Vec<&serde_json::Value> {
        entries.iter().filter(|e| field(e, "MESSAGE_ID").as_deref() == Some(id)).collect()
    };
    let all_ours: Vec<&serde_json::Value> = entries.iter().filter(|e| e.get("IRQ").is_some()).collect();
    assert!(!all_ours.is_empty());
    for e in &all_ours {
        for k in ["MESSAGE_ID", "IRQ", "DEVICE", "DRIVER"] {
            assert!(field(e, k).is_some_and(|v| !v.is_empty()), "no {k} in {e}");
        }
        assert_ne!(field(e, "QUEUE").as_deref(), Some(""), "QUEUE is absent, not empty: {e}");
    }

    // Mapping applied: pass 1 writes eth1's 9 IRQs, eth2's 2 others, nvme0's admin queue; pass 2
    // the drifted one. The misc vector serves no queue: no QUEUE field at all.
    let applied = of_kind(catalog::MAPPING_APPLIED);
    assert_eq!(applied.len(), irqs.len() + 2 + 1 + 1, "{applied:#?}");
    let misc = applied.iter().find(|e| field(e, "IRQ") == Some(irqs[8].to_string())).unwrap();
    assert!(misc.get("QUEUE").is_none(), "{misc}");
    assert_eq!(field(misc, "PRIORITY").as_deref(), Some("5"));

    let failed = of_kind(catalog::WRITE_FAILED);
    assert!(!failed.is_empty());
    for e in &failed {
        assert_eq!(field(e, "IRQ"), Some(broken.to_string()));
        assert_eq!((field(e, "DEVICE").as_deref(), field(e, "DRIVER").as_deref()), (Some(BROKEN_NIC), Some("igb")));
        assert_eq!((field(e, "QUEUE").as_deref(), field(e, "CLASS").as_deref()), (Some("1"), Some("invalid")));
        assert!(field(e, "CPUS_WANTED").is_some_and(|c| !c.is_empty() && c != "?"), "{e}");
        assert_eq!(field(e, "PRIORITY").as_deref(), Some("4"), "tracing WARN");
    }

    let drifted = of_kind(catalog::DRIFT_RESTORED);
    assert_eq!(drifted.len(), 1, "{drifted:#?}");
    let e = drifted[0];
    assert_eq!(field(e, "IRQ"), Some(drift.to_string()));
    assert_eq!((field(e, "DEVICE").as_deref(), field(e, "DRIVER").as_deref()), (Some(NIC), Some("ixgbe")));
    assert_eq!((field(e, "QUEUE").as_deref(), field(e, "CPUS_FOUND").as_deref()), (Some("3"), Some("0-15")));
    let placed = pass.plan.find_irq(drift).unwrap().1.desired.clone().unwrap().to_list_string();
    assert_eq!(field(e, "CPUS_PLACED"), Some(placed));

    let mismatch = of_kind(catalog::MANAGED_MISMATCH);
    assert_eq!(mismatch.len(), 1, "said once: {mismatch:#?}");
    assert_eq!(
        (field(mismatch[0], "DEVICE").as_deref(), field(mismatch[0], "DRIVER").as_deref()),
        (Some(NVME), Some("nvme"))
    );

    let rejected = of_kind(catalog::CONFIG_REJECTED);
    assert_eq!(rejected.len(), 1, "{rejected:#?}");
    assert_eq!(field(rejected[0], "CONFIG_ERRORS").as_deref(), Some("1"));
    assert_eq!(field(rejected[0], "PRIORITY").as_deref(), Some("3"), "tracing ERROR");

    let summaries = of_kind(catalog::PASS_SUMMARY);
    let numbers: Vec<String> = summaries.iter().filter_map(|e| field(e, "PASS")).collect();
    assert!(numbers.contains(&"1".into()) && numbers.contains(&"2".into()), "{numbers:?}");

    // `journalctl -x` explains the drift entry from the catalog, fields substituted.
    let explained = std::fs::read_to_string(logdir.path().join("explained.txt")).unwrap();
    assert!(explained.contains(&format!("Subject: IRQ {drift} drifted from CPUs")), "{explained}");
    assert!(explained.contains("Defined-By: irqwise"), "{explained}");
    assert!(explained.contains(&format!("of device {NIC} (driver")), "{explained}");
}

/// Every entry of the journal directory `dir`, as `journalctl -D dir -o json` prints them.
fn journal_entries(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let journal = Command::new("journalctl").arg("-D").arg(dir).args(["-o", "json", "--no-pager"]).output().unwrap();
    assert!(journal.status.success(), "{}", String::from_utf8_lossy(&journal.stderr));
    String::from_utf8_lossy(&journal.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}
