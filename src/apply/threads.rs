//! Writing NAPI threads' CPUs: `sched_setaffinity()` of each planned thread, after checking the
//! pid still runs that thread (a pid reused by another task since the pass read it is never
//! touched). One thread's failure never stops the others.
//!
//! Threads are this machine's processes: under another `--root` (a snapshot, a fixture) nothing
//! is written and each is reported as such.

use std::io;

use serde::Serialize;

use super::FailureClass;
use crate::cpuset::CpuSet;
use crate::plan::{Action, Plan};

/// How one thread's write ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum ThreadOutcome {
    Written {
        new: CpuSet,
    },
    /// The thread is gone, or its pid runs another task now.
    Gone,
    /// Not this machine's threads (`--root` is not `/`): not written.
    NotThisMachine,
    Failed {
        class: FailureClass,
        error: String,
    },
}

/// One thread the pass tried to move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadChange {
    /// The PCI address of the NIC.
    pub device: String,
    pub pid: u32,
    pub name: String,
    pub irq: Option<u32>,
    pub old: Option<CpuSet>,
    #[serde(flatten)]
    pub result: ThreadOutcome,
}

impl ThreadChange {
    pub(crate) fn is_failure(&self) -> bool {
        matches!(self.result, ThreadOutcome::Failed { .. })
    }
}

/// What moves threads: the kernel on this machine, or a test's stand-in.
pub trait ThreadWriter {
    /// The name (`comm`) pid `pid` runs now; `None` when there is no such task.
    fn name_of(&self, pid: u32) -> Option<String>;
    /// Sets the CPUs pid `pid` may run on.
    fn set_cpus(&self, pid: u32, cpus: &CpuSet) -> io::Result<()>;
}

/// This machine's threads.
pub struct HostThreads;

impl ThreadWriter for HostThreads {
    fn name_of(&self, pid: u32) -> Option<String> {
        crate::sysfs::processes::process_name(pid)
    }

    fn set_cpus(&self, pid: u32, cpus: &CpuSet) -> io::Result<()> {
        set_affinity(pid, cpus)
    }
}

