//! The daemon's own files (`/run/irqwise/*.json`): written so that a reader sees the old or the
//! new content, never half of one, and so that a crash leaves nothing behind for long.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically with permissions `mode`: a temporary file beside it
/// (`.NAME.PID`, created exclusively, never through a symlink), fsynced, renamed over `path`, the
/// directory fsynced. On error the temporary file is removed.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> Result<(), (PathBuf, io::Error)> {
    write_replacing(path, bytes, mode, true)
}

/// [`write_atomically`] without the fsyncs, for files rewritten after every pass (the state and
/// metrics files): readers still see the old or the new content, and what a crash could lose
/// the next pass writes again. Under `/run` (tmpfs) an fsync does nothing anyway; on a disk it
/// would wait for the device at every pass.
pub(crate) fn replace_atomically(path: &Path, bytes: &[u8], mode: u32) -> Result<(), (PathBuf, io::Error)> {
    write_replacing(path, bytes, mode, false)
}

fn write_replacing(path: &Path, bytes: &[u8], mode: u32, durable: bool) -> Result<(), (PathBuf, io::Error)> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| (dir.to_path_buf(), e))?;
    let tmp = temp_path(path);
    let _ = fs::remove_file(&tmp); // a leftover of a crashed process that had our pid
    let write = || -> io::Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&tmp)?;
        // Set explicitly: the service's UMask= would otherwise narrow the mode.
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.write_all(bytes)?;
        if durable {
            f.sync_all()?;
        }
        Ok(())
    };
    if let Err(e) = write() {
        let _ = fs::remove_file(&tmp);
        return Err((tmp, e));
    }
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err((path.to_path_buf(), e));
    }
    // The rename is durable only once the directory is: a failure here loses nothing written.
    if durable {
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// `.NAME.PID` beside `path`.
fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.{}", std::process::id()))
}

/// Removes the temporary files of `path` (`.NAME.PID`) that a process which is no longer running
/// left behind (killed between create and rename). Returns how many were removed.
pub(crate) fn remove_stale_temps(path: &Path) -> usize {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return 0 };
    let prefix = format!(".{}.", name.to_string_lossy());
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = file.strip_prefix(&prefix).and_then(|p| p.parse::<i32>().ok()) else { continue };
        if !super::peers::process_exists(pid) && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_is_atomic_with_its_mode_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/irqwise/state.json");
        write_atomically(&path, b"{}\n", 0o644).unwrap();
        write_atomically(&path, b"{\"a\":1}\n", 0o644).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
        let names: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("state.json")]);
    }

    #[test]
    fn only_temporary_files_of_dead_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        // pid_max is at most 2^22: this pid runs nowhere.
        fs::write(dir.path().join(".state.json.4194305"), "half").unwrap();
        fs::write(dir.path().join(format!(".state.json.{}", std::process::id())), "mine").unwrap();
        fs::write(dir.path().join(".other.json.4194305"), "not ours").unwrap();
        assert_eq!(remove_stale_temps(&path), 1);
        assert!(dir.path().join(format!(".state.json.{}", std::process::id())).exists());
        assert!(dir.path().join(".other.json.4194305").exists());
    }
}
