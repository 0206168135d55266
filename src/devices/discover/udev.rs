//! udevd's database (`run/udev/data/`): the properties `match.property.*` rules match on.

use std::collections::BTreeMap;

use crate::devices::Device;
use crate::sysfs::Root;

/// udev properties (`E:KEY=VALUE` lines of udevd's database) of the PCI device and of its
/// network interfaces; empty where udevd does not run. Later sources win per key.
pub(crate) fn udev_properties(root: &Root, d: &Device) -> BTreeMap<String, String> {
    let mut files = vec![format!("run/udev/data/+pci:{}", d.bdf)];
    for ifname in &d.interfaces {
        if let Ok(Some(index)) = root.read_optional(format!("sys/class/net/{ifname}/ifindex")) {
            files.push(format!("run/udev/data/n{}", index.trim()));
        }
    }
    let mut props = BTreeMap::new();
    for text in files.iter().filter_map(|f| root.read_optional(f).ok().flatten()) {
        for (k, v) in text.lines().filter_map(|l| l.strip_prefix("E:")).filter_map(|kv| kv.split_once('=')) {
            props.insert(k.to_string(), v.to_string());
        }
    }
    props
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::DeviceClass;

    #[test]
    fn udev_properties_come_from_the_pci_and_net_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join("run/udev/data")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("sys/class/net/eth7")).expect("mkdir");
        std::fs::write(dir.path().join("sys/class/net/eth7/ifindex"), "7\n").expect("write");
        std::fs::write(
            dir.path().join("run/udev/data/+pci:0000:81:00.0"),
            "I:1\nE:ID_PATH=pci-0000:81:00.0\nE:X=pci\n",
        )
        .expect("write");
        std::fs::write(dir.path().join("run/udev/data/n7"), "E:ID_NET_NAME_PATH=enp129s0\nE:X=net\nG:junk\n")
            .expect("write");
        let d = Device {
            bdf: "0000:81:00.0".into(),
            class: DeviceClass::Nic,
            pci_class: 0x020000,
            vendor: None,
            device: None,
            driver: Some("ice".into()),
            name: Some("eth7".into()),
            interfaces: vec!["eth7".into()],
            node: Some(1),
            local_cpus: None,
            vectors: Vec::new(),
            nvme: None,
        };
        let props = udev_properties(&root, &d);
        assert_eq!(props.get("ID_PATH").map(String::as_str), Some("pci-0000:81:00.0"));
        assert_eq!(props.get("ID_NET_NAME_PATH").map(String::as_str), Some("enp129s0"));
        assert_eq!(props.get("X").map(String::as_str), Some("net"), "the interface's entry is read last");
        assert_eq!(props.len(), 3);
    }
}
