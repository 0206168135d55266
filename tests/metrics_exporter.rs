//! The metrics file read by the real Prometheus tools (root, CI): `promtool check metrics`
//! (Debian package `prometheus`) lints it, and the real `prometheus-node-exporter` (only its
//! textfile collector, on a free loopback port) serves it over HTTP with
//! `node_textfile_scrape_error 0` and every irqwise series at the value the plan and the
//! daemon's passes imply. Both packages are installed with apt-get when missing.
//!
//! The daemon is the real binary on a fixture root: `run --once`, then `run` with a SIGHUP
//! after two IRQs drifted, so the counters seen over HTTP span a reload. A device whose name
//! holds a double quote and a backslash checks the label escaping end to end; a write that fails
//! (its `smp_affinity_list` is a symlink, which irqwise never writes through) fills the failure
//! series.

#[path = "common/apt.rs"]
mod apt;
#[path = "common/bin.rs"]
mod bin;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;
#[path = "common/skip.rs"]
mod skip;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use daemon_fixture::{nic_root, set_affinity, write_config, NIC};
use fixture::{FixtureRoot, NamingScheme};
use irqwise::cpuset::CpuSet;

const PATIENCE: Duration = Duration::from_secs(20);
/// A second NIC whose interface name needs escaping in a label value.
const ODD: &str = "0000:82:00.0";
const ODD_NAME: &str = "we\"ird\\1";

/// `promtool` and `prometheus-node-exporter`, installed with apt-get (no recommends) when
/// missing and root; `false` when they are missing and cannot be installed here.
fn tools_present() -> bool {
    apt::ensure(&["promtool", "prometheus-node-exporter"], &["prometheus", "prometheus-node-exporter"])
}

/// A child process killed when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn irqwise(root: &Path, cfg: &Path) -> Command {
    let mut cmd = bin::irqwise_with(root, cfg);
    cmd.args(["--log-format", "text"]);
    cmd
}

/// One sample line of the text format: name, labels (escapes undone), value.
fn parse_sample(line: &str) -> Option<(String, BTreeMap<String, String>, f64)> {
    let name_end = line.find(['{', ' '])?;
    let name = line[..name_end].to_string();
    let mut labels = BTreeMap::new();
    let mut rest = &line[name_end..];
    if let Some(inner) = rest.strip_prefix('{') {
        let mut chars = inner.char_indices();
        let mut key = String::new();
        loop {
            let (i, c) = chars.next()?;
            match c {
                '}' => {
                    rest = &inner[i + 1..];
                    break;
                }
                ',' => {}
                '=' => {
                    chars.next().filter(|(_, q)| *q == '"')?;
                    let mut value = String::new();
                    loop {
                        match chars.next()?.1 {
                            '\\' => match chars.next()?.1 {
                                'n' => value.push('\n'),
                                other => value.push(other),
                            },
                            '"' => break,
                            other => value.push(other),
                        }
                    }
                    labels.insert(std::mem::take(&mut key), value);
                }
                c => key.push(c),
            }
        }
    }
    let value = rest.split_whitespace().next()?.parse().ok()?;
    Some((name, labels, value))
}

/// Every sample of an exposition text.
fn samples(text: &str) -> Vec<(String, BTreeMap<String, String>, f64)> {
    text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).filter_map(parse_sample).collect()
}

/// The value of the one sample of `name` whose labels include all of `labels`.
fn get(all: &[(String, BTreeMap<String, String>, f64)], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let found: Vec<f64> = all
        .iter()
        .filter(|(n, l, _)| n == name && labels.iter().all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v)))
        .map(|(_, _, v)| *v)
        .collect();
    assert!(found.len() <= 1, "{name} {labels:?} matches {} samples", found.len());
    found.first().copied()
}

/// `GET /metrics` on 127.0.0.1:`port`, the body; `None` while nothing answers.
fn scrape(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut response = String::new();
    s.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.").then_some(())?;
    head.lines().next().filter(|l| l.contains(" 200 "))?;
    Some(body.to_string())
}

