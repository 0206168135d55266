//! `irqwise diff A B`: what differs between two machines (or snapshots) in what decides
//! placement, most decisive first: the kernel, the topology, isolation, the devices, then the
//! plans that result.
//!
//! Pure: two read samples and their plans in, differences out. Guarantees: a side compared with
//! itself has no difference; every difference names what differs and both values; CPU set
//! differences name the CPUs only one side has.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::cpuset::CpuSet;
use crate::plan::Plan;
use crate::sample::Sample;
use crate::topology::Cpu;

/// One side of a comparison.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    pub sample: &'a Sample,
    pub plan: &'a Plan,
}

/// One thing that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// `kernel`, `topology`, `isolation`, `devices` or `plan`, in that order of decisiveness.
    pub group: &'static str,
    pub what: String,
    pub a: String,
    pub b: String,
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

/// `set` as a list, `-` when empty.
fn list(set: &CpuSet) -> String {
    if set.is_empty() {
        "-".into()
    } else {
        set.to_list_string()
    }
}

/// Every difference between `a` and `b`, grouped, most decisive group first.
pub fn diff(a: Side, b: Side) -> Vec<Difference> {
    let mut out = Vec::new();
    kernel(a, b, &mut out);
    topology(a, b, &mut out);
    isolation(a, b, &mut out);
    devices(a, b, &mut out);
    plans(a, b, &mut out);
    out
}

fn push(out: &mut Vec<Difference>, group: &'static str, what: impl Into<String>, a: String, b: String) {
    if a != b {
        out.push(Difference { group, what: what.into(), a, b });
    }
}

fn kernel(a: Side, b: Side, out: &mut Vec<Difference>) {
    let (ta, tb) = (&a.sample.topology, &b.sample.topology);
    push(out, "kernel", "release", opt(ta.kernel.as_ref()), opt(tb.kernel.as_ref()));
    push(out, "kernel", "architecture", opt(ta.arch.as_ref()), opt(tb.arch.as_ref()));
    let rules = |s: Side| format!("{:?}", s.sample.group_rules);
    push(out, "kernel", "group_cpus_evenly() rules", rules(a), rules(b));
    push(out, "kernel", "netdev netlink answers", netdev(a), netdev(b));
}

/// What a side's kernel said of its NICs' queues (queue → NAPI → IRQ): the NIC plans follow it.
fn netdev(s: Side) -> String {
    use crate::devices::napi::NetdevView;
    match &s.sample.netdev {
        NetdevView::Reported(r) => {
            let irqs = r.napis.iter().filter(|n| n.irq.is_some()).count();
            format!("{} NAPI instances ({irqs} with an IRQ), {} queues", r.napis.len(), r.queues.len())
        }
        NetdevView::NotThisMachine => "none (a root whose kernel cannot be asked, no answers kept)".into(),
        NetdevView::Unavailable(why) => format!("unavailable: {why}"),
    }
}

/// A CPU set that differs, naming the CPUs only one side has.
fn cpu_set(out: &mut Vec<Difference>, group: &'static str, what: &str, a: &CpuSet, b: &CpuSet) {
    if a == b {
        return;
    }
    let mut only = Vec::new();
    if !a.difference(b).is_empty() {
        only.push(format!("only in A: CPUs {}", a.difference(b)));
    }
    if !b.difference(a).is_empty() {
        only.push(format!("only in B: CPUs {}", b.difference(a)));
    }
    push(out, group, format!("{what} ({})", only.join("; ")), list(a), list(b));
}

/// What a CPU shares with others at one level (its core, cluster, ...).
type Relation = fn(&Cpu) -> Option<&CpuSet>;

fn topology(a: Side, b: Side, out: &mut Vec<Difference>) {
    let (ta, tb) = (&a.sample.topology, &b.sample.topology);
    cpu_set(out, "topology", "possible CPUs", &ta.possible, &tb.possible);
    cpu_set(out, "topology", "present CPUs", &ta.present, &tb.present);
    cpu_set(out, "topology", "online CPUs", &ta.online, &tb.online);
    let ids = |t: &crate::topology::Topology| t.nodes.keys().map(ToString::to_string).collect::<Vec<_>>().join(",");
    push(out, "topology", "NUMA nodes", ids(ta), ids(tb));
    for (id, na) in &ta.nodes {
        let Some(nb) = tb.nodes.get(id) else { continue };
        cpu_set(out, "topology", &format!("node {id}'s CPUs"), &na.cpus, &nb.cpus);
        let d = |v: &[u32]| v.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
        push(out, "topology", format!("node {id}'s distances"), d(&na.distance), d(&nb.distance));
    }
    // What each CPU shares, for the CPUs both sides have: one difference per relation, naming
    // the CPUs whose mask differs and showing the first of them.
    let relations: [(&str, Relation); 5] = [
        ("SMT siblings (core)", |c| c.core.as_ref()),
        ("cluster", |c| c.cluster.as_ref()),
        ("last-level cache", |c| c.llc.as_ref()),
        ("die", |c| c.die.as_ref()),
        ("package", |c| c.package.as_ref()),
    ];
    for (name, of) in relations {
        let differing: Vec<u32> = ta
            .cpus
            .iter()
            .filter_map(|(id, ca)| Some((id, ca, tb.cpus.get(id)?)))
            .filter(|(_, ca, cb)| of(ca) != of(cb))
            .map(|(id, _, _)| *id)
            .collect();
        let Some(first) = differing.first() else { continue };
        let show = |t: &crate::topology::Topology| {
            t.cpus.get(first).and_then(of).map_or_else(|| "unknown".to_string(), |s| format!("CPU {first}: {s}"))
        };
        let cpus: CpuSet = differing.iter().copied().collect();
        push(out, "topology", format!("{name} of CPUs {cpus}"), show(ta), show(tb));
    }
    let node_of = |t: &crate::topology::Topology| {
        t.cpus.iter().map(|(id, c)| (*id, c.node)).collect::<BTreeMap<u32, Option<u32>>>()
    };
    let (na, nb) = (node_of(ta), node_of(tb));
    let moved: CpuSet = na.iter().filter(|(id, n)| nb.get(id).is_some_and(|m| m != *n)).map(|(id, _)| *id).collect();
    if let Some(first) = moved.first() {
        push(
            out,
            "topology",
            format!("node of CPUs {moved}"),
            format!("CPU {first}: {}", opt(na[&first])),
            format!("CPU {first}: {}", opt(nb[&first])),
        );
    }
}

