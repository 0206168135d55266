//! What the daemon keeps between passes of what it read, and what the next pass must read
//! again: everything after a reconcile, an overflow, a reload, an isolation change or a failed
//! pass; after CPU events, the CPU lists, the directories of the CPUs that changed (and their
//! neighbours) and the affinity files of the IRQs whose masks hold them; after device and link
//! events, the devices they name. The IRQs a pass wrote are always read again by the next.
//!
//! A topology read the kernel refused (an errno: reads of a CPU's topology files fail for a
//! moment while a CPU comes or goes) is not reported at once: the read is held, the next pass
//! reads everything again, and a follow-up pass ([`Rescan::recheck_due`]) comes
//! [`RECHECK_AFTER`] later when no event brings one. A refusal is a warning only when two reads
//! in a row give it with no CPU event between them.
//!
//! Invariant (the property test of `tests/incremental.rs`): when only what the events name
//! changed, a pass on what this returns plans and writes what a full pass would. A mask another
//! owner edits without an event is seen by the next pass that reads that IRQ: the reconcile
//! timer's at the latest.

use std::collections::BTreeSet;

use crate::cpuset::CpuSet;
use crate::devices::{discover_devices_keeping, rediscover_devices, DeviceReads, DeviceScope, Discovery};
use crate::engine::EngineError;
use crate::events::Batch;
use crate::sysfs::Root;
use crate::topology::{Topology, TopologyError, TopologyReads};

/// What was read, and what of it is stale.
#[derive(Debug, Default)]
pub struct Rescan {
    /// The last topology read, its warnings and its reads; `None` before the first.
    topology: Option<(Topology, Vec<String>, TopologyReads)>,
    devices: Option<DeviceReads>,
    stale: Stale,
    /// Interface indexes whose link is no PCI device's (a veth, a bridge): their events read
    /// nothing.
    virtual_links: BTreeSet<u32>,
    /// The CPUs that came or went before the last read (see [`Rescan::hotplugged`]).
    hotplugged: CpuSet,
    /// The refused reads of the last topology read (as warning texts), and when to read again
    /// because some of them were new.
    refused: Refused,
}

/// How long after a read with new refusals the follow-up pass reads again when no event does.
pub const RECHECK_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// Refused reads, and devices found vanishing, held back until a second read confirms them.
#[derive(Debug, Default)]
struct Refused {
    /// The refusals of the last topology read; forgotten at a CPU event (a race explains them).
    held: BTreeSet<String>,
    /// The devices the last device read found vanishing.
    vanishing: BTreeSet<String>,
    recheck_at: Option<std::time::Instant>,
}

impl Refused {
    /// The warnings to report of a read's: every other one, and the refusals the read before
    /// gave too. New refusals schedule a recheck.
    fn sort(&mut self, warnings: Vec<crate::topology::discover::TopologyWarning>) -> Vec<String> {
        let mut held = BTreeSet::new();
        let mut report = Vec::new();
        for w in warnings {
            let text = w.to_string();
            if !w.transient || hold(&self.held, &mut held, &text) {
                report.push(text);
            }
        }
        let news = !held.is_subset(&self.held);
        self.held = held;
        self.recheck_at = news.then(|| std::time::Instant::now() + RECHECK_AFTER);
        report
    }

    /// Takes out of a device read's `warnings` every device found vanishing (a hot removal
    /// racing the read) that the read before did not find vanishing too, logging it at info;
    /// a new one schedules a recheck, as a new refusal does. Runs after the same pass's
    /// [`Refused::sort`], which sets the recheck from the topology read alone, so it only adds.
    fn sort_devices(&mut self, warnings: &mut Vec<crate::devices::DeviceError>) {
        let mut held = BTreeSet::new();
        warnings.retain(|w| {
            if !w.is_vanished() {
                return true;
            }
            let text = w.to_string();
            let repeated = hold(&self.vanishing, &mut held, &text);
            if !repeated {
                let again = RECHECK_AFTER.as_secs();
                tracing::info!("{}; reading the devices again in {again} s", crate::text::printable(&text));
            }
            repeated
        });
        if !held.is_subset(&self.vanishing) {
            self.recheck_at = Some(std::time::Instant::now() + RECHECK_AFTER);
        }
        self.vanishing = held;
    }
}

/// Holds `text`, a transient problem of this read, in `now`; whether to report it: only when
/// the read before (`before`) held it too.
fn hold(before: &BTreeSet<String>, now: &mut BTreeSet<String>, text: &str) -> bool {
    now.insert(text.to_string());
    before.contains(text)
}

