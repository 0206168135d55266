//! The kubelet's CPU manager checkpoint (`/var/lib/kubelet/cpu_manager_state`) as an isolation
//! source: the CPUs its static policy assigned exclusively (every container's in `entries`, and
//! the pod-level ones in `podEntries`), never its shared pool (`defaultCpuSet`).
//!
//! The file is the kubelet's JSON (pkg/kubelet/cm/cpumanager/state/checkpoint.go): v2
//! `{"policyName":"static","defaultCpuSet":"0-1","entries":{"POD":{"CONTAINER":"2-5"}},
//! "checksum":N}`, v1 with `entries` of container id to CPUs, and `podEntries` of pod-level
//! assignments (`{"POD":{"cpuSet":"2-5"}}`). Its checksum is FNV-1a (32 bits) of go-spew's `%#v`
//! dump of the checkpoint struct with the checksum 0 (pkg/kubelet/checkpointmanager/checksum);
//! 0 means none, as the kubelet takes it.
//!
//! Guarantees: a checkpoint is taken whole or not at all. [`parse_checkpoint`] accepts only a
//! complete JSON object whose policy is `static` (or `none`, with no entry), whose checksum
//! matches where it can be computed, whose CPUs are all possible CPUs, whose pods hold disjoint
//! CPUs and whose entries are no more than the machine can hold; anything else is a problem
//! naming the value and what was expected. Pure: text in, a checkpoint out.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::cpuset::CpuSet;
use crate::topology::isolation::{IsolationKind, IsolationSource};

/// At most this many entries (containers and pods) per possible CPU: every entry holds CPUs no
/// other pod holds, and a pod's init containers reuse its app containers' CPUs.
const ENTRIES_PER_CPU: usize = 16;

/// What a good checkpoint says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KubeletCheckpoint {
    /// `static` or `none`.
    pub policy: String,
    /// Each exclusive assignment, in file order: who holds it (`POD/CONTAINER`, a v1 file's
    /// container id, `POD` for a pod-level one) and its CPUs.
    pub exclusive: Vec<(String, CpuSet)>,
}

impl KubeletCheckpoint {
    /// Every CPU assigned exclusively.
    pub fn cpus(&self) -> CpuSet {
        self.exclusive.iter().fold(CpuSet::new(), |acc, (_, c)| acc.union(c))
    }

    /// The source it makes, named by `path`; `None` when no CPU is assigned exclusively.
    pub fn source(&self, path: &str) -> Option<IsolationSource> {
        let cpus = self.cpus();
        if cpus.is_empty() {
            return None;
        }
        let held: Vec<String> = self
            .exclusive
            .iter()
            .filter(|(_, c)| !c.is_empty())
            .map(|(who, c)| format!("{}={c}", crate::text::printable(who)))
            .collect();
        let setting = format!("{}: {}", self.policy, held.join(" "));
        Some(IsolationSource { kind: IsolationKind::KubeletExclusive, path: path.to_string(), setting, cpus })
    }
}

/// The checkpoint `text` says, its CPUs checked against `possible`; else what is wrong with it.
pub(crate) fn parse_checkpoint(text: &str, possible: &CpuSet) -> Result<KubeletCheckpoint, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| {
        format!("not a whole JSON document ({e}): half-written or damaged; expected the kubelet's checkpoint")
    })?;
    let Value::Object(doc) = doc else {
        return Err(format!("{}: expected a JSON object, the kubelet's checkpoint", kind_of(&doc)));
    };
    let policy = string_field(&doc, "policyName")?;
    let default = string_field(&doc, "defaultCpuSet")?;
    let entries = Entries::of(doc.get("entries"))?;
    let pod_entries = doc.get("podEntries").filter(|v| !v.is_null());
    verify_checksum(&doc, &policy, &default, &entries, pod_entries.is_some())?;
    cpus_of("defaultCpuSet", &default, possible)?;
    let mut exclusive = entries.assignments(possible)?;
    exclusive.extend(pod_level(pod_entries, possible)?);
    match policy.as_str() {
        "static" => {}
        "none" if exclusive.is_empty() => {}
        "none" => return Err("policyName \"none\" with exclusive entries: expected none under the none policy".into()),
        other => {
            return Err(format!(
                "policyName {:?}: expected \"static\" (\"none\" assigns no CPU exclusively)",
                crate::text::printable(other)
            ))
        }
    }
    let most = possible.len().saturating_mul(ENTRIES_PER_CPU).max(ENTRIES_PER_CPU);
    if exclusive.len() > most {
        return Err(format!(
            "{} entries: expected at most {most} on a machine of {} possible CPUs",
            exclusive.len(),
            possible.len()
        ));
    }
    disjoint_pods(&exclusive)?;
    Ok(KubeletCheckpoint { policy, exclusive })
}

