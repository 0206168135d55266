//! Runtime claims against the real `irqwise run` on a fixture root (2 nodes, 16 CPUs, an
//! 8-queue NIC on node 1 = CPUs 4-7,12-15): `irqwise claim` returns once the IRQs have left the
//! claimed CPUs; the claim ends when its process exits (seen at once, not by the reconcile timer,
//! which these tests set to an hour); `release` brings them back; a hook's file is taken like the
//! command's; a claim whose process died while no daemon ran is released by the first pass; every
//! bad claim is refused with the reason.

#[path = "common/bin.rs"]
mod bin;
#[path = "common/child_daemon.rs"]
mod child_daemon;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;
#[path = "common/nri_runtime.rs"]
mod nri_runtime;

use std::path::Path;
use std::process::{Child, Command, Output};

use child_daemon::Daemon;
use daemon_fixture::{affinities, nic_root, write_config};
use irqwise::cpuset::CpuSet;

/// No reconcile pass during a test: what happens is what events made happen.
const QUIET: &str = "[global]\nreconcile_interval = \"1h\"\n";

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

fn irqwise(root: &Path, args: &[&str]) -> Output {
    bin::irqwise(root).args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The CPUs the NIC's IRQs use together.
fn used(root: &Path, irqs: &[u32]) -> CpuSet {
    affinities(root, irqs).values().fold(CpuSet::new(), |acc, c| acc.union(c))
}

fn sleeper() -> Child {
    Command::new("sleep").arg("300").spawn().unwrap()
}

struct Setup {
    root: tempfile::TempDir,
    cfg: tempfile::TempDir,
    irqs: Vec<u32>,
    daemon: Daemon,
}

fn start() -> Setup {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), QUIET);
    let daemon = Daemon::start(root.path(), cfg.path(), root.path().join("daemon.log"));
    Setup { root, cfg, irqs, daemon }
}

