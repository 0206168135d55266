//! The write side: put chosen CPU sets on IRQs through `ROOT/proc/irq/N/smp_affinity_list`, one
//! IRQ at a time, classifying every failure and never letting one IRQ stop the batch.
//!
//! Invariants:
//! - [`apply_writes`] returns exactly one outcome per requested write, in request order; a failure
//!   on one IRQ never prevents the writes after it.
//! - A write is retried only after the kernel answered ENOSPC (no free vectors on the target
//!   CPUs), and only with the write's fallbacks, widest last, each tried at most once.
//! - [`ProcIrq`] never writes an IRQ whose `smp_affinity`/`smp_affinity_list` has no write bit
//!   (kernel-managed from 6.12 on); it reports [`FailureClass::Managed`] without touching it.
//! - Every error names the file, the value written and the errno.

use std::io;
use std::path::PathBuf;

use serde::Serialize;

use crate::cpuset::CpuSet;
pub use crate::strategy::Fallback;
use crate::sysfs::SysfsError;

mod apply_plan;
pub mod blocked;
pub mod napi_socket;
pub mod napi_write;
mod proc_irq;
pub mod threads;
pub(crate) mod xps_write;

pub use apply_plan::ApplyReport;
pub use apply_plan::{apply_plan, Change};
pub use proc_irq::ProcIrq;
pub(crate) use xps_write::apply_xps;
pub use xps_write::XpsChange;
pub use xps_write::XpsOutcome;

/// Writes the whole of `plan` below `root`, the one apply of the daemon and of `irqwise apply`:
/// the IRQ masks ([`apply_plan`]), then each NIC's transmit steering (which follows its IRQs),
/// the NAPI threads, and the NAPI instances' settings through `napi`. Threads and instances are
/// this machine's: under another root they are reported as not written. One report for all,
/// each write with its own outcome; no failure stops the others.
pub fn apply_whole(
    plan: &crate::plan::Plan,
    root: &crate::sysfs::Root,
    napi: &mut dyn napi_write::NapiWriter,
) -> ApplyReport {
    let mut report = apply_plan(plan, &ProcIrq::new(root.clone()));
    report.xps = apply_xps(plan, root);
    report.threads = threads::apply_threads(plan, &threads::HostThreads, root.is_this_machine());
    report.napi = napi_write::apply_napi(plan, napi, root.is_this_machine());
    report
}

/// Why one IRQ could not be written, in the terms an operator acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FailureClass {
    /// Kernel-managed: EIO (≤ 6.11), EPERM (≥ 6.12) or a read-only `smp_affinity`.
    Managed,
    /// The IRQ directory vanished (ENOENT): the device went away between plan and apply.
    Gone,
    /// The kernel rejected the set: EINVAL (empty or only offline CPUs), ERANGE (CPU ≥ nr_cpu_ids),
    /// EOVERFLOW (mask too wide); or the file is not one to write: a path through a symlink or out
    /// of the root (ELOOP, EXDEV), not a regular file.
    Invalid,
    /// ENOSPC: the target CPUs have no free interrupt vectors.
    NoVectors,
    /// EACCES: not allowed to write at all (not root, an LSM).
    Permission,
    /// EROFS: the file system holding the file is mounted read-only (a unit's
    /// `ProtectKernelTunables=`, a container's `/proc`).
    #[serde(rename = "readonly")]
    ReadOnly,
    /// Anything else (EISDIR, short write, ...).
    Other,
}

impl FailureClass {
    /// Maps an I/O error to its class by errno; errors without an errno are [`FailureClass::Other`].
    pub(crate) fn from_io(err: &io::Error) -> FailureClass {
        use nix::errno::Errno;
        let Some(code) = err.raw_os_error() else { return FailureClass::Other };
        match Errno::from_raw(code) {
            Errno::EIO | Errno::EPERM => FailureClass::Managed,
            Errno::ENOENT => FailureClass::Gone,
            // ELOOP/EXDEV: the path goes through a symlink or out of the root (never written).
            Errno::EINVAL | Errno::ERANGE | Errno::EOVERFLOW | Errno::ELOOP | Errno::EXDEV => FailureClass::Invalid,
            Errno::ENOSPC => FailureClass::NoVectors,
            Errno::EACCES => FailureClass::Permission,
            Errno::EROFS => FailureClass::ReadOnly,
            _ => FailureClass::Other,
        }
    }
}

