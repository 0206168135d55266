//! `irqwise reload --pid PID` (the unit's `ExecReload=`) against the real `irqwise run` on a
//! fixture root: a valid configuration is applied by the time the command returns; an invalid
//! one fails with exit 2 and every error on stderr, and the daemon is not signalled; a process
//! that is not irqwise is never signalled. With `run --watch-config`, a change of anything the
//! loader reads reloads without a signal: a ConfigMap's `..data` swap (drop-ins or main file),
//! `conf.d` made after start, made again, renamed into place or a re-pointed link, the main
//! file's link target edited, a drop-in named with a leading dot, a change lost in an inotify
//! queue overflow.

#[path = "common/bin.rs"]
mod bin;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use daemon_fixture::{affinities, nic_root, write_config};
use irqwise::cpuset::CpuSet;
use serde_json::Value;

const PATIENCE: Duration = Duration::from_secs(10);

/// `irqwise run` on `root` with the configuration under `cfg`, stopped (SIGTERM) on drop.
struct Daemon(Child);

impl Daemon {
    fn start(root: &Path, cfg: &Path) -> Daemon {
        Daemon::start_with(root, cfg, &[])
    }

    fn start_with(root: &Path, cfg: &Path, extra: &[&str]) -> Daemon {
        let child = bin::irqwise_with(root, cfg)
            .args(["run", "--log-format", "text"])
            .args(extra)
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
        let pid = nix::unistd::Pid::from_raw(self.pid() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::SIGTERM);
        // A test that stopped it (SIGSTOP) and failed before continuing it.
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::SIGCONT);
        let _ = self.0.wait();
    }
}

fn state(root: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(root.join("run/irqwise/state.json")).ok()?;
    serde_json::from_str(&text).ok()
}

