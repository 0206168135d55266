//! Daemon benchmarks (plain main, prints a table):
//! 1. trigger → all writes done, p50/p99, in-process on fixture roots (debounce 0: the figure is
//!    the reaction time of a pass; the configured `debounce`, 100 ms by default, adds to it);
//! 2. one full pass (discover + plan + apply) on a larger fixture, p50/p99;
//! 3. idle cost of the real binary over IDLE_SECS (default 30) with nothing changing:
//!    voluntary context switches (wake-ups) and VmRSS from /proc/PID/status.
//!
//! `cargo bench --bench daemon`; `IDLE_SECS=5 cargo bench --bench daemon` for a quick run.

#[path = "../tests/common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "../tests/common/fixture.rs"]
mod fixture;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use irqwise::apply::apply_plan;
use irqwise::apply::ProcIrq;
use irqwise::config::{Config, ConfigPaths};
use irqwise::cpuset::CpuSet;
use irqwise::daemon::Daemon;
use irqwise::engine::plan_pass;
use irqwise::events::Trigger;
use irqwise::sysfs::Root;

fn percentiles(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    let at = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    (at(0.50), at(0.99))
}

/// A larger machine: 2 nodes × 16 cores × 2 threads (64 CPUs), four 32-queue NICs, two NVMe.
fn big_root(dir: &Path) -> Vec<u32> {
    fixture::write_cpu_topology(dir, 2, 16, 2);
    let mut root = fixture::FixtureRoot::at(dir);
    for (i, node) in [(0u32, 0u32), (1, 1), (2, 0), (3, 1)] {
        let bdf = format!("0000:{:02x}:00.0", 0x20 + i);
        root.nic(&bdf, "ice", &format!("eth{i}"), Some(node), 32, fixture::NamingScheme::IceTxRx);
    }
    root.nvme("0000:40:00.0", "nvme0", Some(0), 32, true, false);
    root.nvme("0000:41:00.0", "nvme1", Some(1), 32, false, false);
    root.irqs.values().flatten().copied().collect()
}

/// Trigger → pass done, with one IRQ moved away before each trigger (so every pass writes).
fn trigger_latency(dir: &Path, irqs: &[u32], rounds: usize) -> (Duration, Duration) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut config = Config::default();
        config.global.debounce = Duration::ZERO;
        let mut daemon = Daemon::new(Root::new(dir), ConfigPaths::under(dir.join("no-config")), config);
        let mut passes = daemon.passes();
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let handle = tokio::spawn(async move { daemon.run_with(rx).await });
        passes.wait_for(|&n| n >= 1).await.unwrap();
        let all = CpuSet::parse_list("0-15").unwrap();
        let mut times = Vec::with_capacity(rounds);
        for i in 0..rounds {
            let irq = irqs[i % irqs.len()];
            daemon_fixture::set_affinity(dir, irq, &all);
            let next = *passes.borrow() + 1;
            let t = Instant::now();
            tx.send(Trigger::Reconcile).await.unwrap();
            passes.wait_for(|&n| n >= next).await.unwrap();
            times.push(t.elapsed());
        }
        tx.send(Trigger::Stop).await.unwrap();
        handle.await.unwrap();
        percentiles(times)
    })
}

fn full_pass(dir: &Path, rounds: usize) -> (Duration, Duration) {
    let root = Root::new(dir);
    let config = Config::default();
    let writer = ProcIrq::new(root.clone());
    let times = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            let pass = plan_pass(&root, &config, &BTreeSet::new()).unwrap();
            apply_plan(&pass.plan, &writer);
            t.elapsed()
        })
        .collect();
    percentiles(times)
}

fn status_field(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
}

/// Runs `irqwise run` for `secs` after a 2 s settling time; returns (wake-ups, VmRSS kB).
fn idle_cost(dir: &Path, secs: u64) -> (u64, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_irqwise"))
        .args(["run", "--log-format", "text", "--root"])
        .arg(dir)
        .arg("--config")
        .arg(dir.join("no-config"))
        .env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let before = status_field(child.id(), "voluntary_ctxt_switches:");
    std::thread::sleep(Duration::from_secs(secs));
    let after = status_field(child.id(), "voluntary_ctxt_switches:");
    let rss = status_field(child.id(), "VmRSS:");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    child.wait().unwrap();
    (after - before, rss)
}

fn main() {
    // `cargo test --all-targets` and nextest also start bench targets (to list or smoke-test
    // them); this one measures for 30 s, so it runs only under `cargo bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3);
    println!("| measurement | fixture | p50 | p99 |");
    println!("|---|---|---|---|");
    let small = tempfile::tempdir().unwrap();
    let irqs = daemon_fixture::nic_root(small.path());
    let (p50, p99) = trigger_latency(small.path(), &irqs, 500);
    println!("| trigger → all writes done (debounce 0) | 16 CPUs, 1 NIC × 8 queues | {} | {} |", ms(p50), ms(p99));
    let big = tempfile::tempdir().unwrap();
    let big_irqs = big_root(big.path());
    let (p50, p99) = trigger_latency(big.path(), &big_irqs, 300);
    println!(
        "| trigger → all writes done (debounce 0) | 64 CPUs, 4 NICs × 32 + 2 NVMe × 32 ({} IRQs) | {} | {} |",
        big_irqs.len(),
        ms(p50),
        ms(p99)
    );
    let (p50, p99) = full_pass(big.path(), 300);
    println!("| one full pass, nothing to write | same | {} | {} |", ms(p50), ms(p99));

    let secs: u64 = std::env::var("IDLE_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(30);
    let (wakeups, rss) = idle_cost(small.path(), secs);
    println!();
    println!("| idle over {secs} s (real binary, nothing changing) | value |");
    println!("|---|---|");
    println!("| voluntary context switches (wake-ups) | {wakeups} ({:.2}/s) |", wakeups as f64 / secs as f64);
    println!("| VmRSS | {rss} kB |");
}
