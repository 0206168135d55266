//! What a batch of events makes stale in the sample the daemon keeps ([`SampleReader`]):
//! everything after an overflow, a reload, an isolation change or a stop, and on every
//! `reconcile_full_every`-th reconcile; what can drift without an event after the other reconciles
//! ([`SampleReader::stale_drift`]); after CPU events, the CPUs they name; after device and link
//! events, the devices they name (a virtual interface's link names none).

use std::collections::BTreeSet;

use crate::events::Batch;
use crate::sample::reader::SampleReader;
use crate::sysfs::Root;

/// Turns event batches into what the reader must read again.
#[derive(Debug, Default)]
pub(crate) struct Rescan {
    /// Interface indexes whose link is no PCI device's (a veth, a bridge): their events read
    /// nothing.
    virtual_links: BTreeSet<u32>,
    /// Reconciles so far.
    reconciles: u64,
}

/// Whose network interface a link event is about.
enum LinkOwner {
    /// The PCI device at this address.
    Device(String),
    /// A virtual interface (a veth, a bridge): no device.
    Virtual,
    /// It cannot be told (the interface is gone, or its path names no PCI device).
    Unknown,
}

/// The last PCI address (`dddd:bb:dd.f`) of a device path: the function the device hangs off.
fn pci_address(devpath: &str) -> Option<&str> {
    devpath.split('/').rfind(|c| is_pci_address(c))
}

fn is_pci_address(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 12
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b':',
            10 => c == b'.',
            _ => c.is_ascii_hexdigit(),
        })
}

impl Rescan {
    /// Marks in `reader` what `batch`'s events can have changed. Every `full_every`-th reconcile
    /// reads the whole machine again: what no drift check covers (a device's attributes, an IRQ
    /// renamed under the same number) is then at most that many reconcile intervals old.
    pub(crate) fn note(&mut self, root: &Root, batch: &Batch, reader: &mut SampleReader, full_every: u32) {
        if !batch.cpus.is_empty() || batch.cpus_changed {
            reader.stale_cpus(&batch.cpus);
        }
        if batch.may_change_topology() && !batch.cpus_changed {
            reader.stale_everything();
        }
        if batch.reload || batch.stop || batch.overflow || batch.isolation {
            reader.stale_everything();
        }
        if batch.reconcile {
            self.reconciles += 1;
            if self.reconciles.is_multiple_of(u64::from(full_every.max(1))) {
                reader.stale_everything();
            } else {
                reader.stale_drift();
            }
        }
        for devpath in &batch.devpaths {
            match pci_address(devpath) {
                Some(bdf) => reader.stale_device(bdf.to_string()),
                None if devpath.starts_with("/devices/virtual/") => {}
                None => reader.stale_all_devices(),
            }
        }
        for (ifindex, link) in &batch.links {
            match self.link_device(root, reader, *ifindex, link.name.as_deref()) {
                LinkOwner::Device(bdf) => reader.stale_device(bdf),
                LinkOwner::Virtual => {}
                LinkOwner::Unknown => reader.stale_all_devices(),
            }
        }
    }

    /// Whose interface `name` (index `ifindex`) is.
    fn link_device(&mut self, root: &Root, reader: &SampleReader, ifindex: u32, name: Option<&str>) -> LinkOwner {
        if self.virtual_links.contains(&ifindex) {
            return LinkOwner::Virtual;
        }
        let Some(name) = name else { return LinkOwner::Unknown };
        if let Some(bdf) = reader.device_of_interface(name) {
            return LinkOwner::Device(bdf);
        }
        let Ok(target) = root.link_target(format!("sys/class/net/{name}")) else { return LinkOwner::Unknown };
        let target = target.to_string_lossy();
        if target.contains("/devices/virtual/") {
            self.virtual_links.insert(ifindex);
            return LinkOwner::Virtual;
        }
        pci_address(&target).map_or(LinkOwner::Unknown, |b| LinkOwner::Device(b.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuset::CpuSet;

    use std::path::Path;

    /// The configuration's default `reconcile_full_every`.
    const FULL_EVERY: u32 = 10;

    fn link(ifindex: u32, name: &str) -> Batch {
        let mut b = Batch { triggers: 1, ..Batch::default() };
        b.links.insert(ifindex, crate::events::LinkState { name: Some(name.into()), up: true });
        b
    }

    #[test]
    fn events_name_the_devices_to_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let net = dir.path().join("sys/class/net");
        std::fs::create_dir_all(&net).unwrap();
        std::os::unix::fs::symlink("../../devices/virtual/net/veth0", net.join("veth0")).unwrap();
        std::os::unix::fs::symlink("../../devices/pci0000:00/0000:00:03.0/net/ens3", net.join("ens3")).unwrap();
        let root = Root::new(dir.path());
        let mut r = Rescan::default();
        let mut reader = SampleReader::holding();
        reader.forget_stale();
        r.note(&root, &link(7, "veth0"), &mut reader, FULL_EVERY);
        let veth1 = ["/devices/virtual/net/veth1".to_string()].into();
        r.note(&root, &Batch { devices_changed: true, devpaths: veth1, ..Batch::default() }, &mut reader, FULL_EVERY);
        assert_eq!(
            reader.stale_summary(),
            (false, CpuSet::new(), BTreeSet::new(), false),
            "virtual interfaces read nothing"
        );
        r.note(&root, &link(2, "ens3"), &mut reader, FULL_EVERY);
        assert_eq!(reader.stale_summary(), (false, CpuSet::new(), ["0000:00:03.0".to_string()].into(), false));
        r.note(&root, &link(9, "gone0"), &mut reader, FULL_EVERY);
        assert!(reader.stale_summary().3, "an interface that cannot be traced: every device");
        r.note(
            &root,
            &Batch { cpus_changed: true, cpus: CpuSet::single(3), ..Batch::default() },
            &mut reader,
            FULL_EVERY,
        );
        let (everything, cpus, _, _) = reader.stale_summary();
        assert!(!everything && cpus.contains(3));
        reader.forget_stale();
        for n in 1..=FULL_EVERY {
            r.note(&root, &Batch { reconcile: true, ..Batch::default() }, &mut reader, FULL_EVERY);
            let full = n == FULL_EVERY;
            assert_eq!(reader.stale_summary().0, full, "reconcile {n}: everything only at the {FULL_EVERY}th");
            assert_eq!(reader.drift_pending(), !full, "reconcile {n}: a drift check otherwise");
            reader.forget_stale();
        }
    }

    #[test]
    fn every_full_every_th_reconcile_reads_everything() {
        let root = Root::new(Path::new("/nonexistent"));
        let (mut r, mut reader) = (Rescan::default(), SampleReader::holding());
        reader.forget_stale();
        let full: Vec<bool> = (1..=6)
            .map(|_| {
                r.note(&root, &Batch { reconcile: true, ..Batch::default() }, &mut reader, 3);
                let everything = reader.stale_summary().0;
                reader.forget_stale();
                everything
            })
            .collect();
        assert_eq!(full, [false, false, true, false, false, true], "reconcile_full_every = 3");
    }

    #[test]
    fn a_device_path_names_the_last_pci_function_on_it() {
        let nic = "/devices/pci0000:00/0000:00:03.0/0000:05:00.1/net/ens5f1";
        assert_eq!(pci_address(nic), Some("0000:05:00.1"));
        assert_eq!(pci_address("/devices/pci0000:00/0000:00:04.0/nvme/nvme0"), Some("0000:00:04.0"));
        assert_eq!(pci_address("/devices/virtual/net/veth0"), None);
        assert_eq!(pci_address("/devices/platform/serial8250"), None);
    }
}
