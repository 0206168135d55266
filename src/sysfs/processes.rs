//! This machine's processes as `/proc` shows them (the real `/proc`, whatever `--root` is: a
//! pid is this machine's): a process's name, and what tells it apart from a later one with its
//! pid.

/// What tells one process from another that later gets its pid: its name and when it started
/// (`/proc/PID/stat`'s `starttime`, in clock ticks since boot).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessIdentity {
    pub comm: String,
    pub start: u64,
}

/// The identity of process `pid` on this machine; `None` when there is no such process, it has
/// exited and is not reaped yet (a zombie), or its `/proc` entry cannot be read.
pub fn process_identity(pid: u32) -> Option<ProcessIdentity> {
    let comm = process_name(pid)?;
    let stat = super::read_regular_file(std::path::Path::new(&format!("/proc/{pid}/stat")), 4096).ok()?;
    let stat = String::from_utf8_lossy(&stat);
    // Fields after the name, which is in parentheses and may hold anything: state is field 3,
    // starttime field 22.
    let after = &stat[stat.rfind(')')? + 1..];
    // A zombie (exited, waiting for its parent to reap it) or a dying process has ended: a pass
    // woken by its pidfd must not find it still there.
    if matches!(after.split_whitespace().next(), Some("Z" | "X" | "x")) {
        return None;
    }
    let start = after.split_whitespace().nth(19)?.parse().ok()?;
    Some(ProcessIdentity { comm, start })
}

/// The name every irqwise process runs under (`/proc/PID/comm`).
pub const DAEMON_NAME: &str = "irqwise";

/// The name of process `pid` on this machine (`/proc/PID/comm`, the real `/proc`: a pid is
/// this machine's whatever `--root` says); `None` when there is no such process.
pub fn process_name(pid: u32) -> Option<String> {
    if pid == 0 {
        return None;
    }
    let bytes = super::read_regular_file(std::path::Path::new(&format!("/proc/{pid}/comm")), 64).ok()?;
    Some(String::from_utf8_lossy(&bytes).trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zombie_has_no_identity() {
        let mut child = std::process::Command::new("true").spawn().expect("spawn true");
        let pid = child.id();
        // Not reaped: it stays a zombie until `wait`.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z ")) {
            assert!(std::time::Instant::now() < deadline, "true never exited");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists(), "the zombie is in /proc");
        assert_eq!(process_identity(pid), None);
        child.wait().expect("wait");
        assert!(process_identity(std::process::id()).is_some(), "a running process has one");
    }
}
