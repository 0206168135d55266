//! The NRI policy: which runtime claims the runtime's pods and containers ask for. Pure: a
//! function of the [`NriView`], the mode and the CPUs' thread siblings.
//!
//! CRI-O's words, read as CRI-O reads them (`internal/runtimehandlerhooks`): the pod's
//! annotation `irq-load-balancing.crio.io/CONTAINER`, else `irq-load-balancing.crio.io`, with
//! the value `disable` (or `true`, CRI-O's older word) keeps device IRQs off the container's
//! cpuset; `housekeeping` off all of it but the first CPU and its thread siblings; any other
//! value off none of it. As in CRI-O, only a container of a Guaranteed pod (its cgroup parent
//! names neither `burstable` nor `besteffort`) with whole CPUs (CPU shares a multiple of 1024)
//! and a cpuset is claimed for.
//!
//! `nri_exclusive_cpus = true` adds the cpuset of every running container of such a pod whose
//! CPUs no other running container shares (what the CPU manager's static policy and DRA give a
//! Guaranteed pod); a running container without a cpuset runs on every CPU, so while one runs
//! no container's CPUs are exclusive.
//!
//! Guarantees: one claim per running container at most, its owner `nri:` + a name of
//! namespace, pod and container that [`owner_problem`] accepts (shortened with a hash when it
//! would not fit, or to tell apart two containers that would share a name); claims come out
//! ordered by owner; nothing here reads or writes anything.

use std::collections::{BTreeMap, BTreeSet};

use crate::cpuset::CpuSet;
use crate::events::nri::view::{Container, ContainerState, Cpuset, Pod, PodQos, IRQ_ANNOTATION};
use crate::events::nri::NriView;
use crate::topology::claims::{owner_problem, OWNER_MAX};

/// The owners of the claims irqwise writes for NRI start with this (reserved: the daemon
/// removes such claims that the runtime no longer asks for).
pub(crate) const OWNER_PREFIX: &str = "nri:";

/// Why a container's CPUs are claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Why {
    /// The pod's annotation (`key`) says `disable` (or `true`).
    Disable { key: String },
    /// The pod's annotation (`key`) says `housekeeping`: the first CPU's thread siblings keep
    /// IRQs.
    Housekeeping { key: String },
    /// `nri_exclusive_cpus`: no other running container shares its CPUs.
    Exclusive,
}

impl Why {
    /// In words for the log: never an annotation's value beyond the word CRI-O knows.
    pub fn describe(&self) -> String {
        match self {
            Why::Disable { key } => format!("{key}: disable"),
            Why::Housekeeping { key } => format!("{key}: housekeeping"),
            Why::Exclusive => "nri_exclusive_cpus: its CPUs are its own".into(),
        }
    }
}

/// A claim the runtime's state asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Wanted {
    pub owner: String,
    pub cpus: CpuSet,
    /// The container's process, when the runtime gave it.
    pub pid: Option<u32>,
    /// `namespace/pod/container`, escaped for a log line.
    pub who: String,
    pub why: Why,
}

/// An annotated container that gets no claim, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skipped {
    pub container_id: String,
    pub who: String,
    pub reason: String,
}

/// The claims wanted and the annotations not followed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NriPlan {
    pub wanted: Vec<Wanted>,
    pub skipped: Vec<Skipped>,
}

/// What CRI-O's annotation says for container `name` of `pod`: its key and value.
fn irq_word<'p>(pod: &'p Pod, name: &str) -> Option<(String, &'p str)> {
    let own = pod.irq.iter().find(|(target, _)| !target.is_empty() && target == name);
    let all = || pod.irq.iter().find(|(target, _)| target.is_empty());
    own.or_else(all).map(|(target, value)| {
        let key = if target.is_empty() { IRQ_ANNOTATION.to_string() } else { format!("{IRQ_ANNOTATION}/{target}") };
        (crate::text::printable(&key).into_owned(), value.as_str())
    })
}

/// `namespace/pod/container`, escaped.
fn who(pod: Option<&Pod>, c: &Container) -> String {
    let (ns, name) = pod.map_or(("?", "?"), |p| (p.namespace.as_str(), p.name.as_str()));
    crate::text::printable(&format!("{ns}/{name}/{}", c.name)).into_owned()
}

