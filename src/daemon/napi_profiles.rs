//! What the daemon knows of the NAPI settings it writes (`[napi]`), and what is to be said of
//! them ([`super::journal`] says it): each instance written (INFO, `NAPI_PROFILE_APPLIED`, one
//! entry per instance), a failure (WARN once per instance and error), a socket the sandbox
//! refuses (WARN once until it changes), and another writer's change of what irqwise wrote:
//! written back, or with `on_drift = "respect"` left to it until the configuration is reloaded.
//!
//! Pure bookkeeping over plans and apply reports; the daemon holds one.

use std::collections::{BTreeMap, BTreeSet};

use super::once::{SaidOnce, SaidOnceEach};
use crate::apply::napi_write::{NapiChange, NapiOutcome};
use crate::choices::{NapiMode, NapiProfile};
use crate::plan::napi_profile::{describe, nanos};
use crate::plan::{NapiView, Plan};

/// What was written and said, so that drift is told from the kernel's own values and nothing
/// is said twice.
#[derive(Debug, Default)]
pub(crate) struct NapiProfiles {
    /// What irqwise wrote to each instance and read back, by id.
    written: BTreeMap<u32, NapiProfile>,
    /// Instances another writer changed, left to it (`on_drift = "respect"`): what it set.
    left: BTreeMap<u32, NapiProfile>,
    failing: SaidOnceEach<u32, String>,
    refused: SaidOnce<String>,
}

/// What [`NapiProfiles::judge`] found in one plan.
#[derive(Debug, Default)]
pub(crate) struct NapiJudgement {
    /// The instances of the plan.
    present: BTreeSet<u32>,
    /// The instances another writer changed.
    pub drift: Vec<NapiDrift>,
    /// The instances left to another writer (`on_drift = "respect"`): not written.
    pub leave: BTreeSet<u32>,
}

impl NapiJudgement {
    /// Turns each instance of `plan` left to another writer into a `skip`.
    pub fn leave_in(&self, plan: &mut Plan) {
        for view in plan.devices.iter_mut().flat_map(|d| d.napi.iter_mut()) {
            if let Some(p) = view.profile.as_mut().filter(|_| self.leave.contains(&view.id)) {
                p.leave();
            }
        }
    }
}

/// One NAPI instance another writer changed since irqwise wrote it.
#[derive(Debug)]
pub(crate) struct NapiDrift {
    pub id: u32,
    /// Its interface's name (the PCI address when there is none).
    pub interface: String,
    /// The keys changed, as `key wrote -> now`.
    pub changed: Vec<String>,
    /// Left to the other writer (`on_drift = "respect"`), with what irqwise wrote; `None`:
    /// written back.
    pub left: Option<NapiProfile>,
}

impl NapiProfiles {
    /// Compares `plan`'s instances with what irqwise wrote to them: a key someone else changed
    /// is drift. With `respect`, such an instance (and every one already left) is to be left
    /// (`skip`, [`NapiJudgement::leave_in`]); otherwise it is written back. Changes nothing:
    /// [`NapiProfiles::take`] keeps the judgement, [`super::journal`] says it.
    pub fn judge(&self, plan: &Plan, respect: bool) -> NapiJudgement {
        let mut j = NapiJudgement {
            present: plan.devices.iter().flat_map(|d| d.napi.iter().map(|n| n.id)).collect(),
            ..NapiJudgement::default()
        };
        for d in &plan.devices {
            let name = d.name.clone().unwrap_or_else(|| d.bdf.clone());
            for view in &d.napi {
                let Some(p) = view.profile.as_ref() else { continue };
                if self.left.contains_key(&view.id) {
                    j.leave.insert(view.id);
                    continue;
                }
                let Some(wrote) = self.written.get(&view.id) else { continue };
                // Only what the config still asks is irqwise's to keep: a key given back is not.
                let wrote = p.desired.keys_of(&wrote.settings, wrote.threaded.map(NapiMode::kernel));
                let changed = changed_keys(&wrote, view);
                if changed.is_empty() {
                    continue;
                }
                if respect {
                    j.leave.insert(view.id);
                }
                j.drift.push(NapiDrift {
                    id: view.id,
                    interface: name.clone(),
                    changed,
                    left: respect.then_some(wrote),
                });
            }
        }
        j
    }

    /// Keeps a judgement of [`NapiProfiles::judge`]: instances gone from the plan are
    /// forgotten, drifted ones are no longer irqwise's writes, those left are remembered.
    pub fn take(&mut self, j: &NapiJudgement) {
        self.written.retain(|id, _| j.present.contains(id));
        self.left.retain(|id, _| j.present.contains(id));
        for d in &j.drift {
            if let Some(wrote) = &d.left {
                self.left.insert(d.id, *wrote);
            }
            self.written.remove(&d.id);
        }
    }

    /// A reload gives every instance left to another writer back to the configuration.
    pub fn forget_left(&mut self) {
        self.left.clear();
    }

