//! The state file `ROOT/run/irqwise/state.json`: what the daemon last planned and applied, when
//! and why. Written atomically (temporary file in the same directory, then `rename(2)`), so a
//! reader sees the previous or the new state, never half of one.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::counters::{render_status_section, Counters, RecentChange};
use crate::apply::ApplyReport;
use crate::plan::{Plan, Summary};
use crate::sysfs::Root;

/// Where the state file lives, relative to the root.
pub const STATE_FILE: &str = "run/irqwise/state.json";

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot create {path}: {source}")]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("cannot rename {from} to {to}: {source}")]
    Rename { from: PathBuf, to: PathBuf, source: std::io::Error },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a state file irqwise wrote ({source}); expected the JSON of `irqwise run`")]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("cannot encode the state: {0}")]
    Encode(serde_json::Error),
}

/// What the daemon writes after every pass.
#[derive(Debug, Serialize)]
pub struct StateRecord<'a> {
    pub pid: u32,
    /// Unix seconds.
    pub started: u64,
    pub last_pass: u64,
    /// Passes since start (the initial one is 1).
    pub passes: u64,
    /// Why the last pass ran (`start`, `cpu`, `device`, `link eth0 up`, `reload`, ...).
    pub triggers: &'a [String],
    pub summary: Summary,
    pub status: &'a str,
    /// The last pass's error, if it failed (the plan and report are then the previous ones).
    pub error: Option<&'a str>,
    pub config_sources: &'a [PathBuf],
    pub plan: &'a Plan,
    pub report: &'a ApplyReport,
    /// Since start (the same counters as the metrics file).
    pub counters: &'a Counters,
    /// The last writes, oldest first.
    pub recent_changes: &'a [RecentChange],
}

/// Writes `record` to `ROOT/run/irqwise/state.json` atomically.
pub fn write_state(root: &Root, record: &StateRecord) -> Result<(), StateError> {
    let path = root.path(STATE_FILE);
    let text = serde_json::to_vec_pretty(record).map_err(StateError::Encode)?;
    write_atomically(&path, &text)
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StateError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|source| StateError::CreateDir { path: dir.into(), source })?;
    let tmp = dir.join(format!(".state.json.{}", std::process::id()));
    let write = |tmp: &Path| -> std::io::Result<()> {
        let mut f = std::fs::File::create(tmp)?;
        f.write_all(bytes)?;
        f.write_all(b"\n")
    };
    write(&tmp).map_err(|source| StateError::Write { path: tmp.clone(), source })?;
    std::fs::rename(&tmp, path).map_err(|source| StateError::Rename { from: tmp, to: path.into(), source })
}

/// What `irqwise status` reads back: the parts of [`StateRecord`] it shows.
#[derive(Debug, Clone, Deserialize)]
pub struct StateView {
    pub pid: u32,
    pub started: u64,
    pub last_pass: u64,
    pub passes: u64,
    pub triggers: Vec<String>,
    pub summary: Summary,
    pub status: String,
    pub error: Option<String>,
    pub plan: PlanView,
    /// Absent in state files of versions without counters.
    #[serde(default)]
    pub counters: Option<Counters>,
    #[serde(default)]
    pub recent_changes: Vec<RecentChange>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PlanView {
    pub devices: Vec<DeviceView>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DeviceView {
    pub bdf: String,
    pub name: Option<String>,
    pub driver: Option<String>,
    pub strategy: String,
    pub irqs: Vec<PlacementView>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PlacementView {
    pub irq: u32,
    pub name: Option<String>,
    pub action: String,
    pub desired: Option<crate::cpuset::CpuSet>,
    pub current: Option<crate::cpuset::CpuSet>,
}

/// Reads the state file as raw text (`status --json`) and parsed (`status`). `Ok(None)` when it
/// does not exist: the daemon is not running.
pub fn read_state(root: &Root) -> Result<Option<(String, StateView)>, StateError> {
    let path = root.path(STATE_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(StateError::Read { path, source }),
    };
    let view = serde_json::from_str(&text).map_err(|source| StateError::Parse { path, source })?;
    Ok(Some((text, view)))
}

/// The human summary of `irqwise status`; `now` in unix seconds, `alive` whether `pid` runs.
pub fn render_status(s: &StateView, now: u64, alive: bool) -> String {
    let mut out = String::new();
    let note = if alive { String::new() } else { format!(" (process {} is gone: this is the state it left)", s.pid) };
    out.push_str(&format!("irqwise pid {}{note}, running for {}\n", s.pid, ago(now, s.started)));
    out.push_str(&format!(
        "last pass: {} ago (pass {}), because of: {}\n",
        ago(now, s.last_pass),
        s.passes,
        s.triggers.join(", ")
    ));
    out.push_str(&format!("{}; {} written in that pass\n", s.status, s.summary.written));
    if let Some(e) = &s.error {
        out.push_str(&format!("last pass failed: {e}\n"));
    }
    for d in &s.plan.devices {
        let name = d.name.as_deref().unwrap_or("-");
        let driver = d.driver.as_deref().unwrap_or("-");
        out.push_str(&format!("\n{} {name} ({driver}): {}\n", d.bdf, d.strategy));
        for p in &d.irqs {
            let cpus = p.desired.as_ref().or(p.current.as_ref()).map_or("?".into(), |c| c.to_list_string());
            let pname = p.name.as_deref().unwrap_or("-");
            out.push_str(&format!("  irq {:>5} {pname:<24} {:<8} {cpus}\n", p.irq, p.action));
        }
    }
    if let Some(counters) = &s.counters {
        out.push_str(&render_status_section(counters, &s.recent_changes, now));
    }
    out
}

/// "3 s", "2 min 5 s", "1 h 4 min" between `then` and `now` (0 when `then` is later).
fn ago(now: u64, then: u64) -> String {
    let s = now.saturating_sub(then);
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(ago(100, 97), "3 s");
        assert_eq!(ago(1000, 875), "2 min 5 s");
        assert_eq!(ago(10_000, 10_000 - 3840), "1 h 4 min");
        assert_eq!(ago(5, 10), "0 s");
    }

    #[test]
    fn write_is_atomic_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/irqwise/state.json");
        write_atomically(&path, b"{}").unwrap();
        write_atomically(&path, b"{\"a\":1}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
        let names: Vec<_> =
            std::fs::read_dir(path.parent().unwrap()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("state.json")]);
    }
}
