//! `irqwise reload --pid PID` (the unit's `ExecReload=`) against the real `irqwise run` on a
//! fixture root: a valid configuration is applied by the time the command returns; an invalid
//! one fails with exit 2 and every error on stderr, and the daemon is not signalled; a process
//! that is not irqwise is never signalled.

#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use daemon_fixture::{affinities, nic_root, write_config};
use serde_json::Value;

const PATIENCE: Duration = Duration::from_secs(10);

/// `irqwise run` on `root` with the configuration under `cfg`, stopped (SIGTERM) on drop.
struct Daemon(Child);

impl Daemon {
    fn start(root: &Path, cfg: &Path) -> Daemon {
        Daemon::start_with(root, cfg, &[])
    }

    fn start_with(root: &Path, cfg: &Path, extra: &[&str]) -> Daemon {
        let child = Command::new(env!("CARGO_BIN_EXE_irqwise"))
            .args(["run", "--log-format", "text"])
            .args(extra)
            .arg("--root")
            .arg(root)
            .arg("--config")
            .arg(cfg)
            .env_remove("NOTIFY_SOCKET")
            .env_remove("WATCHDOG_USEC")
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let d = Daemon(child);
        d.wait_state(root, |s| s["pid"] == d.pid() && s["passes"].as_u64() >= Some(1));
        d
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Waits until the state file satisfies `want`; returns it.
    fn wait_state(&self, root: &Path, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(s) = state(root).filter(|s| want(s)) {
                return s;
            }
            assert!(Instant::now() < deadline, "state file never matched: {:?}", state(root));
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid() as i32), nix::sys::signal::SIGTERM);
        let _ = self.0.wait();
    }
}

fn state(root: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(root.join("run/irqwise/state.json")).ok()?;
    serde_json::from_str(&text).ok()
}

fn reload(root: &Path, cfg: &Path, pid: u32) -> Output {
    Command::new(env!("CARGO_BIN_EXE_irqwise"))
        .arg("--root")
        .arg(root)
        .arg("--config")
        .arg(cfg)
        .args(["reload", "--pid", &pid.to_string()])
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_valid_configuration_is_applied_when_reload_returns() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), "[global]\nbanned_cpus = \"4\"\n");
    let d = Daemon::start(root.path(), cfg.path());
    let before = affinities(root.path(), &irqs);
    assert!(before.values().all(|c| !c.contains(4)), "CPU 4 banned at start: {before:?}");

    write_config(cfg.path(), "[global]\nbanned_cpus = \"5\"\n");
    let out = reload(root.path(), cfg.path(), d.pid());
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    // No waiting here: the command returned only once the daemon had applied the new config.
    let after = affinities(root.path(), &irqs);
    assert!(after.values().all(|c| !c.contains(5)), "CPU 5 banned after the reload: {after:?}");
    assert!(after.values().any(|c| c.contains(4)), "CPU 4 usable again: {after:?}");
    let s = state(root.path()).unwrap();
    assert!(s["triggers"].as_array().unwrap().iter().any(|t| t == "reload"), "{s}");
    assert_eq!(s["config_error"], Value::Null, "{s}");
    assert!(text(&out.stdout).contains(&format!("(pid {}) reloaded", d.pid())), "{}", text(&out.stdout));
}

#[test]
fn an_invalid_configuration_fails_with_every_error_and_the_daemon_is_not_signalled() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), "[global]\nbanned_cpus = \"4\"\n");
    let d = Daemon::start(root.path(), cfg.path());
    let before = affinities(root.path(), &irqs);
    let passes = state(root.path()).unwrap()["passes"].clone();

    // Two files, one error each (a file's parse stops at its first error).
    let dir = cfg.path().join("etc/irqwise/conf.d");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("50-bad.toml"), "[global]\nbanned_cpus = \"5\"\nbanned = 3\n").unwrap();
    std::fs::write(dir.join("60-bad.toml"), "[[device]]\nmatch = { driver = \"ixgbe\" }\nnode = \"zero\"\n").unwrap();
    let out = reload(root.path(), cfg.path(), d.pid());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stdout: {} stderr: {stderr}", text(&out.stdout));
    for at in ["50-bad.toml:3:", "60-bad.toml:3:"] {
        let at = format!("{}/{at}", dir.display());
        assert!(stderr.contains(&at), "no {at} in stderr:\n{stderr}");
    }
    assert!(stderr.contains("not signalled"), "{stderr}");
    assert!(out.stdout.is_empty(), "stdout: {}", text(&out.stdout));

    // Not signalled: no reload pass; still running with the old placement.
    std::thread::sleep(Duration::from_millis(300));
    let s = state(root.path()).unwrap();
    assert_eq!(s["passes"], passes, "the daemon ran a pass: {s}");
    assert_eq!(affinities(root.path(), &irqs), before);
    assert!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(d.pid() as i32), None).is_ok(), "daemon gone");
}

#[test]
fn the_daemon_records_a_rejected_reload_in_its_state_and_clears_it_on_a_good_one() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    write_config(cfg.path(), "");
    let d = Daemon::start(root.path(), cfg.path());
    let pid = nix::unistd::Pid::from_raw(d.pid() as i32);

    // SIGHUP sent by someone else than `irqwise reload`: the daemon checks for itself.
    write_config(cfg.path(), "[global]\nbanned_cpus = \"zero\"\n");
    nix::sys::signal::kill(pid, nix::sys::signal::SIGHUP).unwrap();
    let s = d.wait_state(root.path(), |s| s["passes"].as_u64() >= Some(2));
    let error = s["config_error"].as_str().unwrap_or_default();
    assert!(error.contains("irqwise.toml:2:"), "config_error names file and line: {s}");

    write_config(cfg.path(), "");
    let out = reload(root.path(), cfg.path(), d.pid());
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert_eq!(state(root.path()).unwrap()["config_error"], Value::Null);
}

