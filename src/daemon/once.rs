//! "Say it once": a problem of a side channel (a file the daemon keeps, a transmit queue it
//! writes, a configuration warning) is logged when it starts or changes, not on every pass that
//! meets it again; the first success after it may say that it works again.
//!
//! The one owner of that rule for every side channel: the state file, the metrics file, the
//! topology memory, the record of original masks, each queue's `xps_cpus`, the configuration's
//! warnings and a failing pass.

use std::collections::BTreeMap;

/// One side channel's problem as last said. `P` tells problems apart: a new one is said even
/// while the channel is still failing (another file, another error class).
#[derive(Debug)]
pub(crate) struct SaidOnce<P = ()> {
    said: Option<P>,
}

impl<P> Default for SaidOnce<P> {
    fn default() -> Self {
        SaidOnce { said: None }
    }
}

impl<P: PartialEq> SaidOnce<P> {
    /// The channel failed with `problem`: whether to say it (it is not the problem said last).
    pub fn failed(&mut self, problem: P) -> bool {
        if self.said.as_ref() == Some(&problem) {
            return false;
        }
        self.said = Some(problem);
        true
    }

    /// The channel works: whether it had failed (to say that it works again).
    pub fn worked(&mut self) -> bool {
        self.said.take().is_some()
    }

    /// The problem said and not yet over.
    pub fn current(&self) -> Option<&P> {
        self.said.as_ref()
    }
}

/// [`SaidOnce`] for many channels of one kind, by key (a transmit queue, a warning's text).
#[derive(Debug)]
pub(crate) struct SaidOnceEach<K, P = ()> {
    said: BTreeMap<K, P>,
}

impl<K, P> Default for SaidOnceEach<K, P> {
    fn default() -> Self {
        SaidOnceEach { said: BTreeMap::new() }
    }
}

impl<K: Ord, P: PartialEq> SaidOnceEach<K, P> {
    /// Channel `key` failed with `problem`: whether to say it (not the problem said last for
    /// that key).
    pub fn failed(&mut self, key: K, problem: P) -> bool {
        if self.said.get(&key) == Some(&problem) {
            return false;
        }
        self.said.insert(key, problem);
        true
    }

    /// Channel `key` works: whether it had failed.
    pub fn worked(&mut self, key: &K) -> bool {
        self.said.remove(key).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_is_said_once_until_it_changes_or_ends() {
        let mut once = SaidOnce::default();
        assert!(once.failed("EACCES"));
        assert!(!once.failed("EACCES"), "the same problem again: quiet");
        assert!(once.failed("ENOSPC"), "another problem: said");
        assert_eq!(once.current(), Some(&"ENOSPC"));
        assert!(once.worked(), "the first success after a failure: says it works again");
        assert!(!once.worked(), "and only the first");
        assert!(once.failed("ENOSPC"), "after working, the old problem is news again");
    }

    #[test]
    fn each_key_is_said_on_its_own() {
        let mut each = SaidOnceEach::default();
        assert!(each.failed(("eth0", 1), "EPERM"));
        assert!(each.failed(("eth0", 2), "EPERM"), "another queue");
        assert!(!each.failed(("eth0", 1), "EPERM"));
        assert!(each.failed(("eth0", 1), "EINVAL"));
        assert!(each.worked(&("eth0", 1)));
        assert!(!each.worked(&("eth0", 3)), "never failed");
        assert!(!each.failed(("eth0", 2), "EPERM"), "still failing as said");
    }
}