/// Starts node_exporter with only the textfile collector on `dir`, on a free loopback port
/// (asked from the kernel, then handed over; retried if someone took it in between).
fn node_exporter(dir: &Path) -> (Killed, u16) {
    for _ in 0..5 {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("prometheus-node-exporter")
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--collector.disable-defaults")
            .arg("--collector.textfile")
            .arg(format!("--collector.textfile.directory={}", dir.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start prometheus-node-exporter");
        let mut child = Killed(child);
        let start = Instant::now();
        while start.elapsed() < PATIENCE {
            if scrape(port).is_some() {
                return (child, port);
            }
            if child.0.try_wait().unwrap().is_some() {
                break; // the port was taken after all: try another
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut err = String::new();
        let _ = child.0.kill();
        if let Some(mut e) = child.0.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        eprintln!("node_exporter on port {port} did not serve: {err}");
    }
    panic!("node_exporter could not be started");
}

/// Waits until the file holds a sample for which `ready` holds; its samples.
fn wait_for(path: &Path, ready: impl Fn(&[(String, BTreeMap<String, String>, f64)]) -> bool) -> String {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if ready(&samples(&text)) {
                return text;
            }
        }
        assert!(start.elapsed() < PATIENCE, "{} never got there", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The fixture: the daemon tests' 8-queue ixgbe NIC `eth1` on node 1 (9 IRQs), a second
/// 2-queue ixgbe NIC named `we"ird\1` (3 IRQs), whose queue 1 cannot be written. Returns
/// (eth1's IRQs, the odd NIC's IRQs).
fn machine(root: &Path) -> (Vec<u32>, Vec<u32>) {
    let eth1 = nic_root(root);
    let mut fx = FixtureRoot::at(root);
    fx.nic(ODD, "ixgbe", ODD_NAME, Some(0), 2, NamingScheme::TxRx);
    let odd = fx.irqs_of(ODD).to_vec();
    // A symlink where the kernel has a file: readable, but irqwise never writes through one.
    let dir = root.join(format!("proc/irq/{}", odd[1]));
    std::fs::rename(dir.join("smp_affinity_list"), dir.join("real_smp_affinity_list")).unwrap();
    std::os::unix::fs::symlink("real_smp_affinity_list", dir.join("smp_affinity_list")).unwrap();
    (eth1, odd)
}

#[test]
fn promtool_and_node_exporter_read_the_metrics_file() {
    if !tools_present() {
        skip::skip(
            "promtool_and_node_exporter_read_the_metrics_file",
            "promtool and prometheus-node-exporter are missing and installing them needs root (CI runs as root)",
        );
        return;
    }
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (eth1, odd) = machine(root.path());
    let textfiles = root.path().join("textfile");
    std::fs::create_dir(&textfiles).unwrap();
    // Below --root, like every path of the daemon.
    write_config(cfg.path(), "[global]\nmetrics_file = \"/textfile/irqwise.prom\"\n");
    let prom: PathBuf = textfiles.join("irqwise.prom");

    // 1. One pass: 11 writes succeed, 1 fails (exit 1), the file passes promtool's lint.
    let once = irqwise(root.path(), cfg.path()).args(["run", "--once"]).output().unwrap();
    assert_eq!(once.status.code(), Some(1), "a write failed: {}", String::from_utf8_lossy(&once.stderr));
    let text = std::fs::read_to_string(&prom).unwrap();
    let lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&prom).unwrap())
        .output()
        .unwrap();
    assert!(
        lint.status.success() && lint.stdout.is_empty() && lint.stderr.is_empty(),
        "promtool check metrics:\n{}{}\n{text}",
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr)
    );
    let s = samples(&text);
    assert_eq!(get(&s, "irqwise_passes_total", &[("trigger", "once")]), Some(1.0));
    assert_eq!(get(&s, "irqwise_writes_total", &[("result", "written")]), Some(11.0), "{text}");
    assert_eq!(get(&s, "irqwise_writes_total", &[("result", "failed")]), Some(1.0));

    // 2. The daemon: its first pass finds everything placed but the broken IRQ; two IRQs drift;
    //    SIGHUP; the reload's pass restores them.
    let daemon = irqwise(root.path(), cfg.path()).arg("run").stderr(Stdio::null()).spawn().unwrap();
    let daemon = Killed(daemon);
    let pid = nix::unistd::Pid::from_raw(daemon.0.id() as i32);
    wait_for(&prom, |s| get(s, "irqwise_passes_total", &[("trigger", "start")]) == Some(1.0));
    let all = CpuSet::parse_list("0-15").unwrap();
    set_affinity(root.path(), eth1[1], &all);
    set_affinity(root.path(), eth1[7], &all);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    let text = wait_for(&prom, |s| get(s, "irqwise_passes_total", &[("trigger", "reload")]) == Some(1.0));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    drop(daemon);

    // 3. node_exporter serves exactly that file.
    let (_exporter, port) = node_exporter(&textfiles);
    let body = scrape(port).expect("scrape");
    let m = samples(&body);
    assert_eq!(get(&m, "node_textfile_scrape_error", &[]), Some(0.0), "{body}");
    let ours = samples(&text);
    for (name, labels, value) in &ours {
        let l: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(get(&m, name, &l), Some(*value), "{name}{labels:?} over HTTP");
    }
    assert_eq!(get(&m, "irqwise_build_info", &[("version", env!("CARGO_PKG_VERSION"))]), Some(1.0));
    // The daemon's own counters: one start and one reload pass, each with its writes.
    assert_eq!(get(&m, "irqwise_passes_total", &[("trigger", "start")]), Some(1.0));
    assert_eq!(get(&m, "irqwise_passes_total", &[("trigger", "reload")]), Some(1.0));
    assert_eq!(get(&m, "irqwise_config_reloads_total", &[("result", "applied")]), Some(1.0));
    assert_eq!(get(&m, "irqwise_writes_total", &[("result", "written")]), Some(2.0), "the two drifted IRQs");
    // The broken IRQ fails once per pass: the start's, the reload's and any other a slow machine
    // ran between them (a backoff retry, a recheck), as many as the state file counts.
    let passes = state_passes(root.path()) as f64;
    let failed = get(&m, "irqwise_writes_total", &[("result", "failed")]);
    assert!(
        failed.is_some_and(|f| (2.0..=passes).contains(&f)),
        "the broken IRQ, per pass: {failed:?} in {passes} passes"
    );
    assert_eq!(get(&m, "irqwise_write_failures_total", &[("class", "invalid")]), failed);
    let eth1_labels = [("device", "eth1"), ("driver", "ixgbe"), ("class", "nic")];
    assert_eq!(get(&m, "irqwise_drift_corrections_total", &eth1_labels), Some(2.0));
    let state = |dev: &[(&'static str, &'static str)], st: &'static str| {
        let mut l = dev.to_vec();
        l.push(("state", st));
        get(&m, "irqwise_irqs", &l)
    };
    // eth1: 9 IRQs written by `run --once`, i.e. before this daemon: already right ("kept")
    // except the two it restored ("placed").
    assert_eq!(state(&eth1_labels, "placed"), Some(2.0));
    assert_eq!(state(&eth1_labels, "kept"), Some(eth1.len() as f64 - 2.0));
    let odd_labels = [("device", ODD_NAME), ("driver", "ixgbe"), ("class", "nic")];
    assert_eq!(state(&odd_labels, "failed"), Some(1.0), "{body}");
    assert_eq!(state(&odd_labels, "kept"), Some(odd.len() as f64 - 1.0));
    assert_eq!(get(&m, "irqwise_managed_mismatched_irqs", &odd_labels), Some(0.0));
    assert_eq!(get(&m, "irqwise_last_pass_success", &[]), Some(1.0));
    assert!(get(&m, "irqwise_last_pass_duration_seconds", &[]).is_some_and(|d| d >= 0.0));
    // The pass read the machine: at least its CPU lists and every IRQ's mask.
    assert!(get(&m, "irqwise_last_pass_files_opened", &[]).is_some_and(|n| n >= (eth1.len() + odd.len()) as f64));
    let _ = NIC;
}

/// How many passes the daemon's state file counts (0 without one).
fn state_passes(root: &std::path::Path) -> u64 {
    let text = std::fs::read_to_string(root.join("run/irqwise/state.json")).unwrap_or_default();
    serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| v["passes"].as_u64()).unwrap_or(0)
}
