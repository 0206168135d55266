//! Which runtime claims a pass holds: the claims are isolation sources, admitted oldest first
//! against everything else that keeps CPUs free of device IRQs ([`admit_claims`]).
//!
//! Guarantees: the claims held leave an online CPU that neither `banned_cpus` nor (with
//! `respect_isolation`) any isolation keeps free; a claim that holds is never dropped for a newer
//! one; every claim not held is named with its reason, for the plan's warnings, the daemon's
//! state, `claim`'s exit and `claims`. Pure.

use std::borrow::Cow;

use crate::config::Config;
use crate::cpuset::CpuSet;
use crate::topology::claims::{admit_claims, RefusedClaim};
use crate::topology::isolation::Effect;
use crate::topology::{Isolation, Topology};

/// The CPUs kept free whatever the claims, and those words: `banned_cpus 0-3, isolated CPUs 6-7`.
pub(crate) fn kept_free_besides_claims(config: &Config, topo: &Topology, isolation: &Isolation) -> (CpuSet, String) {
    let mut parts = Vec::new();
    let banned = config.global.banned_cpus.clone();
    if !banned.is_empty() {
        parts.push(format!("banned_cpus {banned}"));
    }
    let mut free = banned;
    if config.global.respect_isolation {
        let isolated = isolation.cpus_with(Effect::Isolated).union(&topo.isolated).union(&topo.nohz_full);
        if !isolated.is_empty() {
            parts.push(format!("isolated CPUs {isolated}"));
        }
        free.extend_with(&isolated);
    }
    (free, parts.join(", "))
}

/// `isolation` with only the claims that hold among its sources, and the claims refused. The
/// claims are taken in the order the isolation lists them (oldest first).
pub(crate) fn hold_claims<'i>(
    isolation: &'i Isolation,
    config: &Config,
    topo: &Topology,
) -> (Cow<'i, Isolation>, Vec<RefusedClaim>) {
    let live: Vec<&crate::topology::claims::Claim> =
        isolation.claims.iter().filter(|c| c.ended.is_none()).map(|c| &c.claim).collect();
    if live.is_empty() {
        return (Cow::Borrowed(isolation), Vec::new());
    }
    let (free, why) = kept_free_besides_claims(config, topo, isolation);
    let (_, refused) = admit_claims(live, &topo.online, &free, &why);
    if refused.is_empty() {
        return (Cow::Borrowed(isolation), refused);
    }
    let mut held = isolation.clone();
    held.sources.retain(|s| s.claim_owner().is_none_or(|owner| !refused.iter().any(|r| r.owner == owner)));
    (Cow::Owned(held), refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::claims::{Claim, ClaimRead};
    use crate::topology::isolation::{IsolationKind, IsolationSource};

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    fn claimed(owner: &str, cpus: &str) -> (IsolationSource, ClaimRead) {
        let path = format!("/run/irqwise/claims/{owner}");
        let source =
            IsolationSource { kind: IsolationKind::Claim, path: path.clone(), setting: owner.into(), cpus: set(cpus) };
        let claim = Claim { owner: owner.into(), cpus: set(cpus), pid: None, pid_start: None };
        (source, ClaimRead { claim, path, ended: None, written: None })
    }

    #[test]
    fn a_claim_that_would_leave_only_isolated_cpus_is_refused_and_leaves_the_sources() {
        let topo = crate::topology::synthetic::SyntheticMachine::new(2, 2, 2).build();
        assert_eq!(topo.online, set("0-7"));
        let mut config = Config::default();
        config.global.banned_cpus = set("0-1");
        let isolated = IsolationSource {
            kind: IsolationKind::Isolated,
            path: "/sys/devices/system/cpu/isolated".into(),
            setting: "2-3".into(),
            cpus: set("2-3"),
        };
        let (a, a_read) = claimed("a", "4-5");
        let (b, b_read) = claimed("b", "6-7");
        let iso = Isolation { sources: vec![isolated, a, b], claims: vec![a_read, b_read] };
        let (held, refused) = hold_claims(&iso, &config, &topo);
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert_eq!(refused[0].owner, "b");
        assert!(
            refused[0].reason.contains("beside banned_cpus 0-1, isolated CPUs 2-3, claim a (CPUs 4-5)"),
            "{refused:?}"
        );
        let owners: Vec<_> = held.sources.iter().filter_map(|s| s.claim_owner()).collect();
        assert_eq!(owners, ["a"]);
        // Without respect_isolation the isolated CPUs are usable: both hold.
        config.global.respect_isolation = false;
        let (held, refused) = hold_claims(&iso, &config, &topo);
        assert!(refused.is_empty() && matches!(held, Cow::Borrowed(_)));
    }
}
