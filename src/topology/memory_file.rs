//! The daemon's topology memory on disk (`ROOT/run/irqwise/topology.json`), so that a restarted
//! daemon and `irqwise plan` beside it compute the same homes while CPUs are offline.
//!
//! Valid for one boot only: the file carries `proc/sys/kernel/random/boot_id` and a copy of
//! another boot is ignored (CPUs may have been replaced).

use std::collections::HashMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{Cpu, FirstSight, NodeSource, TopologyMemory};
use crate::cpuset::{self, CpuSet};
use crate::sysfs::Root;

/// Where the memory is kept, below the root.
pub const MEMORY_FILE: &str = "run/irqwise/topology.json";

/// `proc/sys/kernel/random/boot_id`, below the root.
const BOOT_ID: &str = "proc/sys/kernel/random/boot_id";

/// A copy that cannot be read back; planning goes on without it.
#[derive(Debug, thiserror::Error)]
pub enum MemoryFileError {
    #[error("{path}: {problem}; planning without the remembered topology")]
    Unreadable { path: PathBuf, problem: String },
}

#[derive(Serialize, Deserialize)]
struct MemoryFile {
    schema: u32,
    boot_id: Option<String>,
    cpus: Vec<CpuRecord>,
    /// The machine as first seen this boot (absent in copies written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    first: Option<FirstRecord>,
}

/// [`FirstSight`]: the present CPUs as a kernel list and every possible CPU.
#[derive(Serialize, Deserialize)]
struct FirstRecord {
    present: String,
    cpus: Vec<FirstCpu>,
}

/// One CPU at first sight; masks as kernel lists.
#[derive(Serialize, Deserialize)]
struct FirstCpu {
    id: u32,
    present: bool,
    online: bool,
    node: Option<u32>,
    node_source: NodeSource,
    core: Option<String>,
    cluster: Option<String>,
}

/// One CPU as last seen online; masks as kernel lists.
#[derive(Serialize, Deserialize)]
struct CpuRecord {
    id: u32,
    node: Option<u32>,
    #[serde(default)]
    node_source: NodeSource,
    core: Option<String>,
    cluster: Option<String>,
    llc: Option<String>,
    package: Option<String>,
    die: Option<String>,
}

/// This boot's id, if the root shows one.
fn boot_id(root: &Root) -> Option<String> {
    root.read_small_optional(BOOT_ID).ok().flatten().map(|s| s.trim().to_string())
}

/// The file's bytes for `memory` on this boot.
pub fn encode(root: &Root, memory: &TopologyMemory) -> Vec<u8> {
    let list = |m: &Option<CpuSet>| m.as_ref().map(CpuSet::to_list_string);
    let cpus = memory
        .cpus()
        .map(|c| CpuRecord {
            id: c.id,
            node: c.node,
            node_source: c.node_source,
            core: list(&c.core),
            cluster: list(&c.cluster),
            llc: list(&c.llc),
            package: list(&c.package),
            die: list(&c.die),
        })
        .collect();
    let first = memory.first_sight().map(|f| FirstRecord {
        present: f.present.to_list_string(),
        cpus: f
            .cpus
            .values()
            .map(|c| FirstCpu {
                id: c.id,
                present: c.present,
                online: c.online,
                node: c.node,
                node_source: c.node_source,
                core: list(&c.core),
                cluster: list(&c.cluster),
            })
            .collect(),
    });
    let file = MemoryFile { schema: crate::JSON_SCHEMA, boot_id: boot_id(root), cpus, first };
    let mut bytes = serde_json::to_vec(&file).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// The saved memory of this boot: `Ok(None)` when there is none (no file, or another boot's).
pub fn load(root: &Root) -> Result<Option<TopologyMemory>, MemoryFileError> {
    let path = root.path(MEMORY_FILE);
    let unreadable = |problem: String| MemoryFileError::Unreadable { path: path.clone(), problem };
    let bytes = match crate::sysfs::read_regular_file(&path, 64 << 20) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(e.to_string())),
    };
    let file: MemoryFile =
        serde_json::from_slice(&bytes).map_err(|e| unreadable(format!("not a topology memory: {e}")))?;
    if file.boot_id != boot_id(root) {
        return Ok(None);
    }
    // Each distinct list parsed once and shared by every CPU naming it: CPUs of one group keep
    // one set, as discovery gives them (a file of 8,192 CPUs names each package 256 times).
    let mut parsed: HashMap<String, CpuSet> = HashMap::new();
    let mut shared = |m: &Option<String>| -> Result<Option<CpuSet>, cpuset::CpuSetError> {
        let Some(text) = m else { return Ok(None) };
        if let Some(set) = parsed.get(text) {
            return Ok(Some(set.clone()));
        }
        let set = CpuSet::parse_list(text)?;
        parsed.insert(text.clone(), set.clone());
        Ok(Some(set))
    };
    let mut cpus = Vec::with_capacity(file.cpus.len());
    for r in file.cpus {
        let mut parse = |m: &Option<String>| -> Result<Option<CpuSet>, MemoryFileError> {
            shared(m).map_err(|e| unreadable(format!("CPU {}: {e}", r.id)))
        };
        let mut cpu = Cpu::bare(r.id);
        (cpu.present, cpu.online, cpu.node, cpu.node_source) = (true, true, r.node, r.node_source);
        cpu.core = parse(&r.core)?;
        cpu.cluster = parse(&r.cluster)?;
        cpu.llc = parse(&r.llc)?;
        cpu.package = parse(&r.package)?;
        cpu.die = parse(&r.die)?;
        cpus.push(cpu);
    }
    let first = match file.first {
        None => None,
        Some(f) => {
            let mut list = |what: &str, m: &Option<String>| -> Result<Option<CpuSet>, MemoryFileError> {
                shared(m).map_err(|e| unreadable(format!("{what}: {e}")))
            };
            let present = CpuSet::parse_list(&f.present).map_err(|e| unreadable(format!("first present: {e}")))?;
            let mut cpus = Vec::with_capacity(f.cpus.len());
            for c in f.cpus {
                let mut cpu = Cpu::bare(c.id);
                (cpu.present, cpu.online, cpu.node, cpu.node_source) = (c.present, c.online, c.node, c.node_source);
                cpu.core = list(&format!("first CPU {}", c.id), &c.core)?;
                cpu.cluster = list(&format!("first CPU {}", c.id), &c.cluster)?;
                cpus.push((c.id, cpu));
            }
            // Collected (one sorted bulk build), not inserted one by one (half-full nodes).
            Some(FirstSight { present, cpus: cpus.into_iter().collect() })
        }
    };
    Ok(Some(TopologyMemory::from_cpus(cpus).with_first_sight(first)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::synthetic::SyntheticMachine;

    #[test]
    fn a_saved_memory_reads_back_on_the_same_boot_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel/random")).unwrap();
        std::fs::create_dir_all(dir.path().join("run/irqwise")).unwrap();
        std::fs::write(dir.path().join(BOOT_ID), "boot-a\n").unwrap();
        let mut memory = TopologyMemory::default();
        memory.remember(&SyntheticMachine::new(2, 2, 2).build());
        std::fs::write(root.path(MEMORY_FILE), encode(&root, &memory)).unwrap();
        assert_eq!(load(&root).unwrap(), Some(memory));
        std::fs::write(dir.path().join(BOOT_ID), "boot-b\n").unwrap();
        assert_eq!(load(&root).unwrap(), None, "another boot's copy is ignored");
        std::fs::write(root.path(MEMORY_FILE), "{\"schema\": 1").unwrap();
        assert!(load(&root).unwrap_err().to_string().contains("topology.json"));
    }
}
