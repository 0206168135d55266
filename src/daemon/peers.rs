//! Other processes: programs that place IRQs and would fight irqwise, and whether a process
//! (an earlier daemon, the one a state file names) still runs.
//!
//! What a process shows in `/proc` is its own to choose (a user's too), so it is read as hostile
//! input: through the root (regular files only, never blocking: a FIFO or a link to `/dev/zero`
//! below a snapshot root is refused), only the start of each file ([`COMM_BYTES`],
//! [`CMDLINE_BYTES`], [`STATUS_BYTES`]), one process at a time, keeping nothing but the peers
//! found. A name taken from a command line is cut and escaped ([`crate::text::printable`])
//! here, so the journal, the text log, the state file and the metrics all get the same.
//!
//! Only root's processes are peers: writing `/proc/irq` takes root, so a user's process named
//! `irqbalance` or `tuned` writes no mask (and must not keep irqwise from opening irqbalance's
//! socket). Root is the effective uid of `status`'s `Uid:` line, not the owner of `/proc/PID`,
//! which is root for any process that made itself non-dumpable.

use crate::sysfs::processes::DAEMON_NAME;
use crate::sysfs::Root;

/// Bytes of `proc/PID/comm` read: the kernel's names have at most 15 and a newline.
const COMM_BYTES: u64 = 64;

/// Bytes of `proc/PID/cmdline` read: the first [`WORDS`] words are all that is looked at, and
/// a path is at most 4,096 bytes (`PATH_MAX`). A process's command line can be megabytes.
const CMDLINE_BYTES: u64 = 4096;

/// Bytes of `proc/PID/status` read: `Uid:` is its ninth line, a few hundred bytes in.
const STATUS_BYTES: u64 = 4096;

/// Words of a command line looked at: an interpreter, its options, the script.
const WORDS: usize = 3;

/// Characters of a script's file name kept as a peer's name.
const NAME_CHARS: usize = 64;

/// PIDs of running `irqbalance` processes of root (`ROOT/proc/*/comm`), lowest first.
/// Unreadable entries (processes that just exited) are skipped.
pub(crate) fn irqbalance_pids(root: &Root) -> Vec<u32> {
    pids(root)
        .into_iter()
        .filter(|&pid| comm(root, pid).is_some_and(|c| c == "irqbalance") && runs_as_root(root, pid))
        .collect()
}

/// Every pid listed under `ROOT/proc`, lowest first.
fn pids(root: &Root) -> Vec<u32> {
    let names = root.list_dir_optional("proc").unwrap_or_default();
    let mut pids: Vec<u32> = names.iter().filter_map(|n| n.parse().ok()).collect();
    pids.sort_unstable();
    pids
}

/// Process `pid`'s name (`comm`, at most [`COMM_BYTES`] read, trailing whitespace dropped);
/// `None` when it cannot be read (the process exited, or the file is no regular file).
fn comm(root: &Root, pid: u32) -> Option<String> {
    let bytes = root.read_start(format!("proc/{pid}/comm"), COMM_BYTES).ok()?;
    Some(String::from_utf8_lossy(&bytes).trim_end().to_string())
}

/// The first [`WORDS`] words of process `pid`'s command line, from its first
/// [`CMDLINE_BYTES`]; none when it cannot be read (a kernel thread has an empty one).
fn first_words(root: &Root, pid: u32) -> Vec<String> {
    let bytes = root.read_start(format!("proc/{pid}/cmdline"), CMDLINE_BYTES).unwrap_or_default();
    if bytes.is_empty() {
        return Vec::new();
    }
    bytes.split(|&b| b == 0).take(WORDS).map(|w| String::from_utf8_lossy(w).into_owned()).collect()
}

/// Whether process `pid` runs as root: the effective uid of its `status`'s `Uid:` line (real,
/// effective, saved, file system) is 0. False when it cannot be read or says otherwise.
fn runs_as_root(root: &Root, pid: u32) -> bool {
    let Ok(bytes) = root.read_start(format!("proc/{pid}/status"), STATUS_BYTES) else { return false };
    let text = String::from_utf8_lossy(&bytes);
    let uids = text.lines().find_map(|l| l.strip_prefix("Uid:"));
    uids.and_then(|u| u.split_whitespace().nth(1)) == Some("0")
}

