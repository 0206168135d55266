//! The write side against fixture roots: every failure class, injected and real, is classified
//! as the kernel reports them, and the other IRQs of the batch are still written.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Mutex;

use irqwise::apply::{
    apply_writes, AffinityWrite, AffinityWriter, ApplyError, Effective, FailureClass, Fallback, ProcIrq, Verification,
    WriteOutcome,
};
use irqwise::cpuset::CpuSet;
use irqwise::sysfs::Root;
use nix::errno::Errno;

const ORIGINAL: &str = "0-7\n";

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

/// A root with `proc/irq/N/` for each IRQ, affinity `0-7`, as a live kernel lays it out.
fn fixture(irqs: &[u32]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for irq in irqs {
        let d = dir.path().join(format!("proc/irq/{irq}"));
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("smp_affinity"), "ff\n").unwrap();
        fs::write(d.join("smp_affinity_list"), ORIGINAL).unwrap();
        fs::write(d.join("effective_affinity_list"), "0\n").unwrap();
        for f in ["smp_affinity", "smp_affinity_list"] {
            fs::set_permissions(d.join(f), fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
    dir
}

fn affinity_file(root: &Path, irq: u32) -> String {
    fs::read_to_string(root.join(format!("proc/irq/{irq}/smp_affinity_list"))).unwrap()
}

fn write(irq: u32, cpus: &str) -> AffinityWrite {
    AffinityWrite { irq, cpus: set(cpus), fallbacks: Vec::new() }
}

/// Wraps the real writer; fails chosen IRQs with a chosen errno a chosen number of times, and
/// records every call it is asked to make.
struct FaultInjector {
    inner: ProcIrq,
    faults: Mutex<HashMap<u32, (Errno, usize)>>,
    calls: Mutex<Vec<(u32, CpuSet)>>,
}

impl FaultInjector {
    fn new(root: &Path, faults: &[(u32, Errno, usize)]) -> FaultInjector {
        FaultInjector {
            inner: ProcIrq::new(Root::new(root)),
            faults: Mutex::new(faults.iter().map(|&(irq, e, n)| (irq, (e, n))).collect()),
            calls: Mutex::new(Vec::new()),
        }
    }

    fn calls_for(&self, irq: u32) -> Vec<CpuSet> {
        self.calls.lock().unwrap().iter().filter(|(i, _)| *i == irq).map(|(_, c)| c.clone()).collect()
    }
}

impl AffinityWriter for FaultInjector {
    fn write(&self, irq: u32, cpus: &CpuSet) -> Result<Verification, ApplyError> {
        self.calls.lock().unwrap().push((irq, cpus.clone()));
        if let Some((errno, left)) = self.faults.lock().unwrap().get_mut(&irq) {
            if *left > 0 {
                *left -= 1;
                return Err(ApplyError::Write {
                    path: self.inner.root.path(format!("proc/irq/{irq}/smp_affinity_list")),
                    value: format!("{cpus}\n"),
                    source: io::Error::from_raw_os_error(*errno as i32),
                });
            }
        }
        self.inner.write(irq, cpus)
    }

    fn read_current(&self, irq: u32) -> Result<CpuSet, ApplyError> {
        self.inner.read_current(irq)
    }
}

fn class_of(outcomes: &[(u32, WriteOutcome)], irq: u32) -> Option<FailureClass> {
    outcomes.iter().find(|(i, _)| *i == irq).and_then(|(_, o)| o.failure())
}

fn error_of(outcomes: &[(u32, WriteOutcome)], irq: u32) -> String {
    match outcomes.iter().find(|(i, _)| *i == irq).and_then(|(_, o)| o.error()) {
        Some(error) => error.to_string(),
        None => panic!("IRQ {irq} did not fail: {outcomes:?}"),
    }
}

/// The batch's healthy IRQs hold exactly what was asked for and were verified.
fn assert_written(root: &Path, outcomes: &[(u32, WriteOutcome)], irq: u32, cpus: &str) {
    assert_eq!(affinity_file(root, irq), format!("{cpus}\n"), "IRQ {irq} file");
    match outcomes.iter().find(|(i, _)| *i == irq) {
        Some((_, WriteOutcome::Written { cpus: c, verified })) => {
            assert_eq!(c, &set(cpus));
            assert!(verified.matches, "IRQ {irq}: {verified:?}");
        }
        other => panic!("IRQ {irq} not written: {other:?}"),
    }
}

#[test]
fn injected_errnos_are_classified_and_the_rest_written() {
    // Expected classes: the errnos the kernel returns for each case.
    let cases = [
        (11, Errno::EIO, FailureClass::Managed),
        (12, Errno::EPERM, FailureClass::Managed),
        (13, Errno::ERANGE, FailureClass::Invalid),
        (14, Errno::EINVAL, FailureClass::Invalid),
        (15, Errno::EOVERFLOW, FailureClass::Invalid),
        (17, Errno::EACCES, FailureClass::Permission),
    ];
    let irqs: Vec<u32> = (10..=18).collect();
    let dir = fixture(&irqs);
    let mut faults: Vec<_> = cases.iter().map(|&(irq, e, _)| (irq, e, 1)).collect();
    faults.push((16, Errno::ENOSPC, 1));
    let writer = FaultInjector::new(dir.path(), &faults);
    // Every write carries a fallback: only ENOSPC may use it.
    let writes: Vec<_> = irqs
        .iter()
        .map(|&irq| AffinityWrite {
            irq,
            cpus: set("2"),
            fallbacks: vec![Fallback { cpus: set("0-3"), step: "the node" }],
        })
        .collect();

    let out = apply_writes(&writer, &writes);

    assert_eq!(out.iter().map(|(i, _)| *i).collect::<Vec<_>>(), irqs, "one outcome per write, in order");
    for (irq, errno, class) in cases {
        assert_eq!(class_of(&out, irq), Some(class), "IRQ {irq} failing with {errno:?}");
        assert!(error_of(&out, irq).contains(&format!("{errno:?}")), "{}", error_of(&out, irq));
        assert_eq!(affinity_file(dir.path(), irq), ORIGINAL, "failed IRQ {irq} untouched");
        assert_eq!(writer.calls_for(irq), vec![set("2")], "IRQ {irq}: no retry for {errno:?}");
    }
    // ENOSPC: retried once with the node's CPUs, which succeeds.
    assert_eq!(writer.calls_for(16), vec![set("2"), set("0-3")]);
    assert!(
        matches!(&out[6].1, WriteOutcome::WrittenFallback { cpus, verified, .. } if *cpus == set("0-3") && verified.matches)
    );
    assert_eq!(affinity_file(dir.path(), 16), "0-3\n");
    assert_written(dir.path(), &out, 10, "2");
    assert_written(dir.path(), &out, 18, "2");
}

#[test]
fn enospc_without_fallback_or_twice_is_no_vectors() {
    let dir = fixture(&[1, 2, 3]);
    let writer = FaultInjector::new(dir.path(), &[(1, Errno::ENOSPC, 1), (2, Errno::ENOSPC, 2)]);
    let writes = [
        write(1, "4"),
        AffinityWrite { irq: 2, cpus: set("5"), fallbacks: vec![Fallback { cpus: set("4-7"), step: "the node" }] },
        write(3, "6"),
    ];
    let out = apply_writes(&writer, &writes);
    assert_eq!(class_of(&out, 1), Some(FailureClass::NoVectors));
    assert_eq!(writer.calls_for(1).len(), 1, "no fallback, no retry");
    assert_eq!(class_of(&out, 2), Some(FailureClass::NoVectors));
    assert_eq!(writer.calls_for(2), vec![set("5"), set("4-7")], "exactly one retry");
    assert!(error_of(&out, 2).contains("4-7"), "{}", error_of(&out, 2));
    assert_eq!(affinity_file(dir.path(), 1), ORIGINAL);
    assert_eq!(affinity_file(dir.path(), 2), ORIGINAL);
    assert_written(dir.path(), &out, 3, "6");
}

/// Real filesystem failures, no injection: IRQ 2 of 1..=3 is broken by `breakage`.
fn real_failure(breakage: impl FnOnce(&Path)) -> (tempfile::TempDir, Vec<(u32, WriteOutcome)>, FaultInjector) {
    let dir = fixture(&[1, 2, 3]);
    breakage(&dir.path().join("proc/irq/2"));
    // No faults configured: the injector only records calls and delegates to ProcIrq.
    let writer = FaultInjector::new(dir.path(), &[]);
    let writes: Vec<_> = (1..=3)
        .map(|irq| AffinityWrite {
            irq,
            cpus: set(&format!("{irq}")),
            fallbacks: vec![Fallback { cpus: set("0-3"), step: "the node" }],
        })
        .collect();
    let out = apply_writes(&writer, &writes);
    assert_written(dir.path(), &out, 1, "1");
    assert_written(dir.path(), &out, 3, "3");
    (dir, out, writer)
}

#[test]
fn removed_irq_directory_is_gone() {
    let (dir, out, _) = real_failure(|d| fs::remove_dir_all(d).unwrap());
    assert_eq!(class_of(&out, 2), Some(FailureClass::Gone));
    let e = error_of(&out, 2);
    assert!(e.contains("proc/irq/2/smp_affinity_list") && e.contains("ENOENT") && e.contains("\"2\\n\""), "{e}");
    assert!(!dir.path().join("proc/irq/2").exists(), "nothing was created");
}

#[test]
fn read_only_smp_affinity_is_managed_and_left_alone() {
    let (dir, out, _) =
        real_failure(|d| fs::set_permissions(d.join("smp_affinity"), fs::Permissions::from_mode(0o444)).unwrap());
    assert_eq!(class_of(&out, 2), Some(FailureClass::Managed));
    let e = error_of(&out, 2);
    assert!(e.contains("proc/irq/2/smp_affinity") && e.contains("0444"), "{e}");
    assert_eq!(affinity_file(dir.path(), 2), ORIGINAL, "a managed IRQ's file is never written");
}

#[test]
fn a_symlink_to_a_device_in_place_of_the_file_is_refused_not_written() {
    let (_dir, out, writer) = real_failure(|d| {
        fs::remove_file(d.join("smp_affinity_list")).unwrap();
        std::os::unix::fs::symlink("/dev/full", d.join("smp_affinity_list")).unwrap();
    });
    assert_eq!(class_of(&out, 2), Some(FailureClass::Invalid));
    assert_eq!(writer.calls_for(2), vec![set("2")], "no fallback for a refused path");
    let e = error_of(&out, 2);
    assert!(e.contains("ELOOP") && e.contains("never written"), "{e}");
}

#[test]
fn directory_in_place_of_the_file_is_refused_as_invalid() {
    let (_dir, out, writer) = real_failure(|d| {
        fs::remove_file(d.join("smp_affinity_list")).unwrap();
        fs::create_dir(d.join("smp_affinity_list")).unwrap();
    });
    assert_eq!(class_of(&out, 2), Some(FailureClass::Invalid));
    assert!(error_of(&out, 2).contains("is a directory, not a regular file"), "{}", error_of(&out, 2));
    assert_eq!(writer.calls_for(2).len(), 1, "only ENOSPC is retried");
}

#[test]
fn verification_reads_back_and_judges_effective_affinity() {
    let dir = fixture(&[1, 2, 3]);
    let irq = |n: u32| dir.path().join(format!("proc/irq/{n}"));
    fs::write(irq(1).join("effective_affinity_list"), "5\n").unwrap(); // within 4-7
    fs::write(irq(2).join("effective_affinity_list"), "0\n").unwrap(); // not yet moved
    fs::remove_file(irq(3).join("effective_affinity_list")).unwrap();
    let writer = ProcIrq::new(Root::new(dir.path()));

    let v1 = writer.write(1, &set("4-7")).unwrap();
    assert_eq!(v1, Verification { readback: Some(set("4-7")), matches: true, effective: Effective::Within(set("5")) });
    let v2 = writer.write(2, &set("4,6")).unwrap();
    assert_eq!(v2.effective, Effective::Pending(set("0")));
    assert_eq!(affinity_file(dir.path(), 2), "4,6\n", "list form, one line, old content truncated");
    let v3 = writer.write(3, &set("1")).unwrap();
    assert_eq!(v3.effective, Effective::Absent);
    assert_eq!(writer.read_current(3).unwrap(), set("1"));
    assert_eq!(writer.read_current(9).unwrap_err().class(), FailureClass::Gone);
}

#[test]
fn enospc_widens_step_by_step_and_the_outcome_names_the_step() {
    let dir = fixture(&[1, 2]);
    let steps = |cpus: &[(&str, &'static str)]| -> Vec<Fallback> {
        cpus.iter().map(|&(c, step)| Fallback { cpus: set(c), step }).collect()
    };
    let ladder = steps(&[
        ("2,6", "same core"),
        ("2-3,6-7", "same cluster"),
        ("0-3,4-7", "the node"),
        ("0-7", "every usable CPU"),
    ]);
    // IRQ 1: no vectors on CPU 2, its core or its cluster; the node takes it.
    // IRQ 2: no vectors anywhere.
    let writer = FaultInjector::new(dir.path(), &[(1, Errno::ENOSPC, 3), (2, Errno::ENOSPC, 9)]);
    let writes = [
        AffinityWrite { irq: 1, cpus: set("2"), fallbacks: ladder.clone() },
        AffinityWrite { irq: 2, cpus: set("2"), fallbacks: ladder },
    ];
    let out = apply_writes(&writer, &writes);
    assert_eq!(writer.calls_for(1), vec![set("2"), set("2,6"), set("2-3,6-7"), set("0-7")]);
    match &out[0].1 {
        WriteOutcome::WrittenFallback { cpus, step, .. } => {
            assert_eq!((cpus, step.as_str()), (&set("0-7"), "the node"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(affinity_file(dir.path(), 1), "0-7\n");
    assert_eq!(writer.calls_for(2).len(), 5, "the desired set and every step, once each");
    assert_eq!(class_of(&out, 2), Some(FailureClass::NoVectors));
    let e = error_of(&out, 2);
    assert!(e.contains("same core") && e.contains("every usable CPU"), "{e}");
    assert_eq!(affinity_file(dir.path(), 2), ORIGINAL);
}