/// One requested write. `cpus` is never empty when it comes from a plan; `fallbacks` are tried
/// in order while the kernel answers ENOSPC (see [`Fallback`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AffinityWrite {
    pub irq: u32,
    pub cpus: CpuSet,
    pub fallbacks: Vec<Fallback>,
}

/// What `effective_affinity_list` showed right after a write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "state", content = "cpus")]
pub enum Effective {
    /// The kernel shows no `effective_affinity_list` for this IRQ.
    Absent,
    /// The effective CPUs are within the written set: the move took effect.
    Within(CpuSet),
    /// Not (yet) within the written set: without interrupt remapping the kernel moves the IRQ
    /// lazily, on its next interrupt.
    Pending(CpuSet),
}

impl Effective {
    /// Classifies an effective set against the set just written (`None` = file absent).
    pub(crate) fn judge(written: &CpuSet, effective: Option<CpuSet>) -> Effective {
        match effective {
            None => Effective::Absent,
            Some(e) if !e.is_empty() && e.is_subset(written) => Effective::Within(e),
            Some(e) => Effective::Pending(e),
        }
    }
}

/// The read-back after a successful write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verification {
    /// `smp_affinity_list` as read back; `None` when it could not be read or parsed.
    pub readback: Option<CpuSet>,
    /// Whether `readback` equals the set written.
    pub matches: bool,
    pub effective: Effective,
}

/// How one write ended: the one outcome type of apply reports, the daemon's log and its ledger.
/// Serialized flat into a change as `"result": "written" | "held" | "written_fallback" |
/// "managed" | "gone" | "overtaken" | "failed"`, with the CPUs now in place as `new`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum WriteOutcome {
    /// The requested set was written.
    Written {
        #[serde(rename = "new")]
        cpus: CpuSet,
        verified: Verification,
    },
    /// Not written: right before the write the IRQ already held the requested set (the kernel
    /// put it back after a driver's reset, or another pass's write landed meanwhile). A write
    /// that changes nothing is not free: on bnxt_en with TPH every mask write restarts a queue.
    Held {
        #[serde(rename = "new")]
        cpus: CpuSet,
    },
    /// The requested set failed with ENOSPC; the first fallback the kernel took was written
    /// instead: `step` says which (`"same core"`, ..., `"every usable CPU"`).
    WrittenFallback {
        #[serde(rename = "new")]
        cpus: CpuSet,
        step: String,
        verified: Verification,
    },
    /// Refused as kernel-managed (EIO/EPERM or a read-only file); the next plan knows it.
    Managed { error: String },
    /// The IRQ disappeared (device removed) between plan and write.
    Gone { error: String },
    /// The kernel refused the set (EINVAL) because CPUs of it went offline after the pass read
    /// them: the CPU event is on its way and its pass places the IRQ again. Not a failure.
    Overtaken { error: String },
    /// Nothing was written (or the fallback failed too); `error` names file, value and errno.
    Failed { class: FailureClass, error: String },
}