    /// Remembers what a pass wrote; what is to be said of its writes comes back as news, each
    /// failure once per instance and error, a machine's refusal once until it ends.
    pub fn record<'c>(&mut self, changes: &'c [NapiChange]) -> Vec<NapiWriteNews<'c>> {
        let mut news = Vec::new();
        for c in changes {
            // The kernel took the request (written, read back otherwise, or the instance gone):
            // a refusal of the machine has ended, said once.
            let taken = matches!(c.result, NapiOutcome::Written | NapiOutcome::Gone | NapiOutcome::Unverified { .. });
            if taken && self.refused.worked() {
                news.push(NapiWriteNews::WritableAgain);
            }
            match &c.result {
                NapiOutcome::Written => {
                    self.failing.worked(&c.napi_id);
                    let entry = self.written.entry(c.napi_id).or_default();
                    *entry = entry.overlay(&c.new);
                    news.push(NapiWriteNews::Written(c));
                }
                NapiOutcome::Gone | NapiOutcome::NotThisMachine => {
                    self.written.remove(&c.napi_id);
                    news.push(NapiWriteNews::Gone(c.napi_id));
                }
                NapiOutcome::Unverified { read } => {
                    let said = format!("read back {}", describe(&NapiProfile::default(), read));
                    if self.failing.failed(c.napi_id, said.clone()) {
                        news.push(NapiWriteNews::Unverified(c, said));
                    }
                }
                NapiOutcome::Failed { error, machine } => {
                    // A socket the sandbox refuses fails every instance alike, with the same
                    // words (they name no instance): said once until it ends.
                    if *machine {
                        if self.refused.failed(error.clone()) {
                            news.push(NapiWriteNews::Refused(error));
                        }
                    } else if self.failing.failed(c.napi_id, error.clone()) {
                        news.push(NapiWriteNews::Failed(c, error));
                    }
                }
            }
        }
        news
    }
}