#[test]
fn a_process_that_is_not_irqwise_is_never_signalled() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    write_config(cfg.path(), "");
    // SIGHUP would end `sleep`: alive afterwards means it was not signalled.
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let out = reload(root.path(), cfg.path(), sleeper.id());
    assert_eq!(out.status.code(), Some(1), "stderr: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("not irqwise"), "{}", text(&out.stderr));
    assert!(sleeper.try_wait().unwrap().is_none(), "sleep was signalled");
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();

    let out = reload(root.path(), cfg.path(), 999_999_999);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", text(&out.stderr));
}

#[test]
fn a_reload_switches_the_log_format_the_configuration_names() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    write_config(cfg.path(), "[global]\nlog_format = \"text\"\n");
    let log_path = root.path().join("daemon.log");
    let child = Command::new(env!("CARGO_BIN_EXE_irqwise"))
        .args(["run", "--root"])
        .arg(root.path())
        .arg("--config")
        .arg(cfg.path())
        .env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC")
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let d = Daemon(child);
    d.wait_state(root.path(), |s| s["pid"] == d.pid() && s["passes"].as_u64() >= Some(1));
    write_config(cfg.path(), "[global]\nlog_format = \"json\"\n");
    let out = reload(root.path(), cfg.path(), d.pid());
    assert!(out.status.success(), "{}", text(&out.stderr));
    drop(d);
    let log = std::fs::read_to_string(&log_path).unwrap();
    let reloaded = log.lines().find(|l| l.contains("configuration reloaded")).unwrap_or_else(|| panic!("{log}"));
    let entry: Value = serde_json::from_str(reloaded).unwrap_or_else(|e| panic!("not JSON ({e}): {reloaded}"));
    assert!(entry["fields"]["message"].as_str().unwrap().contains("configuration reloaded"));
    let first = log.lines().next().unwrap();
    assert!(serde_json::from_str::<Value>(first).is_err(), "before the reload the log was text: {first}");
}

/// What a kubelet does to a ConfigMap volume on each update: the files in a new timestamped
/// directory, a `..data_tmp` link to it renamed over `..data`; the visible names are links
/// through `..data`, made once.
fn configmap_update(dir: &Path, version: u32, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).unwrap();
    let data = format!("..2026_12_06_{version:02}");
    std::fs::create_dir_all(dir.join(&data)).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(&data).join(name), text).unwrap();
    }
    let _ = std::fs::remove_file(dir.join("..data_tmp"));
    std::os::unix::fs::symlink(&data, dir.join("..data_tmp")).unwrap();
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    for (name, _) in files {
        let link = dir.join(name);
        if std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(format!("..data/{name}"), &link).unwrap();
        }
    }
}

#[test]
fn with_watch_config_a_configmap_update_reloads_without_a_signal() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    let dropins = cfg.path().join("etc/irqwise/conf.d");
    configmap_update(&dropins, 1, &[("50-fleet.toml", "[global]\nbanned_cpus = \"4\"\n")]);
    let d = Daemon::start_with(root.path(), cfg.path(), &["--watch-config"]);
    assert!(affinities(root.path(), &irqs).values().all(|c| !c.contains(4)));
    let reloads = |s: &Value| s["counters"]["reloads"]["applied"].as_u64().unwrap_or(0);
    let before = reloads(&state(root.path()).unwrap());

    // The kubelet's swap: only `..data` changes.
    configmap_update(&dropins, 2, &[("50-fleet.toml", "[global]\nbanned_cpus = \"5\"\n")]);
    let s = d.wait_state(root.path(), |s| reloads(s) > before);
    assert!(s["triggers"].as_array().unwrap().iter().any(|t| t == "reload"), "{s}");
    let after = affinities(root.path(), &irqs);
    assert!(after.values().all(|c| !c.contains(5)), "CPU 5 banned after the update: {after:?}");
    assert!(after.values().any(|c| c.contains(4)), "CPU 4 usable again: {after:?}");

    // A bad update is rejected and the last good configuration stays.
    configmap_update(&dropins, 3, &[("50-fleet.toml", "[global]\nbanned_cpus = \"x\"\n")]);
    let s = d.wait_state(root.path(), |s| !s["config_error"].is_null());
    assert!(s["config_error"].as_str().unwrap().contains("50-fleet.toml"), "{s}");
    assert_eq!(affinities(root.path(), &irqs), after);
}

#[test]
fn without_watch_config_a_changed_file_waits_for_a_signal() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), "[global]\nbanned_cpus = \"4\"\n");
    let _d = Daemon::start(root.path(), cfg.path());
    let passes = state(root.path()).unwrap()["passes"].clone();
    write_config(cfg.path(), "[global]\nbanned_cpus = \"5\"\n");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(state(root.path()).unwrap()["passes"], passes, "no pass without the flag");
    assert!(affinities(root.path(), &irqs).values().all(|c| !c.contains(4)));
}
