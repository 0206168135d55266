//! `irqwise advise boot` on a fixture machine: 2 nodes x 4 cores x 2 threads (16 CPUs), an NVMe
//! drive whose 4 I/O queues are kernel-managed and spread over every CPU, `isolcpus=2-3` on the
//! command line. irqwise keeps CPUs 2-3 free of device IRQs but cannot move the managed ones: the
//! advice is `irqaffinity=` of the other CPUs and `isolcpus=managed_irq,2-3`, and a command line
//! without `managed_irq` contradicts it (exit 1).

#[path = "common/bin.rs"]
mod bin;
#[path = "common/fixture.rs"]
mod fixture;

use std::path::Path;

use fixture::FixtureRoot;

fn advise(root: &Path, cfg: &Path, json: bool) -> (Option<i32>, String) {
    let mut cmd = bin::irqwise_with(root, cfg);
    cmd.args(["advise", "boot"]);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

fn machine(cmdline: &str) -> (tempfile::TempDir, tempfile::TempDir) {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fixture::write_cpu_topology(root.path(), 2, 4, 2);
    FixtureRoot::at(root.path()).nvme("0000:41:00.0", "nvme0", Some(0), 4, true, false);
    std::fs::write(root.path().join("proc/cmdline"), format!("BOOT_IMAGE=/vmlinuz root=/dev/sda1 {cmdline}\n"))
        .unwrap();
    std::fs::create_dir_all(root.path().join("etc")).unwrap();
    std::fs::write(root.path().join("etc/os-release"), "PRETTY_NAME=\"Debian GNU/Linux 12\"\nID=debian\n").unwrap();
    (root, cfg)
}

#[test]
fn isolcpus_without_managed_irq_is_a_contradiction_and_the_fix_is_given() {
    let (root, cfg) = machine("isolcpus=2-3");
    let (code, text) = advise(root.path(), cfg.path(), false);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("CPUs kept free of device IRQs: isolcpus CPUs 2-3"), "{text}");
    assert!(text.contains("  irqaffinity=0-1,4-15 "), "{text}");
    assert!(text.contains("  isolcpus=managed_irq,2-3 "), "{text}");
    assert!(
        text.contains("only isolcpus=managed_irq,2-3 on the command line keeps them off (it says isolcpus=2-3)"),
        "{text}"
    );
    assert!(text.contains("GRUB_CMDLINE_LINUX in /etc/default/grub"), "{text}");
    let (code, json) = advise(root.path(), cfg.path(), true);
    assert_eq!(code, Some(1));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["parameters"][1]["parameter"], "isolcpus=managed_irq,2-3");
    assert_eq!(doc["contradictions"].as_array().map(Vec::len), Some(1));
}

#[test]
fn a_command_line_that_says_it_all_passes() {
    let (root, cfg) = machine("isolcpus=managed_irq,domain,2-3 irqaffinity=0-1,4-15");
    let (code, text) = advise(root.path(), cfg.path(), false);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("contradicts"), "{text}");
}

#[test]
fn an_irqaffinity_onto_kept_free_cpus_is_a_contradiction() {
    let (root, cfg) = machine("isolcpus=managed_irq,2-3 irqaffinity=0-7");
    let (code, text) = advise(root.path(), cfg.path(), false);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("irqaffinity=0-7 sends IRQs set up before irqwise starts to CPUs 2-3 it keeps free"),
        "{text}"
    );
}

#[test]
fn a_runtime_claim_is_said_and_not_advised_for_the_boot() {
    let (root, cfg) = machine("isolcpus=managed_irq,2-3 isolcpus=domain,2-3");
    let claims = root.path().join("run/irqwise/claims");
    std::fs::create_dir_all(&claims).unwrap();
    std::fs::write(claims.join("job-42"), "cpus=6-7\n").unwrap();
    let (code, text) = advise(root.path(), cfg.path(), false);
    assert_eq!(code, Some(0), "the managed IRQs on the claim's CPUs are no boot matter: {text}");
    assert!(text.contains("isolcpus=managed_irq,2-3 ") && !text.contains("6-7 "), "{text}");
    assert!(text.contains("claimed now, not advised for the boot: job-42's claimed CPUs 6-7"), "{text}");
}

/// `isolcpus=io_queue` on a kernel without `HK_TYPE_IO_QUEUE` (7.2 by its version: no BTF in
/// the fixture) is domain isolation only, and the advice says so; from 6.19 a `nohz_full=` that
/// with `isolcpus=domain` would leave no present CPU is ignored by the kernel: its CPUs are not
/// kept free, and the advice says that too.
#[test]
fn what_the_kernel_skips_or_ignores_on_the_command_line_is_said() {
    let release = |root: &Path, text: &str| {
        std::fs::create_dir_all(root.join("proc/sys/kernel")).unwrap();
        std::fs::write(root.join("proc/sys/kernel/osrelease"), text).unwrap();
    };
    let (root, cfg) = machine("isolcpus=io_queue,2-3");
    release(root.path(), "7.2.13-amd64\n");
    let (_, text) = advise(root.path(), cfg.path(), false);
    assert!(text.contains("the running kernel applies its command line otherwise than it reads:"), "{text}");
    assert!(text.contains("isolcpus=io_queue,2-3: this kernel has no isolcpus=io_queue"), "{text}");
    assert!(text.contains("CPUs 2-3 get domain isolation only"), "{text}");

    let (root, cfg) = machine("isolcpus=domain,0-7 nohz_full=8-15");
    release(root.path(), "6.19.1\n");
    let (_, text) = advise(root.path(), cfg.path(), false);
    assert!(text.contains("CPUs kept free of device IRQs: isolcpus CPUs 0-7\n"), "{text}");
    assert!(text.contains("nohz_full=8-15: ignored by the kernel"), "{text}");
    // Before 6.19 the kernel applies both: every CPU is kept free.
    release(root.path(), "6.18.3\n");
    let (_, text) = advise(root.path(), cfg.path(), false);
    assert!(!text.contains("ignored by the kernel"), "{text}");
    assert!(text.contains("every online CPU (0-15) is kept free"), "{text}");
}