/// How a JSON value is called in a problem.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The string `doc[key]`; a missing key is the empty string, as Go's decoder leaves it.
fn string_field(doc: &Map<String, Value>, key: &str) -> Result<String, String> {
    match doc.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) => Err(format!("{key} is {}: expected a string", kind_of(v))),
    }
}

/// `entries` in either version: v2's pod to container to CPUs, v1's container id to CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entries {
    /// Absent or empty: either version.
    Empty,
    /// `null`: Go's nil map.
    Nil,
    V1(BTreeMap<String, String>),
    V2(BTreeMap<String, BTreeMap<String, String>>),
}

impl Entries {
    fn of(value: Option<&Value>) -> Result<Entries, String> {
        let map = match value {
            None => return Ok(Entries::Empty),
            Some(Value::Null) => return Ok(Entries::Nil),
            Some(Value::Object(map)) if map.is_empty() => return Ok(Entries::Empty),
            Some(Value::Object(map)) => map,
            Some(v) => return Err(format!("entries is {}: expected an object", kind_of(v))),
        };
        if map.values().all(Value::is_string) {
            return Ok(Entries::V1(
                map.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect(),
            ));
        }
        let mut pods = BTreeMap::new();
        for (pod, containers) in map {
            let Value::Object(containers) = containers else {
                return Err(format!(
                    "entries of pod {:?} is {}: expected an object of container names to CPUs",
                    crate::text::printable(pod),
                    kind_of(containers)
                ));
            };
            let mut each = BTreeMap::new();
            for (name, cpus) in containers {
                let Value::String(cpus) = cpus else {
                    return Err(format!(
                        "entry {:?} of pod {:?} is {}: expected a CPU list",
                        crate::text::printable(name),
                        crate::text::printable(pod),
                        kind_of(cpus)
                    ));
                };
                each.insert(name.clone(), cpus.clone());
            }
            pods.insert(pod.clone(), each);
        }
        Ok(Entries::V2(pods))
    }

    /// Every assignment, named, its CPUs within `possible`.
    fn assignments(&self, possible: &CpuSet) -> Result<Vec<(String, CpuSet)>, String> {
        let mut out = Vec::new();
        match self {
            Entries::Empty | Entries::Nil => {}
            Entries::V1(map) => {
                for (id, cpus) in map {
                    out.push((
                        id.clone(),
                        cpus_of(&format!("entry {:?}", crate::text::printable(id)), cpus, possible)?,
                    ));
                }
            }
            Entries::V2(pods) => {
                for (pod, containers) in pods {
                    for (name, cpus) in containers {
                        let who = format!("{pod}/{name}");
                        let what = format!("entry {:?}", crate::text::printable(&who));
                        out.push((who, cpus_of(&what, cpus, possible)?));
                    }
                }
            }
        }
        Ok(out)
    }

    /// go-spew's `%#v` of the map, as the checksum takes it.
    fn spew(&self, v1: bool) -> String {
        let ty = if v1 { "map[string]string" } else { "map[string]map[string]string" };
        let body =
            match self {
                Entries::Empty => "map[]".to_string(),
                Entries::Nil => "<nil>".to_string(),
                Entries::V1(map) => spew_map(map.iter().map(|(k, v)| (k.as_str(), v.clone()))),
                Entries::V2(pods) => spew_map(pods.iter().map(|(pod, c)| {
                    (pod.as_str(), spew_map(c.iter().map(|(name, cpus)| (name.as_str(), cpus.clone()))))
                })),
            };
        format!("({ty}){body}")
    }
}

/// go-spew's map body: `map[k1:v1 k2:v2]`, keys in order.
fn spew_map<'a>(items: impl Iterator<Item = (&'a str, String)>) -> String {
    let inner: Vec<String> = items.map(|(k, v)| format!("{k}:{v}")).collect();
    format!("map[{}]", inner.join(" "))
}

