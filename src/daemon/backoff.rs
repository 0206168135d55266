//! When the daemon retries a pass that left it degraded.

/// When to retry a pass that left the daemon degraded: 1 s after the first, doubling up to the
/// reconcile interval; forgotten once a pass succeeds. A pass run for another reason in between
/// does not move the scheduled attempt.
pub(super) struct Backoff {
    delay: Option<std::time::Duration>,
    at: Option<tokio::time::Instant>,
    armed: bool,
}

impl Backoff {
    pub(super) fn new() -> Backoff {
        Backoff { delay: None, at: None, armed: false }
    }

    /// After any pass: schedules the next attempt when degraded (first one 1 s away, then twice
    /// the last delay, at most `cap`), clears the schedule when not.
    pub(super) fn after_pass(&mut self, degraded: bool, cap: std::time::Duration) {
        if !degraded {
            (self.delay, self.at, self.armed) = (None, None, false);
            return;
        }
        if self.armed {
            return;
        }
        let next = self.delay.map_or(std::time::Duration::from_secs(1), |d| (d * 2).min(cap.max(d)));
        self.delay = Some(next);
        self.at = Some(tokio::time::Instant::now() + next);
        self.armed = true;
    }

    /// Resolves at the scheduled attempt (never when none is scheduled) and disarms it.
    pub(super) async fn wait(&mut self) {
        match self.at {
            Some(at) => {
                tokio::time::sleep_until(at).await;
                self.armed = false;
                self.at = None;
            }
            None => std::future::pending().await,
        }
    }
}
