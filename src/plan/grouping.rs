//! Which `group_cpus_evenly()` rule the running kernel applies (issue #63): the one that
//! reproduces every managed NVMe queue mask the sample shows, else what the kernel's BTF or its
//! version says. Candidates: mainline and cluster-aware grouping (89802ca36c96), each with the
//! three `lib/sort.c` heapsorts, the kernel's own first.
//!
//! Pure: the masks come in with the sample's devices; nothing is read here.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::choices::StrategyName;
use crate::devices::{Device, DeviceClass};
use crate::kernel::facts::{Fact, FactSource};
use crate::kernel::heapsort::SortVariant;
use crate::kernel::{GroupAlgorithm, GroupRules};
use crate::policy::Policy;
use crate::strategy::managed::reproduces;
use crate::strategy::{DeviceContext, Machine};

/// The grouping rule a plan predicts with, where it comes from, and what was seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupingChoice {
    /// `mainline` or `cluster-aware`.
    pub rule: &'static str,
    /// The kernels whose `lib/sort.c` heapsort it uses: `5.1-6.8`, `6.9-6.10` or `6.11+`.
    pub heapsort: &'static str,
    /// `observed` (the managed masks told), else the source of the cluster-grouping fact:
    /// `btf`, `version`, or `unknown` (no version: the fallback's rule).
    pub source: FactSource,
    /// What was seen.
    pub evidence: String,
    /// The managed masks fit no candidate rule: one sentence for `plan` and `status`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
}

impl GroupingChoice {
    /// The line `plan` prints: `grouping: cluster-aware, heapsort of 6.11+ (observed: ...)`.
    pub fn line(&self) -> String {
        format!("grouping: {}, heapsort of {} ({}: {})", self.rule, self.heapsort, self.source.as_str(), self.evidence)
    }
}

/// The rule's name.
fn rule_name(a: GroupAlgorithm) -> &'static str {
    match a {
        GroupAlgorithm::Mainline => "mainline",
        GroupAlgorithm::ClusterAware => "cluster-aware",
    }
}

/// The kernels of a heapsort.
fn sort_name(s: SortVariant) -> &'static str {
    match s {
        SortVariant::S1 => "5.1-6.8",
        SortVariant::S2 => "6.9-6.10",
        SortVariant::S3 => "6.11+",
    }
}

fn other(a: GroupAlgorithm) -> GroupAlgorithm {
    match a {
        GroupAlgorithm::Mainline => GroupAlgorithm::ClusterAware,
        GroupAlgorithm::ClusterAware => GroupAlgorithm::Mainline,
    }
}

/// Every candidate rule, `base` first, then the other algorithm with `base`'s heapsort, then
/// the other heapsorts, newest first, `base`'s algorithm before the other.
pub(crate) fn candidates(base: GroupRules) -> Vec<GroupRules> {
    let mut out = vec![base, GroupRules { algorithm: other(base.algorithm), sort: base.sort }];
    for sort in [SortVariant::S3, SortVariant::S2, SortVariant::S1] {
        for algorithm in [base.algorithm, other(base.algorithm)] {
            let r = GroupRules { algorithm, sort };
            if !out.contains(&r) {
                out.push(r);
            }
        }
    }
    out
}

/// The rules planning starts from: `version_rules` (the release's) with the algorithm the
/// cluster-grouping `fact` says where it says (BTF on a backport).
pub fn fact_rules(version_rules: GroupRules, fact: &Fact<bool>) -> GroupRules {
    match fact.value() {
        Some(true) => GroupRules { algorithm: GroupAlgorithm::ClusterAware, ..version_rules },
        Some(false) => GroupRules { algorithm: GroupAlgorithm::Mainline, ..version_rules },
        None => version_rules,
    }
}

/// The managed NVMe queue masks a sample shows, checked against every candidate rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Observation {
    /// The NVMe devices whose masks were compared (PCI addresses) and their queue masks.
    pub devices: Vec<String>,
    pub queues: usize,
    /// The candidates that reproduce every one, in [`candidates`] order.
    pub fitting: Vec<GroupRules>,
}

/// Checks every NVMe device of `devices` (each with its policy and strategy) against every
/// candidate around `base` on `machine` (whose own rules are replaced by each candidate's).
pub(crate) fn observe(
    machine: &Machine,
    devices: &[(&Device, &Policy, StrategyName)],
    known_managed: &BTreeSet<u32>,
    base: GroupRules,
) -> Observation {
    let nvme: Vec<_> = devices.iter().filter(|(d, _, _)| d.class == DeviceClass::Nvme).collect();
    let mut obs = Observation::default();
    for (i, rules) in candidates(base).into_iter().enumerate() {
        let m = Machine { group_rules: rules, ..*machine };
        let mut fits = true;
        for (d, policy, strategy) in &nvme {
            let (ctx, _) = DeviceContext::new(&m, d, policy, *strategy);
            let Some((ok, shown)) = reproduces(&ctx, known_managed) else { continue };
            fits &= ok;
            if i == 0 {
                obs.devices.push(d.bdf.clone());
                obs.queues += shown;
            }
        }
        if obs.devices.is_empty() {
            return obs;
        }
        if fits {
            obs.fitting.push(rules);
        }
    }
    obs
}