/// Why `c` of `pod` cannot be claimed for as CRI-O would, if it cannot; else its CPUs.
fn claimable(pod: Option<&Pod>, c: &Container) -> Result<CpuSet, String> {
    match pod.map(|p| p.qos) {
        Some(PodQos::Burstable) => return Err("its pod is Burstable (CRI-O, too, leaves it)".into()),
        Some(PodQos::BestEffort) => return Err("its pod is BestEffort (CRI-O, too, leaves it)".into()),
        _ => {}
    }
    if c.shares.is_none_or(|s| s % 1024 != 0) {
        return Err("it does not request whole CPUs (CRI-O, too, leaves it)".into());
    }
    match &c.cpus {
        Cpuset::Cpus(cpus) if !cpus.is_empty() => Ok(cpus.clone()),
        Cpuset::Unreadable => Err("its cpuset is not a CPU list".into()),
        _ => Err("it has no cpuset".into()),
    }
}

/// The claims the running containers of `view` ask for. `exclusive` is `nri_exclusive_cpus`;
/// `siblings(cpu)` gives a CPU's thread siblings (itself at least).
pub(crate) fn plan(view: &NriView, exclusive: bool, siblings: &dyn Fn(u32) -> CpuSet) -> NriPlan {
    let running: Vec<&Container> = view.containers.values().filter(|c| c.state == ContainerState::Running).collect();
    let mut out = NriPlan::default();
    let mut wanted: Vec<(&Container, Wanted)> = Vec::new();
    let users = Users::of(&running);
    for &c in &running {
        let pod = view.pods.get(&c.pod_id);
        let who = who(pod, c);
        let word = pod.and_then(|p| irq_word(p, &c.name));
        let why = match word {
            Some((key, "disable" | "true")) => Why::Disable { key },
            Some((key, "housekeeping")) => Why::Housekeeping { key },
            _ if exclusive => Why::Exclusive,
            _ => continue,
        };
        let cpus = match claimable(pod, c) {
            Ok(cpus) => cpus,
            Err(reason) => {
                if why != Why::Exclusive {
                    out.skipped.push(Skipped { container_id: c.id.clone(), who, reason });
                }
                continue;
            }
        };
        let cpus = match &why {
            Why::Exclusive if users.shared(&cpus) => continue,
            Why::Housekeeping { .. } => match cpus.first() {
                Some(first) => cpus.difference(&siblings(first).intersection(&cpus)),
                None => continue,
            },
            _ => cpus,
        };
        if cpus.is_empty() {
            let reason = "housekeeping keeps its only core for IRQs: nothing is left to claim".into();
            out.skipped.push(Skipped { container_id: c.id.clone(), who, reason });
            continue;
        }
        let owner = owner(pod, c);
        wanted.push((c, Wanted { owner, cpus, pid: c.pid, who, why }));
    }
    out.wanted = unique_owners(wanted);
    out
}

/// How many running containers run on each CPU: linear in the containers and their CPUs,
/// however many there are.
struct Users {
    /// By CPU, the containers with a cpuset that holds it.
    by_cpu: BTreeMap<u32, usize>,
    /// The containers without a (readable) cpuset: they run on every CPU.
    everywhere: usize,
}

impl Users {
    fn of(running: &[&Container]) -> Users {
        let mut users = Users { by_cpu: BTreeMap::new(), everywhere: 0 };
        for c in running {
            match &c.cpus {
                Cpuset::Cpus(cpus) => {
                    for cpu in cpus {
                        *users.by_cpu.entry(cpu).or_default() += 1;
                    }
                }
                Cpuset::Unset | Cpuset::Unreadable => users.everywhere += 1,
            }
        }
        users
    }

    /// Whether another running container than the one of `cpus` (a running container's own
    /// cpuset) runs on any of them.
    fn shared(&self, cpus: &CpuSet) -> bool {
        self.everywhere > 0 || cpus.iter().any(|cpu| self.by_cpu.get(&cpu).is_some_and(|n| *n > 1))
    }
}

/// `wanted` by owner, two containers of one name told apart by their ids' hash.
fn unique_owners(wanted: Vec<(&Container, Wanted)>) -> Vec<Wanted> {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, w) in &wanted {
        *count.entry(w.owner.as_str()).or_default() += 1;
    }
    let clashing: BTreeSet<String> = count.into_iter().filter(|(_, n)| *n > 1).map(|(o, _)| o.to_string()).collect();
    let mut out: Vec<Wanted> = wanted
        .into_iter()
        .map(|(c, mut w)| {
            if clashing.contains(&w.owner) {
                w.owner = fitted(&format!("{}@{}", w.owner, c.id));
            }
            w
        })
        .collect();
    out.sort_by(|a, b| a.owner.cmp(&b.owner));
    out
}