#[test]
fn a_claim_holds_while_its_process_runs_and_ends_with_it() {
    let s = start();
    let root = s.root.path();
    assert!(set("4-5").is_subset(&used(root, &s.irqs)), "placed on 4-5 before: {:?}", affinities(root, &s.irqs));
    let mut job = sleeper();
    let pid = job.id().to_string();
    let out = irqwise(root, &["claim", "--cpus", "4-5", "--owner", "job-1", "--pid", &pid]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    // No waiting here: the command returned once the daemon had applied the claim.
    let now = affinities(root, &s.irqs);
    assert!(now.values().all(|c| !c.intersects(&set("4-5"))), "IRQs left 4-5: {now:?}");
    assert!(text(&out.stdout).contains("claimed CPUs 4-5 for job-1"), "{}", text(&out.stdout));
    let state = s.daemon.state();
    assert_eq!(state["claims"][0]["owner"], "job-1", "{state}");
    assert_eq!(state["claims"][0]["pid"], job.id(), "{state}");
    assert_eq!((state["counters"]["claims"].as_u64(), state["counters"]["claimed_cpus"].as_u64()), (Some(1), Some(2)));

    let listed = irqwise(root, &["claims", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(doc["claims"][0]["held"], true, "{doc}");
    assert_eq!(doc["claims"][0]["cpus"], "4-5", "{doc}");
    let status = text(&irqwise(root, &["status"]).stdout);
    assert!(status.contains(&format!("claim job-1: CPUs 4-5 while pid {pid} runs")), "{status}");

    let passes = s.daemon.passes();
    job.kill().unwrap();
    job.wait().unwrap();
    let claim_file = root.join("run/irqwise/claims/job-1");
    let state = s.daemon.wait(passes, "the claim released", || !claim_file.exists());
    assert!(state["claims"].as_array().is_some_and(Vec::is_empty), "{state}");
    assert_eq!(state["counters"]["claims"], 0, "{state}");
    assert!(used(root, &s.irqs).intersects(&set("4-5")), "back on 4-5: {:?}", affinities(root, &s.irqs));
    let log = s.daemon.log_text();
    assert!(log.contains(&format!("claim job-1 released (pid {pid} exited)")), "{log}");
}

#[test]
fn release_returns_once_the_irqs_are_back() {
    let s = start();
    let root = s.root.path();
    let out = irqwise(root, &["claim", "--cpus", "12-13", "--owner", "ops"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert!(!used(root, &s.irqs).intersects(&set("12-13")), "{:?}", affinities(root, &s.irqs));
    let out = irqwise(root, &["release", "--owner", "ops"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert!(used(root, &s.irqs).intersects(&set("12-13")), "{:?}", affinities(root, &s.irqs));
    let out = irqwise(root, &["release", "--owner", "ops"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no claim of ops"), "{}", text(&out.stderr));
    drop(s.cfg);
}

#[test]
fn a_file_a_hook_writes_is_taken_at_once() {
    let s = start();
    let root = s.root.path();
    let dir = root.join("run/irqwise/claims");
    let passes = s.daemon.passes();
    std::fs::write(dir.join(".pod.tmp"), "# from an OCI hook\ncpus = 6-7\n").unwrap();
    std::fs::rename(dir.join(".pod.tmp"), dir.join("pod")).unwrap();
    let state = s.daemon.wait(passes, "the hook's claim", || !used(root, &s.irqs).intersects(&set("6-7")));
    assert_eq!(state["claims"][0]["owner"], "pod", "{state}");
    std::fs::write(dir.join("broken"), "cpus=99\n").unwrap();
    let passes = s.daemon.passes();
    let state = s.daemon.wait(passes, "a broken claim said", || true);
    let warnings = state["plan"]["warnings"].to_string();
    assert!(warnings.contains("claims/broken") && warnings.contains("it claims nothing"), "{warnings}");
    assert!(!used(root, &s.irqs).intersects(&set("6-7")), "the good claim still holds");
}

#[test]
fn a_claim_whose_process_died_while_no_daemon_ran_is_released_at_start() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), QUIET);
    let mut gone = sleeper();
    let out = irqwise(root.path(), &["claim", "--cpus", "4-7", "--owner", "old", "--pid", &gone.id().to_string()]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert!(text(&out.stdout).contains("no irqwise daemon runs"), "{}", text(&out.stdout));
    let topology = text(&irqwise(root.path(), &["topology"]).stdout);
    assert!(topology.contains("claimed") && topology.contains("old: cpus=4-7"), "topology names the claim: {topology}");
    let plan: serde_json::Value = serde_json::from_slice(&irqwise(root.path(), &["plan", "--json"]).stdout).unwrap();
    let desired: Vec<CpuSet> = plan["devices"][0]["irqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| CpuSet::parse_list(p["desired"].as_str().unwrap()).unwrap())
        .collect();
    assert!(
        desired.len() == irqs.len() && desired.iter().all(|d| !d.is_empty() && !d.intersects(&set("4-7"))),
        "{plan}"
    );
    gone.kill().unwrap();
    gone.wait().unwrap();
    let daemon = Daemon::start(root.path(), cfg.path(), root.path().join("daemon.log"));
    assert!(!root.path().join("run/irqwise/claims/old").exists(), "{}", daemon.log_text());
    assert!(used(root.path(), &irqs).intersects(&set("4-7")), "{:?}", affinities(root.path(), &irqs));
}

#[test]
fn a_claim_that_takes_the_nodes_cpus_spills_with_a_warning_naming_it() {
    let s = start();
    let root = s.root.path();
    let out = irqwise(root, &["claim", "--cpus", "4-7,12-15", "--owner", "latency"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("every usable CPU of its node 1") && stderr.contains("latency (CPUs 4-7,12-15)"),
        "{stderr}"
    );
    let now = used(root, &s.irqs);
    assert!(!now.is_empty() && !now.intersects(&set("4-7,12-15")), "spilled to node 0: {now}");
    // A device left alone by its rule spills nothing: no warning about it.
    let plan_warnings = |cfg: &Path| {
        let out = irqwise(root, &["--config", cfg.to_str().unwrap(), "plan", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        plan["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    let claimed = |w: &[String]| w.iter().any(|w| w.contains("every usable CPU of its node 1"));
    assert!(claimed(&plan_warnings(s.cfg.path())), "the plan warns as the claim did");
    let leave = tempfile::tempdir().unwrap();
    write_config(
        leave.path(),
        &format!("{QUIET}\n[[device]]\nmatch = {{ driver = \"ixgbe\" }}\nstrategy = \"leave\"\n"),
    );
    let w = plan_warnings(leave.path());
    assert!(!claimed(&w), "{w:?}");
}

#[test]
fn bad_claims_are_refused_with_the_reason() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    write_config(cfg.path(), QUIET);
    let mut dead = Command::new("true").spawn().unwrap();
    dead.wait().unwrap();
    let dead = dead.id().to_string();
    let cases: [(&[&str], i32, &str); 5] = [
        (&["claim", "--cpus", "4", "--owner", "a/b"], 2, "--owner"),
        (&["claim", "--cpus", "4-40", "--owner", "x"], 2, "CPUs 16-40 do not exist here"),
        (&["claim", "--cpus", "4", "--owner", "x", "--pid", &dead], 2, "no such process"),
        (
            &["claim", "--cpus", "0-15", "--owner", "x"],
            1,
            "would leave no online CPU (0-15) for device IRQs; not claimed",
        ),
        (&["release", "--owner", "nobody"], 1, "no claim of nobody"),
    ];
    for (args, code, says) in cases {
        let out = irqwise(root.path(), args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(says), "{args:?}: {}", text(&out.stderr));
    }
    let names = std::fs::read_dir(root.path().join("run/irqwise/claims")).map_or(0, Iterator::count);
    assert_eq!(names, 0, "nothing written");
}

#[test]
fn the_oci_hook_example_claims_the_containers_cpuset_and_releases_it() {
    let (root, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    // `irqwise` on the hook's PATH, on the fixture root.
    let bin = work.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let wrapper = bin.join("irqwise");
    std::fs::write(&wrapper, format!("#!/bin/sh\nexec '{}' --root '{}' \"$@\"\n", bin::BIN, root.path().display()))
        .unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let bundle = work.path().join("bundle");
    std::fs::create_dir(&bundle).unwrap();
    std::fs::write(bundle.join("config.json"), r#"{"linux": {"resources": {"cpu": {"shares": 2, "cpus": "6-7"}}}}"#)
        .unwrap();
    let mut container = sleeper();
    let state = format!(
        r#"{{"ociVersion": "1.0.2", "id": "0123456789abcdef0123456789abcdef0123", "status": "running", "pid": {}, "bundle": "{}"}}"#,
        container.id(),
        bundle.display()
    );
    let hook = |stage: &str| {
        let mut child = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/packaging/examples/oci-hook-irqwise-claim"))
            .arg(stage)
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), state.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    let out = hook("poststart");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let file = root.path().join("run/irqwise/claims/container-0123456789abcdef0123456789abcdef");
    let claim = std::fs::read_to_string(&file).unwrap();
    assert!(claim.contains("cpus=6-7\n") && claim.contains(&format!("pid={}\n", container.id())), "{claim}");
    let out = hook("poststop");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!file.exists());
    container.kill().unwrap();
    container.wait().unwrap();
}

/// A daemon with `banned_cpus` 0-3 beside the claims.
fn start_banned() -> Setup {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), &format!("{QUIET}banned_cpus = \"0-3\"\nmetrics_file = \"/m/irqwise.prom\"\n"));
    let daemon = Daemon::start(root.path(), cfg.path(), root.path().join("daemon.log"));
    Setup { root, cfg, irqs, daemon }
}

fn with_config(root: &Path, cfg: &Path, args: &[&str]) -> Output {
    let mut all = vec!["--config", cfg.to_str().unwrap()];
    all.extend_from_slice(args);
    irqwise(root, &all)
}

#[test]
fn a_claim_that_would_leave_no_cpu_beside_the_bans_and_an_older_claim_is_refused_and_the_older_holds() {
    let s = start_banned();
    let (root, cfg) = (s.root.path(), s.cfg.path());
    let out = with_config(root, cfg, &["claim", "--cpus", "4-11", "--owner", "a"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let out = with_config(root, cfg, &["claim", "--cpus", "12-15", "--owner", "b"]);
    assert_eq!(out.status.code(), Some(1), "stdout: {}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("claiming CPUs 12-15 for b would leave no online CPU (0-15) for device IRQs beside banned_cpus 0-3, claim a (CPUs 4-11); not claimed"), "{stderr}");
    assert!(!root.join("run/irqwise/claims/b").exists(), "a refused claim is not written");

    // A hook writes the same claim itself: the daemon refuses it, and the older one holds.
    let passes = s.daemon.passes();
    std::fs::write(root.join("run/irqwise/claims/b"), "cpus=12-15\n").unwrap();
    let state = s.daemon.wait(passes, "the hook's claim refused", || true);
    let state = if state["refused_claims"].as_array().is_some_and(|r| !r.is_empty()) {
        state
    } else {
        s.daemon.wait(s.daemon.passes(), "the hook's claim refused", || true)
    };
    assert_eq!(state["claims"].as_array().map(Vec::len), Some(1), "{state}");
    assert_eq!(state["claims"][0]["owner"], "a", "{state}");
    assert_eq!(state["refused_claims"][0]["owner"], "b", "{state}");
    assert_eq!(state["counters"]["claims_refused"], 1, "{state}");
    let now = used(root, &s.irqs);
    assert!(!now.intersects(&set("0-11")), "IRQs keep off a's CPUs and the banned ones: {now}");
    let listed: serde_json::Value = serde_json::from_slice(&irqwise(root, &["claims", "--json"]).stdout).unwrap();
    let b = listed["claims"].as_array().unwrap().iter().find(|c| c["owner"] == "b").unwrap().clone();
    assert_eq!(b["held"], false, "{listed}");
    assert!(b["refused"].as_str().is_some_and(|r| r.contains("would leave no online CPU")), "{listed}");
    let status = text(&irqwise(root, &["status"]).stdout);
    assert!(status.contains("claim b refused: claiming CPUs 12-15 for b would leave no online CPU"), "{status}");
    // The metrics file follows the state file within the same pass.
    let refused_metric = || std::fs::read_to_string(root.join("m/irqwise.prom")).unwrap_or_default();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !refused_metric().contains("irqwise_claims_refused 1") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(refused_metric().contains("irqwise_claims_refused 1"), "{}", refused_metric());
    assert!(s.daemon.log_text().contains("for b would leave no online CPU"), "{}", s.daemon.log_text());
}

#[test]
fn isolated_cpus_count_against_a_claim_as_the_daemon_counts_them() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    write_config(cfg.path(), QUIET);
    std::fs::write(root.path().join("sys/devices/system/cpu/isolated"), "0-3\n").unwrap();
    let out = with_config(root.path(), cfg.path(), &["claim", "--cpus", "4-15", "--owner", "x"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("beside isolated CPUs 0-3; not claimed"), "{}", text(&out.stderr));
    let out = with_config(root.path(), cfg.path(), &["claim", "--cpus", "4-14", "--owner", "x"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn claims_made_at_once_are_checked_one_at_a_time() {
    let s = start_banned();
    let (root, cfg) = (s.root.path(), s.cfg.path());
    // Six claims of two CPUs on the twelve not banned: together they would take every one.
    let pairs = ["4-5", "6-7", "8-9", "10-11", "12-13", "14-15"];
    let children: Vec<(String, Child)> = pairs
        .iter()
        .enumerate()
        .map(|(i, cpus)| {
            let owner = format!("job-{i}");
            let child = bin::irqwise_with(root, cfg)
                .args(["claim", "--cpus", cpus, "--owner", &owner])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (owner, child)
        })
        .collect();
    let mut held = Vec::new();
    for (owner, child) in children {
        let out = child.wait_with_output().unwrap();
        match out.status.code() {
            Some(0) => held.push(owner),
            Some(1) => assert!(text(&out.stderr).contains("would leave no online CPU"), "{}", text(&out.stderr)),
            other => panic!("{owner}: {other:?} {}", text(&out.stderr)),
        }
    }
    assert_eq!(held.len(), 5, "exactly one refused: {held:?}");
    let state = s.daemon.state();
    let mut owners: Vec<String> =
        state["claims"].as_array().unwrap().iter().map(|c| c["owner"].as_str().unwrap().to_string()).collect();
    owners.sort();
    held.sort();
    assert_eq!(owners, held, "{state}");
    assert!(state["refused_claims"].as_array().is_some_and(Vec::is_empty), "{state}");
    let claimed: CpuSet =
        held.iter().map(|o| pairs[o[4..].parse::<usize>().unwrap()]).map(set).fold(CpuSet::new(), |a, c| a.union(&c));
    let now = used(root, &s.irqs);
    assert!(!now.is_empty() && !now.intersects(&claimed) && !now.intersects(&set("0-3")), "{now} vs {claimed}");
}

#[test]
fn a_timeout_past_what_a_clock_can_count_waits_as_long_as_it_takes() {
    let s = start();
    let root = s.root.path();
    let out = irqwise(root, &["claim", "--cpus", "12-13", "--owner", "t", "--timeout", "18446744073709551615"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let out = irqwise(root, &["release", "--owner", "t", "--timeout", "18446744073709551615"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
}

#[test]
fn a_reload_whose_bans_leave_only_a_claims_cpus_refuses_the_claim_and_says_so() {
    let s = start();
    let (root, cfg) = (s.root.path(), s.cfg.path());
    let out = irqwise(root, &["claim", "--cpus", "4-11", "--owner", "a"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    write_config(cfg, &format!("{QUIET}banned_cpus = \"0-3,12-15\"\n"));
    let pid = s.daemon.pid().to_string();
    let out = with_config(root, cfg, &["reload", "--pid", &pid]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("claiming CPUs 4-11 for a would leave no online CPU (0-15) for device IRQs beside banned_cpus 0-3,12-15: the claim is refused"), "{stderr}");
    let state = s.daemon.state();
    assert!(state["claims"].as_array().is_some_and(Vec::is_empty), "{state}");
    assert_eq!(state["refused_claims"][0]["owner"], "a", "{state}");
    let listed = text(&irqwise(root, &["claims"]).stdout);
    assert!(listed.contains("refused by irqwise"), "{listed}");
}

/// `sleep 300`s, killed on drop.
struct Sleepers(Vec<Child>);

impl Drop for Sleepers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn more_claimed_processes_than_descriptors_cost_the_daemon_nothing() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), QUIET);
    let sleepers = Sleepers((0..120).map(|_| sleeper()).collect());
    let dir = root.path().join("run/irqwise/claims");
    std::fs::create_dir_all(&dir).unwrap();
    for (i, s) in sleepers.0.iter().enumerate() {
        std::fs::write(dir.join(format!("job-{i}")), format!("cpus=15\npid={}\n", s.id())).unwrap();
    }
    // 96 descriptors, soft and hard: 120 pidfds would not fit beside the daemon's own.
    let daemon =
        Daemon::start_under(&["prlimit", "--nofile=96:96"], root.path(), cfg.path(), root.path().join("daemon.log"));
    let state = daemon.state();
    assert_eq!(state["claims"].as_array().map(Vec::len), Some(120), "{state}\n{}", daemon.log_text());
    assert!(state["error"].is_null(), "{state}");
    let status = irqwise(root.path(), &["status"]);
    assert_eq!(status.status.code(), Some(0), "{}", text(&status.stdout));
    assert!(!used(root.path(), &irqs).contains(15), "{:?}", affinities(root.path(), &irqs));
    let log = daemon.log_text();
    assert!(log.contains("claimed process(es) past the 32 irqwise can watch"), "{log}");
    drop(sleepers);
}

#[test]
fn a_daemon_whose_state_file_cannot_be_read_is_not_taken_for_no_daemon() {
    let s = start();
    let root = s.root.path();
    std::fs::write(root.join("run/irqwise/state.json"), "{ damaged").unwrap();
    let out = irqwise(root, &["claim", "--cpus", "12-13", "--owner", "y", "--timeout", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("takes it at its next pass (its state file cannot be read now"),
        "{}",
        text(&out.stdout)
    );
    // Waiting: the claim's file wakes the daemon, whose pass writes the state again.
    std::fs::write(root.join("run/irqwise/state.json"), "{ damaged").unwrap();
    let out = irqwise(root, &["claim", "--cpus", "14", "--owner", "z"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("applied it in pass"), "{}", text(&out.stdout));
    // A state file that cannot be written again (a directory in its place): it cannot tell.
    std::fs::remove_file(root.join("run/irqwise/state.json")).unwrap();
    std::fs::create_dir(root.join("run/irqwise/state.json")).unwrap();
    let out = irqwise(root, &["claim", "--cpus", "12-13", "--owner", "x", "--timeout", "1"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}{stderr}", text(&out.stdout));
    let pid = s.daemon.pid().to_string();
    assert!(
        stderr.contains(&format!("irqwise (pid {pid}) runs and its state file cannot tell whether it took it")),
        "{stderr}"
    );
    assert!(!text(&out.stdout).contains("no irqwise daemon runs"), "{}", text(&out.stdout));
}

#[test]
fn a_claim_waits_for_the_claims_lock_no_longer_than_its_timeout() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    write_config(cfg.path(), QUIET);
    // Another process (this one) holds the lock every `claim` takes, and never lets go.
    let lock = root.path().join("run/irqwise/claims.lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    let held = std::fs::File::create(&lock).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let mut child = bin::irqwise_with(root.path(), cfg.path())
        .args(["claim", "--cpus", "12-13", "--owner", "pod", "--timeout", "2"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A generous bound: the command must have given up long before.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`irqwise claim --timeout 2` still waits for the claims lock after 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}{stderr}", text(&out.stdout));
    assert!(stderr.contains(&lock.display().to_string()) && stderr.contains("another process holds it"), "{stderr}");
    assert!(!root.path().join("run/irqwise/claims/pod").exists(), "nothing claimed");
    // Once the lock is free, the same claim goes through.
    drop(held);
    let out = irqwise(root.path(), &["claim", "--cpus", "12-13", "--owner", "pod", "--timeout", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// The daemon with `nri = true` and a fake runtime listening where it looks.
fn nri_start(extra: &str) -> (Setup, nri_runtime::FakeRuntime) {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = nic_root(root.path());
    write_config(cfg.path(), &format!("{QUIET}nri = true\n{extra}"));
    let runtime = nri_runtime::FakeRuntime::bind(root.path());
    let daemon = Daemon::start(root.path(), cfg.path(), root.path().join("daemon.log"));
    (Setup { root, cfg, irqs, daemon }, runtime)
}

fn count(log: &str, what: &str) -> usize {
    log.matches(what).count()
}

#[test]
fn an_nri_container_annotated_disable_keeps_irqs_off_its_cpuset_from_start_to_stop() {
    use nri_runtime::{container, pod, pod_and_container, state_change};
    let (s, runtime) = nri_start("");
    let root = s.root.path();
    let mut conn = runtime.accept();
    conn.handshake(Vec::new(), Vec::new());
    assert!(set("4-5").is_subset(&used(root, &s.irqs)), "placed on 4-5 before: {:?}", affinities(root, &s.irqs));
    let mut job = sleeper();
    let annotated = || pod("pod-1", "rt", "dpdk-0", &[("irq-load-balancing.crio.io", "disable")]);
    let app = |state| container("ctr-1", "pod-1", "app", state, "4-5", job.id());
    // StartContainer as nri v0.8 sends it (a StateChange); the container is still "created".
    let passes = s.daemon.passes();
    conn.call("StateChange", state_change(6, annotated(), app(1))).expect("answered");
    let state = s.daemon.wait(passes, "IRQs off 4-5", || !used(root, &s.irqs).intersects(&set("4-5")));
    assert_eq!(state["claims"][0]["owner"], "nri:rt_dpdk-0_app", "{state}");
    assert_eq!(state["claims"][0]["pid"], job.id(), "{state}");
    let listed: serde_json::Value = serde_json::from_slice(&irqwise(root, &["claims", "--json"]).stdout).unwrap();
    assert_eq!(
        (listed["claims"][0]["owner"].as_str(), listed["claims"][0]["held"].as_bool()),
        (Some("nri:rt_dpdk-0_app"), Some(true))
    );
    let line = format!(
        "NRI: container rt/dpdk-0/app (irq-load-balancing.crio.io: disable): CPUs 4-5 while pid {} runs claimed as nri:rt_dpdk-0_app",
        job.id()
    );
    assert!(s.daemon.log_text().contains(&line), "{}", s.daemon.log_text());
    // StopContainer: the claim goes, the IRQs come back.
    let passes = s.daemon.passes();
    conn.call("StopContainer", pod_and_container(annotated(), app(4))).expect("answered");
    let claim = root.join("run/irqwise/claims/nri:rt_dpdk-0_app");
    s.daemon.wait(passes, "IRQs back on 4-5", || !claim.exists() && used(root, &s.irqs).intersects(&set("4-5")));
    // Started again, then the runtime restarts: its Synchronize, without the container, is the truth.
    let passes = s.daemon.passes();
    conn.call("StartContainer", pod_and_container(annotated(), app(1))).expect("answered");
    s.daemon.wait(passes, "IRQs off 4-5 again", || !used(root, &s.irqs).intersects(&set("4-5")));
    drop(conn);
    let passes = s.daemon.passes();
    let mut conn = runtime.accept();
    conn.handshake(vec![annotated()], Vec::new());
    s.daemon
        .wait(passes, "released by the Synchronize", || !claim.exists() && used(root, &s.irqs).intersects(&set("4-5")));
    // A Synchronize that lists it running claims it as at its start.
    let passes = s.daemon.passes();
    drop(conn);
    let mut conn = runtime.accept();
    conn.handshake(vec![annotated()], vec![app(3)]);
    s.daemon.wait(passes, "claimed from the Synchronize", || {
        claim.exists() && !used(root, &s.irqs).intersects(&set("4-5"))
    });
    job.kill().unwrap();
    job.wait().unwrap();
    drop(conn);
    let log = s.daemon.stop();
    assert_eq!(count(&log, "NRI: registered with containerd v2.1.9"), 1, "{log}");
    assert_eq!(count(&log, "NRI: connected again to containerd v2.1.9"), 2, "{log}");
    assert!(!log.contains("hunter2") && !log.contains("s3cret") && !log.contains("vault.example"), "no secret: {log}");
}

#[test]
fn an_nri_runtime_absent_sending_garbage_or_gone_is_said_once_each_and_irqwise_runs_on() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    nic_root(root.path());
    write_config(cfg.path(), &format!("{QUIET}nri = true\n"));
    let daemon = Daemon::start(root.path(), cfg.path(), root.path().join("daemon.log"));
    let absent = "NRI: no runtime socket at";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !daemon.log_text().contains(absent) {
        assert!(std::time::Instant::now() < deadline, "{}", daemon.log_text());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Attempts at 0, 0.5 and 1.5 s: the problem is said once.
    std::thread::sleep(std::time::Duration::from_millis(1600));
    let runtime = nri_runtime::FakeRuntime::bind(root.path());
    for _ in 0..2 {
        let mut conn = runtime.accept();
        conn.registration();
        conn.write(&[0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]);
        assert!(conn.read().is_none(), "the plugin hangs up");
    }
    let mut conn = runtime.accept();
    conn.handshake(Vec::new(), Vec::new());
    drop(conn);
    let mut conn = runtime.accept();
    conn.handshake(Vec::new(), Vec::new());
    let passes = daemon.passes();
    daemon.signal(nix::sys::signal::Signal::SIGHUP);
    daemon.wait(passes, "a pass after all that", || true);
    let log = daemon.stop();
    assert_eq!(count(&log, absent), 1, "{log}");
    assert_eq!(count(&log, "sent what is not NRI (a frame of 4294967295 bytes (at most 4194314))"), 1, "{log}");
    assert_eq!(count(&log, "NRI: registered with"), 1, "{log}");
    assert_eq!(count(&log, "ended (the runtime closed the connection)"), 1, "{log}");
    assert_eq!(count(&log, "NRI: connected again to"), 1, "{log}");
    drop(conn);
}

/// The daemon's resident memory, in kB.
fn vm_rss(pid: nix::unistd::Pid) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn an_nri_runtime_flooding_containers_is_answered_and_followed_to_a_cap() {
    use nri_runtime::{container, pod, pod_and_container};
    let (s, runtime) = nri_start("nri_exclusive_cpus = true\n");
    let mut conn = runtime.accept();
    conn.handshake(Vec::new(), Vec::new());
    let before = vm_rss(s.daemon.pid());
    for i in 0..5000 {
        let id = format!("{i:064x}");
        let started = pod_and_container(pod("p", "ns", "flood", &[]), container(&id, "p", &format!("c{i}"), 1, "1", 0));
        assert!(conn.call("StartContainer", started).is_some(), "event {i} answered");
    }
    let left_out = "more than 1024 pods or 4096 containers: 1 and any more are not followed";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !s.daemon.log_text().contains(left_out) {
        assert!(std::time::Instant::now() < deadline, "{}", s.daemon.log_text());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Still running: a reload runs a pass.
    let passes = s.daemon.passes();
    s.daemon.signal(nix::sys::signal::Signal::SIGHUP);
    let state = s.daemon.wait(passes, "the reload's pass", || true);
    let log = s.daemon.log_text();
    assert_eq!(count(&log, left_out), 1, "{log}");
    assert!(state["claims"].as_array().is_some_and(Vec::is_empty), "every container shares CPU 1: {state}");
    let after = vm_rss(s.daemon.pid());
    assert!(after < before + 32 * 1024, "VmRSS {before} kB before, {after} kB after 5,000 containers");
    drop(conn);
}
