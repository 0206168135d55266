//! Hostile conditions on the way out: a stdout nobody reads or that is full, names whose bytes
//! would break JSON or a terminal, writes that a symlink or a `..` would take out of the root, and
//! a second daemon on the same root. Each class with several inputs, through the real binary.

#[path = "common/acceptance.rs"]
mod acceptance;
#[path = "common/child_daemon.rs"]
mod child_daemon;

use std::fs;
use std::os::fd::OwnedFd;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use acceptance::fixture::{FixtureRoot, NamingScheme};
use acceptance::*;
use serde_json::Value;

const NIC: &str = "0000:81:00.0";
const NVME: &str = "0000:82:00.0";

/// A 2-node, 32-CPU machine with an 8-queue ice NIC and a managed NVMe.
fn machine() -> tempfile::TempDir {
    let dir = two_node_root("6.1.0");
    FixtureRoot::at(dir.path()).nic(NIC, "ice", "eth0", Some(1), 8, NamingScheme::IceTxRx).nvme(
        NVME,
        "nvme0",
        Some(0),
        4,
        true,
        false,
    );
    dir
}

/// The read end of a pipe already closed, and its write end: every write to it fails (EPIPE).
fn closed_pipe() -> OwnedFd {
    let (read, write) = nix::unistd::pipe().unwrap();
    drop(read);
    write
}

/// `irqwise --root R --config C ARGS` with stdout sent to `out`, under a 60 s deadline (a second
/// daemon that does not exit fails the test instead of hanging it).
fn run_to(root: &Path, cfg: &Path, args: &[&str], out: Stdio) -> Output {
    Command::new("timeout")
        .arg("60")
        .arg(bin::BIN)
        .arg("--root")
        .arg(root)
        .arg("--config")
        .arg(cfg)
        .args(args)
        .stdout(out)
        .output()
        .unwrap()
}

/// Commands that print, each in its text and JSON form.
const PRINTING: [&[&str]; 9] = [
    &["plan"],
    &["plan", "--json"],
    &["topology"],
    &["topology", "--json"],
    &["spread", "numa", "--node", "0"],
    &["spread", "groups", "--groups", "4", "--json"],
    &["apply", "--dry-run"],
    &["check-config", "--json"],
    &["report", "--interval", "1ms", "--json"],
];

#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let (dir, cfg) = (machine(), empty_config());
    for args in PRINTING {
        let out = run_to(dir.path(), cfg.path(), args, Stdio::from(closed_pipe()));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?} said something on a closed pipe: {stderr}");
    }
}

