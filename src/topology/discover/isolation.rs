//! Reading every [`Isolation`] source under a [`Root`]: sysfs (as already read into the
//! topology), the root cgroup's `cpuset.cpus.isolated`, `/proc/cmdline` and irqbalance's
//! environment files, and the runtime claims (`run/irqwise/claims`); with the configuration, the
//! kubelet's CPU manager checkpoint ([`read_isolation_configured`]). A source that cannot be read
//! or parsed costs a warning and isolates nothing; its absence is normal.

use std::path::Path;

use super::claims::read_claims;
use super::kubelet::{read_kubelet_state, KubeletMemory};
use super::{cpulist_problem, io_problem, warning, TopologyWarning};
use crate::sysfs::{parse_cpulist_at, Root};
use crate::topology::claims::Claim;
use crate::topology::isolation::{parse_cmdline, parse_irqbalance, Isolation, IsolationKind, IsolationSource};
use crate::topology::Topology;

/// The root cgroup's list of CPUs in isolated partitions (cgroup v2, kernels 6.7 and later).
pub(crate) const CGROUP_ISOLATED: &str = "sys/fs/cgroup/cpuset.cpus.isolated";
/// The kernel command line.
pub(crate) const CMDLINE: &str = "proc/cmdline";
/// Where tuned, CRI-O and the distributions keep irqbalance's environment: RHEL and Fedora,
/// then Debian and Ubuntu.
pub(crate) const IRQBALANCE_FILES: [&str; 2] = ["etc/sysconfig/irqbalance", "etc/default/irqbalance"];

/// Every source under `root`, in this order: `cpu/isolated` and `cpu/nohz_full` (from
/// `topo`, already read), the cgroup partitions, the command line, the irqbalance files, the
/// claims (every claim read is in `claims`; the live ones are sources too).
/// Lists are cut to `topo.possible`. Never fails: what cannot be read is a warning.
pub(crate) fn read_isolation(root: &Root, topo: &Topology) -> (Isolation, Vec<TopologyWarning>) {
    let mut sources = Vec::new();
    let mut warnings = Vec::new();
    let sysfs = [
        (IsolationKind::Isolated, "isolated", &topo.isolated),
        (IsolationKind::NohzFull, "nohz_full", &topo.nohz_full),
    ];
    for (kind, name, cpus) in sysfs {
        if !cpus.is_empty() {
            let path = root.path(format!("{}/{name}", super::CPU_DIR)).display().to_string();
            sources.push(IsolationSource { kind, path, setting: cpus.to_list_string(), cpus: cpus.clone() });
        }
    }
    sources.extend(cgroup_partitions(root, topo, &mut warnings));
    if let Some(text) = read_text(root, CMDLINE, &mut warnings) {
        let (found, problems) =
            parse_cmdline(&text, &topo.possible, &topo.present, &root.path(CMDLINE).display().to_string());
        sources.extend(found);
        warnings.extend(problems.into_iter().map(|p| warning(root, CMDLINE, p.problem, p.instead)));
    }
    for rel in IRQBALANCE_FILES {
        if let Some(text) = read_text(root, rel, &mut warnings) {
            let (found, problems) = parse_irqbalance(&text, &topo.possible, &root.path(rel).display().to_string());
            sources.extend(found);
            warnings.extend(problems.into_iter().map(|p| warning(root, rel, p.problem, p.instead)));
        }
    }
    let (claims, claim_warnings) = read_claims(root, &topo.possible);
    warnings.extend(claim_warnings);
    sources.extend(claims.iter().filter(|c| c.ended.is_none()).map(|c| IsolationSource {
        kind: IsolationKind::Claim,
        path: c.path.clone(),
        setting: claim_setting(&c.claim),
        cpus: c.claim.cpus.clone(),
    }));
    (Isolation { sources, claims }, warnings)
}

/// [`read_isolation`], and the kubelet's checkpoint at `kubelet` (`kubelet_cpu_manager_state`,
/// when set) as the source listed before the claims, `memory` its last good reading (which a
/// damaged file keeps in force). Not configured, the memory is emptied.
pub(crate) fn read_isolation_configured(
    root: &Root,
    topo: &Topology,
    kubelet: Option<&Path>,
    memory: &mut KubeletMemory,
) -> (Isolation, Vec<TopologyWarning>) {
    let (mut isolation, mut warnings) = read_isolation(root, topo);
    let Some(path) = kubelet else {
        *memory = KubeletMemory::default();
        return (isolation, warnings);
    };
    let (source, warning) = read_kubelet_state(root, path, topo, memory);
    warnings.extend(warning);
    if let Some(source) = source {
        let at =
            isolation.sources.iter().position(|s| s.kind == IsolationKind::Claim).unwrap_or(isolation.sources.len());
        isolation.sources.insert(at, source);
    }
    (isolation, warnings)
}

/// How a claim shows as a source's setting: `web: cpus=4-5 pid=123`.
fn claim_setting(claim: &Claim) -> String {
    let pid = claim.pid.map(|p| format!(" pid={p}")).unwrap_or_default();
    format!("{}: cpus={}{pid}", claim.owner, claim.cpus)
}

/// The cgroup v2 isolated partitions' CPUs, when the kernel shows them and there are any.
fn cgroup_partitions(root: &Root, topo: &Topology, warnings: &mut Vec<TopologyWarning>) -> Option<IsolationSource> {
    let text = read_text(root, CGROUP_ISOLATED, warnings)?;
    let cleaned = text.replace('\0', "");
    match parse_cpulist_at(&root.path(CGROUP_ISOLATED), cleaned.trim()) {
        Ok(set) => {
            let cpus = set.intersection(&topo.possible);
            let path = root.path(CGROUP_ISOLATED).display().to_string();
            (!cpus.is_empty()).then(|| IsolationSource {
                kind: IsolationKind::CgroupPartition,
                path,
                setting: cleaned.trim().to_string(),
                cpus,
            })
        }
        Err(e) => {
            warnings.push(warning(
                root,
                CGROUP_ISOLATED,
                cpulist_problem(&e),
                "no CPU counts as in an isolated partition",
            ));
            None
        }
    }
}

/// A small text file; `None` when absent, or unreadable (with a warning).
fn read_text(root: &Root, rel: &str, warnings: &mut Vec<TopologyWarning>) -> Option<String> {
    match root.read_small_optional(rel) {
        Ok(text) => text,
        Err(e) => {
            warnings.push(warning(root, rel, format!("unreadable ({})", io_problem(&e)), "it isolates no CPU"));
            None
        }
    }
}