/// The CPU list `text` (`what` names it), every CPU a possible one.
fn cpus_of(what: &str, text: &str, possible: &CpuSet) -> Result<CpuSet, String> {
    let cpus = CpuSet::parse_list(text).map_err(|e| format!("{what} = {:?}: {e}", crate::text::printable(text)))?;
    let beyond = cpus.difference(possible);
    if let Some(cpu) = beyond.first() {
        return Err(format!(
            "{what} = {:?}: CPU {cpu} is not a possible CPU of this machine (possible {possible})",
            crate::text::printable(text)
        ));
    }
    Ok(cpus)
}

/// `podEntries`' pod-level assignments (`{"POD":{"cpuSet":"2-5"}}`), named by pod.
fn pod_level(value: Option<&Value>, possible: &CpuSet) -> Result<Vec<(String, CpuSet)>, String> {
    let map = match value {
        None => return Ok(Vec::new()),
        Some(Value::Object(map)) => map,
        Some(v) => return Err(format!("podEntries is {}: expected an object", kind_of(v))),
    };
    let mut out = Vec::new();
    for (pod, entry) in map {
        let what = format!("podEntries {:?}", crate::text::printable(pod));
        let cpus = match entry.get("cpuSet") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => return Err(format!("{what} cpuSet is {}: expected a CPU list", kind_of(v))),
        };
        out.push((pod.clone(), cpus_of(&what, &cpus, possible)?));
    }
    Ok(out)
}

/// The checksum the file carries against the one computed the kubelet's way, when it can be:
/// 0 or absent is none (the kubelet accepts it); a file with pod-level entries is not checked
/// (their dump depends on the kubelet's internal CPU set type).
fn verify_checksum(
    doc: &Map<String, Value>,
    policy: &str,
    default: &str,
    entries: &Entries,
    pod_level: bool,
) -> Result<(), String> {
    let written = match doc.get("checksum") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_u64().ok_or_else(|| format!("checksum {v}: expected an unsigned integer"))?,
    };
    if written == 0 || pod_level {
        return Ok(());
    }
    let candidates = [
        (false, ""),
        (true, ""),
        // Written by a kubelet whose checkpoint has pod-level entries, none of them used.
        (false, " PodEntries:(state.PodCPUAssignments)map[]"),
    ];
    let computed: Vec<u32> = candidates
        .iter()
        .filter(|(v1, _)| !*v1 || matches!(entries, Entries::Empty | Entries::Nil | Entries::V1(_)))
        .filter(|(v1, _)| *v1 || !matches!(entries, Entries::V1(_)))
        .map(|(v1, extra)| {
            fnv1a32(&format!(
                "(*state.CPUManagerCheckpoint){{PolicyName:(string){policy} DefaultCPUSet:(string){default} Entries:{}{extra} Checksum:(checksum.Checksum)0}}",
                entries.spew(*v1)
            ))
        })
        .collect();
    if computed.iter().any(|&c| u64::from(c) == written) {
        return Ok(());
    }
    Err(format!(
        "checksum {written} does not match its content (FNV-1a {}, as the kubelet computes it): damaged or edited; expected the checksum the kubelet wrote",
        computed.first().copied().unwrap_or_default()
    ))
}

