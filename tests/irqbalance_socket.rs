//! irqbalance's control socket spoken by the real daemon (`irqbalance_socket = true`) on a
//! fixture root: `setup` and `stats` in irqbalance's format, `settings cpus` as a claim that
//! moves IRQs off those CPUs in one pass and back after `NULL`, `settings ban irqs`, an unknown
//! command closed without a word, an idle client delaying nobody. The client speaks as
//! irqbalance-ui and intel-lpmd do: one connection per command, no terminator, the reply read to
//! the end. Needs root (the socket answers root peers only); skipped otherwise.

#[path = "common/bin.rs"]
mod bin;
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

/// One command on its own connection, its end said by shutting down the write side (as
/// Firedancer does; irqbalance-ui and intel-lpmd close after a setting); the whole reply.
fn ask(socket: &Path, command: &str) -> String {
    let mut s = UnixStream::connect(socket).unwrap_or_else(|e| panic!("connect {}: {e}", socket.display()));
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(command.as_bytes()).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    read_reply(&mut s, command)
}

/// As irqbalance-ui asks `stats` or `setup` and intel-lpmd sends a setting: one write, the write
/// side left open, the reply read until the daemon closes.
fn ask_side_open(socket: &Path, command: &str) -> String {
    let mut s = UnixStream::connect(socket).unwrap_or_else(|e| panic!("connect {}: {e}", socket.display()));
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(command.as_bytes()).unwrap();
    read_reply(&mut s, command)
}

fn read_reply(s: &mut UnixStream, command: &str) -> String {
    let mut reply = String::new();
    let shown = &command[..command.len().min(40)];
    s.read_to_string(&mut reply).unwrap_or_else(|e| panic!("{shown:?}: no end of reply: {e}"));
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
    assert_eq!(ask_side_open(&socket, "setup"), "SLEEP 10 BANNED 00000000", "answered before the client's end");
    let stats = ask_side_open(&socket, "stats");
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
    assert_eq!(ask_side_open(&socket, "settings cpus 4,5,6,7"), "");
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

/// Connections a hostile client holds open at once: more than the shipped unit's descriptors.
const FLOOD: usize = 1_300;

/// CPU time process `pid` has used (user and system), in /proc's clock ticks (USER_HZ: 100 a
/// second on every architecture Linux builds irqwise for).
fn cpu_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..].split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Raises this process's soft open-file limit to `need` within its hard one; whether it holds.
fn own_descriptors_at_least(need: u64) -> bool {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    soft >= need || (hard >= need && setrlimit(Resource::RLIMIT_NOFILE, need, hard).is_ok())
}

/// Whether no IRQ of `irqs` may run on any CPU of `list`.
fn away(root: &Path, irqs: &[u32], list: &str) -> bool {
    let free = irqwise::cpuset::CpuSet::parse_list(list).unwrap();
    affinities(root, irqs).values().all(|c| !c.intersects(&free))
}

/// A hostile client keeping [`FLOOD`] connections open from a thread, sending nothing: each the
/// daemon closes is opened again at once, until dropped.
struct Flood {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<usize>>,
}

