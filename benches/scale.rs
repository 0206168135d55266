//! How time and memory grow with the machine (plain main, prints a table): the real binary on
//! synthetic roots of 1,024 to 8,192 CPUs laid out as the kernel shows a current x86 server
//! (one package per node, 2 threads per core, SMT siblings N and N + cores), each node with a
//! 32-queue `ice` NIC and a 32-queue NVMe controller (66 IRQs a node), written by
//! `tests/common/big_machine.rs` under `TMPDIR` (no `proc/interrupts`: nothing measured reads it).
//!
//! Per size: `irqwise plan --root` (best of 5, and the peak RSS of that process from `wait4`),
//! `irqwise plan --json --root` (the bytes it writes and its peak RSS: documents stay linear in
//! the machine), then `irqwise run --root` (the daemon) from start to its first state file, and its VmRSS a
//! second later (steady: nothing changes in the root).
//!
//! `cargo bench --bench scale`; `SCALE_SIZES=1024,8192` for some sizes only; `SCALE_BIN=PATH`
//! measures another build of the binary (an earlier version, side by side).

#[path = "../tests/common/big_machine.rs"]
mod big_machine;
#[path = "../tests/common/sysfs_tree.rs"]
mod sysfs_tree;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use big_machine::BigMachine;

/// CPUs, nodes, cores per node: 1k and 8k are the two machines (8 × 64 × 2 and
/// 32 × 128 × 2), 2k and 4k between them.
const SIZES: [(u32, u32, u32); 4] = [(1024, 8, 64), (2048, 16, 64), (4096, 16, 128), (8192, 32, 128)];

/// Runs `irqwise ARGS` to its end through this bench binary started again as a wrapper (see
/// [`wrapper`]), so that the peak RSS of the children it reports is that one run's: wall time
/// and peak RSS (kB).
fn run_measured(bin: &Path, args: &[&std::ffi::OsStr]) -> (Duration, u64) {
    let (took, kb, _) = run_measured_output(bin, args);
    (took, kb)
}

/// [`run_measured`], and the bytes the command wrote to stdout (counted, not kept).
fn run_measured_output(bin: &Path, args: &[&std::ffi::OsStr]) -> (Duration, u64, u64) {
    let me = std::env::current_exe().expect("current_exe");
    let out = Command::new(me).arg(WRAPPER).arg(bin).args(args).stderr(Stdio::inherit()).output().expect("wrapper");
    assert!(out.status.success(), "wrapper: {}", out.status);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.split_whitespace().map(|w| w.parse::<u64>().expect("wrapper output"));
    let (Some(micros), Some(kb), Some(bytes)) = (words.next(), words.next(), words.next()) else {
        panic!("wrapper printed {text:?}")
    };
    (Duration::from_micros(micros), kb, bytes)
}

/// The first argument that makes this binary the wrapper of [`run_measured`].
const WRAPPER: &str = "--measure-child";

/// As the wrapper: runs the command in `args`, prints its wall time (µs), the peak RSS of
/// this process's children (kB: only that one) and the bytes it wrote to stdout.
fn wrapper(args: &[String]) {
    use std::io::Read;
    let start = Instant::now();
    let mut child = Command::new(&args[0]).args(&args[1..]).stdout(Stdio::piped()).spawn().expect("spawn irqwise");
    let mut stdout = child.stdout.take().expect("stdout");
    let (mut bytes, mut buf) = (0u64, vec![0u8; 1 << 16]);
    loop {
        match stdout.read(&mut buf).expect("read stdout") {
            0 => break,
            n => bytes += n as u64,
        }
    }
    let status = child.wait().expect("wait irqwise");
    let took = start.elapsed();
    assert!(status.success(), "{args:?}: {status}");
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    println!("{} {} {bytes}", took.as_micros(), usage.max_rss());
}

fn vm_rss_kb(pid: u32) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:")?.split_whitespace().next()?.parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

/// The daemon on `root`: time to its first state file, and VmRSS a second later.
fn daemon(bin: &Path, root: &Path) -> (Duration, u64) {
    let config = root.join("no-config");
    std::fs::create_dir_all(&config).expect("config dir");
    let state = root.join("run/irqwise/state.json");
    let _ = std::fs::remove_file(&state);
    let start = Instant::now();
    let mut child = Command::new(bin)
        .args(["run", "--log-format", "text", "--root"])
        .arg(root)
        .arg("--config")
        .arg(&config)
        .env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn irqwise run");
    while !state.exists() {
        assert!(child.try_wait().expect("try_wait").is_none(), "irqwise run ended before its first pass");
        assert!(start.elapsed() < Duration::from_secs(120), "no state file after 120 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    let first = start.elapsed();
    std::thread::sleep(Duration::from_secs(1));
    let rss = vm_rss_kb(child.id());
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    child.wait().expect("wait");
    (first, rss)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(WRAPPER) {
        return wrapper(&args[2..]);
    }
    // Writing the roots takes minutes: only under `cargo bench`, not when nextest lists targets.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let only: Option<Vec<u32>> =
        std::env::var("SCALE_SIZES").ok().map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect());
    let bin =
        std::env::var_os("SCALE_BIN").map_or_else(|| env!("CARGO_BIN_EXE_irqwise").into(), std::path::PathBuf::from);
    let bin = bin.as_path();
    println!("| CPUs | IRQs | `plan`, best of 5 | `plan` peak RSS | `plan --json`: bytes; peak RSS | daemon: start to first pass done | daemon RSS after it |");
    println!("|---|---|---|---|---|---|---|");
    for (cpus, nodes, cores) in SIZES {
        if only.as_ref().is_some_and(|o| !o.contains(&cpus)) {
            continue;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let shape = BigMachine {
            nodes,
            cores_per_node: cores,
            cores_per_cluster: 1,
            nics: nodes,
            nic_queues: 32,
            nvmes: nodes,
            nvme_queues: 32,
            interrupts: false,
        };
        shape.write(dir.path());
        let irqs = std::fs::read_dir(dir.path().join("proc/irq")).expect("proc/irq").count();
        let status = Command::new("sync").status().expect("sync");
        assert!(status.success(), "sync: {status}");
        let plan = ["plan".as_ref(), "--root".as_ref(), dir.path().as_os_str()];
        let mut runs: Vec<(Duration, u64)> = (0..5).map(|_| run_measured(bin, &plan)).collect();
        runs.sort();
        let (best, peak) = runs[0];
        let json = ["plan".as_ref(), "--json".as_ref(), "--root".as_ref(), dir.path().as_os_str()];
        let (_, json_peak, json_bytes) = run_measured_output(bin, &json);
        let (first, rss) = daemon(bin, dir.path());
        println!(
            "| {cpus} | {irqs} | {:.0} ms | {:.1} MB | {:.2} MB; {:.1} MB | {:.0} ms | {:.1} MB |",
            best.as_secs_f64() * 1e3,
            peak as f64 / 1024.0,
            json_bytes as f64 / 1e6,
            json_peak as f64 / 1024.0,
            first.as_secs_f64() * 1e3,
            rss as f64 / 1024.0
        );
    }
}
