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

/// Programs known to write IRQ affinities, by their process name (`comm`): tuned (its scheduler
/// plugin), irqbalance, tuna.
const IRQ_WRITERS: [&str; 3] = ["tuned", "irqbalance", "tuna"];
/// Words in a command line of scripts known to write IRQ affinities: Mellanox/Intel's
/// `set_irq_affinity*.sh`, ScyllaDB's `perftune.py`, and the like.
const IRQ_WRITER_SCRIPTS: [&str; 3] = ["set_irq_affinity", "perftune", "irq_affinity"];

/// A running program known to write IRQ affinities (`ROOT/proc`), as its pid and name: a known
/// name first, else a known script in a command line; the lowest pid of each.
pub(crate) fn known_irq_writer(root: &Root) -> Option<(u32, String)> {
    let pids = pids(root);
    let read = |pid: u32, file: &str| std::fs::read(root.path(format!("proc/{pid}/{file}"))).ok();
    let by_name = pids.iter().find_map(|&pid| {
        let comm = String::from_utf8_lossy(&read(pid, "comm")?).trim_end().to_string();
        IRQ_WRITERS.contains(&comm.as_str()).then_some((pid, comm))
    });
    by_name.or_else(|| {
        pids.iter().find_map(|&pid| {
            let cmdline = read(pid, "cmdline")?;
            let words: Vec<String> =
                cmdline.split(|&b| b == 0).map(|w| String::from_utf8_lossy(w).into_owned()).collect();
            let script = words.iter().find(|w| IRQ_WRITER_SCRIPTS.iter().any(|k| w.contains(k)))?;
            let name = script.rsplit('/').next().unwrap_or(script).to_string();
            Some((pid, name))
        })
    })
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
}
