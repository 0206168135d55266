//! Daemon benchmarks (plain main, prints a table):
//! 1. trigger → all writes done, p50/p99, in-process on fixture roots (debounce 0: the figure is
//!    the reaction time of a pass; the configured `debounce`, 100 ms by default, adds to it);
//! 2. one full pass (discover + plan + apply) on a larger fixture, p50/p99;
//! 3. one trigger after a quiet period with the default `debounce` (100 ms) → all writes done,
//!    p50/p99: the debouncer and the daemon loop as `irqwise run` drives them (leading edge);
//! 4. a burst of 1,000 triggers (CPU, device and link events mixed), sent at once and spread
//!    over 100 ms, with the default `debounce` → passes run, and the time from the last trigger
//!    to the end of the last pass;
//! 5. what a reconcile pass costs beside a full pass (in-process daemon, after it placed the
//!    machine): files opened and CPU time of this process (user + system), medians, on the fixtures
//!    and on the plan bench's 1,024-CPU, 8,288-IRQ machine;
//! 6. idle cost of the real binary over IDLE_SECS (default 30) with nothing changing:
//!    voluntary context switches (wake-ups) and VmRSS (anonymous and file-backed) from
//!    /proc/PID/status; with IRQWISE_BEFORE=PATH, of that binary too, measured just before.
//!
//! `cargo bench --bench daemon`; `IDLE_SECS=5 cargo bench --bench daemon` for a quick run.

#[path = "../tests/common/big_machine.rs"]
mod big_machine;
#[path = "../tests/common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "../tests/common/fixture.rs"]
mod fixture;
#[path = "../tests/common/sysfs_tree.rs"]
mod sysfs_tree;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use irqwise::apply::apply_plan;
use irqwise::apply::ProcIrq;
use irqwise::config::{Config, ConfigPaths};
use irqwise::cpuset::CpuSet;
use irqwise::daemon::Daemon;
use irqwise::events::{Batch, Trigger, UeventAction};
use irqwise::pass::plan_pass;
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

/// One trigger after a quiet period longer than the default window → the pass it causes has
/// written, `rounds` times; the window and the loop are the daemon's own.
fn single_trigger_default_debounce(dir: &Path, irqs: &[u32], rounds: usize) -> (Duration, Duration) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let config = Config::default();
        let quiet = config.global.debounce * 3 / 2;
        let mut daemon = Daemon::new(Root::new(dir), ConfigPaths::under(dir.join("no-config")), config);
        let mut passes = daemon.passes();
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let handle = tokio::spawn(async move { daemon.run_with(rx).await });
        passes.wait_for(|&n| n >= 1).await.unwrap();
        let all = CpuSet::parse_list("0-15").unwrap();
        let mut times = Vec::with_capacity(rounds);
        for i in 0..rounds {
            tokio::time::sleep(quiet).await;
            let irq = irqs[i % irqs.len()];
            // The kernel's offline fallback on the IRQ's CPU, then that CPU's event: the pass
            // reads the IRQs on the CPUs an event names (a mask edited with no event for it waits
            // for the reconcile timer).
            let cpu = daemon_fixture::affinity(dir, irq).first().expect("the IRQ has a CPU");
            daemon_fixture::set_affinity(dir, irq, &all);
            let next = *passes.borrow() + 1;
            let t = Instant::now();
            tx.send(Trigger::Cpu { cpu, action: UeventAction::Online }).await.unwrap();
            passes.wait_for(|&n| n >= next).await.unwrap();
            times.push(t.elapsed());
            assert_ne!(daemon_fixture::affinity(dir, irq), all, "irq {irq} was not placed again");
        }
        tx.send(Trigger::Stop).await.unwrap();
        handle.await.unwrap();
        percentiles(times)
    })
}

/// The `i`-th trigger of a burst: CPU, device and link events in turn.
fn burst_trigger(i: u32) -> Trigger {
    match i % 3 {
        0 => Trigger::Cpu { cpu: 1 + i % 15, action: UeventAction::Offline },
        1 => Trigger::Device {
            subsystem: "pci".into(),
            action: UeventAction::Change,
            devpath: format!("/devices/pci0000:80/{}", daemon_fixture::NIC),
            name: None,
        },
        _ => Trigger::Link { ifindex: 2, name: Some("eth1".into()), up: i.is_multiple_of(2) },
    }
}

