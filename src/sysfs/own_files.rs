//! The files irqwise writes for itself below the root (its state, the original masks, the
//! topology memory, the metrics file, the instance lock): the one way each of them is written.
//!
//! Guarantees, whatever the tree holds:
//! - every path is resolved beneath the root one component at a time, following no symlink
//!   (`O_NOFOLLOW`), and a `..` or absolute component is refused (`EXDEV`): a `run` or
//!   `run/irqwise` that is a symlink, or a configured path with `..`, is an error naming it, never
//!   a write elsewhere;
//! - missing directories are created on the way (mode 0755);
//! - a replaced file is written to `.NAME.PID` beside it (created exclusively), then renamed over
//!   it, so a reader sees the old or the new content, never half of one; its mode is set
//!   explicitly (a service's `UMask=` would otherwise narrow it).

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::{relative, Root};

/// A failure of one of the daemon's own files: the path of the step that failed, and why.
pub(crate) type OwnFileError = (PathBuf, io::Error);

/// The names of `rel`, each a plain component; `EXDEV` for `..`, `/` or a prefix.
fn names(rel: &Path) -> io::Result<Vec<&std::ffi::OsStr>> {
    let mut out = Vec::new();
    for c in relative(rel).components() {
        match c {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            _ => return Err(refused()),
        }
    }
    Ok(out)
}

/// The error of a path that would leave the root.
fn refused() -> io::Error {
    io::Error::other("the path leaves the root or goes through a symlink, which irqwise does not follow")
}

/// `ELOOP`/`ENOTDIR` of a component opened with `O_NOFOLLOW` that is a symlink, said plainly.
fn plain(e: Errno) -> io::Error {
    match e {
        Errno::LOOP | Errno::NOTDIR => refused(),
        e => io::Error::from(e),
    }
}

impl Root {
    /// The directory `rel_dir` below the root, opened through no symlink, created where missing.
    fn own_dir(&self, rel_dir: &[&std::ffi::OsStr]) -> io::Result<OwnedFd> {
        let step = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut current = rustix::fs::openat(self.dir()?, ".", step, Mode::empty())?;
        for name in rel_dir {
            current = match rustix::fs::openat(&current, *name, step, Mode::empty()) {
                Ok(fd) => fd,
                Err(Errno::NOENT) => {
                    match rustix::fs::mkdirat(&current, *name, Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                    rustix::fs::openat(&current, *name, step, Mode::empty()).map_err(plain)?
                }
                Err(e) => return Err(plain(e)),
            };
        }
        Ok(current)
    }

    /// The directory of `rel` (opened, created where missing) and the file's name in it.
    fn own_parent<'a>(&self, rel: &'a Path) -> Result<(OwnedFd, &'a std::ffi::OsStr), OwnFileError> {
        let at = |e| (self.path(rel), e);
        let all = names(rel).map_err(at)?;
        let Some((name, dirs)) = all.split_last() else { return Err(at(io::Error::from(Errno::INVAL))) };
        let dir = self.own_dir(dirs).map_err(|e| (self.path(rel.parent().unwrap_or(rel)), e))?;
        Ok((dir, name))
    }

    /// Replaces `rel` with `bytes`, mode `mode`, atomically (see the module's guarantees).
    /// `durable`: fsync the file and its directory (the record of original masks); without it,
    /// for files rewritten after every pass, a crash loses at most what the next pass writes
    /// again (under `/run`, tmpfs, an fsync does nothing anyway).
    pub(crate) fn replace_own_file(
        &self,
        rel: &Path,
        bytes: &[u8],
        mode: u32,
        durable: bool,
    ) -> Result<(), OwnFileError> {
        let (dir, name) = self.own_parent(rel)?;
        let tmp = format!(".{}.{}", name.to_string_lossy(), std::process::id());
        let tmp_path = self.path(rel.with_file_name(&tmp));
        let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty()); // a crashed process's, with our pid
        let write = || -> io::Result<()> {
            let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let mut f = File::from(rustix::fs::openat(&dir, tmp.as_str(), flags, Mode::from_raw_mode(mode))?);
            rustix::fs::fchmod(&f, Mode::from_raw_mode(mode))?;
            f.write_all(bytes)?;
            if durable {
                f.sync_all()?;
            }
            Ok(())
        };
        if let Err(e) = write() {
            let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
            return Err((tmp_path, e));
        }
        if let Err(e) = rustix::fs::renameat(&dir, tmp.as_str(), &dir, name) {
            let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
            return Err((self.path(rel), e.into()));
        }
        if durable {
            // The rename is durable only once the directory is: a failure here loses nothing.
            if let Ok(d) =
                rustix::fs::openat(&dir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            {
                let _ = rustix::fs::fsync(&d);
            }
        }
        Ok(())
    }

    /// Creates the directory `rel` (and those above it) where missing, through no symlink.
    pub(crate) fn make_own_dir(&self, rel: &Path) -> Result<(), OwnFileError> {
        self.open_own_dir(rel).map(drop)
    }

