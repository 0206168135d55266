//! What a container lacks for irqwise, said once at start in one line each, naming the setting
//! that gives it: the host's PID namespace (NAPI threads and claims' pids), the host's network
//! namespace (its NICs, netlink and link events), a writable `/proc/irq` (containerd and CRI-O
//! mount it read-only unless the container is privileged).
//!
//! The facts are read once ([`ContainerFacts::read`]); [`diagnose`] is pure.

use crate::sysfs::Root;

/// What start-up reads of the daemon's surroundings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ContainerFacts {
    /// A container runtime's mark: `/run/.containerenv` (podman, CRI-O), `/.dockerenv`, the
    /// `container` variable, or Kubernetes' service variables; `None` on a host.
    pub runtime: Option<String>,
    /// Kernel threads are visible (`/proc/2` is `kthreadd`): the host's PID namespace.
    pub host_pids: bool,
    /// PCI network controllers the bus lists.
    pub pci_nics: usize,
    /// Network interfaces of this namespace backed by a device (a `device` link).
    pub device_interfaces: usize,
    /// `/proc/irq` is on a read-only mount.
    pub proc_irq_readonly: bool,
}

impl ContainerFacts {
    /// Reads the facts on this machine (`root` must be `/`; another root is no container).
    pub fn read(root: &Root) -> ContainerFacts {
        if !root.is_this_machine() {
            return ContainerFacts { host_pids: true, ..ContainerFacts::default() };
        }
        let runtime = runtime_mark(&|rel| root.exists(rel), &|name| std::env::var_os(name));
        let host_pids = root.read_small_optional("proc/2/comm").ok().flatten().is_some_and(|c| c.trim() == "kthreadd");
        let pci_nics = root
            .list_dir_optional("sys/bus/pci/devices")
            .unwrap_or_default()
            .iter()
            .filter(|d| {
                let class = root.read_small_optional(format!("sys/bus/pci/devices/{d}/class")).ok().flatten();
                class.is_some_and(|c| c.trim().starts_with("0x02"))
            })
            .count();
        let device_interfaces = root
            .list_dir_optional("sys/class/net")
            .unwrap_or_default()
            .iter()
            .filter(|i| root.exists(format!("sys/class/net/{i}/device")))
            .count();
        let proc_irq_readonly = nix::sys::statvfs::statvfs(&root.path("proc/irq"))
            .is_ok_and(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY));
        ContainerFacts { runtime, host_pids, pci_nics, device_interfaces, proc_irq_readonly }
    }
}

/// Characters of the `container` variable kept in the diagnosis.
const RUNTIME_CHARS: usize = 64;

/// A container runtime's mark, from whether a file exists below the root (`exists`) and the
/// environment (`var`); `None` on a host. The `container` variable is anyone's text: cut to
/// [`RUNTIME_CHARS`] characters and escaped ([`crate::text::printable`]), so the line that
/// names it stays one line in every log format.
fn runtime_mark(exists: &dyn Fn(&str) -> bool, var: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Option<String> {
    if exists("run/.containerenv") {
        Some("podman or CRI-O (/run/.containerenv)".to_string())
    } else if exists(".dockerenv") {
        Some("docker (/.dockerenv)".to_string())
    } else if var("KUBERNETES_SERVICE_HOST").is_some() {
        Some("Kubernetes (KUBERNETES_SERVICE_HOST)".to_string())
    } else {
        let value = var("container")?;
        let value: String = value.to_string_lossy().chars().take(RUNTIME_CHARS).collect();
        Some(format!("{} (the container variable)", crate::text::printable(&value)))
    }
}

/// One line per missing setting, each naming it for Kubernetes and podman. Guarantees: nothing
/// outside a container, and a line only for what the facts show missing.
pub(crate) fn diagnose(f: &ContainerFacts) -> Vec<String> {
    let Some(runtime) = &f.runtime else { return Vec::new() };
    let mut out = Vec::new();
    if f.proc_irq_readonly {
        out.push(format!(
            "in a container ({runtime}), /proc/irq is read-only: no IRQ can be placed; run it privileged (Kubernetes: securityContext.privileged: true; podman: --privileged)"
        ));
    }
    if f.pci_nics > 0 && f.device_interfaces == 0 {
        out.push(format!(
            "in a container ({runtime}), not in the host's network namespace: none of the {} PCI network controllers has an interface here, so NICs, their queues and link events are not seen (Kubernetes: hostNetwork: true; podman: --network host)",
            f.pci_nics
        ));
    }
    if !f.host_pids {
        out.push(format!(
            "in a container ({runtime}), not in the host's PID namespace: NAPI threads and the processes of claims are not seen (Kubernetes: hostPID: true; podman: --pid host)"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_like() -> ContainerFacts {
        ContainerFacts {
            runtime: Some("podman or CRI-O (/run/.containerenv)".into()),
            host_pids: true,
            pci_nics: 1,
            device_interfaces: 1,
            proc_irq_readonly: false,
        }
    }

    #[test]
    fn a_container_with_every_setting_and_a_host_are_quiet() {
        assert!(diagnose(&host_like()).is_empty());
        let host = ContainerFacts { runtime: None, host_pids: false, pci_nics: 2, ..ContainerFacts::default() };
        assert!(diagnose(&host).is_empty(), "a host is never told to use container settings");
    }

    #[test]
    fn the_container_variable_is_named_escaped_and_cut() {
        let none = |_: &str| false;
        let env = |value: &'static str| move |name: &str| (name == "container").then(|| value.into());
        assert_eq!(runtime_mark(&none, &|_| None), None, "a host");
        assert_eq!(runtime_mark(&none, &env("podman")).as_deref(), Some("podman (the container variable)"));
        let forged = runtime_mark(&none, &env("x\nWARN forged line\x1b[2J")).unwrap();
        assert_eq!(forged, "x\\x0aWARN forged line\\x1b[2J (the container variable)");
        let long = runtime_mark(&none, &env(Box::leak("y".repeat(10_000).into_boxed_str()))).unwrap();
        assert_eq!(long, format!("{} (the container variable)", "y".repeat(RUNTIME_CHARS)));
        let facts = ContainerFacts { runtime: Some(forged), host_pids: false, ..host_like() };
        assert!(diagnose(&facts).iter().all(|l| !l.contains('\n')), "{:?}", diagnose(&facts));
        // The files first, then Kubernetes' variables.
        let docker = |rel: &str| rel == ".dockerenv";
        assert_eq!(runtime_mark(&docker, &env("podman")).as_deref(), Some("docker (/.dockerenv)"));
    }

    #[test]
    fn each_missing_setting_is_one_line_naming_it() {
        let bare = ContainerFacts { host_pids: false, device_interfaces: 0, proc_irq_readonly: true, ..host_like() };
        let lines = diagnose(&bare);
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert!(lines[0].contains("/proc/irq is read-only") && lines[0].contains("securityContext.privileged: true"));
        assert!(lines[1].contains("hostNetwork: true") && lines[1].contains("--network host"));
        assert!(lines[2].contains("hostPID: true") && lines[2].contains("--pid host"));
        assert!(lines.iter().all(|l| !l.contains('\n')));
        // An NVMe-only machine: no NIC, so no network line.
        let nvme_only = ContainerFacts { pci_nics: 0, device_interfaces: 0, ..host_like() };
        assert!(diagnose(&nvme_only).is_empty());
    }
}
