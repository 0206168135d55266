//! The masks IRQs had before irqwise first changed them, kept in `ROOT/run/irqwise/originals.json`
//! so that `restore_on_exit` puts back the machine's own placement even after restarts (a package
//! upgrade restarts the daemon: a later daemon of the same boot keeps the first record).
//!
//! The file is rewritten atomically before each write that changes it, so a crash between
//! recording and writing loses nothing. Entries of a device that went away are dropped; a file
//! from another boot (`/proc/sys/kernel/random/boot_id` differs) is ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::napi_originals::{give_back_napi, note_napi, restore_napi, NapiKey, OriginalNapi};
use crate::apply::{AffinityWriter, ProcIrq};
use crate::cpuset::CpuSet;
use crate::plan::{Action, Plan};
use crate::sysfs::Root;

/// Where the originals live, relative to the root.
pub(crate) const ORIGINALS_FILE: &str = "run/irqwise/originals.json";

/// Where the kernel shows this boot's id, relative to the root.
const BOOT_ID: &str = "proc/sys/kernel/random/boot_id";

#[derive(Debug, thiserror::Error)]
pub(crate) enum OriginalsError {
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{path}: {problem}; starting a new record")]
    Unreadable { path: PathBuf, problem: String },
    /// The file is damaged: kept aside (`aside`, or why it could not be), the entries that
    /// still read whole kept.
    #[error("{path}: {problem}; {aside}; {kept} entr(ies) that still read whole kept, restored at stop")]
    Damaged { path: PathBuf, problem: String, aside: String, kept: usize },
    /// One entry whose recorded CPUs are no CPU list: kept in the record, never restored.
    #[error("{path}: {what}: the recorded CPUs {cpus:?} are not a CPU list: it cannot be restored at stop and is left as irqwise places it")]
    UnreadableEntry { path: PathBuf, what: String, cpus: String },
}

/// Where a damaged record is kept aside, relative to the root (the evidence; never read).
pub(crate) const DAMAGED_FILE: &str = "run/irqwise/originals.json.damaged";

/// One IRQ's mask before irqwise first changed it, and whose it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Original {
    pub irq: u32,
    /// The PCI address of the device that owned the IRQ.
    pub device: String,
    pub name: Option<String>,
    /// The mask as a kernel list string.
    pub cpus: String,
}

/// One transmit queue's `xps_cpus` before irqwise first changed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct OriginalXps {
    /// The PCI address of the NIC.
    pub device: String,
    pub interface: Option<String>,
    pub txq: u32,
    /// The `xps_cpus` file, relative to the root.
    pub file: String,
    /// The CPUs as a kernel list string.
    pub cpus: String,
}

/// One NAPI thread's CPUs before irqwise first moved it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct OriginalThread {
    /// The PCI address of the NIC.
    pub device: String,
    pub pid: u32,
    /// `napi/IF-ID`: a pid that runs another task by then is not touched.
    pub name: String,
    /// `Cpus_allowed_list` as a kernel list string.
    pub cpus: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct OriginalsFile {
    schema: u32,
    boot_id: Option<String>,
    irqs: Vec<Original>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    xps: Vec<OriginalXps>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    threads: Vec<OriginalThread>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    napi: Vec<OriginalNapi>,
}

/// The entries of a damaged record that still read whole: those of a JSON document of this
/// boot (or one whose boot cannot be read) that deserialize one by one with a CPU list that
/// parses. Nothing from a document that is not JSON any more (cut short) or of another boot.
fn salvage(bytes: &[u8], boot_id: Option<&str>) -> Originals {
    let mut out = Originals::default();
    let Ok(serde_json::Value::Object(doc)) = serde_json::from_slice::<serde_json::Value>(bytes) else { return out };
    if doc.get("boot_id").and_then(serde_json::Value::as_str).is_some_and(|b| Some(b) != boot_id) {
        return out;
    }
    out.entries = whole(&doc, "irqs", |o: &Original| (o.irq, &o.cpus));
    out.xps = whole(&doc, "xps", |o: &OriginalXps| (o.file.clone(), &o.cpus));
    out.threads = whole(&doc, "threads", |o: &OriginalThread| (o.pid, &o.cpus));
    let napi = doc.get("napi").and_then(serde_json::Value::as_array).into_iter().flatten();
    out.napi =
        napi.filter_map(|v| serde_json::from_value::<OriginalNapi>(v.clone()).ok()).map(|o| (o.key(), o)).collect();
    out
}