    /// The directory `rel`, created where missing and opened (`O_PATH`) through no symlink: a
    /// directory the caller then works in by descriptor only (irqbalance's socket directory).
    pub(crate) fn open_own_dir(&self, rel: &Path) -> Result<OwnedFd, OwnFileError> {
        let all = names(rel).map_err(|e| (self.path(rel), e))?;
        self.own_dir(&all).map_err(|e| (self.path(rel), e))
    }

    /// Removes `rel` (through no symlink); a missing file is no error.
    pub(crate) fn remove_own_file(&self, rel: &Path) -> Result<(), OwnFileError> {
        let (dir, name) = self.own_parent(rel)?;
        match rustix::fs::unlinkat(&dir, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err((self.path(rel), e.into())),
        }
    }

    /// Opens `rel` for reading and writing, created with `mode` when missing, through no symlink:
    /// the instance lock.
    pub(crate) fn open_own_file(&self, rel: &Path, mode: u32) -> Result<File, OwnFileError> {
        let (dir, name) = self.own_parent(rel)?;
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        match rustix::fs::openat(&dir, name, flags, Mode::from_raw_mode(mode)) {
            Ok(fd) => {
                let file = File::from(fd);
                let regular = file.metadata().is_ok_and(|m| m.is_file());
                if regular {
                    Ok(file)
                } else {
                    Err((self.path(rel), io::Error::new(io::ErrorKind::InvalidInput, "not a regular file")))
                }
            }
            Err(e) => Err((self.path(rel), plain(e))),
        }
    }

    /// Removes the temporary copies of `rel` (`.NAME.PID`) whose process no longer runs
    /// (`running(pid)` says), left by one killed between create and rename. Returns how many.
    pub(crate) fn remove_stale_temps(&self, rel: &Path, running: impl Fn(i32) -> bool) -> usize {
        let Ok((dir, name)) = self.own_parent(rel) else { return 0 };
        let prefix = format!(".{}.", name.to_string_lossy());
        let Ok(listing) =
            rustix::fs::openat(&dir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        else {
            return 0;
        };
        let Ok(entries) = rustix::fs::Dir::read_from(listing.as_fd()) else { return 0 };
        let mut removed = 0;
        for entry in entries.flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = file.strip_prefix(&prefix).and_then(|p| p.parse::<i32>().ok()) else { continue };
            if !running(pid) && rustix::fs::unlinkat(&dir, file.as_str(), AtFlags::empty()).is_ok() {
                removed += 1;
            }
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::{symlink, PermissionsExt};

    use super::*;

    #[test]
    fn a_replaced_file_is_whole_with_its_mode_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let rel = Path::new("run/irqwise/state.json");
        root.replace_own_file(rel, b"{}\n", 0o644, true).unwrap();
        root.replace_own_file(rel, b"{\"a\":1}\n", 0o644, false).unwrap();
        let path = dir.path().join(rel);
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
        let names: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("state.json")]);
    }

    #[test]
    fn no_write_leaves_the_root_through_a_symlink_or_dot_dot() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path().join("root"));
        fs::create_dir_all(dir.path().join("root")).unwrap();
        symlink(outside.path(), dir.path().join("root/run")).unwrap();
        let (path, e) = root.replace_own_file(Path::new("run/irqwise/state.json"), b"x", 0o644, false).unwrap_err();
        assert!(e.to_string().contains("leaves the root or goes through a symlink"), "{e}");
        assert!(path.starts_with(dir.path().join("root")), "{}", path.display());
        for rel in ["../outside.prom", "/var/../../outside.prom", "var/lib/../../../outside.prom"] {
            assert!(root.replace_own_file(Path::new(rel), b"x", 0o644, false).is_err(), "{rel}");
        }
        fs::create_dir_all(dir.path().join("root/var")).unwrap();
        symlink(outside.path().join("m.prom"), dir.path().join("root/var/m.prom")).unwrap();
        assert!(root.replace_own_file(Path::new("var/m.prom"), b"x", 0o644, false).is_ok(), "a link is replaced");
        assert!(fs::symlink_metadata(dir.path().join("root/var/m.prom")).unwrap().is_file());
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0, "nothing written outside");
        assert!(root.open_own_file(Path::new("run/irqwise/lock"), 0o644).is_err());
        assert!(root.remove_own_file(Path::new("run/irqwise/x")).is_err());
    }

    #[test]
    fn only_temporary_files_of_dead_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        fs::write(dir.path().join(".state.json.4194305"), "half").unwrap();
        fs::write(dir.path().join(format!(".state.json.{}", std::process::id())), "mine").unwrap();
        fs::write(dir.path().join(".other.json.4194305"), "not ours").unwrap();
        let mine = std::process::id() as i32;
        assert_eq!(root.remove_stale_temps(Path::new("state.json"), |pid| pid == mine), 1);
        assert!(dir.path().join(format!(".state.json.{}", std::process::id())).exists());
        assert!(dir.path().join(".other.json.4194305").exists());
    }
}
