//! Other processes: programs that place IRQs and would fight irqwise, and whether a process
//! (an earlier daemon, the one a state file names) still runs.

use crate::sysfs::Root;

/// PIDs of running `irqbalance` processes (`ROOT/proc/*/comm`), lowest first. Unreadable entries
/// (processes that just exited) are skipped.
pub(crate) fn irqbalance_pids(root: &Root) -> Vec<u32> {
    let comm = |pid: u32| std::fs::read_to_string(root.path(format!("proc/{pid}/comm")));
    pids(root).into_iter().filter(|&pid| comm(pid).is_ok_and(|c| c.trim_end() == "irqbalance")).collect()
}

/// Every pid listed under `ROOT/proc`, lowest first.
fn pids(root: &Root) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(root.path("proc")) else { return Vec::new() };
    let mut pids: Vec<u32> = entries.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
    pids.sort_unstable();
    pids
}

/// A program known to write IRQ affinities, and how it is recognised among the processes.
struct PeerKind {
    /// The name irqwise gives it in the journal, `status` and the metrics.
    name: &'static str,
    /// Process names (`comm`, at most 15 bytes) it runs as.
    comms: &'static [&'static str],
    /// Words in its command line (scripts, interpreters, names longer than `comm` holds).
    words: &'static [&'static str],
    /// What it writes, for the journal.
    writes: &'static str,
}

/// The node's other IRQ writers, in the order they are named when several run.
const PEERS: &[PeerKind] = &[
    PeerKind {
        name: "nri-resource-policy",
        comms: &[],
        words: &["nri-resource-policy"],
        writes: "per-container IRQ masks (irq-affinity.resource-policy.nri.io)",
    },
    PeerKind {
        name: "crio",
        comms: &["crio"],
        words: &[],
        writes: "the IRQ masks and banned list of irq-load-balancing.crio.io pods",
    },
    PeerKind {
        name: "intel_lpmd",
        comms: &["intel_lpmd"],
        words: &["intel_lpmd"],
        writes: "IRQ masks for low-power modes",
    },
    PeerKind { name: "tuned", comms: &["tuned"], words: &[], writes: "IRQ masks of its scheduler and irq plugins" },
    PeerKind { name: "irqbalance", comms: &["irqbalance"], words: &[], writes: "every movable IRQ's mask" },
    PeerKind { name: "tuna", comms: &["tuna"], words: &[], writes: "IRQ masks on request" },
    PeerKind {
        name: "set_irq_affinity script",
        comms: &[],
        words: &["set_irq_affinity", "perftune", "irq_affinity"],
        writes: "a NIC's IRQ masks, once",
    },
];

/// A running IRQ writer: its name (a script's own file name), its lowest pid, what it writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Peer {
    pub name: String,
    pub pid: u32,
    pub writes: &'static str,
}

/// Every known IRQ writer running under `ROOT/proc`, in [`PEERS`] order, each once (its lowest
/// pid). irqwise itself is never one.
pub(crate) fn running_peers(root: &Root) -> Vec<Peer> {
    let read = |pid: u32, file: &str| std::fs::read(root.path(format!("proc/{pid}/{file}"))).ok();
    let processes: Vec<(u32, String, Vec<String>)> = pids(root)
        .into_iter()
        .filter_map(|pid| {
            let comm = String::from_utf8_lossy(&read(pid, "comm")?).trim_end().to_string();
            let cmdline = read(pid, "cmdline").unwrap_or_default();
            let words = cmdline.split(|&b| b == 0).map(|w| String::from_utf8_lossy(w).into_owned()).collect();
            (comm != "irqwise").then_some((pid, comm, words))
        })
        .collect();
    PEERS
        .iter()
        .filter_map(|kind| {
            processes.iter().find_map(|(pid, comm, words)| {
                if kind.comms.contains(&comm.as_str()) {
                    return Some(Peer { name: kind.name.to_string(), pid: *pid, writes: kind.writes });
                }
                let word = words.iter().take(3).find(|w| kind.words.iter().any(|k| w.contains(k)))?;
                // A script is named by its own file name; a program by its kind.
                let name = if kind.comms.is_empty() && kind.name.ends_with("script") {
                    word.rsplit('/').next().unwrap_or(word).to_string()
                } else {
                    kind.name.to_string()
                };
                Some(Peer { name, pid: *pid, writes: kind.writes })
            })
        })
        .collect()
}

/// Who most likely wrote a mask irqwise did not: the one known writer that runs, or, with
/// several, all of them; `None` when none runs.
pub(crate) fn likely_writer(peers: &[Peer]) -> Option<String> {
    match peers {
        [] => None,
        [one] => Some(one.name.clone()),
        many => Some(format!("one of {}", many.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", "))),
    }
}

/// A running program known to write IRQ affinities (`ROOT/proc`), as its pid and name: the
/// first of [`running_peers`].
pub(crate) fn known_irq_writer(root: &Root) -> Option<(u32, String)> {
    running_peers(root).into_iter().next().map(|p| (p.pid, p.name))
}

