//! irqbalance's control socket, spoken by irqwise (`irqbalance_socket = true`), so that tools
//! and habits built on it (`irqbalance-ui`, intel-lpmd) find something to talk to:
//! `ROOT/run/irqbalance/irqbalance<PID>.sock`, a stream socket, one command per connection
//! ([`super::irqbalance_protocol`]), root peers only (`SO_PEERCRED`, as irqbalance checks the
//! sender's credentials).
//!
//! Each connection is served by its own task: an idle client (or intel-lpmd's probe, which
//! connects and closes) delays nobody. The command goes to the daemon's loop, which answers from
//! its last pass; the task writes the answer in one write and closes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};

use super::irqbalance_protocol::{parse, Command, COMMAND_MAX};
use crate::sysfs::Root;

/// Where irqbalance keeps its socket, relative to the root.
pub(crate) const SOCKET_DIR: &str = "run/irqbalance";
/// How long a client may take to send its command.
const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// One client's command, with where its answer goes (`None`: close without a reply).
#[derive(Debug)]
pub(crate) struct Request {
    pub command: Command,
    pub reply: oneshot::Sender<Option<String>>,
}

/// The socket's file; removed when dropped (the daemon's stop).
#[derive(Debug)]
pub(crate) struct SocketFile {
    path: PathBuf,
}

impl SocketFile {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Why the socket was not opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SocketError {
    #[error("irqbalance (pid {pid}) is running: its socket is its own; irqwise opens none (stop irqbalance)")]
    IrqbalanceRuns { pid: u32 },
    #[error("cannot create {path}: {source}")]
    Directory { path: PathBuf, source: std::io::Error },
    #[error("cannot listen on {path}: {source}")]
    Bind { path: PathBuf, source: std::io::Error },
}

/// Listens on `ROOT/run/irqbalance/irqbalance<PID>.sock` (the directory made when missing),
/// after removing the sockets of irqbalance processes that no longer run (intel-lpmd takes the
/// first it finds). Must be called inside a tokio runtime.
pub(crate) fn open(root: &Root) -> Result<(UnixListener, SocketFile), SocketError> {
    if let Some(pid) = super::peers::irqbalance_pids(root).first() {
        return Err(SocketError::IrqbalanceRuns { pid: *pid });
    }
    let dir = root.path(SOCKET_DIR);
    std::fs::create_dir_all(&dir).map_err(|source| SocketError::Directory { path: dir.clone(), source })?;
    for name in std::fs::read_dir(&dir).into_iter().flatten().flatten().map(|e| e.file_name()) {
        let Some(pid) =
            name.to_str().and_then(|n| n.strip_prefix("irqbalance")?.strip_suffix(".sock")?.parse::<i32>().ok())
        else {
            continue;
        };
        if !super::peers::process_exists(pid) {
            let _ = std::fs::remove_file(dir.join(&name));
        }
    }
    let path = dir.join(format!("irqbalance{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let bind = |path: &Path| -> std::io::Result<UnixListener> {
        let listener = std::os::unix::net::UnixListener::bind(path)?;
        listener.set_nonblocking(true)?;
        UnixListener::from_std(listener)
    };
    let listener = bind(&path).map_err(|source| SocketError::Bind { path: path.clone(), source })?;
    Ok((listener, SocketFile { path }))
}

/// Accepts clients until the daemon's loop stops listening.
pub(crate) async fn serve(listener: UnixListener, requests: mpsc::Sender<Request>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let requests = requests.clone();
        if requests.is_closed() {
            return;
        }
        tokio::spawn(async move {
            let _ = answer(stream, requests).await;
        });
    }
}

/// One connection: a root peer's one command, its answer, the close.
async fn answer(mut stream: UnixStream, requests: mpsc::Sender<Request>) -> std::io::Result<()> {
    // irqbalance answers only root (its check of the sender's credentials); so does irqwise.
    if stream.peer_cred().map(|c| c.uid()).ok() != Some(0) {
        return Ok(());
    }
    let mut buf = vec![0u8; COMMAND_MAX];
    let Ok(Ok(n)) = tokio::time::timeout(READ_TIMEOUT, stream.read(&mut buf)).await else { return Ok(()) };
    // A connection closed without a word (intel-lpmd's probe) asks nothing.
    if n == 0 {
        return Ok(());
    }
    let (reply, answered) = oneshot::channel();
    if requests.send(Request { command: parse(&buf[..n]), reply }).await.is_err() {
        return Ok(());
    }
    if let Ok(Some(text)) = answered.await {
        stream.write_all(text.as_bytes()).await?;
    }
    stream.shutdown().await
}