impl WriteOutcome {
    /// How the write ended, in the one word of the state file, `status` and the metrics'
    /// `result` label (`written`, `held`, `written_fallback`, `managed`, `gone`, `overtaken`,
    /// `failed`): the serialized tag of this outcome.
    pub(crate) fn result_word(&self) -> &'static str {
        match self {
            WriteOutcome::Written { .. } => "written",
            WriteOutcome::Held { .. } => "held",
            WriteOutcome::WrittenFallback { .. } => "written_fallback",
            WriteOutcome::Managed { .. } => "managed",
            WriteOutcome::Gone { .. } => "gone",
            WriteOutcome::Overtaken { .. } => "overtaken",
            WriteOutcome::Failed { .. } => "failed",
        }
    }

    /// A write that did not happen, as its class says: managed and gone are outcomes of their
    /// own, not failures.
    pub(crate) fn not_written(class: FailureClass, error: String) -> WriteOutcome {
        match class {
            FailureClass::Managed => WriteOutcome::Managed { error },
            FailureClass::Gone => WriteOutcome::Gone { error },
            class => WriteOutcome::Failed { class, error },
        }
    }

    /// The class of a write that did not happen (managed and gone included).
    pub fn failure(&self) -> Option<FailureClass> {
        match self {
            WriteOutcome::Written { .. } | WriteOutcome::Held { .. } | WriteOutcome::WrittenFallback { .. } => None,
            WriteOutcome::Managed { .. } => Some(FailureClass::Managed),
            WriteOutcome::Gone { .. } => Some(FailureClass::Gone),
            WriteOutcome::Overtaken { .. } => Some(FailureClass::Invalid),
            WriteOutcome::Failed { class, .. } => Some(*class),
        }
    }

    /// Why the write did not happen.
    pub fn error(&self) -> Option<&str> {
        match self {
            WriteOutcome::Written { .. } | WriteOutcome::Held { .. } | WriteOutcome::WrittenFallback { .. } => None,
            WriteOutcome::Managed { error }
            | WriteOutcome::Gone { error }
            | WriteOutcome::Overtaken { error }
            | WriteOutcome::Failed { error, .. } => Some(error),
        }
    }

    /// The CPUs now in `smp_affinity_list`, when written or found already there.
    pub fn cpus(&self) -> Option<&CpuSet> {
        match self {
            WriteOutcome::Written { cpus, .. }
            | WriteOutcome::Held { cpus }
            | WriteOutcome::WrittenFallback { cpus, .. } => Some(cpus),
            _ => None,
        }
    }

    /// Whether the kernel's file was written (a `held` mask was not).
    pub fn wrote(&self) -> bool {
        matches!(self, WriteOutcome::Written { .. } | WriteOutcome::WrittenFallback { .. })
    }
}

/// A failed read or write of one IRQ's affinity files.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("{path} has mode {mode:04o} (no owner write bit): the kernel manages IRQ {irq}, not writing {value:?}")]
    ReadOnly { irq: u32, path: PathBuf, mode: u32, value: String },
    #[error("cannot inspect {path} before writing {value:?}: {} ({source})", errno_name(source))]
    Stat { path: PathBuf, value: String, source: io::Error },
    #[error("cannot open {path} to write {value:?}: {} ({source}){}", errno_name(source), escape_hint(source))]
    Open { path: PathBuf, value: String, source: io::Error },
    #[error("writing {value:?} to {path} failed: {} ({source})", errno_name(source))]
    Write { path: PathBuf, value: String, source: io::Error },
    #[error("short write to {path}: {written} of {} bytes of {value:?}", value.len())]
    ShortWrite { path: PathBuf, value: String, written: usize },
    #[error("reading IRQ affinity: {0}")]
    Read(#[from] SysfsError),
}

impl ApplyError {
    /// The failure class of this error (read-only mode → managed; otherwise by errno).
    pub fn class(&self) -> FailureClass {
        match self {
            ApplyError::ReadOnly { .. } => FailureClass::Managed,
            ApplyError::Open { source, .. } if source.kind() == io::ErrorKind::InvalidInput => FailureClass::Invalid,
            ApplyError::Stat { source, .. } | ApplyError::Open { source, .. } | ApplyError::Write { source, .. } => {
                FailureClass::from_io(source)
            }
            ApplyError::ShortWrite { .. } => FailureClass::Other,
            ApplyError::Read(SysfsError::Read { source, .. } | SysfsError::ListDir { source, .. }) => {
                FailureClass::from_io(source)
            }
            ApplyError::Read(_) => FailureClass::Other,
        }
    }
}

/// What an open's errno means for a path under a root: a link or a way out of it.
fn escape_hint(err: &io::Error) -> &'static str {
    match err.raw_os_error().map(nix::errno::Errno::from_raw) {
        Some(nix::errno::Errno::ELOOP | nix::errno::Errno::EXDEV) => {
            "; the path goes through a symlink or out of the root, so it is never written"
        }
        _ => "",
    }
}

