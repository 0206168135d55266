//! irqwise as an NRI plugin (`nri = true`): the container runtime (containerd 1.7+, CRI-O
//! 1.26+) tells it of every pod and container, with each container's cpuset and its pod's
//! annotations, over the runtime's NRI socket.
//!
//! One task, on a thread of its own, holds the connection ([`session`]): it registers as plugin `90-irqwise`, subscribes
//! to the container and pod events its policy needs ([`messages::SUBSCRIBED`]), takes every
//! Synchronize as the truth and answers every call at once with an empty reply: it never
//! adjusts a container and never waits for a pass (the daemon's pass runs after, on the
//! [`NriView`] this task publishes). When the runtime goes away, the task connects again, 0.5 s
//! after the first failure and doubling up to [`MAX_BACKOFF`]; the daemon keeps running
//! without it. What happens to the connection goes to the daemon as [`NriNote`]s, which it
//! says once each.
//!
//! Layers, each pure and tested on bytes: [`frame`] (the connection multiplexing), [`ttrpc`]
//! (containerd's RPC), [`proto`] (protobuf), [`messages`] (NRI's messages), [`view`] (what is
//! kept, bounded).
//!
//! Written here rather than taken from crates, by measurement (a release build with this crate's
//! profile and tokio features, against tokio alone): the `ttrpc` crate (0.8, async) adds 43
//! crates, 57 s of build CPU and 129 kB stripped, and speaks no NRI multiplexing, so [`frame`]
//! would stay; `prost` (0.14) adds 6 crates, 5 s and 12 kB, but its decoding allocates every
//! field it is given (every annotation, secrets included) where [`proto`] skips what irqwise
//! does not keep without allocating. The three hand-written layers are about 520 lines.

pub(crate) mod frame;
pub(crate) mod messages;
pub(crate) mod proto;
mod session;
pub(crate) mod ttrpc;
pub mod view;

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

pub use view::NriView;

/// The name irqwise registers under.
pub const PLUGIN_NAME: &str = "irqwise";
/// Its index: plugins are called in ascending order; irqwise changes nothing, so late.
pub const PLUGIN_INDEX: &str = "90";
/// The longest wait between two connection attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// The first wait after a failed attempt or a lost connection.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// Why irqwise is not (or no longer) connected to the runtime. Equal problems are said once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NriProblem {
    /// No socket at the path (no runtime, or NRI off in it).
    Absent,
    /// The socket exists but the connection failed (nothing listens, no permission).
    Refused(String),
    /// The runtime refused the registration or closed the connection before the first
    /// Synchronize.
    Rejected(String),
    /// The connection ended (the runtime stopped or restarted).
    Lost(String),
    /// The runtime sent what is not NRI: the connection is dropped and made again.
    Garbage(String),
    /// No Configure and Synchronize within [`session::REGISTRATION_TIME`] of connecting.
    Silent,
    /// The runtime said it shuts down.
    Shutdown,
}

/// What the connection did, for the daemon to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NriNote {
    /// Registered and synchronized: the runtime's name and version, the pods and containers.
    Synchronized { runtime: String, version: String, pods: usize, containers: usize },
    /// Not connected, and why.
    Unavailable(NriProblem),
    /// Pods and containers past the caps ([`view::MAX_PODS`], [`view::MAX_CONTAINERS`]) are not
    /// followed (sent when the count first becomes non-zero after a Synchronize).
    LeftOut(usize),
}

/// The running plugin: the view it keeps and its notes. Dropping it closes the connection
/// and ends its thread.
pub struct NriSource {
    pub view: watch::Receiver<NriView>,
    pub notes: mpsc::Receiver<NriNote>,
    _stop: oneshot::Sender<()>,
}

/// Why the plugin could not start.
#[derive(Debug, thiserror::Error)]
pub enum NriStartError {
    #[error("cannot start the NRI plugin's thread: {0}")]
    Thread(std::io::Error),
}

/// Starts the plugin on the runtime's socket at `socket` (already below the root), on a thread
/// of its own: the runtime's calls are answered while the daemon runs a pass, however long.
pub fn start(socket: PathBuf) -> Result<NriSource, NriStartError> {
    let (view_tx, view) = watch::channel(NriView::default());
    let (notes_tx, notes) = mpsc::channel(16);
    let (stop, stopped) = oneshot::channel::<()>();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(NriStartError::Thread)?;
    std::thread::Builder::new()
        .name("irqwise-nri".into())
        .spawn(move || {
            runtime.block_on(async move {
                tokio::select! {
                    () = run(socket, view_tx, notes_tx) => {}
                    _ = stopped => {}
                }
            });
        })
        .map_err(NriStartError::Thread)?;
    Ok(NriSource { view, notes, _stop: stop })
}

/// Connects, serves the connection until it ends, waits, connects again: forever.
async fn run(socket: PathBuf, view: watch::Sender<NriView>, notes: mpsc::Sender<NriNote>) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let problem = match tokio::net::UnixStream::connect(&socket).await {
            Ok(stream) => {
                let (problem, synchronized) = session::serve(stream, &view, &notes).await;
                if synchronized {
                    backoff = FIRST_BACKOFF;
                }
                problem
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => NriProblem::Absent,
            Err(e) => NriProblem::Refused(io_words(&e)),
        };
        // A full channel drops the note: the daemon is behind, and the next one says as much.
        let _ = notes.try_send(NriNote::Unavailable(problem));
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// An I/O error in words without its errno number (equal errors compare equal).
fn io_words(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_lowercase(),
        None => text.to_lowercase(),
    }
}

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;
