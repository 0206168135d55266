//! Problems a read shares with a race, held until a second read in a row shows them too.
//!
//! A topology read the kernel refused (an errno: reads of a CPU's topology files fail for a
//! moment while a CPU comes or goes) and a device found vanishing (a hot removal racing the
//! read) are not reported at once: the read is held, the next pass reads everything again, and
//! a follow-up pass ([`Refused::recheck_at`]) comes [`RECHECK_AFTER`] later when no event brings
//! one. Such a problem is a warning only when two reads in a row give it with no CPU event
//! between them.

use crate::devices::discover::DeviceError;
use std::collections::BTreeSet;

/// How long after a read with new refusals the follow-up pass reads again when no event does.
pub(crate) const RECHECK_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// Refused reads, and devices found vanishing, held back until a second read confirms them.
#[derive(Debug, Default)]
pub(crate) struct Refused {
    /// The refusals of the last topology read; forgotten at a CPU event (a race explains them).
    pub(crate) held: BTreeSet<String>,
    /// The devices the last device read found vanishing.
    vanishing: BTreeSet<String>,
    pub(crate) recheck_at: Option<std::time::Instant>,
}

impl Refused {
    /// The warnings to report of a read's: every other one, and the refusals the read before
    /// gave too. New refusals schedule a recheck.
    pub(crate) fn sort(&mut self, warnings: Vec<crate::topology::discover::TopologyWarning>) -> Vec<String> {
        let mut held = BTreeSet::new();
        let mut report = Vec::new();
        for w in warnings {
            let text = w.to_string();
            if !w.transient || hold(&self.held, &mut held, &text) {
                report.push(text);
            }
        }
        let news = !held.is_subset(&self.held);
        self.held = held;
        self.recheck_at = news.then(|| std::time::Instant::now() + RECHECK_AFTER);
        report
    }

    /// Takes out of a device read's `warnings` every device found vanishing (a hot removal
    /// racing the read) that the read before did not find vanishing too, logging it at info;
    /// a new one schedules a recheck, as a new refusal does. Runs after the same pass's
    /// [`Refused::sort`], which sets the recheck from the topology read alone, so it only adds.
    pub(crate) fn sort_devices(&mut self, warnings: &mut Vec<DeviceError>) {
        let mut held = BTreeSet::new();
        warnings.retain(|w| {
            if !w.is_vanished() {
                return true;
            }
            let text = w.to_string();
            let repeated = hold(&self.vanishing, &mut held, &text);
            if !repeated {
                let again = RECHECK_AFTER.as_secs();
                tracing::info!("{}; reading the devices again in {again} s", crate::text::printable(&text));
            }
            repeated
        });
        if !held.is_subset(&self.vanishing) {
            self.recheck_at = Some(std::time::Instant::now() + RECHECK_AFTER);
        }
        self.vanishing = held;
    }
}

/// Holds `text`, a transient problem of this read, in `now`; whether to report it: only when
/// the read before (`before`) held it too.
fn hold(before: &BTreeSet<String>, now: &mut BTreeSet<String>, text: &str) -> bool {
    now.insert(text.to_string());
    before.contains(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vanishing_device_warns_only_when_two_reads_in_a_row_see_it() {
        let gone =
            || DeviceError::Vanished { bdf: "0000:92:00.0".into(), path: "/sys/bus/pci/devices/0000:92:00.0".into() };
        let other = || DeviceError::Kept("IRQ 5 of PCI device 0000:01:00.0: bad".into());
        let mut r = Refused::default();
        let mut w = vec![gone(), other()];
        r.sort_devices(&mut w);
        assert!(r.recheck_at.take().is_some(), "first sight: held, a recheck is due");
        assert_eq!(w.len(), 1);
        assert!(!w[0].is_vanished());
        let mut w = vec![gone()];
        r.sort_devices(&mut w);
        assert!(r.recheck_at.is_none(), "seen again in a row: reported, no recheck");
        assert_eq!(w.len(), 1);
        let mut w = vec![other()];
        r.sort_devices(&mut w);
        let mut w = vec![gone()];
        r.sort_devices(&mut w);
        assert!(r.recheck_at.is_some(), "a read without it in between forgets it");
        assert!(w.is_empty());
    }
}