fn reload(root: &Path, cfg: &Path, pid: u32) -> Output {
    bin::irqwise_with(root, cfg).args(["reload", "--pid", &pid.to_string()]).output().unwrap()
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
    let child = bin::irqwise_with(root.path(), cfg.path())
        .arg("run")
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
    // The previous version's directory goes.
    let _ = std::fs::remove_dir_all(dir.join(format!("..2026_12_06_{:02}", version.saturating_sub(1))));
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

/// The CPUs the daemon's last plan gives each IRQ (its state file's `desired` lists).
fn planned(s: &Value) -> Vec<CpuSet> {
    let devices = s["plan"]["devices"].as_array().into_iter().flatten();
    let irqs = devices.flat_map(|d| d["irqs"].as_array().into_iter().flatten());
    irqs.filter_map(|i| i["desired"].as_str()).filter_map(|l| CpuSet::parse_list(l).ok()).collect()
}

/// Whether the last plan keeps every IRQ off the CPUs `off` and puts one on each of `on`.
fn plans(s: &Value, off: &[u32], on: &[u32]) -> bool {
    let plan = planned(s);
    !plan.is_empty()
        && plan.iter().all(|c| off.iter().all(|&cpu| !c.contains(cpu)))
        && on.iter().all(|&cpu| plan.iter().any(|c| c.contains(cpu)))
}

/// `irqwise run --watch-config` on the NIC root, with the configuration under `cfg` banning
/// CPU 4 (checked on the IRQs); returns the daemon and the NIC's IRQs.
fn watching(root: &Path, cfg: &Path) -> (Daemon, Vec<u32>) {
    let irqs = nic_root(root);
    let d = Daemon::start_with(root, cfg, &["--watch-config"]);
    let at_start = affinities(root, &irqs);
    assert!(plans(&state(root).unwrap(), &[4], &[5]), "CPU 4 banned at start: {at_start:?}");
    (d, irqs)
}

/// Waits until the daemon, without a signal, plans with a configuration that bans `banned` and
/// not `freed`, then checks the IRQs are there.
fn wait_bans(root: &Path, irqs: &[u32], banned: u32, freed: u32, after: &str) {
    wait_plan(root, &[banned], &[freed], after);
    let now = affinities(root, irqs);
    assert!(now.values().all(|c| !c.contains(banned)), "{after}: CPU {banned} used: {now:?}");
    assert!(now.values().any(|c| c.contains(freed)), "{after}: CPU {freed} unused: {now:?}");
}

/// Waits until the daemon's last plan keeps the IRQs off `off` and uses each of `on`.
fn wait_plan(root: &Path, off: &[u32], on: &[u32], after: &str) {
    let deadline = Instant::now() + PATIENCE;
    while !state(root).is_some_and(|s| plans(&s, off, on)) {
        let s = state(root).unwrap_or_default();
        assert!(
            Instant::now() < deadline,
            "{after}: no plan off CPUs {off:?} and on {on:?} within {PATIENCE:?}; the last: {:?}, reloads {}, triggers {}",
            planned(&s),
            s["counters"]["reloads"],
            s["triggers"]
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Writes `text` to `path` as an editor does: a temporary name beside it, renamed over it.
fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

const BAN_4: &str = "[global]\nbanned_cpus = \"4\"\n";
const BAN_5: &str = "[global]\nbanned_cpus = \"5\"\n";

#[test]
fn with_watch_config_a_drop_in_directory_made_after_start_is_watched() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_config(cfg.path(), BAN_4);
    let (_d, irqs) = watching(root.path(), cfg.path());
    let dropins = cfg.path().join("etc/irqwise/conf.d");
    std::fs::create_dir(&dropins).unwrap();
    write_atomically(&dropins.join("50-fleet.toml"), BAN_5);
    wait_bans(root.path(), &irqs, 5, 4, "conf.d made after start");
}

#[test]
fn with_watch_config_a_drop_in_directory_removed_and_made_again_is_watched() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let dropins = cfg.path().join("etc/irqwise/conf.d");
    std::fs::create_dir_all(&dropins).unwrap();
    std::fs::write(dropins.join("50-fleet.toml"), BAN_4).unwrap();
    let (_d, irqs) = watching(root.path(), cfg.path());
    std::fs::remove_dir_all(&dropins).unwrap();
    wait_plan(root.path(), &[], &[4, 5], "conf.d removed");
    // Written once the removal is read: its events follow the removal's in the watch's queue.
    write_config(cfg.path(), BAN_5);
    wait_bans(root.path(), &irqs, 5, 4, "the main file written");
    std::fs::create_dir(&dropins).unwrap();
    write_atomically(&dropins.join("50-fleet.toml"), BAN_4);
    wait_bans(root.path(), &irqs, 4, 5, "conf.d made again");
}

#[test]
fn with_watch_config_a_drop_in_directory_renamed_into_place_is_read() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let etc = cfg.path().join("etc/irqwise");
    std::fs::create_dir_all(etc.join("conf.d")).unwrap();
    std::fs::write(etc.join("conf.d/50-fleet.toml"), BAN_4).unwrap();
    let (_d, irqs) = watching(root.path(), cfg.path());
    std::fs::create_dir(etc.join("conf.d.new")).unwrap();
    std::fs::write(etc.join("conf.d.new/50-fleet.toml"), BAN_5).unwrap();
    std::fs::rename(etc.join("conf.d"), etc.join("conf.d.old")).unwrap();
    std::fs::rename(etc.join("conf.d.new"), etc.join("conf.d")).unwrap();
    wait_bans(root.path(), &irqs, 5, 4, "conf.d renamed into place");
    // The directory renamed away is not the configuration's any more.
    std::fs::write(etc.join("conf.d.old/50-fleet.toml"), BAN_4).unwrap();
    std::fs::write(etc.join("conf.d/60-more.toml"), "[global]\nbanned_cpus = \"5,6\"\n").unwrap();
    wait_bans(root.path(), &irqs, 6, 4, "a drop-in added to the new conf.d");
}

#[test]
fn with_watch_config_a_re_pointed_drop_in_directory_link_is_followed() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let etc = cfg.path().join("etc/irqwise");
    for (dir, text) in [("fleet-a", BAN_4), ("fleet-b", BAN_5)] {
        std::fs::create_dir_all(etc.join(dir)).unwrap();
        std::fs::write(etc.join(dir).join("50-fleet.toml"), text).unwrap();
    }
    std::os::unix::fs::symlink("fleet-a", etc.join("conf.d")).unwrap();
    let (_d, irqs) = watching(root.path(), cfg.path());
    // `ln -sfn fleet-b conf.d`, atomically.
    std::os::unix::fs::symlink("fleet-b", etc.join("conf.d.tmp")).unwrap();
    std::fs::rename(etc.join("conf.d.tmp"), etc.join("conf.d")).unwrap();
    wait_bans(root.path(), &irqs, 5, 4, "conf.d re-pointed");
    std::fs::write(etc.join("fleet-b/50-fleet.toml"), BAN_4).unwrap();
    wait_bans(root.path(), &irqs, 4, 5, "a drop-in of the new target edited");
}

