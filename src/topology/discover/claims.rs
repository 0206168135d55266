//! Reading the runtime claims under a [`Root`] (`ROOT/run/irqwise/claims/OWNER`, see
//! [`crate::topology::claims`]) and telling the live ones from those whose process exited.
//!
//! A claim's process is this machine's whatever the root (`/proc` is read, as for every pid).
//! A file that cannot be read or parsed costs a warning and claims nothing; a missing directory
//! is no claim.

use super::{io_problem, warning, TopologyWarning};
use crate::cpuset::CpuSet;
use crate::sysfs::processes::process_identity;
use crate::sysfs::Root;
use crate::topology::claims::{owner_problem, parse_claim, Claim, ClaimRead};

/// Where claims live, relative to the root: under `/run`, so they survive a daemon restart and
/// not a reboot.
pub const CLAIMS_DIR: &str = "run/irqwise/claims";

/// Every claim file under `root`, oldest first (by modification time, then owner), each with
/// whether its process still runs. Names
/// starting with a dot (temporary files of a writer) are skipped silently.
pub(crate) fn read_claims(root: &Root, possible: &CpuSet) -> (Vec<ClaimRead>, Vec<TopologyWarning>) {
    let mut warnings = Vec::new();
    let names = match root.list_dir_optional(CLAIMS_DIR) {
        Ok(names) => names,
        Err(e) => {
            warnings.push(warning(root, CLAIMS_DIR, format!("unreadable ({e})"), "no claim is read"));
            return (Vec::new(), warnings);
        }
    };
    let mut claims = Vec::new();
    for owner in names.iter().filter(|n| !n.starts_with('.')) {
        let rel = format!("{CLAIMS_DIR}/{owner}");
        let path = root.path(&rel).display().to_string();
        if let Some(problem) = owner_problem(owner) {
            warnings.push(warning(root, &rel, problem, "it claims nothing"));
            continue;
        }
        let text = match root.read_small_optional(&rel) {
            Ok(Some(text)) => text,
            Ok(None) => continue, // released between the listing and the read
            Err(e) => {
                warnings.push(warning(root, &rel, format!("unreadable ({})", io_problem(&e)), "it claims nothing"));
                continue;
            }
        };
        match parse_claim(owner, &text, possible) {
            Ok(claim) => {
                let ended = ended(&claim);
                let written = std::fs::metadata(root.path(&rel)).and_then(|m| m.modified()).ok();
                claims.push(ClaimRead { claim, path, ended, written });
            }
            Err(problem) => warnings.push(warning(root, &rel, problem, "it claims nothing")),
        }
    }
    // Oldest first (the order claims are admitted in), then by owner.
    claims.sort_by(|a, b| (a.written, &a.claim.owner).cmp(&(b.written, &b.claim.owner)));
    (claims, warnings)
}

/// Why `claim` no longer holds: its process exited (or its pid now belongs to a later process).
pub(crate) fn ended(claim: &Claim) -> Option<String> {
    let pid = claim.pid?;
    match process_identity(pid) {
        None => Some(format!("pid {pid} exited")),
        Some(p) if claim.pid_start.is_some_and(|s| s != p.start) => {
            Some(format!("pid {pid} exited (pid {pid} is now {:?}, started later)", p.comm))
        }
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    #[test]
    fn live_ended_and_broken_claims_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let claims = dir.path().join(CLAIMS_DIR);
        std::fs::create_dir_all(&claims).unwrap();
        let me = std::process::id();
        let start = process_identity(me).unwrap().start;
        let written = |name: &str, text: String, secs: u64| {
            std::fs::write(claims.join(name), text).unwrap();
            let at = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs);
            std::fs::File::options().write(true).open(claims.join(name)).unwrap().set_modified(at).unwrap();
        };
        written("mine", format!("cpus=2-3\npid={me}\npid_start={start}\n"), 1_000);
        written("reused", format!("cpus=1\npid={me}\npid_start={}\n", start + 1), 2_000);
        written("forever", "cpus=4\n".into(), 3_000);
        std::fs::write(claims.join("broken"), "cpus=99\n").unwrap();
        std::fs::write(claims.join(".mine.tmp"), "half").unwrap();
        let (read, warnings) = read_claims(&Root::new(dir.path()), &set("0-7"));
        let by: Vec<(&str, Option<&str>)> = read.iter().map(|c| (c.claim.owner.as_str(), c.ended.as_deref())).collect();
        assert_eq!(by.len(), 3, "{by:?}");
        // In the order written: the oldest first.
        assert_eq!(by[0], ("mine", None));
        assert_eq!(by[1].0, "reused");
        assert!(by[1].1.is_some_and(|e| e.contains("started later")), "{by:?}");
        assert_eq!(by[2], ("forever", None));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].to_string().contains("broken") && warnings[0].to_string().contains("CPUs 99 do not exist"));
    }

    #[test]
    fn no_directory_is_no_claim() {
        let dir = tempfile::tempdir().unwrap();
        let (read, warnings) = read_claims(&Root::new(dir.path()), &set("0-7"));
        assert!(read.is_empty() && warnings.is_empty());
    }

    #[test]
    fn a_name_with_a_newline_is_said_on_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let claims = dir.path().join(CLAIMS_DIR);
        std::fs::create_dir_all(&claims).unwrap();
        std::fs::write(claims.join("evil\n2026-12-06T00:00:00Z  INFO forged"), "cpus=1\n").unwrap();
        let (read, warnings) = read_claims(&Root::new(dir.path()), &set("0-7"));
        assert!(read.is_empty());
        let said = warnings[0].to_string();
        assert!(!said.contains('\n') && said.contains("evil\\x0a2026"), "{said}");
    }
}
