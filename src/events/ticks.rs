//! The reconcile rhythm from the kernel: a `timerfd` on `CLOCK_MONOTONIC`, registered with the
//! runtime, wakes the daemon once per tick. tokio's timer wheel parks until the next slot of the
//! level a deadline sits in, so a tick a minute away wakes an otherwise idle daemon three times as
//! it cascades down the levels (each wake-up a context switch); the kernel's timer wakes it once.
//!
//! Under tokio's paused test clock the kernel does not count: tests of the timer's rhythm use
//! tokio's own (see `EventConfig::kernel_timer`).

use std::io;
use std::os::fd::OwnedFd;
use std::time::Duration;

use rustix::time::{timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// A periodic kernel timer: the first tick one period after it is made.
pub(super) struct KernelTicks {
    fd: AsyncFd<OwnedFd>,
}

impl KernelTicks {
    /// Ticks every `period` (at least 1 ms); an error when the kernel or the runtime refuses it.
    pub(super) fn every(period: Duration) -> io::Result<KernelTicks> {
        let period = period.max(Duration::from_millis(1));
        let spec = rustix::time::Timespec::try_from(period)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "period out of range"))?;
        let fd = timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC)?;
        timerfd_settime(&fd, TimerfdTimerFlags::empty(), &Itimerspec { it_interval: spec, it_value: spec })?;
        // SAFETY: the descriptor is an OwnedFd moved into the AsyncFd, which owns it: it stays
        // open, and `as_raw_fd` returns the same descriptor, until the AsyncFd drops.
        #[allow(unsafe_code)]
        let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(|e| e.into_parts().1)?;
        Ok(KernelTicks { fd })
    }

    /// Waits for the next tick; ticks missed meanwhile count as one (the rhythm stays that of the
    /// first tick).
    pub(super) async fn tick(&mut self) -> io::Result<()> {
        loop {
            let mut ready = self.fd.readable().await?;
            let mut expirations = [0u8; 8];
            match ready.try_io(|fd| Ok(rustix::io::read(fd.get_ref(), &mut expirations)?)) {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => {} // read before the tick: wait again
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[tokio::test]
    async fn ticks_missed_while_busy_count_as_one_and_the_rhythm_holds() {
        let start = Instant::now();
        let mut ticks = KernelTicks::every(Duration::from_millis(100)).unwrap();
        std::thread::sleep(Duration::from_millis(350)); // busy: the ticks at 100, 200, 300 ms pass
        ticks.tick().await.unwrap(); // all three, read as one
        ticks.tick().await.unwrap(); // the next is the one at 400 ms, not a queued old one
        assert!(start.elapsed() >= Duration::from_millis(400), "{:?}", start.elapsed());
    }
}
