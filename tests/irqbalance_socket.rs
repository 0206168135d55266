//! irqbalance's control socket spoken by the real daemon (`irqbalance_socket = true`) on a
//! fixture root: `setup` and `stats` in irqbalance's format, `settings cpus` as a claim that
//! moves IRQs off those CPUs in one pass and back after `NULL`, `settings ban irqs`, an unknown
//! command closed without a word, an idle client delaying nobody. The client speaks as
//! irqbalance-ui and intel-lpmd do: one connection per command, no terminator, the reply read to
//! the end. Needs root (the socket answers root peers only); skipped otherwise.

#[path = "common/child_daemon.rs"]
mod child_daemon;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;
#[path = "common/skip.rs"]
mod skip;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use child_daemon::Daemon;
use daemon_fixture::{affinities, nic_root, write_config};

fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|ids| ids.split_whitespace().nth(1)) == Some("0")
}

/// One command on its own connection, as the clients send it; the whole reply.
fn ask(socket: &Path, command: &str) -> String {
    let mut s = UnixStream::connect(socket).unwrap_or_else(|e| panic!("connect {}: {e}", socket.display()));
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(command.as_bytes()).unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap_or_else(|e| panic!("{command:?}: no end of reply: {e}"));
    reply
}

fn socket_of(root: &Path, d: &Daemon) -> PathBuf {
    root.join(format!("run/irqbalance/irqbalance{}.sock", d.pid()))
}

#[test]
fn irqbalances_commands_are_answered_and_settings_take_effect() {
    let test = "irqbalances_commands_are_answered_and_settings_take_effect";
    if !is_root() {
        return skip::skip(test, "the socket answers root peers only");
    }
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), "[global]\nirqbalance_socket = true\nrestore_on_exit = true\n");
    let d = Daemon::start(root.path(), cfg.path(), root.path().join("daemon.log"));
    let socket = socket_of(root.path(), &d);
    assert!(socket.exists(), "no socket; log:\n{}", d.log_text());

    assert_eq!(ask(&socket, "setup"), "SLEEP 10 BANNED 00000000");
    let stats = ask(&socket, "stats");
    assert!(stats.starts_with("TYPE 3 NUMBER -1 LOAD 0 SAVE_MODE 0 TYPE 3 NUMBER 0 "), "{stats}");
    for irq in &irqs[..8] {
        assert!(stats.contains(&format!("IRQ {irq} LOAD 0 DIFF 0 CLASS 4 ")), "queue IRQ {irq} missing: {stats}");
    }
    assert_eq!(stats.matches("TYPE 0 ").count(), 16, "every CPU once: {stats}");

    // intel-lpmd's probe: connect, close; then an idle client: neither delays an answer.
    drop(UnixStream::connect(&socket).unwrap());
    let _idle = UnixStream::connect(&socket).unwrap();
    assert_eq!(ask(&socket, "bogus"), "", "an unknown command: closed without a word");
    assert_eq!(ask(&socket, "settings sleep  5"), "");
    assert_eq!(ask(&socket, "setup"), "SLEEP 5 BANNED 00000000");

    // settings cpus: the queues leave CPUs 4-7 within one pass (the claim's), as intel-lpmd asks.
    let before = affinities(root.path(), &irqs);
    let passes = d.passes();
    assert_eq!(ask(&socket, "settings cpus 4,5,6,7"), "");
    let away = |list: &str| {
        let free = irqwise::cpuset::CpuSet::parse_list(list).unwrap();
        affinities(root.path(), &irqs).values().all(|c| !c.intersects(&free))
    };
    d.wait(passes, "queues off CPUs 4-7", || away("4-7"));
    let claim = std::fs::read_to_string(root.path().join("run/irqwise/claims/irqbalance-socket")).unwrap();
    assert!(claim.contains("cpus=4-7"), "{claim}");
    assert_eq!(ask(&socket, "setup"), "SLEEP 5 BANNED 000000f0");
    let stats = ask(&socket, "stats");
    assert!(!stats.contains("TYPE 0 NUMBER 4 ") && stats.matches("TYPE 0 ").count() == 12, "{stats}");

    // The next command replaces it; NULL gives the CPUs back.
    let passes = d.passes();
    assert_eq!(ask(&socket, "settings cpus NULL"), "");
    d.wait(passes, "queues back home", || affinities(root.path(), &irqs) == before);
    assert!(!root.path().join("run/irqwise/claims/irqbalance-socket").exists());

    // settings ban irqs: that IRQ is left as it is.
    let banned = irqs[0];
    assert_eq!(ask(&socket, &format!("settings ban irqs  {banned}")), "");
    assert_eq!(ask(&socket, "setup"), format!("SLEEP 5 IRQ {banned} LOAD 0 DIFF 0 CLASS 0 BANNED 00000000"));
    assert!(!ask(&socket, "stats").contains(&format!("IRQ {banned} ")));
    assert_eq!(ask(&socket, "settings ban irqs  NONE"), "");
    assert_eq!(ask(&socket, "setup"), "SLEEP 5 BANNED 00000000", "NONE with the UI's two spaces bans nothing");

    let log = d.stop();
    assert!(!socket.exists(), "the socket file goes at stop");
    assert!(log.contains("settings sleep 5 accepted; it has no effect"), "{log}");
    assert!(log.contains("unknown command \"bogus\""), "{log}");
    assert_eq!(log.matches("has no effect").count(), 1, "said once: {log}");
}

