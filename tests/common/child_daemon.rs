//! The real daemon as a child process, `irqwise --root R --config C --log-format text run`, its
//! stderr kept in a log file; its state file says how many passes it ran. Stopped with real
//! signals; a daemon still running when dropped gets SIGTERM. The test file that includes it has
//! `bin` (tests/common/bin.rs) too, itself or through `acceptance`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;

use super::bin::BIN;

pub struct Daemon {
    child: Child,
    log: PathBuf,
    root: PathBuf,
}

#[allow(dead_code)] // each test binary uses its own part
impl Daemon {
    /// Starts the daemon without waiting for anything.
    pub fn spawn(root: &Path, config: &Path, log: PathBuf) -> Daemon {
        Daemon::spawn_under(&[], root, config, log)
    }

    /// Starts the daemon as the last argument of `wrapper` (`prlimit --nofile=96:96`), which
    /// must exec it (the pid stays the daemon's), and waits for its first pass.
    pub fn start_under(wrapper: &[&str], root: &Path, config: &Path, log: PathBuf) -> Daemon {
        let d = Daemon::spawn_under(wrapper, root, config, log);
        d.wait_passes(1);
        d
    }

    fn spawn_under(wrapper: &[&str], root: &Path, config: &Path, log: PathBuf) -> Daemon {
        let mut cmd = match wrapper.split_first() {
            None => Command::new(BIN),
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(BIN);
                c
            }
        };
        let child = cmd
            .arg("--root")
            .arg(root)
            .arg("--config")
            .arg(config)
            .args(["--log-format", "text", "run"])
            .env_remove("NOTIFY_SOCKET")
            .env_remove("INVOCATION_ID")
            .env_remove("JOURNAL_STREAM")
            .stderr(Stdio::from(fs::File::create(&log).unwrap()))
            .spawn()
            .unwrap();
        Daemon { child, log, root: root.to_path_buf() }
    }

    /// Starts the daemon and waits for its first pass.
    pub fn start(root: &Path, config: &Path, log: PathBuf) -> Daemon {
        let d = Daemon::spawn(root, config, log);
        d.wait_passes(1);
        d
    }

    pub fn pid(&self) -> Pid {
        Pid::from_raw(self.child.id() as i32)
    }

    /// This process's state file (`null` until it has written one).
    pub fn state(&self) -> Value {
        let text = fs::read_to_string(self.root.join("run/irqwise/state.json")).unwrap_or_default();
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if v["pid"].as_u64() == Some(u64::from(self.child.id())) {
            v
        } else {
            Value::Null
        }
    }

    pub fn passes(&self) -> u64 {
        self.state()["passes"].as_u64().unwrap_or(0)
    }

    /// Waits (harness deadline 60 s) until this process has finished `n` passes.
    pub fn wait_passes(&self, n: u64) {
        self.wait(n.saturating_sub(1), &format!("pass {n}"), || true);
    }

    /// Waits (harness deadline 60 s) until a pass after pass `after` satisfies `done`; returns
    /// the state file then.
    pub fn wait(&self, after: u64, what: &str, done: impl Fn() -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let state = self.state();
            if state["passes"].as_u64().unwrap_or(0) > after && done() {
                return state;
            }
            assert!(Instant::now() < deadline, "{what}: not within the deadline; log:\n{}", self.log_text());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn signal(&self, sig: Signal) {
        kill(self.pid(), sig).unwrap();
    }

    /// SIGTERM and wait for the exit (deadline 30 s); the log.
    pub fn stop(mut self) -> String {
        self.signal(Signal::SIGTERM);
        if !self.exits_within(Duration::from_secs(30)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            panic!("no exit within 30 s of SIGTERM (killed); log:\n{}", self.log_text());
        }
        self.log_text()
    }

    /// Whether the process exits within `patience`.
    fn exits_within(&mut self, patience: Duration) -> bool {
        let deadline = Instant::now() + patience;
        while self.child.try_wait().unwrap().is_none() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// SIGKILL: nothing restored, the state file left behind.
    pub fn kill(mut self) {
        self.signal(Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // A daemon that does not heed SIGTERM (a failing test) is killed, never waited for forever.
        if let Ok(None) = self.child.try_wait() {
            let _ = kill(self.pid(), Signal::SIGTERM);
            if !self.exits_within(Duration::from_secs(30)) {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
        }
    }
}
