//! A NIC's transmit queues (`net/IF/queues/tx-N/{xps_cpus,traffic_class}`), read through the
//! device's real directory so that the paths can be written (writes follow no symlink).

use std::path::{Component, Path};

use super::PCI_DEVICES;
use crate::cpuset::CpuSet;
use crate::devices::net_queues::{NetQueues, TxQueue, XpsState};
use crate::sysfs::Root;

/// More transmit queues than a net device can have (`alloc_netdev_mqs()` warns above 4096): an
/// index at or beyond it is not read.
pub(crate) const MAX_TX_QUEUES: u32 = 4096;

/// The real directory of PCI device `bdf`, relative to the root: the target of
/// `sys/bus/pci/devices/BDF` resolved without the filesystem (sysfs device directories hold no
/// symlink), or that entry itself where it is a directory (a snapshot's copy). `None` when it is
/// neither a link into `sys/devices` nor a directory. Not recorded for snapshots: reads go
/// through the bus entry, as every other reader's do.
pub(crate) fn pci_device_dir(root: &Root, bdf: &str) -> Option<String> {
    let link = format!("{PCI_DEVICES}/{bdf}");
    let Some(target) = root.link_target(&link).ok() else {
        return root.is_dir(&link).then_some(link);
    };
    let mut parts: Vec<String> =
        if target.is_absolute() { Vec::new() } else { PCI_DEVICES.split('/').map(String::from).collect() };
    for c in target.components() {
        match c {
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::Normal(name) => parts.push(name.to_str()?.to_string()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    let dir = parts.join("/");
    dir.starts_with("sys/devices/").then_some(dir)
}

/// The transmit queues of `interface` of PCI device `bdf` (its own `net/` or a virtio child's),
/// read through `sys/bus/pci/devices/BDF` like the rest of the device; `NetQueues::dir` is the
/// same directory through no symlink, for writing. `Ok(None)` when the interface has no queue
/// directory; `Err` (what is wrong) when the device's real directory cannot be found.
pub(crate) fn read_net_queues(root: &Root, bdf: &str, interface: &str) -> Result<Option<NetQueues>, String> {
    if interface.contains('/') || interface == ".." || interface == "." {
        return Err(format!("interface name {interface:?} is not a file name"));
    }
    let bus = format!("{PCI_DEVICES}/{bdf}");
    let mut candidates = vec![format!("net/{interface}")];
    let children = root.list_dir_noting(&bus, |n| n.starts_with("virtio")).map_err(|e| e.to_string())?;
    candidates.extend(children.iter().filter(|c| c.starts_with("virtio")).map(|c| format!("{c}/net/{interface}")));
    let Some(inside) = candidates.into_iter().find(|c| root.is_dir(format!("{bus}/{c}"))) else { return Ok(None) };
    let read_dir = format!("{bus}/{inside}/queues");
    let names = root.list_dir_noting(&read_dir, |n| n.starts_with("tx-")).map_err(|e| e.to_string())?;
    let mut indexes: Vec<u32> = names
        .iter()
        .filter_map(|n| n.strip_prefix("tx-"))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|n| n.parse().ok())
        .filter(|&i| i < MAX_TX_QUEUES)
        .collect();
    if indexes.is_empty() {
        return Ok(None);
    }
    indexes.sort_unstable();
    let dev =
        pci_device_dir(root, bdf).ok_or_else(|| format!("{bus} is neither a link into sys/devices nor a directory"))?;
    let tx = indexes.into_iter().map(|index| read_tx_queue(root, &read_dir, index)).collect();
    Ok(Some(NetQueues { interface: interface.to_string(), dir: format!("{dev}/{inside}/queues"), tx }))
}

/// One `tx-N` directory.
fn read_tx_queue(root: &Root, dir: &str, index: u32) -> TxQueue {
    let base = format!("{dir}/tx-{index}");
    let xps = match root.read_small_optional(format!("{base}/xps_cpus")) {
        Ok(None) => XpsState::Absent,
        Ok(Some(text)) => match CpuSet::parse_mask(text.trim()) {
            Ok(set) => XpsState::Cpus(set),
            Err(e) => XpsState::Unreadable(format!("{}: {e}", root.path(format!("{base}/xps_cpus")).display())),
        },
        Err(e) => XpsState::Unreadable(e.to_string()),
    };
    let traffic_class = match root.read_small_optional(format!("{base}/traffic_class")) {
        Ok(text) => text.map(|t| t.trim().to_string()),
        Err(e) => Some(format!("unreadable ({e})")),
    };
    TxQueue { index, xps, traffic_class }
}

/// Whether `path` (relative) names a file inside the root's device tree: `sys/devices`, or a
/// snapshot's copy of a PCI device under `sys/bus/pci/devices`.
pub(crate) fn is_device_path(path: &str) -> bool {
    let p = Path::new(path);
    (p.starts_with("sys/devices") || p.starts_with(PCI_DEVICES))
        && p.components().all(|c| matches!(c, Component::Normal(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bus_link_resolves_to_the_device_directory() {
        let dir = tempfile::tempdir().unwrap();
        let dev = dir.path().join("sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0");
        std::fs::create_dir_all(dev.join("virtio3/net/eth9/queues/tx-1")).unwrap();
        std::fs::create_dir_all(dev.join("virtio3/net/eth9/queues/tx-0")).unwrap();
        std::fs::create_dir_all(dev.join("virtio3/net/eth9/queues/rx-0")).unwrap();
        std::fs::write(dev.join("virtio3/net/eth9/queues/tx-0/xps_cpus"), "00000000,00000003\n").unwrap();
        std::fs::write(dev.join("virtio3/net/eth9/queues/tx-0/traffic_class"), "0\n").unwrap();
        std::fs::create_dir_all(dir.path().join("sys/bus/pci/devices")).unwrap();
        std::os::unix::fs::symlink(
            "../../../devices/pci0000:80/0000:80:01.0/0000:81:00.0",
            dir.path().join("sys/bus/pci/devices/0000:81:00.0"),
        )
        .unwrap();
        let root = Root::new(dir.path());
        assert_eq!(
            pci_device_dir(&root, "0000:81:00.0").as_deref(),
            Some("sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0")
        );
        let q = read_net_queues(&root, "0000:81:00.0", "eth9").unwrap().unwrap();
        assert_eq!(q.dir, "sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0/virtio3/net/eth9/queues");
        assert_eq!(q.tx.iter().map(|t| t.index).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(q.tx[0].xps, XpsState::Cpus(CpuSet::first_n(2)));
        assert_eq!(q.tx[0].traffic_class.as_deref(), Some("0"));
        assert_eq!((&q.tx[1].xps, &q.tx[1].traffic_class), (&XpsState::Absent, &None));
        assert!(read_net_queues(&root, "0000:81:00.0", "eth0").unwrap().is_none());
        assert!(read_net_queues(&root, "0000:81:00.0", "../x").is_err());
        assert!(is_device_path(&q.xps_path(0)) && !is_device_path("sys/devices/../../etc/passwd"));
    }
}