/// The owner of `c`'s claim: `nri:NAMESPACE_POD_CONTAINER` (Kubernetes names are letters,
/// digits, `-` and `.`, so `_` parts them).
pub(crate) fn owner(pod: Option<&Pod>, c: &Container) -> String {
    let (ns, name) = pod.map_or(("", ""), |p| (p.namespace.as_str(), p.name.as_str()));
    fitted(&format!("{OWNER_PREFIX}{ns}_{name}_{}", c.name))
}

/// `name` when it is a valid owner; else its valid characters (others as `-`), cut to leave
/// room for `-` and 16 hex digits of a hash of the whole name, which tell apart names that the
/// replacing or cutting made equal.
fn fitted(name: &str) -> String {
    if owner_problem(name).is_none() {
        return name.to_string();
    }
    let plain: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || "._:@-".contains(c) { c } else { '-' }).collect();
    let keep = OWNER_MAX - 17;
    let cut: String = plain.chars().take(keep).collect();
    format!("{cut}-{:016x}", fnv1a(name.as_bytes()))
}

/// FNV-1a, 64 bits: a stable hash (the same name gives the same owner in every daemon run).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::nri::view::tests::{container, pod};

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    /// Two-thread cores: 0-1, 2-3, ...
    fn pairs(cpu: u32) -> CpuSet {
        set(&format!("{}-{}", cpu & !1, cpu | 1))
    }

    fn running(id: &str, pod: &str, cpus: &str) -> Container {
        let mut c = container(id, pod, cpus);
        c.state = ContainerState::Running;
        c.shares = Some(2048);
        c
    }

    fn view(pods: Vec<Pod>, containers: Vec<Container>) -> NriView {
        let mut v = NriView::default();
        v.replace(pods, containers, 0);
        v
    }

    fn annotated(id: &str, irq: &[(&str, &str)]) -> Pod {
        let mut p = pod(id);
        p.irq = irq.iter().map(|(t, v)| ((*t).to_string(), (*v).to_string())).collect();
        p
    }

    fn claims(p: &NriPlan) -> Vec<(String, String)> {
        p.wanted.iter().map(|w| (w.owner.clone(), w.cpus.to_list_string())).collect()
    }

    #[test]
    fn cri_os_words_claim_as_cri_o_reads_them() {
        let pods = vec![
            annotated("a", &[("", "disable")]),
            annotated("b", &[("", "true")]),
            annotated("c", &[("", "housekeeping")]),
            annotated("d", &[("", "disable"), ("d2", "enable")]),
            annotated("e", &[("e1", "disable")]),
            annotated("f", &[("", "Disable")]),
            pod("g"),
        ];
        let containers = vec![
            running("a1", "a", "2-3"),
            running("b1", "b", "4"),
            running("c1", "c", "6-9"),
            running("d1", "d", "10"),
            running("d2", "d", "11"),
            running("e1", "e", "12"),
            running("e2", "e", "13"),
            running("f1", "f", "14"),
            running("g1", "g", "15"),
        ];
        let p = plan(&view(pods, containers), false, &pairs);
        assert_eq!(
            claims(&p),
            [
                ("nri:ns_a_a1".to_string(), "2-3".to_string()),
                ("nri:ns_b_b1".into(), "4".into()),
                ("nri:ns_c_c1".into(), "8-9".into()), // 6-7 is the first core: housekeeping
                ("nri:ns_d_d1".into(), "10".into()),  // d2's own key says enable
                ("nri:ns_e_e1".into(), "12".into()),  // only e1 is named
            ]
        );
        assert_eq!(p.wanted[4].why.describe(), "irq-load-balancing.crio.io/e1: disable");
        assert_eq!(p.wanted[0].who, "ns/a/a1");
        assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    }

    #[test]
    fn an_annotated_container_cri_o_would_leave_is_left_and_said() {
        let mut burstable = annotated("b", &[("", "disable")]);
        burstable.qos = PodQos::Burstable;
        let mut besteffort = annotated("e", &[("", "disable")]);
        besteffort.qos = PodQos::BestEffort;
        let pods =
            vec![annotated("g", &[("", "disable")]), burstable, besteffort, annotated("h", &[("", "housekeeping")])];
        let mut partial = running("g1", "g", "2-3");
        partial.shares = Some(1536);
        let mut no_shares = running("g2", "g", "4");
        no_shares.shares = None;
        let mut no_cpuset = running("g3", "g", "5");
        no_cpuset.cpus = Cpuset::Unset;
        let mut created = running("g4", "g", "6");
        created.state = ContainerState::Created;
        let containers = vec![
            partial,
            no_shares,
            no_cpuset,
            created,
            running("b1", "b", "8"),
            running("e1", "e", "9"),
            running("h1", "h", "10-11"),
        ];
        let p = plan(&view(pods, containers), false, &pairs);
        assert!(p.wanted.is_empty(), "{:?}", p.wanted);
        let why: Vec<(&str, &str)> = p.skipped.iter().map(|s| (s.container_id.as_str(), s.reason.as_str())).collect();
        assert_eq!(
            why,
            [
                ("b1", "its pod is Burstable (CRI-O, too, leaves it)"),
                ("e1", "its pod is BestEffort (CRI-O, too, leaves it)"),
                ("g1", "it does not request whole CPUs (CRI-O, too, leaves it)"),
                ("g2", "it does not request whole CPUs (CRI-O, too, leaves it)"),
                ("g3", "it has no cpuset"),
                ("h1", "housekeeping keeps its only core for IRQs: nothing is left to claim"),
            ],
            "a container not running is no one's business"
        );
    }

    #[test]
    fn exclusive_mode_claims_the_cpus_no_other_running_container_shares() {
        let pods = vec![pod("p"), pod("q")];
        let mut shared_pool = running("pool", "q", "0-1,6-15");
        shared_pool.shares = Some(512);
        let mut stopped = running("old", "p", "2-3");
        stopped.state = ContainerState::Stopped;
        let containers = vec![
            running("x", "p", "2-3"),
            running("y", "p", "4"),
            running("z", "q", "4-5"), // shares 4 with y: neither is claimed
            shared_pool,
            stopped,
        ];
        let v = view(pods.clone(), containers.clone());
        assert_eq!(claims(&plan(&v, true, &pairs)), [("nri:ns_p_x".to_string(), "2-3".to_string())]);
        assert!(plan(&v, false, &pairs).wanted.is_empty(), "the mode is off");
        assert!(plan(&v, true, &pairs).skipped.is_empty(), "unannotated containers are not said");
        // A running container without a cpuset runs everywhere: nothing is exclusive.
        let mut anywhere = running("w", "q", "");
        anywhere.cpus = Cpuset::Unset;
        let mut all = containers;
        all.push(anywhere);
        assert!(plan(&view(pods, all), true, &pairs).wanted.is_empty());
    }

    #[test]
    fn owners_are_valid_names_hashed_when_too_long_or_clashing() {
        let mut p = pod("p");
        p.namespace = "kube-system".into();
        p.name = "dpdk.worker-7".into();
        let mut c = running("c", "p", "2");
        c.name = "app".into();
        assert_eq!(owner(Some(&p), &c), "nri:kube-system_dpdk.worker-7_app");
        p.name = "x".repeat(300);
        let long = owner(Some(&p), &c);
        assert!(owner_problem(&long).is_none() && long.len() == OWNER_MAX, "{long}");
        let mut other = p.clone();
        other.name.push('y');
        assert_ne!(owner(Some(&other), &c), long, "names cut alike hash apart");
        c.name = "a/b\nc".into();
        let odd = owner(Some(&pod("p")), &c);
        assert!(owner_problem(&odd).is_none() && odd.starts_with("nri:ns_p_a-b-c-"), "{odd}");
        // Two running containers of one name get two claims.
        let pods = vec![annotated("p", &[("", "disable")]), annotated("p2", &[("", "disable")])];
        let mut c1 = running("id1", "p", "2");
        let mut c2 = running("id2", "p2", "3");
        (c1.name, c2.name) = ("app".into(), "app".into());
        let mut pods = pods;
        pods[1].name = "p".into();
        let p = plan(&view(pods, vec![c1, c2]), false, &pairs);
        let owners: Vec<&str> = p.wanted.iter().map(|w| w.owner.as_str()).collect();
        assert_eq!(owners.len(), 2);
        assert_ne!(owners[0], owners[1]);
        assert!(owners.iter().all(|o| owner_problem(o).is_none() && o.starts_with("nri:ns_p_app@id")), "{owners:?}");
    }
}