/// The rules to predict with and what to say of them, from `obs` and the rules `base` planning
/// starts from (their algorithm from `fact`, BTF or version; `None`: the version's rules as
/// given). Guarantees: the rules are `base` unless the masks fit another candidate and not
/// `base`; the source is `observed` exactly when the masks fit rules of one algorithm only.
pub(crate) fn decide(base: GroupRules, fact: Option<&Fact<bool>>, obs: &Observation) -> (GroupRules, GroupingChoice) {
    let (source, said) = match fact {
        Some(f) => (f.source(), f.evidence().to_string()),
        None => (FactSource::Version, "the kernel version's rule".to_string()),
    };
    let choice = |rules: GroupRules, source, evidence: String, finding| GroupingChoice {
        rule: rule_name(rules.algorithm),
        heapsort: sort_name(rules.sort),
        source,
        evidence,
        finding,
    };
    let seen = format!("the managed masks of {} NVMe queues ({})", obs.queues, obs.devices.join(", "));
    if obs.devices.is_empty() {
        return (base, choice(base, source, format!("{said}; no managed NVMe queue mask to observe"), None));
    }
    let Some(&first) = obs.fitting.first() else {
        let finding = format!(
            "{seen} fit no grouping rule irqwise knows (mainline or cluster-aware, any heapsort): their predictions use {} ({}) and are not the kernel's",
            rule_name(base.algorithm),
            source.as_str()
        );
        return (base, choice(base, source, said, Some(finding)));
    };
    // Of the rules that fit, the kernel's own algorithm where it is among them.
    let rules = obs.fitting.iter().copied().find(|r| r.algorithm == base.algorithm).unwrap_or(first);
    let algorithms: BTreeSet<&str> = obs.fitting.iter().map(|r| rule_name(r.algorithm)).collect();
    if algorithms.len() > 1 {
        return (rules, choice(rules, source, format!("{said}; {seen} fit both rules"), None));
    }
    let evidence = format!("{seen} fit it, not {}", rule_name(other(rules.algorithm)));
    (rules, choice(rules, FactSource::Observed, evidence, None))
}

/// The cluster-grouping fact `choice` makes: observed where the masks told, else `fact`.
pub fn observed_fact(choice: &GroupingChoice, fact: &Fact<bool>) -> Fact<bool> {
    if choice.source == FactSource::Observed {
        Fact::observed(choice.rule == "cluster-aware", choice.evidence.clone())
    } else {
        fact.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(algorithm: GroupAlgorithm, sort: SortVariant) -> GroupRules {
        GroupRules { algorithm, sort }
    }

    #[test]
    fn candidates_start_with_the_kernels_own_rule_and_hold_each_once() {
        let base = rules(GroupAlgorithm::Mainline, SortVariant::S1);
        let c = candidates(base);
        assert_eq!(c.len(), 6);
        assert_eq!(c[0], base);
        assert_eq!(c[1], rules(GroupAlgorithm::ClusterAware, SortVariant::S1));
        assert_eq!(c[2], rules(GroupAlgorithm::Mainline, SortVariant::S3));
        assert!(c.iter().enumerate().all(|(i, r)| !c[..i].contains(r)));
    }

    #[test]
    fn the_masks_decide_where_they_tell_the_rules_apart_else_the_fact_does() {
        let base = rules(GroupAlgorithm::Mainline, SortVariant::S1);
        let fact = Fact::version(false, "kernel 6.1 < 7.0");
        let seen = |fitting| Observation { devices: vec!["0000:01:00.0".into()], queues: 4, fitting };
        let cluster = rules(GroupAlgorithm::ClusterAware, SortVariant::S3);

        let (r, c) = decide(base, Some(&fact), &seen(vec![cluster]));
        assert_eq!((r, c.source, c.rule, c.finding.is_none()), (cluster, FactSource::Observed, "cluster-aware", true));
        assert!(c.evidence.contains("0000:01:00.0") && c.evidence.contains("not mainline"), "{}", c.evidence);
        assert_eq!(observed_fact(&c, &fact).value(), Some(true));
        assert_eq!(observed_fact(&c, &fact).source(), FactSource::Observed);

        let (r, c) = decide(base, Some(&fact), &seen(vec![cluster, base]));
        assert_eq!((r, c.source), (base, FactSource::Version), "both fit: the fact decides");
        assert!(c.evidence.contains("fit both rules"), "{}", c.evidence);

        let (r, c) = decide(base, Some(&fact), &seen(vec![]));
        assert_eq!((r, c.source), (base, FactSource::Version));
        let finding = c.finding.unwrap();
        assert!(finding.contains("fit no grouping rule") && finding.contains("4 NVMe queues"), "{finding}");

        let (r, c) = decide(base, Some(&fact), &Observation::default());
        assert_eq!((r, c.source, c.finding), (base, FactSource::Version, None));
        assert!(c.evidence.contains("no managed NVMe queue"), "{}", c.evidence);
    }

    #[test]
    fn btf_gives_the_algorithm_and_the_version_the_heapsort() {
        let v61 = GroupRules::for_kernel(crate::kernel::KernelVersion { major: 6, minor: 1 });
        let r = fact_rules(v61, &Fact::btf(true, "FUNC __try_group_cluster_cpus"));
        assert_eq!(r, rules(GroupAlgorithm::ClusterAware, SortVariant::S1));
        assert_eq!(fact_rules(v61, &Fact::unknown("no version")), v61);
    }
}