/// What events asked to read again since the last successful pass.
#[derive(Debug, Default)]
struct Stale {
    /// Everything (the start, a reconcile, lost events, ...).
    everything: bool,
    cpus: CpuSet,
    /// Devices by PCI address.
    devices: BTreeSet<String>,
    /// An event no device address could be taken from: every device.
    all_devices: bool,
    /// IRQs the last pass wrote (or tried to).
    irqs: BTreeSet<u32>,
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
    /// A rescan that reads everything first.
    pub fn new() -> Rescan {
        Rescan { stale: Stale { everything: true, ..Stale::default() }, ..Rescan::default() }
    }

    /// Forgets what was read: the next pass reads everything.
    pub fn everything(&mut self) {
        self.stale.everything = true;
    }

    /// Notes what `batch`'s events can have changed.
    pub fn note(&mut self, root: &Root, batch: &Batch) {
        if !batch.cpus.is_empty() || batch.cpus_changed {
            self.refused.held.clear();
        }
        if batch.may_change_topology() && !batch.cpus_changed {
            self.stale.everything = true;
        }
        if batch.reload || batch.stop || batch.overflow || batch.reconcile || batch.isolation {
            self.stale.everything = true;
        }
        self.stale.cpus.extend_with(&batch.cpus);
        for devpath in &batch.devpaths {
            match pci_address(devpath) {
                Some(bdf) => {
                    self.stale.devices.insert(bdf.to_string());
                }
                None if devpath.starts_with("/devices/virtual/") => {}
                None => self.stale.all_devices = true,
            }
        }
        for (ifindex, link) in &batch.links {
            match self.link_device(root, *ifindex, link.name.as_deref()) {
                Some(Some(bdf)) => {
                    self.stale.devices.insert(bdf);
                }
                Some(None) => {}
                None => self.stale.all_devices = true,
            }
        }
    }

    /// The PCI address of interface `name` (`Some(None)`: a virtual interface, no device; `None`:
    /// cannot tell).
    fn link_device(&mut self, root: &Root, ifindex: u32, name: Option<&str>) -> Option<Option<String>> {
        if self.virtual_links.contains(&ifindex) {
            return Some(None);
        }
        let name = name?;
        let known = self.devices.as_ref().and_then(|d| d.bdf_of_interface(name));
        if let Some(bdf) = known {
            return Some(Some(bdf));
        }
        let target = root.link_target(format!("sys/class/net/{name}")).ok()?;
        let target = target.to_string_lossy();
        if target.contains("/devices/virtual/") {
            self.virtual_links.insert(ifindex);
            return Some(None);
        }
        pci_address(&target).map(|b| Some(b.to_string()))
    }

    /// The CPUs CPU events named between the pass before the last read and that read: an IRQ
    /// placed on one of them may have been moved by the kernel (its CPU-offline fallback), even
    /// when the CPU is back by now.
    pub fn hotplugged(&self) -> &CpuSet {
        &self.hotplugged
    }

    /// When the follow-up pass of a read with new refusals is due; `None` when none is.
    pub fn recheck_due(&self) -> Option<std::time::Instant> {
        self.refused.recheck_at
    }

    /// Takes back the devices [`Rescan::read`] handed to the pass (it lends rather than copies
    /// them); devices not given back are read again, whole, by the next pass.
    pub fn give_back(&mut self, devices: Vec<crate::devices::Device>) {
        if let Some(reads) = self.devices.as_mut() {
            reads.give_back(devices);
        }
    }

    /// Notes the IRQs a pass wrote or tried to: the next pass reads their masks again.
    pub fn wrote(&mut self, irqs: impl IntoIterator<Item = u32>) {
        self.stale.irqs.extend(irqs);
    }

    /// The topology (read again as the events require), its warnings, and the devices. When the
    /// topology cannot be read again, the last one that could, with a warning saying so. On
    /// success what was stale is current; on failure (or on the last topology, or while a
    /// recheck of refused reads is due) everything stays stale.
    pub fn read(&mut self, root: &Root) -> Result<(Topology, Vec<String>, Discovery), EngineError> {
        self.hotplugged = self.stale.cpus.clone();
        let mut keep_stale = false;
        let result = self.read_stale(root, &mut keep_stale);
        if result.is_ok() && !keep_stale && self.refused.recheck_at.is_none() {
            self.stale = Stale::default();
        } else {
            self.stale.everything = true;
        }
        result
    }

