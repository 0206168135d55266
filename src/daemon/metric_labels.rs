//! The closed values of the metrics' labels (what a pass, a write, a reload can end as), each
//! with what it means. Pure. The counters count by these names and the metric table
//! (`metric_table.rs`) lists them in the exposition and the docs, so both spell them once, here.

/// One value a label takes, with what it means (empty: the value says it).
pub type Value = (&'static str, &'static str);

/// What can trigger a pass, as counted (`link eth0 up` counts as `link`).
pub(crate) const TRIGGERS: &[Value] = &[
    ("start", ""),
    ("once", ""),
    ("reload", ""),
    ("cpu", ""),
    ("device", ""),
    ("link", ""),
    ("overflow", ""),
    ("reconcile", ""),
    ("isolation", "an isolation file changed"),
    ("retry", "after a degraded pass"),
];
/// How an attempted write ended.
pub(crate) const WRITE_RESULTS: &[Value] = &[
    ("written", ""),
    ("held", "the mask was already in place right before the write: not written; the kernel restores a kept mask after a driver's reset"),
    ("written_fallback", "ENOSPC: the node's CPUs"),
    ("managed", ""),
    ("gone", ""),
    ("overtaken", "its CPUs went offline between the pass's read and the write: the CPU event's pass places it"),
    ("failed", ""),
];
/// Why a failed write failed (the apply module's failure classes that are failures).
pub(crate) const FAILURE_CLASSES: &[Value] =
    &[("invalid", ""), ("novectors", ""), ("permission", "EACCES"), ("readonly", "EROFS"), ("other", "")];
/// Where an IRQ stands after a pass.
pub(crate) const IRQ_STATES: &[Value] = &[
    ("placed", "moved by this daemon and still there"),
    ("kept", "already right"),
    ("managed", ""),
    ("skipped", "left alone"),
    ("failed", ""),
];
/// How a reload ended.
pub(crate) const RELOAD_RESULTS: &[Value] = &[("applied", ""), ("rejected", "")];
pub(crate) const XPS_RESULTS: &[Value] = &[("written", ""), ("failed", "")];
pub(crate) const THREAD_RESULTS: &[Value] =
    &[("written", ""), ("gone", "ended or its pid reused before the move"), ("failed", "")];
pub(crate) const NAPI_RESULTS: &[Value] = &[
    ("written", "read back as written"),
    ("gone", "recreated or removed first"),
    ("unverified", "read back otherwise"),
    ("failed", ""),
];
pub(crate) const THREAD_STATES: &[Value] = &[
    ("placed", "on their queue IRQ's CPUs"),
    ("left", "left alone: not attributable, `napi_threads = \"leave\"`"),
    ("failed", ""),
];
pub(crate) const QUEUE_SOURCES: &[Value] = &[("netlink", ""), ("name", "")];
pub(crate) const BLOCKED_CLASSES: &[Value] = &[
    ("readonly", "`/proc/irq` mounted read-only: `ProtectKernelTunables=`, a container"),
    ("permission", "not root, an LSM"),
];
/// Every `class` a device has (`DeviceClass::as_str`).
pub(crate) const DEVICE_CLASSES: &[Value] =
    &[("nic", ""), ("nvme", ""), ("storage", "a SAS, SCSI or RAID host adapter"), ("other", "")];

/// The value names of `values`, in order.
pub(crate) fn names(values: &[Value]) -> impl Iterator<Item = &'static str> + '_ {
    values.iter().map(|(v, _)| *v)
}