/// Whether the writer [`known_irq_writer`] found as (`pid`, `name`) still runs under `ROOT/proc`.
pub(crate) fn irq_writer_runs(root: &Root, pid: u32, name: &str) -> bool {
    let comm = std::fs::read(root.path(format!("proc/{pid}/comm")));
    let cmdline = std::fs::read(root.path(format!("proc/{pid}/cmdline")));
    let holds = |b: &Vec<u8>| String::from_utf8_lossy(b).contains(name);
    comm.as_ref().is_ok_and(holds) || cmdline.as_ref().is_ok_and(holds)
}

/// Whether process `pid` exists (signal 0; EPERM means it exists but is not ours).
pub(crate) fn process_exists(pid: i32) -> bool {
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(e) => e == nix::errno::Errno::EPERM,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_irqbalance_by_comm_only() {
        let dir = tempfile::tempdir().unwrap();
        for (pid, comm) in [("12", "irqbalance\n"), ("7", "bash\n"), ("99", "irqbalancer\n"), ("self", "irqbalance\n")]
        {
            std::fs::create_dir_all(dir.path().join(format!("proc/{pid}"))).unwrap();
            std::fs::write(dir.path().join(format!("proc/{pid}/comm")), comm).unwrap();
        }
        assert_eq!(irqbalance_pids(&Root::new(dir.path())), vec![12]);
    }

    #[test]
    fn known_irq_writers_by_name_then_by_script() {
        let dir = tempfile::tempdir().unwrap();
        let proc = |pid: u32, comm: &str, cmdline: &[u8]| {
            std::fs::create_dir_all(dir.path().join(format!("proc/{pid}"))).unwrap();
            std::fs::write(dir.path().join(format!("proc/{pid}/comm")), format!("{comm}\n")).unwrap();
            std::fs::write(dir.path().join(format!("proc/{pid}/cmdline")), cmdline).unwrap();
        };
        let root = Root::new(dir.path());
        proc(5, "bash", b"/bin/bash\0-c\0sleep 1\0");
        assert_eq!(known_irq_writer(&root), None);
        proc(40, "bash", b"bash\0/opt/mlnx/set_irq_affinity_cpulist.sh\0 4-7\0eth0\0");
        assert_eq!(known_irq_writer(&root), Some((40, "set_irq_affinity_cpulist.sh".to_string())));
        proc(812, "tuned", b"/usr/bin/python3\0/usr/sbin/tuned\0-l\0");
        assert_eq!(known_irq_writer(&root), Some((812, "tuned".to_string())), "a known name first");
        assert!(irq_writer_runs(&root, 812, "tuned") && irq_writer_runs(&root, 40, "set_irq_affinity_cpulist.sh"));
        std::fs::write(dir.path().join("proc/812/comm"), "bash\n").unwrap();
        std::fs::write(dir.path().join("proc/812/cmdline"), b"bash\0").unwrap();
        assert!(!irq_writer_runs(&root, 812, "tuned"), "the pid runs something else now");
    }

    #[test]
    fn each_known_peer_is_recognised_and_named_once() {
        let dir = tempfile::tempdir().unwrap();
        let proc = |pid: u32, comm: &str, cmdline: &[u8]| {
            std::fs::create_dir_all(dir.path().join(format!("proc/{pid}"))).unwrap();
            std::fs::write(dir.path().join(format!("proc/{pid}/comm")), format!("{comm}\n")).unwrap();
            std::fs::write(dir.path().join(format!("proc/{pid}/cmdline")), cmdline).unwrap();
        };
        let root = Root::new(dir.path());
        assert!(running_peers(&root).is_empty());
        assert_eq!(likely_writer(&[]), None);
        // nri-plugins' policies: comm cut at 15 bytes, the name in the command line.
        proc(300, "nri-resource-po", b"/bin/nri-resource-policy-topology-aware\0--fallback-config\0/etc/nri\0");
        let peers = running_peers(&root);
        assert_eq!(
            peers.iter().map(|p| (p.name.as_str(), p.pid)).collect::<Vec<_>>(),
            vec![("nri-resource-policy", 300)]
        );
        assert_eq!(likely_writer(&peers).as_deref(), Some("nri-resource-policy"));
        proc(200, "crio", b"/usr/bin/crio\0");
        proc(201, "crio", b"/usr/bin/crio\0");
        proc(410, "intel_lpmd", b"/usr/sbin/intel_lpmd\0--systemd\0");
        proc(420, "irqwise", b"/usr/sbin/irqwise\0run\0--irqbalance-socket\0");
        proc(430, "bash", b"bash\0-c\0echo tuned irqbalance\0");
        let names: Vec<(String, u32)> = running_peers(&root).into_iter().map(|p| (p.name, p.pid)).collect();
        assert_eq!(
            names,
            vec![("nri-resource-policy".into(), 300), ("crio".into(), 200), ("intel_lpmd".into(), 410)],
            "each kind once, its lowest pid; irqwise and a shell mentioning names are not peers"
        );
        assert_eq!(
            likely_writer(&running_peers(&root)).as_deref(),
            Some("one of nri-resource-policy, crio, intel_lpmd")
        );
    }
}
