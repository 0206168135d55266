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