/// `sched_setaffinity(pid, cpus)` with a mask as wide as `cpus` needs (the C library's
/// `cpu_set_t` stops at 1,024 CPUs).
fn set_affinity(pid: u32, cpus: &CpuSet) -> io::Result<()> {
    let words = cpus.last().map_or(1, |last| last as usize / 64 + 1);
    let mut mask = vec![0u64; words];
    for cpu in cpus {
        mask[cpu as usize / 64] |= 1 << (cpu % 64);
    }
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    // SAFETY: the kernel reads `words * 8` bytes from `mask`, a live buffer of exactly that size,
    // and writes nothing; `pid` is a plain integer.
    #[allow(unsafe_code)]
    let r = unsafe { libc::sched_setaffinity(pid, words * 8, mask.as_ptr().cast::<libc::cpu_set_t>()) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Puts thread `pid` back on `cpus` if it still runs `name`: `Ok(false)` when it is gone.
pub fn restore_thread(writer: &dyn ThreadWriter, pid: u32, name: &str, cpus: &CpuSet) -> io::Result<bool> {
    if writer.name_of(pid).as_deref() != Some(name) {
        return Ok(false);
    }
    match writer.set_cpus(pid, cpus) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Moves every NAPI thread `plan` sets; `this_machine` false writes nothing (see the module).
pub fn apply_threads(plan: &Plan, writer: &dyn ThreadWriter, this_machine: bool) -> Vec<ThreadChange> {
    let mut out = Vec::new();
    for d in &plan.devices {
        for t in d.napi_threads.iter().filter(|t| t.action == Action::Set) {
            let Some(cpus) = &t.desired else { continue };
            let result = if !this_machine {
                ThreadOutcome::NotThisMachine
            } else if writer.name_of(t.pid).as_deref() != Some(t.name.as_str()) {
                ThreadOutcome::Gone
            } else {
                match writer.set_cpus(t.pid, cpus) {
                    Ok(()) => ThreadOutcome::Written { new: cpus.clone() },
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) => ThreadOutcome::Gone,
                    Err(e) => {
                        let class = match FailureClass::from_io(&e) {
                            FailureClass::Managed => FailureClass::Permission,
                            class => class,
                        };
                        ThreadOutcome::Failed { class, error: format!("sched_setaffinity of pid {}: {e}", t.pid) }
                    }
                }
            };
            out.push(ThreadChange {
                device: d.bdf.clone(),
                pid: t.pid,
                name: t.name.clone(),
                irq: t.irq,
                old: t.current.clone(),
                result,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::plan::ThreadPlacement;

    struct Fake {
        names: Vec<(u32, &'static str)>,
        refuse: Option<i32>,
        set: RefCell<Vec<(u32, CpuSet)>>,
    }

    impl ThreadWriter for Fake {
        fn name_of(&self, pid: u32) -> Option<String> {
            self.names.iter().find(|(p, _)| *p == pid).map(|(_, n)| n.to_string())
        }
        fn set_cpus(&self, pid: u32, cpus: &CpuSet) -> io::Result<()> {
            if let Some(e) = self.refuse {
                return Err(io::Error::from_raw_os_error(e));
            }
            self.set.borrow_mut().push((pid, cpus.clone()));
            Ok(())
        }
    }

    fn thread(pid: u32, name: &str, action: Action) -> ThreadPlacement {
        ThreadPlacement {
            pid,
            name: name.into(),
            napi_id: 1,
            irq: Some(30),
            by: Some("driver-order"),
            current: Some(CpuSet::first_n(8)),
            desired: Some(CpuSet::single(3)),
            action,
            reason: String::new(),
            last_cpu: None,
        }
    }

    fn plan(threads: Vec<ThreadPlacement>) -> Plan {
        crate::plan::test_plans::plan_of(vec![
            crate::plan::test_plans::nic("0000:81:00.0", vec![]).with_napi_threads(threads)
        ])
    }

    #[test]
    fn only_threads_to_set_that_still_run_under_their_pid_are_written() {
        let p = plan(vec![
            thread(10, "napi/eth0-1", Action::Set),
            thread(11, "napi/eth0-2", Action::Keep),
            thread(12, "napi/eth0-3", Action::Set),
            thread(13, "napi/eth0-4", Action::Set),
        ]);
        let fake = Fake { names: vec![(10, "napi/eth0-1"), (12, "bash")], refuse: None, set: RefCell::default() };
        let changes = apply_threads(&p, &fake, true);
        let results: Vec<(u32, &ThreadOutcome)> = changes.iter().map(|c| (c.pid, &c.result)).collect();
        assert_eq!(
            results,
            [
                (10, &ThreadOutcome::Written { new: CpuSet::single(3) }),
                (12, &ThreadOutcome::Gone),
                (13, &ThreadOutcome::Gone)
            ]
        );
        assert_eq!(*fake.set.borrow(), [(10, CpuSet::single(3))]);
        let none = apply_threads(&p, &fake, false);
        assert!(none.iter().all(|c| c.result == ThreadOutcome::NotThisMachine) && none.len() == 3);
        let refusing = Fake { names: vec![(10, "napi/eth0-1")], refuse: Some(libc::EPERM), set: RefCell::default() };
        let failed = apply_threads(&plan(vec![thread(10, "napi/eth0-1", Action::Set)]), &refusing, true);
        assert!(
            matches!(&failed[0].result, ThreadOutcome::Failed { class: FailureClass::Permission, .. }),
            "{failed:?}"
        );
    }

    #[test]
    fn this_process_can_be_pinned_and_put_back() {
        let me = std::process::id();
        let before = std::fs::read_to_string("/proc/self/status").unwrap();
        let allowed = before.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string();
        let allowed = CpuSet::parse_list(&allowed).unwrap();
        let first = CpuSet::single(allowed.first().unwrap());
        set_affinity(me, &first).unwrap();
        let now = std::fs::read_to_string("/proc/self/status").unwrap();
        assert!(now.contains(&format!("Cpus_allowed_list:\t{first}")), "{now}");
        set_affinity(me, &allowed).unwrap();
    }
}