#[test]
fn a_full_stdout_is_one_clear_error() {
    let (dir, cfg) = (machine(), empty_config());
    for args in PRINTING {
        let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = run_to(dir.path(), cfg.path(), args, Stdio::from(full));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        let line = stderr.lines().last().unwrap_or_default();
        assert!(line.starts_with("irqwise: cannot write to standard output: "), "{args:?}: {stderr}");
        assert!(line.contains("No space left on device"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// Rewrites IRQ `irq`'s action name in both name sources.
fn rename_irq(root: &Path, irq: u32, name: &str) {
    fs::write(root.join(format!("sys/kernel/irq/{irq}/actions")), format!("{name}\n")).unwrap();
    let text = fs::read_to_string(root.join("proc/interrupts")).unwrap();
    let label = format!("{irq:>4}:");
    let out: Vec<String> = text
        .lines()
        .map(|l| match l.strip_prefix(&label) {
            Some(_) => format!("{}{name}", &l[..l.rfind("  ").unwrap() + 2]),
            None => l.to_string(),
        })
        .collect();
    fs::write(root.join("proc/interrupts"), out.join("\n") + "\n").unwrap();
}

#[test]
fn json_stays_valid_whatever_bytes_names_and_versions_hold() {
    let (dir, cfg) = (machine(), empty_config());
    let before = plan_json(dir.path(), cfg.path());
    let irqs: Vec<u32> = irqs(device(&before, NIC)).iter().map(|p| p["irq"].as_u64().unwrap() as u32).collect();
    assert!(irqs.len() >= 4, "{before}");
    // DEL, C1 controls (NEL, CSI), a C0 escape, a quote and a backslash, in every kind of name.
    let names = ["ice-\u{7f}-misc", "eth0-TxRx-\u{85}0", "x\u{9b}2J\u{1b}]0;t\u{7}", "q\"\\\u{9f}"];
    for (irq, name) in irqs.iter().zip(names) {
        rename_irq(dir.path(), *irq, name);
    }
    write_file(dir.path(), "proc/sys/kernel/osrelease", "6.1.0-\u{7f}\u{80}dirty\n");
    let ifdir = dir.path().join(format!("sys/devices/pci0000:81/{NIC}/net"));
    fs::rename(ifdir.join("eth0"), ifdir.join("eth\u{7f}0")).unwrap();
    let drv = dir.path().join(format!("sys/devices/pci0000:81/{NIC}/driver"));
    let target = fs::read_link(&drv).unwrap();
    fs::remove_file(&drv).unwrap();
    symlink(target.with_file_name("ic\u{85}e"), &drv).unwrap();
    for args in [
        &["plan", "--json"][..],
        &["plan", "--json", "--changed"],
        &["apply", "--dry-run", "--json"],
        &["topology", "--json"],
        &["report", "--interval", "1ms", "--json"],
        &["check-config", "--json"],
    ] {
        let out = run_to(dir.path(), cfg.path(), args, Stdio::piped());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{args:?}: a raw control character: {text:?}");
        let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {text}"));
        assert_eq!(doc["schema"], 2, "{args:?}");
        if args[0] == "plan" && args.len() == 2 {
            let all = doc.to_string();
            for name in names {
                let escaped = serde_json::to_string(name).unwrap();
                assert!(all.contains(&escaped[1..escaped.len() - 1]) || all.contains(name), "{name:?} lost: {all}");
            }
            assert_eq!(doc["kernel"], "6.1.0-\u{7f}\u{80}dirty", "the JSON holds the bytes the machine holds");
        }
    }
    // The daemon's state file as `status --json` shows it.
    let out = run_to(dir.path(), cfg.path(), &["--log-format", "text", "run", "--once"], Stdio::piped());
    assert!(out.status.code().is_some(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run_to(dir.path(), cfg.path(), &["status", "--json"], Stdio::piped());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text:?}");
    let state: Value = serde_json::from_str(&text).unwrap();
    assert!(state.to_string().contains("ice-\\u007f-misc") || state.to_string().contains("ice-\u{7f}-misc"));
}

#[test]
fn dot_dot_in_metrics_file_is_a_configuration_error() {
    let dir = machine();
    for value in ["/../outside/m.prom", "/var/lib/../../../x.prom", "/var/./lib/m.prom", "/a/b/../m.prom"] {
        let cfg = config_with(&format!("[global]\nmetrics_file = \"{value}\"\n"));
        let out = run_to(dir.path(), cfg.path(), &["check-config"], Stdio::piped());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value}: {stderr}");
        assert!(stderr.contains("metrics_file") && stderr.contains("without . or .."), "{value}: {stderr}");
    }
    let cfg = config_with("[global]\nmetrics_file = \"/var/lib/prometheus/node-exporter/irqwise.prom\"\n");
    assert_eq!(run_to(dir.path(), cfg.path(), &["check-config"], Stdio::piped()).status.code(), Some(0));
}

/// The files of `dir`, recursively, as relative paths.
fn files_below(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(files_below(&p).into_iter().map(|f| format!("{}/{f}", e.file_name().to_string_lossy())));
        } else {
            out.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    out
}

#[test]
fn no_daemon_write_lands_outside_the_root_whatever_links_the_root_holds() {
    let outside = tempfile::tempdir().unwrap();
    let cfg = config_with("[global]\nmetrics_file = \"/var/lib/node-exporter/irqwise.prom\"\n");
    // `run` a link out of the root; `run/irqwise` a link out; the metrics directory a link out.
    let cases: [(&str, &str); 3] = [("run", ""), ("run/irqwise", ""), ("var/lib/node-exporter", "")];
    for (link, _) in cases {
        let dir = machine();
        let at = dir.path().join(link);
        fs::create_dir_all(at.parent().unwrap()).unwrap();
        symlink(outside.path(), &at).unwrap();
        let out = run_to(dir.path(), cfg.path(), &["--log-format", "text", "run", "--once"], Stdio::piped());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.code().is_some(), "{link}: {stderr}");
        assert!(files_below(outside.path()).is_empty(), "{link}: written outside: {:?}", files_below(outside.path()));
        assert!(stderr.contains("leaves the root or goes through a symlink"), "{link}: said why: {stderr}");
    }
}

#[test]
fn a_second_daemon_on_one_root_exits_naming_the_first() {
    let (dir, cfg) = (machine(), empty_config());
    let log = tempfile::NamedTempFile::new().unwrap();
    let first = child_daemon::Daemon::start(dir.path(), cfg.path(), log.path().to_path_buf());
    let pid = first.pid().as_raw();
    for args in [&["run"][..], &["run", "--once"]] {
        let mut full = vec!["--log-format", "text"];
        full.extend_from_slice(args);
        let out = run_to(dir.path(), cfg.path(), &full, Stdio::piped());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {stderr}");
        assert!(stderr.contains(&format!("held by pid {pid}")), "{args:?}: {stderr}");
    }
    first.stop();
    let out = run_to(dir.path(), cfg.path(), &["--log-format", "text", "run", "--once"], Stdio::piped());
    assert_eq!(out.status.code(), Some(0), "the lock is free once the first stopped");
}

/// How many log lines of `log` contain `words`.
fn lines_with(log: &str, words: &str) -> usize {
    log.lines().filter(|l| l.contains(words)).count()
}

#[test]
fn the_daemons_own_files_it_cannot_write_are_said_once_each_with_what_that_costs() {
    let (dir, cfg) = (machine(), empty_config());
    // A directory where the topology memory and the record of original masks go: no rename can
    // replace it.
    for file in ["topology.json", "originals.json"] {
        fs::create_dir_all(dir.path().join("run/irqwise").join(file).join("x")).unwrap();
    }
    let log = tempfile::NamedTempFile::new().unwrap();
    let d = child_daemon::Daemon::start(dir.path(), cfg.path(), log.path().to_path_buf());
    // A reload's pass reads and plans everything again.
    d.signal(nix::sys::signal::Signal::SIGHUP);
    d.wait_passes(2);
    let log = d.stop();
    let memory = "a restart while CPUs are offline may move queues";
    let originals = "restore_on_exit would not know these IRQs' masks after a restart";
    assert_eq!(lines_with(&log, memory), 1, "the topology memory unsaved, said once:\n{log}");
    assert_eq!(lines_with(&log, originals), 1, "the original masks unsaved, said once:\n{log}");
    let said = log.lines().find(|l| l.contains(memory)).unwrap_or("");
    assert!(said.contains("WARN") && said.contains("topology.json"), "names the file, at WARN: {said}");
}