/// The entries of array `key` of `doc` that deserialize whole with a CPU list that parses, by
/// the key `of` gives (with the CPU list).
fn whole<T: serde::de::DeserializeOwned, K: Ord>(
    doc: &serde_json::Map<String, serde_json::Value>,
    key: &str,
    of: impl Fn(&T) -> (K, &String),
) -> BTreeMap<K, T> {
    let entries = doc.get(key).and_then(serde_json::Value::as_array).into_iter().flatten();
    entries
        .filter_map(|v| serde_json::from_value::<T>(v.clone()).ok())
        .filter_map(|o| {
            let (k, cpus) = of(&o);
            CpuSet::parse_list(cpus).is_ok().then_some((k, o))
        })
        .collect()
}

/// The record, by IRQ, by `xps_cpus` file and by thread pid. Invariant: one entry per IRQ, file
/// or thread, the first value seen before a change.
#[derive(Debug, Default)]
pub(crate) struct Originals {
    boot_id: Option<String>,
    entries: BTreeMap<u32, Original>,
    xps: BTreeMap<String, OriginalXps>,
    threads: BTreeMap<u32, OriginalThread>,
    /// NAPI instances' settings, by interface and slot.
    napi: BTreeMap<NapiKey, OriginalNapi>,
}

impl Originals {
    /// The record under `root` from this boot; empty when there is none, when it is from another
    /// boot, or when it cannot be read (then with the error saying why).
    pub fn load(root: &Root) -> (Originals, Option<OriginalsError>) {
        let boot_id = root.read_small_optional(BOOT_ID).ok().flatten().map(|s| s.trim().to_string());
        let fresh = Originals { boot_id: boot_id.clone(), ..Originals::default() };
        let path = root.path(ORIGINALS_FILE);
        let bytes = match crate::sysfs::read_regular_file(&path, super::state::STATE_FILE_LIMIT) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (fresh, None),
            Err(e) => return (fresh, Some(OriginalsError::Unreadable { path, problem: e.to_string() })),
        };
        let file: OriginalsFile = match serde_json::from_slice(&bytes) {
            Ok(f) => f,
            Err(e) => {
                let aside = match root.replace_own_file(Path::new(DAMAGED_FILE), &bytes, 0o600, true) {
                    Ok(()) => format!("kept aside as {}", root.path(DAMAGED_FILE).display()),
                    Err((p, e)) => format!("cannot keep it aside as {} ({e})", p.display()),
                };
                let salvaged = salvage(&bytes, boot_id.as_deref());
                let kept = salvaged.len();
                let error = OriginalsError::Damaged { path, problem: e.to_string(), aside, kept };
                return (Originals { boot_id, ..salvaged }, Some(error));
            }
        };
        if file.boot_id != boot_id {
            return (fresh, None);
        }
        let entries = file.irqs.into_iter().map(|o| (o.irq, o)).collect();
        let xps = file.xps.into_iter().map(|o| (o.file.clone(), o)).collect();
        let threads = file.threads.into_iter().map(|o| (o.pid, o)).collect();
        let napi = file.napi.into_iter().map(|o| (o.key(), o)).collect();
        (Originals { boot_id, entries, xps, threads, napi }, None)
    }

    /// Every entry whose recorded CPUs do not read as a CPU list, one error each naming the file,
    /// the entry and the value: said when the record is loaded, counted at stop.
    pub(crate) fn unreadable_entries(&self, root: &Root) -> Vec<OriginalsError> {
        let path = root.path(ORIGINALS_FILE);
        self.unreadable()
            .into_iter()
            .map(|(what, cpus)| OriginalsError::UnreadableEntry { path: path.clone(), what, cpus: cpus.to_string() })
            .collect()
    }

    /// The entries (IRQs, `xps_cpus` files, NAPI threads) whose CPUs are no CPU list, as what
    /// they are and the value.
    fn unreadable(&self) -> Vec<(String, &str)> {
        let bad = |cpus: &String| CpuSet::parse_list(cpus).is_err();
        let irqs = self
            .entries
            .values()
            .filter(|o| bad(&o.cpus))
            .map(|o| (format!("irq {} of {}", o.irq, o.device), o.cpus.as_str()));
        let xps = self
            .xps
            .values()
            .filter(|o| bad(&o.cpus))
            .map(|o| (format!("xps_cpus of tx-{} of {}", o.txq, o.device), o.cpus.as_str()));
        let threads = self
            .threads
            .values()
            .filter(|o| bad(&o.cpus))
            .map(|o| (format!("thread {} (pid {})", o.name, o.pid), o.cpus.as_str()));
        irqs.chain(xps).chain(threads).collect()
    }

    /// Records, for every IRQ `plan` is about to write that has no record yet, its current mask;
    /// and drops the entries of IRQs that now belong to another device or whose device is gone
    /// (not in the plan and not `present`). An IRQ missing from one plan keeps its entry: a NIC's
    /// queue IRQs have no handler while its link is down, and come back with irqwise's masks.
    /// Returns whether the record changed (so it needs saving before the writes).
    pub(crate) fn note_plan(&mut self, plan: &Plan, present: &dyn Fn(&str) -> bool) -> bool {
        let mut changed = false;
        let owners: BTreeMap<u32, &str> =
            plan.devices.iter().flat_map(|d| d.irqs.iter().map(move |p| (p.irq, d.bdf.as_str()))).collect();
        let planned: std::collections::BTreeSet<&str> = plan.devices.iter().map(|d| d.bdf.as_str()).collect();
        let before = self.entries.len();
        self.entries.retain(|irq, o| match owners.get(irq) {
            Some(owner) => *owner == o.device.as_str(),
            None => planned.contains(o.device.as_str()) || present(&o.device),
        });
        changed |= self.entries.len() != before;
        for (d, p) in plan.writes() {
            let Some(current) = &p.current else { continue };
            if p.action != Action::Set || self.entries.contains_key(&p.irq) {
                continue;
            }
            let entry =
                Original { irq: p.irq, device: d.bdf.clone(), name: p.name.clone(), cpus: current.to_list_string() };
            self.entries.insert(p.irq, entry);
            changed = true;
        }
        changed | self.note_xps(plan, present) | self.note_threads(plan) | note_napi(&mut self.napi, plan, present)
    }

    /// Puts into `plan` the NAPI settings irqwise wrote that the config no longer asks for,
    /// to be written back to what they were ([`give_back_napi`]).
    pub(crate) fn give_back_napi(&self, plan: &mut Plan) {
        give_back_napi(&self.napi, plan);
    }

    /// [`Originals::note_plan`] for NAPI threads: the CPUs of every thread about to be moved;
    /// the entries of devices that went away, and of threads that ended (`threaded` switched
    /// off: the kernel starts new ones, with the default CPUs, when it is switched on again), are
    /// dropped.
    fn note_threads(&mut self, plan: &Plan) -> bool {
        let live: BTreeMap<u32, &str> =
            plan.devices.iter().flat_map(|d| d.napi_threads.iter().map(move |t| (t.pid, d.bdf.as_str()))).collect();
        let before = self.threads.len();
        self.threads.retain(|pid, o| live.get(pid) == Some(&o.device.as_str()));
        let mut changed = self.threads.len() != before;
        for d in &plan.devices {
            for t in d.napi_threads.iter().filter(|t| t.action == Action::Set) {
                let Some(current) = &t.current else { continue };
                if self.threads.contains_key(&t.pid) {
                    continue;
                }
                let entry = OriginalThread {
                    device: d.bdf.clone(),
                    pid: t.pid,
                    name: t.name.clone(),
                    cpus: current.to_list_string(),
                };
                self.threads.insert(t.pid, entry);
                changed = true;
            }
        }
        changed
    }

    /// [`Originals::note_plan`] for transmit steering: the `xps_cpus` of every queue about to be
    /// written, and dropping the entries of devices that went away (not planned, not `present`).
    fn note_xps(&mut self, plan: &Plan, present: &dyn Fn(&str) -> bool) -> bool {
        // A NIC whose link is down has no queue IRQs and is in no plan, but its `xps_cpus` files
        // stay: its entries go only with the device.
        let planned: std::collections::BTreeSet<&str> = plan.devices.iter().map(|d| d.bdf.as_str()).collect();
        let before = self.xps.len();
        self.xps.retain(|_, o| planned.contains(o.device.as_str()) || present(&o.device));
        let mut changed = self.xps.len() != before;
        for (d, x) in plan.devices.iter().filter_map(|d| Some((d, d.xps.as_ref()?))) {
            for q in x.writes() {
                if self.xps.contains_key(&q.file) {
                    continue;
                }
                let entry = OriginalXps {
                    device: d.bdf.clone(),
                    interface: x.interface.clone(),
                    txq: q.txq,
                    file: q.file.clone(),
                    cpus: q.current.to_list_string(),
                };
                self.xps.insert(q.file.clone(), entry);
                changed = true;
            }
        }
        changed
    }

    /// Writes the record atomically (mode 0644).
    pub fn save(&self, root: &Root) -> Result<(), OriginalsError> {
        let file = OriginalsFile {
            schema: crate::JSON_SCHEMA,
            boot_id: self.boot_id.clone(),
            irqs: self.entries.values().cloned().collect(),
            xps: self.xps.values().cloned().collect(),
            threads: self.threads.values().cloned().collect(),
            napi: self.napi.values().cloned().collect(),
        };
        let mut bytes = serde_json::to_vec(&file).unwrap_or_default();
        bytes.push(b'\n');
        root.replace_own_file(Path::new(ORIGINALS_FILE), &bytes, 0o644, true)
            .map_err(|(path, source)| OriginalsError::Write { path, source })
    }

    /// Every recorded IRQ with the mask to put back.
    pub(crate) fn restore_list(&self) -> Vec<(u32, CpuSet)> {
        self.entries.values().filter_map(|o| Some((o.irq, CpuSet::parse_list(&o.cpus).ok()?))).collect()
    }

    /// Every recorded `xps_cpus` file with the CPUs to put back.
    pub(crate) fn restore_xps_list(&self) -> Vec<(&OriginalXps, CpuSet)> {
        self.xps.values().filter_map(|o| Some((o, CpuSet::parse_list(&o.cpus).ok()?))).collect()
    }

    /// Writes back every recorded mask and `xps_cpus` (logging each failure, and how many were
    /// restored), then forgets the record: after a restore the machine holds its own masks
    /// again. `last_plan` names the IRQs in the log.
    pub fn restore(&mut self, root: &Root, last_plan: &Plan) {
        let writer = ProcIrq::new(root.clone());
        let todo = self.restore_list();
        let mut restored = 0;
        for (irq, cpus) in &todo {
            match writer.write(*irq, cpus) {
                Ok(_) => restored += 1,
                Err(e) => {
                    let (dev, p) = last_plan.find_irq(*irq).map_or((None, None), |(d, p)| (Some(d), Some(p)));
                    tracing::warn!(
                        irq,
                        irq_name = p.and_then(|p| p.name.as_deref()).unwrap_or(""),
                        device = dev.map_or("", |d| d.bdf.as_str()),
                        driver = dev.and_then(|d| d.driver.as_deref()).unwrap_or(""),
                        queue = p.and_then(|p| p.queue),
                        "irq {irq}: not restored to {} ({:?}): {e}",
                        cpus.to_list_string(),
                        e.class()
                    );
                }
            }
        }
        let total = self.entries.len();
        let unreadable = total - todo.len();
        if unreadable > 0 {
            tracing::warn!(
                "restored {restored} of {total} IRQs to the masks they had before irqwise; {unreadable} unreadable in {} (no CPU list), left as irqwise placed them",
                root.path(ORIGINALS_FILE).display()
            );
        } else if total > 0 {
            tracing::info!("restored {restored} of {total} IRQs to the masks they had before irqwise");
        }
        let xps = self.restore_xps_list();
        let mut restored = 0;
        for (o, cpus) in &xps {
            match crate::apply::xps_write::write_xps(root, &o.file, cpus) {
                Ok(_) => restored += 1,
                Err(e) => tracing::warn!(
                    device = o.device.as_str(),
                    txq = o.txq,
                    "xps of tx-{}: not restored ({:?}): {e}",
                    o.txq,
                    e.class()
                ),
            }
        }
        let unreadable = self.xps.len() - xps.len();
        if !self.xps.is_empty() {
            tracing::info!(
                "restored the xps_cpus of {restored} of {} tx queues to what they were before irqwise{}",
                self.xps.len(),
                unreadable_note(unreadable)
            );
        }
        self.restore_threads(root);
        if root.is_this_machine() && !self.napi.is_empty() {
            // Which instance serves each slot now: a reset since the last pass renumbered them.
            let now = crate::devices::discover::netdev_netlink::read_netdev();
            restore_napi(&self.napi, now.report(), &mut crate::apply::napi_write::HostNapi::default());
        }
        self.clear(root);
    }

    /// Puts every recorded NAPI thread that still runs under its pid back on its CPUs (this
    /// machine's root only: threads are this machine's processes).
    fn restore_threads(&self, root: &Root) {
        if self.threads.is_empty() || !root.is_this_machine() {
            return;
        }
        let writer = crate::apply::threads::HostThreads;
        let mut restored = 0;
        for o in self.threads.values() {
            let Ok(cpus) = CpuSet::parse_list(&o.cpus) else { continue };
            match crate::apply::threads::restore_thread(&writer, o.pid, &o.name, &cpus) {
                Ok(true) => restored += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(pid = o.pid, "thread {} (pid {}): not restored to {}: {e}", o.name, o.pid, o.cpus);
                }
            }
        }
        let unreadable = self.threads.values().filter(|o| CpuSet::parse_list(&o.cpus).is_err()).count();
        tracing::info!(
            "restored {restored} of {} NAPI threads to the CPUs they had before irqwise{}",
            self.threads.len(),
            unreadable_note(unreadable)
        );
    }

    /// Forgets everything and removes the file: after a restore the machine holds its own masks
    /// again, so the next daemon starts a new record.
    pub fn clear(&mut self, root: &Root) {
        self.entries.clear();
        self.xps.clear();
        self.threads.clear();
        self.napi.clear();
        if let Err((path, e)) = root.remove_own_file(Path::new(ORIGINALS_FILE)) {
            tracing::warn!("cannot remove {}: {e}; the next daemon of this boot restores from it", path.display());
        }
    }

    /// Recorded IRQs, `xps_cpus` files, NAPI threads and NAPI instances.
    pub fn len(&self) -> usize {
        self.entries.len() + self.xps.len() + self.threads.len() + self.napi.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a restore line adds for `unreadable` entries of the record: nothing for none.
fn unreadable_note(unreadable: usize) -> String {
    if unreadable == 0 {
        String::new()
    } else {
        format!("; {unreadable} unreadable in the record (no CPU list), left as irqwise placed them")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{DeviceClass, QueueRole, Recognition};
    use crate::plan::Placement;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    fn plan(bdf: &str, irqs: &[(u32, &str, &str)]) -> Plan {
        let irqs = irqs
            .iter()
            .map(|&(irq, current, desired)| Placement {
                irq,
                name: Some(format!("q{irq}")),
                role: QueueRole::RxTx,
                queue: Some(0),
                recognised: Recognition::NotRecognised { driver: "x".into() },
                queue_source: None,
                managed: false,
                current: Some(set(current)),
                current_locality: None,
                desired: Some(set(desired)),
                hint: None,
                action: if current == desired { Action::Keep } else { Action::Set },
                reason: String::new(),
                fallbacks: Vec::new(),
                mismatch: None,
                uncertain: None,
            })
            .collect();
        crate::plan::test_plans::plan_of(vec![crate::plan::test_plans::device(bdf, DeviceClass::Nic, irqs)])
    }

    #[test]
    fn the_first_mask_before_a_change_is_kept_across_saves_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let (mut o, err) = Originals::load(&root);
        assert!(err.is_none() && o.is_empty());
        let gone = |_: &str| false;
        assert!(o.note_plan(&plan("0000:01:00.0", &[(30, "0-7", "2"), (31, "3", "3")]), &gone), "30 is recorded");
        o.save(&root).unwrap();
        // A later daemon of the same boot: the first record stands, later masks do not replace it.
        let (mut again, _) = Originals::load(&root);
        assert!(!again.note_plan(&plan("0000:01:00.0", &[(30, "2", "5"), (31, "3", "3")]), &gone));
        assert_eq!(again.restore_list(), vec![(30, set("0-7"))]);
        // IRQ 30 left the plan (link down: no handler) but its device is still there: kept.
        assert!(!again.note_plan(&plan("0000:01:00.0", &[(31, "3", "3")]), &gone));
        assert!(!again.note_plan(&plan("0000:02:00.0", &[(32, "3", "3")]), &|_| true));
        assert_eq!(again.restore_list(), vec![(30, set("0-7"))]);
        // The device went away: its entries go.
        assert!(again.note_plan(&plan("0000:02:00.0", &[(31, "3", "3")]), &gone));
        assert!(again.restore_list().is_empty());
    }

    #[test]
    fn a_record_of_another_boot_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel/random")).unwrap();
        std::fs::write(dir.path().join(BOOT_ID), "boot-a\n").unwrap();
        let (mut o, _) = Originals::load(&root);
        o.note_plan(&plan("0000:01:00.0", &[(30, "0-7", "2")]), &|_| false);
        o.save(&root).unwrap();
        assert_eq!(Originals::load(&root).0.len(), 1);
        std::fs::write(dir.path().join(BOOT_ID), "boot-b\n").unwrap();
        assert!(Originals::load(&root).0.is_empty(), "a new boot starts a new record");
    }

    #[test]
    fn a_napi_threads_cpus_before_its_first_move_are_kept_until_it_ends() {
        use crate::plan::ThreadPlacement;
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let (mut o, _) = Originals::load(&root);
        let gone = |_: &str| false;
        let with_thread = |current: &str, desired: &str| {
            let mut p = plan("0000:01:00.0", &[(30, "2", "2")]);
            p.devices[0].napi_threads.push(ThreadPlacement {
                pid: 500,
                name: "napi/eth0-8193".into(),
                napi_id: 8193,
                irq: Some(30),
                by: Some("netlink"),
                current: Some(set(current)),
                desired: Some(set(desired)),
                action: if current == desired { Action::Keep } else { Action::Set },
                reason: String::new(),
                last_cpu: None,
            });
            p
        };
        assert!(!o.note_plan(&with_thread("2", "2"), &gone), "nothing to move, nothing recorded");
        assert!(o.note_plan(&with_thread("0-7", "2"), &gone));
        o.save(&root).unwrap();
        let (mut again, _) = Originals::load(&root);
        assert_eq!(again.len(), 1, "the thread's record survives a restart");
        assert!(!again.note_plan(&with_thread("5", "2"), &gone), "the first CPUs stand");
        let kept = again.threads.get(&500).map(|t| (t.name.as_str(), t.cpus.as_str()));
        assert_eq!(kept, Some(("napi/eth0-8193", "0-7")));
        // The thread ended (its plan lists it no more): its record goes.
        assert!(again.note_plan(&plan("0000:01:00.0", &[(30, "2", "2")]), &gone));
        assert!(again.is_empty());
    }

    #[test]
    fn an_entry_whose_cpus_are_no_cpu_list_is_named_once_loaded_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join("run/irqwise")).unwrap();
        let text = r#"{"schema": 1, "boot_id": null, "irqs": [
            {"irq": 30, "device": "0000:41:00.0", "name": "q0", "cpus": "0-3"},
            {"irq": 31, "device": "0000:41:00.0", "name": "q1", "cpus": "0-3,zz"}],
            "threads": [{"device": "0000:41:00.0", "pid": 9, "name": "napi/eth0-1", "cpus": "x"}]}"#;
        std::fs::write(dir.path().join(ORIGINALS_FILE), text).unwrap();
        let (mut originals, error) = Originals::load(&root);
        assert!(error.is_none(), "{error:?}");
        let said: Vec<String> = originals.unreadable_entries(&root).iter().map(ToString::to_string).collect();
        assert_eq!(said.len(), 2, "{said:#?}");
        let file = root.path(ORIGINALS_FILE).display().to_string();
        assert!(
            said[0].starts_with(&file) && said[0].contains("irq 31 of 0000:41:00.0") && said[0].contains("\"0-3,zz\"")
        );
        assert!(said[1].contains("thread napi/eth0-1 (pid 9)") && said[1].contains("\"x\""), "{}", said[1]);
        // Kept: the IRQ is not recorded again (with irqwise's own mask), and counted at stop.
        assert_eq!(originals.len(), 3);
        originals.note_plan(&plan("0000:41:00.0", &[(31, "2", "5")]), &|_| true);
        assert_eq!(originals.entries.get(&31).map(|o| o.cpus.as_str()), Some("0-3,zz"), "not recorded again");
        assert_eq!(originals.restore_list(), vec![(30, set("0-3"))]);
        originals.save(&root).unwrap();
        let again = Originals::load(&root).0.unreadable_entries(&root);
        assert_eq!(again.len(), 1, "saved as it was (the thread ended): {again:?}");
        assert_eq!(unreadable_note(0), "");
        assert!(unreadable_note(2).starts_with("; 2 unreadable"));
    }

    #[test]
    fn a_damaged_record_is_kept_aside_and_its_whole_entries_restored() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel/random")).unwrap();
        std::fs::write(dir.path().join(BOOT_ID), "b1\n").unwrap();
        std::fs::create_dir_all(dir.path().join("run/irqwise")).unwrap();
        // One entry whole, one with a CPU list that is not one, one of the wrong shape, and a
        // field of the wrong type that fails the file as a whole.
        let text = r#"{"schema": "one", "boot_id": "b1", "irqs": [
            {"irq": 30, "device": "0000:41:00.0", "name": "q0", "cpus": "0-3"},
            {"irq": 31, "device": "0000:41:00.0", "name": "q1", "cpus": "zz"},
            {"irq": "32"}]}"#;
        std::fs::write(dir.path().join(ORIGINALS_FILE), text).unwrap();
        let (originals, error) = Originals::load(&root);
        let error = error.map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("kept aside as") && error.contains("1 entr(ies)"), "{error}");
        assert_eq!(originals.restore_list(), vec![(30, set("0-3"))]);
        assert_eq!(std::fs::read_to_string(dir.path().join(DAMAGED_FILE)).unwrap(), text, "the evidence");
        // Cut short: nothing to salvage, still kept aside.
        std::fs::write(dir.path().join(ORIGINALS_FILE), &text[..40]).unwrap();
        let (originals, error) = Originals::load(&root);
        assert!(originals.is_empty());
        assert!(error.is_some_and(|e| e.to_string().contains("0 entr(ies)")));
    }
    #[test]
    fn an_xps_entry_outlives_its_nics_link_down_and_goes_with_the_device() {
        let mut o = Originals::default();
        let file = "sys/class/net/eth0/queues/tx-0/xps_cpus".to_string();
        let entry = OriginalXps {
            device: "0000:01:00.0".into(),
            interface: Some("eth0".into()),
            txq: 0,
            file: file.clone(),
            cpus: "0-7".into(),
        };
        o.xps.insert(file.clone(), entry);
        // The link is down: the NIC has no queue IRQs, so no plan names it, but it is there.
        let other = plan("0000:02:00.0", &[(40, "3", "3")]);
        assert!(!o.note_plan(&other, &|_| true), "nothing changes while the device is present");
        assert!(o.xps.contains_key(&file), "the original survives the link down");
        assert!(o.note_plan(&other, &|_| false), "the device gone, its entry goes");
        assert!(o.xps.is_empty());
    }
}
