//! The real `irqwise run` speaking the sd_notify protocol to a socket bound by the test:
//! READY=1 (with STATUS) → WATCHDOG=1… → on SIGHUP RELOADING=1 + MONOTONIC_USEC → READY=1 → on
//! SIGTERM STOPPING=1, exit 0; with a valid and with an invalid config on reload.

#[path = "common/bin.rs"]
mod bin;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

use std::io::Read;
use std::os::unix::net::UnixDatagram;
use std::process::{Child, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use daemon_fixture::{affinities, nic_root, write_config};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

const PATIENCE: Duration = Duration::from_secs(10);

struct Daemon {
    child: Child,
    messages: mpsc::Receiver<String>,
    seen: Vec<String>,
    stderr: Arc<Mutex<String>>,
    _dir: tempfile::TempDir,
}

impl Daemon {
    fn start(root: &std::path::Path, cfg: &std::path::Path) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let sock_path = dir.path().join("notify.sock");
        let sock = UnixDatagram::bind(&sock_path).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        let (tx, messages) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            loop {
                match sock.recv(&mut buf) {
                    Ok(n) => {
                        if tx.send(String::from_utf8_lossy(&buf[..n]).into_owned()).is_err() {
                            return;
                        }
                    }
                    Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                    Err(_) => return,
                }
            }
        });
        let mut child = bin::irqwise_with(root, cfg)
            .args(["run", "--log-format", "text"])
            .env("NOTIFY_SOCKET", &sock_path)
            .env("WATCHDOG_USEC", "200000")
            .env_remove("WATCHDOG_PID")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (mut pipe, sink) = (child.stderr.take().unwrap(), stderr.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    return;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Daemon { child, messages, seen: Vec::new(), stderr, _dir: dir }
    }

    /// Collects messages until one satisfies `want`; returns it.
    fn wait_for(&mut self, what: &str, want: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.messages.recv_timeout(left) {
                Ok(m) => {
                    self.seen.push(m.clone());
                    if want(&m) {
                        return m;
                    }
                }
                Err(_) => panic!(
                    "no {what} within {PATIENCE:?}; got {:?}\nstderr:\n{}",
                    self.seen,
                    self.stderr.lock().unwrap()
                ),
            }
        }
    }

    fn signal(&self, sig: Signal) {
        kill(Pid::from_raw(self.child.id() as i32), sig).unwrap();
    }

    fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "no exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn lines(m: &str) -> Vec<&str> {
    m.lines().collect()
}

/// The protocol messages in order, with pure STATUS updates and watchdog pings left out.
fn protocol(seen: &[String]) -> Vec<&'static str> {
    let mut out = Vec::new();
    for m in seen {
        let l = lines(m);
        for (key, name) in [("READY=1", "READY"), ("RELOADING=1", "RELOADING"), ("STOPPING=1", "STOPPING")] {
            if l.contains(&key) {
                out.push(name);
            }
        }
    }
    out
}

fn run_reload_cycle(new_config: &str) -> (Daemon, tempfile::TempDir, tempfile::TempDir, Vec<u32>) {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), "[global]\nbanned_cpus = \"4\"\n");
    let mut d = Daemon::start(root.path(), cfg.path());

    let ready = d.wait_for("READY=1", |m| lines(m).contains(&"READY=1"));
    assert!(ready.lines().any(|l| l.starts_with("STATUS=") && l.contains("IRQs on")), "{ready:?}");
    d.wait_for("WATCHDOG=1", |m| lines(m).contains(&"WATCHDOG=1"));

    write_config(cfg.path(), new_config);
    d.signal(Signal::SIGHUP);
    let reloading = d.wait_for("RELOADING=1", |m| lines(m).contains(&"RELOADING=1"));
    let usec = reloading.lines().find_map(|l| l.strip_prefix("MONOTONIC_USEC=")).expect("MONOTONIC_USEC");
    assert!(usec.parse::<u64>().is_ok_and(|u| u > 0), "{reloading:?}");
    let ready = d.wait_for("READY=1 after reload", |m| lines(m).contains(&"READY=1"));
    assert!(ready.lines().any(|l| l.starts_with("STATUS=")), "{ready:?}");
    (d, root, cfg, irqs)
}

fn stop(mut d: Daemon) -> (Vec<String>, String) {
    d.signal(Signal::SIGTERM);
    d.wait_for("STOPPING=1", |m| lines(m).contains(&"STOPPING=1"));
    let status = d.wait_exit();
    assert_eq!(status.code(), Some(0), "stderr:\n{}", d.stderr.lock().unwrap());
    while let Ok(m) = d.messages.recv_timeout(Duration::from_millis(200)) {
        d.seen.push(m);
    }
    let seen = d.seen.clone();
    let stderr = d.stderr.lock().unwrap().clone();
    (seen, stderr)
}

fn assert_sequence(seen: &[String]) {
    assert_eq!(protocol(seen), ["READY", "RELOADING", "READY", "STOPPING"], "{seen:?}");
    let first_ready = seen.iter().position(|m| lines(m).contains(&"READY=1")).unwrap();
    let reloading = seen.iter().position(|m| lines(m).contains(&"RELOADING=1")).unwrap();
    assert!(
        seen[first_ready..reloading].iter().any(|m| lines(m).contains(&"WATCHDOG=1")),
        "a watchdog ping between READY and RELOADING: {seen:?}"
    );
}

#[test]
fn valid_reload_follows_the_protocol_and_takes_effect() {
    let (d, root, _cfg, irqs) = run_reload_cycle("[global]\nbanned_cpus = \"5\"\n");
    let placed = affinities(root.path(), &irqs);
    assert!(placed.values().all(|c| !c.contains(5)), "the reloaded config applies: {placed:?}");
    assert!(placed.values().any(|c| c.contains(4)), "CPU 4 is no longer banned: {placed:?}");
    let (seen, _) = stop(d);
    assert_sequence(&seen);
}

#[test]
fn invalid_reload_is_reported_with_file_and_line_and_the_daemon_keeps_running() {
    let (d, root, cfg, irqs) = run_reload_cycle("[global]\nbanned_cpus = \"5\"\nbanned = 3\n");
    let placed = affinities(root.path(), &irqs);
    assert!(placed.values().all(|c| !c.contains(4)), "the old config (CPU 4 banned) is kept: {placed:?}");
    assert!(d.child.id() > 0);
    let (seen, stderr) = stop(d);
    assert_sequence(&seen);
    let file_line = format!("{}:3:", cfg.path().join("etc/irqwise/irqwise.toml").display());
    assert!(stderr.contains(&file_line), "no {file_line} in stderr:\n{stderr}");
    assert!(stderr.contains("ERROR"), "{stderr}");
}
