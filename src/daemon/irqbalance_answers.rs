//! The daemon's side of irqbalance's control socket ([`super::irqbalance_socket`]): answers
//! from the last pass, settings as irqwise's own ideas. `settings cpus LIST` is a runtime claim
//! owned by `irqbalance-socket` (replaced by the next such command, released by `NULL`, at stop
//! unless `restore_on_exit` is off); `settings ban irqs LIST` leaves those IRQs alone;
//! `settings sleep N` is accepted without effect (irqwise places on events), said once.

use std::path::Path;

use super::irqbalance_protocol::{setup_reply, stats_reply, Command};
use super::irqbalance_socket::Request;
use super::parts::Daemon;
use crate::cpuset::CpuSet;
use crate::topology::claims::{render_claim, Claim};
use crate::topology::discover::claims::CLAIMS_DIR;
use crate::topology::discover::read_possible_cpus;

/// The claim `settings cpus` writes.
pub(crate) const SOCKET_CLAIM: &str = "irqbalance-socket";

impl Daemon {
    /// `irqbalance_socket = true`: listens on irqbalance's socket below the root (never beside a
    /// running irqbalance); a socket that cannot be opened is said, and the daemon runs
    /// without it.
    pub(super) fn open_irqbalance_socket(&mut self) {
        match super::irqbalance_socket::open(&self.root) {
            Ok((listener, file)) => {
                tracing::info!(
                    "irqbalance socket: listening on {} (irqbalance-ui {})",
                    file.path().display(),
                    std::process::id()
                );
                let (tx, rx) = tokio::sync::mpsc::channel(16);
                tokio::spawn(super::irqbalance_socket::serve(listener, tx));
                self.irqbalance.requests = Some(rx);
                self.irqbalance.file = Some(file);
            }
            Err(e) => tracing::warn!("irqbalance socket: {e}; running without it"),
        }
    }

    /// Answers one client's command.
    pub(super) fn answer_irqbalance(&mut self, request: Request) {
        let reply = match request.command {
            Command::Stats => {
                let forbidden = &self.last_forbidden;
                let banned = &self.irqbalance.banned_irqs;
                Some(match self.reader.topology() {
                    Some(t) => stats_reply(t, &self.records.last_plan, forbidden, banned),
                    None => "TYPE 3 NUMBER -1 LOAD 0 SAVE_MODE 0 ".to_string(),
                })
            }
            Command::Setup => {
                Some(setup_reply(self.irqbalance.sleep, &self.irqbalance.banned_irqs, &self.last_forbidden))
            }
            Command::Sleep(n) => {
                self.irqbalance.sleep = n;
                if !std::mem::replace(&mut self.irqbalance.said_sleep, true) {
                    tracing::info!("irqbalance socket: settings sleep {n} accepted; it has no effect (irqwise places on events, not every few seconds)");
                }
                None
            }
            Command::Cpus(cpus) => {
                self.irqbalance_claim(cpus.as_ref());
                None
            }
            Command::BanIrqs(irqs) => {
                tracing::info!(
                    "irqbalance socket: settings ban irqs {}; those IRQs are left as they are",
                    if irqs.is_empty() {
                        "NONE".to_string()
                    } else {
                        irqs.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")
                    }
                );
                self.irqbalance.banned_irqs = irqs;
                let _ = request.reply.send(None);
                self.run_pass(vec!["irqbalance socket".into()]);
                return;
            }
            Command::Ignored(why) => {
                tracing::warn!("irqbalance socket: {why}; ignored");
                None
            }
        };
        let _ = request.reply.send(reply);
    }

    /// `settings cpus`: writes (or with `None` removes) the socket's claim; the claims' watch
    /// runs the pass that moves IRQs off the CPUs. A list naming a CPU the machine does not have
    /// (not among its possible CPUs, as `irqwise claim` checks) is refused whole: the claim held
    /// stays as it was, and the log says so.
    fn irqbalance_claim(&mut self, cpus: Option<&CpuSet>) {
        let rel = format!("{CLAIMS_DIR}/{SOCKET_CLAIM}");
        match cpus {
            Some(cpus) => {
                if let Err(why) = self.cpus_exist(cpus) {
                    tracing::warn!(
                        "irqbalance socket: settings cpus {cpus}: {why}; refused whole, the claim of {SOCKET_CLAIM} stays as it was"
                    );
                    return;
                }
                let claim = Claim { owner: SOCKET_CLAIM.into(), cpus: cpus.clone(), pid: None, pid_start: None };
                match self.root.replace_own_file(Path::new(&rel), render_claim(&claim).as_bytes(), 0o644, false) {
                    Ok(()) => tracing::info!("irqbalance socket: settings cpus {cpus}: claimed for {SOCKET_CLAIM}"),
                    Err((path, e)) => {
                        tracing::warn!("irqbalance socket: settings cpus {cpus}: cannot write {}: {e}", path.display());
                    }
                }
            }
            None => {
                if let Err((path, e)) = self.root.remove_own_file(Path::new(&rel)) {
                    tracing::warn!("irqbalance socket: settings cpus NULL: cannot remove {}: {e}", path.display());
                } else {
                    tracing::info!("irqbalance socket: settings cpus NULL: the claim of {SOCKET_CLAIM} released");
                }
            }
        }
    }

    /// Whether every CPU of `cpus` is one of the machine's possible CPUs; why not otherwise.
    fn cpus_exist(&self, cpus: &CpuSet) -> Result<(), String> {
        let possible = match self.reader.topology() {
            Some(t) => t.possible.clone(),
            None => read_possible_cpus(&self.root).map_err(|e| format!("the machine's CPUs cannot be read ({e})"))?,
        };
        let beyond = cpus.difference(&possible);
        if beyond.is_empty() {
            return Ok(());
        }
        Err(format!("CPUs {beyond} do not exist here (possible CPUs: {possible})"))
    }

    /// At stop: the socket file goes; its claim too, unless `restore_on_exit` is off.
    pub(super) fn close_irqbalance(&mut self) {
        self.irqbalance.file = None;
        if self.config.global.restore_on_exit {
            let rel = format!("{CLAIMS_DIR}/{SOCKET_CLAIM}");
            if self.root.exists(&rel) {
                self.irqbalance_claim(None);
            }
        }
    }
}