/// 1,000 triggers with the default window, sent at once (`spread` zero) or evenly over `spread`,
/// after a quiet period: (passes they caused, last trigger → last pass done).
fn burst(dir: &Path, spread: Duration) -> (u64, Duration) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let config = Config::default();
        let window = config.global.debounce;
        let mut daemon = Daemon::new(Root::new(dir), ConfigPaths::under(dir.join("no-config")), config);
        let mut passes = daemon.passes();
        let (tx, rx) = tokio::sync::mpsc::channel(2048);
        let handle = tokio::spawn(async move { daemon.run_with(rx).await });
        passes.wait_for(|&n| n >= 1).await.unwrap();
        tokio::time::sleep(window * 2).await;
        let before = *passes.borrow();
        // The triggers come from another thread, as the kernel's do: a pass running on the
        // daemon's thread does not hold them back.
        let per_ms = if spread.is_zero() { 1000 } else { (1000 / spread.as_millis().max(1)) as u32 };
        let producer = std::thread::spawn(move || {
            for i in 0..1000u32 {
                tx.blocking_send(burst_trigger(i)).unwrap();
                if !spread.is_zero() && (i + 1).is_multiple_of(per_ms) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            (tx, Instant::now())
        });
        let (tx, sent) = loop {
            if producer.is_finished() {
                break producer.join().unwrap();
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        // Every pass the burst causes ends within two windows of its last trigger, plus passes.
        let mut last_pass = sent;
        let mut seen = *passes.borrow();
        while tokio::time::timeout(window * 4, passes.changed()).await.is_ok() {
            seen = *passes.borrow();
            last_pass = Instant::now();
        }
        tx.send(Trigger::Stop).await.unwrap();
        handle.await.unwrap();
        (seen - before, last_pass.saturating_duration_since(sent))
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

/// User + system CPU time of this process so far (finished reader threads included).
fn cpu_time() -> Duration {
    use nix::sys::resource::{getrusage, UsageWho};
    let u = getrusage(UsageWho::RUSAGE_SELF).unwrap();
    let tv = |t: nix::sys::time::TimeVal| Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000);
    tv(u.user_time()) + tv(u.system_time())
}

/// Per pass of an in-process daemon on `dir` once it has placed the machine: (files opened, CPU
/// time) of a quiet reconcile and of a full pass (lost events: everything read), medians of
/// `rounds` each, alternating.
fn reconcile_cost(dir: &Path, rounds: usize) -> [(u64, Duration); 2] {
    let mut daemon = Daemon::new(Root::new(dir), ConfigPaths::under(dir.join("no-config")), Config::default());
    daemon.pass(vec!["start".into()]);
    let reconcile = || Batch { reconcile: true, triggers: 1, ..Batch::default() };
    daemon.handle(reconcile()); // reads back what the first pass wrote
    let mut cost = |batch: Batch| {
        let (files, cpu) = (irqwise::sysfs::files_opened(), cpu_time());
        daemon.handle(batch);
        (irqwise::sysfs::files_opened() - files, cpu_time() - cpu)
    };
    let (mut quiet, mut full) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        quiet.push(cost(reconcile()));
        full.push(cost(Batch { overflow: true, triggers: 1, ..Batch::default() }));
    }
    assert_eq!(daemon.last_error(), None);
    let median = |mut v: Vec<(u64, Duration)>| {
        let mid = v.len() / 2;
        v.sort_by_key(|(f, _)| *f);
        let files = v[mid].0;
        v.sort_by_key(|(_, t)| *t);
        (files, v[mid].1)
    };
    [median(quiet), median(full)]
}

fn status_field(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
}

/// What an idle daemon costs: wake-ups over the window, and its memory at the end (kB).
struct Idle {
    wakeups: u64,
    rss: u64,
    rss_anon: u64,
    rss_file: u64,
}

/// Runs `bin run` for `secs` after a 2 s settling time.
fn idle_cost(bin: &Path, env: &[(&str, &str)], dir: &Path, secs: u64) -> Idle {
    // A configuration directory without files: the defaults.
    std::fs::create_dir_all(dir.join("no-config")).unwrap();
    let mut child = Command::new(bin)
        .args(["run", "--log-format", "text", "--root"])
        .arg(dir)
        .arg("--config")
        .arg(dir.join("no-config"))
        .env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC")
        .envs(env.iter().copied())
        .stderr(Stdio::from(std::fs::File::create(dir.join("daemon.stderr")).unwrap()))
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    if let Ok(Some(status)) = child.try_wait() {
        let log = std::fs::read_to_string(dir.join("daemon.stderr")).unwrap_or_default();
        panic!("irqwise run ended with {status}:\n{log}");
    }
    let before = status_field(child.id(), "voluntary_ctxt_switches:");
    std::thread::sleep(Duration::from_secs(secs));
    let after = status_field(child.id(), "voluntary_ctxt_switches:");
    let pid = child.id();
    let idle = Idle {
        wakeups: after - before,
        rss: status_field(pid, "VmRSS:"),
        rss_anon: status_field(pid, "RssAnon:"),
        rss_file: status_field(pid, "RssFile:"),
    };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    child.wait().unwrap();
    idle
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
    let (p50, p99) = single_trigger_default_debounce(small.path(), &irqs, 40);
    println!(
        "| one trigger after quiet → all writes done (debounce 100 ms) | 16 CPUs, 1 NIC × 8 queues | {} | {} |",
        ms(p50),
        ms(p99)
    );

    println!();
    println!("| burst of 1,000 triggers (debounce 100 ms), 16 CPUs, 1 NIC × 8 queues | passes | last trigger → last pass done |");
    println!("|---|---|---|");
    for (what, spread) in [("sent at once", Duration::ZERO), ("spread over 100 ms", Duration::from_millis(100))] {
        let (passes, tail) = burst(small.path(), spread);
        println!("| {what} | {passes} | {} |", ms(tail));
    }

    println!();
    println!("| per pass, daemon after placing (median) | quiet reconcile: files | CPU | full pass: files | CPU |");
    println!("|---|---|---|---|---|");
    let bench_root = tempfile::tempdir().unwrap();
    let shape = big_machine::BigMachine {
        nodes: 8,
        cores_per_node: 64,
        cores_per_cluster: 4,
        nics: 64,
        nic_queues: 64,
        nvmes: 32,
        nvme_queues: 128,
        interrupts: false,
    };
    shape.write(bench_root.path());
    let machines = [
        ("16 CPUs, 1 NIC × 8 queues".to_string(), small.path(), 40),
        (format!("64 CPUs, {} IRQs", big_irqs.len()), big.path(), 40),
        ("1,024 CPUs, 8,288 IRQs (the plan bench's machine)".to_string(), bench_root.path(), 5),
    ];
    for (name, dir, rounds) in machines {
        let [(qf, qt), (ff, ft)] = reconcile_cost(dir, rounds);
        println!("| {name} | {qf} | {} | {ff} | {} |", ms(qt), ms(ft));
    }

    let secs: u64 = std::env::var("IDLE_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(30);
    // IRQWISE_BEFORE=PATH: the same measurement of another build of the binary, beside this one.
    // With glibc's malloc limited to one arena, the heap the reader threads used is shared.
    let this = std::path::PathBuf::from(env!("CARGO_BIN_EXE_irqwise"));
    let one_arena: &[(&str, &str)] = &[("MALLOC_ARENA_MAX", "1")];
    let mut bins = vec![
        ("this build".to_string(), this.clone(), &[][..]),
        ("this build, MALLOC_ARENA_MAX=1".to_string(), this, one_arena),
    ];
    if let Some(before) = std::env::var_os("IRQWISE_BEFORE") {
        bins.insert(0, (format!("{}", Path::new(&before).display()), before.into(), &[][..]));
    }
    println!();
    println!("| idle over {secs} s (real binary, nothing changing) | wake-ups | VmRSS | RssAnon | RssFile |");
    println!("|---|---|---|---|---|");
    for (name, bin, env) in &bins {
        let idle = idle_cost(bin, env, small.path(), secs);
        println!(
            "| {name} | {} ({:.2}/s) | {} kB | {} kB | {} kB |",
            idle.wakeups,
            idle.wakeups as f64 / secs as f64,
            idle.rss,
            idle.rss_anon,
            idle.rss_file
        );
    }
}
