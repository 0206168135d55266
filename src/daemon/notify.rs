//! The systemd notification protocol (`sd_notify(3)`): READY, STATUS, RELOADING, STOPPING and
//! the watchdog. Every message is a no-op without `NOTIFY_SOCKET`, so the daemon runs the same
//! under systemd, in a shell and in tests.

use std::time::Duration;

use sd_notify::NotifyState;

/// Sends notifications; remembers whether one already failed so a broken socket is reported
/// once, not on every pass.
#[derive(Debug, Default)]
pub(crate) struct Notifier {
    failed: bool,
}

impl Notifier {
    pub fn new() -> Notifier {
        Notifier::default()
    }

    /// `READY=1` with the one-line status: start-up (or a reload) is complete.
    pub fn ready(&mut self, status: &str) {
        self.send(&[NotifyState::Ready, NotifyState::Status(status)]);
    }

    /// `STATUS=` alone, after an ordinary pass.
    pub fn status(&mut self, status: &str) {
        self.send(&[NotifyState::Status(status)]);
    }

    /// `RELOADING=1` with `MONOTONIC_USEC=` (CLOCK_MONOTONIC now), as systemd 253+ requires and
    /// older versions accept.
    pub fn reloading(&mut self) {
        match NotifyState::monotonic_usec_now() {
            Ok(now) => self.send(&[NotifyState::Reloading, now]),
            Err(e) => {
                tracing::warn!("cannot read CLOCK_MONOTONIC for MONOTONIC_USEC: {e}");
                self.send(&[NotifyState::Reloading]);
            }
        }
    }

    /// `STOPPING=1`.
    pub(crate) fn stopping(&mut self) {
        self.send(&[NotifyState::Stopping]);
    }

    /// `WATCHDOG=1`.
    pub fn watchdog(&mut self) {
        self.send(&[NotifyState::Watchdog]);
    }

    fn send(&mut self, states: &[NotifyState]) {
        if let Err(e) = sd_notify::notify(false, states) {
            if !self.failed {
                let path = std::env::var("NOTIFY_SOCKET").unwrap_or_default();
                tracing::warn!("cannot notify the service manager at NOTIFY_SOCKET={path:?}: {e}");
            }
            self.failed = true;
        }
    }
}

/// The ping period when the service manager expects watchdog pings: half of `WATCHDOG_USEC`.
///
/// Follows `sd_watchdog_enabled(3)`: `WATCHDOG_PID`, when set, must be this process; when unset
/// the watchdog applies to us. (sd-notify 0.4's `watchdog_enabled` also requires `WATCHDOG_PID`,
/// which systemd does set, but a bare `WATCHDOG_USEC` is valid too.) `None` when disabled or
/// when the values are not numbers or zero.
pub(crate) fn watchdog_period() -> Option<Duration> {
    let usec = std::env::var("WATCHDOG_USEC").ok()?;
    watchdog_period_from(&usec, std::env::var("WATCHDOG_PID").ok().as_deref(), std::process::id())
}

/// Pure part of [`watchdog_period`]: half of `usec`, if `pid` (when given) is `me`.
pub(crate) fn watchdog_period_from(usec: &str, pid: Option<&str>, me: u32) -> Option<Duration> {
    let usec: u64 = usec.trim().parse().ok().filter(|&u| u > 0)?;
    if let Some(pid) = pid {
        if pid.trim().parse::<u32>().ok()? != me {
            return None;
        }
    }
    Some(Duration::from_micros((usec / 2).max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watchdog_is_half_the_interval_and_honours_the_pid() {
        assert_eq!(watchdog_period_from("200000", None, 7), Some(Duration::from_millis(100)));
        assert_eq!(watchdog_period_from("200000", Some("7"), 7), Some(Duration::from_millis(100)));
        assert_eq!(watchdog_period_from("200000", Some("8"), 7), None);
        assert_eq!(watchdog_period_from("0", None, 7), None);
        assert_eq!(watchdog_period_from("soon", None, 7), None);
        assert_eq!(watchdog_period_from("200000", Some("x"), 7), None);
    }
}