/// The errno's symbolic name (`ENOSPC`), or `no errno` for errors that carry none.
pub(crate) fn errno_name(err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(code) => format!("{:?}", nix::errno::Errno::from_raw(code)),
        None => "no errno".into(),
    }
}

/// Something that can set and read IRQ affinities. [`ProcIrq`] is the real one; tests wrap it to
/// inject faults.
pub trait AffinityWriter {
    /// Writes `cpus` as IRQ `irq`'s affinity and reads it back. `Err` means nothing was applied.
    fn write(&self, irq: u32, cpus: &CpuSet) -> Result<Verification, ApplyError>;

    /// The IRQ's current `smp_affinity_list`.
    fn read_current(&self, irq: u32) -> Result<CpuSet, ApplyError>;

    /// The CPUs online now (`None`: cannot tell), asked when the kernel refuses a set as
    /// invalid, to tell a CPU that went offline since the pass from a wrong plan.
    fn online_now(&self) -> Option<CpuSet> {
        None
    }
}

/// An EINVAL for a set of CPUs that went offline after the pass read them is no failure: the
/// CPU event is on its way ([`WriteOutcome::Overtaken`]). A CPU that went offline and came back
/// between the write and the look at the online CPUs (a hotplug storm) leaves no trace but the
/// EINVAL itself, so a set all online now is written once more, and judged by that try. `Err`
/// hands back the error to classify when neither explains it.
fn overtaken_or_again(
    writer: &dyn AffinityWriter,
    w: &AffinityWrite,
    first: ApplyError,
) -> Result<WriteOutcome, ApplyError> {
    if first.class() != FailureClass::Invalid {
        return Err(first);
    }
    let overtaken = |error: &ApplyError| {
        tracing::debug!(irq = w.irq, cpus = %w.cpus, error = %error, "IRQ affinity not written: its CPUs went offline since the pass read them");
        Ok(WriteOutcome::Overtaken { error: error.to_string() })
    };
    match writer.online_now() {
        None => Err(first),
        Some(on) if !w.cpus.is_subset(&on) => overtaken(&first),
        Some(_) => match writer.write(w.irq, &w.cpus) {
            Ok(verified) => {
                tracing::info!(irq = w.irq, cpus = %w.cpus, matches = verified.matches, first = %first, "IRQ affinity written at the second try (a CPU of it was offline at the first)");
                Ok(WriteOutcome::Written { cpus: w.cpus.clone(), verified })
            }
            Err(again)
                if again.class() == FailureClass::Invalid
                    && writer.online_now().is_some_and(|on| !w.cpus.is_subset(&on)) =>
            {
                overtaken(&again)
            }
            Err(again) => Err(again),
        },
    }
}

/// Performs every write in order and returns one `(irq, outcome)` per write, in the same order.
/// Never stops on a failure; after ENOSPC tries the write's fallbacks in order.
pub fn apply_writes(writer: &dyn AffinityWriter, writes: &[AffinityWrite]) -> Vec<(u32, WriteOutcome)> {
    writes.iter().map(|w| (w.irq, apply_one(writer, w))).collect()
}

