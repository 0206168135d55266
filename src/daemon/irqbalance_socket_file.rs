//! The file of irqbalance's control socket ([`super::irqbalance_socket`]):
//! `ROOT/run/irqbalance/irqbalance<PID>.sock`.
//!
//! Guarantees, whatever the tree holds:
//! - the directory is opened beneath the root through no symlink (created where missing): a
//!   `run` or `run/irqbalance` that is a link is refused with an error naming it, and nothing
//!   is created, listed or removed through it;
//! - only sockets named `irqbalance<PID>.sock` whose process no longer runs are removed (a
//!   regular file, link or directory of that name is left as it is);
//! - the socket is bound in the directory opened (through its descriptor), and at stop it is
//!   removed from that directory only if it is still the socket bound.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use tokio::net::UnixListener;

use crate::sysfs::Root;

/// Where irqbalance keeps its socket, relative to the root.
const SOCKET_DIR: &str = "run/irqbalance";

/// The socket's file; removed when dropped (the daemon's stop).
#[derive(Debug)]
pub(crate) struct SocketFile {
    /// For the log: where it is.
    path: PathBuf,
    dir: OwnedFd,
    name: String,
    /// Device and inode of the socket bound.
    id: (u64, u64),
}

impl SocketFile {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        if socket_id(&self.dir, &self.name) == Some(self.id) {
            let _ = rustix::fs::unlinkat(&self.dir, self.name.as_str(), AtFlags::empty());
        }
    }
}

/// Why the socket was not opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SocketError {
    #[error("irqbalance (pid {pid}) is running: its socket is its own; irqwise opens none (stop irqbalance)")]
    IrqbalanceRuns { pid: u32 },
    #[error("cannot open or create {path}: {source}")]
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
    let dir =
        root.open_own_dir(Path::new(SOCKET_DIR)).map_err(|(path, source)| SocketError::Directory { path, source })?;
    let removed = remove_dead_sockets(&dir);
    if removed > 0 {
        tracing::info!("irqbalance socket: removed {removed} socket(s) of processes that no longer run");
    }
    let name = format!("irqbalance{}.sock", std::process::id());
    let path = root.path(SOCKET_DIR).join(&name);
    // A socket of this pid is a dead process's (another pid namespace's, or a crash's).
    if socket_id(&dir, &name).is_some() {
        let _ = rustix::fs::unlinkat(&dir, name.as_str(), AtFlags::empty());
    }
    let listener = bind_in(&dir, &name).map_err(|source| SocketError::Bind { path: path.clone(), source })?;
    let id = socket_id(&dir, &name).ok_or_else(|| SocketError::Bind {
        path: path.clone(),
        source: std::io::Error::other("the socket bound is gone"),
    })?;
    Ok((listener, SocketFile { path, dir, name, id }))
}

/// Binds a listening socket named `name` in `dir`: through `/proc/self/fd`, so the directory
/// bound in is the one opened, whatever its path has become (and however long it is).
fn bind_in(dir: &OwnedFd, name: &str) -> std::io::Result<UnixListener> {
    let at = format!("/proc/self/fd/{}/{name}", dir.as_raw_fd());
    let listener = std::os::unix::net::UnixListener::bind(at)?;
    listener.set_nonblocking(true)?;
    UnixListener::from_std(listener)
}

/// Device and inode of `name` in `dir` if it is a socket (no link followed).
fn socket_id(dir: &OwnedFd, name: &str) -> Option<(u64, u64)> {
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    (FileType::from_raw_mode(st.st_mode) == FileType::Socket).then_some((st.st_dev, st.st_ino))
}

/// The pid in a socket name `irqbalance<PID>.sock` (digits only, not 0).
fn socket_pid(name: &str) -> Option<i32> {
    let digits = name.strip_prefix("irqbalance")?.strip_suffix(".sock")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<i32>().ok().filter(|pid| *pid > 0)
}

/// Removes the sockets in `dir` named for a process that no longer runs; returns how many.
fn remove_dead_sockets(dir: &OwnedFd) -> usize {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let Ok(listing) = rustix::fs::openat(dir, ".", flags, Mode::empty()) else { return 0 };
    let Ok(entries) = rustix::fs::Dir::read_from(listing.as_fd()) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().to_str() else { continue };
        let Some(pid) = socket_pid(name) else { continue };
        if socket_id(dir, name).is_some()
            && !super::peers::process_exists(pid)
            && rustix::fs::unlinkat(dir, name, AtFlags::empty()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_digits_name_a_pid() {
        assert_eq!(socket_pid("irqbalance123.sock"), Some(123));
        for bad in
            ["irqbalance.sock", "irqbalance+5.sock", "irqbalance-1.sock", "irqbalance0.sock", "irqbalance5.sockx"]
        {
            assert_eq!(socket_pid(bad), None, "{bad}");
        }
        assert_eq!(socket_pid("irqbalance99999999999.sock"), None, "beyond any pid");
    }
}