/// What is to be said of a pass's NAPI writes ([`super::journal_news::say_napi_writes`]).
#[derive(Debug, PartialEq)]
pub(crate) enum NapiWriteNews<'c> {
    /// The kernel takes NAPI settings again after refusing them.
    WritableAgain,
    Written(&'c NapiChange),
    /// The instance was gone before it was written.
    Gone(u32),
    /// Written, but read back otherwise (the words of what was read).
    Unverified(&'c NapiChange, String),
    /// The machine refuses every write (a sandbox), with the error.
    Refused(&'c str),
    /// Not written, with the error.
    Failed(&'c NapiChange, &'c str),
}

/// The keys of `wrote` that `view` has otherwise now, as `key wrote -> now`.
fn changed_keys(wrote: &NapiProfile, view: &NapiView) -> Vec<String> {
    let (w, s) = (&wrote.settings, &view.settings);
    let mut out = Vec::new();
    let mut check = |key: &str, wrote: Option<u64>, now: Option<u64>, time: bool| {
        if let (Some(a), Some(b)) = (wrote, now) {
            if a != b {
                let show = |v: u64| if time { nanos(v) } else { v.to_string() };
                out.push(format!("{key} {} -> {}", show(a), show(b)));
            }
        }
    };
    check("defer_hard_irqs", w.defer_hard_irqs.map(u64::from), s.defer_hard_irqs.map(u64::from), false);
    check("gro_flush_timeout", w.gro_flush_timeout, s.gro_flush_timeout, true);
    check("irq_suspend_timeout", w.irq_suspend_timeout, s.irq_suspend_timeout, true);
    if let (Some(mode), Some(now)) = (wrote.threaded, view.threaded) {
        if mode.kernel() != now {
            out.push(format!("threaded {} -> {}", mode.kernel().as_str(), now.as_str()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::napi_socket::NapiSocketError;
    use crate::apply::napi_write::NapiChange;
    use crate::devices::napi::NapiSettings;
    use crate::plan::napi_profile::NapiProfilePlan;
    use crate::plan::Action;

    fn profile(defer: u32) -> NapiProfile {
        NapiProfile {
            settings: NapiSettings { defer_hard_irqs: Some(defer), ..NapiSettings::default() },
            threaded: None,
        }
    }

    /// A plan whose instance 8193 reads `now` and is configured for defer 3.
    fn plan(now: u32) -> Plan {
        let mut dp = crate::plan::test_plans::nic("0000:81:00.0", Vec::new());
        let differs = now != 3;
        dp.napi = vec![NapiView {
            id: 8193,
            ifindex: 3,
            slot: crate::devices::napi::NapiSlot::Rx(0),
            irq: None,
            queue: Some(0),
            threaded: None,
            pid: None,
            settings: NapiSettings { defer_hard_irqs: Some(now), ..NapiSettings::default() },
            profile: Some(NapiProfilePlan {
                desired: profile(3),
                write: if differs { profile(3) } else { NapiProfile::default() },
                restore: NapiProfile::default(),
                action: if differs { Action::Set } else { Action::Keep },
                unsupported: Vec::new(),
            }),
        }];
        crate::plan::test_plans::plan_of(vec![dp])
    }

    fn written(old: u32) -> NapiChange {
        NapiChange {
            device: "0000:81:00.0".into(),
            interface: Some("eth0".into()),
            napi_id: 8193,
            irq: None,
            queue: Some(0),
            old: profile(old),
            new: profile(3),
            result: NapiOutcome::Written,
        }
    }

    /// What a pass does with the NAPI recorder: judge, leave, keep.
    impl NapiProfiles {
        fn observe(&mut self, plan: &mut Plan, respect: bool) {
            let j = self.judge(plan, respect);
            j.leave_in(plan);
            self.take(&j);
        }
    }

    fn action(p: &Plan) -> Action {
        p.devices[0].napi[0].profile.as_ref().map_or(Action::Skip, |p| p.action)
    }

    #[test]
    fn another_writers_change_is_written_back_or_left_to_it() {
        for respect in [false, true] {
            let mut news = NapiProfiles::default();
            let mut first = plan(0);
            news.observe(&mut first, respect);
            assert_eq!(action(&first), Action::Set, "nothing written yet: no drift");
            news.record(&[written(0)]);
            let mut same = plan(3);
            news.observe(&mut same, respect);
            assert_eq!(action(&same), Action::Keep);
            // Someone sets defer 9.
            let mut drifted = plan(9);
            news.observe(&mut drifted, respect);
            let want = if respect { Action::Skip } else { Action::Set };
            assert_eq!(action(&drifted), want, "respect = {respect}");
            // Left stays left on later passes, until a reload.
            let mut later = plan(9);
            news.observe(&mut later, respect);
            assert_eq!(action(&later), want, "respect = {respect}");
            news.forget_left();
            let mut reloaded = plan(9);
            news.observe(&mut reloaded, respect);
            assert_eq!(action(&reloaded), Action::Set, "a reload gives it back to the configuration");
        }
    }

    /// A log sink the test reads.
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().map(|mut b| b.extend_from_slice(buf)).ok();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What `f` logs.
    fn logged(f: impl FnOnce()) -> String {
        use tracing_subscriber::layer::SubscriberExt;
        let log = Captured::default();
        let sink = log.clone();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::fmt::layer().with_ansi(false).with_writer(move || sink.clone()));
        tracing::subscriber::with_default(subscriber, f);
        let text = log.0.lock().map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        text
    }

    /// A kernel stand-in: every `napi-set` fails with `errno`, or none does.
    struct Refusing(Option<i32>);

    impl crate::apply::napi_write::NapiWriter for Refusing {
        fn set(
            &mut self,
            id: u32,
            _: &NapiSettings,
            _: Option<crate::devices::napi::NapiThreaded>,
        ) -> Result<(), NapiSocketError> {
            self.0.map_or(Ok(()), |errno| Err(NapiSocketError::Refused { op: "set", id, errno }))
        }

        fn get(&mut self, id: u32) -> Result<crate::devices::napi::NapiInstance, NapiSocketError> {
            let settings = NapiSettings { defer_hard_irqs: Some(3), ..NapiSettings::default() };
            Ok(crate::devices::napi::NapiInstance { ifindex: 3, id, irq: None, pid: None, threaded: None, settings })
        }
    }

    #[test]
    fn a_refused_permission_is_said_once_while_it_lasts_and_once_when_it_ends() {
        // Four instances to write, pass after pass.
        let mut four = plan(0);
        let view = four.devices[0].napi[0].clone();
        four.devices[0].napi = (8193..8197).map(|id| NapiView { id, ..view.clone() }).collect();
        let pass = |writer: &mut Refusing| crate::apply::napi_write::apply_napi(&four, writer, true);
        // Without CAP_NET_ADMIN every instance's napi-set fails alike.
        let mut sandboxed = Refusing(Some(nix::errno::Errno::EPERM as i32));
        let mut news = NapiProfiles::default();
        let text = logged(|| {
            for _ in 0..3 {
                super::super::journal_news::say_napi_writes(&news.record(&pass(&mut sandboxed)));
            }
        });
        assert_eq!(text.matches("cannot be written").count(), 1, "one line for the condition:\n{text}");
        // It ends (the capability granted): said once, not per instance or pass.
        let mut granted = Refusing(None);
        let text = logged(|| {
            super::super::journal_news::say_napi_writes(&news.record(&pass(&mut granted)));
            super::super::journal_news::say_napi_writes(&news.record(&pass(&mut granted)));
        });
        assert_eq!(text.matches("can be written again").count(), 1, "{text}");
        // It starting again is news again.
        let text = logged(|| super::super::journal_news::say_napi_writes(&news.record(&pass(&mut sandboxed))));
        assert_eq!(text.matches("cannot be written").count(), 1, "{text}");
    }
}
