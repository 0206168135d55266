//! What irqwise keeps of the runtime's pods and containers: the few fields its policy reads,
//! each bounded, and never an annotation's value beyond the IRQ word, an environment or a
//! label. Pure.
//!
//! Guarantees: at most [`MAX_PODS`] pods and [`MAX_CONTAINERS`] containers are kept (those past
//! the cap are counted, not kept: a runtime flooding events cannot grow memory without bound);
//! a [`Synchronize`](NriView::replace) replaces everything (the runtime's truth after each
//! connection); a stopped or removed container, a stopped or removed pod and its containers
//! are forgotten.

use std::collections::BTreeMap;

use crate::cpuset::CpuSet;

/// The most pods kept (Kubernetes runs at most 110 per node by default).
pub const MAX_PODS: usize = 1024;
/// The most containers kept.
pub const MAX_CONTAINERS: usize = 4096;
/// The most IRQ annotations kept per pod (one pod-wide, one per container).
pub const MAX_IRQ_WORDS: usize = 64;
/// The longest IRQ annotation value kept (longer ones are kept empty: no word CRI-O knows).
pub const MAX_WORD: usize = 32;

/// The annotation CRI-O reads for IRQ load balancing; `KEY/CONTAINER` for one container.
pub const IRQ_ANNOTATION: &str = "irq-load-balancing.crio.io";

/// A pod's QoS class, as its cgroup parent's name tells it (the way CRI-O reads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodQos {
    /// Neither `burstable` nor `besteffort` in its cgroup parent (or none given).
    Guaranteed,
    Burstable,
    BestEffort,
}

impl PodQos {
    /// The class a cgroup parent's name says (`kubepods-burstable-pod….slice`).
    pub fn of_cgroup_parent(parent: &str) -> PodQos {
        if parent.contains("besteffort") {
            PodQos::BestEffort
        } else if parent.contains("burstable") {
            PodQos::Burstable
        } else {
            PodQos::Guaranteed
        }
    }
}

/// A pod sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pod {
    pub id: String,
    pub name: String,
    pub namespace: String,
    pub qos: PodQos,
    /// The pod's `irq-load-balancing.crio.io` annotations: `("", value)` for the pod-wide key,
    /// `(container, value)` for `irq-load-balancing.crio.io/container`.
    pub irq: Vec<(String, String)>,
}

/// A container's state, as the runtime numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerState {
    Unknown,
    Created,
    Paused,
    Running,
    Stopped,
}

impl ContainerState {
    pub fn of(n: u64) -> ContainerState {
        match n {
            1 => ContainerState::Created,
            2 => ContainerState::Paused,
            3 => ContainerState::Running,
            4 => ContainerState::Stopped,
            _ => ContainerState::Unknown,
        }
    }
}

/// A container's `linux.resources.cpu.cpus`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cpuset {
    /// Not given (the container runs on every CPU).
    Unset,
    Cpus(CpuSet),
    /// Not a CPU list.
    Unreadable,
}

/// A container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    pub id: String,
    pub pod_id: String,
    pub name: String,
    pub state: ContainerState,
    pub cpus: Cpuset,
    /// `linux.resources.cpu.shares`, when given.
    pub shares: Option<u64>,
    /// Its init process (the runtime's pid namespace, the host's for containerd), when given.
    pub pid: Option<u32>,
}

/// A runtime event, as far as the view is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// StartContainer: the container runs from now on (its state may still say created).
    Started(Pod, Container),
    /// PostUpdateContainer: its resources changed.
    Updated(Pod, Container),
    /// StopContainer or RemoveContainer.
    Gone(String),
    /// StopPodSandbox or RemovePodSandbox: the pod and its containers.
    PodGone(String),
}

/// The pods and containers known, and what was left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NriView {
    pub pods: BTreeMap<String, Pod>,
    pub containers: BTreeMap<String, Container>,
    /// Whether a whole Synchronize was taken since the daemon started (until then, the claims
    /// an earlier daemon left are kept).
    pub synced: bool,
    /// Pods and containers left out since the last Synchronize because the caps were reached.
    pub left_out: usize,
}

