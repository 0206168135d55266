//! irqbalance's control socket, spoken by irqwise (`irqbalance_socket = true`), so that tools
//! and habits built on it (`irqbalance-ui`, intel-lpmd) find something to talk to:
//! `ROOT/run/irqbalance/irqbalance<PID>.sock`, a stream socket, one command per connection
//! ([`super::irqbalance_protocol`]), root peers only (`SO_PEERCRED`, as irqbalance checks the
//! sender's credentials).
//!
//! Guarantees, whatever clients do:
//! - at most [`CONNECTIONS_MAX`] connections are in service, each for at most
//!   [`CONNECTION_DEADLINE`] (its command, the loop's answer and the reply's write): a client
//!   that never sends or never reads frees its slot then. Clients past the cap wait in the
//!   kernel's listen queue, costing the daemon no descriptor, until a slot frees; the listener
//!   never spins (an accept error waits [`ACCEPT_BACKOFF`]), and a full house is said once;
//! - a command is read whole ([`command_end`]: until the client closes or shuts down its side,
//!   or sends nothing more for [`PAUSE`]) or not at all: one longer than [`COMMAND_MAX`], or one
//!   still arriving after [`READ_TIMEOUT`], is refused, never applied in part;
//! - the socket's directory is opened through no symlink ([`super::irqbalance_socket_file`]).
//!
//! Each connection is served by its own task: an idle client (or intel-lpmd's probe, which
//! connects and closes) delays nobody. The command goes to the daemon's loop, which answers from
//! its last pass; the task writes the answer and closes.

use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};

use super::irqbalance_protocol::{command_end, parse, Command, CommandEnd, COMMAND_MAX};
use super::once::SaidOnce;
use super::respect::leave_as_set;
use crate::plan::Plan;

pub(crate) use super::irqbalance_socket_file::{open, SocketFile};

/// Connections in service at once. Each holds one of the daemon's descriptors for at most
/// [`CONNECTION_DEADLINE`], and the descriptor budget (`daemon::descriptors`) counts them:
/// a flood of clients cannot take the descriptors a pass, a claim's watch or the state file
/// need. irqbalance-ui and intel-lpmd use one connection at a time; 16 leave room for several
/// tools at once.
/// What the socket's clients set, and the socket while it is open.
#[derive(Debug)]
pub(crate) struct IrqbalanceSocket {
    /// `settings sleep`'s last value (irqbalance's default 10).
    pub sleep: u32,
    /// `settings ban irqs`' list.
    pub banned_irqs: Vec<u32>,
    pub requests: Option<mpsc::Receiver<Request>>,
    pub file: Option<SocketFile>,
    pub said_sleep: bool,
}

impl Default for IrqbalanceSocket {
    fn default() -> Self {
        IrqbalanceSocket { sleep: 10, banned_irqs: Vec::new(), requests: None, file: None, said_sleep: false }
    }
}

impl IrqbalanceSocket {
    /// Turns every IRQ banned through the socket into a `skip` that keeps its mask.
    pub fn leave_banned(&self, plan: &mut Plan) {
        if self.banned_irqs.is_empty() {
            return;
        }
        for p in plan.devices.iter_mut().flat_map(|d| d.irqs.iter_mut()) {
            if self.banned_irqs.binary_search(&p.irq).is_ok() {
                leave_as_set(p, "banned through irqbalance's socket (settings ban irqs): left as it is".to_string());
            }
        }
    }
}

pub(crate) const CONNECTIONS_MAX: usize = 16;
/// How long a client may take to send its whole command.
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// A client that sent something and then nothing more for this long, its side still open, has
/// sent its command: intel-lpmd writes a setting in one write, then waits for the close. The
/// parts of one write (a stream may deliver it so) come microseconds apart.
const PAUSE: Duration = Duration::from_millis(200);
/// How long a connection lasts at most, the reply's write included.
const CONNECTION_DEADLINE: Duration = Duration::from_secs(5);
/// The wait after a failed accept (descriptors short elsewhere) before the next one.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(500);

/// One client's command, with where its answer goes (`None`: close without a reply).
#[derive(Debug)]
pub(crate) struct Request {
    pub command: Command,
    pub reply: oneshot::Sender<Option<String>>,
}

