//! Waiting for a process to exit without polling: a pidfd (`pidfd_open(2)`, Linux 5.3) becomes
//! readable when its process exits, and refers to that process only, never to a later one that
//! reuses its pid.

use std::io;
use std::os::fd::OwnedFd;

use rustix::process::{pidfd_open, Pid, PidfdFlags};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// A handle on process `pid`; `ESRCH` when it has already exited.
pub(crate) fn open(pid: u32) -> io::Result<OwnedFd> {
    let pid =
        i32::try_from(pid).ok().and_then(Pid::from_raw).ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    Ok(pidfd_open(pid, PidfdFlags::NONBLOCK)?)
}

/// Resolves when the process of `fd` has exited (at once when it already has). Must be
/// awaited inside a tokio runtime.
pub(crate) async fn exited(fd: OwnedFd) -> io::Result<()> {
    // SAFETY: the descriptor is an OwnedFd moved into the AsyncFd, which owns it: it stays
    // open, and `as_raw_fd` returns the same descriptor, until the AsyncFd drops.
    #[allow(unsafe_code)]
    let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(|e| e.into_parts().1)?;
    let _ready = fd.readable().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn an_exit_is_seen_and_a_live_process_is_waited_for() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let fd = open(child.id()).unwrap();
        let waiting = tokio::spawn(exited(fd));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiting.is_finished(), "the process still runs");
        child.kill().unwrap();
        let done = tokio::time::timeout(Duration::from_secs(10), waiting).await;
        assert!(matches!(done, Ok(Ok(Ok(())))), "{done:?}");
        child.wait().unwrap();
        assert_eq!(open(child.id()).map(|_| ()).map_err(|e| e.raw_os_error()), Err(Some(libc::ESRCH)));
    }
}
