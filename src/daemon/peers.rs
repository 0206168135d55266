//! Other processes: programs that place IRQs and would fight irqwise, and whether a process
//! (an earlier daemon, the one a state file names) still runs.

use crate::sysfs::Root;

/// PIDs of running `irqbalance` processes (`ROOT/proc/*/comm`), lowest first. Unreadable entries
/// (processes that just exited) are skipped.
pub(crate) fn irqbalance_pids(root: &Root) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(root.path("proc")) else { return Vec::new() };
    let mut pids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(root.path(format!("proc/{pid}/comm"))).is_ok_and(|c| c.trim_end() == "irqbalance")
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// What tells one process from another that later gets its pid: its name and when it started
/// (`/proc/PID/stat`'s `starttime`, in clock ticks since boot).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessIdentity {
    pub comm: String,
    pub start: u64,
}

/// The identity of process `pid` on this machine; `None` when there is no such process (or its
/// `/proc` entry cannot be read).
pub fn process_identity(pid: u32) -> Option<ProcessIdentity> {
    let comm = process_name(pid)?;
    let stat = crate::sysfs::read_regular_file(std::path::Path::new(&format!("/proc/{pid}/stat")), 4096).ok()?;
    let stat = String::from_utf8_lossy(&stat);
    // Fields after the name, which is in parentheses and may hold anything: state is field 3,
    // starttime field 22.
    let after = &stat[stat.rfind(')')? + 1..];
    let start = after.split_whitespace().nth(19)?.parse().ok()?;
    Some(ProcessIdentity { comm, start })
}

/// The name every irqwise process runs under (`/proc/PID/comm`).
pub const DAEMON_NAME: &str = "irqwise";

/// The name of process `pid` on this machine (`/proc/PID/comm`, the real `/proc`: a pid is
/// this machine's whatever `--root` says); `None` when there is no such process.
pub fn process_name(pid: u32) -> Option<String> {
    if pid == 0 {
        return None;
    }
    let bytes = crate::sysfs::read_regular_file(std::path::Path::new(&format!("/proc/{pid}/comm")), 64).ok()?;
    Some(String::from_utf8_lossy(&bytes).trim_end().to_string())
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
}
