//! Reads the kernel's facts below a root: its BTF (`ROOT/sys/kernel/btf/vmlinux`) and the modules
//! of the NIC drivers present ([`modules`]), then decides each feature from BTF, else from the
//! version ([`KernelFacts::decide`]).
//!
//! Read-only and bounded: capped regular-file reads through [`Root`], the modules of the given
//! drivers only. What is absent is no warning (the facts say where each came from); what is
//! present but unreadable is one warning naming the file and what was wrong.

mod modules;

use std::collections::BTreeSet;

use crate::kernel::facts::{BtfState, Fact, FeatureRow, KernelFacts};
use crate::kernel::KernelVersion;
use crate::probe::btf::Btf;
use crate::sysfs::Root;

/// Where the running kernel's BTF is, relative to a root.
pub const BTF_PATH: &str = "sys/kernel/btf/vmlinux";

/// The largest BTF read: a distribution kernel's is 5-10 MB.
const BTF_LIMIT: u64 = 128 << 20;

/// The kernel's facts below `root` for kernel release `release` (`osrelease`) and the NIC
/// `drivers` present (as their PCI devices name them), and what could not be read.
pub fn read_kernel_facts(root: &Root, release: Option<&str>, drivers: &BTreeSet<String>) -> (KernelFacts, Vec<String>) {
    let version = release.and_then(|r| KernelVersion::parse(r).ok());
    let mut warnings = Vec::new();
    let (dir, drivers) = modules::read_drivers(root, release, drivers, &mut warnings);
    let path = root.path(BTF_PATH).display().to_string();
    let bytes = root.read_bytes_limited_optional(BTF_PATH, BTF_LIMIT);
    let parsed = match &bytes {
        Ok(Some(b)) => Some(Btf::parse(b)),
        _ => None,
    };
    let (state, btf) = match (&bytes, parsed) {
        (Err(e), _) => {
            warnings.push(format!("{e}; kernel facts from BTF unknown"));
            (BtfState::Unreadable { path, error: e.to_string() }, None)
        }
        (Ok(_), Some(Ok(btf))) => {
            let types = u32::try_from(btf.type_count()).unwrap_or(u32::MAX);
            (BtfState::Read { path, types }, Some(btf))
        }
        (Ok(_), Some(Err(e))) => {
            warnings.push(format!("{path}: not BTF irqwise can read ({e}); kernel facts from BTF unknown"));
            (BtfState::Unreadable { path, error: e.to_string() }, None)
        }
        (Ok(_), None) => (BtfState::Absent { path }, None),
    };
    let why = if matches!(state, BtfState::Absent { .. }) { "no BTF" } else { "BTF unreadable" };
    let answer = |row: &FeatureRow| btf.as_ref().map_or_else(|| Fact::unknown(why), |b| b.answer(&row.btf));
    (KernelFacts::decide(version, state, answer, dir, drivers), warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::facts::{FactSource, Feature};
    use crate::probe::btf::tests::small_kernel;

    fn root_with(btf: Option<&[u8]>, release: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("sys/kernel/btf")).unwrap();
        std::fs::create_dir_all(d.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(d.path().join("proc/sys/kernel/osrelease"), format!("{release}\n")).unwrap();
        if let Some(b) = btf {
            std::fs::write(d.path().join(BTF_PATH), b).unwrap();
        }
        d
    }

    #[test]
    fn btf_below_the_root_decides_and_its_absence_leaves_the_version() {
        let blob = small_kernel(false);
        let d = root_with(Some(&blob), "6.1.0-57-amd64");
        let (facts, warnings) = read_kernel_facts(&Root::new(d.path()), Some("6.1.0-57-amd64"), &BTreeSet::new());
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(matches!(facts.btf, BtfState::Read { types: 9, .. }), "{:?}", facts.btf);
        let cluster = facts.feature(Feature::ClusterGrouping);
        assert_eq!((cluster.value(), cluster.source()), (Some(true), FactSource::Btf), "a 6.1 with the cluster helper");
        let lease = facts.feature(Feature::QueueLease);
        assert_eq!((lease.value(), lease.source()), (Some(false), FactSource::Version));

        let d = root_with(None, "7.2.13-amd64");
        let (facts, warnings) = read_kernel_facts(&Root::new(d.path()), Some("7.2.13-amd64"), &BTreeSet::new());
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(matches!(facts.btf, BtfState::Absent { .. }));
        assert!(facts.features().all(|(_, f)| f.source() == FactSource::Version), "{facts:?}");
    }

    #[test]
    fn a_truncated_or_garbage_btf_is_one_warning_naming_the_file_and_every_fact_falls_back() {
        let blob = small_kernel(false);
        for bad in [&blob[..blob.len() / 2], &b"garbage, not BTF at all...."[..]] {
            let d = root_with(Some(bad), "7.2.13-amd64");
            let (facts, warnings) = read_kernel_facts(&Root::new(d.path()), Some("7.2.13-amd64"), &BTreeSet::new());
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(warnings[0].contains(&d.path().join(BTF_PATH).display().to_string()), "{}", warnings[0]);
            assert!(warnings[0].contains("not BTF irqwise can read ("), "{}", warnings[0]);
            assert!(matches!(facts.btf, BtfState::Unreadable { .. }));
            let c = facts.feature(Feature::ClusterGrouping);
            assert_eq!((c.value(), c.source()), (Some(true), FactSource::Version));
        }
    }

    /// The running kernel's own BTF, copied into a temporary root: read, walked, and every BTF
    /// sign answered or said unknown with a reason.
    #[test]
    fn this_machines_btf_is_read_whole() {
        let Ok(blob) = std::fs::read("/sys/kernel/btf/vmlinux") else {
            crate::probe::tests::skip_or_fail("no /sys/kernel/btf/vmlinux on this machine");
            return;
        };
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let d = root_with(Some(&blob), release.trim());
        let started = std::time::Instant::now();
        let (facts, warnings) = read_kernel_facts(&Root::new(d.path()), Some(release.trim()), &BTreeSet::new());
        eprintln!("{} bytes of BTF probed in {:?}", blob.len(), started.elapsed());
        assert!(warnings.is_empty(), "{warnings:?}");
        let BtfState::Read { types, .. } = facts.btf else { panic!("{:?}", facts.btf) };
        assert!(types > 1000, "{types} types");
        for (row, fact) in facts.features() {
            eprintln!("{:<28} {:?} {:<8} {}", row.name, fact.value(), fact.source().as_str(), fact.evidence());
            assert!(!fact.evidence().is_empty(), "{}", row.name);
        }
        // Every kernel with BTF since 5.17 has enum hk_type with HK_TYPE_MANAGED_IRQ: the answer
        // comes from BTF, whatever it is.
        assert_eq!(facts.feature(Feature::IoQueueIsolation).source(), FactSource::Btf);
    }
}
