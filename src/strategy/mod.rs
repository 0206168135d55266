//! Device strategies: where one device's IRQs should go, given the machine and what the config
//! decided for the device.
//!
//! Every strategy has the same signature, [`Strategy`]: a [`DeviceContext`] in, one [`Decision`]
//! per vector out, in vector order. They are pure, and they never look at kernel-managed IRQs:
//! [`managed::predict`] overlays the kernel's placement on queue vectors afterwards. The kernel's
//! own algorithms they build on live in [`crate::kernel`].

pub(crate) mod allocator;
pub(crate) mod cluster_group;
mod context;
pub mod leave;
pub mod managed;
pub(crate) mod numa_hop;
pub mod pin;
pub mod xps_sets;

use crate::choices::StrategyName;
use crate::cpuset::CpuSet;
use crate::devices::{DeviceClass, IrqVector, QueueRole};

pub(crate) use context::QueueGrouping;

pub use context::QueueAllocation;

pub use context::Target;

pub use context::Setup;

pub use context::DeviceContext;

pub use context::GroupingCache;
pub use context::{Fallback, Machine};

/// The default strategy of one device: `leave` for a device whose interrupts belong to someone
/// else (see [`leave::owner_elsewhere`]), else its class default.
pub(crate) fn default_for_device(device: &crate::devices::Device) -> StrategyName {
    if leave::owner_elsewhere(device).is_some() {
        StrategyName::Leave
    } else {
        StrategyName::default_for(device.class)
    }
}

/// The function that implements strategy `name`.
pub(crate) fn implementation(name: StrategyName) -> Strategy {
    match name {
        StrategyName::NumaHop => numa_hop::place,
        StrategyName::ClusterGroup => cluster_group::place,
        StrategyName::Pin => pin::place,
        StrategyName::Leave => leave::place,
    }
}

/// One signature for every strategy: a decision per vector of `ctx.device`, in vector order.
pub type Strategy = fn(&DeviceContext) -> Vec<Decision>;

/// What a strategy (or the managed-IRQ step) decided for one IRQ, before comparing with its
/// current mask. Invariant: `managed` decisions come only from [`managed::predict`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// `None`: leave the IRQ as it is.
    pub desired: Option<CpuSet>,
    pub managed: bool,
    pub reason: String,
    /// Managed IRQs: whether the kernel's actual placement differs from the prediction where
    /// irqwise can know it.
    pub mismatch: Option<bool>,
    /// Managed IRQs whose prediction depends on what irqwise cannot know: why.
    pub uncertain: Option<String>,
}

impl Decision {
    /// Leave the IRQ alone, for `reason`.
    pub fn leave(reason: &str) -> Decision {
        Decision { desired: None, managed: false, reason: reason.into(), mismatch: None, uncertain: None }
    }

    /// Put the IRQ on `set`, for `reason`.
    pub fn fixed(set: &CpuSet, reason: String) -> Decision {
        Decision { desired: Some(set.clone()), managed: false, reason, mismatch: None, uncertain: None }
    }
}

/// Runs the device's strategy (everything left alone when the device has no usable CPU, except
/// under `leave`, which says why it leaves), then the managed-IRQ step (for every strategy but
/// `leave`, and for storage HBAs whatever their strategy: their managed IRQs are reported), and
/// appends the context's note to every reason that places.
pub(crate) fn decide(
    name: StrategyName,
    ctx: &DeviceContext,
    note: Option<&str>,
    known_managed: &std::collections::BTreeSet<u32>,
) -> Vec<Decision> {
    let mut decisions = if name != StrategyName::Leave && ctx.usable.is_empty() {
        ctx.device.vectors.iter().map(|_| Decision::leave("no usable CPU for this device")).collect()
    } else {
        implementation(name)(ctx)
    };
    if name != StrategyName::Leave || ctx.device.class == DeviceClass::Storage {
        decisions = managed::predict(ctx, decisions, known_managed);
    }
    if let Some(note) = note {
        for d in decisions.iter_mut().filter(|d| d.desired.is_some()) {
            d.reason = format!("{} ({note})", d.reason);
        }
    }
    decisions
}

/// The queue index of a queue IRQ (`io`, `rx`, `tx`, `rxtx`); `None` for admin and misc IRQs.
pub(crate) fn queue_index(v: &IrqVector) -> Option<u32> {
    match v.role {
        QueueRole::Io | QueueRole::Rx | QueueRole::Tx | QueueRole::RxTx => v.queue,
        QueueRole::Admin | QueueRole::Misc => None,
    }
}

/// How reasons name a non-queue vector.
pub(crate) fn role_word(r: QueueRole) -> &'static str {
    match r {
        QueueRole::Admin => "admin",
        _ => "misc",
    }
}

/// The decision for a non-queue vector: the context's misc target, except that a NIC vector
/// whose name was not recognised is left alone (it may be a queue the driver already spread;
/// giving it the node's CPUs would undo that).
pub(crate) fn misc_decision(ctx: &DeviceContext, v: &IrqVector) -> Decision {
    if let Some(why) = unrecognised(ctx, v) {
        return Decision::leave(&why);
    }
    Decision::fixed(&ctx.misc.cpus, format!("{} IRQ: {}", role_word(v.role), ctx.misc.why))
}

/// Why a vector is left alone for want of a recognised name: NIC vectors, whose unknown names
/// may be queues, and any vector whose name gave an impossible queue index; `None` otherwise.
pub(crate) fn unrecognised(ctx: &DeviceContext, v: &IrqVector) -> Option<String> {
    let impossible = matches!(v.recognised, crate::devices::Recognition::IndexOutOfRange { .. });
    (ctx.device.class == DeviceClass::Nic || impossible).then(|| v.recognised.unrecognised_reason()).flatten()
}

/// A reason assembled piece by piece: a pass writes one per queue (8,192 on the plan bench's
/// machine), and `format!` cost a sixth of that pass's instructions.
#[derive(Default)]
pub(crate) struct Reason(String);

impl Reason {
    pub(crate) fn new() -> Reason {
        Reason(String::with_capacity(96))
    }

    pub(crate) fn text(mut self, s: &str) -> Reason {
        self.0.push_str(s);
        self
    }

    pub(crate) fn num(mut self, n: impl itoa::Integer) -> Reason {
        self.0.push_str(itoa::Buffer::new().format(n));
        self
    }

    /// `set` in the kernel's list form.
    pub(crate) fn cpus(mut self, set: &CpuSet) -> Reason {
        // Writing to a String cannot fail.
        let _ = set.write_list(&mut self.0);
        self
    }

    pub(crate) fn done(self) -> String {
        self.0
    }
}

#[cfg(test)]
mod reason_tests {
    use super::Reason;

    #[test]
    fn a_reason_reads_as_the_format_it_replaces() {
        let (q, index, set, size) = (7u32, 3u32, 1usize, 4u32);
        let built = Reason::new()
            .text("queue ")
            .num(q)
            .text(": group ")
            .num(index)
            .text(" of IRQ set ")
            .num(set)
            .text(" (")
            .num(size)
            .text(" queues)")
            .text(" (kernel grouping)")
            .done();
        assert_eq!(built, format!("queue {q}: group {index} of IRQ set {set} ({size} queues) (kernel grouping)"));
        assert_eq!(Reason::new().num(0u32).num(u32::MAX).done(), format!("0{}", u32::MAX));
    }
}
