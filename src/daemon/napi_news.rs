//! What the daemon says about whole queues ([`super::journal`] says it): each NAPI thread it moves (INFO, `NAPI_THREAD_APPLIED`),
//! a thread it cannot move (WARN once per thread and error class), a queue IRQ whose name says
//! another queue than the kernel (WARN once per IRQ and disagreement, `QUEUE_IDENTITY_DISAGREES`),
//! and why the kernel cannot be asked (INFO, once until the reason changes).

use super::once::{SaidOnce, SaidOnceEach};
use crate::apply::threads::{ThreadChange, ThreadOutcome};
use crate::apply::FailureClass;
use crate::plan::{Plan, QueueDisagreement};

/// What was said, so it is not said again while it holds.
#[derive(Debug, Default)]
pub(crate) struct NapiNews {
    failing: SaidOnceEach<u32, FailureClass>,
    disagreements: SaidOnceEach<u32, (u32, u32)>,
    notices: SaidOnce<Vec<String>>,
}

impl NapiNews {
    /// What is to be said of one applied pass: its notices (once while they hold), each queue
    /// identity disagreement (once per IRQ and disagreement), each thread moved, each thread not
    /// moved (once per thread and class).
    pub fn record<'p>(&mut self, plan: &'p Plan, threads: &'p [ThreadChange]) -> Vec<ThreadNews<'p>> {
        let mut news = Vec::new();
        if plan.notices.is_empty() {
            self.notices.worked();
        } else if self.notices.failed(plan.notices.clone()) {
            news.extend(plan.notices.iter().map(|n| ThreadNews::Notice(n)));
        }
        for d in &plan.queue_disagreements {
            if self.disagreements.failed(d.irq, (d.kernel_queue, d.name_queue)) {
                news.push(ThreadNews::Disagrees(d));
            }
        }
        for t in threads {
            match &t.result {
                ThreadOutcome::Written { .. } => {
                    self.failing.worked(&t.pid);
                    news.push(ThreadNews::Moved(t));
                }
                ThreadOutcome::Gone | ThreadOutcome::NotThisMachine => news.push(ThreadNews::Gone(t)),
                ThreadOutcome::Failed { class, .. } => {
                    if self.failing.failed(t.pid, *class) {
                        news.push(ThreadNews::Failed(t));
                    }
                }
            }
        }
        news
    }
}

/// One thing to say of a pass's whole queues ([`super::journal_news::say_thread_news`]).
#[derive(Debug)]
pub(crate) enum ThreadNews<'p> {
    /// A notice of the plan (why the kernel cannot be asked).
    Notice(&'p str),
    /// A queue IRQ whose name says another queue than the kernel.
    Disagrees(&'p QueueDisagreement),
    /// A NAPI thread moved.
    Moved(&'p ThreadChange),
    /// A thread gone before it was moved.
    Gone(&'p ThreadChange),
    /// A thread not moved.
    Failed(&'p ThreadChange),
}