/// Accepts clients, [`CONNECTIONS_MAX`] at a time, until the daemon's loop stops listening.
pub(crate) async fn serve(listener: UnixListener, requests: mpsc::Sender<Request>) {
    let slots = Arc::new(Semaphore::new(CONNECTIONS_MAX));
    let (mut full, mut failing) = (SaidOnce::default(), SaidOnce::<String>::default());
    loop {
        let Some(permit) = next_slot(&slots, &mut full).await else { return };
        // Nobody waiting: a full house or failing accepts, if there were, are over (said again
        // when they recur, never once per connection).
        let stream = match std::future::poll_fn(|cx| Poll::Ready(listener.poll_accept(cx))).await {
            Poll::Ready(accepted) => accepted,
            Poll::Pending => {
                full.worked();
                failing.worked();
                listener.accept().await
            }
        };
        let stream = match stream {
            Ok((stream, _)) => stream,
            Err(e) => {
                if failing.failed(e.to_string()) {
                    tracing::warn!(
                        "irqbalance socket: cannot accept a connection ({e}); trying again every {} ms",
                        ACCEPT_BACKOFF.as_millis()
                    );
                }
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        if requests.is_closed() {
            return;
        }
        let requests = requests.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(CONNECTION_DEADLINE, answer(stream, requests)).await;
            drop(permit);
        });
    }
}

/// A slot for the next connection: at once, or when one in service ends (a full house said
/// once, see [`serve`]); `None` once the semaphore is closed.
async fn next_slot(slots: &Arc<Semaphore>, full: &mut SaidOnce) -> Option<OwnedSemaphorePermit> {
    if let Ok(permit) = slots.clone().try_acquire_owned() {
        return Some(permit);
    }
    if full.failed(()) {
        tracing::warn!(
            "irqbalance socket: {CONNECTIONS_MAX} connections in service; further clients wait until one ends (each within {} s)",
            CONNECTION_DEADLINE.as_secs()
        );
    }
    slots.clone().acquire_owned().await.ok()
}

/// One connection: a root peer's one command, its answer, the close.
async fn answer(mut stream: UnixStream, requests: mpsc::Sender<Request>) -> std::io::Result<()> {
    // irqbalance answers only root (its check of the sender's credentials); so does irqwise.
    if stream.peer_cred().map(|c| c.uid()).ok() != Some(0) {
        return Ok(());
    }
    let mut bytes = Vec::new();
    let command = match tokio::time::timeout(READ_TIMEOUT, read_command(&mut stream, &mut bytes)).await {
        Ok(Ok(CommandEnd::Whole)) => parse(&bytes),
        Ok(Ok(CommandEnd::TooLong)) => Command::Ignored(format!(
            "a command longer than {COMMAND_MAX} bytes (irqbalance's limit; none of it is applied)"
        )),
        // Closed without a word (intel-lpmd's probe), a failed read, or an idle client.
        Ok(Ok(CommandEnd::Nothing) | Err(_)) => return Ok(()),
        Err(_) if bytes.is_empty() => return Ok(()),
        Err(_) => Command::Ignored(format!(
            "a command still arriving after {} s ({:?}...; none of it is applied)",
            READ_TIMEOUT.as_secs(),
            crate::text::printable(&String::from_utf8_lossy(&bytes[..bytes.len().min(40)]))
        )),
    };
    let (reply, answered) = oneshot::channel();
    if requests.send(Request { command, reply }).await.is_err() {
        return Ok(());
    }
    if let Ok(Some(text)) = answered.await {
        stream.write_all(text.as_bytes()).await?;
    }
    stream.shutdown().await
}

/// Reads into `bytes` until [`command_end`] says where the command stands (the client's side
/// ended: closed, shut down, or silent for [`PAUSE`] after its first bytes); at most
/// `COMMAND_MAX + 1` bytes are kept.
async fn read_command(stream: &mut UnixStream, bytes: &mut Vec<u8>) -> std::io::Result<CommandEnd> {
    let mut chunk = [0u8; 4096];
    loop {
        let room = (COMMAND_MAX + 1 - bytes.len()).min(chunk.len());
        let read = stream.read(&mut chunk[..room]);
        // A read not finished is cancelled without losing bytes (tokio's `read` is cancel-safe).
        let n = if bytes.is_empty() {
            Some(read.await?)
        } else {
            tokio::time::timeout(PAUSE, read).await.ok().transpose()?
        };
        let n = n.unwrap_or(0);
        bytes.extend_from_slice(&chunk[..n]);
        if let Some(end) = command_end(bytes, n == 0) {
            return Ok(end);
        }
    }
}
