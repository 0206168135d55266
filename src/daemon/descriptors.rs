//! The daemon's file descriptors: what a claim may cost.
//!
//! Each claimed process costs one pidfd while its claim holds (its exit runs a pass at once).
//! Everything else the daemon keeps open is a few dozen descriptors (netlink and inotify
//! sockets, the instance lock, the runtime's, irqbalance's socket with at most
//! `irqbalance_socket::CONNECTIONS_MAX` connections), and a pass opens sysfs files a few at a
//! time.
//! Guarantees: at start the soft `RLIMIT_NOFILE` is raised, within the hard limit, to what
//! [`MAX_CLAIMS`] pidfds and [`RESERVE`] need; the claims never hold more pidfds than the limit
//! leaves beyond [`RESERVE`] (claimed processes past that are seen exiting by the reconcile
//! timer, said once): a claim never costs the daemon its state file or a pass.

use crate::topology::claims::MAX_CLAIMS;

/// Descriptors kept for everything but the claims' pidfds: the daemon's own and irqbalance's
/// socket's at its busiest.
pub(crate) const RESERVE: u64 = OWN + IRQBALANCE_SOCKET;

/// The sockets, watches and files of the daemon and of one pass (measured: 15-19 between
/// passes), with room for a pass's files.
const OWN: u64 = 47;

/// irqbalance's socket (`irqbalance_socket = true`): its listener and every connection in
/// service; clients past those wait in the kernel's queue, costing no descriptor.
const IRQBALANCE_SOCKET: u64 = 1 + super::irqbalance_socket::CONNECTIONS_MAX as u64;

/// The soft limit to ask for and the pidfds the claims may hold, from the limits now: the soft
/// limit raised to `MAX_CLAIMS + RESERVE` where the hard limit allows (never lowered).
pub(crate) fn plan_limit(soft: u64, hard: u64) -> (u64, usize) {
    let want = MAX_CLAIMS as u64 + RESERVE;
    let soft = soft.max(want.min(hard));
    let watches = soft.saturating_sub(RESERVE).min(MAX_CLAIMS as u64);
    (soft, usize::try_from(watches).unwrap_or(MAX_CLAIMS))
}

/// Raises the soft `RLIMIT_NOFILE` as [`plan_limit`] says and returns how many pidfds the claims
/// may hold. A limit that cannot be read or raised keeps what it was, said once here.
pub(crate) fn raise_for_claims() -> usize {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let now = getrlimit(Resource::Nofile);
    let soft = now.current.unwrap_or(u64::MAX);
    let hard = now.maximum.unwrap_or(u64::MAX);
    let (want, watches) = plan_limit(soft, hard);
    if want > soft {
        if let Err(e) = setrlimit(Resource::Nofile, Rlimit { current: Some(want), maximum: now.maximum }) {
            tracing::warn!(
                "cannot raise the open-file limit from {soft} to {want} ({e}): claims may hold {} process watches",
                soft.saturating_sub(RESERVE)
            );
            return usize::try_from(soft.saturating_sub(RESERVE)).unwrap_or(0).min(MAX_CLAIMS);
        }
        tracing::debug!("open-file limit raised from {soft} to {want} for the claims' process watches");
    }
    watches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_grows_to_what_the_claims_need_within_the_hard_one() {
        let need = MAX_CLAIMS as u64 + RESERVE;
        assert_eq!(plan_limit(1024, 524_288), (need.max(1024), MAX_CLAIMS));
        assert_eq!(plan_limit(96, 96), (96, 32), "a low hard limit: the claims get what is left");
        assert_eq!(plan_limit(40, 40), (40, 0));
        assert_eq!(plan_limit(1_048_576, 1_048_576), (1_048_576, MAX_CLAIMS), "never lowered");
    }
}
