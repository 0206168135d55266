//! One daemon per root: `irqwise run` holds an exclusive `flock` on `ROOT/run/irqwise/lock` for
//! its life, with its pid in the file. A second one on the same root does not start (two daemons
//! would fight over every mask); the kernel drops the lock when the holder exits, however it
//! exits, so a crashed daemon never blocks the next one.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use rustix::fs::FlockOperation;

use crate::sysfs::Root;

/// Where the lock lives, relative to the root.
pub const LOCK_FILE: &str = "run/irqwise/lock";

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock.
    #[error("another irqwise daemon runs on this root ({}, held by {}); stop it first", .path.display(), holder(*.pid))]
    Held { path: PathBuf, pid: Option<u32> },
    #[error("cannot take the instance lock {}: {source}", .path.display())]
    Open { path: PathBuf, source: std::io::Error },
}

fn holder(pid: Option<u32>) -> String {
    pid.map_or_else(|| "a process that wrote no pid".to_string(), |p| format!("pid {p}"))
}

/// The lock, held until dropped (or the process ends).
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
}

/// Takes the lock of `root`'s daemon, writing this process's pid in it; fails at once, naming
/// the holder's pid, when another process holds it.
pub fn acquire(root: &Root) -> Result<InstanceLock, LockError> {
    let rel = Path::new(LOCK_FILE);
    let mut file = root.open_own_file(rel, 0o644).map_err(|(path, source)| LockError::Open { path, source })?;
    let open_error = |source: std::io::Error| LockError::Open { path: root.path(rel), source };
    match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => {
            let mut text = String::new();
            let _ = file.take(32).read_to_string(&mut text);
            return Err(LockError::Held { path: root.path(rel), pid: text.trim().parse().ok() });
        }
        Err(e) => return Err(open_error(e.into())),
    }
    file.set_len(0).map_err(open_error)?;
    file.rewind().map_err(open_error)?;
    writeln!(file, "{}", std::process::id()).map_err(open_error)?;
    Ok(InstanceLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_and_a_dropped_lock_is_free() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let first = acquire(&root).unwrap();
        // flock locks belong to the open file: a second open in this process conflicts too.
        match acquire(&root) {
            Err(LockError::Held { pid, .. }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("{other:?}"),
        }
        let e = acquire(&root).unwrap_err().to_string();
        assert!(e.contains(&format!("held by pid {}", std::process::id())), "{e}");
        drop(first);
        assert!(acquire(&root).is_ok());
    }
}