fn isolation(a: Side, b: Side, out: &mut Vec<Difference>) {
    let avoid = |s: Side| s.sample.isolation.avoid(true, true);
    cpu_set(out, "isolation", "CPUs an isolation source keeps free", &avoid(a), &avoid(b));
    let by_kind = |s: Side| {
        let mut m: BTreeMap<&'static str, CpuSet> = BTreeMap::new();
        for src in &s.sample.isolation.sources {
            m.entry(src.kind.word()).or_default().extend_with(&src.cpus);
        }
        m
    };
    let (ka, kb) = (by_kind(a), by_kind(b));
    let kinds: BTreeSet<&str> = ka.keys().chain(kb.keys()).copied().collect();
    for k in kinds {
        let none = CpuSet::new();
        cpu_set(out, "isolation", &format!("{k} CPUs"), ka.get(k).unwrap_or(&none), kb.get(k).unwrap_or(&none));
    }
}

fn devices(a: Side, b: Side, out: &mut Vec<Difference>) {
    let describe = |d: &crate::devices::Device| {
        format!(
            "{} {} driver {} node {} {} IRQs{}",
            d.class.as_str(),
            d.name.as_deref().unwrap_or("-"),
            d.driver.as_deref().unwrap_or("-"),
            opt(d.node),
            d.vectors.len(),
            if d.interfaces.is_empty() { String::new() } else { format!(" ({})", d.interfaces.join(", ")) }
        )
    };
    let map = |s: Side| s.sample.devices.iter().map(|d| (d.bdf.clone(), describe(d))).collect::<BTreeMap<_, _>>();
    let (da, db) = (map(a), map(b));
    let all: BTreeSet<&String> = da.keys().chain(db.keys()).collect();
    for bdf in all {
        let get = |m: &BTreeMap<String, String>| m.get(bdf).cloned().unwrap_or_else(|| "absent".into());
        push(out, "devices", format!("device {bdf}"), get(&da), get(&db));
    }
}

fn plans(a: Side, b: Side, out: &mut Vec<Difference>) {
    let map = |p: &Plan| {
        let mut m: BTreeMap<(String, String), String> = BTreeMap::new();
        for d in &p.devices {
            for (i, irq) in d.irqs.iter().enumerate() {
                let key = match irq.queue {
                    Some(q) => format!("queue {q} ({:?})", irq.role).to_lowercase(),
                    None => format!("vector {i} ({})", irq.name.as_deref().unwrap_or("-")),
                };
                let what = match &irq.desired {
                    Some(s) => format!("{} {}", irq.action.as_str(), list(s)),
                    None => irq.action.as_str().to_string(),
                };
                m.entry((d.bdf.clone(), key)).or_insert(what);
            }
        }
        m
    };
    let (pa, pb) = (map(a.plan), map(b.plan));
    let keys: BTreeSet<&(String, String)> = pa.keys().chain(pb.keys()).collect();
    for key in keys {
        let get = |m: &BTreeMap<(String, String), String>| m.get(key).cloned().unwrap_or_else(|| "absent".into());
        push(out, "plan", format!("{} {}", key.0, key.1), get(&pa), get(&pb));
    }
}

/// The differences as text, grouped, one line each; `same` when there is none.
pub fn render(diffs: &[Difference]) -> String {
    if diffs.is_empty() {
        return "same: nothing that decides placement differs\n".into();
    }
    let mut out = String::new();
    let mut group = "";
    for d in diffs {
        if d.group != group {
            group = d.group;
            out.push_str(&format!("{group}:\n"));
        }
        out.push_str(&format!("  {}: A {} | B {}\n", crate::text::printable(&d.what), d.a, d.b));
    }
    out
}
