//! Writing NAPI instances' interrupt mitigation: one `napi-set` per planned instance with the
//! keys that differ, then a `napi-get` of it to verify that the kernel holds what was written.
//! One instance's failure never stops the others; an instance gone since the pass read it
//! (recreated under another id by a reset) is `gone`, and the next pass places its successor.
//!
//! Instances are this machine's kernel objects: under another `--root` nothing is written.

use serde::Serialize;

use crate::apply::napi_socket::{NapiSocket, NapiSocketError};
use crate::choices::NapiProfile;
use crate::devices::napi::{NapiInstance, NapiSettings, NapiThreaded};
use crate::plan::Plan;

/// How one instance's write ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum NapiOutcome {
    /// Written and read back as written.
    Written,
    /// The instance is gone (its interface reset or removed since the pass read it).
    Gone,
    /// Not this machine's kernel (`--root` is not `/`): not written.
    NotThisMachine,
    /// Written, but `napi-get` reads back something else: what it read.
    Unverified { read: NapiProfile },
    /// `machine`: the socket or the permission failed, so every instance fails alike (`error`
    /// then names no instance: the one problem of them all).
    Failed { error: String, machine: bool },
}

/// One instance the pass wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NapiChange {
    /// The PCI address of the NIC.
    pub device: String,
    pub interface: Option<String>,
    pub napi_id: u32,
    pub irq: Option<u32>,
    pub queue: Option<u32>,
    /// The keys written, as they were before.
    pub old: NapiProfile,
    /// The keys written.
    pub new: NapiProfile,
    #[serde(flatten)]
    pub result: NapiOutcome,
}

impl NapiChange {
    pub(crate) fn is_failure(&self) -> bool {
        matches!(self.result, NapiOutcome::Failed { .. } | NapiOutcome::Unverified { .. })
    }
}

/// What writes instances: the kernel's netdev family, or a test's stand-in.
pub trait NapiWriter {
    /// Writes the keys set in `settings` and `threaded` to instance `id`.
    fn set(&mut self, id: u32, settings: &NapiSettings, threaded: Option<NapiThreaded>) -> Result<(), NapiSocketError>;
    /// Instance `id` as the kernel has it now.
    fn get(&mut self, id: u32) -> Result<NapiInstance, NapiSocketError>;
}

/// This machine's kernel, through one socket opened at the first write (a pass with nothing to
/// write opens none) and kept while it works; a socket that fails is dropped, and the next
/// write opens another.
#[derive(Default)]
pub struct HostNapi {
    socket: Option<NapiSocket>,
}

impl HostNapi {
    /// `f` on the socket, opened when there is none; a socket error drops it.
    fn with<T>(&mut self, f: impl FnOnce(&mut NapiSocket) -> Result<T, NapiSocketError>) -> Result<T, NapiSocketError> {
        let socket = match &mut self.socket {
            Some(s) => s,
            None => self.socket.insert(NapiSocket::open()?),
        };
        let result = f(socket);
        if matches!(result, Err(NapiSocketError::Socket(_))) {
            self.socket = None;
        }
        result
    }
}

impl NapiWriter for HostNapi {
    fn set(&mut self, id: u32, settings: &NapiSettings, threaded: Option<NapiThreaded>) -> Result<(), NapiSocketError> {
        self.with(|s| s.set(id, settings, threaded))
    }

    fn get(&mut self, id: u32) -> Result<NapiInstance, NapiSocketError> {
        self.with(|s| s.get(id))
    }
}

/// Writes every planned instance of `plan` through `writer`, each verified by reading it back.
pub fn apply_napi(plan: &Plan, writer: &mut dyn NapiWriter, this_machine: bool) -> Vec<NapiChange> {
    let mut out = Vec::new();
    for (d, view) in plan.napi_writes() {
        let Some(p) = &view.profile else { continue };
        let write = p.write;
        let result = if this_machine {
            match writer.set(view.id, &write.settings, write.threaded.map(crate::choices::NapiMode::kernel)) {
                Err(e) if e.is_gone() => NapiOutcome::Gone,
                Err(e) => NapiOutcome::Failed { error: e.problem(), machine: e.is_machine_wide() },
                Ok(()) => match writer.get(view.id) {
                    Err(e) if e.is_gone() => NapiOutcome::Gone,
                    Err(e) => NapiOutcome::Failed {
                        error: format!("written, but not read back: {}", e.problem()),
                        machine: e.is_machine_wide(),
                    },
                    Ok(now) => {
                        let read = write.keys_of(&now.settings, now.threaded);
                        if read == write {
                            NapiOutcome::Written
                        } else {
                            NapiOutcome::Unverified { read }
                        }
                    }
                },
            }
        } else {
            NapiOutcome::NotThisMachine
        };
        out.push(NapiChange {
            device: d.bdf.clone(),
            interface: d.name.clone(),
            napi_id: view.id,
            irq: view.irq,
            queue: view.queue,
            old: write.keys_of(&view.settings, view.threaded),
            new: write,
            result,
        });
    }
    out
}
