//! `irqwise import-irqbalance`: real-world irqbalance environment files become a drop-in that
//! `check-config` accepts and that keeps every movable IRQ off the banned CPUs, through the real
//! binary on fixture roots.
//!
//! The machine: 2 nodes × 6 cores × 2 threads (siblings N / N+12): node 0 = 0-5,12-17, node 1 =
//! 6-11,18-23.

#[path = "common/acceptance.rs"]
mod acceptance;

use std::path::Path;
use std::process::Output;

use acceptance::fixture::{FixtureRoot, NamingScheme};
use acceptance::*;

const NIC: &str = "0000:81:00.0";
const HBA: &str = "0000:03:00.0";

/// Debian's shipped /etc/default/irqbalance (every setting commented out) with an admin's edits.
const DEBIAN: &str = r#"# irqbalance is a daemon process that distributes interrupts across
# CPUs on SMP systems.  The default is to rebalance once every 10
# seconds.  This is the environment file that is specified to systemd via the
# EnvironmentFile key in the service unit file (or via whatever method the init
# system you're using has).
#
# IRQBALANCE_ONESHOT
#    After starting, wait for ten seconds, then look at the interrupt
#    load and balance it once; after balancing exit and do not change
#    it again.
#
#IRQBALANCE_ONESHOT=

#
# IRQBALANCE_BANNED_CPUS
#    64 bit bitmask which allows you to indicate which CPUs should
#    be skipped when reblancing IRQs.  CPU numbers which have their
#    corresponding bits set to one in this mask will not have any
#    IRQs assigned to them on rebalance.
#
#IRQBALANCE_BANNED_CPUS=
IRQBALANCE_BANNED_CPUS=00fc00fc

#
# IRQBALANCE_ARGS
#    Append any args here to the irqbalance daemon as documented in the man
#    page.
#
IRQBALANCE_ARGS="--banirq=IRQ_OF_NIC --banmod=mlx4_core -i 9999 --policyscript=/usr/local/bin/irqpol --hintpolicy=subset"
"#;

/// The machine, with the IRQs of the NIC and of the HBA.
fn machine_with_irqs() -> (tempfile::TempDir, Vec<u32>, Vec<u32>) {
    let dir = cpu_root(2, 6, 2, "6.12.0-1-amd64");
    let mut f = FixtureRoot::at(dir.path());
    f.nic(NIC, "ice", "eth0", Some(1), 8, NamingScheme::IceTxRx);
    f.msi_device(HBA, 0x010700, "mpt3sas", Some(0), &["mpt3sas0-msix0", "mpt3sas0-msix1"]);
    let (nic, hba) = (f.irqs_of(NIC).to_vec(), f.irqs_of(HBA).to_vec());
    for &irq in &hba {
        f.irq_affinity(irq, &cpus("0-23"));
    }
    (dir, nic, hba)
}

fn machine() -> tempfile::TempDir {
    machine_with_irqs().0
}

fn import(root: &Path, file: Option<&Path>) -> Output {
    let cfg = empty_config();
    let mut cmd = irqwise(root, cfg.path());
    cmd.arg("import-irqbalance");
    if let Some(f) = file {
        cmd.arg(f);
    }
    cmd.output().expect("run irqwise")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn debians_file_becomes_a_dropin_that_bans_the_cpus_for_every_irq_and_leaves_the_banned_irqs_device() {
    let (dir, nic_irqs, hba_irqs) = machine_with_irqs();
    let root = dir.path();
    let nic_irq = nic_irqs[0];
    write_file(root, "etc/default/irqbalance", &DEBIAN.replace("IRQ_OF_NIC", &nic_irq.to_string()));
    let out = import(root, None);
    let dropin = stdout(&out);
    assert_eq!(out.status.code(), Some(3), "policy script, hint policy and IRQ 9999 are untranslatable:\n{dropin}");
    assert!(dropin.contains("banned_cpus = \"2-7,18-23\""), "0x00fc00fc is CPUs 2-7 and 18-23:\n{dropin}");
    assert!(dropin.contains(&format!("match = {{ pci = \"{NIC}\" }}")), "{dropin}");
    assert!(dropin.contains("match = { driver = \"mlx4_core\" }"), "{dropin}");
    for noted in ["--policyscript=/usr/local/bin/irqpol", "--hintpolicy=subset", "--banirq=9999"] {
        assert!(dropin.contains(&format!("# - {noted}")), "{noted} noted:\n{dropin}");
    }
    // The drop-in is the configuration, without irqwise's live reading of the same file.
    let cfg = config_with("[global]\nimport_irqbalance_banned = false\n");
    write_file(cfg.path(), "etc/irqwise/conf.d/90-from-irqbalance.toml", &dropin);
    run_ok(root, cfg.path(), &["check-config", "--strict"]);
    run_ok(root, cfg.path(), &["apply"]);
    let banned = cpus("2-7,18-23");
    for &irq in &hba_irqs {
        let m = sysfs_list(root, &format!("proc/irq/{irq}/smp_affinity_list"));
        assert!(!m.intersects(&banned) && !m.is_empty(), "HBA irq {irq} on {m}");
    }
    let nic_mask = sysfs_list(root, &format!("proc/irq/{nic_irq}/smp_affinity_list"));
    assert_eq!(nic_mask, cpus("0-23"), "the NIC of the banned IRQ is left alone, bans included, as irqbalance left it");
}

#[test]
fn both_variables_quoted_and_unquoted_and_masks_over_32_cpus_in_comma_groups() {
    let dir = machine();
    let root = dir.path();
    let cases = [
        ("IRQBALANCE_BANNED_CPUS=\"00000000,0000ff00,00000003\"\n", "0-1,40-47"),
        ("export IRQBALANCE_BANNED_CPUS=0x3\n", "0-1"),
        ("IRQBALANCE_BANNED_CPULIST='2-7,40-47'\n", "2-7,40-47"),
        ("IRQBALANCE_BANNED_CPULIST=8-9 # tuned\nIRQBALANCE_BANNED_CPUS=1\n", "0,8-9"),
        ("IRQBALANCE_BANNED_CPUS=000000000000000f\n", "0-3"),
    ];
    for (text, want) in cases {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), text).unwrap();
        let out = import(root, Some(file.path()));
        let dropin = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{text}: {dropin}{}", String::from_utf8_lossy(&out.stderr));
        assert!(dropin.contains(&format!("banned_cpus = \"{want}\"")), "{text} → {want}:\n{dropin}");
        // CPUs 40-47 do not exist here: a warning, not an error (one drop-in for every machine).
        let cfg = config_with(&dropin);
        run_ok(root, cfg.path(), &["check-config"]);
    }
}

#[test]
fn a_file_of_defaults_says_there_is_nothing_to_translate() {
    let dir = machine();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), "#IRQBALANCE_BANNED_CPUS=\nIRQBALANCE_ARGS=\"--journal\"\n").unwrap();
    let out = import(dir.path(), Some(file.path()));
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("Nothing to translate"), "{}", stdout(&out));
}

#[test]
fn no_file_is_a_usage_error_naming_both_places() {
    let dir = machine();
    let out = import(dir.path(), None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("etc/default/irqbalance") && err.contains("etc/sysconfig/irqbalance"), "{err}");
    let out = import(dir.path(), Some(Path::new("/nonexistent/irqbalance")));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/irqbalance"));
}
