//! A network interface's index and threaded-NAPI switch (`sys/class/net/IF/{ifindex,threaded}`),
//! and the NAPI threads (`napi/IF-ID` kernel threads) of the interfaces that run threaded:
//! their pid, CPUs allowed and last CPU, from `proc/PID/{comm,status,stat}`.
//!
//! Reads only, through a [`Root`]. NAPI threads are kernel threads, children of `kthreadd`
//! (pid 2): their pids come from `proc/2/task/2/children` where the kernel shows it, else from
//! the listing of `proc`; only a kernel thread (`PF_KTHREAD`) counts, whatever its name. A thread
//! that exits while it is read is left out.

use std::collections::{BTreeMap, BTreeSet};

use crate::cpuset::CpuSet;
use crate::devices::napi::{parse_thread_name, InterfaceState, NapiThread};
use crate::sysfs::Root;

/// The index and threaded switch of interface `name`.
pub fn read_interface(root: &Root, name: &str) -> InterfaceState {
    if name.contains('/') || name == ".." || name == "." {
        return InterfaceState::default();
    }
    let number = |file: &str| -> Option<u32> {
        root.read_small_optional(format!("sys/class/net/{name}/{file}")).ok().flatten()?.trim().parse().ok()
    };
    InterfaceState { ifindex: number("ifindex"), threaded: number("threaded").map(|t| t != 0) }
}

/// The NAPI threads of the interfaces in `interfaces`, by pid.
pub fn read_napi_threads(root: &Root, interfaces: &BTreeSet<String>) -> Vec<NapiThread> {
    if interfaces.is_empty() {
        return Vec::new();
    }
    let pids: Vec<u32> = match root.read_small_optional("proc/2/task/2/children") {
        Ok(Some(text)) => text.split_whitespace().filter_map(|p| p.parse().ok()).collect(),
        _ => root.list_dir_optional("proc").unwrap_or_default().iter().filter_map(|n| n.parse().ok()).collect(),
    };
    let mut threads = BTreeMap::new();
    for pid in pids {
        let Ok(Some(comm)) = root.read_small_optional(format!("proc/{pid}/comm")) else { continue };
        let Some((interface, napi_id)) = parse_thread_name(comm.trim_end()) else { continue };
        if !interfaces.contains(interface) {
            continue;
        }
        // Anyone may name a process `napi/eth0-1`: only a kernel thread is one of NAPI's.
        let stat = root.read_small_optional(format!("proc/{pid}/stat")).ok().flatten().unwrap_or_default();
        if !is_kernel_thread(&stat) {
            continue;
        }
        let status = root.read_small_optional(format!("proc/{pid}/status")).ok().flatten().unwrap_or_default();
        let current = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .and_then(|list| CpuSet::parse_list(list.trim()).ok());
        let last_cpu = last_cpu(&stat);
        threads.insert(pid, NapiThread { pid, interface: interface.to_string(), napi_id, current, last_cpu });
    }
    threads.into_values().collect()
}

/// The kernel's flag of its own threads (`PF_KTHREAD`, include/linux/sched.h).
const PF_KTHREAD: u64 = 0x0020_0000;

/// Whether a `/proc/PID/stat` line is a kernel thread's: `flags` (field 9) has `PF_KTHREAD`.
fn is_kernel_thread(stat: &str) -> bool {
    let Some(close) = stat.rfind(')') else { return false };
    stat[close + 1..].split_whitespace().nth(6).and_then(|f| f.parse::<u64>().ok()).is_some_and(|f| f & PF_KTHREAD != 0)
}

/// `processor` (field 39) of a `/proc/PID/stat` line; the name (field 2) may hold anything, so
/// fields are counted after its closing parenthesis.
fn last_cpu(stat: &str) -> Option<u32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(36)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_of_threaded_interfaces_are_read_with_their_cpus() {
        let dir = tempfile::tempdir().unwrap();
        let put = |rel: &str, text: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put("sys/class/net/eth0/ifindex", "3\n");
        put("sys/class/net/eth0/threaded", "1\n");
        // Field 9 (flags): PF_KTHREAD for a kernel thread; field 39: the last CPU.
        let stat = |cpu: u32, kernel: bool| {
            let mut fields = vec!["S".to_string()];
            fields.extend((4..=52).map(|i| match i {
                39 => cpu.to_string(),
                9 if kernel => (PF_KTHREAD | 0x40).to_string(),
                _ => "0".into(),
            }));
            format!("101 (napi/eth0-8193) {}\n", fields.join(" "))
        };
        for (pid, comm, cpus, cpu, kernel) in [
            (101, "napi/eth0-8193", "0-7", 5, true),
            (102, "napi/eth1-8200", "0-7", 1, true),
            (103, "kworker/1:0", "1", 1, true),
            // A user's process with a NAPI thread's name is none.
            (104, "napi/eth0-1", "0-7", 2, false),
        ] {
            put(&format!("proc/{pid}/comm"), &format!("{comm}\n"));
            put(&format!("proc/{pid}/status"), &format!("Name:\t{comm}\nCpus_allowed_list:\t{cpus}\n"));
            put(&format!("proc/{pid}/stat"), &stat(cpu, kernel));
        }
        let root = Root::new(dir.path());
        assert_eq!(read_interface(&root, "eth0"), InterfaceState { ifindex: Some(3), threaded: Some(true) });
        assert_eq!(read_interface(&root, "eth9"), InterfaceState::default());
        let threads = read_napi_threads(&root, &["eth0".to_string()].into());
        assert_eq!(
            threads,
            [NapiThread {
                pid: 101,
                interface: "eth0".into(),
                napi_id: 8193,
                current: Some(CpuSet::first_n(8)),
                last_cpu: Some(5)
            }]
        );
        // kthreadd's children list, where the kernel shows it, is where pids come from.
        put("proc/2/task/2/children", "102 103 ");
        assert!(read_napi_threads(&root, &["eth0".to_string()].into()).is_empty());
        assert_eq!(read_napi_threads(&root, &["eth1".to_string()].into()).len(), 1);
    }
}