/// A program known to write IRQ affinities, and how it is recognised among the processes.
struct PeerKind {
    /// The name irqwise gives it in the journal, `status` and the metrics.
    name: &'static str,
    /// Process names (`comm`, at most 15 bytes) it runs as.
    comms: &'static [&'static str],
    /// Words in its command line (scripts, interpreters, names longer than `comm` holds).
    words: &'static [&'static str],
    /// What it writes (and how to turn it off, where that is one setting), for the journal.
    writes: &'static str,
}

impl PeerKind {
    /// The name of this peer when a process named `comm` whose command line starts with
    /// `words` is one: the kind's name, or a script's own file name (cut and escaped).
    fn recognises(&self, comm: &str, words: &[String]) -> Option<String> {
        if self.comms.contains(&comm) {
            return Some(self.name.to_string());
        }
        let word = words.iter().find(|w| self.words.iter().any(|k| w.contains(k)))?;
        // A script is named by its own file name; a program by its kind.
        if self.comms.is_empty() && self.name.ends_with("script") {
            let file: String = word.rsplit('/').next().unwrap_or(word).chars().take(NAME_CHARS).collect();
            Some(crate::text::printable(&file).into_owned())
        } else {
            Some(self.name.to_string())
        }
    }
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
    PeerKind {
        name: "google_set_multiqueue",
        // `comm` is the script's name cut to 15 bytes; an interpreter runs it by its path.
        comms: &["google_set_mult"],
        words: &["google_set_multiqueue"],
        writes: "NIC IRQ masks and XPS (run by google-guest-agent at its start; off with set_multiqueue = false in [InstanceSetup] of /etc/default/instance_configs.cfg)",
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

/// What the known IRQ writer named `name` writes (and how to turn it off, where that is one
/// setting); "IRQ affinities" for a script or a name irqwise does not know.
pub(crate) fn what_it_writes(name: &str) -> &'static str {
    PEERS.iter().find(|k| k.name == name).map_or("IRQ affinities", |k| k.writes)
}

/// A running IRQ writer: its name (a script's own file name), its lowest pid, what it writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Peer {
    pub name: String,
    pub pid: u32,
    pub writes: &'static str,
}

