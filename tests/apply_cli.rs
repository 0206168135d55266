//! Acceptance: `irqwise apply` (the real binary, and the library's plan/apply pair for
//! failures that must happen between planning and writing) on fixture roots with injected
//! failures. Every failure is classified, the other IRQs are still written, and the exit code
//! says whether everything ended as planned.

#[path = "common/acceptance.rs"]
mod acceptance;

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

use acceptance::fixture::{FixtureRoot, NamingScheme};
use acceptance::*;
use irqwise::apply::ProcIrq;
use irqwise::apply::{apply_plan, WriteOutcome};
use irqwise::config::Config;
use irqwise::pass::plan_pass;
use irqwise::sysfs::Root;
use serde_json::Value;

const NIC: &str = "0000:81:00.0";

/// The 2-node machine with an 8-queue ice NIC on node 1; returns the root and the NIC's
/// IRQs (misc vector first, then queues 0..7).
fn nic_root() -> (tempfile::TempDir, Vec<u32>) {
    let dir = two_node_root("6.11.0");
    let mut fx = FixtureRoot::at(dir.path());
    fx.nic(NIC, "ice", "eth0", Some(1), 8, NamingScheme::IceTxRx);
    let irqs = fx.irqs_of(NIC).to_vec();
    (dir, irqs)
}

fn affinity(root: &Path, irq: u32) -> String {
    fs::read_to_string(root.join(format!("proc/irq/{irq}/smp_affinity_list"))).unwrap().trim().to_string()
}

/// IRQ → desired set (as a list string) of every `set` placement in a JSON plan.
fn planned_writes(plan: &Value) -> Vec<(u32, String)> {
    plan["devices"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| irqs(d).iter())
        .filter(|p| p["action"] == "set")
        .map(|p| (p["irq"].as_u64().unwrap() as u32, set_of(&p["desired"]).to_list_string()))
        .collect()
}

/// `irqwise apply --json`: (exit code, report).
fn apply_json(root: &Path, config: &Path) -> (i32, Value) {
    let out = irqwise(root, config).args(["apply", "--json"]).output().unwrap();
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    });
    (out.status.code().unwrap(), report)
}

fn change(report: &Value, irq: u32) -> &Value {
    report["changes"].as_array().unwrap().iter().find(|c| c["irq"] == irq).unwrap_or_else(|| panic!("irq {irq}"))
}

#[test]
fn injected_failures_are_classified_and_the_other_irqs_still_written() {
    let (dir, nic_irqs) = nic_root();
    let root = dir.path();
    let config = empty_config();
    let (managed, full, isdir) = (nic_irqs[2], nic_irqs[3], nic_irqs[4]);
    let irq_dir = |irq: u32| root.join(format!("proc/irq/{irq}"));
    // A managed IRQ on a 6.12+ kernel: smp_affinity and smp_affinity_list without write bits.
    for f in ["smp_affinity", "smp_affinity_list"] {
        fs::set_permissions(irq_dir(managed).join(f), fs::Permissions::from_mode(0o444)).unwrap();
    }
    // A file that is a symlink out of the root (to /dev/full): refused, never written.
    fs::remove_file(irq_dir(full).join("smp_affinity_list")).unwrap();
    symlink("/dev/full", irq_dir(full).join("smp_affinity_list")).unwrap();
    // A directory where the file should be.
    fs::remove_file(irq_dir(isdir).join("smp_affinity_list")).unwrap();
    fs::create_dir(irq_dir(isdir).join("smp_affinity_list")).unwrap();
    let managed_before = affinity(root, managed);

    let plan = plan_json(root, config.path());
    let writes = planned_writes(&plan);
    let (code, report) = apply_json(root, config.path());
    assert_eq!(code, 1, "a write failed unexpectedly: exit 1\n{report:#}");

    let nic = device(&plan, NIC);
    let p = irqs(nic).iter().find(|p| p["irq"] == managed).unwrap();
    assert_eq!(p["action"], "managed", "{p}");
    assert!(report["changes"].as_array().unwrap().iter().all(|c| c["irq"] != managed), "never tried");
    assert_eq!(affinity(root, managed), managed_before, "untouched");

    let c = change(&report, full);
    assert_eq!((c["result"].as_str(), c["class"].as_str()), (Some("failed"), Some("invalid")), "{c}");
    let error = c["error"].as_str().unwrap();
    assert!(error.contains("ELOOP") && error.contains("symlink"), "refused as a link: {error}");
    let c = change(&report, isdir);
    assert_eq!((c["result"].as_str(), c["class"].as_str()), (Some("failed"), Some("invalid")), "{c}");
    assert!(c["error"].as_str().unwrap().contains("is a directory"), "{c}");

    let broken: BTreeSet<u32> = [managed, full, isdir].into();
    let mut written = 0;
    for (irq, want) in writes.iter().filter(|(irq, _)| !broken.contains(irq)) {
        assert_eq!(&affinity(root, *irq), want, "irq {irq} was still written");
        assert_eq!(change(&report, *irq)["result"], "written");
        written += 1;
    }
    assert_eq!(written, 6, "the misc vector and the 5 healthy queues");
    let s = &report["summary"];
    assert_eq!(
        (s["written"].as_u64(), s["managed"].as_u64(), s["failed"].as_u64()),
        (Some(6), Some(1), Some(2)),
        "{s}"
    );
    // The human output names both failures and the totals.
    let out = irqwise(root, config.path()).arg("apply").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(text.contains(&format!("irq {full}: FAILED (Invalid)")), "{text}");
    assert!(text.contains(&format!("irq {isdir}: FAILED (Invalid)")), "{text}");
    assert!(text.contains("0 written, 6 kept, 1 managed, 0 skipped, 2 failed"), "{text}");
}