impl Flood {
    fn start(socket: &Path) -> Flood {
        use std::sync::atomic::Ordering::Relaxed;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (socket, halt) = (socket.to_path_buf(), stop.clone());
        let open = move || {
            let s = UnixStream::connect(&socket).unwrap_or_else(|e| panic!("connect: {e}"));
            s.set_nonblocking(true).unwrap();
            s
        };
        let thread = std::thread::spawn(move || {
            let mut held: Vec<UnixStream> = (0..FLOOD).map(|_| open()).collect();
            let mut opened = FLOOD;
            while !halt.load(Relaxed) {
                for s in &mut held {
                    let mut byte = [0u8; 1];
                    if !matches!(s.read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock) {
                        *s = open();
                        opened += 1;
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            opened
        });
        Flood { stop, thread: Some(thread) }
    }

    /// Stops it (every connection closed); how many connections it opened in all.
    fn end(mut self) -> usize {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().map_or(0, |t| t.join().unwrap())
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn held_connections_under_the_units_descriptor_limit_cost_no_pass_and_no_cpu() {
    let test = "held_connections_under_the_units_descriptor_limit_cost_no_pass_and_no_cpu";
    if !is_root() {
        return skip::skip(test, "the socket serves root peers only");
    }
    if !own_descriptors_at_least(FLOOD as u64 + 256) {
        return skip::skip(test, "this test cannot hold 1,300 connections (its hard open-file limit)");
    }
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), "[global]\nirqbalance_socket = true\n");
    // The shipped unit's limit (systemd/irqwise.service: LimitNOFILE=1088:4096).
    let d = Daemon::start_under(
        &["prlimit", "--nofile=1088:4096"],
        root.path(),
        cfg.path(),
        root.path().join("daemon.log"),
    );
    let socket = socket_of(root.path(), &d);
    let flood = Flood::start(&socket);
    // The connections held: the daemon's CPU time over 2 s stays far below a spinning loop's.
    std::thread::sleep(Duration::from_secs(1));
    let pid = d.pid().as_raw();
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(2));
    let spent = cpu_ticks(pid) - before;
    // What the daemon keeps open beside the claims' process watches: 64 (src/daemon/descriptors.rs).
    let open = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count();
    eprintln!(
        "with {FLOOD} connections held: daemon CPU time over 2 s {spent} ticks of 10 ms, {open} descriptors open"
    );

    // A claim written meanwhile is placed, and the state file says so.
    let passes = d.passes();
    std::fs::write(root.path().join("run/irqwise/claims/flood-test"), "cpus=4-7\n").unwrap();
    let state =
        d.wait(passes, "queues off CPUs 4-7 while 1,300 connections are held", || away(root.path(), &irqs, "4-7"));
    assert!(state["error"].is_null(), "{state}\n{}", d.log_text());
    assert!(spent <= 50, "{spent} ticks (over 0.5 s of CPU) in 2 s of held connections; log:\n{}", d.log_text());
    assert!(open <= 64, "{open} descriptors open while connections are held: past the daemon's own 64");

    // The flood over, the socket serves again.
    eprintln!("the flood opened {} connections", flood.end());
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let setup = loop {
        let reply = ask(&socket, "setup");
        if !reply.is_empty() || std::time::Instant::now() > deadline {
            break reply;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(setup, "SLEEP 10 BANNED 000000f0", "{}", d.log_text());
    let log = d.stop();
    assert_eq!(log.matches("connections in service").count(), 1, "the full house said once:\n{log}");
}

#[test]
fn an_accept_refused_for_want_of_descriptors_waits_instead_of_spinning() {
    let test = "an_accept_refused_for_want_of_descriptors_waits_instead_of_spinning";
    if !is_root() {
        return skip::skip(test, "the socket serves root peers only");
    }
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    write_config(cfg.path(), "[global]\nirqbalance_socket = true\n");
    // 28 descriptors, soft and hard: fewer than the daemon's own and 16 connections need.
    let d =
        Daemon::start_under(&["prlimit", "--nofile=28:28"], root.path(), cfg.path(), root.path().join("daemon.log"));
    let socket = socket_of(root.path(), &d);
    let held: Vec<UnixStream> = (0..40).map(|_| UnixStream::connect(&socket).unwrap()).collect();
    std::thread::sleep(Duration::from_secs(1));
    let pid = d.pid().as_raw();
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(2));
    let spent = cpu_ticks(pid) - before;
    eprintln!("with accepts refused (EMFILE): daemon CPU time over 2 s {spent} ticks of 10 ms");
    let log = d.log_text();
    assert!(spent <= 50, "{spent} ticks (over 0.5 s of CPU) in 2 s; log:\n{log}");
    assert_eq!(log.matches("cannot accept a connection").count(), 1, "said once:\n{log}");
    drop(held);
    d.stop();
}

#[test]
fn a_command_is_read_whole_and_one_longer_than_the_cap_is_refused_whole() {
    let test = "a_command_is_read_whole_and_one_longer_than_the_cap_is_refused_whole";
    if !is_root() {
        return skip::skip(test, "the socket serves root peers only");
    }
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), "[global]\nirqbalance_socket = true\n");
    let d = Daemon::start(root.path(), cfg.path(), root.path().join("daemon.log"));
    let socket = socket_of(root.path(), &d);
    let banned = |list: &[u32]| {
        let groups: Vec<String> = list.iter().map(|irq| format!("IRQ {irq} LOAD 0 DIFF 0 CLASS 0 ")).collect();
        format!("SLEEP 10 {}BANNED 00000000", groups.concat())
    };

    // A command over 16 KiB (irqbalance's buffer): `settings ban irqs 100 100 ...`, whose first
    // 16,384 bytes end in ` 10`. Refused whole, never its first part.
    let mut long = String::from("settings ban irqs");
    while long.len() <= 16 * 1024 + 64 {
        long.push_str(" 100");
    }
    let mut s = UnixStream::connect(&socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(long.as_bytes()).and_then(|()| s.shutdown(std::net::Shutdown::Write));
    let mut reply = String::new();
    // The daemon stops reading past the cap and closes: the rest unread, a reset.
    let _ = s.read_to_string(&mut reply);
    assert_eq!(reply, "", "no reply to the long command");
    assert_eq!(ask(&socket, "setup"), banned(&[]), "nothing of the long command applied; log:\n{}", d.log_text());

    // A command in parts (a stream may deliver one so, a client may write so) is read whole.
    let mut s = UnixStream::connect(&socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for part in ["settings ban ", "irqs ", &format!("{} {}", irqs[0], irqs[1])] {
        s.write_all(part.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    s.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(read_reply(&mut s, "settings ban irqs, in parts"), "");
    assert_eq!(ask(&socket, "setup"), banned(&irqs[..2]), "log:\n{}", d.log_text());

    // As intel-lpmd sends a setting: one write, then the reply read until the close, its side
    // left open.
    assert_eq!(ask_side_open(&socket, &format!("settings ban irqs {}", irqs[2])), "");
    assert_eq!(ask(&socket, "setup"), banned(&irqs[2..3]), "log:\n{}", d.log_text());
    let log = d.stop();
    assert!(log.contains("longer than 16384 bytes"), "the refusal names the cap:\n{log}");
}

#[test]
fn a_cpu_list_beyond_the_machine_is_refused_and_the_held_claim_stays() {
    let test = "a_cpu_list_beyond_the_machine_is_refused_and_the_held_claim_stays";
    if !is_root() {
        return skip::skip(test, "the socket serves root peers only");
    }
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), "[global]\nirqbalance_socket = true\n");
    let d = Daemon::start(root.path(), cfg.path(), root.path().join("daemon.log"));
    let socket = socket_of(root.path(), &d);
    let claim_file = root.path().join("run/irqwise/claims/irqbalance-socket");

    let passes = d.passes();
    assert_eq!(ask(&socket, "settings cpus 4-7"), "");
    d.wait(passes, "queues off CPUs 4-7", || away(root.path(), &irqs, "4-7"));
    // 16 CPUs: 12-31 names 16 that do not exist, 20-31 only such.
    for list in ["12-31", "20-31"] {
        assert_eq!(ask(&socket, &format!("settings cpus {list}")), "");
        let claim = std::fs::read_to_string(&claim_file).unwrap_or_default();
        assert!(claim.contains("cpus=4-7\n"), "the held claim stays after {list}: {claim:?}\n{}", d.log_text());
        assert_eq!(ask(&socket, "setup"), "SLEEP 10 BANNED 000000f0");
    }
    // The next pass keeps the queues off 4-7.
    let passes = d.passes();
    assert_eq!(ask(&socket, "settings ban irqs NONE"), "");
    d.wait(passes, "a pass after the refused lists", || true);
    assert!(away(root.path(), &irqs, "4-7"), "{:?}", affinities(root.path(), &irqs));
    let log = d.stop();
    for (list, beyond) in [("12-31", "16-31"), ("20-31", "20-31")] {
        let line = log.lines().find(|l| l.contains(&format!("settings cpus {list}"))).unwrap_or_default();
        assert!(line.contains(beyond) && line.contains("refused"), "{list}: {line:?}\n{log}");
    }
}

#[test]
fn the_socket_directory_is_never_a_link_out_of_the_root_and_only_dead_sockets_go() {
    let test = "the_socket_directory_is_never_a_link_out_of_the_root_and_only_dead_sockets_go";
    if !is_root() {
        return skip::skip(test, "the socket serves root peers only");
    }
    let (root, cfg, outside) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    write_config(cfg.path(), "[global]\nirqbalance_socket = true\n");
    // Pids above the kernel's highest (4194304) never run.
    let dead = |n: u32| format!("irqbalance{}.sock", 2_147_483_000 + n);
    let stale_socket = |path: &Path| drop(std::os::unix::net::UnixListener::bind(path).unwrap());
    std::fs::write(outside.path().join(dead(1)), "not a socket\n").unwrap();
    stale_socket(&outside.path().join(dead(2)));
    std::fs::create_dir_all(root.path().join("run")).unwrap();
    let dir = root.path().join("run/irqbalance");
    std::os::unix::fs::symlink(outside.path(), &dir).unwrap();

    let d = Daemon::start(root.path(), cfg.path(), root.path().join("daemon.log"));
    let mut names: Vec<String> =
        std::fs::read_dir(outside.path()).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into()).collect();
    names.sort();
    assert_eq!(names, vec![dead(1), dead(2)], "nothing removed or created out of the root; log:\n{}", d.log_text());
    let log = d.stop();
    let line = log.lines().find(|l| l.contains("irqbalance socket")).unwrap_or_default();
    assert!(line.contains(&dir.display().to_string()) && line.contains("symlink"), "{line:?}\n{log}");

    // A directory of its own: only the socket of a process that no longer runs goes.
    std::fs::remove_file(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    stale_socket(&dir.join(dead(3)));
    std::fs::write(dir.join(dead(4)), "a file\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join(dead(1)), dir.join(dead(5))).unwrap();
    std::fs::create_dir(dir.join(dead(6))).unwrap();
    let alive = format!("irqbalance{}.sock", std::process::id());
    stale_socket(&dir.join(&alive));
    let d = Daemon::start(root.path(), cfg.path(), root.path().join("daemon2.log"));
    let socket = socket_of(root.path(), &d);
    assert_eq!(ask(&socket, "setup"), "SLEEP 10 BANNED 00000000");
    assert!(!dir.join(dead(3)).exists(), "a dead process's socket goes");
    for kept in [dead(4), dead(5), dead(6), alive] {
        assert!(std::fs::symlink_metadata(dir.join(&kept)).is_ok(), "{kept} kept; log:\n{}", d.log_text());
    }
    assert_eq!(std::fs::read_to_string(outside.path().join(dead(1))).unwrap(), "not a socket\n");
    d.stop();
    assert!(!socket.exists(), "its own socket goes at stop");
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
