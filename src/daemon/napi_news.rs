//! What the daemon says about whole queues: each NAPI thread it moves (INFO, `NAPI_THREAD_APPLIED`),
//! a thread it cannot move (WARN once per thread and error class), a queue IRQ whose name says
//! another queue than the kernel (WARN once per IRQ and disagreement, `QUEUE_IDENTITY_DISAGREES`),
//! and why the kernel cannot be asked (INFO, once until the reason changes).

use super::catalog;
use super::once::{SaidOnce, SaidOnceEach};
use crate::apply::threads::{ThreadChange, ThreadOutcome};
use crate::apply::FailureClass;
use crate::cpuset::CpuSet;
use crate::plan::Plan;
use crate::text::printable;

/// What was said, so it is not said again while it holds.
#[derive(Debug, Default)]
pub(crate) struct NapiNews {
    failing: SaidOnceEach<u32, FailureClass>,
    disagreements: SaidOnceEach<u32, (u32, u32)>,
    notices: SaidOnce<Vec<String>>,
}

impl NapiNews {
    /// Says the news of one applied pass.
    pub fn record(&mut self, plan: &Plan, threads: &[ThreadChange]) {
        if plan.notices.is_empty() {
            self.notices.worked();
        } else if self.notices.failed(plan.notices.clone()) {
            for n in &plan.notices {
                tracing::info!("{}", printable(n));
            }
        }
        for d in &plan.queue_disagreements {
            if self.disagreements.failed(d.irq, (d.kernel_queue, d.name_queue)) {
                tracing::warn!(
                    message_id = catalog::QUEUE_IDENTITY_DISAGREES,
                    irq = d.irq,
                    device = d.bdf.as_str(),
                    irq_name = d.name.as_deref().unwrap_or(""),
                    kernel_queue = d.kernel_queue,
                    name_queue = d.name_queue,
                    "irq {} ({}) of {}: its name says queue {}, the kernel says queue {}; the kernel's is used",
                    d.irq,
                    printable(d.name.as_deref().unwrap_or("?")),
                    d.bdf,
                    d.name_queue,
                    d.kernel_queue
                );
            }
        }
        for t in threads {
            self.log_thread(t);
        }
    }

    fn log_thread(&mut self, t: &ThreadChange) {
        let old = t.old.as_ref().map_or("?".to_string(), CpuSet::to_list_string);
        match &t.result {
            ThreadOutcome::Written { new } => {
                self.failing.worked(&t.pid);
                let new = new.to_list_string();
                tracing::info!(
                    message_id = catalog::NAPI_THREAD_APPLIED,
                    device = t.device.as_str(),
                    pid = t.pid,
                    thread = t.name.as_str(),
                    irq = t.irq,
                    cpus_old = old.as_str(),
                    cpus_new = new.as_str(),
                    "thread {} (pid {}) of {}: {old} -> {new}, with irq {}",
                    printable(&t.name),
                    t.pid,
                    t.device,
                    t.irq.map_or("?".to_string(), |i| i.to_string())
                );
            }
            ThreadOutcome::Gone | ThreadOutcome::NotThisMachine => {
                tracing::debug!(pid = t.pid, "thread {} (pid {}): gone before it was moved", printable(&t.name), t.pid);
            }
            ThreadOutcome::Failed { class, error } => {
                if self.failing.failed(t.pid, *class) {
                    tracing::warn!(
                        message_id = catalog::WRITE_FAILED,
                        device = t.device.as_str(),
                        pid = t.pid,
                        thread = t.name.as_str(),
                        class = ?class,
                        "thread {} (pid {}) of {}: not moved ({class:?}): {}",
                        printable(&t.name),
                        t.pid,
                        t.device,
                        printable(error)
                    );
                }
            }
        }
    }
}
