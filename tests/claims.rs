//! Runtime claims against the real `irqwise run` on a fixture root (2 nodes, 16 CPUs, an
//! 8-queue NIC on node 1 = CPUs 4-7,12-15): `irqwise claim` returns once the IRQs have left the
//! claimed CPUs; the claim ends when its process exits (seen at once, not by the reconcile timer,
//! which these tests set to an hour); `release` brings them back; a hook's file is taken like the
//! command's; a claim whose process died while no daemon ran is released by the first pass; every
//! bad claim is refused with the reason.

#[path = "common/child_daemon.rs"]
mod child_daemon;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

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
    Command::new(env!("CARGO_BIN_EXE_irqwise")).arg("--root").arg(root).args(args).output().unwrap()
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
        .map(|p| p["desired"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap() as u32).collect())
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
        (&["claim", "--cpus", "0-15", "--owner", "x"], 1, "would keep every online CPU"),
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
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nexec '{}' --root '{}' \"$@\"\n", env!("CARGO_BIN_EXE_irqwise"), root.path().display()),
    )
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