/// FNV-1a, 32 bits (Go's `hash/fnv` `New32a`).
fn fnv1a32(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |h: u32, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

/// No CPU held by two pods: the static policy gives a CPU to one pod at most.
fn disjoint_pods(exclusive: &[(String, CpuSet)]) -> Result<(), String> {
    let pod = |who: &str| who.split('/').next().unwrap_or(who).to_string();
    let mut by_pod: BTreeMap<String, CpuSet> = BTreeMap::new();
    for (who, cpus) in exclusive {
        by_pod.entry(pod(who)).or_default().extend_with(cpus);
    }
    let mut seen: Vec<(&String, &CpuSet)> = Vec::new();
    for (pod, cpus) in &by_pod {
        if let Some((other, both)) = seen.iter().map(|(o, c)| (o, c.intersection(cpus))).find(|(_, b)| !b.is_empty()) {
            return Err(format!(
                "CPUs {both} are assigned to pods {:?} and {:?}: expected each exclusive CPU in one pod",
                crate::text::printable(other),
                crate::text::printable(pod)
            ));
        }
        seen.push((pod, cpus));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    #[test]
    fn published_kubelet_files_pass_their_checksums() {
        let possible = set("0-23");
        // v2, static, one guaranteed pod.
        let v2 = r#"{"policyName":"static","defaultCpuSet":"0,2-12,14-23","entries":{"235148fe-393f-47a8-a17d-bd55bc1a836b":{"cgroup1-0":"1,13"}},"checksum":1552716370}"#;
        let c = parse_checkpoint(v2, &possible).unwrap();
        assert_eq!(c.cpus(), set("1,13"));
        assert_eq!(c.exclusive[0].0, "235148fe-393f-47a8-a17d-bd55bc1a836b/cgroup1-0");
        // v1, none policy, no entries.
        let none = r#"{"policyName":"none","defaultCpuSet":"","checksum":3242152201}"#;
        let c = parse_checkpoint(none, &possible).unwrap();
        assert!(c.cpus().is_empty() && c.source("/x").is_none());
        // One digit off: damaged.
        let e = parse_checkpoint(&v2.replace("1552716370", "1552716371"), &possible).unwrap_err();
        assert!(e.contains("checksum 1552716371 does not match") && e.contains("1552716370"), "{e}");
    }

    #[test]
    fn v1_entries_pod_level_entries_and_no_checksum_are_read() {
        let possible = set("0-7");
        let v1 = r#"{"policyName":"static","defaultCpuSet":"0-1,4-7","entries":{"abc123":"2-3"},"checksum":0}"#;
        assert_eq!(parse_checkpoint(v1, &possible).unwrap().exclusive, [("abc123".to_string(), set("2-3"))]);
        let v3 = r#"{"policyName":"static","defaultCpuSet":"0-1","entries":{"p":{"c":"2-3"}},"podEntries":{"p":{"cpuSet":"2-5"}},"checksum":77}"#;
        let c = parse_checkpoint(v3, &possible).unwrap();
        assert_eq!(c.cpus(), set("2-5"));
        let source = c.source("/var/lib/kubelet/cpu_manager_state").unwrap();
        assert_eq!(source.kind, IsolationKind::KubeletExclusive);
        assert_eq!(source.setting, "static: p/c=2-3 p=2-5");
    }

    #[test]
    fn every_damage_is_a_problem_naming_the_value() {
        let possible = set("0-7");
        let cases = [
            (r#"{"policyName":"static","defaultCpuSet":"0-1","entr"#, "half-written"),
            (r#"[1]"#, "an array"),
            (r#"{"policyName":7}"#, "policyName is a number"),
            (r#"{"policyName":"static","entries":{"p":{"c":"2-9"}}}"#, "CPU 8 is not a possible CPU"),
            (r#"{"policyName":"static","entries":{"p":{"c":"3-2"}}}"#, "\"3-2\""),
            (r#"{"policyName":"static","entries":{"p":{"c":2}}}"#, "is a number"),
            (r#"{"policyName":"static","entries":{"p":"1","q":{"c":"2"}}}"#, "expected an object"),
            (r#"{"policyName":"dynamic"}"#, "\"dynamic\""),
            (r#"{"policyName":"none","entries":{"p":{"c":"2"}}}"#, "none"),
            (
                r#"{"policyName":"static","entries":{"p":{"c":"2-3"},"q":{"d":"3"}}}"#,
                "CPUs 3 are assigned to pods \"p\" and \"q\"",
            ),
            (r#"{"policyName":"static","checksum":-1}"#, "checksum -1"),
            (r#"{"policyName":"static","podEntries":{"p":{"cpuSet":"1-99"}}}"#, "podEntries \"p\""),
        ];
        for (text, named) in cases {
            let e = parse_checkpoint(text, &possible).unwrap_err();
            assert!(e.contains(named), "{text}: {e}");
        }
    }

    #[test]
    fn entries_are_bounded_by_the_machine_and_names_are_escaped() {
        let possible = set("0");
        let many: Vec<String> = (0..17).map(|i| format!("\"c{i}\":\"0\"")).collect();
        let text = format!(r#"{{"policyName":"static","entries":{{"p":{{{}}}}}}}"#, many.join(","));
        let e = parse_checkpoint(&text, &possible).unwrap_err();
        assert!(e.contains("17 entries: expected at most 16"), "{e}");
        let text = r#"{"policyName":"static","entries":{"p\u001b]0;x\u0007":{"c":"0"}}}"#;
        let source = parse_checkpoint(text, &possible).unwrap().source("/f").unwrap();
        assert!(!source.setting.chars().any(char::is_control), "{:?}", source.setting);
    }
}