#[test]
fn vanished_and_newly_managed_irqs_between_plan_and_apply() {
    let (dir, nic_irqs) = nic_root();
    let root = Root::new(dir.path());
    let pass = plan_pass(&root, &Config::default(), &BTreeSet::new()).unwrap();
    assert_eq!(pass.plan.writes().count(), 9);
    let (gone, ro) = (nic_irqs[5], nic_irqs[6]);
    fs::remove_dir_all(dir.path().join(format!("proc/irq/{gone}"))).unwrap();
    let ro_file = dir.path().join(format!("proc/irq/{ro}/smp_affinity_list"));
    fs::set_permissions(&ro_file, fs::Permissions::from_mode(0o444)).unwrap();
    let before = affinity(dir.path(), ro);

    let report = apply_plan(&pass.plan, &ProcIrq::new(root.clone()));
    let result = |irq: u32| report.changes.iter().find(|c| c.irq == irq).unwrap().result.clone();
    assert!(matches!(result(gone), WriteOutcome::Gone { .. }));
    assert!(matches!(result(ro), WriteOutcome::Managed { .. }));
    assert!(!dir.path().join(format!("proc/irq/{gone}")).exists(), "nothing recreated");
    assert_eq!(affinity(dir.path(), ro), before, "a managed IRQ is never written");
    assert_eq!(report.learned_managed, vec![ro]);
    assert_eq!((report.summary.written, report.summary.skipped, report.summary.managed), (7, 1, 1));
    assert!(report.all_ok(), "gone and managed are not failures");
    for c in report.changes.iter().filter(|c| c.irq != gone && c.irq != ro) {
        assert!(matches!(c.result, WriteOutcome::Written { .. }));
        assert_eq!(affinity(dir.path(), c.irq), c.new_cpus().unwrap().to_list_string());
    }
    // The next pass knows the learned IRQ is managed and plans nothing for the gone one's kin.
    let known: BTreeSet<u32> = report.learned_managed.iter().copied().collect();
    let next = plan_pass(&root, &Config::default(), &known).unwrap();
    let p = next.plan.devices[0].irqs.iter().find(|p| p.irq == ro).unwrap();
    assert_eq!(p.action, irqwise::plan::Action::Managed);
}

#[test]
fn second_apply_writes_nothing_and_exits_zero() {
    let (dir, _) = nic_root();
    let root = dir.path();
    let config = empty_config();
    // An NVMe with managed I/O queues too: they are reported, never written.
    FixtureRoot::at(root).nvme("0000:82:00.0", "nvme0", Some(0), 4, true, true);
    let first = run_ok(root, config.path(), &["apply"]);
    assert!(first.contains("10 written, 0 kept, 4 managed, 0 skipped, 0 failed"), "{first}");
    let snapshot: Vec<(u32, String)> = planned_writes(&plan_json(root, config.path()));
    assert!(snapshot.is_empty(), "after apply nothing is left to set: {snapshot:?}");
    let second = run_ok(root, config.path(), &["apply"]);
    assert!(second.contains("0 written, 10 kept, 4 managed, 0 skipped, 0 failed"), "{second}");
    assert!(!second.lines().any(|l| l.contains("->")), "no IRQ written: {second}");
}

#[test]
fn dry_run_writes_nothing() {
    let (dir, nic_irqs) = nic_root();
    let root = dir.path();
    let before: Vec<String> = nic_irqs.iter().map(|i| affinity(root, *i)).collect();
    let text = run_ok(root, empty_config().path(), &["apply", "--dry-run"]);
    assert_eq!(text.lines().filter(|l| l.starts_with("would write irq")).count(), 9, "{text}");
    assert_eq!(nic_irqs.iter().map(|i| affinity(root, *i)).collect::<Vec<_>>(), before);
}
