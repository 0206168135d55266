//! What the daemon knows and says of the NAPI settings it writes (`[napi]`): each instance
//! written (INFO, `NAPI_PROFILE_APPLIED`, one entry per instance), a failure (WARN once per
//! instance and error), a socket the sandbox refuses (WARN once until it changes), and another
//! writer's change of what irqwise wrote: written back, or with `on_drift = "respect"` left to
//! it until the configuration is reloaded.
//!
//! Pure bookkeeping over plans and apply reports; the daemon holds one.

use std::collections::{BTreeMap, BTreeSet};

use super::catalog;
use super::once::{SaidOnce, SaidOnceEach};
use crate::apply::napi_write::{NapiChange, NapiOutcome};
use crate::choices::{NapiMode, NapiProfile};
use crate::plan::napi_profile::{describe, nanos};
use crate::plan::{NapiView, Plan};
use crate::text::printable;

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

impl NapiProfiles {
    /// Compares `plan`'s instances with what irqwise wrote to them: a key someone else changed
    /// is drift. With `respect`, such an instance (and every one already left) is not written
    /// (`skip`) and said once; otherwise it is written back, and said. Instances gone from the
    /// plan are forgotten.
    pub fn observe(&mut self, plan: &mut Plan, respect: bool) {
        let present: BTreeSet<u32> = plan.devices.iter().flat_map(|d| d.napi.iter().map(|n| n.id)).collect();
        self.written.retain(|id, _| present.contains(id));
        self.left.retain(|id, _| present.contains(id));
        for d in &mut plan.devices {
            let name = d.name.clone().unwrap_or_else(|| d.bdf.clone());
            for view in &mut d.napi {
                let Some(p) = view.profile.as_mut() else { continue };
                if self.left.contains_key(&view.id) {
                    p.leave();
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
                    tracing::warn!(
                        napi_id = view.id,
                        interface = name.as_str(),
                        "napi instance {} of {}: {} changed by another writer; left as it is (on_drift = respect) until the configuration is reloaded",
                        view.id,
                        printable(&name),
                        changed.join(", ")
                    );
                    self.left.insert(view.id, wrote);
                    if let Some(p) = view.profile.as_mut() {
                        p.leave();
                    }
                } else {
                    tracing::info!(
                        napi_id = view.id,
                        interface = name.as_str(),
                        "napi instance {} of {}: {} changed by another writer; written back",
                        view.id,
                        printable(&name),
                        changed.join(", ")
                    );
                }
                self.written.remove(&view.id);
            }
        }
    }

    /// A reload gives every instance left to another writer back to the configuration.
    pub fn forget_left(&mut self) {
        self.left.clear();
    }

    /// Says each write of a pass and remembers what was written.
    pub fn record(&mut self, changes: &[NapiChange]) {
        for c in changes {
            let name = c.interface.clone().unwrap_or_else(|| c.device.clone());
            // The kernel took the request (written, read back otherwise, or the instance gone):
            // a refusal of the machine has ended, said once.
            let taken = matches!(c.result, NapiOutcome::Written | NapiOutcome::Gone | NapiOutcome::Unverified { .. });
            if taken && self.refused.worked() {
                tracing::info!("NAPI settings can be written again: [napi] is applied");
            }
            match &c.result {
                NapiOutcome::Written => {
                    self.failing.worked(&c.napi_id);
                    let entry = self.written.entry(c.napi_id).or_default();
                    *entry = entry.overlay(&c.new);
                    let what = describe(&c.old, &c.new);
                    tracing::info!(
                        message_id = catalog::NAPI_PROFILE_APPLIED,
                        device = c.device.as_str(),
                        interface = name.as_str(),
                        napi_id = c.napi_id,
                        irq = c.irq,
                        queue = c.queue,
                        settings = what.as_str(),
                        "napi profile of {} ({}): instance {}{}: {what}",
                        printable(&name),
                        c.device,
                        c.napi_id,
                        c.queue.map_or(String::new(), |q| format!(" (queue {q})"))
                    );
                }
                NapiOutcome::Gone | NapiOutcome::NotThisMachine => {
                    self.written.remove(&c.napi_id);
                    tracing::debug!(napi_id = c.napi_id, "napi instance {}: gone before it was written", c.napi_id);
                }
                NapiOutcome::Unverified { read } => {
                    let said = format!("read back {}", describe(&NapiProfile::default(), read));
                    if self.failing.failed(c.napi_id, said.clone()) {
                        tracing::warn!(
                            napi_id = c.napi_id,
                            device = c.device.as_str(),
                            "napi instance {} of {}: wrote {}, but the kernel {said}",
                            c.napi_id,
                            printable(&name),
                            describe(&NapiProfile::default(), &c.new)
                        );
                    }
                }
                NapiOutcome::Failed { error, machine } => {
                    // A socket the sandbox refuses fails every instance alike, with the same
                    // words (they name no instance): said once until it ends.
                    if *machine {
                        if self.refused.failed(error.clone()) {
                            tracing::warn!(
                                "NAPI settings cannot be written: {error} (a sandbox that refuses AF_NETLINK or CAP_NET_ADMIN; [napi] is not applied until it can)"
                            );
                        }
                    } else if self.failing.failed(c.napi_id, error.clone()) {
                        tracing::warn!(
                            napi_id = c.napi_id,
                            device = c.device.as_str(),
                            "napi instance {} of {}: not written: {error}",
                            c.napi_id,
                            printable(&name)
                        );
                    }
                }
            }
        }
    }
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
        let mut dp = crate::plan::test_nic_plan("0000:81:00.0", Vec::new(), Vec::new());
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
        Plan { devices: vec![dp], ..Plan::default() }
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
                news.record(&pass(&mut sandboxed));
            }
        });
        assert_eq!(text.matches("cannot be written").count(), 1, "one line for the condition:\n{text}");
        // It ends (the capability granted): said once, not per instance or pass.
        let mut granted = Refusing(None);
        let text = logged(|| {
            news.record(&pass(&mut granted));
            news.record(&pass(&mut granted));
        });
        assert_eq!(text.matches("can be written again").count(), 1, "{text}");
        // It starting again is news again.
        let text = logged(|| news.record(&pass(&mut sandboxed)));
        assert_eq!(text.matches("cannot be written").count(), 1, "{text}");
    }
}