/// Every known IRQ writer running as root under `ROOT/proc`, in [`PEERS`] order, each once (its
/// lowest pid). irqwise itself is never one. Reads each process's bounded start and keeps
/// nothing of it once matched: memory is one process's, whatever the others hold.
pub(crate) fn running_peers(root: &Root) -> Vec<Peer> {
    let mut found: Vec<Option<Peer>> = PEERS.iter().map(|_| None).collect();
    for pid in pids(root) {
        if found.iter().all(Option::is_some) {
            break;
        }
        let Some(comm) = comm(root, pid).filter(|c| c != DAEMON_NAME) else { continue };
        let words = first_words(root, pid);
        let mut as_root = None;
        for (slot, kind) in found.iter_mut().zip(PEERS).filter(|(slot, _)| slot.is_none()) {
            let Some(name) = kind.recognises(&comm, &words) else { continue };
            if *as_root.get_or_insert_with(|| runs_as_root(root, pid)) {
                *slot = Some(Peer { name, pid, writes: kind.writes });
            }
        }
    }
    found.into_iter().flatten().collect()
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

/// Whether the writer [`known_irq_writer`] found as (`pid`, `name`) still runs under `ROOT/proc`:
/// process `pid` is still root's and recognised as a peer of that name.
pub(crate) fn irq_writer_runs(root: &Root, pid: u32, name: &str) -> bool {
    let Some(comm) = comm(root, pid) else { return false };
    let words = first_words(root, pid);
    PEERS.iter().any(|k| k.recognises(&comm, &words).as_deref() == Some(name)) && runs_as_root(root, pid)
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

    /// Writes process `pid` under `dir/proc`: `comm`, `cmdline` and `status`'s `Uid:` line.
    fn proc(dir: &std::path::Path, pid: u32, uid: u32, comm: &str, cmdline: &[u8]) {
        let at = dir.join(format!("proc/{pid}"));
        std::fs::create_dir_all(&at).unwrap();
        std::fs::write(at.join("comm"), format!("{comm}\n")).unwrap();
        std::fs::write(at.join("cmdline"), cmdline).unwrap();
        std::fs::write(at.join("status"), format!("Name:\t{comm}\nUmask:\t0022\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n"))
            .unwrap();
    }

    #[test]
    fn finds_roots_irqbalance_by_comm_only() {
        let dir = tempfile::tempdir().unwrap();
        for (pid, comm) in [(12, "irqbalance"), (7, "bash"), (99, "irqbalancer")] {
            proc(dir.path(), pid, 0, comm, b"");
        }
        proc(dir.path(), 5, 1000, "irqbalance", b"irqbalance\0");
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(dir.path().join("proc/self/comm"), "irqbalance\n").unwrap();
        assert_eq!(irqbalance_pids(&Root::new(dir.path())), vec![12], "a user's irqbalance is none");
    }

    #[test]
    fn known_irq_writers_by_name_then_by_script() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        proc(dir.path(), 5, 0, "bash", b"/bin/bash\0-c\0sleep 1\0");
        assert_eq!(known_irq_writer(&root), None);
        proc(dir.path(), 40, 0, "bash", b"bash\0/opt/mlnx/set_irq_affinity_cpulist.sh\0 4-7\0eth0\0");
        assert_eq!(known_irq_writer(&root), Some((40, "set_irq_affinity_cpulist.sh".to_string())));
        proc(dir.path(), 812, 0, "tuned", b"/usr/bin/python3\0/usr/sbin/tuned\0-l\0");
        assert_eq!(known_irq_writer(&root), Some((812, "tuned".to_string())), "a known name first");
        assert!(irq_writer_runs(&root, 812, "tuned") && irq_writer_runs(&root, 40, "set_irq_affinity_cpulist.sh"));
        std::fs::write(dir.path().join("proc/812/comm"), "bash\n").unwrap();
        std::fs::write(dir.path().join("proc/812/cmdline"), b"bash\0").unwrap();
        assert!(!irq_writer_runs(&root, 812, "tuned"), "the pid runs something else now");
        proc(dir.path(), 40, 1000, "bash", b"bash\0/opt/mlnx/set_irq_affinity_cpulist.sh\0");
        assert!(!irq_writer_runs(&root, 40, "set_irq_affinity_cpulist.sh"), "the pid is a user's now");
    }

    #[test]
    fn each_known_peer_is_recognised_and_named_once() {
        let dir = tempfile::tempdir().unwrap();
        let proc = |pid: u32, comm: &str, cmdline: &[u8]| proc(dir.path(), pid, 0, comm, cmdline);
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

    #[test]
    fn googles_guest_agent_script_is_a_peer_with_the_setting_that_turns_it_off() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        proc(dir.path(), 700, 0, "google_set_mult", b"/bin/bash\0/usr/bin/google_set_multiqueue\0");
        let peers = running_peers(&root);
        assert_eq!(
            peers.iter().map(|p| (p.name.as_str(), p.pid)).collect::<Vec<_>>(),
            [("google_set_multiqueue", 700)]
        );
        let writes = what_it_writes("google_set_multiqueue");
        assert!(writes.contains("set_multiqueue = false") && writes.contains("[InstanceSetup]"), "{writes}");
        assert!(writes.contains("/etc/default/instance_configs.cfg"), "{writes}");
        assert_eq!(what_it_writes("set_irq_affinity.sh"), "IRQ affinities");
    }

    #[test]
    fn users_processes_are_no_peers_and_names_from_command_lines_are_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        // A user's processes named like peers, lower pids first.
        proc(dir.path(), 10, 1000, "tuned", b"/usr/sbin/tuned\0");
        proc(dir.path(), 11, 1000, "bash", b"bash\0/home/u/set_irq_affinity.sh\0");
        assert!(running_peers(&root).is_empty(), "{:?}", running_peers(&root));
        // Root's script, whose name would forge a log line, and one with an endless name.
        proc(dir.path(), 20, 0, "bash", b"bash\0/opt/set_irq_affinity.sh\nirq 9 of x: FORGED\x1b[2J\0");
        let peers = running_peers(&root);
        assert_eq!(peers.len(), 1, "{peers:?}");
        assert_eq!(peers[0].name, "set_irq_affinity.sh\\x0airq 9 of x: FORGED\\x1b[2J");
        assert!(irq_writer_runs(&root, 20, &peers[0].name), "the escaped name is recognised again");
        let long = format!("bash\0/opt/set_irq_affinity{}\0", "x".repeat(3000));
        proc(dir.path(), 20, 0, "bash", long.as_bytes());
        assert_eq!(running_peers(&root)[0].name.chars().count(), NAME_CHARS);
    }

    #[test]
    fn only_the_start_of_a_command_line_is_read_and_odd_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        // The script's name past the first 4 KiB: not read, so not seen.
        let mut argv = b"bash\0".to_vec();
        argv.extend(std::iter::repeat_n(b'-', 8192));
        argv.extend(b"\0/opt/set_irq_affinity.sh\0");
        proc(dir.path(), 30, 0, "bash", &argv);
        assert!(running_peers(&root).is_empty());
        // "bash", NUL, then dashes to the 4,096th byte.
        assert_eq!(first_words(&root, 30).iter().map(String::len).sum::<usize>(), CMDLINE_BYTES as usize - 1);
        // A FIFO for a name, a link to /dev/zero for a command line: refused, at once.
        proc(dir.path(), 31, 0, "tuned", b"");
        proc(dir.path(), 32, 0, "tuned", b"");
        let fifo = dir.path().join("proc/31/comm");
        std::fs::remove_file(&fifo).unwrap();
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, rustix::fs::Mode::RUSR, 0).unwrap();
        let cmdline = dir.path().join("proc/32/cmdline");
        std::fs::remove_file(&cmdline).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &cmdline).unwrap();
        assert_eq!(comm(&root, 31), None);
        assert!(first_words(&root, 32).is_empty());
        assert_eq!(running_peers(&root).iter().map(|p| p.pid).collect::<Vec<_>>(), [32], "its comm still names it");
    }

    #[test]
    fn a_child_of_this_test_named_like_a_peer_is_found_in_the_real_proc() {
        // `sleep` as `set_irq_affinity.sh`, with a command line far past what is read (`sleep`
        // adds its arguments up: 300 s and two long zeros).
        let padding = "0".repeat(100_000);
        let mut child = std::process::Command::new("sleep");
        std::os::unix::process::CommandExt::arg0(&mut child, "/opt/set_irq_affinity.sh");
        let mut child = child.arg("300").arg(&padding).arg(&padding).spawn().expect("spawn sleep");
        let pid = child.id();
        // `spawn` returns once the child exists, maybe before it has run `exec`: until then its
        // command line is this test's. Wait (bounded) for the exec to be seen.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"/opt/set_irq_affinity.sh\0"))
        {
            assert!(std::time::Instant::now() < deadline, "sleep never ran exec");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let as_root = runs_as_root(&Root::new("/"), std::process::id());
        let root = Root::new("/");
        let found = running_peers(&root).into_iter().any(|p| p.pid == pid && p.name == "set_irq_affinity.sh");
        let runs = irq_writer_runs(&root, pid, "set_irq_affinity.sh");
        let _ = child.kill();
        let _ = child.wait();
        // Run as root, the child is root's and a peer; as a user, it is no peer.
        assert_eq!((found, runs), (as_root, as_root));
    }
}