#[test]
fn with_watch_config_an_edit_of_the_main_files_link_target_is_seen() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let shared = cfg.path().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::create_dir_all(cfg.path().join("etc/irqwise")).unwrap();
    std::fs::write(shared.join("irqwise.toml"), BAN_4).unwrap();
    std::os::unix::fs::symlink(shared.join("irqwise.toml"), cfg.path().join("etc/irqwise/irqwise.toml")).unwrap();
    let (_d, irqs) = watching(root.path(), cfg.path());
    std::fs::write(shared.join("irqwise.toml"), BAN_5).unwrap();
    wait_bans(root.path(), &irqs, 5, 4, "the main file's target edited in place");
}

#[test]
fn with_watch_config_a_configmap_update_of_the_main_file_reloads() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let etc = cfg.path().join("etc/irqwise");
    configmap_update(&etc, 1, &[("irqwise.toml", BAN_4)]);
    let (_d, irqs) = watching(root.path(), cfg.path());
    configmap_update(&etc, 2, &[("irqwise.toml", BAN_5)]);
    wait_bans(root.path(), &irqs, 5, 4, "the ConfigMap's ..data swapped");
    configmap_update(&etc, 3, &[("irqwise.toml", BAN_4)]);
    wait_bans(root.path(), &irqs, 4, 5, "swapped again");
}

#[test]
fn with_watch_config_a_drop_in_whose_name_starts_with_a_dot_is_watched_as_it_is_read() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_config(cfg.path(), BAN_4);
    let dropins = cfg.path().join("etc/irqwise/conf.d");
    std::fs::create_dir_all(&dropins).unwrap();
    let (_d, irqs) = watching(root.path(), cfg.path());
    std::fs::write(dropins.join(".60-local.toml"), BAN_5).unwrap();
    wait_bans(root.path(), &irqs, 5, 4, "a dot-named drop-in written");
    let s = state(root.path()).unwrap();
    let read = s["config_sources"].as_array().unwrap();
    assert!(read.iter().any(|p| p.as_str().is_some_and(|p| p.ends_with("/.60-local.toml"))), "{s}");
}

#[test]
fn with_watch_config_a_change_lost_in_an_inotify_queue_overflow_is_reloaded() {
    let limit: usize =
        std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events").unwrap().trim().parse().unwrap();
    if limit > 1 << 20 {
        eprintln!("skipped: fs.inotify.max_queued_events is {limit}; overflowing it would take too long");
        return;
    }
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let dropins = cfg.path().join("etc/irqwise/conf.d");
    std::fs::create_dir_all(&dropins).unwrap();
    std::fs::write(dropins.join("50-fleet.toml"), BAN_4).unwrap();
    let (d, irqs) = watching(root.path(), cfg.path());
    let pid = nix::unistd::Pid::from_raw(d.pid() as i32);
    // Stopped, the daemon reads no event: the queue fills with changes of no interest (a write
    // is one MODIFY event; two files written in turn, so that the kernel merges none), and the
    // drop-in's change is lost.
    nix::sys::signal::kill(pid, nix::sys::signal::SIGSTOP).unwrap();
    let mut junk = [".junk-a", ".junk-b"].map(|n| std::fs::File::create(dropins.join(n)).unwrap());
    for i in 0..limit + 100 {
        std::io::Write::write_all(&mut junk[i % 2], b"x").unwrap();
    }
    std::fs::write(dropins.join("50-fleet.toml"), BAN_5).unwrap();
    nix::sys::signal::kill(pid, nix::sys::signal::SIGCONT).unwrap();
    wait_bans(root.path(), &irqs, 5, 4, "the queue overflowed");
}
