//! Test tools from Debian packages, installed when missing (root; CI runs as root). Several test
//! binaries run at once under nextest: the install is serialized by an exclusive lock on one
//! file, so two tests never race for dpkg's lock or for the policy-rc.d that keeps the packages'
//! services from starting.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

pub fn on_path(tool: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success())
}

fn is_root() -> bool {
    std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0
}

/// Whether every one of `tools` is on the PATH, installing `packages` (no recommends, no service
/// started) first when one is missing and this is root. Panics when the install fails.
pub fn ensure(tools: &[&str], packages: &[&str]) -> bool {
    let have = || tools.iter().all(|t| on_path(t));
    if have() {
        return true;
    }
    if !is_root() {
        return false;
    }
    let lock = std::fs::File::create("/tmp/irqwise-tests-apt.lock").unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();
    if have() {
        return true; // another test installed them while this one waited
    }
    // The packages' maintainer scripts would start their services where nothing stops them (no
    // systemd): Debian's policy layer (exit 101 = "do not start services") is put in place for
    // the install when the host has none.
    let policy = Path::new("/usr/sbin/policy-rc.d");
    let own_policy = !policy.exists();
    if own_policy {
        std::fs::write(policy, "#!/bin/sh\n# irqwise tests: no service starts while packages install\nexit 101\n")
            .unwrap();
        std::fs::set_permissions(policy, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let install = || {
        Command::new("apt-get")
            .args(["-o", "DPkg::Lock::Timeout=300", "install", "-y", "-qq", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    let installed = install() || {
        let _ = Command::new("apt-get").args(["-o", "DPkg::Lock::Timeout=300", "update", "-qq"]).status();
        install()
    };
    if own_policy {
        let _ = std::fs::remove_file(policy);
    }
    assert!(installed, "apt-get install {} failed", packages.join(" "));
    have()
}