#[test]
fn no_socket_unless_asked_and_never_beside_irqbalance() {
    let test = "no_socket_unless_asked_and_never_beside_irqbalance";
    if !is_root() {
        return skip::skip(test, "the socket answers root peers only");
    }
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    let d = Daemon::start(root.path(), cfg.path(), root.path().join("daemon.log"));
    assert!(!socket_of(root.path(), &d).exists(), "opt-in");
    d.stop();
    // irqbalance runs (as /proc shows it): the socket is its own.
    daemon_fixture::process(root.path(), 777, 0, "irqbalance", b"/usr/sbin/irqbalance\0--foreground\0");
    write_config(cfg.path(), "[global]\nirqbalance_socket = true\n");
    let d = Daemon::start(root.path(), cfg.path(), root.path().join("daemon2.log"));
    assert!(!socket_of(root.path(), &d).exists());
    let log = d.stop();
    assert!(log.contains("irqbalance (pid 777) is running: its socket is its own"), "{log}");
}

#[path = "common/apt.rs"]
mod apt;

/// Runs `tmux -S SOCKET ARGS`.
fn tmux(socket: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("tmux").arg("-S").arg(socket).args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The screen of the tmux session, polled until it holds every word of `want` (10 s).
fn screen_with(socket: &Path, want: &[&str]) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let screen = tmux(socket, &["capture-pane", "-p", "-t", "ui"]);
        if want.iter().all(|w| screen.contains(w)) || std::time::Instant::now() > deadline {
            return screen;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn debians_irqbalance_ui_shows_irqwises_cpus_and_irqs_and_bans_a_cpu() {
    let test = "debians_irqbalance_ui_shows_irqwises_cpus_and_irqs_and_bans_a_cpu";
    if !is_root() {
        return skip::skip(test, "irqbalance-ui and the socket need root");
    }
    if !apt::ensure(&["tmux", "irqbalance-ui", "unshare"], &["tmux", "irqbalance", "util-linux"]) {
        return skip::skip(test, "tmux or irqbalance-ui cannot be installed");
    }
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), "[global]\nirqbalance_socket = true\n");
    let d = Daemon::start(root.path(), cfg.path(), root.path().join("daemon.log"));
    // The UI looks in /run/irqbalance: in a private mount namespace, that is the root's.
    let dir = root.path().join("run/irqbalance");
    let tmux_socket = root.path().join("tmux.sock");
    let ui = format!(
        "mount -t tmpfs none /run && mkdir /run/irqbalance && mount --bind {} /run/irqbalance && TERM=xterm exec irqbalance-ui {}",
        dir.display(),
        d.pid()
    );
    let session = ["new-session", "-d", "-s", "ui", "-x", "200", "-y", "50", "unshare", "-m", "sh", "-c", &ui];
    tmux(&tmux_socket, &session);
    let screen = screen_with(&tmux_socket, &["CPU, number 15", &format!("IRQ {},", irqs[7])]);
    let kill = || tmux(&tmux_socket, &["kill-server"]);
    for want in [
        "Banned CPU numbers: None",
        "NUMA NODE, number 0",
        "NUMA NODE, number 1",
        "CPU PACKAGE, number",
        "CACHE DOMAIN, number",
        "CPU, number 15",
    ] {
        assert!(screen.contains(want), "{want:?} not on the screen:\n{screen}\nlog:\n{}", d.log_text());
    }
    for irq in &irqs[..8] {
        assert!(screen.contains(&format!("IRQ {irq}, IRQs since last rebalance")), "IRQ {irq}:\n{screen}");
    }
    // F4, then ban CPU 0 as an operator would: `c`, Enter on the first CPU, `s` to save.
    let passes = d.passes();
    tmux(&tmux_socket, &["send-keys", "-t", "ui", "F4"]);
    let settings = screen_with(&tmux_socket, &["Current sleep interval between rebalancing: 10", "CPU 0"]);
    assert!(settings.contains("IS BANNED"), "{settings}");
    for keys in [&["c"][..], &["Enter"], &["s"]] {
        let mut args = vec!["send-keys", "-t", "ui"];
        args.extend_from_slice(keys);
        tmux(&tmux_socket, &args);
        std::thread::sleep(Duration::from_millis(300));
    }
    d.wait(passes, "the UI's ban of CPU 0 claimed", || {
        root.path().join("run/irqwise/claims/irqbalance-socket").exists()
    });
    let claim = std::fs::read_to_string(root.path().join("run/irqwise/claims/irqbalance-socket")).unwrap();
    tmux(&tmux_socket, &["send-keys", "-t", "ui", "F3"]);
    let tree = screen_with(&tmux_socket, &["Banned CPU numbers: 0"]);
    kill();
    assert!(claim.contains("cpus=0\n"), "{claim}");
    assert!(tree.contains("Banned CPU numbers: 0"), "{tree}");
    assert!(!tree.contains("CPU, number 0,"), "a banned CPU leaves the tree:\n{tree}");
    d.stop();
}