    fn read_stale(
        &mut self,
        root: &Root,
        on_last: &mut bool,
    ) -> Result<(Topology, Vec<String>, Discovery), EngineError> {
        let stale = &self.stale;
        let reread = match &mut self.topology {
            Some((_, _, reads)) if !stale.everything && !stale.cpus.is_empty() => {
                // Taken, not copied: a failure reads everything next time anyway.
                Some(Topology::rediscover(root, std::mem::take(reads), &stale.cpus))
            }
            Some(_) if !stale.everything => None,
            _ => Some(Topology::discover_keeping(root)),
        };
        let mut last_warning = None;
        match reread {
            Some(Ok((topology, warnings, reads))) => {
                let warnings = self.refused.sort(warnings);
                self.topology = Some((topology, warnings, reads));
            }
            Some(Err(e)) if self.topology.is_some() => {
                *on_last = true;
                last_warning = Some(format!("cannot read the topology ({e}); planning with the last one read"));
            }
            Some(Err(e)) => return Err(e.into()),
            None => {}
        }
        let Some((topology, kept_warnings, _)) = &self.topology else {
            let path = root.path("sys/devices/system/cpu").display().to_string();
            return Err(TopologyError::Inconsistent { path, problem: "never read".into() }.into());
        };
        let warnings = match last_warning {
            Some(w) => vec![w],
            None => kept_warnings.clone(),
        };
        let devices = match (self.devices.take(), stale.everything || *on_last) {
            (Some(before), false) => {
                let scope = DeviceScope {
                    devices: (!stale.all_devices).then(|| stale.devices.clone()),
                    irqs: stale.irqs.clone(),
                    cpus: stale.cpus.clone(),
                };
                rediscover_devices(root, topology, before, &scope)
            }
            _ => discover_devices_keeping(root, topology),
        };
        let (mut discovery, reads) = devices?;
        self.devices = Some(reads);
        // A device removed while the pass read it: everything is read again shortly, when its
        // removal is complete; only a second read in a row that sees it half-gone warns.
        self.refused.sort_devices(&mut discovery.warnings);
        Ok((topology.clone(), warnings, discovery))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vanishing_device_warns_only_when_two_reads_in_a_row_see_it() {
        use crate::devices::DeviceError;
        let gone =
            || DeviceError::Vanished { bdf: "0000:92:00.0".into(), path: "/sys/bus/pci/devices/0000:92:00.0".into() };
        let other = || DeviceError::Kept("IRQ 5 of PCI device 0000:01:00.0: bad".into());
        let mut r = Refused::default();
        let mut w = vec![gone(), other()];
        r.sort_devices(&mut w);
        assert!(r.recheck_at.take().is_some(), "first sight: held, a recheck is due");
        assert_eq!(w.len(), 1);
        assert!(!w[0].is_vanished());
        let mut w = vec![gone()];
        r.sort_devices(&mut w);
        assert!(r.recheck_at.is_none(), "seen again in a row: reported, no recheck");
        assert_eq!(w.len(), 1);
        let mut w = vec![other()];
        r.sort_devices(&mut w);
        let mut w = vec![gone()];
        r.sort_devices(&mut w);
        assert!(r.recheck_at.is_some(), "a read without it in between forgets it");
        assert!(w.is_empty());
    }

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
        let mut r = Rescan::new();
        r.stale = Stale::default();
        r.note(&root, &link(7, "veth0"));
        let veth1 = ["/devices/virtual/net/veth1".to_string()].into();
        r.note(&root, &Batch { devices_changed: true, devpaths: veth1, ..Batch::default() });
        assert!(r.stale.devices.is_empty() && !r.stale.all_devices, "virtual interfaces read nothing");
        r.note(&root, &link(2, "ens3"));
        assert_eq!(r.stale.devices, ["0000:00:03.0".to_string()].into());
        assert!(!r.stale.everything && !r.stale.all_devices);
        r.note(&root, &link(9, "gone0"));
        assert!(r.stale.all_devices, "an interface that cannot be traced: every device");
        r.note(&root, &Batch { cpus_changed: true, cpus: CpuSet::single(3), ..Batch::default() });
        assert!(!r.stale.everything && r.stale.cpus.contains(3));
        r.note(&root, &Batch { reconcile: true, ..Batch::default() });
        assert!(r.stale.everything);
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