impl NriView {
    /// Replaces everything with a Synchronize's pods and containers (at most the caps).
    pub fn replace(&mut self, pods: Vec<Pod>, containers: Vec<Container>, left_out: usize) {
        self.pods.clear();
        self.containers.clear();
        self.left_out = left_out;
        for p in pods {
            self.keep_pod(p);
        }
        for c in containers {
            self.keep_container(c);
        }
        self.synced = true;
    }

    /// Takes one event.
    pub fn apply(&mut self, change: Change) {
        match change {
            Change::Started(pod, mut c) => {
                c.state = ContainerState::Running;
                self.keep_pod(pod);
                self.keep_container(c);
            }
            Change::Updated(pod, mut c) => {
                if self.containers.get(&c.id).is_some_and(|was| was.state == ContainerState::Running) {
                    c.state = ContainerState::Running;
                }
                self.keep_pod(pod);
                self.keep_container(c);
            }
            Change::Gone(id) => {
                self.containers.remove(&id);
            }
            Change::PodGone(id) => {
                self.pods.remove(&id);
                self.containers.retain(|_, c| c.pod_id != id);
            }
        }
    }

    fn keep_pod(&mut self, pod: Pod) {
        if self.pods.len() < MAX_PODS || self.pods.contains_key(&pod.id) {
            self.pods.insert(pod.id.clone(), pod);
        } else {
            self.left_out += 1;
        }
    }

    fn keep_container(&mut self, c: Container) {
        if self.containers.len() < MAX_CONTAINERS || self.containers.contains_key(&c.id) {
            self.containers.insert(c.id.clone(), c);
        } else {
            self.left_out += 1;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn pod(id: &str) -> Pod {
        Pod { id: id.into(), name: id.into(), namespace: "ns".into(), qos: PodQos::Guaranteed, irq: Vec::new() }
    }

    pub(crate) fn container(id: &str, pod: &str, cpus: &str) -> Container {
        Container {
            id: id.into(),
            pod_id: pod.into(),
            name: id.into(),
            state: ContainerState::Created,
            cpus: Cpuset::Cpus(CpuSet::parse_list(cpus).unwrap()),
            shares: None,
            pid: None,
        }
    }

    #[test]
    fn events_start_update_stop_and_a_pod_takes_its_containers_with_it() {
        let mut v = NriView::default();
        v.apply(Change::Started(pod("p"), container("a", "p", "2-3")));
        v.apply(Change::Started(pod("p"), container("b", "p", "4")));
        assert_eq!(v.containers["a"].state, ContainerState::Running, "started: running");
        v.apply(Change::Updated(pod("p"), container("a", "p", "2")));
        assert_eq!(v.containers["a"].state, ContainerState::Running, "an update keeps it running");
        assert_eq!(v.containers["a"].cpus, Cpuset::Cpus(CpuSet::parse_list("2").unwrap()));
        v.apply(Change::Gone("a".into()));
        assert_eq!(v.containers.keys().collect::<Vec<_>>(), ["b"]);
        v.apply(Change::PodGone("p".into()));
        assert!(v.containers.is_empty() && v.pods.is_empty());
        assert!(!v.synced);
        v.replace(vec![pod("q")], vec![container("c", "q", "1")], 0);
        assert!(v.synced && v.containers.contains_key("c"));
    }

    #[test]
    fn a_flood_of_containers_is_kept_to_the_cap_and_counted() {
        let mut v = NriView::default();
        for i in 0..MAX_CONTAINERS + 10 {
            v.apply(Change::Started(pod("p"), container(&format!("c{i}"), "p", "1")));
        }
        assert_eq!((v.containers.len(), v.left_out), (MAX_CONTAINERS, 10));
        // A container already kept is still updated.
        v.apply(Change::Updated(pod("p"), container("c0", "p", "2")));
        assert_eq!(v.containers["c0"].cpus, Cpuset::Cpus(CpuSet::parse_list("2").unwrap()));
        v.replace(Vec::new(), Vec::new(), 0);
        assert_eq!((v.containers.len(), v.left_out), (0, 0));
    }
}