/// One write, widened step by step while the kernel has no free vectors; always yields an
/// outcome. A mask that already holds the set right before the write is not written again
/// ([`WriteOutcome::Held`]): the pass read it earlier, and a driver's reset the kernel undoes
/// (the net core re-applying its kept mask) can fall between that read and this write.
fn apply_one(writer: &dyn AffinityWriter, w: &AffinityWrite) -> WriteOutcome {
    if writer.read_current(w.irq).is_ok_and(|now| now == w.cpus) {
        tracing::debug!(irq = w.irq, cpus = %w.cpus, "IRQ affinity already in place: not written");
        return WriteOutcome::Held { cpus: w.cpus.clone() };
    }
    let first = match writer.write(w.irq, &w.cpus) {
        Ok(verified) => {
            tracing::info!(irq = w.irq, cpus = %w.cpus, matches = verified.matches, "IRQ affinity written");
            return WriteOutcome::Written { cpus: w.cpus.clone(), verified };
        }
        Err(e) => e,
    };
    let first = match overtaken_or_again(writer, w, first) {
        Ok(outcome) => return outcome,
        Err(first) => first,
    };
    if first.class() != FailureClass::NoVectors || w.fallbacks.is_empty() {
        tracing::warn!(irq = w.irq, cpus = %w.cpus, class = ?first.class(), error = %first, "IRQ affinity not written");
        return WriteOutcome::not_written(first.class(), first.to_string());
    }
    let mut tried = vec![first.to_string()];
    for fb in &w.fallbacks {
        match writer.write(w.irq, &fb.cpus) {
            Ok(verified) => {
                tracing::info!(irq = w.irq, cpus = %w.cpus, fallback = %fb.cpus, step = fb.step, "no vectors on the chosen CPUs; widened");
                return WriteOutcome::WrittenFallback { cpus: fb.cpus.clone(), step: fb.step.to_string(), verified };
            }
            Err(e) if e.class() == FailureClass::NoVectors => tried.push(format!("{} ({}): {e}", fb.step, fb.cpus)),
            Err(e) => {
                let error = format!("{}; then {} ({}) failed: {e}", tried.join("; then "), fb.step, fb.cpus);
                return WriteOutcome::not_written(e.class(), error);
            }
        }
    }
    WriteOutcome::not_written(FailureClass::NoVectors, tried.join("; then "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errno(code: nix::errno::Errno) -> io::Error {
        io::Error::from_raw_os_error(code as i32)
    }

    #[test]
    fn classes_follow_the_kernels_errnos() {
        use nix::errno::Errno::*;
        let table = [
            (EIO, FailureClass::Managed),
            (EPERM, FailureClass::Managed),
            (ENOENT, FailureClass::Gone),
            (EINVAL, FailureClass::Invalid),
            (ERANGE, FailureClass::Invalid),
            (EOVERFLOW, FailureClass::Invalid),
            (ENOSPC, FailureClass::NoVectors),
            (EACCES, FailureClass::Permission),
            (EISDIR, FailureClass::Other),
            (EBUSY, FailureClass::Other),
        ];
        for (e, class) in table {
            assert_eq!(FailureClass::from_io(&errno(e)), class, "{e:?}");
        }
        assert_eq!(FailureClass::from_io(&io::Error::other("no errno")), FailureClass::Other);
    }

    #[test]
    fn class_serializes_lowercase() {
        let json = serde_json::to_string(&[FailureClass::NoVectors, FailureClass::Managed]).unwrap();
        assert_eq!(json, r#"["novectors","managed"]"#);
    }

    #[test]
    fn effective_is_within_only_for_a_nonempty_subset() {
        let written = CpuSet::parse_list("2-3").unwrap();
        let set = |s| CpuSet::parse_list(s).unwrap();
        assert_eq!(Effective::judge(&written, None), Effective::Absent);
        assert_eq!(Effective::judge(&written, Some(set("3"))), Effective::Within(set("3")));
        assert_eq!(Effective::judge(&written, Some(set("0-7"))), Effective::Pending(set("0-7")));
        assert_eq!(Effective::judge(&written, Some(set(""))), Effective::Pending(set("")));
    }

    /// Refuses every write with EINVAL; `online` is what it says is online now.
    struct Refusing {
        online: Option<CpuSet>,
    }

    impl AffinityWriter for Refusing {
        fn write(&self, irq: u32, cpus: &CpuSet) -> Result<Verification, ApplyError> {
            let path = format!("/proc/irq/{irq}/smp_affinity_list").into();
            Err(ApplyError::Write { path, value: cpus.to_list_string(), source: errno(nix::errno::Errno::EINVAL) })
        }
        fn read_current(&self, _: u32) -> Result<CpuSet, ApplyError> {
            Ok(CpuSet::new())
        }
        fn online_now(&self) -> Option<CpuSet> {
            self.online.clone()
        }
    }

    #[test]
    fn an_invalid_set_whose_cpus_went_offline_is_overtaken_not_failed() {
        let w = AffinityWrite { irq: 33, cpus: CpuSet::single(4), fallbacks: Vec::new() };
        let gone = Refusing { online: Some(CpuSet::parse_list("0-3,5-7").unwrap()) };
        assert!(matches!(apply_one(&gone, &w), WriteOutcome::Overtaken { .. }));
        for still in [Refusing { online: Some(CpuSet::parse_list("0-7").unwrap()) }, Refusing { online: None }] {
            let outcome = apply_one(&still, &w);
            assert!(matches!(outcome, WriteOutcome::Failed { class: FailureClass::Invalid, .. }), "{outcome:?}");
        }
    }

    /// Refuses the first write with EINVAL (its CPU was offline then) and takes the next; every
    /// CPU is online when asked.
    struct Flapped {
        writes: std::cell::Cell<u32>,
    }

    impl AffinityWriter for Flapped {
        fn write(&self, irq: u32, cpus: &CpuSet) -> Result<Verification, ApplyError> {
            self.writes.set(self.writes.get() + 1);
            if self.writes.get() == 1 {
                let path = format!("/proc/irq/{irq}/smp_affinity_list").into();
                return Err(ApplyError::Write {
                    path,
                    value: cpus.to_list_string(),
                    source: errno(nix::errno::Errno::EINVAL),
                });
            }
            Ok(Verification { readback: Some(cpus.clone()), matches: true, effective: Effective::Absent })
        }
        fn read_current(&self, _: u32) -> Result<CpuSet, ApplyError> {
            Ok(CpuSet::new())
        }
        fn online_now(&self) -> Option<CpuSet> {
            CpuSet::parse_list("0-7").ok()
        }
    }

    #[test]
    fn an_invalid_set_whose_cpu_went_offline_and_came_back_is_written_at_the_second_try() {
        let w = AffinityWrite { irq: 33, cpus: CpuSet::single(4), fallbacks: Vec::new() };
        let flapped = Flapped { writes: std::cell::Cell::new(0) };
        let outcome = apply_one(&flapped, &w);
        assert!(matches!(outcome, WriteOutcome::Written { .. }), "{outcome:?}");
        assert_eq!(flapped.writes.get(), 2);
    }

    /// A kernel that holds `now` for every IRQ and counts the writes it gets.
    struct Holding {
        now: CpuSet,
        writes: std::cell::Cell<u32>,
    }

    impl AffinityWriter for Holding {
        fn write(&self, _: u32, cpus: &CpuSet) -> Result<Verification, ApplyError> {
            self.writes.set(self.writes.get() + 1);
            Ok(Verification { readback: Some(cpus.clone()), matches: true, effective: Effective::Absent })
        }
        fn read_current(&self, _: u32) -> Result<CpuSet, ApplyError> {
            Ok(self.now.clone())
        }
    }

    #[test]
    fn a_mask_already_in_place_when_written_is_not_written_again() {
        // The pass read 0-7 (a driver's reset), the kernel then put back 4: no write.
        let k = Holding { now: CpuSet::single(4), writes: std::cell::Cell::new(0) };
        let outcome = apply_one(&k, &AffinityWrite { irq: 33, cpus: CpuSet::single(4), fallbacks: Vec::new() });
        assert_eq!(outcome, WriteOutcome::Held { cpus: CpuSet::single(4) });
        assert_eq!((k.writes.get(), outcome.wrote(), outcome.result_word()), (0, false, "held"));
        assert_eq!(outcome.cpus(), Some(&CpuSet::single(4)), "the CPUs in place");
        assert_eq!(outcome.failure(), None);
        // Anything else is written.
        let outcome = apply_one(&k, &AffinityWrite { irq: 33, cpus: CpuSet::single(5), fallbacks: Vec::new() });
        assert!(matches!(outcome, WriteOutcome::Written { .. }) && outcome.wrote(), "{outcome:?}");
        assert_eq!(k.writes.get(), 1);
    }

    #[test]
    fn write_error_names_file_value_and_errno() {
        let e = ApplyError::Write {
            path: "/x/proc/irq/5/smp_affinity_list".into(),
            value: "0-3\n".into(),
            source: errno(nix::errno::Errno::ENOSPC),
        };
        let s = e.to_string();
        assert!(s.contains("/x/proc/irq/5/smp_affinity_list") && s.contains("0-3") && s.contains("ENOSPC"), "{s}");
        assert_eq!(e.class(), FailureClass::NoVectors);
    }
}
